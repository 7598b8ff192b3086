// A training stack's step, replayed (stack_rows.hpp names each stack's): one training step's
// allocations on the most loaded device, each under a term, through PyTorch's caching allocator
// (allocator.hpp). The pieces every framework's step shares are here (stack_step.cpp, and each
// loss in stack_loss.cpp); each framework's order of allocations is in stack_frameworks.cpp. The
// replay reads only what StepDevice gives it: it stands below the estimate that builds one
// (estimate/replay.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"
#include "trainmem/terms.hpp"

namespace trainmem::replay {

// The streams the replay allocates on: the compute stream, and the one Transformer Engine's
// context-parallel all-to-all reorders its outputs on (cp_stream); and a pool of its own, which
// shares no segment with the others: vLLM's under sleep mode (CuMemAllocator's MemPool).
inline constexpr CachingAllocator::Stream kComputeStream = 0;
inline constexpr CachingAllocator::Stream kExchangeStream = 1;
inline constexpr CachingAllocator::Stream kRolloutPool = 2;

// One tensor of a slot: its bytes, and whether context parallelism's all-to-all makes it.
struct SlotTensor {
  double bytes = 0;
  Exchange exchange = Exchange::kNone;
};

// One of the stage's layers: its parameters on the device, unsharded, and its routed experts'
// among them.
struct LayerUnit {
  double parameters = 0;
  double expert_parameters = 0;
};

// What the step needs to know of the most loaded device.
struct StepDevice {
  const TrainingSetup& setup;
  const ModelShape& shape;
  ParameterCounts counts;
  Breakdown bytes;           // the idealised terms, whole, under the stack's bytes per parameter
  int slots = 0;             // layers' worth of activations held (p micro-batches on stage 1)
  double kept_per_slot = 0;  // one slot's saved activations
  std::vector<SlotTensor> kept_tensors;  // one slot's saved tensors, in the order made
  // The gradients one layer's backward pass makes, one per tensor a layer saves without
  // recomputation (the llama block's, whichever model counts what is kept), in the forward pass's
  // order; empty where the stack's replay does not follow them.
  std::vector<SlotTensor> gradient_tensors;
  double recompute_working = 0;  // what a recomputed layer makes beyond what it keeps
  double dispatch = 0;           // a mixture layer's all-to-all buffers, while it runs
  double layers_per_stage = 0;
  double zero_shards = 1;       // d·c
  double layer_parameters = 0;  // one layer's on the device, unsharded
  // Of those, the routed experts' (a mean over the stage's layers), which shard over their own
  // data-parallel group: torchtitan's efsdp (d·c·t / ep), Megatron-LM's d·t·c / (ep·etp).
  double layer_expert_parameters = 0;
  double expert_zero_shards = 1;
  // One layer's parameters as sharded: the rest over zero_shards, the routed experts over
  // expert_zero_shards.
  double sharded_layer_parameters() const {
    return (layer_parameters - layer_expert_parameters) / zero_shards +
           layer_expert_parameters / expert_zero_shards;
  }
  // One layer's weights as held, unsharded (a quantised base's linear weights in their storage,
  // LoRA's adapters beside them), and its trainable parameters (the adapters under LoRA).
  double layer_weight_bytes = 0;
  double layer_trainable_parameters = 0;
  double root_parameters = 0;  // the embedding, output layer and final norm here
  double parameters = 0;
  double loss_tokens = 0;        // the loss's tokens on the device (0 where it holds no logits)
  double logit_count = 0;        // logits on the device: tokens × vocabulary / t
  double fp8_layer_weights = 0;  // one layer's linear weights that FP8 all-gather gathers in FP8
  // torchao's low-precision linear layers (MXFP8Linear, NVFP4Linear): the casts one block's
  // backward pass makes, at their most (fp8.hpp, mx_linear_backward_casts and
  // nvfp4_linear_backward_casts; 0 without them), and the leading slots whose layers run them
  // (every slot under MXFP8; under NVFP4 its converted layers, not its BF16 tail).
  double casts = 0;
  double cast_slots = 0;
  // Under NVFP4, what one of its BF16 tail's layers rebuilds beyond what it keeps, less than
  // recompute_working (a converted layer's); below 0 otherwise. And what a converted slot and a
  // tail slot each keep, as multiples of kept_per_slot (their mean over the layers).
  double tail_recompute_working = -1;
  double converted_kept_scale = 1;
  double tail_kept_scale = 1;
  // The multiple of kept_per_slot that slot `slot` keeps (1: every slot alike).
  double kept_scale_of(int slot) const {
    if (tail_recompute_working < 0) return 1;
    return slot >= 1 && slot <= cast_slots ? converted_kept_scale : tail_kept_scale;
  }
  // What the layer of slot `slot` (from 1, in the forward pass's order; 0: the largest) makes
  // beyond what it keeps.
  double recompute_working_of(int slot) const {
    return tail_recompute_working >= 0 && slot > cast_slots ? tail_recompute_working
                                                            : recompute_working;
  }
  // The stage's layers of each kind (a mixture's dense layers, its mixture layers), and whether
  // it holds the output layer: which linear layers' shapes its backward pass meets.
  double dense_layers = 0;
  double mixture_layers = 0;
  bool output_layer = true;
  bool embedding = true;
  // Each of the stage's layers, in the forward pass's order (a mixture's dense layers and a
  // hybrid's kinds as they are, where layer_parameters is their mean), then each
  // multi-token-prediction module's layer: Megatron-FSDP's units. Empty where the stack's replay
  // does not follow them. The modules' layers are among root_parameters (their projections and
  // norms are the rest of root_parameters' share of them).
  std::vector<LayerUnit> layer_units = {};
  // Of root_parameters, the multi-token-prediction modules' layers': layer_units past the stage's
  // own layers.
  double mtp_unit_parameters() const {
    double held = 0;
    for (std::size_t unit = static_cast<std::size_t>(layers_per_stage); unit < layer_units.size();
         ++unit) {
      held += layer_units[unit].parameters;
    }
    return held;
  }
  double tokens = 0;  // a micro-batch's tokens on the device: s/c sequences' worth
  // The optimiser's state that bitsandbytes pages (TrainingSetup::paged_optimizer), outside the
  // allocator, and the trained parameters it belongs to: one layer's, and the rest's.
  double paged_state = 0;
  double layer_paged_parameters = 0;
  double root_paged_parameters = 0;
  // Under a pipeline: the schedule's micro-batches a step (p, torchtitan's default), the virtual
  // stages a device, this stage's micro-batches' worth in flight (placement.hpp), and the bytes of
  // the hidden state one micro-batch passes from stage to stage on this device (BF16, split over t
  // under sequence parallelism).
  double pipeline_micro_batches = 1;
  double virtual_stages = 1;
  double micro_batches_in_flight = 1;
  double stage_boundary_bytes = 0;
  // Megatron-LM's deferred output-layer weight gradient, on the last stage: the earlier
  // micro-batches of the step whose output-layer input and gradient it keeps by its last, and
  // whether it keeps the last's own (TrainingSetup::defer_embedding_wgrad).
  double deferred_wgrad_micro_batches = 0;
  bool defers_last_wgrad = false;
  // Megatron-LM's data-loader attention mask (TrainingSetup::no_dataloader_attention_mask) on a
  // stage that reads the data: one micro-batch's, b·(s/c)·s booleans once context parallelism has
  // taken its share of the rows (whole, b·s², as it arrives); and how many micro-batches' masks are
  // held at once, 0 where the stage holds none. Kept to the backward pass where recomputation's
  // checkpoints save it, freed as the forward pass returns otherwise.
  double attention_mask_bytes = 0;
  double attention_mask_whole_bytes = 0;
  double attention_masks_held = 0;
  bool attention_mask_kept = false;
  // RL post-training's colocated rollout engine (TrainingSetup::rollout): vLLM's pools, tensors of
  // the trainer's own caching allocator made before the first step, held through it awake, made
  // for each generation under sleep mode.
  double rollout_engine = 0;
  // Under verl (TrainingSetup::rl_trainer): the engine's BF16 weights on the device (its share
  // under its tensor parallelism), which its weight sync wakes before its KV cache; and what the
  // sync holds at its busiest beyond the state dict's clones, in FP32 (rollout.hpp's
  // verl_sync_buckets): the bucket sent, the bucket filling and the tensor just gathered whole.
  double rollout_weights = 0;
  double sync_sent_bytes = 0;
  double sync_filling_bytes = 0;
  double sync_gathered_bytes = 0;
  // The log-probability passes' micro-batch over the update's (verl's
  // log_prob_micro_batch_size_per_gpu): their layers' work and logits scale with it.
  double log_prob_scale = 1;
  // The micro-batches of one generation batch (TRL's steps_per_generation), whose log-probability
  // passes run one after another.
  double generation_micro_batches = 1;
  // verl's critic (stack_rl.cpp): a value head of one output in place of the output layer, so no
  // embedding is tied to it.
  bool value_head = false;
};

// Tags: each of the first kNumTerms is its Term; a stack's own terms follow, one tag each.
inline constexpr std::size_t tag(Term term) { return static_cast<std::size_t>(term); }
inline constexpr std::size_t kFirstStackTag = kNumTerms;

// One step's allocations through the allocator, each under a tag, with each tag's bytes at the
// allocated peak; and, when asked, its timeline.
class Step {
 public:
  explicit Step(AllocatorConfig config = {}) : allocator_(config) {}

