#include "model/config_fields.hpp"

#include <cmath>
#include <cstdint>

#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

std::string quoted(const char* key) { return "'" + std::string(key) + "'"; }

std::string allowed(const WholeField& field) {
  return "a whole number from " + format_count(field.low) + " to " + format_count(field.high);
}

const Json* present(const Json& config, const char* key) {
  const auto found = config.find(key);
  if (found == config.end() || found->is_null()) return nullptr;
  return &*found;
}

namespace {

bool whole_number_in(const Json& value, const WholeField& field, int& out) {
  if (value.is_number_unsigned()) {
    const std::uint64_t number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(field.high)) return false;
    out = static_cast<int>(number);
    return out >= field.low;
  }
  if (value.is_number_integer()) {
    const std::int64_t number = value.get<std::int64_t>();
    if (number < field.low || number > field.high) return false;
    out = static_cast<int>(number);
    return true;
  }
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (!(std::isfinite(number) && std::trunc(number) == number && number >= field.low &&
          number <= field.high)) {
      return false;
    }
    out = static_cast<int>(number);
    return true;
  }
  return false;
}

std::string read_whole(const Json& value, const WholeField& field, int& out) {
  if (whole_number_in(value, field, out)) return {};
  return quoted(field.key) + " must be " + allowed(field) + "; it is " + describe(value) + ".";
}

}  // namespace

std::string read_required(const Json& config, const WholeField& field, int& out) {
  const auto found = config.find(field.key);
  if (found == config.end()) {
    return quoted(field.key) + " is missing; it must be " + allowed(field) + ".";
  }
  return read_whole(*found, field, out);
}

std::string read_optional(const Json& config, const WholeField& field, int& out) {
  const Json* value = present(config, field.key);
  return value == nullptr ? std::string() : read_whole(*value, field, out);
}

std::string read_boolean(const Json& config, const char* key, bool& out) {
  const Json* value = present(config, key);
  if (value == nullptr) return {};
  if (!value->is_boolean()) {
    return quoted(key) + " must be true or false; it is " + describe(*value) + ".";
  }
  out = value->get<bool>();
  return {};
}

std::string read_positive_decimal(const Json& config, const char* key, double high, double& out) {
  const Json* value = present(config, key);
  if (value == nullptr) return {};
  if (!value->is_number() || !(value->get<double>() > 0) || value->get<double>() > high) {
    return quoted(key) + " must be a number above 0 and at most " + format_count(high) +
           ", or null; it is " + describe(*value) + ".";
  }
  out = value->get<double>();
  return {};
}

std::string read_required_or_null(const Json& config, const WholeField& field, int& out) {
  const auto found = config.find(field.key);
  if (found != config.end() && found->is_null()) {
    out = 0;
    return {};
  }
  return read_required(config, field, out);
}

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

}  // namespace trainmem
