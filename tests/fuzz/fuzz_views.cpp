// Fuzz target: what is made of a setup's estimates: the savings, the fit map, a comparison, and
// now and then the fewest devices' search (the slowest of the core's entries).
#include <cstdint>

#include "fuzz_common.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"

using namespace trainmem;
using namespace trainmem::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  const TrainingSetup setup = fuzzed_setup(data);
  const Estimate estimate = estimate_memory(setup);
  check_estimate(estimate);
  // The views estimate their setup again and again (the savings some ten times, the fit map 63);
  // an RL step of a model of a hundred layers takes 14 ms natively and about a second under the
  // sanitizers, a minute a view, past a unit's timeout (scripts/fuzz.sh). Their code is the same
  // for any model: for RL, models of at most 48 layers.
  const ModelShape* shape = resolve_model(setup);
  if (setup.rollout != Rollout::kNone && shape != nullptr && shape->num_layers > 48) return 0;
  const SavingsList savings = rank_savings(setup);
  for (const Saving& saving : savings.savings) {
    check_estimate(saving.estimate);
    require(saving.bytes_saved > 0, "a listed saving saves bytes");
  }
  require(!compare_estimates(estimate, savings.baseline).empty(), "a comparison is worded");
  for (const FitCell& cell : fit_map(setup).cells) {
    require(std::isfinite(cell.total_bytes), "the fit map is finite");
  }
  if (estimate.answer.ok() && data.ConsumeIntegralInRange<int>(0, 15) == 0) {
    const FitSearch search = find_fewest_devices(setup, 3);
    for (const Estimate& layout : search.layouts) {
      check_estimate(layout);
      require(layout.fits, "a listed layout fits");
    }
  }
  return 0;
}
