// A row of the table of settings, and how one is written (settings.hpp): the machinery the
// groups of rows (rows_plate.cpp, rows_further.cpp) are written with, and the table each module
// is made of (table.cpp: every group; table_plate.cpp: the plate's alone, for the first view's
// module). Not part of the public API.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trainmem/format.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/setup.hpp"

namespace trainmem::setting_rows {

namespace id = setting_id;

// How a setting reads and writes its field of a TrainingSetup: numbers (a switch is 1 or 0) or a
// choice's id.
struct Access {
  double (*number)(const TrainingSetup&) = nullptr;
  void (*set_number)(TrainingSetup&, double) = nullptr;
  std::string (*id)(const TrainingSetup&) = nullptr;
  bool (*set_id)(TrainingSetup&, const std::string&) = nullptr;  // false: not an id it holds
  // A choice whose field may also hold an id that no typed text selects (the custom model, which
  // a config.json gives): whether `id` may stand in a setup.
  bool (*holds)(const std::string& id) = nullptr;
  bool always_valid = false;  // an enum class field, which holds only its choices: nothing to check
  bool whole = false;         // an int field
  // A choice that also reads other text as one of its ids (dropout's probability); the text itself
  // where it does not.
  std::string (*read_as)(std::string_view text) = nullptr;
};

inline std::string range_text(double low, double high) {
  return "from " + format_count(low) + " to " + format_count(high);
}

// "0, 1, 2 or 3".
inline std::string each_of(int first, int last) {
  std::string text;
  for (int value = first; value <= last; ++value) {
    text += (value == first ? "" : value == last ? " or " : ", ") + std::to_string(value);
  }
  return text;
}

// The field a member pointer names, in a TrainingSetup or in its layout.
template <typename Class>
struct Holder;
template <>
struct Holder<TrainingSetup> {
  static TrainingSetup& of(TrainingSetup& setup) { return setup; }
  static const TrainingSetup& of(const TrainingSetup& setup) { return setup; }
};
template <>
struct Holder<ParallelLayout> {
  static ParallelLayout& of(TrainingSetup& setup) { return setup.layout; }
  static const ParallelLayout& of(const TrainingSetup& setup) { return setup.layout; }
};
template <typename Member>
struct MemberOf;
template <typename Class, typename Field>
struct MemberOf<Field Class::*> {
  using holder = Class;
  using field = Field;
};

// How the setting at `member` is read and written: a bool is a switch, an int a whole number, a
// double a decimal, an enum class a choice of its choices<>() and a string a choice held as its
// id (the model, the device).
template <auto member>
Access access_of() {
  using Class = typename MemberOf<decltype(member)>::holder;
  using Field = typename MemberOf<decltype(member)>::field;
  Access access;
  if constexpr (std::is_enum_v<Field>) {
    access.id = [](const TrainingSetup& setup) {
      return choice_id(Holder<Class>::of(setup).*member);
    };
    access.set_id = [](TrainingSetup& setup, const std::string& id) {
      return choice_from_id(id, Holder<Class>::of(setup).*member);
    };
    access.always_valid = true;
  } else if constexpr (std::is_same_v<Field, std::string>) {
    access.id = [](const TrainingSetup& setup) { return Holder<Class>::of(setup).*member; };
    access.set_id = [](TrainingSetup& setup, const std::string& id) {
      Holder<Class>::of(setup).*member = id;
      return true;
    };
  } else {
    access.number = [](const TrainingSetup& setup) {
      return static_cast<double>(Holder<Class>::of(setup).*member);
    };
    access.set_number = [](TrainingSetup& setup, double value) {
      Holder<Class>::of(setup).*member = static_cast<Field>(value);
    };
    access.whole = std::is_same_v<Field, int>;
  }
  return access;
}

template <typename Field>
constexpr SettingKind kind_of() {
  if constexpr (std::is_same_v<Field, bool>) return SettingKind::kSwitch;
  if constexpr (std::is_same_v<Field, int>) return SettingKind::kWhole;
  if constexpr (std::is_same_v<Field, double>) return SettingKind::kDecimal;
  return SettingKind::kChoice;
}

// One row of the table, written as a chain: row<&TrainingSetup::field>(id, name, help, api key),
// then what sets it apart.
struct Entry {
  Setting setting;
  Access access;

