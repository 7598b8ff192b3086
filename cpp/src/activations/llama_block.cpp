// The llama-block activation model: the tensors a Llama block saves for its backward pass, one by
// one (docs/activations.md derives each); the MLP's and the mixture's steps are in
// llama_block_mlp.cpp, Megatron-LM's routing in megatron_routing.cpp, the linear mixers' steps in
// mixers.cpp.
#include "activations/llama_block.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "activations/layer.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

namespace llama_block_steps {

SavedTensor saved_tensor(Words id, Words name, Words saved_by, Words elements,
                         double elements_per_token, double dtype_bytes, double split, Words dtype) {
  return {std::move(id),
          std::move(name),
          std::move(saved_by),
          std::move(elements),
          elements_per_token,
          dtype_bytes,
          split,
          elements_per_token * dtype_bytes / split,
          Exchange::kNone,
          std::move(dtype)};
}

// A floating-point tensor's dtype, by its bytes: FP32, BF16, or an FP8 copy of a linear input.
Words float_dtype(double dtype_bytes) {
  return dtype_bytes == kFp32Bytes ? "FP32" : dtype_bytes == kBf16Bytes ? "BF16" : "FP8";
}

LlamaBlock::LlamaBlock(const ModelShape& model, const TrainingSetup& training,
                       const LayerStack& stack, bool with_flash_attention)
    : shape(model), setup(training), flash_attention(with_flash_attention) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  h = shape.hidden_size;
  a = shape.num_attention_heads;
  k = shape.num_key_value_heads;
  d = head_dim_of(shape);
  // Each routed expert's width (moe_intermediate_size), or the dense MLP's.
  f = shape.num_experts > 1 ? routed_expert_width(shape) : shape.ffn_hidden_size;
  shared_f = shape.num_experts > 1 ? shape.shared_expert_ffn_hidden_size : 0;
  s = setup.sequence_length;
  // Routed copies per token: top-k, times the capacity factor when buffers are padded to it.
  const double capacity =
      shape.num_experts > 1 && setup.capacity_factor > 0 ? setup.capacity_factor : 1;
  top_k = shape.num_experts_per_token * capacity;
  routed_copies = shape.num_experts_per_token > 1 || capacity != 1;

  // Megatron-LM's split: what sits between the blocks (norms, their outputs, the residual
  // stream) is whole on every tensor-parallel rank unless sequence parallelism splits it; the
  // attention heads and the MLP's width are split over t.
  whole = layout.sequence_parallel ? t : 1;
  // DTensor's sequence parallelism (torchtitan) saves the all-gathered norm outputs that the
  // projections read, whole on every rank (stack_rows.hpp, dtensor_tensor_parallel).
  const bool gathered = stack.saves_gathered_inputs;
  projections_input = gathered ? 1 : whole;
  gathered_text = gathered ? ", all-gathered (DTensor)" : "";
  by_heads = t;
  // A mixture's routed experts split their width over etp (t unless set), the shared experts, like
  // a dense MLP, over t. Where each tensor-parallel rank routes its own tokens (T/t under sequence
  // parallelism, all T at t 1), Megatron-LM's dispatchers gather the routed tokens over the etp
  // ranks that share an expert (token_dispatcher.py, dispatch_postprocess: "if self.tp_size > 1",
  // the expert tensor-parallel group): a rank's experts read etp/t of its tokens' routed copies,
  // each f/etp wide, so their intermediates are T·top-k·f/t whatever etp. Without sequence
  // parallelism (t above 1) every rank holds all T and nothing is gathered: T·top-k·f/etp.
  // torchtitan (moe_sharding.py, b5bcd76c), whose tensor parallelism runs with sequence
  // parallelism, follows the same counts with its own etp (check.cpp): under expert parallelism
  // each rank routes its own T/t tokens to whole experts (etp 1: T·top-k/t copies, f wide); without
  // it the MoE's input is all-gathered and each expert split over t (etp t: all T·top-k copies,
  // f/t wide).
  if (shape.num_experts > 1) {
    const double etp = expert_tensor_parallel_of(layout);
    const bool routes_own_tokens = layout.sequence_parallel || t == 1;
    expert_tokens = routes_own_tokens ? etp / whole : 1;
    by_expert_width = routes_own_tokens ? whole : etp;
  } else {
    by_expert_width = by_heads;
  }
  // A rebuilt layer (full recomputation) saves what a layer saves with no recomputation.
  selective = setup.recompute == Recompute::kSelective;
  // Without FlashAttention the scores' matmul needs K and V with all a heads (repeated from k);
  // recomputing the core attention (selective) saves them before the repeat.
  eager_modules = stack.eager_modules;
  silu_apart = stack.silu_apart;
  torchtitan_mixture = stack.torchtitan_mixture && shape.num_experts > 1;
  megatron_routing = stack.megatron_routing && shape.num_experts > 1;
  // torchtitan's router and combine keep the tokens the rank routes, the routed copies' share:
  // T·etp/t of them (its etp 1 under expert parallelism, t without it: check.cpp).
  routing_split = torchtitan_mixture ? 1 / expert_tokens : whole;
  // gpt-oss under torchtitan: its experts' own SwiGLU (GptOssGroupedExperts) and its attention's
  // sinks applied to the varlen kernel's output (Attention._apply_sinks); no preset of the plate's.
  gpt_oss_experts = kBeyondThePlate && torchtitan_mixture && shape.clamped_swiglu;
  sinks_rescaled = kBeyondThePlate && torchtitan_mixture && shape.attention_sinks;
  keys_repeated = (!flash_attention || eager_modules) && !selective;
  top_k_text =
      routed_copies ? " × " + std::to_string(shape.num_experts_per_token) + " experts" : "";
  if (capacity != 1) top_k_text += " × capacity factor " + shortest_decimal(capacity);

