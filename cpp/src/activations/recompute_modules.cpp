// Megatron-LM's selective recomputation beyond the core attention (--recompute-modules,
// TransformerConfig.recompute_modules at 23e00ed, core_r0.14.0): which of a Llama block's saved
// tensors each module drops, what it keeps in their place, and what its backward pass rebuilds.
//
// Two mechanisms (megatron/core/tensor_parallel/random.py):
//   checkpoint — runs the module under no_grad, saves only its inputs, and runs it again with
//     grad in its backward pass: mlp (TransformerLayer._forward_mlp), moe (MoELayer.forward, from
//     the pre-MLP norm's output) and shared_experts (SharedExpertMLP). The module's own saved
//     tensors are dropped; its input is kept.
//   CheckpointWithoutOutput — runs the function under no_grad, saves its inputs, and once the
//     output's readers have saved it frees the output's storage
//     (discard_output_and_register_recompute); when the hook tensor's gradient arrives it runs the
//     function again with grad and copies the new outputs into the freed storage, keeping both
//     until its own backward pass. Used by layernorm (the norms that are not an IdentityOp, i.e.
//     not fused into the next linear layer by Transformer Engine's spec: latent attention's input
//     norm, a mixture layer's pre-MLP norm), mla_up_proj (MLASelfAttention: the latents' norms,
//     the up-projections and RoPE, whose outputs, the queries, keys and values, FlashAttention
//     saved) and moe_act (TEGroupedMLP: the activation, whose output the down projection saved).
//
// The backward pass of a layer runs the MLP's part first and the attention's after: each part's
// rebuilt tensors are live while that part runs, and the layer's rebuild is the larger part's.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "activations/llama_block.hpp"
#include "text/figure.hpp"
#include "trainmem/models.hpp"

