// The launch readers' one key reader (key_reader.hpp).
#include "launch/key_reader.hpp"

#include <utility>

#include "trainmem/format.hpp"

namespace trainmem {

FileKeys keys_of(const nlohmann::json& object) {
  FileKeys keys;
  for (const auto& [key, value] : object.items()) keys.push_back({key, value});
  return keys;
}

const ValueType<bool>& json_boolean() {
  static const ValueType<bool> type{"true or false",
                                    [](const nlohmann::json& value) -> std::optional<bool> {
                                      if (!value.is_boolean()) return std::nullopt;
                                      return value.get<bool>();
                                    }};
  return type;
}

const ValueType<long long>& json_integer() {
  static const ValueType<long long> type{
      "a whole number", [](const nlohmann::json& value) -> std::optional<long long> {
        if (!value.is_number_integer()) return std::nullopt;
        return value.get<long long>();
      }};
  return type;
}

const ValueType<std::string>& json_string() {
  static const ValueType<std::string> type{
      "a string", [](const nlohmann::json& value) -> std::optional<std::string> {
        if (!value.is_string()) return std::nullopt;
        return value.get<std::string>();
      }};
  return type;
}

KeyReader::KeyReader(LaunchConfig& launch, const KeyDialect& dialect, FileKeys keys,
                     std::string prefix)
    : launch_(&launch), dialect_(&dialect), prefix_(std::move(prefix)) {
  // A key given twice keeps its first place and takes its last value, as argparse reads a flag.
  for (FileKey& each : keys) {
    const auto [at, added] = index_.emplace(each.key, keys_.size());
    if (added) {
      keys_.push_back(std::move(each));
    } else {
      keys_[at->second].value = std::move(each.value);
    }
  }
  taken_.assign(keys_.size(), false);
}

const nlohmann::json* KeyReader::find(const std::string& key) const {
  const auto found = index_.find(key);
  return found == index_.end() ? nullptr : &keys_[found->second].value;
}

const nlohmann::json* KeyReader::take(const std::string& key) {
  const auto found = index_.find(key);
  if (found == index_.end()) return nullptr;
  if (!taken_[found->second]) {
    taken_[found->second] = true;
    if (dialect_->list_read == ListRead::kOnTake) list_read(key);
  }
  return &keys_[found->second].value;
}

bool KeyReader::taken(const std::string& key) const {
  const auto found = index_.find(key);
  return found != index_.end() && taken_[found->second];
}

std::optional<KeyReader> KeyReader::section(const std::string& key) {
  const nlohmann::json* value = take(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (!value->is_object()) {
    refuse_value(key, "an object, {…}", *value);
    return std::nullopt;
  }
  return KeyReader(*launch_, *dialect_, keys_of(*value), name(key) + ".");
}

void KeyReader::fault(const std::string& setting, const std::string& message) {
  if (launch_->answer.ok()) launch_->answer = refusal(setting, message);
}

bool KeyReader::within(const std::string& setting, long long value, long long least,
                       long long most) {
  if (value >= least && value <= most) return true;
  fault(setting, setting + " must be " + format_count(static_cast<double>(least)) + " to " +
                     format_count(static_cast<double>(most)) + "; it is " + std::to_string(value) +
                     ".");
  return false;
}

void KeyReader::list_read(const std::string& key) {
  const nlohmann::json* value = find(key);
  if (value != nullptr) launch_->read.push_back(dialect_->listed(name(key), *value));
}

void KeyReader::list_not_understood(const std::string& key) {
  launch_->not_understood.push_back(name(key));
}

void KeyReader::list_unread(const std::set<std::string>& set_aside,
                            bool (*sets_nothing)(const nlohmann::json&)) {
  for (std::size_t index = 0; index < keys_.size(); ++index) {
    const FileKey& each = keys_[index];
    if (taken_[index]) {
      if (dialect_->list_read == ListRead::kInFileOrder) list_read(each.key);
    } else if (set_aside.count(each.key) == 0 &&
               (sets_nothing == nullptr || !sets_nothing(each.value))) {
      list_not_understood(each.key);
    }
  }
}

bool KeyReader::admitted(const std::string& key, const nlohmann::json& value) {
  if (dialect_->refused == nullptr) return true;
  const std::optional<std::string> message = dialect_->refused(name(key), value);
  if (message) fault(name(key), *message);
  return !message;
}

void KeyReader::refuse_value(const std::string& key, const std::string& expected,
                             const nlohmann::json& value) {
  const std::string named = name(key);
  if (dialect_->single_values && (value.is_array() || value.is_object())) {
    fault(named, named + " must be a single value.");
    return;
  }
  const std::string quote =
      dialect_->quoted != nullptr ? "; it is " + dialect_->quoted(value) : std::string();
  fault(named, named + " must be " + expected + quote + ".");
}

void KeyReader::accepted(const std::string& key) {
  if (dialect_->list_read == ListRead::kOnAccept) list_read(key);
}

}  // namespace trainmem
