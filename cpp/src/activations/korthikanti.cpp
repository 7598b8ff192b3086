// The plate's activation model: Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", MLSys 2023, equation 1 and Table 2, a GPT block's saved activations per
// layer (activations.hpp names each constant).
#include <string>

#include "activations/layer.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

// Korthikanti's MLP share describes a GPT MLP of 4·h (its 16 = 8 for the 4h-wide first
// projection's output, 8 for GeLU's).
constexpr double kKorthikantiFfnMultiple = 4;

namespace {

// Norms over the queries and keys, beyond the GPT block the paper counts (Qwen3's q_norm and
// k_norm over each head, Megatron-LM's --qk-layernorm; OLMo 2's over the whole projections):
// each saves its BF16 input, and per row normalised an FP32 1/RMS (LayerNorm's mean besides),
// inside the attention, so split by t. Bytes per token, before the split.
double query_key_norms(const ModelShape& shape) {
  if (!shape.qk_norm && !shape.qk_norm_whole) return 0;
  const double d = head_dim_of(shape);
  const double heads = shape.num_attention_heads + shape.num_key_value_heads;
  const double rows = shape.qk_norm ? heads : 2;  // a row per head, or one per projection
  const double statistics = shape.norm_bias ? 2 : 1;
  return kBf16Bytes * heads * d + kFp32Bytes * statistics * rows;
}

// Where the model's words come from, and what a setup changes in them.
std::string korthikanti_source(const ModelShape& shape, const TrainingSetup& setup,
                               const LayerStack& stack) {
  std::string source = "Korthikanti et al., MLSys 2023, equation 1 and Table 2";
  const bool residual = residual_dropout(shape, setup, kKorthikantiDropsOut);
  const bool probabilities = probability_dropout(shape, setup, kKorthikantiDropsOut);
  if (!residual) {
    source +=
        "; without residual dropout, section 4.1's terms less its masks: 32 of the 34 (the "
        "attention's and the MLP's 1-byte masks go)";
  }
  if (!probabilities) {
    source +=
        "; without dropout on the probabilities, 2·a·s/h of the scores' 5 (the softmax alone)";
  }
  if (query_key_norms(shape) > 0) {
    source +=
        "; beyond the GPT block, the query and key norms' inputs and their statistics, "
        "2·(a + k)·d + 4 B per normalised row a token, split by t";
  }
  if (stack.saves_gathered_inputs) {
    source +=
        "; under DTensor's sequence parallelism (torchtitan's apply_tp) the QKV projection's and "
        "the MLP's inputs are saved all-gathered: 4 of the 34 whole on every rank, the rest "
        "split by t";
  }
  if (shape.num_experts > 1 &&
      (shape.moe_ffn_hidden_size > 0 || shape.shared_expert_ffn_hidden_size > 0)) {
    source += "; top-" + std::to_string(shape.num_experts_per_token) +
              " routing and shared experts: section 4.1's MLP share (19) for each MLP a token "
              "passes through, its 16 scaled by the MLP's width over 4h";
  } else if (shape.num_experts_per_token > 1) {
    source += "; top-" + std::to_string(shape.num_experts_per_token) +
              " routing: section 4.1's MLP share (19) once more for each expert past the first";
  }
  if (kBeyondThePlate && stack.torchtitan_mixture && shape.num_experts > 1) {
    source +=
        "; under torchtitan its router and combine beyond the MLP shares (torchtitan/models/"
        "common/moe.py and token_dispatcher.py): the gate's FP32 input 4·h, the scores 4·E, "
        "the int64 indices 8·3·k (8·4·k under expert parallelism), the experts' outputs upcast "
        "to FP32 4·h·k and the sorted scores 4·k, bytes a token";
    if (shape.clamped_swiglu) {
      source +=
          "; gpt-oss's clamped SwiGLU beyond GroupedExperts' (14·f_e against 8·f_e, and its bias "
          "rows' int64 8·2, a routed copy) and its sinks' scale (4·a FP32, 2·a BF16) and scaled "
          "output 2·a·d (models/gpt_oss)";
    }
  }
  if (kBeyondThePlate && stack.megatron_routing && shape.num_experts > 1) {
    source +=
        "; under Megatron-LM its routing beyond the MLP shares (megatron/core/transformer/moe/"
        "router.py, moe_utils.py, token_dispatcher.py and experts.py at 23e00ed): the router's "
        "top-k indices and scores, the permutation's maps and the experts' probabilities, as the "
        "Llama block lists them";
  }
  if (stack.transformer_engine_fp8) {
    source +=
        "; under fp8-mixed the linear layers' saved inputs in FP8, 1 B instead of 2: the QKV and "
        "MLP inputs 2 to 1 each, fc2's input 8 to 4, the output projection's input 2 to 1, or 1 "
        "more beside FlashAttention's BF16 output (Transformer Engine's _Linear.forward and "
        "_LayerNormMLP.forward: saved_inputmat, ln_out and act_out quantised; fc1_out, the "
        "norms' inputs and FlashAttention's tensors BF16)";
  }
  if (latent_attention(shape)) {
    source +=
        "; its attention share assumes heads of h/a, which latent attention does not keep: the "
        "llama-block model counts latent attention's tensors";
  }
  return source;
}

}  // namespace

