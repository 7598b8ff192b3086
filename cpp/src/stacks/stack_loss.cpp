// The loss's allocations, each loss as its framework's code makes them (stack_step.hpp declares
// the shared ones), and the log-probability passes' logits: split from stack_step.cpp.
#include <algorithm>
#include <utility>

#include "stacks/stack_rows.hpp"
#include "stacks/stack_step.hpp"

namespace trainmem::replay {

namespace {

// Where the model's forward pass returns, in the losses that reach it before their backward pass.
void forward_returned(const std::function<void()>& forward_done) {
  if (forward_done) forward_done();
}

// Liger's fused linear cross-entropy: grad_input and loss_1d for the whole step's tokens, one
// chunk's logits at a time; grad_input is the hidden state's gradient, which the final norm's
// backward frees.
CachingAllocator::Handle liger_fused_linear_loss(Step& step, const StepDevice& device,
                                                 const std::function<void()>& forward_done) {
  const double h = device.shape.hidden_size;
  const double vocabulary = device.shape.vocab_size;
  const double tokens = device.loss_tokens;
  const auto hidden_gradient = step.take(tag(Term::kLogits), kBf16Bytes * tokens * h);
  const auto loss = step.take(tag(Term::kLogits), kFp32Bytes * tokens);
  const double chunk = fused_linear_chunk_tokens(tokens, vocabulary, h);
  step.give(step.take(tag(Term::kLogits), kBf16Bytes * chunk * vocabulary));
  step.give(loss);
  forward_returned(forward_done);
  return hidden_gradient;
}

// TRL's chunked_nll (trl/trainer/sft_trainer.py, _chunked_cross_entropy_loss, under bf16
// autocast): the hidden states sorted into a BF16 copy (hidden[order]), held to the end of the
// loss's backward pass; then one chunk's forward pass (the chunks are alike and each frees what it
// made, torch.utils.checkpoint keeping only its inputs): the output weight's casts for the matmul,
// the BF16 logits, the FP32 log-softmax (its upcast input freed), exp and their product for the
// entropy. The forward pass returns (autocast's cached cast freed). One chunk's backward pass: the
// chunk recomputed, keeping the weight's saved cast, the log-softmax and exp; the log-softmax's two
// FP32 gradients, the logits' BF16 gradient, the hidden states' gradient (a whole slice's zeros
// added into the buffer); under full training the weight's BF16 gradient cast back to its dtype,
// which becomes the output layer's gradient (the stack's). Returns the hidden states' gradient.
CachingAllocator::Handle chunked_nll_loss(Step& step, const StepDevice& device,
                                          const std::function<void()>& forward_done) {
  const double h = device.shape.hidden_size;
  const double vocabulary = device.shape.vocab_size;
  const double tokens = device.loss_tokens;
  const double chunk = std::min(kChunkedNllChunkTokens, tokens) * vocabulary;
  const double weight = vocabulary * h;
  const ChunkedNllWeights w = chunked_nll_weights_of(device.setup);
  const std::size_t logits = tag(Term::kLogits);
  const auto sorted = step.take(logits, kBf16Bytes * tokens * h);
  const auto held = step.take(logits, w.held * weight);
  // A chunk's pass: the weight's FP32 copy where .float() makes one, and its BF16 cast unless
  // autocast's cache holds it (`held`, and `recast` below), which the matmul saves; the logits,
  // the log-softmax and exp (kept by the recomputation for the backward pass), and the entropy's
  // product, freed at once.
  const auto chunk_pass = [&](bool keeps) {
    Handles made;
    const auto copy = step.take(logits, (w.matmul - kBf16Bytes) * weight);
    const auto cast = step.take(logits, (w.held > 0 ? 0 : kBf16Bytes) * weight);
    const auto out = step.take(logits, kBf16Bytes * chunk);
    step.give(copy);
    const auto upcast = step.take(logits, kFp32Bytes * chunk);
    const auto log_p = step.take(logits, kFp32Bytes * chunk);
    step.give(upcast);
    const auto exp = step.take(logits, kFp32Bytes * chunk);
    step.give(step.take(logits, kFp32Bytes * chunk));
    step.give(out);
    for (const auto handle : {cast, log_p, exp}) {
      if (keeps) {
        made.push_back(handle);
      } else {
        step.give(handle);
      }
    }
    return made;
  };
  chunk_pass(false);
  step.give(held);
  forward_returned(forward_done);
  const auto hidden_gradient = step.take(logits, kBf16Bytes * tokens * h);
  Handles kept = chunk_pass(true);
  // The cached cast of a trained FP32 weight, made again by the recomputation's autocast.
  const auto recast = step.take(logits, w.held * weight);
  const auto log_p_gradient = step.take(logits, kFp32Bytes * chunk);
  const auto input_gradient = step.take(logits, kFp32Bytes * chunk);
  step.give(log_p_gradient);
  const auto logits_gradient = step.take(logits, kBf16Bytes * chunk);
  step.give(input_gradient);
  const auto slice_gradient = step.take(logits, kBf16Bytes * tokens * h);
  if (w.gradient > w.saved) {
    const auto bf16_gradient = step.take(logits, kBf16Bytes * weight);
    step.give(kept.front());
    step.give(recast);
    const auto fp32_gradient = step.take(logits, kFp32Bytes * weight);
    step.give(bf16_gradient);
    // A BF16 weight's gradient cast back by .float()'s backward, the FP32 one alive.
    const bool bf16_stored = w.matmul > kBf16Bytes;
    step.give(step.take(logits, bf16_stored ? kBf16Bytes * weight : 0));
    step.give(fp32_gradient);
  } else {
    step.give(kept.front());
    step.give(recast);
  }
  step.give(slice_gradient);
  step.give(logits_gradient);
  for (std::size_t index = 1; index < kept.size(); ++index) step.give(kept[index]);
  step.give(sorted);
  return hidden_gradient;
}

// Cut Cross-Entropy (axolotl's plugin; cut_cross_entropy/cce.py, LinearCrossEntropyFunction):
// the forward pass keeps the log-sum-exp and the valid tokens' indices (12 B a token) and each
// entry's average logit (4 B); the backward pass orders the vocabulary (4 B an entry) and makes
// the hidden states' BF16 gradient, which the final norm's backward frees, and under full training
// the output weight's (the stack's gradient). Returns the hidden states' gradient.
CachingAllocator::Handle cut_cross_entropy_loss(Step& step, const StepDevice& device,
                                                const std::function<void()>& forward_done) {
  const double vocabulary = device.shape.vocab_size;
  const double tokens = device.loss_tokens;
  const std::size_t logits = tag(Term::kLogits);
  const auto kept =
      step.take(logits, kCutCrossEntropyBytesPerToken * tokens + kFp32Bytes * vocabulary);
  forward_returned(forward_done);
  const auto order = step.take(logits, (kCutCrossEntropyBytesPerVocab - kFp32Bytes) * vocabulary);
  const auto hidden_gradient = step.take(logits, kBf16Bytes * tokens * device.shape.hidden_size);
  step.give(order);
  step.give(kept);
  return hidden_gradient;
}

// torchtune's compiled CEWithChunkedOutputLoss (compute_cross_entropy compiled, training/
// _compile.py compile_loss): the model's BF16 chunks, which each chunk's fused kernel keeps with
// its tokens' max and log-sum-exp (FP32); the backward pass, chunk by chunk, last first, writes
// each chunk's BF16 gradient, which its output projection reads, and frees the chunk.
CachingAllocator::Handle compiled_chunked_loss(Step& step, const StepDevice& device) {
  const int chunks = device.setup.loss_chunks;
  const double part = device.logit_count / chunks;
  Handles bf16(static_cast<std::size_t>(chunks));
  Handles rows(static_cast<std::size_t>(chunks));
  for (int chunk = 0; chunk < chunks; ++chunk) {
    bf16[static_cast<std::size_t>(chunk)] = step.take(tag(Term::kLogits), kBf16Bytes * part);
  }
  for (int chunk = 0; chunk < chunks; ++chunk) {
    rows[static_cast<std::size_t>(chunk)] =
        step.take(tag(Term::kLogits), kCompiledLossBytesPerToken * device.loss_tokens / chunks);
  }
  CachingAllocator::Handle gradient = step.take(tag(Term::kLogits), 0);
  for (int chunk = chunks; chunk-- > 0;) {
    const auto chunk_gradient = step.take(tag(Term::kLogits), kBf16Bytes * part);
    step.give(rows[static_cast<std::size_t>(chunk)]);
    step.give(bf16[static_cast<std::size_t>(chunk)]);
    step.give(gradient);  // the previous chunk's, through the output projection
    gradient = chunk_gradient;
  }
  return gradient;
}

// torchtune's CEWithChunkedOutputLoss: the BF16 chunks; each upcast, its log-softmax saved, the
// copy freed; the chunks freed (del logits); the backward pass chunk by chunk, last first.
CachingAllocator::Handle chunked_loss(Step& step, const StepDevice& device) {
  const int chunks = device.setup.loss_chunks;
  const double part = device.logit_count / chunks;
  Handles bf16(static_cast<std::size_t>(chunks));
  Handles saved(static_cast<std::size_t>(chunks));
  for (int chunk = 0; chunk < chunks; ++chunk) {
    bf16[static_cast<std::size_t>(chunk)] = step.take(tag(Term::kLogits), kBf16Bytes * part);
  }
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const auto upcast = step.take(tag(Term::kLogits), kFp32Bytes * part);
    saved[static_cast<std::size_t>(chunk)] = step.take(tag(Term::kLogits), kFp32Bytes * part);
    step.give(upcast);
  }
  give_all(step, bf16);
  CachingAllocator::Handle gradient = step.take(tag(Term::kLogits), 0);
  for (int chunk = chunks; chunk-- > 0;) {
    const auto output_gradient = step.take(tag(Term::kLogits), kFp32Bytes * part);
    const auto input_gradient = step.take(tag(Term::kLogits), kFp32Bytes * part);
    step.give(output_gradient);
    step.give(saved[static_cast<std::size_t>(chunk)]);
    step.give(gradient);  // the previous chunk's, through the output layer
    gradient = step.take(tag(Term::kLogits), kBf16Bytes * part);
    step.give(input_gradient);
  }
  return gradient;
}

// Transformer Engine's fused loss: the BF16 logits alone, overwritten by their gradient. The
// kernel writes the gradient over the logits and saves them; the backward pass scales it in place
// and hands the same tensor to the output layer.
CachingAllocator::Handle te_fused_loss(Step& step, const StepDevice& device,
                                       const std::function<void()>& forward_done) {
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * device.logit_count);
  forward_returned(forward_done);
  return logits;
}

