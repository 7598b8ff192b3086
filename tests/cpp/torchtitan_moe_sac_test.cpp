// torchtitan's per-op selective recomputation over its mixture of experts, eager (issue 46's items
// 1 and 3), counted by hand on a tiny shape: what SelectiveAC's policy keeps of a routed layer
// (torchtitan/distributed/activation_checkpoint.py, moe.py and token_dispatcher.py, b5bcd76c),
// what the layer rebuilt in the backward pass holds beside it, and what is not derived refused by
// name.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "saved_tensors.hpp"
#include "tiny_mixture.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace torchtitan_moe_sac_test {

namespace {

constexpr double kTokens = 128, kH = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kTopK = 2;
constexpr double kSharedWidth = 16;

// The suites' tiny mixture (tiny_mixture.hpp: the constants above are its shape), no shared
// experts, under per-op selective recomputation, eager.
TrainingSetup tiny_per_op(int ep) {
  TrainingSetup setup = fixtures::tiny_torchtitan_mixture(ep);
  setup.recompute = Recompute::kSelectiveOp;
  return setup;
}

// The same with shared experts of 16.
TrainingSetup tiny_per_op_shared(int ep) {
  TrainingSetup setup = tiny_per_op(ep);
  setup.custom_model.shared_expert_ffn_hidden_size = static_cast<int>(kSharedWidth);
  return setup;
}

using fixtures::find_tensor;
using fixtures::sum_of;

// The attention's kept tensors of the per-op policy: the block's input (2h), wq's and wv's outputs
// (matmuls 1 and 3: 2·a·d, 2·k·d), the attention kernel's output (2·a·d) and log-sum-exp (4·a).
constexpr double kAttentionKept =
    2 * kH + 2 * kHeads * kHeadDim + 2 * kKvHeads * kHeadDim + 2 * kHeads * kHeadDim + 4 * kHeads;

}  // namespace

TEST_CASE(
    "torchtitan moe per-op: a routed layer keeps topk's scores and ids and the attention's "
    "tensors, the experts none, by hand") {
  TrainingSetup setup = tiny_per_op(1);
  const std::vector<SavedTensor> kept = selective_op_saved_tensors(setup.custom_model, setup);
  // topk is in the save list: both its outputs, the FP32 scores and the int64 ids (4 + 8 B a copy).
  REQUIRE(find_tensor(kept, "top-k-scores") != nullptr);
  CHECK(find_tensor(kept, "top-k-scores")->bytes_per_token == 4 * kTopK);
  CHECK(find_tensor(kept, "top-k-ids")->bytes_per_token == 8 * kTopK);
  CHECK(find_tensor(kept, "top-k-ids")->dtype == "int64");
  // Nothing of the router's gate, the experts' grouped GEMMs or a dense MLP.
  for (const char* id : {"router-input", "router-scores", "mlp-input", "gate", "gate-output",
                         "mlp-output", "shared-gate-output"}) {
    CHECK(find_tensor(kept, id) == nullptr);
  }
  CHECK(sum_of(kept) == kAttentionKept + 12 * kTopK);
  // Without shared experts the block's matmuls are the attention's four.
  CHECK(find_tensor(kept, "query")->saved_by == "matmul 1 of 4, saved");
}

TEST_CASE(
    "torchtitan moe per-op: the shared experts' gate and down projections' outputs are kept, "
    "matmuls 5 and 7 of 7") {
  TrainingSetup setup = tiny_per_op_shared(1);
  const std::vector<SavedTensor> kept = selective_op_saved_tensors(setup.custom_model, setup);
  REQUIRE(find_tensor(kept, "shared-gate-output") != nullptr);
  CHECK(find_tensor(kept, "shared-gate-output")->bytes_per_token == 2 * kSharedWidth);
  CHECK(find_tensor(kept, "shared-gate-output")->saved_by == "matmul 5 of 7, saved");
  CHECK(find_tensor(kept, "shared-output")->bytes_per_token == 2 * kH);
  CHECK(find_tensor(kept, "shared-output")->saved_by == "matmul 7 of 7, saved");
  CHECK(find_tensor(kept, "shared-up-output") == nullptr);
  CHECK(sum_of(kept) == kAttentionKept + 12 * kTopK + 2 * kSharedWidth + 2 * kH);
  // torchtitan's fused wqkv makes the attention two matmuls: the shared gate is matmul 3 of 5.
  setup.fused_qkv = true;
  const std::vector<SavedTensor> fused = selective_op_saved_tensors(setup.custom_model, setup);
  CHECK(find_tensor(fused, "shared-gate-output")->saved_by == "matmul 3 of 5, saved");
  CHECK(find_tensor(fused, "shared-output")->saved_by == "matmul 5 of 5, saved");
}

