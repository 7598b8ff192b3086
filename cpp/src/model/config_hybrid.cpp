// The readers of hybrid models' mixers: Qwen3-Next's and Qwen3.5's Gated DeltaNet layers beside
// their gated full-attention layers (transformers' modeling_qwen3_next.py and modular_qwen3_5.py),
// LFM2's short-convolution layers beside its full-attention ones (modeling_lfm2.py; LFM2-MoE's over
// experts, modular_lfm2_moe.py), and Gemma 4's
// full-attention layers of their own widths beside its sliding-window ones (modeling_gemma4.py),
// and Kimi Linear's Kimi Delta Attention layers beside its latent attention ones
// (modeling_kimi_linear.py), counted as transformers builds them, each field refused by name where
// a shape cannot hold it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// Qwen3NextConfig's and Qwen3_5TextConfig's default interval (configuration_qwen3_next.py:
// layer_types default to "linear_attention" unless (i + 1) % full_attention_interval == 0).
constexpr int kQwen3NextFullAttentionInterval = 4;

constexpr const char* kFullAttention = "full_attention";

// layer_types, where given: one entry a layer, the first kind's name (`attention`) or the second
// kind's (`linear`), into shape.hybrid_layers ('A' and 'L'), as transformers builds each layer as
// its entry says. Absent: "" and the layers unset.
std::string read_layer_types(const Json& config, const char* attention, const char* linear,
                             ModelShape& shape) {
  const Json* types = present(config, "layer_types");
  if (types == nullptr) return {};
  const std::string allowed_entries = "'layer_types' must list num_hidden_layers (" +
                                      std::to_string(shape.num_layers) + ") entries, each \"" +
                                      attention + "\" or \"" + linear + "\"";
  if (!types->is_array() || types->size() != static_cast<std::size_t>(shape.num_layers)) {
    return allowed_entries + "; it is " + describe(*types) +
           (types->is_array() ? " of " + std::to_string(types->size()) + " entries" : "") + ".";
  }
  std::string kinds;
  for (std::size_t i = 0; i < types->size(); ++i) {
    const Json& entry = (*types)[i];
    const bool first = entry.is_string() && entry.get<std::string>() == attention;
    if (!first && !(entry.is_string() && entry.get<std::string>() == linear)) {
      return allowed_entries + "; entry " + std::to_string(i) + " is " + describe(entry) + ".";
    }
    kinds += first ? 'A' : 'L';
  }
  shape.hybrid_layers = kinds;
  return {};
}

// LFM2's full_attn_idxs, where layer_types is absent (Lfm2Config: every layer full attention
// when neither is given).
std::string read_full_attention_indices(const Json& config, ModelShape& shape) {
  std::string kinds(static_cast<std::size_t>(shape.num_layers), 'A');
  if (const Json* indices = present(config, "full_attn_idxs")) {
    const std::string allowed_indices = "'full_attn_idxs' must list layer numbers from 0 to " +
                                        std::to_string(shape.num_layers - 1);
    if (!indices->is_array()) return allowed_indices + "; it is " + describe(*indices) + ".";
    kinds.assign(kinds.size(), 'L');
    for (const Json& index : *indices) {
      if (!index.is_number_integer() || index.get<std::int64_t>() < 0 ||
          index.get<std::int64_t>() >= shape.num_layers) {
        return allowed_indices + "; one is " + describe(index) + ".";
      }
      kinds[static_cast<std::size_t>(index.get<std::int64_t>())] = 'A';
    }
  }
  shape.hybrid_layers = kinds;
  return {};
}

// Lfm2MLP's width: with block_auto_adjust_ff_dim, int(2·f/3), then with a block_ffn_dim_multiplier
// int(multiplier · f) rounded up to a multiple of block_multiple_of (modeling_lfm2.py).
std::string adjust_lfm2_width(const Json& config, ModelShape& shape) {
  bool adjust = true;
  int multiple_of = 256;  // Lfm2Config's defaults
  double multiplier = 1;
  Problems problems;
  problems.add(read_boolean(config, "block_auto_adjust_ff_dim", adjust));
  problems.add(read_optional(config, kBlockMultipleOf, multiple_of));
  problems.add(read_positive_decimal(config, "block_ffn_dim_multiplier", 1e3, multiplier));
  // null skips the multiplier and its rounding (Lfm2MLP: `is not None`); absent is 1.0.
  const auto given = config.find("block_ffn_dim_multiplier");
  const bool no_multiplier = given != config.end() && given->is_null();
  if (problems.any() || !adjust) return problems.first();
  double width = std::floor(2.0 * shape.ffn_hidden_size / 3);
  if (!no_multiplier) {
    width = std::floor(multiplier * width);
    width = multiple_of * std::ceil(width / multiple_of);
  }
  if (width < 1 || width > kMaxModelWidth) {
    return "The MLP's width Lfm2MLP makes of intermediate_size (" +
           format_count(shape.ffn_hidden_size) + ") is " + format_count(width) + ", outside 1 to " +
           format_count(kMaxModelWidth) + ".";
  }
  shape.ffn_hidden_size = static_cast<int>(width);
  return {};
}

}  // namespace

