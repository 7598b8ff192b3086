// TRL's YAML config (`trl sft --config file.yaml`), read into the setup (launch.hpp) by the keys
// and defaults of TRL v1.9.0 (July 2026; trl/scripts/sft.py's parser over ScriptArguments,
// SFTConfig, ModelConfig and DatasetMixtureConfig: trl/trainer/sft_config.py, base_config.py,
// model_config.py) and the TrainingArguments they extend (transformers 5), under the hf stack
// (transformers' Trainer with PEFT, which TRL's SFTTrainer is), on one device or under DDP.
//
// The file does not say which trainer reads it: a file with GRPOConfig's own keys (use_vllm,
// num_generations, max_completion_length, …) is `trl grpo --config`'s, read by GRPOConfig's keys
// and defaults at TRL f2cd5771 (after v1.9.0; trl/trainer/grpo_config.py, trl/scripts/grpo.py),
// the run that the hf stack with vLLM colocated and GRPO's loss models; any other, SFTConfig's.
// DPO's own keys name that trainer, which is refused. TRL's defaults differ from
// TrainingArguments': bf16 on, gradient checkpointing on (v0.22), the weights loaded in FP32
// (v0.27) and SFT's loss chunked (chunked_nll, v1.7). A key that an older TRL had (torch_dtype,
// max_seq_length) names its version.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "launch/yaml_keys.hpp"
#include "model/config_text.hpp"
#include "trainmem/config.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

constexpr const char* kTrlKind = "TRL config (YAML, trl sft --config; TRL v1.9.0)";
constexpr const char* kTrlGrpoKind =
    "TRL config (YAML, trl grpo --config; GRPOConfig at TRL f2cd5771, after v1.9.0)";

// Keys with no bearing on the device's memory: the data, the schedule and the learning rate,
// logging, saving, evaluation, hub uploads, the tokenizer's.
const std::set<std::string>& trl_no_bearing_keys() {
  // clang-format off
  static const std::set<std::string> keys = {
      "output_dir", "overwrite_output_dir", "run_name", "report_to", "logging_dir",
      "logging_steps", "logging_strategy", "logging_first_step", "log_level", "disable_tqdm",
      "save_strategy", "save_steps", "save_total_limit", "save_only_model", "save_safetensors",
      "eval_strategy", "eval_steps", "per_device_eval_batch_size", "do_train", "do_eval",
      "push_to_hub", "hub_model_id", "hub_strategy", "hub_private_repo", "learning_rate",
      "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps",
      "num_train_epochs", "max_steps", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon",
      "max_grad_norm", "seed", "data_seed", "gradient_accumulation_steps", "dataset_name",
      "dataset_config", "dataset_train_split", "dataset_test_split", "dataset_streaming",
      "dataset_text_field", "dataset_kwargs", "dataset_num_proc", "datasets", "streaming",
      "model_revision", "trust_remote_code", "tf32", "ddp_timeout", "ddp_find_unused_parameters",
      "dataloader_num_workers", "dataloader_pin_memory", "dataloader_drop_last",
      "remove_unused_columns", "chat_template_path", "eos_token", "pad_token", "lora_alpha",
      "lora_task_type", "use_rslora", "shuffle_dataset", "packing_strategy", "eval_packing",
      "ignore_data_skip", "include_num_input_tokens_seen", "average_tokens_across_devices",
      // sft.py overwrites model_init_kwargs with ModelConfig's (revision, attention, dtype).
      "model_init_kwargs",
      // Which tokens the loss counts; Liger's fused linear loss projects every token alike.
      "completion_only_loss", "assistant_only_loss"};
  // clang-format on
  return keys;
}

