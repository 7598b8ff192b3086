#include "trainmem/models.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "trainmem/format.hpp"

namespace trainmem {

namespace {

bool in_range(int value, int low, int high) { return value >= low && value <= high; }

std::string whole_number_problem(const char* field, int value, int low, int high) {
  return std::string(field) + " must be a whole number from " + format_count(low) + " to " +
         format_count(high) + "; it is " + std::to_string(value) + ".";
}

// A hybrid's layer list: one 'A', 'L', 'a', 'l' or 'F' a layer; one-part layers in a model whose
// parts they can hold.
std::string hybrid_layers_problem(const ModelShape& shape) {
  const std::string& layers = shape.hybrid_layers;
  if (layers.size() != static_cast<std::size_t>(shape.num_layers) ||
      layers.find_first_not_of(kHybridLayerKinds) != std::string::npos) {
    return "A hybrid's layer kinds (hybridLayers) must be one character a layer for each of its "
           "num_hidden_layers (" +
           format_count(shape.num_layers) +
           "), 'A' for the first kind or 'L' for the second, 'a', 'l' or 'F' for their mixer or "
           "MLP alone; they are " +
           format_count(static_cast<double>(layers.size())) + " characters, \"" +
           layers.substr(0, 40) + (layers.size() > 40 ? "…" : "") + "\".";
  }
  if (one_part_layers(shape) &&
      (shape.num_dense_layers > 0 || shape.moe_layer_step > 1 || shape.num_mtp_layers > 0 ||
       shape.norms_per_layer % 2 != 0 || global_attention_mixer(shape))) {
    return "A hybrid's one-part layers ('a', 'l', 'F') hold half a layer's norms each, and are "
           "counted without dense layers placed by number (first_k_dense_replace, an interleave "
           "step), multi-token-prediction layers or global attention layers.";
  }
  return {};
}

}  // namespace

std::string model_shape_problem(const ModelShape& shape) {
  struct Bound {
    const char* field;
    int value;
    int low;
    int high;
  };
  const Bound bounds[] = {
      {"num_hidden_layers", shape.num_layers, 1, kMaxModelLayers},
      {"hidden_size", shape.hidden_size, 1, kMaxModelWidth},
      {"intermediate_size", shape.ffn_hidden_size, 1, kMaxModelWidth},
      {"num_attention_heads", shape.num_attention_heads, 1, kMaxModelWidth},
      {"num_key_value_heads", shape.num_key_value_heads, 1, kMaxModelWidth},
      {"vocab_size", shape.vocab_size, 1, kMaxVocabSize},
      {"head_dim", shape.head_dim, 0, kMaxModelWidth},
      {"norms_per_layer", shape.norms_per_layer, 0, kMaxNormsPerLayer},
      {"max_position_embeddings", shape.num_position_embeddings, 0, kMaxPositionEmbeddings},
      {"num_local_experts", shape.num_experts, 1, kMaxExperts},
      {"moe_intermediate_size", shape.moe_ffn_hidden_size, 0, kMaxModelWidth},
      {"moe_latent_size", shape.moe_latent_size, 0, kMaxModelWidth},
      {"shared_expert_intermediate_size", shape.shared_expert_ffn_hidden_size, 0, kMaxModelWidth},
      {"first_k_dense_replace", shape.num_dense_layers, 0, shape.num_layers},
      {"interleave_moe_layer_step", shape.moe_layer_step, 1, shape.num_layers},
      {"num_nextn_predict_layers", shape.num_mtp_layers, 0, kMaxModelLayers},
      {"q_lora_rank", shape.q_lora_rank, 0, kMaxModelWidth},
      {"kv_lora_rank", shape.kv_lora_rank, 0, kMaxModelWidth},
      {"qk_nope_head_dim", shape.qk_nope_head_dim, 0, kMaxModelWidth},
      {"qk_rope_head_dim", shape.qk_rope_head_dim, 0, kMaxModelWidth},
      {"v_head_dim", shape.v_head_dim, 0, kMaxModelWidth},
      {"conv_L_cache", shape.short_conv_kernel, 0, kMaxModelWidth},
      {"global_head_dim", shape.global_head_dim, 0, kMaxModelWidth},
      {"num_global_key_value_heads", shape.global_kv_heads, 0, kMaxModelWidth},
      {"linear_num_key_heads", shape.linear_num_key_heads, 0, kMaxModelWidth},
      {"linear_num_value_heads", shape.linear_num_value_heads, 0, kMaxModelWidth},
      {"linear_key_head_dim", shape.linear_key_head_dim, 0, kMaxModelWidth},
      {"linear_value_head_dim", shape.linear_value_head_dim, 0, kMaxModelWidth},
      {"linear_conv_kernel_dim", shape.linear_conv_kernel_dim, 0, kMaxModelWidth},
      {"index_n_heads", shape.index_n_heads, 0, kMaxModelWidth},
      {"index_head_dim", shape.index_head_dim, 0, kMaxModelWidth},
      {"index_topk", shape.index_topk, 0, kMaxPositionEmbeddings},
  };
  for (const Bound& bound : bounds) {
    if (!in_range(bound.value, bound.low, bound.high)) {
      return whole_number_problem(bound.field, bound.value, bound.low, bound.high);
    }
  }
  if (!in_range(shape.num_experts_per_token, 1, shape.num_experts)) {
    return "num_experts_per_tok must be a whole number from 1 to num_local_experts (" +
           std::to_string(shape.num_experts) + "); it is " +
           std::to_string(shape.num_experts_per_token) + ".";
  }
  const bool mixture_fields = shape.moe_ffn_hidden_size > 0 ||
                              shape.shared_expert_ffn_hidden_size > 0 || shape.shared_expert_gate ||
                              shape.router_bias || shape.num_dense_layers > 0 ||
                              shape.moe_layer_step > 1 || shape.moe_latent_size > 0;
  if (shape.num_experts == 1 && mixture_fields) {
    return "moe_intermediate_size, shared experts, a router bias, first_k_dense_replace, "
           "interleaved dense layers and a latent width describe a mixture of experts; "
           "num_local_experts must be above 1 for them.";
  }
  // Only Nemotron-H's blocks read a latent width, and only a hybrid's kinds are counted tensor by
  // tensor whichever activation model is chosen: Korthikanti's equation has no latent term.
  if (shape.moe_latent_size > 0 && !hybrid_linear_attention(shape)) {
    return "moe_latent_size (a latent mixture's width) is counted in Nemotron-H's hybrid blocks "
           "alone; it must be 0 for a model without a linear mixer.";
  }
  if (shape.num_experts > 1 &&
      dense_layers_between(shape, 0, shape.num_layers) >= shape.num_layers) {
    return "A mixture of experts needs at least one mixture layer: first_k_dense_replace and the "
           "interleave step leave none of its " +
           format_count(shape.num_layers) + " layers.";
  }
  if (shape.qk_norm && shape.qk_norm_whole) {
    return "Query and key norms are per head (Qwen3's) or over the whole projections (OLMo 2's), "
           "not both.";
  }
  if (shape.shared_expert_gate && shape.shared_expert_ffn_hidden_size == 0) {
    return "A shared expert's gate needs a shared expert: shared_expert_intermediate_size must be "
           "above 0.";
  }
  if (latent_attention(shape)) {
    if (shape.qk_nope_head_dim + shape.qk_rope_head_dim < 1 || shape.v_head_dim < 1) {
      return "Latent attention (kv_lora_rank above 0) needs qk_nope_head_dim + qk_rope_head_dim "
             "and v_head_dim of 1 or more.";
    }
    if (shape.qk_norm) {
      return "Per-head query and key norms with latent attention are not counted by trainmem.";
    }
  } else if (shape.q_lora_rank > 0 || shape.qk_nope_head_dim > 0 || shape.qk_rope_head_dim > 0 ||
             shape.v_head_dim > 0) {
    return "q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim belong to latent "
           "attention; kv_lora_rank must be above 0 for them.";
  }
  const bool any_index_field =
      shape.index_n_heads > 0 || shape.index_head_dim > 0 || shape.index_topk > 0;
  if (any_index_field) {
    if (shape.index_n_heads < 1 || shape.index_head_dim < 1 || shape.index_topk < 1) {
      return "DeepSeek Sparse Attention needs index_n_heads, index_head_dim and index_topk of 1 "
             "or more.";
    }
    if (!latent_attention(shape) || shape.q_lora_rank < 1) {
      return "DeepSeek Sparse Attention's indexer reads the query latent: it needs latent "
             "attention with q_lora_rank above 0.";
    }
    if (shape.index_head_dim < shape.qk_rope_head_dim) {
      return "index_head_dim (" + format_count(shape.index_head_dim) +
             ") must be at least qk_rope_head_dim (" + format_count(shape.qk_rope_head_dim) +
             "): the indexer rotates that many of its dimensions.";
    }
  }
  const int linear_fields[] = {shape.linear_num_key_heads, shape.linear_num_value_heads,
                               shape.linear_key_head_dim, shape.linear_value_head_dim,
                               shape.linear_conv_kernel_dim};
  const bool any_linear_field =
      std::any_of(std::begin(linear_fields), std::end(linear_fields), [](int v) { return v > 0; });
  const bool every_linear_field =
      std::all_of(std::begin(linear_fields), std::end(linear_fields), [](int v) { return v > 0; });
  if (hybrid_linear_attention(shape)) {
    const std::string problem = hybrid_layers_problem(shape);
    if (!problem.empty()) return problem;
    if (global_attention_mixer(shape) &&
        (any_linear_field || short_conv_mixer(shape) || shape.global_kv_heads < 1 ||
         shape.num_attention_heads % shape.global_kv_heads != 0)) {
      return "Global attention layers need num_global_key_value_heads of 1 or more, dividing "
             "num_attention_heads, and no linear mixer's fields.";
    }
    const int mixers = (shape.kimi_delta_attention ? 1 : 0) + (shape.mamba2 ? 1 : 0) +
                       (shape.mamba1 ? 1 : 0) + (shape.lightning_block_size > 0 ? 1 : 0) +
                       (short_conv_mixer(shape) ? 1 : 0) + (global_attention_mixer(shape) ? 1 : 0);
    if (mixers > 1) {
      return "A hybrid's second kind is Kimi Delta Attention (kimiDeltaAttention), Mamba-2 "
             "(mamba2), Mamba (mamba1), lightning attention (lightningBlockSize), a short "
             "convolution or global attention, one of them.";
    }
    if (shape.linear_conv_bias && !shape.mamba2 && !shape.mamba1) {
      return "A convolution's bias (linearConvBias) belongs to Mamba's and Mamba-2's mixers "
             "alone.";
    }
    if ((shape.mamba_dt_rank > 0 || shape.mamba_proj_bias) != shape.mamba1 ||
        (shape.mamba1 && (shape.linear_num_key_heads != 1 || shape.linear_value_head_dim != 1))) {
      return "Mamba's mixer (mamba1) takes mambaDtRank of 1 or more, one key head of the state "
             "(linear_num_key_heads 1) and channels of width 1 (linear_value_head_dim 1); "
             "mambaDtRank and mambaProjBias belong to it alone.";
    }
    if (short_conv_mixer(shape) && any_linear_field) {
      return "A hybrid's linear layers are Gated DeltaNet layers (linear_num_key_heads, …) or "
             "short convolutions (conv_L_cache), not both.";
    }
    if (lightning_mixer(shape) &&
        (shape.linear_num_key_heads < 1 || shape.linear_key_head_dim < 1 ||
         shape.linear_num_value_heads != shape.linear_num_key_heads ||
         shape.linear_value_head_dim != shape.linear_key_head_dim ||
         shape.linear_conv_kernel_dim != 0)) {
      return "Lightning attention (lightningBlockSize) takes linear_num_key_heads and "
             "linear_key_head_dim of 1 or more, the same value heads and width, and no "
             "convolution (linear_conv_kernel_dim 0).";
    }
    if (!short_conv_mixer(shape) && !global_attention_mixer(shape) && !lightning_mixer(shape) &&
        !every_linear_field) {
      return std::string(linear_layers_name(shape)) +
             " need linear_num_key_heads, linear_num_value_heads, "
             "linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim of 1 or "
             "more.";
    }
    if (every_linear_field && shape.linear_num_value_heads % shape.linear_num_key_heads != 0) {
      return "linear_num_key_heads (" + format_count(shape.linear_num_key_heads) +
             ") must divide linear_num_value_heads (" + format_count(shape.linear_num_value_heads) +
             ").";
    }
    // Kimi Linear's full-attention layers are latent attention; no other hybrid's are.
    if (latent_attention(shape) && !kimi_delta_mixer(shape)) {
      return std::string(linear_layers_name(shape)) +
             " beside latent attention are not counted by trainmem (Kimi Delta Attention's "
             "are).";
    }
  } else if (any_linear_field || short_conv_mixer(shape) || shape.short_conv_bias ||
             shape.kimi_delta_attention || shape.mamba2 || shape.mamba1 ||
             shape.lightning_block_size > 0 || shape.mamba_dt_rank > 0 || shape.mamba_proj_bias ||
             shape.linear_conv_bias || global_attention_mixer(shape) || shape.global_kv_heads > 0 ||
             shape.global_k_eq_v) {
    return "linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, "
           "linear_value_head_dim, linear_conv_kernel_dim, conv_L_cache, conv_bias, "
           "global_head_dim, num_global_key_value_heads, attention_k_eq_v, Kimi Delta Attention, "
           "Mamba-2 and Mamba belong to a hybrid's second kind of layer; the model has none.";
  }
  if (shape.num_attention_heads % shape.num_key_value_heads != 0) {
    return "num_key_value_heads (" + format_count(shape.num_key_value_heads) +
           ") must divide num_attention_heads (" + format_count(shape.num_attention_heads) + ").";
  }
  if (shape.head_dim == 0 && !latent_attention(shape) &&
      shape.hidden_size % shape.num_attention_heads != 0) {
    return "num_attention_heads (" + format_count(shape.num_attention_heads) +
           ") must divide hidden_size (" + format_count(shape.hidden_size) +
           ") when head_dim is not given.";
  }
  if (shape.name.empty() || shape.name.size() > kMaxModelNameBytes) {
    return "The model's name must be from 1 to " + std::to_string(kMaxModelNameBytes) +
           " bytes long.";
  }
  return {};
}

int routed_expert_width(const ModelShape& shape) {
  return shape.moe_ffn_hidden_size > 0 ? shape.moe_ffn_hidden_size : shape.ffn_hidden_size;
}

int expert_token_width(const ModelShape& shape) {
  return shape.moe_latent_size > 0 ? shape.moe_latent_size : shape.hidden_size;
}

double head_dim_of(const ModelShape& shape) {
  return shape.head_dim > 0 ? shape.head_dim
                            : static_cast<double>(shape.hidden_size) / shape.num_attention_heads;
}

int tensor_parallel_widths_gcd(const ModelShape& shape) {
  int widths = std::gcd(shape.num_attention_heads, shape.ffn_hidden_size);
  // Latent attention has no key/value heads of its own: all a heads read the one latent.
  if (!latent_attention(shape)) widths = std::gcd(widths, shape.num_key_value_heads);
  if (global_attention_mixer(shape)) widths = std::gcd(widths, shape.global_kv_heads);
  if (shape.num_experts > 1) {
    widths = std::gcd(widths, shape.shared_expert_ffn_hidden_size);  // gcd(x, 0) is x
  }
  return widths;
}

namespace {

// Adds weights to a list: matrix(rows, cols, copies, placement) and vector(length, copies,
// placement), as routed experts' while `routed` is set.
struct WeightList {
  std::vector<LayerWeight> weights;
  bool routed = false;
  void matrix(double rows, double cols, double copies, WeightPlacement placement) {
    weights.push_back({rows, cols, copies, true, placement, routed});
  }
  void vector(double length, double copies, WeightPlacement placement) {
    weights.push_back({length, 1, copies, false, placement, routed});
  }
};

// A full-attention layer's attention weights.
void add_attention_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  const double head_dim = head_dim_of(shape);
  const double query_width = a * head_dim;
  const double key_value_width = shape.num_key_value_heads * head_dim;
  const auto matrix = [&](double rows, double cols, double copies, P placement) {
    list.matrix(rows, cols, copies, placement);
  };
  const auto vector = [&](double length, double copies, P placement) {
    list.vector(length, copies, placement);
  };

