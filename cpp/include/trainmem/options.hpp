// The named choices a setup is made of — devices, precisions, optimisers, recomputation — each
// with a stable id (CLI flag value, URL value, <select> value), a name for people and a source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmem/models.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

struct Choice {
  std::string id;
  std::string name;
  std::string source;
};

// "a, b, c": for messages that list what is allowed.
std::string ids_joined(const std::vector<Choice>& choices);

// ---- Devices -------------------------------------------------------------------------------

// What a device's architecture decides of an estimate, one row each (architecture_row). Blackwell
// is compute capability 10.x (B200, B300); the GeForce and RTX PRO Blackwell parts are 12.0
// (sm_120), which Transformer Engine treats apart from 10.x, so they have a row of their own.
enum class Architecture {
  kAmpere,
  kAda,
  kHopper,
  kBlackwell,
  kBlackwellSm120,
  kCdna3,
  kCount /* not one */
};

// FP8 weight copies Transformer Engine keeps per linear weight (fp8.hpp): cuBLAS on Hopper runs
// only TN FP8 GEMMs, so the backward pass's dgrad GEMM needs the weight's transpose too, and the
// modules keep both; where non-TN FP8 GEMMs run (compute capability 10.x and 11.x, Blackwell, but
// not 12.x) the FP8 weight alone (Transformer Engine's tests/pytorch/test_cpu_offloading.py,
// _estimate_cached_weight_size, and transformer_engine/common/transformer_engine.cpp,
// nvte_is_non_tn_fp8_gemm_supported: 100 <= sm < 120 or sm >= 130).
constexpr double kFp8WeightCopiesTnOnly = 2;  // the FP8 weight and its transpose
constexpr double kFp8WeightCopiesNonTn = 1;   // the FP8 weight alone

struct ArchitectureRow {
  Architecture architecture;
  const char* name;  // "Hopper"
  // Transformer Engine's FP8 weight copies per weight; 0 where FP8 training is not modelled, and
  // then why not, after the device's name: " has no FP8 tensor cores".
  double fp8_weight_copies;
  const char* fp8_refusal;
  // PyTorch's cuBLAS workspace for each handle and stream, allocated through the caching
  // allocator (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize: ":4096:8",
  // 32 MiB, on compute capability 9.x to 12.x, Hopper and Blackwell; ":4096:2:16:8",
  // 8 MiB + 128 KiB, before them; 128 MiB on ROCm's gfx94x), and cuBLASLt's
  // (parseCUDABlasLtWorkspaceSize: 1 MiB; hipBLASLt 76 MiB).
  double cublas_workspace_bytes;
  double cublaslt_workspace_bytes;
  // Transformer Engine's own cuBLAS workspace (pytorch/cpp_extensions/gemm.py, module/base.py to
  // TE 2.9, get_cublas_workspace_size_bytes): 32 MiB + 1 KiB where the device's major compute
  // capability is 9 or more (Hopper, Blackwell; HIP reports gfx942 as 9.4), 4 MiB before.
  double te_cublas_workspace_bytes;
};
const ArchitectureRow& architecture_row(Architecture architecture);

struct Device {
  std::string id;          // "h100"
  std::string name;        // "H100 80 GB"
  std::string short_name;  // "H100", for sentences: "2.1 H100s' worth"
  double capacity_bytes = 0;
  Architecture architecture = Architecture::kHopper;
  // Where the capacity is printed: the vendor's datasheet or product page, by name; "" for a
  // device the catalogue does not hold.
  std::string source;
};

constexpr const char* kCustomDeviceId = "custom";
constexpr double kMaxCustomCapacityGb = 100000;  // 100 TB: far above any accelerator

// The devices people train on, each with its capacity as its vendor prints it, in decimal units
// (1 GB = 10^9 bytes), and the datasheet or product page that prints it (options.cpp; the table in
// docs/formulas.md, "Devices"). The custom device, of a capacity given with it, is not among them
// (setup.hpp's device_of makes it). It is taken as Ada's row: FP8 as on Hopper (a weight and its
// transpose), and PyTorch's default cuBLAS workspace before Hopper.
const std::vector<Device>& device_catalog();
const Device* find_device(std::string_view id);

