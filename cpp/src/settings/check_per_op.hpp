// The checks of torchtitan's per-op selective recomputation (Recompute::kSelectiveOp), part of
// check_setup (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// What the per-op policy is derived for (activations.hpp, selective_op_saved_tensors): a
// Llama-style block without biased projections, or torchtitan's MoE (eager, BF16, every layer a
// mixture), and no tensor parallelism; anything else refused by name. Ok under any other
// recomputation.
Answer check_per_op(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
