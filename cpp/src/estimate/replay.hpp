// A training stack's step for the estimate's most loaded stage (stacks/stack.hpp): what the
// replay is told of the device, and what the estimate takes from it.
#pragma once

#include <vector>

#include "activations/layer.hpp"
#include "estimate/ledger.hpp"
#include "estimate/placement.hpp"
#include "stacks/stack.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// What one layer of the stage saves while it runs without recomputation (a layer rebuilt under
// full recomputation saves as much), whose sizes stand in for its backward pass's gradients: the
// llama block's tensors, or of the kinds a hybrid's stage holds the one that saves the most.
std::vector<SavedTensor> rebuilt_layer_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                               const StagePlacement& stage);

// The most loaded stage, `stage`, as the replay sees it: its whole terms, its layer slots and their
// saved tensors, its parameters.
replay::StepDevice step_device(const TrainingSetup& setup, const ModelShape& shape,
                               const Placement& placement, const StagePlacement& stage,
                               const ActivationsPerLayer& layer, const Breakdown& whole);

struct StackHoldings {
  std::vector<StackTerm> terms;  // the stack's own terms, then the runtime's
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
};

// Replays the setup's stack on `device`: the ledger's terms become what is held at the step's
// allocated peak, with the stack's own terms, the runtime and the allocator's cache, each with its
// working when the ledger writes.
StackHoldings apply_stack(Ledger& ledger, const replay::StepDevice& device);

}  // namespace trainmem
