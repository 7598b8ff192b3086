// The named choices a setup is made of — devices, precisions, optimisers, recomputation — each
// with a stable id (CLI flag value, URL value, <select> value), a name for people and a source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmem/models.hpp"

namespace trainmem {

struct Choice {
  std::string id;
  std::string name;
  std::string source;
};

// "a, b, c": for messages that list what is allowed.
std::string ids_joined(const std::vector<Choice>& choices);

// ---- Devices -------------------------------------------------------------------------------

struct Device {
  std::string id;          // "h100"
  std::string name;        // "H100 80 GB"
  std::string short_name;  // "H100", for sentences: "2.1 H100s' worth"
  double capacity_bytes = 0;
};

constexpr const char* kCustomDeviceId = "custom";
constexpr double kMaxCustomCapacityGb = 100000;  // 100 TB: far above any accelerator

// H100 80 GB, H200 141 GB, B200 192 GB, A100 40 and 80 GB, MI300X 192 GB, from the vendors'
// datasheets, in decimal units as the vendors state them.
const std::vector<Device>& device_catalog();
const Device* find_device(std::string_view id);
std::vector<Choice> device_choices();  // the catalogue plus "custom"

// ---- Precision and optimiser: bytes per parameter ----------------------------------------------

// How weights, gradients and the optimiser's state are held (Micikevicius et al., "Mixed
// Precision Training", ICLR 2018; Rajbhandari et al., "ZeRO", SC 2020):
//   bf16-mixed  BF16 weights and gradients, FP32 master weights, FP32 optimiser state (the plate)
//   bf16        BF16 everywhere, no master copy
//   fp32        FP32 everywhere, no master copy
//   fp8-mixed   bf16-mixed's states, and the linear layers' GEMMs in FP8 as Transformer Engine's
//               delayed-scaling recipe runs them: their saved inputs in FP8, an FP8 copy of each
//               linear weight (and its transpose on Hopper), and scaling factors (fp8.hpp)
enum class Precision { kBf16Mixed, kBf16, kFp32, kFp8Mixed };

//   adam          two moments (Kingma and Ba, ICLR 2015)
//   adam-8bit     two moments in 8 bits with an FP32 absmax per 2,048-value block (Dettmers et
//                 al., "8-bit Optimizers via Block-wise Quantization", ICLR 2022)
//   adafactor     a factored second moment, a row and a column vector per matrix, and no first
//                 moment (Shazeer and Stern, "Adafactor", ICML 2018, with beta1 = 0)
//   sgd-momentum  one momentum buffer
enum class Optimizer { kAdam, kAdam8bit, kAdafactor, kSgdMomentum };

// ---- Activation recomputation ----------------------------------------------------------------

//   none       keep every activation
//   selective  recompute the attention scores in the backward pass (Korthikanti et al. §4.3)
//   full       keep only each layer's input and recompute the layer (Chen et al. 2016)
//   selective-op  torchtitan's per-operation policy: each block keeps its input and the outputs of
//              the matmuls but every second one, and of the attention kernel; the rest is
//              recomputed in the backward pass (activations.hpp, selective_op_saved_tensors)
enum class Recompute { kNone, kSelective, kFull, kSelectiveOp };

// ---- Activation models -----------------------------------------------------------------------

//   korthikanti  34·s·b·h per layer plus 5·a·s²·b of scores (Korthikanti et al., MLSys 2023,
//                equation 1): a GPT block, the plate's model
//   llama-block  the tensors a Llama block saves for its backward pass, one by one (RMSNorm,
//                grouped-query attention with RoPE, a gated MLP, no dropout): docs/activations.md
enum class ActivationModel { kKorthikanti, kLlamaBlock };

// ---- The loss's implementation ----------------------------------------------------------------

//   vocab-parallel  Megatron-LM's vocab-parallel cross-entropy: the BF16 logits and their FP32
//                   copy, 6 bytes per logit
//   fp32-upcast     cross_entropy(logits.float()) in PyTorch, unfused, the BF16 logits freed
//                   before the backward pass: at the loss's backward the FP32 log-softmax it
//                   saved, that output's gradient and its input's gradient, 12 bytes per logit
//                   (tests/data/loss-peak-cpu.json measures 12.00)
// Either is split over the vocabulary by tensor parallelism (a vocabulary-sharded loss).
enum class Loss { kVocabParallel, kFp32Upcast };

// ---- Fine-tuning ------------------------------------------------------------------------------

// Where LoRA's adapters sit (Hu et al., "LoRA", arXiv:2106.09685; PEFT's target_modules):
//   attention   the four attention projections: q_proj, k_proj, v_proj, o_proj
//   all-linear  every linear layer of the blocks: those four, gate_proj, up_proj and down_proj in
//               each expert, and a mixture's router (PEFT's "all-linear", which leaves out only
//               the output layer)
enum class LoraTargets { kAttention, kAllLinear };

// How a LoRA run holds its frozen base linear weights:
//   bf16  BF16, 2 B per parameter
//   nf4   bitsandbytes' NF4 with double quantisation (Dettmers et al., "QLoRA", arXiv:2305.14314)
//   int8  bitsandbytes' LLM.int8() weights, one FP32 scale per output row (Linear8bitLt)
enum class BaseWeights { kBf16, kNf4, kInt8 };

// What is held in the host's memory instead of the device's (Ren et al., "ZeRO-Offload",
// arXiv:2101.06840; FSDP's CPUOffload):
//   none                   nothing
//   optimizer              the FP32 master weights and the optimiser's state
//   optimizer-and-weights  those, and the weights and gradients but the layers in flight
enum class Offload { kNone, kOptimizer, kOptimizerAndWeights };

// ---- The training stack ----------------------------------------------------------------------

// What trains the model, and so what the device really holds beyond the idealised step
// (stack.hpp, docs/formulas.md):
//   ideal       the idealised step: the terms above and nothing else (the plate)
//   megatron    Megatron-LM with Transformer Engine: FP32 main gradients, its distributed
//               optimiser (ZeRO 1), the vocab-parallel loss
//   torchtitan  torchtitan on FSDP2: FP32 sharded parameters, the layers gathered in flight, the
//               root module unsharded, gradients freed between steps
//   deepspeed   DeepSpeed ZeRO 1-3: its gradient buckets and, under ZeRO 3, its prefetched layers
// Every stack but ideal adds the runtime (CUDA context, NCCL, cuBLAS) and the caching
// allocator's reserve.
enum class Stack { kIdeal, kMegatron, kTorchtitan, kDeepSpeed };

// DeepSpeed's overlap_comm (deepspeed/runtime/zero/config.py): by default on under ZeRO 3 and off
// under ZeRO 1 and 2, where it doubles the reduce bucket ("Use double buffers to avoid data access
// conflict", stage_1_and_2.py).
//   default  DeepSpeed's default for the stage
//   on, off  as set
enum class OverlapComm { kDefault, kOn, kOff };

// ---- Pipeline stages -------------------------------------------------------------------------

// Which stage of a pipeline holds the most: the only one (no pipeline), the first or the last.
enum class PipelineStage { kOnly, kFirst, kLast };

// ---- Each choice's id, name and source --------------------------------------------------------

// The choices of an enum class, in the order of its values: choices<Recompute>()[1] is
// "selective". Ids are the strings the CLI, the URL, the page and JSON use; nothing else in the
// core compares strings.
template <typename Enum>
const std::vector<Choice>& choices();
template <>
const std::vector<Choice>& choices<Precision>();
template <>
const std::vector<Choice>& choices<Optimizer>();
template <>
const std::vector<Choice>& choices<Recompute>();
template <>
const std::vector<Choice>& choices<ActivationModel>();
template <>
const std::vector<Choice>& choices<Loss>();
template <>
const std::vector<Choice>& choices<Stack>();
template <>
const std::vector<Choice>& choices<OverlapComm>();
template <>
const std::vector<Choice>& choices<PipelineStage>();
template <>
const std::vector<Choice>& choices<LoraTargets>();
template <>
const std::vector<Choice>& choices<BaseWeights>();
template <>
const std::vector<Choice>& choices<Offload>();

template <typename Enum>
const std::string& choice_id(Enum value) {
  return choices<Enum>()[static_cast<std::size_t>(value)].id;
}

template <typename Enum>
const std::string& choice_name(Enum value) {
  return choices<Enum>()[static_cast<std::size_t>(value)].name;
}

// The value whose id is `id`; false when there is none.
template <typename Enum>
bool choice_from_id(std::string_view id, Enum& value) {
  const std::vector<Choice>& all = choices<Enum>();
  for (std::size_t index = 0; index < all.size(); ++index) {
    if (all[index].id == id) {
      value = static_cast<Enum>(index);
      return true;
    }
  }
  return false;
}

constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;
constexpr double kAdamMomentsPerParameter = 2;
constexpr double kAdam8bitBytesPerMoment = 1;
constexpr double kAdam8bitBlockSize = 2048;  // bitsandbytes' default block
constexpr double kSgdMomentumBuffersPerParameter = 1;

struct BytesPerParameter {
  double weights = 0;
  double gradients = 0;
  double master_weights = 0;
  double optimizer_states = 0;
  double total = 0;
};

// Bytes per parameter for a precision and an optimiser. Adafactor's factored state depends on the
// shapes of the model's matrices, so the shape is needed.
BytesPerParameter bytes_per_parameter(Precision precision, Optimizer optimizer,
                                      const ModelShape& shape);

}  // namespace trainmem
