// What a pipeline stage holds besides its model states: the activations of the layers it has in
// flight, the logits and the loss (on the stage that computes them), a quantised base's layer
// being dequantised, and FP8 training's weight copies and scaling state.
#pragma once

#include "activations/layer.hpp"
#include "estimate/ledger.hpp"
#include "estimate/placement.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// What the setup's stack does to a layer's saved tensors (its row, stacks/stack_rows.hpp), for the
// activation models, which stand below the stacks.
LayerStack layer_stack_of(const TrainingSetup& setup);

// One layer's activations under the setup's activation model, for `micro_batch_sequences`
// sequences: a mixture's dense layers counted as the larger of the two kinds, a hybrid's Gated
// DeltaNet and full-attention layers as their mean (or the larger kind), LoRA's adapter
// intermediates and expert parallelism's all-to-all buffers included.
ActivationsPerLayer layer_activations(const ModelShape& shape, const TrainingSetup& setup,
                                      int micro_batch_sequences, bool flash_attention,
                                      const Pen& pen);

// The stage's activations, logits and loss, dequantised layer and FP8 weights, into `ledger`.
void add_stage_terms(Ledger& ledger, const ModelShape& shape, const TrainingSetup& setup,
                     const Placement& placement, const StagePlacement& stage,
                     const ActivationsPerLayer& layer);

}  // namespace trainmem
