#include "trainmem/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "model/config_fields.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

// Built with JSON_NOEXCEPTION under Emscripten, where exceptions are off: nothing here may reach a
// throwing path of nlohmann::json. The text is parsed with allow_exceptions = false, every value's
// type is checked before it is read, objects are searched with find() (never at() or a const
// operator[] on a missing key), and nothing is dumped: messages write values themselves.

namespace trainmem {

namespace {

constexpr const char* kMessagePrefix = "config.json: ";
constexpr const char* kDefaultModelName = "Custom model";
constexpr const char* kConfigSource = "config.json";

ConfigParse refuse(const std::string& message, std::string_view prefix = kMessagePrefix) {
  ConfigParse result;
  result.answer = refusal(kConfigInputId, std::string(prefix) + message);
  return result;
}

// ---- Before parsing ----------------------------------------------------------------------------

// Whether objects and arrays nest at most `max_depth` deep, counting brackets outside strings.
bool nesting_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool only_whitespace(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// ---- Where a parse failed ----------------------------------------------------------------------

// A SAX handler that reads nothing and remembers where, and in which top-level field, the parser
// gave up. Run only on text the parser has already refused.
struct ErrorLocator {
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  int depth = 0;
  std::string top_level_key;
  int error_depth = 0;
  std::size_t position = 0;
  std::string token;
  int error_id = 0;
  bool ill_formed_utf8 = false;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(number_integer_t) { return true; }
  bool number_unsigned(number_unsigned_t) { return true; }
  bool number_float(number_float_t, const string_t&) { return true; }
  bool string(string_t&) { return true; }
  bool binary(binary_t&) { return true; }
  bool start_object(std::size_t) {
    ++depth;
    return true;
  }
  bool key(string_t& name) {
    if (depth == 1) top_level_key = name;
    return true;
  }
  bool end_object() {
    --depth;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth;
    return true;
  }
  bool end_array() {
    --depth;
    return true;
  }
  bool parse_error(std::size_t byte, const std::string& last_token,
                   const nlohmann::detail::exception& error) {
    error_depth = depth;
    position = byte;
    token = last_token;
    error_id = error.id;
    ill_formed_utf8 = std::string_view(error.what()).find("UTF-8") != std::string_view::npos;
    return false;
  }
};

constexpr int kNumberOverflowErrorId = 406;  // nlohmann::json's out_of_range.406

// "line 3, column 12" for a 0-based byte index (text.size() for the end of the text).
std::string line_and_column(std::string_view text, std::size_t index) {
  const std::string_view before = text.substr(0, std::min(index, text.size()));
  std::size_t line = 1;
  for (const char c : before) line += c == '\n' ? 1 : 0;
  const std::size_t newline = before.rfind('\n');
  const std::size_t column =
      newline == std::string_view::npos ? before.size() + 1 : before.size() - newline;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

ConfigParse refuse_unparsed(std::string_view text, std::string_view prefix) {
  ErrorLocator locator;
  Json::sax_parse(text, &locator);
  // The parser reports how many characters it read, the offending one included; past the end
  // means the text stopped short.
  const std::size_t index = locator.position > text.size() ? text.size()
                            : locator.position > 0         ? locator.position - 1
                                                           : 0;
  const std::string where = line_and_column(text, index);
  if (locator.error_id == kNumberOverflowErrorId) {
    // Point at the number's first character, not its last.
    const std::size_t start =
        index + 1 >= locator.token.size() ? index + 1 - locator.token.size() : 0;
    const std::string number_at = line_and_column(text, start);
    if (locator.error_depth == 1 && prefix == kMessagePrefix) {
      if (const WholeField* field = whole_field_named(locator.top_level_key)) {
        return refuse(quoted(field->key) + " must be " + allowed(*field) + "; it is " +
                          locator.token.substr(0, kMaxQuotedValueBytes) + ".",
                      prefix);
      }
    }
    return refuse("the number at " + number_at + " is too large for JSON's 64-bit numbers.",
                  prefix);
  }
  if (locator.ill_formed_utf8)
    return refuse("the text is not valid UTF-8 (" + where + ").", prefix);
  return refuse("the text is not valid JSON (" + where + ").", prefix);
}

// ---- After parsing -----------------------------------------------------------------------------

bool has_proto_key(const Json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "__proto__" || has_proto_key(it.value())) return true;
    }
  } else if (value.is_array()) {
    for (const Json& element : value) {
      if (has_proto_key(element)) return true;
    }
  }
  return false;
}

std::string name_of(const Json& config, const std::string& model_type) {
  const Json* path = present(config, "_name_or_path");
  if (path != nullptr && path->is_string()) {
    const std::string name = clean_name(path->get<std::string>());
    if (!name.empty()) return name;
  }
  // The architecture ("LlamaForCausalLM") says more than the model type ("llama").
  const Json* architectures = present(config, "architectures");
  if (architectures != nullptr && architectures->is_array() && !architectures->empty() &&
      (*architectures)[0].is_string()) {
    const std::string name = clean_name((*architectures)[0].get<std::string>());
    if (!name.empty()) return name;
  }
  const std::string type_name = clean_name(model_type);
  return type_name.empty() ? kDefaultModelName : type_name;
}

// A clean name and a suffix within kMaxModelNameBytes, the name cut at a character's start.
std::string with_suffix(std::string name, const std::string& suffix) {
  const std::size_t room = kMaxModelNameBytes - suffix.size();
  if (name.size() > room) {
    std::size_t cut = room;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);
  }
  return name + suffix;
}

