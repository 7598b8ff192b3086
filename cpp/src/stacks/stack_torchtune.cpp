// torchtune's single-device recipes replayed (stack_frameworks.hpp): the order in which they
// allocate and free in one training step, with the sources docs/formulas.md quotes.
#include <vector>

#include "stacks/stack_frameworks.hpp"
#include "trainmem/fine_tuning.hpp"

namespace trainmem::replay {

// torchtune's single-device recipes (recipes/full_finetune_single_device.py and
// lora_finetune_single_device.py): the model in the config's dtype, one block a layer and one for
// the rest; each micro-batch's forward pass (under activation checkpointing each layer keeps its
// input, and with activation offloading all but the layers in flight go to the host), the loss,
// and the backward pass, which makes each trained parameter's gradient as it reaches its layer;
// AdamW's state made by the first optimizer step (lazily, torch.optim's _init_group), and the
// gradients freed after each step (optimizer.zero_grad(set_to_none=True)), or, under
// optimizer_in_bwd, each stepped and freed by its parameter's post-accumulate-grad hook.
void torchtune_step(Step& step, const StepDevice& device) {
  const Breakdown& bytes = device.bytes;
  const TrainingSetup& setup = device.setup;
  const double layers = device.layers_per_stage;
  const bool in_backward = setup.optimizer_in_backward;
  load_model(step, device);
  // What is trained, and each trained parameter's state, in bytes per parameter.
  const Trained trained = trained_parameters(device);
  const double root_trained = trained.root;
  const double state_bytes = trained.state_bytes;
  // A gradient has its parameter's dtype (the model's, or the adapters').
  const double gradient_bytes =
      in_backward ? (device.parameters > 0 ? bytes[Term::kWeights] / device.parameters : 0)
                  : trained.gradient_bytes;
  Flowing flowing;
  flowing.tag = step.term("torchtune-activation-gradients", "Activation gradients",
                          "autograd's backward pass: each operation's input gradient, the size of "
                          "the tensor it saved, and the output layer's input gradient");
  const double h = device.shape.hidden_size;
  const bool offloading = setup.offload_activations;
  // One micro-batch; `first` for the first step's, whose optimizer makes the state.
  const auto micro_batch = [&](bool first) {
    Handles gradients;
    // The forward pass. Offloaded, a layer's saved tensors leave the device once the next layer
    // has run (torchtune's OffloadActivations copies them on a side stream, then frees them): the
    // layers in flight stay.
    const std::size_t in_flight = static_cast<std::size_t>(kOffloadLayersInFlight);
    std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
    for (std::size_t index = 0; index < kept.size(); ++index) {
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      kept[index] = keep_slot(step, device);
      step.give(dequantised);
      if (offloading && index >= in_flight) give_all(step, kept[index - in_flight]);
      step.mark("forward", static_cast<int>(index) + 1);
    }
    // Brought back for the backward pass, a layer ahead of it.
    const auto bring_back = [&](std::size_t index) {
      if (!offloading || !kept[index].empty() || index + in_flight >= kept.size()) return;
      for (const SlotTensor& tensor : device.kept_tensors) {
        kept[index].push_back(step.take(tag(Term::kActivations), tensor.bytes));
      }
    };
    const auto logits_gradient = loss_forward_and_backward(step, device);
    // The output layer's backward pass: its weight's gradient (under full training) and its
    // input's.
    const auto root_gradient = step.take(tag(Term::kGradients), gradient_bytes * root_trained);
    flowing.gradient = step.take(flowing.tag, kBf16Bytes * device.tokens * h);
    step.give(logits_gradient);
    for (std::size_t index = kept.size(); index-- > 0;) {
      bring_back(index);
      if (index > 0) bring_back(index - 1);
      // The layer's gradients, made as its backward pass runs (taken before it, as torchtitan's).
      const auto layer_gradient =
          step.take(tag(Term::kGradients), gradient_bytes * device.layer_trainable_parameters);
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      layer_backward(step, device, kept[index], static_cast<int>(index) + 1, &flowing);
      step.give(dequantised);
      if (in_backward) {
        if (first) {
          step.take(tag(Term::kOptimizerStates), state_bytes * device.layer_trainable_parameters);
        }
        step.give(layer_gradient);
      } else {
        gradients.push_back(layer_gradient);
      }
      step.mark("backward", static_cast<int>(index) + 1);
    }
    // The embedding's backward pass (a tied embedding's gradient joins the output layer's).
    step.give(flowing.gradient);
    if (in_backward) {
      if (first) step.take(tag(Term::kOptimizerStates), state_bytes * root_trained);
      step.give(root_gradient);
    } else {
      gradients.push_back(root_gradient);
    }
    step.mark("backward", 0);
    // The optimizer's step: AdamW's state made by the first (fused: no temporaries), then
    // zero_grad(set_to_none=True).
    if (!in_backward && first) {
      for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
        step.take(tag(Term::kOptimizerStates), state_bytes * device.layer_trainable_parameters);
      }
      step.take(tag(Term::kOptimizerStates), state_bytes * root_trained);
    }
    give_all(step, gradients);
  };
  step.warming_up(true);
  micro_batch(true);
  micro_batch(false);  // the cache's steady state, as Megatron-LM's replay
  step.warming_up(false);
  step.mark("start", 0);
  micro_batch(false);
}

}  // namespace trainmem::replay
