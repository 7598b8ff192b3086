// Megatron-LM's --defer-embedding-wgrad-compute: the last pipeline stage keeps the step's
// micro-batches' output-layer inputs and gradients until its end, up to --wgrad-deferral-limit;
// pinned by hand, refused where Megatron-LM refuses it or where it has no bound, and read from a
// launch line.
#include <doctest/doctest.h>

#include <string>

#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace deferred_wgrad_test {

namespace {

// Llama 3 8B under Megatron-LM over p 4, 4,096-token micro-batches of one sequence, a global
// batch of 16 (n = 16 micro-batches a step), answered on the last stage.
TrainingSetup last_stage_of_8b(bool defer, int limit = 0) {
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.sequence_length = 4096;
  setup.logits = true;
  setup.layout.pipeline_parallel = 4;
  setup.pipeline_stage = -1;
  setup.global_batch_sequences = 16;
  setup.defer_embedding_wgrad = defer;
  setup.wgrad_deferral_limit = limit;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

double deferred_bytes(const Estimate& estimate) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == "megatron-deferred-wgrad") return term.bytes;
  }
  return 0;
}

// One micro-batch's: the output layer's input (4,096 × 4,096) and its logits' gradient
// (4,096 × 128,256), BF16.
constexpr double kInput = 2.0 * 4096 * 4096;
constexpr double kGradient = 2.0 * 4096 * 128256;

}  // namespace

TEST_CASE("deferred wgrad: the last stage holds every earlier micro-batch's input and gradient") {
  const Estimate plain = ok(last_stage_of_8b(false));
  const Estimate deferred = ok(last_stage_of_8b(true));
  CHECK(deferred_bytes(plain) == 0);
  // The replayed micro-batch is the step's last: its peak, at the loss, holds the 15 before it.
  CHECK(deferred_bytes(deferred) == 15 * (kInput + kGradient));
  CHECK(deferred.peak_allocated_bytes - plain.peak_allocated_bytes ==
        doctest::Approx(15 * (kInput + kGradient)).epsilon(1e-9));
}

TEST_CASE("deferred wgrad: a deferral limit keeps the first micro-batches alone") {
  // --wgrad-deferral-limit 2: the first two micro-batches' are held; the last computes its own.
  CHECK(deferred_bytes(ok(last_stage_of_8b(true, 2))) == 2 * (kInput + kGradient));
  // A limit of n or more defers them all.
  CHECK(deferred_bytes(ok(last_stage_of_8b(true, 16))) == 15 * (kInput + kGradient));
  // The first stage holds no output layer: nothing deferred there.
  TrainingSetup first = last_stage_of_8b(true);
  first.pipeline_stage = 1;
  CHECK(deferred_bytes(ok(first)) == 0);
}

TEST_CASE("deferred wgrad: refused without a pipeline, a bound, or Megatron-LM") {
  TrainingSetup one = last_stage_of_8b(true);
  one.layout.pipeline_parallel = 1;
  one.pipeline_stage = 0;
  CHECK(estimate_memory(one).answer.message ==
        "--defer-embedding-wgrad-compute needs pipeline parallelism above 1, as Megatron-LM "
        "requires.");
  TrainingSetup unbounded = last_stage_of_8b(true);
  unbounded.global_batch_sequences = 0;
  CHECK(estimate_memory(unbounded).answer.setting == setting_id::kDeferEmbeddingWgrad);
  CHECK(estimate_memory(unbounded).answer.message ==
        "Without a deferral limit the last stage keeps every micro-batch of the step: set the "
        "global batch, or a deferral limit.");
  TrainingSetup torchtitan = last_stage_of_8b(true);
  torchtitan.stack = Stack::kTorchtitan;
  torchtitan.global_batch_sequences = 0;
  torchtitan.wgrad_deferral_limit = 2;
  CHECK(estimate_memory(torchtitan).answer.setting == setting_id::kDeferEmbeddingWgrad);
  // The limit is the switch's: alone, refused.
  TrainingSetup limit_alone = last_stage_of_8b(false, 2);
  CHECK(estimate_memory(limit_alone).answer.setting == setting_id::kWgradDeferralLimit);
  CHECK(estimate_memory(limit_alone).answer.message ==
        "The deferral limit bounds --defer-embedding-wgrad-compute's buffers; turn that on, or "
        "set the limit to 0.");
}

TEST_CASE("deferred wgrad: a Megatron-LM line's flags are read, the limit only with the switch") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --pipeline-model-parallel-size 4 --global-batch-size 32 "
      "--wgrad-deferral-limit 4";
  const LaunchConfig deferred =
      read_launch_config(line + " --defer-embedding-wgrad-compute", {}, {});
  REQUIRE_MESSAGE(deferred.answer.ok(), deferred.answer.message);
  CHECK(deferred.setup.defer_embedding_wgrad);
  CHECK(deferred.setup.wgrad_deferral_limit == 4);
  CHECK(deferred.not_understood.empty());
  const LaunchConfig plain = read_launch_config(line, {}, {});
  REQUIRE_MESSAGE(plain.answer.ok(), plain.answer.message);
  CHECK_FALSE(plain.setup.defer_embedding_wgrad);
  CHECK(plain.setup.wgrad_deferral_limit == 0);
  CHECK(estimate_memory(plain.setup).answer.ok());
}

}  // namespace deferred_wgrad_test
