// torchtune's recipes (--stack torchtune), each holding worked by hand on the measurement
// harness's tiny shape: the gradients made in the backward pass and freed after the step,
// optimizer_in_bwd's one gradient at a time, activation offloading's layers in flight, the
// compiled chunked loss, the distributed recipes' FSDP2 units, and what the stack refuses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "timeline_points.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace torchtune_test {

namespace {

// h 64, f 224, 4 heads of 16, 2 key/value heads, vocabulary 512, untied: 55,424 parameters a
// layer (Q 64 × 64, K and V 32 × 64 each, the output 64 × 64, the MLP 3 × 224 × 64, two norms of
// 64) and 65,600 in the embedding, the output layer and the final norm.
constexpr double kLayerParameters = 55424;
constexpr double kRootParameters = 65600;
constexpr double kEmbeddingParameters = 512 * 64;

TrainingSetup tiny_torchtune(int layers) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(layers);
  setup.sequence_length = 128;
  setup.stack = Stack::kTorchtune;
  setup.precision = Precision::kBf16;
  setup.recompute = Recompute::kFull;
  return setup;
}

}  // namespace

TEST_CASE("torchtune: gradients are made in the backward pass and freed after the step") {
  const TrainingSetup setup = tiny_torchtune(2);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // BF16 throughout (dtype: bf16): AdamW's two moments, 4 B a parameter, made by the first step,
  // one block a layer and one for the rest; no gradient before the backward pass.
  const TimelinePoint& start = point_at(points, "start", 0);
  CHECK(start.held[Term::kGradients] == 0);
  CHECK(start.held[Term::kMasterWeights] == 0);
  CHECK(start.held[Term::kOptimizerStates] == 2 * allocator_block_bytes(4 * kLayerParameters) +
                                                  allocator_block_bytes(4 * kRootParameters));
  // At the end of the backward pass every gradient, 2 B a parameter (none at the start of the
  // next step, above: zero_grad(set_to_none=True) freed them).
  const double all =
      2 * allocator_block_bytes(2 * kLayerParameters) + allocator_block_bytes(2 * kRootParameters);
  CHECK(point_at(points, "backward", 0).held[Term::kGradients] == all);
  CHECK(estimate.bytes_per_parameter.master_weights == 0);
}

TEST_CASE("torchtune: under optimizer_in_bwd a layer's gradient is freed by its step") {
  TrainingSetup setup = tiny_torchtune(2);
  setup.optimizer_in_backward = true;
  REQUIRE(estimate_memory(setup).answer.ok());
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // The output layer's and final norm's gradients from their backward pass to the end (the
  // untied embedding's is made at its own, at the end), and the layer's own, stepped and freed.
  for (const int layer : {2, 1}) {
    CAPTURE(layer);
    CHECK(point_at(points, "backward", layer).held[Term::kGradients] ==
          allocator_block_bytes(2 * (kRootParameters - kEmbeddingParameters)) +
              allocator_block_bytes(2 * kLayerParameters));
  }
  CHECK(point_at(points, "start", 0).held[Term::kGradients] == 0);
}

TEST_CASE("torchtune: offloaded, the device keeps the inputs of the two layers in flight") {
  TrainingSetup setup = tiny_torchtune(4);
  const std::vector<TimelinePoint> kept = memory_timeline(setup);
  setup.offload_activations = true;
  REQUIRE(estimate_memory(setup).answer.ok());
  const std::vector<TimelinePoint> offloaded = memory_timeline(setup);
  // Under activation checkpointing a layer keeps its input, 2·T·h = 16,384 B. At the fourth
  // layer's busiest moment the device holds all four, or, offloaded, the two in flight and the
  // one being copied out.
  const double input = 2 * 128 * 64;
  CHECK(point_at(kept, "forward", 4).held[Term::kActivations] -
            point_at(offloaded, "forward", 4).held[Term::kActivations] ==
        input);
}

TEST_CASE("torchtune: the compiled chunked loss keeps the BF16 logits and 8 bytes a token") {
  TrainingSetup setup = tiny_torchtune(2);
  setup.logits = true;
  setup.loss = Loss::kChunked;
  setup.compile = Compile::kBlocksAndLoss;
  REQUIRE(estimate_memory(setup).answer.ok());
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // Eight chunks of 16 tokens × 512 logits in BF16 (16,384 B), each with its tokens' max and
  // log-sum-exp (8 B × 16: one 512-byte block), and at the backward pass's start the last chunk's
  // BF16 gradient.
  const double chunk = 2 * 16 * 512;
  CHECK(point_at(points, "loss", 2).held[Term::kLogits] == 8 * chunk + 8 * 512 + chunk);
  // Eager, each chunk's FP32 log-softmax is saved instead: twice the logits' bytes more.
  setup.compile = Compile::kBlocks;
  CHECK(point_at(memory_timeline(setup), "loss", 2).held[Term::kLogits] >
        8 * chunk + 8 * 2 * chunk);
}

