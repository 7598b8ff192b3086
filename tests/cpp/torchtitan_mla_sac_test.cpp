// torchtitan's per-op selective recomputation over DeepSeek-V3's block (deepseek_v3/model.py
// Attention, models/common/moe.py, b5bcd76c), eager, counted by hand on a tiny shape: latent
// attention's matmuls in the policy's count, the expert groups' topk, dense layers among the
// mixtures, and what is not derived refused by name (issues 43 and 46).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "saved_tensors.hpp"
#include "tiny_mixture.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace torchtitan_mla_sac_test {

namespace {

constexpr double kH = 64, kHeads = 4, kNope = 8, kRope = 4, kValue = 8, kKvLatent = 16;
constexpr double kQueryLatent = 24, kShared = 16, kFfn = 128, kTopK = 2;

// The suites' tiny mixture with latent attention (4 heads, 8 + 4 query/key and 8 value dimensions,
// a key/value latent of 16, a query latent of `query_latent` or none), shared experts of 16, two
// groups of 2 experts, a token routed within 1 of them, and `dense` of its 2 layers dense (an MLP
// of 128), under per-op selective recomputation, eager.
TrainingSetup tiny_latent(int query_latent, int dense) {
  TrainingSetup setup = fixtures::tiny_torchtitan_mixture(2);
  setup.recompute = Recompute::kSelectiveOp;
  ModelShape& shape = setup.custom_model;
  shape.num_key_value_heads = shape.num_attention_heads;
  shape.q_lora_rank = query_latent;
  shape.kv_lora_rank = static_cast<int>(kKvLatent);
  shape.qk_nope_head_dim = static_cast<int>(kNope);
  shape.qk_rope_head_dim = static_cast<int>(kRope);
  shape.v_head_dim = static_cast<int>(kValue);
  shape.shared_expert_ffn_hidden_size = static_cast<int>(kShared);
  shape.num_expert_groups = 2;
  shape.num_limited_groups = 1;
  shape.num_dense_layers = dense;
  return setup;
}

using fixtures::find_tensor;
using fixtures::sum_of;

// What every block keeps of its attention whatever the matmuls: its input (2h) and flex
// attention's output (2·a·d_v) and log-sum-exp (4·a).
constexpr double kKernelAndInput = 2 * kH + 2 * kHeads * kValue + 4 * kHeads;
// The router's topk outputs (FP32 values, int64 ids): each group's top 2 (2 groups), the kept
// group (1), the top-k (2).
constexpr double kRouter = 12 * 2 * 2 + 12 * 1 + 12 * kTopK;

}  // namespace

TEST_CASE(
    "torchtitan mla per-op: without a query latent the policy saves wq's and wkv_b's outputs "
    "(matmuls 1 and 3 of 7), by hand") {
  const TrainingSetup setup = tiny_latent(0, 0);
  const std::vector<SavedTensor> kept = selective_op_saved_tensors(setup.custom_model, setup);
  REQUIRE(find_tensor(kept, "query") != nullptr);
  CHECK(find_tensor(kept, "query")->bytes_per_token == 2 * kHeads * (kNope + kRope));
  CHECK(find_tensor(kept, "query")->saved_by == "matmul 1 of 7, saved");
  CHECK(find_tensor(kept, "key-value-latent") == nullptr);
  REQUIRE(find_tensor(kept, "key-value") != nullptr);
  CHECK(find_tensor(kept, "key-value")->bytes_per_token == 2 * kHeads * (kNope + kValue));
  CHECK(find_tensor(kept, "key-value")->saved_by == "matmul 3 of 7, saved");
  CHECK(find_tensor(kept, "attention-projection-output") == nullptr);
  CHECK(find_tensor(kept, "attention-output")->bytes_per_token == 2 * kHeads * kValue);
  // The shared experts follow: w1 matmul 5 (saved), w3 6, w2 7 (saved).
  CHECK(find_tensor(kept, "shared-gate-output")->saved_by == "matmul 5 of 7, saved");
  CHECK(find_tensor(kept, "shared-up-output") == nullptr);
  CHECK(find_tensor(kept, "shared-output")->saved_by == "matmul 7 of 7, saved");
  // The expert groups' two topk, both outputs of each.
  CHECK(find_tensor(kept, "group-top-2-scores")->bytes_per_token == 4 * 2 * 2);
  CHECK(find_tensor(kept, "group-top-2-ids")->bytes_per_token == 8 * 2 * 2);
  CHECK(find_tensor(kept, "top-groups-scores")->bytes_per_token == 4 * 1);
  CHECK(find_tensor(kept, "top-groups-ids")->bytes_per_token == 8 * 1);
  // 128 + 96 + 128 + 64 + 16 + 84 + 32 + 128 = 676 B a token.
  CHECK(sum_of(kept) == kKernelAndInput + 2 * kHeads * (kNope + kRope) +
                            2 * kHeads * (kNope + kValue) + kRouter + 2 * kShared + 2 * kH);
  CHECK(sum_of(kept) == 676);
}

