// torchtitan's order of allocations and frees in one training step (stack_frameworks.hpp), with
// the sources docs/formulas.md quotes: FSDP2, DTensor's tensor parallelism and
// torch.distributed.pipelining's own buffers.
#include <cmath>
#include <string>
#include <vector>

#include "stacks/stack_frameworks.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem::replay {

namespace {

// Under DTensor's tensor parallelism (torchtitan's apply_tp: the output layer is ColwiseParallel
// with input_layouts Shard(1)) the output layer saves its all-gathered input, 2·h a token whole on
// every rank, from its forward pass to its backward pass.
CachingAllocator::Handle take_head_input(Step& step, const StepDevice& device) {
  const bool held = saves_gathered_inputs(device.setup) && device.logit_count > 0;
  return step.take(tag(Term::kLogits),
                   held ? kBf16Bytes * device.loss_tokens * device.shape.hidden_size : 0);
}

// torch.distributed.pipelining's own buffers (torch/distributed/pipelining/stage.py, as torch
// 1963fc8 runs torchtitan's December 2024 benchmark), at the device's busiest moment: the steady
// state's last forward pass, its c chunks in flight and the n·v - c before them done (n = p
// micro-batches, torchtitan's default pipeline_parallel_microbatches; v virtual stages a device,
// each a PipelineStage of its own).
// - _prepare_forward_infra makes a receive buffer for each micro-batch on every stage but the
//   first, and _prepare_backward_infra one for each micro-batch's incoming gradient on every
//   stage but the last; both are kept from step to step.
// - forward_one_chunk keeps each micro-batch's output in output_chunks (the last stage's are its
//   logits), and stage_backward leaves each micro-batch's input gradient in its receive buffer's
//   .grad, until the next step's clear_runtime_states.
// With n = p the chunks done are the last virtual stage's first (the interleaved schedule's
// backward passes run the device's virtual stages from the last, p micro-batches each): on the
// last device they are the n - 1 micro-batches before the last forward pass, whose outputs are
// logits; on the first device none is done.
struct PipelineBuffers {
  Handles done;       // the finished chunks' outputs and input gradients
  Handles in_flight;  // the outputs of the chunks in flight
};

PipelineBuffers take_pipeline_buffers(Step& step, const StepDevice& device, std::size_t buffers) {
  const double n = device.pipeline_micro_batches;
  const double v = device.virtual_stages;
  const double boundary = device.stage_boundary_bytes;
  // This device holds the pipeline's first stage (no input to receive) or its last (no gradient).
  const bool first = device.embedding;
  const bool last = device.output_layer;
  // Receive buffers, made once.
  step.warming_up(true);
  step.take(buffers, (v - (first ? 1 : 0)) * n * boundary);
  step.take(buffers, (v - (last ? 1 : 0)) * n * boundary);
  step.warming_up(false);
  PipelineBuffers held;
  const long done = std::lround(n * v - device.micro_batches_in_flight * v);
  const double output = last ? kBf16Bytes * device.logit_count : boundary;
  for (long index = 0; index < done; ++index) {
    held.done.push_back(step.take(buffers, output));
    if (!first) held.done.push_back(step.take(buffers, boundary));
  }
  return held;
}

// The outputs of the chunks in flight, taken after the forward pass: the hidden state's (the last
// forward pass's on the last device is the logits, the loss's).
void take_outputs_in_flight(Step& step, const StepDevice& device, std::size_t buffers,
                            PipelineBuffers& held) {
  const double chunks = device.micro_batches_in_flight * device.virtual_stages;
  const long outputs = std::lround(chunks - (device.output_layer ? 1 : 0));
  for (long index = 0; index < outputs; ++index) {
    held.in_flight.push_back(step.take(buffers, device.stage_boundary_bytes));
  }
}

// Where FSDP2's own words come from: a file of torch/distributed/_composable/fsdp/.
std::string fsdp_source(const char* file_and_function) {
  return std::string("PyTorch's FSDP2, torch/distributed/_composable/fsdp/") + file_and_function;
}

// FSDP2's own terms, in the order the step lists them.
struct FsdpTerms {
  std::size_t gathered = 0;
  std::size_t root = 0;
  std::size_t unsharded_gradients = 0;
  std::size_t reduce_input = 0;
  std::size_t casts = 0;  // torchao's MXFP8 or NVFP4 casts, where they run
};

FsdpTerms fsdp_terms(Step& step, const StepDevice& device) {
  FsdpTerms terms;
  terms.gathered = step.term("fsdp-gathered-layers",
                             device.setup.fp8_all_gather ? "Gathered layers (FP8 linear weights)"
                                                         : "Gathered layers (BF16)",
                             fsdp_source("_fsdp_collectives.py, foreach_all_gather and "
                                         "foreach_all_gather_copy_out; "
                                         "_fsdp_param_group.py, the implicit forward prefetch"));
  terms.root = step.term(
      "fsdp-root", "Root module, unsharded (BF16)",
      fsdp_source("_fsdp_state.py, FSDPState._lazy_init: the root is not resharded after forward"));
  terms.unsharded_gradients =
      step.term("fsdp-unsharded-gradients", "Unsharded gradients (BF16)",
                fsdp_source("_fsdp_param_group.py, FSDPParamGroup.post_backward"));
  terms.reduce_input = step.term(
      "fsdp-reduce-scatter-input", "Reduce-scatter input (FP32)",
      fsdp_source("_fsdp_collectives.py, foreach_reduce: reduce_scatter_input in reduce_dtype, "
                  "kept until the next post_backward (ReduceScatterState)"));
  if (device.casts > 0 && device.setup.precision == Precision::kNvfp4Mixed) {
    terms.casts = step.term(
        "torchao-nvfp4-casts", "NVFP4 codes, one linear layer's backward",
        "torchao/prototype/moe_training/nvfp4_training/nvfp4_linear.py, nvfp4_mm_triton: the "
        "input's column-wise codes and the weight's transpose (rebuilt), grad_output row-wise and "
        "column-wise, E2M1 with an E4M3 scale per 16 values");
  } else if (device.casts > 0) {
    terms.casts = step.term(
        "torchao-mx-casts", "MXFP8 casts, one linear layer's backward",
        "torchao/prototype/mx_formats/mx_linear.py, mx_mm.backward: grad_output along dim0 and "
        "dim1, the weight and the input along dim1, FP8 with an E8M0 scale per 32 values");
  }
  return terms;
}

// A block's backward pass with torchao's MXFP8 or NVFP4 casts beside it, where its layer runs
// them.
void block_backward(Step& step, const StepDevice& device, const FsdpTerms& terms, Handles& kept,
                    int slot) {
  if (terms.casts == 0 || slot > device.cast_slots) {
    layer_backward(step, device, kept, slot);
    return;
  }
  const auto casts = step.take(terms.casts, device.casts);
  layer_backward(step, device, kept, slot);
  step.give(casts);
}

// One layer's linear weights that FSDP2 gathers in FP8: with FP8 all-gather (torchao's
// enable_fsdp_float8_all_gather, fsdp_utils.py, WeightWithDynamicFloat8CastTensor) its linear
// weights, cast before the all-gather; none otherwise.
double fp8_gathered_weights(const StepDevice& device) {
  return device.setup.fp8_all_gather ? device.fp8_layer_weights : 0;
}

// The output layer's parameters on this rank (the embedding's, tied): under tensor parallelism
// its ⌈V/t⌉ rows (ColwiseParallel over the vocabulary), as the placement splits it.
double output_head_parameters(const StepDevice& device) {
  const double rows =
      std::ceil(static_cast<double>(device.shape.vocab_size) / device.setup.layout.tensor_parallel);
  return rows * device.shape.hidden_size + (device.shape.output_head_bias ? rows : 0);
}

// Gradients FSDP2 accumulates unsharded between post_backwards without gradient sync: upcast to
// the reduce dtype, FP32 (FSDPParam.to_accumulated_grad_if_needed), then added into
// (accumulate_unsharded_grad_if_needed). `why`: what holds the sync back.
std::size_t accumulated_term(Step& step, const char* why) {
  return step.term("fsdp-accumulated-gradients", "Accumulated gradients (FP32, unsharded)",
                   fsdp_source("_fsdp_param.py, FSDPParam.to_accumulated_grad_if_needed; ") + why);
}

// The unsharded FP32 gradients held at the pipeline's busiest moment, its first backward pass.
// Each virtual stage's are made at its first micro-batch's backward pass and reduce-scattered
// and freed at its last's (backward_maybe_with_nosync: run_post_backward on the last backward).
// Under the interleaved schedule the last virtual stage's backward passes run first, p
// micro-batches a round: where the step has no more micro-batches than one round (n ≤ p,
// torchtitan's default n = p), its buffers are freed before the device's earlier virtual stages
// make theirs, and only the last virtual stage's (1/v of the device's layers, and the output
// layer and final norm on the last device) are held beside the most micro-batches in flight.
// Otherwise, and under 1F1B, every layer's.
double accumulated_at_peak(const StepDevice& device) {
  const double v = device.virtual_stages;
  if (v <= 1 || device.pipeline_micro_batches > device.setup.layout.pipeline_parallel) {
    return kFp32Bytes * device.parameters;
  }
  const double last_virtual_stage = device.layer_parameters * device.layers_per_stage / v +
                                    (device.output_layer ? device.root_parameters : 0);
  return kFp32Bytes * last_virtual_stage;
}

// Under pipelining torchtitan never reshards after forward, and the pipeline schedule holds
// gradient synchronisation until the last micro-batch (torch/distributed/pipelining/stage.py,
// backward_maybe_with_nosync): the stage's parameters stay gathered and its gradients
// accumulate unsharded in FP32 (FSDPParam.to_accumulated_grad_if_needed): accumulated_at_peak.
void torchtitan_pipelined_step(Step& step, const StepDevice& device, const FsdpTerms& terms) {
  const std::size_t accumulated =
      accumulated_term(step, "torch/distributed/pipelining/stage.py, backward_maybe_with_nosync");
  const std::size_t buffers = step.term(
      "pipeline-buffers", "Pipeline schedule's buffers (BF16)",
      "torch/distributed/pipelining/stage.py: the receive buffers (_prepare_forward_infra, "
      "_prepare_backward_infra), output_chunks and the receive buffers' .grad, kept until "
      "clear_runtime_states");
  step.take(terms.gathered, kBf16Bytes * device.parameters - (kBf16Bytes - kFp8Bytes) *
                                                                 fp8_gathered_weights(device) *
                                                                 device.layers_per_stage);
  step.take(accumulated, accumulated_at_peak(device));
  PipelineBuffers pipeline = take_pipeline_buffers(step, device, buffers);
  step.mark("start", 0);
  std::vector<Handles> kept = forward_slots(step, device);
  take_outputs_in_flight(step, device, buffers, pipeline);
  const auto head_input = take_head_input(step, device);
  step.give(loss_forward_and_backward(step, device));
  step.give(head_input);
  CachingAllocator::Handle casts{};
  const SlotHooks hooks{[&](int slot) {
                          casts =
                              step.take(terms.casts, slot <= device.cast_slots ? device.casts : 0);
                        },
                        [&](int) { step.give(casts); }};
  backward_slots(step, device, kept, nullptr, terms.casts == 0 ? nullptr : &hooks);
  step.take(tag(Term::kGradients), device.bytes[Term::kGradients]);
  give_all(step, pipeline.in_flight);
  give_all(step, pipeline.done);
}

// One block's gathered bytes: BF16, or with FP8 all-gather its linear weights in FP8 and the rest
// (norms) in BF16.
double gathered_layer_bytes(const StepDevice& device) {
  return kBf16Bytes * device.layer_parameters -
         (kBf16Bytes - kFp8Bytes) * fp8_gathered_weights(device);
}

// What the forward pass leaves for the backward pass: each slot's saved tensors, and each block's
// gathered parameters where it is not resharded.
struct FsdpForward {
  std::vector<Handles> kept;
  std::vector<Handles> copies;
};

// ZeRO 3: reshard after forward but the last block (torchtitan keeps it for backward); ZeRO 2:
// reshard_after_forward=False, every block stays gathered until its backward.
FsdpForward fsdp_forward_pass(Step& step, const StepDevice& device, const FsdpTerms& terms) {
  const bool reshard = device.setup.layout.zero_stage >= 3;
  const double gathered_layer = gathered_layer_bytes(device);
  const std::size_t count = static_cast<std::size_t>(device.slots);
  FsdpForward forward;
  forward.copies.resize(count);
  auto all_gather = step.take(terms.gathered, gathered_layer);
  forward.kept.resize(count);
  for (std::size_t index = 0; index < count; ++index) {
    forward.copies[index] = {step.take(terms.gathered, gathered_layer)};
    // The next block's all-gather goes out before this one runs; its copy-in frees this one's
    // all-gather output.
    if (index + 1 < count) {
      const auto next = step.take(terms.gathered, gathered_layer);
      step.give(all_gather);
      all_gather = next;
    } else {
      step.give(all_gather);
    }
    forward.kept[index] = keep_slot(step, device, static_cast<int>(index) + 1);
    if (reshard && index + 1 < count) give_all(step, forward.copies[index]);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return forward;
}

// The blocks' backward passes, last first: each gathered again where it was resharded, its
// gradients made unsharded and reduce-scattered. Returns the last reduce-scatter's input, kept
// until the next post_backward (the root's).
CachingAllocator::Handle fsdp_backward_pass(Step& step, const StepDevice& device,
                                            const FsdpTerms& terms, FsdpForward& forward,
                                            CachingAllocator::Handle previous_reduce) {
  const double layer = device.layer_parameters;
  const double gathered_layer = gathered_layer_bytes(device);
  for (std::size_t index = forward.kept.size(); index-- > 0;) {
    if (forward.copies[index].empty()) {
      const auto output = step.take(terms.gathered, gathered_layer);
      forward.copies[index] = {step.take(terms.gathered, gathered_layer)};
      step.give(output);
    }
    const auto layer_gradients = step.take(terms.unsharded_gradients, kBf16Bytes * layer);
    block_backward(step, device, terms, forward.kept[index], static_cast<int>(index) + 1);
    const auto reduce = step.take(terms.reduce_input, kFp32Bytes * layer);
    step.give(layer_gradients);
    step.take(tag(Term::kGradients), kFp32Bytes * device.sharded_layer_parameters());
    step.give(previous_reduce);
    previous_reduce = reduce;
    give_all(step, forward.copies[index]);
    step.mark("backward", static_cast<int>(index) + 1);
  }
  return previous_reduce;
}

// The root's post-backward: the embedding's gradient joins the output layer's (where the root
// holds it: `root_parameters`), both reduced; the root resharded at last.
void fsdp_root_post_backward(Step& step, const StepDevice& device, const FsdpTerms& terms,
                             double root_parameters, CachingAllocator::Handle root,
                             CachingAllocator::Handle head_gradient,
                             CachingAllocator::Handle previous_reduce) {
  const bool holds_head = root_parameters == device.root_parameters;
  const auto embedding_gradient =
      step.take(terms.unsharded_gradients,
                kBf16Bytes * (root_parameters - (holds_head ? output_head_parameters(device) : 0)));
  const auto root_reduce = step.take(terms.reduce_input, kFp32Bytes * root_parameters);
  step.give(head_gradient);
  step.give(embedding_gradient);
  step.take(tag(Term::kGradients), kFp32Bytes * root_parameters / device.zero_shards);
  step.give(previous_reduce);
  step.give(root_reduce);
  step.give(root);
  step.mark("backward", 0);
}

// torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py, 9530a87 on) over FSDP2: the
// model stops before the output layer, whose unit the loss gathers itself (lm_head.unshard(), kept
// gathered across the chunks) and reshards after them. The loss makes GradAccumulator's FP32
// [T, h] buffer, then for each of the n chunks in turn: the chunk's BF16 logits (held by the loop
// until the next chunk's are made), cross_entropy over their FP32 upcast (its saved log-softmax),
// the chunk's backward pass (the log-softmax's gradient and the logits' FP32 then BF16 gradient;
// compiled, the two FP32 values a token and the BF16 gradient at once), the output layer's backward
// (the chunk's hidden-state gradient, cast to FP32 and copied into the buffer, and the weight's
// unsharded BF16 gradient). Gradient sync is off but for the last chunk: FSDP2 upcasts the first
// chunk's weight gradient to FP32 and adds each later one into it, and the last chunk's
// post_backward reduce-scatters the sum. At the end the buffer is cast to BF16, the gradient the
// decoder's backward pass starts from.
struct ChunkedLoss {
  CachingAllocator::Handle hidden_gradient;
  CachingAllocator::Handle head_reduce;  // the output layer's reduce-scatter input
};

ChunkedLoss torchtitan_chunked_loss(Step& step, const StepDevice& device, const FsdpTerms& terms) {
  const double h = device.shape.hidden_size;
  const double tokens = device.loss_tokens;
  const long chunks = device.setup.loss_chunks;
  const double chunk = device.logit_count / static_cast<double>(chunks);
  const double chunk_tokens = tokens / static_cast<double>(chunks);
  const double chunk_hidden = chunk_tokens * h;
  const bool compiled = loss_compiled(device.setup.compile);
  const double head = output_head_parameters(device);
  const std::size_t logits = tag(Term::kLogits);
  const std::size_t accumulated_gradient = accumulated_term(
      step,
      "torchtitan/components/loss.py, ChunkedLossWrapper: set_requires_gradient_sync(False) "
      "on lm_head but for the last chunk");
  // The trainer's pred, the final norm's output (all-gathered, whole, under tensor parallelism),
  // whose chunks the loop reads as views, held until `del pred` after the loss returns.
  const auto hidden_states = step.take(logits, kBf16Bytes * tokens * h);
  const auto all_gather = step.take(terms.gathered, kBf16Bytes * head);
  const auto weight = step.take(terms.gathered, kBf16Bytes * head);
  step.give(all_gather);
  const auto buffer = step.take(logits, kFp32Bytes * tokens * h);
  auto previous = step.take(logits, 0);
  auto accumulated = step.take(accumulated_gradient, 0);
  auto reduce = step.take(terms.reduce_input, 0);
  for (long index = 0; index < chunks; ++index) {
    const auto out = step.take(logits, kBf16Bytes * chunk);
    step.give(previous);
    previous = out;
    // cross_entropy on the chunk: compiled, through torchtitan's _LossParallelCrossEntropy over its
    // V/t logits under tensor parallelism (its caller upcasting them), or eager.
    const auto logits_gradient = compiled ? compiled_cross_entropy(step, chunk, chunk_tokens)
                                 : device.setup.layout.tensor_parallel > 1
                                     ? loss_parallel_cross_entropy(step, chunk)
                                     : upcast_cross_entropy(step, chunk, false);
    const auto hidden_gradient = step.take(logits, kBf16Bytes * chunk_hidden);
    const auto weight_gradient = step.take(terms.unsharded_gradients, kBf16Bytes * head);
    step.give(logits_gradient);
    const bool last = index + 1 == chunks;
    if (last && chunks == 1) {  // synced at once: the BF16 gradient reduced
      step.give(reduce);
      reduce = step.take(terms.reduce_input, kFp32Bytes * head);
      step.give(weight_gradient);
    } else if (last) {  // added into the FP32 sum, which is reduced
      step.give(weight_gradient);
      step.give(reduce);
      reduce = step.take(terms.reduce_input, kFp32Bytes * head);
      step.give(accumulated);
    } else if (index == 0) {  // upcast into the FP32 sum
      step.give(accumulated);
      accumulated = step.take(accumulated_gradient, kFp32Bytes * head);
      step.give(weight_gradient);
    } else {  // added into it
      step.give(weight_gradient);
    }
    if (last) step.take(tag(Term::kGradients), kFp32Bytes * head / device.zero_shards);
    step.give(step.take(logits, kFp32Bytes * chunk_hidden));
    step.give(hidden_gradient);
  }
  if (chunks == 1) step.give(accumulated);
  step.give(weight);
  const auto gradient = step.take(logits, kBf16Bytes * tokens * h);
  step.give(buffer);
  step.give(previous);
  step.give(hidden_states);
  step.mark("loss", device.slots);
  return {gradient, reduce};
}

}  // namespace

// torchtitan on FSDP2 (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp; FSDP2 in
// torch/distributed/_composable/fsdp): FP32 sharded parameters and AdamW's moments for the whole
// step, gradients created by each layer's reduce-scatter and freed by zero_grad; each block
// gathered in BF16 for its passes, the next one's all-gather issued early; the root (embedding,
// final norm, output layer) gathered from its forward pass to the end of its backward pass.
void torchtitan_step(Step& step, const StepDevice& device) {
  const FsdpTerms terms = fsdp_terms(step, device);
  take_model_states(step, device);
  if (device.setup.layout.pipeline_parallel > 1) {
    torchtitan_pipelined_step(step, device, terms);
    return;
  }
  step.mark("start", 0);
  // Under the chunked loss the output layer is no part of the root: the loss gathers it.
  const bool chunked = device.logit_count > 0 && device.setup.loss == Loss::kChunkedWrapper;
  const double root_parameters =
      device.root_parameters - (chunked ? output_head_parameters(device) : 0);
  const auto root = step.take(terms.root, kBf16Bytes * root_parameters);
  FsdpForward forward = fsdp_forward_pass(step, device, terms);
  if (chunked) {
    const ChunkedLoss loss = torchtitan_chunked_loss(step, device, terms);
    step.give(loss.hidden_gradient);
    const auto last_reduce = fsdp_backward_pass(step, device, terms, forward, loss.head_reduce);
    fsdp_root_post_backward(step, device, terms, root_parameters, root,
                            step.take(terms.unsharded_gradients, 0), last_reduce);
    return;
  }
  const auto head_input = take_head_input(step, device);
  const auto logits_gradient = loss_forward_and_backward(step, device);
  // The output layer's backward: its weight's unsharded gradient waits for the root's
  // reduce-scatter at the end of the backward pass.
  const auto head_gradient =
      step.take(terms.unsharded_gradients, kBf16Bytes * output_head_parameters(device));
  step.give(logits_gradient);
  step.give(head_input);
  const auto last_reduce =
      fsdp_backward_pass(step, device, terms, forward, step.take(terms.reduce_input, 0));
  fsdp_root_post_backward(step, device, terms, root_parameters, root, head_gradient, last_reduce);
}

}  // namespace trainmem::replay
