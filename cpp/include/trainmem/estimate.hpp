// The memory to train a model: model states plus activations, on the most loaded device of a
// parallel layout. With every degree at 1 it is the plate's single-device figure.
#pragma once

#include <string>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

// The plate's bytes per parameter, mixed-precision Adam (Rajbhandari et al., "ZeRO", SC 2020,
// section 3.1: 2Ψ + 2Ψ + 12Ψ = 16Ψ bytes).
constexpr double kBf16WeightBytesPerParameter = 2;        // BF16 weights
constexpr double kBf16GradientBytesPerParameter = 2;      // BF16 gradients
constexpr double kFp32MasterWeightBytesPerParameter = 4;  // FP32 master copy
constexpr double kAdamMomentBytesPerParameter = 8;        // Adam's two FP32 moments
constexpr double kModelStateBytesPerParameter =
    kBf16WeightBytesPerParameter + kBf16GradientBytesPerParameter +
    kFp32MasterWeightBytesPerParameter + kAdamMomentBytesPerParameter;

// Activations saved per layer (Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", MLSys 2023, equation 1 and Table 2), in bytes:
//   no parallelism                 s·b·h·(34 + 5·a·s/h)
//   tensor parallel t              s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   tensor and sequence parallel   s·b·h·(34/t + 5·a·s/(h·t))
//   full recomputation             2·s·b·h per layer (2·s·b·h/t with sequence parallelism)
// FlashAttention never materialises the a·s·s scores, which removes the 5·a·s/h term, as does
// selective recomputation.
constexpr double kKorthikantiBytesPerTokenPerHidden = 34;
constexpr double kKorthikantiReplicatedBytesPerTokenPerHidden = 10;  // LayerNorms, dropout masks,
                                                                     // inputs: not split by TP
constexpr double kKorthikantiShardedBytesPerTokenPerHidden = 24;     // split by TP
constexpr double kKorthikantiScoreBytesPerHeadPerTokenPair = 5;
constexpr double kFullRecomputeBytesPerTokenPerHidden = 2;  // each layer's BF16 input

// Korthikanti et al. 2023, section 4.1, split the 34 by block: attention 11 (input 2, Q and K 4,
// V 2, output projection's input 2, dropout mask 1), MLP 19 (input 2, the two 8·s·b·h
// intermediates of the 4h-wide MLP, dropout mask 1) and the two layer norms' inputs 4.
constexpr double kKorthikantiAttentionBytesPerTokenPerHidden = 11;
constexpr double kKorthikantiMlpBytesPerTokenPerHidden = 19;
constexpr double kKorthikantiNormBytesPerTokenPerHidden = 4;
static_assert(kKorthikantiAttentionBytesPerTokenPerHidden + kKorthikantiMlpBytesPerTokenPerHidden +
                      kKorthikantiNormBytesPerTokenPerHidden ==
                  kKorthikantiBytesPerTokenPerHidden,
              "section 4.1's split must sum to equation 1's 34");
// Under tensor parallelism without sequence parallelism the MLP's input (2) and dropout mask (1)
// stay whole on every rank; its two 8·s·b·h intermediates are split over t.
constexpr double kKorthikantiMlpReplicatedBytesPerTokenPerHidden = 3;
constexpr double kKorthikantiMlpShardedBytesPerTokenPerHidden = 16;
static_assert(kKorthikantiMlpReplicatedBytesPerTokenPerHidden +
                      kKorthikantiMlpShardedBytesPerTokenPerHidden ==
                  kKorthikantiMlpBytesPerTokenPerHidden,
              "the MLP's parts must sum to its 19");
// A mixture of experts routing each token to its top k experts saves the MLP's activations k
// times: k - 1 more MLP shares per layer, 19 (3 + 16/t under tensor parallelism, 19/t with
// sequence parallelism). The router's s·b·E logits are left out, as Korthikanti leaves out
// anything below s·b·h.