  // Attention. Column-parallel Q, K, V (and their biases) and row-parallel O split over t; O's
  // bias is whole on every rank.
  if (latent_attention(shape)) {
    // DeepSeek-V2 (arXiv:2405.04434, section 2.1.2) and transformers' DeepseekV3Attention:
    // q_a_proj, q_a_layernorm, q_b_proj (or one q_proj), kv_a_proj_with_mqa (the latent and the
    // shared rotary key), kv_a_layernorm, kv_b_proj (keys without rotation and values), o_proj.
    // Megatron-LM's MLASelfAttention keeps the down-projections whole on every TP rank
    // (linear_q_down_proj, linear_kv_down_proj: duplicated) and splits the up-projections by
    // heads.
    const double qk_head_dim = shape.qk_nope_head_dim + shape.qk_rope_head_dim;
    if (shape.q_lora_rank > 0) {
      matrix(h, shape.q_lora_rank, 1, P::kReplicated);
      vector(shape.q_lora_rank, 1, P::kNorm);
      matrix(shape.q_lora_rank, a * qk_head_dim, 1, P::kSplit);
    } else {
      matrix(h, a * qk_head_dim, 1, P::kSplit);
    }
    matrix(h, static_cast<double>(shape.kv_lora_rank) + shape.qk_rope_head_dim, 1, P::kReplicated);
    vector(shape.kv_lora_rank, 1, P::kNorm);
    matrix(shape.kv_lora_rank, a * (static_cast<double>(shape.qk_nope_head_dim) + shape.v_head_dim),
           1, P::kSplit);
    matrix(a * shape.v_head_dim, h, 1, P::kSplit);
    if (sparse_attention(shape)) {
      // DeepSeek Sparse Attention's lightning indexer (transformers' DeepseekV32Indexer): wq_b
      // (r_q to H_I·D_I), wk (h to D_I), k_norm (a LayerNorm of D_I with its bias), weights_proj
      // (h to H_I), no biases. Megatron-LM's DSAIndexer builds them duplicated: whole on every TP
      // rank (dsa.py).
      const double index_heads = shape.index_n_heads;
      const double index_dim = shape.index_head_dim;
      matrix(shape.q_lora_rank, index_heads * index_dim, 1, P::kReplicated);
      matrix(h, index_dim, 1, P::kReplicated);
      vector(index_dim, 2, P::kNorm);
      matrix(h, index_heads, 1, P::kReplicated);
    }
  } else {
    // Qwen3-Next's gated attention: q_proj makes the queries and their gate, a·d each.
    const double query_outputs = shape.attention_output_gate ? 2 * query_width : query_width;
    // Gemma 4's global layers under attention_k_eq_v build no v_proj: K's output is the values.
    const double key_value_projections = shape.keys_are_values ? 1 : 2;
    matrix(h, query_outputs, 1, P::kSplit);
    matrix(h, key_value_width, key_value_projections, P::kSplit);
    matrix(query_width, h, 1, P::kSplit);
    if (shape.attention_qkv_bias) {
      vector(query_outputs, 1, P::kSplit);
      vector(key_value_width, key_value_projections, P::kSplit);
    }
  }
  if (shape.attention_output_bias) vector(h, 1, P::kReplicated);
  // Qwen3's q_norm and k_norm (transformers' Qwen3Attention): one RMSNorm of d each, shared by
  // the heads; Megatron-LM's --qk-layernorm under LayerNorm a bias of d besides (TENorm). OLMo 2's
  // (Olmo2Attention) normalise the whole projections: a·d and k·d.
  if (shape.qk_norm) vector(head_dim, shape.norm_bias ? 4 : 2, P::kNorm);
  if (shape.qk_norm_whole) vector(query_width + key_value_width, 1, P::kNorm);
  // gpt-oss's sinks (GptOssAttention.sinks): a learned logit per head, split with the heads.
  if (shape.attention_sinks) vector(a, 1, P::kSplit);
}

// A linear mixer's widths from the shape's linear_* fields: its keys H_k·d_k (Mamba-2's B or C,
// G·N), its values H_v·d_v (Mamba-2's x, H·P), and its value heads H_v.
struct LinearWidths {
  double keys = 0;
  double values = 0;
  double heads = 0;
};
LinearWidths linear_widths(const ModelShape& shape) {
  return {static_cast<double>(shape.linear_num_key_heads) * shape.linear_key_head_dim,
          static_cast<double>(shape.linear_num_value_heads) * shape.linear_value_head_dim,
          static_cast<double>(shape.linear_num_value_heads)};
}

// A Gated DeltaNet layer's mixer (transformers' Qwen3NextGatedDeltaNet, modeling_qwen3_next.py):
// in_proj_qkvz (q and k of H_k·d_k, v and the output gate z of H_v·d_v), in_proj_ba (β and the
// decay's input a, H_v each), the depthwise conv1d over q, k and v (no bias), dt_bias and A_log
// (H_v each), the gated RMSNorm over d_v shared by the heads, and out_proj. Megatron-LM's
// GatedDeltaNet splits the heads over t; the norm is whole on every rank.
void add_gated_deltanet_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const auto [keys, values, heads] = linear_widths(shape);
  list.matrix(h, 2 * keys + 2 * values, 1, P::kSplit);
  list.matrix(h, 2 * heads, 1, P::kSplit);
  list.matrix(2 * keys + values, shape.linear_conv_kernel_dim, 1, P::kSplit);
  list.vector(heads, 2, P::kSplit);
  list.vector(shape.linear_value_head_dim, 1, P::kNorm);
  list.matrix(values, h, 1, P::kSplit);
}

