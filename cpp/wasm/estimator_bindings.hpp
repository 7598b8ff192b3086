// The estimator's bindings, registered by both modules over their own estimate: the first view's
// (bindings.cpp: the plate's view alone, plate_estimate) and the full one (json_bindings.cpp:
// every setup, estimate_memory). The page asks either the same way (web/src/estimator.js). No
// logic lives here; vectors cross as plain JS arrays.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>

#include "estimate_types.hpp"
#include "setup_types.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"

namespace trainmem::estimator_js {

using emscripten::val;

inline val preset_models() { return to_array(trainmem::preset_models()); }
inline val settings() { return to_array(trainmem::settings()); }
inline val choices_of_setting(const Setting& setting) { return to_array(setting.choices); }
inline val requires_values(const Setting& setting) { return to_array(setting.requires_values); }
inline val value_words(const Setting& setting) { return to_array(setting.value_words); }
inline void ignore_list(Setting&, val) {}  // settings only travel out

// Everything the workshop draws, from one call of the module's own view: the estimate, the
// activations' curve, every setting's text by its id (for the controls and the link: no call per
// setting) and what counting the logits as a run does would add.
template <WorkshopView (*view_of)(const TrainingSetup&, int)>
val workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  const WorkshopView view = view_of(setup, max_micro_batch_sequences);
  val result = val::object();
  result.set("estimate", view.estimate);
  result.set("activationCurve", to_array(view.activation_curve));
  val texts = val::object();
  for (const Setting& setting : trainmem::settings()) {
    texts.set(setting.id, setting_text(setup, setting.id));
  }
  result.set("settingTexts", texts);
  val left_out = val::object();
  left_out.set("bytes", view.logits_left_out_bytes);
  left_out.set("loss", choice_id(view.logits_left_out_loss));
  result.set("logitsLeftOut", left_out);
  result.set("microBatchStep", view.micro_batch_step);
  return result;
}

inline std::string format_layout(const Estimate& estimate) {
  return trainmem::format_layout(estimate.setup);
}
inline std::string format_bytes(double bytes, int decimals) {
  return trainmem::format_bytes(bytes, decimals);
}
inline int parse_whole_number(const std::string& text) {
  return trainmem::parse_whole_number(text);
}
inline double parse_decimal(const std::string& text) { return trainmem::parse_decimal(text); }
inline TrainingSetup default_setup() { return TrainingSetup{}; }
inline SettingChange change_setting(const TrainingSetup& setup, const std::string& id,
                                    const std::string& text, int max_micro_batch_sequences) {
  return trainmem::change_setting(setup, id, text, max_micro_batch_sequences);
}
inline std::string setting_text(const TrainingSetup& setup, const std::string& id) {
  return trainmem::setting_text(setup, id);
}
inline Answer check_choice(const std::string& setting_id, const std::string& id) {
  return trainmem::check_choice(setting_id, id);
}

// The estimator's types and functions, `estimate` and `view_of` the module's own. After
// register_setup_types() and register_estimate_types().
template <Estimate (*estimate)(const TrainingSetup&),
          WorkshopView (*view_of)(const TrainingSetup&, int)>
void register_estimator() {
  using namespace emscripten;

  value_object<Choice>("Choice")
      .field("id", &Choice::id)
      .field("name", &Choice::name)
      .field("source", &Choice::source);

  enum_<SettingKind>("SettingKind")
      .value("WHOLE", SettingKind::kWhole)
      .value("DECIMAL", SettingKind::kDecimal)
      .value("SWITCH", SettingKind::kSwitch)
      .value("CHOICE", SettingKind::kChoice);

  value_object<Setting>("Setting")
      .field("id", &Setting::id)
      .field("name", &Setting::name)
      .field("kind", &Setting::kind)
      .field("min", &Setting::min)
      .field("max", &Setting::max)
      .field("choices", &choices_of_setting, &ignore_list)
      .field("heldAsId", &Setting::held_as_id)
      .field("allowed", &Setting::allowed)
      .field("defaultText", &Setting::default_text)
      .field("help", &Setting::help)
      .field("apiKey", &Setting::api_key)
      .field("requiresSetting", &Setting::requires_setting)
      .field("requiresValues", &requires_values, &ignore_list)
      .field("requiresReason", &Setting::requires_reason)
      .field("excludes", &Setting::excludes)
      .field("keeps", &Setting::keeps)
      .field("inUrl", &Setting::in_url)
      .field("plate", &Setting::plate)
      .field("chosenByFit", &Setting::chosen_by_fit)
      .field("defaultedInApi", &Setting::defaulted_in_api)
      .field("section", &Setting::section)
      .field("label", &Setting::label)
      .field("hint", &Setting::hint)
      .field("valueWords", &value_words, &ignore_list);

  value_object<SettingChange>("SettingChange")
      .field("answer", &SettingChange::answer)
      .field("setup", &SettingChange::setup);

  value_object<ActivationPoint>("ActivationPoint")
      .field("microBatchSequences", &ActivationPoint::micro_batch_sequences)
      .field("tokens", &ActivationPoint::tokens)
      .field("flashAttentionBytes", &ActivationPoint::flash_attention_bytes)
      .field("withoutFlashAttentionBytes", &ActivationPoint::without_flash_attention_bytes)
      .field("withoutFlashAttentionCounted", &ActivationPoint::without_flash_attention_counted)
      .field("roomBytes", &ActivationPoint::room_bytes);

  value_object<MicroBatchFromTokens>("MicroBatchFromTokens")
      .field("answer", &MicroBatchFromTokens::answer)
      .field("microBatchSequences", &MicroBatchFromTokens::micro_batch_sequences);

  constant("plateSequenceLength", kPlateSequenceLength);
  constant("maxMicroBatchSequences", kMaxMicroBatchSequences);
  constant("modelStateBytesPerParameter", kModelStateBytesPerParameter);
  constant("devicesPerNode", kDevicesPerNode);
  constant("minTokensPerContextShard", kMinTokensPerContextShard);
  constant("customModelId", std::string(kCustomModelId));
  constant("modelSettingId", std::string(setting_id::kModel));
  constant("configInputId", std::string(kConfigInputId));

  function("defaultSetup", &default_setup);
  function("presetModels", &preset_models);
  function("settings", &settings);
  function("terms", &terms_js);
  function("changeSetting", &change_setting);
  function("settingText", &setting_text);
  function("checkChoice", &check_choice);
  function("estimateMemory", estimate);
  function("workshopView", &workshop_view<view_of>);
  function("withLogitsAsRun", &trainmem::with_logits_as_run);
  function("compareEstimates", &compare_estimates);
  function("microBatchFromTokens", &micro_batch_from_tokens);
  function("formatBytes", &format_bytes);
  function("formatBytesShort", &format_bytes_short);
  function("formatChange", &format_change);
  function("formatParameters", &format_parameters);
  function("formatCount", &format_count);
  function("formatLayout", &format_layout);
  function("formatShare", &format_share);
  function("formatWorth", &format_worth);
  function("formatPercent", &format_percent);
  function("parseWholeNumber", &parse_whole_number);
  function("parseDecimal", &parse_decimal);
}

}  // namespace trainmem::estimator_js
