// The readers of the Mamba hybrids, counted as transformers builds them, each field they cannot
// count refused by name: Nemotron-H's blocks (modeling_nemotron_h.py and
// configuration_nemotron_h.py: Nemotron-H and Nemotron 3), one norm and one part a block, Mamba-2's
// mixer, attention, an MLP or a mixture of experts, as hybrid_override_pattern or
// layers_block_type lists them; and Jamba's layers (modeling_jamba.py and configuration_jamba.py),
// Mamba's mixer or attention, each over an MLP or a mixture of experts.
#include <cmath>
#include <cstddef>
#include <string>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// NemotronHConfig's layer types and the pattern's characters for them (_pattern_to_list), each
// as the shape's one-part kind: Mamba-2 alone, mixture or MLP alone, attention alone.
struct BlockType {
  char pattern;
  const char* name;
  char kind;
};
constexpr BlockType kBlockTypes[] = {{'M', "linear_attention", 'l'},
                                     {'E', "moe", 'F'},
                                     {'*', "full_attention", 'a'},
                                     {'-', "mlp", 'F'}};

// The blocks: layers_block_type (or layer_types, its attribute_map name), else
// hybrid_override_pattern, as NemotronHConfig.__post_init__ takes them; `moe` and `mlp` say which
// of them the 'F' blocks are.
std::string read_blocks(const Json& config, ModelShape& shape, bool& moe, bool& mlp) {
  const Json* list = present(config, "layers_block_type");
  const char* list_key = "layers_block_type";
  if (list == nullptr) {
    list = present(config, "layer_types");
    list_key = "layer_types";
  }
  const Json* pattern = present(config, "hybrid_override_pattern");
  std::string kinds;
  const auto add = [&](const BlockType& type) {
    kinds += type.kind;
    moe = moe || type.pattern == 'E';
    mlp = mlp || type.pattern == '-';
  };
  if (list != nullptr) {
    const std::string allowed_list = quoted(list_key) +
                                     " must list each block's type, \"linear_attention\", "
                                     "\"moe\", \"full_attention\" or \"mlp\"";
    if (!list->is_array() || list->empty()) {
      return allowed_list + "; it is " + describe(*list) + ".";
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Json& entry = (*list)[i];
      const BlockType* found = nullptr;
      for (const BlockType& type : kBlockTypes) {
        if (entry.is_string() && entry.get<std::string>() == type.name) found = &type;
      }
      if (found == nullptr) {
        return allowed_list + "; entry " + std::to_string(i) + " is " + describe(entry) + ".";
      }
      add(*found);
    }
  } else if (pattern != nullptr) {
    const std::string allowed_pattern =
        "'hybrid_override_pattern' must be one character a block, M (Mamba-2), E (a mixture of "
        "experts), * (attention) or - (an MLP)";
    if (!pattern->is_string() || pattern->get<std::string>().empty()) {
      return allowed_pattern + "; it is " + describe(*pattern) + ".";
    }
    const std::string text = pattern->get<std::string>();
    for (std::size_t i = 0; i < text.size(); ++i) {
      const BlockType* found = nullptr;
      for (const BlockType& type : kBlockTypes) {
        if (text[i] == type.pattern) found = &type;
      }
      if (found == nullptr) {
        return allowed_pattern + "; character " + std::to_string(i) + " is '" + text.substr(i, 1) +
               "'.";
      }
      add(*found);
    }
  } else {
    // NemotronHConfig's default: one block of each type.
    for (const char block : {'M', 'E', '*', '-'}) {
      for (const BlockType& type : kBlockTypes) {
        if (type.pattern == block) add(type);
      }
    }
  }
  if (kinds.size() > static_cast<std::size_t>(kMaxModelLayers)) {
    return "Nemotron-H's blocks must number at most " + format_count(kMaxModelLayers) +
           "; they are " + format_count(static_cast<double>(kinds.size())) + ".";
  }
  if (moe && mlp) {
    return "Nemotron-H's blocks hold mixture-of-experts (E, \"moe\") and MLP (-, \"mlp\") blocks "
           "both, which trainmem does not count in one model.";
  }
  shape.hybrid_layers = kinds;
  shape.num_layers = static_cast<int>(kinds.size());
  return {};
}

constexpr WholeField kMambaNumHeads = {"mamba_num_heads", 1, kMaxModelWidth};
constexpr WholeField kMambaHeadDim = {"mamba_head_dim", 1, kMaxModelWidth};
constexpr WholeField kSsmStateSize = {"ssm_state_size", 1, kMaxModelWidth};
constexpr WholeField kMoeSharedExpertWidth = {"moe_shared_expert_intermediate_size", 1,
                                              kMaxModelWidth};

