// Inside the stack's replay (stack.cpp): one training step's allocations, each under a term,
// through PyTorch's caching allocator (allocator.hpp). The pieces every framework's step shares
// are here (stack_step.cpp); each framework's order of allocations is in stack_frameworks.cpp.
// Not part of the public API.
#pragma once

#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "trainmem/allocator.hpp"

namespace trainmem::replay {

// The idealised terms, then the runtime's workspace, then each stack's own terms by index.
enum Tag : std::size_t {
  kWeights,
  kGradients,
  kMasterWeights,
  kOptimizerStates,
  kActivations,
  kLogits,
  kWorkspace,
  kFirstFrameworkTag,
};

// One step's allocations through the allocator, each under a term, with each term's bytes at the
// allocated peak.
class Step {
 public:
  // A term of the stack's own: its tag.
  std::size_t term(std::string id, std::string label, std::string source) {
    terms_.push_back({std::move(id), std::move(label), 0, std::move(source), true});
    held_.resize(kFirstFrameworkTag + terms_.size(), 0);
    return kFirstFrameworkTag + terms_.size() - 1;
  }

  CachingAllocator::Handle take(std::size_t tag, double bytes) {
    const double before = allocator_.allocated_bytes();
    const CachingAllocator::Handle handle = allocator_.allocate(bytes);
    if (!(bytes > 0)) return handle;  // nothing taken: a handle that frees nothing
    const double block = allocator_.allocated_bytes() - before;
    if (handle >= blocks_.size()) blocks_.resize(handle + 1, {0, 0});
    blocks_[handle] = {tag, block};
    held_[tag] += block;
    if (allocator_.allocated_bytes() > phase_peak_) {
      phase_peak_ = allocator_.allocated_bytes();
      if (timeline_ != nullptr) at_phase_peak_ = held_;
    }
    if (allocator_.allocated_bytes() > peak_) {
      peak_ = allocator_.allocated_bytes();
      at_peak_ = held_;
    }
    return handle;
  }

  void give(CachingAllocator::Handle handle) {
    if (handle >= blocks_.size() || blocks_[handle].second == 0) return;
    held_[blocks_[handle].first] -= blocks_[handle].second;
    blocks_[handle].second = 0;
    allocator_.free(handle);
  }

  // Records the phase just ended: its busiest moment and what is reserved, each with the memory
  // outside the allocator.
  void mark(const char* phase, int layer) {
    if (timeline_ == nullptr) return;
    TimelinePoint point;
    point.phase = phase;
    point.layer = layer;
    point.bytes = phase_peak_ + outside_;
    point.reserved_bytes = allocator_.reserved_bytes() + outside_;
    const auto held = [&](std::size_t tag) {
      return tag < at_phase_peak_.size() ? at_phase_peak_[tag] : 0.0;
    };
    point.states_bytes =
        held(kWeights) + held(kGradients) + held(kMasterWeights) + held(kOptimizerStates);
    point.activations_bytes = held(kActivations);
    point.logits_bytes = held(kLogits);
    point.runtime_bytes = held(kWorkspace) + outside_;
    for (std::size_t tag = kFirstFrameworkTag; tag < at_phase_peak_.size(); ++tag) {
      point.framework_bytes += held(tag);
    }
    timeline_->push_back(point);
    phase_peak_ = allocator_.allocated_bytes();
    at_phase_peak_ = held_;
  }
  void record(std::vector<TimelinePoint>* timeline, double outside) {
    timeline_ = timeline;
    outside_ = outside;
  }

  double at_peak(std::size_t tag) const { return tag < at_peak_.size() ? at_peak_[tag] : 0; }
  double peak_allocated() const { return allocator_.peak_allocated_bytes(); }
  double peak_reserved() const { return allocator_.peak_reserved_bytes(); }

  std::vector<StackTerm> terms_at_peak() const {
    std::vector<StackTerm> terms = terms_;
    for (std::size_t index = 0; index < terms.size(); ++index) {
      terms[index].bytes = at_peak(kFirstFrameworkTag + index);
    }
    return terms;
  }

 private:
  CachingAllocator allocator_;
  std::vector<std::pair<std::size_t, double>> blocks_;  // by handle: tag and block bytes
  std::vector<double> held_ = std::vector<double>(kFirstFrameworkTag, 0);
  std::vector<double> at_peak_ = std::vector<double>(kFirstFrameworkTag, 0);
  double peak_ = -1;
  double phase_peak_ = 0;
  std::vector<double> at_phase_peak_;
  std::vector<StackTerm> terms_;
  std::vector<TimelinePoint>* timeline_ = nullptr;
  double outside_ = 0;
};

using Handles = std::vector<CachingAllocator::Handle>;

inline void give_all(Step& step, Handles& handles) {
  for (const CachingAllocator::Handle handle : handles) step.give(handle);
  handles.clear();
}

// What the step needs to know of the most loaded device, from the estimate's own Calculation.
struct StepDevice {
  const Calculation& calc;
  const TrainingSetup& setup;
  MemoryBreakdown bytes;  // the idealised terms, whole, under the stack's bytes per parameter
  int slots = 0;          // layers' worth of activations held (p micro-batches on stage 1)
  double kept_per_slot = 0;
  std::vector<double> kept_tensors;  // one slot's saved tensors, bytes
  double layer_parameters = 0;       // one layer's on the device, unsharded
  double root_parameters = 0;        // the embedding, output layer and final norm here
  double parameters = 0;
  double logit_count = 0;  // logits on the device: tokens × vocabulary / t
};

StepDevice device_of(const Calculation& calc, const TrainingSetup& setup);

// A slot's saved tensors, taken as its forward pass makes them (and, under recomputation, what
// the block makes but does not keep, freed as it ends).
Handles keep_slot(Step& step, const StepDevice& device);

// The loss's allocations in order; the handle of the logits' BF16 gradient, which the output
// layer's backward frees.
CachingAllocator::Handle loss_forward_and_backward(Step& step, const StepDevice& device);

// The end of a slot's backward pass: the rebuilt layer, then its saved tensors freed.
void layer_backward(Step& step, const StepDevice& device, Handles& kept, int slot);

// The forward pass's slots, each marked; the backward pass's, last first, each marked.
std::vector<Handles> forward_slots(Step& step, const StepDevice& device);
void backward_slots(Step& step, const StepDevice& device, std::vector<Handles>& kept);

// Each framework's step (stack_frameworks.cpp).
void megatron_step(Step& step, const StepDevice& device);
void torchtitan_step(Step& step, const StepDevice& device);
void deepspeed_step(Step& step, const StepDevice& device);

}  // namespace trainmem::replay