namespace trainmem::llama_block_steps {

namespace {

bool has_id(const std::vector<SavedTensor>& saved, const std::string& id) {
  for (const SavedTensor& tensor : saved) {
    if (tensor.id == id) return true;
  }
  return false;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// What the router, the dispatcher and the experts' weighted activation save of the routing
// (megatron_routing.cpp), all inside the MoE layer's checkpoint; the router's input is the
// checkpoint's own.
bool routing_bookkeeping(const std::string& id) {
  return (starts_with(id, "router-") && id != "router-input") || starts_with(id, "permute-") ||
         starts_with(id, "dispatch-") || id == "chunk-sort-maps" || id == "expert-probs" ||
         id == "activation-unweighted";
}

}  // namespace

ModulesRecomputed recompute_megatron_modules(std::vector<SavedTensor> saved,
                                             const ModelShape& shape, const TrainingSetup& setup) {
  const bool mixture = shape.num_experts > 1;
  const bool latent = latent_attention(shape);
  // The dense MLP, checkpointed whole from its input: under Transformer Engine's spec the pre-MLP
  // norm is fused into linear_fc1 (pre_mlp_layernorm an IdentityOp), so the input is the layer's
  // residual stream, the norm's input, and the norm's statistics go with the MLP.
  const bool mlp = setup.recompute_mlp && !mixture;
  // The MoE layer, checkpointed whole from the pre-MLP norm's output (a TENorm of its own), the
  // shared experts and the experts' activation inside it.
  const bool moe = setup.recompute_moe && mixture;
  const bool shared = setup.recompute_shared_experts && mixture && !moe;
  const bool act = setup.recompute_moe_act && mixture && !moe;
  const bool mla_up = setup.recompute_mla_up_proj && latent;
  // The norms that are modules of their own: latent attention's input norm, a mixture layer's
  // pre-MLP norm. Run under no_grad, they save nothing: their statistics go with their outputs.
  const bool attention_norm = setup.recompute_layernorm && latent;
  const bool mlp_norm = setup.recompute_layernorm && mixture;

  // The checkpointed MoE layer keeps its input, the norm's output: the router's tensor where the
  // block lists one apart from the experts' copies.
  if (moe && !has_id(saved, "router-input")) {
    saved.push_back(
        saved_tensor("router-input", "MLP norm's output", "", "h", shape.hidden_size, kBf16Bytes,
                     setup.layout.sequence_parallel ? setup.layout.tensor_parallel : 1, "BF16"));
  }
  // Latent attention's up-projections keep their inputs: the latents (the norms' inputs, already
  // saved) and the rotary key, d_rope a token, before RoPE (gathered under sequence parallelism).
  if (mla_up) {
    saved.push_back(saved_tensor("rope-key", "Rotary key before RoPE",
                                 "the up-projections' checkpoint (mla_up_proj)", "d_rope",
                                 shape.qk_rope_head_dim, kBf16Bytes, 1, "BF16"));
  }

  // Each module's dropped tensors, per token: a checkpointed module's whole (what its rebuild
  // saves again), and an output-discarding one's outputs and, apart, what its function saves
  // inside (its statistics, the latents' normed copies).
  struct Dropped {
    double whole = 0;
    double outputs = 0;
    double inside = 0;
  };
  Dropped dense_mlp, moe_layer, shared_experts, activation, mlp_norm_out, attention_norm_out,
      up_projections;
  ModulesRecomputed result;
  for (SavedTensor& tensor : saved) {
    const std::string& id = tensor.id;
    const double bytes = tensor.bytes_per_token;
    const bool statistics = id.size() > 5 && (id.compare(id.size() - 5, 5, "-rstd") == 0 ||
                                              id.compare(id.size() - 5, 5, "-mean") == 0);
    double* dropped = nullptr;
    if (mlp && (id == "mlp-input" || id == "gate-output" || id == "up-output" ||
                id == "activation-output" || id == "product" ||
                (statistics && starts_with(id, "mlp-norm")))) {
      dropped = &dense_mlp.whole;
    } else if (mlp && id == "mlp-norm-input") {
      tensor.saved_by = "the MLP's checkpoint (mlp)";
    } else if (moe && (id == "mlp-input" || id == "gate-output" || id == "up-output" ||
                       id == "activation-output" || id == "product" || id == "latent-combined" ||
                       starts_with(id, "shared-") || routing_bookkeeping(id))) {
      dropped = &moe_layer.whole;
    } else if (mlp_norm && id == "router-input") {
      dropped = &mlp_norm_out.outputs;
    } else if (mlp_norm && statistics && starts_with(id, "mlp-norm")) {
      dropped = &mlp_norm_out.inside;
    } else if (moe && id == "router-input") {
      tensor.saved_by = "the MoE layer's checkpoint (moe)";
    } else if (shared && starts_with(id, "shared-")) {
      dropped = &shared_experts.whole;
    } else if (act && (id == "product" || (!shape.gated_mlp && id == "activation-output"))) {
      dropped = &activation.outputs;
    } else if (act && id == "activation-unweighted") {
      dropped = &activation.inside;
    } else if (attention_norm && id == "qkv-input") {
      dropped = &attention_norm_out.outputs;
    } else if (attention_norm && statistics && starts_with(id, "attention-norm")) {
      dropped = &attention_norm_out.inside;
    } else if (mla_up && (id == "query" || id == "key" || id == "value")) {
      dropped = &up_projections.outputs;
    } else if (mla_up && (id == "query-norm-rstd" || id == "query-latent" ||
                          id == "key-value-norm-rstd" || id == "key-value-latent")) {
      dropped = &up_projections.inside;
    } else if (mla_up && (id == "query-norm-input" || id == "key-value-norm-input")) {
      tensor.saved_by = "the up-projections' checkpoint (mla_up_proj)";
    }
    // Inside the MoE layer's rebuild moe_act discards the activation's output again, and its own
    // rebuild holds it twice: the MoE layer's whole, and the product once more.
    if (moe && setup.recompute_moe_act &&
        (id == "product" || (!shape.gated_mlp && id == "activation-output"))) {
      moe_layer.outputs += bytes;
    }
    if (dropped != nullptr) {
      *dropped += bytes;
    } else {
      result.kept.push_back(std::move(tensor));
    }
  }
  // An output-discarding module's rebuild (CheckpointWithoutOutput._recompute) runs its function
  // again with grad into new outputs, copies them into the freed storage, and keeps the new ones
  // (ctx.outputs) until its own backward pass, after its readers': the outputs twice, and what the
  // function saves inside. A checkpointed module's rebuild saves its whole again.
  const auto discarding = [](const Dropped& module) { return 2 * module.outputs + module.inside; };
  // The pre-MLP norm's rebuild (hooked on the MLP's output) lasts the MLP's backward pass; inside
  // it the routed experts' activation is rebuilt and freed before the shared experts' (made
  // earlier in moe_layer.py's forward, so run later).
  result.mlp_rebuilt = dense_mlp.whole + discarding(mlp_norm_out) + moe_layer.whole +
                       moe_layer.outputs + std::max(discarding(activation), shared_experts.whole);
  // The input norm's rebuild (hooked on linear_proj's output) lasts the attention's backward
  // pass, the up-projections' (hooked on the core attention's output) inside it.
  result.attention_rebuilt = discarding(attention_norm_out) + discarding(up_projections);
  return result;
}

}  // namespace trainmem::llama_block_steps