// The memory PyTorch reports for a device of the catalogue, torch.cuda.get_device_properties(i)
// .total_memory, which its out-of-memory message prints ("GPU 0 has a total capacity of 79.11
// GiB"): what the driver leaves a process, the CUDA context and every allocation within it. A
// training stack's estimate counts the context and the allocator's cache, so a fit is judged
// against this (Estimate::limit_bytes); the printed capacity stays the plate's. With where it is
// printed (reported_memory.cpp); 0 bytes where no such figure was found, and in the first view's
// module, which estimates the plate alone.
struct ReportedMemory {
  double bytes = 0;
  std::string source;
};
ReportedMemory reported_memory(std::string_view device_id);
std::vector<Choice> device_choices();  // the catalogue plus "custom"
constexpr Architecture kCustomDeviceArchitecture = Architecture::kAda;

// ---- Precision and optimiser: bytes per parameter ----------------------------------------------

// How weights, gradients and the optimiser's state are held (Micikevicius et al., "Mixed
// Precision Training", ICLR 2018; Rajbhandari et al., "ZeRO", SC 2020):
//   bf16-mixed  BF16 weights and gradients, FP32 master weights, FP32 optimiser state (the plate)
//   bf16        BF16 everywhere, no master copy
//   fp32        FP32 everywhere, no master copy
//   fp8-mixed   bf16-mixed's states, and the linear layers' GEMMs in FP8 as Transformer Engine's
//               delayed-scaling recipe runs them: their saved inputs in FP8, an FP8 copy of each
//               linear weight (and its transpose on Hopper), and scaling factors (fp8.hpp)
//   bf16-master BF16 weights and gradients, a BF16 master copy and BF16 optimiser state:
//               DeepSpeed's bf16_master_weights_and_grads with bf16_optimizer_states (ZeRO 1 to 3)
//   nvfp4-mixed bf16-mixed's states, and the leading decoder layers' linear GEMMs in NVFP4 as
//               torchtitan runs them (torchao's NVFP4Linear, nvfp4_mm_triton: BF16 weights,
//               quantised on the fly, nothing kept in FP4 across the step); the last
//               TrainingSetup::nvfp4_bf16_tail of the layers and the output layer stay BF16
//               (fp8.hpp, nvfp4_layers)
enum class Precision { kBf16Mixed, kBf16, kFp32, kFp8Mixed, kBf16Master, kNvfp4Mixed };
// torchtitan's NVFP4 recipe (models/llama3/config_registry.py,
// llama3_8b_first_85_pct_layers_nvfp4): the last _NVFP4_BF16_TAIL_FRACTION of the decoder layers
// stay BF16.
constexpr double kNvfp4DefaultBf16TailShare = 0.15;

//   adam          two moments (Kingma and Ba, ICLR 2015)
//   adam-8bit     two moments in 8 bits with an FP32 absmax per 2,048-value block (Dettmers et
//                 al., "8-bit Optimizers via Block-wise Quantization", ICLR 2022)
//   adafactor     a factored second moment, a row and a column vector per matrix, and no first
//                 moment (Shazeer and Stern, "Adafactor", ICML 2018, with beta1 = 0)
//   sgd-momentum  one momentum buffer
//   adam-bf16-moments  Adam's two moments in BF16 whatever the precision holds the weights in:
//                 torchtitan's optimizer.implementation "fused_opt_states_bf16" (0610235, April
//                 2026: a step pre-hook makes the states BF16, and torch's fused AdamW steps FP32
//                 parameters with them)
//   muon          Muon (Jordan et al., 2024; torch.optim.Muon, PyTorch 2.9): one momentum buffer
//                 for each of the blocks' weight matrices (attention's projections, the MLPs and
//                 experts, the router), orthogonalised by a Newton–Schulz iteration at each step;
//                 AdamW's two moments for the rest (the embedding, the output layer, norms and
//                 biases), as torch.optim.Muon requires 2D parameters and its docs pair it
enum class Optimizer { kAdam, kAdam8bit, kAdafactor, kSgdMomentum, kAdamBf16Moments, kMuon };

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

// Dropout on the residual branches (after the attention's output projection and after the MLP)
// and on the attention probabilities. Its probability changes no byte: each dropout saves a 1-byte
// mask per element (and on the probabilities, their dropped copy too), whatever p > 0 is.
//   model  as the model's config.json sets it (config_dropout.cpp: residual dropout and the
//          probabilities' each on or off); with a preset, as each activation model's source:
//          Korthikanti's GPT block with dropout (its 34 and 5·a·s/h count the masks), the Llama
//          block without (Llama trains without it)
//   off    p = 0 in both models: Korthikanti's replicated 10 becomes 8 (no masks after the
//          attention and the MLP) and the scores' 5 becomes 2 (the softmax alone), as section 4.1
//          derives them
//   on     p > 0 in both models: the Llama block saves the two residual masks (h each) and,
//          without FlashAttention, the probabilities' mask and dropped copy (3·a·s); FlashAttention
//          regenerates its mask from the RNG state and saves none
enum class Dropout { kModel, kOff, kOn };