  // RMSNorm saves its input and 1/RMS; LayerNorm (the GPT-style blocks' norms, with biases) its
  // input, mean and 1/σ (PyTorch's native_layer_norm and the fused kernels alike). A parallel
  // block's MLP norm reads the layer's input, which the attention norm has saved already.
  layer_norm = shape.norm_bias;
  norm_kind = layer_norm ? "LayerNorm" : "RMSNorm";
  parallel = shape.parallel_attention_mlp;
  // Phi's one norm feeds both attention and the MLP: the MLP saves no norm of its own and reads
  // the tensor Q, K and V saved.
  one_norm_for_both = parallel && shape.norms_per_layer == 1;
  // Learned positions are added to the embedding; rotary ones are applied to Q and K.
  after_rope = shape.num_position_embeddings > 0 ? "" : " after RoPE";
  // FP8 training (fp8.hpp): each linear layer saves its input as the FP8 tensor it cast it to, a
  // copy of its own; FlashAttention, the norms, the activation's input and the router stay BF16.
  fp8 = stack.transformer_engine_fp8;
  linear_input_bytes = fp8 ? stack.fp8_saved_input_bytes : kBf16Bytes;
  // prepare_model_for_kbit_training leaves the norms FP32 (TRL 0.13-0.21's cast back too), and
  // bitsandbytes' Linear4bit and Linear8bitLt return their input's dtype, so the MLP's gate and
  // up projections give FP32 outputs, which SiLU and the product keep in FP32 (measured on an
  // H200: scripts/measure/peft_saved.py). The attention's tensors stay BF16: autocast casts
  // what SDPA reads.
  if (setup.kbit_prep && !fp8) {
    mlp_bytes = kFp32Bytes;
    mlp_dtype_text = ", FP32 (the FP32 norm's output through the 4-bit layers)";
  }

  // Under context parallelism over all-to-all, FlashAttention keeps Q, K and V as the all-to-all
  // made them, and the output projection the output as the one back made it.
  all_to_all_saves_output = cp_all_to_all_saves_output(setup);
  exchanged = flash_attention && !selective && all_to_all_saves_output;
  flash_keeps_output = flash_attention && !selective;
  // Latent attention's values are d_v wide per head (add_latent_queries_keys_values).
  output_elements = latent_attention(shape) ? "a·d_v" : "a·d";
  output_width = latent_attention(shape) ? a * shape.v_head_dim : a * d;
  residual_masks = residual_dropout(shape, setup, kLlamaBlockDropsOut);
}

// RMSNorm's input and 1/RMS, or LayerNorm's input, mean and 1/σ (the constructor says whose).
void LlamaBlock::add_norm(SavedTensors& saved, const Words& id, const Words& name) const {
  if (eager_modules && !layer_norm) {
    // Op by op in FP32: the input's FP32 copy (its square's and the product's), and, where the
    // scale is trained (not under LoRA), the normalised input cast back to BF16 (the scale's
    // product's, for the scale's gradient).
    saved.add(id + "-input", name + "'s input, in FP32", "RMSNorm, op by op", "h", h, kFp32Bytes,
              whole);
    if (setup.lora_rank == 0) {
      saved.add(id + "-normalised", name + "'s normalised input", "× the norm's scale", "h", h,
                kBf16Bytes, whole);
    }
  } else {
    saved.add(id + "-input", name + "'s input", norm_kind, "h", h, kBf16Bytes, whole);
  }
  add_norm_statistics(saved, id, name);
}

void LlamaBlock::add_norm_statistics(SavedTensors& saved, const Words& id,
                                     const Words& name) const {
  if (layer_norm) saved.add(id + "-mean", name + "'s mean", norm_kind, "1", 1, kFp32Bytes, whole);
  saved.add(id + "-rstd", name + (layer_norm ? "'s 1/σ" : "'s 1/RMS"), norm_kind, "1", 1,
            kFp32Bytes, whole);
}

// Marks the last `count` tensors as made by context parallelism's all-to-all, where it makes them.
void LlamaBlock::exchange_last(SavedTensors& saved, std::size_t count, Exchange way) const {
  for (std::size_t index = 0; exchanged && index < count; ++index) {
    saved.list[saved.list.size() - 1 - index].exchange = way;
  }
}

// Who keeps Q, K and V: FlashAttention, the two matmuls without it, or, under selective
// recomputation, the core attention, which keeps only its inputs to run again.
Words LlamaBlock::attention_keeper(const char* without_flash_attention) const {
  if (selective) return "the core attention, to recompute it";
  return flash_attention ? "FlashAttention" : without_flash_attention;
}

// A linear layer's saved input, named as FP8 where it keeps an FP8 copy.
Words LlamaBlock::linear_input(const Words& name) const { return fp8 ? name + ", in FP8" : name; }

void LlamaBlock::add_attention_norm(SavedTensors& saved) const {
  add_norm(saved, "attention-norm", "Attention norm");
}

// The norm's output, which the Q, K and V projections read.
void LlamaBlock::add_attention_input(SavedTensors& saved) const {
  // Latent attention's query and key/value projections are two linear layers: under FP8 each
  // keeps an FP8 copy of the norm's output.
  const bool two_copies = fp8 && latent_attention(shape);
  saved.add("qkv-input",
            linear_input(two_copies ? "Attention norm's output, a copy for each of the query's "
                                      "and the key/value's projection"
                                    : "Attention norm's output" + gathered_text),
            "Q, K and V projections (one tensor for the three)", two_copies ? "2·h" : "h",
            two_copies ? 2 * h : h, linear_input_bytes, projections_input);
}

