// The fewest devices that fit: for a model, a micro-batch and a device, the smallest layouts
// whose most loaded device holds everything.
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem {

// What running a layout costs beyond memory, for ranking layouts of equally few devices: a score
// in rough percent of a training step's time, and the reasons, in words. The weights are stated
// in fit.cpp and docs/formulas.md; they order layouts as practitioners do, they do not time them.
struct LayoutCost {
  double score = 0;
  std::string reason;  // "t 8 within one 8-device node: all-reduces over NVLink (+9); …"
};

// The stated assumptions behind LayoutCost.
// kDevicesPerNode (setup.hpp): an HGX node's NVLink domain.
constexpr int kMinTokensPerContextShard = 4096;  // fewer, and the ring exchange is not hidden
constexpr int kMicroBatchesPerStep = 16;         // for the pipeline bubble: per pipeline, per step

LayoutCost layout_cost(const Estimate& estimate);

struct [[nodiscard]] FitSearch {
  Answer answer;  // the base setup's: refused, nothing else is filled
  // The layouts with the fewest devices that fit, and those on up to a node more (kDevicesPerNode)
  // that take less device time a step, devices × (1 + cost / 100), than the cheapest on the fewest
  // (their cost's reason says so): least device time first, which among equally many devices is
  // the cheapest to run (layout_cost), then the lowest per-device total; at most max_layouts, the
  // cheapest on the fewest always among them. Each is a full estimate: its setup holds the layout
  // and recomputation. costs[i] is layouts[i]'s cost.
  std::vector<Estimate> layouts;
  std::vector<LayoutCost> costs;
  double fewest_devices = 0;  // 0 when nothing fits within kMaxDevices
  // Why one device fewer cannot do: the layout with fewer devices whose most loaded device
  // needs the least memory, and how far over the capacity it is.
  bool has_best_smaller = false;
  Estimate best_smaller;
  std::string why_not_fewer;
};

// Searches d·t·p·c layouts (t over the divisors of the heads, key/value heads and FFN width;
// p over the divisors of the layers, and the powers of two that do not divide them, split
// unevenly as Megatron-LM users do: the middle stages ⌈L/p⌉ layers, the first and last the rest;
// c over the powers of two dividing the sequence; sequence parallelism on whenever t > 1), for a
// mixture ep over the powers of two dividing the experts and etp as t or 1, every ZeRO stage and
// every recomputation choice, and offloading too where `base` gives the host's memory and offloads
// nothing (a layout then counts only when the host holds what it offloads), keeping the model,
// micro-batch, precision, optimiser, FlashAttention, logits and device of `base`.
FitSearch find_fewest_devices(const TrainingSetup& base, int max_layouts);

}  // namespace trainmem