// Expert parallelism's token dispatch (Megatron-LM's MoEAlltoAllTokenDispatcher,
// megatron/core/transformer/moe/token_dispatcher.py): a mixture layer permutes each device's
// tokens into k copies (times the capacity factor), h wide in BF16, and sends them to the experts'
// devices with an all-to-all, which receives as many on balanced routing; the combine sends the
// experts' outputs back the same way. Only the experts' input is saved for the backward pass (the
// experts' first projection saves it: counted with the MLP); the permutation keeps an index map
// and the routed probabilities, 12 bytes per copy (below s·b·h, as the router's logits, and not
// counted). The send and the receive buffer of one all-to-all are transient: two buffers of
// T·k·C·h BF16 values, one layer at a time.
constexpr double kAllToAllBuffersInFlight = 2;

// The output layer's logits and the loss (off in the plate's view), split over the vocabulary by
// tensor parallelism (a vocabulary-sharded loss). Megatron-LM's vocab-parallel cross-entropy holds
// the BF16 logits and their FP32 copy, 2 + 4 bytes per token per vocabulary entry. PyTorch's
// unfused cross_entropy(logits.float()) peaks in its backward pass with the FP32 log-softmax it
// saved, that output's gradient and its input's gradient, 4 + 4 + 4 (the BF16 logits freed before
// the backward pass, as torchtitan frees them); tests/data/loss-peak-cpu.json measures 12.00.
constexpr double kLogitsBytesPerTokenPerVocab = kBf16Bytes + kFp32Bytes;
constexpr double kFp32UpcastLossBytesPerTokenPerVocab = 3 * kFp32Bytes;

// The plate's sequence length, and the bounds an input must keep to.
constexpr int kPlateSequenceLength = 8192;
constexpr int kMaxSequenceLength = 1 << 20;       // 1,048,576 tokens
constexpr int kMaxMicroBatchSequences = 1 << 16;  // 65,536 sequences
constexpr int kMaxParallelDegree = 1 << 16;       // any one of d, t, p, c, v
constexpr int kMaxZeroStage = 3;                  // Rajbhandari et al.: stages 1 to 3
constexpr double kDefaultHeadroomPercent = 10;    // of each device's memory kept free
constexpr double kMaxHeadroomPercent = 90;
constexpr double kMaxDevices = 1 << 24;  // d·t·p·c

// How the model is spread over devices; all 1 is one device, the plate's view.
struct ParallelLayout {
  int data_parallel = 1;            // d
  int zero_stage = 0;               // 0–3 (Rajbhandari et al.): what the d·c replicas shard
  int tensor_parallel = 1;          // t
  bool sequence_parallel = false;   // Korthikanti et al.: split what TP leaves whole, too
  int pipeline_parallel = 1;        // p, 1F1B schedule
  int virtual_pipeline_stages = 1;  // v > 1: the interleaved schedule (Narayanan et al. 2021)
  int context_parallel = 1;         // c: the sequence split over c devices
  // A mixture of experts' routed experts (Megatron-LM's expert parallelism): spread over ep
  // devices and each split over etp, carved out of the same d·t·c devices; 0 for etp means t, as
  // Megatron-LM's --expert-tensor-parallel-size defaults to --tensor-model-parallel-size.
  int expert_parallel = 1;         // ep
  int expert_tensor_parallel = 0;  // etp
};

constexpr double kMaxCapacityFactor = 16;

// etp as the layout uses it: t when 0.
inline int expert_tensor_parallel_of(const ParallelLayout& layout) {
  return layout.expert_tensor_parallel > 0 ? layout.expert_tensor_parallel : layout.tensor_parallel;
}

