// TRL's GRPOConfig (`trl grpo --config`) within TRL's YAML reader (trl_yaml.cpp): its own keys
// and defaults at TRL f2cd5771 (after v1.9.0; trl/trainer/grpo_config.py, trl/scripts/grpo.py),
// read into the run the hf stack with vLLM colocated and GRPO's loss models (rollout.hpp). The
// model, the weights, PEFT and the step are SFTConfig's keys, which trl_yaml.cpp reads for both.
#include "launch/trl_grpo.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "launch/yaml_keys.hpp"
#include "trainmem/format.hpp"

namespace trainmem::trl_grpo {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

// GRPOConfig's keys that RLOOConfig lacks (TRL f2cd5771): one of them, or beta, says the file is
// GRPO's and not RLOO's, whose default beta loads a reference model.
bool names_grpo_alone(const KeyReader& reader) {
  for (const char* key :
       {"beta", "loss_type", "importance_sampling_level", "scale_rewards", "top_entropy_quantile",
        "entropy_coef", "delta", "off_policy_mask_threshold", "vllm_importance_sampling_correction",
        "vllm_importance_sampling_mode", "multi_objective_aggregation", "use_bias_correction_kl"}) {
    if (reader.find(key) != nullptr) return true;
  }
  return false;
}

}  // namespace

// GRPOConfig's own keys, and GRPO's script's: a file with any of them is `trl grpo --config`'s.
bool is_grpo_file(const KeyReader& reader) {
  for (const char* key :
       {"use_vllm", "vllm_mode", "num_generations", "max_completion_length", "steps_per_generation",
        "generation_batch_size", "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size",
        "vllm_max_model_length", "vllm_enable_sleep_mode", "reward_funcs",
        "reward_model_name_or_path", "num_iterations", "epsilon_high"}) {
    const Json* found = reader.find(key);
    if (found != nullptr && !sets_nothing(*found)) return true;
  }
  return false;
}

// GRPOConfig's keys with no bearing on the device's memory: sampling, the loss's coefficients and
// clipping over (B, C) tensors, rewards, logging, vLLM's server (on its own devices), and
// DeepSpeed's gather for generation (DeepSpeed is refused by its own key).
const std::set<std::string>& no_bearing_keys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all = trl_no_bearing_keys();
    // clang-format off
    for (const char* key : {
        "num_generations", "num_generations_eval", "temperature", "top_p", "top_k", "min_p",
        "repetition_penalty", "generation_kwargs", "chat_template_kwargs", "cache_implementation",
        "epsilon", "epsilon_high", "delta", "sapo_temperature_neg", "sapo_temperature_pos",
        "vespo_k_pos", "vespo_lambda_pos", "vespo_k_neg", "vespo_lambda_neg",
        "importance_sampling_level", "reward_weights", "multi_objective_aggregation",
        "scale_rewards", "num_iterations", "mask_truncated_completions", "top_entropy_quantile",
        "vllm_importance_sampling_correction", "vllm_importance_sampling_mode",
        "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min",
        "vllm_importance_sampling_cap", "off_policy_mask_threshold", "log_completions",
        "log_multimodal", "num_completions_to_print", "log_unique_prompts",
        "log_completions_hub_repo", "reward_funcs", "vllm_server_base_url", "vllm_server_host",
        "vllm_server_port", "vllm_server_timeout", "vllm_group_port",
        "vllm_structured_outputs_regex", "max_tool_calling_iterations", "router_aux_loss_coef",
        "ds3_gather_for_generation", "ref_model_sync_steps", "ref_model_mixup_alpha"}) {
      all.insert(key);
    }
    // clang-format on
    return all;
  }();
  return keys;
}

