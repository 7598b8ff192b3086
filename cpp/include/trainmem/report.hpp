// An estimate written out for other programs: JSON (the CLI's --json, the page's JSON download)
// and CSV (the page's CSV download). One writer, so the two can never disagree.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/verdict.hpp"

namespace trainmem {

// One JSON object, camelCase keys, byte counts as JSON integers: the schema the README documents.
std::string estimate_to_json(const Estimate& estimate);
// Its "stage" and "mostLoaded" are {index, role, layers, parameters, totalBytes,
// peakAllocatedBytes, peakReservedBytes}: the stage whose terms it holds, and the one the fit is
// judged on.
// A choice the run made that no flag gave, as the CLI writes it: --precision bf16, brought by
// "The torchtune stack" (bring_stack_defaults) or by a flag that needs it ("--cp-comm-type").
struct BroughtFlag {
  std::string flag;
  std::string value;
  std::string by;
};
// The same object with "verdict" (below), "brought": [{flag, value, by}…], what the stack filled in
// where no flag chose (bring_stack_defaults), and "stages": every pipeline stage's figures
// (every_stage), the first first: the CLI's answer for a run set up by flags.
std::string estimate_to_json(const Estimate& estimate, const VerdictAnswer& verdict,
                             const std::vector<BroughtFlag>& brought = {});

// {verdict, fromBand, bandPercent: [low, high] or null, bandCases: [{id, title, errorPercent}…],
// likelyLowBytes, likelyHighBytes, limitBytes, reason, withheldFor: [key…]}.
std::string verdict_to_json(const VerdictAnswer& verdict);

// The estimate's object with "launch": {kind, read, notUnderstood, notes}, "stages" and "verdict"
// (above).
std::string launch_to_json(const Estimate& estimate, const LaunchConfig& launch,
                           const VerdictAnswer& verdict);

// term,bytes_per_parameter,bytes rows for the breakdown, then the total.
std::string estimate_to_csv(const Estimate& estimate);

// {model, modelName, fewestDevices, layouts: [estimate…], whyNotFewer}.
std::string fit_to_json(const TrainingSetup& setup, const FitSearch& search);

// The largest of a stack's own terms where it outweighs the model states and the activations
// together at the step's peak (the data loader's whole mask at 131K tokens, held before the
// forward pass), for a line that names only those two; nullptr where none does.
const StackTerm* outweighing_stack_term(const Estimate& estimate);

// {baseline: estimate, savings: [{change, label, bytesSaved, devicesAdded, estimate}…]}.
std::string savings_to_json(const SavingsList& list);

// {sequenceLengths, microBatchSequences, cells: [{sequenceLength, microBatchSequences, valid,
// totalBytes, devicesWorth, fits}…]}.
std::string fit_map_to_json(const FitMap& map);

// [{term, label, formula, source}…]: each term's arithmetic (--explain).
std::string explain_to_json(const std::vector<TermArithmetic>& terms);

// [{phase, layer, bytes, reservedBytes, held: {weights, …}}…]: memory over one training step.
std::string timeline_to_json(const std::vector<TimelinePoint>& points);

// [{id, title, source, statistic, quantity, measuredBytes, note, korthikantiBytes,
// llamaBlockBytes, korthikantiErrorPercent, llamaBlockErrorPercent, estimate, otherEstimate:
// {name, bytes, errorPercent} where another tool's estimate was published with the run}…]: "How
// close is this?", with each case's estimate (llama-block) and so its settings in full.
std::string measured_to_json(const std::vector<MeasuredComparison>& comparisons);

// For the page: estimate `setup`, then write it; a refused setup gives {"error": message}.
std::string setup_to_json(const TrainingSetup& setup);
std::string setup_to_csv(const TrainingSetup& setup);

}  // namespace trainmem