void LlamaBlock::add_latent_queries_keys_values(SavedTensors& saved) const {
  // Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, equations 9 to 19;
  // transformers' DeepseekV3Attention): the down-projections' outputs, the compressed latents,
  // pass through RMSNorms (q_a_layernorm, kv_a_layernorm), which save them and 1/RMS, and into
  // the up-projections, which save the norms' outputs. The down-projections are whole on every
  // TP rank, so their latents are as many tokens as the projections' input: under Megatron-LM's
  // sequence parallelism T/t (MLASelfAttention: duplicated TELinear down-projections over the
  // norm's [s/t] output, multi_latent_attention.py at 23e00ed), all T where torchtitan gathers the
  // attention's input (projections_input). Queries and keys are d_nope + d_rope wide per head:
  // the rotary key, one per token, is repeated to every head.
  const double qk_head_dim = static_cast<double>(shape.qk_nope_head_dim) + shape.qk_rope_head_dim;
  const double v_head_dim = shape.v_head_dim;
  const auto add_latent = [&](const Words& id, const Words& name, double rank,
                              const Words& rank_text, const Words& up) {
    saved.add(id + "-norm-input", name + " latent (RMSNorm's input)", "RMSNorm", rank_text, rank,
              kBf16Bytes, projections_input);
    saved.add(id + "-norm-rstd", name + " latent's 1/RMS", "RMSNorm", "1", 1, kFp32Bytes,
              projections_input);
    saved.add(id + "-latent", linear_input(name + " latent, normed"), up, rank_text, rank,
              linear_input_bytes, projections_input);
  };
  if (shape.q_lora_rank > 0) {
    add_latent("query", "Query", shape.q_lora_rank, "r_q", "the query up-projection (q_b_proj)");
  }
  add_latent("key-value", "Key/value", shape.kv_lora_rank, "r_kv",
             "the key/value up-projection (kv_b_proj)");
  saved.add("query", "Queries, the rotary part after RoPE", attention_keeper("the scores' matmul"),
            "a·(d_nope + d_rope)", a * qk_head_dim, kBf16Bytes, by_heads);
  saved.add("key", "Keys, the shared rotary key after RoPE repeated to every head",
            attention_keeper("the scores' matmul"), "a·(d_nope + d_rope)", a * qk_head_dim,
            kBf16Bytes, by_heads);
  saved.add("value", "Values", attention_keeper("the probabilities × values matmul"), "a·d_v",
            a * v_head_dim, kBf16Bytes, by_heads);
  exchange_last(saved, 3, Exchange::kIntoAttention);
}

// DeepSeek Sparse Attention as Megatron-LM trains it with its TileLang kernels
// (dsa_kernel_backend "tilelang", dsa_indexer_use_sparse_loss; dsa.py at d1cab16, as core_r0.19.0;
// ops/tilelang_dsa.py, indexer.py, sparse_mla.py and tilelang_indexer_loss.py at 4f65717;
// absorbed_mla.py at e4ba3a3): latent attention with W_UK and W_UV absorbed
// (AbsorbedMLASelfAttention), whose sparse kernel attends to each query's index_topk keys over the
// latent, and the lightning indexer with its KL loss. Megatron-LM requires sequence parallelism
// under t > 1, so the latents' tensors are split over t; the indexer is whole on every TP rank
// and runs on the whole sequence. Nothing is quadratic in s. docs/activations.md lists each.
void LlamaBlock::add_sparse_attention(SavedTensors& saved) const {
  const double rank_q = shape.q_lora_rank;
  const double rank_kv = shape.kv_lora_rank;
  const double rope = shape.qk_rope_head_dim;
  const double latent = rank_kv + rope;  // the latent and the rotary key: 576 in DeepSeek's
  const double micro_batch = setup.micro_batch_sequences;
  // The down-projections (duplicated TELinear) share the input norm's output; the latents' norms
  // (standalone TENorm) save their inputs and 1/RMS; q_up (column-parallel) its local input.
  saved.add("qkv-input", "Attention norm's output", "the query's and key/value's down-projections",
            "h", h, kBf16Bytes, whole);
  saved.add("query-norm-input", "Query latent (RMSNorm's input)", "RMSNorm", "r_q", rank_q,
            kBf16Bytes, whole);
  saved.add("query-norm-rstd", "Query latent's 1/RMS", "RMSNorm", "1", 1, kFp32Bytes, whole);
  saved.add("query-latent", "Query latent, normed", "the query up-projection (linear_q_up_proj)",
            "r_q", rank_q, kBf16Bytes, whole);
  saved.add("key-value-norm-input", "Key/value latent, a contiguous copy (RMSNorm's input)",
            "RMSNorm", "r_kv", rank_kv, kBf16Bytes, whole);
  saved.add("key-value-norm-rstd", "Key/value latent's 1/RMS", "RMSNorm", "1", 1, kFp32Bytes,
            whole);
  // The einsum that absorbs W_UK reads a view of q_up's output, keeping all of it.
  saved.add("query-up-output", "Query up-projection's output (its no-RoPE part absorbs W_UK)",
            "the W_UK einsum", "a·(d_nope + d_rope)",
            a * (static_cast<double>(shape.qk_nope_head_dim) + rope), kBf16Bytes, by_heads);
  // RoPE's cos and sin, [s, 1, 1, d_rope] BF16 each, shared by the micro-batch's sequences.
  saved.add("rope-tables", "RoPE's cos and sin for the queries and the rotary key",
            "the rotary embedding (twice)", "4·d_rope / b", 4 * rope / micro_batch, kBf16Bytes, 1);
  if (selective) {
    // Selective recomputation checkpoints DSAttention whole (indexer, loss and sparse attention):
    // it keeps its inputs, the absorbed queries and the latent key/values.
    saved.add("query-absorbed", "Absorbed queries (latent and rotary parts)",
              "the checkpointed sparse attention, to recompute it", "a·(r_kv + d_rope)", a * latent,
              kBf16Bytes, by_heads);
    saved.add("key-value", "Latent keys/values and the rotary key",
              "the checkpointed sparse attention, to recompute it", "r_kv + d_rope", latent,
              kBf16Bytes, 1);
  } else {
    add_sparse_attention_kernels(saved);
  }
  saved.add("attention-output", "Attention's output (W_UV's product)",
            "output projection (linear_proj)", "a·d_v", a * shape.v_head_dim, kBf16Bytes, by_heads);
}