// Megatron-LM's vocab-parallel cross-entropy (cross_entropy.py), unfused or fused natively
// (fused_cross_entropy.py): the BF16 logits, their FP32 copy turned into the softmax in place and
// saved; the BF16 logits die with the forward pass; the backward pass turns the softmax into the
// gradient in place and casts it to BF16.
CachingAllocator::Handle vocab_parallel_loss(Step& step, const StepDevice& device,
                                             const std::function<void()>& forward_done) {
  const double n = device.logit_count;
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * n);
  const auto softmax = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(logits);
  forward_returned(forward_done);
  const auto gradient = step.take(tag(Term::kLogits), kBf16Bytes * n);
  step.give(softmax);
  return gradient;
}

// The compiled loss: the BF16 logits kept (compiled_cross_entropy).
CachingAllocator::Handle compiled_loss(Step& step, const StepDevice& device) {
  const double n = device.logit_count;
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * n);
  const auto gradient = compiled_cross_entropy(step, n, device.loss_tokens);
  step.give(logits);
  return gradient;
}

// cross_entropy over FP32-upcast logits under DTensor's loss_parallel (torch/distributed/tensor/
// parallel/loss.py; loss_parallel_cross_entropy), the BF16 logits freed before the backward pass.
CachingAllocator::Handle dtensor_loss_parallel(Step& step, const StepDevice& device) {
  const double n = device.logit_count;
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * n);
  return loss_parallel_cross_entropy(step, n, [&] { step.give(logits); });
}

