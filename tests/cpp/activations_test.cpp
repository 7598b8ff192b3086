#include "trainmem/activations.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace activations_test {

namespace {

TrainingSetup tiny_setup() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.activation_model = ActivationModel::kLlamaBlock;
  return setup;
}

std::map<std::string, double> bytes_by_id(const std::vector<SavedTensor>& tensors) {
  std::map<std::string, double> bytes;
  for (const SavedTensor& tensor : tensors) bytes[tensor.id] += tensor.bytes_per_token;
  return bytes;
}

double sum(const std::vector<SavedTensor>& tensors) {
  double total = 0;
  for (const SavedTensor& tensor : tensors) total += tensor.bytes_per_token;
  return total;
}

}  // namespace

// The measurement harness's tiny shape (scripts/measure/measure.py --tiny): h 64, a 4 heads of
// d 16, k 2 key/value heads, f 224. The hand-computed table, bytes per token per layer,
// FlashAttention, no recomputation, one device (docs/activations.md works the same table for Llama
// 3 8B):
//   attention norm: input 2·64 = 128, 1/RMS 4          132
//   Q, K, V input (norm's output) 2·64                 128
//   Q 2·4·16 = 128, K 2·2·16 = 64, V 64                256
//   log-sum-exp 4·4                                     16
//   attention output 2·4·16                            128
//   MLP norm: input 128, 1/RMS 4                       132
//   gate and up input 2·64                             128
//   gate's and up's outputs 2 × 2·224                  896
//   their product (activation × up) 2·224              448
//   total                                            2,264
TEST_CASE("llama-block: the tiny shape's saved tensors match the hand table, tensor by tensor") {
  const TrainingSetup setup = tiny_setup();
  // The shape the table is worked for.
  const ModelShape& shape = setup.custom_model;
  REQUIRE(shape.hidden_size == 64);
  REQUIRE(shape.num_attention_heads == 4);
  REQUIRE(head_dim_of(shape) == 16);
  REQUIRE(shape.num_key_value_heads == 2);
  REQUIRE(shape.ffn_hidden_size == 224);
  const auto tensors = llama_block_saved_tensors(setup.custom_model, setup, true);
  const std::map<std::string, double> expected = {
      {"attention-norm-input", 128},
      {"attention-norm-rstd", 4},
      {"qkv-input", 128},
      {"query", 128},
      {"key", 64},
      {"value", 64},
      {"log-sum-exp", 16},
      {"attention-output", 128},
      {"mlp-norm-input", 128},
      {"mlp-norm-rstd", 4},
      {"mlp-input", 128},
      {"gate-output", 448},
      {"up-output", 448},
      {"product", 448},
  };
  CHECK(bytes_by_id(tensors) == expected);
  CHECK(sum(tensors) == 2264);
  CHECK(saved_bytes_per_token(tensors) == 2264);
}

TEST_CASE(
    "llama-block: without FlashAttention the softmax output replaces the log-sum-exp and K, V "
    "are repeated to every head") {
  const TrainingSetup setup = tiny_setup();
  const auto tensors = llama_block_saved_tensors(setup.custom_model, setup, false);
  const auto bytes = bytes_by_id(tensors);
  CHECK(bytes.at("probabilities") == 2 * 4 * 128);  // BF16, a·s per token
  CHECK(bytes.count("log-sum-exp") == 0);
  CHECK(bytes.at("key") == 128);
  CHECK(bytes.at("value") == 128);
  CHECK(sum(tensors) == 2264 - 16 + 64 + 64 + 1024);  // 3,400: what the harness measures
}

TEST_CASE("llama-block: selective recomputation keeps neither the log-sum-exp nor the scores") {
  TrainingSetup setup = tiny_setup();
  setup.recompute = Recompute::kSelective;
  for (const SavedTensor& tensor : llama_block_saved_tensors(setup.custom_model, setup, true)) {
    if (tensor.id == "query" || tensor.id == "key" || tensor.id == "value") {
      CAPTURE(tensor.id);
      CHECK(tensor.saved_by == "the core attention, to recompute it");
    }
    if (tensor.id == "attention-output") CHECK(tensor.saved_by == "the output projection");
  }
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, true)) == 2264 - 16);
  // Recomputing the core attention saves Q, K and V before the repeat.
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, false)) == 2264 - 16);
}