// What DSAttention saves under no recomputation: SparseMLA's tensors, W_UV's input, and the
// indexer with its loss, whole on every TP rank.
void LlamaBlock::add_sparse_attention_kernels(SavedTensors& saved) const {
  const double t = setup.layout.tensor_parallel;
  const double rank_q = shape.q_lora_rank;
  const double latent = static_cast<double>(shape.kv_lora_rank) + shape.qk_rope_head_dim;
  const double topk = shape.index_topk;
  const double index_heads = shape.index_n_heads;
  const double index_dim = shape.index_head_dim;
  const double micro_batch = setup.micro_batch_sequences;
  // SparseMLA pads the heads on a rank to 16 (sparse_mla.py): its query, [b, s, max(a/t, 16),
  // r_kv + d_rope], is the absorbed queries themselves when no padding is needed.
  const double padded_heads = std::max(a / t, 16.0);
  saved.add("sparse-query", "Absorbed queries, heads padded to 16 or more", "SparseMLA",
            "max(a/t, 16)·(r_kv + d_rope)", padded_heads * latent, kBf16Bytes, 1);
  saved.add("key-value", "Latent keys/values and the rotary key", "SparseMLA", "r_kv + d_rope",
            latent, kBf16Bytes, 1);
  saved.add("sparse-indices", "Top-k key indices", "SparseMLA", "k_I", topk, 4, 1, "int32");
  saved.add("valid-heads", "Valid-head mask", "SparseMLA", "max(a/t, 16)", padded_heads, 1, 1,
            "bool");
  saved.add("attention-latent-output", "Sparse attention's latent output", "the W_UV einsum",
            "a·r_kv", a * shape.kv_lora_rank, kBf16Bytes, by_heads);
  // The indexer (DSAIndexer, its linears duplicated) reads the input norm's output and the query
  // latent, both all-gathered to the whole sequence under t > 1 (the same tensors at t = 1).
  if (t > 1) {
    saved.add("indexer-input", "Attention norm's output, all-gathered",
              "the indexer's wk and weights_proj", "h", h, kBf16Bytes, 1);
    saved.add("indexer-query-latent", "Query latent, normed, all-gathered", "the indexer's wq_b",
              "r_q", rank_q, kBf16Bytes, 1);
  }
  saved.add("indexer-key-norm-input", "Indexer key (LayerNorm's input)", "LayerNorm (k_norm)",
            "D_I", index_dim, kBf16Bytes, 1);
  saved.add("indexer-key-norm-stats", "Indexer key's mean and 1/σ", "LayerNorm (k_norm)", "2", 2,
            kFp32Bytes, 1);
  saved.add("indexer-rope-tables", "The indexer's RoPE cos and sin", "the rotary embedding (twice)",
            "4·d_rope / b", 4 * shape.qk_rope_head_dim / micro_batch, kBf16Bytes, 1);
  saved.add("indexer-query", "Indexer queries, Hadamard-rotated", "IndexerFunction", "H_I·D_I",
            index_heads * index_dim, kBf16Bytes, 1);
  saved.add("indexer-key", "Indexer keys, Hadamard-rotated", "IndexerFunction", "D_I", index_dim,
            kBf16Bytes, 1);
  saved.add("indexer-weights", "Indexer head weights", "IndexerFunction", "H_I", index_heads,
            kFp32Bytes, 1);
  saved.add("indexer-bounds", "Each query's first and last key", "IndexerFunction", "2", 2, 4, 1,
            "int32");
  saved.add("indexer-topk", "Indexer's top-k indices", "IndexerFunction", "k_I", topk, 4, 1,
            "int32");
  saved.add("topk-invalid", "Invalid top-k slots", "masked_fill (the indices sanitised)", "k_I",
            topk, 1, 1, "bool");
  if (t > 1) {
    // Under t > 1 the indices are sorted (dsa_masking.py, sort_topk_by_index): an int64 order and
    // a bool mask.
    saved.add("topk-sort", "Top-k sort order and its invalid slots", "gather and masked_fill",
              "k_I", topk, 9, 1, "int64 + bool");
  }
  saved.add("indexer-loss-grad", "The indexer's KL-loss gradient over its top-k",
            "SparseIndexerKLLoss", "k_I", topk, kFp32Bytes, 1);
}

