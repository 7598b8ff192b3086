// The exploration views, in the full module (trainmem-full.js) rather than in trainmem.wasm:
// "Show the arithmetic", the saved tensors, memory over one step, what saves the most, where it
// fits and the fewest devices. The default view needs none of them, and they are a quarter of the
// estimator's code; the page loads them when a reader opens one. The embind layer only; the work is
// in explain.cpp, llama_block.cpp, timeline.cpp, explore.cpp and fit.cpp.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "estimate_types.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/report.hpp"
#include "trainmem/timeline.hpp"

namespace {

using emscripten::val;

using trainmem::to_array;

val explain_estimate_js(const trainmem::TrainingSetup& setup) {
  return to_array(trainmem::explain_estimate(setup));
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
  // For each layout, a stack's term that outweighs its states and activations, or null.
  val outweighing = val::array();
  for (const trainmem::Estimate& layout : search.layouts) {
    const trainmem::StackTerm* term = trainmem::outweighing_stack_term(layout);
    val entry = val::null();
    if (term != nullptr) {
      entry = val::object();
      entry.set("label", term->label);
      entry.set("bytes", term->bytes);
    }
    outweighing.call<void>("push", entry);
  }
  result.set("outweighing", outweighing);
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

}  // namespace

// The setup's and the answer's types are registered by json_bindings.cpp, once for the module.
EMSCRIPTEN_BINDINGS(trainmem_explore) {
  using namespace emscripten;
  using namespace trainmem;

  register_estimate_types();

  value_object<LayoutCost>("LayoutCost")
      .field("score", &LayoutCost::score)
      .field("reason", &LayoutCost::reason);

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
      .field("held", &held_js, &set_held_js);

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
      .field("dtype", &SavedTensor::dtype)
      .field("dtypeBytes", &SavedTensor::dtype_bytes)
      .field("split", &SavedTensor::split)
      .field("bytesPerToken", &SavedTensor::bytes_per_token);

  function("savedTensors", &saved_tensors_js);
  function("explainEstimate", &explain_estimate_js);
  function("findFewestDevices", &find_fewest_devices_js);
  function("rankSavings", &rank_savings_js);
  function("memoryTimeline", &memory_timeline_js);
  function("fitMap", &fit_map_js);
}
