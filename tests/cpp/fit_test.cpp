#include "trainmem/fit.hpp"

#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"

using namespace trainmem;

TEST_CASE("fewest devices: Llama 3 8B at 8,192 tokens needs two H100s, and one cannot do") {
  const FitSearch search = find_fewest_devices(TrainingSetup{}, 10);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 2);
  REQUIRE_FALSE(search.layouts.empty());
  for (const Estimate& layout : search.layouts) {
    CHECK(layout.num_devices == 2);
    CHECK(layout.fits);
    CHECK(layout.bytes.total() <= 80e9);
  }
  // Listed cheapest to run first, each with its cost and why.
  REQUIRE(search.costs.size() == search.layouts.size());
  for (std::size_t i = 1; i < search.layouts.size(); ++i) {
    CHECK(search.costs[i - 1].score <= search.costs[i].score);
  }
  for (const LayoutCost& cost : search.costs) CHECK_FALSE(cost.reason.empty());
  REQUIRE(search.has_best_smaller);
  CHECK(search.best_smaller.num_devices == 1);
  CHECK_FALSE(search.best_smaller.fits);
  CHECK(
      search.why_not_fewer ==
      "With fewer than 2 devices nothing fits: the leanest layout, on 1 device, still needs 131.7 "
      "GB on its most loaded device, over the 72.0 GB of one H100 80 GB (10% kept free).");
}

TEST_CASE("fewest devices: each layout found is valid and its device count is the minimum") {
  for (const char* model : {"llama3-70b", "llama3-405b"}) {
    CAPTURE(model);
    TrainingSetup setup;
    setup.model_id = model;
    setup.device_id = "h200";
    const FitSearch search = find_fewest_devices(setup, 5);
    REQUIRE(search.answer.status == Status::kOk);
    REQUIRE_FALSE(search.layouts.empty());
    for (const Estimate& layout : search.layouts) {
      CHECK(layout.answer.status == Status::kOk);
      CHECK(layout.fits);
      CHECK(layout.num_devices == search.fewest_devices);
      CHECK(layout.device.id == "h200");
    }
    REQUIRE(search.has_best_smaller);
    CHECK(search.best_smaller.num_devices < search.fewest_devices);
    CHECK_FALSE(search.best_smaller.fits);
    // Model states alone bound the count from below: 16·P over the device's capacity.
    CHECK(search.fewest_devices >= search.layouts.front().num_parameters * 16 / 141e9);
  }
}

TEST_CASE("fewest devices: a bad base setup is refused like an estimate") {
  TrainingSetup setup;
  setup.device_id = "tpu";
  const FitSearch search = find_fewest_devices(setup, 5);
  CHECK(search.answer.status == Status::kInvalidInput);
  CHECK(search.answer.setting == "device");
  CHECK(search.layouts.empty());
}

TEST_CASE("fewest devices: among equally few, the layout a practitioner would run comes first") {
  TrainingSetup setup;
  setup.model_id = "llama3-70b";
  const FitSearch search = find_fewest_devices(setup, 8);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 16);
  REQUIRE(search.layouts.size() >= 2);
  // t 8 with SP inside one node and c 2 (4,096 tokens per device) before c 16 (512 tokens each).
  const ParallelLayout& first = search.layouts.front().setup.layout;
  CHECK(first.tensor_parallel == 8);
  CHECK(first.context_parallel == 2);
  CHECK(search.costs.front().reason.find("t 8 within one 8-device node") != std::string::npos);
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    if (search.layouts[i].setup.layout.context_parallel == 16) {
      CHECK(search.costs[i].reason.find(
                "512 tokens of the sequence per device, fewer than 4,096") != std::string::npos);
      CHECK(search.costs[i].score > search.costs.front().score + 50);
    }
  }
}

TEST_CASE("layout costs: each stated term, and plain data parallelism costs nothing") {
  TrainingSetup setup;
  setup.layout.data_parallel = 4;
  CHECK(layout_cost(estimate_memory(setup)).score == 0);
  CHECK(layout_cost(estimate_memory(setup)).reason ==
        "data parallelism alone: nothing beyond its all-reduce");
  setup.layout.tensor_parallel = 16;  // across two nodes
  setup.model_id = "llama3-70b";
  setup.layout.sequence_parallel = true;
  setup.layout.pipeline_parallel = 4;
  setup.recompute = Recompute::kFull;
  const LayoutCost cost = layout_cost(estimate_memory(setup));
  CHECK(cost.reason.find("t 16 spans nodes of 8") != std::string::npos);
  CHECK(cost.reason.find("a pipeline bubble of 16% of a step at 16 micro-batches") !=
        std::string::npos);  // 3 / 19
  CHECK(cost.reason.find("full recomputation runs each forward pass twice (+33)") !=
        std::string::npos);
  CHECK(cost.score == doctest::Approx(3 * 4 + 100 + 100.0 * 3 / 19 + 33));
}