// Kimi Delta Attention's mixer (transformers' KimiLinearDeltaAttention, modeling_kimi_linear.py;
// the checkpoint's fla KimiDeltaAttention holds the same weights, its convolution split in three):
// q_proj and k_proj (H_k·d_k), v_proj (H_v·d_v), the depthwise convolution over the three (no
// bias), the forget gate's down (h x d_v) and up (d_v x H_v·d_k) projections, dt_bias (one a key
// channel) and A_log (one a head), beta_proj (h x H_v), the output gate's down and up projections
// (h x d_v, d_v x H_v·d_v), the gated norm over d_v and o_proj. No framework trainmem models splits
// it over t (check_hybrid refuses t above 1); the placements say what a head-wise split would.
void add_kimi_delta_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const auto [keys, values, heads] = linear_widths(shape);
  const double rank = shape.linear_value_head_dim;
  const double decays = heads * shape.linear_key_head_dim;
  list.matrix(h, 2 * keys + values, 1, P::kSplit);
  list.matrix(2 * keys + values, shape.linear_conv_kernel_dim, 1, P::kSplit);
  list.matrix(h, rank, 2, P::kReplicated);  // f_a and g_a
  list.matrix(rank, decays, 1, P::kSplit);  // f_b
  list.matrix(rank, values, 1, P::kSplit);  // g_b
  list.vector(decays, 1, P::kSplit);        // dt_bias
  list.vector(heads, 1, P::kSplit);         // A_log
  list.matrix(h, heads, 1, P::kSplit);      // beta_proj
  list.vector(shape.linear_value_head_dim, 1, P::kNorm);
  list.matrix(values, h, 1, P::kSplit);
}

