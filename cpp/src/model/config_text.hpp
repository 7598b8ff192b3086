// Inside the config.json reader: how its messages quote values and how it cleans names. Not part
// of the public API.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainmem {

constexpr std::size_t kMaxQuotedValueBytes = 40;  // how much of a refused value a message quotes

// The code point that starts at text[i], and its length in bytes; `text` is valid UTF-8.
std::size_t decode_utf8(const std::string& text, std::size_t i, std::uint32_t& code_point);

// A string as JSON writes it, in ASCII, cut short: no refused value can break a message's line or
// direction.
std::string json_string_text(const std::string& text);

// The shortest text that reads back as the same double.
std::string json_number_text(double number);

// A refused value as the message shows it: JSON text, ASCII only, cut short.
std::string describe(const nlohmann::json& value);

struct ConfigParse;

// `text` parsed into a top-level JSON object, as config.json's is (at most 1 MiB, no NUL byte,
// nested at most kMaxConfigDepth, valid UTF-8, no '__proto__' key), or the refusal, its message
// starting with `prefix` ("config.json: ") and naming where the parse failed. Other JSON files
// the core reads (DeepSpeed's config) are read through it too.
ConfigParse parse_json_object(std::string_view text, nlohmann::json& config,
                              std::string_view prefix);

// A name without controls or bidirectional marks, trimmed, at most kMaxModelNameBytes bytes.
std::string clean_name(const std::string& text);

}  // namespace trainmem