  // A whole number or decimal from `min` to `max`; `allowed` says so, or "{name} must be a whole
  // number from … to …".
  Entry& bounds(double min, double max, std::string allowed = "") {
    setting.min = min;
    setting.max = max;
    setting.allowed = allowed.empty()
                          ? setting.name + " must be a whole number " + range_text(min, max) + "."
                          : std::move(allowed);
    return *this;
  }
  // A choice among `choices`, listed in its help.
  Entry& among(std::vector<Choice> choices) {
    setting.choices = std::move(choices);
    setting.help += ": " + ids_joined(setting.choices);
    return *this;
  }
  // A parallel degree, from 1 to kMaxParallelDegree, that the fewest-devices search chooses.
  Entry& degree() { return bounds(1, kMaxParallelDegree).fit(); }
  Entry& fit() {
    setting.chosen_by_fit = true;
    return *this;
  }
  // Added to the JavaScript API after it was published: a setup without it gets the default.
  Entry& later() {
    setting.defaulted_in_api = true;
    return *this;
  }
  Entry& requires_value(const char* setting_id, std::string value, const char* reason) {
    return requires_values(setting_id, {std::move(value)}, reason);
  }
  Entry& requires_values(const char* setting_id, std::vector<std::string> values,
                         const char* reason) {
    setting.requires_setting = setting_id;
    setting.requires_values = std::move(values);
    setting.requires_reason = reason;
    return *this;
  }
  // A framework's own setting: the page enables it under those stacks alone, and a value but its
  // default under another is refused with `refusal`.
  Entry& only_under(std::initializer_list<Stack> stacks, const char* reason, const char* refusal) {
    setting.requires_setting = id::kStack;
    setting.requires_values.clear();
    for (Stack stack : stacks) setting.requires_values.push_back(choice_id(stack));
    setting.requires_reason = reason;
    setting.refused_elsewhere = refusal;
    return *this;
  }
  Entry& rule(bool (*holds)(const TrainingSetup&), const char* refusal) {
    setting.rules.push_back({holds, refusal});
    return *this;
  }
  Entry& page(const char* section, const char* label = "", const char* hint = "") {
    setting.section = section;
    setting.label = label;
    setting.hint = hint;
    return *this;
  }
  Entry& menu(std::vector<std::string> value_words) {
    setting.value_words = std::move(value_words);
    return *this;
  }
  template <typename Change>
  Entry& with(const Change& change) {
    change(setting, access);
    return *this;
  }
};

template <auto member>
Entry row(const char* id, const char* name, std::string help, const char* api_key) {
  Entry entry;
  entry.setting.id = id;
  entry.setting.name = name;
  entry.setting.kind = kind_of<typename MemberOf<decltype(member)>::field>();
  entry.setting.help = std::move(help);
  entry.setting.api_key = api_key;
  entry.access = access_of<member>();
  entry.setting.held_as_id =
      std::is_same_v<typename MemberOf<decltype(member)>::field, std::string>;
  return entry;
}

using Entries = std::vector<Entry>;

// The groups of rows, in the table's order (the URL's and the page's): the plate's own
// (rows_plate.cpp: the model and the batch, the logits and the loss) among the rest
// (rows_further.cpp, rows_recompute.cpp, rows_routing.cpp, rows_rollout.cpp).
void add_model_and_batch(Entries& entries);
void add_layout(Entries& entries);
void add_recipe(Entries& entries);
void add_logits_and_loss(Entries& entries);
void add_loss_chunks_and_device(Entries& entries);
void add_fine_tuning(Entries& entries);
void add_stack(Entries& entries);
void add_distributed_switches(Entries& entries);
void add_recompute_modules(Entries& entries);
void add_megatron_routing(Entries& entries);
void add_single_device_switches(Entries& entries);
void add_rollout(Entries& entries);

// The table this module carries (table.cpp or table_plate.cpp), built once.
const std::vector<Entry>& entries();

}  // namespace trainmem::setting_rows
