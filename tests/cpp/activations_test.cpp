#include "trainmem/activations.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/measured.hpp"

using namespace trainmem;

namespace {

TrainingSetup tiny_setup() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.activation_model = "llama-block";
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
//   gate, SiLU, up, product 4 × 2·224                1,792
//   total                                            2,712
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
      {"activation-output", 448},
      {"up-output", 448},
      {"product", 448},
  };
  CHECK(bytes_by_id(tensors) == expected);
  CHECK(sum(tensors) == 2712);
}

TEST_CASE(
    "llama-block: without FlashAttention the softmax output replaces the log-sum-exp and K, V "
    "are repeated to every head") {
  const TrainingSetup setup = tiny_setup();
  const auto bytes = bytes_by_id(llama_block_saved_tensors(setup.custom_model, setup, false));
  CHECK(bytes.at("probabilities") == 2 * 4 * 128);  // BF16, a·s per token
  CHECK(bytes.count("log-sum-exp") == 0);
  CHECK(bytes.at("key") == 128);
  CHECK(bytes.at("value") == 128);
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, false)) ==
        2712 - 16 + 64 + 64 + 1024);
}

TEST_CASE("llama-block: selective recomputation keeps neither the log-sum-exp nor the scores") {
  TrainingSetup setup = tiny_setup();
  setup.recompute = "selective";
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, true)) == 2712 - 16);
  // Recomputing the core attention saves Q, K and V before the repeat.
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, false)) == 2712 - 16);
}

TEST_CASE(
    "llama-block: tensor parallelism splits the heads and the MLP; sequence parallelism the "
    "rest") {
  TrainingSetup setup = tiny_setup();
  setup.layout.tensor_parallel = 2;
  // Whole on each rank: both norms' inputs and 1/RMS and the two projection inputs, 520.
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, true)) ==
        520 + (2712.0 - 520) / 2);
  setup.layout.sequence_parallel = true;
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, true)) == 2712.0 / 2);
}

TEST_CASE("llama-block: Llama 3 8B saves 168,072 bytes per token per layer, 41.0·h") {
  TrainingSetup setup;
  setup.activation_model = "llama-block";
  const auto tensors = llama_block_saved_tensors(*resolve_model(setup), setup, true);
  // 12·h + 4·k·d + 4·a + 8·f + 8 = 49,152 + 4,096 + 128 + 114,688 + 8.
  CHECK(sum(tensors) == 168072);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.status == Status::kOk);
  CHECK(estimate.bytes.activations_bytes == 32.0 * 8192 * 168072);
  CHECK(format_bytes(estimate.bytes.activations_bytes) == "44.1 GB");
}

TEST_CASE("the plate's view keeps Korthikanti's model: 36.5 GB of activations for the 8B") {
  const TrainingSetup setup;
  CHECK(setup.activation_model == "korthikanti");
  CHECK(format_bytes(estimate_memory(setup).bytes.activations_bytes) == "36.5 GB");
}

TEST_CASE("llama-block under full recomputation keeps each layer's input and rebuilds one layer") {
  TrainingSetup setup = tiny_setup();
  setup.recompute = "full";
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.status == Status::kOk);
  const double tokens = 128;
  CHECK(estimate.bytes.activations_bytes == 2 * tokens * 2 * 64 + tokens * (2712 - 2 * 64));
  const auto timeline = memory_timeline(setup);
  CHECK(timeline[timeline_peak(timeline)].bytes == estimate.bytes.total_bytes);
}

TEST_CASE("an unknown activation model is refused, naming the field and the choices") {
  TrainingSetup setup;
  setup.activation_model = "gpt";
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.status == Status::kInvalidInput);
  CHECK(estimate.invalid_field == "activations");
  CHECK(estimate.message ==
        "Activation model 'gpt' is not known; choose one of korthikanti, llama-block.");
}

TEST_CASE("the arithmetic of a llama-block estimate names its per-token sum and its source") {
  TrainingSetup setup;
  setup.activation_model = "llama-block";
  const auto terms = explain_estimate(setup);
  REQUIRE(terms.size() == 5);
  CHECK(terms[4].formula == "32 layers × 8,192 tokens × 168,072 B saved per token = 44.1 GB");
  CHECK(terms[4].source.find("docs/activations.md") != std::string::npos);
}

TEST_CASE("llama-block: top-k experts save the MLP's tensors once per routed expert") {
  TrainingSetup setup = tiny_setup();
  setup.custom_model.num_experts = 8;
  setup.custom_model.num_experts_per_token = 2;
  CHECK(sum(llama_block_saved_tensors(setup.custom_model, setup, true)) == 2712 + 128 + 1792);
}
