// The readers of hybrid models' mixers: Qwen3-Next's and Qwen3.5's Gated DeltaNet layers beside
// their gated full-attention layers (transformers' modeling_qwen3_next.py and modular_qwen3_5.py),
// counted as transformers builds them, each field refused by name where a shape cannot hold it.
#include <string>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// Qwen3NextConfig's and Qwen3_5TextConfig's default interval (configuration_qwen3_next.py:
// layer_types default to "linear_attention" unless (i + 1) % full_attention_interval == 0).
constexpr int kQwen3NextFullAttentionInterval = 4;

constexpr const char* kLinearAttention = "linear_attention";
constexpr const char* kFullAttention = "full_attention";

// layer_types, where given, must be the interval's pattern: the shape holds an interval, and
// transformers builds each layer as its entry says.
std::string check_layer_types(const Json& config, const ModelShape& shape) {
  const Json* types = present(config, "layer_types");
  if (types == nullptr) return {};
  const std::string pattern =
      "'layer_types' must list num_hidden_layers entries, \"full_attention\" where the layer's "
      "number + 1 is a multiple of full_attention_interval (" +
      std::to_string(shape.full_attention_interval) + ") and \"linear_attention\" elsewhere";
  if (!types->is_array() || types->size() != static_cast<std::size_t>(shape.num_layers)) {
    return pattern + "; it is " + describe(*types) +
           (types->is_array() ? " of " + std::to_string(types->size()) + " entries" : "") + ".";
  }
  for (std::size_t i = 0; i < types->size(); ++i) {
    const bool full = (i + 1) % static_cast<std::size_t>(shape.full_attention_interval) == 0;
    const Json& entry = (*types)[i];
    if (!entry.is_string() ||
        entry.get<std::string>() != (full ? kFullAttention : kLinearAttention)) {
      return pattern + "; entry " + std::to_string(i) + " is " + describe(entry) +
             ": trainmem counts layers of this one pattern.";
    }
  }
  return {};
}

}  // namespace

std::string read_gated_deltanet_fields(const Json& config, GatedDeltaNet kind, ModelShape& shape) {
  Problems problems;
  shape.full_attention_interval = kQwen3NextFullAttentionInterval;
  problems.add(read_optional(config, kFullAttentionInterval, shape.full_attention_interval));
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
  }
  problems.add(check_layer_types(config, shape));
  return problems.first();
}

}  // namespace trainmem
