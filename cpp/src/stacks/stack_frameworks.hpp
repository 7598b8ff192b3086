// Each framework's replayed step (stack_frameworks.cpp): the order in which Megatron-LM,
// torchtitan and DeepSpeed allocate and free in one training step. stack_rows.cpp names each
// stack's.
#pragma once

#include "stacks/stack_step.hpp"

namespace trainmem::replay {

void megatron_step(Step& step, const StepDevice& device);
void torchtitan_step(Step& step, const StepDevice& device);
void deepspeed_step(Step& step, const StepDevice& device);

}  // namespace trainmem::replay
