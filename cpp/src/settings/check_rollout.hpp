// The checks of post-training, part of check_setup (check.hpp): a setup with a rollout engine
// (TrainingSetup::rollout) and GRPO's loss, and DPO's loss.
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// vLLM's KV cache is counted for grouped-query attention in every layer, its weights in BF16:
// models whose cache vLLM sizes otherwise (latent attention, linear or sparse attention layers, a
// hybrid's global layers) and a quantised base (TRL hands vLLM the quantisation) are refused by
// name; ok without a rollout engine. DPO's loss where TRL's DPOTrainer runs it as modelled.
Answer check_rollout(const TrainingSetup& setup, const ModelShape& shape);

// Whether the setup's trainer can run a reference model: under a rollout engine, GRPO's loss or
// DPO's.
bool runs_a_reference(const TrainingSetup& setup);

}  // namespace trainmem
