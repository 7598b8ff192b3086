// A Llama block's MLP steps (LlamaBlock, llama_block.hpp): the MLP's norm and input, the dense or
// routed experts' intermediates, a latent mixture's combined output, the shared experts, and
// torchtitan's router and combine. llama_block.cpp runs them in the block's order.
#include <string>

#include "activations/layer.hpp"
#include "activations/llama_block.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/decimal.hpp"

namespace trainmem {

namespace llama_block_steps {

void LlamaBlock::add_mlp_norm(SavedTensors& saved) const {
  if (one_norm_for_both) return;
  if (parallel) {
    add_norm_statistics(saved, "mlp-norm", "MLP norm");
  } else {
    add_norm(saved, "mlp-norm", "MLP norm");
  }
}

// The norm's output: the router's, and the MLP's or each routed expert's copy of it.
void LlamaBlock::add_mlp_input(SavedTensors& saved) const {
  const Words mlp_input_readers = shape.gated_mlp ? "gate and up projections" : "up projection";
  if (shape.num_experts > 1 && shape.moe_latent_size > 0) {
    // A latent mixture (transformers' NemotronHMoE, Megatron-LM's MoELayer): the router,
    // fc1_latent_proj and the shared experts read the norm's output; the experts read their copies
    // of fc1_latent_proj's output, l wide.
    saved.add("router-input", "MLP norm's output",
              "the router, fc1_latent_proj and the shared experts", "h", h, kBf16Bytes, whole);
    add_routed_input(
        saved, "mlp-input",
        linear_input("Experts' inputs (the latent projection's output" + top_k_text + ")"),
        routed_copies ? "l·top-k" : "l", shape.moe_latent_size, linear_input_bytes);
    return;
  }
  if (torchtitan_mixture) {
    add_torchtitan_router(saved);
    add_routed_input(saved, "mlp-input", "Experts' inputs (the norm's output" + top_k_text + ")",
                     routed_copies ? "h·top-k" : "h", h, kBf16Bytes);
    return;
  }
  // The router reads the norm's BF16 output; under FP8 the experts keep FP8 copies of their own.
  if (routed_copies || (fp8 && shape.num_experts > 1)) {
    saved.add("router-input", "MLP norm's output", "the router", "h", h, kBf16Bytes, whole);
  }
  if (routed_copies) {
    add_routed_input(saved, "mlp-input",
                     linear_input("Experts' inputs (the norm's output" + top_k_text + ")"),
                     "h·top-k", h, linear_input_bytes);
  } else if (!one_norm_for_both || fp8) {
    // Phi's MLP reads the tensor Q, K and V saved, but under FP8 keeps an FP8 copy of its own.
    saved.add("mlp-input", linear_input("MLP norm's output" + gathered_text), mlp_input_readers,
              "h", h, linear_input_bytes, projections_input);
  }
}

// The MLP's own tensors, or the routed experts', top-k copies of them.
void LlamaBlock::add_mlp(SavedTensors& saved) const {
  if (kBeyondThePlate && gpt_oss_experts) return add_gpt_oss_experts(saved);
  const Words width_name = shape.num_experts > 1 && shape.moe_ffn_hidden_size > 0 ? "f_e" : "f";
  const Words ffn_elements = routed_copies ? width_name + "·top-k" : width_name;
  if (shape.gated_mlp) {
    saved.add("gate-output", "Gate projection's output" + top_k_text + mlp_dtype_text,
              silu_apart ? "SiLU" : "the fused activation × up (SiLU, or GELU in Gemma)",
              ffn_elements, f * top_k, mlp_bytes, by_expert_width);
    saved.add("up-output", "Up projection's output" + top_k_text + mlp_dtype_text,
              silu_apart ? "the product with SiLU's output" : "the fused activation × up",
              ffn_elements, f * top_k, mlp_bytes, by_expert_width);
    if (silu_apart) {
      saved.add("activation-output", "SiLU's output" + top_k_text + mlp_dtype_text,
                "the product with up", ffn_elements, f * top_k, mlp_bytes, by_expert_width);
    }
    saved.add("product", linear_input("Activation × up" + top_k_text) + mlp_dtype_text,
              "down projection", ffn_elements, f * top_k, fp8 ? linear_input_bytes : mlp_bytes,
              by_expert_width);
  } else {
    // A plain MLP: the activation (GELU, ReLU) keeps its input, the down projection its output.
    saved.add("up-output", "Up projection's output" + top_k_text + mlp_dtype_text,
              "the activation (GELU, ReLU)", ffn_elements, f * top_k, mlp_bytes, by_expert_width);
    saved.add("activation-output",
              linear_input("Activation's output" + top_k_text) + mlp_dtype_text, "down projection",
              ffn_elements, f * top_k, fp8 ? linear_input_bytes : mlp_bytes, by_expert_width);
  }
}

// gpt-oss's experts under torchtitan (GptOssGroupedExperts.forward and swiglu, models/gpt_oss/
// moe.py at b5bcd76c), per routed copy: mlp1's grouped GEMM plus its bias gives the gate and up
// halves interleaved, 2·f_e wide; each half is a strided view of it, clamped (the gate at 7, up to
// ±7), and each clamp saves its view, so the whole sum is kept. The gate's clamped copy and
// sigmoid(1.702 · gate) are saved by their product, which addcmul saves beside up's clamped copy
// (out = glu + glu · up); mlp2's grouped GEMM saves that output. Each bias reaches its rows through
// repeat_interleave, an index_select that saves its int64 row index (two a copy). The bias casts
// and ScaleBiasForward save nothing (FSDP2's BF16 parameters).
void LlamaBlock::add_gpt_oss_experts(SavedTensors& saved) const {
  const Words elements = routed_copies ? "f_e·top-k" : "f_e";
  saved.add("gate-up-output", "Gate and up projection's output with its bias" + top_k_text,
            "both clamps (the gate and up halves are views of it)",
            routed_copies ? "2·f_e·top-k" : "2·f_e", 2 * f * top_k, kBf16Bytes, by_expert_width);
  saved.add("gate-clamped", "Gate half, clamped at 7" + top_k_text, "the product with its sigmoid",
            elements, f * top_k, kBf16Bytes, by_expert_width);
  saved.add("activation-output", "Sigmoid of 1.702 × the clamped gate" + top_k_text,
            "the sigmoid and the product with the gate", elements, f * top_k, kBf16Bytes,
            by_expert_width);
  saved.add("glu-output", "Clamped gate × its sigmoid" + top_k_text,
            "addcmul (the product with up + 1)", elements, f * top_k, kBf16Bytes, by_expert_width);
  saved.add("up-clamped", "Up half, clamped to ±7" + top_k_text, "addcmul", elements, f * top_k,
            kBf16Bytes, by_expert_width);
  saved.add("product", linear_input("(Up + 1) × the gated gate" + top_k_text),
            "down projection (mlp2's grouped GEMM)", elements, f * top_k, linear_input_bytes,
            by_expert_width);
  saved.add("bias-rows", "Each copy's expert, for the two biases (repeat_interleave)",
            "the biases' index_select", routed_copies ? "2·top-k" : "2", 2 * top_k, 8,
            routing_split, "int64");
}

// A latent mixture's combined expert output, l wide: fc2_latent_proj's input.
void LlamaBlock::add_latent_output(SavedTensors& saved) const {
  if (shape.num_experts <= 1 || shape.moe_latent_size <= 0) return;
  saved.add("latent-combined", "The experts' combined output, in the latent width",
            "fc2_latent_proj", "l", shape.moe_latent_size, kBf16Bytes, whole);
}

// The routed copies the experts read, `width` wide: top-k a token, times expert_tokens where the
// copies are gathered over etp (etp/t of them: a split of t/etp, or more than top-k at etp above
// t).
void LlamaBlock::add_routed_input(SavedTensors& saved, const Words& id, const Words& name,
                                  const Words& elements, double width, double dtype_bytes) const {
  if (expert_tokens > 1) {
    saved.add(id, name, shape.gated_mlp ? "gate and up projections" : "up projection",
              elements + "·" + shortest_decimal(expert_tokens) + " (gathered over etp)",
              width * top_k * expert_tokens, dtype_bytes, 1);
    return;
  }
  saved.add(id, name, shape.gated_mlp ? "gate and up projections" : "up projection", elements,
            width * top_k, dtype_bytes, 1 / expert_tokens);
}

// torchtitan's TokenChoiceTopKRouter and its dispatcher's reorder (torchtitan/models/common/moe.py
// and token_dispatcher.py, b5bcd76c): the gate runs under autocast(float32), which casts the norm's
// output to FP32 and saves that copy; the score function (sigmoid or softmax) saves its FP32
// output; scores.gather saves the top-k expert ids; _local_reorder's indexing saves the argsort of
// them (for the scores) and each copy's token index (for the tokens), int64; under expert
// parallelism _permute's indices into the received copies too. route_norm's division (4 B a copy
// and a token) is left out.
void LlamaBlock::add_torchtitan_router(SavedTensors& saved) const {
  const double copies = shape.num_experts_per_token;
  const bool across_ranks = setup.layout.expert_parallel > 1;
  saved.add("router-input", "MLP norm's output, cast to FP32 by the gate's autocast",
            "the router's gate (autocast to float32)", "h", h, kFp32Bytes, routing_split);
  saved.add("router-scores", "Router's scores (sigmoid or softmax output)",
            "the score function and the top-k gather", "E", shape.num_experts, kFp32Bytes,
            routing_split);
  saved.add("routing-indices",
            across_ranks ? "Expert ids, their argsort, token indices and the received copies' order"
                         : "Expert ids, their argsort and token indices",
            "the gathers of the scores and the tokens", across_ranks ? "4·top-k" : "3·top-k",
            (across_ranks ? 4 : 3) * copies, 8, routing_split, "int64");
}

// torchtitan's combine (token_dispatcher.py, combine): the experts' outputs, back in the copies'
// order, upcast to FP32 and multiplied by the routing scores, which the product saves for each
// other's gradient, then cast back and scatter-added into the tokens.
void LlamaBlock::add_torchtitan_combine(SavedTensors& saved) const {
  if (!torchtitan_mixture) return;
  saved.add("combine-output", "Experts' outputs" + top_k_text + ", upcast to FP32",
            "the product with the routing scores", routed_copies ? "h·top-k" : "h", h * top_k,
            kFp32Bytes, routing_split);
  saved.add("combine-scores", "Routing scores in the copies' order",
            "the product with the experts' outputs", routed_copies ? "top-k" : "1", top_k,
            kFp32Bytes, routing_split);
}

void LlamaBlock::add_shared_experts(SavedTensors& saved) const {
  if (shared_f <= 0) return;
  // The shared experts' one MLP reads the norm's output that the router saved, and saves what
  // a dense gated MLP saves (DeepseekV3MoE's shared_experts, Qwen2-MoE's shared_expert); under
  // FP8 it keeps an FP8 copy of its input of its own. torchtitan's router saves an FP32 copy,
  // so its shared experts' gate and up projections save the BF16 output themselves, all-gathered
  // under tensor parallelism (moe_sharding.py: the shared FeedForward's input made Replicate).
  if (fp8 || torchtitan_mixture) {
    saved.add("shared-input",
              fp8 ? "Shared experts' input (the norm's output), in FP8"
                  : "Shared experts' input (the norm's output)" + gathered_text,
              "the shared experts' gate and up projections", "h", h, linear_input_bytes,
              torchtitan_mixture ? projections_input : whole);
  }
  if (shape.gated_mlp) {
    saved.add("shared-gate-output", "Shared experts' gate projection output",
              silu_apart ? "SiLU" : "the fused activation × up", "f_s", shared_f, kBf16Bytes,
              by_heads);
    saved.add("shared-up-output", "Shared experts' up projection output",
              silu_apart ? "the product with SiLU's output" : "the fused activation × up", "f_s",
              shared_f, kBf16Bytes, by_heads);
    if (silu_apart) {
      saved.add("shared-activation-output", "Shared experts' SiLU output", "the product with up",
                "f_s", shared_f, kBf16Bytes, by_heads);
    }
    saved.add("shared-product", linear_input("Shared experts' activation × up"), "down projection",
              "f_s", shared_f, linear_input_bytes, by_heads);
  } else {
    // A plain shared MLP (Nemotron-H's): the activation keeps its input, down its output.
    saved.add("shared-up-output", "Shared experts' up projection output",
              "the activation (ReLU², GELU)", "f_s", shared_f, kBf16Bytes, by_heads);
    saved.add("shared-product", linear_input("Shared experts' activation output"),
              "down projection", "f_s", shared_f, linear_input_bytes, by_heads);
  }
  if (shape.shared_expert_gate) {
    // Qwen2-MoE: sigmoid(shared_expert_gate(x)) · shared_expert(x) saves both factors.
    saved.add("shared-output", "Shared expert's output", "the product with its gate", "h", h,
              kBf16Bytes, whole);
    saved.add("shared-gate", "Shared expert's sigmoid gate", "the product with its gate", "1", 1,
              kBf16Bytes, whole);
  }
}

}  // namespace llama_block_steps

using llama_block_steps::LlamaBlock;
using llama_block_steps::SavedTensors;

double torchtitan_beyond_mlp_bytes(const ModelShape& shape, const TrainingSetup& setup) {
  LayerStack stack;
  stack.torchtitan_mixture = true;
  stack.silu_apart = true;
  const LlamaBlock block(shape, setup, stack, true);
  SavedTensors saved;
  block.add_torchtitan_router(saved);
  block.add_torchtitan_combine(saved);
  block.add_attention_sinks(saved);
  double bytes = saved_bytes_per_token(saved.list);
  if (block.gpt_oss_experts) {
    // gpt-oss's experts beyond GroupedExperts' SwiGLU on the same shape, as the llama-block model
    // counts the two, so that the two models stay as close as for torchtitan's other mixtures.
    ModelShape grouped_shape = shape;
    grouped_shape.clamped_swiglu = false;
    const LlamaBlock grouped(grouped_shape, setup, stack, true);
    SavedTensors gpt_oss_experts;
    SavedTensors grouped_experts;
    block.add_mlp(gpt_oss_experts);
    grouped.add_mlp(grouped_experts);
    bytes +=
        saved_bytes_per_token(gpt_oss_experts.list) - saved_bytes_per_token(grouped_experts.list);
  }
  return bytes;
}

}  // namespace trainmem
