// The rollout engine's figures in words (rollout.hpp): why an engine does not start, each phase's
// peak side by side, the utilizations that hold a generation, verl's notes and a hybrid's cache.
// The figures themselves are rollout.cpp's, from the same sources.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "estimate/rollout.hpp"
#include "model/units.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// A share of the device to two decimals, rounded the safe way.
std::string share_text(double share, bool up) {
  const double hundredths = up ? std::ceil(share * 100 - 1e-9) : std::floor(share * 100 + 1e-9);
  return shortest_decimal(hundredths / 100);
}

}  // namespace

std::string rollout_start_failure(const RolloutFigures& figures, const TrainingSetup& setup) {
  const bool verl = verl_trainer(setup);
  if (setup.rollout == Rollout::kSglang &&
      figures.start_failure == RolloutStartFailure::kNoCacheMemory) {
    if (figures.share_of_bytes <= 0) {
      return "SGLang does not start: the actor's FP32 shards and the CUDA contexts already hold " +
             format_bytes(figures.startup_bytes) + " of the device's " +
             format_bytes(device_total_bytes(setup)) +
             ", leaving nothing free for its weights and KV cache (\"Not enough memory. Please "
             "try to increase --mem-fraction-static\"); shard the actor over more devices.";
    }
    return "SGLang does not start: its share, gpu_memory_utilization " +
           shortest_decimal(setup.rollout_memory_utilization) + " of the " +
           format_bytes(std::max(0.0, figures.share_of_bytes)) +
           " free as it starts (the actor's FP32 shards and the CUDA contexts hold the rest), "
           "does not hold its weights, " +
           format_bytes(figures.weights_bytes) +
           ", and leaves no KV cache (\"Not enough memory. Please try to increase "
           "--mem-fraction-static\").";
  }
  switch (figures.start_failure) {
    case RolloutStartFailure::kFreeMemory:
      return std::string("vLLM does not start: when ") + (verl ? "verl" : "TRL") +
             " makes it the trainer already holds " + format_bytes(figures.startup_bytes) +
             (verl ? " (the actor's FP32 shards and the CUDA contexts)"
                   : " (its weights and the CUDA context)") +
             ", leaving less free than the " + format_bytes(figures.engine_bytes) +
             " it asks for (\"Free memory on device ... is less than desired GPU memory "
             "utilization\").";
    case RolloutStartFailure::kNoCacheMemory:
      return "vLLM does not start: its share, " + format_bytes(figures.engine_bytes) +
             ", does not hold its weights, " + format_bytes(figures.weights_bytes) +
             ", and leaves no KV cache (\"No available memory for the cache blocks\").";
    case RolloutStartFailure::kMaxModelLength:
      return "vLLM does not start: its KV cache of " + format_count(figures.kv_tokens) +
             " tokens cannot serve one request of its max model length, " +
             format_count(figures.max_model_length) +
             " tokens (\"To serve at least one request with the model's max seq len\"); set " +
             (verl ? "verl's actor_rollout_ref.rollout.max_model_len"
                   : "TRL's vllm_max_model_length") +
             " nearer the sequence length, or give vLLM more of the device.";
    case RolloutStartFailure::kNone:
      break;
  }
  return "";
}