TEST_CASE(
    "llama-block: tensor parallelism splits the heads and the MLP, sequence parallelism the "
    "rest") {
  TrainingSetup setup = tiny_setup();
  const auto one = bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, true));
  setup.layout.tensor_parallel = 2;
  const auto tensor_parallel =
      bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, true));
  // Whole on each rank: both norms' inputs and 1/RMS and the two projection inputs.
  const std::set<std::string> whole = {"attention-norm-input", "attention-norm-rstd", "qkv-input",
                                       "mlp-norm-input",       "mlp-norm-rstd",       "mlp-input"};
  REQUIRE(tensor_parallel.size() == one.size());
  // CAPTURE is a lambda, and a C++17 lambda cannot capture a structured binding (clang, and so
  // the wasm build, refuses it): each id is named again as a plain reference.
  for (const auto& [tensor_id, bytes] : one) {
    const std::string& id = tensor_id;
    CAPTURE(id);
    CHECK(tensor_parallel.at(id) == (whole.count(id) > 0 ? bytes : bytes / 2));
  }
  setup.layout.sequence_parallel = true;
  for (const auto& [tensor_id, bytes] :
       bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, true))) {
    const std::string& id = tensor_id;
    CAPTURE(id);
    CHECK(bytes == one.at(id) / 2);
  }
}

TEST_CASE(
    "llama-block: without FlashAttention under tensor parallelism the probabilities split by "
    "head") {
  TrainingSetup setup = tiny_setup();
  setup.layout.tensor_parallel = 2;
  const auto bytes = bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, false));
  CHECK(bytes.at("probabilities") == 2.0 * 4 * 128 / 2);
  CHECK(bytes.at("key") == 2.0 * 4 * 16 / 2);  // repeated to a heads, then split
  CHECK(bytes.at("qkv-input") == 128);
}

TEST_CASE("llama-block: context parallelism holds s/c tokens, each still meets all s keys") {
  TrainingSetup setup = tiny_setup();
  setup.flash_attention = false;
  setup.layout.context_parallel = 4;
  const auto bytes = bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, false));
  CHECK(bytes.at("probabilities") == 2.0 * 4 * 128);  // per token a·s, not a·s/c
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(estimate.bytes[Term::kActivations] == 2.0 * (128 / 4) * 3400);
}

TEST_CASE("llama-block: Llama 3 8B saves 139,400 bytes per token per layer, 34.03·h") {
  TrainingSetup setup;
  setup.activation_model = ActivationModel::kLlamaBlock;
  const auto tensors = llama_block_saved_tensors(*resolve_model(setup), setup, true);
  // 8·h + 4·a·d + 4·k·d + 4·a + 6·f + 8 = 32,768 + 16,384 + 4,096 + 128 + 86,016 + 8.
  CHECK(sum(tensors) == 139400);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(estimate.bytes[Term::kActivations] == 32.0 * 8192 * 139400);
  CHECK(format_bytes(estimate.bytes[Term::kActivations]) == "36.5 GB");
  // 136 bytes per token per layer above Korthikanti's 34·h: 0.1%.
  CHECK(estimate.bytes[Term::kActivations] - 32.0 * 8192 * 34 * 4096 == 32.0 * 8192 * 136);
}

TEST_CASE("the plate's view keeps Korthikanti's model: 36.5 GB of activations for the 8B") {
  const TrainingSetup setup;
  CHECK(setup.activation_model == ActivationModel::kKorthikanti);
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == 32.0 * 8192 * 34 * 4096);
}

TEST_CASE("llama-block under full recomputation keeps each layer's input and rebuilds one layer") {
  TrainingSetup setup = tiny_setup();
  setup.recompute = Recompute::kFull;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  const double tokens = 128;
  CHECK(estimate.bytes[Term::kActivations] == 2 * tokens * 2 * 64 + tokens * (2264 - 2 * 64));
  const auto timeline = memory_timeline(setup);
  CHECK(timeline[timeline_peak(timeline)].bytes == estimate.bytes.total());
}

TEST_CASE("an unknown activation model is refused, naming the field and the choices") {
  TrainingSetup setup;
  const Answer answer = apply_setting(setup, "activations", "gpt");
  CHECK(answer.status == Status::kInvalidInput);
  CHECK(answer.setting == "activations");
  CHECK(setup.activation_model == ActivationModel::kKorthikanti);
  CHECK(answer.message ==
        "Activation model 'gpt' is not known; choose one of korthikanti, llama-block.");
}

TEST_CASE("the arithmetic of a llama-block estimate names its per-token sum and its source") {
  TrainingSetup setup;
  setup.activation_model = ActivationModel::kLlamaBlock;
  const auto terms = explain_estimate(setup);
  REQUIRE(terms.size() == 5);
  CHECK(terms[4].formula == "32 layers × 8,192 tokens × 139,400 B saved per token = 36.5 GB");
  CHECK(terms[4].source.find("docs/activations.md") != std::string::npos);
}