// Each sequence at most max_length tokens (1024), per_device_train_batch_size sequences (8),
// packed, padded or flattened (padding_free) to no more.
void read_batch(KeyReader& reader, TrainingSetup& setup) {
  if (reader.find("max_seq_length") != nullptr) {
    reader.fault("max_seq_length",
                 "max_seq_length is SFTConfig's key before TRL v0.15 (now max_length): this "
                 "reader reads TRL v1.9.0's keys.");
    return;
  }
  setup.sequence_length = static_cast<int>(
      reader.get("max_length", text_number(true, 1, kMaxSequenceLength)).value_or(1024));
  setup.micro_batch_sequences = static_cast<int>(
      reader.get("per_device_train_batch_size", text_number(true, 1, kMaxMicroBatchSequences))
          .value_or(8));
  const bool packing = reader.get("packing", text_bool()).value_or(false);
  const bool padding_free = reader.get("padding_free", text_bool()).value_or(false);
  reader.launch().notes.push_back("Each sequence is counted at max_length (" +
                                  format_count(setup.sequence_length) +
                                  " tokens), the most it holds " +
                                  (packing        ? "packed"
                                   : padding_free ? "flattened (padding_free)"
                                                  : "padded to the batch's "
                                                    "longest") +
                                  ": shorter data holds less.");
  if (reader.find("pad_to_multiple_of") != nullptr &&
      !sets_nothing(*reader.find("pad_to_multiple_of"))) {
    reader.list_not_understood("pad_to_multiple_of");
  }
}

// The model's dtype (ModelConfig.dtype, float32 by default since v0.27; torch_dtype before) and
// TrainingArguments' bf16 (on by default in TRL): BF16 weights, or FP32 weights under bf16
// autocast. TRL's CLI runs through accelerate launch, which takes the file's mixed_precision
// (set_defaults_with_config) and turns autocast on under bf16 whatever bf16 says.
void read_precision(KeyReader& reader, TrainingSetup& setup) {
  if (reader.find("torch_dtype") != nullptr) {
    reader.fault("torch_dtype",
                 "torch_dtype is ModelConfig's key before TRL v0.27 (January 2026; now dtype), "
                 "and TRL v1.9.0 hands it to accelerate launch: this reader reads v1.9.0's keys.");
    return;
  }
  const std::string dtype = reader.get("dtype", given_text()).value_or("float32");
  if (reader.get("fp16", text_bool()).value_or(false)) {
    reader.fault("fp16", "fp16: FP16 mixed precision is not modelled; bf16 is.");
    return;
  }
  const bool bf16 = reader.get("bf16", text_bool()).value_or(true);
  const std::string mixed = reader.get("mixed_precision", given_text()).value_or("no");
  if (mixed != "no" && mixed != "bf16") {
    reader.fault("mixed_precision",
                 "mixed_precision " + mixed.substr(0, 20) + " is not modelled: no or bf16 is.");
    return;
  }
  const bool autocast = bf16 || mixed == "bf16";
  if (dtype == "bfloat16") {
    setup.precision = Precision::kBf16;
    // bf16: false over BF16 weights: the Trainer runs without autocast.
    setup.no_autocast = !autocast;
    if (!autocast) {
      reader.launch().notes.push_back(
          "bf16: false over BF16 weights, read as no autocast (--no-autocast): unless the "
          "accelerate config that launches the run (--accelerate_config, or accelerate's "
          "default config) sets mixed_precision: bf16, which turns autocast on.");
    }
  } else if (dtype == "float32") {
    setup.precision = autocast ? Precision::kBf16Mixed : Precision::kFp32;
  } else {
    reader.fault("dtype", "dtype " + dtype.substr(0, 40) +
                              " is not read: bfloat16 or float32 (TRL's default) is (auto takes "
                              "the checkpoint's, which the presets do not record).");
    return;
  }
  reader.list_read("dtype");
  if (!reader.taken("dtype") || reader.find("dtype") == nullptr) {
    reader.launch().notes.push_back(
        "dtype: TRL's default, float32: the weights in FP32" +
        std::string(autocast ? ", computed under bf16 autocast." : "."));
  }
}

