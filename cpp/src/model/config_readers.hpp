// Inside the config.json reader: the readers of each architecture's fields, shared between
// config_blocks.cpp (the table of model types and the Llama family's), config_gpt.cpp (the
// GPT-style blocks) and config_experts.cpp (the mixtures of experts with fields of their own).
// Not part of the public API.
#pragma once

#include <string>

#include "model/config_fields.hpp"

namespace trainmem {

// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default the heads),
// intermediate_size, vocab_size and head_dim, as the Llama family names them.
void read_llama_widths(const Json& config, ModelShape& shape, Problems& problems);
// The heads' width where the modeling code takes it as h / a: set, or refused (saying `why`)
// where a does not divide h.
std::string head_dim_from_hidden_size(ModelShape& shape, const char* why);

// OPTLearnedPositionalEmbedding keeps max_position_embeddings + 2 rows: fairseq's offset for the
// padding index (transformers' modeling_opt.py, `self.offset = 2`).
constexpr int kOptPositionOffset = 2;

// The GPT-style blocks (config_gpt.cpp).
std::string read_gpt2_block(const Json& config, ModelShape& shape);
std::string read_gpt_neox_block(const Json& config, ModelShape& shape);
std::string read_opt_block(const Json& config, ModelShape& shape);
std::string read_phi_block(const Json& config, ModelShape& shape);

// Qwen2-MoE's (with a shared expert) and Qwen3-MoE's experts.
std::string read_qwen_moe_fields(const Json& config, bool shared_expert, ModelShape& shape);
std::string read_deepseek_v3_block(const Json& config, ModelShape& shape);
std::string read_deepseek_v2_block(const Json& config, ModelShape& shape);
std::string read_sparse_attention_block(const Json& config, ModelShape& shape);
std::string read_glm4_moe_block(const Json& config, ModelShape& shape);
std::string read_gpt_oss_block(const Json& config, ModelShape& shape);
std::string read_llama4_block(const Json& config, ModelShape& shape);
std::string read_minimax_m2_block(const Json& config, ModelShape& shape);

// Whose Gated DeltaNet layers a model type builds: Qwen3-Next's (modeling_qwen3_next.py) or
// Qwen3.5's (modular_qwen3_5.py), which read the same fields and run them differently.
enum class GatedDeltaNet { kNone, kQwen3Next, kQwen35 };

// Their fields (config_hybrid.cpp): layer_types, or full_attention_interval's pattern where it is
// absent, the linear layers' heads, widths and convolution, and the attention's output gate; for
// Qwen3.5, attn_output_gate and mtp_use_dedicated_embeddings. The problem, or "".
std::string read_gated_deltanet_fields(const Json& config, GatedDeltaNet kind, ModelShape& shape);

// The recurrent state's dtype for vLLM from `key` (ModelShape::recurrent_state_fp32): "float32"
// (or "float") FP32; "bfloat16", "float16" (or "half") and "auto" (the model's) two bytes; and
// `fp32_if_absent` where the config leaves it out. The problem, or "".
std::string read_recurrent_state_dtype(const Json& config, const char* key, bool fp32_if_absent,
                                       ModelShape& shape);

// LFM2's block (config_hybrid.cpp, transformers' modeling_lfm2.py): the Llama family's widths,
// its MLP's width as Lfm2MLP adjusts it, and its short-convolution and full-attention layers.
std::string read_lfm2_block(const Json& config, ModelShape& shape);
// A mixture whose layers past its first dense ones (as many as the config's `dense_key` says) are
// all mixtures: 2 experts or more, top-k within them, and at least one mixture layer; each refusal
// names the field and `family` (config_experts.cpp).
std::string check_mixture_counts(const ModelShape& shape, const char* dense_key,
                                 const char* family);
// Ling's (config_experts.cpp; the remote code's modeling_bailing_moe.py, Ling 1.0's, and
// modeling_bailing_moe_v2.py, Ling 2.0's): Llama's attention fused, over dense first layers and
// experts with shared ones.
std::string read_bailing_moe_block(const Json& config, ModelShape& shape);
// Hunyuan-A13B's (config_experts.cpp, modeling_hunyuan_v1_moe.py): Llama's attention with per-head
// q/k norms over a mixture with one shared MLP in every layer.
std::string read_hunyuan_v1_moe_block(const Json& config, ModelShape& shape);
// LFM2-MoE's (config_hybrid.cpp, modular_lfm2_moe.py): LFM2's layers over dense first layers and
// mixtures of experts after them.
std::string read_lfm2_moe_block(const Json& config, ModelShape& shape);

// Kimi Linear's block (config_hybrid.cpp, transformers' modeling_kimi_linear.py): Kimi Delta
// Attention layers beside latent attention ones, over DeepSeek-V3's experts and dense first layers.
std::string read_kimi_linear_block(const Json& config, ModelShape& shape);

// Nemotron-H's blocks (config_mamba.cpp, transformers' modeling_nemotron_h.py): one part a block,
// Mamba-2's mixer, attention, an MLP or a mixture of experts.
std::string read_nemotron_h_block(const Json& config, ModelShape& shape);
// Jamba's (config_mamba.cpp, modeling_jamba.py): Mamba's mixer or attention a layer, over an MLP
// or a mixture of experts, as the periods and offsets place them.
std::string read_jamba_block(const Json& config, ModelShape& shape);
// MiniMax-Text-01's and MiniMax-M1's (config_hybrid.cpp, modeling_minimax.py): lightning or full
// attention a layer, as layer_types says, over Mixtral's mixture.
std::string read_minimax_block(const Json& config, ModelShape& shape);

// What is wrong with an activation's name under `key`, one of transformers' elementwise
// activations (ACT2FN's that hold no parameters), or "".
std::string elementwise_activation_problem(const char* key, const Json& value);

// final_logit_softcapping (Gemma 2, 3 and 4): a number above 0, or null or absent for none.
std::string read_logit_softcapping(const Json& config, ModelShape& shape);

// Gemma 4's text block (config_hybrid.cpp, transformers' modeling_gemma4.py): sliding-window
// layers and full-attention layers of their own widths, each over a GeGLU MLP.
std::string read_gemma4_block(const Json& config, ModelShape& shape);

// A dropout probability's key, and its config class's default where the key is absent.
struct DropoutKey {
  const char* key = nullptr;  // null: the block has no such dropout
  double absent = 0;
};
// The keys of one architecture's dropout (config_dropout.cpp), and those it refuses above 0.
struct DropoutKeys {
  DropoutKey residual;       // after the attention and after the MLP
  DropoutKey probabilities;  // on the attention probabilities
  DropoutKey embedding;      // on the embedding's output (the residual's key where it is shared)
  const char* refused[2] = {nullptr, nullptr};
};
// The dropout the config sets, into shape's dropout fields; the problem, or "".
std::string read_dropout(const Json& config, const DropoutKeys& keys, ModelShape& shape);

// The vision towers trainmem counts, each with its multimodal type's projector.
enum class VisionTower { kNone, kSiglip, kPixtral, kQwen25Vl, kLlama4, kQwen35, kGemma4 };

// A multimodal config's vision tower and projector (config_vision.cpp): their parameters in
// `parameters`, 0 without a vision_config; the problem, or "". A tower of kind kNone is refused,
// naming the way to the text tower alone.
std::string read_vision_tower(const Json& config, VisionTower tower, double text_hidden,
                              double& parameters);

}  // namespace trainmem
