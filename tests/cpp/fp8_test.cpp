// FP8 training (precision fp8-mixed), as Transformer Engine's delayed-scaling recipe runs it: each
// term worked by hand on a tiny shape, in both activation models, and what is refused.
#include "trainmem/fp8.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace fp8_test {

namespace {

// One layer of attention of h = 16 with 2 heads of 8 (Q, K, V and O: 4 · 16 · 16 = 1,024), a
// gated MLP of 8 (3 · 16 · 8 = 384), two RMSNorms, a vocabulary of 10.
ModelShape tiny() {
  ModelShape shape;
  shape.id = kCustomModelId;
  shape.name = "Tiny";
  shape.num_layers = 1;
  shape.hidden_size = 16;
  shape.ffn_hidden_size = 8;
  shape.num_attention_heads = 2;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 10;
  return shape;
}

// Two layers: the first dense, the second a mixture of 4 experts of 4, top-2, a shared expert
// of 8, and DeepSeek-V3's router bias.
ModelShape tiny_mixture() {
  ModelShape shape = tiny();
  shape.num_layers = 2;
  shape.num_experts = 4;
  shape.num_experts_per_token = 2;
  shape.moe_ffn_hidden_size = 4;
  shape.shared_expert_ffn_hidden_size = 8;
  shape.router_bias = true;
  shape.num_dense_layers = 1;
  return shape;
}

// Latent attention on the tiny shape: r_q 8, r_kv 4, d_nope 3, d_rope 2, d_v 5.
ModelShape tiny_latent() {
  ModelShape shape = tiny();
  shape.q_lora_rank = 8;
  shape.kv_lora_rank = 4;
  shape.qk_nope_head_dim = 3;
  shape.qk_rope_head_dim = 2;
  shape.v_head_dim = 5;
  return shape;
}

TrainingSetup setup_of(const ModelShape& shape, Precision precision) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 16;
  setup.precision = precision;
  return setup;
}

// Each saved tensor's bytes per token, by id.
std::map<std::string, double> saved_bytes(const TrainingSetup& setup) {
  TrainingSetup llama_block = setup;
  llama_block.activation_model = ActivationModel::kLlamaBlock;
  std::map<std::string, double> saved;
  for (const SavedTensor& tensor : saved_tensors_of(llama_block).tensors) {
    saved[tensor.id] = tensor.bytes_per_token;
  }
  return saved;
}

double activations(TrainingSetup setup, ActivationModel model) {
  setup.activation_model = model;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate.bytes[Term::kActivations];
}

}  // namespace

TEST_CASE("fp8-mixed is a precision of the table: the CLI flag and the URL value read it back") {
  TrainingSetup setup;
  CHECK(apply_setting(setup, setting_id::kPrecision, "fp8-mixed").ok());
  CHECK(setup.precision == Precision::kFp8Mixed);
  CHECK(setting_text(setup, setting_id::kPrecision) == "fp8-mixed");
  // Master weights, gradients and the optimiser's state stay as in bf16-mixed: 16 B per parameter.
  const ModelShape shape = tiny();
  const BytesPerParameter fp8 = bytes_per_parameter(Precision::kFp8Mixed, Optimizer::kAdam, shape);
  const BytesPerParameter bf16 =
      bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdam, shape);
  CHECK(fp8.weights == bf16.weights);
  CHECK(fp8.master_weights == 4);
  CHECK(fp8.total == 16);
}

TEST_CASE("the plate's defaults are unchanged by FP8: bf16-mixed, 165.0 GB and no FP8 term") {
  const Estimate plate = estimate_memory(TrainingSetup{});
  CHECK(plate.setup.precision == Precision::kBf16Mixed);
  CHECK(plate.bytes.total() == 164991401984.0);
  CHECK(plate.bytes[Term::kFp8Weights] == 0);
}