void LlamaBlock::add_queries_keys_values(SavedTensors& saved) const {
  if (shape.qk_norm) {
    // Qwen3's q_norm and k_norm: RMSNorms over each head's d, before RoPE; each saves its
    // input and a 1/RMS per head.
    // Megatron-LM's --qk-layernorm follows --normalization: under LayerNorm each saves its mean
    // per head besides.
    saved.add("query-norm-input", "Query norm's input (Q's output)", norm_kind, "a·d", a * d,
              kBf16Bytes, by_heads);
    if (layer_norm) {
      saved.add("query-norm-mean", "Query norm's mean, per head", norm_kind, "a", a, kFp32Bytes,
                by_heads);
    }
    saved.add("query-norm-rstd",
              std::string("Query norm's ") + (layer_norm ? "1/σ" : "1/RMS") + ", per head",
              norm_kind, "a", a, kFp32Bytes, by_heads);
    saved.add("key-norm-input", "Key norm's input (K's output)", norm_kind, "k·d", k * d,
              kBf16Bytes, by_heads);
    if (layer_norm) {
      saved.add("key-norm-mean", "Key norm's mean, per head", norm_kind, "k", k, kFp32Bytes,
                by_heads);
    }
    saved.add("key-norm-rstd",
              std::string("Key norm's ") + (layer_norm ? "1/σ" : "1/RMS") + ", per head", norm_kind,
              "k", k, kFp32Bytes, by_heads);
  }
  if (shape.value_norm) {
    // Gemma 4's v_norm, an RMSNorm without a weight over each value head: its input (K's output
    // itself where the values are K's, already kept for the key norm) and a 1/RMS per head.
    if (!shape.keys_are_values) {
      saved.add("value-norm-input", "Value norm's input (V's output)", "RMSNorm", "k·d", k * d,
                kBf16Bytes, by_heads);
    }
    saved.add("value-norm-rstd", "Value norm's 1/RMS, per head", "RMSNorm", "k", k, kFp32Bytes,
              by_heads);
  }
  saved.add("query", "Queries" + after_rope, attention_keeper("the scores' matmul"), "a·d", a * d,
            kBf16Bytes, by_heads);
  const Words kv_elements = keys_repeated ? "a·d" : "k·d";
  const double kv_width = (keys_repeated ? a : k) * d;
  saved.add("key", "Keys" + after_rope + (keys_repeated ? ", repeated to every head" : ""),
            attention_keeper("the scores' matmul"), kv_elements, kv_width, kBf16Bytes, by_heads);
  saved.add("value", keys_repeated ? "Values, repeated to every head" : "Values",
            attention_keeper("the probabilities × values matmul"), kv_elements, kv_width,
            kBf16Bytes, by_heads);
  exchange_last(saved, 3, Exchange::kIntoAttention);
}

// What the softmax keeps: FlashAttention's log-sum-exp, or without it the probabilities (and
// their dropout); selective recomputation keeps neither.
void LlamaBlock::add_attention_scores(SavedTensors& saved) const {
  if (selective) return;
  if (flash_attention) {
    saved.add("log-sum-exp", "Softmax log-sum-exp", "FlashAttention", "a", a, kFp32Bytes, by_heads);
    return;
  }
  saved.add("probabilities", "Attention probabilities (softmax output)",
            "softmax and the probabilities × values matmul", "a·s", a * s, kBf16Bytes, by_heads);
  if (probability_dropout(shape, setup, kLlamaBlockDropsOut)) {
    // Dropout on the probabilities: its mask, and the dropped copy the matmul reads.
    saved.add("probabilities-dropout-mask", "Probabilities' dropout mask (1 byte)", "dropout",
              "a·s", a * s, 1, by_heads, "bool");
    saved.add("dropped-probabilities", "Dropped probabilities", "the probabilities × values matmul",
              "a·s", a * s, kBf16Bytes, by_heads);
  }
}

void LlamaBlock::add_attention_output(SavedTensors& saved) const {
  if (fp8 && flash_keeps_output) {
    // FlashAttention's backward pass reads its BF16 output; the output projection keeps its FP8
    // copy beside it.
    saved.add("attention-output", "Attention output", "FlashAttention", output_elements,
              output_width, kBf16Bytes, by_heads);
    saved.add("attention-output-fp8", "Attention output, in FP8", "the output projection",
              output_elements, output_width, linear_input_bytes, by_heads);
  } else {
    saved.add(
        "attention-output", sinks_rescaled ? "Attention output" : linear_input("Attention output"),
        sinks_rescaled       ? "FlashAttention and the sinks' product"
        : flash_keeps_output ? "FlashAttention and the output projection"
                             : "the output projection",
        output_elements, output_width, sinks_rescaled ? kBf16Bytes : linear_input_bytes, by_heads);
    exchange_last(saved, 1, Exchange::kOutOfAttention);
  }
}

// Qwen3-Next's gated attention (Qwen3NextAttention): o_proj reads attn_output · sigmoid(gate);
// the product saves the sigmoid's output (which the sigmoid's backward reads too) beside the
// attention's output, which FlashAttention keeps already, and o_proj saves the product.
void LlamaBlock::add_attention_output_gate(SavedTensors& saved) const {
  if (!shape.attention_output_gate) return;
  saved.add("attention-gate", "Output gate's sigmoid", "the gate's product and its sigmoid",
            output_elements, output_width, kBf16Bytes, by_heads);
  saved.add("gated-attention-output", linear_input("Gated attention output"),
            "the output projection", output_elements, output_width, linear_input_bytes, by_heads);
}

// gpt-oss's sinks under torchtitan (models/gpt_oss/model.py, apply_attention_sink_rescale, at
// b5bcd76c): varlen_attn returns its output and FP32 log-sum-exp, and the output is scaled by
// sigmoid(lse − sink) per head. The sigmoid saves its FP32 output, the product saves the output
// (FlashAttention's own, kept already) and the scale's BF16 cast, and the output projection saves
// the product.
void LlamaBlock::add_attention_sinks(SavedTensors& saved) const {
  if (!sinks_rescaled) return;
  saved.add("sink-scale", "Sinks' scale, sigmoid(log-sum-exp − sink)", "the sigmoid", "a", a,
            kFp32Bytes, by_heads);
  saved.add("sink-scale-bf16", "Sinks' scale, cast to BF16", "the product with the output", "a", a,
            kBf16Bytes, by_heads);
  saved.add("sink-output", linear_input("Attention output × the sinks' scale"),
            "the output projection", output_elements, output_width, linear_input_bytes, by_heads);
}

