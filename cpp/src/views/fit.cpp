#include "trainmem/fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

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

// A layout's per-device memory falls with d only through ZeRO's sharding: total(d) = fixed +
// shardable / (d·c). The smallest d that fits follows from two estimates, checked by a third.
struct Candidate {
  Estimate estimate;
  bool fits = false;
};

// The step of d that keeps ep·etp dividing d·t·c (1 without expert parallelism).
int data_parallel_step(const ParallelLayout& layout) {
  const int experts = layout.expert_parallel * expert_tensor_parallel_of(layout);
  const int others = layout.tensor_parallel * layout.context_parallel;
  return experts / std::gcd(experts, others);
}

Candidate smallest_data_parallel_that_fits(TrainingSetup setup) {
  Candidate candidate;
  const int step_d = data_parallel_step(setup.layout);
  setup.layout.data_parallel = step_d;
  if (setup.layout.zero_stage > 0 && setup.layout.context_parallel == 1 &&
      setup.layout.data_parallel == 1) {
    setup.layout.data_parallel = 2;
  }
  const Estimate at_start = estimate_memory(setup);
  if (!at_start.answer.ok()) return candidate;
  const double capacity = at_start.usable_bytes;
  if (at_start.fits) return {at_start, true};
  if (setup.layout.zero_stage == 0) return candidate;

  // ZeRO: bytes = fixed + shardable / (d·c); solve for the smallest d.
  TrainingSetup doubled = setup;
  doubled.layout.data_parallel *= 2;
  const Estimate at_double = estimate_memory(doubled);
  if (!at_double.answer.ok()) return candidate;
  const double c = setup.layout.context_parallel;
  const double d0 = setup.layout.data_parallel;
  // shardable·(1/(d0·c) − 1/(2·d0·c)) = difference
  const double shardable = (at_start.bytes.total() - at_double.bytes.total()) * 2 * d0 * c;
  const double fixed = at_start.bytes.total() - shardable / (d0 * c);
  if (fixed >= capacity || shardable <= 0) return candidate;
  const double per_device_budget = capacity - fixed;
  double d = std::ceil(shardable / (per_device_budget * c));
  d = std::max(d, d0);
  d = std::ceil(d / step_d) * step_d;
  const double others = static_cast<double>(setup.layout.tensor_parallel) *
                        setup.layout.pipeline_parallel * setup.layout.context_parallel;
  if (d > kMaxParallelDegree || d * others > kMaxDevices) return candidate;
  // Rounding can leave the closed form a hair off; step until the estimate itself fits.
  for (int step = 0; step < 3; ++step) {
    setup.layout.data_parallel = static_cast<int>(d);
    const Estimate estimate = estimate_memory(setup);
    if (estimate.answer.ok() && estimate.fits) return {estimate, true};
    d += step_d;
  }
  return candidate;
}

// "80 GB of one H100 80 GB", or with headroom "72.0 GB of one H100 80 GB (10% kept free)".
std::string usable_text(const Estimate& estimate) {
  const double headroom = estimate.setup.headroom_percent;
  if (headroom == 0) {
    return format_bytes_short(estimate.usable_bytes) + " of one " + estimate.device.name;
  }
  return format_bytes(estimate.usable_bytes) + " of one " + estimate.device.name + " (" +
         format_percent(headroom) + " kept free)";
}

// Costs, in rough percent of a step, each with its source.
constexpr double kFullRecomputeCost = 33;      // one more forward pass: a third more compute
                                               // (Korthikanti et al. 2023, section 5)
constexpr double kSelectiveRecomputeCost = 3;  // the attention core again: 2 to 4% (ibid.)
// torchtitan's per-op policy recomputes three of a block's seven matmuls (wk, wo, w3) and the
// elementwise operations: 3/7 of the forward's matmuls, of the full recomputation's third.
constexpr double kSelectiveOpRecomputeCost = kFullRecomputeCost * 3 / 7;
constexpr double kTensorParallelCostPerDoubling = 3;  // two all-reduces per layer over NVLink
constexpr double kContextParallelCostPerDoubling = 3;
constexpr double kExpertParallelCostPerDoubling =
    3;  // the dispatch and combine all-to-alls  // the ring's K/V exchange, overlapped
