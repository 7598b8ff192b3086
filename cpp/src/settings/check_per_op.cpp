// The checks of torchtitan's per-op selective recomputation (check_per_op.hpp).
#include "settings/check_per_op.hpp"

#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

// torchtitan's per-op policy over its own MoE, as add_per_op_mixture derives it (eager blocks,
// BF16, every layer a mixture, no projection of the router gate's shape): any other case is
// refused by name.
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
  if (mixes_dense_layers(shape)) {
    return refuse("modelled where every layer is a mixture, and " + shape.name +
                      " has dense layers among them.",
                  "another model");
  }
  // The policy recomputes any matmul of the router gate's weight shape (h, E): a projection of
  // that shape would leave the count.
  const double h_to_e = shape.num_experts;
  const double d = head_dim_of(shape);
  if (shape.num_attention_heads * d == h_to_e || shape.num_key_value_heads * d == h_to_e ||
      shape.shared_expert_ffn_hidden_size == h_to_e) {
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
  if (setup.recompute != Recompute::kSelectiveOp) return {};
  // torchtitan's per-op policy counts a Llama block's seven matmuls and its attention kernel, or
  // of torchtitan's MoE what add_per_op_mixture derives.
  if (!shape.gated_mlp || latent_attention(shape) || shape.parallel_attention_mlp) {
    return refusal(setting_id::kRecompute,
                   "Selective per-op recomputation is torchtitan's policy for a Llama-style block "
                   "(Q, K, V and O, a gated MLP or torchtitan's MoE); " +
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