// ---- The loss's implementation ----------------------------------------------------------------

//   vocab-parallel  Megatron-LM's vocab-parallel cross-entropy: the BF16 logits and their FP32
//                   copy, 6 bytes per logit
//   fp32-upcast     cross_entropy(logits.float()) in PyTorch, unfused, the BF16 logits freed
//                   before the backward pass: at the loss's backward the FP32 log-softmax it
//                   saved, that output's gradient and its input's gradient, 12 bytes per logit
//                   (tests/data/loss-peak-cpu.json measures 12.00)
//   native-fused    Megatron-LM's --cross-entropy-loss-fusion with --cross-entropy-fusion-impl
//                   native (megatron/core/fusions/fused_cross_entropy.py): the same FP32 copy
//                   turned into the softmax and saved, 6 bytes per logit
//   te-fused        --cross-entropy-fusion-impl te: Transformer Engine's parallel_cross_entropy
//                   (transformer_engine/pytorch/cross_entropy.py, TE 2.0 to 2.17) computes the
//                   gradient in the forward pass and writes it over the BF16 logits, which it
//                   saves: 2 bytes per logit, no FP32 copy (TE 2.18 keeps an FP32 gradient instead,
//                   and Megatron-Core 0.19 refuses the te implementation)
//   chunked         torchtune's CEWithChunkedOutputLoss (torchtune/modules/loss/
//                   ce_chunked_output_loss.py): the output layer's logits in n chunks, each upcast
//                   to FP32 and passed through cross_entropy in turn, eager: the BF16 chunks, every
//                   chunk's saved FP32 log-softmax and the last chunk's upcast copy, 6 + 4/n bytes
//                   per logit at its forward peak (4 + 8/n in its backward pass; 12 at n = 1)
//   fused-linear    Liger's fused linear cross-entropy (liger_kernel/ops/
//                   fused_linear_cross_entropy.py): the output layer and the loss in one, over
//                   chunks of tokens whose logits are about as large as the hidden state; its
//                   forward pass computes the gradients: the hidden state's (2·T·h), a chunk's
//                   logits (2·c·V) and the per-token loss (4·T), never the whole logits (the output
//                   layer's weight gradient it makes is the gradient the states count)
//   fp32-shifted    transformers 4.46 to 4.48's ForCausalLMLoss (src/transformers/loss/
//                   loss_utils.py; LlamaForCausalLM.forward before it): the logits upcast, then
//                   shifted into a contiguous FP32 copy (logits[..., :-1, :].contiguous()) before
//                   cross_entropy; at its forward peak the BF16 logits, the upcast, the shifted
//                   copy and the saved log-softmax, 2 + 4 + 4 + 4 = 14 bytes per logit (4.49 shifts
//                   the labels instead, transformers PR #35646: fp32-upcast)
//   chunked-nll     TRL's chunked_nll (trl/trainer/sft_trainer.py, _chunked_cross_entropy_loss;
//                   SFTTrainer's default since v1.7): the hidden states sorted into a copy, then
//                   the output layer and the loss over chunks of 256 tokens, each checkpointed, so
//                   one chunk's logits at a time, and the output weight's working copies under
//                   bf16 autocast (chunked_nll_weights)
//   cut-cross-entropy  Cut Cross-Entropy (Wijmans et al., "Cut Your Losses in Large-Vocabulary
//                   Language Models", arXiv:2411.09009), as axolotl's plugin runs it (its fork
//                   axolotl-ai-cloud/ml-cross-entropy 5f0c7a7: cce.py, cce_backward.py): the
//                   logits never made; the log-sum-exp and the valid tokens' indices (12 B a token)
//                   and each vocabulary entry's average logit (4 B) kept, the vocabulary's order
//                   (4 B) and the hidden states' BF16 gradient made in the backward pass
//   chunked-wrapper torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py; the llama3
//                   configs' loss since 786e26f, April 2026, the wrapper since 9530a87, June 2026):
//                   the model stops before the output layer; the loss splits the T tokens' final
//                   hidden states into n chunks (--loss-chunks, its num_chunks, 8) and runs the
//                   output layer, cross_entropy over FP32-upcast logits and their backward pass one
//                   chunk at a time, each chunk's hidden-state gradient copied into an FP32 [T, h]
//                   buffer; at a chunk's backward peak its BF16 logits (held by the loop), the
//                   saved log-softmax and two FP32 gradients, 14 bytes a logit over T/n tokens
//   grpo            TRL's GRPOTrainer loss (trl/trainer/grpo_trainer.py, _compute_loss through
//                   _get_per_token_logps_and_entropies; trl/trainer/utils.py,
//                   selective_log_softmax and entropy_from_logits; TRL f2cd5771, after v1.9.0):
//                   the output layer over each sequence's last C + 1 positions (logits_to_keep,
//                   --completion-length C), divided by the temperature in place, then each
//                   sequence's C × V log-softmax in turn (FP32 under autocast) saved for the
//                   backward pass, and the entropy under no_grad over a contiguous copy in chunks
//                   of 128 rows (grpo_loss replays it): a rollout engine's trainer's only loss,
//                   and without one a GRPO update whose completions come from elsewhere
//   dpo             TRL's DPOTrainer loss (trl/trainer/dpo_trainer.py, _compute_loss;
//                   trl/trainer/utils.py, selective_log_softmax and entropy_from_logits; TRL
//                   f2cd5771), any loss_type but "sft", no use_weighting: each pair's chosen and
//                   rejected sequences in one batch, the logits of every position (FP32 under
//                   autocast), each sequence's log-probabilities (selective_log_softmax), then,
//                   with a reference model (--reference-model; without it
//                   precompute_ref_log_probs), the reference's forward pass under no_grad and its
//                   logits, held to the loss's end, and the entropy over a contiguous copy of the
//                   shifted logits in chunks of 128 rows (dpo_loss replays it;
//                   scripts/measure/dpo_loss_peak.py measures it)
// The others are split over the vocabulary by tensor parallelism (a vocabulary-sharded loss);
// chunked, fused-linear, chunked-nll, cut-cross-entropy, chunked-wrapper, grpo and dpo run on a
// whole output layer (t = 1).
enum class Loss {
  kVocabParallel,
  kFp32Upcast,
  kNativeFused,
  kTeFused,
  kChunked,
  kFusedLinear,
  kFp32Shifted,
  kChunkedNll,
  kCutCrossEntropy,
  kChunkedWrapper,
  kGrpo,
  kDpo
};
// Cut Cross-Entropy's bytes a token (the FP32 log-sum-exp, the int64 index of each valid token)
// and a vocabulary entry (the FP32 average logit, the int32 order) at its backward peak.
constexpr double kCutCrossEntropyBytesPerToken = 4 + 8;
constexpr double kCutCrossEntropyBytesPerVocab = 4 + 4;

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
//   torchtune   torchtune's single-device recipes: one dtype throughout (no master copy), the
//               gradients made in the backward pass and freed after the optimiser's step (or in
//               it, optimizer_in_bwd), LoRA and QLoRA, activation offloading, compile
//   hf          transformers' Trainer (or TRL's SFTTrainer) with PEFT and bitsandbytes, on one
//               device or under DDP: the model loaded in BF16, PEFT's adapters in FP32, the
//               gradients made in the backward pass and freed after the step, AdamW's foreach
//               step, DDP's gradient buckets, transformers' loss
// Every stack but ideal adds the runtime (CUDA context, NCCL, cuBLAS) and the caching
// allocator's reserve.
enum class Stack {
  kIdeal,
  kMegatron,
  kTorchtitan,
  kDeepSpeed,
  kTorchtune,
  kHf,
  kCount /* not one */
};