// GRPO's batch: per_device_train_batch_size sequences (8), each its prompt and then at most
// max_completion_length tokens (512). GRPOConfig has no prompt length (the data's), so the
// sequence is --seq-len's, beside the file.
Generation read_batch(KeyReader& reader, TrainingSetup& setup, const TrainingSetup& base) {
  if (!names_grpo_alone(reader)) {
    reader.launch().notes.push_back(
        "Read as trl grpo's: the file sets none of the keys GRPOConfig has and RLOOConfig lacks "
        "(beta, loss_type, …). Under trl rloo its default beta 0.05 would load a reference model, "
        "which is not modelled.");
  }
  setup.sequence_length = base.sequence_length;
  setup.micro_batch_sequences = static_cast<int>(
      reader.get("per_device_train_batch_size", text_number(true, 1, kMaxMicroBatchSequences))
          .value_or(8));
  const Json* completion = reader.find("max_completion_length");
  if (completion != nullptr && completion->is_null()) {
    reader.fault("max_completion_length",
                 "max_completion_length None leaves the completions unbounded: give their "
                 "longest, which the loss's logits follow.");
  }
  setup.completion_length =
      static_cast<int>(reader.get("max_completion_length", text_number(true, 1, kMaxSequenceLength))
                           .value_or(kDefaultCompletionLength));
  reader.launch().notes.push_back(
      "Each sequence is counted at " + format_count(setup.sequence_length) +
      " tokens, the sequence length given beside the file: its prompt and a completion of at "
      "most max_completion_length (" +
      format_count(setup.completion_length) +
      "). GRPOConfig has no prompt length, the data's: give the longest prompt plus the "
      "completion.");
  Generation generation;
  const double accumulation =
      reader.get("gradient_accumulation_steps", text_number(true, 1, kMaxGlobalBatchSequences))
          .value_or(1);
  const std::optional<double> steps =
      reader.get("steps_per_generation", text_number(true, 1, kMaxGlobalBatchSequences));
  const std::optional<double> batch =
      reader.get("generation_batch_size", text_number(true, 1, kMaxGlobalBatchSequences));
  if (steps && batch) {
    reader.fault("generation_batch_size",
                 "steps_per_generation and generation_batch_size are both set, which GRPOConfig "
                 "refuses; choose one.");
  }
  generation.steps = steps.value_or(accumulation);
  generation.batch = batch.value_or(0);
  return generation;
}

// The rollout engine: vLLM (use_vllm), colocated (vllm_mode, "colocate" by default) on the
// trainer's devices, or a server on its own.
void read_generation(KeyReader& reader, TrainingSetup& setup) {
  if (!reader.get("use_vllm", text_bool()).value_or(false)) {
    reader.fault("use_vllm",
                 "GRPO without vLLM generates with the trainer's own model (transformers' "
                 "generate), which is not modelled: set use_vllm: true.");
    return;
  }
  const std::string mode = reader.get("vllm_mode", given_text()).value_or("colocate");
  if (mode != "colocate" && mode != "server") {
    reader.fault("vllm_mode", "vllm_mode must be colocate or server.");
    return;
  }
  const double utilization =
      reader.get("vllm_gpu_memory_utilization", text_number(false, kMinRolloutMemoryUtilization, 1))
          .value_or(kDefaultRolloutMemoryUtilization);
  const double tp =
      reader.get("vllm_tensor_parallel_size", text_number(true, 1, kMaxParallelDegree)).value_or(1);
  const double longest =
      reader.get("vllm_max_model_length", text_number(true, 1, kMaxSequenceLength)).value_or(0);
  if (mode == "colocate") {
    setup.rollout = Rollout::kVllm;
    setup.rollout_memory_utilization = utilization;
    setup.rollout_tensor_parallel = static_cast<int>(tp);
    setup.rollout_max_model_length = static_cast<int>(longest);
  } else {
    reader.launch().notes.push_back(
        "vllm_mode server: vLLM generates on its own devices (trl vllm-serve), not counted here; "
        "the trainer's devices hold GRPO's update alone.");
  }
  const bool sleep = reader.get("vllm_enable_sleep_mode", text_bool()).value_or(false);
  if (mode == "colocate") setup.rollout_sleep_mode = sleep;
  if (reader.get("vllm_model_impl", given_text()).value_or("vllm") != "vllm") {
    reader.fault("vllm_model_impl",
                 "vllm_model_impl transformers is not modelled: vLLM's own (vllm) is.");
  }
  for (const char* key : {"use_transformers_continuous_batching", "use_transformers_paged"}) {
    if (reader.get(key, text_bool()).value_or(false)) {
      reader.fault(
          key, std::string(key) + ": generation through transformers is not modelled; vLLM's is.");
    }
  }
}

