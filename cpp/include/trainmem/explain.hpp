// "Show the arithmetic" and --explain: each term's formula with the setup's own numbers and its
// source, as the core computed it (each step records its working as it computes: nothing here
// restates a formula), and the llama-block model's saved tensors behind the activations.
#pragma once

#include <string>
#include <vector>

#include "trainmem/activations.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

struct TermArithmetic {
  // The term's id (terms.hpp: "weights", "activations", …), "stack-" and a stack's own term's,
  // "allocatorCache", or "host" for the host's memory under offloading.
  std::string term;
  std::string label;    // "Weights"
  std::string formula;  // "2 B × 8,030,261,248 parameters = 16.1 GB"
  std::string source;
};

// The terms in the order the estimate computes them (the table's as each step adds them, then a
// stack's own and the allocator's cache; the host's memory last); empty for a refused setup.
std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup);

// The saved tensors of a setup, for a table: none for a refused setup; `in_use` says whether the
// setup counts its activations this way (the llama-block model), `caption` what the rows are.
struct SavedTensorList {
  bool in_use = false;
  std::string caption;
  std::vector<SavedTensor> tensors;
  double bytes_per_token = 0;
};
SavedTensorList saved_tensors_of(const TrainingSetup& setup);

}  // namespace trainmem
