// torchtune's recipes replayed (stack_frameworks.hpp), single-device and distributed (FSDP2): the
// order in which they allocate and free in one training step, with the sources docs/formulas.md
// quotes.
#include <utility>
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
  // The distributed recipes: FSDP2 over d devices (training/_distributed.py, shard_model), every
  // layer a unit, and under custom_sharded_layers the embedding and the output layer; the root
  // unit holds the rest. Each unit's bytes gathered, whole, and the trained parameters of the
  // embedding's and output layer's units; a gradient's bytes unsharded (the parameters' dtype:
  // no MixedPrecisionPolicy, so BF16 all-gathers and reduce-scatters).
  bool fsdp = false;
  ModelWeights model;
  double root_unit = 0;
  double embedding_unit = 0;
  double output_unit = 0;
  double embedding_trained = 0;
  double output_trained = 0;
  // The root unit's trained parameters whose gradients its backward pass makes at the end: an
  // untied embedding's, under full training, where the root holds it.
  double late_root_trained = 0;
  double unsharded_gradient_bytes = 0;
  std::size_t gathered = 0;
  std::size_t reduce_input = 0;
};

TorchtunePlan torchtune_plan(Step& step, const StepDevice& device, const ModelWeights& model) {
  TorchtunePlan plan;
  plan.in_backward = device.setup.optimizer_in_backward;
  plan.offloading = device.setup.offload_activations;
  plan.trained = trained_parameters(device);
  // A gradient has its parameter's dtype (the model's, or the adapters').
  plan.gradient_bytes =
      plan.in_backward
          ? (device.parameters > 0 ? device.bytes[Term::kWeights] / device.parameters : 0)
          : plan.trained.gradient_bytes;
  plan.fsdp = device.setup.layout.zero_stage >= 3;
  plan.model = model;
  plan.root_unit = model.root;
  plan.unsharded_gradient_bytes =
      plan.fsdp ? plan.trained.gradient_bytes * device.zero_shards : plan.gradient_bytes;
  const double trained_share =
      device.root_parameters > 0 ? plan.trained.root / device.root_parameters : 0;
  if (device.counts.output_head > 0)
    plan.late_root_trained = trained_share * device.counts.embedding;
  if (plan.fsdp && device.setup.custom_sharded_layers && device.root_parameters > 0) {
    const double per_parameter = model.root / device.root_parameters;
    plan.embedding_unit = per_parameter * device.counts.embedding;
    plan.output_unit = per_parameter * device.counts.output_head;
    plan.root_unit = model.root - plan.embedding_unit - plan.output_unit;
    plan.late_root_trained = 0;
    plan.embedding_trained = trained_share * device.counts.embedding;
    plan.output_trained = trained_share * device.counts.output_head;
  }
  if (plan.fsdp) {
    plan.gathered = step.term(
        "fsdp-gathered-units", "Gathered units (FSDP2)",
        "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, FSDPParamGroup.unshard: a "
        "unit all-gathered into a buffer and copied out into each parameter; a layer for its "
        "passes (the next prefetched in the backward pass), the root unit for the whole step "
        "(FSDP2 never reshards the root after its forward pass), the embedding and output layer "
        "for their own passes under custom_sharded_layers (torchtune v0.6.1, "
        "training/_distributed.py, shard_model)");
    plan.reduce_input =
        step.term("fsdp-reduce-scatter-input", "Reduce-scatter input (BF16)",
                  "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, foreach_reduce: a "
                  "unit's gradients copied into one buffer in the parameters' BF16 (torchtune "
                  "sets no MixedPrecisionPolicy)");
  }
  plan.activation_gradients =
      step.term("torchtune-activation-gradients", "Activation gradients",
                "autograd's backward pass: each operation's input gradient, the size of "
                "the tensor it saved, and the output layer's input gradient");
  return plan;
}

// FSDP2's collectives as the allocator meets them (torch/distributed/fsdp/_fully_shard/
// _fsdp_param_group.py, unshard, wait_for_unshard and post_backward; _fsdp_collectives.py): a
// unit's all-gather output, then its parameters copied out of it. In the forward pass the output
// is kept (comm_ctx.all_gather_state) until the next unit's all-gather is out, freed just before
// that unit's copy-out, and the last one's until the root's forward pass ends (_fsdp_state.py,
// FSDPState._post_forward); in the backward pass each is freed at its own copy-out, and the next
// unit's all-gather goes out (_backward_prefetch) as a unit's backward pass begins. A unit's
// gradients are copied into the reduce-scatter's input, the whole ones freed, and their shard made;
// the input is kept (comm_ctx.reduce_scatter_state) until the next unit's post_backward, or the
// backward pass's end. Nothing of this on one device.
struct Collectives {
  CachingAllocator::Handle all_gather = CachingAllocator::kNothing;  // the last all-gather's output
  CachingAllocator::Handle reduce_scatter = CachingAllocator::kNothing;  // the last one's input
};