TEST_CASE(
    "torchtitan moe per-op: each layer keeps the policy's tensors and the one rebuilt holds the "
    "rest of a whole layer's beside them") {
  TrainingSetup setup = tiny_per_op_shared(2);
  const Calculation calculation = calculate(setup, 1, true, {false, false});
  REQUIRE(calculation.answer.ok());
  const std::vector<SavedTensor> kept = selective_op_saved_tensors(setup.custom_model, setup);
  CHECK(calculation.layer.kept_per_token.value() == sum_of(kept));
  // The rebuilt layer saves what a layer without recomputation saves, less what SAC's cache holds
  // of it already: the attention's kept tensors (its input is the attention norm's), the expert
  // ids (the first of its int64 routing indices) and the shared gate's output. topk's scores and
  // the shared down projection's output are read by no backward.
  TrainingSetup none = setup;
  none.recompute = Recompute::kNone;
  const std::vector<SavedTensor> whole_list =
      llama_block_saved_tensors(none.custom_model, none, none.flash_attention);
  REQUIRE(find_tensor(whole_list, "routing-indices") != nullptr);
  CHECK(find_tensor(whole_list, "routing-indices")->bytes_per_token == 8 * 4 * kTopK);
  CHECK(find_tensor(whole_list, "shared-gate-output")->bytes_per_token == 2 * kSharedWidth);
  const double cached = kAttentionKept + 8 * kTopK + 2 * kSharedWidth;
  CHECK(calculation.layer.recompute_working_bytes ==
        doctest::Approx(kTokens * (sum_of(whole_list) - cached)));
  // Under expert parallelism the rebuilt layer holds _permute's order of the received copies too
  // (8 B a copy), and keeps no more: the all-to-alls run again.
  TrainingSetup one_rank = setup;
  one_rank.layout.expert_parallel = 1;
  const Calculation local = calculate(one_rank, 1, true, {false, false});
  CHECK(local.layer.kept_per_token.value() == calculation.layer.kept_per_token.value());
  CHECK(calculation.layer.recompute_working_bytes - local.layer.recompute_working_bytes ==
        doctest::Approx(kTokens * 8 * kTopK));
}

TEST_CASE(
    "torchtitan moe per-op: Qwen3-30B-A3B keeps 21,728 B a token a layer (docs/formulas.md)") {
  const TrainingSetup setup = fixtures::qwen3_moe_on_eight(Recompute::kSelectiveOp);
  const Calculation calculation = calculate(setup, 1, true, {false, false});
  REQUIRE(calculation.answer.ok());
  CHECK(calculation.layer.kept_per_token.value() == 21728);
}

TEST_CASE("torchtitan moe per-op: what is not derived is refused, naming the setting") {
  const auto refused = [](const TrainingSetup& setup, const std::string& words) {
    const Answer answer = estimate_memory(setup).answer;
    INFO(answer.message);
    CHECK(answer.setting == setting_id::kRecompute);
    CHECK(answer.message.find(words) != std::string::npos);
  };
  TrainingSetup setup = tiny_per_op(2);
  CHECK(estimate_memory(setup).answer.ok());
  // The loss compiled alone leaves the blocks eager: answered.
  setup.compile = Compile::kLoss;
  CHECK(estimate_memory(setup).answer.ok());
  setup.compile = Compile::kBlocks;
  refused(setup, "what Inductor's partitioner keeps of torchtitan's MoE");
  setup = tiny_per_op(2);
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  refused(setup, "torchtitan's MoE module alone");
  setup = tiny_per_op(2);
  setup.precision = Precision::kFp8Mixed;
  refused(setup, "low-precision experts");
  setup = tiny_per_op(2);
  setup.precision = Precision::kNvfp4Mixed;
  CHECK_FALSE(estimate_memory(setup).answer.ok());
  // A projection of the router gate's shape (h × E: here the shared experts' w1 and w3, 16
  // wide, with 16 experts) is recomputed wherever it is, which the count does not follow.
  setup = tiny_per_op_shared(2);
  setup.custom_model.num_experts = 16;
  refused(setup, "the router gate's shape");
  // A biased projection runs as aten.addmm, saved and not counted: refused, dense or not.
  setup = tiny_per_op(2);
  setup.custom_model.attention_qkv_bias = true;
  refused(setup, "biased projections");
  setup.custom_model.num_experts = 1;
  setup.custom_model.num_experts_per_token = 1;
  setup.custom_model.moe_ffn_hidden_size = 0;
  setup.layout.expert_parallel = 1;
  refused(setup, "biased projections");
}

}  // namespace torchtitan_moe_sac_test
