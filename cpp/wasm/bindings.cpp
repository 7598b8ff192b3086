// The embind layer: value objects, enums and functions over the core. No logic lives here;
// vectors cross as plain JS arrays, so JavaScript never holds a handle it must delete.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

namespace {

using emscripten::val;

template <typename T>
val to_array(const std::vector<T>& items) {
  val array = val::array();
  for (const T& item : items) array.call<void>("push", item);
  return array;
}

val preset_models_js() { return to_array(trainmem::preset_models()); }

val workshop_view_js(const trainmem::TrainingSetup& setup, int max_micro_batch_sequences) {
  const trainmem::WorkshopView view = trainmem::workshop_view(setup, max_micro_batch_sequences);
  val result = val::object();
  result.set("estimate", view.estimate);
  result.set("activationCurve", to_array(view.activation_curve));
  return result;
}

std::string format_bytes_js(double bytes, int decimals) {
  return trainmem::format_bytes(bytes, decimals);
}

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  using namespace emscripten;
  using namespace trainmem;

  enum_<Status>("Status").value("OK", Status::kOk).value("INVALID_INPUT", Status::kInvalidInput);

  value_object<ModelShape>("ModelShape")
      .field("id", &ModelShape::id)
      .field("name", &ModelShape::name)
      .field("source", &ModelShape::source)
      .field("numLayers", &ModelShape::num_layers)
      .field("hiddenSize", &ModelShape::hidden_size)
      .field("ffnHiddenSize", &ModelShape::ffn_hidden_size)
      .field("numAttentionHeads", &ModelShape::num_attention_heads)
      .field("numKeyValueHeads", &ModelShape::num_key_value_heads)
      .field("vocabSize", &ModelShape::vocab_size)
      .field("tiedEmbeddings", &ModelShape::tied_embeddings);

  value_object<TrainingSetup>("TrainingSetup")
      .field("modelId", &TrainingSetup::model_id)
      .field("sequenceLength", &TrainingSetup::sequence_length)
      .field("microBatchSequences", &TrainingSetup::micro_batch_sequences)
      .field("flashAttention", &TrainingSetup::flash_attention);

  value_object<MemoryBreakdown>("MemoryBreakdown")
      .field("weightsBytes", &MemoryBreakdown::weights_bytes)
      .field("gradientsBytes", &MemoryBreakdown::gradients_bytes)
      .field("masterWeightsBytes", &MemoryBreakdown::master_weights_bytes)
      .field("optimizerStatesBytes", &MemoryBreakdown::optimizer_states_bytes)
      .field("activationsBytes", &MemoryBreakdown::activations_bytes)
      .field("modelStatesBytes", &MemoryBreakdown::model_states_bytes)
      .field("totalBytes", &MemoryBreakdown::total_bytes);

  value_object<Device>("Device")
      .field("id", &Device::id)
      .field("name", &Device::name)
      .field("shortName", &Device::short_name)
      .field("capacityBytes", &Device::capacity_bytes);

  value_object<Estimate>("Estimate")
      .field("status", &Estimate::status)
      .field("message", &Estimate::message)
      .field("setup", &Estimate::setup)
      .field("modelName", &Estimate::model_name)
      .field("numParameters", &Estimate::num_parameters)
      .field("tokensPerMicroBatch", &Estimate::tokens_per_micro_batch)
      .field("bytes", &Estimate::bytes)
      .field("device", &Estimate::device)
      .field("devicesWorth", &Estimate::devices_worth);

  value_object<ActivationPoint>("ActivationPoint")
      .field("microBatchSequences", &ActivationPoint::micro_batch_sequences)
      .field("tokens", &ActivationPoint::tokens)
      .field("flashAttentionBytes", &ActivationPoint::flash_attention_bytes)
      .field("withoutFlashAttentionBytes", &ActivationPoint::without_flash_attention_bytes);

  value_object<MicroBatchFromTokens>("MicroBatchFromTokens")
      .field("status", &MicroBatchFromTokens::status)
      .field("message", &MicroBatchFromTokens::message)
      .field("microBatchSequences", &MicroBatchFromTokens::micro_batch_sequences);

  constant("plateSequenceLength", kPlateSequenceLength);
  constant("maxMicroBatchSequences", kMaxMicroBatchSequences);
  constant("modelStateBytesPerParameter", kModelStateBytesPerParameter);
  constant("weightBytesPerParameter", kBf16WeightBytesPerParameter);
  constant("gradientBytesPerParameter", kBf16GradientBytesPerParameter);
  constant("masterWeightBytesPerParameter", kFp32MasterWeightBytesPerParameter);
  constant("optimizerStateBytesPerParameter", kAdamMomentBytesPerParameter);

  function("presetModels", &preset_models_js);
  function("estimateMemory", &estimate_memory);
  function("workshopView", &workshop_view_js);
  function("microBatchFromTokens", &micro_batch_from_tokens);
  function("formatBytes", &format_bytes_js);
  function("formatParameters", &format_parameters);
  function("formatCount", &format_count);
}