// What to estimate. Defaults are the plate's view. Each field is a setting of settings.hpp's table
// (which reads these defaults), except the custom model, which a config.json gives.
struct TrainingSetup {
  std::string model_id = "llama3-8b";  // a preset's id, or kCustomModelId
  ModelShape custom_model;             // the model when model_id is kCustomModelId
  int sequence_length = kPlateSequenceLength;
  int micro_batch_sequences = 1;  // sequences per micro-batch
  bool flash_attention = true;
  ParallelLayout layout;
  Recompute recompute = Recompute::kNone;
  ActivationModel activation_model = ActivationModel::kKorthikanti;  // how activations are counted
  Optimizer optimizer = Optimizer::kAdam;
  Precision precision = Precision::kBf16Mixed;
  bool logits = false;
  Loss loss = Loss::kVocabParallel;  // how the loss over the logits is computed
  std::string device_id = "h100";
  double custom_capacity_gb = 80;  // used when device_id is "custom"
  // The share of each device's memory kept free when asking whether a layout fits: what the
  // estimate leaves out (the caching allocator's reserve and fragmentation, the CUDA context,
  // communication buffers; How close is this? shows measured peaks 17% above the estimate) needs
  // room. A stated margin (docs/formulas.md), to be replaced by a stack's reserved-peak estimate.
  double headroom_percent = kDefaultHeadroomPercent;
  // Fine-tuning (fine_tuning.hpp): LoRA adapters of this rank on `lora_targets` (0: every
  // parameter trains), the frozen base's linear weights held as `base_weights`, and what is held
  // in the host's memory instead of the device's.
  int lora_rank = 0;
  LoraTargets lora_targets = LoraTargets::kAttention;
  BaseWeights base_weights = BaseWeights::kBf16;
  Offload offload = Offload::kNone;
  bool offload_activations = false;
  // A mixture's routed tokens: 0 for dropless routing, counted at balanced load (each device's
  // experts receive k copies of its tokens); C > 0 pads each expert's buffer to C times that
  // (GShard's and Switch's capacity factor; Megatron-LM's --moe-expert-capacity-factor with
  // --moe-pad-expert-input-to-capacity).
  double capacity_factor = 0;
  // What trains the model (options.hpp): ideal counts the idealised step, the plate's; the others
  // add what their framework, the runtime and the caching allocator hold (stack.hpp).
  Stack stack = Stack::kIdeal;
  // torchtitan's enable_fsdp_float8_all_gather (under fp8-mixed): FSDP2 gathers the linear
  // weights in FP8, cast before the all-gather (torchao/float8/fsdp_utils.py).
  bool fp8_all_gather = false;
  // DeepSpeed's overlap of the gradient reduction with the backward pass (options.hpp).
  OverlapComm overlap_comm = OverlapComm::kDefault;
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double master_weights_bytes = 0;
  double optimizer_states_bytes = 0;
  double activations_bytes = 0;
  double logits_bytes = 0;
  // A quantised base (nf4, int8): the BF16 copy of the layer being dequantised for its matmul.
  double dequantization_bytes = 0;
  // FP8 training (fp8-mixed): the FP8 copies of the linear weights (and their transposes on
  // Hopper) and the recipe's scaling factors, held through the step (fp8.hpp).
  double fp8_weights_bytes = 0;
  // Under a stack (all 0 under ideal): what the framework holds beyond the terms above (buffers,
  // gathered layers, unsharded gradients: Estimate::stack_terms names each), the runtime (CUDA
  // context, NCCL, cuBLAS workspaces), and what the caching allocator keeps reserved beyond its
  // allocated peak (block rounding, and freed blocks too small for what comes next).
  double framework_bytes = 0;
  double runtime_bytes = 0;
  double allocator_cache_bytes = 0;
  double model_states_bytes = 0;  // weights, gradients, master weights, optimiser states
  double total_bytes = 0;         // everything
};

// One thing a stack holds, beyond the idealised terms, at the step's peak: named, sized and
// sourced (the framework's file and function).
struct StackTerm {
  std::string id;     // "fsdp-root-parameters"
  std::string label;  // "FSDP2's root module, unsharded"
  double bytes = 0;   // held at the moment of the step's allocated peak
  std::string source;
  // false: memory PyTorch's caching allocator never sees (the CUDA context, NCCL's buffers), and
  // so outside any figure torch.cuda reports.
  bool in_allocator = true;
};

// The host's memory under offloading, on the most loaded device's host share: each term the
// device gave up (its MemoryBreakdown term before offloading less after), and what the host adds
// beyond them, named: the FP32 gradients the host's optimiser step reads.
struct HostMemory {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double master_weights_bytes = 0;
  double optimizer_states_bytes = 0;
  double activations_bytes = 0;
  double fp32_gradients_bytes = 0;  // added by the host (DeepSpeed's pinned FP32 gradient buffer)
  double total_bytes = 0;
};

