// The checks of a whole setup (check.cpp): each value within its setting's bounds, then what the
// settings must satisfy together, the device's and the stack's rows among them.
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// The first problem with `setup` (whose model `shape` is, or nullptr when its id is unknown), in
// the setting at fault's words; an ok answer when there is none.
Answer check_setup(const TrainingSetup& setup, const ModelShape* shape);

}  // namespace trainmem
