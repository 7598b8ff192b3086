// Lookups over a list of saved tensors (trainmem/activations.hpp), for the suites that count a
// block's tensors by hand.
#pragma once

#include <string>
#include <vector>

#include "trainmem/activations.hpp"

namespace trainmem::fixtures {

// The tensor of `id`, or nullptr.
inline const SavedTensor* find_tensor(const std::vector<SavedTensor>& tensors,
                                      const std::string& id) {
  for (const SavedTensor& tensor : tensors) {
    if (tensor.id == id) return &tensor;
  }
  return nullptr;
}

// Their bytes per token, summed.
inline double sum_of(const std::vector<SavedTensor>& tensors) {
  double sum = 0;
  for (const SavedTensor& tensor : tensors) sum += tensor.bytes_per_token;
  return sum;
}

}  // namespace trainmem::fixtures
