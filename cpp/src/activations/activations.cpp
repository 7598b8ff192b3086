// Which activation model counts a setup's layers (layer.hpp); the models themselves are
// korthikanti.cpp and llama_block.cpp.
#include "trainmem/activations.hpp"

#include "activations/layer.hpp"

namespace trainmem {

LayerActivations layer_activations_of(ActivationModel model) {
  switch (model) {
    case ActivationModel::kLlamaBlock:
      return llama_block_layer_activations;
    case ActivationModel::kKorthikanti:
      break;
  }
  return korthikanti_layer_activations;
}

}  // namespace trainmem
