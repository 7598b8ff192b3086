// The table of settings (settings.hpp), read and written: a setting's text into a setup and back,
// its value for the bindings, and the checks of a setup's values. The rows are written in
// rows_plate.cpp and rows_further.cpp (setting_rows.hpp says how); each module's table is one of
// table.cpp or table_plate.cpp.
#include "trainmem/settings.hpp"

#include <cmath>

#include "settings/setting_rows.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

using setting_rows::Access;
using setting_rows::entries;
using setting_rows::Entry;
using setting_rows::range_text;
namespace id = setting_id;

namespace {

const Entry* find_entry(std::string_view id) {
  for (const Entry& entry : entries()) {
    if (entry.setting.id == id) return &entry;
  }
  return nullptr;
}

std::string text_of(const Entry& entry, const TrainingSetup& setup) {
  const Access& access = entry.access;
  if (access.id != nullptr) return access.id(setup);
  const double value = access.number(setup);
  switch (entry.setting.kind) {
    case SettingKind::kSwitch:
      return value != 0 ? "on" : "off";
    case SettingKind::kDecimal:
      return shortest_decimal(value);
    case SettingKind::kWhole:
    case SettingKind::kChoice:
      break;
  }
  return shortest_decimal(value);
}

bool has_id(const std::vector<Choice>& choices, std::string_view id) {
  for (const Choice& choice : choices) {
    if (choice.id == id) return true;
  }
  return false;
}

bool number_allowed(const Setting& setting, double value) {
  const bool above_min = setting.min_exclusive ? value > setting.min : value >= setting.min;
  const bool below_max = setting.max_exclusive ? value < setting.max : value <= setting.max;
  return above_min && below_max;  // false for NaN
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> made;
    // Each default is TrainingSetup{}'s own value, so the two can never disagree.
    const TrainingSetup defaults;
    for (const Entry& entry : entries()) {
      made.push_back(entry.setting);
      made.back().default_text = text_of(entry, defaults);
    }
    return made;
  }();
  return table;
}

const Setting* find_setting(std::string_view id) {
  for (const Setting& setting : settings()) {
    if (setting.id == id) return &setting;
  }
  return nullptr;
}

std::string unknown_choice_message(const Setting& setting, std::string_view text) {
  return setting.name + " '" + std::string(text) + "' is not known; choose one of " +
         ids_joined(setting.choices) + ".";
}

MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences) {
  MicroBatchFromTokens result;
  const Setting& seq_len = *find_setting(id::kSequenceLength);
  if (!number_allowed(seq_len, sequence_length)) {
    result.answer = refusal(seq_len.id, seq_len.allowed);
    return result;
  }
  const int max_sequences =
      max_micro_batch_sequences >= 1 && max_micro_batch_sequences <= kMaxMicroBatchSequences
          ? max_micro_batch_sequences
          : kMaxMicroBatchSequences;
  const double max_tokens = static_cast<double>(sequence_length) * max_sequences;
  const bool whole_multiple = std::isfinite(tokens) && tokens >= sequence_length &&
                              tokens <= max_tokens &&
                              std::fmod(tokens, static_cast<double>(sequence_length)) == 0;
  if (!whole_multiple) {
    result.answer = refusal(id::kTokens, "Tokens per micro-batch must be a whole multiple of " +
                                             format_count(sequence_length) + " (one sequence), " +
                                             range_text(sequence_length, max_tokens) + ".");
    return result;
  }
  result.micro_batch_sequences = static_cast<int>(tokens / sequence_length);
  return result;
}

