// Each architecture's config.json fields, read into a ModelShape: the Llama family's (the fields
// the shape was made for) and the GPT-style blocks' (GPT-2, GPT-NeoX, OPT, Phi), whose keys and
// weights differ. A model_type not listed here is refused, never read as another's.
#include <cstdint>
#include <string>
#include <utility>

#include "model/config_fields.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// The Llama family's fields.
constexpr WholeField kHiddenSize = {"hidden_size", 1, kMaxModelWidth};
constexpr WholeField kNumLayers = {"num_hidden_layers", 1, kMaxModelLayers};
constexpr WholeField kNumHeads = {"num_attention_heads", 1, kMaxModelWidth};
constexpr WholeField kNumKeyValueHeads = {"num_key_value_heads", 1, kMaxModelWidth};
constexpr WholeField kIntermediateSize = {"intermediate_size", 1, kMaxModelWidth};
constexpr WholeField kVocabSize = {"vocab_size", 1, kMaxVocabSize};
constexpr WholeField kHeadDim = {"head_dim", 1, kMaxModelWidth};
constexpr WholeField kNumLocalExperts = {"num_local_experts", 1, kMaxExperts};
constexpr WholeField kNumExperts = {"num_experts", 1, kMaxExperts};
constexpr WholeField kNumExpertsPerToken = {"num_experts_per_tok", 1, kMaxExperts};
// GPT-2's names (transformers' GPT2Config): n_embd, n_layer, n_head, n_inner, n_positions.
constexpr WholeField kNEmbd = {"n_embd", 1, kMaxModelWidth};
constexpr WholeField kNLayer = {"n_layer", 1, kMaxModelLayers};
constexpr WholeField kNHead = {"n_head", 1, kMaxModelWidth};
constexpr WholeField kNInner = {"n_inner", 1, kMaxModelWidth};
constexpr WholeField kNPositions = {"n_positions", 1, kMaxPositionEmbeddings};
// OPT's (OPTConfig): ffn_dim, max_position_embeddings, word_embed_proj_dim.
constexpr WholeField kFfnDim = {"ffn_dim", 1, kMaxModelWidth};
constexpr WholeField kMaxPositions = {"max_position_embeddings", 1, kMaxPositionEmbeddings};
constexpr WholeField kWordEmbedProjDim = {"word_embed_proj_dim", 1, kMaxModelWidth};
// Today's mixtures of experts (Qwen2-MoE, Qwen3-MoE, DeepSeek-V3) and latent attention.
constexpr WholeField kMoeIntermediateSize = {"moe_intermediate_size", 1, kMaxModelWidth};
constexpr WholeField kSharedExpertIntermediateSize = {"shared_expert_intermediate_size", 0,
                                                      kMaxModelWidth};
constexpr WholeField kDecoderSparseStep = {"decoder_sparse_step", 1, kMaxModelLayers};
constexpr WholeField kNRoutedExperts = {"n_routed_experts", 2, kMaxExperts};
constexpr WholeField kNSharedExperts = {"n_shared_experts", 0, kMaxExperts};
constexpr WholeField kFirstKDenseReplace = {"first_k_dense_replace", 0, kMaxModelLayers};
constexpr WholeField kMoeLayerFreq = {"moe_layer_freq", 1, kMaxModelLayers};
constexpr WholeField kNumNextnPredictLayers = {"num_nextn_predict_layers", 0, kMaxModelLayers};
constexpr WholeField kQLoraRank = {"q_lora_rank", 1, kMaxModelWidth};
constexpr WholeField kKvLoraRank = {"kv_lora_rank", 1, kMaxModelWidth};
constexpr WholeField kQkNopeHeadDim = {"qk_nope_head_dim", 0, kMaxModelWidth};
constexpr WholeField kQkRopeHeadDim = {"qk_rope_head_dim", 0, kMaxModelWidth};
constexpr WholeField kVHeadDim = {"v_head_dim", 1, kMaxModelWidth};
constexpr WholeField kWholeFields[] = {kHiddenSize,
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
                                       kVHeadDim};