// Reads the shape from a parsed top-level object; returns the first problem, or "".
std::string read_shape(const Json& config, bool text_tower, ModelShape& shape) {
  std::string model_type;
  if (const Json* type = present(config, "model_type")) {
    if (!type->is_string()) {
      return "'model_type' must be a string, such as \"llama\"; it is " + describe(*type) + ".";
    }
    model_type = type->get<std::string>();
  }
  if (!multimodal_model_type(model_type) && config.find("hidden_size") == config.end() &&
      config.contains("text_config")) {
    return "'hidden_size' is missing; this looks like a multimodal config, whose text model's "
           "fields sit under 'text_config': give trainmem a text model's config.json.";
  }
  if (text_tower && !multimodal_model_type(model_type)) {
    Json unused;
    return text_tower_config(config, model_type, unused);  // names the multimodal types
  }
  const std::string problem = read_block_shape(config, model_type, text_tower, shape);
  if (!problem.empty()) return problem;

  shape.id = kCustomModelId;
  shape.name = name_of(config, model_type);
  if (text_tower) shape.name = with_suffix(shape.name, " (text tower)");
  shape.source = kConfigSource;
  return model_shape_problem(shape);
}

std::string model_type_of(const Json& config) {
  const Json* type = present(config, "model_type");
  return type != nullptr && type->is_string() ? type->get<std::string>() : std::string();
}

}  // namespace

ConfigParse parse_json_object(std::string_view text, Json& config, std::string_view prefix) {
  if (text.size() > static_cast<std::size_t>(kMaxConfigBytes)) {
    return refuse("the text is " + format_count(static_cast<double>(text.size())) +
                      " bytes; at most " + format_count(kMaxConfigBytes) + " (1 MiB) are allowed.",
                  prefix);
  }
  if (only_whitespace(text)) return refuse("the text is empty; it must be a JSON object.", prefix);
  // nlohmann::json reads a NUL byte as the end of the text; JSON allows none anywhere.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return refuse("the text holds a NUL byte (" + line_and_column(text, nul) +
                      "), which JSON does not allow.",
                  prefix);
  }
  if (!nesting_within(text, kMaxConfigDepth)) {
    return refuse("objects and arrays nest more than " + std::to_string(kMaxConfigDepth) +
                      " deep; a config.json needs a few levels.",
                  prefix);
  }
  config = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return refuse_unparsed(text, prefix);
  if (!config.is_object()) {
    return refuse("the top level must be a JSON object, {…}; it is " + describe(config) + ".",
                  prefix);
  }
  if (has_proto_key(config)) return refuse("a '__proto__' key is not allowed.", prefix);
  return {};
}

ConfigParse parse_hf_config(std::string_view text, bool text_tower) {
  Json config;
  ConfigParse result = parse_json_object(text, config, kMessagePrefix);
  if (result.answer.status != Status::kOk) return result;
  const std::string problem = read_shape(config, text_tower, result.shape);
  if (!problem.empty()) return refuse(problem);
  return result;
}

ConfigText text_tower_config_text(std::string_view text) {
  Json config;
  ConfigText result;
  result.answer = parse_json_object(text, config, kMessagePrefix).answer;
  if (result.answer.status != Status::kOk) return result;
  Json tower;
  const std::string problem = text_tower_config(config, model_type_of(config), tower);
  if (!problem.empty()) {
    result.answer = refuse(problem).answer;
    return result;
  }
  // Every string in `tower` came from a parse that accepted only valid UTF-8, so dump's strict
  // handler has nothing to refuse (it cannot throw here, as exceptions are off).
  result.text = tower.dump();
  // The text tower must read as itself.
  if (parse_hf_config(result.text).answer.status != Status::kOk) result.text.clear();
  return result;
}

}  // namespace trainmem
