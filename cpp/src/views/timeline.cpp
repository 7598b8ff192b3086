// Memory over one training step on the most loaded device, from the estimate's own Calculation.
#include <algorithm>

#include "estimate/calculation.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/fine_tuning.hpp"

namespace trainmem {

std::size_t timeline_peak(const std::vector<TimelinePoint>& points) {
  std::size_t peak = 0;
  for (std::size_t index = 1; index < points.size(); ++index) {
    if (points[index].bytes > points[peak].bytes) peak = index;
  }
  return peak;
}

std::vector<TimelinePoint> memory_timeline(const TrainingSetup& setup) {
  const Calculation calc =
      calculate_estimate(setup, setup.micro_batch_sequences, setup.flash_attention, false);
  if (!calc.estimate.answer.ok()) return {};
  // Under a stack the timeline is its replayed step (run here once, not also for the estimate).
  if (setup.stack != Stack::kIdeal) return stack_timeline(calc, setup);
  const Estimate& estimate = calc.estimate;
  const MemoryBreakdown& bytes = estimate.bytes;

  // The most loaded device's layer slots: under 1F1B the first stage holds L layers' worth (p
  // micro-batches of L/p layers, times the interleaved schedule's factor), the last L/p.
  const bool first_stage = !calc.last_is_most_loaded;
  const int slots = static_cast<int>(first_stage ? calc.shape->num_layers : calc.layers_per_stage);
  const double kept_per_slot = calc.layer.kept_bytes * (first_stage ? calc.in_flight_factor : 1);
  // Held throughout: the model states, and under FP8 the weights' FP8 copies and scaling state.
  const double states = bytes.model_states_bytes + bytes.fp8_weights_bytes;
  // During the passes: a quantised base's layer dequantised for its matmul.
  const double working = states + bytes.dequantization_bytes;
  // Offloaded activations: the device keeps only the layers in flight.
  const double kept_on_device = setup.offload_activations
                                    ? kOffloadLayersInFlight * calc.layer.kept_bytes
                                    : slots * kept_per_slot;
  const auto kept = [&](int layers) { return std::min(layers * kept_per_slot, kept_on_device); };

  std::vector<TimelinePoint> points;
  const auto add = [&points](const char* phase, int layer, double held_states, double activations,
                             double logits) {
    TimelinePoint point;
    point.phase = phase;
    point.layer = layer;
    point.states_bytes = held_states;
    point.activations_bytes = activations;
    point.logits_bytes = logits;
    point.bytes = held_states + activations + logits;
    point.reserved_bytes = point.bytes;
    points.push_back(point);
  };
  add("start", 0, states, 0, 0);
  // Under expert parallelism each mixture layer holds its all-to-all buffers while it runs (an
  // upper bound for a dense layer mixed in).
  const double dispatch = calc.layer.dispatch_bytes;
  for (int layer = 1; layer <= slots; ++layer) {
    add("forward", layer, working, kept(layer) + dispatch, 0);
  }
  if (bytes.logits_bytes > 0) add("loss", slots, working, kept(slots), bytes.logits_bytes);
  for (int layer = slots; layer >= 1; --layer) {
    if (calc.layer.recompute_working_bytes > 0) {
      add("recompute", layer, working, kept(layer) + layer_working_bytes(calc.layer), 0);
    }
    add("backward", layer, working, kept(layer - 1), 0);
  }
  add("optimizer", 0, states, 0, 0);
  return points;
}

}  // namespace trainmem