// DeepSpeed's overlap_comm (deepspeed/runtime/zero/config.py): by default on under ZeRO 3 and off
// under ZeRO 1 and 2, where it doubles the reduce bucket ("Use double buffers to avoid data access
// conflict", stage_1_and_2.py).
//   default  DeepSpeed's default for the stage
//   on, off  as set
enum class OverlapComm { kDefault, kOn, kOff };

// How context parallelism exchanges attention's tensors under Megatron-LM with Transformer Engine
// (--cp-comm-type; transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py):
//   p2p  the ring (AttnFuncWithCPAndKVP2P): keys and values passed round, nothing saved beyond
//        FlashAttention's tensors (Megatron-LM's default)
//   a2a  all-to-all (AttnFuncWithCPAndQKVOA2A): the heads exchanged for the whole sequence, and
//        from TE 2.8 the attention's output before its all-to-all back saved besides, 2·a·d/t
//        bytes per token per layer
//   a2a+p2p  hierarchical (AttnFuncWithCPAndKVP2P over [a2a, p2p] groups, Megatron-LM's
//        --hierarchical-context-parallel-sizes): the all-to-all inside groups of
//        TrainingSetup::cp_a2a_size devices, then the ring across them; it saves what a2a saves
//        (out_part beside the exchanged output), and is the ring where the group is 1
enum class CpCommType { kP2p, kA2a, kA2aP2p };

