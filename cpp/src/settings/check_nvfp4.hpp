// The checks of a setup under nvfp4-mixed (options.hpp, Precision), part of check_setup
// (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// NVFP4 is counted as torchtitan's recipe runs it (llama3_8b_first_85_pct_layers_nvfp4): the
// torchtitan stack on a Blackwell device, compiled blocks under per-op selective recomputation,
// a dense decoder on one pipeline stage without tensor parallelism, every converted GEMM's
// dimensions multiples of 128. The first setting outside that is refused by name; ok under any
// other precision.
Answer check_nvfp4(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
