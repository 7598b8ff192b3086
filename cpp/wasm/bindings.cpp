// The embind layer: value objects, enums and functions over the core. No logic lives here;
// vectors cross as plain JS arrays, so JavaScript never holds a handle it must delete.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "estimate_types.hpp"
#include "setup_types.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"

namespace {

using emscripten::val;

using trainmem::to_array;

val preset_models_js() { return to_array(trainmem::preset_models()); }
val settings_js() { return to_array(trainmem::settings()); }
val choices_of_setting_js(const trainmem::Setting& setting) { return to_array(setting.choices); }
val requires_values_js(const trainmem::Setting& setting) {
  return to_array(setting.requires_values);
}
val value_words_js(const trainmem::Setting& setting) { return to_array(setting.value_words); }
void ignore_list(trainmem::Setting&, val) {}  // settings only travel out
val workshop_view_js(const trainmem::TrainingSetup& setup, int max_micro_batch_sequences) {
  const trainmem::WorkshopView view = trainmem::workshop_view(setup, max_micro_batch_sequences);
  val result = val::object();
  result.set("estimate", view.estimate);
  result.set("activationCurve", to_array(view.activation_curve));
  // Every setting's text by its id, for the controls and the link: no call per setting.
  val texts = val::object();
  for (const trainmem::Setting& setting : trainmem::settings()) {
    texts.set(setting.id, trainmem::setting_text(setup, setting.id));
  }
  result.set("settingTexts", texts);
  val left_out = val::object();
  left_out.set("bytes", view.logits_left_out_bytes);
  left_out.set("loss", trainmem::choice_id(view.logits_left_out_loss));
  result.set("logitsLeftOut", left_out);
  return result;
}

std::string format_layout_js(const trainmem::Estimate& estimate) {
  return trainmem::format_layout(estimate.setup);
}

std::string format_bytes_js(double bytes, int decimals) {
  return trainmem::format_bytes(bytes, decimals);
}

int parse_whole_number_js(const std::string& text) { return trainmem::parse_whole_number(text); }
double parse_decimal_js(const std::string& text) { return trainmem::parse_decimal(text); }

trainmem::TrainingSetup default_setup() { return trainmem::TrainingSetup{}; }

trainmem::SettingChange change_setting_js(const trainmem::TrainingSetup& setup,
                                          const std::string& id, const std::string& text,
                                          int max_micro_batch_sequences) {
  return trainmem::change_setting(setup, id, text, max_micro_batch_sequences);
}
std::string setting_text_js(const trainmem::TrainingSetup& setup, const std::string& id) {
  return trainmem::setting_text(setup, id);
}
trainmem::Answer check_choice_js(const std::string& setting_id, const std::string& id) {
  return trainmem::check_choice(setting_id, id);
}

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  using namespace emscripten;
  using namespace trainmem;

  register_setup_types();
  register_estimate_types();

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
      .field("choices", &choices_of_setting_js, &ignore_list)
      .field("heldAsId", &Setting::held_as_id)
      .field("allowed", &Setting::allowed)
      .field("defaultText", &Setting::default_text)
      .field("help", &Setting::help)
      .field("apiKey", &Setting::api_key)
      .field("requiresSetting", &Setting::requires_setting)
      .field("requiresValues", &requires_values_js, &ignore_list)
      .field("requiresReason", &Setting::requires_reason)
      .field("excludes", &Setting::excludes)
      .field("keeps", &Setting::keeps)
      .field("inUrl", &Setting::in_url)
      .field("chosenByFit", &Setting::chosen_by_fit)
      .field("defaultedInApi", &Setting::defaulted_in_api)
      .field("section", &Setting::section)
      .field("label", &Setting::label)
      .field("hint", &Setting::hint)
      .field("valueWords", &value_words_js, &ignore_list);

  value_object<SettingChange>("SettingChange")
      .field("answer", &SettingChange::answer)
      .field("setup", &SettingChange::setup);

  value_object<ActivationPoint>("ActivationPoint")
      .field("microBatchSequences", &ActivationPoint::micro_batch_sequences)
      .field("tokens", &ActivationPoint::tokens)
      .field("flashAttentionBytes", &ActivationPoint::flash_attention_bytes)
      .field("withoutFlashAttentionBytes", &ActivationPoint::without_flash_attention_bytes)
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
  function("presetModels", &preset_models_js);
  function("settings", &settings_js);
  function("terms", &terms_js);
  function("changeSetting", &change_setting_js);
  function("settingText", &setting_text_js);
  function("checkChoice", &check_choice_js);
  function("estimateMemory", &estimate_memory);
  function("workshopView", &workshop_view_js);
  function("withLogitsAsRun", &trainmem::with_logits_as_run);
  function("compareEstimates", &compare_estimates);
  function("microBatchFromTokens", &micro_batch_from_tokens);
  function("formatBytes", &format_bytes_js);
  function("formatBytesShort", &format_bytes_short);
  function("formatParameters", &format_parameters);
  function("formatCount", &format_count);
  function("formatLayout", &format_layout_js);
  function("formatShare", &format_share);
  function("formatWorth", &format_worth);
  function("formatPercent", &format_percent);
  function("parseWholeNumber", &parse_whole_number_js);
  function("parseDecimal", &parse_decimal_js);
}
