// The reader of Nemotron-H's blocks (transformers' modeling_nemotron_h.py and
// configuration_nemotron_h.py: Nemotron-H and Nemotron 3): one norm and one part a block, Mamba-2's
// mixer, attention, an MLP or a mixture of experts, as hybrid_override_pattern or
// layers_block_type lists them, counted as transformers builds them, each field it cannot count
// refused by name.
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
  // with its bias.
  int heads = 128;
  int head_dim = 64;
  int state = 128;
  int groups = 8;
  int kernel = 4;
  bool conv_bias = true;
  Problems problems;
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
  return {};
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

}  // namespace

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
