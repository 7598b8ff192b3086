// verl's launch line (python3 -m verl.trainer.main_ppo key=value …, Hydra's overrides on
// verl/trainer/config/ppo_trainer.yaml), read into the setup (launch.hpp) as verl 1dda039b (August
// 22, 2026) runs its colocated GRPO: the V1 trainer (trainer.use_v1) over
// verl/workers/engine_workers.py's ActorRolloutRefWorker, an FSDP1 actor, vLLM asleep between
// generations (TrainingSetup::rl_trainer). Defaults are _generated_ppo_trainer.yaml's at that
// commit. What bears on memory and is not modelled is refused by its key; what bears on it and is
// not read is listed as not understood, which leaves no verdict.
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/command_line.hpp"
#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "launch/yaml_keys.hpp"
#include "model/config_text.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using namespace yaml_keys;

constexpr const char* kVerlLineKind = "verl launch line (verl.trainer.main_ppo, 1dda039b)";
constexpr const char* kVerlProgram = "verl.trainer.main_ppo";
constexpr double kMaxCount = 1e9;

const std::string kActor = "actor_rollout_ref.actor.";
const std::string kModel = "actor_rollout_ref.model.";
const std::string kRollout = "actor_rollout_ref.rollout.";
const std::string kRef = "actor_rollout_ref.ref.";

// Each override listed as the line writes it: key=value.
const KeyDialect& hydra_dialect() {
  static const KeyDialect dialect = {
      ListRead::kOnAccept,
      [](const std::string& name, const nlohmann::json& value) {
        return name + "=" + scalar_of(value).value_or("");
      },
      [](const nlohmann::json& value) {
        return "'" + scalar_of(value).value_or("").substr(0, kMaxQuotedValueBytes) + "'";
      },
      nullptr, true};
  return dialect;
}

// The line's overrides: key=value words (Hydra's + and ++ prefixes dropped), a word without "="
// the previous value's continuation (a list the shell split at its spaces). `more` where the line
// passes the script's own arguments on ($@), which it does not say.
FileKeys overrides_of(const std::vector<std::string>& words, bool& more, std::string& problem) {
  FileKeys keys;
  for (const std::string& word : words) {
    if (word == "$@" || word == "\"$@\"" || word == "${@}") {
      more = true;
      continue;
    }
    const std::size_t equals = word.find('=');
    if (equals == std::string::npos && word.find('$') != std::string::npos) {
      problem = "'" + word.substr(0, 40) +
                "' is the shell's variable or array of overrides: expand it first, as the shell "
                "would (echo the command, or run the script under set -x).";
      return keys;
    }
    if (equals == std::string::npos) {
      if (keys.empty()) {
        problem = "'" + word.substr(0, 40) +
                  "' stands where verl's main_ppo takes key=value overrides (Hydra's).";
        return keys;
      }
      keys.back().value = keys.back().value.get<std::string>() + " " + word;
      continue;
    }
    std::string key = word.substr(0, equals);
    if (key.rfind("~", 0) == 0) {
      problem = "'" + word.substr(0, 40) + "' deletes a key of verl's config, which is not read.";
      return keys;
    }
    while (!key.empty() && key[0] == '+') key.erase(0, 1);
    std::string value = word.substr(equals + 1);
    if (value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0]) {
      value = value.substr(1, value.size() - 2);
    }
    // Hydra takes a key given twice at its last value (verl's own examples repeat some).
    bool repeated = false;
    for (FileKey& earlier : keys) {
      if (earlier.key == key) {
        earlier.value = value;
        repeated = true;
      }
    }
    if (!repeated) keys.push_back({key, value});
  }
  return keys;
}