// Megatron-LM's token dispatcher for a mixture of experts (--moe-token-dispatcher-type,
// megatron/core/transformer/moe/token_dispatcher.py):
//   alltoall   MoEAlltoAllTokenDispatcher: each device's routed copies sent to the experts'
//              devices by all-to-all (the estimate's model until now)
//   allgather  MoEAllGatherTokenDispatcher, Megatron-LM's default: every token of the tensor- and
//              expert-parallel group gathered into one global buffer, each device permuting the
//              tokens its experts take; the combine scatters them back into the group's tokens,
//              cast to FP32, and reduce-scatters
//   flex       MoEFlexTokenDispatcher over DeepEP (--moe-flex-dispatcher-backend deepep, its
//              default): each token sent once to each device holding one of its experts, in one
//              fused kernel, then permuted there; DeepEP's NVLink buffer outside PyTorch's
//              allocator (stacks/stack.cpp, deepep_term). At etp 1, ep 2, 4 or 8 (one NVLink
//              domain), dropless; HybridEP and NCCL EP, its other backends, are not modelled
enum class MoeDispatcher { kAllToAll, kAllGather, kFlex };

// Megatron-LM's router (megatron/core/transformer/moe/router.py and moe_utils.py at 23e00ed,
// core_r0.14.0; activations/megatron_routing.cpp counts what each saves):
//   --moe-router-dtype: the logits' dtype, the input's (BF16) by default, or FP32 (fp64, which
//   the fused router refuses, is not modelled)
enum class RouterDtype { kInput, kFp32 };
//   --moe-router-score-function with --moe-router-pre-softmax: softmax over the top-k logits
//   (Megatron-LM's default), softmax over all E before the top-k, or a sigmoid of each logit
enum class RouterScore { kSoftmax, kSoftmaxPre, kSigmoid };

// DeepEP's legacy Buffer as Megatron-LM sizes it for the flex dispatcher (megatron/core/
// transformer/moe/fused_a2a.py, get_buffer, d98e8a64; DeepEP dd758caf, csrc/legacy/config.hpp
// Config::get_nvl_buffer_size_hint and deep_ep/buffers/legacy.py get_dispatch_config /
// get_combine_config): 20 SMs (Megatron-LM's default, set_deepep_num_sms), so 10 channels, each
// with a receive queue of 256 tokens per NVLink peer at 2, 4 or 8 devices, a token taking its
// hidden bytes (2·w), its 8-byte SourceMeta, 128 int64 top-k indices, 128 FP32 top-k weights and
// 128 FP32 scales; then the 32 MiB workspace (LEGACY_NUM_WORKSPACE_BYTES) and the barrier
// signals and peer pointers.
constexpr double kDeepepChannels = 20 / 2;
constexpr double kDeepepRecvTokens = 256;
constexpr double kDeepepTokenMetaBytes = 8 + 128 * 8 + 128 * 4 + 128 * 4;
constexpr double kDeepepWorkspaceBytes = 32.0 * 1024 * 1024;
constexpr double kDeepepSignalBytes = 8 * 4 + 8 * 8 + 8 * 8;

// Transformer Engine's FP8 recipe under fp8-mixed (Megatron-LM's --fp8-recipe; the ideal step's
// and the megatron stack's, which run Transformer Engine):
//   delayed     DelayedScaling: per-tensor scales from an amax history (Megatron-LM's default)
//   tensorwise  Float8CurrentScaling: per-tensor scales from the tensor itself, no history
//   mxfp8       MXFP8BlockScaling (Blackwell): an E8M0 scale per 32 values, and each weight kept
//               in both orientations
//   blockwise   Float8BlockScaling (compute capability 9.0 on, CUDA 12.9): an FP32 scale per
//               1×128 block of each input and gradient and per 128×128 block of each weight, and
//               each weight kept in both orientations (tensor/float8_blockwise_tensor.py)
// Under torchtitan FP8 is torchao's: delayed stands for its tensorwise Float8Linear (dynamic
// scaling, no history), and mxfp8 for its MXFP8Linear (the "mx" converter: no weight copy, BF16's
// saved tensors, casts in the backward pass; fp8.hpp, mx_linear_backward_casts).
enum class Fp8Recipe { kDelayed, kTensorwise, kMxfp8, kBlockwise };

