// The step's bookkeeping, and the pieces every framework's replayed step shares (stack_step.hpp).
#include "stacks/stack_step.hpp"

#include <algorithm>
#include <utility>

namespace trainmem::replay {

std::size_t Step::term(std::string id, std::string label, std::string source, Term counted_in) {
  terms_.push_back({std::move(id), std::move(label), 0, std::move(source), true, counted_in});
  held_.resize(kFirstStackTag + terms_.size(), 0);
  return kFirstStackTag + terms_.size() - 1;
}

CachingAllocator::Handle Step::take(std::size_t tag, double bytes,
                                    CachingAllocator::Stream stream) {
  if (tag < count_as_.size()) tag = count_as_[tag];
  const double before = allocator_.allocated_bytes();
  const CachingAllocator::Handle handle = allocator_.allocate(bytes, stream);
  if (!(bytes > 0)) return handle;  // nothing taken: a handle that frees nothing
  const double block = allocator_.allocated_bytes() - before;
  if (handle >= blocks_.size()) blocks_.resize(handle + 1, {0, 0});
  blocks_[handle] = {tag, block};
  held_[tag] += block;
  if (allocator_.allocated_bytes() > phase_peak_) {
    phase_peak_ = allocator_.allocated_bytes();
    if (timeline_ != nullptr) at_phase_peak_ = held_;
  }
  if (!warming_ && allocator_.allocated_bytes() > peak_) {
    peak_ = allocator_.allocated_bytes();
    at_peak_ = held_;
  }
  return handle;
}

// Transformer Engine's flash_attn_a2a_communicate (context_parallel.py): each exchanged tensor's
// input made contiguous and a buffer it is received into, on the compute stream; then, on
// cp_stream, the received chunks reordered into the tensor that is kept (index_select), whose
// block is cached for that stream alone; the buffer and the copy freed.
CachingAllocator::Handle Step::take(std::size_t tag, const SlotTensor& tensor) {
  if (tensor.exchange == Exchange::kNone) return take(tag, tensor.bytes);
  const auto input = take(tag, tensor.bytes);
  const auto received = take(tag, tensor.bytes);
  const auto kept = take(tag, tensor.bytes, kExchangeStream);
  give(received);
  give(input);
  return kept;
}

void Step::give(CachingAllocator::Handle handle) {
  if (handle >= blocks_.size() || blocks_[handle].second == 0) return;
  held_[blocks_[handle].first] -= blocks_[handle].second;
  blocks_[handle].second = 0;
  allocator_.free(handle);
}

Breakdown Step::by_term(const std::vector<double>& held) const {
  Breakdown bytes;
  for (std::size_t index = 0; index < held.size(); ++index) {
    const Term term =
        index < kFirstStackTag ? static_cast<Term>(index) : terms_[index - kFirstStackTag].term;
    bytes[term] += held[index];
  }
  return bytes;
}

void Step::mark(const char* phase, int layer) {
  if (timeline_ == nullptr || warming_) return;
  TimelinePoint point;
  point.phase = phase_prefix_ + phase;
  point.layer = layer;
  point.bytes = phase_peak_ + outside_.total();
  point.reserved_bytes = allocator_.reserved_bytes() + outside_.total();
  point.held = by_term(at_phase_peak_);
  for (const TermRow& row : kTerms) point.held[row.term] += outside_[row.term];
  timeline_->push_back(point);
  phase_peak_ = allocator_.allocated_bytes();
  at_phase_peak_ = held_;
}

std::vector<StackTerm> Step::terms_at_peak() const {
  std::vector<StackTerm> terms = terms_;
  for (std::size_t index = 0; index < terms.size(); ++index) {
    terms[index].bytes = at_peak(kFirstStackTag + index);
  }
  return terms;
}

ModelWeights load_model(Step& step, const StepDevice& device, double shards, Handles* taken) {
  const Breakdown& bytes = device.bytes;
  const double layers = device.layers_per_stage;
  ModelWeights whole;
  whole.layer = device.setup.lora_rank > 0 || device.parameters <= 0
                    ? device.layer_weight_bytes
                    : bytes[Term::kWeights] * shards / device.parameters * device.layer_parameters;
  whole.root = std::max(0.0, bytes[Term::kWeights] * shards - layers * whole.layer);
  for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
    const auto handle = step.take(tag(Term::kWeights), whole.layer / shards);
    if (taken != nullptr) taken->push_back(handle);
  }
  const auto root = step.take(tag(Term::kWeights), whole.root / shards);
  if (taken != nullptr) taken->push_back(root);
  return whole;
}

void take_model_states(Step& step, const StepDevice& device) {
  step.take(tag(Term::kWeights), device.bytes[Term::kWeights]);
  step.take(tag(Term::kMasterWeights), device.bytes[Term::kMasterWeights]);
  step.take(tag(Term::kOptimizerStates), device.bytes[Term::kOptimizerStates]);
}

