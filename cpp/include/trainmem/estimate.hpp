// The memory to train a model: model states plus activations, on the most loaded device of a
// parallel layout. With every degree at 1 it is the plate's single-device figure. The input is a
// TrainingSetup (setup.hpp); each term is a row of terms.hpp's table.
#pragma once

#include <string>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/setup.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

// One pipeline stage's device: which stage, what it holds and its peaks (the Estimate's own
// fields, of the stage's device).
struct StageFigures {
  int index = 0;  // from 0, the first
  PipelineStage role = PipelineStage::kOnly;
  double layers = 0;
  double parameters = 0;  // before ZeRO sharding
  double total_bytes = 0;
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
};

// RL post-training's rollout engine beside the trainer (TrainingSetup::rollout; rollout.cpp), on
// the most loaded device: what it takes, what its KV cache holds against what a generation needs,
// and the utilizations between which the run works.
// Why vLLM does not start, where it does not (rollout.cpp): the device's free memory below its
// share; a share that leaves no KV cache; a KV cache short of one request of its max model length.
enum class RolloutStartFailure { kNone, kFreeMemory, kNoCacheMemory, kMaxModelLength };

// One phase of an RL step on the device (the replayed step's marks, timeline.hpp): verl's "weight
// sync", "generation", "log-probabilities" or "update"; its allocated peak and what is reserved at
// its busiest, each with the runtime outside the allocator; and whether that fits the device's
// usable memory.
struct RolloutPhase {
  std::string id;
  double allocated_bytes = 0;
  double bytes = 0;
  bool fits = true;
};

// vLLM's KV cache for a hybrid (rollout.cpp, vllm_hybrid_cache): one pool of blocks, each the
// state of one request in a group of its linear mixers' layers or block_tokens tokens of a group of
// its attention layers, every block block_bytes whichever group holds it. Empty (block_tokens 0)
// for a model of attention layers alone.
struct HybridKvCache {
  double attention_token_bytes = 0;  // one token of one attention layer, this device's heads
  double state_bytes = 0;            // one request's state in one linear layer, unpadded
  double block_tokens = 0;           // the attention's block size, raised to hold a state a page
  double page_bytes = 0;             // block_tokens × attention_token_bytes: a layer's page
  double group_layers = 0;           // the layers of a group (a tensor each)
  double attention_groups = 0;
  double state_groups = 0;
  // The blocks one request's state holds in a state group: 1 without prefix caching (vLLM's
  // mamba cache mode "none", TRL's), 2 with it ("align", verl's: the running state's block and the
  // one before it, until the next is filled).
  double state_blocks = 1;
  // Mamba-2 under prefix caching ("all"): a state cached at every block, ⌈tokens / block⌉ of them
  // a request in each state group (state_blocks unused).
  bool state_every_block = false;
  double attention_layers = 0;
  double state_layers = 0;
  bool present() const { return block_tokens > 0; }
  double block_bytes() const { return group_layers * page_bytes; }
  // The blocks vLLM budgets one request of `tokens` as it starts and logs its size
  // (MambaSpec.max_memory_usage_bytes): ⌈tokens / block_tokens⌉ in each attention group,
  // state_blocks in each state group (⌈tokens / block_tokens⌉ where state_every_block).
  double request_blocks(double tokens) const;
  // The blocks a running request of `tokens` holds: its attention's, and its state's,
  // running_state_blocks() (where state_every_block 2 a group, the block of its last computed
  // token and the next, MambaManager freeing the others as it computes).
  double running_blocks(double tokens) const;
  double running_state_blocks() const;
};

