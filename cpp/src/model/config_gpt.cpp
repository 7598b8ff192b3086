// The GPT-style blocks' config.json fields (GPT-2, GPT-NeoX, OPT, Phi), whose keys and weights
// differ from the Llama family's: biased projections, a plain MLP, LayerNorms with biases.
#include <string>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"

namespace trainmem {

namespace {

// GPT2MLP's width when n_inner is null: 4 · n_embd (transformers' GPT2MLP, inner_dim).
constexpr int kGpt2FfnMultiple = 4;
// Phi's decoder layer runs attention and the MLP in parallel from one LayerNorm
// (transformers' PhiDecoderLayer: input_layernorm only).
constexpr int kPhiNormsPerLayer = 1;

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

}  // namespace

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

}  // namespace trainmem