// cross_entropy over FP32-upcast logits (torchtitan's train.py; upcast_cross_entropy), the BF16
// logits freed ("del pred") before the backward pass; transformers' shifted loss under
// fp32-shifted. The BF16 logits live in the model's output until Trainer.compute_loss returns.
CachingAllocator::Handle upcast_loss(Step& step, const StepDevice& device,
                                     const std::function<void()>& forward_done) {
  const double n = device.logit_count;
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * n);
  return upcast_cross_entropy(step, n, device.setup.loss == Loss::kFp32Shifted, [&] {
    forward_returned(forward_done);
    step.give(logits);
  });
}

// The output layer's input in TRL's GRPO loss: the last C + 1 positions of the final norm's output,
// copied for the matmul where it is not contiguous (B > 1) or autocast casts it (the FP32 residual
// stream of bf16-mixed), and saved for the output weight's gradient where that weight trains
// (freed here at the loss's end, a little before the output layer's backward pass frees it).
double grpo_output_input_bytes(const StepDevice& device, double sequences) {
  const TrainingSetup& setup = device.setup;
  const bool cast = setup.precision == Precision::kBf16Mixed && !setup.no_autocast;
  if (!cast && sequences <= 1) return 0;
  const double bytes = setup.precision == Precision::kFp32 ? kFp32Bytes : kBf16Bytes;
  return bytes * device.logit_count / device.shape.vocab_size * device.shape.hidden_size;
}

