// "Will my run fit?": fits, uncertain or does not fit, from the estimate and the spread of the
// estimate's errors against the published runs of the same stack ("How close is this?",
// measured.hpp), in place of a flat headroom that no measurement sets.
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem {

enum class Verdict { kFits, kUncertain, kDoesNotFit };

// "fits", "uncertain", "does not fit": the verdict's words, in JSON and on screen.
const char* verdict_words(Verdict verdict);

// The estimate's error against a stack's published runs: (estimate − measured) / measured, in
// percent, at its lowest and highest, and the runs it comes from.
struct ErrorBand {
  double low_percent = 0;
  double high_percent = 0;
  std::vector<std::string> case_ids;
  std::vector<std::string> case_titles;
  std::vector<double> case_errors_percent;
  int mixture_cases = 0;  // of those, the runs of a mixture of experts
  int hybrid_cases = 0;   // and of a hybrid of linear and full attention
};

// A stack's band under an activation model: every published run under that stack whose figure is
// a device's peak (reserved, allocated or total); empty (no case ids) where there are fewer than
// kMinBandCases.
inline constexpr int kMinBandCases = 3;
ErrorBand error_band(Stack stack, ActivationModel model);

struct VerdictAnswer {
  Verdict verdict = Verdict::kUncertain;
  // What decides it: the band of the stack's measured runs, or the headroom (asked for, or standing
  // in where the stack has too few published runs).
  bool from_band = false;
  ErrorBand band;
  // The device's memory as the run would likely find it: the estimate's total divided by
  // 1 + each end of the band (the highest error gives the lowest likely figure); under the
  // headroom, both the estimate's total.
  double likely_low_bytes = 0;
  double likely_high_bytes = 0;
  double limit_bytes = 0;  // the device's memory, or its usable share under the headroom
  std::string reason;      // one sentence: why this verdict
  // The launch config's keys that bear on memory and are not understood: while there are any, the
  // verdict is withheld (uncertain, and the reason names them) whatever the estimate says.
  std::vector<std::string> withheld_for;
};

// The verdict on `estimate` (which must be ok). With `headroom_asked` the headroom setting
// decides, as before; otherwise the stack's band, or the headroom where the stack has no band.
// A launch config's keys `not_understood` withhold it: an estimate that leaves out what a file
// sets cannot say whether the run fits, so it says it cannot tell and names them.
VerdictAnswer verdict_of(const Estimate& estimate, bool headroom_asked,
                         const std::vector<std::string>& not_understood = {});

}  // namespace trainmem