// A unit's parameters gathered in the forward pass: its all-gather, the last all-gather's output
// freed, its copy-out (wait_for_unshard).
CachingAllocator::Handle unshard_forward(Step& step, const TorchtunePlan& plan, double whole,
                                         Collectives& held) {
  const double bytes = plan.fsdp ? whole : 0;
  if (!(bytes > 0)) return CachingAllocator::kNothing;
  const auto output = step.take(plan.gathered, bytes);
  step.give(held.all_gather);
  held.all_gather = output;
  return step.take(plan.gathered, bytes);
}

// A unit's parameters gathered in the backward pass from the all-gather already out (`issued`),
// which the copy-out frees.
CachingAllocator::Handle copy_out(Step& step, const TorchtunePlan& plan, double whole,
                                  CachingAllocator::Handle issued) {
  const auto parameters = step.take(plan.gathered, plan.fsdp ? whole : 0);
  step.give(issued);
  return parameters;
}

CachingAllocator::Handle all_gather(Step& step, const TorchtunePlan& plan, double whole) {
  return step.take(plan.gathered, plan.fsdp ? whole : 0);
}

// A unit's gradients once its backward pass has made them (`unsharded`, whole, `trained`
// parameters' worth), reduce-scattered under FSDP2 at its post_backward (after its reshard): the
// last reduce-scatter's input freed, this one's made and the whole ones freed once copied in, and
// their shard made, which the handle holds.
CachingAllocator::Handle reduced(Step& step, const TorchtunePlan& plan, Collectives& held,
                                 Handles unsharded, double trained) {
  step.give(held.reduce_scatter);
  held.reduce_scatter = step.take(plan.reduce_input, plan.unsharded_gradient_bytes * trained);
  give_all(step, unsharded);
  return step.take(tag(Term::kGradients), plan.trained.gradient_bytes * trained);
}

// The layers whose saved tensors stay on the device while offloading.
constexpr std::size_t kLayersInFlight = static_cast<std::size_t>(kOffloadLayersInFlight);

// The forward pass. Offloaded, a layer's saved tensors leave the device once the next layer has
// run (torchtune's OffloadActivations copies them on a side stream, then frees them): the layers
// in flight stay. Under FSDP2 each layer is gathered for its forward pass and resharded after it.
std::vector<Handles> torchtune_forward_pass(Step& step, const StepDevice& device,
                                            const TorchtunePlan& plan, Collectives& held) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    const auto layer = unshard_forward(step, plan, plan.model.layer, held);
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    kept[index] = keep_slot(step, device);
    step.give(dequantised);
    step.give(layer);
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

// A unit's gradients made (one handle a layer's, or its parts'), kept or stepped on one device
// (gradient_ready), reduce-scattered under FSDP2.
void gradients_made(Step& step, const TorchtunePlan& plan, bool first, Collectives& held,
                    const std::vector<std::pair<CachingAllocator::Handle, double>>& parts,
                    Handles& gradients) {
  if (!plan.fsdp) {
    for (const auto& [gradient, trained] : parts) {
      gradient_ready(step, plan, first, gradient, trained, gradients);
    }
    return;
  }
  Handles whole;
  double trained = 0;
  for (const auto& [gradient, part] : parts) {
    whole.push_back(gradient);
    trained += part;
  }
  gradients.push_back(reduced(step, plan, held, whole, trained));
}

// What the backward pass carries from unit to unit: the gradient flowing back, FSDP2's held
// buffers and the all-gather already out for the next unit, and the gradients kept for the
// optimizer's step.
struct Backward {
  Flowing flowing;
  Collectives held;
  CachingAllocator::Handle issued = CachingAllocator::kNothing;
  Handles gradients;
};

