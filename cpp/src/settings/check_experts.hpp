// The checks of a mixture of experts' layout and token exchange, part of check_setup (check.hpp):
// each refuses by name what the estimate does not model, in check_layout's order.
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// torchtitan's routed experts: whole on their expert-parallel ranks (etp 1), or split over the t
// ranks without expert parallelism (etp t); no other etp.
Answer check_torchtitan_experts(const TrainingSetup& setup, const ModelShape& shape);

// ep must divide the experts, etp each expert's width, and ep·etp the devices of a stage.
Answer check_expert_layout(const ParallelLayout& layout, const ModelShape& shape);

// Megatron-LM's flex dispatcher over DeepEP, at etp 1, ep 2, 4 or 8, dropless.
Answer check_flex_dispatcher(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
