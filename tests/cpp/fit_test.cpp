#include "trainmem/fit.hpp"

#include <doctest/doctest.h>

using namespace trainmem;

TEST_CASE("fewest devices: Llama 3 8B at 8,192 tokens needs two H100s, and one cannot do") {
  const FitSearch search = find_fewest_devices(TrainingSetup{}, 10);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 2);
  REQUIRE_FALSE(search.layouts.empty());
  for (const Estimate& layout : search.layouts) {
    CHECK(layout.num_devices == 2);
    CHECK(layout.fits);
    CHECK(layout.bytes.total_bytes <= 80e9);
  }
  // Listed lowest per-device total first.
  for (std::size_t i = 1; i < search.layouts.size(); ++i) {
    CHECK(search.layouts[i - 1].bytes.total_bytes <= search.layouts[i].bytes.total_bytes);
  }
  REQUIRE(search.has_best_smaller);
  CHECK(search.best_smaller.num_devices == 1);
  CHECK_FALSE(search.best_smaller.fits);
  CHECK(
      search.why_not_fewer ==
      "With fewer than 2 devices nothing fits: the leanest layout, on 1 device, still needs 131.7 "
      "GB on its most loaded device, over the 80 GB of one H100 80 GB.");
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
