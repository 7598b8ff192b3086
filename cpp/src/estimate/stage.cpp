// What a pipeline stage holds besides its model states (stage.hpp).
#include "estimate/stage.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "estimate/dispatch.hpp"
#include "estimate/layer_mix.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

namespace {

// LoRA: each adapter saves its r-wide intermediate A·x (BF16; FP32 without autocast) for lora_B's
// gradient; its input x is the frozen layer's, counted once already. Full recomputation rebuilds
// them with the layer.
void add_adapter_intermediates(const ModelShape& shape, const TrainingSetup& setup, const Pen& pen,
                               ActivationsPerLayer& layer) {
  // Without autocast (TrainingSetup::no_autocast) PEFT's FP32 adapters run in FP32: lora_B saves
  // an FP32 intermediate, and lora_A an FP32 input. Under accelerate's FSDP (the hf stack's ZeRO
  // 3) with bf16, FSDP computes with the parameters cast to BF16 (accelerate's set_mixed_precision:
  // param_dtype bf16; fsdp2_prepare_model: "MixedPrecisionPolicy.param_dtype handles compute
  // cast"), so PEFT's cast to lora_A's dtype is a no-op and lora_A saves the base layer's own
  // input.
  const bool fsdp_compute_bf16 =
      setup.stack == Stack::kHf && setup.layout.zero_stage == 3 && !setup.no_autocast;
  const bool casts = stack_row(setup.stack).fp32_adapters && !fsdp_compute_bf16;
  const bool fp32 = setup.no_autocast && casts;
  const double value_bytes = fp32 ? kFp32Bytes : kBf16Bytes;
  Figure per_token =
      pen.said(setup.lora_rank, [&] { return "r " + std::to_string(setup.lora_rank); }) *
      pen.count(lora_modules_per_token(shape, setup.lora_targets), "adapters") *
      pen.bytes(value_bytes);
  // PEFT's lora_dropout: each adapter's own dropped copy of its input and the mask. With FP32
  // adapters under bf16 autocast (StackRow::fp32_adapters) PEFT casts each adapter's input to FP32
  // (x = x.to(lora_A.weight.dtype); _cast_input_dtype from PEFT 0.15) and the autocast casts it
  // back for lora_A, which saves that BF16 copy, with dropout or without; without autocast lora_A
  // saves the FP32 copy itself.
  if (setup.lora_dropout > 0 || casts) {
    const bool masks = setup.lora_dropout > 0;
    per_token =
        per_token +
        pen.count(lora_input_features_per_token(shape, setup.lora_targets), "adapted inputs") *
            pen.said(value_bytes + (masks ? kLoraDropoutMaskBytes : 0), [&] {
              if (fp32) {
                return std::string(masks ? "(4 + 1) B (FP32 dropped copy and mask, no autocast)"
                                         : "4 B (the FP32 input, no autocast)");
              }
              return std::string(masks ? "(2 + 1) B (dropped copy and mask)"
                                       : "2 B (autocast's BF16 copy of the FP32 input)");
            });
  }
  if (setup.recompute == Recompute::kFull) {
    layer.recompute_working_bytes += layer.tokens_on_device * per_token.value();
  } else {
    layer.kept_per_token = layer.kept_per_token + per_token;
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
  }
  if (pen.writing()) {
    layer.source += std::string("; each LoRA adapter saves its r-wide ") +
                    (fp32 ? "FP32" : "BF16") +
                    " intermediate A·x for lora_B's gradient (Hu et al., arXiv:2106.09685)";
    if (setup.lora_dropout > 0) {
      layer.source +=
          ", and under lora_dropout its own dropped copy of its input with the dropout's mask "
          "(peft/tuners/lora/layer.py, Linear.forward: lora_B(lora_A(dropout(x))))";
    } else if (fp32) {
      layer.source +=
          ", and the FP32 copy of its input that PEFT makes for the FP32 lora_A, without "
          "autocast (peft/tuners/lora/layer.py, Linear.forward: x = x.to(lora_A.weight.dtype))";
    } else if (casts) {
      layer.source +=
          ", and the BF16 copy of its input that bf16 autocast makes for the FP32 lora_A "
          "(peft/tuners/lora/layer.py, Linear.forward: x = x.to(lora_A.weight.dtype), then "
          "lora_A under autocast)";
    }
  }
}

// TRL's GRPO loss at its peak (replay's grpo_loss, which follows it allocation by allocation), B
// sequences of C completion tokens, N = B × (C + 1) × V logits and B·C·V of the completions. Over
// FP32 logits (accelerate's convert_outputs_to_fp32 under autocast, or FP32 weights), the larger
// of the entropy's moment in the forward pass (the logits, a contiguous copy of the completions'
// for B > 1, one chunk's three r × V tensors) and the in-place divide's in the backward pass (two
// N-sized buffers, the slice's clone and the divide's gradient, 8·N + 8·B·C·V). Over BF16 logits
// (no autocast), the same two at 2 bytes with every saved log-softmax at the entropy. Every other
// moment is below one of them. With the output
// layer's input slice where it is copied and the output layer trains.
Figure grpo_figure(const ModelShape& shape, const TrainingSetup& setup, double tokens,
                   const Pen& pen) {
  // verl's policy loss (replay's verl_policy_loss): the BF16 logits of every packed token and
  // their quotient by the temperature, or that quotient and the logits' gradient.
  if (setup.rl_trainer == RlTrainer::kVerl) {
    return pen.bytes(2 * kBf16Bytes) * pen.count(tokens, "T tokens") *
           pen.count(shape.vocab_size, "V");
  }
  const double b = tokens / setup.sequence_length;
  const double c = setup.completion_length;
  const double v = shape.vocab_size;
  const double bytes = setup.no_autocast ? kBf16Bytes : kFp32Bytes;  // a logit's
  const double several = b > 1 ? 1 : 0;
  const double rows = std::min(b * c, kEntropyChunkRows);
  // The entropy's moment: the logits, the completions' contiguous copy, and over BF16 logits every
  // saved log-softmax; the divide's: two N-sized buffers, the slice's clone and its gradient.
  const double kept_rows = several + (setup.no_autocast ? 1 : 0);
  const double entropy = bytes * (b * (c + 1) + kept_rows * b * c + 3 * rows) * v;
  const double divide = 2 * bytes * (b * (c + 1) + b * c) * v;
  // The output layer's input slice, copied where it is not contiguous or autocast casts it, and
  // saved where the output layer trains.
  const bool cast = setup.precision == Precision::kBf16Mixed && !setup.no_autocast;
  const double input = (several > 0 || cast) && setup.lora_rank == 0
                           ? (setup.precision == Precision::kFp32 ? kFp32Bytes : kBf16Bytes)
                           : 0;
  const double input_bytes = input * b * (c + 1) * shape.hidden_size;
  if (!pen.writing()) return Figure(std::max(entropy, divide) + input_bytes);
  const Figure sequences = pen.count(b, "sequences");
  const Figure kept = pen.said(c + 1, [&] { return "(C + 1 = " + number_text(c + 1) + ")"; });
  const Figure completion = pen.said(c, [&] { return "C " + number_text(c); });
  const Figure vocabulary = pen.count(v, "V");
  const Figure logits = sequences * kept * vocabulary;
  const Figure completions = sequences * completion * vocabulary;
  Figure peak = entropy >= divide
                    ? pen.bytes(bytes) * logits + pen.bytes(kept_rows * bytes) * completions +
                          pen.bytes(3 * bytes) *
                              pen.said(rows, [&] { return number_text(rows) + " rows (r)"; }) *
                              vocabulary
                    : pen.bytes(2 * bytes) * logits + pen.bytes(2 * bytes) * completions;
  if (input > 0) {
    peak = peak + pen.bytes(input) * sequences * kept * pen.count(shape.hidden_size, "h");
  }
  return peak;
}

// TRL's DPO loss at its peak (replay's dpo_loss, which follows it allocation by allocation), B
// sequences of L tokens, N = B × L × V logits and B·(L − 1)·V shifted ones. Over FP32 logits
// (accelerate's convert_outputs_to_fp32 under autocast, or FP32 weights), the larger of the
// entropy's moment (the logits, the reference's with a reference model, the contiguous copy of the
// shifted ones, one chunk's three r × V tensors) and the backward pass's (the logits beside the
// shifted logits' stacked rows and the gather's gradient, 4·N + 8·B·(L − 1)·V); over BF16 logits
// (no autocast), the entropy's, every saved log-softmax beside it. With the output layer's input
// where autocast casts it and the output layer trains.
Figure dpo_figure(const ModelShape& shape, const TrainingSetup& setup, double tokens,
                  const Pen& pen) {
  const double l = setup.sequence_length;
  const double b = tokens / l;
  const double v = shape.vocab_size;
  const bool bf16_logits = setup.no_autocast;
  const double bytes = bf16_logits ? kBf16Bytes : kFp32Bytes;  // a logit's
  const double rows = std::min(b * (l - 1), kEntropyChunkRows);
  const double passes = setup.reference_model ? 2 : 1;  // the policy's logits, the reference's
  const double shifted_kept = bf16_logits ? 2 : 1;      // the copy, and each saved log-softmax
  const double entropy = bytes * (passes * b * l + shifted_kept * b * (l - 1) + 3 * rows) * v;
  const double backward = bf16_logits ? 0 : kFp32Bytes * (b * l + 2 * b * (l - 1)) * v;
  const bool cast = setup.precision == Precision::kBf16Mixed && !bf16_logits;
  const double input = cast && setup.lora_rank == 0 ? kBf16Bytes : 0;
  if (!pen.writing())
    return Figure(std::max(entropy, backward) + input * b * l * shape.hidden_size);
  const Figure sequences = pen.count(b, "sequences");
  const Figure length = pen.count(l, "L");
  const Figure shifted = pen.said(l - 1, [&] { return "(L − 1 = " + number_text(l - 1) + ")"; });
  const Figure vocabulary = pen.count(v, "V");
  const Figure logits = sequences * length * vocabulary;
  const Figure shifted_logits = sequences * shifted * vocabulary;
  Figure peak =
      entropy >= backward
          ? pen.said(passes * bytes,
                     [&] {
                       return setup.reference_model
                                  ? "(" + number_text(bytes) + " + " + number_text(bytes) +
                                        ") B, the policy's and the reference's"
                                  : number_text(bytes) + " B";
                     }) *
                    logits +
                pen.bytes(shifted_kept * bytes) * shifted_logits +
                pen.bytes(3 * bytes) *
                    pen.said(rows, [&] { return number_text(rows) + " rows (r)"; }) * vocabulary
          : pen.bytes(kFp32Bytes) * logits + pen.bytes(2 * kFp32Bytes) * shifted_logits;
  if (input > 0)
    peak = peak + pen.bytes(input) * sequences * length * pen.count(shape.hidden_size, "h");
  return peak;
}

// The logits and the loss over them, split over the vocabulary by t (padded up to a multiple of
// it, as Megatron-LM pads it).
Figure logits_figure(const ModelShape& shape, const TrainingSetup& setup, double tokens,
                     const Pen& pen) {
  const double t = setup.layout.tensor_parallel;
  const double vocabulary = shape.vocab_size;
  const Figure vocabulary_here =
      t > 1 ? pen.said(std::ceil(vocabulary / t),
                       [&] {
                         // "⌈32,001 vocabulary / 2⌉" where t does not divide it: the padded share.
                         const bool even = std::fmod(vocabulary, t) == 0;
                         return std::string(even ? "" : "⌈") + number_text(vocabulary) +
                                " vocabulary / " + number_text(t) + (even ? "" : "⌉");
                       })
            : pen.count(vocabulary, "vocabulary");
  if (setup.loss == Loss::kFusedLinear) {
    // Liger: the hidden state's gradient, one chunk's logits and the per-token loss (t is 1).
    const double h = shape.hidden_size;
    const double chunk = fused_linear_chunk_tokens(tokens, vocabulary, h);
    return pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(h, "h") +
           pen.bytes(kBf16Bytes) *
               pen.said(
                   chunk,
                   [&] { return number_text(chunk) + " tokens a chunk (Liger's chunk_size)"; }) *
               vocabulary_here +
           pen.bytes(kFp32Bytes) * pen.count(tokens, "tokens");
  }
  if (setup.loss == Loss::kCutCrossEntropy) {
    // The hidden states' gradient, and what the loss keeps and orders (t is 1).
    return pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(shape.hidden_size, "h") +
           pen.bytes(kCutCrossEntropyBytesPerToken) * pen.count(tokens, "tokens") +
           pen.bytes(kCutCrossEntropyBytesPerVocab) * vocabulary_here;
  }
  if (setup.loss == Loss::kChunkedNll) {
    // TRL: the sorted copy of the hidden states, then at the loss's peak one chunk's logits work
    // and the output weight's working copies, forward or backward (chunked_nll_weights).
    const double h = shape.hidden_size;
    const double chunk = std::min(kChunkedNllChunkTokens, tokens);
    const ChunkedNllWeights w = chunked_nll_weights_of(setup);
    const Figure weight = vocabulary_here * pen.count(h, "h");
    const Figure logits = pen.said(chunk, [&] {
      return number_text(chunk) + " tokens a chunk (TRL's chunk size)";
    }) * vocabulary_here;
    const auto arm = [&](double weight_bytes, double logit_bytes) {
      const Figure chunk_work = pen.bytes(logit_bytes) * logits;
      return weight_bytes > 0 ? pen.bytes(weight_bytes) * weight + chunk_work : chunk_work;
    };
    // At the matmul (forward and recomputed); the forward's log-softmax and entropy (BF16 logits,
    // FP32 log-softmax, its exp and their product); the backward's log-softmax (the recomputed
    // log-softmax and exp, and two FP32 gradients); the weight's gradient (the two saved and the
    // logits' BF16 gradient).
    Figure peak = arm(w.matmul, kBf16Bytes);
    for (const Figure& other :
         {arm(w.held, kBf16Bytes + 3 * kFp32Bytes), arm(w.saved, 4 * kFp32Bytes),
          arm(w.gradient, 2 * kFp32Bytes + kBf16Bytes)}) {
      if (other.value() > peak.value()) peak = other;
    }
    return pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(h, "h") + peak;
  }
  if (setup.loss == Loss::kChunkedWrapper) {
    // torchtitan: the FP32 buffer the chunks' hidden-state gradients are copied into, beside the
    // trainer's pred (the final norm's BF16 output, all-gathered and whole under tensor
    // parallelism), whose chunks the loop reads as views until `del pred`; and one chunk's logits
    // at its backward peak (its V/t under tensor parallelism, through torchtitan's own
    // loss-parallel cross-entropy). At the loop's end the buffer and its BF16 cast with the last
    // chunk's logits, where the hidden states outweigh a chunk's logits. Compiled (torchtitan's
    // CrossEntropyLoss, its fn under torch.compile), each chunk runs the compiled loss: the chunk's
    // BF16 logits and their BF16 gradient (and 8 B a token, freed before), held at the output
    // layer's backward with the chunk's BF16 hidden-state gradient, 2·h a token.
    const double h = shape.hidden_size;
    const double n = setup.loss_chunks;
    const Figure held = pen.bytes(kFp32Bytes) * pen.count(tokens, "tokens") * pen.count(h, "h") +
                        pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(h, "h");
    const Figure chunk_tokens = pen.said(tokens / n, [&] {
      return number_text(tokens) + " tokens / " + number_text(n) + " chunks";
    });
    const Figure chunk = chunk_tokens * vocabulary_here;
    const Figure in_loop =
        loss_compiled(setup.compile)
            ? held + pen.bytes(kCompiledLossBytesPerTokenPerVocab) * chunk +
                  pen.bytes(kBf16Bytes) * chunk_tokens * pen.count(h, "h")
            : held + pen.bytes(setup.layout.tensor_parallel > 1 ? kChunkedLossParallelBytesPerLogit
                                                                : kChunkedWrapperBytesPerLogit) *
                         chunk;
    const Figure at_end = held +
                          pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(h, "h") +
                          pen.bytes(kBf16Bytes) * chunk;
    return at_end.value() > in_loop.value() ? at_end : in_loop;
  }
  if (setup.loss == Loss::kGrpo) return grpo_figure(shape, setup, tokens, pen);
  if (setup.loss == Loss::kDpo) return dpo_figure(shape, setup, tokens, pen);
  if (setup.loss == Loss::kChunked) {
    const double n = setup.loss_chunks;
    const double per_logit = loss_bytes_per_logit(setup.loss, setup.loss_chunks);
    const bool forward = per_logit == kBf16Bytes + kFp32Bytes + kFp32Bytes / n;
    return pen.said(
               per_logit,
               [&] { return (forward ? "(2 + 4 + 4/" : "(4 + 8/") + number_text(n) + ") B"; }) *
           pen.count(tokens, "tokens") * vocabulary_here;
  }
  if (setup.loss == Loss::kFp32Upcast && loss_compiled(setup.compile)) {
    // The compiled loss: the BF16 logits and their BF16 gradient, and two FP32 values a token.
    return pen.bytes(kCompiledLossBytesPerTokenPerVocab) * pen.count(tokens, "tokens") *
               vocabulary_here +
           pen.bytes(kCompiledLossBytesPerToken) * pen.count(tokens, "tokens");
  }
  if (setup.loss == Loss::kFp32Upcast && saves_gathered_inputs(setup)) {
    // DTensor's loss_parallel, and the output layer's all-gathered input (2·h a token, whole on
    // every rank) held from its forward pass to its backward pass.
    return pen.bytes(kLossParallelBytesPerTokenPerVocab) * pen.count(tokens, "tokens") *
               vocabulary_here +
           pen.bytes(kBf16Bytes) * pen.count(tokens, "tokens") * pen.count(shape.hidden_size, "h");
  }
  return pen.bytes(loss_bytes_per_logit(setup.loss)) * pen.count(tokens, "tokens") *
         vocabulary_here;
}

const char* loss_source(Loss loss) {
  switch (loss) {
    case Loss::kFp32Upcast:
      return "an unfused cross-entropy over FP32-upcast logits: its saved log-softmax and two "
             "gradients at the loss's backward (measured: tests/data/loss-peak-cpu.json)";
    case Loss::kFp32Shifted:
      return "transformers 4.46 to 4.48's ForCausalLMLoss (src/transformers/loss/loss_utils.py): "
             "the BF16 logits, their FP32 upcast, its shifted contiguous copy and the saved "
             "log-softmax at its forward peak (4.49 shifts the labels instead: transformers PR "
             "#35646)";
    case Loss::kNativeFused:
      return "BF16 logits plus their FP32 copy, turned into the softmax and saved, for "
             "Megatron-LM's "
             "fused cross-entropy (megatron/core/fusions/fused_cross_entropy.py)";
    case Loss::kChunked:
      return "torchtune's CEWithChunkedOutputLoss, eager (torchtune/modules/loss/"
             "ce_chunked_output_loss.py): the BF16 chunks, each chunk's saved FP32 log-softmax and "
             "the last chunk's FP32 copy at its forward peak; its backward peak, 4 + 8/n, is lower "
             "from 2 chunks on";
    case Loss::kFusedLinear:
      return "Liger's fused linear cross-entropy (liger_kernel/ops/fused_linear_cross_entropy.py, "
             "fused_linear_cross_entropy_forward): grad_input, one chunk's logits and loss_1d; its "
             "grad_weight is the output layer's gradient, counted with the states";
    case Loss::kCutCrossEntropy:
      return "Cut Cross-Entropy (Wijmans et al., arXiv:2411.09009) as axolotl's plugin runs it "
             "(axolotl-ai-cloud/ml-cross-entropy 5f0c7a7, cut_cross_entropy/cce.py, "
             "cce_backward.py): grad_e, and the saved lse (FP32) and valids (int64) a token, "
             "logit_avg (FP32) and vocab_ordering (int32) an entry; dC is the output layer's "
             "gradient, counted with the states";
    case Loss::kChunkedNll:
      return "TRL's chunked_nll (trl/trainer/sft_trainer.py, _chunked_cross_entropy_loss, TRL "
             "v1.7 to v1.9): the hidden states sorted into a BF16 copy, then chunks of 256 tokens, "
             "each checkpointed, computing h.float() @ w.float().t() under bf16 autocast, its "
             "FP32 log-softmax, exp and entropy; the output weight's BF16 casts and gradient at "
             "its peak, forward or backward";
    case Loss::kChunkedWrapper:
      return "torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py, 9530a87 on; "
             "ChunkedCELoss from 786e26f): the final hidden states split into chunks, each run "
             "through the output layer, cross_entropy over its FP32-upcast logits and its "
             "backward pass in turn, the chunk's BF16 logits held by the loop; the chunks' "
             "hidden-state gradients copied into an FP32 buffer (GradAccumulator), cast to BF16 "
             "at the end; under tensor parallelism the hidden states all-gathered, whole, and "
             "each chunk's V/t logits through _LossParallelCrossEntropy, whose backward holds "
             "the saved log-softmax, zeros_like of it, its exp and their sum, 16 B a logit, "
             "beside them";
    case Loss::kGrpo:
      return "TRL's GRPOTrainer loss (trl/trainer/grpo_trainer.py, _compute_loss and "
             "_get_per_token_logps_and_entropies; trl/trainer/utils.py, selective_log_softmax "
             "and entropy_from_logits; TRL f2cd5771, after v1.9.0): the output layer over the "
             "last C + 1 positions (logits_to_keep), divided by the temperature in place; each "
             "sequence's log-softmax, FP32 under autocast, saved; the entropy over a contiguous "
             "copy, 128 rows at a time; in the backward pass the in-place divide's CopySlices "
             "makes two B × (C + 1) × V buffers, the slice's clone and its gradient";
    case Loss::kDpo:
      return "TRL's DPOTrainer loss (trl/trainer/dpo_trainer.py, _compute_loss; "
             "trl/trainer/utils.py, selective_log_softmax and entropy_from_logits; TRL "
             "f2cd5771): each pair's chosen and rejected sequences in one batch; the logits of "
             "every position, FP32 under autocast, and each sequence's log-probabilities "
             "(an FP32 logsumexp each, or in BF16 its log-softmax, saved); the "
             "reference's forward pass under no_grad and its logits, held to the loss's end; the "
             "entropy over a contiguous copy of the shifted logits, 128 rows at a time; in the "
             "backward pass the shifted logits' gradient written into zeros of the whole";
    case Loss::kTeFused:
      return "the BF16 logits alone: Transformer Engine's parallel_cross_entropy (TE 2.0 to 2.17, "
             "transformer_engine/pytorch/triton/cross_entropy.py) writes the gradient over them in "
             "the forward pass and saves them";
    case Loss::kVocabParallel:
      break;
  }
  return "BF16 logits plus their FP32 copy for Megatron-LM's vocab-parallel cross-entropy";
}

// The stage's activations, and on the stage that holds them the logits and the loss.
void add_activations_and_logits(Ledger& ledger, const ModelShape& shape, const TrainingSetup& setup,
                                const StagePlacement& stage, const ActivationsPerLayer& layer) {
  const Pen& pen = ledger.pen();
  const bool first = stage.role == StageRole::kFirst;
  // Under 1F1B the first stage of an even split holds p micro-batches of L/p layers, L layers'
  // worth; the last stage one micro-batch of its L/p. Under uneven stages, stage i holds p - i
  // micro-batches of its own layers; under the interleaved schedule, its chunks in flight
  // (placement.hpp, micro_batches_in_flight).
  const double in_flight = stage.micro_batches_in_flight;
  const int v = setup.layout.virtual_pipeline_stages;
  const bool even = pipeline_split(setup.layout, shape.num_layers).even;
  Figure held = pen.count(stage.layers, "layers");
  if (v > 1) {
    held = pen.said(in_flight, [&] {
      return number_text(in_flight) + " micro-batches' worth in flight (" +
             number_text(in_flight * v) + " chunks of the interleaved schedule, " +
             std::to_string(v) + " a device)";
    }) * held;
  } else if (first && even && in_flight == setup.layout.pipeline_parallel) {
    held = pen.count(shape.num_layers, "layers");
  } else if (in_flight > 1) {
    held = pen.count(in_flight, "micro-batches in flight") * held;
  }
  // Each multi-token-prediction module runs one more layer over the sequence, saved as one.
  // A hybrid's MTP layer is a full-attention layer (Qwen3.5's mtp.layers): its own kind's bytes.
  // Where a layer is the mean of dense and mixture layers, the MTP module's layer is a mixture one.
  const bool hybrid = hybrid_linear_attention(shape);
  const bool mtp_apart = hybrid || layer.mixture_kept_per_token > 0;
  if (stage.mtp_layers > 0 && !mtp_apart) held = held + pen.count(stage.mtp_layers, "MTP layers");
  ledger.add(Term::kActivations,
             held * pen.count(layer.tokens_on_device, "tokens") * layer.kept_per_token,
             [&] { return layer.source; });
  if (stage.mtp_layers > 0 && mtp_apart) {
    ledger.add(
        Term::kActivations,
        pen.count(stage.mtp_layers, "MTP layers") * pen.count(layer.tokens_on_device, "tokens") *
            (hybrid
                 ? pen.count(layer.attention_kept_per_token, "B a token (a full-attention layer)")
                 : pen.count(layer.mixture_kept_per_token, "B a token (a mixture layer)")),
        [hybrid] {
          return hybrid ? "each MTP module's layer, a full-attention one"
                        : "each MTP module's layer, a mixture one";
        });
  }
  if (layer.recompute_working_bytes > 0) {
    ledger.add(Term::kActivations,
               pen.said(layer.recompute_working_bytes,
                        [&] {
                          return "one layer rebuilt (" +
                                 format_bytes(layer.recompute_working_bytes) + ")";
                        }),
               [] { return ""; });
  }
  if (layer.dispatch.value() > 0) {
    ledger.add(Term::kActivations, layer.dispatch, [&] { return dispatch_source(setup); });
  }
  if (!setup.logits) return;
  const bool holds_logits = setup.layout.pipeline_parallel == 1 || stage.role == StageRole::kLast;
  if (!holds_logits) {
    ledger.add(Term::kLogits,
               pen.said(0, [] { return "none here: the last pipeline stage holds them"; }),
               [&] { return loss_source(setup.loss); });
    return;
  }
  Figure logits = logits_figure(shape, setup, layer.tokens_on_device, pen);
  // Each multi-token-prediction module computes its own logits and loss, held with the main ones
  // until the backward pass (Megatron-LM's process_mtp_loss).
  if (stage.mtp_layers > 0) {
    logits = logits * pen.said(1 + stage.mtp_layers, [&] {
      return "(1 + " + number_text(stage.mtp_layers) + " MTP modules)";
    });
  }
  ledger.add(Term::kLogits, logits, [&]() -> std::string {
    if (setup.loss == Loss::kGrpo && setup.rl_trainer == RlTrainer::kVerl) {
      return "verl's policy loss (verl 1dda039b: verl/workers/engine/fsdp/transformer_impl.py, "
             "prepare_model_outputs; verl/utils/torch_functional.py, logprobs_from_logits): the "
             "BF16 logits of every packed token, prompt and response (use_remove_padding), "
             "divided by the temperature out of place, and flash-attn's cross_entropy_loss, which "
             "writes its gradient over the quotient (inplace_backward): the logits and the "
             "quotient, or the quotient and the logits' gradient, 4 B a logit";
    }
    if (setup.loss == Loss::kFp32Upcast && loss_compiled(setup.compile)) {
      return "cross_entropy over FP32-upcast logits compiled (torchtitan's "
             "compile.components' \"loss\"): Inductor fuses the upcast into the softmax, keeps "
             "the BF16 logits and each token's FP32 max and log-sum-exp, and writes the BF16 "
             "gradient in the backward pass: 4 B a logit, 8 a token";
    }
    if (setup.loss == Loss::kChunkedWrapper && loss_compiled(setup.compile)) {
      return "torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py) with its "
             "CrossEntropyLoss compiled (compile.components' \"loss\": BaseLoss._maybe_compile "
             "wraps cross_entropy_loss in torch.compile): the final hidden states split into "
             "chunks, each run through the eager output layer and the compiled cross_entropy, "
             "which keeps the chunk's BF16 logits and each token's FP32 max and log-sum-exp and "
             "writes the BF16 gradient, no FP32 copy; at the output layer's backward the chunk's "
             "logits and gradient, 4 B a logit, beside its hidden-state gradient, 2·h a token; "
             "the chunks' hidden-state gradients copied into an FP32 buffer (GradAccumulator)";
    }
    if (setup.loss == Loss::kFp32Upcast && saves_gathered_inputs(setup)) {
      return "cross_entropy over FP32-upcast logits under DTensor's loss_parallel (torch/"
             "distributed/tensor/parallel/loss.py): the saved log-softmax, zeros_like of it, its "
             "exp and their sum at its backward peak (_nll_loss_and_log_softmax_backward), 16 B "
             "a logit; and the output layer's all-gathered input, 2·h a token whole on every rank";
    }
    return loss_source(setup.loss);
  });
  // The logits and loss live on the last stage from the end of the forward pass until the output
  // layer's backward; full recomputation rebuilds the last transformer layer only after that, in
  // the memory the logits freed, and a layer's all-to-all buffers are freed before the output
  // layer runs. So that stage holds L·kept plus the larger of the two.
  const double reused = std::min(layer_working_bytes(layer), logits.value());
  if (reused > 0) {
    const bool both = layer.recompute_working_bytes > 0 && layer.dispatch.value() > 0;
    ledger.subtract(Term::kActivations,
                    pen.said(reused,
                             [&] {
                               return std::string("the logits' memory ") +
                                      (both ? "they reuse" : "it reuses") + " (" +
                                      format_bytes(reused) + ")";
                             }),
                    [] { return ""; });
  }
}

// FP8 training (fp8.hpp): each stage's FP8 GEMMs hold an FP8 copy of their weights (and the
// transpose on Hopper) through the step, and each GEMM its scaling state. Under ZeRO-3 (FSDP)
// no copy is kept: each layer's weights are cast to FP8 when gathered (torchao's
// enable_fsdp_float8_all_gather casts each shard before the all-gather; Transformer Engine
// re-quantises the gathered weight in the backward pass), transient like the gathered BF16
// weights, which this estimate does not count either.
void add_fp8_weights(Ledger& ledger, const ModelShape& shape, const TrainingSetup& setup,
                     const StagePlacement& stage) {
  const Pen& pen = ledger.pen();
  const ParallelLayout& layout = setup.layout;
  const bool held = layout.zero_stage < 3;
  const double cache_bytes = fp8_weight_cache_bytes_per_value(setup);
  const Fp8Layer here = fp8_layers(shape, layout, stage.first_layer, stage.layers);
  const double weights = here.weights;
  const double gemms = here.gemms;
  const Fp8Recipe recipe = setup.fp8_recipe;
  // Megatron-FSDP's FP8 parameters (--fp8-param-gather under optim_grads_params): their FP8
  // data sharded over D with the rest, one byte a value (mixed_precision.py: the raw row-wise
  // data alone in the shard and the gathered bucket).
  const bool fsdp_parameters = setup.fp8_param_gather && megatron_fsdp(setup);
  const Figure cache =
      fsdp_parameters
          ? pen.bytes(kFp8Bytes) * pen.count(weights, "FP8 GEMM weights (the parameters)") /
                pen.count(static_cast<double>(layout.data_parallel) * layout.context_parallel,
                          "ZeRO shards")
      : !held
          ? pen.said(
                0,
                [] { return "no FP8 weight copies held under ZeRO-3 (cast per gathered layer)"; })
      : recipe == Fp8Recipe::kMxfp8 || recipe == Fp8Recipe::kBlockwise
          ? pen.said(cache_bytes,
                     [recipe] {
                       return recipe == Fp8Recipe::kMxfp8
                                  ? "2 × (1 + 1/32) B (MXFP8's row- and column-wise copies, each "
                                    "with an E8M0 scale per 32 values)"
                                  : "2 × (1 + 4/16,384) B (blockwise's row- and column-wise "
                                    "copies, each with an FP32 scale per 128 × 128 block)";
                     }) *
                pen.count(weights, "FP8 GEMM weights")
          : pen.number(fp8_weight_copies(setup)) * pen.bytes(kFp8Bytes) *
                pen.count(weights, cache_bytes == kFp8WeightCopiesTnOnly * kFp8Bytes
                                       ? "FP8 GEMM weights (each FP8 weight and its transpose)"
                                       : "FP8 GEMM weights (the FP8 weight; no transpose on "
                                         "Blackwell)");
  const double per_gemm = fp8_scaling_bytes_per_gemm(setup);
  const double history = fp8_amax_history_length(setup);
  const Figure scaling = pen.bytes(per_gemm) * pen.said(gemms, [&] {
    return number_text(gemms) + " GEMMs' scaling state (" + number_text(kFp8TensorsPerGemm) +
           " FP8 tensors × " +
           (recipe == Fp8Recipe::kDelayed
                ? "(" + number_text(history) + " amax history + scale + scale_inv)"
            : recipe == Fp8Recipe::kTensorwise ? std::string("(scale + amax)")
                                               : std::string("nothing beyond the block scales")) +
           " × 4 B)";
  });
  const bool parameters = setup.fp8_param_gather;
  ledger.add(Term::kFp8Weights, cache + scaling, [recipe, history, parameters, fsdp_parameters] {
    const std::string kept =
        recipe == Fp8Recipe::kMxfp8
            ? "an MXFP8 copy of each linear weight in both orientations, each with its E8M0 "
              "scales (MXFP8BlockScaling)"
        : recipe == Fp8Recipe::kBlockwise
            ? "a blockwise FP8 copy of each linear weight in both orientations, each with an "
              "FP32 scale per 128 × 128 block (Float8BlockScaling; "
              "tensor/float8_blockwise_tensor.py, Float8BlockQuantizer)"
            : "an FP8 copy of each linear weight for the step, with its transpose where cuBLAS "
              "runs only TN FP8 GEMMs (Hopper; tests/pytorch/test_cpu_offloading.py, "
              "_estimate_cached_weight_size)";
    const std::string state =
        recipe == Fp8Recipe::kDelayed
            ? "DelayedScaling's amax history per FP8 tensor (module/base.py, set_meta_tensor; "
              "amax_history_len " +
                  number_text(history) +
                  (history == kMegatronFp8AmaxHistoryLength
                       ? ", Megatron-LM's --fp8-amax-history-len default"
                       : ", Transformer Engine's default") +
                  ")"
        : recipe == Fp8Recipe::kTensorwise ? "Float8CurrentScaling's scale and amax per FP8 tensor"
                                           : "no per-tensor scaling state";
    if (fsdp_parameters) {
      // Megatron-FSDP (param_and_grad_buffer.py: the "float8" group's uint8 shard; TE's
      // transpose made after each backward gather, tensor/utils.py, and dropped at its release).
      return "the linear weights are FP8 parameters (--fp8-param-gather: Transformer Engine's "
             "fp8_model_init), their one-byte data sharded by Megatron-FSDP with the rest and "
             "gathered in FP8 (param_and_grad_buffer.py, the float8 group's uint8 buffers), "
             "with no BF16 copy; on Hopper each gathered layer's transpose is made for its "
             "backward pass and freed with it; and " +
             state + "; the embedding, the output layer and the norms stay BF16";
    }
    if (parameters) {
      // Megatron-LM's --fp8-param-gather (megatron/core/fp8_utils.py, get_fp8_context with
      // is_init: fp8_model_init): Transformer Engine quantises each GEMM weight as it is made
      // (module/base.py, reset_parameters; the BF16 value kept on the host until the distributed
      // optimiser has cloned its FP32 shard) and keeps the column-wise copy after each gather
      // (post_all_gather_processing).
      const std::string orientations =
          recipe == Fp8Recipe::kMxfp8 ? "each in both orientations with its E8M0 scales"
          : recipe == Fp8Recipe::kBlockwise
              ? "each in both orientations with its 128 × 128 blocks' FP32 scales"
              : "each with its transpose where cuBLAS runs only TN FP8 GEMMs (Hopper)";
      return "the linear weights are FP8 parameters (--fp8-param-gather: Transformer Engine's "
             "fp8_model_init, module/base.py reset_parameters), " +
             orientations + ", with no BF16 copy on the device, and " + state +
             "; the embedding, the output layer, the norms and the router stay BF16";
    }
    return "Transformer Engine keeps the BF16 parameter and " + kept + ", and " + state +
           "; the router stays BF16. Under ZeRO-3 the weights are cast to FP8 per gathered layer "
           "(torchao's enable_fsdp_float8_all_gather gathers 1 B per weight instead of 2), "
           "transient like the gathered BF16 weights, which this estimate does not count";
  });
}

}  // namespace