struct Estimate {
  Answer answer;  // refused: the setting at fault ("model", "config", "tp", …) and why
  TrainingSetup setup;
  std::string model_name;
  double num_parameters = 0;        // the whole model
  double parameters_on_device = 0;  // on the most loaded device, before ZeRO sharding
  double trainable_parameters = 0;  // the whole model: every parameter, or LoRA's adapters
  // The frozen base's linear weights under LoRA, bytes per parameter (2, NF4's 0.516, int8's
  // 1 + 4/in); 0 without LoRA.
  double base_linear_bytes_per_parameter = 0;
  PipelineStage most_loaded_stage = PipelineStage::kOnly;
  BytesPerParameter bytes_per_parameter;
  double tokens_per_micro_batch = 0;
  MemoryBreakdown bytes;  // of the most loaded device
  HostMemory host;        // held in that device's host memory instead (offloading)
  Device device;
  double num_devices = 1;    // d·t·p·c
  double devices_worth = 0;  // most loaded device's total / its capacity
  double usable_bytes = 0;   // the capacity less the headroom kept free
  bool fits = false;         // total <= usable_bytes
  // What the device has left for activations once everything else is held: its usable memory less
  // the model states (and the logits); negative when those alone exceed it.
  double activation_room_bytes = 0;
  // What torch.cuda.max_memory_allocated and torch.cuda.max_memory_reserved would report for the
  // step: under ideal both are the total; under a stack, the allocated peak is every term at the
  // step's busiest moment but what lies outside the allocator, and the reserved peak adds the
  // allocator's cache. The total adds to the reserved peak the runtime outside the allocator.
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
  std::vector<StackTerm> stack_terms;  // empty under ideal
};

// The model a setup names: the preset with its model_id, or its custom_model when model_id is
// kCustomModelId (checked by estimate_memory, not here); nullptr for an unknown id. Every entry
// point below finds its model through this one function.
const ModelShape* resolve_model(const TrainingSetup& setup);

// The whole estimate; an invalid setup gives an answer with status kInvalidInput, a message and
// the setting at fault ("config" when the custom model's shape is unusable).
Estimate estimate_memory(const TrainingSetup& setup);

// A micro-batch given in tokens (settings.hpp's micro_batch_from_tokens reads it).
struct MicroBatchFromTokens {
  Answer answer;
  int micro_batch_sequences = 0;
};

// One point of the activations-against-tokens chart: the most loaded device's activations.
struct ActivationPoint {
  int micro_batch_sequences = 0;
  double tokens = 0;
  double flash_attention_bytes = 0;
  double without_flash_attention_bytes = 0;
};

// Everything the plate's workshop draws, from one call: the estimate for `setup`, and
// activations with and without FlashAttention for 1..max_micro_batch_sequences sequences.
struct WorkshopView {
  Estimate estimate;
  std::vector<ActivationPoint> activation_curve;
};

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences);

// Each term's arithmetic: its formula with this setup's numbers in it, and its source.
struct TermArithmetic {
  std::string term;     // "weights", "gradients", …: the MemoryBreakdown field without "_bytes"
  std::string label;    // "Weights"
  std::string formula;  // "2 B × 8,030,261,248 parameters = 16.1 GB"
  std::string source;
};

std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup);

// Memory over one training step on the most loaded device: the model states held throughout
// (gradient buffers allocated for the whole step, as Megatron-LM's and DDP's are), activations
// piling up layer by layer in the forward pass, the logits and loss, then the backward pass
// freeing them (rebuilding each layer first under full recomputation: the saw-tooth), and the
// optimiser step. Its peak is estimate_memory's total.
// Under a stack the points come from the step it replays through the caching allocator: each
// point the busiest moment of its phase (allocated, plus the runtime outside the allocator; its
// peak is the allocated peak's), with what is reserved then beside it (whose last point is the
// estimate's total). Under ideal both are the same.
struct TimelinePoint {
  std::string phase;  // "start", "forward", "loss", "recompute", "backward", "optimizer"
  int layer = 0;      // the layer slot the point follows (0 for start and optimizer)
  double bytes = 0;
  double reserved_bytes = 0;
  // `bytes` by what holds it then: the model states (and a dequantised layer), the activations,
  // the logits and loss, and under a stack the framework's own terms and the runtime.
  double states_bytes = 0;
  double activations_bytes = 0;
  double logits_bytes = 0;
  double framework_bytes = 0;
  double runtime_bytes = 0;
};

std::vector<TimelinePoint> memory_timeline(const TrainingSetup& setup);

// The index of the timeline's peak (its first highest point), for the CLI and the page alike.
std::size_t timeline_peak(const std::vector<TimelinePoint>& points);

}  // namespace trainmem