TEST_CASE(
    "Korthikanti under FP8 by hand: 34 becomes 29 with FlashAttention and 27 without, 10 + 24/t "
    "becomes 8 + 21/t") {
  // s 16, b 1, h 16: one unit of the bracket is 16 · 16 = 256 bytes.
  const double unit = 16 * 16;
  const TrainingSetup bf16 = setup_of(tiny(), Precision::kBf16Mixed);
  const TrainingSetup fp8 = setup_of(tiny(), Precision::kFp8Mixed);
  // QKV input 2 to 1, MLP input 2 to 1, fc2's input 8 to 4, and the output projection's FP8
  // copy beside FlashAttention's BF16 output (+1): 34 − 1 − 1 − 4 + 1 = 29.
  CHECK(activations(bf16, ActivationModel::kKorthikanti) == unit * 34);
  CHECK(activations(fp8, ActivationModel::kKorthikanti) == unit * 29);
  // Without FlashAttention the output projection alone keeps the attention output: 2 to 1, so
  // 27; the scores' 5·a·s/h = 5 · 2 · 16 / 16 = 10 stay BF16.
  TrainingSetup no_flash = fp8;
  no_flash.flash_attention = false;
  CHECK(activations(no_flash, ActivationModel::kKorthikanti) == unit * (27 + 10));
  // Selective recomputation recomputes the attention core, which then keeps no output: 27.
  TrainingSetup selective = fp8;
  selective.recompute = Recompute::kSelective;
  CHECK(activations(selective, ActivationModel::kKorthikanti) == unit * 27);
  // t = 2: the replicated 10 loses the two inputs' bytes, 8; the sharded 24 loses 4 and gains 1.
  TrainingSetup split = fp8;
  split.layout.tensor_parallel = 2;
  CHECK(activations(split, ActivationModel::kKorthikanti) == unit * (8 + 21 / 2.0));
  // Full recomputation keeps each layer's BF16 input, 2·h, whatever the precision.
  TrainingSetup full = fp8;
  full.recompute = Recompute::kFull;
  full.custom_model.num_layers = 2;
  TrainingSetup full_bf16 = full;
  full_bf16.precision = Precision::kBf16Mixed;
  CHECK(activations(full_bf16, ActivationModel::kKorthikanti) -
            activations(full, ActivationModel::kKorthikanti) ==
        unit * (34 - 29));
}

TEST_CASE(
    "Korthikanti under FP8 with experts: each MLP share 19 becomes 14, its replicated 3 becomes 2 "
    "and its 16 becomes 12") {
  ModelShape mixtral_like = tiny();
  mixtral_like.num_experts = 4;
  mixtral_like.num_experts_per_token = 2;
  const double unit = 16 * 16;
  const TrainingSetup bf16 = setup_of(mixtral_like, Precision::kBf16Mixed);
  const TrainingSetup fp8 = setup_of(mixtral_like, Precision::kFp8Mixed);
  CHECK(activations(bf16, ActivationModel::kKorthikanti) == unit * (34 + 19));
  CHECK(activations(fp8, ActivationModel::kKorthikanti) == unit * (29 + 14));
}