// What torch.compile compiles under torchtitan (job config: training.compile at the end of 2024,
// the blocks alone; compile.components = ["model", "loss"] from 2025):
//   off              eager
//   blocks           each transformer block (apply_compile, after activation checkpointing):
//                    under full recomputation a compiled block saves its input alone, as eager;
//                    under per-op selective recomputation what the policy tags MUST_SAVE but the
//                    down projection's output, which the backward graph never reads (Inductor's
//                    min-cut partitioner: selective_op_saved_tensors), torchao's Float8 and MXFP8
//                    blocks alike (their matmul is aten.mm on a tensor subclass, which the policy
//                    tags as BF16's; their casts recomputed); without recomputation, or under
//                    Korthikanti's selective, what it saves is not modelled (refused)
//   blocks-and-loss  the loss too: one fused kernel reads the BF16 logits, keeps them and each
//                    token's max and log-sum-exp (FP32) for the backward pass, which writes the
//                    logits' BF16 gradient directly: no FP32 copy of the logits
//   loss             the loss alone, the blocks eager (torchtitan's compile.components =
//                    ["loss"]: its DeepSeek-V3 TOMLs' from 08b8b24, August 2025, and its
//                    DeepSeek-V3 and Kimi registry configs'): the same compiled
//                    cross_entropy_loss, whole or one ChunkedLossWrapper chunk at a time
enum class Compile { kOff, kBlocks, kBlocksAndLoss, kLoss };

// Whether torch.compile compiles the transformer blocks, and whether it compiles the loss.
constexpr bool blocks_compiled(Compile compile) {
  return compile == Compile::kBlocks || compile == Compile::kBlocksAndLoss;
}
constexpr bool loss_compiled(Compile compile) {
  return compile == Compile::kBlocksAndLoss || compile == Compile::kLoss;
}

// accelerate's FSDP under the hf stack (fsdp_config.fsdp_version):
//   fsdp1  FullyShardedDataParallel (torch/distributed/fsdp): a flat parameter a unit, the root
//          unit (the embedding, the final norm and the output layer) gathered for the whole step
//   fsdp2  fully_shard (torch/distributed/fsdp/_fully_shard), as accelerate v1.14's
//          fsdp2_prepare_model wraps it: the embedding a unit of its own, resharded after its
//          forward pass, and the final norm with the output layer one kept gathered from its
//          forward pass to its backward pass; units gathered through an all-gather buffer and
//          their gradients reduced through a reduce-scatter input
enum class FsdpVersion { kFsdp1, kFsdp2 };

// ---- RL post-training's rollout engine ---------------------------------------------------------

// What generates the rollouts on the trainer's devices (rollout.hpp):
//   none  no rollout engine: the step trains alone
//   vllm  TRL's GRPOTrainer with vllm_mode="colocate" (trl f2cd5771, after v1.9.0:
//         trl/generation/vllm_generation.py, VLLMGeneration._init_vllm): a vLLM LLM in the
//         trainer's own process on each device (distributed_executor_backend "external_launcher",
//         tensor_parallel_size 1), made in GRPOTrainer.__init__ before the first step and awake
//         for the whole run (vllm_enable_sleep_mode off, TRL's default): its weights and KV cache
//         are tensors of the trainer's own caching allocator
//   sglang  verl's hybrid engine alone (TRL drives vLLM only): SGLang servers in processes of
//         their own (verl 1dda039b, verl/workers/rollout/sglang_rollout/async_sglang_server.py,
//         launch_server: mem_fraction_static = gpu_memory_utilization, enable_memory_saver), whose
//         static pool is that share of the memory free when each starts, not of the device's total
enum class Rollout { kNone, kVllm, kSglang };

// The RL trainer that drives the colocated rollout engine (rollout.hpp):
//   trl   TRL's GRPOTrainer over transformers' Trainer (above)
//   verl  verl's hybrid engine (verl-project/verl 1dda039b, August 2026: the V1 trainer,
//         trainer.use_v1, over verl/workers/engine_workers.py's ActorRolloutRefWorker and its FSDP
//         engine, verl/workers/engine/fsdp/transformer_impl.py): the actor an FSDP1 model in FP32
//         with BF16 mixed precision, the reference model's parameters offloaded to the host, and
//         vLLM servers in processes of their own (distributed_executor_backend "mp"), asleep at
//         level 2 but for the generation, woken by a weight sync through a CUDA-IPC bucket
enum class RlTrainer { kTrl, kVerl };

