// The llama-block model's linear mixers, each a step of a hybrid's layer in place of attention
// (llama_block.hpp): a Gated DeltaNet, Kimi Delta Attention, Mamba-2 and LFM2's short convolution,
// their saved tensors one by one, as the kernels that train them keep them (docs/activations.md).
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "activations/llama_block.hpp"

namespace trainmem::llama_block_steps {

// A Gated DeltaNet layer's mixer, as transformers' Qwen3NextGatedDeltaNet runs it on fla's
// chunked kernel (fla-org/flash-linear-attention v0.5.2, fla/ops/gated_delta_rule/chunk.py,
// ChunkGatedDeltaRuleFunction.forward's save_for_backward) and causal-conv1d (v1.6.1,
// causal_conv1d_interface.py: the convolution's input; the backward recomputes its output).
// Each head's queries and keys are L2-normalised in the kernel, which keeps the normalised
// copies and an FP32 1/norm a head; it keeps its own contiguous copy of v, the chunk-local
// cumulative sum of the decays (FP32), β, and A, the chunks' 64 × 64 WY inverses (BF16, 64 a
// token and head); w, u, the chunk states h and v_new are recomputed in the backward pass.
void LlamaBlock::add_gated_deltanet(SavedTensors& saved) const {
  const double hk = shape.linear_num_key_heads;
  const double hv = shape.linear_num_value_heads;
  const double dk = shape.linear_key_head_dim;
  const double dv = shape.linear_value_head_dim;
  // Qwen3-Next repeats q and k to the H_v value heads before the kernel (repeat_interleave);
  // Qwen3.5 hands fla (0.5 on) its H_k heads.
  const double hq = shape.linear_qk_repeated ? hv : hk;
  const Words hq_text = shape.linear_qk_repeated ? "H_v" : "H_k";
  saved.add("linear-input",
            linear_input("Gated DeltaNet's input (the norm's output)" + gathered_text),
            "in_proj_qkvz and in_proj_ba (one tensor for the two)", "h", h, linear_input_bytes,
            projections_input);
  saved.add("conv-input", "Short convolution's input (q, k and v)", "causal_conv1d",
            "2·H_k·d_k + H_v·d_v", 2 * hk * dk + hv * dv, kBf16Bytes, by_heads);
  saved.add("beta", "β (sigmoid of b)", "the sigmoid and the kernel", "H_v", hv, kBf16Bytes,
            by_heads);
  saved.add("softplus-input", "The decay's a + dt_bias, FP32", "softplus", "H_v", hv, kFp32Bytes,
            by_heads);
  saved.add("softplus-output", "softplus(a + dt_bias), FP32", "the product with −exp(A_log)", "H_v",
            hv, kFp32Bytes, by_heads);
  saved.add("linear-query", "Queries, L2-normalised", "the chunked delta rule", hq_text + "·d_k",
            hq * dk, kBf16Bytes, by_heads);
  saved.add("linear-query-rstd", "Queries' 1/norm, FP32", "the kernel's L2 norm", hq_text, hq,
            kFp32Bytes, by_heads);
  saved.add("linear-key", "Keys, L2-normalised", "the chunked delta rule", hq_text + "·d_k",
            hq * dk, kBf16Bytes, by_heads);
  saved.add("linear-key-rstd", "Keys' 1/norm, FP32", "the kernel's L2 norm", hq_text, hq,
            kFp32Bytes, by_heads);
  saved.add("linear-value", "Values, the kernel's contiguous copy", "the chunked delta rule",
            "H_v·d_v", hv * dv, kBf16Bytes, by_heads);
  saved.add("decay-cumsum", "Decays' chunk-local cumulative sum, FP32", "the chunked delta rule",
            "H_v", hv, kFp32Bytes, by_heads);
  saved.add("wy-inverse", "A, the chunk's WY inverse (64 a head)", "the chunked delta rule",
            "64·H_v", kDeltaRuleChunk * hv, kBf16Bytes, by_heads);
  if (shape.linear_norm_unfused) {
    add_gated_norm_in_pytorch(saved, "Output gate z, FP32");
  } else {
    // fla's FusedRMSNormGated (fla/modules/fused_norm_gate.py): the kernel's output, the gate z
    // and a 1/RMS a head, FP32.
    saved.add("delta-rule-output", "Delta rule's output", "the fused gated norm", "H_v·d_v",
              hv * dv, kBf16Bytes, by_heads);
    saved.add("output-gate", "Output gate z", "the fused gated norm", "H_v·d_v", hv * dv,
              kBf16Bytes, by_heads);
    saved.add("gated-norm-rstd", "Gated norm's 1/RMS, FP32", "the fused gated norm", "H_v", hv,
              kFp32Bytes, by_heads);
  }
  saved.add("linear-output", linear_input("Gated norm's output"), "out_proj", "H_v·d_v", hv * dv,
            linear_input_bytes, by_heads);
}

// A gated RMSNorm over d_v run in PyTorch (Qwen3_5RMSNormGated, KimiLinearRMSNormGated): x.float(),
// its 1/RMS, the BF16 normalised copy the weight multiplies, the gate in FP32 (SiLU's input), the
// weighted BF16 product and SiLU's FP32 output.
void LlamaBlock::add_gated_norm_in_pytorch(SavedTensors& saved, const Words& gate_name) const {
  const double hv = shape.linear_num_value_heads;
  const double dv = shape.linear_value_head_dim;
  saved.add("gated-norm-input", "Gated norm's input, FP32", "the norm's pow and product", "H_v·d_v",
            hv * dv, kFp32Bytes, by_heads);
  saved.add("gated-norm-rstd", "Gated norm's 1/RMS, FP32", "the norm", "H_v", hv, kFp32Bytes,
            by_heads);
  saved.add("gated-norm-normed", "Gated norm's normalised input", "the product with its weight",
            "H_v·d_v", hv * dv, kBf16Bytes, by_heads);
  saved.add("gated-norm-gate", gate_name, "SiLU", "H_v·d_v", hv * dv, kFp32Bytes, by_heads);
  saved.add("gated-norm-weighted", "Weighted norm's output", "the product with SiLU(z)", "H_v·d_v",
            hv * dv, kBf16Bytes, by_heads);
  saved.add("gated-norm-silu", "SiLU(z), FP32", "the product with the weighted norm", "H_v·d_v",
            hv * dv, kFp32Bytes, by_heads);
}

// Kimi Delta Attention, as transformers' KimiLinearDeltaAttention runs it (modeling_kimi_linear.py)
// on fla's chunk_kda (v0.5.2, fla/ops/kda/chunk.py: ChunkKDAFunction.forward saves q and k after
// its L2 norm with their 1/norms, v, the decay g and its chunk-local cumulative sum, β, and Aqk and
// Akk of 64 a head, recomputing the rest unless disable_recompute) and causal-conv1d (v1.6.1,
// CausalConv1dFn saves its input). Around the kernel, in PyTorch: the low-rank gates' latents (the
// inputs of f_b and g_b), the decay's softplus(f + dt_bias) on an FP32 copy (softplus saves its
// input, the product with −exp(A_log) its output), β's sigmoid in FP32, and the gated norm
// (KimiLinearRMSNormGated) whose gate is g_b's output.
void LlamaBlock::add_kimi_delta_attention(SavedTensors& saved) const {
  const double hk = shape.linear_num_key_heads;
  const double hv = shape.linear_num_value_heads;
  const double dk = shape.linear_key_head_dim;
  const double dv = shape.linear_value_head_dim;
  saved.add("linear-input",
            linear_input("Kimi Delta Attention's input (the norm's output)" + gathered_text),
            "q, k, v, the gates' down projections and beta_proj (one tensor for them all)", "h", h,
            linear_input_bytes, projections_input);
  saved.add("conv-input", "Short convolutions' inputs (q, k and v)", "causal_conv1d",
            "2·H_k·d_k + H_v·d_v", 2 * hk * dk + hv * dv, kBf16Bytes, by_heads);
  saved.add("forget-gate-latent", "Forget gate's latent (f_a's output)", "f_b", "d_v", dv,
            kBf16Bytes, 1);
  saved.add("softplus-input", "The decay's f + dt_bias, FP32", "softplus", "H_v·d_k", hv * dk,
            kFp32Bytes, by_heads);
  saved.add("softplus-output", "softplus(f + dt_bias), FP32", "the product with −exp(A_log)",
            "H_v·d_k", hv * dk, kFp32Bytes, by_heads);
  saved.add("beta", "β (sigmoid of b), FP32", "the sigmoid and the kernel", "H_v", hv, kFp32Bytes,
            by_heads);
  saved.add("linear-query", "Queries, L2-normalised", "the chunked KDA rule", "H_k·d_k", hk * dk,
            kBf16Bytes, by_heads);
  saved.add("linear-query-rstd", "Queries' 1/norm, FP32", "the kernel's L2 norm", "H_k", hk,
            kFp32Bytes, by_heads);
  saved.add("linear-key", "Keys, L2-normalised", "the chunked KDA rule", "H_k·d_k", hk * dk,
            kBf16Bytes, by_heads);
  saved.add("linear-key-rstd", "Keys' 1/norm, FP32", "the kernel's L2 norm", "H_k", hk, kFp32Bytes,
            by_heads);
  saved.add("linear-value", "Values, the kernel's contiguous copy", "the chunked KDA rule",
            "H_v·d_v", hv * dv, kBf16Bytes, by_heads);
  saved.add("decay", "Decay per key channel, FP32", "the chunked KDA rule", "H_v·d_k", hv * dk,
            kFp32Bytes, by_heads);
  saved.add("decay-cumsum", "Decays' chunk-local cumulative sum, FP32", "the chunked KDA rule",
            "H_v·d_k", hv * dk, kFp32Bytes, by_heads);
  saved.add("intra-chunk-qk", "Aqk, the chunk's gated query-key products (64 a head)",
            "the chunked KDA rule", "64·H_v", kDeltaRuleChunk * hv, kBf16Bytes, by_heads);
  saved.add("wy-inverse", "Akk, the chunk's WY inverse (64 a head)", "the chunked KDA rule",
            "64·H_v", kDeltaRuleChunk * hv, kBf16Bytes, by_heads);
  saved.add("output-gate-latent", "Output gate's latent (g_a's output)", "g_b", "d_v", dv,
            kBf16Bytes, 1);
  add_gated_norm_in_pytorch(saved, "Output gate (g_b's output), FP32");
  saved.add("linear-output", linear_input("Gated norm's output"), "o_proj", "H_v·d_v", hv * dv,
            linear_input_bytes, by_heads);
}

// Mamba-2's mixer, as transformers' NemotronHMamba2Mixer.cuda_kernels_forward trains it
// (modeling_nemotron_h.py) through mamba_ssm's mamba_split_conv1d_scan_combined (v2.3.2.post1,
// ssd_combined.py: MambaSplitConv1dScanCombinedFn.forward saves in_proj's whole output zxbcdt,
// the scan's output before the gate, and the gated norm's 1/RMS a group, FP32; the convolution's
// output, the chunk states and the norm's output, out_proj's input, are recomputed in the
// backward pass). transformers takes this path when the forward builds no cache (use_cache=False,
// as TRL's trainers set it, or under gradient checkpointing) and the batch has no padding.
void LlamaBlock::add_mamba2(SavedTensors& saved) const {
  const double groups = shape.linear_num_key_heads;
  const double state = shape.linear_key_head_dim;
  const double heads = shape.linear_num_value_heads;
  const double inner = heads * shape.linear_value_head_dim;
  saved.add("linear-input", linear_input("Mamba-2's input (the norm's output)" + gathered_text),
            "in_proj", "h", h, linear_input_bytes, projections_input);
  saved.add("mamba-projections", "in_proj's output: z, x, B, C and dt",
            "mamba_split_conv1d_scan_combined", "2·H·P + 2·G·N + H",
            2 * inner + 2 * groups * state + heads, kBf16Bytes, by_heads);
  saved.add("scan-output", "The scan's output, before the gate", "mamba_split_conv1d_scan_combined",
            "H·P", inner, kBf16Bytes, by_heads);
  saved.add("gated-norm-rstd", "Gated norm's 1/RMS a group, FP32",
            "mamba_split_conv1d_scan_combined", "G", groups, kFp32Bytes, by_heads);
}

// Mamba's mixer, as transformers' JambaMambaMixer.cuda_kernels_forward trains it
// (modeling_jamba.py, use_mamba_kernels) on causal-conv1d (v1.6.1: CausalConv1dFn saves its input)
// and mamba_ssm's selective_scan_fn (v2.3.2.post1, selective_scan_interface.py: SelectiveScanFn
// saves u, delta, B, C and z each made contiguous, the chunk states x and the output before the
// gate). in_proj's output, transposed, is split into x and z: the convolution keeps x as a view,
// so in_proj's whole output stays (no padding: Jamba's _update_mamba_mask drops an all-ones mask;
// a padded batch multiplies x by the mask first, a copy of d alone). x_proj keeps the
// convolution's output and the scan a contiguous copy of it; the RMSNorms over dt, B and C run in
// PyTorch (an FP32 copy, its 1/RMS and the BF16 normalised copy each); dt_proj keeps its input;
// out_proj a contiguous copy of the gated output (its input is a transposed view).
void LlamaBlock::add_mamba1(SavedTensors& saved) const {
  const double inner = shape.linear_num_value_heads;
  const double state = shape.linear_key_head_dim;
  const double rank = shape.mamba_dt_rank;
  // selective_scan_fwd's chunk states: (batch, d, ⌈s / 2048⌉, 2·N) FP32 (csrc/selective_scan).
  const double chunks = std::ceil(s / kSelectiveScanChunk);
  saved.add("linear-input", linear_input("Mamba's input (the norm's output)"), "in_proj", "h", h,
            linear_input_bytes, projections_input);
  saved.add("mamba-projections", "in_proj's output: x and z", "causal_conv1d (x, a view)", "2·d",
            2 * inner, kBf16Bytes, by_heads);
  saved.add("conv-output", "The convolution's output", "x_proj", "d", inner, kBf16Bytes, by_heads);
  for (const auto& [id, name, width, symbol] :
       {std::tuple{"dt", "dt's", rank, "R"}, std::tuple{"b", "B's", state, "N"},
        std::tuple{"c", "C's", state, "N"}}) {
    const Words prefix = Words(id) + "-norm";
    saved.add(prefix + "-input", Words(name) + " RMSNorm input, FP32", "the norm's pow and product",
              symbol, width, kFp32Bytes, by_heads);
    saved.add(prefix + "-rstd", Words(name) + " RMSNorm 1/RMS, FP32", "the norm", "1", 1,
              kFp32Bytes, by_heads);
    saved.add(prefix + "-normed", Words(name) + " normalised copy", "the product with its weight",
              symbol, width, kBf16Bytes, by_heads);
  }
  saved.add("dt-proj-input", "dt's normalised low-rank input", "dt_proj", "R", rank, kBf16Bytes,
            by_heads);
  saved.add("scan-u", "The convolution's output, the scan's contiguous copy", "selective_scan_fn",
            "d", inner, kBf16Bytes, by_heads);
  saved.add("scan-delta", "dt_proj's output, the scan's contiguous copy", "selective_scan_fn", "d",
            inner, kBf16Bytes, by_heads);
  saved.add("scan-b", "B, the scan's contiguous copy", "selective_scan_fn", "N", state, kBf16Bytes,
            by_heads);
  saved.add("scan-c", "C, the scan's contiguous copy", "selective_scan_fn", "N", state, kBf16Bytes,
            by_heads);
  saved.add("scan-z", "The gate z, the scan's contiguous copy", "selective_scan_fn", "d", inner,
            kBf16Bytes, by_heads);
  saved.add("scan-states", "The scan's chunk states, FP32 (2·N a channel each 2,048 tokens)",
            "selective_scan_fn", "2·N·d·⌈s/2048⌉/s", 2 * state * inner * chunks / s, kFp32Bytes,
            by_heads);
  saved.add("scan-output", "The scan's output, before the gate", "selective_scan_fn", "d", inner,
            kBf16Bytes, by_heads);
  saved.add("linear-output", linear_input("The gated output, out_proj's contiguous copy"),
            "out_proj", "d", inner, linear_input_bytes, by_heads);
}

// MiniMax's lightning attention, as transformers' MiniMaxLightningAttention trains it in PyTorch
// (modeling_minimax.py at 008e574), block by block, without padding: SiLU keeps qkv_proj's output;
// each block's matmuls keep Q, Kᵀ and V (contiguous copies once the micro-batch holds 2 sequences
// or more; for one, views that keep SiLU's whole output) and a second V for the state's update;
// the decayed keys (every block whose state is used: all but the last, and the last too while the
// model's cache keeps its final state, as it does without gradient checkpointing) and the decayed
// queries (all but the first block, whose state is zero); the block's decayed scores, B × B a head;
// and the d × d states a head, one a block (and the cache's final one). Then the RMSNorm in
// PyTorch (its FP32 input, 1/RMS and BF16 normalised copy), its output, the gate's sigmoid and
// out_proj's input. Measured, for one sequence and more, against autograd's saved tensors on CPU.
void LlamaBlock::add_lightning(SavedTensors& saved) const {
  const double heads = shape.linear_num_value_heads;
  const double width = heads * shape.linear_value_head_dim;
  const double head_dim = shape.linear_value_head_dim;
  const double block = shape.lightning_block_size;
  const double blocks = std::ceil(s / block);
  const double last = s - (blocks - 1) * block;
  const bool cache = setup.recompute != Recompute::kFull;
  const bool copies = setup.micro_batch_sequences > 1;
  // Tokens in the blocks whose state update is kept: all but the last, or all with the cache.
  const double updated = cache ? s : (blocks - 1) * block;
  saved.add("linear-input", linear_input("Lightning attention's input (the norm's output)"),
            "qkv_proj and output_gate (one tensor for the two)", "h", h, linear_input_bytes,
            projections_input);
  saved.add("qkv-pre-activation", "qkv_proj's output", "SiLU", "3·H·d", 3 * width, kBf16Bytes,
            by_heads);
  if (copies) {
    saved.add("block-qkv", "Q, Kᵀ and V, each block's matmuls' contiguous copies",
              "the blocks' matmuls", "3·H·d", 3 * width, kBf16Bytes, by_heads);
    saved.add("block-state-values", "V once more, for each kept state update", "Kᵀ·V", "H·d",
              width * updated / s, kBf16Bytes, by_heads);
  } else {
    saved.add("qkv", "SiLU's output, q, k and v (the blocks' matmuls keep views of it)",
              "the blocks' matmuls", "3·H·d", 3 * width, kBf16Bytes, by_heads);
  }
  saved.add("decayed-keys", "Keys times their decay, each kept state update", "Kᵀ·V", "H·d",
            width * updated / s, kBf16Bytes, by_heads);
  saved.add("decayed-queries", "Queries times their decay, past the first block", "Q·state", "H·d",
            width * (s - std::min(s, block)) / s, kBf16Bytes, by_heads);
  saved.add("block-scores", "Each block's decayed scores, B × B a head",
            "the scores' product with V", "H·B",
            heads * ((blocks - 1) * block * block + last * last) / s, kBf16Bytes, by_heads);
  saved.add("block-states", "The d × d states a head, one a block", "Q·state", "H·d²·n/s",
            heads * head_dim * head_dim * (blocks + (cache ? 1 : 0)) / s, kBf16Bytes, by_heads);
  saved.add("lightning-norm-input", "The norm's input, FP32", "the norm's pow and product", "H·d",
            width, kFp32Bytes, by_heads);
  saved.add("lightning-norm-rstd", "The norm's 1/RMS, FP32", "the norm", "1", 1, kFp32Bytes,
            by_heads);
  saved.add("lightning-norm-normed", "The norm's normalised copy", "the product with its weight",
            "H·d", width, kBf16Bytes, by_heads);
  saved.add("lightning-norm-output", "The norm's output", "the product with the gate", "H·d", width,
            kBf16Bytes, by_heads);
  saved.add("output-gate", "sigmoid(output_gate), the gate", "the product and the sigmoid", "H·d",
            width, kBf16Bytes, by_heads);
  saved.add("linear-output", linear_input("The gated output"), "out_proj", "H·d", width,
            linear_input_bytes, by_heads);
}

// LFM2's short-convolution mixer, as transformers' Lfm2ShortConv.cuda_kernels_forward runs it
// (modeling_lfm2.py) on causal-conv1d (v1.6.1, causal_conv1d_interface.py, CausalConv1dFn saves
// its input x and the weights): in_proj saves its input; B·x saves B and x and C·conv_out saves C,
// three views that keep in_proj's whole 3h output; the convolution saves B·x, the product with C
// the convolution's output, and out_proj C·conv_out (already contiguous: the kernel's output keeps
// B·x's channel-last strides). Without causal-conv1d, nn.Conv1d saves the same two tensors, its
// output (L − 1) tokens longer.
void LlamaBlock::add_short_conv(SavedTensors& saved) const {
  saved.add("linear-input", linear_input("Short convolution's input (the norm's output)"),
            "in_proj", "h", h, linear_input_bytes, projections_input);
  saved.add("conv-projections", "B, C and x: in_proj's output", "the products B·x and C·conv",
            "3·h", 3 * h, kBf16Bytes, by_heads);
  saved.add("conv-input", "B·x, the convolution's input", "causal_conv1d", "h", h, kBf16Bytes,
            by_heads);
  saved.add("conv-output", "The convolution's output", "the product with C", "h", h, kBf16Bytes,
            by_heads);
  saved.add("linear-output", linear_input("C times the convolution's output"), "out_proj", "h", h,
            linear_input_bytes, by_heads);
}

}  // namespace trainmem::llama_block_steps
