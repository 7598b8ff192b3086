// Inside the config.json reader: one field's value read and checked, shared by config.cpp (the
// text and the fields every config has) and config_blocks.cpp (each architecture's fields). Not
// part of the public API.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "trainmem/models.hpp"

namespace trainmem {

using Json = nlohmann::json;

// A whole-number field and the values it may hold.
struct WholeField {
  const char* key;
  int low;
  int high;
};

// Every whole-number field the readers know, by architecture.
// The Llama family's fields.
inline constexpr WholeField kHiddenSize = {"hidden_size", 1, kMaxModelWidth};
inline constexpr WholeField kNumLayers = {"num_hidden_layers", 1, kMaxModelLayers};
inline constexpr WholeField kNumHeads = {"num_attention_heads", 1, kMaxModelWidth};
inline constexpr WholeField kNumKeyValueHeads = {"num_key_value_heads", 1, kMaxModelWidth};
inline constexpr WholeField kIntermediateSize = {"intermediate_size", 1, kMaxModelWidth};
inline constexpr WholeField kVocabSize = {"vocab_size", 1, kMaxVocabSize};
inline constexpr WholeField kHeadDim = {"head_dim", 1, kMaxModelWidth};
inline constexpr WholeField kNumLocalExperts = {"num_local_experts", 1, kMaxExperts};
inline constexpr WholeField kNumExperts = {"num_experts", 1, kMaxExperts};
inline constexpr WholeField kNumExpertsPerToken = {"num_experts_per_tok", 1, kMaxExperts};
// GPT-2's names (transformers' GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions.
inline constexpr WholeField kNEmbd = {"n_embd", 1, kMaxModelWidth};
inline constexpr WholeField kNLayer = {"n_layer", 1, kMaxModelLayers};
inline constexpr WholeField kNHead = {"n_head", 1, kMaxModelWidth};
inline constexpr WholeField kNInner = {"n_inner", 1, kMaxModelWidth};
inline constexpr WholeField kNPositions = {"n_positions", 1, kMaxPositionEmbeddings};
// OPT's (OPTConfig): ffn_dim, max_position_embeddings, word_embed_proj_dim.
inline constexpr WholeField kFfnDim = {"ffn_dim", 1, kMaxModelWidth};
inline constexpr WholeField kMaxPositions = {"max_position_embeddings", 1, kMaxPositionEmbeddings};
inline constexpr WholeField kWordEmbedProjDim = {"word_embed_proj_dim", 1, kMaxModelWidth};
// Today's mixtures of experts (Qwen2-MoE, Qwen3-MoE, DeepSeek-V3) and latent attention.
inline constexpr WholeField kMoeIntermediateSize = {"moe_intermediate_size", 1, kMaxModelWidth};
// Nemotron 3 Super's latent MoE: the experts' token width.
inline constexpr WholeField kMoeLatentSize = {"moe_latent_size", 1, kMaxModelWidth};
inline constexpr WholeField kSharedExpertIntermediateSize = {"shared_expert_intermediate_size", 0,
                                                             kMaxModelWidth};
inline constexpr WholeField kDecoderSparseStep = {"decoder_sparse_step", 1, kMaxModelLayers};
inline constexpr WholeField kNRoutedExperts = {"n_routed_experts", 2, kMaxExperts};
inline constexpr WholeField kNSharedExperts = {"n_shared_experts", 0, kMaxExperts};
inline constexpr WholeField kFirstKDenseReplace = {"first_k_dense_replace", 0, kMaxModelLayers};
inline constexpr WholeField kMoeLayerFreq = {"moe_layer_freq", 1, kMaxModelLayers};
inline constexpr WholeField kNumNextnPredictLayers = {"num_nextn_predict_layers", 0,
                                                      kMaxModelLayers};
inline constexpr WholeField kQLoraRank = {"q_lora_rank", 1, kMaxModelWidth};
inline constexpr WholeField kKvLoraRank = {"kv_lora_rank", 1, kMaxModelWidth};
inline constexpr WholeField kQkNopeHeadDim = {"qk_nope_head_dim", 0, kMaxModelWidth};
inline constexpr WholeField kQkRopeHeadDim = {"qk_rope_head_dim", 0, kMaxModelWidth};
inline constexpr WholeField kVHeadDim = {"v_head_dim", 1, kMaxModelWidth};
// Today's families: Llama 4's dense layers and interleave step.
inline constexpr WholeField kIntermediateSizeMlp = {"intermediate_size_mlp", 1, kMaxModelWidth};
inline constexpr WholeField kInterleaveMoeLayerStep = {"interleave_moe_layer_step", 1,
                                                       kMaxModelLayers};
// Hybrid linear attention (Qwen3-Next, Qwen3.5): the interval of full-attention layers and the
// Gated DeltaNet layers' heads and widths.
inline constexpr WholeField kFullAttentionInterval = {"full_attention_interval", 1,
                                                      kMaxModelLayers};
inline constexpr WholeField kLinearNumKeyHeads = {"linear_num_key_heads", 1, kMaxModelWidth};
inline constexpr WholeField kLinearNumValueHeads = {"linear_num_value_heads", 1, kMaxModelWidth};
inline constexpr WholeField kLinearKeyHeadDim = {"linear_key_head_dim", 1, kMaxModelWidth};
inline constexpr WholeField kLinearValueHeadDim = {"linear_value_head_dim", 1, kMaxModelWidth};
inline constexpr WholeField kLinearConvKernelDim = {"linear_conv_kernel_dim", 1, kMaxModelWidth};
inline constexpr WholeField kMtpNumHiddenLayers = {"mtp_num_hidden_layers", 0, kMaxModelLayers};
// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's heads and width, and
// the keys each query keeps.
inline constexpr WholeField kIndexNHeads = {"index_n_heads", 1, kMaxModelWidth};
inline constexpr WholeField kIndexHeadDim = {"index_head_dim", 1, kMaxModelWidth};
inline constexpr WholeField kIndexTopk = {"index_topk", 1, kMaxPositionEmbeddings};
// LFM2's short convolutions (conv_L_cache) and its MLP's width as its original configs give it
// (block_ff_dim) and round it (block_multiple_of).
inline constexpr WholeField kConvLCache = {"conv_L_cache", 1, kMaxModelWidth};
inline constexpr WholeField kBlockFfDim = {"block_ff_dim", 1, kMaxModelWidth};
inline constexpr WholeField kBlockMultipleOf = {"block_multiple_of", 1, kMaxModelWidth};
// LFM2-MoE's dense first layers.
inline constexpr WholeField kNumDenseLayers = {"num_dense_layers", 0, kMaxModelLayers};
// Gemma 4's full-attention layers and what is not counted of it.
inline constexpr WholeField kGlobalHeadDim = {"global_head_dim", 1, kMaxModelWidth};
inline constexpr WholeField kNumGlobalKeyValueHeads = {"num_global_key_value_heads", 1,
                                                       kMaxModelWidth};
inline constexpr WholeField kHiddenSizePerLayerInput = {"hidden_size_per_layer_input", 0,
                                                        kMaxModelWidth};
inline constexpr WholeField kNumKvSharedLayers = {"num_kv_shared_layers", 0, kMaxModelLayers};
inline constexpr WholeField kTopKExperts = {"top_k_experts", 1, kMaxExperts};
inline constexpr WholeField kWholeFields[] = {kHiddenSize,
                                              kNumLayers,
                                              kNumHeads,
                                              kNumKeyValueHeads,
                                              kIntermediateSize,
                                              kVocabSize,
                                              kHeadDim,
                                              kNumLocalExperts,
                                              kNumExperts,
                                              kNumExpertsPerToken,
                                              kNEmbd,
                                              kNLayer,
                                              kNHead,
                                              kNInner,
                                              kNPositions,
                                              kFfnDim,
                                              kMaxPositions,
                                              kWordEmbedProjDim,
                                              kMoeIntermediateSize,
                                              kMoeLatentSize,
                                              kSharedExpertIntermediateSize,
                                              kDecoderSparseStep,
                                              kNRoutedExperts,
                                              kNSharedExperts,
                                              kFirstKDenseReplace,
                                              kMoeLayerFreq,
                                              kNumNextnPredictLayers,
                                              kQLoraRank,
                                              kKvLoraRank,
                                              kQkNopeHeadDim,
                                              kQkRopeHeadDim,
                                              kVHeadDim,
                                              kIntermediateSizeMlp,
                                              kInterleaveMoeLayerStep,
                                              kFullAttentionInterval,
                                              kLinearNumKeyHeads,
                                              kLinearNumValueHeads,
                                              kLinearKeyHeadDim,
                                              kLinearValueHeadDim,
                                              kLinearConvKernelDim,
                                              kMtpNumHiddenLayers,
                                              kIndexNHeads,
                                              kIndexHeadDim,
                                              kIndexTopk,
                                              kConvLCache,
                                              kBlockFfDim,
                                              kBlockMultipleOf,
                                              kNumDenseLayers,
                                              kGlobalHeadDim,
                                              kNumGlobalKeyValueHeads,
                                              kHiddenSizePerLayerInput,
                                              kNumKvSharedLayers,
                                              kTopKExperts};

// "'hidden_size'"
std::string quoted(const char* key);

// "a whole number from 1 to 1,048,576"
std::string allowed(const WholeField& field);

// The field's value, or nullptr when it is absent or null.
const Json* present(const Json& config, const char* key);

// A config class's default for a whole-number field (configuration_<type>.py).
struct FieldDefault {
  const char* key;
  int value;
};
// Each default put into `config` where the field is absent (a null stays null).
template <std::size_t N>
void add_defaults(Json& config, const FieldDefault (&defaults)[N]) {
  for (const FieldDefault& field : defaults) {
    if (config.find(field.key) == config.end()) config[field.key] = field.value;
  }
}

// Each returns the problem in one sentence naming the field, or "" with `out` set.
// A field every config must have; null is refused like any other wrong value.
std::string read_required(const Json& config, const WholeField& field, int& out);
// An optional field: absent or null leaves `out` as it is.
std::string read_optional(const Json& config, const WholeField& field, int& out);
// An optional true/false field: absent or null leaves `out` as it is.
std::string read_boolean(const Json& config, const char* key, bool& out);
// An optional number above 0 and at most `high`: absent or null leaves `out` as it is.
std::string read_positive_decimal(const Json& config, const char* key, double high, double& out);

// A field that a config must hold, where null means none (0): DeepSeek's q_lora_rank, null when
// queries have no latent (transformers' DeepseekV3Attention then builds one q_proj).
std::string read_required_or_null(const Json& config, const WholeField& field, int& out);
// A true/false field that must keep one value, for a variant trainmem does not count.
std::string require_boolean(const Json& config, const char* key, bool required, const char* what);

// The first problem a series of reads met.
class Problems {
 public:
  void add(std::string found) {
    if (first_.empty()) first_ = std::move(found);
  }
  bool any() const { return !first_.empty(); }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// The whole-number field of any architecture with this key (for a number too large for JSON's
// 64-bit numbers, refused before the text parses), or nullptr.
const WholeField* whole_field_named(std::string_view key);

// Reads the shape's numbers and flags for the config's model_type ("" when it has none: the Llama
// family's fields); returns the first problem, or "". A multimodal config's text tower is read
// when `text_tower`; one with a vision tower is refused otherwise.
std::string read_block_shape(const Json& config, const std::string& model_type, bool text_tower,
                             ModelShape& shape);

// Whether model_type is a multimodal one (gemma3, llama4, mistral3, qwen2_5_vl, qwen2_vl).
bool multimodal_model_type(const std::string& model_type);

// A multimodal config's text tower as a config of its own (its text_config, with a model_type
// and the defaults its class gives); returns the problem, or "".
std::string text_tower_config(const Json& config, const std::string& model_type, Json& text);

}  // namespace trainmem
