// NVFP4 as torchtitan runs it (issue 46's item 4): torchao's NVFP4Linear in the leading layers,
// compiled under per-op selective recomputation, a BF16 tail; torchtitan's fused QKV; and what is
// not modelled refused by name.
#include <doctest/doctest.h>

#include <string>

#include "estimate/calculation.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "whole_terms.hpp"

using namespace trainmem;

namespace nvfp4_test {

namespace {

constexpr double kTokens = 128, kH = 128, kHeads = 4, kHeadDim = 32, kF = 256, kLayers = 4;

// A tiny shape whose every GEMM dimension is a multiple of 128, as NVFP4's kernels need: h 128,
// 4 heads of 32 (no grouped keys, so K and V are 128 wide too), f 256, 4 layers, 128 tokens; under
// torchtitan on 2 B200s (FSDP), compiled, per-op recomputation, nvfp4-mixed with a quarter of the
// layers (the last one) kept BF16.
TrainingSetup tiny_nvfp4() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(static_cast<int>(kLayers));
  setup.custom_model.hidden_size = static_cast<int>(kH);
  setup.custom_model.num_attention_heads = static_cast<int>(kHeads);
  setup.custom_model.num_key_value_heads = static_cast<int>(kHeads);
  setup.custom_model.head_dim = static_cast<int>(kHeadDim);
  setup.custom_model.ffn_hidden_size = static_cast<int>(kF);
  setup.sequence_length = static_cast<int>(kTokens);
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.stack = Stack::kTorchtitan;
  setup.device_id = "b200";
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kSelectiveOp;
  setup.compile = Compile::kBlocks;
  setup.precision = Precision::kNvfp4Mixed;
  setup.nvfp4_bf16_tail = 0.25;
  return setup;
}

Estimate estimated(const TrainingSetup& setup) {
  Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

using fixtures::whole;

double listed(const Estimate& estimate, const std::string& id) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == id) return term.bytes;
  }
  return -1;
}

}  // namespace

TEST_CASE("NVFP4: a converted layer keeps its input and the attention's tensors, the tail BF16's") {
  const TrainingSetup setup = tiny_nvfp4();
  // torchtitan's nvfp4_bf16_tail_fqns: ceil(4 × 0.25) = 1 layer kept BF16, layers 0 to 2 converted.
  CHECK(nvfp4_layers(setup.custom_model, setup) == 3);
  // A converted block: its input (2h), the attention's output (2·a·d) and log-sum-exp (4·a).
  const double converted = 2 * kH + 2 * kHeads * kHeadDim + 4 * kHeads;
  CHECK(converted == 528);
  CHECK(saved_bytes_per_token(nvfp4_selective_op_saved_tensors(setup.custom_model, setup)) ==
        converted);
  // A BF16 block, compiled: besides those wq's (2·a·d), wv's (2·k·d) and w1's (2·f) outputs.
  const double bf16 = converted + 2 * kHeads * kHeadDim + 2 * kHeads * kHeadDim + 2 * kF;
  CHECK(bf16 == 1552);
  CHECK(saved_bytes_per_token(selective_op_saved_tensors(setup.custom_model, setup)) == bf16);
  // The layers are their mean, (3 × 528 + 1,552) / 4 = 784 B a token; and the one layer rebuilt in
  // the backward pass is a converted one, which rebuilds the 1,024 B a token the BF16 one keeps
  // beyond it. Against BF16: 4 × 128 × (784 − 1,552) + 128 × 1,024 = −262,144 B.
  TrainingSetup bf16_setup = setup;
  bf16_setup.precision = Precision::kBf16Mixed;
  bf16_setup.nvfp4_bf16_tail = kNvfp4DefaultBf16TailShare;
  CHECK(whole(setup)[Term::kActivations] - whole(bf16_setup)[Term::kActivations] == -262144);
  // No FP4 copy is kept: the weights stay BF16 (bf16-mixed's 16 B a parameter).
  CHECK(whole(setup)[Term::kFp8Weights] == 0);
  CHECK(whole(setup)[Term::kWeights] == whole(bf16_setup)[Term::kWeights]);
}

