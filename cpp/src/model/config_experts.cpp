// The readers of mixtures of experts whose fields are their own: Qwen2-MoE's and Qwen3-MoE's,
// DeepSeek-V3's (and Kimi K2's), GLM-4.5's, gpt-oss's and Llama 4's. Each counts what transformers
// builds for its model_type (modeling_<type>.py), and refuses what a shape cannot hold by name.
#include <cstdint>
#include <string>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// DeepSeek's experts (DeepseekV3MoE, Glm4MoeMoE): n_routed_experts of moe_intermediate_size, top
// num_experts_per_tok, n_shared_experts as one MLP, the first first_k_dense_replace layers dense,
// and the multi-token-prediction modules after the main model.
void read_deepseek_experts(const Json& config, ModelShape& shape, Problems& problems) {
  problems.add(read_required(config, kNRoutedExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  problems.add(read_required(config, kFirstKDenseReplace, shape.num_dense_layers));
  int moe_layer_freq = 1;
  problems.add(read_optional(config, kMoeLayerFreq, moe_layer_freq));
  problems.add(read_optional(config, kNumNextnPredictLayers, shape.num_mtp_layers));
  // Group-limited routing (n_group, topk_group; DeepSeek-V3's 8 and 4): no parameters, but
  // torchtitan's per-op recomputation keeps its two topk's outputs (per_op.cpp). One group, or
  // DeepSeek-V2's topk_method "greedy", routes over all experts.
  int groups = 1;
  int limited = 1;
  problems.add(read_optional(config, {"n_group", 1, kMaxModelWidth}, groups));
  problems.add(read_optional(config, {"topk_group", 1, kMaxModelWidth}, limited));
  const Json* method = present(config, "topk_method");
  const bool greedy =
      method != nullptr && method->is_string() && method->get<std::string>() == "greedy";
  if (!problems.any() && groups > 1 && !greedy) {
    if (shape.num_experts % groups != 0 || limited > groups) {
      problems.add("'n_group' (" + std::to_string(groups) + ") must divide n_routed_experts (" +
                   std::to_string(shape.num_experts) + ") and be at least topk_group (" +
                   std::to_string(limited) + ").");
    } else {
      shape.num_expert_groups = groups;
      shape.num_limited_groups = limited;
    }
  }
  if (!problems.any() && moe_layer_freq != 1) {
    problems.add("'moe_layer_freq' must be 1 (absent or null means 1); it is " +
                 std::to_string(moe_layer_freq) +
                 ": trainmem counts every layer past first_k_dense_replace as a mixture.");
  }
}

// The shared experts as one MLP of count · moe_intermediate_size, the count read from `field`
// (DeepSeek's n_shared_experts, Ling's num_shared_experts).
std::string read_shared_experts(const Json& config, const WholeField& field, ModelShape& shape) {
  int shared_experts = 0;
  const std::string problem = read_required(config, field, shared_experts);
  if (!problem.empty()) return problem;
  if (static_cast<double>(shared_experts) * shape.moe_ffn_hidden_size > kMaxModelWidth) {
    return quoted(field.key) + " (" + std::to_string(shared_experts) +
           ") times moe_intermediate_size must be at most " + format_count(kMaxModelWidth) + ".";
  }
  shape.shared_expert_ffn_hidden_size = shared_experts * shape.moe_ffn_hidden_size;
  return {};
}

// DeepSeek's shared experts and the router's e_score_correction_bias (E per mixture layer, in the
// checkpoint beside the router's weight).
std::string deepseek_shared_experts(const Json& config, ModelShape& shape) {
  const std::string problem = read_shared_experts(config, kNSharedExperts, shape);
  if (!problem.empty()) return problem;
  if (shape.num_dense_layers >= shape.num_layers) {
    return "'first_k_dense_replace' (" + std::to_string(shape.num_dense_layers) +
           ") must be below num_hidden_layers (" + std::to_string(shape.num_layers) + ").";
  }
  shape.router_bias = true;
  return {};
}

}  // namespace

std::string check_mixture_counts(const ModelShape& shape, const char* dense_key,
                                 const char* family) {
  if (shape.num_experts < 2) {
    return "'num_experts' must be from 2 to " + format_count(kMaxExperts) + ": " + family +
           "'s layers past " + dense_key + " are mixtures; it is " +
           std::to_string(shape.num_experts) + ".";
  }
  if (shape.num_experts_per_token > shape.num_experts) {
    return "'num_experts_per_tok' must be from 1 to num_experts (" +
           std::to_string(shape.num_experts) + "); it is " +
           std::to_string(shape.num_experts_per_token) + ".";
  }
  if (shape.num_dense_layers >= shape.num_layers) {
    return quoted(dense_key) + " (" + std::to_string(shape.num_dense_layers) +
           ") must be below num_hidden_layers (" + std::to_string(shape.num_layers) +
           "): " + family + "'s layers past it are mixtures.";
  }
  return {};
}

// Qwen2-MoE's and Qwen3-MoE's experts (transformers' Qwen2MoeSparseMoeBlock and
// Qwen3MoeSparseMoeBlock): E experts of moe_intermediate_size, a gate (the router) of h x E with
// no bias; Qwen2-MoE adds a shared_expert of shared_expert_intermediate_size and its
// shared_expert_gate, h x 1. A layer is dense (an MLP of intermediate_size) when it is listed in
// mlp_only_layers or (layer + 1) is not a multiple of decoder_sparse_step; trainmem places dense
// layers first, so it reads mlp_only_layers = [0, 1, …, k - 1] and decoder_sparse_step 1.
std::string read_qwen_moe_fields(const Json& config, bool shared_expert, ModelShape& shape) {
  Problems problems;
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  if (shared_expert) {
    problems.add(
        read_required(config, kSharedExpertIntermediateSize, shape.shared_expert_ffn_hidden_size));
    shape.shared_expert_gate = shape.shared_expert_ffn_hidden_size > 0;
  }
  int sparse_step = 1;
  problems.add(read_optional(config, kDecoderSparseStep, sparse_step));
  if (problems.any()) return problems.first();
  if (sparse_step != 1) {
    return "'decoder_sparse_step' must be 1 (absent or null means 1); it is " +
           std::to_string(sparse_step) +
           ": trainmem places a mixture's dense layers first and does not count dense layers "
           "between its sparse ones.";
  }
  if (const Json* layers = present(config, "mlp_only_layers")) {
    const std::string allowed_layers =
        "'mlp_only_layers' must list the first layers in order, [0, 1, …, k - 1] (or be "
        "empty): trainmem places a mixture's dense layers first";
    if (!layers->is_array()) return allowed_layers + "; it is " + describe(*layers) + ".";
    int expected = 0;
    for (const Json& layer : *layers) {
      if (!layer.is_number_integer() || layer.get<std::int64_t>() != expected ||
          expected >= shape.num_layers) {
        return allowed_layers + "; it holds " + describe(layer) + " where " +
               std::to_string(expected) + " would be.";
      }
      ++expected;
    }
    shape.num_dense_layers = expected;
  }
  return {};
}

// transformers' DeepseekV3ForCausalLM: embed_tokens; per layer input_layernorm, latent attention
// (DeepseekV3Attention), post_attention_layernorm, and either a dense MLP of intermediate_size
// (the first first_k_dense_replace layers) or DeepseekV3MoE: n_routed_experts experts of
// moe_intermediate_size, a router (DeepseekV3TopkRouter: a weight of E x h and the buffer
// e_score_correction_bias of E) and shared_experts, one MLP of moe_intermediate_size ·
// n_shared_experts; norm; lm_head. The multi-token-prediction modules the checkpoint adds
// (num_nextn_predict_layers, model.layers.61 in DeepSeek-V3) are not part of the model transformers
// builds: the shape keeps their number, and a setup counts them when it trains them.
std::string read_deepseek_v3_block(const Json& config, ModelShape& shape) {
  Problems problems;
  problems.add(read_required(config, kHiddenSize, shape.hidden_size));
  problems.add(read_required(config, kNumLayers, shape.num_layers));
  problems.add(read_required(config, kNumHeads, shape.num_attention_heads));
  problems.add(read_required(config, kIntermediateSize, shape.ffn_hidden_size));
  problems.add(read_required(config, kVocabSize, shape.vocab_size));
  problems.add(read_required_or_null(config, kQLoraRank, shape.q_lora_rank));
  problems.add(read_required(config, kKvLoraRank, shape.kv_lora_rank));
  problems.add(read_required(config, kQkNopeHeadDim, shape.qk_nope_head_dim));
  problems.add(read_required(config, kQkRopeHeadDim, shape.qk_rope_head_dim));
  problems.add(read_required(config, kVHeadDim, shape.v_head_dim));
  read_deepseek_experts(config, shape, problems);
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(
      require_boolean(config, "attention_bias", false, "biases on latent attention's projections"));
  if (problems.any()) return problems.first();
  // Latent attention has no key/value heads of its own; each of the a heads reads the latent.
  shape.num_key_value_heads = shape.num_attention_heads;
  return deepseek_shared_experts(config, shape);
}

// transformers' DeepseekV2ForCausalLM (DeepSeek-V2, V2-Lite): DeepSeek-V3's latent attention
// (V2-Lite without a query latent: q_lora_rank null) and experts, whose router (DeepseekV2Moe.gate,
// a Linear of h x E) has no bias.
std::string read_deepseek_v2_block(const Json& config, ModelShape& shape) {
  const std::string problem = read_deepseek_v3_block(config, shape);
  shape.router_bias = false;
  return problem;
}

namespace {

// A per-layer list a DSA config may give, which must say what the shape holds: mlp_layer_types
// "dense" for the first first_k_dense_replace layers and "sparse" after them; indexer_types
// "full" in every layer (GLM-5.2's "shared" layers reuse another layer's top-k and build no
// indexer of their own, which trainmem does not count).
std::string check_layer_list(const Json& config, const char* key, const ModelShape& shape,
                             bool mlp) {
  const Json* list = present(config, key);
  if (list == nullptr) return {};
  const std::string allowed_list =
      quoted(key) + " must list num_hidden_layers (" + std::to_string(shape.num_layers) +
      ") entries, " +
      (mlp ? "\"dense\" for the first first_k_dense_replace layers and \"sparse\" after them"
           : "each \"full\": an indexer in every layer (shared top-k layers are not counted by "
             "trainmem)");
  if (!list->is_array() || list->size() != static_cast<std::size_t>(shape.num_layers)) {
    return allowed_list + "; it is " + describe(*list) + ".";
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const char* expected =
        !mlp ? "full" : (static_cast<int>(i) < shape.num_dense_layers ? "dense" : "sparse");
    const Json& entry = (*list)[i];
    if (!entry.is_string() || entry.get<std::string>() != expected) {
      return allowed_list + "; entry " + std::to_string(i) + " is " + describe(entry) + ".";
    }
  }
  return {};
}

}  // namespace

// DeepSeek Sparse Attention: transformers' DeepseekV32ForCausalLM (modeling_deepseek_v32.py,
// DeepSeek-V3.2 and V3.2-Exp) and GlmMoeDsaForCausalLM (modeling_glm_moe_dsa.py, GLM-5 and
// GLM-5.1): DeepSeek-V3's latent attention, experts and dense first layers, and in every layer a
// lightning indexer of index_n_heads heads of index_head_dim (DeepseekV32Indexer), which needs
// the query latent. GLM-5's index_topk_pattern, index_topk_freq and indexer_types, which can make
// layers share another's top-k, must keep an indexer in every layer.
std::string read_sparse_attention_block(const Json& config, ModelShape& shape) {
  const std::string problem = read_deepseek_v3_block(config, shape);
  if (!problem.empty()) return problem;
  Problems problems;
  problems.add(read_required(config, kIndexNHeads, shape.index_n_heads));
  problems.add(read_required(config, kIndexHeadDim, shape.index_head_dim));
  problems.add(read_required(config, kIndexTopk, shape.index_topk));
  if (problems.any()) return problems.first();
  if (shape.q_lora_rank == 0) {
    return "'q_lora_rank' must be a whole number from 1 to " + format_count(kMaxModelWidth) +
           ": the sparse attention's indexer reads the query latent; it is null.";
  }
  if (const Json* freq = present(config, "index_topk_freq");
      freq != nullptr && !(freq->is_number() && freq->get<double>() <= 1)) {
    return "'index_topk_freq' must be 1 (absent or null means 1): an indexer in every layer; it "
           "is " +
           describe(*freq) + ". Layers that share another's top-k are not counted by trainmem.";
  }
  if (const Json* pattern = present(config, "index_topk_pattern");
      pattern != nullptr &&
      !(pattern->is_string() &&
        pattern->get<std::string>().find_first_not_of('F') == std::string::npos &&
        pattern->get<std::string>().size() == static_cast<std::size_t>(shape.num_layers))) {
    return "'index_topk_pattern' must be num_hidden_layers letters F (an indexer in every "
           "layer); it is " +
           describe(*pattern) +
           ". Layers that share another's top-k (S) are not counted by "
           "trainmem.";
  }
  problems.add(check_layer_list(config, "indexer_types", shape, false));
  problems.add(check_layer_list(config, "mlp_layer_types", shape, true));
  return problems.first();
}

// transformers' Glm4MoeForCausalLM (GLM-4.5, GLM-4.5-Air): grouped-query attention whose Q, K and
// V carry biases when attention_bias (O never), with q_norm and k_norm of head_dim when
// use_qk_norm (Glm4MoeAttention); DeepSeek-V3's experts, router and dense first layers; partial
// rotary positions hold no parameters. The multi-token-prediction layer the checkpoint adds is
// not built (Glm4MoeModel ignores model.layers.92 and .46), and kept as DeepSeek-V3's is.
std::string read_glm4_moe_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  read_deepseek_experts(config, shape, problems);
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(read_boolean(config, "attention_bias", shape.attention_qkv_bias));
  problems.add(read_boolean(config, "use_qk_norm", shape.qk_norm));
  if (problems.any()) return problems.first();
  return deepseek_shared_experts(config, shape);
}