// The layers' backward passes, last first, each from its gathered parameters, the next layer's
// (or, at the first, the embedding's own unit's) all-gather going out as it begins.
void torchtune_backward_pass(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                             bool first, std::vector<Handles>& kept, Backward& backward) {
  const double trained = device.layer_trainable_parameters;
  for (std::size_t index = kept.size(); index-- > 0;) {
    bring_back(step, device, plan, kept, index);
    if (index > 0) bring_back(step, device, plan, kept, index - 1);
    const auto layer = copy_out(step, plan, plan.model.layer, backward.issued);
    backward.issued = all_gather(step, plan, index > 0 ? plan.model.layer : plan.embedding_unit);
    // The layer's gradients, made as its backward pass runs (taken before it, as torchtitan's).
    const auto layer_gradient =
        step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * trained);
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    layer_backward(step, device, kept[index], static_cast<int>(index) + 1, &backward.flowing);
    step.give(dequantised);
    step.give(layer);
    gradients_made(step, plan, first, backward.held, {{layer_gradient, trained}},
                   backward.gradients);
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

// The model's forward pass, from the root unit's all-gather, which stays gathered to the backward
// pass's end (FSDP2 never reshards the root after its forward pass), and, under
// custom_sharded_layers, the embedding's unit and the output layer's, each gathered for its own
// forward pass (the output layer's while it makes the logits, in BF16: the loss makes them again
// in its own replay); the last all-gather's output freed as it returns.
struct Forward {
  CachingAllocator::Handle root = CachingAllocator::kNothing;
  std::vector<Handles> kept;
};

Forward torchtune_model_forward(Step& step, const StepDevice& device, const TorchtunePlan& plan) {
  Collectives held;
  Forward forward;
  forward.root = unshard_forward(step, plan, plan.root_unit, held);
  step.give(unshard_forward(step, plan, plan.embedding_unit, held));
  forward.kept = torchtune_forward_pass(step, device, plan, held);
  const auto output = unshard_forward(step, plan, plan.output_unit, held);
  const bool own_output = plan.output_unit > 0 && device.logit_count > 0;
  step.give(step.take(tag(Term::kLogits), own_output ? kBf16Bytes * device.logit_count : 0));
  step.give(output);
  step.give(held.all_gather);
  return forward;
}

// One micro-batch; `first` for the first step's, whose optimizer makes the state.
void torchtune_micro_batch(Step& step, const StepDevice& device, const TorchtunePlan& plan,
                           bool first) {
  Forward forward = torchtune_model_forward(step, device, plan);
  const auto logits_gradient = loss_forward_and_backward(step, device);
  // The output layer's backward pass (its own unit gathered again under custom_sharded_layers,
  // the last layer's all-gather going out): its weight's gradient (under full training) and its
  // input's. The root unit's gradients are reduce-scattered as the backward pass ends.
  Backward backward;
  const auto output =
      copy_out(step, plan, plan.output_unit, all_gather(step, plan, plan.output_unit));
  backward.issued = all_gather(step, plan, plan.model.layer);
  const double root_trained =
      plan.trained.root - plan.embedding_trained - plan.output_trained - plan.late_root_trained;
  const auto output_gradient =
      step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.output_trained);
  const auto root_gradient =
      step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * root_trained);
  backward.flowing.tag = plan.activation_gradients;
  backward.flowing.gradient =
      step.take(backward.flowing.tag, kBf16Bytes * device.tokens * device.shape.hidden_size);
  step.give(logits_gradient);
  step.give(output);
  if (plan.output_unit > 0) {
    gradients_made(step, plan, first, backward.held, {{output_gradient, plan.output_trained}},
                   backward.gradients);
  }
  torchtune_backward_pass(step, device, plan, first, forward.kept, backward);
  // The embedding's backward pass: an untied embedding's gradient made (a tied one's joined the
  // output layer's), under custom_sharded_layers in its own unit, gathered from the all-gather the
  // first layer sent out. Under LoRA nothing waits on that all-gather (the embedding's output
  // needs no gradient): its output is freed as the backward pass ends.
  step.give(backward.flowing.gradient);
  if (plan.embedding_unit > 0 && plan.embedding_trained > 0) {
    const auto embedding = copy_out(step, plan, plan.embedding_unit, backward.issued);
    backward.issued = CachingAllocator::kNothing;
    const auto embedding_gradient =
        step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.embedding_trained);
    step.give(embedding);
    gradients_made(step, plan, first, backward.held, {{embedding_gradient, plan.embedding_trained}},
                   backward.gradients);
  }
  const auto late_gradient =
      step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.late_root_trained);
  // The root's post_backward, at the backward pass's end: resharded, then reduce-scattered.
  step.give(forward.root);
  gradients_made(step, plan, first, backward.held,
                 {{root_gradient, root_trained}, {late_gradient, plan.late_root_trained}},
                 backward.gradients);
  step.give(backward.held.reduce_scatter);
  step.give(backward.issued);
  step.mark("backward", 0);
  torchtune_optimizer_step(step, device, plan, first, backward.gradients);
}

}  // namespace

// torchtune's recipes (v0.6.1: recipes/full_finetune_single_device.py,
// lora_finetune_single_device.py, and their _distributed.py twins): the model in the config's
// dtype, one block a layer and one for the rest, under FSDP2 each 1/d of its whole (every layer a
// unit, gathered for its forward pass and again for its backward pass, its gradients
// reduce-scattered as that ends; the root unit gathered for the whole step); each micro-batch's
// forward pass (under activation checkpointing each layer keeps its input, and with activation
// offloading all but the layers in flight go to the host), the loss, and the backward pass, which
// makes each trained parameter's gradient as it reaches its layer; AdamW's state made by the first
// optimizer step (lazily, torch.optim's _init_group), and the gradients freed after each step
// (optimizer.zero_grad(set_to_none=True)), or, under optimizer_in_bwd, each stepped and freed by
// its parameter's post-accumulate-grad hook.
void torchtune_step(Step& step, const StepDevice& device) {
  const bool fsdp = device.setup.layout.zero_stage >= 3;
  const ModelWeights model = load_model(step, device, fsdp ? device.zero_shards : 1);
  const TorchtunePlan plan = torchtune_plan(step, device, model);
  // The warm-up reaches the cache's steady state, as Megatron-LM's replay.
  replay_after_warm_up(step, [&](bool first) { torchtune_micro_batch(step, device, plan, first); });
}

}  // namespace trainmem::replay