// ---- Pipeline stages -------------------------------------------------------------------------

// Which stage of a pipeline holds the most: the only one (no pipeline), the first, the last, or
// under uneven stages one in the middle.
enum class PipelineStage { kOnly, kFirst, kLast, kMiddle };

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
const std::vector<Choice>& choices<Dropout>();
template <>
const std::vector<Choice>& choices<Loss>();
template <>
const std::vector<Choice>& choices<Stack>();
template <>
const std::vector<Choice>& choices<OverlapComm>();
template <>
const std::vector<Choice>& choices<CpCommType>();
template <>
const std::vector<Choice>& choices<MoeDispatcher>();
template <>
const std::vector<Choice>& choices<RouterDtype>();
template <>
const std::vector<Choice>& choices<RouterScore>();
template <>
const std::vector<Choice>& choices<Fp8Recipe>();
template <>
const std::vector<Choice>& choices<Compile>();
template <>
const std::vector<Choice>& choices<FsdpVersion>();
template <>
const std::vector<Choice>& choices<Rollout>();
template <>
const std::vector<Choice>& choices<RlTrainer>();
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

// The plate's bytes per parameter, mixed-precision Adam (Rajbhandari et al., "ZeRO", SC 2020,
// section 3.1: 2Ψ + 2Ψ + 12Ψ = 16Ψ bytes): BF16 weights and gradients, an FP32 master copy and
// Adam's two FP32 moments.
constexpr double kModelStateBytesPerParameter =
    kBf16Bytes + kBf16Bytes + kFp32Bytes + 2 * kFp32Bytes;

// The loss's bytes per logit (per token per vocabulary entry) at its peak. Megatron-LM's
// vocab-parallel cross-entropy holds the BF16 logits and their FP32 copy, 2 + 4. PyTorch's unfused
// cross_entropy(logits.float()) peaks in its backward pass with the FP32 log-softmax it saved,
// that output's gradient and its input's gradient, 4 + 4 + 4 (the BF16 logits freed before the
// backward pass, as torchtitan frees them); tests/data/loss-peak-cpu.json measures 12.00.
constexpr double kLogitsBytesPerTokenPerVocab = kBf16Bytes + kFp32Bytes;
constexpr double kFp32UpcastLossBytesPerTokenPerVocab = 3 * kFp32Bytes;
// transformers 4.46 to 4.48 (fp32-shifted): the BF16 logits, the upcast, its shifted contiguous
// copy and the saved log-softmax at the forward peak.
constexpr double kFp32ShiftedLossBytesPerTokenPerVocab = kBf16Bytes + 3 * kFp32Bytes;
constexpr double kTeFusedLossBytesPerTokenPerVocab = kBf16Bytes;
// The same cross_entropy under DTensor's loss_parallel (torchtitan above tp 1;
// torch/distributed/tensor/parallel/loss.py) runs its own handlers over each rank's V/t logits:
// _log_softmax holds the BF16 logits, their FP32 copy, the shifted logits and their exp (2 + 4 + 4
// + 4 = 14); _nll_loss_and_log_softmax_backward holds the saved log-softmax, zeros_like of it,
// its exp and their sum (4 + 4 + 4 + 4 = 16), the peak.
constexpr double kLossParallelBytesPerTokenPerVocab = 4 * kFp32Bytes;
// The compiled loss (loss_compiled): the BF16 logits it saves and their BF16 gradient,
// and each token's FP32 max and log-sum-exp (the partitioner saves the reductions' outputs,
// torch._functorch.config.ban_recompute_reductions, and recomputes the pointwise ops).
constexpr double kCompiledLossBytesPerTokenPerVocab = 2 * kBf16Bytes;
constexpr double kCompiledLossBytesPerToken = 2 * kFp32Bytes;
// torchtitan's chunked loss at a chunk's backward peak: the chunk's BF16 logits, the FP32
// log-softmax cross_entropy saved, its gradient and the logits' FP32 gradient (2 + 4 + 4 + 4).
constexpr double kChunkedWrapperBytesPerLogit = kBf16Bytes + 3 * kFp32Bytes;
// The same under tensor parallelism, each chunk's V/t logits through torchtitan's
// _LossParallelCrossEntropy (torchtitan/components/loss.py, b5bcd76c; its caller upcasts them to
// FP32 first): forward, the FP32 logits, the shifted ones and their exp, then the log-softmax it
// saves (14 B beside the BF16 logits at most); backward, the saved log-softmax, zeros_like of it,
// its exp and their sum, then their product with the gradient (4 × 4 = 16), beside the chunk's
// BF16 logits the loop holds: 18 B a logit of the rank's.
constexpr double kChunkedLossParallelBytesPerLogit = kBf16Bytes + 4 * kFp32Bytes;
// torchtune's default num_output_chunks (and torchtitan's ChunkedLossWrapper's num_chunks).
constexpr int kDefaultLossChunks = 8;
// TRL's entropy_from_logits: the rows of logits it takes at a time (chunk_size).
constexpr double kEntropyChunkRows = 128;
constexpr int kMaxLossChunks = 1024;
// Bytes per logit at the loss's peak; `chunks` for the chunked loss. The fused linear loss holds
// no whole logits: 0 here, fused_linear_loss_bytes counts it.
double loss_bytes_per_logit(Loss loss, int chunks = kDefaultLossChunks);
// Liger's chunk of tokens (fused_linear_cross_entropy_forward): the next power of two of
// ⌈T / ⌈V/h⌉⌉, at most T.
double fused_linear_chunk_tokens(double tokens, double vocabulary, double hidden);
// TRL's chunked_nll: _CHUNKED_LM_HEAD_CHUNK_SIZE tokens a chunk.
constexpr double kChunkedNllChunkTokens = 256;
// The output weight's working copies under TRL's chunked_nll, in bytes per element of the V × h
// weight, under bf16 autocast (each chunk computes h.float() @ w.float().t(), which autocast runs
// in BF16): at the matmul (`matmul`), held through the forward pass (`held`: autocast caches the
// BF16 cast of a trained FP32 leaf weight until the forward returns), saved by the matmul for the
// backward pass (`saved`), and at most at once while the weight's gradient is made and cast back
// (`gradient`; the saved copy alone when it is frozen).
struct ChunkedNllWeights {
  double matmul = 0;
  double held = 0;
  double saved = 0;
  double gradient = 0;
};
// `fp32_stored`: the weight held in FP32 (a model loaded in FP32, or prepare_model_for_kbit_
// training's upcast); `trained`: it takes a gradient (full training).
ChunkedNllWeights chunked_nll_weights(bool fp32_stored, bool trained);
constexpr double kAdamMomentsPerParameter = 2;
constexpr double kAdam8bitBytesPerMoment = 1;
constexpr double kAdam8bitBlockSize = 2048;  // bitsandbytes' default block
constexpr double kSgdMomentumBuffersPerParameter = 1;

