// torchtitan's per-op selective recomputation (Recompute::kSelectiveOp): the tensors its policy
// keeps of one block (activations.hpp, selective_op_saved_tensors), from the operations it saves.
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

// torchtitan's per-op policy over its MoE, eager (activation_checkpoint.py SelectiveAC, and
// moe.py, token_dispatcher.py, b5bcd76c). The router's gate is recomputed by its shape
// (force_recompute_mm_shapes_by_fqns ["moe.router.gate"]) and not counted among the matmuls; the
// score function, the routing map and the tokens' reorder are not in the save list; aten.topk is,
// so both its outputs are cached, the FP32 scores and the int64 expert ids. The routed experts'
// aten._grouped_mm is not in it (the list is PyTorch's compute_intensive_ops and torchtitan's own
// ops, neither of which names it), so the experts are rebuilt in the backward pass. Under expert
// parallelism the all-to-alls are spmd_types' (the default spmd_backend): c10d all_to_all into
// torch.empty chunks, then torch.cat (_AllToAllUneven), none of them in the list, so they are run
// again in the recomputation and nothing of them is kept (the split sizes' copy to the host is
// saved, on the host). The shared experts' linear layers follow the attention's in the count:
// the gate's output saved (an odd count), the up projection's recomputed, the down projection's
// saved (a shared expert gate, which the torchtitan stack refuses, would be matmul 8,
// recomputed). Compiled blocks are refused (check.cpp, check_per_op_mixture).
void add_per_op_mixture(SavedTensors& saved, const ModelShape& shape, int shared_gate_matmul,
                        const std::string& of) {
  const double h = shape.hidden_size;
  const double top_k = shape.num_experts_per_token;
  saved.add("top-k-scores", "Router's top-k scores (topk's values)",
            "aten.topk, in the policy's save list", "top-k", top_k, kFp32Bytes, 1);
  saved.add("top-k-ids", "Router's top-k expert ids (topk's indices)",
            "aten.topk, in the policy's save list", "top-k", top_k, 8, 1, "int64");
  const double shared_f = shape.shared_expert_ffn_hidden_size;
  if (shared_f <= 0) return;
  saved.add("shared-gate-output", "Shared experts' gate projection output",
            "matmul " + std::to_string(shared_gate_matmul) + of, "f_s", shared_f, kBf16Bytes, 1);
  saved.add("shared-output", "Shared experts' down projection output",
            "matmul " + std::to_string(shared_gate_matmul + 2) + of, "h", h, kBf16Bytes, 1);
}

// The per-op policy's tensors of one block: with `matmuls_saved` a BF16 block's (its aten.mm
// outputs but every second one), without them an NVFP4 block's, whose matmul the policy recomputes.
std::vector<SavedTensor> per_op_saved_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                              bool matmuls_saved) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double whole = layout.sequence_parallel ? t : 1;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  const double k = shape.num_key_value_heads;
  const double d = head_dim_of(shape);
  const double f = shape.ffn_hidden_size;
  SavedTensors saved;
  saved.add("block-input", "The block's input", "the checkpoint, to recompute the block", "h", h,
            kBf16Bytes, whole);
  // torchtitan's fused wqkv (TrainingSetup::fused_qkv): five matmuls, wqkv's whole output saved.
  // A mixture's matmuls are its shared experts' (none without them): the
  // router's gate is not counted and the routed experts' grouped GEMMs are not aten.mm
  // (add_per_op_mixture).
  const bool fused = setup.fused_qkv;
  const bool mixture = shape.num_experts > 1;
  const bool shared = mixture && shape.shared_expert_ffn_hidden_size > 0;
  const int matmuls = (fused ? 2 : 4) + (!mixture || shared ? 3 : 0);
  const std::string of = " of " + std::to_string(matmuls) + ", saved";
  if (matmuls_saved && fused) {
    saved.add("query-key-value", "Queries, keys and values (wqkv's)", "matmul 1" + of,
              "(a + 2·k)·d", (a + 2 * k) * d, kBf16Bytes, t);
  } else if (matmuls_saved) {
    saved.add("query", "Queries before RoPE (wq's output)", "matmul 1" + of, "a·d", a * d,
              kBf16Bytes, t);
    saved.add("value", "Values (wv's output)", "matmul 3" + of, "k·d", k * d, kBf16Bytes, t);
  }
  saved.add("attention-output", "Attention's output", "the attention kernel, saved", "a·d", a * d,
            kBf16Bytes, t);
  saved.add("log-sum-exp", "Attention's log-sum-exp (FP32)", "the attention kernel, saved", "a", a,
            kFp32Bytes, t);
  if (!matmuls_saved) return std::move(saved.list);
  if (mixture) {
    add_per_op_mixture(saved, shape, (fused ? 3 : 5), of);
    return std::move(saved.list);
  }
  saved.add("gate", "Gate projection's output (w1)", (fused ? "matmul 3" : "matmul 5") + of, "f", f,
            kBf16Bytes, t);
  // Eager, SAC's cache (torch/utils/checkpoint.py, _CachingTorchDispatchMode) keeps every
  // MUST_SAVE output until the block's backward pass. A compiled block saves what Inductor's
  // min-cut partitioner leaves (torch/_functorch/partitioners.py): the policy's PREFER_RECOMPUTE
  // ops are always recomputed (must_recompute) and its MUST_SAVE outputs always saved
  // (should_ban_recomputation), so the cut is the MUST_SAVE outputs and the block's input; then
  // _extract_fwd_bwd_modules drops the saved values the backward graph never reads, and w2's
  // output only feeds the residual's add.
  if (!blocks_compiled(setup.compile)) {
    saved.add("mlp-output", "Down projection's output (w2)", (fused ? "matmul 5" : "matmul 7") + of,
              "h", h, kBf16Bytes, whole);
  }
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