LayerStack layer_stack_of(const TrainingSetup& setup) {
  LayerStack stack;
  stack.saves_gathered_inputs = saves_gathered_inputs(setup);
  stack.transformer_engine_fp8 = transformer_engine_fp8(setup);
  stack.fp8_saved_input_bytes = fp8_saved_input_bytes_per_value(setup);
  stack.eager_modules = stack_row(setup.stack).eager_modules && !blocks_compiled(setup.compile);
  stack.silu_apart = (stack_row(setup.stack).eager_modules || stack_row(setup.stack).silu_apart) &&
                     !blocks_compiled(setup.compile);
  stack.torchtitan_mixture = stack_row(setup.stack).torchtitan_mixture;
  stack.megatron_routing = stack_row(setup.stack).megatron_routing;
  return stack;
}

std::vector<SavedTensor> llama_block_saved_tensors(const ModelShape& shape,
                                                   const TrainingSetup& setup,
                                                   bool flash_attention) {
  return llama_block_tensors(shape, setup, layer_stack_of(setup), flash_attention);
}

namespace {

// A hybrid's layer (models.hpp, hybrid_linear_attention): each kind its layers hold (full
// attention, a linear mixer, or one part alone), counted tensor by tensor, as one layer of the
// mean of the model's kinds, exact on each stage when every stage holds the kinds in the model's
// ratio (hybrid_stages_hold_model_mix); otherwise each layer is counted as the largest kind, an
// upper bound. A layer rebuilt under full recomputation is the largest kind.
ActivationsPerLayer hybrid_layer_activations(const ModelShape& shape, const TrainingSetup& setup,
                                             const LayerStack& stack, int micro_batch_sequences,
                                             bool flash_attention, const Pen& pen) {
  const double layers = shape.num_layers;
  struct KindLayers {
    char kind;
    double count;
    ActivationsPerLayer activations;
  };
  std::vector<KindLayers> kinds;
  for (const char* kind = kHybridLayerKinds; *kind != '\0'; ++kind) {
    const double count = layers_of_kinds_between(shape, 0, layers, std::string_view(kind, 1));
    if (count == 0) continue;
    kinds.push_back({*kind, count,
                     layer_kind_activations(shape, setup, stack, micro_batch_sequences,
                                            flash_attention, pen, *kind)});
  }
  ActivationsPerLayer layer = kinds.back().activations;
  const bool mean = hybrid_stages_hold_model_mix(shape, setup.layout);
  Figure kept;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const KindLayers& kind = kinds[i];
    const Figure& per_token = kind.activations.kept_per_token;
    if (mean) {
      const Figure share = pen.said(kind.count, [&] {
        return format_count(kind.count) + " " + layer_kind_name(shape, kind.kind);
      }) * per_token;
      kept = i == 0 ? share : kept + share;
    } else if (i == 0 || per_token.value() > kept.value()) {
      kept = per_token;
    }
    layer.recompute_working_bytes =
        std::max(layer.recompute_working_bytes, kind.activations.recompute_working_bytes);
    layer.kinds.push_back({kind.kind, per_token.value()});
    if (kind.kind == 'L' || kind.kind == 'l') layer.linear_kept_per_token = per_token.value();
    if (kind.kind == 'A' || kind.kind == 'a') layer.attention_kept_per_token = per_token.value();
  }
  layer.kept_per_token = mean ? kept / pen.count(layers, "layers") : kept;
  layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
  if (pen.writing()) {
    std::string mix;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (i > 0) mix += i + 1 == kinds.size() ? " and " : ", ";
      mix += format_count(kinds[i].count) + " " + layer_kind_name(shape, kinds[i].kind) + " (" +
             format_count(kinds[i].activations.kept_per_token.value()) + " B a token)";
    }
    const std::string kernels =
        short_conv_mixer(shape)
            ? "the linear layers' as transformers' Lfm2ShortConv runs them on causal-conv1d "
              "(v1.6.1)"
        : global_attention_mixer(shape)
            ? "the global layers' as the llama-block model counts an attention layer of their "
              "widths"
        : kimi_delta_mixer(shape)
            ? "the linear layers' as transformers' KimiLinearDeltaAttention runs fla's chunked "
              "KDA rule (v0.5.2, fla/ops/kda/chunk.py) and causal-conv1d (v1.6.1)"
        : mamba2_mixer(shape)
            ? "the Mamba-2 blocks' as transformers' NemotronHMamba2Mixer runs mamba_ssm's "
              "mamba_split_conv1d_scan_combined (v2.3.2.post1, ssd_combined.py)"
        : mamba1_mixer(shape)
            ? "the Mamba layers' as transformers' JambaMambaMixer runs causal-conv1d (v1.6.1) "
              "and mamba_ssm's selective_scan_fn (v2.3.2.post1, selective_scan_interface.py)"
        : lightning_mixer(shape)
            ? "the lightning-attention layers' as transformers' MiniMaxLightningAttention runs "
              "them in PyTorch, block by block (modeling_minimax.py)"
            : "the linear layers' as fla's chunked gated delta rule (v0.5.2, "
              "fla/ops/gated_delta_rule/chunk.py) and causal-conv1d (v1.6.1) save them";
    layer.source =
        "a hybrid of " + mix +
        ", each kind's tensors one by one (docs/activations.md): " + kernels +
        ", the attention's as the llama-block model counts them, Korthikanti's "
        "equation describing attention layers alone" +
        (mean ? std::string("; every stage holds the model's mix of kinds, so a layer is their "
                            "mean")
              : std::string("; a stage holds another mix of kinds than the model's, so every "
                            "layer is counted as the largest kind, an upper bound")) +
        "; the layer's input alone under full recomputation";
  }
  return layer;
}

}  // namespace