// Overrides with no bearing on the devices' memory: the data's files and their handling, logging,
// checkpoints, the learning rate and the loss's coefficients, sampling, the reward's function,
// profiling, Ray's settings, and what vLLM does within its own share (its scheduler's batch; its
// prefix cache is read apart, as it pages a hybrid's state).
bool verl_no_bearing(const std::string& key) {
  static const std::set<std::string> keys = {"data.train_files",
                                             "data.val_files",
                                             "data.filter_overlong_prompts",
                                             "data.truncation",
                                             "data.shuffle",
                                             "data.prompt_key",
                                             "data.return_raw_chat",
                                             "data.val_batch_size",
                                             "data.dataloader_num_workers",
                                             "data.seed",
                                             "data.image_key",
                                             "data.tokenizer",
                                             "algorithm.gamma",
                                             "algorithm.lam",
                                             "algorithm.norm_adv_by_std_in_grpo",
                                             "actor_rollout_ref.actor.ppo_epochs",
                                             "actor_rollout_ref.actor.shuffle",
                                             "actor_rollout_ref.actor.clip_ratio",
                                             "actor_rollout_ref.actor.clip_ratio_low",
                                             "actor_rollout_ref.actor.clip_ratio_high",
                                             "actor_rollout_ref.actor.clip_ratio_c",
                                             "actor_rollout_ref.actor.loss_agg_mode",
                                             "actor_rollout_ref.actor.kl_loss_coef",
                                             "actor_rollout_ref.actor.kl_loss_type",
                                             "actor_rollout_ref.actor.grad_clip",
                                             "actor_rollout_ref.ref.fsdp_config.param_offload",
                                             "actor_rollout_ref.rollout.temperature",
                                             "actor_rollout_ref.rollout.top_p",
                                             "actor_rollout_ref.rollout.top_k",
                                             "actor_rollout_ref.rollout.do_sample",
                                             "actor_rollout_ref.rollout.seed",
                                             "actor_rollout_ref.rollout.ignore_eos",
                                             "actor_rollout_ref.rollout.max_num_batched_tokens",
                                             "actor_rollout_ref.rollout.max_num_seqs",
                                             "actor_rollout_ref.rollout.enable_chunked_prefill",
                                             "actor_rollout_ref.rollout.load_format",
                                             "actor_rollout_ref.rollout.disable_log_stats",
                                             "actor_rollout_ref.rollout.calculate_log_probs",
                                             "actor_rollout_ref.rollout.enforce_eager",
                                             "data.filter_overlong_prompts_workers",
                                             "reward.num_workers",
                                             "actor_rollout_ref.rollout.layered_summon",
                                             "actor_rollout_ref.rollout.dtype",
                                             "actor_rollout_ref.model.trust_remote_code",
                                             "trainer.device",
                                             "trainer.balance_batch"};
  if (keys.count(key) > 0) return true;
  // The off-policy correction's weights (all but bypass_mode, which skips a pass).
  if (key.rfind("algorithm.rollout_correction.", 0) == 0) {
    return key != "algorithm.rollout_correction.bypass_mode";
  }
  for (const char* prefix : {"trainer.logger",
                             "trainer.project_name",
                             "trainer.experiment_name",
                             "trainer.save_freq",
                             "trainer.test_freq",
                             "trainer.total_epochs",
                             "trainer.total_training_steps",
                             "trainer.val_before_train",
                             "trainer.default_local_dir",
                             "trainer.resume",
                             "trainer.critic_warmup",
                             "trainer.log_val_generations",
                             "trainer.max_actor_ckpt_to_keep",
                             "trainer.max_critic_ckpt_to_keep",
                             "trainer.del_local_ckpt_after_load",
                             "trainer.rollout_data_dir",
                             "trainer.validation_data_dir",
                             "trainer.esi_redundant_time",
                             "actor_rollout_ref.actor.optim.lr",
                             "actor_rollout_ref.actor.optim.weight_decay",
                             "actor_rollout_ref.actor.optim.betas",
                             "actor_rollout_ref.actor.optim.clip_grad",
                             "actor_rollout_ref.actor.optim.warmup_style",
                             "actor_rollout_ref.actor.optim.min_lr_ratio",
                             "actor_rollout_ref.actor.optim.lr_scheduler_type",
                             "actor_rollout_ref.actor.policy_loss.",
                             "actor_rollout_ref.actor.checkpoint.",
                             "actor_rollout_ref.rollout.val_kwargs.",
                             "actor_rollout_ref.rollout.agent.num_workers",
                             "algorithm.kl_ctrl.",
                             "custom_reward_function.",
                             "reward.reward_manager",
                             "reward_model.reward_manager",
                             "reward.custom_reward_function.",
                             "global_profiler.",
                             "ray_kwargs.",
                             "ray_init."}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  // The critic's keys without a bearing on memory (verl 1dda039b's critic/dp_critic.yaml):
  // its optimiser's rates and schedule, its loss's constants, its checkpoints and profiler, and
  // the batch keys its V1 trainer never passes to the engine (read_critic).
  for (const char* prefix : {"critic.optim.lr",
                             "critic.optim.weight_decay",
                             "critic.optim.betas",
                             "critic.optim.clip_grad",
                             "critic.optim.warmup_style",
                             "critic.optim.min_lr_ratio",
                             "critic.optim.lr_scheduler_type",
                             "critic.optim.total_training_steps",
                             "critic.cliprange_value",
                             "critic.loss_agg_mode",
                             "critic.loss_scale_factor",
                             "critic.ppo_epochs",
                             "critic.shuffle",
                             "critic.data_loader_seed",
                             "critic.grad_clip",
                             "critic.rollout_n",
                             "critic.checkpoint.",
                             "critic.profiler.",
                             "critic.ppo_max_token_len_per_gpu",
                             "critic.forward_max_token_len_per_gpu",
                             "critic.forward_micro_batch_size",
                             "critic.ppo_infer_micro_batch_size_per_gpu",
                             "critic.model.trust_remote_code",
                             "critic.model.tokenizer_path",
                             "critic.model.external_lib"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Keys of an earlier verl than 1dda039b, whose line is not read as its own.
const char* earlier_key(const std::string& key) {
  if (key == "trainer.use_legacy_worker_impl") {
    return "chose between fsdp_workers.py and the engine workers before the V1 trainer (verl "
           "b178a3cd, January 2026, and earlier)";
  }
  if (key.rfind("critic.model.fsdp_config.", 0) == 0) {
    return "was the critic's FSDP config before its engine (verl b178a3cd, January 2026, and "
           "earlier: critic/dp_critic.yaml); 1dda039b's is critic.fsdp";
  }
  return nullptr;
}

// A switch whose true is not modelled: refused by its key with `why`.
void refuse_if_on(KeyReader& reader, const std::string& key, const std::string& why) {
  if (reader.get(key, text_bool()).value_or(false)) reader.fault(key, key + "=True: " + why);
}

// verl's critic, where the line trains one: as the actor's model and wrapping (stack_hf.hpp,
// Critic), its micro-batches packed to ppo_infer_max_token_len_per_gpu (verl 1dda039b,
// verl/trainer/ppo/v1/trainer_base.py gives its engine that budget for both passes, whatever
// use_dynamic_bsz and the critic's other batch keys say); what differs is refused by its key.
void read_critic(KeyReader& reader, LaunchConfig& launch, bool dynamic, double mini) {
  const std::string actor_path = reader.get(kModel + "path", given_text()).value_or("");
  const std::optional<std::string> path = reader.get("critic.model.path", given_text());
  if (!path) {
    reader.fault("critic.model.path",
                 "critic.model.path is not given: verl's default is ~/models/deepseek-llm-7b-chat "
                 "(hf_model.yaml), not the actor's; give the actor's model.");
  } else if (*path != actor_path) {
    reader.fault("critic.model.path", "critic.model.path " + path->substr(0, 60) +
                                          ": a critic of another model than the actor's is not "
                                          "modelled; give the actor's.");
  }
  const std::string strategy = reader.get("critic.strategy", given_text()).value_or("fsdp");
  if (strategy != "fsdp") {
    reader.fault("critic.strategy", "critic.strategy " + strategy.substr(0, 40) +
                                        " is not modelled: verl's default, fsdp (FSDP1), is.");
  }
  for (const char* key : {"critic.fsdp.param_offload", "critic.fsdp.optimizer_offload",
                          "critic.fsdp.offload_policy", "critic.fsdp.forward_prefetch"}) {
    refuse_if_on(reader, key, "not modelled for the critic; its default (False) is.");
  }
  const bool checkpointing =
      reader.get(kModel + "enable_gradient_checkpointing", text_bool()).value_or(true);
  if (reader.get("critic.model.enable_gradient_checkpointing", text_bool()).value_or(true) !=
      checkpointing) {
    reader.fault("critic.model.enable_gradient_checkpointing",
                 "The critic checkpoints as the actor does here: a critic that differs from the "
                 "actor's enable_gradient_checkpointing is not modelled.");
  }
  if (!reader.get("critic.model.use_remove_padding", text_bool()).value_or(true)) {
    reader.fault("critic.model.use_remove_padding",
                 "critic.model.use_remove_padding=False is not modelled; its default (True) is.");
  }
  if (reader.get("critic.model.lora_rank", text_number(true, 0, 1e6)).value_or(0) > 0) {
    reader.fault("critic.model.lora_rank", "A critic trained with LoRA is not modelled.");
  }
  if (reader.get("critic.ppo_mini_batch_size", text_number(true, 1, kMaxCount)).value_or(mini) !=
      mini) {
    reader.fault("critic.ppo_mini_batch_size",
                 "A critic's mini-batch other than the actor's ppo_mini_batch_size is not "
                 "modelled.");
  }
  if (reader.get("critic.ppo_infer_max_token_len_per_gpu", text_number(true, 1, kMaxCount))
          .value_or(kVerlCriticTokenBudget) != kVerlCriticTokenBudget) {
    reader.fault("critic.ppo_infer_max_token_len_per_gpu",
                 "The critic's token budget is modelled at verl's default, 32768.");
  }
  if (reader.find("critic.ppo_micro_batch_size") != nullptr &&
      scalar_of(*reader.find("critic.ppo_micro_batch_size")).value_or("null") != "null") {
    reader.fault("critic.ppo_micro_batch_size",
                 "critic.ppo_micro_batch_size (over every device, deprecated) is not read: give "
                 "critic.ppo_micro_batch_size_per_gpu.");
  }
  // What else bears on the critic and is not modelled: its mesh, wrapping, dtype, sequence
  // parallelism and kernels (verl/workers/engine/fsdp/transformer_impl.py).
  if (reader.get("critic.fsdp.fsdp_size", text_number(true, -1, kMaxCount)).value_or(-1) != -1) {
    reader.fault("critic.fsdp.fsdp_size",
                 "critic.fsdp.fsdp_size other than -1 (FSDP over every device) is not modelled.");
  }
  if (!reader.get("critic.fsdp.reshard_after_forward", text_bool()).value_or(true)) {
    reader.fault("critic.fsdp.reshard_after_forward",
                 "critic.fsdp.reshard_after_forward=False is not modelled; its default is.");
  }
  if (reader.get("critic.fsdp.model_dtype", given_text()).value_or("fp32") != "fp32") {
    reader.fault("critic.fsdp.model_dtype",
                 "The critic is modelled in FP32 (model_dtype fp32, its default).");
  }
  if (reader.get("critic.fsdp.ulysses_sequence_parallel_size", text_number(true, 1, kMaxCount))
          .value_or(1) != 1) {
    reader.fault("critic.fsdp.ulysses_sequence_parallel_size",
                 "The critic's sequence parallelism is not modelled.");
  }
  if (reader.get("critic.optim.optimizer", given_text()).value_or("AdamW") != "AdamW") {
    reader.fault("critic.optim.optimizer", "The critic's optimiser is modelled as AdamW.");
  }
  for (const char* key : {"critic.model.enable_activation_offload", "critic.model.use_liger",
                          "critic.model.tiled_mlp.enabled", "critic.model.use_fused_kernels"}) {
    refuse_if_on(reader, key, "not modelled for the critic; its default (False) is.");
  }
  // CriticConfig.__post_init__ (verl/workers/config/critic.py) asks a micro-batch where its
  // use_dynamic_bsz, the actor's by default, is False.
  const bool critic_dynamic = reader.get("critic.use_dynamic_bsz", text_bool()).value_or(dynamic);
  if (!critic_dynamic &&
      !reader.get("critic.ppo_micro_batch_size_per_gpu", text_number(true, 1, kMaxCount))) {
    reader.fault("critic.ppo_micro_batch_size_per_gpu",
                 "verl requires critic.ppo_micro_batch_size_per_gpu where use_dynamic_bsz is "
                 "False (CriticConfig): give it.");
  }
  launch.notes.push_back(
      "The critic (algorithm.adv_estimator=gae) is the actor's model with a value head, in FP32 "
      "beside it; verl 1dda039b packs its micro-batches to 32,768 tokens "
      "(ppo_infer_max_token_len_per_gpu), whatever its use_dynamic_bsz and micro-batch keys "
      "say.");
}

// Critic-free advantage estimators (verl/trainer/ppo/core_algos.py, AdvantageEstimator); gae
// trains a critic (verl/trainer/ppo/utils.py, need_critic).
bool critic_free(const std::string& estimator) {
  static const std::set<std::string> estimators = {"grpo",
                                                   "reinforce_plus_plus",
                                                   "reinforce_plus_plus_baseline",
                                                   "remax",
                                                   "rloo",
                                                   "opo",
                                                   "grpo_passk",
                                                   "gpg",
                                                   "rloo_vectorized",
                                                   "grpo_vectorized",
                                                   "optimal_token_baseline",
                                                   "tir_optimal_token_baseline",
                                                   "gdpo"};
  return estimators.count(estimator) > 0;
}

}  // namespace

LaunchConfig read_verl_line(const std::string& text, const TrainingSetup& base,
                            const LaunchContext& context) {
  LaunchConfig launch;
  launch.kind = kVerlLineKind;
  launch.leaves = left_by_every_file();
  launch.setup = setup_beside(base, launch.leaves);
  const Command command = command_of(text, kVerlProgram, true);
  if (!command.problem.empty()) {
    launch.answer = refusal("launch", command.problem);
    return launch;
  }
  bool more = false;
  std::string problem;
  FileKeys keys = overrides_of(command.words, more, problem);
  if (!problem.empty()) {
    launch.answer = refusal("launch", problem);
    return launch;
  }
  KeyReader reader(launch, hydra_dialect(), keys);
  // A shell variable in a key that bears on memory is a value the line does not say (a critic's
  // key, only where the line trains the critic: critic_variable).
  std::string critic_variable;
  for (const FileKey& each : reader.keys()) {
    const std::string value = each.value.get<std::string>();
    const bool variable =
        value.find('$') != std::string::npos || value.find('`') != std::string::npos;
    if (variable && each.key.rfind("critic.", 0) == 0 && !verl_no_bearing(each.key)) {
      if (critic_variable.empty()) critic_variable = each.key;
    } else if (variable && !verl_no_bearing(each.key) &&
               each.key.rfind("reward.reward_model.", 0) != 0) {  // read or set aside below
      reader.fault(each.key, each.key + " is the shell's variable ('" + value.substr(0, 40) +
                                 "'): expand it first, as the shell would (echo the command).");
      return launch;
    }
    if (const char* earlier = earlier_key(each.key)) {
      reader.fault(each.key, each.key + " " + earlier + "; this line is read as verl 1dda039b's.");
      return launch;
    }
  }
  TrainingSetup& setup = launch.setup;
  if (!reader.get("trainer.use_v1", text_bool()).value_or(true)) {
    reader.fault("trainer.use_v1",
                 "trainer.use_v1=False runs the deprecated trainer (main_ppo_v0.py), not "
                 "modelled: verl 1dda039b's V1 trainer is.");
  }
  // The algorithm: gae (verl's default) with its critic, or a critic-free estimator; critic.enable
  // overrides either (need_critic). No reward model on the devices.
  const std::string estimator = reader.get("algorithm.adv_estimator", given_text()).value_or("gae");
  if (estimator != "gae" && !critic_free(estimator)) {
    reader.fault("algorithm.adv_estimator",
                 "algorithm.adv_estimator " + estimator.substr(0, 40) +
                     " is not one verl 1dda039b names: gae (with its critic), grpo, rloo, "
                     "reinforce_plus_plus, ….");
  }
  // critic.enable=null reads as absent, unset, as need_critic reads it.
  setup.critic = reader.get("critic.enable", text_bool()).value_or(estimator == "gae");
  if (setup.critic && !critic_variable.empty()) {
    reader.fault(critic_variable, critic_variable +
                                      " is the shell's variable: expand it first, as the shell "
                                      "would (echo the command).");
    return launch;
  }
  // A reward model (verl 1dda039b: reward.reward_model, which RewardLoopManager serves through
  // RewardModelManager, verl/experimental/reward_loop): a vLLM or SGLang server of its own, on the
  // trainer's devices unless enable_resource_pool gives it devices of its own (trainer_base.py,
  // _init_resource_pool_mgr). The top-level reward_model.* keys are legacy_reward_impl.yaml's null
  // stubs, which main_ppo no longer reads (only fully_async_main migrates them).
  refuse_if_on(reader, "reward_model.enable",
               "verl 1dda039b's main_ppo reads the reward model's switch as "
               "reward.reward_model.enable; this legacy key runs no reward model. Set "
               "reward.reward_model.enable.");
  const bool reward_model = reader.get("reward.reward_model.enable", text_bool()).value_or(false);
  const bool reward_pool_apart =
      reader.get("reward.reward_model.enable_resource_pool", text_bool()).value_or(false);
  if (reward_model && !reward_pool_apart) {
    reader.fault("reward.reward_model.enable",
                 "reward.reward_model.enable=True: a reward model on the trainer's devices (a "
                 "vLLM or SGLang server of its own, at reward.reward_model.rollout's "
                 "gpu_memory_utilization, 0.5, woken for the reward) is not modelled; with "
                 "reward.reward_model.enable_resource_pool=True it runs on devices of its own, "
                 "and the trainer's are answered.");
  } else if (reward_model) {
    launch.notes.push_back(
        "The reward model runs on devices of its own (reward.reward_model.enable_resource_pool): "
        "its server's memory there is not estimated; the figures are the trainer's devices'.");
  }
  // The model, by its hub id (a preset), else the config.json beside the line.
  if (const std::optional<std::string> path = reader.get(kModel + "path", given_text())) {
    read_hub_model(reader, kModel + "path", *path, setup);
  } else {
    reader.fault(kModel + "path", kModel + "path is not given: name the model (a hub id).");
  }
  if (reader.get(kModel + "lora_rank", text_number(true, 0, 1e6)).value_or(0) > 0) {
    reader.fault(kModel + "lora_rank",
                 "verl's LoRA (its adapters synced to vLLM apart from the base) is not modelled.");
  }
  refuse_if_on(reader, kModel + "enable_activation_offload",
               "verl's activation offloading is not modelled.");
  refuse_if_on(reader, kModel + "use_fused_kernels",
               "verl's fused linear log-probability kernels are not modelled; its default "
               "(off) is.");
  refuse_if_on(reader, kModel + "use_liger", "Liger's kernels under verl are not modelled.");
  setup.recompute = reader.get(kModel + "enable_gradient_checkpointing", text_bool()).value_or(true)
                        ? Recompute::kFull
                        : Recompute::kNone;
  if (!reader.get(kModel + "use_remove_padding", text_bool()).value_or(true)) {
    launch.notes.push_back(
        "use_remove_padding=False pads each micro-batch to its longest sequence; every sequence "
        "is counted at its full length either way.");
  }
  // The actor: FSDP1 over every device, in FP32 with BF16 compute, AdamW.
  const std::string strategy = reader.get(kActor + "strategy", given_text()).value_or("fsdp");
  if (strategy != "fsdp") {
    reader.fault(kActor + "strategy", kActor + "strategy " + strategy.substr(0, 40) +
                                          " is not modelled: verl's default, fsdp (FSDP1), is.");
  }
  for (const char* key : {"fsdp_config.offload_policy", "fsdp_config.forward_prefetch"}) {
    refuse_if_on(reader, kActor + key, "not modelled under verl; its default (False) is.");
  }
  // The actor's offload between phases (verl/workers/engine/base.py, BaseEngineCtx): AdamW's
  // state (optimizer_offload) and with it the FP32 shards (param_offload).
  const bool params_offloaded =
      reader.get(kActor + "fsdp_config.param_offload", text_bool()).value_or(false);
  const bool states_offloaded =
      reader.get(kActor + "fsdp_config.optimizer_offload", text_bool()).value_or(false);
  if (params_offloaded && !states_offloaded) {
    reader.fault(kActor + "fsdp_config.param_offload",
                 "param_offload without optimizer_offload is not modelled: set both, or "
                 "optimizer_offload alone.");
  }
  setup.offload = params_offloaded   ? Offload::kOptimizerAndWeights
                  : states_offloaded ? Offload::kOptimizer
                                     : Offload::kNone;
  if (reader.get(kActor + "fsdp_config.model_dtype", given_text()).value_or("fp32") != "fp32") {
    reader.fault(kActor + "fsdp_config.model_dtype",
                 "The actor in another dtype than FP32 (verl's model_dtype) is not modelled.");
  }
  if (reader.get(kActor + "fsdp_config.fsdp_size", text_number(true, -1, kMaxCount)).value_or(-1) !=
      -1) {
    reader.fault(kActor + "fsdp_config.fsdp_size",
                 "fsdp_size other than -1 is not modelled: it shards over fsdp_size devices, and "
                 "above 1 verl reshards the root unit after each no-grad pass "
                 "(EngineEvalModeCtx), which -1, verl's default, does not.");
  }
  for (const std::string& key :
       {kActor + "ulysses_sequence_parallel_size", kRef + "ulysses_sequence_parallel_size",
        kActor + "fsdp_config.ulysses_sequence_parallel_size",
        kRef + "fsdp_config.ulysses_sequence_parallel_size"}) {
    if (reader.get(key, text_number(true, 1, kMaxCount)).value_or(1) != 1) {
      reader.fault(key, "Ulysses sequence parallelism under verl is not modelled; 1 is.");
    }
  }
  for (const std::string& key :
       {kActor + "fsdp_config.reshard_after_forward", kRef + "fsdp_config.reshard_after_forward"}) {
    if (!reader.get(key, text_bool()).value_or(true)) {
      reader.fault(key, key +
                            "=False keeps each unit gathered after its forward pass, not "
                            "modelled; True, verl's default, is.");
    }
  }
  for (const std::string& key : {kActor + "use_torch_compile", kRef + "use_torch_compile"}) {
    if (!reader.get(key, text_bool()).value_or(true)) {
      reader.fault(key, key +
                            "=False computes the entropy eagerly, its softmax a whole FP32 "
                            "tensor of the logits' size, not modelled; True, verl's default, "
                            "is.");
    }
  }
  if (reader.get("algorithm.rollout_correction.bypass_mode", text_bool()).value_or(false)) {
    reader.list_not_understood("algorithm.rollout_correction.bypass_mode");
    launch.notes.push_back(
        "algorithm.rollout_correction.bypass_mode skips the actor's log-probability pass, which "
        "is counted.");
  }
  if (reader.get(kActor + "optim.optimizer", given_text()).value_or("AdamW") != "AdamW") {
    reader.fault(kActor + "optim.optimizer", "An optimiser other than AdamW is not modelled.");
  }
  if (reader.get(kActor + "entropy_coeff", text_number(false, -1e9, 1e9)).value_or(0) != 0 ||
      reader.get(kActor + "calculate_entropy", text_bool()).value_or(false)) {
    reader.fault(kActor + "entropy_coeff",
                 "An entropy term in the update computes the entropy beside the log-probabilities "
                 "(flash-attn's cross-entropy then no longer writes its gradient in place), not "
                 "modelled: entropy_coeff 0, verl's default, is.");
  }
  // The reference model: with a KL term in the loss or in the reward (need_reference_policy).
  const bool kl_loss = reader.get(kActor + "use_kl_loss", text_bool()).value_or(false);
  const bool kl_reward = reader.get("algorithm.use_kl_in_reward", text_bool()).value_or(false);
  setup.reference_model = kl_loss || kl_reward;
  // The rollout: vLLM or SGLang, colocated.
  const std::string engine = reader.get(kRollout + "name", given_text()).value_or("");
  if (engine != "vllm" && engine != "sglang") {
    reader.fault(
        kRollout + "name",
        kRollout + "name " +
            (engine.empty() ? std::string("is not given (verl leaves it to the line)") : engine) +
            ": vLLM and SGLang are modelled; set it to vllm or sglang.");
  }
  // SGLang's request table is counted at verl's max_num_seqs, 256 (its max_running_requests).
  if (engine == "sglang" &&
      reader.get(kRollout + "max_num_seqs", text_number(true, 1, kMaxCount)).value_or(256) != 256) {
    reader.list_not_understood(kRollout + "max_num_seqs");
    launch.notes.push_back(
        "SGLang's request table is counted at verl's max_num_seqs, 256 (its "
        "max_running_requests): a row of the model's context length for each.");
  }
  if (reader.get(kRollout + "mode", given_text()).value_or("async") != "async") {
    reader.fault(kRollout + "mode", "verl 1dda039b's rollout runs in async mode, which is read.");
  }
  for (const char* key :
       {"data_parallel_size", "expert_parallel_size", "pipeline_model_parallel_size"}) {
    if (reader.get(kRollout + key, text_number(true, 1, kMaxCount)).value_or(1) != 1) {
      reader.fault(kRollout + key, kRollout + key + " above 1 is not modelled.");
    }
  }
  refuse_if_on(reader, kRollout + "multi_turn.enable",
               "multi-turn rollouts (tool calls, their lengths) are not modelled.");
  setup.rollout = engine == "sglang" ? Rollout::kSglang : Rollout::kVllm;
  setup.rl_trainer = RlTrainer::kVerl;
  setup.rollout_memory_utilization =
      reader.get(kRollout + "gpu_memory_utilization", text_number(false, 0.01, 1))
          .value_or(kVerlRolloutMemoryUtilization);
  setup.rollout_tensor_parallel = static_cast<int>(
      reader.get(kRollout + "tensor_model_parallel_size", text_number(true, 1, kMaxParallelDegree))
          .value_or(2));
  setup.rollout_sleep_mode = reader.get(kRollout + "free_cache_engine", text_bool()).value_or(true);
  // verl starts vLLM with enable_prefix_caching (True by default), under which vLLM pages a
  // hybrid's recurrent state as it caches prefixes (rollout.cpp, vllm_hybrid_cache). SGLang's
  // radix cache it switches the same way has no bearing on what is counted of SGLang's pool.
  setup.rollout_prefix_caching =
      reader.get(kRollout + "enable_prefix_caching", text_bool()).value_or(true);
  // vLLM's max_model_len (verl passes SGLang no context length: its own, the model's, stands).
  if (const nlohmann::json* longest = reader.find(kRollout + "max_model_len");
      engine == "vllm" && longest != nullptr && scalar_of(*longest).value_or("null") != "null") {
    setup.rollout_max_model_length = static_cast<int>(
        reader.get(kRollout + "max_model_len", text_number(true, 1, kMaxSequenceLength))
            .value_or(0));
  } else {
    reader.take(kRollout + "max_model_len");
  }
  if (reader
          .get(kRollout + "checkpoint_engine.update_weights_bucket_megabytes",
               text_number(true, 1, 1e7))
          .value_or(kVerlWeightSyncBucketMiB) != kVerlWeightSyncBucketMiB) {
    reader.list_not_understood(kRollout + "checkpoint_engine.update_weights_bucket_megabytes");
    launch.notes.push_back("The weight sync's bucket is counted at verl's " +
                           format_count(kVerlWeightSyncBucketMiB) + " MiB.");
  }
  // The sequences: each its prompt and its response, at their longest.
  // rollout.prompt_length and response_length (the data's by default) cap what the agent loop
  // keeps of each prompt and response.
  const double data_prompt =
      reader.get("data.max_prompt_length", text_number(true, 1, kMaxSequenceLength)).value_or(512);
  const double data_response =
      reader.get("data.max_response_length", text_number(true, 1, kMaxSequenceLength))
          .value_or(512);
  const double prompt =
      reader.get(kRollout + "prompt_length", text_number(true, 1, kMaxSequenceLength))
          .value_or(data_prompt);
  const double response =
      reader.get(kRollout + "response_length", text_number(true, 1, kMaxSequenceLength))
          .value_or(data_response);
  if (prompt + response > kMaxSequenceLength) {
    reader.fault("data.max_response_length", "A prompt and a response of " +
                                                 format_count(prompt + response) +
                                                 " tokens exceed the longest sequence read (" +
                                                 format_count(kMaxSequenceLength) + ").");
  }
  setup.sequence_length = static_cast<int>(prompt + response);
  setup.completion_length = static_cast<int>(response);
  // The devices: every one trains the actor and hosts vLLM.
  const double per_node =
      reader.get("trainer.n_gpus_per_node", text_number(true, 1, kMaxParallelDegree)).value_or(8);
  const double nodes =
      reader.get("trainer.nnodes", text_number(true, 1, kMaxParallelDegree)).value_or(1);
  const double devices = per_node * nodes;
  // The batches: each prompt's rollout.n responses; a mini-batch of ppo_mini_batch_size prompts
  // per optimizer step, in micro-batches of ppo_micro_batch_size_per_gpu sequences a device.
  const double n = reader.get(kRollout + "n", text_number(true, 1, kMaxCount)).value_or(1);
  const double prompts =
      reader.get("data.train_batch_size", text_number(true, 1, kMaxCount)).value_or(1024);
  const double mini =
      reader.get(kActor + "ppo_mini_batch_size", text_number(true, 1, kMaxCount)).value_or(256);
  if (reader.find(kActor + "ppo_micro_batch_size") != nullptr &&
      scalar_of(*reader.find(kActor + "ppo_micro_batch_size")).value_or("null") != "null") {
    reader.fault(kActor + "ppo_micro_batch_size",
                 "ppo_micro_batch_size (over every device, deprecated) is not read: give "
                 "ppo_micro_batch_size_per_gpu.");
  }
  std::optional<double> micro =
      reader.get(kActor + "ppo_micro_batch_size_per_gpu", text_number(true, 1, kMaxCount));
  const bool dynamic = reader.get(kActor + "use_dynamic_bsz", text_bool()).value_or(false);
  if (dynamic) {
    // Micro-batches made up to a token budget, of sequences as they come: counted at the
    // budget's worth of whole sequences, which the budget does not bound (no verdict).
    const double budget =
        reader.get(kActor + "ppo_max_token_len_per_gpu", text_number(true, 1, kMaxCount))
            .value_or(16384);
    micro = std::max(1.0, std::floor(budget / (prompt + response)));
    reader.list_not_understood(kActor + "use_dynamic_bsz");
    launch.notes.push_back(
        "use_dynamic_bsz=True: micro-batches made up to ppo_max_token_len_per_gpu (" +
        format_count(budget) + " tokens), counted as " + format_count(*micro) +
        " whole sequences of " + format_count(prompt + response) +
        " tokens; verl's packing does not bound them so.");
  } else if (!micro) {
    reader.fault(kActor + "ppo_micro_batch_size_per_gpu",
                 "verl requires ppo_micro_batch_size_per_gpu where use_dynamic_bsz is False "
                 "(ActorConfig): give it.");
  }
  // The log-probability passes' micro-batches: verl requires the actor's (engine_workers.py
  // asserts rollout.log_prob_micro_batch_size_per_gpu) and, with a reference model, the
  // reference's, where batches are not dynamic. The actor's is read (--log-prob-micro-batch);
  // a reference's other than it is not.
  std::optional<double> actor_pass;
  const double budget_default =
      dynamic ? reader.get(kActor + "ppo_max_token_len_per_gpu", text_number(true, 1, kMaxCount))
                    .value_or(16384)
              : 0;
  for (const std::string& prefix : {kRollout, kRef}) {
    const bool needed = prefix == kRollout || setup.reference_model;
    const std::string micro_key = prefix + "log_prob_micro_batch_size_per_gpu";
    const std::string dynamic_key = prefix + "log_prob_use_dynamic_bsz";
    const std::string budget_key = prefix + "log_prob_max_token_len_per_gpu";
    const bool pass_dynamic = reader.get(dynamic_key, text_bool()).value_or(dynamic);
    const std::optional<double> pass_micro = reader.get(micro_key, text_number(true, 1, kMaxCount));
    const std::optional<double> pass_budget =
        reader.get(budget_key, text_number(true, 1, kMaxCount));
    if (!needed) continue;
    if (pass_dynamic != dynamic) {
      reader.list_not_understood(dynamic_key);
    } else if (!dynamic && !pass_micro) {
      reader.fault(micro_key, "verl requires " + micro_key +
                                  " where batches are not dynamic (engine_workers.py asserts "
                                  "it): give it.");
    } else if (!dynamic && prefix == kRollout) {
      actor_pass = pass_micro;
    } else if (!dynamic && actor_pass && *pass_micro != *actor_pass) {
      reader.list_not_understood(micro_key);
      launch.notes.push_back(
          "The reference's log-probability pass is counted at the actor's "
          "micro-batch, rollout.log_prob_micro_batch_size_per_gpu.");
    } else if (dynamic && pass_budget && *pass_budget != budget_default) {
      reader.list_not_understood(budget_key);
    }
  }
  if (setup.critic) read_critic(reader, launch, dynamic, mini);
  if (!reader.ok()) return launch;
  if (prompts < mini) {
    reader.fault(kActor + "ppo_mini_batch_size", "ppo_mini_batch_size (" + format_count(mini) +
                                                     ") is above data.train_batch_size (" +
                                                     format_count(prompts) +
                                                     "), which verl refuses.");
    return launch;
  }
  const double sequences = mini * n;  // a mini-batch's, over every device
  if (dynamic && std::fmod(sequences, devices) != 0) {
    reader.fault(kActor + "ppo_mini_batch_size",
                 "A mini-batch of " + format_count(sequences) +
                     " sequences (ppo_mini_batch_size × rollout.n) must split evenly over the " +
                     format_count(devices) + " devices, as verl requires.");
    return launch;
  }
  if (!dynamic && std::fmod(sequences, devices * *micro) != 0) {
    reader.fault(kActor + "ppo_micro_batch_size_per_gpu",
                 "A mini-batch of " + format_count(sequences) +
                     " sequences (ppo_mini_batch_size × "
                     "rollout.n) must split into micro-batches of " +
                     format_count(*micro) + " on each of the " + format_count(devices) +
                     " devices, as verl requires.");
    return launch;
  }
  setup.micro_batch_sequences = static_cast<int>(*micro);
  if (actor_pass && *actor_pass != *micro) {
    setup.log_prob_micro_batch_sequences = static_cast<int>(*actor_pass);
  }
  // Under dynamic batches a device's share of the mini-batch, in micro-batches of the budget's
  // sequences, the last one whole.
  setup.global_batch_sequences = static_cast<int>(
      dynamic ? devices * *micro * std::ceil(sequences / devices / *micro) : sequences);
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16Mixed;
  setup.layout.data_parallel = static_cast<int>(devices);
  setup.layout.zero_stage = 3;
  setup.fsdp_version = FsdpVersion::kFsdp1;
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  setup.expandable_segments = true;
  if (more) {
    reader.list_not_understood("$@");
    launch.notes.push_back("The line passes the script's own arguments on ($@): not known here.");
  }
  std::set<std::string> set_aside;
  for (const FileKey& each : reader.keys()) {
    // Without the critic its keys bear on nothing; nor do a reward model's, off or on devices of
    // its own (on the trainer's it is refused above).
    if (verl_no_bearing(each.key) || (!setup.critic && each.key.rfind("critic.", 0) == 0) ||
        each.key.rfind("reward.reward_model.", 0) == 0) {
      set_aside.insert(each.key);
    }
  }
  reader.list_unread(set_aside);
  launch.notes.push_back(
      "Read as verl 1dda039b (August 22, 2026) runs main_ppo's V1 trainer: " + estimator +
      " over " + format_count(devices) + " devices, an FSDP1 actor in FP32, " +
      (setup.rollout == Rollout::kSglang ? "SGLang" : "vLLM") + " at " +
      shortest_decimal(setup.rollout_memory_utilization) + " over " +
      std::to_string(setup.rollout_tensor_parallel) + " devices" +
      (setup.reference_model ? ", a reference model (its parameters on the host)" : "") +
      (setup.critic ? ", a critic of the actor's model" : "") +
      "; a later verl's defaults may differ.");
  // Each step generates its whole rollout batch at once (the KV cache's figures count it), and
  // updates a mini-batch at a time (the global batch).
  if (prompts * n != sequences) setup.rollout_batch_sequences = static_cast<int>(prompts * n);
  launch.notes.push_back("Each step generates " + format_count(prompts * n) +
                         " sequences (data.train_batch_size × rollout.n, the rollout batch) and "
                         "updates every " +
                         format_count(sequences) +
                         " (ppo_mini_batch_size × rollout.n, the global batch).");
  static_cast<void>(context);
  return launch;
}

}  // namespace trainmem