// TRL's GRPO loss (grpo_trainer.py, _compute_loss → _get_per_token_logps_and_entropies with
// compute_entropy; utils.py, selective_log_softmax and entropy_from_logits), B sequences of C
// completion tokens, N = B × (C + 1) × V logits. Traced storage by storage (PyTorch 1.13 on a CPU)
// and measured (scripts/measure/grpo_loss_peak.py). Under bf16 autocast, accelerate's
// convert_outputs_to_fp32 hands the loss FP32 logits (the BF16 ones freed as the model's forward
// pass returns), as it does FP32 weights without autocast: selective_log_softmax's FP32 branch.
// Forward: the logits, divided in place; the gather; each sequence's logsumexp (its x − max,
// exponentiated in place, freed); the entropy under no_grad over a contiguous copy (B > 1) in
// chunks of r = min(B·C, 128) rows, three r × V tensors at once. Backward, the last sequence first:
// each logsumexp's gradient (its x − max and their exp freed); the rows stacked; the gather's
// zeros, scattered into in place (gather_backward's scatter_add_), the logits it saved freed; the
// two gradients summed in place (autograd's InputBuffer); the in-place divide's
// AsStridedBackward0 and CopySlices: two N-sized buffers, the slice's clone and the divide's
// gradient; the BF16 cast of the converted gradient. Without autocast over BF16 weights
// (--no-autocast), BF16 logits take the BF16 branch: each sequence's log-softmax saved, in BF16,
// the gather's zeros and the log-softmax's gradient in its turn. Returns the logits' gradient.
CachingAllocator::Handle grpo_loss(Step& step, const StepDevice& device,
                                   const std::function<void()>& forward_done) {
  const std::size_t tag_logits = tag(Term::kLogits);
  const TrainingSetup& setup = device.setup;
  const double vocabulary = device.shape.vocab_size;
  const double completion = setup.completion_length;
  const double sequences = device.loss_tokens / completion;
  const double n = device.logit_count;
  const double row = completion * vocabulary;    // one sequence's C × V
  const double rows = sequences * row;           // every sequence's
  const double several = sequences > 1 ? 1 : 0;  // the views are contiguous for one sequence
  const double chunk_rows = std::min(sequences * completion, kEntropyChunkRows);
  const auto input = step.take(tag_logits, grpo_output_input_bytes(device, sequences));
  const bool trained_output = setup.lora_rank == 0;
  // The in-place divide's backward pass, from the completions' gradient (`incoming`, freed once
  // read): AsStridedBackward0's N-sized buffer, then CopySlices' own, the slice's clone and the
  // divide's gradient. Returns the logits' gradient.
  const auto copy_slices_backward = [&](double bytes, CachingAllocator::Handle incoming) {
    const auto strided = step.take(tag_logits, bytes * n);
    step.give(incoming);
    const auto gradient = step.take(tag_logits, bytes * n);
    const auto clone = step.take(tag_logits, bytes * rows);
    const auto divided = step.take(tag_logits, bytes * rows);
    step.give(clone);
    step.give(strided);
    step.give(divided);
    return gradient;
  };
  if (setup.no_autocast) {  // BF16 logits, selective_log_softmax's BF16 branch
    const auto logits = step.take(tag_logits, kBf16Bytes * n);
    if (!trained_output) step.give(input);
    forward_returned(forward_done);
    const auto saved = step.take(tag_logits, kBf16Bytes * rows);
    const auto copy = step.take(tag_logits, several * kBf16Bytes * rows);
    step.give(step.take(tag_logits, 3 * kBf16Bytes * chunk_rows * vocabulary));
    step.give(copy);
    step.give(logits);
    // The first sequence back holds every saved log-softmax beside its gather's zeros; the
    // log-softmax's gradient is the row's.
    const auto zeros = step.take(tag_logits, kBf16Bytes * row);
    const auto first = step.take(tag_logits, kBf16Bytes * row);
    step.give(zeros);
    step.give(saved);
    const auto rest = step.take(tag_logits, kBf16Bytes * (rows - row));
    const auto stacked = step.take(tag_logits, kBf16Bytes * rows);
    step.give(first);
    step.give(rest);
    const auto gradient = copy_slices_backward(kBf16Bytes, stacked);
    if (trained_output) step.give(input);
    return gradient;
  }
  const bool converted = setup.precision != Precision::kFp32;
  // The model's logits as its forward pass returns (autocast's cache cleared as its context
  // exits), then accelerate's FP32 copy, the BF16 ones freed.
  auto logits = step.take(tag_logits, converted ? kBf16Bytes * n : kFp32Bytes * n);
  if (!trained_output) step.give(input);
  forward_returned(forward_done);
  if (converted) {
    const auto made = logits;
    logits = step.take(tag_logits, kFp32Bytes * n);
    step.give(made);
  }
  step.give(step.take(tag_logits, kFp32Bytes * row));  // a sequence's (x − max).exp_()
  const auto copy = step.take(tag_logits, several * kFp32Bytes * rows);
  step.give(step.take(tag_logits, 3 * kFp32Bytes * chunk_rows * vocabulary));
  step.give(copy);
  // Backward: every sequence's logsumexp gradient, the last one's x − max and exp beside it.
  const auto row_gradients = step.take(tag_logits, kFp32Bytes * rows);
  step.give(step.take(tag_logits, 2 * kFp32Bytes * row));
  const auto stacked = step.take(tag_logits, kFp32Bytes * rows);
  step.give(row_gradients);
  // The gather's gradient, zeros scattered into in place; the saved logits freed; the stacked rows'
  // gradient added to it in place (autograd's InputBuffer::accumulate).
  const auto zeros = step.take(tag_logits, kFp32Bytes * rows);
  step.give(logits);
  step.give(stacked);
  const auto gradient = copy_slices_backward(kFp32Bytes, zeros);
  if (trained_output) step.give(input);
  if (!converted) return gradient;
  const auto bf16 = step.take(tag_logits, kBf16Bytes * n);
  step.give(gradient);
  return bf16;
}