std::string read_recurrent_state_dtype(const Json& config, const char* key, bool fp32_if_absent,
                                       ModelShape& shape) {
  shape.recurrent_state_fp32 = fp32_if_absent;
  const Json* dtype = present(config, key);
  if (dtype == nullptr) return {};
  // vLLM's names (vllm/utils/torch_utils.py, STR_DTYPE_TO_TORCH_DTYPE; "auto": the model's).
  const std::string name = dtype->is_string() ? dtype->get<std::string>() : std::string();
  shape.recurrent_state_fp32 = name == "float32" || name == "float";
  if (!shape.recurrent_state_fp32 && name != "bfloat16" && name != "float16" && name != "half" &&
      name != "auto") {
    return "'" + std::string(key) +
           "' must be \"float32\", \"bfloat16\", \"float16\" or \"auto\"; it is " +
           describe(*dtype) + ".";
  }
  return {};
}

std::string read_gated_deltanet_fields(const Json& config, GatedDeltaNet kind, ModelShape& shape) {
  Problems problems;
  int interval = kQwen3NextFullAttentionInterval;
  problems.add(read_optional(config, kFullAttentionInterval, interval));
  problems.add(read_required(config, kLinearNumKeyHeads, shape.linear_num_key_heads));
  problems.add(read_required(config, kLinearNumValueHeads, shape.linear_num_value_heads));
  problems.add(read_required(config, kLinearKeyHeadDim, shape.linear_key_head_dim));
  problems.add(read_required(config, kLinearValueHeadDim, shape.linear_value_head_dim));
  problems.add(read_required(config, kLinearConvKernelDim, shape.linear_conv_kernel_dim));
  if (problems.any()) return problems.first();
  // Qwen3NextAttention always builds q_proj with its gate; Qwen3.5's configs say so in
  // attn_output_gate, which trainmem reads as true alone.
  shape.attention_output_gate = true;
  // Qwen3NextGatedDeltaNet repeats q and k to H_v heads whatever fla can take, and normalises
  // through fla's FusedRMSNormGated; Qwen3_5GatedDeltaNet repeats them only for fla before 0.5
  // (fla_needs_equal_qk_heads) and runs Qwen3_5RMSNormGated in PyTorch unless a Hub kernel
  // replaces it.
  shape.linear_qk_repeated = kind == GatedDeltaNet::kQwen3Next;
  shape.linear_norm_unfused = kind == GatedDeltaNet::kQwen35;
  shape.linear_projections_split = kind == GatedDeltaNet::kQwen35;
  if (kind == GatedDeltaNet::kQwen35) {
    problems.add(require_boolean(config, "attn_output_gate", true,
                                 "full-attention layers without their output gate"));
    // Qwen3.5's multi-token-prediction layers (the checkpoint's mtp.*: fc, two pre-norms, a
    // full-attention layer with the model's MLP and a norm), which transformers leaves unloaded:
    // counted when a setup trains them, as DeepSeek-V3's. They share the main model's embedding
    // unless mtp_use_dedicated_embeddings is set.
    problems.add(read_optional(config, kMtpNumHiddenLayers, shape.num_mtp_layers));
    problems.add(require_boolean(config, "mtp_use_dedicated_embeddings", false,
                                 "an MTP layer's embedding of its own"));
    problems.add(read_recurrent_state_dtype(config, "mamba_ssm_dtype", false, shape));
  }
  problems.add(read_layer_types(config, kFullAttention, "linear_attention", shape));
  if (!problems.any() && shape.hybrid_layers.empty()) {
    shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, interval);
  }
  return problems.first();
}