// PEFT (use_peft and ModelConfig's lora_* keys, r 16 and dropout 0.05 by default) and
// bitsandbytes' base (load_in_4bit, load_in_8bit).
void read_adapter(KeyReader& reader, TrainingSetup& setup, bool grpo) {
  const bool peft = reader.get("use_peft", text_bool()).value_or(false);
  const bool four = reader.get("load_in_4bit", text_bool()).value_or(false);
  const bool eight = reader.get("load_in_8bit", text_bool()).value_or(false);
  if (!peft) {
    if (four || eight) {
      reader.fault(four ? "load_in_4bit" : "load_in_8bit",
                   "A quantised base cannot be fully fine-tuned: set use_peft: true.");
    }
    for (const char* key : {"lora_r", "lora_dropout", "lora_target_modules", "lora_modules_to_save",
                            "use_dora", "lora_target_parameters"}) {
      reader.take(key);  // read by PEFT alone
    }
    setup.lora_rank = 0;
    return;
  }
  if (four && eight) {
    reader.fault("load_in_8bit", "load_in_4bit and load_in_8bit are both set; choose one.");
    return;
  }
  // SFTTrainer casts a quantised model's trainable parameters to BF16 (sft_trainer.py), where the
  // hf stack holds PEFT's FP32 adapters (autocast_adapter_dtype): not the same run. GRPOTrainer
  // hands vLLM the quantisation.
  if (four || eight) {
    reader.fault(four ? "load_in_4bit" : "load_in_8bit",
                 grpo ? "GRPOTrainer hands vLLM a quantised base's quantisation, which the "
                        "rollout engine does not model: LoRA on a BF16 base is read."
                      : "SFTTrainer casts a quantised base's adapters to BF16, which the hf stack "
                        "(PEFT's FP32 adapters) does not model yet: LoRA on a BF16 base is read.");
    return;
  }
  if (four) {
    const std::string quant = reader.get("bnb_4bit_quant_type", given_text()).value_or("nf4");
    if (quant != "nf4") {
      reader.fault("bnb_4bit_quant_type",
                   "bnb_4bit_quant_type " + quant.substr(0, 20) + " is not modelled: nf4 is.");
      return;
    }
    if (!reader.get("use_bnb_nested_quant", text_bool()).value_or(false)) {
      reader.fault("use_bnb_nested_quant",
                   "NF4 without double quantisation (use_bnb_nested_quant false, TRL's default) "
                   "is not modelled: QLoRA's NF4 with it is (use_bnb_nested_quant: true).");
      return;
    }
  }
  setup.base_weights = four ? BaseWeights::kNf4 : eight ? BaseWeights::kInt8 : BaseWeights::kBf16;
  setup.lora_rank =
      static_cast<int>(reader.get("lora_r", text_number(true, 1, 65536)).value_or(16));
  setup.lora_dropout = reader.get("lora_dropout", text_number(false, 0, 0.99)).value_or(0.05);
  const std::optional<std::vector<std::string>> modules =
      reader.get("lora_target_modules", name_list());
  if (const std::optional<LoraTargets> targets = lora_targets_of(modules)) {
    setup.lora_targets = *targets;
  } else {
    reader.fault("lora_target_modules",
                 "LoRA is modelled on the four attention projections (q_proj, k_proj, v_proj, "
                 "o_proj) or on every linear layer (all-linear); " +
                     std::string(modules ? "these targets are not"
                                         : "PEFT's own default (q_proj and v_proj for Llama) is "
                                           "not") +
                     ".");
    return;
  }
  for (const char* key : {"lora_modules_to_save", "lora_target_parameters"}) {
    if (reader.get(key, name_list())) {
      reader.fault(key, std::string(key) +
                            " trains more than LoRA's adapters on the linear layers, which is not "
                            "modelled.");
      return;
    }
  }
  if (reader.get("use_dora", text_bool()).value_or(false)) {
    reader.fault("use_dora", "DoRA is not modelled: LoRA is.");
  }
}