// Residual dropout's 1-byte mask, after the attention and after the MLP.
void LlamaBlock::add_residual_dropout_mask(SavedTensors& saved, const Words& id,
                                           const Words& name) const {
  if (residual_masks) saved.add(id, name, "dropout", "h", h, 1, whole, "bool");
}

void LlamaBlock::add_attention_output_before_all_to_all(SavedTensors& saved) const {
  if (flash_keeps_output && all_to_all_saves_output) {
    saved.add("attention-output-before-all-to-all", "Attention output before its all-to-all",
              "Transformer Engine's context-parallel all-to-all (TE 2.8 on)", output_elements,
              output_width, kBf16Bytes, by_heads);
  }
}

// Norms past the two pre-norms save their inputs and 1/RMS as the pre-norms do: Gemma 2's
// post-attention norm after the attention, its post-MLP norm (and any further one) after the MLP.
void LlamaBlock::add_further_norm(SavedTensors& saved, int number) const {
  const Words name = number == 3   ? "Post-attention norm"
                     : number == 4 ? "Post-MLP norm"
                                   : "Norm " + std::to_string(number);
  add_norm(saved, "norm-" + std::to_string(number), name);
}

}  // namespace llama_block_steps

using llama_block_steps::LlamaBlock;
using llama_block_steps::SavedTensors;

Figure layer_input_per_token(const ModelShape& shape, const ParallelLayout& layout,
                             const Pen& pen) {
  const Figure input =
      pen.number(shape.hidden_size) * pen.number(kFullRecomputeBytesPerTokenPerHidden);
  return (layout.sequence_parallel ? input / pen.number(layout.tensor_parallel) : input).in("B");
}

namespace {

// One block's tensors: a full-attention layer's, or with `mixer` kLinear a linear layer's, and
// without `mlp` or with `mixer` kNone one part alone (Nemotron-H's blocks: hybrid_layers' 'a',
// 'l' and 'F').
enum class Mixer { kAttention, kLinear, kNone };
std::vector<SavedTensor> block_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                       const LayerStack& stack, bool flash_attention, Mixer mixer,
                                       bool mlp) {
  const LlamaBlock block(shape, setup, stack, flash_attention);
  SavedTensors saved;
  // Attention, or the linear mixer in its place.
  if (mixer == Mixer::kLinear) {
    block.add_norm(saved, "input-norm", "Input norm");
    if (short_conv_mixer(shape)) {
      block.add_short_conv(saved);
    } else if (kimi_delta_mixer(shape)) {
      block.add_kimi_delta_attention(saved);
    } else if (mamba2_mixer(shape)) {
      block.add_mamba2(saved);
    } else if (kBeyondThePlate && mamba1_mixer(shape)) {
      // Jamba's and MiniMax's mixers, no preset's: only a config.json makes them, which the first
      // view's module never reads, so their steps drop out of it.
      block.add_mamba1(saved);
    } else if (kBeyondThePlate && lightning_mixer(shape)) {
      block.add_lightning(saved);
    } else {
      block.add_gated_deltanet(saved);
    }
  } else if (mixer == Mixer::kAttention) {
    block.add_attention_norm(saved);
    if (sparse_attention(shape)) {
      block.add_sparse_attention(saved);
    } else {
      block.add_attention_input(saved);
      if (latent_attention(shape)) {
        block.add_latent_queries_keys_values(saved);
      } else {
        block.add_queries_keys_values(saved);
      }
      block.add_attention_scores(saved);
      block.add_attention_output(saved);
      if (kBeyondThePlate) block.add_attention_sinks(saved);
    }
    block.add_attention_output_gate(saved);
  }
  if (mixer != Mixer::kNone) {
    block.add_residual_dropout_mask(saved, "attention-dropout-mask",
                                    "Dropout mask after the attention (1 byte)");
    block.add_attention_output_before_all_to_all(saved);
    if (shape.norms_per_layer >= 3 && mlp) block.add_further_norm(saved, 3);
  }
  if (!mlp) return std::move(saved.list);

  // MLP, fused (Megatron-LM's bias-SwiGLU fusion, Transformer Engine's LayerNormMLP, Liger): gate
  // and up share their input and save their outputs, from which the backward pass recomputes the
  // activation and the product; down saves the product. With experts the router saves the norm's
  // output and each routed expert its own copy of it.
  block.add_mlp_norm(saved);
  block.add_mlp_input(saved);
  block.add_mlp(saved);
  if (kBeyondThePlate && block.megatron_routing) block.add_megatron_routing(saved);
  block.add_torchtitan_combine(saved);
  block.add_latent_output(saved);
  block.add_shared_experts(saved);
  block.add_residual_dropout_mask(saved, "mlp-dropout-mask", "Dropout mask after the MLP (1 byte)");
  for (int number = 4; number <= shape.norms_per_layer; ++number) {
    block.add_further_norm(saved, number);
  }
  return std::move(saved.list);
}

}  // namespace

std::vector<SavedTensor> llama_block_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                             const LayerStack& stack, bool flash_attention) {
  std::vector<SavedTensor> saved =
      block_tensors(shape, setup, stack, flash_attention, Mixer::kAttention, true);
  // Megatron-LM's recompute modules keep less (recompute_modules.cpp).
  if (kBeyondThePlate && recomputes_modules(setup)) {
    return llama_block_steps::recompute_megatron_modules(std::move(saved), shape, setup).kept;
  }
  return saved;
}