struct RolloutFigures {
  bool counted = false;     // a rollout engine is set: the figures below are filled
  double engine_bytes = 0;  // its pools: its share of share_of_bytes, and beyond_share_bytes
  // What the share (gpu_memory_utilization, SGLang's mem_fraction_static) is of: vLLM's the
  // device's total, SGLang's the memory free as it starts; and what SGLang makes beyond its share
  // (its request table).
  double share_of_bytes = 0;
  double beyond_share_bytes = 0;
  double weights_bytes = 0;  // its BF16 copy of the model
  double kv_bytes_per_token = 0;
  double kv_tokens = 0;  // what its KV cache holds at most: its share's rest / per token
  // A hybrid's (kv_tokens then vLLM's "GPU KV cache size": its blocks over one request's at the
  // max model length, times that length), and its blocks (vLLM's num_blocks).
  HybridKvCache hybrid;
  double kv_blocks = 0;
  double max_model_length = 0;   // vLLM's max_model_len: TRL's, else the model's positions
  double rollout_sequences = 0;  // what one generation makes on the device
  double rollout_tokens = 0;     // and their tokens: sequences × sequence length
  // The generation, the log-probabilities and the update, in the order they run (under verl its
  // weight sync first); the run's peak is the largest. Under sleep mode vLLM is woken for the
  // generation alone (and verl's weight sync, its weights), beside what the trainer keeps between
  // updates (its gradients freed, its cache emptied); awake it holds its share through them all.
  std::vector<RolloutPhase> phases;
  double trainer_bytes = 0;   // the trainer's largest phase beside the engine (awake), or update
  double resident_bytes = 0;  // what the trainer holds beside the engine as it generates
  double generation_bytes = 0;
  // The trainer's memory when the engine is made (vLLM's free-memory check, the memory SGLang's
  // share is of); < 0 where it is not derived
  // (TRL's under ZeRO above 0).
  double startup_bytes = -1;
  RolloutStartFailure start_failure = RolloutStartFailure::kNone;
  bool starts() const { return start_failure == RolloutStartFailure::kNone; }
  double largest_utilization = 0;         // the most the engine may take, the trainer fitting
  double least_starting_utilization = 0;  // the least with which vLLM starts (SGLang serves one
                                          // sequence)
  double smallest_utilization = 0;        // the least that holds one generation's KV cache
};

struct [[nodiscard]] Estimate {
  Answer answer;  // refused: the setting at fault ("model", "config", "tp", …) and why
  TrainingSetup setup;
  std::string model_name;
  int max_positions = 0;  // the model's longest sequence (ModelShape::max_positions); 0: unknown
  double num_parameters = 0;  // the whole model (with its MTP modules when trained)
  // The model's multi-token-prediction modules (count_mtp_parameters), trained or not: a readout
  // says what it leaves out.
  double mtp_parameters = 0;
  // A multimodal model's vision tower and projector (among num_parameters); 0 for a text model.
  double vision_parameters = 0;
  double parameters_on_device = 0;  // on the most loaded device, before ZeRO sharding
  double trainable_parameters =
      0;  // every parameter (a frozen vision tower's aside), or LoRA's adapters
  // The frozen base's linear weights under LoRA, bytes per parameter (2, NF4's 0.516, int8's
  // 1 + 4/in); 0 without LoRA.
  double base_linear_bytes_per_parameter = 0;
  // The stage whose device the terms below are of: the most loaded unless the setup asks for
  // another (pipeline_stage); and the most loaded, on which the fit and the verdict are judged
  // (most_loaded_stage is its role).
  StageFigures stage;
  StageFigures most_loaded;
  PipelineStage most_loaded_stage = PipelineStage::kOnly;
  BytesPerParameter bytes_per_parameter;
  double tokens_per_micro_batch = 0;
  // The most loaded device's terms (terms.hpp). Under a stack each as it stands at the step's
  // allocated peak, with the framework's buffers, the runtime and the allocator's cache.
  Breakdown bytes;
  // What that device's host holds instead (offloading): each term the device gave up, and the
  // FP32 gradients the host's optimiser step reads.
  Breakdown host;
  // The host is shared by the node's devices (up to kDevicesPerNode of the layout's): what they
  // all offload, and whether it is within the host's memory (true when it is not given).
  double host_devices = 0;
  double host_node_bytes = 0;
  double host_capacity_bytes = 0;  // setup.host_capacity_gb, in bytes; 0: not checked
  bool host_fits = true;
  Device device;
  double num_devices = 1;  // d·t·p·c
  // The device's memory a fit is judged against: under the idealised step, the capacity as
  // printed (the plate's 80 GB), whose headroom stands in for what the step leaves out; under a
  // training stack, which counts the CUDA context and the allocator's cache itself, the memory
  // PyTorch reports for the device (reported_memory; its source in limit_source), or the printed
  // capacity where none is known (limit_source empty).
  double limit_bytes = 0;
  std::string limit_source;
  double devices_worth = 0;     // the most loaded device's total / limit_bytes
  double usable_bytes = 0;      // limit_bytes less the headroom kept free
  bool fits = false;            // the most loaded device's total <= usable_bytes
  double headroom_percent = 0;  // the share of the capacity kept free (the setup's)
  // What the device holds beside its activations (the total less them), and of that what is
  // neither the model states nor counted logits: a stack's buffers, runtime and cache, a layer
  // being dequantised.
  double held_bytes = 0;
  double held_besides_bytes = 0;
  // What the device has left for activations once everything else is held: its usable memory less
  // held_bytes; negative when those alone exceed it.
  double activation_room_bytes = 0;
  // What torch.cuda.max_memory_allocated and torch.cuda.max_memory_reserved would report for the
  // step: under ideal both are the total; under a stack, the allocated peak is every term at the
  // step's busiest moment but what lies outside the allocator, and the reserved peak adds the
  // allocator's cache. The total adds to the reserved peak the runtime outside the allocator.
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
  std::vector<StackTerm> stack_terms;  // empty under ideal
  // What the stack did to the setup before it ran it, a sentence each: Megatron-LM's padded
  // vocabulary, its sequence parallelism turned off at t 1 (the figures above are of the setup as
  // run; `setup` stays as asked).
  std::vector<std::string> notes;
};

