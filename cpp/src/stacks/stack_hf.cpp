// transformers' Trainer with PEFT and bitsandbytes, replayed (stack_frameworks.hpp): the order in
// which it allocates and frees in one training step, with the sources docs/formulas.md quotes.
#include <algorithm>
#include <vector>

#include "stacks/stack_frameworks.hpp"
#include "trainmem/fine_tuning.hpp"

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
// model.zero_grad(), which frees the gradients (set_to_none).
void hf_step(Step& step, const StepDevice& device) {
  const Breakdown& bytes = device.bytes;
  const TrainingSetup& setup = device.setup;
  const double layers = device.layers_per_stage;
  const bool lora = setup.lora_rank > 0;
  const double layer_weights =
      lora || device.parameters <= 0
          ? device.layer_weight_bytes
          : bytes[Term::kWeights] / device.parameters * device.layer_parameters;
  const double root_weights = std::max(0.0, bytes[Term::kWeights] - layers * layer_weights);
  for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
    step.take(tag(Term::kWeights), layer_weights);
  }
  step.take(tag(Term::kWeights), root_weights);
  const double root_trained = lora ? 0 : device.root_parameters;
  const double trained = layers * device.layer_trainable_parameters + root_trained;
  const double state_bytes = trained > 0 ? bytes[Term::kOptimizerStates] / trained : 0;
  const double gradient_bytes = trained > 0 ? bytes[Term::kGradients] / trained : 0;
  if (num_devices(setup.layout) > 1) {
    const std::size_t buckets = step.term(
        "ddp-gradient-buckets", "DDP's gradient buckets",
        "torch/nn/parallel/distributed.py (Reducer): every trained parameter's gradient copied "
        "into a bucket for its all-reduce, the buckets made with the model's wrapping "
        "(gradient_as_bucket_view off, accelerate's default)");
    step.take(buckets, gradient_bytes * trained);
  }
  // AdamW's foreach step: exp_avg_sq_sqrt, the second moments' size.
  const double step_temporary =
      setup.optimizer == Optimizer::kAdam ? state_bytes / kAdamMomentsPerParameter * trained : 0;
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
  const auto micro_batch = [&](bool first) {
    Handles gradients;
    std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
    for (std::size_t index = 0; index < kept.size(); ++index) {
      // bitsandbytes dequantises a 4-bit weight for its matmul and frees it (MatMul4Bit).
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      kept[index] = keep_slot(step, device);
      step.give(dequantised);
      step.mark("forward", static_cast<int>(index) + 1);
    }
    const auto logits_gradient = loss_forward_and_backward(step, device);
    const auto root_gradient = step.take(tag(Term::kGradients), gradient_bytes * root_trained);
    flowing.gradient = step.take(flowing.tag, kBf16Bytes * device.tokens * h);
    step.give(logits_gradient);
    for (std::size_t index = kept.size(); index-- > 0;) {
      gradients.push_back(
          step.take(tag(Term::kGradients), gradient_bytes * device.layer_trainable_parameters));
      const auto dequantised = step.take(tag(Term::kDequantization), bytes[Term::kDequantization]);
      layer_backward(step, device, kept[index], static_cast<int>(index) + 1, &flowing);
      step.give(dequantised);
      step.mark("backward", static_cast<int>(index) + 1);
    }
    step.give(flowing.gradient);
    gradients.push_back(root_gradient);
    step.mark("backward", 0);
    // The optimizer's step, then model.zero_grad().
    if (first) {
      for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
        step.take(tag(Term::kOptimizerStates), state_bytes * device.layer_trainable_parameters);
      }
      step.take(tag(Term::kOptimizerStates), state_bytes * root_trained);
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