TEST_CASE(
    "llama-block: top-k experts save the MLP's tensors once per routed expert, and the router "
    "its input") {
  TrainingSetup setup = tiny_setup();
  setup.custom_model.num_experts = 8;
  setup.custom_model.num_experts_per_token = 2;
  const auto tensors = llama_block_saved_tensors(setup.custom_model, setup, true);
  const auto bytes = bytes_by_id(tensors);
  CHECK(bytes.at("router-input") == 128);
  CHECK(bytes.at("mlp-input") == 2 * 128);
  CHECK(bytes.at("gate-output") == 2 * 448);
  // The router's input, a second expert's input and its three f-wide tensors.
  CHECK(sum(tensors) == 2264 + 128 + 128 + 3 * 448);
}

TEST_CASE("llama-block: Gemma 2's two further norms save their inputs and 1/RMS") {
  TrainingSetup setup;
  setup.model_id = "gemma2-9b";
  setup.activation_model = ActivationModel::kLlamaBlock;
  const ModelShape& shape = *resolve_model(setup);
  REQUIRE(shape.norms_per_layer == 4);
  const auto tensors = llama_block_saved_tensors(shape, setup, true);
  const auto bytes = bytes_by_id(tensors);
  CHECK(bytes.at("norm-3-input") == 2.0 * shape.hidden_size);
  CHECK(bytes.at("norm-4-rstd") == 4);
  CHECK(tensors.back().id == "norm-4-rstd");  // the post-MLP norm comes after the MLP
}

TEST_CASE(
    "llama-block: FlashAttention saves less from two tokens a sequence on, but at one token with "
    "ungrouped heads its log-sum-exp outweighs the probabilities") {
  TrainingSetup setup = tiny_setup();
  setup.custom_model.num_key_value_heads = 4;  // a = k: no grouping
  for (int sequence_length : {2, 3, 128}) {
    setup.sequence_length = sequence_length;
    CAPTURE(sequence_length);
    CHECK(saved_bytes_per_token(llama_block_saved_tensors(setup.custom_model, setup, true)) <=
          saved_bytes_per_token(llama_block_saved_tensors(setup.custom_model, setup, false)));
  }
  setup.sequence_length = 1;
  // 4·a (FP32 log-sum-exp) against 2·a·1 (BF16 probabilities): 16 against 8 bytes.
  CHECK(saved_bytes_per_token(llama_block_saved_tensors(setup.custom_model, setup, true)) -
            saved_bytes_per_token(llama_block_saved_tensors(setup.custom_model, setup, false)) ==
        8);
}

namespace {

// A GPT-2-style block small enough to work by hand: h 8, a 2 heads of d 4 (no grouping), f 32,
// LayerNorms with biases, a plain GELU MLP, 16 learned positions.
ModelShape tiny_gpt_shape() {
  ModelShape shape;
  shape.id = kCustomModelId;
  shape.name = "tiny GPT";
  shape.num_layers = 2;
  shape.hidden_size = 8;
  shape.ffn_hidden_size = 32;
  shape.num_attention_heads = 2;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 64;
  shape.tied_embeddings = true;
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  shape.gated_mlp = false;
  shape.norm_bias = true;
  shape.num_position_embeddings = 16;
  return shape;
}

TrainingSetup tiny_gpt_setup(const ModelShape& shape) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 4;
  setup.activation_model = ActivationModel::kLlamaBlock;
  return setup;
}

}  // namespace

// The tiny GPT block's table, bytes per token per layer, FlashAttention, no recomputation, one
// device:
//   attention LayerNorm: input 2·8 = 16, mean 4, 1/σ 4        24
//   Q, K, V input (norm's output) 2·8                         16
//   Q 2·2·4 = 16, K 16, V 16 (learned positions: no RoPE)     48
//   log-sum-exp 4·2                                            8
//   attention output 2·2·4                                    16
//   MLP LayerNorm: input 16, mean 4, 1/σ 4                    24
//   up projection's input (norm's output) 2·8                 16
//   up projection's output, GELU's input, 2·32                64
//   GELU's output, down projection's input, 2·32              64
//   total                                                    280
// A Llama block of the same widths saves 336: RMSNorms keep no mean (−8), and the gated MLP's
// third f-wide tensor adds 64.
TEST_CASE("llama-block on a GPT block: the tiny shape's saved tensors match the hand table") {
  const ModelShape shape = tiny_gpt_shape();
  const TrainingSetup setup = tiny_gpt_setup(shape);
  REQUIRE(estimate_memory(setup).answer.ok());
  const auto tensors = llama_block_saved_tensors(shape, setup, true);
  const std::map<std::string, double> expected = {
      {"attention-norm-input", 16},
      {"attention-norm-mean", 4},
      {"attention-norm-rstd", 4},
      {"qkv-input", 16},
      {"query", 16},
      {"key", 16},
      {"value", 16},
      {"log-sum-exp", 8},
      {"attention-output", 16},
      {"mlp-norm-input", 16},
      {"mlp-norm-mean", 4},
      {"mlp-norm-rstd", 4},
      {"mlp-input", 16},
      {"up-output", 64},
      {"activation-output", 64},
  };
  CHECK(bytes_by_id(tensors) == expected);
  CHECK(sum(tensors) == 280);
  for (const SavedTensor& tensor : tensors) {
    CAPTURE(tensor.id);
    CHECK(tensor.name.find("RoPE") == std::string::npos);
    if (tensor.id.find("norm-") != std::string::npos) CHECK(tensor.saved_by == "LayerNorm");
  }
  ModelShape llama = shape;
  llama.gated_mlp = true;
  llama.norm_bias = false;
  CHECK(sum(llama_block_saved_tensors(llama, tiny_gpt_setup(llama), true)) == 336);

  // Without FlashAttention the BF16 probabilities, a·s = 2·4 per token, replace the log-sum-exp.
  CHECK(sum(llama_block_saved_tensors(shape, setup, false)) == 280 - 8 + 2 * 2 * 4);
  // The estimate holds L layers of it for s tokens.
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.bytes[Term::kActivations] == 2 * 4 * 280);
}