// RL post-training's rollout engine beside the trainer, of an estimate (ok) whose setup has one
// (rollout.cpp); not counted without one. Worked out from the estimate when asked, so that the
// plate's estimate carries nothing of it.
RolloutFigures rollout_figures(const Estimate& estimate);

// The whole estimate; an invalid setup gives an answer with status kInvalidInput, a message and
// the setting at fault ("config" when the custom model's shape is unusable).
Estimate estimate_memory(const TrainingSetup& setup);

// Whether the estimate's terms are of a stage the setup asked for that is not the most loaded.
inline bool answers_another_stage(const Estimate& estimate) {
  return estimate.stage.index != estimate.most_loaded.index;
}

// A stage in words: "the last pipeline stage (4 of 4)", "pipeline stage 2 of 4"; "the only
// device" without a pipeline.
std::string stage_words(const StageFigures& stage, int pipeline_parallel);

// Every pipeline stage's figures, the first first: one estimate a stage (its StageFigures), p of
// them; one without a pipeline; none for a setup estimate_memory refuses.
std::vector<StageFigures> every_stage(const TrainingSetup& setup);

// One point of the activations-against-tokens chart: the most loaded device's activations.
struct ActivationPoint {
  int micro_batch_sequences = 0;
  double tokens = 0;
  double flash_attention_bytes = 0;
  double without_flash_attention_bytes = 0;     // 0 where not counted
  bool without_flash_attention_counted = true;  // false where the setup refuses FlashAttention off
  // What the device has left for activations at this many tokens, once it holds every other term
  // at this many tokens (the logits grow with them); below zero where they alone exceed it.
  double room_bytes = 0;
};

// The setup with the output layer's logits and loss counted as a real run computes them: the
// stack's own loss where it has one (Megatron-LM's vocab-parallel cross-entropy, torchtitan's
// FP32 upcast), otherwise an unfused cross-entropy over FP32-upcast logits, as Hugging Face
// transformers' causal-LM loss computes it (loss_utils.py, ForCausalLMLoss: logits.float());
// under a rollout engine, GRPO's.
TrainingSetup with_logits_as_run(TrainingSetup setup);

// Everything the plate's workshop draws, from one call: the estimate for `setup`, and
// activations with and without FlashAttention for 1..max_micro_batch_sequences sequences. (The
// page's binding adds every setting's text, so that one call gives it all it shows.)
struct [[nodiscard]] WorkshopView {
  Estimate estimate;
  std::vector<ActivationPoint> activation_curve;
  // Where the logits and loss are not counted: how much more the most loaded device would hold
  // with them counted as a run computes them (with_logits_as_run), and that loss. 0 where counted.
  double logits_left_out_bytes = 0;
  Loss logits_left_out_loss = Loss::kVocabParallel;
  // The micro-batch's sequences go in steps of this many, the curve's points too: 2 under DPO's
  // loss (each pair's chosen and rejected sequences together), else 1.
  int micro_batch_step = 1;
};

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences);

// The same two for the plate's view alone, as the first view's module answers them (its settings
// but the plate's at their defaults, under the idealised step; any other setup is refused): the
// same figures as estimate_memory and workshop_view give such a setup.
Estimate plate_estimate(const TrainingSetup& setup);
WorkshopView plate_workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences);

}  // namespace trainmem