std::vector<SavedTensor> layer_kind_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                            const LayerStack& stack, bool flash_attention,
                                            char kind) {
  const bool linear = kind == 'L' || kind == 'l';
  const bool mlp = kind == 'A' || kind == 'L' || kind == 'F';
  // Gemma 4's global layers are attention layers of their own widths.
  if (linear && global_attention_mixer(shape)) {
    return block_tensors(global_attention_shape(shape), setup, stack, flash_attention,
                         Mixer::kAttention, mlp);
  }
  const Mixer mixer = kind == 'F' ? Mixer::kNone : linear ? Mixer::kLinear : Mixer::kAttention;
  return block_tensors(shape, setup, stack, linear || flash_attention, mixer, mlp);
}

std::vector<SavedTensor> linear_layer_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                              const LayerStack& stack, bool flash_attention) {
  return layer_kind_tensors(shape, setup, stack, flash_attention, 'L');
}

double saved_bytes_per_token(const std::vector<SavedTensor>& tensors) {
  double sum = 0;
  for (const SavedTensor& tensor : tensors) sum += tensor.bytes_per_token;
  return sum;
}

namespace {

std::string llama_block_source(const ModelShape& shape, const TrainingSetup& setup,
                               const LayerStack& stack) {
  if (setup.recompute == Recompute::kSelectiveOp) {
    return std::string(
               "torchtitan's selective per-op recomputation: each block keeps its input and the "
               "outputs of the matmuls but every second one, and of the attention kernel "
               "(selective_op_saved_tensors, docs/activations.md); the rest rebuilt in the "
               "backward pass") +
           (!blocks_compiled(setup.compile)
                ? ""
                : "; compiled, the min-cut partitioner saves the policy's tensors but the down "
                  "projection's output, which the backward graph never reads "
                  "(torch/_functorch/partitioners.py: must_recompute, _extract_fwd_bwd_modules)") +
           (shape.num_experts <= 1
                ? ""
                : std::string("; of its MoE, topk's outputs") +
                      (shape.num_expert_groups > 1 ? " (the expert groups' two topk too)" : "") +
                      (shape.shared_expert_ffn_hidden_size > 0
                           ? " and the shared experts' matmuls at odd counts"
                           : "") +
                      ": the router's gate is recomputed by its shape, and the experts' grouped "
                      "GEMMs (aten._grouped_mm" +
                      (setup.layout.expert_parallel > 1
                           ? ") and spmd_types' all-to-alls, none in the save list, run again"
                           : ", not in the save list) run again") +
                      " (per_op.cpp)") +
           (setup.fused_qkv ? "; torchtitan's fused wqkv, five matmuls a block" : "") +
           (latent_attention(shape)
                ? std::string("; latent attention's ") +
                      (shape.q_lora_rank > 0 ? "five matmuls (wq_a, wq_b, wkv_a, wkv_b, wo)"
                                             : "four matmuls (wq, wkv_a, wkv_b, wo)") +
                      " counted in order (deepseek_v3/model.py)"
                : "") +
           (setup.precision == Precision::kNvfp4Mixed
                ? "; under nvfp4-mixed the leading layers' matmul is torchao's nvfp4_mm_triton "
                  "(not aten.mm: the policy recomputes it and its FP4 codes), so they keep their "
                  "input and the attention's tensors alone, and the one layer rebuilt is one of "
                  "them"
                : "");
  }
  std::string source =
      "the Llama block's saved tensors, one by one (docs/activations.md); the layer's input alone "
      "under full recomputation (Chen et al. 2016)";
  if (sparse_attention(shape)) {
    source +=
        "; DeepSeek Sparse Attention as Megatron-LM trains it with its TileLang kernels "
        "(core_r0.19.0, dsa.py and ops/tilelang_dsa.py): absorbed latent attention over each "
        "query's top-k keys, and the indexer with its KL loss whole on every TP rank";
    if (setup.recompute == Recompute::kSelective) {
      source += "; selective recomputation checkpoints the whole sparse attention";
    }
  }
  if (kBeyondThePlate && recomputes_modules(setup)) {
    source += std::string("; Megatron-LM's recompute modules (") +
              (setup.recompute == Recompute::kSelective ? "core_attn " : "") +
              recompute_modules_text(setup) +
              ": TransformerConfig.recompute_modules, 23e00ed) keep their inputs and rebuild the "
              "rest in the backward pass, the MLP's part and then the attention's "
              "(activations/recompute_modules.cpp; tensor_parallel/random.py, checkpoint and "
              "CheckpointWithoutOutput)";
  }
  if (residual_dropout(shape, setup, kLlamaBlockDropsOut) ||
      probability_dropout(shape, setup, kLlamaBlockDropsOut)) {
    source +=
        "; with dropout, its 1-byte masks (and without FlashAttention the dropped "
        "probabilities)";
  }
  if (stack.transformer_engine_fp8) {
    source +=
        "; under fp8-mixed each linear layer's saved input in FP8, 1 B instead of 2 (the saved "
        "tensors list which) (Transformer Engine's _Linear.forward and _LayerNormMLP.forward: "
        "saved_inputmat, ln_out and act_out quantised; fc1_out, the norms' inputs and "
        "FlashAttention's tensors BF16)";
  }
  return source;
}

}  // namespace

