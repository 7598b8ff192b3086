#include "trainmem/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

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

// Where a character of JSON text stands: read one at a time, `outside` says whether the last
// one stood outside every string (a string's quotes are inside it).
class StringTracker {
 public:
  bool outside(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    in_string_ = c == '"';
    return !in_string_;
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;
};

// Whether objects and arrays nest at most `max_depth` deep, counting brackets outside strings.
bool nesting_within(std::string_view text, int max_depth) {
  int depth = 0;
  StringTracker strings;
  for (const char c : text) {
    if (!strings.outside(c)) continue;
    if (c == '{' || c == '[') {
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

// ---- Python's constants ------------------------------------------------------------------------

// Python's json module, and so transformers' PretrainedConfig, reads the bare constants NaN,
// Infinity and -Infinity (json.JSONDecoder's parse_constant); JSON and nlohmann::json do not, and
// published config.json files hold them (Nemotron-H's time_step_limit: [0.0, Infinity]). Outside
// strings each is written as a marker string before parsing and read back as its number after.
// A marker starts with a NUL, which no config's own string holds.
struct PythonConstant {
  std::string_view token;
  std::string_view marker;  // as JSON text, quotes included
  double value;
};
const PythonConstant kPythonConstants[] = {
    {"-Infinity", "\"\\u0000-Infinity\"", -std::numeric_limits<double>::infinity()},
    {"Infinity", "\"\\u0000Infinity\"", std::numeric_limits<double>::infinity()},
    {"NaN", "\"\\u0000NaN\"", std::numeric_limits<double>::quiet_NaN()},
};

// One marker written in place of a constant: where it stands in the marked text, and where the
// constant stood in the original.
struct MarkedConstant {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t original = 0;
  std::size_t original_end = 0;
};

bool name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `text` with each bare constant outside strings written as its marker; `marked` says where.
std::string mark_python_constants(std::string_view text, std::vector<MarkedConstant>& marked) {
  std::string out;
  StringTracker strings;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const PythonConstant* found = nullptr;
    if (strings.outside(c) && (i == 0 || !name_character(text[i - 1]))) {
      for (const PythonConstant& constant : kPythonConstants) {
        const std::size_t end = i + constant.token.size();
        if (text.substr(i, constant.token.size()) == constant.token &&
            (end == text.size() || !name_character(text[end]))) {
          found = &constant;
          break;
        }
      }
    }
    if (found == nullptr) {
      out += c;
      continue;
    }
    marked.push_back({out.size(), out.size() + found->marker.size(), i, i + found->token.size()});
    out += found->marker;
    i += found->token.size() - 1;
  }
  return out;
}

// The original text's index for an index into the marked text: inside a marker, its constant's
// first character.
std::size_t original_index(std::size_t index, const std::vector<MarkedConstant>& marked) {
  std::size_t shift = 0;  // how much longer the marked text is up to here
  for (const MarkedConstant& mark : marked) {
    if (index < mark.begin) break;
    if (index < mark.end) return mark.original;
    shift = mark.end - mark.original_end;
  }
  return index - shift;
}

// Each marker in `value` read back as its constant.
void unmark_python_constants(Json& value) {
  if (value.is_object() || value.is_array()) {
    for (Json& element : value) unmark_python_constants(element);
    return;
  }
  if (!value.is_string()) return;
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty() || text[0] != '\0') return;
  for (const PythonConstant& constant : kPythonConstants) {
    if (std::string_view(text).substr(1) == constant.token) {
      value = constant.value;
      return;
    }
  }
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

// `text` refused by the parser, as `marked` (mark_python_constants) was given to it.
ConfigParse refuse_unparsed(std::string_view text, std::string_view marked_text,
                            const std::vector<MarkedConstant>& marked, std::string_view prefix) {
  ErrorLocator locator;
  Json::sax_parse(marked_text, &locator);
  // The parser reports how many characters it read, the offending one included; past the end
  // means the text stopped short.
  const std::size_t marked_index = locator.position > marked_text.size() ? marked_text.size()
                                   : locator.position > 0                ? locator.position - 1
                                                                         : 0;
  const std::size_t index = original_index(marked_index, marked);
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
  std::vector<MarkedConstant> marked;
  const std::string marked_text = mark_python_constants(text, marked);
  config = Json::parse(marked_text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return refuse_unparsed(text, marked_text, marked, prefix);
  if (!marked.empty()) unmark_python_constants(config);
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
