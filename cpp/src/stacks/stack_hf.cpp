// transformers' Trainer with PEFT and bitsandbytes, replayed (stack_frameworks.hpp): the order in
// which it allocates and frees in one training step, with the sources docs/formulas.md quotes.
#include <vector>

#include "stacks/stack_frameworks.hpp"

namespace trainmem::replay {

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
// pass; each layer's adapters' gradients made whole, then reduce-scattered into their shard.
void hf_step(Step& step, const StepDevice& device) {
  const Breakdown& bytes = device.bytes;
  const TrainingSetup& setup = device.setup;
  const double layers = device.layers_per_stage;
  const bool fsdp = setup.layout.zero_stage >= 3;
  const double shards = fsdp ? device.zero_shards : 1;
  // Each device holds 1/shards of each layer and of the rest.
  const ModelWeights model = load_model(step, device, shards);
  const double layer_whole = model.layer;
  const double root_whole = model.root;
  // Per trained parameter on this device (a shard's share under FSDP).
  const Trained counts = trained_parameters(device);
  const double root_trained = counts.root;
  const double trained = counts.all;
  const double state_bytes = counts.state_bytes;
  const double gradient_bytes = counts.gradient_bytes;
  std::size_t gathered = 0;
  if (fsdp) {
    gathered = step.term("fsdp-gathered-units", "Gathered units (FSDP)",
                         "torch/distributed/fsdp/_flat_param.py, FlatParamHandle.unshard: a "
                         "unit's flat parameter all-gathered whole; the root unit for the step, "
                         "a layer for its forward pass and, with the next one prefetched, its "
                         "backward pass");
  }
  if (num_devices(setup.layout) > 1 && !fsdp) {
    const std::size_t buckets = step.term(
        "ddp-gradient-buckets", "DDP's gradient buckets",
        "torch/nn/parallel/distributed.py (Reducer): every trained parameter's gradient copied "
        "into a bucket for its all-reduce, the buckets made with the model's wrapping "
        "(gradient_as_bucket_view off, accelerate's default)");
    step.take(buckets, gradient_bytes * trained);
  }
  // AdamW's foreach step: exp_avg_sq_sqrt, the second moments' size (bitsandbytes' optimisers,
  // 8-bit or paged, step each parameter in one kernel: none).
  const double step_temporary = setup.optimizer == Optimizer::kAdam && !setup.paged_optimizer
                                    ? state_bytes / kAdamMomentsPerParameter * trained
                                    : 0;
  const std::size_t temporary =
      step.term("adamw-foreach-temporary", "AdamW's step temporary",
                "torch/optim/adam.py, _multi_tensor_adam (transformers' adamw_torch, foreach): "
                "exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), the second moments' size, "
                "while the parameters are stepped");
  Flowing flowing;
  flowing.tag = step.term("hf-activation-gradients", "Activation gradients",
                          "autograd's backward pass: each operation's input gradient, the size of "
                          "the tensor it saved, and the output layer's input gradient");
  const double h = device.shape.hidden_size;
  // Loaded in FP32 under bf16 autocast (bf16-mixed, full training): autocast caches the BF16
  // copy of each weight that needs a gradient until the model's forward pass returns, and
  // autograd saves each copy for its layer's input gradient, unless the layer is rebuilt
  // (gradient checkpointing), which casts its own again. Under prepare_model_for_kbit_training
  // the output layer's FP32 weight is frozen: autocast casts it afresh each forward pass (a
  // frozen weight's cast is not cached), and autograd saves that copy too.
  const bool mixed = setup.precision == Precision::kBf16Mixed;
  const bool rebuilt = setup.recompute == Recompute::kFull;
  const double layer_copy =
      mixed ? kBf16Bytes * (device.layer_parameters - device.counts.norms_per_layer) : 0;
  const double output_copy =
      (setup.kbit_prep || mixed) && device.output_layer && device.logit_count > 0
          ? kBf16Bytes * static_cast<double>(device.shape.vocab_size) * h
          : 0;
  const std::size_t cast = step.term(
      "autocast-weight-copies", "Autocast's BF16 weight copies",
      "torch.autocast's cached_cast (aten/src/ATen/autocast_mode.cpp): an FP32 weight cast to "
      "BF16 for F.linear, cached to the end of the forward pass when it needs a gradient, and "
      "saved by autograd for the input's gradient");
  const auto gather = [&](double whole) { return step.take(gathered, fsdp ? whole : 0); };
  const auto micro_batch = [&](bool first) {
    Handles gradients;
    const auto root = gather(root_whole);
    std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
    Handles copies(kept.size());
    for (std::size_t index = 0; index < kept.size(); ++index) {
      const auto layer = gather(layer_whole);
      copies[index] = step.take(cast, layer_copy);
      // bitsandbytes dequantises a 4-bit weight for its matmul and frees it (MatMul4Bit).
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      kept[index] = keep_slot(step, device);
      step.give(dequantised);
      step.give(layer);
      step.mark("forward", static_cast<int>(index) + 1);
    }
    const auto output_weight = step.take(cast, output_copy);
    // Where the forward pass returns, autocast's cache is cleared: a rebuilt layer's copies were
    // saved by no one.
    const auto logits_gradient = loss_forward_and_backward(step, device, [&] {
      if (rebuilt) give_all(step, copies);
    });
    // The root unit's gradients (full training), whole under FSDP until its reduce-scatter at the
    // end of the backward pass.
    const auto root_gradient =
        step.take(tag(Term::kGradients), gradient_bytes * shards * root_trained);
    flowing.gradient = step.take(flowing.tag, kBf16Bytes * device.tokens * h);
    step.give(logits_gradient);
    step.give(output_weight);
    for (std::size_t index = kept.size(); index-- > 0;) {
      Handles in_flight;
      in_flight.push_back(gather(layer_whole));
      if (index > 0) in_flight.push_back(gather(layer_whole));  // the next one, prefetched
      // The layer's gradients, whole, reduce-scattered into their shard under FSDP.
      in_flight.push_back(
          step.take(tag(Term::kGradients),
                    fsdp ? gradient_bytes * shards * device.layer_trainable_parameters : 0));
      gradients.push_back(
          step.take(tag(Term::kGradients), gradient_bytes * device.layer_trainable_parameters));
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      // A rebuilt layer casts its weights again; a kept one's copies are freed with it.
      in_flight.push_back(step.take(cast, rebuilt ? layer_copy : 0));
      if (!rebuilt) in_flight.push_back(copies[index]);
      layer_backward(step, device, kept[index], static_cast<int>(index) + 1, &flowing);
      step.give(dequantised);
      give_all(step, in_flight);
      step.mark("backward", static_cast<int>(index) + 1);
    }
    step.give(flowing.gradient);
    step.give(root);
    if (fsdp) {
      step.give(root_gradient);
      gradients.push_back(step.take(tag(Term::kGradients), gradient_bytes * root_trained));
    } else {
      gradients.push_back(root_gradient);
    }
    step.mark("backward", 0);
    // The optimizer's step, then model.zero_grad().
    if (first) {
      for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
        step.take(tag(Term::kOptimizerStates), state_bytes * (device.layer_trainable_parameters -
                                                              device.layer_paged_parameters));
      }
      step.take(tag(Term::kOptimizerStates),
                state_bytes * (root_trained - device.root_paged_parameters));
    }
    step.give(step.take(temporary, step_temporary));
    give_all(step, gradients);
  };
  step.warming_up(true);
  micro_batch(true);
  micro_batch(false);  // the cache's steady state, as the other stacks' replays
  step.warming_up(false);
  step.mark("start", 0);
  micro_batch(false);
}

}  // namespace trainmem::replay