ActivationsPerLayer layer_kind_activations(const ModelShape& shape, const TrainingSetup& setup,
                                           const LayerStack& stack, int micro_batch_sequences,
                                           bool flash_attention, const Pen& pen, char kind) {
  // A full-attention layer, and Gemma 4's global layers: attention layers, recomputed as any.
  if (kind == 'A') {
    return llama_block_layer_activations(shape, setup, stack, micro_batch_sequences,
                                         flash_attention, pen);
  }
  if (kind == 'L' && global_attention_mixer(shape)) {
    return llama_block_layer_activations(global_attention_shape(shape), setup, stack,
                                         micro_batch_sequences, flash_attention, pen);
  }
  const ParallelLayout& layout = setup.layout;
  ActivationsPerLayer layer;
  layer.tokens_on_device =
      static_cast<double>(setup.sequence_length) / layout.context_parallel * micro_batch_sequences;
  const double saved_per_token =
      saved_bytes_per_token(layer_kind_tensors(shape, setup, stack, flash_attention, kind));
  if (setup.recompute == Recompute::kFull) {
    layer.kept_per_token = layer_input_per_token(shape, layout, pen);
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
    layer.recompute_working_bytes = layer.tokens_on_device * saved_per_token - layer.kept_bytes;
    return layer;
  }
  // Selective recomputation recomputes full attention's core alone (its tensors say so): a linear
  // layer keeps all.
  layer.kept_per_token = pen.count(saved_per_token, "B saved per token");
  layer.kept_bytes = layer.tokens_on_device * saved_per_token;
  return layer;
}

ActivationsPerLayer llama_block_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  const LayerStack& stack,
                                                  int micro_batch_sequences, bool flash_attention,
                                                  const Pen& pen) {
  const ParallelLayout& layout = setup.layout;
  ActivationsPerLayer layer;
  layer.tokens_on_device =
      static_cast<double>(setup.sequence_length) / layout.context_parallel * micro_batch_sequences;
  if (pen.writing()) layer.source = llama_block_source(shape, setup, stack);
  if (kBeyondThePlate && recomputes_modules(setup)) {
    // Megatron-LM's recompute modules (none or selective alone: check_recompute.cpp): the block
    // keeps what they leave, and its backward pass rebuilds the larger of its two parts' dropped
    // tensors, the MLP's and then the attention's.
    const llama_block_steps::ModulesRecomputed modules =
        llama_block_steps::recompute_megatron_modules(
            block_tensors(shape, setup, stack, flash_attention, Mixer::kAttention, true), shape,
            setup);
    const double kept_per_token = saved_bytes_per_token(modules.kept);
    layer.kept_per_token = pen.count(kept_per_token, "B saved per token");
    layer.kept_bytes = layer.tokens_on_device * kept_per_token;
    layer.recompute_working_bytes =
        layer.tokens_on_device * std::max(modules.attention_rebuilt, modules.mlp_rebuilt);
    return layer;
  }
  const double saved_per_token =
      saved_bytes_per_token(llama_block_tensors(shape, setup, stack, flash_attention));
  const double saved = layer.tokens_on_device * saved_per_token;
  if (setup.recompute == Recompute::kFull) {
    layer.kept_per_token = layer_input_per_token(shape, layout, pen);
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
    layer.recompute_working_bytes = saved - layer.kept_bytes;
    return layer;
  }
  if (kBeyondThePlate && setup.recompute == Recompute::kSelectiveOp) {
    // Kept: what the policy saves. In the backward pass the block's other tensors are rebuilt
    // beside them (as a layer without recomputation saves them), one block at a time: all it saves
    // but those the policy keeps. Only SAC's cache holds the outputs that feed the residual's add
    // alone (wo's, w2's, the shared experts' down projection's), topk's scores and the expert
    // groups' topk: a layer without recomputation saves none of them (the expert ids, its routing
    // indices' first part, it does). Latent attention's matmul outputs are counted as the tensors
    // of their widths such a layer saves (its latents' norm inputs, its queries, keys and values).
    const std::vector<SavedTensor> kept = selective_op_saved_tensors(shape, setup);
    layer.kept_per_token = pen.count(saved_bytes_per_token(kept), "B saved per token");
    double also_saved = 0;
    for (const SavedTensor& tensor : kept) {
      const std::string& id = tensor.id;
      if (id != "mlp-output" && id != "shared-output" && id != "attention-projection-output" &&
          id != "top-k-scores" && id.rfind("group-top-2", 0) != 0 &&
          id.rfind("top-groups", 0) != 0) {
        also_saved += tensor.bytes_per_token;
      }
    }
    layer.recompute_working_bytes = std::max(0.0, saved - layer.tokens_on_device * also_saved);
    // Under nvfp4-mixed the converted layers keep less and rebuild the rest: a layer is the mean
    // of the two kinds (each stage holds every layer: check_nvfp4.cpp), and a converted one's
    // rebuilt tensors are counted as a BF16 layer's (its linear layers' inputs in BF16, which the
    // compiled backward pass turns into FP4 codes), beside its own kept tensors.
    const double converted = nvfp4_layers(shape, setup);
    if (converted > 0) {
      const double layers = shape.num_layers;
      const double converted_kept =
          saved_bytes_per_token(nvfp4_selective_op_saved_tensors(shape, setup));
      layer.kept_per_token =
          (pen.said(converted, [&] { return format_count(converted) + " NVFP4 layers"; }) *
               pen.count(converted_kept, "B saved per token") +
           pen.count(layers - converted, "BF16 layers") * layer.kept_per_token) /
          pen.count(layers, "layers");
      layer.converted_kept_per_token = converted_kept;
      layer.tail_kept_per_token = saved_bytes_per_token(kept);
      layer.tail_recompute_working_bytes = layer.recompute_working_bytes;
      layer.recompute_working_bytes =
          std::max(0.0, saved - layer.tokens_on_device * converted_kept);
    }
    layer.kept_bytes = layer.tokens_on_device * layer.kept_per_token.value();
    return layer;
  }
  layer.kept_per_token = pen.count(saved_per_token, "B saved per token");
  layer.kept_bytes = saved;
  return layer;
}

}  // namespace trainmem