// A field NemotronHConfig also takes under an older name (its __post_init__'s backward
// compatibility: mamba_n_groups, mamba_d_conv), which wins where given.
std::string read_renamed(const Json& config, const WholeField& field, const char* old_name,
                         int& out) {
  const std::string problem = read_optional(config, field, out);
  if (!problem.empty() || present(config, old_name) == nullptr) return problem;
  return read_optional(config, {old_name, field.low, field.high}, out);
}

std::string read_mamba_fields(const Json& config, ModelShape& shape) {
  // NemotronHConfig's defaults: 128 heads of 64, a state of 128, 8 groups, a convolution of 4
  // with its bias, the scan in chunks of 128.
  int heads = 128;
  int head_dim = 64;
  int state = 128;
  int groups = 8;
  int kernel = 4;
  int chunk = 128;
  bool conv_bias = true;
  Problems problems;
  // vLLM's get_mamba_chunk_size reads mamba_chunk_size first, then chunk_size.
  problems.add(read_optional(config, {"chunk_size", 1, kMaxModelWidth}, chunk));
  problems.add(read_optional(config, {"mamba_chunk_size", 1, kMaxModelWidth}, chunk));
  problems.add(read_optional(config, kMambaNumHeads, heads));
  problems.add(read_optional(config, kMambaHeadDim, head_dim));
  problems.add(read_optional(config, kSsmStateSize, state));
  problems.add(read_renamed(config, {"n_groups", 1, kMaxModelWidth}, "mamba_n_groups", groups));
  problems.add(read_renamed(config, {"conv_kernel", 1, kMaxModelWidth}, "mamba_d_conv", kernel));
  problems.add(read_boolean(config, "use_conv_bias", conv_bias));
  problems.add(read_boolean(config, "mamba_conv_bias", conv_bias));
  // NemotronHMamba2Mixer's in_proj and out_proj take use_bias (mamba_proj_bias is not read).
  problems.add(
      require_boolean(config, "use_bias", false, "biases on Mamba-2's in_proj and out_proj"));
  if (const Json* activation = present(config, "mamba_hidden_act");
      activation != nullptr &&
      !(activation->is_string() && activation->get<std::string>() == "silu")) {
    problems.add(
        "'mamba_hidden_act' must be \"silu\", the activation mamba_ssm's kernels fuse; it "
        "is " +
        describe(*activation) + ".");
  }
  if (problems.any()) return problems.first();
  shape.linear_num_key_heads = groups;
  shape.linear_key_head_dim = state;
  shape.linear_num_value_heads = heads;
  shape.linear_value_head_dim = head_dim;
  shape.linear_conv_kernel_dim = kernel;
  shape.linear_conv_bias = conv_bias;
  shape.mamba2 = true;
  shape.mamba_chunk_size = chunk;
  return read_recurrent_state_dtype(config, "mamba_ssm_cache_dtype", true, shape);
}