// TRL's DPO loss (dpo_trainer.py, _compute_loss; utils.py, selective_log_softmax and
// entropy_from_logits; TRL f2cd5771), B sequences of L tokens (B / 2 pairs, chosen then rejected),
// N = B × L × V logits and B·(L − 1)·V of the shifted ones (shift_logits, a view). Traced as
// grpo_loss is and measured (scripts/measure/dpo_loss_peak.py). Forward, over FP32 logits
// (accelerate's convert_outputs_to_fp32 under bf16 autocast; FP32 weights): the logits; each
// sequence's logsumexp (its x − max, exponentiated in place, freed); with a reference model, its
// layers under no_grad (`reference_layers`, the hf stack's: each layer's work, autocast's cached
// casts held to the forward pass's end), its logits made alike, and its logsumexp's; then the
// entropy over a contiguous copy of shift_logits (B ≥ 2: the view is not contiguous) in chunks of
// r = min(B·(L − 1), 128) rows, three r × V tensors at once, the reference's logits still held by
// the function's locals; both freed as it returns. Backward, as grpo_loss's, the slice's
// SliceBackward writing the shifted gradient into an N-sized buffer; then the BF16 cast of the
// converted gradient. Over BF16 logits (--no-autocast), each sequence's log-softmax saved in BF16
// (selective_log_softmax's BF16 branch), the reference's made one sequence at a time. Returns the
// logits' gradient.
CachingAllocator::Handle dpo_loss(Step& step, const StepDevice& device,
                                  const std::function<void()>& forward_done,
                                  const std::function<Handles()>& reference_layers) {
  const std::size_t tag_logits = tag(Term::kLogits);
  const TrainingSetup& setup = device.setup;
  const double vocabulary = device.shape.vocab_size;
  const double length = setup.sequence_length;
  const double n = device.logit_count;
  const double sequences = n / (length * vocabulary);
  const double row = (length - 1) * vocabulary;  // one sequence's shifted logits
  const double rows = sequences * row;
  const double chunk_rows = std::min(sequences * (length - 1), kEntropyChunkRows);
  const bool bf16_logits = setup.no_autocast;
  const double bytes = bf16_logits ? kBf16Bytes : kFp32Bytes;  // a logit's
  // The output layer's input cast to BF16 by autocast over bf16-mixed's FP32 residual stream,
  // saved where the output weight trains.
  const bool cast = setup.precision == Precision::kBf16Mixed && !bf16_logits;
  const auto input =
      step.take(tag_logits, cast ? kBf16Bytes * n / vocabulary * device.shape.hidden_size : 0);
  const bool trained_output = setup.lora_rank == 0;
  const bool converted = !bf16_logits && setup.precision != Precision::kFp32;
  // The model's logits, as its forward pass returns (autocast's cache cleared as its context
  // exits), then accelerate's FP32 copy, the BF16 ones freed; and each sequence's
  // log-probabilities: the FP32 branch's logsumexp transient, or the BF16 branch's log-softmax,
  // every one saved.
  auto logits = step.take(tag_logits, converted ? kBf16Bytes * n : bytes * n);
  if (!trained_output) step.give(input);
  forward_returned(forward_done);
  if (converted) {
    const auto made = logits;
    logits = step.take(tag_logits, kFp32Bytes * n);
    step.give(made);
  }
  const auto saved = step.take(tag_logits, bf16_logits ? kBf16Bytes * rows : 0);
  step.give(step.take(tag_logits, bf16_logits ? 0 : kFp32Bytes * row));
  auto reference = CachingAllocator::kNothing;
  if (setup.reference_model) {
    Handles held = reference_layers ? reference_layers() : Handles{};
    const auto made = step.take(tag_logits, converted ? kBf16Bytes * n : 0);
    give_all(step, held);  // autocast's cache, cleared as the reference's forward pass returns
    reference = step.take(tag_logits, bytes * n);
    step.give(made);
    step.give(step.take(tag_logits, bytes * row));  // a sequence's logsumexp or log-softmax
  }
  const auto copy = step.take(tag_logits, bytes * rows);
  step.give(step.take(tag_logits, 3 * bytes * chunk_rows * vocabulary));
  step.give(copy);
  step.give(reference);
  CachingAllocator::Handle shifted_gradient = CachingAllocator::kNothing;
  if (bf16_logits) {
    // The BF16 logits, held by the model's output until _compute_loss returns; then, as
    // grpo_loss's BF16 branch, the first sequence back beside every saved log-softmax.
    step.give(logits);
    logits = CachingAllocator::kNothing;
    const auto zeros = step.take(tag_logits, kBf16Bytes * row);
    const auto first = step.take(tag_logits, kBf16Bytes * row);
    step.give(zeros);
    step.give(saved);
    const auto rest = step.take(tag_logits, kBf16Bytes * (rows - row));
    shifted_gradient = step.take(tag_logits, kBf16Bytes * rows);
    step.give(first);
    step.give(rest);
  } else {
    const auto row_gradients = step.take(tag_logits, kFp32Bytes * rows);
    step.give(step.take(tag_logits, 2 * kFp32Bytes * row));
    const auto stacked = step.take(tag_logits, kFp32Bytes * rows);
    step.give(row_gradients);
    shifted_gradient = step.take(tag_logits, kFp32Bytes * rows);
    step.give(logits);
    step.give(stacked);
  }
  // SliceBackward: the shifted gradient written into zeros of the whole logits.
  const auto gradient = step.take(tag_logits, bytes * n);
  step.give(shifted_gradient);
  if (trained_output) step.give(input);
  if (!converted) return gradient;
  const auto bf16 = step.take(tag_logits, kBf16Bytes * n);
  step.give(gradient);
  return bf16;
}

