// A Hugging Face config.json, read into a model shape. The text comes from whoever calls (the
// CLI reads the file, the page the user's file); this only parses, and never throws or aborts.
#pragma once

#include <string>
#include <string_view>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

// Bounds on the text, checked before it is parsed: a real config.json is a few kilobytes and a
// few levels deep, and a hostile one must not exhaust memory or the stack.
constexpr int kMaxConfigBytes = 1 << 20;  // 1 MiB
constexpr int kMaxConfigDepth = 64;       // nested objects and arrays

struct ConfigParse {
  Answer answer;     // refused: the setting "config", one line starting "config.json: "
  ModelShape shape;  // id kCustomModelId, ready for TrainingSetup::custom_model
};

// Reads hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size
// (required); num_key_value_heads (default the heads), head_dim (default hidden / heads),
// tie_word_embeddings, attention_bias and mlp_bias (default false), num_local_experts or
// num_experts (default 1) and num_experts_per_tok (required with experts); model_type "qwen2"
// means Q, K and V biases, "gemma2" four norms per layer, and "gemma" and "gemma2" tied
// embeddings unless the config says otherwise. The name is _name_or_path, else the first of
// architectures, else model_type, else "Custom model". Optional fields may be null. Any input is
// safe: each problem gives kInvalidInput and a message naming the field and what is allowed.
ConfigParse parse_hf_config(std::string_view text);

}  // namespace trainmem