// Mamba-2's mixer (transformers' NemotronHMamba2Mixer, modeling_nemotron_h.py; Megatron-LM's
// MambaMixer holds the same): in_proj (z and x of H·P, B and C of G·N, dt of H), the depthwise
// convolution over x, B and C (its bias under use_conv_bias), dt_bias, A_log and D (H each), the
// gated RMSNorm's weight (H·P) and out_proj. MambaMixer splits the heads and groups over t: every
// weight, the norm's too.
void add_mamba2_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const auto [groups, inner, heads] = linear_widths(shape);
  list.matrix(h, 2 * inner + 2 * groups + heads, 1, P::kSplit);
  list.matrix(inner + 2 * groups, shape.linear_conv_kernel_dim, 1, P::kSplit);
  if (shape.linear_conv_bias) list.vector(inner + 2 * groups, 1, P::kSplit);
  list.vector(heads, 3, P::kSplit);
  list.vector(inner, 1, P::kSplit);
  list.matrix(inner, h, 1, P::kSplit);
}

// Mamba's mixer as Jamba builds it (transformers' JambaMambaMixer, modeling_jamba.py): in_proj
// h x 2d (x and z), the depthwise conv1d of the kernel's width over d channels, x_proj
// d x (R + 2N), dt_proj R x d with its bias, A_log d x N, D, out_proj d x h, the RMSNorms over dt,
// B and C (R, N and N); in_proj's and out_proj's biases under mamba_proj_bias, the convolution's
// under mamba_conv_bias. No framework splits it over t: check_hybrid refuses t above 1.
void add_mamba1_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const double inner = shape.linear_num_value_heads;
  const double state = shape.linear_key_head_dim;
  const double rank = shape.mamba_dt_rank;
  list.matrix(h, 2 * inner, 1, P::kSplit);
  if (shape.mamba_proj_bias) list.vector(2 * inner, 1, P::kSplit);
  list.matrix(inner, shape.linear_conv_kernel_dim, 1, P::kSplit);
  if (shape.linear_conv_bias) list.vector(inner, 1, P::kSplit);
  list.matrix(inner, rank + 2 * state, 1, P::kSplit);
  list.matrix(rank, inner, 1, P::kSplit);
  list.vector(inner, 1, P::kSplit);
  list.matrix(inner, state, 1, P::kSplit);
  list.vector(inner, 1, P::kSplit);
  list.matrix(inner, h, 1, P::kSplit);
  if (shape.mamba_proj_bias) list.vector(h, 1, P::kReplicated);
  list.vector(rank + 2 * state, 1, P::kSplit);
}