ActivationsPerLayer korthikanti_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  const LayerStack& stack,
                                                  int micro_batch_sequences, bool flash_attention,
                                                  const Pen& pen) {
  // torchtitan's per-op policy is defined by the operations it saves, a Llama block's: both
  // models count it tensor by tensor (activations.hpp, selective_op_saved_tensors).
  if (kBeyondThePlate && setup.recompute == Recompute::kSelectiveOp) {
    return llama_block_layer_activations(shape, setup, stack, micro_batch_sequences,
                                         flash_attention, pen);
  }
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double s = setup.sequence_length;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;

  ActivationsPerLayer layer;
  layer.tokens_on_device = s / layout.context_parallel * micro_batch_sequences;

  // FP8 training (fp8.hpp): the linear layers' inputs are saved in FP8. Of section 4.1's shares,
  // the QKV projection's input (2, not split by t) and the MLP's input (2, not split) become 1
  // each, fc2's input (GeLU's output, 8 of the MLP's 16) becomes 4; the output projection's input
  // (2, split) becomes 1, but where FlashAttention keeps its BF16 output for its own backward
  // pass, the projection's FP8 copy comes beside it (+1). Q, K and V (FlashAttention's, BF16),
  // fc1's output (the activation's BF16 input), the norms' inputs and the dropout masks stay.
  const bool fp8 = stack.transformer_engine_fp8;
  const double freed = fp8 ? kBf16Bytes - stack.fp8_saved_input_bytes : 0;
  const bool attention_keeps_output = flash_attention && setup.recompute != Recompute::kSelective;
  const double attention_output_change = !fp8                     ? 0
                                         : attention_keeps_output ? stack.fp8_saved_input_bytes
                                                                  : -freed;
  // Without dropout, the residuals' two masks go (each MLP's one of them).
  const double masks = residual_dropout(shape, setup, kKorthikantiDropsOut)
                           ? 0
                           : kKorthikantiDropoutMaskBytesPerTokenPerHidden;
  const double mlp_replicated = kKorthikantiMlpReplicatedBytesPerTokenPerHidden - freed - masks;
  const double mlp_sharded =
      kKorthikantiMlpShardedBytesPerTokenPerHidden - kKorthikantiFc2InputWidthPerHidden * freed;
  const double replicated = kKorthikantiReplicatedBytesPerTokenPerHidden - 2 * freed - 2 * masks;
  // Context parallelism over all-to-all (TE 2.8 on) saves the attention's output once more, before
  // it is exchanged back: 2 bytes for each of its a·d values, split over t.
  const double all_to_all_output = attention_keeps_output && cp_all_to_all_saves_output(setup)
                                       ? kBf16Bytes * a * head_dim_of(shape) / h
                                       : 0;
  const double sharded = kKorthikantiShardedBytesPerTokenPerHidden -
                         kKorthikantiFc2InputWidthPerHidden * freed + attention_output_change +
                         all_to_all_output + query_key_norms(shape) / h;

  // Top-k routing: each token's activations pass through k experts' MLPs, k - 1 more than a
  // dense layer's one (Korthikanti et al. 2023, section 4.1's MLP share; see activations.hpp).
  const double extra_mlps = shape.num_experts_per_token - 1;
  double extra_replicated = extra_mlps * mlp_replicated;
  double extra_sharded = extra_mlps * mlp_sharded;
  if (shape.num_experts > 1 &&
      (shape.moe_ffn_hidden_size > 0 || shape.shared_expert_ffn_hidden_size > 0)) {
    // Experts of a width of their own, and shared experts: each MLP a token passes through
    // keeps the share's 3 (its input and dropout mask) and 16 scaled from the 4·h-wide MLP the
    // share describes to its width; the k routed experts and the shared one stand in for the one
    // MLP the 34 holds.
    const double four_h = kKorthikantiFfnMultiple * shape.hidden_size;
    const double shared = shape.shared_expert_ffn_hidden_size > 0 ? 1 : 0;
    const double mlps = shape.num_experts_per_token + shared;
    extra_replicated = (mlps - 1) * mlp_replicated;
    extra_sharded = mlp_sharded * ((shape.num_experts_per_token * routed_expert_width(shape) +
                                    shape.shared_expert_ffn_hidden_size) /
                                       four_h -
                                   1);
  }
  double replicated_factor = 0;  // the bracket's first part: 34, 10 + 24/t…
  if (layout.sequence_parallel) {
    replicated_factor = (replicated + sharded + extra_replicated + extra_sharded) / t;
    // DTensor keeps the projections' all-gathered inputs whole: the QKV projection's and the
    // MLP's; in torchtitan's mixture the shared experts' for the MLP's (the routed copies follow
    // etp below: all-gathered without expert parallelism, moe_sharding.py).
    if (stack.saves_gathered_inputs) {
      const double gathered = shape.num_experts > 1
                                  ? kBf16Bytes * (shape.shared_expert_ffn_hidden_size > 0 ? 2 : 1)
                                  : kKorthikantiGatheredInputBytesPerTokenPerHidden;
      replicated_factor += gathered * (1 - 1 / t);
    }
  } else {
    replicated_factor = replicated + sharded / t + extra_replicated + extra_sharded / t;
  }
  // The routed copies a rank's experts read (llama_block.cpp, LlamaBlock's expert_tokens): where
  // each rank routes its own tokens (T/t under sequence parallelism, all T at t 1), Megatron-LM
  // gathers the copies over etp, so the experts' inputs (2 B of their 3-shares; the dropout mask is
  // the token's) are etp/t of the tokens' and their 16-shares, f/etp wide, stay split over t;
  // without sequence parallelism (t above 1) nothing is gathered and the 16-shares split over etp.
  // A capacity factor C pads the routed experts' shares (their 3 and 16 each) to C times.
  const double etp = expert_tensor_parallel_of(layout);
  if (shape.num_experts > 1) {
    const double width_ratio =
        shape.moe_ffn_hidden_size > 0
            ? routed_expert_width(shape) / (kKorthikantiFfnMultiple * shape.hidden_size)
            : 1;
    const double routed_sharded = mlp_sharded * shape.num_experts_per_token * width_ratio;
    const double routed_replicated = mlp_replicated * shape.num_experts_per_token;
    const double capacity = setup.capacity_factor > 0 ? setup.capacity_factor : 1;
    const double token_split = layout.sequence_parallel ? t : 1;
    replicated_factor += (capacity - 1) * routed_replicated / token_split;
    if (layout.sequence_parallel || t == 1) {
      const double routed_inputs = (kBf16Bytes - freed) * shape.num_experts_per_token;
      replicated_factor +=
          (capacity - 1) * routed_sharded / t + capacity * (etp - 1) * routed_inputs / token_split;
    } else {
      replicated_factor += routed_sharded * (capacity / etp - 1 / t);
    }
  }
  // torchtitan's router and combine (docs/activations.md, "torchtitan's mixture"), beyond section
  // 4.1's shares: the gate's FP32 copy of its input, the FP32 scores, the int64 indices, the
  // experts' outputs upcast to FP32 and the sorted scores, per token of the layer's on this rank
  // (split over t under expert parallelism, whole without it: LlamaBlock's routing_split); in
  // gpt-oss its experts' bias rows and its sinks' tensors too.
  if (kBeyondThePlate && stack.torchtitan_mixture && shape.num_experts > 1) {
    replicated_factor += torchtitan_beyond_mlp_bytes(shape, setup) / h;
  }
  // Megatron-LM's router, its dispatcher's permutation and its experts' weighted activation
  // (docs/activations.md, "Megatron-LM's routing"), beyond section 4.1's shares.
  if (kBeyondThePlate && stack.megatron_routing && shape.num_experts > 1) {
    replicated_factor += megatron_routing_bytes(shape, setup) / h;
  }
  const bool scores_stored = !flash_attention && setup.recompute == Recompute::kNone;
  const double score_bytes = probability_dropout(shape, setup, kKorthikantiDropsOut)
                                 ? kKorthikantiScoreBytesPerHeadPerTokenPair
                                 : kKorthikantiScoreBytesWithoutDropout;
  const double score_factor = score_bytes * a * s / (h * t);

  if (pen.writing()) layer.source = korthikanti_source(shape, setup, stack);
  if (setup.recompute == Recompute::kFull) {
    layer.kept_per_token = layer_input_per_token(shape, layout, pen);
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
    const double rebuilt =
        layer.tokens_on_device * h * (replicated_factor + (flash_attention ? 0 : score_factor));
    layer.recompute_working_bytes = rebuilt - layer.kept_bytes;
    return layer;
  }
  // s·b·h·(34 + 5·a·s/h) and its variants, per token: h × (the bracket's two parts), each number
  // named: "4,096 h × (34 + 320 (5·a·s/h, a = 32 heads, s = 8,192)) B".
  const Figure scores =
      scores_stored
          ? pen.said(score_factor,
                     [&] {
                       return number_text(score_factor) + " (" + number_text(score_bytes) +
                              "·a·s/" + (t > 1 ? "(h·t)" : "h") + ", a = " + number_text(a) +
                              " heads, s = " + number_text(s) + ")";
                     })
          : pen.said(0, [&] {
              return std::string(flash_attention ? "0 (FlashAttention: no scores)"
                                                 : "0 (the scores recomputed)");
            });
  layer.kept_per_token = pen.count(h, "h") * (pen.number(replicated_factor) + scores).in("B");
  layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
  return layer;
}

}  // namespace trainmem