  // A term of the stack's own, counted in the table's term `counted_in` (its buffers, or the
  // runtime): its tag.
  std::size_t term(std::string id, std::string label, std::string source,
                   Term counted_in = Term::kFramework);

  CachingAllocator::Handle take(std::size_t tag, double bytes,
                                CachingAllocator::Stream stream = kComputeStream);
  // A slot's tensor; one the all-to-all makes comes through it, from a tensor of the same size
  // the caller holds (stack_step.cpp).
  CachingAllocator::Handle take(std::size_t tag, const SlotTensor& tensor);
  void give(CachingAllocator::Handle handle);
  // A second model's replay within the step (verl's critic): while `as` is set (a stack tag for
  // each of the table's terms, kNumTerms of them), what is taken under a table's term is counted
  // under its stack tag instead, and each mark's phase is named after `phase_prefix`. Empty and
  // "" end it.
  void count_as(std::vector<std::size_t> as, std::string phase_prefix) {
    count_as_ = std::move(as);
    phase_prefix_ = std::move(phase_prefix);
  }
  // torch.cuda.empty_cache(): the cached segments that hold nothing given back.
  void empty_cache() { allocator_.empty_cache(); }

  // Records the phase just ended: its busiest moment and what is reserved, each with the memory
  // outside the allocator.
  void mark(const char* phase, int layer);
  // The next phase's busiest moment counts from here (memory given back since the last mark is
  // not the next phase's).
  void settle() {
    phase_peak_ = allocator_.allocated_bytes();
    if (timeline_ != nullptr) at_phase_peak_ = held_;
  }
  // `outside`: what is on the device outside the allocator, by term.
  void record(std::vector<TimelinePoint>* timeline, const Breakdown& outside) {
    timeline_ = timeline;
    outside_ = outside;
  }
  // A step before the one the timeline shows (its marks record nothing), replayed for what it
  // leaves in the allocator's cache; `false` resumes the timeline from here. The allocated peak,
  // as the timeline, is the reported step's: a block the warm-up's cache happened to hand out
  // whole (an unsplit remainder under 1 MiB) is not that step's.
  void warming_up(bool warming) {
    warming_ = warming;
    phase_peak_ = allocator_.allocated_bytes();
    at_phase_peak_ = held_;
    peak_ = allocator_.allocated_bytes();
    at_peak_ = held_;
  }

