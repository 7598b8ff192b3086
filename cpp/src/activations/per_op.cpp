// torchtitan's per-op selective recomputation (Recompute::kSelectiveOp): the tensors its policy
// keeps of one block (activations.hpp, selective_op_saved_tensors), from the operations it saves.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "activations/llama_block.hpp"
#include "model/units.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

using llama_block_steps::SavedTensors;

namespace {

// One aten.mm of a block, in the block's order: the tensor its output is, should the policy save
// it.
struct Matmul {
  const char* id;
  std::string name;
  const char* elements;
  double width;
  double split;  // over how many tensor-parallel ranks the output is split
};

// The block's matmuls in the order its forward pass runs them (torchtitan b5bcd76c): the
// attention's (models/common/attention.py; deepseek_v3/model.py Attention for latent attention),
// then the dense MLP's or the shared experts' (feed_forward.py: w1, w3, then w2). The router's gate
// is recomputed by its shape and not counted; the routed experts' grouped GEMMs are not aten.mm.
std::vector<Matmul> block_matmuls(const ModelShape& shape, const TrainingSetup& setup) {
  const double t = setup.layout.tensor_parallel;
  // A row-parallel projection's output, reduced: scattered over t under sequence parallelism.
  const double whole = setup.layout.sequence_parallel ? t : 1;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  const double k = shape.num_key_value_heads;
  const double d = head_dim_of(shape);
  std::vector<Matmul> matmuls;
  if (latent_attention(shape)) {
    // Latent attention: wq (q_lora_rank 0) or wq_a, q_norm and wq_b; wkv_a, kv_norm and wkv_b;
    // then wo.
    const double rope = shape.qk_rope_head_dim;
    const double query = a * (shape.qk_nope_head_dim + rope);
    if (shape.q_lora_rank > 0) {
      matmuls.push_back({"query-latent", "Query latent (wq_a's output)", "r_q",
                         static_cast<double>(shape.q_lora_rank), 1});
      matmuls.push_back(
          {"query", "Queries before RoPE (wq_b's output)", "a·(d_nope + d_rope)", query, t});
    } else {
      matmuls.push_back(
          {"query", "Queries before RoPE (wq's output)", "a·(d_nope + d_rope)", query, t});
    }
    matmuls.push_back({"key-value-latent", "Key/value latent and rotary key (wkv_a's output)",
                       "r_kv + d_rope", static_cast<double>(shape.kv_lora_rank) + rope, 1});
    matmuls.push_back({"key-value", "Keys and values (wkv_b's output)", "a·(d_nope + d_v)",
                       a * (shape.qk_nope_head_dim + shape.v_head_dim), t});
  } else if (setup.fused_qkv) {
    // torchtitan's fused wqkv (TrainingSetup::fused_qkv): one matmul for the three.
    matmuls.push_back({"query-key-value", "Queries, keys and values (wqkv's)", "(a + 2·k)·d",
                       (a + 2 * k) * d, t});
  } else {
    matmuls.push_back({"query", "Queries before RoPE (wq's output)", "a·d", a * d, t});
    matmuls.push_back({"key", "Keys before RoPE (wk's output)", "k·d", k * d, t});
    matmuls.push_back({"value", "Values (wv's output)", "k·d", k * d, t});
  }
  matmuls.push_back(
      {"attention-projection-output", "Attention's output projection (wo's)", "h", h, whole});
  if (shape.num_experts <= 1) {
    const double f = shape.ffn_hidden_size;
    matmuls.push_back({"gate", "Gate projection's output (w1)", "f", f, t});
    matmuls.push_back({"up", "Up projection's output (w3)", "f", f, t});
    matmuls.push_back({"mlp-output", "Down projection's output (w2)", "h", h, whole});
  } else if (shape.shared_expert_ffn_hidden_size > 0) {
    const double f_s = shape.shared_expert_ffn_hidden_size;
    matmuls.push_back(
        {"shared-gate-output", "Shared experts' gate projection output", "f_s", f_s, 1});
    matmuls.push_back({"shared-up-output", "Shared experts' up projection output", "f_s", f_s, 1});
    matmuls.push_back({"shared-output", "Shared experts' down projection output", "h", h, 1});
  }
  return matmuls;
}

// Outputs that feed the residual's add alone: no backward reads them, so a compiled block's
// partitioner drops them (_extract_fwd_bwd_modules), and a layer without recomputation never
// saves them.
bool feeds_residual_alone(const std::string& id) {
  return id == "attention-projection-output" || id == "mlp-output" || id == "shared-output";
}

// torchtitan's per-op policy over its MoE's router, eager (activation_checkpoint.py SelectiveAC,
// and moe.py, token_dispatcher.py, b5bcd76c). The score function, the routing map and the tokens'
// reorder are not in the save list; aten.topk is, so both its outputs are cached, the FP32 scores
// and the int64 expert ids. Group-limited routing (_get_node_limited_routing_scores, with
// num_expert_groups set: DeepSeek-V3's 8 groups, 4 of them kept) runs two topk more: each group's
// top 2 of its scores, then the top groups of their sums. The routed experts' aten._grouped_mm is
// not in the list (PyTorch's compute_intensive_ops and torchtitan's own ops, neither of which
// names it), so the experts are rebuilt in the backward pass. Under expert parallelism the
// all-to-alls are spmd_types' (the default spmd_backend): c10d all_to_all into torch.empty chunks,
// then torch.cat (_AllToAllUneven), none of them in the list, so they are run again in the
// recomputation and nothing of them is kept (the split sizes' copy to the host is saved, on the
// host). Compiled blocks are refused (check_per_op.cpp, check_per_op_mixture).
void add_per_op_router(SavedTensors& saved, const ModelShape& shape) {
  const double top_k = shape.num_experts_per_token;
  if (shape.num_expert_groups > 1) {
    const double groups = shape.num_expert_groups;
    const double kept = shape.num_limited_groups;
    saved.add("group-top-2-scores", "Each expert group's top 2 scores (topk's values)",
              "aten.topk, in the policy's save list", "2·groups", 2 * groups, kFp32Bytes, 1);
    saved.add("group-top-2-ids", "Each expert group's top 2 ids (topk's indices)",
              "aten.topk, in the policy's save list", "2·groups", 2 * groups, 8, 1, "int64");
    saved.add("top-groups-scores", "The kept groups' summed scores (topk's values)",
              "aten.topk, in the policy's save list", "kept groups", kept, kFp32Bytes, 1);
    saved.add("top-groups-ids", "The kept groups' ids (topk's indices)",
              "aten.topk, in the policy's save list", "kept groups", kept, 8, 1, "int64");
  }
  saved.add("top-k-scores", "Router's top-k scores (topk's values)",
            "aten.topk, in the policy's save list", "top-k", top_k, kFp32Bytes, 1);
  saved.add("top-k-ids", "Router's top-k expert ids (topk's indices)",
            "aten.topk, in the policy's save list", "top-k", top_k, 8, 1, "int64");
}

// The per-op policy's tensors of one block: with `matmuls_saved` a BF16 block's (its aten.mm
// outputs but every second one, counted in the block's order, block_matmuls), without them an
// NVFP4 block's, whose matmul the policy recomputes.
std::vector<SavedTensor> per_op_saved_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                              bool matmuls_saved) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double whole = layout.sequence_parallel ? t : 1;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  const bool latent = latent_attention(shape);
  const double value_width = latent ? a * shape.v_head_dim : a * head_dim_of(shape);
  SavedTensors saved;
  saved.add("block-input", "The block's input", "the checkpoint, to recompute the block", "h", h,
            kBf16Bytes, whole);
  const std::vector<Matmul> matmuls = block_matmuls(shape, setup);
  const std::string of = " of " + std::to_string(matmuls.size()) + ", saved";
  // Eager, SAC's cache (torch/utils/checkpoint.py, _CachingTorchDispatchMode) keeps every
  // MUST_SAVE output until the block's backward pass. A compiled block saves what Inductor's
  // min-cut partitioner leaves (torch/_functorch/partitioners.py): the policy's PREFER_RECOMPUTE
  // ops are always recomputed (must_recompute) and its MUST_SAVE outputs always saved
  // (should_ban_recomputation), so the cut is the MUST_SAVE outputs and the block's input; then
  // _extract_fwd_bwd_modules drops the saved values the backward graph never reads: an output
  // that only feeds the residual's add.
  const bool compiled = blocks_compiled(setup.compile);
  const auto add_matmul = [&](std::size_t index) {
    const Matmul& matmul = matmuls[index];
    const std::size_t count = index + 1;
    if (count % 2 == 0 || (compiled && feeds_residual_alone(matmul.id))) return;
    saved.add(matmul.id, matmul.name, "matmul " + std::to_string(count) + of, matmul.elements,
              matmul.width, kBf16Bytes, matmul.split);
  };
  // The attention's matmuls before its kernel, then the kernel's output and log-sum-exp
  // (flex_attention, or SDPA's flash kernel, in the save list), then wo and the MLP's or the
  // mixture's.
  std::size_t output_projection = 0;
  while (std::string(matmuls[output_projection].id) != "attention-projection-output") {
    ++output_projection;
  }
  if (matmuls_saved) {
    for (std::size_t i = 0; i < output_projection; ++i) add_matmul(i);
  }
  saved.add("attention-output", "Attention's output", "the attention kernel, saved",
            latent ? "a·d_v" : "a·d", value_width, kBf16Bytes, t);
  saved.add("log-sum-exp", "Attention's log-sum-exp (FP32)", "the attention kernel, saved", "a", a,
            kFp32Bytes, t);
  if (!matmuls_saved) return std::move(saved.list);
  add_matmul(output_projection);
  if (shape.num_experts > 1) add_per_op_router(saved, shape);
  for (std::size_t i = output_projection + 1; i < matmuls.size(); ++i) add_matmul(i);
  return std::move(saved.list);
}
}  // namespace

std::vector<SavedTensor> selective_op_saved_tensors(const ModelShape& shape,
                                                    const TrainingSetup& setup) {
  return per_op_saved_tensors(shape, setup, true);
}

// An NVFP4 block's matmul is nvfp4_mm_triton (torchao cb76f29, nvfp4_linear.py), an autograd
// Function of torchao custom ops (its Triton kernels, torch.library.custom_op) and
// aten._scaled_mm_v2, none of them aten.mm nor in the policy's save list: it tags them
// PREFER_RECOMPUTE (their FP4 codes too), so the compiled block keeps its input and the attention
// kernel's tensors alone, and each weight's amax, a scalar (aten.max, MUST_SAVE).
std::vector<SavedTensor> nvfp4_selective_op_saved_tensors(const ModelShape& shape,
                                                          const TrainingSetup& setup) {
  return per_op_saved_tensors(shape, setup, false);
}

}  // namespace trainmem