TEST_CASE(
    "torchtitan mla per-op: with a query latent the count shifts: wq_a, wkv_a, wo and the shared "
    "experts' w3 are saved (matmuls 1, 3, 5 and 7 of 8), by hand") {
  const TrainingSetup setup = tiny_latent(static_cast<int>(kQueryLatent), 0);
  const std::vector<SavedTensor> kept = selective_op_saved_tensors(setup.custom_model, setup);
  CHECK(find_tensor(kept, "query-latent")->bytes_per_token == 2 * kQueryLatent);
  CHECK(find_tensor(kept, "query-latent")->saved_by == "matmul 1 of 8, saved");
  CHECK(find_tensor(kept, "query") == nullptr);
  CHECK(find_tensor(kept, "key-value-latent")->bytes_per_token == 2 * (kKvLatent + kRope));
  CHECK(find_tensor(kept, "key-value") == nullptr);
  CHECK(find_tensor(kept, "attention-projection-output")->bytes_per_token == 2 * kH);
  CHECK(find_tensor(kept, "attention-projection-output")->saved_by == "matmul 5 of 8, saved");
  CHECK(find_tensor(kept, "shared-gate-output") == nullptr);
  CHECK(find_tensor(kept, "shared-up-output")->saved_by == "matmul 7 of 8, saved");
  CHECK(find_tensor(kept, "shared-output") == nullptr);
  // 128 + 48 + 40 + 64 + 16 + 128 + 84 + 32 = 540 B a token.
  CHECK(sum_of(kept) == 540);
}

TEST_CASE(
    "torchtitan mla per-op: a dense layer among the mixtures keeps its MLP's outputs at odd "
    "counts, and without a pipeline a layer is the two kinds' mean, by hand") {
  TrainingSetup setup = tiny_latent(0, 1);
  setup.custom_model.ffn_hidden_size = static_cast<int>(kFfn);
  const Calculation calculation = calculate(setup, 1, true, {false, false});
  INFO(calculation.answer.message);
  REQUIRE(calculation.answer.ok());
  // The dense layer: the attention's 432 B, then w1 (matmul 5: 2·f) and w2 (matmul 7: 2h).
  const double dense = kKernelAndInput + 2 * kHeads * (kNope + kRope) +
                       2 * kHeads * (kNope + kValue) + 2 * kFfn + 2 * kH;
  CHECK(dense == 816);
  CHECK(calculation.layer.kept_per_token.value() == doctest::Approx((816.0 + 676.0) / 2));
  // With a query latent the dense layer's w3 is matmul 7 and saved: 424 + 256 = 680.
  setup.custom_model.q_lora_rank = static_cast<int>(kQueryLatent);
  const Calculation latent = calculate(setup, 1, true, {false, false});
  REQUIRE(latent.answer.ok());
  CHECK(latent.layer.kept_per_token.value() == doctest::Approx((680.0 + 540.0) / 2));
}

TEST_CASE(
    "torchtitan mla per-op: DeepSeek-V3 keeps 70,608 B a token in a routed layer and 103,040 B "
    "in a dense one, their mean over 3 dense and 58 routed layers (docs/formulas.md)") {
  TrainingSetup setup = fixtures::qwen3_moe_on_eight(Recompute::kSelectiveOp);
  setup.model_id = "deepseek-v3";
  setup.layout.data_parallel = 64;
  setup.sequence_length = 4096;
  const Calculation calculation = calculate(setup, 1, true, {false, false});
  INFO(calculation.answer.message);
  REQUIRE(calculation.answer.ok());
  CHECK(calculation.layer.mixture_kept_per_token == 70608);
  CHECK(calculation.layer.kept_per_token.value() ==
        doctest::Approx((3 * 103040.0 + 58 * 70608.0) / 61));
}