TEST_CASE("NVFP4: a converted block's backward pass holds its FP4 codes") {
  TrainingSetup setup = tiny_nvfp4();
  // By hand, w1 (128 → 256) over 128 tokens: at its input-gradient GEMM the weight's codes both
  // ways (2 × 128 × 256) and grad_output's both ways (2 × 128 × 256), 131,072 values; at its
  // weight-gradient GEMM fewer (2 × 128 × 128 + 128 × 256); w2 (256 → 128) holds 98,304 at most.
  // Each value 1/2 B with an E4M3 scale per 16: 131,072 × 9/16 = 73,728 B.
  CHECK(nvfp4_linear_backward_casts(setup.custom_model, false, kTokens) == 73728);
  // At 2,048 tokens (so that the step's peak is in its backward pass, not at the optimiser's
  // step) w2 (256 → 128) holds the most, at its weight-gradient GEMM: the input's codes both ways
  // (2 × 2,048 × 256) and grad_output's column-wise (2,048 × 128), 1,310,720 values, 737,280 B.
  setup.sequence_length = 2048;
  CHECK(nvfp4_linear_backward_casts(setup.custom_model, false, 2048) == 737280);
  // Every layer converted: the stack lists the codes beside the first block's backward pass.
  setup.nvfp4_bf16_tail = 0;
  CHECK(listed(estimated(setup), "torchao-nvfp4-casts") == 737280);
  // With the last layer BF16, its backward pass (the step's first) makes none; the peak comes at
  // the next block's, the first converted one, which rebuilds more and holds the codes.
  setup.nvfp4_bf16_tail = 0.25;
  CHECK(listed(estimated(setup), "torchao-nvfp4-casts") == 737280);
}

TEST_CASE("fused QKV: the per-op policy saves wqkv's whole output, five matmuls a block") {
  TrainingSetup setup = tiny_nvfp4();
  setup.precision = Precision::kBf16Mixed;
  setup.nvfp4_bf16_tail = kNvfp4DefaultBf16TailShare;
  setup.custom_model.num_key_value_heads = 2;  // grouped keys: k·d = 64
  const double separate =
      saved_bytes_per_token(selective_op_saved_tensors(setup.custom_model, setup));
  setup.fused_qkv = true;
  const std::vector<SavedTensor> fused = selective_op_saved_tensors(setup.custom_model, setup);
  // wqkv's output, (a + 2·k)·d, replaces wq's (a·d) and wv's (k·d): the keys, k·d, more.
  CHECK(saved_bytes_per_token(fused) - separate == 2 * 2 * kHeadDim);
  CHECK(fused[1].id == "query-key-value");
  CHECK(fused[1].saved_by == "matmul 1 of 5, saved");
  // It is torchtitan's model option.
  setup.stack = Stack::kMegatron;
  setup.compile = Compile::kOff;
  setup.recompute = Recompute::kFull;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFusedQkv);
}

TEST_CASE("NVFP4 is refused where it is not modelled, naming the setting") {
  const auto refused_by = [](const TrainingSetup& setup) {
    const Answer answer = estimate_memory(setup).answer;
    CHECK_FALSE(answer.ok());
    return answer.setting;
  };
  CHECK(estimate_memory(tiny_nvfp4()).answer.ok());
  TrainingSetup setup = tiny_nvfp4();
  setup.stack = Stack::kIdeal;
  CHECK(refused_by(setup) == setting_id::kPrecision);
  setup = tiny_nvfp4();
  setup.device_id = "h100";  // NVFP4 needs compute capability 10.0
  CHECK(refused_by(setup) == setting_id::kPrecision);
  setup = tiny_nvfp4();
  setup.compile = Compile::kOff;
  CHECK(refused_by(setup) == setting_id::kCompile);
  setup.compile = Compile::kLoss;  // the loss compiled alone leaves the blocks eager
  CHECK(refused_by(setup) == setting_id::kCompile);
  setup = tiny_nvfp4();
  setup.recompute = Recompute::kFull;
  CHECK(refused_by(setup) == setting_id::kRecompute);
  setup = tiny_nvfp4();
  setup.custom_model.ffn_hidden_size = 192;  // w1's 192 is no multiple of 128
  const Answer unaligned = estimate_memory(setup).answer;
  CHECK(unaligned.setting == setting_id::kPrecision);
  CHECK(unaligned.message.find("128 → 192") != std::string::npos);
  setup = tiny_nvfp4();
  setup.nvfp4_bf16_tail = 0.9;  // ceil(3.6) = 4: every layer BF16
  CHECK(refused_by(setup) == setting_id::kNvfp4Bf16Tail);
  setup = tiny_nvfp4();
  setup.precision = Precision::kBf16Mixed;  // the tail is nvfp4-mixed's
  CHECK(refused_by(setup) == setting_id::kNvfp4Bf16Tail);
  setup = tiny_nvfp4();
  setup.layout.pipeline_parallel = 2;
  CHECK(refused_by(setup) == setting_id::kPipelineParallel);
  setup = tiny_nvfp4();
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  CHECK(refused_by(setup) == setting_id::kTensorParallel);
  // A mixture's experts are grouped GEMMs, which the converter leaves alone; per-op recomputation
  // is refused for them before NVFP4 is asked.
  setup = tiny_nvfp4();
  setup.model_id = "qwen3-30b-a3b";
  CHECK_FALSE(estimate_memory(setup).answer.ok());
  // nvfp4_mm_triton's M is the device's tokens: 192 are refused by the tokens, 128 over cp 2 by
  // the context parallelism.
  setup = tiny_nvfp4();
  setup.sequence_length = 192;
  CHECK(refused_by(setup) == setting_id::kTokens);
  setup = tiny_nvfp4();
  setup.layout.context_parallel = 2;
  setup.layout.data_parallel = 1;
  CHECK(refused_by(setup) == setting_id::kContextParallel);
}

