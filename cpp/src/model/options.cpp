#include "trainmem/options.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "model/units.hpp"

namespace trainmem {

std::string ids_joined(const std::vector<Choice>& choices) {
  std::string joined;
  for (const Choice& choice : choices) {
    if (!joined.empty()) joined += ", ";
    joined += choice.id;
  }
  return joined;
}

constexpr double kTeCublasWorkspaceBytes = 32 * kMebibyte + 1024;

const ArchitectureRow& architecture_row(Architecture architecture) {
  static const ArchitectureRow rows[] = {
      {Architecture::kAmpere, "Ampere", 0, " has no FP8 tensor cores", 8 * kMebibyte + 128 * 1024,
       1 * kMebibyte, 4 * kMebibyte},
      // Ada (sm_89) runs FP8 GEMMs TN only, as Hopper does; PyTorch's cuBLAS workspace is the
      // pre-Hopper default.
      {Architecture::kAda, "Ada", kFp8WeightCopiesTnOnly, "", 8 * kMebibyte + 128 * 1024,
       1 * kMebibyte, 4 * kMebibyte},
      {Architecture::kHopper, "Hopper", kFp8WeightCopiesTnOnly, "", 32 * kMebibyte, 1 * kMebibyte,
       kTeCublasWorkspaceBytes},
      {Architecture::kBlackwell, "Blackwell", kFp8WeightCopiesNonTn, "", 32 * kMebibyte,
       1 * kMebibyte, kTeCublasWorkspaceBytes},
      // Blackwell's 12.0 (GeForce RTX 50, RTX PRO): cuBLAS runs only TN FP8 GEMMs there, as on
      // Hopper (nvte_is_non_tn_fp8_gemm_supported is false below 13.0 outside 10.x and 11.x), and
      // PyTorch gives it Hopper's 32 MiB workspace (use32mb: major 9, 10, 11 or 12).
      {Architecture::kBlackwellSm120, "Blackwell (sm_120)", kFp8WeightCopiesTnOnly, "",
       32 * kMebibyte, 1 * kMebibyte, kTeCublasWorkspaceBytes},
      {Architecture::kCdna3, "CDNA 3", 0, "'s ROCm stack is not modelled", 128 * kMebibyte,
       76 * kMebibyte, kTeCublasWorkspaceBytes},
  };
  static_assert(std::size(rows) == static_cast<std::size_t>(Architecture::kCount),
                "a row for each architecture, in the enum's order");
  return rows[static_cast<std::size_t>(architecture)];
}

const std::vector<Device>& device_catalog() {
  // Capacities as each vendor prints them, 1 GB = 10^9 bytes; each with the page that prints it.
  // Memory sold in binary sizes (GDDR, and HBM stacks) is printed in "GB" too: 24 GB is taken as
  // 24 x 10^9 bytes, as 80 GB is for the H100.
  static const std::vector<Device> devices = {
      {"h100", "H100 80 GB", "H100", 80e9, Architecture::kHopper,
       "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM, 80 GB HBM3"},
      {"h100-96gb", "H100 96 GB (GH200)", "H100", 96e9, Architecture::kHopper,
       "NVIDIA GH200 Grace Hopper Superchip datasheet: its H100 with 96 GB HBM3 (the H100 NVL "
       "has 94 GB; the GH200 with HBM3e, 144 GB)"},
      {"h200", "H200 141 GB", "H200", 141e9, Architecture::kHopper,
       "NVIDIA H200 Tensor Core GPU datasheet: 141 GB HBM3e"},
      {"h20", "H20 96 GB", "H20", 96e9, Architecture::kHopper,
       "NVIDIA's HGX H20 specification of November 2023, as the press reported it: 96 GB HBM3 "
       "(no NVIDIA datasheet for it was found)"},
      {"b200", "B200 192 GB", "B200", 192e9, Architecture::kBlackwell,
       "NVIDIA Blackwell architecture technical brief: B200, 192 GB HBM3e"},
      {"gb200", "GB200 186 GB", "GB200", 186e9, Architecture::kBlackwell,
       "NVIDIA GB200 NVL72 product page: 186 GB HBM3e a GPU, 372 GB a superchip"},
      {"b300", "B300 288 GB", "B300", 288e9, Architecture::kBlackwell,
       "NVIDIA HGX B300 and Blackwell Ultra product pages: 288 GB HBM3e per GPU"},
      {"a100-40gb", "A100 40 GB", "A100", 40e9, Architecture::kAmpere,
       "NVIDIA A100 Tensor Core GPU datasheet: A100 40 GB, HBM2"},
      {"a100-80gb", "A100 80 GB", "A100", 80e9, Architecture::kAmpere,
       "NVIDIA A100 Tensor Core GPU datasheet: A100 80 GB, HBM2e"},
      {"mi300x", "MI300X 192 GB", "MI300X", 192e9, Architecture::kCdna3,
       "AMD Instinct MI300X data sheet: 192 GB HBM3"},
      {"mi325x", "MI325X 256 GB", "MI325X", 256e9, Architecture::kCdna3,
       "AMD Instinct MI325X data sheet: 256 GB HBM3E"},
      {"l40s", "L40S 48 GB", "L40S", 48e9, Architecture::kAda,
       "NVIDIA L40S datasheet: 48 GB GDDR6 with ECC"},
      {"l4", "L4 24 GB", "L4", 24e9, Architecture::kAda,
       "NVIDIA L4 Tensor Core GPU datasheet: 24 GB GDDR6"},
      {"a10g", "A10G 24 GB", "A10G", 24e9, Architecture::kAmpere,
       "Amazon EC2 G5 instances (AWS): 24 GB of memory per NVIDIA A10G"},
      {"rtx-4090", "RTX 4090 24 GB", "RTX 4090", 24e9, Architecture::kAda,
       "NVIDIA GeForce RTX 4090 specifications: 24 GB GDDR6X"},
      {"rtx-5090", "RTX 5090 32 GB", "RTX 5090", 32e9, Architecture::kBlackwellSm120,
       "NVIDIA GeForce RTX 5090 specifications: 32 GB GDDR7"},
  };
  return devices;
}

const Device* find_device(std::string_view id) {
  for (const Device& device : device_catalog()) {
    if (device.id == id) return &device;
  }
  return nullptr;
}

std::vector<Choice> device_choices() {
  std::vector<Choice> choices;
  for (const Device& device : device_catalog()) {
    choices.push_back({device.id, device.name, device.source});
  }
  choices.push_back({kCustomDeviceId, "Custom capacity", ""});
  return choices;
}

double loss_bytes_per_logit(Loss loss, int chunks) {
  switch (loss) {
    case Loss::kFp32Upcast:
      return kFp32UpcastLossBytesPerTokenPerVocab;
    case Loss::kFp32Shifted:
      return kFp32ShiftedLossBytesPerTokenPerVocab;
    case Loss::kTeFused:
      return kTeFusedLossBytesPerTokenPerVocab;
    case Loss::kChunked: {
      // Forward: the BF16 chunks (2), every chunk's saved log-softmax (4) and the last one's
      // upcast copy (4/n); backward: the log-softmax left (4) and one chunk's two FP32 gradients.
      const double n = chunks;
      return std::max(kBf16Bytes + kFp32Bytes + kFp32Bytes / n, kFp32Bytes + 2 * kFp32Bytes / n);
    }
    case Loss::kFusedLinear:
    case Loss::kChunkedNll:
    case Loss::kCutCrossEntropy:
    case Loss::kChunkedWrapper:
    case Loss::kGrpo:  // its own figure (logits_figure), over the completions' logits
    case Loss::kDpo:   // its own figure, with the reference's logits
      return 0;
    case Loss::kVocabParallel:
    case Loss::kNativeFused:
      break;
  }
  return kLogitsBytesPerTokenPerVocab;
}

template <>
const std::vector<Choice>& choices<Precision>() {
  static const std::vector<Choice> choices = {
      {"bf16-mixed", "BF16 with FP32 master weights",
       "Micikevicius et al., ICLR 2018; Rajbhandari et al., SC 2020"},
      {"bf16", "Pure BF16", "no master copy; optimiser state in BF16"},
      {"fp32", "FP32", "no master copy; everything in FP32"},
      {"fp8-mixed", "FP8 with FP32 master weights",
       "Transformer Engine's DelayedScaling recipe (transformer_engine/pytorch/module/linear.py, "
       "layernorm_mlp.py); Micikevicius et al., \"FP8 Formats for Deep Learning\", "
       "arXiv:2209.05433"},
      {"bf16-master", "BF16 with BF16 master weights",
       "DeepSpeed's bf16_master_weights_and_grads and bf16_optimizer_states "
       "(deepspeed/runtime/base_optimizer.py, _configure_master_weights; "
       "zero/stage_1_and_2.py: the master partition cloned in BF16)"},
      {"nvfp4-mixed", "NVFP4 with FP32 master weights",
       "torchtitan's NVFP4LinearConverter over torchao's NVFP4Linear "
       "(torchtitan/components/quantization/nvfp4.py; torchao "
       "prototype/moe_training/nvfp4_training/nvfp4_linear.py, nvfp4_mm_triton): the leading "
       "layers' GEMMs in NVFP4, a BF16 tail"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Optimizer>() {
  static const std::vector<Choice> choices = {
      {"adam", "Adam", "Kingma and Ba, ICLR 2015"},
      {"adam-8bit", "8-bit Adam", "Dettmers et al., ICLR 2022"},
      {"adafactor", "Adafactor", "Shazeer and Stern, ICML 2018"},
      {"sgd-momentum", "SGD with momentum", "one momentum buffer"},
      {"adam-bf16-moments", "Adam, BF16 moments",
       "Adam's two moments in BF16: torchtitan's fused_opt_states_bf16"},
      {"muon", "Muon",
       "Jordan et al., 2024 (torch.optim.Muon): one momentum buffer per weight matrix, AdamW for "
       "the rest"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Recompute>() {
  static const std::vector<Choice> choices = {
      {"none", "None", "keep every activation"},
      {"selective", "Selective", "Korthikanti et al., MLSys 2023, section 4.3"},
      {"full", "Full", "Chen et al., arXiv:1604.06174, 2016"},
      {"selective-op", "Selective per op (torchtitan)",
       "torchtitan's selective op activation checkpointing: the matmuls' outputs but every "
       "second one, and the attention kernel's"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<ActivationModel>() {
  static const std::vector<Choice> choices = {
      {"korthikanti", "Korthikanti (GPT)",
       "Korthikanti et al., MLSys 2023, equation 1 and Table 2"},
      {"llama-block", "Llama block",
       "the tensors a Llama block saves for its backward pass: docs/activations.md"},
  };
  return choices;
}

ChunkedNllWeights chunked_nll_weights(bool fp32_stored, bool trained) {
  ChunkedNllWeights weights;
  // w.float() of a BF16 weight is an FP32 copy, which autocast casts to BF16 again for the
  // matmul; of an FP32 weight, the weight itself, cast once.
  weights.matmul = fp32_stored ? kBf16Bytes : kFp32Bytes + kBf16Bytes;
  // Autocast's cache keeps the cast of a leaf that requires a gradient (autocast_mode.cpp,
  // cached_cast): a trained FP32 weight; .float() of a BF16 one is no leaf.
  weights.held = fp32_stored && trained ? kBf16Bytes : 0;
  weights.saved = kBf16Bytes;
  // The weight's gradient from the matmul (BF16), then cast back through autocast's cast to FP32
  // (the BF16 one alive), and for a BF16 weight through .float()'s to BF16 (the FP32 one alive);
  // the matmul's saved copy is released once its backward has run. Frozen: the saved copy alone.
  weights.gradient = trained ? kBf16Bytes + kFp32Bytes : weights.saved;
  return weights;
}

double fused_linear_chunk_tokens(double tokens, double vocabulary, double hidden) {
  const double inc_factor = std::ceil(vocabulary / hidden);
  const double chunk = std::exp2(std::ceil(std::log2(std::ceil(tokens / inc_factor))));
  return std::min(chunk, tokens);
}

template <>
const std::vector<Choice>& choices<Dropout>() {
  static const std::vector<Choice> choices = {
      {"model", "As the model sets it",
       "a config.json's own dropout keys; with a preset, Korthikanti's GPT block with dropout and "
       "the Llama block without"},
      {"off", "None (p = 0)", "no dropout masks in either model"},
      {"on", "On (p > 0)",
       "a 1-byte mask per element after the attention and the MLP, and on the probabilities"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Loss>() {
  static const std::vector<Choice> choices = {
      {"vocab-parallel", "Vocab-parallel (Megatron-LM)",
       "Megatron-LM's vocab-parallel cross-entropy"},
      {"fp32-upcast", "FP32 upcast, unfused",
       "cross_entropy(logits.float()) with the BF16 logits freed first, as torchtitan writes it"},
      {"native-fused", "Native fused (Megatron-LM)",
       "Megatron-LM's --cross-entropy-loss-fusion --cross-entropy-fusion-impl native"},
      {"te-fused", "TE fused (Megatron-LM)",
       "Megatron-LM's --cross-entropy-loss-fusion --cross-entropy-fusion-impl te, TE 2.0 to 2.17"},
      {"chunked", "Chunked (torchtune)",
       "torchtune's CEWithChunkedOutputLoss: the logits in --loss-chunks chunks, each upcast "
       "in turn"},
      {"fused-linear", "Fused linear (Liger)",
       "Liger's fused linear cross-entropy: the output layer and loss in one, a chunk of tokens "
       "at a time"},
      {"fp32-shifted", "Shifted FP32 (HF 4.46-4.48)",
       "transformers 4.46 to 4.48's ForCausalLMLoss: the FP32 logits shifted into a contiguous "
       "copy before cross_entropy"},
      {"chunked-nll", "Chunked NLL (TRL)",
       "TRL's chunked_nll (SFTTrainer's default since v1.7): the output layer and loss over "
       "checkpointed 256-token chunks"},
      {"cut-cross-entropy", "Cut cross-entropy (CCE)",
       "Cut Cross-Entropy as axolotl's plugin runs it: the loss without the logits, its "
       "log-sum-exp and the hidden states' gradient"},
      {"chunked-wrapper", "Chunked wrapper (torchtitan)",
       "torchtitan's ChunkedLossWrapper (its llama3 configs' loss since April 2026): the output "
       "layer, loss and backward pass a chunk at a time"},
      {"grpo", "GRPO", "TRL's or verl's GRPO loss over the completions' log-probabilities"},
      {"dpo", "DPO (TRL)",
       "TRL's DPOTrainer loss: each pair's chosen and rejected sequences together, their "
       "log-probabilities against the reference's"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Stack>() {
  static const std::vector<Choice> choices = {
      {"ideal", "Ideal step", "the terms of the plate and nothing else"},
      {"megatron", "Megatron-LM",
       "Megatron-LM with Transformer Engine and its distributed optimiser"},
      {"torchtitan", "torchtitan (FSDP2)", "torchtitan on PyTorch's FSDP2 (fully_shard)"},
      {"deepspeed", "DeepSpeed ZeRO", "DeepSpeed's ZeRO stages 1 to 3"},
      {"torchtune", "torchtune",
       "torchtune's full_finetune and lora_finetune recipes, single-device or distributed "
       "(FSDP2)"},
      {"hf", "Hugging Face (Trainer + PEFT)",
       "transformers' Trainer or TRL's SFTTrainer with PEFT and bitsandbytes, on one device or "
       "under DDP"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<OverlapComm>() {
  static const std::vector<Choice> choices = {
      {"default", "DeepSpeed's default", "on under ZeRO 3, off under ZeRO 1 and 2"},
      {"on", "On", "overlap_comm: true, two reduce buckets under ZeRO 1 and 2"},
      {"off", "Off", "overlap_comm: false"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<FsdpVersion>() {
  static const std::vector<Choice> choices = {
      {"fsdp1", "FSDP1", "FullyShardedDataParallel: flat parameters, the root unit gathered"},
      {"fsdp2", "FSDP2",
       "fully_shard as accelerate v1.14 wraps it: the embedding and the output layer units of "
       "their own"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Rollout>() {
  static const std::vector<Choice> choices = {
      {"none", "None", "no rollout engine: the step trains alone"},
      {"vllm", "vLLM, colocated",
       "TRL's GRPOTrainer with vllm_mode=\"colocate\": vLLM in the trainer's process on each "
       "device, its pools a share of the device's memory"},
      {"sglang", "SGLang, colocated under verl",
       "verl's hybrid engine with SGLang servers of their own: their weights and KV cache a "
       "share of the memory free when they start"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<RlTrainer>() {
  static const std::vector<Choice> choices = {
      {"trl", "TRL", "TRL's GRPOTrainer: vLLM in the trainer's own process"},
      {"verl", "verl",
       "verl's hybrid engine (1dda039b): an FSDP1 actor in FP32, the reference on the host, vLLM "
       "in processes of its own"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Compile>() {
  static const std::vector<Choice> choices = {
      {"off", "Off (eager)", "PyTorch's eager mode"},
      {"blocks", "The blocks",
       "torchtitan's training.compile at the end of 2024: each transformer block"},
      {"blocks-and-loss", "Blocks and loss",
       "torchtitan's compile.components = [\"model\", \"loss\"] (2025 on): the loss fused, "
       "with no FP32 copy of the logits"},
      {"loss", "The loss alone",
       "torchtitan's compile.components = [\"loss\"]: the loss fused, the blocks eager"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<CpCommType>() {
  static const std::vector<Choice> choices = {
      {"p2p", "Ring (p2p)", "Transformer Engine's AttnFuncWithCPAndKVP2P, Megatron-LM's default"},
      {"a2a", "All-to-all (a2a)",
       "Transformer Engine's AttnFuncWithCPAndQKVOA2A: the output before its all-to-all saved "
       "too (TE 2.8 on)"},
      {"a2a+p2p", "Hierarchical (a2a+p2p)",
       "Transformer Engine's AttnFuncWithCPAndKVP2P over an all-to-all group and a ring: the "
       "all-to-all's tensors, as a2a saves them, within groups of --cp-a2a-size"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<MoeDispatcher>() {
  static const std::vector<Choice> choices = {
      {"alltoall", "All-to-all",
       "Megatron-LM's MoEAlltoAllTokenDispatcher: each device's routed copies sent to the "
       "experts' devices"},
      {"allgather", "All-gather",
       "Megatron-LM's MoEAllGatherTokenDispatcher, its default: the tensor- and expert-parallel "
       "group's tokens gathered into one buffer, the combine reduce-scattered in FP32"},
      {"flex", "Flex (DeepEP)",
       "Megatron-LM's MoEFlexTokenDispatcher over DeepEP: each token sent once to each device "
       "that holds one of its experts, then permuted there; DeepEP's buffer outside PyTorch's "
       "allocator"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<RouterDtype>() {
  static const std::vector<Choice> choices = {
      {"bf16", "The input's (BF16)",
       "Megatron-LM's default: the router's logits, scores and probabilities in its input's "
       "dtype"},
      {"fp32", "FP32", "--moe-router-dtype fp32: the logits and the routing probabilities in FP32"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<RouterScore>() {
  static const std::vector<Choice> choices = {
      {"softmax", "Softmax over the top k",
       "Megatron-LM's default: the top k logits chosen, then their softmax"},
      {"softmax-pre", "Softmax over all experts",
       "--moe-router-pre-softmax: the softmax over all E logits, then the top k"},
      {"sigmoid", "Sigmoid",
       "--moe-router-score-function sigmoid (DeepSeek-V3): each logit's sigmoid, the top k "
       "normalised"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Fp8Recipe>() {
  static const std::vector<Choice> choices = {
      {"delayed", "Delayed scaling",
       "Transformer Engine's DelayedScaling: per-tensor scales from an amax history"},
      {"tensorwise", "Tensor-wise current scaling",
       "Transformer Engine's Float8CurrentScaling: per-tensor scales from the tensor itself"},
      {"mxfp8", "MXFP8 (Blackwell)",
       "Transformer Engine's MXFP8BlockScaling: an E8M0 scale per 32 values"},
      {"blockwise", "Blockwise (1×128, 128×128)",
       "Transformer Engine's Float8BlockScaling: an FP32 scale per 128 values of each input and "
       "per 128×128 block of each weight"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<PipelineStage>() {
  static const std::vector<Choice> choices = {
      {"only", "The only stage", "no pipeline"},
      {"first", "The first pipeline stage", "it holds p micro-batches in flight under 1F1B"},
      {"last", "The last pipeline stage", "it holds the output layer, the logits and the loss"},
      {"middle", "A middle pipeline stage",
       "under uneven stages it holds more layers than the first and the last"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<LoraTargets>() {
  static const std::vector<Choice> choices = {
      {"attention", "Attention (q, k, v, o)",
       "q_proj, k_proj, v_proj, o_proj (Hu et al., arXiv:2106.09685, section 7.1)"},
      {"all-linear", "All linear layers",
       "PEFT's target_modules=\"all-linear\" (Dettmers et al., arXiv:2305.14314, section 4)"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<BaseWeights>() {
  static const std::vector<Choice> choices = {
      {"bf16", "BF16", "2 B per parameter"},
      {"nf4", "NF4 (QLoRA)",
       "Dettmers et al., arXiv:2305.14314; bitsandbytes' quantize_4bit, blocksize 64"},
      {"int8", "Int8",
       "Dettmers et al., arXiv:2208.07339; bitsandbytes' Linear8bitLt, one FP32 scale per row"},
  };
  return choices;
}

template <>
const std::vector<Choice>& choices<Offload>() {
  static const std::vector<Choice> choices = {
      {"none", "None", "everything on the device"},
      {"optimizer", "Optimiser state",
       "Ren et al., ZeRO-Offload, arXiv:2101.06840; DeepSpeed's offload_optimizer"},
      {"optimizer-and-weights", "And the weights",
       "FSDP's CPUOffload(offload_params=True); DeepSpeed's offload_param"},
  };
  return choices;
}

namespace {

// Adafactor keeps, per weight matrix of r x c, a row vector of r and a column vector of c
// (Shazeer and Stern 2018, section 3); per vector parameter (norms, biases), the full second
// moment. Returns state values per parameter for `shape`.
double adafactor_values_per_parameter(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double v = shape.vocab_size;
  const double positions = shape.num_position_embeddings;
  const double per_norm = shape.norm_bias ? 2 * h : h;  // a LayerNorm's weight and bias
  // Per layer: every weight matrix (Q, K, V, O or latent attention's projections, each expert's
  // gate, up and down, the router) r + c; the norms and biases whole (models.cpp's layer_weights).
  const auto values_per_layer = [&](bool dense_layer) {
    double values = 0;
    for (const LayerWeight& weight : layer_weights(shape, dense_layer)) {
      values += weight.copies * (weight.matrix ? weight.rows + weight.cols : weight.rows);
    }
    return values;
  };
  const double dense_layers = dense_layers_between(shape, 0, shape.num_layers);
  const double per_layers = (shape.num_layers - dense_layers) * values_per_layer(false) +
                            dense_layers * values_per_layer(true);
  double once = (v + h) * (shape.tied_embeddings ? 1 : 2) + per_norm;
  if (positions > 0) once += positions + h;
  if (shape.output_head_bias) once += v;
  return (per_layers + once) / count_parameters(shape);
}

}  // namespace

namespace {

// The parameters of every layer in the blocks' weight matrices, and outside them.
std::pair<double, double> layer_matrices_and_vectors(const ModelShape& shape) {
  const double dense_layers = dense_layers_between(shape, 0, shape.num_layers);
  double matrices = 0;
  double vectors = 0;
  for (const bool dense : {false, true}) {
    const double layers = dense ? dense_layers : shape.num_layers - dense_layers;
    for (const LayerWeight& weight : layer_weights(shape, dense)) {
      (weight.matrix ? matrices : vectors) += layers * weight.copies * weight.rows * weight.cols;
    }
  }
  return {matrices, vectors};
}

}  // namespace

double muon_matrix_share(const ModelShape& shape) {
  return layer_matrices_and_vectors(shape).first / count_parameters(shape);
}

double muon_vector_parameters_per_layer(const ModelShape& shape) {
  return layer_matrices_and_vectors(shape).second / shape.num_layers;
}

MuonWorkingSet muon_working_set(const ModelShape& shape, double gradient_bytes) {
  MuonWorkingSet largest;
  for (const bool dense : {false, true}) {
    if (dense && dense_layers_between(shape, 0, shape.num_layers) == 0) continue;
    for (const LayerWeight& weight : layer_weights(shape, dense)) {
      if (!weight.matrix) continue;
      const double k = std::min(weight.rows, weight.cols);
      const double bytes =
          (gradient_bytes + 4 * kBf16Bytes) * weight.rows * weight.cols + 2 * kBf16Bytes * k * k;
      if (bytes > largest.bytes) largest = {bytes, weight.rows, weight.cols};
    }
  }
  return largest;
}

double bytes_per_parameter_of(const BytesPerParameter& bytes, Term term) {
  switch (term) {
    case Term::kWeights:
      return bytes.weights;
    case Term::kGradients:
      return bytes.gradients;
    case Term::kMasterWeights:
      return bytes.master_weights;
    case Term::kOptimizerStates:
      return bytes.optimizer_states;
    default:
      return 0;
  }
}

BytesPerParameter bytes_per_parameter(Precision precision, Optimizer optimizer,
                                      const ModelShape& shape) {
  BytesPerParameter bytes;
  double state_value_bytes = kFp32Bytes;  // one optimiser-state value
  switch (precision) {
    case Precision::kBf16:
      bytes.weights = kBf16Bytes;
      bytes.gradients = kBf16Bytes;
      state_value_bytes = kBf16Bytes;
      break;
    case Precision::kFp32:
      bytes.weights = kFp32Bytes;
      bytes.gradients = kFp32Bytes;
      break;
    case Precision::kBf16Mixed:
    case Precision::kFp8Mixed:    // the BF16 parameter stays beside its FP8 copy (fp8.hpp)
    case Precision::kNvfp4Mixed:  // BF16 weights, quantised to NVFP4 for each GEMM
      bytes.weights = kBf16Bytes;
      bytes.gradients = kBf16Bytes;
      bytes.master_weights = kFp32Bytes;
      break;
    case Precision::kBf16Master:  // a master copy all the same, cloned in BF16, and BF16 moments
      bytes.weights = kBf16Bytes;
      bytes.gradients = kBf16Bytes;
      bytes.master_weights = kBf16Bytes;
      state_value_bytes = kBf16Bytes;
      break;
  }

  switch (optimizer) {
    case Optimizer::kAdam8bit:
      bytes.optimizer_states =
          kAdamMomentsPerParameter * (kAdam8bitBytesPerMoment + kFp32Bytes / kAdam8bitBlockSize);
      break;
    case Optimizer::kAdafactor:
      bytes.optimizer_states = state_value_bytes * adafactor_values_per_parameter(shape);
      break;
    case Optimizer::kSgdMomentum:
      bytes.optimizer_states = state_value_bytes * kSgdMomentumBuffersPerParameter;
      break;
    case Optimizer::kAdam:
      bytes.optimizer_states = state_value_bytes * kAdamMomentsPerParameter;
      break;
    case Optimizer::kAdamBf16Moments:
      bytes.optimizer_states = kBf16Bytes * kAdamMomentsPerParameter;
      break;
    case Optimizer::kMuon: {
      // One momentum buffer for the blocks' matrices, AdamW's two moments for the rest.
      const double share = muon_matrix_share(shape);
      bytes.optimizer_states = state_value_bytes * (share + kAdamMomentsPerParameter * (1 - share));
      break;
    }
  }
  bytes.state_value = state_value_bytes;
  bytes.total = bytes.weights + bytes.gradients + bytes.master_weights + bytes.optimizer_states;
  return bytes;
}

}  // namespace trainmem