struct BytesPerParameter {
  double weights = 0;
  double gradients = 0;
  double master_weights = 0;
  double optimizer_states = 0;  // per parameter, over the whole model (Adafactor's, Muon's mix)
  double total = 0;
  double state_value = 0;  // one optimiser-state value: an FP32 or BF16 element
};

// Muon's parameters (Optimizer::kMuon): the share of the model's parameters in the blocks' weight
// matrices, which Muon steps (one momentum buffer each); and the parameters a layer holds outside
// them (norms, biases: AdamW's, two moments each), averaged over the layers.
double muon_matrix_share(const ModelShape& shape);
double muon_vector_parameters_per_layer(const ModelShape& shape);
// torch.optim.Muon's working set at the step, for its largest matrix (each is orthogonalised in
// turn, _single_tensor_muon): grad.lerp(buf)'s update in the gradient's dtype (`gradient_bytes`
// an element), its BF16 copy, and in each Newton–Schulz iteration the old X, a·X, gram_update @ X
// and their sum (4 × 2·m·n) beside the Gram matrix and its update (2 × 2·k²), k = min(m, n):
// (gradient_bytes + 8)·m·n + 4·k² bytes, the largest over the layers' matrices.
struct MuonWorkingSet {
  double bytes = 0;
  double rows = 0;  // the matrix that sets it
  double cols = 0;
};
MuonWorkingSet muon_working_set(const ModelShape& shape, double gradient_bytes);

// A model state's bytes per parameter, by its term (0 for a term that is no model state).
double bytes_per_parameter_of(const BytesPerParameter& bytes, Term term);

// Bytes per parameter for a precision and an optimiser. Adafactor's factored state depends on the
// shapes of the model's matrices, so the shape is needed.
BytesPerParameter bytes_per_parameter(Precision precision, Optimizer optimizer,
                                      const ModelShape& shape);

}  // namespace trainmem