// The loss: SFTTrainer's chunked_nll by default (v1.7), nll with Liger's fused linear
// cross-entropy under use_liger_kernel (the logits skipped), else transformers' ForCausalLMLoss
// over the whole logits, from which SFTTrainer also takes the entropy and the token accuracy
// (refused: not modelled).
void read_loss(KeyReader& reader, TrainingSetup& setup) {
  const bool liger = reader.get("use_liger_kernel", text_bool()).value_or(false);
  const std::string loss =
      reader.get("loss_type", given_text()).value_or(liger ? "nll" : "chunked_nll");
  setup.logits = true;
  if (loss == "nll" && liger) {
    setup.loss = Loss::kFusedLinear;
    reader.list_read("loss_type");
    return;
  }
  if (loss == "chunked_nll") {
    if (liger) {
      reader.fault("loss_type",
                   "loss_type chunked_nll with use_liger_kernel: SFTTrainer refuses the two "
                   "together; choose one.");
      return;
    }
    setup.loss = Loss::kChunkedNll;
    reader.list_read("loss_type");
    if (reader.find("loss_type") == nullptr) {
      reader.launch().notes.push_back(
          "loss_type: TRL's default since v1.7, chunked_nll: the output layer and the loss in "
          "checkpointed chunks of 256 tokens.");
    }
  } else if (loss == "nll" || loss == "dft") {
    reader.fault("loss_type",
                 "loss_type " + loss +
                     " keeps the whole logits, upcast by transformers and again by accelerate, "
                     "and SFTTrainer takes their entropy and accuracy beside the loss, which is "
                     "not modelled; Liger's fused linear loss is: set use_liger_kernel: true.");
  } else {
    reader.fault("loss_type", "loss_type " + loss.substr(0, 40) +
                                  " is not one of TRL's nll, dft and chunked_nll.");
  }
}

// gradient_checkpointing (on by default in TRL since v0.22), the optimiser, attention and what
// the trainer runs besides.
void read_step(KeyReader& reader, TrainingSetup& setup) {
  setup.recompute = reader.get("gradient_checkpointing", text_bool()).value_or(true)
                        ? Recompute::kFull
                        : Recompute::kNone;
  // SFTTrainer sets use_reentrant=False where the file has no kwargs (sft_trainer.py since
  // v0.28, under transformers 4; transformers 5's own default); a table without the key is run
  // so under transformers 4 and as torch's None, reentrant, under 5: refused.
  const bool reentrant = use_reentrant(reader, false, std::nullopt);
  setup.reentrant_checkpointing = setup.recompute == Recompute::kFull && reentrant;
  const std::string optim = reader.get("optim", given_text()).value_or("adamw_torch_fused");
  static const std::set<std::string> adam = {"adamw_torch", "adamw_torch_fused", "adamw_hf"};
  setup.paged_optimizer = optim.rfind("paged_", 0) == 0;
  if (adam.count(optim) > 0 || optim == "paged_adamw_32bit") {
    setup.optimizer = Optimizer::kAdam;
  } else if (optim == "adamw_bnb_8bit" || optim == "adamw_8bit" || optim == "paged_adamw_8bit") {
    setup.optimizer = Optimizer::kAdam8bit;
  } else if (optim == "adafactor") {
    setup.optimizer = Optimizer::kAdafactor;
  } else {
    reader.fault("optim", "optim " + optim.substr(0, 40) +
                              " is not modelled: adamw_torch(_fused), adamw_bnb_8bit, "
                              "paged_adamw_32bit, paged_adamw_8bit and adafactor are.");
    return;
  }
  const std::optional<std::string> attention = reader.get("attn_implementation", given_text());
  if (attention && *attention == "eager") {
    setup.flash_attention = false;
  } else if (attention && *attention != "sdpa" && attention->find("flash") == std::string::npos) {
    reader.fault("attn_implementation",
                 "attn_implementation " + attention->substr(0, 40) +
                     " is not modelled: eager, sdpa (transformers' default) and FlashAttention's "
                     "are.");
    return;
  }
  for (const char* key : {"activation_offloading", "torch_compile"}) {
    if (reader.get(key, text_bool()).value_or(false)) {
      reader.fault(key, std::string(key) + " is not modelled under TRL.");
      return;
    }
  }
  // Distribution: TRL hands what its dataclasses do not hold to accelerate launch.
  for (const char* key : {"deepspeed", "fsdp", "fsdp_config", "accelerate_config"}) {
    const Json* found = reader.find(key);
    if (found == nullptr || sets_nothing(*found)) continue;
    reader.take(key);
    reader.fault(key, std::string(key) +
                          " is not read from a TRL config yet: one device and DDP are. Under "
                          "DeepSpeed, open its JSON config instead, with the model set.");
    return;
  }
}

