// transformers' Trainer with PEFT and bitsandbytes, replayed (stack_frameworks.hpp): the order in
// which it allocates and frees in one training step, with the sources docs/formulas.md quotes.
#include "stacks/stack_hf.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "model/units.hpp"

namespace trainmem::replay {

namespace {

bool full_shard(const StepDevice& device) { return device.setup.layout.zero_stage >= 3; }

}  // namespace

double hf_shards(const StepDevice& device) { return full_shard(device) ? device.zero_shards : 1; }

HfPlan hf_plan(Step& step, const StepDevice& device, const ModelWeights& model,
               const HfPlan* sharing) {
  const auto term = [&](std::size_t HfPlan::*tag, const char* id, const char* label,
                        const char* source) {
    return sharing != nullptr ? sharing->*tag : step.term(id, label, source);
  };
  const TrainingSetup& setup = device.setup;
  HfPlan plan;
  plan.fsdp = full_shard(device);
  plan.fsdp2 = plan.fsdp && setup.fsdp_version == FsdpVersion::kFsdp2;
  plan.shards = hf_shards(device);
  plan.model = model;
  plan.trained = trained_parameters(device);
  const bool tied = device.shape.tied_embeddings && !device.value_head;
  const bool split = plan.fsdp2 && !tied && device.root_parameters > 0;
  const double tail_share =
      split ? (device.counts.output_head + device.counts.final_norm) / device.root_parameters : 1;
  plan.tail_unit = split ? model.root * tail_share : 0;
  plan.embedding_unit = split ? model.root - plan.tail_unit : 0;
  plan.step_unit = split ? 0 : model.root;
  plan.tail_trained = split ? plan.trained.root * tail_share : 0;
  plan.embedding_trained = split ? plan.trained.root - plan.tail_trained : 0;
  if (!split && device.root_parameters > 0) {
    // What runs before the layers (the token embedding where untied, learned positions, a
    // vision tower) makes its gradients last.
    const double per_parameter = plan.trained.root / device.root_parameters;
    plan.late_root_trained =
        per_parameter * (device.root_parameters - device.counts.output_head -
                         device.counts.final_norm - (tied ? device.counts.embedding : 0));
    plan.tied_embedding_trained = tied ? per_parameter * device.counts.embedding : 0;
  }
  const bool mixed = setup.precision == Precision::kBf16Mixed;
  const bool fsdp_mixed = plan.fsdp && mixed;
  plan.gathered_per_stored = fsdp_mixed ? kBf16Bytes / kFp32Bytes : 1;
  plan.unsharded_gradient_bytes =
      fsdp_mixed ? kBf16Bytes : plan.trained.gradient_bytes * plan.shards;
  if (plan.fsdp2) {
    plan.gathered = term(
        &HfPlan::gathered, "fsdp-gathered-units", "Gathered units (FSDP2)",
        "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, FSDPParamGroup.unshard: a "
        "unit all-gathered into a buffer and copied out into each parameter; a layer for its "
        "passes (the next prefetched in the backward pass), the embedding for its own, the final "
        "norm and output layer from the loss to their backward pass (accelerate v1.14's "
        "fsdp2_prepare_model, reshard_after_forward=False)");
    plan.reduce_input =
        term(&HfPlan::reduce_input, "fsdp-reduce-scatter-input", "Reduce-scatter input (BF16)",
             "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, foreach_reduce: a "
             "unit's gradients copied into one buffer in reduce_dtype (accelerate's BF16)");
  } else if (plan.fsdp) {
    plan.gathered = term(&HfPlan::gathered, "fsdp-gathered-units", "Gathered units (FSDP)",
                         "torch/distributed/fsdp/_flat_param.py, FlatParamHandle.unshard: a "
                         "unit's flat parameter all-gathered whole; the root unit for the "
                         "step, a layer for its forward pass and, with the next one "
                         "prefetched, its backward pass");
  }
  plan.ddp = num_devices(setup.layout) > 1 && !plan.fsdp;
  if (plan.ddp) {
    plan.ddp_buckets = term(
        &HfPlan::ddp_buckets, "ddp-gradient-buckets", "DDP's gradient buckets",
        "torch/nn/parallel/distributed.py (Reducer): every trained parameter's gradient copied "
        "into a bucket for its all-reduce, the buckets made with the model's wrapping "
        "(gradient_as_bucket_view off, accelerate's default)");
  }
  // AdamW's foreach step: exp_avg_sq_sqrt, the second moments' size (bitsandbytes' optimisers,
  // 8-bit or paged, step each parameter in one kernel: none).
  plan.step_temporary = setup.optimizer == Optimizer::kAdam && !setup.paged_optimizer
                            ? plan.trained.state_bytes / kAdamMomentsPerParameter * plan.trained.all
                            : 0;
  plan.temporary =
      term(&HfPlan::temporary, "adamw-foreach-temporary", "AdamW's step temporary",
           "torch/optim/adam.py, _multi_tensor_adam (transformers' adamw_torch, foreach): "
           "exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), the second moments' size, "
           "while the parameters are stepped");
  plan.activation_gradients =
      term(&HfPlan::activation_gradients, "hf-activation-gradients", "Activation gradients",
           "autograd's backward pass: each operation's input gradient, the size of "
           "the tensor it saved, and the output layer's input gradient");
  // Loaded in FP32 under bf16 autocast (bf16-mixed, full training): autocast caches the BF16
  // copy of each weight that needs a gradient until the model's forward pass returns, and
  // autograd saves each copy for its layer's input gradient, unless the layer is rebuilt
  // (gradient checkpointing), which casts its own again. Under prepare_model_for_kbit_training
  // the output layer's FP32 weight is frozen: autocast casts it afresh each forward pass (a
  // frozen weight's cast is not cached), and autograd saves that copy too. Under FSDP's mixed
  // precision the gathered weights are BF16 already: autocast casts none.
  plan.rebuilt = setup.recompute == Recompute::kFull;
  plan.retains_inputs = plan.fsdp && !plan.fsdp2 && plan.rebuilt && setup.lora_rank > 0 &&
                        setup.reentrant_checkpointing;
  plan.layer_copy = mixed && !fsdp_mixed
                        ? kBf16Bytes * (device.layer_parameters - device.counts.norms_per_layer)
                        : 0;
  // TRL's chunked loss casts the output weight itself (chunked_nll_loss). TRL 0.13-0.21's cast
  // back leaves the output layer BF16: nothing to cast.
  const bool fp32_head = setup.kbit_prep && !setup.kbit_cast_back;
  plan.output_copy = (fp32_head || (mixed && !fsdp_mixed)) && device.output_layer &&
                             device.logit_count > 0 && setup.loss != Loss::kChunkedNll
                         ? kBf16Bytes * static_cast<double>(device.shape.vocab_size) *
                               static_cast<double>(device.shape.hidden_size)
                         : 0;
  plan.cast =
      term(&HfPlan::cast, "autocast-weight-copies", "Autocast's BF16 weight copies",
           "torch.autocast's cached_cast (aten/src/ATen/autocast_mode.cpp): an FP32 weight cast to "
           "BF16 for F.linear, cached to the end of the forward pass when it needs a gradient, and "
           "saved by autograd for the input's gradient");
  return plan;
}

namespace {

// A unit gathered whole under FSDP; nothing without it.
// Under FSDP2 through its all-gather buffer, freed once copied out into the parameters.
CachingAllocator::Handle gather_unit(Step& step, const HfPlan& plan, double whole) {
  const double gathered = plan.fsdp ? whole * plan.gathered_per_stored : 0;
  const auto buffer = step.take(plan.gathered, plan.fsdp2 ? gathered : 0);
  const auto unit = step.take(plan.gathered, gathered);
  step.give(buffer);
  return unit;
}

// A unit's gradients reduce-scattered under FSDP2: copied into the reduce-scatter input (BF16),
// its shard cast into the sharded gradients (the handle).
CachingAllocator::Handle reduce_unit(Step& step, const HfPlan& plan, double trained) {
  const auto input = step.take(plan.reduce_input, kBf16Bytes * trained);
  const auto shard = step.take(tag(Term::kGradients), plan.trained.gradient_bytes * trained);
  step.give(input);
  return shard;
}

// What the forward pass leaves for the backward pass: each slot's saved tensors, and each layer's
// autocast copies.
struct HfForward {
  std::vector<Handles> kept;
  Handles copies;
  Handles retained;  // held to the backward pass's end (HfPlan::retains_inputs)
};

HfForward hf_forward_pass(Step& step, const StepDevice& device, const HfPlan& plan) {
  HfForward forward;
  forward.kept.resize(static_cast<std::size_t>(device.slots));
  forward.copies.resize(forward.kept.size());
  for (std::size_t index = 0; index < forward.kept.size(); ++index) {
    const auto layer = gather_unit(step, plan, plan.model.layer);
    forward.copies[index] = step.take(plan.cast, plan.layer_copy);
    // bitsandbytes dequantises a 4-bit weight for its matmul and frees it (MatMul4Bit).
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    forward.kept[index] = keep_slot(step, device);
    step.give(dequantised);
    step.give(layer);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return forward;
}

// The layers' backward passes, last first: the trained parameters' gradients they make (the
// handles).
Handles hf_backward_pass(Step& step, const StepDevice& device, const HfPlan& plan,
                         HfForward& forward, Flowing& flowing, VerlHeld* held) {
  const double gradient_bytes = plan.trained.gradient_bytes;
  const double unsharded_bytes = plan.unsharded_gradient_bytes;
  Handles gradients;
  for (std::size_t index = forward.kept.size(); index-- > 0;) {
    Handles in_flight;
    in_flight.push_back(gather_unit(step, plan, plan.model.layer));
    // The next one, prefetched.
    if (index > 0) in_flight.push_back(gather_unit(step, plan, plan.model.layer));
    // The layer's gradients, whole, reduce-scattered into their shard under FSDP.
    in_flight.push_back(
        step.take(tag(Term::kGradients),
                  plan.fsdp ? unsharded_bytes * device.layer_trainable_parameters : 0));
    if (held != nullptr && index < held->layer_gradients.size()) {
      // The earlier micro-batches' gradient, which this one's is added into in place, freed with
      // it at the reduce-scatter.
      in_flight.push_back(held->layer_gradients[index]);
    }
    // verl's MixedPrecision reduces in FP32 (reduce_dtype): _post_backward_hook casts the unit's
    // gradient whole (flat_param.grad.to(reduce_dtype)) before the reduce-scatter.
    in_flight.push_back(
        step.take(tag(Term::kGradients),
                  plan.fsdp && verl(device) ? kFp32Bytes * device.layer_trainable_parameters : 0));
    gradients.push_back(plan.fsdp2 ? reduce_unit(step, plan, device.layer_trainable_parameters)
                                   : step.take(tag(Term::kGradients),
                                               gradient_bytes * device.layer_trainable_parameters));
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    // A rebuilt layer casts its weights again; a kept one's copies are freed with it.
    in_flight.push_back(step.take(plan.cast, plan.rebuilt ? plan.layer_copy : 0));
    if (!plan.rebuilt) in_flight.push_back(forward.copies[index]);
    if (plan.retains_inputs) {
      // The layer's checkpointed input, held by its leaf; and, but at the last layer, the
      // gradient coming in, the next layer's input gradient, held by that layer's leaf.
      Handles& input = forward.kept[index];
      forward.retained.insert(forward.retained.end(), input.begin(), input.end());
      input.clear();
      if (index + 1 < forward.kept.size()) {
        forward.retained.push_back(flowing.gradient);
        flowing.gradient = step.take(flowing.tag, 0);
      }
    }
    layer_backward(step, device, forward.kept[index], static_cast<int>(index) + 1, &flowing);
    step.give(dequantised);
    give_all(step, in_flight);
    step.mark("backward", static_cast<int>(index) + 1);
  }
  return gradients;
}

// The root unit's gradients as the optimizer steps them: under FSDP, reduce-scattered into their
// shard.
CachingAllocator::Handle hf_root_reduce_scatter(Step& step, const StepDevice& device,
                                                const HfPlan& plan,
                                                CachingAllocator::Handle root_gradient,
                                                VerlHeld* held) {
  if (!plan.fsdp) return root_gradient;
  // verl's: the FP32 cast for its reduce (reduce_dtype), and the earlier micro-batches' gradient.
  // The unsharded gradient is held through the reduce (_post_backward_hook's record_stream), with
  // verl's FP32 cast of it beside.
  const auto cast =
      step.take(tag(Term::kGradients), verl(device) ? kFp32Bytes * plan.trained.root : 0);
  const auto sharded =
      step.take(tag(Term::kGradients), plan.trained.gradient_bytes * plan.trained.root);
  step.give(root_gradient);
  step.give(cast);
  if (held != nullptr) {
    step.give(held->root_gradient);
    held->root_gradient = CachingAllocator::kNothing;
  }
  return sharded;
}

// The optimizer's step (AdamW's state made by the first), then model.zero_grad(). Under verl's
// optimizer offload the state's blocks are kept in `offloaded`, which moves them to the host.
void hf_optimizer_step(Step& step, const StepDevice& device, const HfPlan& plan, bool first,
                       Handles& gradients, VerlHeld* offloaded) {
  const double state_bytes = plan.trained.state_bytes;
  if (first) {
    const auto make = [&](double bytes) {
      const auto handle = step.take(tag(Term::kOptimizerStates), bytes);
      if (offloaded == nullptr) return;
      offloaded->states.push_back(handle);
      offloaded->state_sizes.push_back(bytes);
    };
    for (int layer = 0; layer < static_cast<int>(device.layers_per_stage); ++layer) {
      make(state_bytes * (device.layer_trainable_parameters - device.layer_paged_parameters));
    }
    make(state_bytes * (plan.trained.root - device.root_paged_parameters));
  }
  step.give(step.take(plan.temporary, plan.step_temporary));
  give_all(step, gradients);
}

// A log-probability pass of TRL's (grpo_trainer.py, _get_per_token_logps_and_entropies under
// torch.no_grad), a micro-batch of per_device_train_batch_size at a time: the forward pass, each
// layer's work freed before the next runs, counted as what the layer would keep and make with
// gradients (an upper bound: autograd keeps nothing here); autocast's cast weights cached to the
// forward pass's end, as cached_cast caches a weight that requires a gradient under no_grad too
// (aten/src/ATen/autocast_mode.cpp); and the logits (grpo_log_probabilities). Each micro-batch
// alike, one is replayed: where there are more than one, the one before's logits (the loop's
// `outputs` and `logits`, rebound only once the next forward pass returns) are held through it,
// the FP32 copy's size (the BF16 logits' under --no-autocast).
// DPO's reference forward pass inside the loss (dpo_trainer.py, _compute_loss: ref_model(...) under
// no_grad with gradient checkpointing disabled; under LoRA the policy, its adapters disabled), as
// hf_log_probability_pass runs a layer: its work freed before the next, counted as what the layer
// would keep and make with gradients (an upper bound), and autocast's cast weights cached to the
// forward pass's end (the reference model is loaded as the policy is, FP32 unless
// model_init_kwargs say otherwise, and its parameters require gradients). Its units are never
// gathered: DPO's reference is modelled on one device and under DDP (check_dpo_loss). The
// reference is counted at the policy's dtype, as TRL loads it from the same path with the same
// model_init_kwargs (a model object handed to DPOTrainer has its reference loaded by
// model_init_kwargs alone, FP32 by default, whatever the object's dtype). Returns the casts.
Handles hf_reference_layers(Step& step, const StepDevice& device, const HfPlan& plan) {
  Handles copies;
  for (int slot = 0; slot < device.slots; ++slot) {
    copies.push_back(step.take(plan.cast, plan.layer_copy));
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    step.give(step.take(tag(Term::kActivations), device.kept_per_slot + device.recompute_working));
    step.give(dequantised);
  }
  copies.push_back(step.take(plan.cast, plan.output_copy));
  return copies;
}

}  // namespace

void hf_log_probability_pass(Step& step, const StepDevice& device, const HfPlan& plan,
                             CachingAllocator::Handle* kept_root, bool from_host) {
  // A unit gathered; `from_host` (verl's reference, CPUOffload(offload_params=True)) first copies
  // its FP32 shard to the device for the BF16 cast (FlatParamHandle._use_low_precision_shard).
  const auto gather = [&](double whole) {
    const auto copy = step.take(plan.gathered, from_host ? whole / plan.shards : 0);
    const auto unit = gather_unit(step, plan, whole);
    step.give(copy);
    return unit;
  };
  const bool logits = device.logit_count > 0 && device.setup.loss == Loss::kGrpo;
  const auto before =
      step.take(tag(Term::kLogits),
                logits && !verl(device) && device.generation_micro_batches > 1
                    ? (device.setup.no_autocast ? kBf16Bytes : kFp32Bytes) * device.logit_count
                    : 0);
  // The root unit, gathered for the pass (under verl left gathered after it, `kept_root`).
  const bool gather_root = kept_root == nullptr || *kept_root == CachingAllocator::kNothing;
  const auto root = gather_root ? gather(plan.step_unit) : *kept_root;
  if (kept_root != nullptr) *kept_root = root;
  step.give(gather(plan.embedding_unit));
  Handles copies;
  for (int slot = 0; slot < device.slots; ++slot) {
    const auto layer = gather(plan.model.layer);
    copies.push_back(step.take(plan.cast, plan.layer_copy));
    const auto dequantised =
        step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
    step.give(step.take(tag(Term::kActivations),
                        device.log_prob_scale * (device.kept_per_slot + device.recompute_working)));
    step.give(dequantised);
    step.give(layer);
  }
  const auto tail = gather(plan.tail_unit);
  copies.push_back(step.take(plan.cast, plan.output_copy));
  if (logits && verl(device)) {
    verl_log_probabilities(step, device, [&] { give_all(step, copies); });
  } else if (logits) {
    grpo_log_probabilities(
        step, device, [&] { give_all(step, copies); }, [&] { step.give(before); });
  } else {
    give_all(step, copies);
  }
  step.give(tail);
  if (kept_root == nullptr) step.give(root);
}

void hf_update(Step& step, const StepDevice& device, const HfPlan& plan, bool first, VerlHeld& held,
               bool offloads_states) {
  // verl's train mode enters: what it offloads loaded (update_actor's EngineTrainModeCtx).
  load_to_device(step, Term::kWeights, held.weight_sizes, held.weights);
  load_to_device(step, Term::kOptimizerStates, held.state_sizes, held.states);
  VerlHeld* const accumulated = verl(device) ? &held : nullptr;
  if (accumulated != nullptr && plan.fsdp && device.generation_micro_batches > 1) {
    held.layer_gradients.clear();
    for (int slot = 0; slot < device.slots; ++slot) {
      held.layer_gradients.push_back(
          step.take(tag(Term::kGradients),
                    plan.unsharded_gradient_bytes * device.layer_trainable_parameters));
    }
    held.root_gradient =
        step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.trained.root);
  }
  // The root unit: under verl still gathered from the log-probability pass.
  const auto root = held.actor_root != CachingAllocator::kNothing
                        ? held.actor_root
                        : gather_unit(step, plan, plan.step_unit);
  held.actor_root = CachingAllocator::kNothing;
  step.give(gather_unit(step, plan, plan.embedding_unit));  // FSDP2: the embedding's forward
  HfForward forward = hf_forward_pass(step, device, plan);
  const auto tail = gather_unit(step, plan, plan.tail_unit);
  const auto output_weight = step.take(plan.cast, plan.output_copy);
  // Where the forward pass returns, autocast's cache is cleared: a rebuilt layer's copies were
  // saved by no one.
  const auto logits_gradient = loss_forward_and_backward(
      step, device,
      [&] {
        if (plan.rebuilt) give_all(step, forward.copies);
      },
      [&] { return hf_reference_layers(step, device, plan); });
  // The root unit's gradients (full training) made at the output layer: the output layer's and the
  // final norm's (and a tied embedding's), whole under FSDP until its reduce-scatter at the end of
  // the backward pass. What runs before the layers makes its own at the end (late_root_trained).
  auto root_gradient =
      step.take(tag(Term::kGradients),
                plan.unsharded_gradient_bytes *
                    (plan.trained.root - plan.embedding_trained - plan.late_root_trained));
  Flowing flowing;
  flowing.tag = plan.activation_gradients;
  flowing.gradient = step.take(flowing.tag, kBf16Bytes * device.tokens * device.shape.hidden_size);
  step.give(logits_gradient);
  step.give(output_weight);
  Handles gradients;
  if (plan.tail_unit > 0) {
    // FSDP2's [final norm, output layer] unit: reduced and resharded as its backward ends.
    gradients.push_back(reduce_unit(step, plan, plan.tail_trained));
    step.give(root_gradient);
    step.give(tail);
  }
  Handles layers = hf_backward_pass(step, device, plan, forward, flowing, accumulated);
  held.layer_gradients.clear();
  gradients.insert(gradients.end(), layers.begin(), layers.end());
  step.give(flowing.gradient);
  if (plan.embedding_unit > 0) {
    const auto embedding = gather_unit(step, plan, plan.embedding_unit);
    const auto unsharded =
        step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.embedding_trained);
    gradients.push_back(reduce_unit(step, plan, plan.embedding_trained));
    step.give(unsharded);
    step.give(embedding);
  }
  if (!plan.fsdp2) {
    // The embedding's backward pass, the last: the gradients of what runs before the layers; a
    // tied embedding's own, added in place into the output layer's (autograd's
    // InputBuffer::accumulate, old.add_(new)) and freed.
    const auto late =
        step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.late_root_trained);
    step.give(step.take(tag(Term::kGradients),
                        plan.unsharded_gradient_bytes * plan.tied_embedding_trained));
    if (plan.fsdp) {
      // FSDP1's parameters are views of the unit's flat parameter (torch.split in
      // FlatParamHandle._get_unflat_views, as_params=False in the forward and backward passes):
      // their gradients wait in the split's backward node until the last arrives, which makes
      // the flat parameter's gradient whole (split_with_sizes_backward's cat) and then frees them.
      const auto whole =
          step.take(tag(Term::kGradients), plan.unsharded_gradient_bytes * plan.trained.root);
      step.give(root_gradient);
      step.give(late);
      root_gradient = whole;
    } else {
      gradients.push_back(late);
    }
  }
  step.give(root);
  give_all(step, forward.retained);  // _finalize_params: the hooks removed
  if (plan.tail_unit == 0) {
    gradients.push_back(
        plan.fsdp2 ? reduce_unit(step, plan, plan.trained.root)
                   : hf_root_reduce_scatter(step, device, plan, root_gradient, accumulated));
    if (plan.fsdp2) step.give(root_gradient);
  }
  step.mark("backward", 0);
  hf_optimizer_step(step, device, plan, first, gradients, offloads_states ? &held : nullptr);
  // verl's train mode exits (FSDPEngine.to): the actor's shards to the host, the cache emptied,
  // then the optimizer's state, whose offload empties no cache (offload_fsdp_optimizer): it stays
  // reserved until the next weight sync empties it.
  offload_to_host(step, held.weights);
  give_all(step, held.states);
}

