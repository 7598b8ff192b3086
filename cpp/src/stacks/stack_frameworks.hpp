// Each framework's replayed step: the order in which Megatron-LM (stack_frameworks.cpp), DeepSpeed
// (stack_deepspeed.cpp), torchtitan (stack_torchtitan.cpp), torchtune (stack_torchtune.cpp) and
// transformers (stack_hf.cpp, its RL phases stack_rl.cpp) allocate and free in one training step.
// stack_rows.cpp names each stack's.
#pragma once

#include "stacks/stack_step.hpp"

namespace trainmem::replay {

// Transformer Engine's cached weight gradients (TE 2.3 on, transformer_engine/pytorch/module/
// base.py, get_dummy_wgrad): under Megatron-LM's gradient-accumulation fusion each linear layer's
// backward pass writes into the FP32 main gradient and hands autograd an uninitialised BF16
// tensor of its weight's shape, one per distinct shape, cached for the run. The shapes a device's
// backward pass meets, each once: its layers' linear weights on a tensor-parallel rank (the
// attention's, the dense MLP's, the shared experts', and each routed expert's, one buffer for all
// of them from TE 2.10, grouped_linear.py), and the output layer's (Megatron-LM's own
// ColumnParallelLinear shares TE's cache from Megatron-Core 0.14, tensor_parallel/layers.py).
double te_cached_wgrad_bytes(const StepDevice& device);

// The most elements of one main gradient on the device as Megatron-LM's optimiser step reads it
// (count_zeros_fp32 under --log-num-zeros-in-grad): a weight whole without ZeRO, at most the
// rank's range of its bucket under the distributed optimiser (one bucket a buffer, or under
// --overlap-grad-reduce buckets of max(4·10⁷, 10⁶·d·c) on the first stage) and Megatron-FSDP (a
// unit a bucket).
double largest_main_gradient(const StepDevice& device);

void megatron_step(Step& step, const StepDevice& device);
void torchtitan_step(Step& step, const StepDevice& device);
void deepspeed_step(Step& step, const StepDevice& device);
void torchtune_step(Step& step, const StepDevice& device);
void hf_step(Step& step, const StepDevice& device);

}  // namespace trainmem::replay
