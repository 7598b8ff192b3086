// RL post-training's rollout engine colocated with the trainer (TrainingSetup::rollout): what it
// takes of each device, and the figures a practitioner sets it by (estimate.hpp, RolloutFigures).
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

// The device's total memory as torch.cuda.mem_get_info reads it, which vLLM's utilization is a
// share of: the figure PyTorch reports for the device where its row has one, else its capacity.
double device_total_bytes(const TrainingSetup& setup);

// What the device holds when verl makes its engine's servers: the actor's FP32 shards (`whole`,
// the step's terms as counted, their weights and master weights) unless verl offloads them, the
// trainer's runtime and the engine process's (replay::startup_runtime_bytes). SGLang's share is of
// what this leaves free.
double verl_startup_bytes(const TrainingSetup& setup, const Breakdown& whole);

// The engine's pools on each device (0 without an engine). vLLM's: gpu_memory_utilization × the
// device's total. SGLang's: mem_fraction_static × the memory free as it starts (the device's total
// less `startup_bytes`), its weights and a KV cache of whole tokens, and its request table.
double rollout_engine_bytes(const TrainingSetup& setup, double startup_bytes);

// The engine's name as its users know it ("vLLM", "SGLang").
const char* rollout_engine_name(const TrainingSetup& setup);

// vLLM's KV cache for a hybrid of Gated DeltaNet (Qwen3-Next, Qwen3.5), Mamba-2 (Nemotron-H) or
// short-convolution (LFM2) layers beside full attention, on each of its devices; empty for a model
// of attention layers alone (rollout.cpp).
HybridKvCache vllm_hybrid_cache(const TrainingSetup& setup, const ModelShape& shape);

// vLLM's BF16 weights on each of its devices, split over its tensor parallelism.
double rollout_weights_bytes(const TrainingSetup& setup, const ModelShape& shape);

// What verl's weight sync holds at its busiest beyond the state dict's clones, in FP32: the bucket
// sent, the bucket filling and the tensor just gathered whole. vLLM's: its 2,048 MiB CUDA-IPC
// buffer and the largest tensor (the embedding's) beside it. SGLang's (verl 1dda039b,
// verl/workers/rollout/sglang_rollout/utils.py, get_named_tensor_buckets, consumed by
// sglang_rollout.py's ServerAdapter.update_weights): buckets of the gathered tensors themselves,
// one yielded when the next would overflow it; while the generator gathers the next tensors the
// consumer's loop variable still holds the bucket it last sent, so the busiest moment is found
// by walking the state dict's tensors in order.
struct SyncBuckets {
  double sent = 0;
  double filling = 0;
  double gathered = 0;
};
SyncBuckets verl_sync_buckets(const TrainingSetup& setup, const ModelShape& shape);

// Whether verl's hybrid engine drives the rollout engine (TrainingSetup::rl_trainer).
bool verl_trainer(const TrainingSetup& setup);

// The blocks a hybrid's generation takes on the device: each sequence's, prompt and completion.
double generation_blocks(const RolloutFigures& figures, const TrainingSetup& setup);

// Whether the engine's KV cache holds the whole generation at once (a hybrid's beside the null
// block).
bool holds_generation(const RolloutFigures& figures, const TrainingSetup& setup);

// The bytes of the estimate's stack term `id` (0 where it has none).
double held_by_term(const Estimate& estimate, const char* id);

// The engine's figures (rollout.cpp), in words among the estimate's notes (rollout_notes.cpp), and
// a vLLM that cannot start made a run that does not fit (estimate_memory and workshop_view; the
// plate's estimate has no engine).
void add_rollout(Estimate& estimate);

// Why vLLM does not start, in a sentence with vLLM's own words and the trainer's keys; "" where it
// starts.
std::string rollout_start_failure(const RolloutFigures& figures, const TrainingSetup& setup);

}  // namespace trainmem