// DPO's and the other trainers' own keys: neither SFT nor GRPO (GRPOConfig has a beta too).
void refuse_other_trainers(KeyReader& reader, bool grpo) {
  static const std::vector<const char*> keys = {"max_prompt_length", "beta",
                                                "precompute_ref_log_probs", "ref_model_init_kwargs",
                                                "reward_model_path"};
  for (const char* key : keys) {
    const Json* found = reader.find(key);
    if (found == nullptr || sets_nothing(*found) || (grpo && std::string(key) == "beta")) {
      continue;
    }
    if (grpo && std::string(key) == "max_prompt_length") {
      reader.fault(key,
                   "max_prompt_length is GRPOConfig's key before TRL v0.28 (prompts are no longer "
                   "truncated): this reader reads f2cd5771's keys; drop it and give the sequence "
                   "length beside the file.");
      return;
    }
    reader.fault(key, std::string(key) +
                          " is DPOConfig's or another preference trainer's: preference trainers "
                          "(a reference model) are not modelled yet; SFTConfig's and GRPOConfig's "
                          "keys are read.");
    return;
  }
  // RLOOConfig shares GRPOConfig's generation keys; its own name it, and its default beta (0.05)
  // loads a reference model.
  for (const char* key : {"normalize_advantages", "reward_clip_range"}) {
    const Json* found = reader.find(key);
    if (found == nullptr || sets_nothing(*found)) continue;
    reader.fault(key, std::string(key) +
                          " is RLOOConfig's: RLOO (a reference model at its default beta 0.05) is "
                          "not modelled; GRPOConfig's keys are read.");
    return;
  }
}

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

// ---- trl grpo --config: GRPOConfig (TRL f2cd5771) -----------------------------------------------

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
const std::set<std::string>& grpo_no_bearing_keys() {
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
        "disable_dropout", "ds3_gather_for_generation"}) {
      all.insert(key);
    }
    // clang-format on
    return all;
  }();
  return keys;
}

// A generation's steps: steps_per_generation (gradient_accumulation_steps by default), or
// generation_batch_size over the devices' micro-batches (GRPOConfig.__post_init__).
struct GrpoGeneration {
  double steps = 1;
  double batch = 0;  // generation_batch_size where given
};