TEST_CASE("torchtune: what its single-device recipes do not run is refused, by name") {
  const auto refused_by = [](const TrainingSetup& setup) {
    return estimate_memory(setup).answer.setting;
  };
  TrainingSetup setup = tiny_torchtune(2);
  setup.precision = Precision::kBf16Mixed;
  CHECK(refused_by(setup) == setting_id::kPrecision);
  // More than one device runs the distributed recipes, FSDP2 with resharding after the forward
  // pass (ZeRO 3); no DDP, no SHARD_GRAD_OP, no tensor parallelism, and ZeRO on one device is not
  // a recipe.
  setup = tiny_torchtune(2);
  setup.layout.data_parallel = 2;
  CHECK(refused_by(setup) == setting_id::kStack);
  setup.layout.zero_stage = 2;
  CHECK(refused_by(setup) == setting_id::kStack);
  setup.layout.zero_stage = 3;
  CHECK(estimate_memory(setup).answer.ok());
  setup.layout.tensor_parallel = 2;
  CHECK(refused_by(setup) == setting_id::kStack);
  setup = tiny_torchtune(2);
  setup.layout.zero_stage = 3;
  CHECK(refused_by(setup) == setting_id::kZeroStage);
  // custom_sharded_layers: torchtune's, and only where FSDP2 shards.
  setup = tiny_torchtune(2);
  setup.custom_sharded_layers = true;
  CHECK(refused_by(setup) == setting_id::kCustomShardedLayers);
  setup.stack = Stack::kHf;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  CHECK(refused_by(setup) == setting_id::kCustomShardedLayers);
  // A tied output layer reads the embedding's weight outside the embedding's unit.
  setup = tiny_torchtune(2);
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.custom_sharded_layers = true;
  CHECK(estimate_memory(setup).answer.ok());
  setup.model_id = "llama3.2-1b";
  CHECK(refused_by(setup) == setting_id::kCustomShardedLayers);
  setup = tiny_torchtune(2);
  setup.offload = Offload::kOptimizer;
  CHECK(refused_by(setup) == setting_id::kStack);
  setup = tiny_torchtune(2);
  setup.recompute = Recompute::kNone;
  setup.offload_activations = true;
  CHECK(refused_by(setup) == setting_id::kOffloadActivations);
  setup = tiny_torchtune(2);
  setup.lora_rank = 8;
  setup.base_weights = BaseWeights::kInt8;
  CHECK(refused_by(setup) == setting_id::kBaseWeights);
  setup.base_weights = BaseWeights::kNf4;
  CHECK(estimate_memory(setup).answer.ok());
  setup.optimizer_in_backward = true;  // torchtune's LoRA recipe has no optimizer_in_bwd
  CHECK(refused_by(setup) == setting_id::kOptimizerInBackward);
  setup = tiny_torchtune(2);
  setup.logits = true;
  setup.loss = Loss::kVocabParallel;
  CHECK(refused_by(setup) == setting_id::kStack);
  // FP32 training keeps FP32 activations, which are not counted.
  setup = tiny_torchtune(2);
  setup.precision = Precision::kFp32;
  CHECK(refused_by(setup) == setting_id::kPrecision);
  // What it runs: compile, optimizer_in_bwd.
  setup = tiny_torchtune(2);
  setup.compile = Compile::kBlocksAndLoss;
  setup.optimizer_in_backward = true;
  CHECK(estimate_memory(setup).answer.ok());
}

namespace {

TrainingSetup tiny_distributed(int layers) {
  TrainingSetup setup = tiny_torchtune(layers);
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  return setup;
}

}  // namespace

TEST_CASE("torchtune distributed: each device holds 1/d of the weights, gradients and moments") {
  const TrainingSetup setup = tiny_distributed(2);
  REQUIRE(estimate_memory(setup).answer.ok());
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // BF16 shards over 2 devices, no mixed-precision policy: 2 B a parameter of weights and
  // gradients, 4 of AdamW's moments, each halved; the whole ones gathered for nothing at the start.
  const TimelinePoint& start = point_at(points, "start", 0);
  CHECK(start.held[Term::kWeights] == 2 * allocator_block_bytes(2 * kLayerParameters / 2) +
                                          allocator_block_bytes(2 * kRootParameters / 2));
  CHECK(start.held[Term::kOptimizerStates] == 2 * allocator_block_bytes(4 * kLayerParameters / 2) +
                                                  allocator_block_bytes(4 * kRootParameters / 2));
  CHECK(start.held[Term::kFramework] == 0);
  // At the optimizer's step: each unit's gradients reduce-scattered into their BF16 shard.
  CHECK(point_at(points, "optimizer", 0).held[Term::kGradients] ==
        2 * allocator_block_bytes(2 * kLayerParameters / 2) +
            allocator_block_bytes(2 * kRootParameters / 2));
}