// GPT2MLP's width when n_inner is null: 4 · n_embd (transformers' GPT2MLP, inner_dim).
constexpr int kGpt2FfnMultiple = 4;
// OPTLearnedPositionalEmbedding keeps max_position_embeddings + 2 rows: fairseq's offset for the
// padding index (transformers' modeling_opt.py, `self.offset = 2`).
constexpr int kOptPositionOffset = 2;
// Phi's decoder layer runs attention and the MLP in parallel from one LayerNorm
// (transformers' PhiDecoderLayer: input_layernorm only).
constexpr int kPhiNormsPerLayer = 1;

// The architectures whose weights trainmem counts, by model_type. Everything a Llama-family type
// implies beyond its fields is set in read_llama_block.
enum class Block { kLlama, kGpt2, kGptNeoX, kOpt, kPhi, kDeepseekV3 };
struct ModelType {
  const char* name;
  Block block;
};
constexpr ModelType kModelTypes[] = {
    {"llama", Block::kLlama},     {"mistral", Block::kLlama},
    {"mixtral", Block::kLlama},   {"qwen2", Block::kLlama},
    {"gemma", Block::kLlama},     {"gemma2", Block::kLlama},
    {"gpt2", Block::kGpt2},       {"gpt_neox", Block::kGptNeoX},
    {"opt", Block::kOpt},         {"phi", Block::kPhi},
    {"qwen3", Block::kLlama},     {"qwen3_moe", Block::kLlama},
    {"qwen2_moe", Block::kLlama}, {"deepseek_v3", Block::kDeepseekV3},
};

// The fields of today's mixtures of experts and of latent attention, each read by the model
// types listed with it; config.cpp refuses them in any other config.
struct TypedField {
  const char* key;
  const char* model_types[3];
};
constexpr TypedField kTypedFields[] = {
    {"moe_intermediate_size", {"qwen2_moe", "qwen3_moe", "deepseek_v3"}},
    {"shared_expert_intermediate_size", {"qwen2_moe", nullptr, nullptr}},
    {"n_shared_experts", {"deepseek_v3", nullptr, nullptr}},
    {"q_lora_rank", {"deepseek_v3", nullptr, nullptr}},
    {"kv_lora_rank", {"deepseek_v3", nullptr, nullptr}},
};

// transformers' Qwen2Attention gives Q, K and V a bias and O none, whatever attention_bias says;
// Gemma and Gemma 2 configs tie the embeddings unless they say otherwise (GemmaConfig and
// Gemma2Config default tie_word_embeddings to true); Gemma 2 has four norms per layer.
constexpr const char* kQwen2ModelType = "qwen2";
constexpr const char* kQwen2MoeModelType = "qwen2_moe";
constexpr const char* kQwen3ModelType = "qwen3";
constexpr const char* kQwen3MoeModelType = "qwen3_moe";
constexpr const char* kGemmaModelType = "gemma";
constexpr const char* kGemma2ModelType = "gemma2";

// The activations of transformers' ACT2FN that hold no parameters and act on each element alone
// (activations.py). Which MLP a block has comes from its model_type, never from this name; a name
// outside the list (a gated "swiglu", a parametric "prelu") is refused.
constexpr const char* kActivationKeys[] = {"hidden_act", "hidden_activation",
                                           "activation_function"};
constexpr const char* kElementwiseActivations[] = {
    "gelu",          "gelu_new",    "gelu_fast", "gelu_pytorch_tanh",
    "gelu_accurate", "gelu_python", "gelu_10",   "quick_gelu",
    "relu",          "relu2",       "relu6",     "leaky_relu",
    "silu",          "swish",       "mish",      "tanh",
    "sigmoid",       "laplace",     "linear"};

template <typename Names>
std::string joined(const Names& names, const char* last_separator) {
  std::string text;
  const std::size_t count = std::size(names);
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) text += i + 1 == count ? last_separator : ", ";
    text += names[i];
  }
  return text;
}

