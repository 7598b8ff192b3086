// Text for config.json's messages and names: values quoted as ASCII JSON, and names cleaned of
// what could break a line or reverse its direction.
#include "model/config_text.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "trainmem/models.hpp"

namespace trainmem {

namespace {

// Code points a name must not carry: C0 and C1 controls, DEL, line and paragraph separators,
// and the bidirectional controls that could make a name read as something else.
bool unwanted_in_name(std::uint32_t code_point) {
  return code_point < 0x20 || (code_point >= 0x7F && code_point <= 0x9F) || code_point == 0x200E ||
         code_point == 0x200F || (code_point >= 0x2028 && code_point <= 0x202E) ||
         (code_point >= 0x2066 && code_point <= 0x2069) || code_point == 0xFEFF;
}

}  // namespace

// The code point that starts at text[i], and its length in bytes. `text` is valid UTF-8: the
// parser has checked every string it holds.
std::size_t decode_utf8(const std::string& text, std::size_t i, std::uint32_t& code_point) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const std::size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  code_point = length == 1   ? lead
               : length == 2 ? lead & 0x1Fu
               : length == 3 ? lead & 0x0Fu
                             : lead & 0x07u;
  for (std::size_t k = 1; k < length && i + k < text.size(); ++k) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
  }
  return length;
}

// A string as JSON writes it, in ASCII: quotes, backslashes, controls and every non-ASCII
// character escaped, so that no refused value can break a message's line or direction.
std::string json_string_text(const std::string& text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && out.size() <= kMaxQuotedValueBytes;) {
    std::uint32_t code_point = 0;
    i += decode_utf8(text, i, code_point);
    char escape[16];
    if (code_point == '"' || code_point == '\\') {
      out += '\\';
      out += static_cast<char>(code_point);
    } else if (code_point >= 0x20 && code_point < 0x7F) {
      out += static_cast<char>(code_point);
    } else if (code_point <= 0xFFFF) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(code_point));
      out += escape;
    } else {  // a surrogate pair
      const std::uint32_t offset = code_point - 0x10000;
      std::snprintf(escape, sizeof escape, "\\u%04x\\u%04x",
                    static_cast<unsigned>(0xD800 + (offset >> 10)),
                    static_cast<unsigned>(0xDC00 + (offset & 0x3FF)));
      out += escape;
    }
  }
  return out + "\"";
}

// The shortest text that reads back as the same double.
std::string json_number_text(double number) {
  // Python's json writes and reads these (config.cpp, mark_python_constants).
  if (std::isnan(number)) return "NaN";
  if (std::isinf(number)) return number > 0 ? "Infinity" : "-Infinity";
  char text[32] = "";
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, number);
    if (std::strtod(text, nullptr) == number) break;
  }
  return text;
}

// A refused value as the message shows it: JSON text, ASCII only, cut short.
std::string describe(const nlohmann::json& value) {
  std::string text;
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_string()) text = json_string_text(value.get<std::string>());
  if (value.is_boolean()) text = value.get<bool>() ? "true" : "false";
  if (value.is_null()) text = "null";
  if (value.is_number_unsigned()) {
    text = std::to_string(value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    text = std::to_string(value.get<std::int64_t>());
  } else if (value.is_number_float()) {
    text = json_number_text(value.get<double>());
  }
  if (text.size() > kMaxQuotedValueBytes) text = text.substr(0, kMaxQuotedValueBytes) + "…";
  return text;
}

// `text` is valid UTF-8 (the parser checked it): drops unwanted code points, trims spaces, and
// keeps at most kMaxModelNameBytes bytes without cutting a character.
std::string clean_name(const std::string& text) {
  std::string name;
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t code_point = 0;
    const std::size_t length = decode_utf8(text, i, code_point);
    if (!unwanted_in_name(code_point)) {
      if (name.size() + length > kMaxModelNameBytes) break;
      name.append(text, i, length);
    }
    i += length;
  }
  const std::size_t first = name.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  const std::size_t last = name.find_last_not_of(' ');
  return name.substr(first, last - first + 1);
}

}  // namespace trainmem