TEST_CASE(
    "torchtune distributed: the root unit stays gathered, and a layer is gathered through its "
    "all-gather's output") {
  TrainingSetup setup = tiny_distributed(2);
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // The second layer's forward pass: the root unit (the embedding, final norm and output layer,
  // which FSDP2 never reshards after the forward pass) whole, the layer's all-gather output and
  // the parameters copied out of it, the first layer's resharded and its output freed.
  const double layer = 2 * kLayerParameters;
  CHECK(point_at(points, "forward", 2).held[Term::kFramework] ==
        allocator_block_bytes(2 * kRootParameters) + 2 * allocator_block_bytes(layer));
  // custom_sharded_layers: the embedding and output layer units of their own, resharded after
  // their forward passes; the root unit is the final norm alone.
  setup.custom_sharded_layers = true;
  REQUIRE(estimate_memory(setup).answer.ok());
  CHECK(point_at(memory_timeline(setup), "forward", 2).held[Term::kFramework] ==
        allocator_block_bytes(2 * 64) + 2 * allocator_block_bytes(layer));
}

TEST_CASE(
    "torchtune distributed: a layer's backward pass holds it, the next one's all-gather and "
    "the last reduce-scatter's input") {
  TrainingSetup setup = tiny_distributed(3);
  setup.recompute = Recompute::kNone;
  REQUIRE(estimate_memory(setup).answer.ok());
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  // Layer 2's backward pass at its busiest: the root unit, layer 2's parameters, layer 1's
  // all-gather output (prefetched), and layer 3's reduce-scatter input (its gradients whole, BF16),
  // kept until layer 2's post_backward; beside the activations' gradients, in the same term, as
  // one device holds them.
  const double layer = 2 * kLayerParameters;
  const TimelinePoint& backward = point_at(points, "backward", 2);
  TrainingSetup one = setup;
  one.layout = ParallelLayout{};
  const double activation_gradients =
      point_at(memory_timeline(one), "backward", 2).held[Term::kFramework];
  CHECK(activation_gradients == 7 * 2 * 128 * 64);
  CHECK(backward.held[Term::kFramework] == activation_gradients +
                                               allocator_block_bytes(2 * kRootParameters) +
                                               3 * allocator_block_bytes(layer));
  // Layer 2's own gradients whole (BF16), layer 3's shard, and the output layer's and final
  // norm's whole since the output layer's backward pass (the untied embedding's come at the end,
  // all the root unit's reduce-scattered at its post_backward, the pass's end).
  CHECK(backward.held[Term::kGradients] ==
        allocator_block_bytes(layer) + allocator_block_bytes(layer / 2) +
            allocator_block_bytes(2 * (kRootParameters - kEmbeddingParameters)));
}

TEST_CASE(
    "torchtune eager: its modules as written keep the FP32 norm input, SiLU's output and "
    "K and V at every head") {
  TrainingSetup setup = tiny_torchtune(2);
  setup.recompute = Recompute::kNone;
  const ModelShape shape = harness_tiny_shape(2);
  TrainingSetup fused = setup;
  fused.stack = Stack::kIdeal;
  const double eager = saved_bytes_per_token(llama_block_saved_tensors(shape, setup, true));
  const double kernels = saved_bytes_per_token(llama_block_saved_tensors(shape, fused, true));
  // Two norms' FP32 input and BF16 normalised input where a fused norm keeps its BF16 input
  // (4·h more each), SiLU's output (2·f) and K and V at 4 heads of 16 rather than 2 (2·2·16·2):
  // 512 + 448 + 128 B a token a layer.
  CHECK(eager - kernels == 2 * 4 * 64 + 2 * 224 + 2 * 2 * 16 * 2);
  // Under LoRA the norms' scales are frozen: the normalised input is not kept for their gradient
  // (2·h more a norm, not 4·h).
  setup.lora_rank = 8;
  fused.lora_rank = 8;
  CHECK(saved_bytes_per_token(llama_block_saved_tensors(shape, setup, true)) -
            saved_bytes_per_token(llama_block_saved_tensors(shape, fused, true)) ==
        2 * 2 * 64 + 2 * 224 + 2 * 2 * 16 * 2);
  setup.lora_rank = 0;
  fused.lora_rank = 0;
  // Compiled, Inductor fuses them: what fused kernels keep.
  setup.recompute = Recompute::kFull;
  setup.compile = Compile::kBlocks;
  fused.recompute = Recompute::kFull;
  CHECK(saved_bytes_per_token(llama_block_saved_tensors(shape, setup, true)) ==
        saved_bytes_per_token(llama_block_saved_tensors(shape, fused, true)));
}

}  // namespace torchtune_test
