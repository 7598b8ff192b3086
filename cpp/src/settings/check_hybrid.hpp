// The checks of a setup whose model mixes Gated DeltaNet layers with full-attention ones
// (models.hpp, hybrid_linear_attention), part of check_setup (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Under the ideal step, with t·c dividing the linear layers' key and value heads, for full
// training in BF16 with an optimiser whose states do not follow the matrices' shapes, without
// torchtitan's per-op policy: the first setting outside that, refused by name; ok for any other
// model.
Answer check_hybrid(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
