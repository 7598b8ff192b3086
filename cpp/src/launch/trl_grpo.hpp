// TRL's GRPOConfig (`trl grpo --config`), read within TRL's YAML reader (trl_yaml.cpp), which
// reads the keys SFTConfig and GRPOConfig share (trl_grpo.cpp).
#pragma once

#include <set>
#include <string>

#include "launch/key_reader.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// TRL's keys with no bearing on the device's memory, SFT's and GRPO's (trl_yaml.cpp).
const std::set<std::string>& trl_no_bearing_keys();

namespace trl_grpo {

inline constexpr const char* kKind =
    "TRL config (YAML, trl grpo --config; GRPOConfig at TRL f2cd5771, after v1.9.0)";

// GRPOConfig's own keys, and GRPO's script's: a file with any of them is `trl grpo --config`'s.
bool is_grpo_file(const KeyReader& reader);

// TRL's keys of no bearing, and GRPOConfig's own: sampling, the loss's coefficients over (B, C)
// tensors, rewards, logging, vLLM's server.
const std::set<std::string>& no_bearing_keys();

// A generation's steps: steps_per_generation (gradient_accumulation_steps by default), or
// generation_batch_size over the devices' micro-batches (GRPOConfig.__post_init__).
struct Generation {
  double steps = 1;
  double batch = 0;  // generation_batch_size where given
};

// per_device_train_batch_size and max_completion_length; the sequence length `base`'s (the
// prompts are the data's); a note where the file may be RLOO's.
Generation read_batch(KeyReader& reader, TrainingSetup& setup, const TrainingSetup& base);
// vLLM: use_vllm, vllm_mode, its utilization, tensor parallelism, max model length, sleep mode.
void read_generation(KeyReader& reader, TrainingSetup& setup);
// GRPO's loss, and what changes it (refused by key).
void read_loss(KeyReader& reader, TrainingSetup& setup);
// The generation's sequences over the devices (setup.layout.data_parallel set), as the global
// batch.
void count_generation(KeyReader& reader, TrainingSetup& setup, const Generation& generation);

}  // namespace trl_grpo

}  // namespace trainmem