Answer apply_setting(TrainingSetup& setup, std::string_view id, std::string_view text,
                     int max_micro_batch_sequences) {
  const Entry* entry = find_entry(id);
  if (entry == nullptr) {
    return refusal(std::string(id), "'" + std::string(id) + "' is not a setting.");
  }
  const Setting& setting = entry->setting;
  const Access& access = entry->access;
  switch (setting.kind) {
    case SettingKind::kChoice: {
      const std::string chosen =
          access.read_as != nullptr ? access.read_as(text) : std::string(text);
      if (!has_id(setting.choices, chosen)) {
        return refusal(setting.id, access.read_as != nullptr
                                       ? setting.allowed
                                       : unknown_choice_message(setting, text));
      }
      access.set_id(setup, chosen);
      return {};
    }
    case SettingKind::kSwitch:
      if (text != "on" && text != "off") return refusal(setting.id, "use on or off.");
      access.set_number(setup, text == "on" ? 1 : 0);
      return {};
    case SettingKind::kDecimal: {
      const double value = parse_decimal(text);
      if (!number_allowed(setting, value)) return refusal(setting.id, setting.allowed);
      access.set_number(setup, value);
      return {};
    }
    case SettingKind::kWhole:
      break;
  }
  if (access.set_number == nullptr) {  // tokens: the micro-batch, checked against the sequence
    const MicroBatchFromTokens micro_batch = micro_batch_from_tokens(
        parse_decimal(text), setup.sequence_length, max_micro_batch_sequences);
    if (!micro_batch.answer.ok()) return micro_batch.answer;
    setup.micro_batch_sequences = micro_batch.micro_batch_sequences;
    return {};
  }
  const int value = parse_whole_number(text);
  if (!number_allowed(setting, value)) return refusal(setting.id, setting.allowed);
  access.set_number(setup, value);
  return {};
}

SettingChange change_setting(const TrainingSetup& setup, std::string_view id, std::string_view text,
                             int max_micro_batch_sequences) {
  SettingChange change{{}, setup};
  change.answer = apply_setting(change.setup, id, text, max_micro_batch_sequences);
  if (!change.answer.ok()) change.setup = setup;
  return change;
}

std::string setting_text(const TrainingSetup& setup, std::string_view id) {
  const Entry* entry = find_entry(id);
  return entry != nullptr ? text_of(*entry, setup) : std::string();
}

Answer check_choice(std::string_view setting_id, std::string_view id) {
  const Entry* entry = find_entry(setting_id);
  if (entry == nullptr || entry->setting.kind != SettingKind::kChoice) {
    return refusal(std::string(setting_id), "'" + std::string(setting_id) + "' is not a choice.");
  }
  const bool held = entry->access.holds != nullptr ? entry->access.holds(std::string(id))
                                                   : has_id(entry->setting.choices, id);
  return held ? Answer{} : refusal(entry->setting.id, unknown_choice_message(entry->setting, id));
}

double setting_number(const TrainingSetup& setup, std::size_t index) {
  const Access& access = entries().at(index).access;
  return access.number != nullptr ? access.number(setup) : 0;
}

bool set_setting_number(TrainingSetup& setup, std::size_t index, double value) {
  const Access& access = entries().at(index).access;
  if (access.set_number == nullptr || !std::isfinite(value)) return false;
  constexpr double kIntLimit = 2147483648.0;  // 2^31: an int holds less
  if (access.whole && !(std::fabs(value) < kIntLimit && std::trunc(value) == value)) return false;
  access.set_number(setup, value);
  return true;
}

bool set_setting_choice(TrainingSetup& setup, std::size_t index, const std::string& id) {
  const Access& access = entries().at(index).access;
  return access.set_id != nullptr && access.set_id(setup, id);
}

Answer check_setting_values(const TrainingSetup& setup) {
  for (const auto& [setting, access] : entries()) {
    if (access.always_valid) continue;
    if (setting.kind == SettingKind::kChoice) {
      Answer answer = check_choice(setting.id, access.id(setup));
      if (!answer.ok()) return answer;
    } else if (setting.kind != SettingKind::kSwitch && access.set_number != nullptr &&
               !number_allowed(setting, access.number(setup))) {
      return refusal(setting.id, setting.allowed);
    }
  }
  return {};
}

}  // namespace trainmem