// verl's policy loss (verl 1dda039b: verl/workers/engine/fsdp/transformer_impl.py,
// FSDPEngineWithLMHead.prepare_model_outputs; verl/utils/torch_functional.py,
// logprobs_from_logits), over the micro-batch's packed tokens T (use_remove_padding: prompts and
// responses), N = T × V logits: the model's BF16 logits, divided by the temperature out of place
// (logits_rmpad / temperature), and flash-attn's Triton cross_entropy_loss over the quotient, which
// makes only per-token FP32 figures (the log-probabilities and each row's logsumexp) and, with
// inplace_backward=True, writes its gradient into the quotient it saved. The model's logits are
// freed as forward_step returns (its model_output popped); the divide's backward pass makes the
// logits' gradient beside the quotient. The entropy is not computed (calculate_entropy and
// entropy_coeff off, verl's defaults). 4·N bytes at either moment.
// verl's logits over the packed tokens: the model's BF16 logits as its forward pass returns, then
// their quotient by the temperature, out of place.
// `scale`: the pass's micro-batch over the update's.
std::pair<CachingAllocator::Handle, CachingAllocator::Handle> verl_logits(
    Step& step, const StepDevice& device, const std::function<void()>& forward_done,
    double scale = 1) {
  const auto logits = step.take(tag(Term::kLogits), kBf16Bytes * scale * device.logit_count);
  forward_returned(forward_done);
  return {logits, step.take(tag(Term::kLogits), kBf16Bytes * scale * device.logit_count)};
}

