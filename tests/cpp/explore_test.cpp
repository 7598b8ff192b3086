#include "trainmem/explore.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "trainmem/estimate.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace explore_test {

TEST_CASE("savings: every saving is the difference of two estimates, most saved first") {
  TrainingSetup setup;
  setup.flash_attention = false;
  setup.micro_batch_sequences = 4;
  const SavingsList list = rank_savings(setup);
  REQUIRE(list.answer.status == Status::kOk);
  REQUIRE(list.savings.size() >= 5);
  for (std::size_t i = 0; i < list.savings.size(); ++i) {
    const Saving& saving = list.savings[i];
    CAPTURE(saving.change);
    const Estimate again = estimate_memory(saving.estimate.setup);
    CHECK(saving.bytes_saved == list.baseline.bytes.total() - again.bytes.total());
    CHECK(saving.devices_added == again.num_devices - list.baseline.num_devices);
    CHECK(saving.bytes_saved > 0);
    if (i > 0) CHECK(list.savings[i - 1].bytes_saved >= saving.bytes_saved);
  }
  // Without FlashAttention at 4 sequences the score term dominates: removing it saves the most.
  CHECK(list.savings.front().change == "recompute-full");
  CHECK(list.savings[1].change == "flash-attention");
  CHECK(list.savings[1].devices_added == 0);
}

TEST_CASE("savings: the next ZeRO stage on one device shards over two, and says so") {
  const SavingsList list = rank_savings(TrainingSetup{});
  const auto zero = std::find_if(list.savings.begin(), list.savings.end(),
                                 [](const Saving& saving) { return saving.change == "zero-next"; });
  REQUIRE(zero != list.savings.end());
  CHECK(zero->label == "ZeRO-1 over 2 data-parallel devices");
  CHECK(zero->devices_added == 1);
  CHECK(zero->estimate.setup.layout.data_parallel == 2);
}

TEST_CASE("savings: changes the core refuses are left out") {
  TrainingSetup setup;
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  const SavingsList list = rank_savings(setup);
  for (const Saving& saving : list.savings) CHECK(saving.change != "tp-double");  // 16 ∤ 8 kv heads
  setup.model_id = "nope";
  CHECK(rank_savings(setup).answer.status == Status::kInvalidInput);
}

TEST_CASE("fit map: each cell is the estimate of its sequence length and micro-batch") {
  TrainingSetup setup;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  const FitMap map = fit_map(setup);
  REQUIRE(map.answer.status == Status::kOk);
  CHECK(map.sequence_lengths.front() == 1024);
  CHECK(map.sequence_lengths.back() == 131072);
  CHECK(map.micro_batch_sequences == std::vector<int>{1, 2, 4, 8, 16});
  REQUIRE(map.cells.size() == map.sequence_lengths.size() * map.micro_batch_sequences.size());
  for (const FitCell& cell : map.cells) {
    TrainingSetup cell_setup = setup;
    cell_setup.sequence_length = cell.sequence_length;
    cell_setup.micro_batch_sequences = cell.micro_batch_sequences;
    const Estimate estimate = estimate_memory(cell_setup);
    CHECK(cell.valid);
    CHECK(cell.total_bytes == estimate.bytes.total());
    CHECK(cell.fits == estimate.fits);
    CHECK(cell.devices_worth == estimate.devices_worth);
  }
  // The plate's own cell: 8,192 tokens, one sequence, fits on eight devices with ZeRO-3.
  const auto plate = std::find_if(map.cells.begin(), map.cells.end(), [](const FitCell& cell) {
    return cell.sequence_length == 8192 && cell.micro_batch_sequences == 1;
  });
  REQUIRE(plate != map.cells.end());
  CHECK(plate->fits);
}

TEST_CASE("fit map: cells the core refuses are marked, not computed") {
  TrainingSetup setup;
  setup.layout.context_parallel = 2048;  // divides 2,048 and longer, not 1,024
  const FitMap map = fit_map(setup);
  REQUIRE(map.answer.status == Status::kOk);
  CHECK_FALSE(map.cells.front().valid);
  CHECK(map.cells.front().total_bytes == 0);
  CHECK(map.cells.back().valid);
}

TEST_CASE("compare: the difference between two estimates in words") {
  const Estimate plate = estimate_memory(TrainingSetup{});
  TrainingSetup sharded;
  sharded.layout.data_parallel = 8;
  sharded.layout.zero_stage = 3;
  const Estimate eight = estimate_memory(sharded);
  CHECK(compare_estimates(plate, eight) ==
        "This configuration needs 112.4 GB less on its most loaded device than the pinned one "
        "(52.6 GB against 165.0 GB, on 8 devices instead of 1 device).");
  CHECK(compare_estimates(eight, plate) ==
        "This configuration needs 112.4 GB more on its most loaded device than the pinned one "
        "(165.0 GB against 52.6 GB, on 1 device instead of 8 devices).");
  CHECK(compare_estimates(plate, plate) ==
        "This configuration needs the same memory on its most loaded device as the pinned one "
        "(165.0 GB against 165.0 GB).");
}

