// A device's terms whole, before a stack's replay frees any (under a stack, an estimate's terms
// are those held at the step's peak), as the suites that pin a term by hand read them.
#pragma once

#include <doctest/doctest.h>

#include "estimate/calculation.hpp"

namespace trainmem::fixtures {

inline Breakdown whole(const TrainingSetup& setup) {
  const Calculation calc =
      calculate(setup, setup.micro_batch_sequences, setup.flash_attention, {false, false});
  REQUIRE_MESSAGE(calc.answer.ok(), calc.answer.message);
  return calc.whole_terms;
}

}  // namespace trainmem::fixtures