// MiniMax's lightning attention (transformers' MiniMaxLightningAttention, modeling_minimax.py):
// qkv_proj h x 3·H·d, output_gate h x H·d, out_proj H·d x h, no biases, and its RMSNorm over H·d.
// Its decay buffers (slope_rate, query_decay, key_decay, diagonal_decay) are made at init, no
// parameters. No framework splits it over t: check_hybrid refuses t above 1.
void add_lightning_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  const double width =
      static_cast<double>(shape.linear_num_value_heads) * shape.linear_value_head_dim;
  list.matrix(h, 3 * width, 1, P::kSplit);
  list.matrix(h, width, 1, P::kSplit);
  list.matrix(width, h, 1, P::kSplit);
  list.vector(width, 1, P::kSplit);
}

// LFM2's short-convolution mixer (transformers' Lfm2ShortConv, modeling_lfm2.py): in_proj h x 3h
// (B, C and x), the depthwise conv1d of conv_L_cache over h channels, out_proj h x h, each with a
// bias under conv_bias. No framework splits it over t: check_hybrid refuses t above 1.
void add_short_conv_weights(const ModelShape& shape, WeightList& list) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  list.matrix(h, 3 * h, 1, P::kSplit);
  list.matrix(h, shape.short_conv_kernel, 1, P::kSplit);
  list.matrix(h, h, 1, P::kSplit);
  if (shape.short_conv_bias) list.vector(h, 5, P::kSplit);  // 3h, h and h
}

}  // namespace

