#include "trainmem/explore.hpp"

#include <algorithm>
#include <cmath>

#include "estimate/rollout.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

constexpr int kMapShortestSequence = 1 << 10;  // 1,024 tokens
constexpr int kMapLongestSequence = 1 << 17;   // 131,072 tokens
constexpr int kMapLargestMicroBatch = 16;      // the plate's slider

}  // namespace

namespace {

// One change to try: its id, its words and the changed setup.
struct Change {
  std::string change;
  std::string label;
  TrainingSetup setup;
};

// FlashAttention, recomputation, ZeRO and doubling a parallel degree.
void add_layout_changes(const TrainingSetup& setup, std::vector<Change>& changes) {
  const ParallelLayout& layout = setup.layout;
  const auto add = [&](std::string change, std::string label, const auto& edit) {
    TrainingSetup changed = setup;
    edit(changed);
    changes.push_back({std::move(change), std::move(label), changed});
  };
  if (!setup.flash_attention) {
    add("flash-attention", "Turn on FlashAttention",
        [](TrainingSetup& changed) { changed.flash_attention = true; });
  }
  for (Recompute recompute : {Recompute::kSelective, Recompute::kFull}) {
    if (setup.recompute == recompute) continue;
    add("recompute-" + choice_id(recompute), choice_name(recompute) + " recomputation",
        [&](TrainingSetup& changed) { changed.recompute = recompute; });
  }
  if (layout.zero_stage < kMaxZeroStage) {
    const int next = layout.zero_stage + 1;
    const bool no_replicas =
        static_cast<long long>(layout.data_parallel) * layout.context_parallel == 1;
    add("zero-next",
        "ZeRO-" + std::to_string(next) + (no_replicas ? " over 2 data-parallel devices" : ""),
        [&](TrainingSetup& changed) {
          changed.layout.zero_stage = next;
          if (no_replicas) changed.layout.data_parallel = 2;  // ZeRO needs replicas to shard over
        });
  }
  if (layout.zero_stage > 0) {
    add("dp-double", "Double data parallelism (d " + std::to_string(layout.data_parallel * 2) + ")",
        [](TrainingSetup& changed) { changed.layout.data_parallel *= 2; });
  }
  // A stack with a rule of its own for the experts' tensor parallelism (torchtitan's) runs its
  // own under the changed layout.
  const ModelShape* shape = resolve_model(setup);
  const auto follow_stack_experts = [&](TrainingSetup& changed) {
    const int runs = shape != nullptr ? stack_expert_tensor_parallel(changed, *shape) : -1;
    if (runs >= 0) changed.layout.expert_tensor_parallel = runs;
  };
  add("tp-double",
      "Double tensor parallelism (t " + std::to_string(layout.tensor_parallel * 2) +
          ", sequence parallel)",
      [&](TrainingSetup& changed) {
        changed.layout.tensor_parallel *= 2;
        changed.layout.sequence_parallel = true;
        follow_stack_experts(changed);
      });
  add("pp-double",
      "Double pipeline parallelism (p " + std::to_string(layout.pipeline_parallel * 2) + ")",
      [](TrainingSetup& changed) { changed.layout.pipeline_parallel *= 2; });
  add("cp-double",
      "Double context parallelism (c " + std::to_string(layout.context_parallel * 2) + ")",
      [](TrainingSetup& changed) { changed.layout.context_parallel *= 2; });
  if (shape != nullptr && shape->num_experts > 1 &&
      shape->num_experts % (2 * layout.expert_parallel) == 0) {
    // Expert parallelism is carved from the d·t·c devices: d grows until they hold ep·etp.
    TrainingSetup changed = setup;
    changed.layout.expert_parallel = layout.expert_parallel * 2;
    follow_stack_experts(changed);
    const int experts = changed.layout.expert_parallel * expert_tensor_parallel_of(changed.layout);
    while ((static_cast<long long>(changed.layout.data_parallel) * layout.tensor_parallel *
            layout.context_parallel) %
               experts !=
           0) {
      changed.layout.data_parallel *= 2;
    }
    const bool more_devices = changed.layout.data_parallel != layout.data_parallel;
    changes.push_back(
        {"ep-double",
         "Double expert parallelism (ep " + std::to_string(changed.layout.expert_parallel) +
             (more_devices ? ", d " + std::to_string(changed.layout.data_parallel) : "") + ")",
         changed});
  }
}

// 8-bit Adam, Muon, a smaller micro-batch, and fine-tuning's: a quantised base and offloading.
void add_recipe_changes(const TrainingSetup& setup, std::vector<Change>& changes) {
  const auto add = [&](std::string change, std::string label, const auto& edit) {
    TrainingSetup changed = setup;
    edit(changed);
    changes.push_back({std::move(change), std::move(label), changed});
  };
  if (setup.optimizer != Optimizer::kAdam8bit) {
    add(choice_id(Optimizer::kAdam8bit), choice_name(Optimizer::kAdam8bit),
        [](TrainingSetup& changed) { changed.optimizer = Optimizer::kAdam8bit; });
  }
  // Muon's one momentum buffer for the weight matrices, under the ideal step where it is counted.
  if (setup.optimizer != Optimizer::kMuon && setup.stack == Stack::kIdeal && setup.lora_rank == 0) {
    add(choice_id(Optimizer::kMuon), "Muon for the weight matrices (AdamW for the rest)",
        [](TrainingSetup& changed) { changed.optimizer = Optimizer::kMuon; });
  }
  if (setup.micro_batch_sequences > 1) {
    // Gradient accumulation: two half micro-batches per step train on the same batch; the
    // gradient buffer is the same, the activations halve.
    const int half = setup.micro_batch_sequences / 2;
    add("micro-batch-half",
        "Halve the micro-batch and accumulate gradients over two (" + std::to_string(half) +
            (half == 1 ? " sequence)" : " sequences)"),
        [&](TrainingSetup& changed) { changed.micro_batch_sequences = half; });
  }
  // Fine-tuning's savings, offered once a setup fine-tunes or offloads (the plate's pre-training
  // view keeps its own list): a quantised base, and what offloading moves to the host.
  const bool fine_tuning =
      setup.lora_rank > 0 || setup.offload != Offload::kNone || setup.offload_activations;
  if (setup.lora_rank > 0 && setup.base_weights != BaseWeights::kNf4) {
    add("base-weights-nf4", "Hold the frozen base in NF4 (QLoRA)",
        [](TrainingSetup& changed) { changed.base_weights = BaseWeights::kNf4; });
  }
  // verl's offload is its own (add_rollout_changes).
  if (!fine_tuning || verl_trainer(setup)) return;
  for (Offload offload : {Offload::kOptimizer, Offload::kOptimizerAndWeights}) {
    if (setup.offload >= offload) continue;
    add("offload-" + choice_id(offload),
        offload == Offload::kOptimizer
            ? "Offload the optimiser state and master weights to the host"
            : "Offload the weights and gradients too, but the layers in flight",
        [&](TrainingSetup& changed) { changed.offload = offload; });
  }
  if (!setup.offload_activations) {
    add("offload-activations", "Offload the activations to the host, but the layers in flight",
        [](TrainingSetup& changed) { changed.offload_activations = true; });
  }
}

// RL post-training's own levers (rollout.hpp): vLLM asleep through the log-probabilities and the
// update, and vLLM given the least of the device that holds its weights and a whole generation's
// KV cache (with TRL's vllm_max_model_length at the sequence length, where the model's positions
// would ask for more), as the estimate counts its share: its profiled pass's peak and CUDA graphs,
// which vLLM also takes from the share, are not derived, so a run there may preempt.
void add_rollout_changes(const TrainingSetup& setup, std::vector<Change>& changes) {
  if (setup.rollout == Rollout::kNone) return;
  if (!setup.rollout_sleep_mode) {
    TrainingSetup changed = setup;
    changed.rollout_sleep_mode = true;
    changes.push_back({"rollout-sleep-mode",
                       std::string("Put ") + rollout_engine_name(setup) +
                           " to sleep but for the generation (" +
                           (setup.rl_trainer == RlTrainer::kVerl ? "verl's free_cache_engine"
                                                                 : "TRL's vllm_enable_sleep_mode") +
                           ")",
                       changed});
  }
  // verl's offload of the actor between the phases that use it (its fsdp_config).
  if (verl_trainer(setup)) {
    for (Offload offload : {Offload::kOptimizer, Offload::kOptimizerAndWeights}) {
      if (setup.offload >= offload) continue;
      TrainingSetup offloaded = setup;
      offloaded.offload = offload;
      changes.push_back({"offload-" + choice_id(offload),
                         offload == Offload::kOptimizer
                             ? "Offload the actor's AdamW state but for the update (verl's "
                               "optimizer_offload)"
                             : "Offload the actor's FP32 shards and AdamW state but for the "
                               "passes that use them (verl's param_offload and "
                               "optimizer_offload)",
                         offloaded});
    }
  }
  const bool sglang = setup.rollout == Rollout::kSglang;
  TrainingSetup changed = setup;
  if (changed.rollout_max_model_length == 0 && !sglang)
    changed.rollout_max_model_length = setup.sequence_length;
  const RolloutFigures figures = rollout_figures(estimate_memory(changed));
  if (!figures.counted) return;
  const double least =
      std::ceil(std::max(figures.least_starting_utilization, figures.smallest_utilization) * 100 -
                1e-9) /
      100;
  if (least >= setup.rollout_memory_utilization || least > 1) return;
  changed.rollout_memory_utilization = std::max(least, kMinRolloutMemoryUtilization);
  const bool length = setup.rollout_max_model_length == 0 && !sglang;
  changes.push_back(
      {"rollout-memory-utilization",
       std::string("Give ") + rollout_engine_name(setup) + " gpu_memory_utilization " +
           shortest_decimal(changed.rollout_memory_utilization) +
           ", the least that holds its weights and a generation's KV cache" +
           (length ? " (its max model length " + format_count(setup.sequence_length) + ")" : ""),
       changed});
}

}  // namespace