namespace {

// What LFM2's and LFM2-MoE's layers share (Lfm2DecoderLayer, Lfm2MoeDecoderLayer): the embedding
// tied unless said otherwise (the original configs' tie_embedding wins: Lfm2Config,
// Lfm2MoeConfig); Lfm2Attention with no biases whatever attention_bias says and a q_layernorm and
// a k_layernorm of d; operator_norm and ffn_norm in every layer, embedding_norm the final one;
// Lfm2ShortConv of conv_L_cache (3 unless given) in the layers layer_types names "conv", or
// (Lfm2Config alone) those full_attn_idxs leaves out.
std::string read_lfm2_layers(const Json& config, bool reads_full_attention_indices,
                             ModelShape& shape) {
  Problems problems;
  shape.tied_embeddings = true;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(read_boolean(config, "tie_embedding", shape.tied_embeddings));
  shape.qk_norm = true;
  shape.norms_per_layer = 2;
  int kernel = 3;
  bool bias = false;
  problems.add(read_optional(config, kConvLCache, kernel));
  problems.add(read_boolean(config, "conv_bias", bias));
  problems.add(read_layer_types(config, kFullAttention, "conv", shape));
  if (problems.any()) return problems.first();
  if (shape.hybrid_layers.empty()) {
    // Lfm2MoeDecoderLayer indexes layer_types, which Lfm2MoeConfig never fills in.
    if (!reads_full_attention_indices) {
      return "'layer_types' is missing; an lfm2_moe config must list num_hidden_layers (" +
             std::to_string(shape.num_layers) + ") entries, each \"full_attention\" or \"conv\".";
    }
    problems.add(read_full_attention_indices(config, shape));
  }
  if (problems.any()) return problems.first();
  if (shape.hybrid_layers.find('L') == std::string::npos) {
    shape.hybrid_layers.clear();  // every layer full attention: no hybrid
    return {};
  }
  shape.short_conv_kernel = kernel;
  shape.short_conv_bias = bias;
  return {};
}

}  // namespace

std::string read_lfm2_block(const Json& config, ModelShape& shape) {
  Problems problems;
  // Lfm2Config reads the original configs' block_ff_dim over intermediate_size (12,288 where
  // neither is given).
  int width = 12288;
  problems.add(read_optional(config, kIntermediateSize, width));
  problems.add(read_optional(config, kBlockFfDim, width));
  if (problems.any()) return problems.first();
  Json widths = config;
  widths[kIntermediateSize.key] = width;
  read_llama_widths(widths, shape, problems);
  if (problems.any()) return problems.first();
  // One MLP a layer (lfm2_moe is another model_type).
  for (const WholeField* field : {&kNumLocalExperts, &kNumExperts}) {
    const Json* value = present(config, field->key);
    if (value != nullptr && value->is_number() && value->get<double>() > 1) {
      return quoted(field->key) +
             " is not read for an lfm2 config: Lfm2DecoderLayer builds one MLP a layer (a "
             "mixture of experts is model_type lfm2_moe).";
    }
  }
  problems.add(adjust_lfm2_width(config, shape));
  if (problems.any()) return problems.first();
  return read_lfm2_layers(config, true, shape);
}

