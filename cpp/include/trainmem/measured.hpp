// "How close is this?": memory measured in real training runs, each set against trainmem's
// estimate of the same settings under both activation models.
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem {

// What a measured figure counts, and so which of the estimate's figures it is set against.
enum class MeasuredQuantity {
  kActivations,  // the activations alone: set against Estimate::bytes[Term::kActivations]
  kTotal,        // the device's whole peak: set against Estimate::bytes.total()
  kLogits,       // the loss over the logits alone: set against Estimate::bytes[Term::kLogits]
  // PyTorch's caching allocator's reserved peak (torch.cuda.max_memory_reserved): set against
  // Estimate::peak_reserved_bytes, which the run's stack estimates
  kReserved,
  // Its allocated peak (torch.cuda.max_memory_allocated): Estimate::peak_allocated_bytes
  kAllocated,
};

// The unit a figure was published in; the estimate is shown in it too, like against like.
enum class MeasuredUnit {
  kBytes,      // "7,880,736 B"
  kGibibytes,  // "83.9 GiB": 2^30 bytes, as PyTorch's and torchtitan's logs count
  kGigabytes,  // "36.6 GB": 10^9 bytes, as the PEFT docs write it
};

// "activations", "total", "logits", "reserved" or "allocated": the quantity's id in JSON, on the
// page and in the CLI.
std::string quantity_id(MeasuredQuantity quantity);

struct MeasuredCase {
  std::string id;         // stable: "harness-cpu-tiny-kernels-4x4", "torchtitan-2024-12-fsdp8-cp1"
  std::string title;      // for people: "Tiny Llama, 4 layers × 4 sequences"
  std::string citation;   // for people: "torchtitan, Llama 3 benchmark on H100s, December 2024"
  std::string source;     // where the figure is published, precisely enough to find it again
  std::string statistic;  // what was measured: "peak reserved (torch.cuda), GiB", …
  MeasuredQuantity quantity = MeasuredQuantity::kTotal;
  TrainingSetup setup;  // the run's settings, as far as trainmem can express them
  double measured_bytes = 0;
  MeasuredUnit unit = MeasuredUnit::kBytes;
  // What to know in reading the comparison: settings taken from defaults, what trainmem does not
  // model, why the error is what it is.
  std::string note;
  // Empty for a case the estimate is meant to meet within ±goal_percent under its stack (the
  // llama-block model; Korthikanti's within ±10%); otherwise why it does not yet (the note says it
  // too). The measured test holds each case to its word.
  std::string outside_goal;
  double goal_percent = 10;
  // Another tool's estimate of the same run, published with the measurement (SimuMax's own
  // figure for its B200 runs), so that the comparison says where trainmem stands against it:
  // the tool's name, and its figure in the measured statistic; empty and 0 where there is none.
  std::string other_estimate_name;
  double other_estimate_bytes = 0;
};

// The measurement harness's --tiny shape (scripts/measure/measure.py's PRESETS["tiny"]) with
// `layers` layers: h 64, f 224, 4 heads of 16, 2 key/value heads, vocabulary 512, untied.
ModelShape harness_tiny_shape(int layers);

// Every measured case: the runs of scripts/measure/measure.py committed under tests/data/, then
// published runs whose settings are stated in full.
const std::vector<MeasuredCase>& measured_cases();

struct [[nodiscard]] MeasuredComparison {
  MeasuredCase measured;
  Answer answer;                 // refused only if the core refused the case's own setup (a bug)
  double korthikanti_bytes = 0;  // the estimate's figure (activations or total) of each model
  double llama_block_bytes = 0;
  double korthikanti_error_percent = 0;  // (estimate − measured) / measured × 100
  double llama_block_error_percent = 0;
  double other_estimate_error_percent = 0;  // the other tool's, where the case has one
  Estimate llama_block_estimate;            // the case's setup under the llama-block model, in full
};

// Each measured case against the estimate of its setup under each activation model.
std::vector<MeasuredComparison> compare_measured();

// Where trainmem stands against another tool's estimates of the same runs, one sentence for each
// tool and quantity, in the cases' order: "Allocated, 19 runs: trainmem's median error 0.2%, its
// worst 1.0%; SimuMax v1.2's median 0.4%, its worst 1.4%." Errors are taken whole
// (|estimate − measured|), the llama-block model's; a case the core refused counts as no run.
std::vector<std::string> standing_against_other_estimates(
    const std::vector<MeasuredComparison>& comparisons);

// "+23.1%", "−45.1%", "±0.0%": an error in percent to one decimal, signed.
std::string format_error_percent(double percent);

// Bytes in the unit the case was published in: "7,880,736 B" or "83.9 GiB".
std::string format_as_measured(double bytes, MeasuredUnit unit);

}  // namespace trainmem
