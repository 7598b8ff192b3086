// TRL's DPOConfig (`trl dpo --config`), read within TRL's YAML reader (trl_yaml.cpp), which
// reads the keys SFTConfig and DPOConfig share (trl_dpo.cpp).
#pragma once

#include <set>
#include <string>

#include "launch/key_reader.hpp"
#include "trainmem/setup.hpp"

namespace trainmem::trl_dpo {

inline constexpr const char* kKind =
    "TRL config (YAML, trl dpo --config; DPOConfig at TRL f2cd5771, after v1.9.0)";

// DPOConfig's own keys (no other TRL config has them), or a loss_type of DPO's: a file with any is
// `trl dpo --config`'s.
bool is_dpo_file(const KeyReader& reader);

// TRL's keys of no bearing, and DPOConfig's own: the loss's coefficients over per-sequence
// figures, the reference's syncing (in place), truncation's side.
const std::set<std::string>& no_bearing_keys();

// max_length and per_device_train_batch_size: each pair's two sequences a micro-batch's.
void read_batch(KeyReader& reader, TrainingSetup& setup);
// DPO's loss, its reference model (precompute_ref_log_probs), and what changes them (refused by
// key).
void read_loss(KeyReader& reader, TrainingSetup& setup);

}  // namespace trainmem::trl_dpo