TEST_CASE(
    "the llama block under FP8, tensor by tensor: the linear layers' inputs in FP8, "
    "FlashAttention's and the norms' tensors in BF16") {
  const TrainingSetup fp8 = setup_of(tiny(), Precision::kFp8Mixed);
  std::map<std::string, double> saved = saved_bytes(fp8);
  CHECK(saved.at("attention-norm-input") == 16 * 2);  // the norm's input stays BF16
  CHECK(saved.at("qkv-input") == 16 * 1);             // QKV's input, FP8
  CHECK(saved.at("query") == 16 * 2);                 // FlashAttention's Q, K, V stay BF16
  CHECK(saved.at("log-sum-exp") == 2 * 4);
  CHECK(saved.at("attention-output") == 16 * 2);      // FlashAttention's output, BF16
  CHECK(saved.at("attention-output-fp8") == 16 * 1);  // the output projection's FP8 copy
  CHECK(saved.at("mlp-input") == 16 * 1);             // gate-and-up's input, FP8
  CHECK(saved.at("gate-output") == 8 * 2);            // the activation's input stays BF16
  CHECK(saved.at("up-output") == 8 * 2);
  CHECK(saved.at("product") == 8 * 1);  // down's input, FP8
  // Against bf16-mixed: 16 + 16 + 8 bytes fewer per token, 16 more for the FP8 copy: 24, times
  // the 16 tokens.
  const TrainingSetup bf16 = setup_of(tiny(), Precision::kBf16Mixed);
  CHECK(activations(bf16, ActivationModel::kLlamaBlock) -
            activations(fp8, ActivationModel::kLlamaBlock) ==
        24 * 16);
  // Without FlashAttention the output projection alone keeps the output, in FP8: 16 + 16 + 16 + 8
  // = 56 fewer per token.
  TrainingSetup no_flash = fp8;
  no_flash.flash_attention = false;
  TrainingSetup no_flash_bf16 = bf16;
  no_flash_bf16.flash_attention = false;
  saved = saved_bytes(no_flash);
  CHECK(saved.count("attention-output-fp8") == 0);
  CHECK(saved.at("attention-output") == 16 * 1);
  CHECK(activations(no_flash_bf16, ActivationModel::kLlamaBlock) -
            activations(no_flash, ActivationModel::kLlamaBlock) ==
        56 * 16);
}

TEST_CASE(
    "the llama block under FP8 with experts and latent attention: each linear layer keeps an FP8 "
    "copy of its own") {
  std::map<std::string, double> saved = saved_bytes(setup_of(tiny_mixture(), Precision::kFp8Mixed));
  CHECK(saved.at("router-input") == 16 * 2);   // the router reads the BF16 norm output
  CHECK(saved.at("mlp-input") == 16 * 2 * 1);  // the experts' top-2 copies, FP8
  CHECK(saved.at("shared-input") == 16 * 1);   // the shared expert's own FP8 copy
  CHECK(saved.at("product") == 4 * 2 * 1);     // f_e·top-k, FP8
  CHECK(saved.at("shared-product") == 8 * 1);
  CHECK(saved.at("gate-output") == 4 * 2 * 2);  // BF16
  // Latent attention: the attention norm's output twice in FP8 (the query's and the key/value's
  // down-projections are two linear layers), the normed latents in FP8.
  saved = saved_bytes(setup_of(tiny_latent(), Precision::kFp8Mixed));
  CHECK(saved.at("qkv-input") == 2 * 16 * 1);
  CHECK(saved.at("query-latent") == 8 * 1);
  CHECK(saved.at("key-value-latent") == 4 * 1);
  CHECK(saved.at("query-norm-input") == 8 * 2);
  CHECK(saved.at("attention-output-fp8") == 2 * 5 * 1);
  // Against bf16-mixed per token: query latent 8, key/value latent 4, MLP input 16, product 8
  // fewer; the FP8 output copy 10 more; the two FP8 copies of the norm's output as many bytes as
  // its one BF16: 26 per token.
  CHECK(activations(setup_of(tiny_latent(), Precision::kBf16Mixed), ActivationModel::kLlamaBlock) -
            activations(setup_of(tiny_latent(), Precision::kFp8Mixed),
                        ActivationModel::kLlamaBlock) ==
        26 * 16);
}

