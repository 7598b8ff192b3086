// Published measured runs kept apart from measured.cpp's table, one source each (measured.hpp).
#pragma once

#include <vector>

#include "trainmem/measured.hpp"

namespace trainmem {

// SimuMax v1.2's B200 release runs: Megatron-LM with Transformer Engine 2.11 on 8 B200s, each
// run's allocated and reserved peaks (measured_megatron.cpp).
std::vector<MeasuredCase> simumax_b200_cases();

}  // namespace trainmem