constexpr double kZero3Cost = 10;  // weights gathered for each forward and backward: 1.5× the
                                   // communication of ZeRO-1/2 (Rajbhandari et al. 2020)
constexpr double kOffTheFastPathCost = 100;  // across nodes, or an exchange left unhidden

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

std::string points(double score) { return " (+" + format_count(score) + ")"; }

}  // namespace

LayoutCost layout_cost(const Estimate& estimate) {
  const ParallelLayout& layout = estimate.setup.layout;
  LayoutCost cost;
  const auto add = [&cost](double score, const std::string& reason) {
    cost.score += score;
    cost.reason += (cost.reason.empty() ? "" : "; ") + reason + points(score);
  };
  const int t = layout.tensor_parallel;
  if (t > 1) {
    const double doublings = std::log2(t);
    if (t <= kDevicesPerNode) {
      add(kTensorParallelCostPerDoubling * doublings,
          "t " + std::to_string(t) + " within one " + std::to_string(kDevicesPerNode) +
              "-device node: its all-reduces stay on NVLink");
    } else {
      add(kTensorParallelCostPerDoubling * doublings + kOffTheFastPathCost,
          "t " + std::to_string(t) + " spans nodes of " + std::to_string(kDevicesPerNode) +
              ": its all-reduces, two per layer, leave NVLink");
    }
  }
  const int ep = layout.expert_parallel;
  if (ep > 1) {
    add(kExpertParallelCostPerDoubling * std::log2(ep),
        "ep " + std::to_string(ep) +
            ": two all-to-alls per mixture layer, dispatching tokens to their experts and back");
  }
  const int c = layout.context_parallel;
  if (c > 1) {
    const double tokens_per_shard = static_cast<double>(estimate.setup.sequence_length) / c;
    if (tokens_per_shard >= kMinTokensPerContextShard) {
      add(kContextParallelCostPerDoubling * std::log2(c),
          "c " + std::to_string(c) + ": " + format_count(tokens_per_shard) +
              " tokens of the sequence per device, enough to hide the ring's exchange");
    } else {
      add(kContextParallelCostPerDoubling * std::log2(c) + kOffTheFastPathCost,
          "c " + std::to_string(c) + " leaves " + format_count(tokens_per_shard) +
              " tokens of the sequence per device, fewer than " +
              format_count(kMinTokensPerContextShard) + ": too little to hide the ring's exchange");
    }
  }
  const int p = layout.pipeline_parallel;
  if (p > 1) {
    // The 1F1B bubble, (p - 1) / (m + p - 1) of the step (Narayanan et al. 2021), shrunk v times
    // by the interleaved schedule; a step needs at least p micro-batches.
    const double v = layout.virtual_pipeline_stages;
    const double bubble = (p - 1) / (v * kMicroBatchesPerStep + p - 1);
    add(100 * bubble, "p " + std::to_string(p) + ": a pipeline bubble of " +
                          format_count(100 * bubble) + "% of a step at " +
                          std::to_string(kMicroBatchesPerStep) +
                          " micro-batches, and a step needs at least " + std::to_string(p));
  }
  if (layout.zero_stage == 3) {
    add(kZero3Cost, "ZeRO-3 gathers the weights for every forward and backward pass");
  }
  if (estimate.setup.recompute == Recompute::kFull) {
    add(kFullRecomputeCost, "full recomputation runs each forward pass twice");
  } else if (estimate.setup.recompute == Recompute::kSelective) {
    add(kSelectiveRecomputeCost, "selective recomputation redoes the attention core");
  } else if (estimate.setup.recompute == Recompute::kSelectiveOp) {
    add(kSelectiveOpRecomputeCost,
        "per-op recomputation redoes three of each block's seven matmuls");
  }
  if (cost.reason.empty()) cost.reason = "data parallelism alone: nothing beyond its all-reduce";
  return cost;
}

