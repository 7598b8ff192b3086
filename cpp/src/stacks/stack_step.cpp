// The pieces every framework's replayed step shares (stack_step.hpp).
#include "stacks/stack_step.hpp"

#include <algorithm>

#include "trainmem/activations.hpp"

namespace trainmem::replay {

StepDevice device_of(const Calculation& calc, const TrainingSetup& setup) {
  StepDevice device{calc, setup, calc.whole_terms, 0, 0, {}, 0, 0, 0, 0};
  const bool first = !calc.last_is_most_loaded;
  const StageMemory& stage = first ? calc.first : calc.last;
  device.slots = static_cast<int>(first ? calc.shape->num_layers : calc.layers_per_stage);
  device.kept_per_slot = calc.layer.kept_bytes * (first ? calc.in_flight_factor : 1);
  device.parameters = stage.parameters;
  device.root_parameters = stage.root_parameters;
  device.layer_parameters = (stage.parameters - stage.root_parameters) / calc.layers_per_stage;
  device.logit_count = device.bytes.logits_bytes / logits_bytes_per_token_per_vocab(setup.loss);
  // A slot's saved tensors one by one (the llama-block model names them), in their shares of the
  // slot's bytes; one block for Korthikanti's sum or a recomputed layer's input.
  const bool selective_op = setup.recompute == Recompute::kSelectiveOp;
  if (selective_op || (setup.activation_model == ActivationModel::kLlamaBlock &&
                       setup.recompute != Recompute::kFull)) {
    const std::vector<SavedTensor> tensors =
        selective_op ? selective_op_saved_tensors(*calc.shape, setup)
                     : llama_block_saved_tensors(*calc.shape, setup, setup.flash_attention);
    const double sum = saved_bytes_per_token(tensors);
    for (const SavedTensor& tensor : tensors) {
      if (sum > 0 && tensor.bytes_per_token > 0) {
        device.kept_tensors.push_back(device.kept_per_slot * tensor.bytes_per_token / sum);
      }
    }
  }
  if (device.kept_tensors.empty()) device.kept_tensors.push_back(device.kept_per_slot);
  return device;
}

Handles keep_slot(Step& step, const StepDevice& device) {
  Handles handles;
  // Under recomputation the block still makes, in its forward pass, the tensors it does not keep,
  // each freed once used: counted as one block of what its backward pass rebuilds (the whole
  // layer's saved tensors less what it keeps), a stand-in for its largest live set, which the
  // replay does not follow operation by operation.
  const auto passing = step.take(kActivations, device.calc.layer.recompute_working_bytes);
  for (const double bytes : device.kept_tensors) handles.push_back(step.take(kActivations, bytes));
  step.give(passing);
  // Under expert parallelism the layer's all-to-all buffers, while it runs.
  step.give(step.take(kActivations, device.calc.layer.dispatch_bytes));
  return handles;
}

// The loss's allocations in order, each a multiple of the logits on the device. Megatron-LM's
// vocab-parallel cross-entropy (cross_entropy.py): the BF16 logits, their FP32 copy turned into
// the softmax in place and saved; the BF16 logits die with the forward pass; the backward pass
// turns the softmax into the gradient in place and casts it to BF16. cross_entropy over FP32-upcast
// logits (torchtitan's train.py): the BF16 logits, the FP32 copy, the FP32 log-softmax it saves;
// the copy and (del pred) the logits freed; backward: the log-softmax output's gradient, the
// input's, then the BF16 cast. Returns the handle of the logits' BF16 gradient, freed by the
// output layer's backward.
CachingAllocator::Handle loss_forward_and_backward(Step& step, const StepDevice& device) {
  const double n = device.logit_count;
  if (n <= 0) return step.take(kLogits, 0);
  const auto marked = [&](CachingAllocator::Handle gradient) {
    step.mark("loss", device.slots);
    return gradient;
  };
  if (device.setup.loss == Loss::kVocabParallel) {
    const auto logits = step.take(kLogits, kBf16Bytes * n);
    const auto softmax = step.take(kLogits, kFp32Bytes * n);
    step.give(logits);
    const auto gradient = step.take(kLogits, kBf16Bytes * n);
    step.give(softmax);
    return marked(gradient);
  }
  const auto logits = step.take(kLogits, kBf16Bytes * n);
  const auto upcast = step.take(kLogits, kFp32Bytes * n);
  const auto log_softmax = step.take(kLogits, kFp32Bytes * n);
  step.give(upcast);
  step.give(logits);
  const auto output_gradient = step.take(kLogits, kFp32Bytes * n);
  const auto input_gradient = step.take(kLogits, kFp32Bytes * n);
  step.give(output_gradient);
  step.give(log_softmax);
  const auto gradient = step.take(kLogits, kBf16Bytes * n);
  step.give(input_gradient);
  return marked(gradient);
}

// The stack-independent end of each layer's backward pass: the rebuilt layer (full
// recomputation) and the slot's saved tensors freed.
void layer_backward(Step& step, const StepDevice& device, Handles& kept, int slot) {
  // The rebuilt layer, and under expert parallelism its all-to-all buffers.
  const auto rebuilt = step.take(kActivations, layer_working_bytes(device.calc.layer));
  if (device.calc.layer.recompute_working_bytes > 0) step.mark("recompute", slot);
  step.give(rebuilt);
  give_all(step, kept);
}

// The forward pass's slots, each marked.
std::vector<Handles> forward_slots(Step& step, const StepDevice& device) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    kept[index] = keep_slot(step, device);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return kept;
}

// The backward pass's slots, last first, each marked once its memory is freed.
void backward_slots(Step& step, const StepDevice& device, std::vector<Handles>& kept) {
  for (int slot = static_cast<int>(kept.size()); slot >= 1; --slot) {
    layer_backward(step, device, kept[static_cast<std::size_t>(slot) - 1], slot);
    step.mark("backward", slot);
  }
}

}  // namespace trainmem::replay
