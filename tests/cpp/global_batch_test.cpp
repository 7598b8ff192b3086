// The global batch (Megatron-LM's --global-batch-size): the micro-batches a step, global ÷
// (micro-batch × d), bound how many each pipeline stage holds in flight; the batches
// Megatron-LM refuses are refused, and a launch line's batch is read, or Megatron-LM's default
// taken, with a note.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "estimate/placement.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace global_batch_test {

namespace {

// Llama 3 8B over p 4 (8 layers a stage), d 2, one sequence a micro-batch.
TrainingSetup pipeline_of_8b(int global_batch, int virtual_stages = 1) {
  TrainingSetup setup;
  setup.layout.pipeline_parallel = 4;
  setup.layout.virtual_pipeline_stages = virtual_stages;
  setup.layout.data_parallel = 2;
  setup.global_batch_sequences = global_batch;
  return setup;
}

double activations(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate.bytes[Term::kActivations];
}

void check_refused(const TrainingSetup& setup, const std::string& message) {
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == setting_id::kGlobalBatch);
  CHECK(estimate.answer.message == message);
}

}  // namespace

TEST_CASE("global batch: 1F1B holds min(n, p) micro-batches on the first stage") {
  // Unset, the first stage holds p = 4 micro-batches of its 8 layers; a global batch of 4 over
  // d 2 is n = 2 micro-batches a step, and the first stage holds both, half as much.
  const double full = activations(pipeline_of_8b(0));
  CHECK(activations(pipeline_of_8b(4)) == doctest::Approx(full * 2 / 4).epsilon(1e-12));
  // One micro-batch a step: a quarter.
  CHECK(activations(pipeline_of_8b(2)) == doctest::Approx(full / 4).epsilon(1e-12));
  // n ≥ p fills the pipeline: the same as unset.
  CHECK(activations(pipeline_of_8b(8)) == full);
  CHECK(activations(pipeline_of_8b(512)) == full);
}

TEST_CASE("global batch: the interleaved schedule holds min(n·v, its warm-up + 1) chunks") {
  // p 4, v 2: the first device's warm-up runs (v - 1)·p + 2·(p - 1) = 10 chunks and holds 11, each
  // half its layers: 5.5 micro-batches' worth. With n = 4 micro-batches a step (global 8 over d 2)
  // every one of the n·v = 8 chunks is in warm-up (get_pp_rank_microbatches): 4 micro-batches.
  const double full = activations(pipeline_of_8b(0, 2));
  CHECK(activations(pipeline_of_8b(8, 2)) == doctest::Approx(full * 4 / 5.5).epsilon(1e-12));
  // n = 8: 16 chunks, more than 11: as unset.
  CHECK(activations(pipeline_of_8b(16, 2)) == full);
  // The placement's own count, stage by stage: the last device (index 3) warms up
  // (v - 1)·p = 4 chunks and holds 5 at n = 4.
  CHECK(micro_batches_in_flight(pipeline_of_8b(8, 2).layout, 4, 3) == 2.5);
  CHECK(micro_batches_in_flight(pipeline_of_8b(8, 2).layout, 2, 3) == 2);
}

TEST_CASE("global batch: the micro-batches a step are at the setup's own micro-batch") {
  TrainingSetup setup = pipeline_of_8b(16);
  setup.micro_batch_sequences = 2;
  CHECK(pipeline_micro_batches(setup) == 4);  // 16 ÷ (2 × 2)
  CHECK(pipeline_micro_batches(pipeline_of_8b(0)) > 1e300);
  // torchtitan's pipeline runs p micro-batches a step, whatever the batch.
  TrainingSetup torchtitan = pipeline_of_8b(0);
  torchtitan.stack = Stack::kTorchtitan;
  CHECK(pipeline_micro_batches(torchtitan) == 4);
}

TEST_CASE("global batch: one that Megatron-LM refuses is refused, naming the setting") {
  check_refused(pipeline_of_8b(5),
                "Global batch 5 must be a whole number of micro-batches of 1 sequence on each "
                "data-parallel replica (d 2): a multiple of 2.");
  check_refused(pipeline_of_8b(12, 2),
                "The interleaved schedule runs its micro-batches in groups of p 4 (Megatron-LM's "
                "schedules.py): global batch 12 gives 6 a step; choose a multiple of 8.");
  TrainingSetup torchtitan = pipeline_of_8b(8);
  torchtitan.stack = Stack::kTorchtitan;
  const Estimate refused = estimate_memory(torchtitan);
  CHECK(refused.answer.setting == setting_id::kGlobalBatch);
  CHECK(refused.answer.message.find("torchtitan's pipeline runs") == 0);
  // Typed text out of bounds changes nothing.
  TrainingSetup setup;
  const SettingChange change = change_setting(setup, setting_id::kGlobalBatch, "-1");
  CHECK(change.answer.setting == setting_id::kGlobalBatch);
  CHECK(change.setup.global_batch_sequences == 0);
  CHECK(setting_text(change_setting(setup, setting_id::kGlobalBatch, "256").setup,
                     setting_id::kGlobalBatch) == "256");
}

TEST_CASE("global batch: a Megatron-LM line's --global-batch-size, or its default, is read") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --vocab-size 32000 "
      "--pipeline-model-parallel-size 4 --micro-batch-size 1";
  const LaunchConfig given = read_launch_config(line + " --global-batch-size 64", {}, {});
  REQUIRE_MESSAGE(given.answer.ok(), given.answer.message);
  CHECK(given.setup.global_batch_sequences == 64);
  CHECK(given.not_understood.empty());
  // Without it validate_args takes micro-batch × d = 2: one micro-batch a step, one in flight.
  const LaunchConfig unset = read_launch_config(line, {}, {});
  REQUIRE_MESSAGE(unset.answer.ok(), unset.answer.message);
  CHECK(unset.setup.global_batch_sequences == 2);
  CHECK(std::find(unset.notes.begin(), unset.notes.end(),
                  "Global batch 2: --global-batch-size is not given, so Megatron-LM takes the "
                  "micro-batch times d, one micro-batch a step.") != unset.notes.end());
  CHECK(activations(unset.setup) == doctest::Approx(activations(given.setup) / 4).epsilon(1e-12));
}

}  // namespace global_batch_test
