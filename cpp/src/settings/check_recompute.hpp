// The checks of Megatron-LM's recompute modules (TrainingSetup's recompute_* switches), part of
// check_setup (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// The modules are counted on the blocks Megatron-LM's Transformer Engine spec builds for a
// decoder of attention layers (gpt_layer_specs.py): grouped-query or latent attention, a dense
// MLP or a mixture with shared experts. A module the model does not have, or a block it is not
// counted on, is refused by the module's switch; ok without modules.
Answer check_recompute_modules(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
