// A stack brings its own (settings.hpp, bring_stack_defaults): the loss and the precision it runs,
// in place of values the reader left that it does not run; under a rollout engine, GRPO's loss.
#include <algorithm>
#include <string>

#include "settings/check.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

std::vector<BroughtSetting> bring_stack_defaults(
    TrainingSetup& setup, const std::function<bool(const std::string&)>& chosen) {
  namespace id = setting_id;
  std::vector<BroughtSetting> brought;
  // TRL's DPOTrainer under the hf stack loads a reference model unless precompute_ref_log_probs is
  // set: brought where the reader chose none. DPO alone brings one (GRPO's beta is 0 by default),
  // so one the reader did not choose goes with it (another loss or stack).
  const bool dpo = setup.stack == Stack::kHf && setup.logits && setup.loss == Loss::kDpo;
  if (!chosen(id::kReferenceModel) && dpo && !setup.reference_model) {
    setup.reference_model = true;
    brought.push_back({id::kReferenceModel, setting_text(setup, id::kReferenceModel),
                       "TRL's DPOTrainer (f2cd5771)"});
  } else if (!chosen(id::kReferenceModel) && !dpo && setup.reference_model) {
    setup.reference_model = false;
    brought.push_back({id::kReferenceModel, setting_text(setup, id::kReferenceModel),
                       "A setup without TRL's DPOTrainer"});
  }
  const StackRow& row = stack_row(setup.stack);
  if (!row.replayed) return brought;
  const std::string stack = "The " + choice_name(setup.stack) + " stack";
  // SGLang generates for verl alone (TRL drives vLLM only): verl where no trainer was chosen.
  if (setup.rollout == Rollout::kSglang && !chosen(id::kRlTrainer) &&
      setup.rl_trainer == RlTrainer::kTrl) {
    setup.rl_trainer = RlTrainer::kVerl;
    brought.push_back({id::kRlTrainer, setting_text(setup, id::kRlTrainer),
                       "SGLang (modelled under verl alone here)"});
  }
  const bool verl = setup.rollout != Rollout::kNone && setup.rl_trainer == RlTrainer::kVerl;
  const std::string verl_by = "verl (1dda039b)";
  // Under a rollout engine the loss is its trainer's: TRL's GRPOTrainer's, or verl's.
  const bool grpo = setup.rollout != Rollout::kNone;
  if (!chosen(id::kLoss) && setup.logits && !row.losses.empty() &&
      (grpo ? setup.loss != Loss::kGrpo
            : std::find(row.losses.begin(), row.losses.end(), setup.loss) == row.losses.end())) {
    setup.loss = grpo ? Loss::kGrpo : row.losses.front();
    brought.push_back({id::kLoss, setting_text(setup, id::kLoss),
                       !grpo  ? stack
                       : verl ? verl_by
                              : std::string("TRL's GRPOTrainer")});
  }
  // verl's own (verl 1dda039b: verl/trainer/config/rollout/rollout.yaml and engine_workers.py):
  // the actor sharded over every device (FSDP1's FULL_SHARD, ZeRO 3), the engine at
  // gpu_memory_utilization 0.5, split over 2 devices, asleep between generations
  // (free_cache_engine), vLLM caching prefixes (enable_prefix_caching), and the trainer's allocator
  // under expandable segments, which verl turns on itself after each weight sync
  // (set_expandable_segments(True)).
  if (verl) {
    const auto bring = [&](const char* id, auto& field, auto trl_value, auto verl_value) {
      if (chosen(id) || field != trl_value) return;
      field = verl_value;
      brought.push_back({id, setting_text(setup, id), verl_by});
    };
    bring(id::kZeroStage, setup.layout.zero_stage, 0, 3);
    bring(id::kRolloutMemoryUtilization, setup.rollout_memory_utilization,
          kDefaultRolloutMemoryUtilization, kVerlRolloutMemoryUtilization);
    bring(id::kRolloutSleepMode, setup.rollout_sleep_mode, false, true);
    bring(id::kRolloutPrefixCaching, setup.rollout_prefix_caching, false, true);
    bring(id::kExpandableSegments, setup.expandable_segments, false, true);
    const ModelShape* shape = resolve_model(setup);
    if (shape != nullptr && setup.layout.data_parallel % 2 == 0 &&
        shape->num_attention_heads % 2 == 0 && shape->num_key_value_heads % 2 == 0) {
      bring(id::kRolloutTensorParallel, setup.rollout_tensor_parallel, 1, 2);
    }
  }
  // TRL passes its colocated vLLM no enable_prefix_caching, which vLLM leaves off for a hybrid
  // (the one kind of model where it bears on what is counted): off where verl brought it on.
  if (setup.rollout == Rollout::kVllm && setup.rl_trainer == RlTrainer::kTrl &&
      setup.rollout_prefix_caching && !chosen(id::kRolloutPrefixCaching)) {
    const ModelShape* shape = resolve_model(setup);
    if (shape != nullptr && hybrid_linear_attention(*shape)) {
      setup.rollout_prefix_caching = false;
      brought.push_back({id::kRolloutPrefixCaching, setting_text(setup, id::kRolloutPrefixCaching),
                         "TRL's GRPOTrainer"});
    }
  }
  // torchtitan's experts under tensor parallelism: whole on their expert-parallel ranks (etp 1),
  // or without expert parallelism split over the t ranks (etp 0, as t): moe_sharding.py.
  if (!chosen(id::kExpertTensorParallel) && setup.layout.expert_tensor_parallel <= 1) {
    const ModelShape* shape = resolve_model(setup);
    const int runs = shape != nullptr ? stack_expert_tensor_parallel(setup, *shape) : -1;
    if (runs >= 0 && setup.layout.expert_tensor_parallel != runs) {
      setup.layout.expert_tensor_parallel = runs;
      brought.push_back(
          {id::kExpertTensorParallel, setting_text(setup, id::kExpertTensorParallel), stack});
    }
  }
  // The precision where the core's check refuses it for this stack, and bf16 is what it runs.
  if (!chosen(id::kPrecision) && row.single_dtype && setup.precision != Precision::kBf16) {
    const Answer checked = check_setup(setup, resolve_model(setup));
    if (!checked.ok() && checked.setting == id::kPrecision) {
      setup.precision = Precision::kBf16;
      brought.push_back({id::kPrecision, setting_text(setup, id::kPrecision), stack});
    }
  }
  return brought;
}

}  // namespace trainmem
