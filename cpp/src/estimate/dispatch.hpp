// A mixture layer's token exchange, one layer at a time: the buffers each token dispatcher holds
// while the layer runs (Megatron-LM's all-to-all and all-gather, torchtitan's combine), for the
// activation terms of a stage (stage.hpp).
#pragma once

#include <string>

#include "activations/layer.hpp"
#include "text/figure.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// The transient buffers of the setup's dispatcher for one mixture layer of `layer`'s tokens: 0
// where nothing is exchanged (ep 1 under the all-to-all).
Figure mixture_dispatch_buffers(const ModelShape& shape, const TrainingSetup& setup,
                                const ActivationsPerLayer& layer, const Pen& pen);

// Where those buffers come from, in words.
std::string dispatch_source(const TrainingSetup& setup);

}  // namespace trainmem