std::string model_type_names() {
  const char* names[std::size(kModelTypes)];
  for (std::size_t i = 0; i < std::size(kModelTypes); ++i) names[i] = kModelTypes[i].name;
  return joined(names, " and ");
}

std::string check_activations(const Json& config) {
  for (const char* key : kActivationKeys) {
    const Json* value = present(config, key);
    if (value == nullptr) continue;
    bool known = false;
    if (value->is_string()) {
      for (const char* name : kElementwiseActivations)
        known = known || value->get<std::string>() == name;
    }
    if (known) continue;
    return quoted(key) + " must be one of transformers' elementwise activations (" +
           joined(kElementwiseActivations, " or ") + "); it is " + describe(*value) + ".";
  }
  return {};
}

// A true/false field that must keep one value, for a variant trainmem does not count.
std::string require_boolean(const Json& config, const char* key, bool required, const char* what) {
  bool value = required;
  std::string problem = read_boolean(config, key, value);
  if (!problem.empty()) return problem;
  if (value != required) {
    return quoted(key) + " must be " + (required ? "true" : "false") + " (absent or null means " +
           (required ? "true" : "false") + "): trainmem does not count " + what + ".";
  }
  return {};
}

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

std::string read_llama_block(const Json& config, const std::string& model_type, ModelShape& shape) {
  Problems problems;
  problems.add(read_required(config, kHiddenSize, shape.hidden_size));
  problems.add(read_required(config, kNumLayers, shape.num_layers));
  problems.add(read_required(config, kNumHeads, shape.num_attention_heads));
  shape.num_key_value_heads = shape.num_attention_heads;  // transformers' default: no GQA
  problems.add(read_optional(config, kNumKeyValueHeads, shape.num_key_value_heads));
  problems.add(read_required(config, kIntermediateSize, shape.ffn_hidden_size));
  problems.add(read_required(config, kVocabSize, shape.vocab_size));
  problems.add(read_optional(config, kHeadDim, shape.head_dim));

  const bool gemma = model_type == kGemmaModelType || model_type == kGemma2ModelType;
  shape.tied_embeddings = gemma;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  bool attention_bias = false;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  // Qwen2-MoE's attention is Qwen2's (transformers' Qwen2MoeAttention).
  const bool qwen2_attention = model_type == kQwen2ModelType || model_type == kQwen2MoeModelType;
  shape.attention_qkv_bias = attention_bias || qwen2_attention;
  shape.attention_output_bias = attention_bias && !qwen2_attention;
  // transformers' Qwen3Attention and Qwen3MoeAttention: q_norm and k_norm of head_dim.
  shape.qk_norm = model_type == kQwen3ModelType || model_type == kQwen3MoeModelType;
  problems.add(read_boolean(config, "mlp_bias", shape.mlp_bias));
  if (model_type == kGemma2ModelType) shape.norms_per_layer = kGemma2NormsPerLayer;

  const bool qwen_moe = model_type == kQwen2MoeModelType || model_type == kQwen3MoeModelType;
  if (qwen_moe && present(config, kNumExperts.key) == nullptr) {
    // Qwen2MoeConfig and Qwen3MoeConfig default to 60 and 128 experts: never guessed at.
    return "'num_experts' is missing; a " + model_type + " config must give its experts, " +
           allowed(kNumExperts) + ".";
  }
  const WholeField& experts_field =
      present(config, kNumLocalExperts.key) != nullptr ? kNumLocalExperts : kNumExperts;
  problems.add(read_optional(config, experts_field, shape.num_experts));
  if (problems.any()) return problems.first();
  if (shape.num_experts > 1 && present(config, kNumExpertsPerToken.key) == nullptr) {
    return "'num_experts_per_tok' is missing; a mixture of " + std::to_string(shape.num_experts) +
           " experts needs its top-k, a whole number from 1 to " +
           std::to_string(shape.num_experts) + ".";
  }
  problems.add(read_optional(config, kNumExpertsPerToken, shape.num_experts_per_token));
  if (problems.any() || shape.num_experts == 1) return problems.first();
  if (qwen_moe) {
    return read_qwen_moe_fields(config, model_type == kQwen2MoeModelType, shape);
  }
  return {};
}