// GRPO's loss (_compute_loss over the completions' logits): what changes it is refused.
void read_loss(KeyReader& reader, TrainingSetup& setup) {
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  // disable_dropout (False): the model's own dropout, or none (its masks not kept).
  if (reader.get("disable_dropout", text_bool()).value_or(false)) setup.dropout = Dropout::kOff;
  // beta (0.0): above 0 the KL term's reference model (--reference-model).
  setup.reference_model = reader.get("beta", text_number(false, 0, 1e9)).value_or(0) != 0;
  // sync_ref_model (False): the policy mixed into the reference in place every
  // ref_model_sync_steps (trl/trainer/callbacks.py, SyncRefModelCallback._sync_target_model: mul_
  // then add_), nothing more on the device. GRPOTrainer raises without a reference of its own.
  if (reader.get("sync_ref_model", text_bool()).value_or(false) &&
      (!setup.reference_model || setup.lora_rank > 0)) {
    reader.fault("sync_ref_model",
                 "sync_ref_model needs a reference model of its own, which TRL makes only with "
                 "beta above 0 and without PEFT (GRPOTrainer raises otherwise): set it false.");
  }
  if (reader.get("use_liger_kernel", text_bool()).value_or(false)) {
    reader.fault("use_liger_kernel",
                 "use_liger_kernel: Liger's fused linear GRPO loss is not modelled; TRL's own is.");
  }
  if (reader.get("entropy_coef", text_number(false, -1e9, 1e9)).value_or(0) != 0 ||
      reader.get("use_adaptive_entropy", text_bool()).value_or(false)) {
    reader.fault(reader.find("entropy_coef") != nullptr ? "entropy_coef" : "use_adaptive_entropy",
                 "An entropy bonus makes the entropy part of the loss, its log-softmax kept for "
                 "the backward pass, which is not modelled: the entropy under no_grad (the "
                 "default) is.");
  }
  if (reader.get("cast_lm_head_to_fp32", text_bool()).value_or(false)) {
    reader.fault("cast_lm_head_to_fp32",
                 "cast_lm_head_to_fp32 keeps the output layer in FP32 beside a BF16 model, which "
                 "is not modelled.");
  }
  static const std::set<std::string> losses = {"grpo",  "bnpo",  "dr_grpo", "dapo",
                                               "luspo", "cispo", "sapo",    "vespo"};
  const std::string loss = reader.get("loss_type", given_text()).value_or("dapo");
  if (losses.count(loss) == 0) {
    reader.fault("loss_type", "loss_type " + loss.substr(0, 40) + " is not one of GRPOConfig's.");
  }
  if (reader.find("reward_model_name_or_path") != nullptr &&
      !sets_nothing(*reader.find("reward_model_name_or_path"))) {
    reader.take("reward_model_name_or_path");
    reader.fault("reward_model_name_or_path",
                 "A reward model on the trainer's devices is not modelled; reward functions "
                 "(reward_funcs) are.");
  }
  if (reader.find("pad_to_multiple_of") != nullptr &&
      !sets_nothing(*reader.find("pad_to_multiple_of"))) {
    reader.list_not_understood("pad_to_multiple_of");
  }
}

// A generation's sequences once the devices are known.
void count_generation(KeyReader& reader, TrainingSetup& setup, const Generation& generation) {
  // A generation: each device's micro-batch times the steps it spans (GRPOConfig.__post_init__
  // refuses a generation_batch_size that the devices' micro-batches do not divide).
  const double micro_batches = static_cast<double>(setup.micro_batch_sequences) *
                               static_cast<double>(setup.layout.data_parallel);
  if (generation.batch > 0 && std::fmod(generation.batch, micro_batches) != 0) {
    reader.fault("generation_batch_size",
                 "generation_batch_size must be a multiple of per_device_train_batch_size × "
                 "the devices (" +
                     format_count(micro_batches) + "), as GRPOConfig requires.");
    return;
  }
  const double steps = generation.batch > 0 ? generation.batch / micro_batches : generation.steps;
  if (steps > 1) {
    // The generation's sequences, which vLLM holds at once, in the global batch's place: the
    // hf stack's step depends on the micro-batch alone.
    setup.global_batch_sequences = static_cast<int>(micro_batches * steps);
    reader.launch().notes.push_back("A generation: " + format_count(micro_batches * steps) +
                                    " sequences over the devices, " + format_count(steps) +
                                    " micro-batches of each (steps_per_generation), counted as the "
                                    "global batch.");
  }
}

}  // namespace trainmem::trl_grpo