// NemotronHMoE: n_routed_experts experts of moe_intermediate_size (up and down, no gate), top
// num_experts_per_tok, a router of E x h with its e_score_correction_bias, one shared MLP of
// moe_shared_expert_intermediate_size; with moe_latent_size (Nemotron 3 Super's latent MoE) the
// experts read and write tokens of that width, between fc1_latent_proj (h x l) and
// fc2_latent_proj (l x h).
std::string read_nemotron_experts(const Json& config, ModelShape& shape) {
  Problems problems;
  problems.add(read_required(config, kNRoutedExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  problems.add(read_required(config, kMoeSharedExpertWidth, shape.shared_expert_ffn_hidden_size));
  if (problems.any()) return problems.first();
  problems.add(read_optional(config, kMoeLatentSize, shape.moe_latent_size));
  if (problems.any()) return problems.first();
  shape.router_bias = true;
  return {};
}

// JambaConfig's defaults (configuration_jamba.py) for the widths a config leaves out.
constexpr FieldDefault kJambaWidths[] = {{"hidden_size", 4096},        {"num_hidden_layers", 32},
                                         {"num_attention_heads", 32},  {"num_key_value_heads", 8},
                                         {"intermediate_size", 14336}, {"vocab_size", 65536}};

constexpr WholeField kAttnLayerPeriod = {"attn_layer_period", 1, kMaxModelLayers};
constexpr WholeField kAttnLayerOffset = {"attn_layer_offset", 0, kMaxModelLayers};
constexpr WholeField kExpertLayerPeriod = {"expert_layer_period", 1, kMaxModelLayers};
constexpr WholeField kExpertLayerOffset = {"expert_layer_offset", 0, kMaxModelLayers};
constexpr WholeField kMambaDState = {"mamba_d_state", 1, kMaxModelWidth};
constexpr WholeField kMambaDConv = {"mamba_d_conv", 1, kMaxModelWidth};
constexpr WholeField kMambaExpand = {"mamba_expand", 1, 64};
constexpr WholeField kMambaDtRank = {"mamba_dt_rank", 1, kMaxModelWidth};

// A period and its offset, as JambaConfig checks them (offset below period).
std::string read_period(const Json& config, const WholeField& period_field,
                        const WholeField& offset_field, int& period, int& offset) {
  Problems problems;
  problems.add(read_optional(config, period_field, period));
  problems.add(read_optional(config, offset_field, offset));
  if (problems.any()) return problems.first();
  if (offset >= period) {
    return quoted(offset_field.key) + " must be below " + period_field.key + " (" +
           std::to_string(period) + ", as JambaConfig requires); it is " + std::to_string(offset) +
           ".";
  }
  return {};
}

// JambaMambaMixer's fields: the state N, the convolution's width, d = mamba_expand·h, the rank R
// of dt (ceil(h / 16) for "auto", JambaConfig's default), the convolution's and the projections'
// biases; use_mamba_kernels (true unless given) must hold, as trainmem counts the kernels' path.
std::string read_jamba_mamba(const Json& config, ModelShape& shape) {
  int state = 16;
  int kernel = 4;
  int expand = 2;
  int rank = (shape.hidden_size + 15) / 16;
  bool conv_bias = true;
  bool proj_bias = false;
  Problems problems;
  problems.add(read_optional(config, kMambaDState, state));
  problems.add(read_optional(config, kMambaDConv, kernel));
  problems.add(read_optional(config, kMambaExpand, expand));
  if (const Json* dt_rank = present(config, kMambaDtRank.key);
      dt_rank != nullptr && !(dt_rank->is_string() && dt_rank->get<std::string>() == "auto")) {
    problems.add(read_optional(config, kMambaDtRank, rank));
  }
  problems.add(read_boolean(config, "mamba_conv_bias", conv_bias));
  problems.add(read_boolean(config, "mamba_proj_bias", proj_bias));
  problems.add(require_boolean(config, "use_mamba_kernels", true,
                               "JambaMambaMixer's slow_forward, a PyTorch loop over the tokens "
                               "(trainmem counts the kernels' path)"));
  if (problems.any()) return problems.first();
  if (static_cast<double>(expand) * shape.hidden_size > kMaxModelWidth) {
    return "'mamba_expand' times hidden_size must be at most " + format_count(kMaxModelWidth) +
           "; it is " + format_count(static_cast<double>(expand) * shape.hidden_size) + ".";
  }
  shape.linear_num_key_heads = 1;
  shape.linear_key_head_dim = state;
  shape.linear_num_value_heads = expand * shape.hidden_size;
  shape.linear_value_head_dim = 1;
  shape.linear_conv_kernel_dim = kernel;
  shape.linear_conv_bias = conv_bias;
  shape.mamba1 = true;
  shape.mamba_dt_rank = rank;
  shape.mamba_proj_bias = proj_bias;
  return {};
}

}  // namespace

// transformers' JambaForCausalLM (modeling_jamba.py, configuration_jamba.py; AI21's Jamba,
// arXiv:2403.19887): per layer an input norm, then attention where i % attn_layer_period is
// attn_layer_offset (JambaAttention: heads of h / a, no biases, no position encoding) and Mamba's
// mixer elsewhere (JambaMambaMixer), a pre_ff norm, and a mixture of experts where
// i % expert_layer_period is expert_layer_offset (JambaSparseMoeBlock: num_experts SwiGLU experts
// of intermediate_size, top num_experts_per_tok, a router h x E without a bias) or JambaMLP of
// intermediate_size elsewhere; the final norm; lm_head, untied unless tie_word_embeddings.
// JambaConfig's defaults fill what a config leaves out.
std::string read_jamba_block(const Json& config, ModelShape& shape) {
  Json widths = config;
  add_defaults(widths, kJambaWidths);
  Problems problems;
  read_llama_widths(widths, shape, problems);
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  if (problems.any()) return problems.first();
  // JambaAttention's heads are h / a wide (it reads no head_dim), and it raises a ValueError
  // where they do not divide h.
  const std::string heads = head_dim_from_hidden_size(
      shape, "JambaAttention's heads are hidden_size / num_attention_heads wide");
  if (!heads.empty()) return heads;
  if (const Json* activation = present(config, "hidden_act");
      activation != nullptr &&
      !(activation->is_string() &&
        (activation->get<std::string>() == "silu" || activation->get<std::string>() == "swish"))) {
    return "'hidden_act' must be \"silu\": JambaMambaMixer hands it to causal-conv1d, which "
           "fuses SiLU alone; it is " +
           describe(*activation) + ".";
  }
  int attention_period = 8;
  int attention_offset = 4;
  int expert_period = 2;
  int expert_offset = 1;
  shape.num_experts = 16;
  shape.num_experts_per_token = 2;
  problems.add(
      read_period(config, kAttnLayerPeriod, kAttnLayerOffset, attention_period, attention_offset));
  problems.add(
      read_period(config, kExpertLayerPeriod, kExpertLayerOffset, expert_period, expert_offset));
  problems.add(read_optional(config, kNumExperts, shape.num_experts));
  problems.add(read_optional(config, kNumExpertsPerToken, shape.num_experts_per_token));
  if (problems.any()) return problems.first();
  if (shape.num_experts > 1) {
    // trainmem places a mixture on each layer whose number + 1 is a multiple of the step
    // (moe_layer_step), so the offset must be the period's last layer.
    if (expert_offset != expert_period - 1) {
      return "'expert_layer_offset' must be expert_layer_period - 1 (" +
             std::to_string(expert_period - 1) +
             "), the mixtures on every expert_layer_period-th layer counted from 1; it is " +
             std::to_string(expert_offset) + ".";
    }
    shape.moe_ffn_hidden_size = shape.ffn_hidden_size;
    shape.moe_layer_step = expert_period;
    problems.add(check_mixture_counts(shape, "expert_layer_offset", "Jamba"));
  } else {
    shape.num_experts_per_token = 1;
  }
  if (problems.any()) return problems.first();
  std::string kinds;
  for (int layer = 0; layer < shape.num_layers; ++layer) {
    kinds += layer % attention_period == attention_offset ? 'A' : 'L';
  }
  if (kinds.find('L') == std::string::npos) return {};  // every layer attention: no hybrid
  if (kinds.find('A') == std::string::npos) {
    return "Jamba's layers must hold an attention layer (attn_layer_offset below "
           "num_hidden_layers): a model of Mamba layers alone is not read as jamba.";
  }
  shape.hybrid_layers = kinds;
  return read_jamba_mamba(config, shape);
}

// transformers' NemotronHForCausalLM: embeddings; per block a norm and one of Mamba-2's mixer
// (NemotronHMamba2Mixer), attention without biases or positions (NemotronHAttention), an MLP of
// up and down (NemotronHMLP, mlp_hidden_act: ReLU²) or NemotronHMoE; norm_f; an untied lm_head.
// num_hidden_layers is deprecated: the blocks are as many as their list says.
std::string read_nemotron_h_block(const Json& config, ModelShape& shape) {
  bool moe = false;
  bool mlp = false;
  const std::string blocks_problem = read_blocks(config, shape, moe, mlp);
  if (!blocks_problem.empty()) return blocks_problem;
  // NemotronHConfig's defaults for the widths a config may leave out; the blocks' count.
  Json widths = config;
  widths[kNumLayers.key] = shape.num_layers;
  if (present(widths, kNumKeyValueHeads.key) == nullptr &&
      widths.count(kNumKeyValueHeads.key) == 0) {
    widths[kNumKeyValueHeads.key] = 8;
  }
  if (present(widths, kHeadDim.key) == nullptr) widths[kHeadDim.key] = 128;
  if (present(widths, kIntermediateSize.key) == nullptr) widths[kIntermediateSize.key] = 21504;
  Problems problems;
  read_llama_widths(widths, shape, problems);
  if (problems.any()) return problems.first();
  std::string layers = shape.hybrid_layers;
  shape.gated_mlp = false;
  shape.norms_per_layer = 2;  // one a block: half a two-part layer's
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(read_boolean(config, "mlp_bias", shape.mlp_bias));
  problems.add(require_boolean(config, "residual_in_fp32", false,
                               "a residual stream kept in FP32 between blocks"));
  if (const Json* activation = present(config, "mlp_hidden_act")) {
    problems.add(elementwise_activation_problem("mlp_hidden_act", *activation));
  }
  // The checkpoint's multi-token-prediction block (mtp.*: Nemotron 3 Super's, its
  // num_nextn_predict_layers and mtp_hybrid_override_pattern) is no part of the model transformers
  // builds and trains (NemotronHPreTrainedModel ignores mtp.* on loading): read, not counted.
  int mtp_layers = 0;
  problems.add(read_optional(config, kNumNextnPredictLayers, mtp_layers));
  if (problems.any()) return problems.first();
  if (moe) problems.add(read_nemotron_experts(config, shape));
  if (layers.find('l') != std::string::npos) problems.add(read_mamba_fields(config, shape));
  if (problems.any()) return problems.first();
  if (layers.find('l') == std::string::npos) {
    return "Nemotron-H's blocks must hold Mamba-2 mixers (M, \"linear_attention\"): a model "
           "without them is not read as nemotron_h.";
  }
  return {};
}

}  // namespace trainmem
