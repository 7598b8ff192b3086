// What a real training stack holds (options.hpp's Stack): one training step of the most loaded
// device replayed, allocation by allocation, through PyTorch's caching allocator's rules
// (allocator.hpp), in the order the framework allocates and frees (its row's step), beside the
// runtime every stack brings. The allocated peak is the busiest moment of that step, each term as
// it stands then; the reserved peak adds what the allocator keeps cached. docs/formulas.md
// derives each term and quotes its source.
#pragma once

#include <vector>

#include "stacks/stack_step.hpp"

namespace trainmem::replay {

// The idealised terms a replay holds itself, each then as it stands at the allocated peak.
inline constexpr Term kReplayedTerms[] = {
    Term::kWeights,     Term::kGradients, Term::kMasterWeights,  Term::kOptimizerStates,
    Term::kActivations, Term::kLogits,    Term::kDequantization, Term::kFp8Weights};

struct Replayed {
  // The stack's own terms, then the runtime's (cuBLAS workspaces, the CUDA context, NCCL), each
  // with its bytes at the allocated peak.
  std::vector<StackTerm> terms;
  Breakdown at_peak;  // kReplayedTerms at the allocated peak
  double peak_allocated = 0;
  double peak_reserved = 0;
};

// What the device holds outside the trainer's allocator before its first step: the CUDA context,
// NCCL's buffers and, under verl, the rollout engine process's context and NCCL.
double startup_runtime_bytes(const TrainingSetup& setup);

// The device's step under its setup's stack, recording the timeline into `timeline` when given.
Replayed replay(const StepDevice& device, std::vector<TimelinePoint>* timeline = nullptr);

}  // namespace trainmem::replay