// What every GPT-style block shares: a plain MLP, LayerNorms with biases, biased projections
// (each reader turns off what its architecture lacks).
void set_gpt_block(ModelShape& shape) {
  shape.gated_mlp = false;
  shape.norm_bias = true;
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
}

// The widths GPT-NeoX, OPT and Phi name as Llama does (hidden_size, num_hidden_layers,
// num_attention_heads, vocab_size), one key and value head per query head unless a reader says
// otherwise, and the MLP's width under the architecture's own key.
void read_gpt_widths(const Json& config, const WholeField& ffn, ModelShape& shape,
                     Problems& problems) {
  problems.add(read_required(config, kHiddenSize, shape.hidden_size));
  problems.add(read_required(config, kNumLayers, shape.num_layers));
  problems.add(read_required(config, kNumHeads, shape.num_attention_heads));
  shape.num_key_value_heads = shape.num_attention_heads;
  problems.add(read_required(config, ffn, shape.ffn_hidden_size));
  problems.add(read_required(config, kVocabSize, shape.vocab_size));
}

// transformers' GPT2LMHeadModel: wte, wpe (n_positions), per block ln_1, c_attn (Q, K, V with
// biases), c_proj, ln_2, c_fc and c_proj of the MLP (biases), ln_f; lm_head tied to wte unless
// tie_word_embeddings is false.
std::string read_gpt2_block(const Json& config, ModelShape& shape) {
  set_gpt_block(shape);
  Problems problems;
  problems.add(read_required(config, kNEmbd, shape.hidden_size));
  problems.add(read_required(config, kNLayer, shape.num_layers));
  problems.add(read_required(config, kNHead, shape.num_attention_heads));
  problems.add(read_required(config, kVocabSize, shape.vocab_size));
  problems.add(read_required(config, kNPositions, shape.num_position_embeddings));
  if (problems.any()) return problems.first();
  shape.num_key_value_heads = shape.num_attention_heads;
  if (shape.hidden_size > kMaxModelWidth / kGpt2FfnMultiple) {
    shape.ffn_hidden_size = kMaxModelWidth + 1;  // refused by the shape's bounds
  } else {
    shape.ffn_hidden_size = kGpt2FfnMultiple * shape.hidden_size;
  }
  problems.add(read_optional(config, kNInner, shape.ffn_hidden_size));
  shape.tied_embeddings = true;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(require_boolean(config, "add_cross_attention", false,
                               "cross-attention (an encoder-decoder's GPT-2)"));
  return problems.first();
}

// transformers' GPTNeoXForCausalLM: embed_in, per layer input_layernorm and
// post_attention_layernorm (LayerNorms), query_key_value and dense (biases when attention_bias,
// true by default), dense_h_to_4h and dense_4h_to_h (biases); final_layer_norm; embed_out,
// untied unless tie_word_embeddings. Rotary positions hold no parameters; use_parallel_residual
// (default true) feeds attention and MLP the same input, which changes what is saved, not the
// weights.
std::string read_gpt_neox_block(const Json& config, ModelShape& shape) {
  set_gpt_block(shape);
  Problems problems;
  read_gpt_widths(config, kIntermediateSize, shape, problems);
  bool attention_bias = true;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  shape.attention_qkv_bias = attention_bias;
  shape.attention_output_bias = attention_bias;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  shape.parallel_attention_mlp = true;  // GPTNeoXConfig's default
  problems.add(read_boolean(config, "use_parallel_residual", shape.parallel_attention_mlp));
  return problems.first();
}

