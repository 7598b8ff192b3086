// The fewest devices that fit: for a model, a micro-batch and a device, the smallest layouts
// whose most loaded device holds everything.
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem {

struct FitSearch {
  Answer answer;  // the base setup's: refused, nothing else is filled
  // The layouts with the fewest devices that fit, lowest per-device total first (at most
  // max_layouts). Each is a full estimate: its setup holds the layout and recomputation.
  std::vector<Estimate> layouts;
  double fewest_devices = 0;  // 0 when nothing fits within kMaxDevices
  // Why one device fewer cannot do: the layout with fewer devices whose most loaded device
  // needs the least memory, and how far over the capacity it is.
  bool has_best_smaller = false;
  Estimate best_smaller;
  std::string why_not_fewer;
};

// Searches d·t·p·c layouts (t over the divisors of the heads, key/value heads and FFN width;
// p over the divisors of the layers; c over the powers of two dividing the sequence; sequence
// parallelism on whenever t > 1), every ZeRO stage and every recomputation choice, keeping the
// model, micro-batch, precision, optimiser, FlashAttention, logits and device of `base`.
FitSearch find_fewest_devices(const TrainingSetup& base, int max_layouts);

}  // namespace trainmem