ActivationsPerLayer layer_activations(const ModelShape& shape, const TrainingSetup& setup,
                                      int micro_batch_sequences, bool flash_attention,
                                      const Pen& pen) {
  // DeepSeek Sparse Attention's layers are counted tensor by tensor whichever model is chosen:
  // Korthikanti's equation describes dense attention.
  // So are Megatron-LM's recompute modules (layers_tensor_by_tensor).
  const LayerActivations model =
      sparse_attention(shape) || (kBeyondThePlate && recomputes_modules(setup))
          ? llama_block_layer_activations
          : layer_activations_of(setup.activation_model);
  const LayerStack stack = layer_stack_of(setup);
  // A hybrid's layers of both kinds, or the model's one kind of layer.
  const auto layer_of = [&](const ModelShape& kind) {
    return hybrid_linear_attention(kind)
               ? hybrid_layer_activations(kind, setup, stack, micro_batch_sequences,
                                          flash_attention, pen)
               : model(kind, setup, stack, micro_batch_sequences, flash_attention, pen);
  };
  ActivationsPerLayer layer = layer_of(shape);
  // A mixture with dense layers mixed in: both kinds counted (layer_mix.cpp).
  if (mixes_dense_layers(shape) && !one_part_layers(shape)) {
    layer =
        with_dense_layers(std::move(layer), layer_of(dense_layer_shape(shape)), shape, setup, pen);
  }
  if (kBeyondThePlate && setup.kbit_prep) {
    // prepare_model_for_kbit_training upcasts the embedding to FP32, and the FP32 norms and the
    // 4-bit layers (bitsandbytes' Linear4bit returns its input's dtype) keep the residual stream
    // in FP32: each layer's input, the one tensor a checkpointed layer keeps, is FP32.
    layer.kept_per_token = layer.kept_per_token * pen.said(kFp32Bytes / kBf16Bytes, [] {
      return std::string("2 (the residual stream in FP32)");
    });
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
    if (pen.writing()) {
      layer.source +=
          "; under prepare_model_for_kbit_training (peft/utils/other.py) the embedding and norms "
          "are FP32, so each layer's input is FP32";
    }
  }
  if (kBeyondThePlate && setup.lora_rank > 0) add_adapter_intermediates(shape, setup, pen, layer);
  if (kBeyondThePlate && shape.num_experts > 1) {
    layer.dispatch = mixture_dispatch_buffers(shape, setup, layer, pen);
  }
  return layer;
}

void add_stage_terms(Ledger& ledger, const ModelShape& shape, const TrainingSetup& setup,
                     const Placement& placement, const StagePlacement& stage,
                     const ActivationsPerLayer& layer) {
  const Pen& pen = ledger.pen();
  add_activations_and_logits(ledger, shape, setup, stage, layer);
  if (kBeyondThePlate && setup.lora_rank > 0 && setup.base_weights != BaseWeights::kBf16) {
    // bitsandbytes dequantises one layer's frozen weight to BF16 at a time.
    const Figure largest = pen.bytes(kBf16Bytes) * pen.count(placement.linear.largest_weight,
                                                             "(the largest linear weight)");
    const double t = setup.layout.tensor_parallel;
    ledger.add(Term::kDequantization, t > 1 ? largest / pen.number(t) : largest, [] {
      return "bitsandbytes' matmul_4bit and MatMul8bitLt dequantise the frozen weight to BF16 for "
             "the matmul and its backward, one layer at a time";
    });
  }
  if (kBeyondThePlate && transformer_engine_fp8(setup))
    add_fp8_weights(ledger, shape, setup, stage);
}

}  // namespace trainmem
