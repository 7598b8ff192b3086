// Offloading (offload.hpp).
#include "estimate/offload.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

constexpr const char* kStatesOffloaded =
    "offloaded to the host (Ren et al., \"ZeRO-Offload\", arXiv:2101.06840; DeepSpeed's "
    "offload_optimizer and offload_param, FSDP's CPUOffload)";

std::string lowercase_first(std::string text) {
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z')
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

// What the device keeps of each offloaded term.
struct Kept {
  double weights = 0;
  double gradients = 0;
  double activations = 0;
};

Kept kept_on_device(const Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                    const BytesPerParameter& per, const BaseWeightBytes& base,
                    const ActivationsPerLayer& layer) {
  const Breakdown& device = ledger.device;
  Kept kept{device[Term::kWeights], device[Term::kGradients], device[Term::kActivations]};
  if (stack_row(setup.stack).zero_offload && setup.offload != Offload::kNone) {
    // DeepSpeed's: the gradient partitions live on the host (stage3.py: grad_partitions_flat_buffer
    // on self.device, cpu under offload_optimizer; stage_1_and_2.py: each reduced gradient copied
    // into the host's FP32 buffer), and offloaded parameters keep no partition on the device
    // (partition_parameters.py: ds_tensor on the remote device); the replay holds the layers in
    // flight, fetched and their gradients bucketed (stack_deepspeed.cpp).
    kept.gradients = 0;
    if (setup.offload == Offload::kOptimizerAndWeights) kept.weights = 0;
    return kept;
  }
  if (setup.offload == Offload::kOptimizerAndWeights) {
    // The largest unit in flight: a layer, or the embedding (or output layer) on its own.
    const Pen bare;
    const double unit_weight_bytes =
        std::max(weight_figure(bare, placement.layer_unit, per, base).value(),
                 weight_figure(bare, placement.embedding_unit, per, base).value());
    const double unit_gradient_bytes = per.gradients * std::max(placement.layer_unit.trainable,
                                                                placement.embedding_unit.trainable);
    kept.weights = std::min(kept.weights, kOffloadLayersInFlight * unit_weight_bytes);
    kept.gradients = std::min(kept.gradients, kOffloadLayersInFlight * unit_gradient_bytes);
  }
  if (setup.offload_activations) {
    // torch.autograd.graph.save_on_cpu / torchtune's OffloadActivations: each layer's saved
    // tensors go to the host as the forward pass leaves it, and come back for its backward. The
    // rebuilt layer under full recomputation and a layer's all-to-all buffers stay too (less the
    // logits' memory they reuse).
    const double working = layer_working_bytes(layer);
    const double rebuilt = working - std::min(working, device[Term::kLogits]);
    kept.activations =
        std::min(kept.activations, kOffloadLayersInFlight * layer.kept_bytes + rebuilt);
  }
  return kept;
}

}  // namespace

void offload_to_host(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                     const StagePlacement& stage, const BytesPerParameter& per,
                     const BaseWeightBytes& base, const ActivationsPerLayer& layer) {
  if (!kBeyondThePlate || (setup.offload == Offload::kNone && !setup.offload_activations)) return;
  // verl's offload holds its states on the device for the update (rollout_to_host counts its
  // host).
  if (setup.rl_trainer == RlTrainer::kVerl && setup.rollout != Rollout::kNone) return;
  const Pen& pen = ledger.pen();
  const Kept kept = kept_on_device(ledger, setup, placement, per, base, layer);
  const bool states = setup.offload != Offload::kNone;
  Breakdown moved;
  moved[Term::kWeights] = ledger.device[Term::kWeights] - kept.weights;
  moved[Term::kGradients] = ledger.device[Term::kGradients] - kept.gradients;
  moved[Term::kMasterWeights] = states ? ledger.device[Term::kMasterWeights] : 0;
  moved[Term::kOptimizerStates] = states ? ledger.device[Term::kOptimizerStates] : 0;
  moved[Term::kActivations] = ledger.device[Term::kActivations] - kept.activations;

  const auto in_flight = [] { return number_text(kOffloadLayersInFlight) + " layers in flight"; };
  for (const Term term : {Term::kWeights, Term::kGradients, Term::kMasterWeights,
                          Term::kOptimizerStates, Term::kActivations}) {
    const double bytes = moved[term];
    const bool whole = term == Term::kMasterWeights || term == Term::kOptimizerStates;
    // DeepSpeed's gradients go to the host with the optimiser (kept_on_device).
    const bool zero_offload = stack_row(setup.stack).zero_offload && states;
    const bool offloaded = term == Term::kActivations ? setup.offload_activations
                           : whole                    ? states
                           : term == Term::kGradients && zero_offload
                               ? true
                               : setup.offload == Offload::kOptimizerAndWeights;
    // Under DeepSpeed a moved state moves whole: its layers in flight are the replay's.
    const bool all = whole || (zero_offload && term != Term::kActivations);
    if (offloaded) {
      ledger.subtract(term,
                      pen.said(bytes,
                               [&] {
                                 return "what the host holds" +
                                        (all ? std::string() : ", all but the " + in_flight()) +
                                        " (" + format_bytes(bytes) + ")";
                               }),
                      [&] {
                        return term == Term::kActivations
                                   ? "offloaded as torch.autograd.graph.save_on_cpu and "
                                     "torchtune's OffloadActivations do"
                                   : kStatesOffloaded;
                      });
    }
    // The host's working names every state and the activations, held or not.
    ledger.add_to_host(
        term,
        pen.said(bytes,
                 [&] { return lowercase_first(term_row(term).label) + " " + format_bytes(bytes); }),
        [&] {
          return term != Term::kWeights
                     ? std::string()
                     : "what the device gave up, moved whole, but the " + in_flight() +
                           "; the FP32 gradients are the host's own (Ren et al., \"ZeRO-Offload\", "
                           "arXiv:2101.06840; DeepSpeed's stage_1_and_2.py cpu_offload)";
        });
  }
  if (states) {
    // The host's optimiser step reads FP32 gradients of its own (DeepSpeed's pinned buffer).
    const double experts = setup.lora_rank > 0 ? 0 : stage.expert_parameters;
    const Figure gradients =
        pen.bytes(kFp32Bytes) *
        sharded(pen, placement, setup.layout.zero_stage >= 1, stage.split.trainable, experts);
    ledger.add_to_host(Term::kFp32Gradients,
                       pen.said(gradients.value(),
                                [&] {
                                  return "FP32 gradients " + gradients.text() + " (" +
                                         format_bytes(gradients.value()) + ")";
                                }),
                       [] { return ""; });
  }
}

