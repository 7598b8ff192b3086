// A mixture's dense layers among its routed ones (first_k_dense_replace, an interleave step): the
// two kinds' activations, and what each pipeline stage holds of them (layer.hpp,
// dense_kept_per_token).
#pragma once

#include "activations/layer.hpp"
#include "estimate/placement.hpp"
#include "text/figure.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// One of a mixture's dense layers, as a shape of its own: attention as the mixture's, an MLP of
// intermediate_size.
ModelShape dense_layer_shape(const ModelShape& shape);

// A mixture layer `layer` and a dense one `dense`, as one layer of the model: their mean over the
// model's layers (each stage's own under a pipeline: stage_layer_activations), or under the
// interleaved schedule and in the hybrids the larger kind.
ActivationsPerLayer with_dense_layers(ActivationsPerLayer layer, const ActivationsPerLayer& dense,
                                      const ModelShape& shape, const TrainingSetup& setup,
                                      const Pen& pen);

// The layer as `stage` holds it: where a mixture's dense layers are counted apart (layer.hpp,
// dense_kept_per_token), under a pipeline the mean of the stage's own layers; else `layer`.
ActivationsPerLayer stage_layer_activations(const ActivationsPerLayer& layer,
                                            const ModelShape& shape, const TrainingSetup& setup,
                                            const StagePlacement& stage, const Pen& pen);

}  // namespace trainmem
