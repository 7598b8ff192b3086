// The checks of a setup with a rollout engine (TrainingSetup::rollout), part of check_setup
// (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// vLLM's KV cache is counted for grouped-query attention in every layer, its weights in BF16:
// models whose cache vLLM sizes otherwise (latent attention, linear or sparse attention layers, a
// hybrid's global layers) and a quantised base (TRL hands vLLM the quantisation) are refused by
// name; ok without a rollout engine.
Answer check_rollout(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
