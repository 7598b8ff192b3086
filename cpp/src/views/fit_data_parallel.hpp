// The fewest-devices search's step for one layout (fit.cpp): the smallest data-parallel degree d
// at which it fits. Declared apart so that the suites can pin it on a layout whose allocator cache
// steps with d.
#pragma once

#include "trainmem/estimate.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

struct DataParallelFit {
  Estimate estimate;  // at the d found, where one fits
  bool fits = false;
};

// The smallest d at which `setup`'s layout fits on at most `max_devices`, from the d the search
// starts at (the step that keeps expert parallelism dividing, and 2 where ZeRO has nothing else to
// shard over). Under ZeRO, total(d) = fixed + shardable / (d·c) gives it from two estimates; where
// the caching allocator's replay steps with d (its cache can fall by gigabytes at the d where a
// shard's blocks change size class), the form is not linear in 1/d, and bisection over d, from the
// most d allowed, finds where the fit begins.
DataParallelFit smallest_data_parallel_that_fits(TrainingSetup setup, double max_devices);

}  // namespace trainmem