// GRPO's batch: per_device_train_batch_size sequences (8), each its prompt and then at most
// max_completion_length tokens (512). GRPOConfig has no prompt length (the data's), so the
// sequence is --seq-len's, beside the file.
GrpoGeneration read_grpo_batch(KeyReader& reader, TrainingSetup& setup, const TrainingSetup& base) {
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
  GrpoGeneration generation;
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
void read_grpo_generation(KeyReader& reader, TrainingSetup& setup) {
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
void read_grpo_loss(KeyReader& reader, TrainingSetup& setup) {
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  if (reader.get("beta", text_number(false, 0, 1e9)).value_or(0) != 0) {
    reader.fault("beta",
                 "beta above 0 loads a reference model and runs it over every sequence, which is "
                 "not modelled: beta 0, TRL's default, is.");
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

}  // namespace

LaunchConfig read_trl_yaml(const std::string& json_text, const TrainingSetup& base,
                           const LaunchContext& context) {
  LaunchConfig launch;
  Json config;
  if (!open_launch(launch, kTrlKind, base, {}, {setting_id::kModel}, json_text,
                   "TRL config: ", config)) {
    return launch;
  }
  TrainingSetup& setup = launch.setup;
  setup.stack = Stack::kHf;
  KeyReader reader(launch, kDialect, keys_of(config));
  const bool grpo = is_grpo_file(reader);
  if (grpo) {
    launch.kind = kTrlGrpoKind;
    launch.leaves.push_back(setting_id::kSequenceLength);  // the prompts are the data's
  }
  refuse_other_trainers(reader, grpo);
  const std::optional<std::string> model = reader.get("model_name_or_path", given_text());
  if (!model) {
    reader.fault("model_name_or_path", "model_name_or_path is not given; TRL needs it.");
  } else {
    read_hub_model(reader, "model_name_or_path", *model, setup);
  }
  GrpoGeneration generation;
  if (grpo && !names_grpo_alone(reader)) {
    launch.notes.push_back(
        "Read as trl grpo's: the file sets none of the keys GRPOConfig has and RLOOConfig lacks "
        "(beta, loss_type, …). Under trl rloo its default beta 0.05 would load a reference model, "
        "which is not modelled.");
  }
  if (grpo) {
    generation = read_grpo_batch(reader, setup, base);
  } else {
    read_batch(reader, setup);
  }
  read_precision(reader, setup);
  read_adapter(reader, setup, grpo);
  if (reader.ok() && setup.lora_rank > 0 && setup.precision != Precision::kBf16) {
    // The hf stack holds LoRA's base in BF16; the FP32 base TRL loads by default is not counted.
    reader.fault("dtype",
                 "LoRA on the FP32 base TRL loads by default (dtype float32) is not modelled yet: "
                 "LoRA on a BF16 base is (dtype: bfloat16).");
  }
  if (grpo) {
    read_grpo_generation(reader, setup);
    read_grpo_loss(reader, setup);
  } else {
    read_loss(reader, setup);
  }
  read_step(reader, setup);
  // accelerate launch's keys in the same file: the processes, DDP over them.
  const long long processes = static_cast<long long>(
      reader.get("num_processes", text_number(true, 1, kMaxParallelDegree)).value_or(0));
  if (!launch.answer.ok()) return launch;
  // env: sets the environment (PYTORCH_CUDA_ALLOC_CONF among what it may hold): not understood.
  reader.list_unread(grpo ? grpo_no_bearing_keys() : trl_no_bearing_keys(), &sets_nothing);
  const long long world = context.world_size > 0 ? context.world_size : processes;
  setup.layout.data_parallel = static_cast<int>(std::max(1LL, world));
  if (grpo) {
    // A generation: each device's micro-batch times the steps it spans (GRPOConfig.__post_init__
    // refuses a generation_batch_size that the devices' micro-batches do not divide).
    const double micro_batches = static_cast<double>(setup.micro_batch_sequences) *
                                 static_cast<double>(setup.layout.data_parallel);
    if (generation.batch > 0 && std::fmod(generation.batch, micro_batches) != 0) {
      reader.fault("generation_batch_size",
                   "generation_batch_size must be a multiple of per_device_train_batch_size × "
                   "the devices (" +
                       format_count(micro_batches) + "), as GRPOConfig requires.");
      return launch;
    }
    const double steps = generation.batch > 0 ? generation.batch / micro_batches : generation.steps;
    if (steps > 1) {
      // The generation's sequences, which vLLM holds at once, in the global batch's place: the
      // hf stack's step depends on the micro-batch alone.
      setup.global_batch_sequences = static_cast<int>(micro_batches * steps);
      launch.notes.push_back("A generation: " + format_count(micro_batches * steps) +
                             " sequences over the devices, " + format_count(steps) +
                             " micro-batches of each (steps_per_generation), counted as the "
                             "global batch.");
    }
  }
  launch.notes.push_back(
      world > 1
          ? "d " + std::to_string(world) + ": " +
                (context.world_size > 0 ? "the world size given" : "num_processes") + ", under DDP."
          : "One device: the file does not say how many run (give the "
            "world size for DDP).");
  return launch;
}

}  // namespace trainmem