TEST_CASE(
    "llama-block on parallel blocks: GPT-NeoX's MLP norm shares its input, Phi's one norm all") {
  ModelShape neox = tiny_gpt_shape();
  neox.parallel_attention_mlp = true;
  neox.num_position_embeddings = 0;  // rotary
  const auto neox_bytes = bytes_by_id(llama_block_saved_tensors(neox, tiny_gpt_setup(neox), true));
  CHECK(neox_bytes.count("mlp-norm-input") == 0);  // the layer's input, saved by the attention norm
  CHECK(neox_bytes.at("mlp-norm-mean") == 4);
  CHECK(neox_bytes.at("mlp-input") == 16);
  CHECK(sum(llama_block_saved_tensors(neox, tiny_gpt_setup(neox), true)) == 280 - 16);

  ModelShape phi = neox;
  phi.norms_per_layer = 1;
  phi.output_head_bias = true;
  const auto phi_tensors = llama_block_saved_tensors(phi, tiny_gpt_setup(phi), true);
  const auto phi_bytes = bytes_by_id(phi_tensors);
  CHECK(phi_bytes.count("mlp-norm-input") == 0);
  CHECK(phi_bytes.count("mlp-norm-rstd") == 0);
  CHECK(phi_bytes.count("mlp-input") == 0);  // the QKV input, the one norm's output
  CHECK(sum(phi_tensors) == 280 - 24 - 16);
}

TEST_CASE("korthikanti: GPT-2 124M is the GPT block the 34·h + 5·a·s/h bracket was derived for") {
  TrainingSetup setup;
  setup.model_id = "gpt2";
  setup.sequence_length = 1024;
  setup.flash_attention = false;
  const double layers = 12, s = 1024, h = 768, a = 12;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == layers * s * h * (34 + 5 * a * s / h));
  setup.flash_attention = true;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == layers * s * h * 34);
}

TEST_CASE("query and key norms: both models count their inputs and statistics, by hand") {
  // The tiny shape (a 4 heads and k 2 of d 16) with Qwen3's per-head RMSNorms: Q's and K's
  // outputs, 2·(4 + 2)·16 = 192 B, and a 1/RMS per head, 4·6 = 24 B, a token and layer; as
  // LayerNorms (Megatron-LM's --qk-layernorm under its default normalisation), a mean per head
  // besides, 24 B more.
  TrainingSetup setup = tiny_setup();
  const double tokens = 128;
  const double layers = 2;
  for (const ActivationModel model :
       {ActivationModel::kLlamaBlock, ActivationModel::kKorthikanti}) {
    CAPTURE(choice_id(model));
    setup.activation_model = model;
    setup.custom_model.qk_norm = false;
    setup.custom_model.norm_bias = false;
    const double plain = estimate_memory(setup).bytes[Term::kActivations];
    setup.custom_model.qk_norm = true;
    const double rms = estimate_memory(setup).bytes[Term::kActivations];
    CHECK(rms - plain == doctest::Approx(tokens * layers * (192 + 24)));
    // LayerNorm's other norms change too; the query and key norms add their means.
    setup.custom_model.norm_bias = true;
    const double layer_norm = estimate_memory(setup).bytes[Term::kActivations];
    setup.custom_model.qk_norm = false;
    const double layer_norm_plain = estimate_memory(setup).bytes[Term::kActivations];
    CHECK(layer_norm - layer_norm_plain == doctest::Approx(tokens * layers * (192 + 48)));
  }
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.custom_model.qk_norm = true;
  setup.custom_model.norm_bias = true;
  const auto bytes = bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, true));
  CHECK(bytes.at("query-norm-mean") == 4 * 4);
  CHECK(bytes.at("key-norm-mean") == 4 * 2);
}

}  // namespace activations_test
