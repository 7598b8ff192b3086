// Offloading (Ren et al., "ZeRO-Offload", arXiv:2101.06840; FSDP's CPUOffload; torchtune's
// OffloadActivations): what the device gives up to the host's memory, and what the host adds.
#pragma once

#include "activations/layer.hpp"
#include "estimate/ledger.hpp"
#include "estimate/placement.hpp"
#include "estimate/states.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Moves the stage's terms that `setup` offloads from the device to the host, but what is in
// flight: every byte that leaves the device is on the host, which adds the FP32 gradients its
// optimiser step reads.
void offload_to_host(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                     const StagePlacement& stage, const BytesPerParameter& per,
                     const BaseWeightBytes& base, const ActivationsPerLayer& layer);

// What verl's hybrid engine keeps in the host's memory for each device (TrainingSetup::rl_trainer):
// the reference model's FP32 shard, which verl offloads whatever its flag says, and under sleep
// mode SGLang's backup of its BF16 weights.
void rollout_to_host(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                     const StagePlacement& stage);

}  // namespace trainmem