  double at_peak(std::size_t tag) const { return tag < at_peak_.size() ? at_peak_[tag] : 0; }
  double peak_allocated() const { return peak_; }
  double peak_reserved() const { return allocator_.peak_reserved_bytes(); }
  // The stack's own terms, each with its bytes at the allocated peak.
  std::vector<StackTerm> terms_at_peak() const;

 private:
  // `held` by term: a stack's tags go to the term each is counted in.
  Breakdown by_term(const std::vector<double>& held) const;

  CachingAllocator allocator_;
  std::vector<std::pair<std::size_t, double>> blocks_;  // by handle: tag and block bytes
  std::vector<double> held_ = std::vector<double>(kFirstStackTag, 0);
  std::vector<double> at_peak_ = std::vector<double>(kFirstStackTag, 0);
  double peak_ = -1;
  double phase_peak_ = 0;
  std::vector<double> at_phase_peak_;
  std::vector<StackTerm> terms_;
  std::vector<TimelinePoint>* timeline_ = nullptr;
  std::vector<std::size_t> count_as_;
  std::string phase_prefix_;
  bool warming_ = false;
  Breakdown outside_;
};

using Handles = std::vector<CachingAllocator::Handle>;

inline void give_all(Step& step, Handles& handles) {
  for (const CachingAllocator::Handle handle : handles) step.give(handle);
  handles.clear();
}

// The model as loaded, one block a layer and one for the rest (the embedding, final norm and output
// layer), each 1/shards of its whole; the whole of a layer's weights and the rest's (a quantised
// base in its storage with LoRA's adapters beside it, or under full training every parameter at
// the weights' bytes per parameter).
struct ModelWeights {
  double layer = 0;
  double root = 0;
};
// The weights' blocks, a layer's each and the rest's, each handle pushed onto `taken` where given.
ModelWeights load_model(Step& step, const StepDevice& device, double shards = 1,
                        Handles* taken = nullptr);

// The model states as the terms hold them, each one block for the whole step: the weights, the
// master weights and the optimizer's state (ZeRO's shards, FSDP's).
void take_model_states(Step& step, const StepDevice& device);

// What trains on the device (the adapters under LoRA, every parameter otherwise) and each trained
// parameter's gradient and optimiser state bytes, as the terms hold them.
struct Trained {
  double root = 0;  // the embedding's, final norm's and output layer's
  double all = 0;
  double gradient_bytes = 0;
  double state_bytes = 0;
};
Trained trained_parameters(const StepDevice& device);

// A slot's saved tensors, taken as its forward pass makes them (and, under recomputation, what
// the block makes but does not keep, freed as it ends).
Handles keep_slot(Step& step, const StepDevice& device, int slot = 0);

// Cross-entropy's own allocations over `logits` BF16 logits that the caller holds (the whole
// loss's, or one chunk's of torchtitan's ChunkedLossWrapper); `forward_done` runs between its
// forward and backward passes (where a caller frees the BF16 logits); each returns the handle of
// the logits' BF16 gradient.
// - compiled_cross_entropy: compiled (Inductor's one kernel), each of the `tokens` tokens' FP32 max
//   and log-sum-exp kept, the BF16 gradient written at once.
CachingAllocator::Handle compiled_cross_entropy(Step& step, double logits, double tokens);
// - loss_parallel_cross_entropy: over the FP32 upcast of a vocabulary shard, as DTensor's
//   loss_parallel handlers (torch/distributed/tensor/parallel/loss.py: _log_softmax,
//   _nll_loss_and_log_softmax_backward) and torchtitan's _LossParallelCrossEntropy
//   (torchtitan/components/loss.py, b5bcd76c) run it: the upcast, the shifted logits and their
//   exp (freed after its sum), the log-softmax saved; backward, zeros_like of it, its exp and their
//   sum, then the FP32 input gradient and its BF16 cast.
CachingAllocator::Handle loss_parallel_cross_entropy(
    Step& step, double logits, const std::function<void()>& forward_done = nullptr);
// - upcast_cross_entropy: cross_entropy over the FP32 upcast: the upcast and the log-softmax it
//   saves; backward, the log-softmax output's gradient, the input's, then the BF16 cast. `shifts`:
//   transformers 4.46 to 4.48's ForCausalLMLoss (fp32-shifted; loss/loss_utils.py) shifts the
//   upcast into a contiguous copy first, freed with it, and writes the slice's gradient into zeros
//   of the whole logits.
CachingAllocator::Handle upcast_cross_entropy(Step& step, double logits, bool shifts,
                                              const std::function<void()>& forward_done = nullptr);

// The loss's allocations in order; the handle of the logits' BF16 gradient, which the output
// layer's backward frees.
// `forward_done`, if given, runs where the model's forward pass returns, after the loss's forward
// pass (the FP32-upcast losses and Liger's: the hf stack's autocast ends there).
// `reference_layers`, if given, runs DPO's reference model's layers inside the loss (under no_grad,
// before its logits) and returns what its forward pass holds until it returns (autocast's cached
// weight casts): the hf stack's.
CachingAllocator::Handle loss_forward_and_backward(
    Step& step, const StepDevice& device, const std::function<void()>& forward_done = nullptr,
    const std::function<Handles()>& reference_layers = nullptr);

// verl's log-probability pass over one micro-batch's packed tokens (the actor's or the
// reference's), under no_grad: the logits, their quotient by the temperature, all freed.
void verl_log_probabilities(Step& step, const StepDevice& device,
                            const std::function<void()>& forward_done);

// TRL's log-probability pass over one micro-batch's completions before its update, under no_grad
// (GRPO's loss, the logits counted): the logits and what selective_log_softmax makes, all freed.
// `forward_done` runs where autocast's context exits, `returned` where the model's forward pass
// has returned its (converted) logits.
void grpo_log_probabilities(Step& step, const StepDevice& device,
                            const std::function<void()>& forward_done,
                            const std::function<void()>& returned);

// The gradient flowing back through the layers, where a stack's replay follows it: the tag it is
// held under, and the block that holds it now.
struct Flowing {
  std::size_t tag = 0;
  CachingAllocator::Handle gradient = 0;
};

// The end of a slot's backward pass: the rebuilt layer, then its saved tensors freed; with
// `flowing`, each freed as its operation's backward pass makes the gradient it passes on.
void layer_backward(Step& step, const StepDevice& device, Handles& kept, int slot,
                    Flowing* flowing = nullptr);

// The step the timeline shows, after two it does not: the first step's micro-batch (`first`: its
// optimizer step makes the optimizer's state, lazily as torch.optim's _init_group does) and one
// more, for the blocks they leave in the allocator's cache, which then stops growing; then, from
// the mark "start", the micro-batch the timeline shows, as every later one.
void replay_after_warm_up(Step& step, const std::function<void(bool first)>& micro_batch);

// What a stack does around each slot's pass (Megatron-FSDP's gathers), given the slot from 1.
struct SlotHooks {
  std::function<void(int slot)> before;
  std::function<void(int slot)> after;
};

// The forward pass's slots, each marked; the backward pass's, last first, each marked.
std::vector<Handles> forward_slots(Step& step, const StepDevice& device,
                                   const SlotHooks* hooks = nullptr);
void backward_slots(Step& step, const StepDevice& device, std::vector<Handles>& kept,
                    Flowing* flowing = nullptr, const SlotHooks* hooks = nullptr);

}  // namespace trainmem::replay