CachingAllocator::Handle verl_policy_loss(Step& step, const StepDevice& device,
                                          const std::function<void()>& forward_done) {
  const std::size_t tag_logits = tag(Term::kLogits);
  const auto [logits, quotient] = verl_logits(step, device, forward_done);
  const auto rows = step.take(tag_logits, 2 * kFp32Bytes * device.loss_tokens);
  step.give(logits);
  const auto gradient = step.take(tag_logits, kBf16Bytes * device.logit_count);
  step.give(quotient);
  step.give(rows);
  return gradient;
}

// The loss the setup chooses, forward and backward: the handle of the logits' BF16 gradient.
CachingAllocator::Handle chosen_loss(Step& step, const StepDevice& device,
                                     const std::function<void()>& forward_done,
                                     const std::function<Handles()>& reference_layers) {
  const Loss loss = device.setup.loss;
  if (loss == Loss::kDpo) return dpo_loss(step, device, forward_done, reference_layers);
  const bool compiled = loss_compiled(device.setup.compile);
  if (loss == Loss::kFusedLinear) return liger_fused_linear_loss(step, device, forward_done);
  if (loss == Loss::kChunkedNll) return chunked_nll_loss(step, device, forward_done);
  if (loss == Loss::kGrpo && device.setup.rl_trainer == RlTrainer::kVerl) {
    return verl_policy_loss(step, device, forward_done);
  }
  if (loss == Loss::kGrpo) return grpo_loss(step, device, forward_done);
  if (loss == Loss::kCutCrossEntropy) return cut_cross_entropy_loss(step, device, forward_done);
  if (loss == Loss::kChunked) {
    return compiled ? compiled_chunked_loss(step, device) : chunked_loss(step, device);
  }
  if (loss == Loss::kTeFused) return te_fused_loss(step, device, forward_done);
  if (loss == Loss::kVocabParallel || loss == Loss::kNativeFused) {
    return vocab_parallel_loss(step, device, forward_done);
  }
  if (compiled) return compiled_loss(step, device);
  if (saves_gathered_inputs(device.setup)) return dtensor_loss_parallel(step, device);
  return upcast_loss(step, device, forward_done);
}

}  // namespace

// TRL's old_per_token_logps (grpo_trainer.py, _generate_and_score_completions →
// _get_per_token_logps_and_entropies under torch.no_grad, without entropy): one micro-batch's
// logits after its forward pass, nothing saved for a backward pass. The output layer's input (as
// grpo_loss takes it) and its logits; under bf16 autocast the BF16 logits, autocast's cache
// cleared as its context exits (`forward_done`), then accelerate's convert_outputs_to_fp32 copy,
// the BF16 freed; divided in place; selective_log_softmax's FP32 branch, one sequence's logsumexp
// at a time (its x − max, exponentiated in place), or, BF16 (--no-autocast), its BF16 branch, one
// sequence's log_softmax at a time; each sequence's gathered log-probabilities are C values.
void grpo_log_probabilities(Step& step, const StepDevice& device,
                            const std::function<void()>& forward_done,
                            const std::function<void()>& returned) {
  const std::size_t tag_logits = tag(Term::kLogits);
  const TrainingSetup& setup = device.setup;
  const double n = device.logit_count;
  const double row = setup.completion_length * static_cast<double>(device.shape.vocab_size);
  const auto input = step.take(
      tag_logits, grpo_output_input_bytes(device, device.loss_tokens / setup.completion_length));
  const bool bf16 = setup.no_autocast;
  const bool converted = !bf16 && setup.precision != Precision::kFp32;
  const auto made = step.take(tag_logits, (bf16 || converted ? kBf16Bytes : kFp32Bytes) * n);
  step.give(input);
  forward_returned(forward_done);
  const auto logits = step.take(tag_logits, converted ? kFp32Bytes * n : 0);
  step.give(converted ? made : logits);
  returned();
  step.give(step.take(tag_logits, (bf16 ? kBf16Bytes : kFp32Bytes) * row));
  step.give(converted ? logits : made);
}