std::vector<LayerWeight> linear_attention_weights(const ModelShape& shape) {
  WeightList list;
  if (!hybrid_linear_attention(shape)) return {};
  if (short_conv_mixer(shape)) {
    add_short_conv_weights(shape, list);
  } else if (kimi_delta_mixer(shape)) {
    add_kimi_delta_weights(shape, list);
  } else if (mamba2_mixer(shape)) {
    add_mamba2_weights(shape, list);
  } else if (mamba1_mixer(shape)) {
    add_mamba1_weights(shape, list);
  } else if (lightning_mixer(shape)) {
    add_lightning_weights(shape, list);
  } else if (global_attention_mixer(shape)) {
    add_attention_weights(global_attention_shape(shape), list);
  } else {
    add_gated_deltanet_weights(shape, list);
  }
  return std::move(list.weights);
}

std::vector<LayerWeight> layer_weights(const ModelShape& shape, bool dense_layer) {
  using P = WeightPlacement;
  const double h = shape.hidden_size;
  WeightList list;
  add_attention_weights(shape, list);
  std::vector<LayerWeight>& weights = list.weights;
  bool& routed = list.routed;
  const auto matrix = [&](double rows, double cols, double copies, P placement) {
    list.matrix(rows, cols, copies, placement);
  };
  const auto vector = [&](double length, double copies, P placement) {
    list.vector(length, copies, placement);
  };

  // The MLP: a gated MLP's column-parallel gate and up, or a plain MLP's up alone, each with
  // its row-parallel down; the biases of gate and up split, down's whole.
  const double column_projections = shape.gated_mlp ? 2 : 1;
  const auto mlp = [&](double width, double copies, double tokens) {
    matrix(tokens, width, column_projections * copies, P::kSplit);
    matrix(width, tokens, copies, P::kSplit);
    if (shape.mlp_bias) {
      vector(width, column_projections * copies, P::kSplit);
      vector(tokens, copies, P::kReplicated);
    }
  };
  const bool mixture = shape.num_experts > 1 && !dense_layer;
  if (!mixture) {
    mlp(shape.ffn_hidden_size, 1, h);
  } else {
    const double experts = shape.num_experts;
    routed = true;
    mlp(routed_expert_width(shape), experts, expert_token_width(shape));
    routed = false;
    // A latent mixture's projections around the experts (transformers' NemotronHMoE:
    // fc1_latent_proj h x l and fc2_latent_proj l x h, biased under mlp_bias), whole on every
    // rank: Megatron-LM's MoELayer builds them as duplicated TELinears.
    if (shape.moe_latent_size > 0) {
      const double latent = shape.moe_latent_size;
      matrix(h, latent, 1, P::kReplicated);
      matrix(latent, h, 1, P::kReplicated);
      if (shape.mlp_bias) {
        vector(latent, 1, P::kReplicated);
        vector(h, 1, P::kReplicated);
      }
    }
    // The router: h x E, replicated (Megatron-LM's TopKRouter); DeepSeek-V3's
    // e_score_correction_bias, a buffer of E that the checkpoint holds, beside it.
    matrix(h, experts, 1, P::kReplicated);
    weights.back().high_precision = true;
    if (shape.router_bias) vector(experts, 1, P::kReplicated);
    // The shared experts (DeepseekV3MoE's shared_experts, Qwen2MoeSparseMoeBlock's
    // shared_expert): one MLP that TP splits as a dense one; Qwen2-MoE's shared_expert_gate,
    // h x 1, replicated like the router.
    if (shape.shared_expert_ffn_hidden_size > 0) mlp(shape.shared_expert_ffn_hidden_size, 1, h);
    if (shape.shared_expert_gate) {
      matrix(h, 1, 1, P::kReplicated);
      weights.back().high_precision = true;
    }
  }

  // A LayerNorm holds a weight and a bias of h each; an RMSNorm its weight alone.
  vector(h, shape.norms_per_layer * (shape.norm_bias ? 2.0 : 1.0), P::kNorm);
  // Gemma 4's layer_scalar: one value, whole on every rank.
  if (shape.layer_scalar) vector(1, 1, P::kReplicated);
  return std::move(weights);
}

