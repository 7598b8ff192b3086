// The embind layer: value objects, enums and functions over the core. No logic lives here;
// vectors cross as plain JS arrays, so JavaScript never holds a handle it must delete.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "setup_types.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"

namespace {

using emscripten::val;

template <typename T>
val to_array(const std::vector<T>& items) {
  val array = val::array();
  for (const T& item : items) array.call<void>("push", item);
  return array;
}

val preset_models_js() { return to_array(trainmem::preset_models()); }
val settings_js() { return to_array(trainmem::settings()); }
val choices_of_setting_js(const trainmem::Setting& setting) { return to_array(setting.choices); }
void ignore_choices(trainmem::Setting&, val) {}  // settings only travel out
val stack_terms_js(const trainmem::Estimate& estimate) { return to_array(estimate.stack_terms); }
void ignore_stack_terms(trainmem::Estimate&, val) {}  // estimates only travel out
std::string most_loaded_stage_js(const trainmem::Estimate& estimate) {
  return trainmem::choice_id(estimate.most_loaded_stage);
}
void set_most_loaded_stage_js(trainmem::Estimate& estimate, std::string id) {
  trainmem::choice_from_id(id, estimate.most_loaded_stage);
}
val explain_estimate_js(const trainmem::TrainingSetup& setup) {
  return to_array(trainmem::explain_estimate(setup));
}

val workshop_view_js(const trainmem::TrainingSetup& setup, int max_micro_batch_sequences) {
  const trainmem::WorkshopView view = trainmem::workshop_view(setup, max_micro_batch_sequences);
  val result = val::object();
  result.set("estimate", view.estimate);
  result.set("activationCurve", to_array(view.activation_curve));
  return result;
}

val find_fewest_devices_js(const trainmem::TrainingSetup& setup, int max_layouts) {
  const trainmem::FitSearch search = trainmem::find_fewest_devices(setup, max_layouts);
  val result = val::object();
  result.set("answer", search.answer);
  result.set("layouts", to_array(search.layouts));
  result.set("costs", to_array(search.costs));
  result.set("fewestDevices", search.fewest_devices);
  result.set("hasBestSmaller", search.has_best_smaller);
  result.set("bestSmaller", search.best_smaller);
  result.set("whyNotFewer", search.why_not_fewer);
  return result;
}

val memory_timeline_js(const trainmem::TrainingSetup& setup) {
  const std::vector<trainmem::TimelinePoint> points = trainmem::memory_timeline(setup);
  val result = val::object();
  result.set("points", to_array(points));
  result.set("peakIndex", static_cast<double>(trainmem::timeline_peak(points)));
  return result;
}

val rank_savings_js(const trainmem::TrainingSetup& setup) {
  const trainmem::SavingsList list = trainmem::rank_savings(setup);
  val result = val::object();
  result.set("answer", list.answer);
  result.set("baseline", list.baseline);
  result.set("savings", to_array(list.savings));
  return result;
}

val fit_map_js(const trainmem::TrainingSetup& setup) {
  const trainmem::FitMap map = trainmem::fit_map(setup);
  val result = val::object();
  result.set("answer", map.answer);
  result.set("sequenceLengths", to_array(map.sequence_lengths));
  result.set("microBatchSequences", to_array(map.micro_batch_sequences));
  result.set("cells", to_array(map.cells));
  return result;
}

val saved_tensors_js(const trainmem::TrainingSetup& setup) {
  const trainmem::SavedTensorList list = trainmem::saved_tensors_of(setup);
  val result = val::object();
  result.set("inUse", list.in_use);
  result.set("caption", list.caption);
  result.set("tensors", to_array(list.tensors));
  result.set("bytesPerToken", list.bytes_per_token);
  return result;
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

  value_object<Choice>("Choice")
      .field("id", &Choice::id)
      .field("name", &Choice::name)
      .field("source", &Choice::source);

  value_object<MemoryBreakdown>("MemoryBreakdown")
      .field("weightsBytes", &MemoryBreakdown::weights_bytes)
      .field("gradientsBytes", &MemoryBreakdown::gradients_bytes)
      .field("masterWeightsBytes", &MemoryBreakdown::master_weights_bytes)
      .field("optimizerStatesBytes", &MemoryBreakdown::optimizer_states_bytes)
      .field("activationsBytes", &MemoryBreakdown::activations_bytes)
      .field("logitsBytes", &MemoryBreakdown::logits_bytes)
      .field("dequantizationBytes", &MemoryBreakdown::dequantization_bytes)
      .field("fp8WeightsBytes", &MemoryBreakdown::fp8_weights_bytes)
      .field("frameworkBytes", &MemoryBreakdown::framework_bytes)
      .field("runtimeBytes", &MemoryBreakdown::runtime_bytes)
      .field("allocatorCacheBytes", &MemoryBreakdown::allocator_cache_bytes)
      .field("modelStatesBytes", &MemoryBreakdown::model_states_bytes)
      .field("totalBytes", &MemoryBreakdown::total_bytes);

  value_object<HostMemory>("HostMemory")
      .field("weightsBytes", &HostMemory::weights_bytes)
      .field("gradientsBytes", &HostMemory::gradients_bytes)
      .field("masterWeightsBytes", &HostMemory::master_weights_bytes)
      .field("optimizerStatesBytes", &HostMemory::optimizer_states_bytes)
      .field("activationsBytes", &HostMemory::activations_bytes)
      .field("fp32GradientsBytes", &HostMemory::fp32_gradients_bytes)
      .field("totalBytes", &HostMemory::total_bytes);

  value_object<BytesPerParameter>("BytesPerParameter")
      .field("weights", &BytesPerParameter::weights)
      .field("gradients", &BytesPerParameter::gradients)
      .field("masterWeights", &BytesPerParameter::master_weights)
      .field("optimizerStates", &BytesPerParameter::optimizer_states)
      .field("total", &BytesPerParameter::total);

  value_object<Device>("Device")
      .field("id", &Device::id)
      .field("name", &Device::name)
      .field("shortName", &Device::short_name)
      .field("capacityBytes", &Device::capacity_bytes);

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
      .field("choices", &choices_of_setting_js, &ignore_choices)
      .field("allowed", &Setting::allowed)
      .field("defaultText", &Setting::default_text)
      .field("help", &Setting::help)
      .field("apiKey", &Setting::api_key)
      .field("requiresSetting", &Setting::requires_setting)
      .field("requiresValue", &Setting::requires_value)
      .field("requiresReason", &Setting::requires_reason)
      .field("excludes", &Setting::excludes)
      .field("keeps", &Setting::keeps)
      .field("inUrl", &Setting::in_url)
      .field("chosenByFit", &Setting::chosen_by_fit)
      .field("defaultedInApi", &Setting::defaulted_in_api);

  value_object<SettingChange>("SettingChange")
      .field("answer", &SettingChange::answer)
      .field("setup", &SettingChange::setup);

  value_object<Estimate>("Estimate")
      .field("answer", &Estimate::answer)
      .field("setup", &Estimate::setup)
      .field("modelName", &Estimate::model_name)
      .field("numParameters", &Estimate::num_parameters)
      .field("parametersOnDevice", &Estimate::parameters_on_device)
      .field("trainableParameters", &Estimate::trainable_parameters)
      .field("baseLinearBytesPerParameter", &Estimate::base_linear_bytes_per_parameter)
      .field("mostLoadedStage", &most_loaded_stage_js, &set_most_loaded_stage_js)
      .field("bytesPerParameter", &Estimate::bytes_per_parameter)
      .field("tokensPerMicroBatch", &Estimate::tokens_per_micro_batch)
      .field("bytes", &Estimate::bytes)
      .field("host", &Estimate::host)
      .field("device", &Estimate::device)
      .field("numDevices", &Estimate::num_devices)
      .field("devicesWorth", &Estimate::devices_worth)
      .field("usableBytes", &Estimate::usable_bytes)
      .field("fits", &Estimate::fits)
      .field("activationRoomBytes", &Estimate::activation_room_bytes)
      .field("peakAllocatedBytes", &Estimate::peak_allocated_bytes)
      .field("peakReservedBytes", &Estimate::peak_reserved_bytes)
      .field("stackTerms", &stack_terms_js, &ignore_stack_terms);

  value_object<StackTerm>("StackTerm")
      .field("id", &StackTerm::id)
      .field("label", &StackTerm::label)
      .field("bytes", &StackTerm::bytes)
      .field("source", &StackTerm::source)
      .field("inAllocator", &StackTerm::in_allocator);

  value_object<LayoutCost>("LayoutCost")
      .field("score", &LayoutCost::score)
      .field("reason", &LayoutCost::reason);

  value_object<ActivationPoint>("ActivationPoint")
      .field("microBatchSequences", &ActivationPoint::micro_batch_sequences)
      .field("tokens", &ActivationPoint::tokens)
      .field("flashAttentionBytes", &ActivationPoint::flash_attention_bytes)
      .field("withoutFlashAttentionBytes", &ActivationPoint::without_flash_attention_bytes);

  value_object<TermArithmetic>("TermArithmetic")
      .field("term", &TermArithmetic::term)
      .field("label", &TermArithmetic::label)
      .field("formula", &TermArithmetic::formula)
      .field("source", &TermArithmetic::source);

  value_object<Saving>("Saving")
      .field("change", &Saving::change)
      .field("label", &Saving::label)
      .field("estimate", &Saving::estimate)
      .field("bytesSaved", &Saving::bytes_saved)
      .field("devicesAdded", &Saving::devices_added);

  value_object<TimelinePoint>("TimelinePoint")
      .field("phase", &TimelinePoint::phase)
      .field("layer", &TimelinePoint::layer)
      .field("bytes", &TimelinePoint::bytes)
      .field("reservedBytes", &TimelinePoint::reserved_bytes)
      .field("statesBytes", &TimelinePoint::states_bytes)
      .field("activationsBytes", &TimelinePoint::activations_bytes)
      .field("logitsBytes", &TimelinePoint::logits_bytes)
      .field("frameworkBytes", &TimelinePoint::framework_bytes)
      .field("runtimeBytes", &TimelinePoint::runtime_bytes);

  value_object<FitCell>("FitCell")
      .field("sequenceLength", &FitCell::sequence_length)
      .field("microBatchSequences", &FitCell::micro_batch_sequences)
      .field("valid", &FitCell::valid)
      .field("totalBytes", &FitCell::total_bytes)
      .field("devicesWorth", &FitCell::devices_worth)
      .field("fits", &FitCell::fits);

  value_object<SavedTensor>("SavedTensor")
      .field("id", &SavedTensor::id)
      .field("name", &SavedTensor::name)
      .field("savedBy", &SavedTensor::saved_by)
      .field("elements", &SavedTensor::elements)
      .field("elementsPerToken", &SavedTensor::elements_per_token)
      .field("dtypeBytes", &SavedTensor::dtype_bytes)
      .field("split", &SavedTensor::split)
      .field("bytesPerToken", &SavedTensor::bytes_per_token);

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
  function("changeSetting", &change_setting_js);
  function("settingText", &setting_text_js);
  function("checkChoice", &check_choice_js);
  function("savedTensors", &saved_tensors_js);
  function("estimateMemory", &estimate_memory);
  function("workshopView", &workshop_view_js);
  function("explainEstimate", &explain_estimate_js);
  function("findFewestDevices", &find_fewest_devices_js);
  function("rankSavings", &rank_savings_js);
  function("memoryTimeline", &memory_timeline_js);
  function("fitMap", &fit_map_js);
  function("compareEstimates", &compare_estimates);
  function("microBatchFromTokens", &micro_batch_from_tokens);
  function("formatBytes", &format_bytes_js);
  function("formatBytesShort", &format_bytes_short);
  function("formatParameters", &format_parameters);
  function("formatCount", &format_count);
  function("formatLayout", &format_layout);
  function("formatShare", &format_share);
  function("formatWorth", &format_worth);
  function("formatPercent", &format_percent);
  function("parseWholeNumber", &parse_whole_number_js);
  function("parseDecimal", &parse_decimal_js);
}