TEST_CASE("NVFP4 with fused QKV: the converted wqkv is one linear, aligned and cast as one") {
  TrainingSetup setup = tiny_nvfp4();
  setup.fused_qkv = true;
  // Grouped keys of 2 × 32 = 64: wk and wv alone would be refused, wqkv's (4 + 2 × 2) × 32 = 256
  // is a multiple of 128.
  setup.custom_model.num_key_value_heads = 2;
  CHECK(estimate_memory(setup).answer.ok());
  setup.fused_qkv = false;
  const Answer separate = estimate_memory(setup).answer;
  CHECK(separate.setting == setting_id::kPrecision);
  CHECK(separate.message.find("128 → 64") != std::string::npos);
  // wqkv (128 → 256) is w1's shape: at 128 tokens the same 73,728 B; at 2,048 still w2's.
  setup.custom_model.num_key_value_heads = 4;  // wqkv 128 → 384
  CHECK(nvfp4_block_linears(setup.custom_model, true).size() == 5);
  // 2 × 128 × 384 + 2 × 128 × 384 = 196,608 values, 110,592 B.
  CHECK(nvfp4_linear_backward_casts(setup.custom_model, true, kTokens) == 110592);
  // Compiled, w2's output is dropped, which is matmul 5 of 5 when eager.
  setup.fused_qkv = true;
  setup.compile = Compile::kOff;
  setup.precision = Precision::kBf16Mixed;
  setup.nvfp4_bf16_tail = kNvfp4DefaultBf16TailShare;
  const std::vector<SavedTensor> eager = selective_op_saved_tensors(setup.custom_model, setup);
  CHECK(eager.back().id == "mlp-output");
  CHECK(eager.back().saved_by == "matmul 5 of 5, saved");
}

TEST_CASE(
    "NVFP4: torchtitan's GB200 runs are answered within 10% of what they reserved, or say why "
    "not") {
  int runs = 0;
  for (const MeasuredComparison& comparison : compare_measured()) {
    if (comparison.measured.id.rfind("torchtitan-2026-08-gb200-", 0) != 0) continue;
    ++runs;
    CAPTURE(comparison.measured.id);
    if (comparison.measured.outside_goal.empty()) {
      CHECK(std::abs(comparison.llama_block_error_percent) <= 10);
    } else {
      // Qwen3 8B's NVFP4 row, 12.5% under where its BF16 row is within 6%.
      CHECK(comparison.measured.id == "torchtitan-2026-08-gb200-qwen3-8b-nvfp4");
      CHECK(std::abs(comparison.llama_block_error_percent) <= 13);
    }
  }
  // Llama 3 8B's BF16 and NVFP4 rows, and Qwen3 8B's.
  CHECK(runs == 4);
}

}  // namespace nvfp4_test
