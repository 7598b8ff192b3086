// torchtune's single-device recipes replayed (stack_frameworks.hpp): the order in which they
// allocate and free in one training step, with the sources docs/formulas.md quotes.
#include <vector>

#include "stacks/stack_frameworks.hpp"
#include "trainmem/fine_tuning.hpp"

namespace trainmem::replay {

namespace {

// What each of torchtune's micro-batches takes, worked out once, and its term.
struct TorchtunePlan {
  bool in_backward = false;  // optimizer_in_bwd
  bool offloading = false;   // the saved activations offloaded
  // What is trained, and each trained parameter's state, in bytes per parameter.
  Trained trained;
  double gradient_bytes = 0;
  std::size_t activation_gradients = 0;
};

TorchtunePlan torchtune_plan(Step& step, const StepDevice& device) {
  TorchtunePlan plan;
  plan.in_backward = device.setup.optimizer_in_backward;
  plan.offloading = device.setup.offload_activations;
  plan.trained = trained_parameters(device);
  // A gradient has its parameter's dtype (the model's, or the adapters').
  plan.gradient_bytes =
      plan.in_backward
          ? (device.parameters > 0 ? device.bytes[Term::kWeights] / device.parameters : 0)
          : plan.trained.gradient_bytes;
  plan.activation_gradients =
      step.term("torchtune-activation-gradients", "Activation gradients",
                "autograd's backward pass: each operation's input gradient, the size of "
                "the tensor it saved, and the output layer's input gradient");
  return plan;
}

// The layers whose saved tensors stay on the device while offloading.
constexpr std::size_t kLayersInFlight = static_cast<std::size_t>(kOffloadLayersInFlight);

// The forward pass. Offloaded, a layer's saved tensors leave the device once the next layer has
// run (torchtune's OffloadActivations copies them on a side stream, then frees them): the layers
// in flight stay.
std::vector<Handles> torchtune_forward_pass(Step& step, const StepDevice& device,
                                            const TorchtunePlan& plan) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    kept[index] = keep_slot(step, device);
    step.give(dequantised);
    if (plan.offloading && index >= kLayersInFlight) give_all(step, kept[index - kLayersInFlight]);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return kept;
}

// An offloaded layer's saved tensors, brought back for the backward pass, a layer ahead of it.
void bring_back(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                std::vector<Handles>& kept, std::size_t index) {
  if (!plan.offloading || !kept[index].empty() || index + kLayersInFlight >= kept.size()) return;
  for (const SlotTensor& tensor : device.kept_tensors) {
    kept[index].push_back(step.take(tag(Term::kActivations), tensor.bytes));
  }
}

// A gradient once made: under optimizer_in_bwd its parameters stepped by their
// post-accumulate-grad hook (AdamW's state made by the first step) and the gradient freed;
// otherwise kept for the optimizer's step.
void gradient_ready(Step& step, const TorchtunePlan& plan, bool first,
                    CachingAllocator::Handle gradient, double parameters, Handles& gradients) {
  if (!plan.in_backward) {
    gradients.push_back(gradient);
    return;
  }
  if (first) step.take(tag(Term::kOptimizerStates), plan.trained.state_bytes * parameters);
  step.give(gradient);
}

// The layers' backward passes, last first; the gradients kept for the optimizer's step join
// `gradients`.
void torchtune_backward_pass(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                             bool first, std::vector<Handles>& kept, Flowing& flowing,
                             Handles& gradients) {
  for (std::size_t index = kept.size(); index-- > 0;) {
    bring_back(step, device, plan, kept, index);
    if (index > 0) bring_back(step, device, plan, kept, index - 1);
    // The layer's gradients, made as its backward pass runs (taken before it, as torchtitan's).
    const auto layer_gradient =
        step.take(tag(Term::kGradients), plan.gradient_bytes * device.layer_trainable_parameters);
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    layer_backward(step, device, kept[index], static_cast<int>(index) + 1, &flowing);
    step.give(dequantised);
    gradient_ready(step, plan, first, layer_gradient, device.layer_trainable_parameters, gradients);
    step.mark("backward", static_cast<int>(index) + 1);
  }
}

// The optimizer's step: AdamW's state made by the first (fused: no temporaries), then
// zero_grad(set_to_none=True).
void torchtune_optimizer_step(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                              bool first, Handles& gradients) {
  const double state_bytes = plan.trained.state_bytes;
  if (!plan.in_backward && first) {
    for (int layer = 0; layer < static_cast<int>(device.layers_per_stage); ++layer) {
      step.take(tag(Term::kOptimizerStates), state_bytes * device.layer_trainable_parameters);
    }
    step.take(tag(Term::kOptimizerStates), state_bytes * plan.trained.root);
  }
  give_all(step, gradients);
}

// One micro-batch; `first` for the first step's, whose optimizer makes the state.
void torchtune_micro_batch(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                           bool first) {
  std::vector<Handles> kept = torchtune_forward_pass(step, device, plan);
  const auto logits_gradient = loss_forward_and_backward(step, device);
  // The output layer's backward pass: its weight's gradient (under full training) and its
  // input's.
  const auto root_gradient =
      step.take(tag(Term::kGradients), plan.gradient_bytes * plan.trained.root);
  Flowing flowing;
  flowing.tag = plan.activation_gradients;
  flowing.gradient = step.take(flowing.tag, kBf16Bytes * device.tokens * device.shape.hidden_size);
  step.give(logits_gradient);
  Handles gradients;
  torchtune_backward_pass(step, device, plan, first, kept, flowing, gradients);
  // The embedding's backward pass (a tied embedding's gradient joins the output layer's).
  step.give(flowing.gradient);
  gradient_ready(step, plan, first, root_gradient, plan.trained.root, gradients);
  step.mark("backward", 0);
  torchtune_optimizer_step(step, device, plan, first, gradients);
}

}  // namespace

// torchtune's single-device recipes (recipes/full_finetune_single_device.py and
// lora_finetune_single_device.py): the model in the config's dtype, one block a layer and one for
// the rest; each micro-batch's forward pass (under activation checkpointing each layer keeps its
// input, and with activation offloading all but the layers in flight go to the host), the loss,
// and the backward pass, which makes each trained parameter's gradient as it reaches its layer;
// AdamW's state made by the first optimizer step (lazily, torch.optim's _init_group), and the
// gradients freed after each step (optimizer.zero_grad(set_to_none=True)), or, under
// optimizer_in_bwd, each stepped and freed by its parameter's post-accumulate-grad hook.
void torchtune_step(Step& step, const StepDevice& device) {
  load_model(step, device);
  const TorchtunePlan plan = torchtune_plan(step, device);
  // The warm-up reaches the cache's steady state, as Megatron-LM's replay.
  replay_after_warm_up(step, [&](bool first) { torchtune_micro_batch(step, device, plan, first); });
}

}  // namespace trainmem::replay
