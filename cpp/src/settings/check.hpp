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

// check_setup for the plate's view (calculation.hpp, calculate_plate): a setting but the plate's
// held at anything but its default is refused, named, as is a config.json's model (the full
// module reads and checks those); the rest is checked as check_setup checks it, which for such a
// setup asks nothing more.
Answer check_plate_setup(const TrainingSetup& setup, const ModelShape* shape);

// DPO's pairs: each pair's chosen and rejected sequences in one micro-batch, the one rule of its
// loss on the plate's settings (check_rollout.cpp checks the rest).
Answer check_dpo_pairs(const TrainingSetup& setup);

}  // namespace trainmem