Trained trained_parameters(const StepDevice& device) {
  Trained trained;
  trained.root = device.setup.lora_rank > 0 ? 0 : device.root_parameters;
  trained.all = device.layers_per_stage * device.layer_trainable_parameters + trained.root;
  if (trained.all > 0) {
    trained.gradient_bytes = device.bytes[Term::kGradients] / trained.all;
    trained.state_bytes = device.bytes[Term::kOptimizerStates] / trained.all;
  }
  return trained;
}

Handles keep_slot(Step& step, const StepDevice& device, int slot) {
  Handles handles;
  // Q, K and V as the layer made them, the all-to-all's inputs: held until the attention's output
  // has come back (Megatron-LM's Attention.forward keeps them to its end).
  Handles originals;
  // Under recomputation the block still makes, in its forward pass, the tensors it does not keep,
  // each freed once used: counted as one block of what its backward pass rebuilds (the whole
  // layer's saved tensors less what it keeps), a stand-in for its largest live set, which the
  // replay does not follow operation by operation.
  const auto passing = step.take(tag(Term::kActivations), device.recompute_working_of(slot));
  const double scale = device.kept_scale_of(slot);
  for (const SlotTensor& kept : device.kept_tensors) {
    const SlotTensor tensor{kept.bytes * scale, kept.exchange};
    if (tensor.exchange == Exchange::kIntoAttention) {
      originals.push_back(step.take(tag(Term::kActivations), tensor.bytes));
    }
    handles.push_back(step.take(tag(Term::kActivations), tensor));
    if (tensor.exchange == Exchange::kOutOfAttention) give_all(step, originals);
  }
  give_all(step, originals);
  step.give(passing);
  // Under expert parallelism the layer's all-to-all buffers, while it runs.
  step.give(step.take(tag(Term::kActivations), device.dispatch));
  return handles;
}

// The stack-independent end of each layer's backward pass: the rebuilt layer (full
// recomputation) and the slot's saved tensors freed.
void layer_backward(Step& step, const StepDevice& device, Handles& kept, int slot,
                    Flowing* flowing) {
  // The rebuilt layer, and under expert parallelism its all-to-all buffers.
  const double working = device.recompute_working_of(slot);
  const auto rebuilt = step.take(tag(Term::kActivations), working + device.dispatch);
  if (working > 0) step.mark("recompute", slot);
  if (flowing != nullptr) {
    // Autograd runs the operations' backward passes last first: each makes the gradient of its
    // input (the tensor it saved, mostly), then the tensor it saved and the gradient it was handed
    // are freed. A stand-in for each operation's own gradients, one per tensor the layer saves,
    // that tensor's size: the replay does not follow the operations one by one. Where the slot
    // keeps one block (Korthikanti's sum, a recomputed layer's input) it is freed at the end.
    const std::vector<SlotTensor>& gradients = device.gradient_tensors;
    const bool one_by_one = kept.size() == gradients.size();
    for (std::size_t index = gradients.size(); index-- > 0;) {
      // A gradient the all-to-all exchanges is made first on the compute stream (FlashAttention's
      // dq, dk and dv; the projection's input gradient), freed once exchanged.
      const bool exchanged = gradients[index].exchange != Exchange::kNone;
      const auto made = step.take(flowing->tag, exchanged ? gradients[index].bytes : 0);
      const auto gradient = step.take(flowing->tag, gradients[index]);
      step.give(made);
      step.give(flowing->gradient);
      if (one_by_one) step.give(kept[index]);
      flowing->gradient = gradient;
    }
    if (one_by_one) kept.clear();  // given: a handle may name another block once its is freed
  }
  step.give(rebuilt);
  give_all(step, kept);
}

void replay_after_warm_up(Step& step, const std::function<void(bool first)>& micro_batch) {
  step.warming_up(true);
  micro_batch(true);
  micro_batch(false);
  step.warming_up(false);
  step.mark("start", 0);
  micro_batch(false);
}

// The forward pass's slots, each marked.
std::vector<Handles> forward_slots(Step& step, const StepDevice& device, const SlotHooks* hooks) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    const int slot = static_cast<int>(index) + 1;
    if (hooks != nullptr && hooks->before) hooks->before(slot);
    kept[index] = keep_slot(step, device, slot);
    step.mark("forward", slot);
    if (hooks != nullptr && hooks->after) hooks->after(slot);
  }
  return kept;
}

// The backward pass's slots, last first, each marked once its memory is freed.
void backward_slots(Step& step, const StepDevice& device, std::vector<Handles>& kept,
                    Flowing* flowing, const SlotHooks* hooks) {
  for (int slot = static_cast<int>(kept.size()); slot >= 1; --slot) {
    if (hooks != nullptr && hooks->before) hooks->before(slot);
    layer_backward(step, device, kept[static_cast<std::size_t>(slot) - 1], slot, flowing);
    step.mark("backward", slot);
    if (hooks != nullptr && hooks->after) hooks->after(slot);
  }
}

}  // namespace trainmem::replay
