// An estimate's value types, which both WebAssembly modules pass out: trainmem.js's estimates, and
// the on-demand module's (trainmem-json.js) exploration views, whose answers hold estimates.
// Registered once per module, from here, after register_setup_types().
#pragma once

#include <emscripten/bind.h>

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

inline std::string most_loaded_stage_js(const Estimate& estimate) {
  return choice_id(estimate.most_loaded_stage);
}
inline void set_most_loaded_stage_js(Estimate& estimate, std::string id) {
  choice_from_id(id, estimate.most_loaded_stage);
}

// A vector as a JavaScript array of its items' bound values (answers only travel out).
template <typename T>
emscripten::val to_array(const std::vector<T>& items) {
  emscripten::val array = emscripten::val::array();
  for (const T& item : items) array.call<void>("push", item);
  return array;
}

inline emscripten::val stack_terms_js(const Estimate& estimate) {
  return to_array(estimate.stack_terms);
}
inline void ignore_stack_terms(Estimate&, emscripten::val) {}

inline void register_estimate_types() {
  using namespace emscripten;

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
}

}  // namespace trainmem
