// Memory over one training step on the most loaded device: the model states held throughout
// (gradient buffers allocated for the whole step, as Megatron-LM's and DDP's are), activations
// piling up layer by layer in the forward pass, the logits and loss, then the backward pass
// freeing them (rebuilding each layer first under full recomputation: the saw-tooth), and the
// optimiser step. Its peak is estimate_memory's total. Under a stack the points come from the
// step it replays through the caching allocator: each point the busiest moment of its phase
// (allocated, plus the runtime outside the allocator; its peak is the allocated peak's), with
// what is reserved then beside it (whose last point is the estimate's total). Under ideal both
// are the same. Each point's `held` splits it by term (terms.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "trainmem/setup.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

// Empty for a refused setup.
std::vector<TimelinePoint> memory_timeline(const TrainingSetup& setup);

// The index of the timeline's peak (its first highest point), for the CLI and the page alike.
std::size_t timeline_peak(const std::vector<TimelinePoint>& points);

}  // namespace trainmem
