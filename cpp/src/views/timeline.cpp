// Memory over one training step on the most loaded device (timeline.hpp), from the estimate's
// own Calculation: the idealised step walked layer by layer, or a stack's step replayed.
#include "trainmem/timeline.hpp"

#include <algorithm>

#include "estimate/calculation.hpp"
#include "estimate/stage.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/fine_tuning.hpp"

namespace trainmem {

namespace {

// The idealised step: the model states (and FP8 weight copies) held throughout, a quantised
// base's dequantised layer during the passes, the activations of each layer slot piling up and
// freed, the logits between the passes.
std::vector<TimelinePoint> ideal_timeline(const Calculation& calc, const TrainingSetup& setup) {
  const Breakdown& bytes = calc.ledger.device;
  // The most loaded device's layer slots: under 1F1B the first stage holds L layers' worth (p
  // micro-batches of L/p layers), the last L/p; under the interleaved schedule its chunks'.
  // A hybrid's MTP layer is a full-attention layer, and where a layer is the mean of dense and
  // mixture layers an MTP layer is a mixture one: each keeps its own kind's bytes (stage.cpp), in
  // slots after the model's layers'.
  StagePlacement layers_only = calc.stage;
  const bool hybrid = hybrid_linear_attention(*calc.shape);
  const bool mtp_apart =
      layers_only.mtp_layers > 0 && (hybrid || calc.layer.mixture_kept_per_token > 0);
  if (mtp_apart) layers_only.mtp_layers = 0;
  const WholeSlots whole = whole_slots(layers_only);
  const int layer_slots = whole.count;
  const int slots = layer_slots + (mtp_apart ? static_cast<int>(calc.stage.mtp_layers) : 0);
  const double kept_per_slot = calc.layer.kept_bytes * whole.scale;
  const double kept_per_mtp_slot =
      calc.layer.tokens_on_device *
      (hybrid ? calc.layer.attention_kept_per_token : calc.layer.mixture_kept_per_token);
  const auto piled = [&](int layers) {
    const int mtp = std::max(0, layers - layer_slots);
    return (layers - mtp) * kept_per_slot + mtp * kept_per_mtp_slot;
  };
  // Offloaded activations: the device keeps only the layers in flight.
  const double kept_on_device =
      setup.offload_activations ? kOffloadLayersInFlight * calc.layer.kept_bytes : piled(slots);
  const auto kept = [&](int layers) { return std::min(piled(layers), kept_on_device); };

  Breakdown states;  // held throughout, and what is added while a layer computes
  Breakdown in_passes;
  for (const TermRow& row : kTerms) {
    if (row.part == TermPart::kModelState || row.part == TermPart::kAlongside) {
      states[row.term] = bytes[row.term];
    }
    if (row.part == TermPart::kInPasses) in_passes[row.term] = bytes[row.term];
  }
  std::vector<TimelinePoint> points;
  const auto add = [&](const char* phase, int layer, bool passes, double activations,
                       double logits) {
    TimelinePoint point;
    point.phase = phase;
    point.layer = layer;
    point.held = states;
    if (passes) {
      for (const TermRow& row : kTerms) point.held[row.term] += in_passes[row.term];
    }
    point.held[Term::kActivations] = activations;
    point.held[Term::kLogits] = logits;
    point.bytes = point.held.total();
    point.reserved_bytes = point.bytes;
    points.push_back(point);
  };
  add("start", 0, false, 0, 0);
  // Under expert parallelism each mixture layer holds its all-to-all buffers while it runs (an
  // upper bound for a dense layer mixed in).
  const double dispatch = calc.layer.dispatch.value();
  for (int layer = 1; layer <= slots; ++layer)
    add("forward", layer, true, kept(layer) + dispatch, 0);
  if (bytes[Term::kLogits] > 0) add("loss", slots, true, kept(slots), bytes[Term::kLogits]);
  for (int layer = slots; layer >= 1; --layer) {
    if (calc.layer.recompute_working_bytes > 0) {
      add("recompute", layer, true, kept(layer) + layer_working_bytes(calc.layer), 0);
    }
    add("backward", layer, true, kept(layer - 1), 0);
  }
  add("optimizer", 0, false, 0, 0);
  return points;
}

}  // namespace

std::size_t timeline_peak(const std::vector<TimelinePoint>& points) {
  std::size_t peak = 0;
  for (std::size_t index = 1; index < points.size(); ++index) {
    if (points[index].bytes > points[peak].bytes) peak = index;
  }
  return peak;
}

std::vector<TimelinePoint> memory_timeline(const TrainingSetup& setup) {
  const Calculation calc =
      calculate(setup, setup.micro_batch_sequences, setup.flash_attention, {false, false});
  if (!calc.answer.ok()) return {};
  if (!stack_row(setup.stack).replayed) return ideal_timeline(calc, setup);
  // Under a stack the timeline is its replayed step (run here once, not also for the estimate).
  return replayed_step(calc, setup);
}

}  // namespace trainmem