void rollout_to_host(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                     const StagePlacement& stage) {
  if (!kBeyondThePlate || setup.rl_trainer != RlTrainer::kVerl || setup.rollout == Rollout::kNone) {
    return;
  }
  const Pen& pen = ledger.pen();
  // Each FSDP1 flat parameter's FP32 shard on the host, a layer's and the root's, in pinned memory
  // (a non-blocking copy to the host, or CPUOffload's pin_memory), whose caching host allocator
  // rounds each block up to a power of two (PyTorch, aten/src/ATen/core/CachingHostAllocator.h:
  // PowerOf2Ceil).
  const auto pinned = [](double bytes) {
    return bytes > 0 ? std::exp2(std::ceil(std::log2(bytes))) : 0.0;
  };
  const double layer_shard = kFp32Bytes * (stage.parameters - stage.root_parameters) /
                             stage.layers / placement.zero_shards;
  const double root_shard = kFp32Bytes * stage.root_parameters / placement.zero_shards;
  const double flat_shards = stage.layers * pinned(layer_shard) + pinned(root_shard);
  // The actor's, between the phases that use them (verl/workers/engine/base.py, BaseEngineCtx):
  // its FP32 shards under param_offload, AdamW's two moments of each under optimizer_offload
  // (verl/utils/fsdp_utils.py, offload_fsdp_optimizer), as the device holds them for the update.
  if (setup.offload == Offload::kOptimizerAndWeights) {
    const double shards = flat_shards;
    ledger.add_to_host(
        Term::kWeights,
        pen.said(shards, [&] { return "the actor's FP32 shards " + format_bytes(shards); }),
        [] { return std::string("verl's actor.fsdp_config.param_offload"); });
  }
  if (setup.offload != Offload::kNone) {
    const double states = 2 * flat_shards;
    ledger.add_to_host(Term::kOptimizerStates,
                       pen.said(states, [&] { return "AdamW's state " + format_bytes(states); }),
                       [] { return std::string("verl's actor.fsdp_config.optimizer_offload"); });
  }
  // verl 1dda039b, verl/workers/engine/fsdp/transformer_impl.py: a forward-only model (role
  // "ref") is wrapped with CPUOffload(offload_params=True), its FSDP1 flat shards, 4·P/d, in the
  // host's memory between passes, each beside the pinned gradient buffer of its size FSDP1 makes
  // under CPUOffload (torch/distributed/fsdp/_flat_param.py: _cpu_grad).
  if (setup.reference_model) {
    const double reference = 2 * flat_shards;
    ledger.add_to_host(
        Term::kWeights,
        pen.said(reference,
                 [&] {
                   return "the reference model's FP32 shard and its gradient buffer " +
                          format_bytes(reference);
                 }),
        [] {
          return std::string(
              "verl 1dda039b, verl/workers/engine/fsdp/transformer_impl.py: "
              "CPUOffload(offload_params=True) for the reference");
        });
  }
  // SGLang's memory saver backs its weights up on the host as verl puts it to sleep
  // (async_sglang_server.py, launch_server: enable_weights_cpu_backup in hybrid mode), its BF16
  // share over its tensor parallelism; vLLM's level-2 sleep discards them.
  if (setup.rollout == Rollout::kSglang && setup.rollout_sleep_mode) {
    const double backup = kBf16Bytes * stage.parameters / setup.rollout_tensor_parallel;
    ledger.add_to_host(
        Term::kRolloutEngine,
        pen.said(backup,
                 [&] { return "SGLang's BF16 weights, backed up " + format_bytes(backup); }),
        [] {
          return std::string(
              "verl 1dda039b, verl/workers/rollout/sglang_rollout/"
              "async_sglang_server.py: enable_weights_cpu_backup");
        });
  }
}

}  // namespace trainmem
