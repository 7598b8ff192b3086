// An estimate's value types, which both WebAssembly modules pass out: trainmem.js's estimates, and
// the full module's (trainmem-full.js) exploration views, whose answers hold estimates.
// Registered once per module, from here, after register_setup_types().
#pragma once

#include <emscripten/bind.h>

#include <string>
#include <vector>

#include "setup_types.hpp"  // first: the setup crosses as setup_types.hpp says
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

inline std::string most_loaded_stage_js(const Estimate& estimate) {
  return choice_id(estimate.most_loaded_stage);
}
inline void set_most_loaded_stage_js(Estimate& estimate, std::string id) {
  choice_from_id(id, estimate.most_loaded_stage);
}

inline std::string stage_role_js(const StageFigures& stage) { return choice_id(stage.role); }
inline void set_stage_role_js(StageFigures& stage, std::string id) {
  choice_from_id(id, stage.role);
}

// A vector as a JavaScript array of its items' bound values (answers only travel out).
template <typename T>
emscripten::val to_array(const std::vector<T>& items) {
  emscripten::val array = emscripten::val::array();
  for (const T& item : items) array.call<void>("push", item);
  return array;
}

// A term's key in the JavaScript API: its id and "Bytes" ("masterWeightsBytes").
inline std::string api_key(const TermRow& row) { return std::string(row.id) + "Bytes"; }

// A breakdown as a plain object of the terms held on the device (or the host), by their API keys,
// then the model states (on the device) and the total: the table decides every key.
inline emscripten::val breakdown_js(const Breakdown& bytes, bool on_host) {
  emscripten::val object = emscripten::val::object();
  for (const TermRow& row : kTerms) {
    if (on_host ? row.on_host : row.on_device) object.set(api_key(row), bytes[row.term]);
  }
  if (!on_host) object.set("modelStatesBytes", bytes.model_states());
  object.set("totalBytes", bytes.total());
  return object;
}
// Back from JavaScript (an estimate handed in again, as compare's pinned one): each term's key.
inline Breakdown breakdown_from_js(const emscripten::val& object) {
  Breakdown bytes;
  if (object.isUndefined() || object.isNull()) return bytes;
  for (const TermRow& row : kTerms) {
    const emscripten::val value = object[api_key(row)];
    if (value.isNumber()) bytes[row.term] = value.as<double>();
  }
  return bytes;
}
inline emscripten::val device_bytes_js(const Estimate& estimate) {
  return breakdown_js(estimate.bytes, false);
}
inline void set_device_bytes_js(Estimate& estimate, emscripten::val object) {
  estimate.bytes = breakdown_from_js(object);
}
inline emscripten::val host_bytes_js(const Estimate& estimate) {
  return breakdown_js(estimate.host, true);
}
inline void set_host_bytes_js(Estimate& estimate, emscripten::val object) {
  estimate.host = breakdown_from_js(object);
}
inline emscripten::val held_js(const TimelinePoint& point) {
  return breakdown_js(point.held, false);
}
inline void set_held_js(TimelinePoint& point, emscripten::val object) {
  point.held = breakdown_from_js(object);
}

inline emscripten::val stack_terms_js(const Estimate& estimate) {
  return to_array(estimate.stack_terms);
}
inline void ignore_stack_terms(Estimate&, emscripten::val) {}
inline emscripten::val notes_js(const Estimate& estimate) { return to_array(estimate.notes); }
inline void ignore_notes(Estimate&, emscripten::val) {}

