// TRL's YAML config (`trl sft --config file.yaml`), read into the setup (launch.hpp) by the keys
// and defaults of TRL v1.9.0 (July 2026; trl/scripts/sft.py's parser over ScriptArguments,
// SFTConfig, ModelConfig and DatasetMixtureConfig: trl/trainer/sft_config.py, base_config.py,
// model_config.py) and the TrainingArguments they extend (transformers 5), under the hf stack
// (transformers' Trainer with PEFT, which TRL's SFTTrainer is), on one device or under DDP.
//
// The file does not say which trainer reads it: its keys do (trl_trainer.cpp). GRPOConfig's are
// read as TRL f2cd5771 reads them (trl_grpo.cpp), DPOConfig's likewise (trl_dpo.cpp), and the
// rest as SFTConfig's. TRL's defaults differ from
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
#include "launch/trl_dpo.hpp"
#include "launch/trl_grpo.hpp"
#include "launch/trl_trainer.hpp"
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

}  // namespace

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
      // Which end of a sequence max_length cuts (SFTConfig's and DPOConfig's).
      "truncation_mode",
      "ignore_data_skip", "include_num_input_tokens_seen", "average_tokens_across_devices",
      // sft.py overwrites model_init_kwargs with ModelConfig's (revision, attention, dtype).
      "model_init_kwargs",
      // Which tokens the loss counts; Liger's fused linear loss projects every token alike.
      "completion_only_loss", "assistant_only_loss"};
  // clang-format on
  return keys;
}

namespace {

// Each sequence at most max_length tokens (1024), per_device_train_batch_size sequences (8),
// packed, padded or flattened (padding_free) to no more.
void read_batch(KeyReader& reader, TrainingSetup& setup) {
  if (reader.find("max_seq_length") != nullptr) {
    reader.fault("max_seq_length",
                 "max_seq_length is SFTConfig's key before TRL v0.15 (now max_length): this "
                 "reader reads TRL v1.9.0's keys.");
    return;
  }
  const Json* given_length = reader.find("max_length");
  if (given_length != nullptr && given_length->is_null()) {
    reader.fault("max_length",
                 "max_length null leaves the sequences untruncated: give the longest as "
                 "max_length.");
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
    reader.take("pad_to_multiple_of");
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
// bitsandbytes' base (load_in_4bit, load_in_8bit). `trainer`: SFTTrainer or DPOTrainer, unless
// `grpo`.
void read_adapter(KeyReader& reader, TrainingSetup& setup, bool grpo, const std::string& trainer) {
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
  // SFTTrainer and DPOTrainer cast a quantised model's trainable parameters to BF16
  // (sft_trainer.py, dpo_trainer.py), where the hf stack holds PEFT's FP32 adapters
  // (autocast_adapter_dtype): not the same run. GRPOTrainer hands vLLM the quantisation.
  if (four || eight) {
    reader.fault(four ? "load_in_4bit" : "load_in_8bit",
                 grpo ? "GRPOTrainer hands vLLM a quantised base's quantisation, which the "
                        "rollout engine does not model: LoRA on a BF16 base is read."
                      : trainer +
                            " casts a quantised base's adapters to BF16, which the hf stack "
                            "(PEFT's FP32 adapters) does not model yet: LoRA on a BF16 base is "
                            "read.");
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
  const TrlTrainer trainer = trl_trainer_of(reader);
  const bool grpo = trainer == TrlTrainer::kGrpo;
  const bool dpo = trainer == TrlTrainer::kDpo;
  if (grpo) {
    launch.kind = trl_grpo::kKind;
    launch.leaves.push_back(setting_id::kSequenceLength);  // the prompts are the data's
  }
  if (dpo) launch.kind = trl_dpo::kKind;
  const std::optional<std::string> model = reader.get("model_name_or_path", given_text());
  if (!model) {
    reader.fault("model_name_or_path", "model_name_or_path is not given; TRL needs it.");
  } else {
    read_hub_model(reader, "model_name_or_path", *model, setup);
  }
  trl_grpo::Generation generation;
  if (grpo) {
    generation = trl_grpo::read_batch(reader, setup, base);
  } else if (dpo) {
    trl_dpo::read_batch(reader, setup);
  } else {
    read_batch(reader, setup);
  }
  read_precision(reader, setup);
  read_adapter(reader, setup, grpo, dpo ? "DPOTrainer" : "SFTTrainer");
  if (reader.ok() && setup.lora_rank > 0 && setup.precision != Precision::kBf16) {
    // The hf stack holds LoRA's base in BF16; the FP32 base TRL loads by default is not counted.
    reader.fault("dtype",
                 "LoRA on the FP32 base TRL loads by default (dtype float32) is not modelled yet: "
                 "LoRA on a BF16 base is (dtype: bfloat16).");
  }
  if (grpo) {
    trl_grpo::read_generation(reader, setup);
    trl_grpo::read_loss(reader, setup);
  } else if (dpo) {
    trl_dpo::read_loss(reader, setup);
  } else {
    read_loss(reader, setup);
  }
  read_step(reader, setup);
  // accelerate launch's keys in the same file: the processes, DDP over them.
  const long long processes = static_cast<long long>(
      reader.get("num_processes", text_number(true, 1, kMaxParallelDegree)).value_or(0));
  if (!launch.answer.ok()) return launch;
  // env: sets the environment (PYTORCH_CUDA_ALLOC_CONF among what it may hold): not understood.
  reader.list_unread(grpo  ? trl_grpo::no_bearing_keys()
                     : dpo ? trl_dpo::no_bearing_keys()
                           : trl_no_bearing_keys(),
                     &sets_nothing);
  const long long world = context.world_size > 0 ? context.world_size : processes;
  setup.layout.data_parallel = static_cast<int>(std::max(1LL, world));
  if (grpo) trl_grpo::count_generation(reader, setup, generation);
  launch.notes.push_back(
      world > 1
          ? "d " + std::to_string(world) + ": " +
                (context.world_size > 0 ? "the world size given" : "num_processes") + ", under DDP."
          : "One device: the file does not say how many run (give the "
            "world size for DDP).");
  return launch;
}

}  // namespace trainmem