ParameterCounts parameter_counts(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const auto sum = [](const std::vector<LayerWeight>& weights, WeightPlacement placement) {
    double parameters = 0;
    for (const LayerWeight& weight : weights) {
      if (weight.placement == placement) parameters += weight.rows * weight.cols * weight.copies;
    }
    return parameters;
  };
  const std::vector<LayerWeight> layer = layer_weights(shape, false);
  std::vector<LayerWeight> routed_experts;
  for (const LayerWeight& weight : layer) {
    if (weight.routed_expert) routed_experts.push_back(weight);
  }
  const std::vector<LayerWeight> dense_layer = layer_weights(shape, true);

  const double per_norm = shape.norm_bias ? 2 * h : h;
  const double vocab = shape.vocab_size;
  ParameterCounts counts;
  counts.attention_and_mlp_per_layer = sum(layer, WeightPlacement::kSplit);
  counts.norms_per_layer = sum(layer, WeightPlacement::kNorm);
  counts.replicated_per_layer = sum(layer, WeightPlacement::kReplicated);
  counts.dense_attention_and_mlp_per_layer = sum(dense_layer, WeightPlacement::kSplit);
  counts.dense_replicated_per_layer = sum(dense_layer, WeightPlacement::kReplicated);
  counts.routed_experts_per_layer = sum(routed_experts, WeightPlacement::kSplit);
  counts.routed_experts_replicated_per_layer = sum(routed_experts, WeightPlacement::kReplicated);
  counts.embedding = vocab * h;
  counts.position_embedding = static_cast<double>(shape.num_position_embeddings) * h;
  counts.output_head =
      (shape.tied_embeddings ? 0 : counts.embedding) + (shape.output_head_bias ? vocab : 0);
  counts.final_norm = per_norm;
  if (hybrid_linear_attention(shape)) {
    // A linear mixer's layer holds its mixer where a full-attention layer holds its attention; a
    // one-part layer holds half the layer's norms and its mixer (the dense MLP's layer less the
    // MLP) or its MLP (the layer less the attention).
    WeightList attention;
    add_attention_weights(shape, attention);
    const std::vector<LayerWeight> linear = linear_attention_weights(shape);
    const std::vector<LayerWeight>& attention_weights = attention.weights;
    const double layer_norms =
        sum(dense_layer, WeightPlacement::kNorm) - sum(attention_weights, WeightPlacement::kNorm);
    const bool one_part = one_part_layers(shape);
    for (const WeightPlacement placement :
         {WeightPlacement::kSplit, WeightPlacement::kReplicated, WeightPlacement::kNorm}) {
      const auto part = [&](LayerDelta& delta) -> double& {
        return placement == WeightPlacement::kSplit        ? delta.split
               : placement == WeightPlacement::kReplicated ? delta.replicated
                                                           : delta.norms;
      };
      const double attention_part = sum(attention_weights, placement);
      part(counts.linear) = sum(linear, placement) - attention_part;
      if (!one_part) continue;
      const bool norms = placement == WeightPlacement::kNorm;
      part(counts.mlpless) =
          norms ? -layer_norms / 2 : -(sum(dense_layer, placement) - attention_part);
      part(counts.mixerless) = -attention_part - (norms ? layer_norms / 2 : 0);
    }
  }
  return counts;
}

std::string layer_kind_name(const ModelShape& shape, char kind) {
  if (kind == 'L') return linear_layers_name(shape);
  if (kind == 'A') return attention_layers_name(shape);
  if (kind == 'F') return shape.num_experts > 1 ? "mixture-of-experts blocks" : "MLP blocks";
  if (kind == 'a') return "attention blocks";
  std::string name = linear_layers_name(shape);
  return name.substr(0, name.size() - std::string("layers").size()) + "blocks";
}

