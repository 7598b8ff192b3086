// Exploration views over the estimator: which single change saves the most, and where a model
// fits over sequence length and micro-batch. Each figure is an estimate_memory() of its own setup.
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem {

// One change to a setup and what it does to the most loaded device.
struct Saving {
  std::string change;  // "flash-attention", "recompute-selective", "zero-next", "tp-double", …
  std::string label;   // "Turn on FlashAttention"
  Estimate estimate;   // the changed setup's estimate (its setup is the changed setup)
  double bytes_saved = 0;    // baseline total − changed total, on the most loaded device
  double devices_added = 0;  // changed device count − baseline device count
};

struct [[nodiscard]] SavingsList {
  Answer answer;  // the base setup's: refused, nothing else is filled
  Estimate baseline;
  std::vector<Saving> savings;  // the changes that save bytes, most saved first
};

// Tries, one at a time: FlashAttention on; selective and full recomputation; the next ZeRO stage;
// doubling d with ZeRO (when ZeRO is on), t (sequence parallelism on), p, c; 8-bit Adam; half the
// micro-batch. Changes the core refuses (a degree that no longer divides) are left out.
SavingsList rank_savings(const TrainingSetup& setup);

struct FitCell {
  int sequence_length = 0;
  int micro_batch_sequences = 0;
  bool valid = false;  // false where the core refuses the cell (e.g. c does not divide s)
  double total_bytes = 0;
  double devices_worth = 0;  // the share of one device's memory
  bool fits = false;
};

struct [[nodiscard]] FitMap {
  Answer answer;                           // the base setup's: refused, nothing else is filled
  std::vector<int> sequence_lengths;       // rows: 1,024 to 131,072, doubling
  std::vector<int> micro_batch_sequences;  // columns: 1 to 16, doubling
  std::vector<FitCell> cells;              // row-major: sequence length, then micro-batch
};

// The setup's model, layout, recipe and device over a grid of sequence length × micro-batch.
FitMap fit_map(const TrainingSetup& setup);

// Compare: the current estimate against a pinned one, in words: "… needs 12.3 GB less on its most
// loaded device than the pinned configuration (152.7 GB against 165.0 GB) …".
std::string compare_estimates(const Estimate& pinned, const Estimate& current);

}  // namespace trainmem