// The table of terms (terms.hpp), for the page: {id, apiKey, label, phrase, part, onDevice,
// onHost, listedWhenHeld, countedBy}, in order; `part` is "modelState", "activations", "logits",
// "alongside", "inPasses", "stack" or "host".
inline const char* term_part_js(TermPart part) {
  switch (part) {
    case TermPart::kModelState:
      return "modelState";
    case TermPart::kActivations:
      return "activations";
    case TermPart::kLogits:
      return "logits";
    case TermPart::kAlongside:
      return "alongside";
    case TermPart::kInPasses:
      return "inPasses";
    case TermPart::kStack:
      return "stack";
    case TermPart::kHost:
      break;
  }
  return "host";
}
inline emscripten::val terms_js() {
  using emscripten::val;
  val array = val::array();
  for (const TermRow& row : kTerms) {
    val term = val::object();
    term.set("id", val(row.id));
    term.set("apiKey", val(api_key(row)));
    term.set("label", val(row.label));
    term.set("phrase", val(row.phrase));
    term.set("part", val(term_part_js(row.part)));
    term.set("onDevice", row.on_device);
    term.set("onHost", row.on_host);
    term.set("listedWhenHeld", row.listed_when_held);
    term.set("countedBy", val(row.counted_by));
    array.call<void>("push", term);
  }
  return array;
}

// `stacks`: the full module's, whose estimates carry what only its settings fill (a stack's
// peaks, offloading's host, a LoRA base); the first view's estimates leave them out (the page
// reads each as absent where it is not given).
inline void register_estimate_types(bool stacks = true) {
  using namespace emscripten;

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

  value_object<StageFigures>("StageFigures")
      .field("index", &StageFigures::index)
      .field("role", &stage_role_js, &set_stage_role_js)
      .field("layers", &StageFigures::layers)
      .field("parameters", &StageFigures::parameters)
      .field("totalBytes", &StageFigures::total_bytes)
      .field("peakAllocatedBytes", &StageFigures::peak_allocated_bytes)
      .field("peakReservedBytes", &StageFigures::peak_reserved_bytes);

  value_object<Estimate> estimate("Estimate");
  estimate.field("answer", &Estimate::answer)
      .field("setup", &Estimate::setup)
      .field("modelName", &Estimate::model_name)
      .field("maxPositions", &Estimate::max_positions)
      .field("mtpParameters", &Estimate::mtp_parameters)
      .field("visionParameters", &Estimate::vision_parameters)
      .field("numParameters", &Estimate::num_parameters)
      .field("parametersOnDevice", &Estimate::parameters_on_device)
      .field("trainableParameters", &Estimate::trainable_parameters)
      .field("mostLoadedStage", &most_loaded_stage_js, &set_most_loaded_stage_js)
      .field("stage", &Estimate::stage)
      .field("mostLoaded", &Estimate::most_loaded)
      .field("bytesPerParameter", &Estimate::bytes_per_parameter)
      .field("tokensPerMicroBatch", &Estimate::tokens_per_micro_batch)
      .field("bytes", &device_bytes_js, &set_device_bytes_js)
      .field("host", &host_bytes_js, &set_host_bytes_js)
      .field("device", &Estimate::device)
      .field("numDevices", &Estimate::num_devices)
      .field("devicesWorth", &Estimate::devices_worth)
      .field("limitBytes", &Estimate::limit_bytes)
      .field("usableBytes", &Estimate::usable_bytes)
      .field("fits", &Estimate::fits)
      .field("headroomPercent", &Estimate::headroom_percent)
      .field("heldBytes", &Estimate::held_bytes)
      .field("heldBesidesBytes", &Estimate::held_besides_bytes)
      .field("activationRoomBytes", &Estimate::activation_room_bytes)
      .field("stackTerms", &stack_terms_js, &ignore_stack_terms)
      .field("notes", &notes_js, &ignore_notes);
  if (!stacks) return;
  estimate.field("baseLinearBytesPerParameter", &Estimate::base_linear_bytes_per_parameter)
      .field("hostDevices", &Estimate::host_devices)
      .field("hostNodeBytes", &Estimate::host_node_bytes)
      .field("hostCapacityBytes", &Estimate::host_capacity_bytes)
      .field("hostFits", &Estimate::host_fits)
      .field("peakAllocatedBytes", &Estimate::peak_allocated_bytes)
      .field("peakReservedBytes", &Estimate::peak_reserved_bytes);

  value_object<StackTerm>("StackTerm")
      .field("id", &StackTerm::id)
      .field("label", &StackTerm::label)
      .field("bytes", &StackTerm::bytes)
      .field("source", &StackTerm::source)
      .field("inAllocator", &StackTerm::in_allocator);
}

}  // namespace trainmem