// verl's log-probability pass over one micro-batch (verl 1dda039b: engine_workers.py,
// compute_log_prob and compute_ref_log_prob → transformer_impl.py forward_backward_batch under
// torch.no_grad): the BF16 logits of every packed token, their quotient by the temperature, and
// flash-attn's cross_entropy_loss's per-token figures; the actor's pass also takes the entropy
// (calculate_entropy True), through torch.compile(entropy_from_logits, dynamic=True), whose
// softmax and two sums over V inductor fuses into reductions, no T × V buffer (counted so, not
// measured). All freed before the next micro-batch.
void verl_log_probabilities(Step& step, const StepDevice& device,
                            const std::function<void()>& forward_done) {
  const double scale = device.log_prob_scale;
  const auto [logits, quotient] = verl_logits(step, device, forward_done, scale);
  step.give(step.take(tag(Term::kLogits), 3 * kFp32Bytes * scale * device.loss_tokens));
  step.give(quotient);
  step.give(logits);
}

CachingAllocator::Handle compiled_cross_entropy(Step& step, double logits, double tokens) {
  const auto rows = step.take(tag(Term::kLogits), kCompiledLossBytesPerToken * tokens);
  const auto gradient = step.take(tag(Term::kLogits), kBf16Bytes * logits);
  step.give(rows);
  return gradient;
}

CachingAllocator::Handle loss_parallel_cross_entropy(Step& step, double logits,
                                                     const std::function<void()>& forward_done) {
  const double n = logits;
  const auto upcast = step.take(tag(Term::kLogits), kFp32Bytes * n);
  const auto shifted = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(step.take(tag(Term::kLogits), kFp32Bytes * n));
  const auto log_softmax = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(shifted);
  step.give(upcast);
  forward_returned(forward_done);
  // (zeros_like(x) with -1 at the targets + exp(x)) × the loss's gradient, FP32; then the BF16
  // cast.
  const auto zeros = step.take(tag(Term::kLogits), kFp32Bytes * n);
  const auto exp = step.take(tag(Term::kLogits), kFp32Bytes * n);
  const auto sum = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(exp);
  const auto input_gradient = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(sum);
  step.give(zeros);
  step.give(log_softmax);
  const auto gradient = step.take(tag(Term::kLogits), kBf16Bytes * n);
  step.give(input_gradient);
  return gradient;
}

CachingAllocator::Handle upcast_cross_entropy(Step& step, double logits, bool shifts,
                                              const std::function<void()>& forward_done) {
  const double n = logits;
  const auto upcast = step.take(tag(Term::kLogits), kFp32Bytes * n);
  const auto shifted = step.take(tag(Term::kLogits), shifts ? kFp32Bytes * n : 0);
  const auto log_softmax = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(shifted);
  step.give(upcast);
  forward_returned(forward_done);
  const auto output_gradient = step.take(tag(Term::kLogits), kFp32Bytes * n);
  auto input_gradient = step.take(tag(Term::kLogits), kFp32Bytes * n);
  step.give(output_gradient);
  step.give(log_softmax);
  if (shifts) {
    const auto whole = step.take(tag(Term::kLogits), kFp32Bytes * n);
    step.give(input_gradient);
    input_gradient = whole;
  }
  const auto gradient = step.take(tag(Term::kLogits), kBf16Bytes * n);
  step.give(input_gradient);
  return gradient;
}

// The loss's allocations in order, each a multiple of the logits on the device (each loss's above,
// with its source), then marked. Returns the handle of the logits' BF16 gradient, freed by the
// output layer's backward.
CachingAllocator::Handle loss_forward_and_backward(
    Step& step, const StepDevice& device, const std::function<void()>& forward_done,
    const std::function<Handles()>& reference_layers) {
  if (device.logit_count <= 0) {
    forward_returned(forward_done);
    return step.take(tag(Term::kLogits), 0);
  }
  const CachingAllocator::Handle gradient =
      chosen_loss(step, device, forward_done, reference_layers);
  step.mark("loss", device.slots);
  return gradient;
}

}  // namespace trainmem::replay