FitSearch find_fewest_devices(const TrainingSetup& base, int max_layouts) {
  FitSearch search;
  Estimate checked = estimate_memory(base);
  // A stack that needs data parallelism (torchtitan's FSDP2, DeepSpeed's ZeRO) refuses the single
  // device the search starts from; the search chooses the layout, so the setup is checked on the
  // smallest layout the stack takes instead.
  if (!checked.answer.ok() && checked.answer.setting == setting_id::kStack) {
    TrainingSetup probe = base;
    probe.layout = ParallelLayout{};
    probe.layout.data_parallel = 2;
    probe.layout.zero_stage = stack_row(base.stack).first_zero_stage;
    const Estimate on_two = estimate_memory(probe);
    if (on_two.answer.ok()) checked = on_two;
  }
  if (!checked.answer.ok()) {
    search.answer = checked.answer;
    return search;
  }
  const ModelShape& shape = *resolve_model(base);
  // The search leaves etp at 0 (as t), so t divides the routed experts' width too.
  const int heads_gcd = shape.num_experts > 1 ? std::gcd(tensor_parallel_widths_gcd(shape),
                                                         routed_expert_width(shape))
                                              : tensor_parallel_widths_gcd(shape);
  // Expert parallelism: powers of two that divide the experts (1 for a dense model).
  std::vector<int> expert_degrees;
  for (int ep = 1; ep <= std::min(shape.num_experts, kMaxExpertParallel); ep *= 2) {
    if (shape.num_experts % ep == 0) expert_degrees.push_back(ep);
  }

  std::vector<Ranked> fitting;
  std::vector<TrainingSetup> layouts_tried;
  for (int t : divisors_up_to(heads_gcd, kMaxTensorParallel)) {
    for (int p : divisors_up_to(shape.num_layers, shape.num_layers)) {
      for (int c = 1; c <= kMaxContextParallel && base.sequence_length % c == 0; c *= 2) {
        for (int zero = 0; zero <= kMaxZeroStage; ++zero) {
          for (std::size_t recompute = 0; recompute < choices<Recompute>().size(); ++recompute) {
            for (int ep : expert_degrees) {
              TrainingSetup setup = base;
              setup.layout = ParallelLayout{};
              setup.layout.expert_parallel = ep;
              setup.layout.tensor_parallel = t;
              setup.layout.sequence_parallel = t > 1;
              setup.layout.pipeline_parallel = p;
              setup.layout.context_parallel = c;
              setup.layout.zero_stage = zero;
              setup.recompute = static_cast<Recompute>(recompute);
              const Candidate candidate = smallest_data_parallel_that_fits(setup);
              if (candidate.fits) {
                fitting.push_back({candidate.estimate, layout_cost(candidate.estimate)});
              }
              layouts_tried.push_back(setup);
            }
          }
        }
      }
    }
  }

  if (fitting.empty()) {
    search.why_not_fewer = "No layout of up to " + format_count(kMaxDevices) + " " +
                           checked.device.short_name + "s fits this micro-batch.";
    return search;
  }
  std::sort(fitting.begin(), fitting.end(), fewer_devices_then_cheaper);
  search.fewest_devices = fitting.front().estimate.num_devices;
  for (const Ranked& ranked : fitting) {
    if (ranked.estimate.num_devices != search.fewest_devices ||
        static_cast<int>(search.layouts.size()) >= std::max(1, max_layouts)) {
      break;
    }
    search.layouts.push_back(ranked.estimate);
    search.costs.push_back(ranked.cost);
  }

  // Why not fewer: each tried layout at the largest d that stays below the fewest count.
  for (TrainingSetup setup : layouts_tried) {
    const double others = static_cast<double>(setup.layout.tensor_parallel) *
                          setup.layout.pipeline_parallel * setup.layout.context_parallel;
    const double d = std::floor((search.fewest_devices - 1) / others);
    if (d < 1) continue;
    setup.layout.data_parallel = static_cast<int>(d);
    const Estimate estimate = estimate_memory(setup);
    if (!estimate.answer.ok()) continue;
    if (!search.has_best_smaller || estimate.bytes.total() < search.best_smaller.bytes.total()) {
      search.best_smaller = estimate;
      search.has_best_smaller = true;
    }
  }
  if (search.has_best_smaller) {
    const Estimate& best = search.best_smaller;
    search.why_not_fewer = "With fewer than " + format_count(search.fewest_devices) +
                           " devices nothing fits: the leanest layout, on " +
                           format_count(best.num_devices) +
                           (best.num_devices == 1 ? " device" : " devices") + ", still needs " +
                           format_bytes(best.bytes.total()) +
                           " on its most loaded device, over the " + usable_text(best) + ".";
  } else {
    search.why_not_fewer = "One device is the fewest there can be.";
  }
  return search;
}

}  // namespace trainmem
