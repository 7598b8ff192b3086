// A Hugging Face config.json, read into a model shape. The text comes from whoever calls (the
// CLI reads the file, the page the user's file); this only parses, and never throws or aborts.
#pragma once

#include <string>
#include <string_view>

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

// Not a setting, but an input refused by the same name as one: a Hugging Face config.json (the
// CLI's --config, the page's config box, its URL key).
constexpr const char* kConfigInputId = "config";

// Bounds on the text, checked before it is parsed: a real config.json is a few kilobytes and a
// few levels deep, and a hostile one must not exhaust memory or the stack.
constexpr int kMaxConfigBytes = 1 << 20;  // 1 MiB
constexpr int kMaxConfigDepth = 64;       // nested objects and arrays

struct [[nodiscard]] ConfigParse {
  Answer answer;     // refused: the setting "config", one line starting "config.json: "
  ModelShape shape;  // id kCustomModelId, ready for TrainingSetup::custom_model
};

// Reads the fields of the config's model_type. Without one, or for llama, mistral, mixtral, qwen2,
// gemma and gemma2 (Llama-style blocks): hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size and vocab_size (required); num_key_value_heads (default the heads), head_dim
// (default hidden / heads), tie_word_embeddings, attention_bias and mlp_bias (default false),
// num_local_experts or num_experts (default 1) and num_experts_per_tok (required with experts);
// "qwen2" means Q, K and V biases, "gemma2" four norms per layer, and "gemma" and "gemma2" tied
// embeddings unless the config says otherwise. GPT-style blocks (biased projections, a plain MLP,
// LayerNorms with biases): "gpt2" reads n_embd, n_layer, n_head, n_positions, vocab_size and
// n_inner (default 4 · n_embd), tied unless tie_word_embeddings is false; "gpt_neox" the Llama
// names and attention_bias (default true), untied by default; "opt" ffn_dim and
// max_position_embeddings (+ 2 rows), tied by default, refusing word_embed_proj_dim ≠ hidden_size
// and post-norm layers; "phi" one norm per layer and a biased head. Any other model_type, and an
// activation (hidden_act, hidden_activation, activation_function) that is not one of
// transformers' elementwise ones, is refused. The name is _name_or_path, else the first of
// architectures, else model_type, else "Custom model". Optional fields may be null. Any input is
// safe: each problem gives kInvalidInput and a message naming the field and what is allowed.
//
// Today's families: "phi3" (fused projections, counted as Llama's), "gemma3_text" (q/k norms of
// head_dim, four norms per layer, tied), "olmo2" (q/k norms over the whole projections),
// "smollm3" (tied by default), "granite", "cohere2" (one LayerNorm without a bias, attention and
// MLP side by side, tied), "glm4_moe", "gpt_oss", "llama4_text", "kimi_k2" (DeepSeek-V3's
// architecture), and the Qwen2-VL text towers. A multimodal config ("gemma3", "llama4", "mistral3",
// "qwen2_5_vl", "qwen2_vl") is read for its text tower, text_config, when `text_tower`; with a
// vision_config it is refused otherwise, naming the way to ask for the text tower alone.
ConfigParse parse_hf_config(std::string_view text, bool text_tower = false);

struct [[nodiscard]] ConfigText {
  Answer answer;     // refused as parse_hf_config refuses, naming the field
  std::string text;  // the text tower's own config.json, which parse_hf_config reads as itself
};

// A multimodal config's text tower as a config.json of its own: its text_config with a
// model_type, the defaults its class gives and a name ending "(text tower)". What the page keeps
// (and links carry) once the reader asks for the text tower alone.
ConfigText text_tower_config_text(std::string_view text);

}  // namespace trainmem