// transformers' GptOssForCausalLM (gpt-oss-20b, -120b): attention whose Q, K, V and O carry biases
// (attention_bias, true by default) and a sink logit per head (GptOssAttention.sinks); a mixture
// of num_local_experts experts of intermediate_size with biases (GptOssExperts: gate_up_proj and
// its bias, down_proj and its bias), a router with a bias (GptOssTopKRouter); two RMSNorms; an
// untied lm_head. The checkpoint stores the experts in MXFP4, which transformers cannot train:
// training loads them dequantised to BF16 (Mxfp4Config(dequantize=True)), and so they are counted.
std::string read_gpt_oss_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  problems.add(read_required(config, kNumLocalExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  bool attention_bias = true;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  shape.attention_qkv_bias = attention_bias;
  shape.attention_output_bias = attention_bias;
  shape.mlp_bias = true;
  shape.router_bias = true;
  shape.attention_sinks = true;
  shape.clamped_swiglu = true;
  if (!problems.any() && shape.num_experts < 2) {
    problems.add("'num_local_experts' must be 2 or more for gpt_oss, a mixture of experts; it is " +
                 std::to_string(shape.num_experts) + ".");
  }
  return problems.first();
}

namespace {

// Ling 2.0's keys (BailingMoeV2ForCausalLM, whose configs keep model_type bailing_moe): a config
// that gives one must name that architecture, so that it is never read as Ling 1.0's block.
constexpr const char* kBailingMoeV2Keys[] = {"use_qk_norm", "moe_router_enable_expert_bias",
                                             "moe_shared_expert_intermediate_size",
                                             "num_nextn_predict_layers", "n_group"};

bool names_architecture(const Json& config, const char* architecture) {
  const Json* architectures = present(config, "architectures");
  if (architectures == nullptr || !architectures->is_array()) return false;
  for (const Json& name : *architectures) {
    if (name.is_string() && name.get<std::string>() == architecture) return true;
  }
  return false;
}

// Ling 2.0 (inclusionAI/Ling-V2's models/modeling_bailing_moe_v2.py): Ling 1.0's block with
// query_layernorm and key_layernorm of d under use_qk_norm, and BailingMoeV2Gate, a sigmoid router
// whose buffer expert_bias of E it registers whatever moe_router_enable_expert_bias says (n_group,
// topk_group and routed_scaling_factor choose and scale, holding nothing). Its shared experts are
// one MLP of moe_intermediate_size · num_shared_experts (BailingMoeV2SparseMoeBlock): a
// moe_shared_expert_intermediate_size that says otherwise is refused. Its MTP layers
// (BailingMoeV2MTPLayer, the last num_nextn_predict_layers of num_hidden_layers) are refused by
// name, not counted yet.
std::string read_bailing_moe_v2_fields(const Json& config, ModelShape& shape) {
  Problems problems;
  int mtp_layers = 0;
  problems.add(read_optional(config, kNumNextnPredictLayers, mtp_layers));
  problems.add(read_boolean(config, "use_qk_norm", shape.qk_norm));
  int shared_width = shape.shared_expert_ffn_hidden_size;
  problems.add(read_optional(config, {"moe_shared_expert_intermediate_size", 0, kMaxModelWidth},
                             shared_width));
  if (problems.any()) return problems.first();
  if (mtp_layers > 0) {
    return "'num_nextn_predict_layers' must be 0: trainmem does not count Ling 2.0's MTP layers "
           "(BailingMoeV2MTPLayer, the last of num_hidden_layers) yet; it is " +
           std::to_string(mtp_layers) + ".";
  }
  if (shared_width != shape.shared_expert_ffn_hidden_size) {
    return "'moe_shared_expert_intermediate_size' (" + std::to_string(shared_width) +
           ") must be moe_intermediate_size times num_shared_experts (" +
           std::to_string(shape.shared_expert_ffn_hidden_size) +
           "), the width BailingMoeV2SparseMoeBlock builds.";
  }
  shape.router_bias = true;
  return {};
}

}  // namespace

// inclusionAI's Ling (model_type bailing_moe; the checkpoints' remote code): Ling 1.0's Ling-lite
// and Ling-plus (BailingMoeForCausalLM, modeling_bailing_moe.py of inclusionAI/Ling) and, where
// architectures names BailingMoeV2ForCausalLM, Ling 2.0's (read_bailing_moe_v2_fields). Llama's
// attention as one fused query_key_value of h x (a + 2k)·d, with its bias under use_qkv_bias, and
// `dense` (the output projection) with its bias under use_bias; the first first_k_dense_replace
// layers (0 unless given) over an MLP of intermediate_size, the rest over num_experts experts of
// moe_intermediate_size, top num_experts_per_tok, a router of h x E without a bias (Ling 1.0's a
// softmax), and shared_experts, one MLP of num_shared_experts · moe_intermediate_size; two norms
// a layer and a final one; lm_head untied unless said otherwise. norm_head normalises lm_head's
// weight and adds none.
std::string read_bailing_moe_block(const Json& config, ModelShape& shape) {
  const bool v2 = names_architecture(config, "BailingMoeV2ForCausalLM");
  for (const char* key : kBailingMoeV2Keys) {
    const Json* value = present(config, key);
    if (!v2 && value != nullptr && !(value->is_boolean() && !value->get<bool>()) &&
        !(value->is_number() && value->get<double>() == 0)) {
      return quoted(key) +
             " is Ling 2.0's: a bailing_moe config that gives it must name "
             "BailingMoeV2ForCausalLM in 'architectures' (without it, trainmem reads Ling 1.0's "
             "BailingMoeForCausalLM).";
    }
  }
  Problems problems;
  read_llama_widths(config, shape, problems);
  problems.add(read_required(config, kNumExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  problems.add(read_optional(config, kFirstKDenseReplace, shape.num_dense_layers));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(read_boolean(config, "use_qkv_bias", shape.attention_qkv_bias));
  problems.add(read_boolean(config, "use_bias", shape.attention_output_bias));
  if (problems.any()) return problems.first();
  problems.add(check_mixture_counts(shape, kFirstKDenseReplace.key, "Ling"));
  problems.add(read_shared_experts(config, {"num_shared_experts", 0, kMaxExperts}, shape));
  if (problems.any()) return problems.first();
  return v2 ? read_bailing_moe_v2_fields(config, shape) : std::string();
}

namespace {

// A field HunYuanMoEV1Config takes as one whole number or as a list of one a layer: every layer's
// must be the same (trainmem counts one mixture for all).
std::string read_every_layer(const Json& config, const WholeField& field, int& out) {
  const Json* value = present(config, field.key);
  if (value == nullptr || !value->is_array()) return read_optional(config, field, out);
  if (value->empty()) {
    return quoted(field.key) + " must be " + allowed(field) + ", or a list of them; it is [].";
  }
  int first = 0;
  for (std::size_t i = 0; i < value->size(); ++i) {
    int entry = 0;
    Json one = {{field.key, (*value)[i]}};
    const std::string problem = read_required(one, field, entry);
    if (!problem.empty()) return "in its entry " + std::to_string(i) + ", " + problem;
    if (i == 0) first = entry;
    if (entry != first) {
      return quoted(field.key) +
             " must give every layer the same value (trainmem counts one "
             "mixture for all); it lists " +
             std::to_string(first) + " and " + std::to_string(entry) + ".";
    }
  }
  out = first;
  return {};
}

constexpr WholeField kMoeTopk = {"moe_topk", 1, kMaxExperts};
constexpr WholeField kNumSharedExpert = {"num_shared_expert", 0, kMaxExperts};
constexpr WholeField kAttentionHeadDim = {"attention_head_dim", 1, kMaxModelWidth};
constexpr WholeField kMoeLayerNumSkipped = {"moe_layer_num_skipped", 0, kMaxModelLayers};

}  // namespace

// Hunyuan-A13B as transformers builds it (HunYuanMoEV1ForCausalLM, modeling_hunyuan_v1_moe.py,
// 4.56 on): Llama's attention of head_dim (or attention_head_dim, else h / a) heads with a
// query_layernorm and a key_layernorm per head whatever use_qk_norm says, biased under
// attention_bias; every layer a mixture (HunYuanMoEV1Moe) of num_experts SwiGLU experts of
// intermediate_size, top moe_topk, a router h x E without a bias, and one shared MLP of
// intermediate_size beside them (shared_mlp, built whatever use_mixed_mlp_moe says); untied
// unless tie_word_embeddings. transformers gives the experts intermediate_size, so a
// moe_intermediate_size that differs, another count of shared experts, cross-layer attention
// (use_cla, Hunyuan-Large's) and latent attention (use_mla), which it does not build, are refused.
std::string read_hunyuan_v1_moe_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  if (problems.any()) return problems.first();
  if (present(config, kHeadDim.key) == nullptr) {
    shape.head_dim = 0;
    problems.add(read_optional(config, kAttentionHeadDim, shape.head_dim));
    if (shape.head_dim == 0) {
      problems.add(head_dim_from_hidden_size(
          shape,
          "Hunyuan's heads are hidden_size / num_attention_heads wide where neither "
          "head_dim nor attention_head_dim is given"));
    }
  }
  bool attention_bias = false;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  shape.attention_qkv_bias = attention_bias;
  shape.attention_output_bias = attention_bias;
  shape.qk_norm = true;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  shape.num_experts = 1;
  shape.num_experts_per_token = 1;
  problems.add(read_every_layer(config, kNumExperts, shape.num_experts));
  problems.add(read_every_layer(config, kMoeTopk, shape.num_experts_per_token));
  int expert_width = shape.ffn_hidden_size;
  problems.add(read_every_layer(config, kMoeIntermediateSize, expert_width));
  int shared = 1;
  problems.add(read_every_layer(config, kNumSharedExpert, shared));
  int skipped = 0;
  problems.add(read_optional(config, kMoeLayerNumSkipped, skipped));
  problems.add(require_boolean(config, "use_cla", false,
                               "cross-layer attention (Hunyuan-Large's), which transformers' "
                               "hunyuan_v1_moe does not build"));
  problems.add(require_boolean(config, "use_mla", false,
                               "latent attention, which transformers' hunyuan_v1_moe does not "
                               "build"));
  if (problems.any()) return problems.first();
  if (expert_width != shape.ffn_hidden_size) {
    return "'moe_intermediate_size' (" + std::to_string(expert_width) +
           ") must equal intermediate_size (" + std::to_string(shape.ffn_hidden_size) +
           "): transformers' HunYuanMoEV1 experts are intermediate_size wide, so a checkpoint of "
           "other widths is not the model it builds.";
  }
  if (shared != 1) {
    return "'num_shared_expert' must be 1 in every layer: transformers' HunYuanMoEV1Moe builds "
           "one shared MLP of intermediate_size; it is " +
           std::to_string(shared) + ".";
  }
  if (skipped != 0) {
    return "'moe_layer_num_skipped' must be 0: transformers' hunyuan_v1_moe makes every layer a "
           "mixture; it is " +
           std::to_string(skipped) + ".";
  }
  problems.add(check_mixture_counts(shape, "moe_layer_num_skipped", "Hunyuan"));
  if (problems.any()) return problems.first();
  shape.moe_ffn_hidden_size = expert_width;
  shape.shared_expert_ffn_hidden_size = shape.ffn_hidden_size;
  return {};
}

// MiniMax-M2, M2.1, M2.5 and M2.7 (transformers' MiniMaxM2ForCausalLM, modeling_minimax_m2.py, as
// the checkpoints' remote code): Llama's attention without biases and with q_norm and k_norm over
// the whole projections (qk_norm_type "per_layer"), and in every layer num_local_experts gated
// experts of intermediate_size, top num_experts_per_tok, a router of h x E with its
// e_score_correction_bias (use_routing_bias). The released checkpoints hold no MTP modules, nor
// does transformers build them; lightning-attention layers (attn_type_list 0, MiniMax-M1's) and a
// shared expert are refused by name.
std::string read_minimax_m2_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  problems.add(read_required(config, kNumLocalExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  shape.router_bias = true;
  problems.add(read_boolean(config, "use_routing_bias", shape.router_bias));
  shape.qk_norm_whole = true;
  problems.add(read_boolean(config, "use_qk_norm", shape.qk_norm_whole));
  if (problems.any()) return problems.first();
  if (const Json* kind = present(config, "qk_norm_type");
      shape.qk_norm_whole && kind != nullptr &&
      !(kind->is_string() && kind->get<std::string>() == "per_layer")) {
    return "'qk_norm_type' must be \"per_layer\" (norms over the whole projections); it is " +
           describe(*kind) + ": trainmem counts no other.";
  }
  if (const Json* shared = present(config, "shared_intermediate_size");
      shared != nullptr && !(shared->is_number() && shared->get<double>() == 0)) {
    return "'shared_intermediate_size' must be 0 (no shared expert, as MiniMax-M2's); it is " +
           describe(*shared) + ": trainmem does not count MiniMax's shared experts.";
  }
  if (const Json* types = present(config, "attn_type_list")) {
    bool every_full = types->is_array();
    for (const Json& type : *types) every_full = every_full && type == 1;
    if (!every_full || types->size() != static_cast<std::size_t>(shape.num_layers)) {
      return "'attn_type_list' must list num_hidden_layers 1s (softmax attention in every layer, "
             "as MiniMax-M2's); lightning-attention layers (0) are not counted by trainmem.";
    }
  }
  if (shape.num_experts < 2) {
    return "'num_local_experts' must be 2 or more for minimax_m2, a mixture of experts; it is " +
           std::to_string(shape.num_experts) + ".";
  }
  return {};
}

// transformers' Llama4ForCausalLM (the text tower of Llama 4 Scout and Maverick): Llama's
// attention (L2 query and key norms, without weights, when use_qk_norm); the layers in moe_layers
// (every interleave_moe_layer_step-th: range(step - 1, L, step)) hold Llama4TextMoe, experts of
// intermediate_size without biases, a router of h x E without one and a shared expert of
// intermediate_size; the others a dense MLP of intermediate_size_mlp. An explicit moe_layers
// other than the step's is refused.
std::string read_llama4_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  int expert_width = 0;
  problems.add(read_required(config, kIntermediateSize, expert_width));
  problems.add(read_required(config, kIntermediateSizeMlp, shape.ffn_hidden_size));
  problems.add(read_required(config, kNumLocalExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_optional(config, kInterleaveMoeLayerStep, shape.moe_layer_step));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  bool attention_bias = false;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  shape.attention_qkv_bias = attention_bias;
  shape.attention_output_bias = attention_bias;
  if (problems.any()) return problems.first();
  shape.moe_ffn_hidden_size = expert_width;
  shape.shared_expert_ffn_hidden_size = expert_width;
  if (shape.num_experts < 2) {
    return "'num_local_experts' must be 2 or more for llama4_text, a mixture of experts; it is " +
           std::to_string(shape.num_experts) + ".";
  }
  if (const Json* layers = present(config, "moe_layers")) {
    const std::string allowed_layers =
        "'moe_layers' must list every interleave_moe_layer_step-th layer (" +
        std::to_string(shape.moe_layer_step) + "), from layer " +
        std::to_string(shape.moe_layer_step - 1) + " on";
    if (!layers->is_array()) return allowed_layers + "; it is " + describe(*layers) + ".";
    std::int64_t expected = shape.moe_layer_step - 1;
    for (const Json& layer : *layers) {
      if (!layer.is_number_integer() || layer.get<std::int64_t>() != expected) {
        return allowed_layers + "; it holds " + describe(layer) + " where " +
               std::to_string(expected) + " would be.";
      }
      expected += shape.moe_layer_step;
    }
    if (expected < shape.num_layers) {
      return allowed_layers + "; it stops before layer " + std::to_string(expected) + ".";
    }
  }
  return {};
}

}  // namespace trainmem