// transformers' Lfm2MoeForCausalLM (modular_lfm2_moe.py; LiquidAI/LFM2-8B-A1B): LFM2's layers,
// each over Lfm2MoeMLP, a SwiGLU of intermediate_size as given (Lfm2MLP's width adjustment is not
// applied), in the first num_dense_layers (2 unless given), and Lfm2MoeSparseMoeBlock in the rest:
// num_experts experts of moe_intermediate_size (Qwen2MoeExperts), top num_experts_per_tok, a
// router h x E without a bias, and with use_expert_bias (true unless given) the buffer
// expert_bias of E, which the checkpoint holds. routed_scaling_factor and norm_topk_prob scale
// the routing weights alone.
std::string read_lfm2_moe_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  problems.add(read_required(config, kNumExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  shape.num_dense_layers = 2;
  problems.add(read_optional(config, kNumDenseLayers, shape.num_dense_layers));
  shape.router_bias = true;
  problems.add(read_boolean(config, "use_expert_bias", shape.router_bias));
  if (problems.any()) return problems.first();
  if (present(config, kNumLocalExperts.key) != nullptr) {
    return "'num_local_experts' is not read for an lfm2_moe config: Lfm2MoeConfig counts its "
           "experts in num_experts.";
  }
  problems.add(check_mixture_counts(shape, kNumDenseLayers.key, "LFM2-MoE"));
  if (problems.any()) return problems.first();
  return read_lfm2_layers(config, false, shape);
}

// MiniMaxConfig's defaults (configuration_minimax.py) for the widths a config leaves out.
constexpr FieldDefault kMiniMaxWidths[] = {
    {"vocab_size", 32000},     {"hidden_size", 4096},       {"intermediate_size", 14336},
    {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
    {"num_local_experts", 8},  {"num_experts_per_tok", 2}};
constexpr WholeField kBlockSize = {"block_size", 1, kMaxPositionEmbeddings};

// MiniMax-Text-01 and MiniMax-M1 as transformers builds them (MiniMaxForCausalLM,
// modeling_minimax.py at 008e574; the "-hf" checkpoints): each layer lightning attention
// (MiniMaxLightningAttention) or, where layer_types says "full_attention", Mixtral's attention
// with heads of head_dim (h / a unless given) and no biases, then Mixtral's mixture:
// num_local_experts SwiGLU experts of intermediate_size, top num_experts_per_tok, a router h x E
// without a bias; two norms a layer, untied unless tie_word_embeddings. Without layer_types
// MiniMaxConfig alternates full and lightning layers; the remote code's attn_type_list, which
// transformers does not read, is refused there rather than read as that alternation, and so is a
// shared expert (shared_intermediate_size), which transformers does not build.
std::string read_minimax_block(const Json& config, ModelShape& shape) {
  Json widths = config;
  add_defaults(widths, kMiniMaxWidths);
  Problems problems;
  read_llama_widths(widths, shape, problems);
  problems.add(read_required(widths, kNumLocalExperts, shape.num_experts));
  problems.add(read_required(widths, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  int block = 256;
  problems.add(read_optional(config, kBlockSize, block));
  if (problems.any()) return problems.first();
  if (shape.head_dim == 0) {
    const std::string heads = head_dim_from_hidden_size(
        shape,
        "MiniMax's heads are hidden_size / num_attention_heads wide where head_dim is not "
        "given");
    if (!heads.empty()) return heads;
  }
  if (const Json* shared = present(config, "shared_intermediate_size");
      shared != nullptr && !(shared->is_number() && shared->get<double>() == 0)) {
    return "'shared_intermediate_size' must be 0: transformers' minimax builds no shared expert; "
           "it is " +
           describe(*shared) + ".";
  }
  // Every layer a mixture (MiniMaxSparseMoeBlock, Mixtral's), so no dense layers to name.
  if (shape.num_experts < 2) {
    return "'num_local_experts' must be from 2 to " + format_count(kMaxExperts) +
           ": every MiniMax layer is a mixture of experts; it is " +
           std::to_string(shape.num_experts) + ".";
  }
  problems.add(check_mixture_counts(shape, "num_local_experts", "MiniMax"));
  problems.add(read_layer_types(config, kFullAttention, "linear_attention", shape));
  if (problems.any()) return problems.first();
  if (shape.hybrid_layers.empty()) {
    if (present(config, "attn_type_list") != nullptr) {
      return "'attn_type_list' is the remote code's list, which transformers' minimax does not "
             "read (without layer_types it alternates full and lightning layers); give "
             "layer_types, as the -hf checkpoints do.";
    }
    // MiniMaxConfig: "full_attention" where (i + 1) is odd, else "linear_attention".
    for (int layer = 0; layer < shape.num_layers; ++layer) {
      shape.hybrid_layers += (layer + 1) % 2 != 0 ? 'A' : 'L';
    }
  }
  if (shape.hybrid_layers.find('L') == std::string::npos) {
    shape.hybrid_layers.clear();  // every layer full attention: no hybrid
    return {};
  }
  shape.linear_num_key_heads = shape.num_attention_heads;
  shape.linear_num_value_heads = shape.num_attention_heads;
  shape.linear_key_head_dim = shape.head_dim;
  shape.linear_value_head_dim = shape.head_dim;
  shape.lightning_block_size = block;
  return {};
}

// Gemma 4's mixture-of-experts block (enable_moe_block: Gemma4TextRouter and Gemma4TextExperts
// beside the dense MLP, which every token passes, as a shared expert of intermediate_size): the
// router's proj h x E, its scale h and per_expert_scale E, three more norms of h
// (post_feedforward_layernorm_1 and _2, pre_feedforward_layernorm_2), and num_experts experts of
// moe_intermediate_size, top_k_experts a token. Held in the shape's fields: per_expert_scale as
// the router's vector of E, the router's scale among the layer's norms (both whole on every
// rank).
constexpr int kGemma4MoeNormsPerLayer = 4 + 3 + 1;
std::string read_gemma4_experts(const Json& config, ModelShape& shape) {
  Problems problems;
  problems.add(read_required(config, kNumExperts, shape.num_experts));
  problems.add(read_required(config, kTopKExperts, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  if (problems.any()) return problems.first();
  if (shape.num_experts < 2) {
    return "'num_experts' must be 2 or more for Gemma 4's mixture-of-experts block; it is " +
           std::to_string(shape.num_experts) + ".";
  }
  shape.shared_expert_ffn_hidden_size = shape.ffn_hidden_size;
  shape.router_bias = true;
  return {};
}

std::string read_logit_softcapping(const Json& config, ModelShape& shape) {
  return read_positive_decimal(config, "final_logit_softcapping", 1e6,
                               shape.final_logit_softcapping);
}

std::string read_gemma4_block(const Json& config, ModelShape& shape) {
  Problems problems;
  read_llama_widths(config, shape, problems);
  if (problems.any()) return problems.first();
  // What trainmem does not count yet, by name: per-layer embeddings (Gemma4TextConfig's default
  // hidden_size_per_layer_input is 256, so a config must say 0 or null), layers sharing another
  // layer's keys and values, the mixture-of-experts block beside the MLP, a per_layer_config of
  // its own, biased projections.
  int per_layer_input = 256;
  if (config.find("hidden_size_per_layer_input") != config.end() &&
      config.at("hidden_size_per_layer_input").is_null()) {
    per_layer_input = 0;
  }
  problems.add(read_optional(config, kHiddenSizePerLayerInput, per_layer_input));
  int kv_shared_layers = 0;
  problems.add(read_optional(config, kNumKvSharedLayers, kv_shared_layers));
  bool moe_block = false;
  problems.add(read_boolean(config, "enable_moe_block", moe_block));
  problems.add(require_boolean(config, "attention_bias", false, "Gemma 4's biased projections"));
  if (problems.any()) return problems.first();
  if (per_layer_input > 0) {
    return "'hidden_size_per_layer_input' must be 0 or null (absent means Gemma4TextConfig's "
           "256): trainmem does not count Gemma 4's per-layer embeddings; it is " +
           std::to_string(per_layer_input) + ".";
  }
  if (kv_shared_layers > 0) {
    return "'num_kv_shared_layers' must be 0: trainmem does not count layers that share another "
           "layer's keys and values; it is " +
           std::to_string(kv_shared_layers) + ".";
  }
  if (present(config, "per_layer_config") != nullptr) {
    return "'per_layer_config' is not read: trainmem reads Gemma 4's full-attention layers from "
           "global_head_dim and num_global_key_value_heads.";
  }
  if (moe_block) problems.add(read_gemma4_experts(config, shape));
  if (problems.any()) return problems.first();
  // Gemma4TextDecoderLayer: four norms of h, q_norm, k_norm and a weightless v_norm of d on
  // every head, a layer_scalar; the embedding tied unless said otherwise.
  shape.tied_embeddings = true;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  shape.qk_norm = true;
  shape.value_norm = true;
  shape.norms_per_layer = moe_block ? kGemma4MoeNormsPerLayer : 4;
  shape.layer_scalar = true;
  problems.add(read_logit_softcapping(config, shape));
  // The layers: layer_types, or five sliding-window layers to one full-attention layer; the
  // last forced to full attention (Gemma4TextConfig.__post_init__).
  problems.add(read_layer_types(config, "sliding_attention", kFullAttention, shape));
  if (problems.any()) return problems.first();
  if (shape.hybrid_layers.empty()) {
    shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, 6, 'L');
  }
  shape.hybrid_layers.back() = 'L';
  // The full-attention layers' heads (Gemma4TextAttention): global_head_dim wide (512 unless
  // said), num_global_key_value_heads of them under attention_k_eq_v, where V's output is K's.
  shape.global_head_dim = 512;
  problems.add(read_optional(config, kGlobalHeadDim, shape.global_head_dim));
  problems.add(read_boolean(config, "attention_k_eq_v", shape.global_k_eq_v));
  shape.global_kv_heads = shape.num_key_value_heads;
  if (shape.global_k_eq_v) {
    problems.add(read_optional(config, kNumGlobalKeyValueHeads, shape.global_kv_heads));
  }
  return problems.first();
}

namespace {

// Kimi Linear's linear_attn_config (KimiLinearConfig.__post_init__): the KDA layers' heads, head
// width and convolution, and which layers (numbered from 1) are KDA and which full attention.
constexpr WholeField kKdaNumHeads = {"num_heads", 1, kMaxModelWidth};
constexpr WholeField kKdaHeadDim = {"head_dim", 1, kMaxModelWidth};
constexpr WholeField kKdaConvKernel = {"short_conv_kernel_size", 1, kMaxModelWidth};
constexpr const char* kKdaKeys[] = {"num_heads", "head_dim", "short_conv_kernel_size", "kda_layers",
                                    "full_attn_layers"};

// kda_layers and full_attn_layers: together each layer from 1 to num_hidden_layers once.
std::string read_kda_layer_lists(const Json& linear, ModelShape& shape) {
  const Json* kda = present(linear, "kda_layers");
  const Json* full = present(linear, "full_attn_layers");
  if (kda == nullptr && full == nullptr) return {};
  const std::string allowed_lists =
      "'linear_attn_config' must list in kda_layers and full_attn_layers each layer from 1 to " +
      std::to_string(shape.num_layers) + " once (KimiLinearConfig numbers them from 1)";
  std::string kinds(static_cast<std::size_t>(shape.num_layers), ' ');
  for (const auto& [list, kind] : {std::pair{kda, 'L'}, std::pair{full, 'A'}}) {
    if (list == nullptr || !list->is_array()) {
      return allowed_lists + "; " + (kind == 'L' ? "kda_layers" : "full_attn_layers") + " is " +
             (list == nullptr ? std::string("missing") : describe(*list)) + ".";
    }
    for (const Json& layer : *list) {
      const bool numbered = layer.is_number_integer() && layer.get<std::int64_t>() >= 1 &&
                            layer.get<std::int64_t>() <= shape.num_layers;
      if (!numbered || kinds[static_cast<std::size_t>(layer.get<std::int64_t>() - 1)] != ' ') {
        return allowed_lists + "; " + describe(layer) + " is not.";
      }
      kinds[static_cast<std::size_t>(layer.get<std::int64_t>() - 1)] = kind;
    }
  }
  const std::size_t missing = kinds.find(' ');
  if (missing != std::string::npos) {
    return allowed_lists + "; layer " + std::to_string(missing + 1) + " is in neither.";
  }
  shape.hybrid_layers = kinds;
  return {};
}

std::string read_kda_fields(const Json& config, ModelShape& shape) {
  // KimiLinearConfig's defaults, which linear_attn_config's keys override.
  int heads = 32;
  int head_dim = 128;
  int kernel = 4;
  Problems problems;
  problems.add(read_optional(config, {"linear_num_heads", 1, kMaxModelWidth}, heads));
  problems.add(read_optional(config, {"linear_head_dim", 1, kMaxModelWidth}, head_dim));
  problems.add(read_optional(config, {"linear_conv_kernel_dim", 1, kMaxModelWidth}, kernel));
  if (problems.any()) return problems.first();
  const Json* linear = present(config, "linear_attn_config");
  if (linear != nullptr && !linear->is_object()) {
    return "'linear_attn_config' must be an object; it is " + describe(*linear) + ".";
  }
  if (linear != nullptr) {
    // What the KDA layers' config may say beyond these changes what they hold or save (Kimi
    // K3's gate_lower_bound and full-rank gates): refused by name.
    for (const auto& [key, value] : linear->items()) {
      if (std::find(std::begin(kKdaKeys), std::end(kKdaKeys), key) == std::end(kKdaKeys) &&
          !value.is_null()) {
        return "'linear_attn_config." + key +
               "' is not read: trainmem reads Kimi Linear's num_heads, head_dim, "
               "short_conv_kernel_size, kda_layers and full_attn_layers.";
      }
    }
    Problems sub;
    sub.add(read_optional(*linear, kKdaNumHeads, heads));
    sub.add(read_optional(*linear, kKdaHeadDim, head_dim));
    sub.add(read_optional(*linear, kKdaConvKernel, kernel));
    if (sub.any()) return "in linear_attn_config: " + sub.first();
  }
  shape.linear_num_key_heads = heads;
  shape.linear_num_value_heads = heads;
  shape.linear_key_head_dim = head_dim;
  shape.linear_value_head_dim = head_dim;
  shape.linear_conv_kernel_dim = kernel;
  shape.kimi_delta_attention = true;
  // The layers: layer_types, else linear_attn_config's lists, else every 4th full attention.
  problems.add(read_layer_types(config, kFullAttention, "linear_attention", shape));
  if (!problems.any() && shape.hybrid_layers.empty() && linear != nullptr) {
    problems.add(read_kda_layer_lists(*linear, shape));
  }
  if (!problems.any() && shape.hybrid_layers.empty()) {
    shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, 4);
  }
  return problems.first();
}

// A Kimi Linear key, or its KimiLinearConfig alias (attribute_map), into `deepseek` under
// DeepSeek-V3's name; `fallback` where both are absent (0: none).
void rename_into(const Json& config, const char* key, const char* alias, const char* deepseek_key,
                 int fallback, Json& deepseek) {
  const Json* value = present(config, key);
  if (value == nullptr) value = present(config, alias);
  if (value != nullptr) {
    deepseek[deepseek_key] = *value;
  } else if (fallback > 0) {
    deepseek[deepseek_key] = fallback;
  }
}

}  // namespace

// transformers' KimiLinearForCausalLM (modeling_kimi_linear.py; moonshotai/Kimi-Linear-48B-A3B):
// DeepSeek-V3's latent attention in the full-attention layers, Kimi Delta Attention in the others,
// and DeepSeek-V3's experts (num_experts of moe_intermediate_size, a sigmoid router with its
// e_score_correction_bias, num_shared_experts as one MLP) past first_k_dense_replace dense layers
// of dense_ffn_hidden (intermediate_size unless given). Read through DeepSeek-V3's reader under
// its names; Kimi K3's extensions (an output gate on latent attention, attention residuals) are
// refused by name.
std::string read_kimi_linear_block(const Json& config, ModelShape& shape) {
  Problems problems;
  int experts = 0;
  problems.add(read_required(config, kNumExperts, experts));
  if (!problems.any() && experts < 2) {
    return "'num_experts' must be from 2 to " + format_count(kMaxExperts) +
           ": Kimi Linear's layers past first_k_dense_replace are mixtures; it is " +
           std::to_string(experts) + ".";
  }
  problems.add(require_boolean(config, "mla_use_output_gate", false,
                               "an output gate on latent attention (Kimi K3's)"));
  int attention_residual_block = 0;
  problems.add(
      read_optional(config, {"attn_res_block_size", 0, kMaxModelLayers}, attention_residual_block));
  if (problems.any()) return problems.first();
  if (attention_residual_block > 0) {
    return "'attn_res_block_size' must be 0: trainmem does not count block attention residuals "
           "(Kimi K3's); it is " +
           std::to_string(attention_residual_block) + ".";
  }
  Json deepseek = config;
  rename_into(config, "num_experts", "num_local_experts", kNRoutedExperts.key, 0, deepseek);
  rename_into(config, "num_experts_per_token", "num_experts_per_tok", kNumExpertsPerToken.key, 0,
              deepseek);
  // KimiLinearConfig: one shared expert and one dense first layer unless said otherwise.
  rename_into(config, "num_shared_experts", "n_shared_experts", kNSharedExperts.key, 1, deepseek);
  rename_into(config, "first_k_dense_replace", "first_k_dense_replace", kFirstKDenseReplace.key, 1,
              deepseek);
  rename_into(config, "dense_ffn_hidden", "intermediate_size", kIntermediateSize.key, 0, deepseek);
  if (present(deepseek, kNumExpertsPerToken.key) == nullptr) {
    return "'num_experts_per_token' is missing; it must be " + allowed(kNumExpertsPerToken) + ".";
  }
  problems.add(read_deepseek_v3_block(deepseek, shape));
  problems.add(
      read_optional(config, {"model_max_length", 1, kMaxPositionEmbeddings}, shape.max_positions));
  if (problems.any()) return problems.first();
  return read_kda_fields(config, shape);
}

}  // namespace trainmem
