// The one key reader under every launch config's reader (launch_readers.hpp). Each reader turns
// its file into keys, a name and a JSON value each, in the order in which it lists them, and reads
// them here: a typed get (the reader's default stands where the key is absent), the keys set aside
// as having no bearing on memory, the keys not understood listed by name, the first refusal kept
// (the key at fault and what it must be; the reader reads on, refusing no more), and each key read
// listed in `read`. The readers differ in their keys, defaults, rules and words, and in how their
// kind of file writes a value (a KeyDialect and the ValueTypes they read), not in this machinery.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainmem/launch.hpp"

namespace trainmem {

// One key of a file: as it is written under its table ("training.seq_len", "--num-layers",
// "stage"), and its value as JSON (a command line's flag: its text, "" for a switch).
struct FileKey {
  std::string key;
  nlohmann::json value;
};
using FileKeys = std::vector<FileKey>;

// A JSON object's keys, in its order (nlohmann::json's: by name).
FileKeys keys_of(const nlohmann::json& object);

// When a key read joins the launch's `read` list.
enum class ListRead {
  kOnTake,       // on its first look-up, whatever its value (torchtitan's TOML)
  kOnAccept,     // each time a get accepts its value, or the reader lists it (DeepSpeed, axolotl)
  kInFileOrder,  // once the file is read, each key looked up, in the file's order (Megatron-LM)
};

// How one kind of file lists a key read and quotes a value refused.
struct KeyDialect {
  ListRead list_read;
  // A key with its value as `read` lists it: "training.seq_len = 8192", "--num-layers 32".
  std::string (*listed)(const std::string& name, const nlohmann::json& value);
  // A refused value as its refusal quotes it after "; it is ": nullptr where refusals do not.
  std::string (*quoted)(const nlohmann::json& value);
  // The refusal of a value whatever type is asked of it (DeepSpeed's "auto"), or nothing; nullptr
  // where there is none.
  std::optional<std::string> (*refused)(const std::string& name, const nlohmann::json& value);
  // Whether a list or a table refused where a type is asked is refused as not "a single value"
  // rather than as not the type (axolotl's, every value of which is text).
  bool single_values;
};

// A null value is a key given no value: its reader's default stands (DeepSpeed's and axolotl's
// pydantic models read None so; TOML and a command line write no null).
inline bool is_null_value(const nlohmann::json& value) { return value.is_null(); }

// A type a key's value is read as: what a refusal says it must be ("a whole number"), how the value
// reads as it (nothing: refused), and which values read as the key absent.
template <typename T>
struct ValueType {
  std::string expected;
  std::function<std::optional<T>(const nlohmann::json&)> read;
  bool (*absent)(const nlohmann::json&) = &is_null_value;  // nullptr: none
  bool listed = true;  // under ListRead::kOnAccept; false: the reader lists the key itself
};

// The types a file writes as themselves (TOML, JSON): a boolean, an integer and a string.
const ValueType<bool>& json_boolean();
const ValueType<long long>& json_integer();
const ValueType<std::string>& json_string();

class KeyReader {
 public:
  // The keys of a file (or of one of its tables, its names then under `prefix`:
  // "zero_optimization.") read into `launch`: its answer (the first refusal), `read` and
  // `not_understood`.
  KeyReader(LaunchConfig& launch, const KeyDialect& dialect, FileKeys keys,
            std::string prefix = "");

  LaunchConfig& launch() const { return *launch_; }
  bool ok() const { return launch_->answer.ok(); }
  const FileKeys& keys() const { return keys_; }
  // A key as messages name it: with its table's prefix.
  std::string name(const std::string& key) const { return prefix_ + key; }

  // The key's value, without reading it; nullptr where the key is absent.
  const nlohmann::json* find(const std::string& key) const;
  // The key's value, read (so not listed as not understood); nullptr where the key is absent.
  const nlohmann::json* take(const std::string& key);
  bool has(const std::string& key) { return take(key) != nullptr; }
  bool taken(const std::string& key) const;

  // The key's value as `type`: nothing where it is absent, or refused (the refusal kept).
  template <typename T>
  std::optional<T> get(const std::string& key, const ValueType<T>& type) {
    const nlohmann::json* value = take(key);
    if (value == nullptr || (type.absent != nullptr && type.absent(*value))) return std::nullopt;
    if (!admitted(key, *value)) return std::nullopt;
    std::optional<T> read = type.read(*value);
    if (!read) {
      refuse_value(key, type.expected, *value);
      return std::nullopt;
    }
    if (type.listed) accepted(key);
    return read;
  }
  // The key's table, as keys of their own under its name: nothing where it is absent (or null) or
  // refused (not an object).
  std::optional<KeyReader> section(const std::string& key);

  // Refuses `setting` with `message` unless a refusal is already kept.
  void fault(const std::string& setting, const std::string& message);
  // Whether `value` lies within [least, most]; refuses `setting` where it does not.
  bool within(const std::string& setting, long long value, long long least, long long most);

  // Lists the key, with its value, as read.
  void list_read(const std::string& key);
  // Lists the key as not understood.
  void list_not_understood(const std::string& key);
  // Lists as not understood each key neither taken nor set aside, nor given a value that
  // `sets_nothing` (where given), in the keys' order; under ListRead::kInFileOrder each key taken
  // is listed as read.
  void list_unread(const std::set<std::string>& set_aside,
                   bool (*sets_nothing)(const nlohmann::json&) = nullptr);

 private:
  bool admitted(const std::string& key, const nlohmann::json& value);
  void refuse_value(const std::string& key, const std::string& expected,
                    const nlohmann::json& value);
  void accepted(const std::string& key);

  LaunchConfig* launch_;
  const KeyDialect* dialect_;
  FileKeys keys_;
  std::string prefix_;
  std::map<std::string, std::size_t> index_;
  std::vector<bool> taken_;
};

}  // namespace trainmem