TEST_CASE(
    "the FP8 weights by hand: an FP8 copy and its transpose on Hopper, the copy alone on "
    "Blackwell, 20,520 B of scaling state per GEMM") {
  CHECK(kFp8ScalingBytesPerGemm == 5 * (1024 + 2) * 4);
  // Tiny: Q, K, V, O 1,024 and the MLP 384 run in FP8; 4 GEMMs (fused QKV, O, fused gate-and-up,
  // down).
  TrainingSetup setup = setup_of(tiny(), Precision::kFp8Mixed);
  Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kFp8Weights] == 2 * 1408 + 4 * 20520);
  CHECK(estimate.bytes.total() == estimate.bytes.model_states() +
                                      estimate.bytes[Term::kActivations] +
                                      estimate.bytes[Term::kFp8Weights]);
  setup.device_id = "b200";
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] == 1408 + 4 * 20520);
  setup.device_id = "b300";  // compute capability 10.3: non-TN FP8 GEMMs, as on the B200
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] == 1408 + 4 * 20520);
  // Ada and the RTX 5090's sm_120 run only TN FP8 GEMMs, as Hopper does: the copy and its
  // transpose.
  for (const char* device : {"l40s", "l4", "rtx-4090", "rtx-5090", "h20", "h100-96gb"}) {
    CAPTURE(device);
    setup.device_id = device;
    CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] == 2 * 1408 + 4 * 20520);
  }
  // t = 2 splits the weights and keeps the GEMMs.
  setup.device_id = "h100";
  setup.layout.tensor_parallel = 2;
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] == 2 * 1408 / 2 + 4 * 20520);
  // ZeRO-3: no copy held between layers, the scaling state stays.
  setup.layout.tensor_parallel = 1;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] == 4 * 20520);
  // bf16-mixed holds none.
  CHECK(estimate_memory(setup_of(tiny(), Precision::kBf16Mixed)).bytes[Term::kFp8Weights] == 0);
}

TEST_CASE(
    "the FP8 weights of a mixture by hand: the router stays BF16, the routed experts spread "
    "over ep, each local expert two GEMMs") {
  // The dense layer: 1,024 + 384, 4 GEMMs. The mixture layer: attention 1,024, the routed
  // experts 4 · 3 · 16 · 4 = 768, the shared expert 384 (not the router's 64): 2,176, and
  // 2 + 2 · 4 + 2 = 12 GEMMs.
  TrainingSetup setup = setup_of(tiny_mixture(), Precision::kFp8Mixed);
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] ==
        2 * (1408 + 2176) + (4 + 12) * kFp8ScalingBytesPerGemm);
  // ep 2 over d 2: half the routed experts, 384, and 2 + 2 · 2 + 2 = 8 GEMMs in the mixture.
  setup.layout.data_parallel = 2;
  setup.layout.expert_parallel = 2;
  CHECK(estimate_memory(setup).bytes[Term::kFp8Weights] ==
        2 * (1408 + 1024 + 384 + 384) + (4 + 8) * kFp8ScalingBytesPerGemm);
  // Latent attention: q_a 128 and kv_a 96 whole, q_b 80, kv_b 64 and O 160 split; 5 GEMMs with
  // the MLP's 2... at t = 2 the split ones halve.
  TrainingSetup latent = setup_of(tiny_latent(), Precision::kFp8Mixed);
  CHECK(estimate_memory(latent).bytes[Term::kFp8Weights] ==
        2 * (128 + 80 + 96 + 64 + 160 + 384) + 7 * kFp8ScalingBytesPerGemm);
  latent.layout.tensor_parallel = 2;
  CHECK(estimate_memory(latent).bytes[Term::kFp8Weights] ==
        2 * (128 + 96 + (80 + 64 + 160 + 384) / 2.0) + 7 * kFp8ScalingBytesPerGemm);
}