SavingsList rank_savings(const TrainingSetup& setup) {
  SavingsList list;
  list.baseline = estimate_memory(setup);
  if (!list.baseline.answer.ok()) {
    list.answer = list.baseline.answer;
    return list;
  }
  std::vector<Change> changes;
  add_layout_changes(setup, changes);
  add_recipe_changes(setup, changes);
  add_rollout_changes(setup, changes);
  for (const Change& change : changes) {
    Saving saving;
    saving.change = change.change;
    saving.label = change.label;
    saving.estimate = estimate_memory(change.setup);
    if (!saving.estimate.answer.ok()) continue;
    saving.bytes_saved = list.baseline.bytes.total() - saving.estimate.bytes.total();
    saving.devices_added = saving.estimate.num_devices - list.baseline.num_devices;
    if (saving.bytes_saved > 0) list.savings.push_back(saving);
  }
  std::stable_sort(
      list.savings.begin(), list.savings.end(),
      [](const Saving& left, const Saving& right) { return left.bytes_saved > right.bytes_saved; });
  return list;
}

FitMap fit_map(const TrainingSetup& setup) {
  FitMap map;
  const Estimate checked = estimate_memory(setup);
  if (!checked.answer.ok()) {
    map.answer = checked.answer;
    return map;
  }
  for (int s = kMapShortestSequence; s <= kMapLongestSequence; s *= 2)
    map.sequence_lengths.push_back(s);
  for (int b = 1; b <= kMapLargestMicroBatch; b *= 2) map.micro_batch_sequences.push_back(b);
  for (int s : map.sequence_lengths) {
    for (int b : map.micro_batch_sequences) {
      TrainingSetup cell_setup = setup;
      cell_setup.sequence_length = s;
      cell_setup.micro_batch_sequences = b;
      const Estimate estimate = estimate_memory(cell_setup);
      FitCell cell;
      cell.sequence_length = s;
      cell.micro_batch_sequences = b;
      cell.valid = estimate.answer.ok();
      if (cell.valid) {
        cell.total_bytes = estimate.bytes.total();
        cell.devices_worth = estimate.devices_worth;
        cell.fits = estimate.fits;
      }
      map.cells.push_back(cell);
    }
  }
  return map;
}

std::string compare_estimates(const Estimate& pinned, const Estimate& current) {
  if (!pinned.answer.ok() || !current.answer.ok()) {
    return "Only two accepted configurations can be compared.";
  }
  const std::string change = format_change(pinned.bytes.total(), current.bytes.total());
  const std::string devices = [&] {
    if (current.num_devices == pinned.num_devices) return std::string();
    const auto count = [](double n) { return format_count(n) + (n == 1 ? " device" : " devices"); };
    return ", on " + count(current.num_devices) + " instead of " + count(pinned.num_devices);
  }();
  const std::string both = " (" + format_bytes(current.bytes.total()) + " against " +
                           format_bytes(pinned.bytes.total()) + devices + ")";
  if (change == "the same") {
    return "This configuration needs the same memory on its most loaded device as the pinned one" +
           both + ".";
  }
  return "This configuration needs " + change + " on its most loaded device than the pinned one" +
         both + ".";
}

}  // namespace trainmem
