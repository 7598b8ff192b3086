// The checks of torchtitan's per-op selective recomputation (check_per_op.hpp).
#include "settings/check_per_op.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "stacks/stack_rows.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

// torchtitan's per-op policy over its own MoE, as per_op.cpp derives it (eager blocks, BF16, no
// projection of the router gate's shape; dense layers among the mixtures are blocks without a
// router, whose shapes the policy reads block by block): any other case is refused by name.
Answer check_per_op_mixture(const TrainingSetup& setup, const ModelShape& shape) {
  const auto refuse = [&](const std::string& what, const std::string& choose) {
    return refusal(setting_id::kRecompute,
                   "Selective per-op recomputation of a mixture of experts is " + what +
                       " Choose " + choose + ", or none or full recomputation.");
  };
  if (!stack_row(setup.stack).torchtitan_mixture) {
    return refuse("derived for torchtitan's MoE module alone.", "the torchtitan stack");
  }
  if (blocks_compiled(setup.compile)) {
    return refuse(
        "modelled eager: what Inductor's partitioner keeps of torchtitan's MoE under the policy's "
        "tags is not derived.",
        "compile off or loss");
  }
  if (setup.precision != Precision::kBf16Mixed && setup.precision != Precision::kBf16) {
    return refuse(
        "modelled in BF16: what the policy keeps of low-precision experts is not "
        "derived.",
        "bf16-mixed");
  }
  // The policy recomputes any matmul of the router gate's weight shape (h, E): a projection of
  // h to E would leave the count (per_op.cpp, block_matmuls: each projection that reads h).
  const double h_to_e = shape.num_experts;
  const double d = head_dim_of(shape);
  std::vector<double> widths_from_h = {static_cast<double>(shape.shared_expert_ffn_hidden_size)};
  if (latent_attention(shape)) {
    widths_from_h.push_back(
        shape.q_lora_rank > 0
            ? static_cast<double>(shape.q_lora_rank)
            : shape.num_attention_heads *
                  static_cast<double>(shape.qk_nope_head_dim + shape.qk_rope_head_dim));
    widths_from_h.push_back(static_cast<double>(shape.kv_lora_rank) + shape.qk_rope_head_dim);
  } else {
    widths_from_h.push_back(shape.num_attention_heads * d);
    widths_from_h.push_back(shape.num_key_value_heads * d);
  }
  if (std::find(widths_from_h.begin(), widths_from_h.end(), h_to_e) != widths_from_h.end()) {
    return refuse(
        "not modelled where a projection has the router gate's shape (h × E, which "
        "the policy recomputes wherever it appears), as one of " +
            shape.name + "'s has.",
        "another model");
  }
  return {};
}

}  // namespace

Answer check_per_op(const TrainingSetup& setup, const ModelShape& shape) {
  // fuse_qkv is an option of torchtitan's common Attention (models/common/attention.py); its
  // DeepSeek-V3 latent attention has none.
  if (setup.fused_qkv && latent_attention(shape)) {
    return refusal(setting_id::kFusedQkv,
                   "Fused QKV is torchtitan's option for its common attention; " + shape.name +
                       "'s latent attention has none (deepseek_v3/model.py). Turn it off.");
  }
  if (setup.recompute != Recompute::kSelectiveOp) return {};
  // torchtitan's per-op policy counts a block's matmuls and keeps its attention kernel's outputs:
  // a Llama block's or DeepSeek-V3's latent attention, a gated MLP or torchtitan's MoE
  // (per_op.cpp).
  if (!shape.gated_mlp || sparse_attention(shape) || shape.parallel_attention_mlp) {
    return refusal(setting_id::kRecompute,
                   "Selective per-op recomputation is torchtitan's policy for a Llama-style block "
                   "(Q, K, V and O or DeepSeek-V3's latent attention, a gated MLP or torchtitan's "
                   "MoE); " +
                       shape.name + " is not one. Choose none, selective or full.");
  }
  // A biased projection runs as aten.addmm (at::linear's flattened path), which the policy saves
  // whole and leaves out of its count of matmuls.
  if (shape.attention_qkv_bias || shape.attention_output_bias || shape.mlp_bias) {
    return refusal(
        setting_id::kRecompute,
        "Selective per-op recomputation is not modelled over biased projections (each runs as "
        "aten.addmm, which torchtitan's policy saves and leaves out of its count of matmuls); " +
            shape.name + " has biases on its projections. Choose none, selective or full.");
  }
  if (shape.num_experts > 1) {
    const Answer mixture = check_per_op_mixture(setup, shape);
    if (!mixture.ok()) return mixture;
  }
  // torchtitan's per-op policy under its tensor parallelism saves the reduce-scatters' outputs
  // and recomputes the all-gathers (_save_list): not modelled.
  if (saves_gathered_inputs(setup)) {
    return refusal(setting_id::kRecompute,
                   "Selective per-op recomputation under torchtitan's tensor parallelism (its "
                   "policy saves the reduce-scatters' outputs) is not modelled; choose none or "
                   "full recomputation, or tp 1.");
  }
  return {};
}

}  // namespace trainmem