// transformers' OPTForCausalLM: embed_tokens, embed_positions (max_position_embeddings + 2 rows),
// per layer self_attn_layer_norm, q/k/v/out_proj and fc1/fc2 (biases when enable_bias),
// final_layer_norm; the decoder's final_layer_norm; lm_head tied unless tie_word_embeddings is
// false. OPT-350M's projections (word_embed_proj_dim) and post-norm layers are refused.
std::string read_opt_block(const Json& config, ModelShape& shape) {
  set_gpt_block(shape);
  Problems problems;
  read_gpt_widths(config, kFfnDim, shape, problems);
  int positions = 0;
  problems.add(read_required(config, kMaxPositions, positions));
  int word_embed_proj_dim = shape.hidden_size;
  problems.add(read_optional(config, kWordEmbedProjDim, word_embed_proj_dim));
  if (problems.any()) return problems.first();
  if (word_embed_proj_dim != shape.hidden_size) {
    return "'word_embed_proj_dim' (" + std::to_string(word_embed_proj_dim) +
           ") must equal hidden_size (" + std::to_string(shape.hidden_size) +
           "): trainmem does not count OPT's project_in and project_out.";
  }
  shape.num_position_embeddings = positions + kOptPositionOffset;
  bool enable_bias = true;
  problems.add(read_boolean(config, "enable_bias", enable_bias));
  shape.attention_qkv_bias = enable_bias;
  shape.attention_output_bias = enable_bias;
  shape.mlp_bias = enable_bias;
  shape.tied_embeddings = true;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(require_boolean(config, "do_layer_norm_before", true, "post-norm layers"));
  problems.add(require_boolean(config, "_remove_final_layer_norm", false,
                               "a decoder without its final LayerNorm"));
  problems.add(require_boolean(config, "layer_norm_elementwise_affine", true,
                               "LayerNorms without weights and biases"));
  return problems.first();
}

// transformers' PhiForCausalLM: embed_tokens, per layer one input_layernorm (attention and MLP in
// parallel), q/k/v_proj and dense (biases), fc1 and fc2 (biases); final_layernorm; lm_head with a
// bias, untied unless tie_word_embeddings. Partial rotary positions hold no parameters; the
// optional per-head q_layernorm and k_layernorm (qk_layernorm) are refused.
std::string read_phi_block(const Json& config, ModelShape& shape) {
  set_gpt_block(shape);
  shape.norms_per_layer = kPhiNormsPerLayer;
  shape.parallel_attention_mlp = true;
  shape.output_head_bias = true;
  Problems problems;
  read_gpt_widths(config, kIntermediateSize, shape, problems);
  problems.add(read_optional(config, kNumKeyValueHeads, shape.num_key_value_heads));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(
      require_boolean(config, "qk_layernorm", false, "Phi's per-head query and key norms"));
  return problems.first();
}

// A field that a config must hold, where null means none (0): DeepSeek's q_lora_rank, null when
// queries have no latent (transformers' DeepseekV3Attention then builds one q_proj).
std::string read_required_or_null(const Json& config, const WholeField& field, int& out) {
  const auto found = config.find(field.key);
  if (found != config.end() && found->is_null()) {
    out = 0;
    return {};
  }
  return read_required(config, field, out);
}