namespace {

// Each phase's peak on the device, side by side, and the one that decides: the most reserved, and
// of those the most allocated (awake, the cache an update leaves stays reserved through the next
// generation).
std::string phases_sentence(const RolloutFigures& figures, const Estimate& estimate) {
  std::string text =
      "Each phase of the RL step on each device, its allocated peak (and what is reserved) with "
      "the runtime: ";
  const RolloutPhase* largest = &figures.phases.front();
  std::vector<std::string> over;
  for (const RolloutPhase& phase : figures.phases) {
    const bool first = &phase == &figures.phases.front();
    text += (first                              ? "the "
             : &phase == &figures.phases.back() ? " and the "
                                                : ", the ") +
            phase.id + " " + format_bytes(phase.allocated_bytes) + " (" +
            format_bytes(phase.bytes) + ")";
    if (std::make_pair(phase.bytes, phase.allocated_bytes) >
        std::make_pair(largest->bytes, largest->allocated_bytes)) {
      largest = &phase;
    }
    if (!phase.fits) over.push_back("the " + phase.id);
  }
  text += "; the " + largest->id + " decides";
  const std::string usable = " the " + format_bytes(estimate.usable_bytes) + " usable.";
  if (over.empty()) return text + ", and each fits" + usable;
  std::string named;
  for (std::size_t index = 0; index < over.size(); ++index) {
    named += (index == 0 ? "" : index + 1 == over.size() ? " and " : ", ") + over[index];
  }
  return text + "; " + named + (over.size() == 1 ? " does" : " do") + " not fit" + usable;
}

// The utilizations between which the run works, in one sentence.
std::string utilization_range(const RolloutFigures& figures, const TrainingSetup& setup) {
  const bool sleeping = setup.rollout_sleep_mode;
  const bool sglang = setup.rollout == Rollout::kSglang;
  const double largest = std::floor(figures.largest_utilization * 100 + 1e-9) / 100;
  const double least = std::max(figures.least_starting_utilization, figures.smallest_utilization);
  std::string text =
      largest > 0 ? std::string("The largest gpu_memory_utilization ") +
                        (sglang ? "(SGLang's mem_fraction_static, of the " +
                                      format_bytes(figures.share_of_bytes) + " free as it starts) "
                                : "") +
                        "that leaves the trainer room is " + share_text(largest, false) + "."
      : sleeping ? "No gpu_memory_utilization helps: the trainer alone needs " +
                       format_bytes(figures.trainer_bytes) + "."
                 : "No gpu_memory_utilization leaves the trainer room: it needs " +
                       format_bytes(figures.trainer_bytes) + " beside any engine.";
  const auto least_text = [](double share) {
    return share > 1 ? std::string("more than the whole device") : share_text(share, true);
  };
  text +=
      (sglang ? std::string(" The least whose KV cache holds one sequence beside its weights is ")
              : std::string(" The least with which vLLM starts (its weights and one request of "
                            "its max model length) is ")) +
      least_text(figures.least_starting_utilization) +
      "; the least whose KV cache holds a whole generation, " +
      least_text(figures.smallest_utilization) +
      (largest > 0 && least > largest ? ": none does both." : ".");
  return text;
}

// verl's phases in words (hf_rollout_phases → verl_rollout_phases): the weight sync, sleep mode
// as free_cache_engine runs it, and the log-probability passes and the update over packed tokens.
std::vector<std::string> verl_notes(const RolloutFigures& figures, const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const bool sglang = setup.rollout == Rollout::kSglang;
  const std::string engine = rollout_engine_name(setup);
  const std::string bucket = format_count(kVerlWeightSyncBucketMiB) + " MiB";
  std::vector<std::string> notes;
  notes.push_back(
      (setup.rollout_sleep_mode
           ? "verl's weight sync wakes " + engine +
                 "'s weights (its KV cache after) and streams the actor's parameters to them"
           : "verl's weight sync streams the actor's parameters to " + engine +
                 "'s weights, awake through the step") +
      ": FSDP1's sharded state dict gathers each unit "
      "in FP32 (the root unit, the embedding and the output layer, for the whole traversal) and "
      "clones each device's chunks, held to the stream's end; each parameter is then gathered "
      "whole in FP32" +
      (sglang ? ", the gathered tensors kept in buckets of up to " + bucket +
                    " (update_weights_bucket_megabytes) that SGLang maps by CUDA IPC, a larger "
                    "one sent alone."
              : " into a " + bucket +
                    " CUDA-IPC bucket (update_weights_bucket_megabytes), a larger one sent as it "
                    "is."));
  if (setup.rollout_sleep_mode) {
    notes.push_back(
        (sglang ? std::string("Sleep mode (verl's free_cache_engine: SGLang's "
                              "release_memory_occupation of its weights and KV cache, which its "
                              "memory saver unmaps, its weights backed up on the host)")
                : std::string("Sleep mode (verl's free_cache_engine, level 2)")) +
        ": " + engine +
        "'s weights and KV cache are woken for the weight sync and the generation, beside what "
        "the trainer keeps between updates, " +
        (setup.offload == Offload::kOptimizerAndWeights
             ? "the runtime (the actor's FP32 shards and AdamW's state on the host, "
               "param_offload and optimizer_offload, loaded for each phase that uses them)"
         : setup.offload == Offload::kOptimizer
             ? "the actor's FP32 shards and the runtime (AdamW's state on the host, "
               "optimizer_offload, loaded for the update)"
             : "the actor's FP32 shards, AdamW's state and the runtime") +
        (setup.reference_model ? ", and the reference's BF16 root, gathered from its first pass on"
                               : "") +
        " (" + format_bytes(figures.resident_bytes) +
        ", its gradients freed by zero_grad and its cache emptied); the log-probabilities and the "
        "update hold the trainer alone, beside " +
        engine + "'s process. Not counted: what " + engine +
        (sglang ? " keeps asleep (its CUDA graphs and its process's cache)"
                : " keeps asleep (its CUDA graphs' pool, its runner's and sampler's buffers)") +
        ", and expandable segments turned off for the sync (verl turns them back on after).");
  }
  notes.push_back(
      std::string("The log-probabilities are verl's compute_log_prob") +
      (setup.reference_model
           ? " and, with a reference model, compute_ref_log_prob (its units gathered from the "
             "host, where verl keeps its parameters)"
           : "") +
      ", under no_grad a micro-batch at a time: one layer's work at a time (as much as it keeps "
      "with gradients, an upper bound)" +
      (setup.logits
           ? " and the BF16 logits of every packed token, prompt and response, with their "
             "quotient by the temperature (the entropy, compiled, fuses into reductions with no "
             "buffer of that size: not measured). The update is verl's policy loss over the same "
             "logits: flash-attn's cross-entropy writes its gradient in place."
           : ". Both are counted without their logits: count the logits to see them."));
  return notes;
}

// A hybrid's KV cache in words: its blocks, what a block holds, and vLLM's logged tokens.
std::string hybrid_cache_text(const RolloutFigures& figures, const ModelShape& shape) {
  const HybridKvCache& cache = figures.hybrid;
  const std::string block = format_count(cache.block_tokens);
  const double state_blocks = cache.running_state_blocks();
  return "a KV cache of " + format_count(figures.kv_blocks) + " blocks of " + block +
         " tokens, before its profiled forward pass's peak (vLLM's hybrid layout: the attention's "
         "block raised until its page holds a sequence's state): a block holds " +
         block + " tokens of a group of its " + format_count(cache.attention_layers) + " " +
         attention_layers_name(shape) + " (" + format_count(figures.kv_bytes_per_token) +
         " B a token for them all) or one sequence's state in a group of its " +
         format_count(cache.state_layers) + " " + linear_layers_name(shape) +
         " (a sequence's state takes " + format_count(state_blocks) +
         (state_blocks == 1 ? " block, " : " blocks, ") +
         shortest_decimal(std::round(state_blocks * cache.block_bytes() / 1e5) / 10) +
         " MB with their padding" +
         (cache.state_every_block
              ? ", two a group as it runs under prefix caching, which caches Mamba-2's state "
                "at every chunk-aligned block: vLLM budgets one for every " +
                    block +
                    " tokens of its max model length as it starts, and a prefill "
                    "takes one for every " +
                    block + " tokens of its prompt at once"
          : cache.state_blocks > 1 ? ", two a group under prefix caching: the running "
                                     "state's and the one before it"
                                   : "") +
         "); " + format_count(figures.kv_tokens) + " tokens at its max model length of " +
         format_count(figures.max_model_length) + ", as vLLM logs its size.";
}

std::vector<std::string> rollout_notes(const RolloutFigures& figures, const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const ModelShape& shape = *resolve_model(setup);  // rollout_figures counted: it resolves
  std::vector<std::string> notes;
  notes.push_back(phases_sentence(figures, estimate));
  const std::string share = shortest_decimal(setup.rollout_memory_utilization);
  const int tp = setup.rollout_tensor_parallel;
  const std::string split = tp == 1 ? "" : ", split over " + std::to_string(tp) + " devices";
  const bool sglang = setup.rollout == Rollout::kSglang;
  notes.push_back(
      std::string(rollout_engine_name(setup)) + ", colocated at gpu_memory_utilization " + share +
      (sglang ? " (its mem_fraction_static: a share of the " +
                    format_bytes(std::max(0.0, figures.share_of_bytes)) +
                    " free as it starts, which the trainer's startup leaves)"
              : "") +
      split + (verl_trainer(setup) ? " in processes of its own" : "") + ", takes " +
      format_bytes(figures.engine_bytes) +
      (setup.rollout_sleep_mode
           ? " of each device to generate, asleep but for the generation: its BF16 weights ("
           : " of each device, awake through the step: its BF16 weights (") +
      format_bytes(figures.weights_bytes) + (tp == 1 ? "" : " a device") +
      (sglang
           ? "), a KV cache of " + format_count(figures.kv_tokens) + " tokens (" +
                 format_count(figures.kv_bytes_per_token) + " B a token) and its request table (" +
                 format_count(std::round(figures.beyond_share_bytes / 1e6)) + " MB" +
                 "; its activations and CUDA graphs, beyond its share, not counted). A "
                 "generation of "
       : figures.hybrid.present()
           ? ") and " + hybrid_cache_text(figures, shape) + " A generation of "
           : ") and a KV cache of at most " + format_count(figures.kv_tokens) + " tokens (" +
                 format_count(figures.kv_bytes_per_token) +
                 " B a token, before its profiled forward pass's peak). A generation of ") +
      format_count(figures.rollout_sequences) +
      (figures.rollout_sequences == 1 ? " sequence of " : " sequences of ") +
      format_count(setup.sequence_length) + " tokens" +
      (tp == 1 ? "" : " (its " + std::to_string(tp) + " devices' prompts together)") + " needs " +
      (figures.hybrid.present() ? format_count(generation_blocks(figures, setup)) + " blocks"
                                : format_count(figures.rollout_tokens) + " tokens") +
      (!figures.starts()                  ? "."
       : holds_generation(figures, setup) ? ": it holds them."
       : sglang ? ": SGLang holds fewer, and retracts sequences to make room."
                : ": vLLM holds fewer, and preempts sequences to make room."));
  if (!figures.starts()) notes.push_back(rollout_start_failure(figures, setup));
  if (verl_trainer(setup)) {
    for (std::string& note : verl_notes(figures, estimate)) notes.push_back(std::move(note));
    notes.push_back(utilization_range(figures, setup));
    return notes;
  }
  if (setup.rollout_sleep_mode) {
    // trl/generation/vllm_generation.py: empty_cache, wake_up(weights), reload_weights,
    // wake_up(kv_cache), generate, sleep(level=2).
    notes.push_back(
        std::string(
            "Sleep mode (TRL's vllm_enable_sleep_mode, level 2): vLLM wakes for the generation "
            "alone, beside what the trainer keeps between updates, its weights, optimiser state") +
        (held_by_term(estimate, "ddp-gradient-buckets") > 0 ? ", DDP's buckets" : "") +
        " and runtime (" + format_bytes(figures.resident_bytes) +
        ", its gradients freed and its cache emptied); the log-probabilities and the update hold "
        "the trainer alone. Not counted: what vLLM keeps asleep (its CUDA graphs' pool, its "
        "runner's and sampler's "
        "buffers), cache segments empty_cache cannot return, and the weight sync's copies as "
        "vLLM's weights wake before its KV cache.");
  }
  notes.push_back(utilization_range(figures, setup));
  // TRL's _generate_and_score_completions: old_per_token_logps under no_grad, micro-batch by
  // micro-batch (vLLM's importance-sampling correction, on by default), and with beta above 0 the
  // reference model's, not modelled (beta 0, TRL's default, loads none).
  notes.push_back(
      std::string("The log-probabilities are TRL's old_per_token_logps under no_grad, a "
                  "micro-batch at a time: one layer's work at a time (as much as it keeps with "
                  "gradients, an upper bound)") +
      (setup.logits
           ? " and the completions' logits. The update is GRPO's: its layers over whole "
             "sequences, prompt and completion, and its loss over their last " +
                 format_count(setup.completion_length) + " tokens (TRL's max_completion_length)" +
                 (setup.reference_model
                      ? std::string(". With beta above 0 the reference model's log-probabilities "
                                    "follow the policy's, the same pass") +
                            (setup.lora_rank > 0 ? " with the adapters disabled"
                                                 : " over its own copy of the model")
                      : std::string(". With beta 0, TRL's default, there is no reference model"))
           : ". Both are counted without their logits and GRPO's loss over the completions: "
             "count the logits to see them") +
      std::string(figures.startup_bytes < 0
                      ? "; and under FSDP, whether the model is on the device when vLLM starts "
                        "(its free-memory check) is not derived."
                      : "."));
  return notes;
}

}  // namespace

void add_rollout(Estimate& estimate) {
  const RolloutFigures figures = rollout_figures(estimate);
  if (!figures.counted) return;
  for (std::string& note : rollout_notes(figures, estimate)) {
    estimate.notes.push_back(std::move(note));
  }
  if (!figures.starts()) estimate.fits = false;
}

}  // namespace trainmem
