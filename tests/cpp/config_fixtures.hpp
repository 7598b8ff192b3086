// What the tests of config.json readers share: a config read to its shape (the test stops on a
// refusal, naming it), a setup that trains that shape, and a list's bytes for some saved tensors.
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem::fixtures {

// The shape a config.json reads to (its text tower with `text_tower`).
inline ModelShape parsed(const std::string& text, bool text_tower = false) {
  const ConfigParse result = parse_hf_config(text, text_tower);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  return result.shape;
}

// A setup that trains `shape` over 64-token sequences, the llama-block model counting its layers.
inline TrainingSetup setup_of(const ModelShape& shape) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 64;
  setup.activation_model = ActivationModel::kLlamaBlock;
  return setup;
}

// The bytes a token of the tensors with these ids.
inline double bytes_of(const std::vector<SavedTensor>& tensors,
                       std::initializer_list<const char*> ids) {
  double sum = 0;
  for (const SavedTensor& tensor : tensors) {
    for (const char* id : ids) {
      if (tensor.id == id) sum += tensor.bytes_per_token;
    }
  }
  return sum;
}

}  // namespace trainmem::fixtures
