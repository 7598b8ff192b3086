// Megatron-LM's --num-distributed-optimizer-instances: each copy of the distributed optimiser
// shards its state over d·c / k ranks, the experts' over their data-parallel group / k; refused
// where Megatron-LM refuses it, and read from a launch line.
#include <doctest/doctest.h>

#include <string>

#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace optimizer_instances_test {

namespace {

TrainingSetup megatron_8b(int instances) {
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 1;
  setup.optimizer_instances = instances;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

}  // namespace

TEST_CASE("optimizer instances: k copies each shard the state over d / k ranks") {
  // Llama 3 8B (Megatron-LM pads nothing at t 1): FP32 master weights and Adam's two moments,
  // 12 B a parameter, over 8 / k ranks (as the replay holds them: each tensor's block rounded up
  // by the caching allocator, within 0.01%).
  const double parameters = count_parameters(*find_preset("llama3-8b"));
  for (const int k : {1, 2, 4, 8}) {
    CAPTURE(k);
    const Estimate estimate = ok(megatron_8b(k));
    CHECK(estimate.bytes[Term::kMasterWeights] ==
          doctest::Approx(4 * parameters * k / 8).epsilon(1e-4));
    CHECK(estimate.bytes[Term::kOptimizerStates] ==
          doctest::Approx(8 * parameters * k / 8).epsilon(1e-4));
  }
}

TEST_CASE("optimizer instances: refused beside ZeRO 0, off a divisor of d·c, or off Megatron-LM") {
  const Estimate uneven = estimate_memory(megatron_8b(3));
  CHECK(uneven.answer.setting == setting_id::kOptimizerInstances);
  CHECK(uneven.answer.message ==
        "Distributed optimiser instances must divide the d·c data-parallel ranks (and the "
        "experts' data-parallel group), as Megatron-LM requires.");
  TrainingSetup without = megatron_8b(2);
  without.layout.zero_stage = 0;
  CHECK(estimate_memory(without).answer.message ==
        "Distributed optimiser instances are the distributed optimiser's copies: set ZeRO 1 "
        "(--use-distributed-optimizer), or 1 instance.");
  TrainingSetup deepspeed = megatron_8b(2);
  deepspeed.stack = Stack::kDeepSpeed;
  CHECK(estimate_memory(deepspeed).answer.setting == setting_id::kOptimizerInstances);
}

TEST_CASE("optimizer instances: a Megatron-LM line's flag is read") {
  const LaunchConfig launch = read_launch_config(
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --use-distributed-optimizer --num-distributed-optimizer-instances 2",
      {}, {});
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.setup.optimizer_instances == 2);
  CHECK(launch.not_understood.empty());
  CHECK(ok(launch.setup).bytes[Term::kOptimizerStates] > 0);
}

}  // namespace optimizer_instances_test
