// How the YAML readers read a key (yaml_keys.hpp).
#include "launch/yaml_keys.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "model/config_text.hpp"
#include "trainmem/format.hpp"
#include "trainmem/hub.hpp"
#include "trainmem/settings.hpp"

namespace trainmem::yaml_keys {

using Json = nlohmann::json;

// A scalar as the front end writes it: the failsafe schema's string ("" for an empty value, "~"
// and "null" for YAML's null, which yaml-cpp writes as JSON's null).
std::optional<std::string> scalar_of(const Json& value) {
  if (value.is_null()) return std::nullopt;
  if (!value.is_string()) return std::string();
  const std::string text = value.get<std::string>();
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return std::nullopt;
  }
  return text;
}

// A value's names: a list's, or the one it is (the empty and the null left out).
std::vector<std::string> names_of(const Json& value) {
  std::vector<std::string> names;
  if (value.is_array()) {
    for (const Json& each : value) {
      if (const std::optional<std::string> name = scalar_of(each)) names.push_back(*name);
    }
  } else if (const std::optional<std::string> name = scalar_of(value)) {
    names.push_back(*name);
  }
  return names;
}

// A key left empty (axolotl's examples keep wandb_project: and the like) or null sets nothing: it
// reads as absent, and is not listed as not understood.
bool sets_nothing(const Json& value) {
  return value.is_null() || (value.is_string() && !scalar_of(value));
}

// Each value accepted is listed as the file writes it, "lora_r: 16" ("lora_target_modules: q_proj,
// v_proj"); a refusal quotes the text's first bytes, and refuses a list or a mapping where one
// value is read as such.
extern const KeyDialect kDialect;
const KeyDialect kDialect = {
    ListRead::kOnAccept,
    [](const std::string& name, const Json& value) {
      std::string shown;
      for (const std::string& each : names_of(value)) shown += (shown.empty() ? "" : ", ") + each;
      return name + ": " + shown;
    },
    [](const Json& value) {
      return "'" + scalar_of(value).value_or("").substr(0, kMaxQuotedValueBytes) + "'";
    },
    nullptr, true};

// The key's text, which the reader lists itself once it knows what it made of it. The front ends
// write every scalar as text; a JSON number or boolean reads as "".
const ValueType<std::string>& given_text() {
  static const ValueType<std::string> type{"a single value",
                                           [](const Json& value) -> std::optional<std::string> {
                                             if (value.is_object() || value.is_array())
                                               return std::nullopt;
                                             return scalar_of(value).value_or("");
                                           },
                                           &sets_nothing, false};
  return type;
}

const ValueType<bool>& text_bool() {
  static const ValueType<bool> type{
      "true or false",
      [](const Json& value) -> std::optional<bool> {
        std::string lower = scalar_of(value).value_or("");
        for (char& c : lower) {
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        static const std::set<std::string> yes = {"true", "yes", "on", "1", "y", "t"};
        static const std::set<std::string> no = {"false", "no", "off", "0", "n", "f"};
        if (yes.count(lower) > 0) return true;
        if (no.count(lower) > 0) return false;
        return std::nullopt;
      },
      &sets_nothing};
  return type;
}

ValueType<double> text_number(bool whole, double least, double most) {
  return {std::string(whole ? "a whole number" : "a number") + " from " + format_count(least) +
              " to " + format_count(most),
          [whole, least, most](const Json& value) -> std::optional<double> {
            const std::string text = scalar_of(value).value_or("");
            char* end = nullptr;
            const double parsed = std::strtod(text.c_str(), &end);
            const bool numeric = end != text.c_str() && *end == '\0' && std::isfinite(parsed) &&
                                 text.find_first_of("xXpP") == std::string::npos;
            if (!numeric || (whole && parsed != std::floor(parsed)) || parsed < least ||
                parsed > most) {
              return std::nullopt;
            }
            return parsed;
          },
          &sets_nothing};
}

// A list of names, or one name.
const ValueType<std::vector<std::string>>& name_list() {
  static const ValueType<std::vector<std::string>> type{
      "names", [](const Json& value) { return std::optional(names_of(value)); },
      [](const Json& value) { return names_of(value).empty(); }};
  return type;
}

std::optional<LoraTargets> lora_targets_of(const std::optional<std::vector<std::string>>& modules) {
  if (!modules) return std::nullopt;
  const std::set<std::string> given(modules->begin(), modules->end());
  const std::set<std::string> attention = {"q_proj", "k_proj", "v_proj", "o_proj"};
  const std::set<std::string> all_linear = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                            "gate_proj", "up_proj", "down_proj"};
  if (given == all_linear || given == std::set<std::string>{"all-linear"}) {
    return LoraTargets::kAllLinear;
  }
  if (given == attention) return LoraTargets::kAttention;
  return std::nullopt;
}

void read_hub_model(KeyReader& reader, const std::string& key, const std::string& id,
                    TrainingSetup& setup) {
  const HubMatch match = preset_for_hub_id(id);
  if (match.preset != nullptr) {
    setup.model_id = match.preset->id;
    reader.list_read(key);
    reader.launch().notes.push_back(
        "The model, " + match.preset->name + ", from " + key +
        (match.by_name ? " by its name (the preset's config.json is " + match.repository + "'s)"
                       : "") +
        ".");
    return;
  }
  if (setup.model_id != kCustomModelId) {
    reader.fault(key, key + " '" + id.substr(0, 80) +
                          "' is not one of the presets: open its config.json "
                          "(--config, or Any model on the page) and read the file "
                          "again.");
    return;
  }
  reader.launch().leaves.push_back(setting_id::kModel);
  reader.launch().notes.push_back(key + " " + id.substr(0, 80) +
                                  " is not one of the presets: the config.json opened (" +
                                  setup.custom_model.name + ") is taken as its.");
}

bool use_reentrant(KeyReader& reader, bool without_table, std::optional<bool> without_key) {
  std::optional<KeyReader> kwargs = reader.section("gradient_checkpointing_kwargs");
  if (!kwargs) return without_table;
  const std::optional<bool> given = kwargs->get("use_reentrant", text_bool());
  kwargs->list_unread({"preserve_rng_state", "determinism_check", "debug"}, &sets_nothing);
  if (!given && !without_key) {
    reader.fault("gradient_checkpointing_kwargs",
                 "gradient_checkpointing_kwargs without use_reentrant runs reentrant under "
                 "transformers 5 (torch's default for None) and not under transformers 4 (TRL "
                 "sets False); set use_reentrant.");
  }
  return given.value_or(without_key.value_or(false));
}

}  // namespace trainmem::yaml_keys