// transformers' DeepseekV3ForCausalLM: embed_tokens; per layer input_layernorm, latent attention
// (DeepseekV3Attention), post_attention_layernorm, and either a dense MLP of intermediate_size
// (the first first_k_dense_replace layers) or DeepseekV3MoE: n_routed_experts experts of
// moe_intermediate_size, a router (DeepseekV3TopkRouter: a weight of E x h and the buffer
// e_score_correction_bias of E) and shared_experts, one MLP of moe_intermediate_size ·
// n_shared_experts; norm; lm_head. The multi-token-prediction module that the checkpoint adds
// (num_nextn_predict_layers, model.layers.61 in DeepSeek-V3: 11.5B more) is not part of the
// model transformers builds, and not counted.
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
  problems.add(read_required(config, kNRoutedExperts, shape.num_experts));
  problems.add(read_required(config, kNumExpertsPerToken, shape.num_experts_per_token));
  problems.add(read_required(config, kMoeIntermediateSize, shape.moe_ffn_hidden_size));
  int shared_experts = 0;
  problems.add(read_required(config, kNSharedExperts, shared_experts));
  problems.add(read_required(config, kFirstKDenseReplace, shape.num_dense_layers));
  int moe_layer_freq = 1;
  problems.add(read_optional(config, kMoeLayerFreq, moe_layer_freq));
  int next_token_layers = 0;
  problems.add(read_optional(config, kNumNextnPredictLayers, next_token_layers));
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  problems.add(
      require_boolean(config, "attention_bias", false, "biases on latent attention's projections"));
  if (problems.any()) return problems.first();
  if (moe_layer_freq != 1) {
    return "'moe_layer_freq' must be 1 (absent or null means 1); it is " +
           std::to_string(moe_layer_freq) +
           ": trainmem counts every layer past first_k_dense_replace as a mixture.";
  }
  if (shape.num_dense_layers >= shape.num_layers) {
    return "'first_k_dense_replace' (" + std::to_string(shape.num_dense_layers) +
           ") must be below num_hidden_layers (" + std::to_string(shape.num_layers) + ").";
  }
  // Latent attention has no key/value heads of its own; each of the a heads reads the latent.
  shape.num_key_value_heads = shape.num_attention_heads;
  shape.router_bias = true;
  if (static_cast<double>(shared_experts) * shape.moe_ffn_hidden_size > kMaxModelWidth) {
    return "'n_shared_experts' (" + std::to_string(shared_experts) +
           ") times moe_intermediate_size must be at most " + format_count(kMaxModelWidth) + ".";
  }
  shape.shared_expert_ffn_hidden_size = shared_experts * shape.moe_ffn_hidden_size;
  return {};
}

std::string read_block(const Json& config, const std::string& model_type, Block block,
                       ModelShape& shape) {
  switch (block) {
    case Block::kGpt2:
      return read_gpt2_block(config, shape);
    case Block::kGptNeoX:
      return read_gpt_neox_block(config, shape);
    case Block::kOpt:
      return read_opt_block(config, shape);
    case Block::kPhi:
      return read_phi_block(config, shape);
    case Block::kDeepseekV3:
      return read_deepseek_v3_block(config, shape);
    case Block::kLlama:
      break;
  }
  return read_llama_block(config, model_type, shape);
}

}  // namespace

bool model_type_reads(const std::string& model_type, std::string_view key) {
  for (const TypedField& field : kTypedFields) {
    if (key != field.key) continue;
    for (const char* type : field.model_types) {
      if (type != nullptr && model_type == type) return true;
    }
  }
  return false;
}

const WholeField* whole_field_named(std::string_view key) {
  for (const WholeField& field : kWholeFields) {
    if (key == field.key) return &field;
  }
  return nullptr;
}

std::string read_block_shape(const Json& config, const std::string& model_type, ModelShape& shape) {
  Block block = Block::kLlama;
  if (model_type.empty()) {
    // Without a model_type the Llama family's fields are read; GPT-2's names say otherwise.
    if (present(config, kNEmbd.key) != nullptr) {
      return "'model_type' is missing; a config with GPT-2's 'n_embd' must say its model_type, "
             "such as \"gpt2\".";
    }
  } else {
    bool known = false;
    for (const ModelType& type : kModelTypes) {
      if (model_type == type.name) {
        block = type.block;
        known = true;
      }
    }
    if (!known) {
      return "'model_type' must be one of " + model_type_names() +
             " (or absent, for a Llama-style block); it is " + describe(Json(model_type)) + ".";
    }
  }
  const std::string activation_problem = check_activations(config);
  if (!activation_problem.empty()) return activation_problem;
  const std::string problem = read_block(config, model_type, block, shape);
  if (!problem.empty()) return problem;
  // The longest sequence: learned positions have a row each (OPT's two extra rows are fairseq's
  // offset, not positions); a rotary model's config gives max_position_embeddings.
  if (block == Block::kGpt2) {
    shape.max_positions = shape.num_position_embeddings;
  } else if (block == Block::kOpt) {
    shape.max_positions = shape.num_position_embeddings - kOptPositionOffset;
  } else {
    return read_optional(config, kMaxPositions, shape.max_positions);
  }
  return {};
}

}  // namespace trainmem