ModelShape global_attention_shape(const ModelShape& shape) {
  ModelShape global = shape;
  global.head_dim = shape.global_head_dim;
  global.num_key_value_heads = shape.global_kv_heads;
  global.keys_are_values = shape.global_k_eq_v;
  global.hybrid_layers.clear();
  global.global_head_dim = 0;
  global.global_kv_heads = 0;
  global.global_k_eq_v = false;
  return global;
}

std::string interval_hybrid_layers(int layers, int interval, char every) {
  const char other = every == 'A' ? 'L' : 'A';
  std::string kinds;
  for (int i = 0; i < layers; ++i) kinds += (i + 1) % interval == 0 ? every : other;
  return kinds;
}

double linear_attention_layers_between(const ModelShape& shape, double first, double count) {
  return layers_of_kinds_between(shape, first, count, "Ll");
}

double layers_of_kinds_between(const ModelShape& shape, double first, double count,
                               std::string_view of_kinds) {
  if (!hybrid_linear_attention(shape)) return 0;
  // Layers i in [first, first + count), whole layers of a stage; a fractional bound (a stage's
  // mean share of an uneven split) counts the layers it starts within.
  const std::string& kinds = shape.hybrid_layers;
  const auto index = [&](double at) {
    return static_cast<std::size_t>(
        std::clamp(std::ceil(at), 0.0, static_cast<double>(kinds.size())));
  };
  const std::size_t end = index(first + count);
  double linear = 0;
  for (std::size_t i = index(first); i < end; ++i) {
    linear += of_kinds.find(kinds[i]) != std::string_view::npos ? 1 : 0;
  }
  return linear;
}

double layer_kind_deltas(const ModelShape& shape, const ParameterCounts& counts, double first,
                         double count, double t) {
  if (!hybrid_linear_attention(shape)) return 0;
  return linear_attention_layers_between(shape, first, count) * counts.linear.on_device(t) +
         layers_of_kinds_between(shape, first, count, "al") * counts.mlpless.on_device(t) +
         layers_of_kinds_between(shape, first, count, "F") * counts.mixerless.on_device(t);
}

double dense_layers_between(const ModelShape& shape, double first, double count) {
  if (shape.num_experts <= 1) return count;
  if (one_part_layers(shape)) return layers_of_kinds_between(shape, first, count, "al");
  const double end = first + count;
  const double k = shape.num_dense_layers;
  const double leading = std::clamp(std::min(end, k) - first, 0.0, count);
  const double step = shape.moe_layer_step;
  if (step <= 1) return leading;
  // Past the first k: layers i in [from, end) with (i + 1) a multiple of step are mixtures.
  const double from = std::max(first, k);
  if (end <= from) return leading;
  const double mixtures = std::floor(end / step) - std::floor(from / step);
  return leading + (end - from) - mixtures;
}

bool mixes_dense_layers(const ModelShape& shape) {
  return shape.num_experts > 1 && dense_layers_between(shape, 0, shape.num_layers) > 0;
}

double value_model_parameters(const ModelShape& shape) {
  return count_parameters(shape) - parameter_counts(shape).output_head + shape.hidden_size + 1;
}

double count_parameters(const ModelShape& shape) {
  const ParameterCounts counts = parameter_counts(shape);
  const double dense_layers =
      shape.num_experts > 1 ? dense_layers_between(shape, 0, shape.num_layers) : 0;
  const double mixture_layers = shape.num_layers - dense_layers;
  return mixture_layers * (counts.attention_and_mlp_per_layer + counts.replicated_per_layer) +
         dense_layers *
             (counts.dense_attention_and_mlp_per_layer + counts.dense_replicated_per_layer) +
         shape.num_layers * counts.norms_per_layer +
         layer_kind_deltas(shape, counts, 0, shape.num_layers, 1) + counts.embedding +
         counts.position_embedding + counts.output_head + counts.final_norm +
         shape.vision_parameters;
}

double count_active_parameters(const ModelShape& shape) {
  if (shape.num_experts <= 1) return count_parameters(shape);
  // One routed expert's weights; E - k of them sit idle for each token, in each mixture layer.
  const double tokens = expert_token_width(shape);
  const double width = routed_expert_width(shape);
  const double column_projections = shape.gated_mlp ? 2 : 1;
  double expert = (column_projections + 1) * tokens * width;
  if (shape.mlp_bias) expert += column_projections * width + tokens;
  const double mixture_layers = shape.num_layers - dense_layers_between(shape, 0, shape.num_layers);
  return count_parameters(shape) -
         mixture_layers * (shape.num_experts - shape.num_experts_per_token) * expert;
}

double count_mtp_parameters(const ModelShape& shape) {
  if (shape.num_mtp_layers == 0) return 0;
  const ParameterCounts counts = parameter_counts(shape);
  const double h = shape.hidden_size;
  const bool mixture = shape.num_experts > 1;
  const double layer =
      (mixture ? counts.attention_and_mlp_per_layer + counts.replicated_per_layer
               : counts.dense_attention_and_mlp_per_layer + counts.dense_replicated_per_layer) +
      counts.norms_per_layer;
  const double module = 2 * counts.final_norm + 2 * h * h + layer + counts.final_norm;
  return shape.num_mtp_layers * module;
}

}  // namespace trainmem