TEST_CASE("the arithmetic names the FP8 term, its numbers and its sources") {
  TrainingSetup setup = setup_of(tiny(), Precision::kFp8Mixed);
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  const TermArithmetic* fp8 = nullptr;
  const TermArithmetic* saved = nullptr;
  for (const TermArithmetic& term : terms) {
    if (term.term == "fp8Weights") fp8 = &term;
    if (term.term == "activations") saved = &term;
  }
  REQUIRE(fp8 != nullptr);
  REQUIRE(saved != nullptr);
  CHECK(fp8->formula.rfind("2 × 1 B × 1,408 FP8 GEMM weights (each FP8 weight and its transpose) "
                           "+ 20,520 B × 4 GEMMs' scaling state (5 FP8 tensors × (1,024 amax "
                           "history + scale + scale_inv) × 4 B) = ",
                           0) == 0);
  CHECK(fp8->source.find("_estimate_cached_weight_size") != std::string::npos);
  CHECK(fp8->source.find("enable_fsdp_float8_all_gather") != std::string::npos);
  CHECK(saved->formula.find("16 h × (29 + 0 (FlashAttention: no scores)) B") != std::string::npos);
  CHECK(saved->source.find("_LayerNormMLP.forward") != std::string::npos);
  // Under ZeRO-3 it says that no copy is held.
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  bool said = false;
  for (const TermArithmetic& term : explain_estimate(setup)) {
    if (term.term == "fp8Weights") {
      said = term.formula.find("no FP8 weight copies held under ZeRO-3") == 0;
    }
  }
  CHECK(said);
}

TEST_CASE("FP8 is refused where it is not modelled, naming the precision and what is allowed") {
  TrainingSetup setup;
  setup.precision = Precision::kFp8Mixed;
  setup.device_id = "a100-80gb";
  Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == setting_id::kPrecision);
  CHECK(
      estimate.answer.message ==
      "Precision fp8-mixed is modelled on the h100, h100-96gb, h200, h20, b200, gb200, b300, l40s, "
      "l4, "
      "rtx-4090, rtx-5090 and a custom device (Transformer Engine's FP8 recipes on Ada, Hopper "
      "and Blackwell); the A100 80 GB has no FP8 tensor cores. Choose bf16-mixed, bf16 or "
      "fp32, or one of those devices.");
  setup.device_id = "mi300x";
  CHECK(
      estimate_memory(setup).answer.message ==
      "Precision fp8-mixed is modelled on the h100, h100-96gb, h200, h20, b200, gb200, b300, l40s, "
      "l4, "
      "rtx-4090, rtx-5090 and a custom device (Transformer Engine's FP8 recipes on Ada, Hopper "
      "and Blackwell); the MI300X 192 GB's ROCm stack is not modelled. Choose bf16-mixed, bf16 "
      "or fp32, or one of those devices.");
  setup.device_id = "a10g";  // Ampere (sm_86), as the A100
  CHECK(estimate_memory(setup).answer.message.find("the A10G 24 GB has no FP8 tensor cores.") !=
        std::string::npos);
  setup.device_id = "mi325x";  // CDNA 3, as the MI300X
  CHECK(estimate_memory(setup).answer.message.find(
            "the MI325X 256 GB's ROCm stack is not modelled.") != std::string::npos);
  setup.device_id = kCustomDeviceId;
  CHECK(estimate_memory(setup).answer.ok());
  setup.device_id = "h100";
  setup.lora_rank = 8;
  CHECK(estimate_memory(setup).answer.message ==
        "Precision fp8-mixed is counted for training every parameter; a frozen LoRA base in FP8 "
        "is not modelled. Choose bf16-mixed, bf16 or fp32, or set the LoRA rank to 0.");
  setup.lora_rank = 0;
  setup.offload = Offload::kOptimizerAndWeights;
  estimate = estimate_memory(setup);
  CHECK(estimate.answer.setting == setting_id::kPrecision);
  CHECK(estimate.answer.message ==
        "Precision fp8-mixed keeps FP8 copies of the weights on the device; offloading the "
        "weights with them is not modelled. Choose offload none or optimizer, or bf16-mixed, bf16 "
        "or fp32.");
  setup.offload = Offload::kOptimizer;
  CHECK(estimate_memory(setup).answer.ok());
}

}  // namespace fp8_test