TEST_CASE("timeline: its peak is the estimator's total, whatever the setup") {
  for (const char* model : {"llama3-8b", "llama3-70b", "mixtral-8x7b"}) {
    for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (bool logits : {false, true}) {
        for (int p : {1, 4}) {
          for (int v : {1, 2}) {
            if (p == 1 && v > 1) continue;
            TrainingSetup setup;
            setup.model_id = model;
            setup.recompute = recompute;
            setup.logits = logits;
            setup.micro_batch_sequences = 2;
            setup.layout.pipeline_parallel = p;
            setup.layout.virtual_pipeline_stages = v;
            CAPTURE(model);
            CAPTURE(choice_id(recompute));
            CAPTURE(logits);
            CAPTURE(p);
            CAPTURE(v);
            const std::vector<TimelinePoint> points = memory_timeline(setup);
            REQUIRE_FALSE(points.empty());
            double peak = 0;
            for (const TimelinePoint& point : points) peak = std::max(peak, point.bytes);
            CHECK(points[timeline_peak(points)].bytes == peak);
            CHECK(peak == doctest::Approx(estimate_memory(setup).bytes.total()).epsilon(1e-12));
            CHECK(points.front().phase == "start");
            CHECK(points.back().phase == "optimizer");
            CHECK(points.back().bytes == points.front().bytes);
          }
        }
      }
    }
  }
}

TEST_CASE("timeline: full recomputation draws a saw-tooth in the backward pass") {
  TrainingSetup setup;
  setup.recompute = Recompute::kFull;
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  int recomputes = 0;
  for (std::size_t i = 1; i + 1 < points.size(); ++i) {
    if (points[i].phase != "recompute") continue;
    ++recomputes;
    CHECK(points[i].bytes > points[i - 1].bytes);  // up as the layer is rebuilt
    CHECK(points[i + 1].bytes < points[i].bytes);  // down as it is freed
  }
  CHECK(recomputes == 32);
  CHECK(memory_timeline(TrainingSetup{}).size() == 1 + 32 + 32 + 1);
}

TEST_CASE("logits and full recomputation share the memory the logits free") {
  TrainingSetup setup;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  const Estimate estimate = estimate_memory(setup);
  const double sbh = 8192.0 * 4096;
  const double logits = 6 * 8192.0 * 128256;
  const double working = (34 - 2) * sbh;
  CHECK(estimate.bytes[Term::kLogits] == logits);
  CHECK(estimate.bytes[Term::kActivations] + estimate.bytes[Term::kLogits] ==
        32 * 2 * sbh + std::max(logits, working));
}

TEST_CASE("compare: a refused estimate is not compared") {
  TrainingSetup bad;
  bad.model_id = "nope";
  CHECK(compare_estimates(estimate_memory(TrainingSetup{}), estimate_memory(bad)) ==
        "Only two accepted configurations can be compared.");
}

TEST_CASE("savings: halving a micro-batch to one sequence says 'sequence'") {
  TrainingSetup setup;
  setup.micro_batch_sequences = 3;
  const SavingsList list = rank_savings(setup);
  const auto half =
      std::find_if(list.savings.begin(), list.savings.end(),
                   [](const Saving& saving) { return saving.change == "micro-batch-half"; });
  REQUIRE(half != list.savings.end());
  CHECK(half->label == "Halve the micro-batch and accumulate gradients over two (1 sequence)");
}

TEST_CASE("savings: gradient accumulation keeps the gradient buffer and halves the activations") {
  TrainingSetup setup;
  setup.micro_batch_sequences = 2;
  const SavingsList list = rank_savings(setup);
  const auto half =
      std::find_if(list.savings.begin(), list.savings.end(),
                   [](const Saving& saving) { return saving.change == "micro-batch-half"; });
  REQUIRE(half != list.savings.end());
  CHECK(half->estimate.bytes[Term::kGradients] == list.baseline.bytes[Term::kGradients]);
  CHECK(half->estimate.bytes[Term::kActivations] * 2 == list.baseline.bytes[Term::kActivations]);
}

TEST_CASE("savings: a fine-tuning setup is offered NF4 and offloading, the plate's view is not") {
  for (const Saving& saving : rank_savings(TrainingSetup{}).savings) {
    CHECK(saving.change.rfind("offload", 0) != 0);
    CHECK(saving.change != "base-weights-nf4");
  }
  TrainingSetup setup;
  setup.lora_rank = 16;
  const SavingsList list = rank_savings(setup);
  for (const char* change : {"base-weights-nf4", "offload-optimizer",
                             "offload-optimizer-and-weights", "offload-activations"}) {
    const auto found = std::find_if(list.savings.begin(), list.savings.end(),
                                    [&](const Saving& saving) { return saving.change == change; });
    CHECK_MESSAGE(found != list.savings.end(), change);
  }
}

}  // namespace explore_test