TEST_CASE(
    "dense layers among a mixture: one stage keeps their mean, each of a pipeline's stages the "
    "mean of its own layers, the interleaved schedule the larger kind") {
  // The tiny mixture, one of its two layers dense, no recomputation, the ideal step.
  TrainingSetup setup = fixtures::tiny_torchtitan_mixture(1);
  setup.stack = Stack::kIdeal;
  setup.layout.zero_stage = 0;
  setup.custom_model.num_dense_layers = 0;
  const double mixture = calculate(setup, 1, true, {false, false}).layer.kept_per_token.value();
  setup.custom_model.num_dense_layers = 1;
  const Calculation one_stage = calculate(setup, 1, true, {false, false});
  REQUIRE(one_stage.answer.ok());
  const double mean = one_stage.layer.kept_per_token.value();
  const double dense = 2 * mean - mixture;
  CHECK(dense != doctest::Approx(mixture));
  CHECK(one_stage.layer.mixture_kept_per_token == mixture);
  // Four layers, the first dense, over two stages: the first holds a dense and a mixture layer,
  // the second two mixture layers.
  setup.custom_model.num_layers = 4;
  setup.layout.pipeline_parallel = 2;
  setup.layout.data_parallel = 2;
  setup.pipeline_stage = 1;
  const Calculation first = calculate(setup, 1, true, {false, false});
  REQUIRE_MESSAGE(first.answer.ok(), first.answer.message);
  CHECK(first.layer.kept_per_token.value() == doctest::Approx((dense + mixture) / 2));
  setup.pipeline_stage = 2;
  const Calculation second = calculate(setup, 1, true, {false, false});
  REQUIRE(second.answer.ok());
  CHECK(second.layer.kept_per_token.value() == doctest::Approx(mixture));
  // Six layers over three stages, the first two dense and narrow: the middle stage, all mixture
  // with 2 micro-batches in flight, holds more than the first with 3 of its dense layers, and is
  // weighed and answered.
  setup.custom_model.num_layers = 6;
  setup.custom_model.num_dense_layers = 2;
  setup.custom_model.ffn_hidden_size = 8;
  setup.layout.pipeline_parallel = 3;
  setup.layout.data_parallel = 1;
  setup.pipeline_stage = 1;
  const double narrow = calculate(setup, 1, true, {false, false}).layer.kept_per_token.value();
  setup.pipeline_stage = 0;
  const Calculation three = calculate(setup, 1, true, {false, false});
  REQUIRE_MESSAGE(three.answer.ok(), three.answer.message);
  REQUIRE(3 * 2 * narrow < 2 * 2 * mixture);
  CHECK(three.stage.index == 1);
  CHECK(three.layer.kept_per_token.value() == doctest::Approx(mixture));
  setup.custom_model.num_layers = 4;
  setup.custom_model.num_dense_layers = 1;
  setup.custom_model.ffn_hidden_size = 128;
  // Interleaved, a device's chunks hold their micro-batches unevenly: the larger kind.
  setup.layout.virtual_pipeline_stages = 2;
  setup.layout.pipeline_parallel = 2;
  setup.pipeline_stage = 0;
  const Calculation interleaved = calculate(setup, 1, true, {false, false});
  REQUIRE_MESSAGE(interleaved.answer.ok(), interleaved.answer.message);
  CHECK(interleaved.layer.kept_per_token.value() == doctest::Approx(std::max(dense, mixture)));
}

TEST_CASE(
    "dense layers among a mixture: the MTP module's layer keeps a mixture layer's bytes in the "
    "ideal step's timeline too, whose peak stays the estimate's") {
  // The fuzzer's find: DeepSeek-V3 with its MTP module trained, the ideal step, one device.
  TrainingSetup setup;
  setup.model_id = "deepseek-v3";
  setup.logits = true;
  setup.mtp = true;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  double peak = 0;
  for (const TimelinePoint& point : memory_timeline(setup)) peak = std::max(peak, point.bytes);
  CHECK(peak == doctest::Approx(estimate.peak_allocated_bytes).epsilon(1e-12));
}

TEST_CASE("torchtitan mla per-op: what is not derived is refused, naming the setting") {
  TrainingSetup setup = tiny_latent(0, 0);
  REQUIRE(estimate_memory(setup).answer.ok());
  // torchtitan's latent attention has no fused wqkv.
  setup.fused_qkv = true;
  const Answer fused = estimate_memory(setup).answer;
  CHECK(fused.setting == setting_id::kFusedQkv);
  CHECK(fused.message.find("latent attention has none") != std::string::npos);
  // DeepSeek Sparse Attention's indexer is not derived under the policy (nor is it torchtitan's).
  setup = tiny_latent(static_cast<int>(kQueryLatent), 0);
  setup.custom_model.index_n_heads = 2;
  setup.custom_model.index_head_dim = 16;
  setup.custom_model.index_topk = 64;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  // torchtitan recomputes model.layers alone, not the MTP modules: refused.
  setup = fixtures::qwen3_moe_on_eight(Recompute::kSelectiveOp);
  setup.model_id = "deepseek-v3";
  setup.mtp = true;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kMtp);
  setup.recompute = Recompute::kNone;
  CHECK(estimate_memory(setup).answer.ok());
  // A latent of the router gate's width (h × E) is recomputed by its shape: refused.
  setup = tiny_latent(4, 0);
  const Answer gate_shape = estimate_memory(setup).answer;
  CHECK(gate_shape.setting == setting_id::kRecompute);
  CHECK(gate_shape.message.find("the router gate's shape") != std::string::npos);
}

}  // namespace torchtitan_mla_sac_test