namespace {

// One micro-batch: RL's phases before it (the critic's with them), then its update.
void hf_micro_batch(Step& step, const StepDevice& device, const HfPlan& plan, bool first,
                    VerlHeld& held, Critic* critic) {
  hf_rollout_phases(step, device, plan, held);
  if (critic != nullptr) critic_phases(step, *critic, first);
  hf_update(step, device, plan, first, held, verl_offloads_states(device));
}

}  // namespace

// transformers' Trainer (trainer.py, _inner_training_loop and training_step; TRL's SFTTrainer
// inherits them) under accelerate, on one device or under DDP: the model as loaded, one block a
// layer and one for the rest (PEFT's adapters in FP32 beside each layer's base); DDP's gradient
// buckets, made when accelerate wraps the model (torch/nn/parallel/distributed.py, Reducer:
// gradient_as_bucket_view off, so each trained parameter's gradient has a bucket copy); each
// micro-batch's forward pass, the loss (transformers' ForCausalLMLoss; accelerate's FP32 copy of
// the returned logits, convert_outputs_to_fp32, made after the loss's forward peak and freed
// before backward, stays under the loss's backward peak and is not replayed), and the backward
// pass, which makes each trained parameter's gradient as it reaches its layer; then
// torch.optim.AdamW's step (adamw_torch: foreach, its state made by the first step, and
// _multi_tensor_adam's exp_avg_sq_sqrt, one temporary the size of the second moments), and
// model.zero_grad(), which frees the gradients (set_to_none). A paged optimiser's state of the
// larger parameters is outside the allocator (stack.cpp); the rest is taken here.
//
// Under ZeRO 3, accelerate's FSDP (FSDP1, FULL_SHARD, transformer-based wrapping with PEFT's
// policy, which makes each adapter a unit of its own; torch/distributed/fsdp): each unit's flat
// parameter sharded over the d devices; a layer gathered whole for its forward pass and freed after
// it (reshard after forward; limit_all_gathers keeps one in flight), and in the backward pass with
// the next one prefetched (BACKWARD_PRE); the root unit (the embedding, the final norm and the
// output layer) gathered for the whole step, as FSDP1 leaves the root unsharded after the forward
// pass; each layer's adapters' gradients made whole, then reduce-scattered into their shard. Under
// bf16 mixed precision (bf16-mixed, full training) accelerate upcasts each trained flat parameter
// to FP32 (Accelerator.prepare_model, "Upcasted low precision parameters … because mixed precision
// turned on in FSDP"), and FSDP's MixedPrecision gathers the units and makes their gradients in
// BF16, reduce-scattered into the FP32 shards.
//
// Under RL post-training TRL's GRPOTrainer makes its colocated vLLM (trl/generation/
// vllm_generation.py, VLLMGeneration._init_vllm, vllm_mode "colocate") once the model is on the
// device: its pools, total memory × gpu_memory_utilization (vllm/v1/worker/gpu_worker.py,
// Worker.init_device; determine_available_memory gives the KV cache what the weights and the
// profiled pass leave), tensors of the trainer's own caching allocator, held through every step
// unless it sleeps; before each update, the generation and the log-probabilities
// (hf_rollout_phases).
void hf_step(Step& step, const StepDevice& device) {
  // verl's critic, made and loaded before the actor.
  ModelWeights critic_model;
  std::optional<Critic> critic = load_critic(step, device, critic_model);
  VerlHeld held;
  const ModelWeights model = load_model(step, device, hf_shards(device),
                                        verl_offloads_weights(device) ? &held.weights : nullptr);
  verl_offload_loaded(step, device, model, held);
  const std::size_t engine = rollout_engine(step, device);
  trl_reference_model(step, device);
  HfPlan plan = hf_plan(step, device, model);
  plan.rollout = engine;
  if (verl(device)) plan.weight_sync = verl_weight_sync_term(step);
  if (plan.ddp) {
    step.take(plan.ddp_buckets, plan.trained.gradient_bytes * plan.trained.all);
  }
  // The warm-up reaches the cache's steady state, as the other stacks' replays.
  if (critic) critic->plan = hf_plan(step, critic->update, critic_model, &plan);
  replay_after_warm_up(step, [&](bool first) {
    hf_micro_batch(step, device, plan, first, held, critic ? &*critic : nullptr);
  });
}

}  // namespace trainmem::replay
