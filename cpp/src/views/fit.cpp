#include "trainmem/fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "estimate/rollout.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"
#include "views/fit_data_parallel.hpp"

namespace trainmem {

namespace {

constexpr int kMaxTensorParallel = 64;  // beyond a few nodes' worth of NVLink domains
constexpr int kMaxContextParallel = 64;
constexpr int kMaxExpertParallel = 64;  // DeepSeek-V3 trained with ep 64 (arXiv:2412.19437, 3.2)

std::vector<int> divisors_up_to(int value, int limit) {
  std::vector<int> divisors;
  for (int candidate = 1; candidate <= std::min(value, limit); ++candidate) {
    if (value % candidate == 0) divisors.push_back(candidate);
  }
  return divisors;
}

// A pipeline's degree and, where p does not divide the layers, its uneven split.
struct PipelineChoice {
  int p = 1;
  int first_layers = 0;  // both 0: the even split
  int last_layers = 0;
};

// Every p that divides the layers, split evenly; and each power of two that does not, split as
// Megatron-LM users split DeepSeek-V3's 61 layers over 8 or 16 stages: the middle stages ⌈L/p⌉
// layers each, the first and last stages the rest between them, the first the fewer (it holds p
// micro-batches in flight, the last one). A p whose rest would leave either of them no layer is
// not tried.
std::vector<PipelineChoice> pipeline_choices(int num_layers) {
  std::vector<PipelineChoice> choices;
  for (int p : divisors_up_to(num_layers, num_layers)) choices.push_back({p, 0, 0});
  for (int p = 2; p <= num_layers; p *= 2) {
    if (num_layers % p == 0) continue;
    const int middle = (num_layers + p - 1) / p;
    const int rest = num_layers - (p - 2) * middle;  // at most 2·middle, as middle is ⌈L/p⌉
    if (rest < 2) continue;
    choices.push_back({p, rest / 2, rest - rest / 2});
  }
  return choices;
}

using Candidate = DataParallelFit;

// The step of d that keeps ep·etp dividing d·t·c (1 without expert parallelism).
int data_parallel_step(const ParallelLayout& layout) {
  const int experts = layout.expert_parallel * expert_tensor_parallel_of(layout);
  const int others = layout.tensor_parallel * layout.context_parallel;
  return experts / std::gcd(experts, others);
}

// The d the search starts from: the step, and at least 2 where ZeRO has nothing else to shard
// over.
int smallest_data_parallel(const ParallelLayout& layout) {
  const int step_d = data_parallel_step(layout);
  return layout.zero_stage > 0 && layout.context_parallel == 1 && step_d == 1 ? 2 : step_d;
}

// The layout's devices but d's: t·p·c.
double devices_but_data_parallel(const ParallelLayout& layout) {
  return static_cast<double>(layout.tensor_parallel) * layout.pipeline_parallel *
         layout.context_parallel;
}

// `setup` at d, where it is valid and fits.
Candidate at_data_parallel(TrainingSetup setup, double d) {
  setup.layout.data_parallel = static_cast<int>(d);
  Estimate estimate = estimate_memory(setup);
  // What it offloads must fit in the host's memory too (the search's test, try_layouts).
  const bool fits = estimate.answer.ok() && estimate.fits && estimate.host_fits;
  return {std::move(estimate), fits};
}

// The d the setup takes nearest `middle`, strictly between `below` and `above` (a global batch, a
// rollout engine's tensor parallelism or expert parallelism may not divide every d), up to
// kValidStepsTried steps of d either way: a refused d is neither a fit nor a miss. No estimate
// (answer not ok) where none is.
constexpr int kValidStepsTried = 16;
Candidate nearest_valid(const TrainingSetup& setup, double middle, double below, double above,
                        int step_d) {
  Candidate tried;
  for (int k = 0; k <= kValidStepsTried; ++k) {
    for (const double d : {middle + k * step_d, middle - k * step_d}) {
      if (d <= below || d >= above) continue;
      tried = at_data_parallel(setup, d);
      if (tried.estimate.answer.ok()) return tried;
      if (k == 0) break;
    }
  }
  return tried;
}

// The smallest d at which `setup` fits, between `fails` (where it does not) and `fitting`'s d
// (both whole multiples of `step_d`), by bisection: where the allocator's cache steps, the fit can
// begin below where the closed form puts it.
Candidate bisect_data_parallel(const TrainingSetup& setup, double fails, Candidate fitting,
                               int step_d) {
  double fits = fitting.estimate.setup.layout.data_parallel;
  while (fits - fails > step_d) {
    const double middle = fails + std::floor((fits - fails) / (2.0 * step_d)) * step_d;
    Candidate tried = nearest_valid(setup, middle, fails, fits, step_d);
    if (!tried.estimate.answer.ok()) break;  // no d near the middle that the setup takes
    const double d = tried.estimate.setup.layout.data_parallel;
    if (tried.fits) {
      fits = d;
      fitting = std::move(tried);
    } else {
      fails = d;
    }
  }
  return fitting;
}

// The most d the setup takes from `most` down, above `fails`: `most`, then halved (the batches
// that bound d are most often powers of two).
Candidate most_valid(const TrainingSetup& setup, double most, double fails, int step_d) {
  Candidate tried;
  for (double d = most; d > fails; d = std::floor(d / (2.0 * step_d)) * step_d) {
    tried = at_data_parallel(setup, d);
    if (tried.estimate.answer.ok() || d <= step_d) break;
  }
  return tried;
}

// "80 GB of one H100 80 GB", or with headroom "72.0 GB of one H100 80 GB (10% kept free)"; under a
// training stack, of the memory PyTorch reports: "76.4 GB of one H100 80 GB as PyTorch reports it
// (10% kept free)".
// `decimals` above 1 where a figure beside it would otherwise read the same.
std::string usable_text(const Estimate& estimate, int decimals = 1) {
  const double headroom = estimate.setup.headroom_percent;
  const std::string device =
      estimate.device.name +
      (estimate.limit_source.empty() ? std::string() : std::string(" as PyTorch reports it"));
  if (headroom == 0 && decimals == 1) {
    return format_bytes_short(estimate.usable_bytes) + " of one " + device;
  }
  if (headroom == 0) return format_bytes(estimate.usable_bytes, decimals) + " of one " + device;
  return format_bytes(estimate.usable_bytes, decimals) + " of one " + device + " (" +
         format_percent(headroom) + " kept free)";
}

// Costs, in rough percent of a step, each with its source.
constexpr double kFullRecomputeCost = 33;      // one more forward pass: a third more compute
                                               // (Korthikanti et al. 2023, section 5)
constexpr double kSelectiveRecomputeCost = 3;  // the attention core again: 2 to 4% (ibid.)
// torchtitan's per-op policy recomputes three of a block's seven matmuls (wk, wo, w3) and the
// elementwise operations: 3/7 of the forward's matmuls, of the full recomputation's third.
constexpr double kSelectiveOpRecomputeCost = kFullRecomputeCost * 3 / 7;
constexpr double kTensorParallelCostPerDoubling = 3;   // two all-reduces per layer over NVLink
constexpr double kContextParallelCostPerDoubling = 3;  // the ring's K/V exchange, overlapped
constexpr double kExpertParallelCostPerDoubling = 3;   // the dispatch and combine all-to-alls
constexpr double kZero3Cost = 10;  // weights gathered for each forward and backward: 1.5× the
                                   // communication of ZeRO-1/2 (Rajbhandari et al. 2020)
// Offloading (a stated margin, not a measurement): the optimiser's step runs on the host's CPUs
// and each step's gradients and updated weights cross PCIe, which ZeRO-Offload overlaps with the
// backward pass only in part (Ren et al., USENIX ATC 2021); the weights offloaded too cross it for
// every forward and backward pass.
constexpr double kOffloadOptimizerCost = 25;
constexpr double kOffloadWeightsCost = 75;
// verl's offload (a stated margin too): no step runs on the host; the actor's AdamW state crosses
// PCIe to the host after each update and back before the next, 16 B a parameter of the device's
// shard, and under param_offload its FP32 shards around each phase that uses them (the weight sync,
// the log-probabilities and the update), 24 B more, against an RL step that its generation
// dominates.
constexpr double kVerlOffloadOptimizerCost = 2;
constexpr double kVerlOffloadWeightsCost = 5;
constexpr double kOffTheFastPathCost = 100;  // across nodes, or an exchange left unhidden
// Expert parallelism across nodes: "the communication overhead introduced by cross-node expert
// parallelism results in an inefficient computation-to-communication ratio of approximately 1:1"
// (DeepSeek-V3, arXiv:2412.19437, 3.2.1), so its all-to-alls, unhidden, take as long again as the
// mixture layers compute: the off-the-fast-path cost, over those layers' share of the compute.
constexpr double kCrossNodeAllToAllPerCompute = 1;

// What one device of a layout holds and computes with, in parameters, over the whole model: for
// ZeRO-3's gathers and expert parallelism's exchange. A dense layer gathers what it computes
// with; a mixture layer holds E/ep routed experts (split over etp) and computes with k of the E
// for each of its tokens (at balanced load, a device's experts take k copies of its tokens).
struct ParametersPerToken {
  double gathered = 0;          // held before ZeRO's sharding: what ZeRO-3 gathers each pass
  double computed = 0;          // what each token's matmuls use
  double mixture_computed = 0;  // of which, in the mixture layers
};
ParametersPerToken parameters_per_token(const ModelShape& shape, const ParallelLayout& layout) {
  const ParameterCounts counts = parameter_counts(shape);
  const double t = layout.tensor_parallel;
  const double ep = layout.expert_parallel;
  const double etp = expert_tensor_parallel_of(layout);
  const bool mixture = shape.num_experts > 1;
  const double mixture_layers =
      shape.num_layers - (mixture ? dense_layers_between(shape, 0, shape.num_layers) : 0);
  const double dense_layers = shape.num_layers - mixture_layers;
  const double routed =
      counts.routed_experts_per_layer / etp + counts.routed_experts_replicated_per_layer;
  const double others = (counts.attention_and_mlp_per_layer - counts.routed_experts_per_layer) / t +
                        counts.replicated_per_layer - counts.routed_experts_replicated_per_layer +
                        counts.norms_per_layer;
  const double dense = counts.dense_attention_and_mlp_per_layer / t +
                       counts.dense_replicated_per_layer + counts.norms_per_layer;
  const double active_share =
      mixture ? static_cast<double>(shape.num_experts_per_token) / shape.num_experts : 1;
  ParametersPerToken per_token;
  // A hybrid's layers of other kinds than a full layer (models.hpp, hybrid_layers): in a mixture,
  // the linear mixers counted with the mixture's layers (Kimi Linear's dense first layer's too),
  // or with one-part layers the MLP-alone layers' (the mixture's own) apart.
  const double kinds = layer_kind_deltas(shape, counts, 0, shape.num_layers, t);
  const double mixture_kinds =
      one_part_layers(shape)
          ? layers_of_kinds_between(shape, 0, shape.num_layers, "F") * counts.mixerless.on_device(t)
          : kinds;
  per_token.mixture_computed =
      mixture_layers * (others + routed * active_share) + (mixture ? mixture_kinds : 0);
  per_token.computed =
      mixture_layers * (others + routed * active_share) + dense_layers * dense + kinds;
  per_token.gathered = mixture_layers * (others + routed / ep) + dense_layers * dense + kinds;
  return per_token;
}

struct Ranked {
  Estimate estimate;
  LayoutCost cost;
};

bool fewer_devices_then_cheaper(const Ranked& left, const Ranked& right) {
  if (left.estimate.num_devices != right.estimate.num_devices) {
    return left.estimate.num_devices < right.estimate.num_devices;
  }
  if (left.cost.score != right.cost.score) return left.cost.score < right.cost.score;
  return left.estimate.bytes.total() < right.estimate.bytes.total();
}

// A step's device time, in devices' worth of a step without costs: devices × (1 + cost).
double device_time(const Ranked& ranked) {
  return ranked.estimate.num_devices * (1 + ranked.cost.score / 100);
}

bool less_device_time(const Ranked& left, const Ranked& right) {
  if (device_time(left) != device_time(right)) return device_time(left) < device_time(right);
  return left.estimate.bytes.total() < right.estimate.bytes.total();
}

std::string points(double score) { return " (+" + format_count(score) + ")"; }

// "7.6", "2": to one decimal, none when it is 0.
std::string one_decimal(double value) {
  std::string text = fixed_decimal(value, 1);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text;
}

// Adds one cost and its reason to a layout's cost.
void add_cost(LayoutCost& cost, double score, const std::string& reason) {
  cost.score += score;
  cost.reason += (cost.reason.empty() ? "" : "; ") + reason + points(score);
}

void add_tensor_parallel_cost(const ParallelLayout& layout, LayoutCost& cost) {
  const int t = layout.tensor_parallel;
  if (t <= 1) return;
  const double doublings = std::log2(t);
  if (t <= kDevicesPerNode) {
    add_cost(cost, kTensorParallelCostPerDoubling * doublings,
             "t " + std::to_string(t) + " within one " + std::to_string(kDevicesPerNode) +
                 "-device node: its all-reduces stay on NVLink");
  } else {
    add_cost(cost, kTensorParallelCostPerDoubling * doublings + kOffTheFastPathCost,
             "t " + std::to_string(t) + " spans nodes of " + std::to_string(kDevicesPerNode) +
                 ": its all-reduces, two per layer, leave NVLink");
  }
}

void add_expert_parallel_cost(const ParallelLayout& layout, const ParametersPerToken& per_token,
                              LayoutCost& cost) {
  const int ep = layout.expert_parallel;
  if (ep <= 1) return;
  // Megatron-LM orders an expert-parallel group's ranks etp first, then ep: it spans ep·etp
  // neighbouring devices.
  const int group = ep * expert_tensor_parallel_of(layout);
  const std::string exchange =
      "two all-to-alls per mixture layer, dispatching tokens to their experts and back";
  if (group <= kDevicesPerNode) {
    add_cost(cost, kExpertParallelCostPerDoubling * std::log2(ep),
             "ep " + std::to_string(ep) + " within one " + std::to_string(kDevicesPerNode) +
                 "-device node: " + exchange + " over NVLink");
  } else {
    const double mixture_share = per_token.mixture_computed / per_token.computed;
    add_cost(cost,
             kExpertParallelCostPerDoubling * std::log2(ep) +
                 kOffTheFastPathCost * kCrossNodeAllToAllPerCompute * mixture_share,
             "ep " + std::to_string(ep) +
                 (group == ep ? "" : " × etp " + std::to_string(group / ep)) + " spans nodes of " +
                 std::to_string(kDevicesPerNode) + ": " + exchange +
                 " cross the network, about as long as the layers compute (DeepSeek-V3 measured "
                 "1:1), unless overlapped with other work as its DualPipe does; the mixture "
                 "layers hold " +
                 format_share(mixture_share) + " of the compute");
  }
}

void add_context_parallel_cost(const TrainingSetup& setup, LayoutCost& cost) {
  const int c = setup.layout.context_parallel;
  if (c <= 1) return;
  const double tokens_per_shard = static_cast<double>(setup.sequence_length) / c;
  if (tokens_per_shard >= kMinTokensPerContextShard) {
    add_cost(cost, kContextParallelCostPerDoubling * std::log2(c),
             "c " + std::to_string(c) + ": " + format_count(tokens_per_shard) +
                 " tokens of the sequence per device, enough to hide the ring's exchange");
  } else {
    add_cost(cost, kContextParallelCostPerDoubling * std::log2(c) + kOffTheFastPathCost,
             "c " + std::to_string(c) + " leaves " + format_count(tokens_per_shard) +
                 " tokens of the sequence per device, fewer than " +
                 format_count(kMinTokensPerContextShard) +
                 ": too little to hide the ring's exchange");
  }
}

void add_pipeline_cost(const ParallelLayout& layout, const ModelShape& shape, LayoutCost& cost) {
  const int p = layout.pipeline_parallel;
  if (p <= 1) return;
  // The 1F1B bubble, (p - 1) / (m + p - 1) of the step (Narayanan et al. 2021), shrunk v times
  // by the interleaved schedule; a step needs at least p micro-batches.
  const double v = layout.virtual_pipeline_stages;
  const double bubble = (p - 1) / (v * kMicroBatchesPerStep + p - 1);
  add_cost(cost, 100 * bubble,
           "p " + std::to_string(p) + ": a pipeline bubble of " + format_count(100 * bubble) +
               "% of a step at " + std::to_string(kMicroBatchesPerStep) +
               " micro-batches, and a step needs at least " + std::to_string(p));
  // Uneven stages: the pipeline runs at its fullest stage's pace.
  const PipelineSplit split = pipeline_split(layout, shape.num_layers);
  const double fullest = std::max({split.first, split.middle, split.last});
  const double even = static_cast<double>(shape.num_layers) / p;
  if (!split.even && fullest > even) {
    add_cost(cost, 100 * (fullest / even - 1),
             "uneven stages: the fullest holds " + format_count(fullest) + " layers where " +
                 format_count(shape.num_layers) + " over " + std::to_string(p) + " would be " +
                 one_decimal(even) + ", and sets the pipeline's pace");
  }
}

void add_zero3_cost(const ParallelLayout& layout, const ModelShape& shape,
                    const ParametersPerToken& per_token, LayoutCost& cost) {
  if (layout.zero_stage != 3) return;
  const double gathered = per_token.gathered / per_token.computed;
  if (shape.num_experts == 1) {
    add_cost(cost, kZero3Cost, "ZeRO-3 gathers the weights for every forward and backward pass");
    return;
  }
  // A mixture's device gathers every routed expert it holds, of which its tokens use k of E:
  // the gathers grow with what is held, the compute that hides them with what is used.
  const int ep = layout.expert_parallel;
  add_cost(cost, kZero3Cost * gathered,
           "ZeRO-3 gathers the weights for every forward and backward pass, and a mixture's every "
           "routed expert on the device: " +
               one_decimal(gathered) + " times the weights its tokens compute with" +
               (ep > 1 ? " (its " + format_count(shape.num_experts / ep) + " experts of " +
                             format_count(shape.num_experts) + ")"
                       : " (all " + format_count(shape.num_experts) + " experts)"));
}

void add_recompute_cost(Recompute recompute, const ModelShape& shape, LayoutCost& cost) {
  if (recompute == Recompute::kFull) {
    add_cost(cost, kFullRecomputeCost, "full recomputation runs each forward pass twice");
  } else if (recompute == Recompute::kSelective) {
    add_cost(cost, kSelectiveRecomputeCost, "selective recomputation redoes the attention core");
  } else if (recompute == Recompute::kSelectiveOp && shape.num_experts > 1) {
    // Over torchtitan's MoE (per_op.cpp) it redoes wk and wo, the router's gate, the
    // routed experts' three grouped GEMMs and the shared experts' up projection: 6 of 8 matmuls,
    // or 7 of 11 with shared experts, of the full recomputation's third.
    const bool shared = shape.shared_expert_ffn_hidden_size > 0;
    const double redone = shared ? 7 : 6;
    const double all = shared ? 11 : 8;
    add_cost(cost, kFullRecomputeCost * redone / all,
             "per-op recomputation redoes the routed experts (their grouped GEMMs are not in its "
             "save list), the router's gate and " +
                 std::string(shared ? "three" : "two") + " more of each block's " +
                 (shared ? "eleven" : "eight") + " matmuls");
  } else if (recompute == Recompute::kSelectiveOp) {
    add_cost(cost, kSelectiveOpRecomputeCost,
             "per-op recomputation redoes three of each block's seven matmuls");
  }
}

void add_offload_cost(const TrainingSetup& setup, LayoutCost& cost) {
  const Offload offload = setup.offload;
  if (verl_trainer(setup) && offload == Offload::kOptimizer) {
    add_cost(cost, kVerlOffloadOptimizerCost,
             "verl moves the actor's optimizer state to the host after each update and back for "
             "the next, over PCIe");
  } else if (verl_trainer(setup) && offload == Offload::kOptimizerAndWeights) {
    add_cost(cost, kVerlOffloadWeightsCost,
             "verl moves the actor's weights to the host between the phases that use them, and "
             "its optimizer state between updates, over PCIe");
  } else if (offload == Offload::kOptimizer) {
    add_cost(cost, kOffloadOptimizerCost,
             "the optimizer's step runs on the host, its gradients and weights over PCIe each "
             "step");
  } else if (offload == Offload::kOptimizerAndWeights) {
    add_cost(cost, kOffloadWeightsCost,
             "the weights cross PCIe for every pass, and the optimizer's step runs on the host");
  }
}

}  // namespace

LayoutCost layout_cost(const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const ModelShape* shape = resolve_model(setup);
  if (shape == nullptr) return {};
  const ParametersPerToken per_token = parameters_per_token(*shape, setup.layout);
  LayoutCost cost;
  add_tensor_parallel_cost(setup.layout, cost);
  add_expert_parallel_cost(setup.layout, per_token, cost);
  add_context_parallel_cost(setup, cost);
  add_pipeline_cost(setup.layout, *shape, cost);
  add_zero3_cost(setup.layout, *shape, per_token, cost);
  add_recompute_cost(setup.recompute, *shape, cost);
  add_offload_cost(setup, cost);
  if (cost.reason.empty()) cost.reason = "data parallelism alone: nothing beyond its all-reduce";
  return cost;
}

namespace {

// The base setup, checked where the search starts: refused or not, as estimate_memory answers.
Estimate checked_base(const TrainingSetup& base) {
  Estimate checked = estimate_memory(base);
  // A stack that needs data parallelism (torchtitan's FSDP2, DeepSpeed's ZeRO), or a ZeRO stage it
  // brought (verl's FSDP, ZeRO 3), refuses the single device the search starts from; the search
  // chooses the layout, so the setup is checked on the smallest layout the stack takes instead.
  if (!checked.answer.ok() && (checked.answer.setting == setting_id::kStack ||
                               checked.answer.setting == setting_id::kZeroStage)) {
    TrainingSetup probe = base;
    probe.layout = ParallelLayout{};
    probe.layout.data_parallel = 2;
    probe.layout.zero_stage =
        std::max(base.layout.zero_stage, stack_row(base.stack).first_zero_stage);
    const Estimate on_two = estimate_memory(probe);
    if (on_two.answer.ok()) checked = on_two;
  }
  return checked;
}

// The degrees and choices the search combines, d aside.
struct CandidateDegrees {
  std::vector<int> tensor;               // t: the divisors of the widths it splits
  std::vector<PipelineChoice> pipeline;  // p, and its uneven split (pipeline_choices)
  std::vector<int> context;              // c: the powers of two dividing the sequence
  std::vector<int> expert;               // ep: the powers of two dividing the experts
  std::vector<Offload> offloads;         // the base's, and the others where the host can hold them
};

CandidateDegrees candidate_degrees(const TrainingSetup& base, const ModelShape& shape) {
  CandidateDegrees degrees;
  // t divides the routed experts' width too, for etp 0 (as t).
  const int heads_gcd = shape.num_experts > 1 ? std::gcd(tensor_parallel_widths_gcd(shape),
                                                         routed_expert_width(shape))
                                              : tensor_parallel_widths_gcd(shape);
  degrees.tensor = divisors_up_to(heads_gcd, kMaxTensorParallel);
  degrees.pipeline = pipeline_choices(shape.num_layers);
  for (int c = 1; c <= kMaxContextParallel && base.sequence_length % c == 0; c *= 2) {
    degrees.context.push_back(c);
  }
  // Expert parallelism: powers of two that divide the experts (1 for a dense model).
  for (int ep = 1; ep <= std::min(shape.num_experts, kMaxExpertParallel); ep *= 2) {
    if (shape.num_experts % ep == 0) degrees.expert.push_back(ep);
  }
  // Offloading too, where the reader has given the host's memory to hold it and chosen none
  // (a chosen offload is kept), under a stack that offloads or verl (its own offload between
  // phases: fsdp_config's optimizer_offload and param_offload).
  degrees.offloads = {base.offload};
  if (base.host_capacity_gb > 0 && base.offload == Offload::kNone &&
      (stack_row(base.stack).offloading || verl_trainer(base)) && !base.optimizer_in_backward) {
    degrees.offloads.push_back(Offload::kOptimizer);
    degrees.offloads.push_back(Offload::kOptimizerAndWeights);
  }
  return degrees;
}

// A layout to try, d aside, with the fewest devices it can take.
struct Trial {
  ParallelLayout layout;
  Recompute recompute;
  Offload offload;
  double min_devices;
};

// Every combination of the candidate degrees, every ZeRO stage and every recomputation choice.
std::vector<Trial> layouts_to_try(const CandidateDegrees& degrees, bool mixture) {
  std::vector<Trial> trials;
  for (int t : degrees.tensor) {
    // etp as t (0), and for a mixture with t above 1 also 1: each expert whole, Megatron-LM's
    // advice for fine-grained experts.
    std::vector<int> expert_tensor_degrees = {0};
    if (mixture && t > 1) expert_tensor_degrees.push_back(1);
    for (const PipelineChoice& pipeline : degrees.pipeline) {
      for (int c : degrees.context) {
        for (int zero = 0; zero <= kMaxZeroStage; ++zero) {
          for (std::size_t recompute = 0; recompute < choices<Recompute>().size(); ++recompute) {
            for (int ep : degrees.expert) {
              for (int etp : expert_tensor_degrees) {
                ParallelLayout layout;
                layout.expert_parallel = ep;
                layout.expert_tensor_parallel = etp;
                layout.tensor_parallel = t;
                layout.sequence_parallel = t > 1;
                layout.pipeline_parallel = pipeline.p;
                layout.pipeline_first_stage_layers = pipeline.first_layers;
                layout.pipeline_last_stage_layers = pipeline.last_layers;
                layout.context_parallel = c;
                layout.zero_stage = zero;
                for (const Offload offload : degrees.offloads) {
                  trials.push_back(
                      {layout, static_cast<Recompute>(recompute), offload,
                       devices_but_data_parallel(layout) * smallest_data_parallel(layout)});
                }
              }
            }
          }
        }
      }
    }
  }
  return trials;
}

// What trying the layouts found: those that fit, each at its smallest d, and every setup tried.
struct Tried {
  std::vector<Ranked> fitting;
  std::vector<TrainingSetup> setups;
};

// Each trial at the smallest d that fits on the fewest devices a listed layout may take.
Tried try_layouts(const TrainingSetup& base, std::vector<Trial> trials) {
  // Fewest devices first, so that once a layout fits, those that cannot come within a node of it
  // (the most a cheaper layout may take, list_layouts) are not estimated at all.
  std::stable_sort(trials.begin(), trials.end(), [](const Trial& left, const Trial& right) {
    return left.min_devices < right.min_devices;
  });
  Tried tried;
  double most_devices_listed = kMaxDevices;
  for (const Trial& trial : trials) {
    if (trial.min_devices > most_devices_listed) break;
    TrainingSetup setup = base;
    setup.layout = trial.layout;
    // Each layout answered for its most loaded stage, which decides whether it fits: a stage the
    // base asks for may not be one of its stages.
    setup.pipeline_stage = 0;
    setup.recompute = trial.recompute;
    setup.offload = trial.offload;
    const Candidate candidate = smallest_data_parallel_that_fits(setup, most_devices_listed);
    // What it offloads must fit in the host's memory too.
    if (candidate.fits && candidate.estimate.host_fits) {
      tried.fitting.push_back({candidate.estimate, layout_cost(candidate.estimate)});
      most_devices_listed =
          std::min(most_devices_listed, candidate.estimate.num_devices + kDevicesPerNode);
    }
    tried.setups.push_back(setup);
  }
  return tried;
}

// Why no layout fits, where none does.
std::string why_nothing_fits(const Estimate& checked) {
  return "No layout of up to " + format_count(kMaxDevices) + " " + checked.device.short_name +
         "s fits this micro-batch.";
}

// The layouts on the fewest devices, and those on up to a node more that take less device time
// a step than the cheapest on the fewest: a few more devices can save more than they cost, as
// expert parallelism does for a mixture that ZeRO-3 would gather whole. Least device time first,
// which among equally many devices is the cheapest first; the cheapest on the fewest always
// among those listed. Fills the search's fewest devices, layouts and costs.
void list_layouts(std::vector<Ranked> fitting, int max_layouts, FitSearch& search) {
  std::sort(fitting.begin(), fitting.end(), fewer_devices_then_cheaper);
  const Ranked cheapest_on_fewest = fitting.front();
  search.fewest_devices = cheapest_on_fewest.estimate.num_devices;
  std::vector<Ranked> listed;
  for (const Ranked& ranked : fitting) {
    const double devices = ranked.estimate.num_devices;
    const bool cheaper_nearby = devices <= search.fewest_devices + kDevicesPerNode &&
                                device_time(ranked) < device_time(cheapest_on_fewest);
    if (devices == search.fewest_devices || cheaper_nearby) listed.push_back(ranked);
  }
  std::stable_sort(listed.begin(), listed.end(), less_device_time);
  const std::size_t shown = static_cast<std::size_t>(std::max(1, max_layouts));
  if (listed.size() > shown) {
    listed.resize(shown);
    if (listed.back().estimate.num_devices > search.fewest_devices &&
        std::none_of(listed.begin(), listed.end(), [&](const Ranked& ranked) {
          return ranked.estimate.num_devices == search.fewest_devices;
        })) {
      listed.back() = cheapest_on_fewest;
    }
  }
  for (Ranked& ranked : listed) {
    const double more = ranked.estimate.num_devices - search.fewest_devices;
    if (more > 0) {
      ranked.cost.reason += "; " + format_count(more) + (more == 1 ? " device" : " devices") +
                            " more than the fewest, for less device time a step: " +
                            format_count(ranked.estimate.num_devices) + " × " +
                            one_decimal(1 + ranked.cost.score / 100) + " against " +
                            format_count(search.fewest_devices) + " × " +
                            one_decimal(1 + cheapest_on_fewest.cost.score / 100);
    }
    search.layouts.push_back(ranked.estimate);
    search.costs.push_back(ranked.cost);
  }
}

// Whether a refusal names a setting that another d may satisfy: the device count's divisibility
// by a rollout engine's tensor parallelism, a batch or expert parallelism's degrees.
bool refused_for_this_d(const Answer& answer) {
  for (const char* id :
       {setting_id::kDataParallel, setting_id::kRolloutTensorParallel, setting_id::kGlobalBatch,
        setting_id::kRolloutBatch, setting_id::kExpertParallel, setting_id::kMicrobatchGroupSize}) {
    if (answer.setting == id) return true;
  }
  return false;
}

// The smaller d a layout tries at most, below the largest, where each is refused for its count.
constexpr int kSmallerDevicesTried = 16;

// Why not fewer: each tried layout at the largest d below the fewest count that the setup takes (a
// rollout engine's tensor parallelism, or a batch, may not divide every d: up to
// kSmallerDevicesTried smaller ones, while the refusal is one of the count's). Fills the search's
// best smaller layout and its words; where no smaller layout is valid, the refusal of one of the
// cheapest fitting layout's ZeRO stage, else of the first.
// Returns the smaller layouts that fit after all (the search's bisection can miss a d where the
// allocator's cache steps more than once), for the search to list.
std::vector<Ranked> explain_why_not_fewer(const std::vector<TrainingSetup>& layouts_tried,
                                          FitSearch& search) {
  std::vector<Ranked> missed;
  const int zero = search.layouts.empty() ? -1 : search.layouts.front().setup.layout.zero_stage;
  std::string refused;  // why no smaller layout is valid, where none is
  bool refused_at_zero = false;
  for (TrainingSetup setup : layouts_tried) {
    const double others = static_cast<double>(setup.layout.tensor_parallel) *
                          setup.layout.pipeline_parallel * setup.layout.context_parallel;
    const int largest = static_cast<int>(std::floor((search.fewest_devices - 1) / others));
    for (int d = largest; d >= 1 && d > largest - kSmallerDevicesTried; --d) {
      setup.layout.data_parallel = d;
      const Estimate estimate = estimate_memory(setup);
      if (!estimate.answer.ok()) {
        const bool at_zero = setup.layout.zero_stage == zero;
        if (refused.empty() || (at_zero && !refused_at_zero)) {
          refused = estimate.answer.message;
          refused_at_zero = at_zero;
        }
        if (!refused_for_this_d(estimate.answer)) break;
        continue;
      }
      if (estimate.fits && estimate.host_fits) {
        missed.push_back({estimate, layout_cost(estimate)});
        break;
      }
      // A layout that fits the device but not the host is no "still needs" of device memory.
      if (estimate.fits) break;
      if (!search.has_best_smaller || estimate.bytes.total() < search.best_smaller.bytes.total()) {
        search.best_smaller = estimate;
        search.has_best_smaller = true;
      }
      break;
    }
  }
  if (!search.has_best_smaller) {
    search.why_not_fewer = search.fewest_devices == 1 || refused.empty()
                               ? "One device is the fewest there can be."
                               : "No layout on fewer devices is valid: " + refused;
    return missed;
  }
  const Estimate& best = search.best_smaller;
  // Enough decimals that the need reads above the usable memory (it is, by at least a byte).
  int decimals = 1;
  while (decimals < 3 &&
         format_bytes(best.bytes.total(), decimals) == format_bytes(best.usable_bytes, decimals)) {
    ++decimals;
  }
  search.why_not_fewer =
      "With fewer than " + format_count(search.fewest_devices) +
      " devices nothing fits: the leanest layout, on " + format_count(best.num_devices) +
      (best.num_devices == 1 ? " device" : " devices") + ", still needs " +
      format_bytes(best.bytes.total(), decimals) + " on its most loaded device, over the " +
      usable_text(best, decimals) + ".";
  return missed;
}

}  // namespace

DataParallelFit smallest_data_parallel_that_fits(TrainingSetup setup, double max_devices) {
  const int step_d = data_parallel_step(setup.layout);
  setup.layout.data_parallel = smallest_data_parallel(setup.layout);
  Candidate at_start = at_data_parallel(setup, setup.layout.data_parallel);
  // A refused start is neither a fit nor a miss where a global batch refuses it (an odd batch
  // refuses d 2): the first d above it that the setup takes, up to the batch's bound.
  if (!at_start.estimate.answer.ok() && setup.global_batch_sequences > 0) {
    const double bound =
        static_cast<double>(setup.global_batch_sequences) / setup.micro_batch_sequences;
    for (double d = setup.layout.data_parallel + step_d; d <= bound; d += step_d) {
      Candidate tried = at_data_parallel(setup, d);
      if (!tried.estimate.answer.ok()) continue;
      setup.layout.data_parallel = static_cast<int>(d);
      at_start = std::move(tried);
      break;
    }
  }
  if (!at_start.estimate.answer.ok() || at_start.fits) return at_start;
  if (setup.layout.zero_stage == 0) return {};
  const double capacity = at_start.estimate.usable_bytes;
  const double d0 = setup.layout.data_parallel;
  const double others = devices_but_data_parallel(setup.layout);
  double most_d =
      std::floor(std::min<double>(kMaxParallelDegree, std::min(kMaxDevices, max_devices) / others) /
                 step_d) *
      step_d;
  // A global batch bounds d: each replica takes a micro-batch at least (global ≥ micro-batch × d),
  // so the search need not halve down from far above it (most_valid halves, and a batch of 24 has
  // no valid d among the powers of two that fits).
  if (setup.global_batch_sequences > 0) {
    most_d = std::min(most_d, std::floor(static_cast<double>(setup.global_batch_sequences) /
                                         setup.micro_batch_sequences / step_d) *
                                  step_d);
  }
  if (most_d <= d0) return {};

  // ZeRO: bytes = fixed + shardable / (d·c); solve for the smallest d.
  Candidate at_double = at_data_parallel(setup, 2 * d0);
  if (at_double.fits && 2 * d0 <= most_d) {
    return bisect_data_parallel(setup, d0, std::move(at_double), step_d);
  }
  if (!at_double.estimate.answer.ok() || 2 * d0 > most_d) {
    // No closed form: 2·d0 is refused, or past what the devices allow. The most d they allow that
    // the setup takes, if it fits, then bisection.
    Candidate at_most = most_valid(setup, most_d, d0, step_d);
    return at_most.fits ? bisect_data_parallel(setup, d0, std::move(at_most), step_d) : Candidate{};
  }
  const double c = setup.layout.context_parallel;
  // shardable·(1/(d0·c) − 1/(2·d0·c)) = difference
  const double shardable =
      (at_start.estimate.bytes.total() - at_double.estimate.bytes.total()) * 2 * d0 * c;
  const double fixed = at_start.estimate.bytes.total() - shardable / (d0 * c);
  double fails = std::min(2 * d0, most_d);  // the largest d known not to fit
  if (fixed < capacity && shardable > 0) {
    double d = std::ceil(shardable / ((capacity - fixed) * c));
    d = std::ceil(std::max(d, fails + step_d) / step_d) * step_d;
    // Rounding can leave the closed form a hair off; step until the estimate itself fits, then
    // check the d below it, which fits too where the allocator's cache stepped.
    for (int step = 0; step < 3 && d <= most_d; ++step, d += step_d) {
      Candidate tried = at_data_parallel(setup, d);
      if (!tried.estimate.answer.ok()) continue;  // a d the setup does not take: neither
      if (!tried.fits) {
        fails = d;
        continue;
      }
      if (d - step_d <= fails) return tried;
      // The nearest d below that the setup takes (a refused d is neither a fit nor a miss).
      Candidate below = nearest_valid(setup, d - step_d, fails, d, step_d);
      if (!below.fits) return tried;
      return bisect_data_parallel(setup, fails, std::move(below), step_d);
    }
  }
  // The closed form gave up or missed, as where the allocator's cache is not linear in 1/d: the
  // most d the search allows, then bisection.
  if (fails >= most_d) return {};
  Candidate at_most = most_valid(setup, most_d, fails, step_d);
  if (!at_most.fits) return {};
  return bisect_data_parallel(setup, fails, std::move(at_most), step_d);
}

FitSearch find_fewest_devices(const TrainingSetup& base, int max_layouts) {
  FitSearch search;
  const Estimate checked = checked_base(base);
  if (!checked.answer.ok()) {
    search.answer = checked.answer;
    return search;
  }
  const ModelShape& shape = *resolve_model(base);
  const CandidateDegrees degrees = candidate_degrees(base, shape);
  Tried tried = try_layouts(base, layouts_to_try(degrees, shape.num_experts > 1));
  if (tried.fitting.empty()) {
    search.why_not_fewer = why_nothing_fits(checked);
    return search;
  }
  // A smaller layout that fits after all joins those listed, and the fewest is found again (each
  // round lowers it, so the rounds end).
  for (;;) {
    FitSearch listed;
    list_layouts(tried.fitting, max_layouts, listed);
    std::vector<Ranked> missed = explain_why_not_fewer(tried.setups, listed);
    if (missed.empty()) return listed;
    tried.fitting.insert(tried.fitting.end(), missed.begin(), missed.end());
  }
}

}  // namespace trainmem
