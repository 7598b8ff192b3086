// Inside the config.json reader: one field's value read and checked, shared by config.cpp (the
// text and the fields every config has) and config_blocks.cpp (each architecture's fields). Not
// part of the public API.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "trainmem/models.hpp"

namespace trainmem {

using Json = nlohmann::json;

// A whole-number field and the values it may hold.
struct WholeField {
  const char* key;
  int low;
  int high;
};

// "'hidden_size'"
std::string quoted(const char* key);

// "a whole number from 1 to 1,048,576"
std::string allowed(const WholeField& field);

// The field's value, or nullptr when it is absent or null.
const Json* present(const Json& config, const char* key);

// Each returns the problem in one sentence naming the field, or "" with `out` set.
// A field every config must have; null is refused like any other wrong value.
std::string read_required(const Json& config, const WholeField& field, int& out);
// An optional field: absent or null leaves `out` as it is.
std::string read_optional(const Json& config, const WholeField& field, int& out);
// An optional true/false field: absent or null leaves `out` as it is.
std::string read_boolean(const Json& config, const char* key, bool& out);

// The whole-number field of any architecture with this key (for a number too large for JSON's
// 64-bit numbers, refused before the text parses), or nullptr.
const WholeField* whole_field_named(std::string_view key);

// Whether the config reader for `model_type` reads the field `key` (today's mixtures of experts
// and latent attention: moe_intermediate_size, shared experts, q_lora_rank, kv_lora_rank).
bool model_type_reads(const std::string& model_type, std::string_view key);

// Reads the shape's numbers and flags for the config's model_type ("" when it has none: the Llama
// family's fields); returns the first problem, or "".
std::string read_block_shape(const Json& config, const std::string& model_type, ModelShape& shape);

}  // namespace trainmem
