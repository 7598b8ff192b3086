// axolotl's YAML config, read into the setup (launch.hpp) by axolotl's keys and defaults
// (axolotl-ai-cloud/axolotl 067b021, July 2026: src/axolotl/utils/schemas/, utils/config/
// __init__.py normalize_config, loaders/model.py): the model, the batch, LoRA or QLoRA with
// bitsandbytes, gradient checkpointing, the optimiser and the loss, under the hf stack
// (transformers' Trainer with PEFT, which axolotl runs), on one device or under DDP.
//
// The front end turns the YAML into JSON, every scalar a string (YAML's failsafe schema; yaml-cpp
// natively, the npm package yaml on the page); each key is then read as axolotl's pydantic model
// coerces it, so that both front ends read a file alike.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
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
#include "trainmem/hub.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

constexpr const char* kAxolotlKind = "axolotl config (YAML, axolotl 067b021)";

// Keys with no bearing on the device's memory: data, evaluation, logging, saving, the learning
// rate's schedule, the tokenizer's, hub uploads.
const std::set<std::string>& axolotl_no_bearing_keys() {
  static const std::set<std::string> keys = {"base_model_config",
                                             "model_type",
                                             "tokenizer_type",
                                             "tokenizer_config",
                                             "tokenizer_use_fast",
                                             "trust_remote_code",
                                             "datasets",
                                             "test_datasets",
                                             "dataset_prepared_path",
                                             "val_set_size",
                                             "output_dir",
                                             "hub_model_id",
                                             "hub_strategy",
                                             "push_dataset_to_hub",
                                             "lora_model_dir",
                                             "lora_alpha",
                                             "num_epochs",
                                             "max_steps",
                                             "learning_rate",
                                             "lr_scheduler",
                                             "lr_scheduler_kwargs",
                                             "cosine_min_lr_ratio",
                                             "warmup_steps",
                                             "warmup_ratio",
                                             "weight_decay",
                                             "max_grad_norm",
                                             "adam_beta1",
                                             "adam_beta2",
                                             "adam_epsilon",
                                             "logging_steps",
                                             "evals_per_epoch",
                                             "eval_steps",
                                             "saves_per_epoch",
                                             "save_steps",
                                             "save_strategy",
                                             "save_total_limit",
                                             "save_first_step",
                                             "eval_strategy",
                                             "evaluation_strategy",
                                             "eval_sample_packing",
                                             "eval_batch_size",
                                             "early_stopping_patience",
                                             "resume_from_checkpoint",
                                             "auto_resume_from_checkpoints",
                                             "local_rank",
                                             "wandb_project",
                                             "wandb_entity",
                                             "wandb_watch",
                                             "wandb_name",
                                             "wandb_run_id",
                                             "wandb_log_model",
                                             "mlflow_tracking_uri",
                                             "mlflow_experiment_name",
                                             "use_tensorboard",
                                             "special_tokens",
                                             "tokens",
                                             "chat_template",
                                             "default_system_message",
                                             "train_on_inputs",
                                             "group_by_length",
                                             "seed",
                                             "strict",
                                             "debug",
                                             "tf32",
                                             "loss_watchdog_threshold",
                                             "loss_watchdog_patience",
                                             "shuffle_merged_datasets",
                                             "dataset_processes",
                                             "dataset_num_proc",
                                             "dataloader_num_workers",
                                             "dataloader_pin_memory",
                                             "dataloader_prefetch_factor",
                                             "remove_unused_columns",
                                             "pad_to_sequence_len",
                                             "sample_packing_eff_est",
                                             "sample_packing_group_size",
                                             "sample_packing_bin_size",
                                             "multipack_real_batches",
                                             "ddp_timeout",
                                             "ddp_find_unused_parameters",
                                             "ddp_bucket_cap_mb",
                                             "include_tokens_per_second",
                                             "profiler_steps",
                                             "torch_compile_backend",
                                             "hf_use_auth_token",
                                             "is_llama_derived_model",
                                             "is_mistral_derived_model",
                                             "is_qwen_derived_model",
                                             "liger_rope",
                                             "liger_rms_norm",
                                             "liger_layer_norm",
                                             "flash_attn_cross_entropy",
                                             "flash_attn_rms_norm",
                                             "flash_attn_fuse_mlp",
                                             "sequence_len_overflow_handling",
                                             "excess_length_strategy",
                                             "lora_fan_in_fan_out",
                                             "peft_use_rslora"};
  return keys;
}

// base_model: a preset whose config.json is that hub repository's (by its id, or by its name
// under another owner, as re-uploads are); otherwise the reader's own config.json.
void read_model(KeyReader& reader, TrainingSetup& setup) {
  const std::optional<std::string> base = reader.get("base_model", given_text());
  if (!base) {
    reader.fault("base_model", "base_model is not given; axolotl needs it.");
    return;
  }
  yaml_keys::read_hub_model(reader, "base_model", *base, setup);
}

// The batch: sequence_len tokens a sequence (packed or padded to it at most), micro_batch_size
// sequences a step on each device.
void read_axolotl_batch(KeyReader& reader, TrainingSetup& setup) {
  // axolotl's defaults: 512 tokens, one sequence (utils/schemas/config.py, training.py).
  setup.sequence_length = static_cast<int>(
      reader.get("sequence_len", text_number(true, 1, kMaxSequenceLength)).value_or(512));
  setup.micro_batch_sequences = static_cast<int>(
      reader.get("micro_batch_size", text_number(true, 1, kMaxMicroBatchSequences)).value_or(1));
  reader.get("gradient_accumulation_steps", text_number(true, 1, 1e9));
  reader.get("sample_packing", text_bool());
  if (reader.get("batch_size", given_text())) {
    reader.fault("batch_size",
                 "batch_size is axolotl's older way to set the batch; give micro_batch_size and "
                 "gradient_accumulation_steps.");
  }
}

// The precision (normalize_config): bf16 (true or auto, its default, which axolotl resolves to
// true on a device with BF16) loads the model in BF16; fp16 is not modelled; otherwise FP32.
void read_axolotl_precision(KeyReader& reader, bool adapter, TrainingSetup& setup) {
  const std::optional<std::string> bf16 = reader.get("bf16", given_text());
  bool on = false;
  if (!bf16 && reader.find("bf16") != nullptr) {
    // Given as null: resolve_dtype leaves it unset, and the Trainer runs in FP32.
  } else if (!bf16 || *bf16 == "auto") {
    // bf16's default is auto (schemas/config.py), which resolve_dtype makes true on a device
    // with BF16.
    on = true;
    if (bf16) reader.list_read("bf16");
    reader.launch().notes.push_back(
        std::string(bf16 ? "bf16: auto" : "bf16, not given, is auto (axolotl's default)") +
        ", read as true: axolotl's choice on a device with BF16 (A100, H100 and later).");
  } else {
    on = reader.get("bf16", text_bool()).value_or(false);
  }
  if (reader.get("fp16", text_bool()).value_or(false) ||
      reader.get("float16", text_bool()).value_or(false)) {
    reader.fault("fp16", "fp16: FP16 mixed precision is not modelled; bf16 is.");
    return;
  }
  on = reader.get("bfloat16", text_bool()).value_or(false) || on;
  // Full training in BF16 keeps one dtype (AdamW's moments follow the weights), as does LoRA's
  // frozen base; in FP32 the Trainer trains in FP32.
  setup.precision = on ? Precision::kBf16 : Precision::kFp32;
  if (!on && adapter) {
    reader.fault("bf16",
                 "LoRA on a base loaded in FP32 is not modelled: set bf16: true (or auto).");
  }
}

// adapter, the bitsandbytes base and LoRA's rank, targets and dropout.
void read_axolotl_adapter(KeyReader& reader, TrainingSetup& setup) {
  const std::string adapter = reader.get("adapter", given_text()).value_or("");
  const bool four = reader.get("load_in_4bit", text_bool()).value_or(false);
  const bool eight = reader.get("load_in_8bit", text_bool()).value_or(false);
  if (!adapter.empty() && adapter != "lora" && adapter != "qlora") {
    reader.fault("adapter", "adapter '" + adapter.substr(0, 40) +
                                "' is not modelled: lora and qlora are (or none, for full "
                                "fine-tuning).");
    return;
  }
  if (four && eight) {
    reader.fault("load_in_8bit", "load_in_4bit and load_in_8bit are both set; choose one.");
    return;
  }
  if (adapter == "qlora" && !four) {
    reader.fault("adapter", "adapter: qlora loads the base in 4 bits: set load_in_4bit: true.");
    return;
  }
  if (adapter == "lora" && four) {
    // bitsandbytes' 4-bit config is made for qlora alone (loaders/model.py, _set_quantization_
    // config); prepare_model_for_kbit_training then upcasts the unquantised base to FP32.
    reader.fault("load_in_4bit",
                 "adapter: lora with load_in_4bit loads the base unquantised, which "
                 "prepare_model_for_kbit_training then upcasts to FP32; that is not modelled: set "
                 "adapter: qlora for a 4-bit base.");
    return;
  }
  if (adapter == "qlora" && eight) {
    reader.fault("load_in_8bit", "adapter: qlora cannot load in 8 bits, as axolotl refuses.");
    return;
  }
  if (adapter.empty()) {
    if (four || eight) {
      reader.fault(four ? "load_in_4bit" : "load_in_8bit",
                   "A quantised base cannot be fully fine-tuned: set adapter: lora or qlora.");
    }
    // Without an adapter axolotl trains every parameter and reads none of LoRA's keys.
    for (const char* key : {"lora_r", "lora_dropout", "lora_target_linear", "lora_target_modules",
                            "lora_modules_to_save", "peft_use_dora"}) {
      reader.take(key);
    }
    setup.lora_rank = 0;
    return;
  }
  reader.list_read("adapter");
  // axolotl's 4-bit base: NF4 with double quantisation (loaders/model.py, BitsAndBytesConfig).
  setup.base_weights = four ? BaseWeights::kNf4 : eight ? BaseWeights::kInt8 : BaseWeights::kBf16;
  const std::optional<double> rank = reader.get("lora_r", text_number(true, 1, 65536));
  if (!rank) {
    reader.fault("lora_r", "lora_r, LoRA's rank, is not given.");
    return;
  }
  setup.lora_rank = static_cast<int>(*rank);
  setup.lora_dropout = reader.get("lora_dropout", text_number(false, 0, 0.99)).value_or(0);
  const bool linear = reader.get("lora_target_linear", text_bool()).value_or(false);
  const std::optional<std::vector<std::string>> modules =
      reader.get("lora_target_modules", name_list());
  const std::optional<LoraTargets> targets =
      linear ? std::optional(LoraTargets::kAllLinear) : lora_targets_of(modules);
  if (targets) {
    setup.lora_targets = *targets;
  } else {
    reader.fault("lora_target_modules",
                 "LoRA is modelled on the four attention projections (q_proj, k_proj, v_proj, "
                 "o_proj) or on every linear layer (lora_target_linear: true); " +
                     std::string(modules ? "these targets are not" : "PEFT's own default is not") +
                     ".");
  }
  if (reader.get("lora_modules_to_save", name_list())) {
    reader.fault("lora_modules_to_save",
                 "lora_modules_to_save trains whole modules (the embedding, the output layer) "
                 "beside the adapters, which is not modelled.");
  }
  if (reader.get("peft_use_dora", text_bool()).value_or(false)) {
    reader.fault("peft_use_dora", "DoRA is not modelled: LoRA is.");
  }
}

// gradient_checkpointing: true is full recomputation (every layer's input kept); its offloading
// forms are not modelled.
void read_checkpointing(KeyReader& reader, TrainingSetup& setup) {
  const std::optional<std::string> value = reader.get("gradient_checkpointing", given_text());
  if (value && (*value == "offload" || *value == "offload_disk")) {
    reader.fault("gradient_checkpointing",
                 "gradient_checkpointing: " + *value +
                     " offloads the checkpoints, which is not modelled; true or false is.");
    return;
  }
  setup.recompute = reader.get("gradient_checkpointing", text_bool()).value_or(false)
                        ? Recompute::kFull
                        : Recompute::kNone;
  // normalize_config sets use_reentrant=True where the file has no gradient_checkpointing_kwargs
  // (but under unfrozen_parameters, which is refused, or rl); a table that leaves the key out
  // hands torch.utils.checkpoint None, which it runs as True.
  const bool reentrant = use_reentrant(reader, true, true);
  setup.reentrant_checkpointing = setup.recompute == Recompute::kFull && reentrant;
}

// optimizer: transformers' names, as axolotl passes them to TrainingArguments (its default
// adamw_torch_fused).
void read_optimizer(KeyReader& reader, TrainingSetup& setup) {
  const std::string name = reader.get("optimizer", given_text()).value_or("adamw_torch_fused");
  static const std::set<std::string> adam = {"adamw_torch", "adamw_torch_fused", "adamw_hf",
                                             "adamw_apex_fused"};
  static const std::set<std::string> adam8 = {"adamw_bnb_8bit", "adamw_8bit"};
  setup.paged_optimizer = name.rfind("paged_", 0) == 0;
  if (adam.count(name) > 0 || name == "paged_adamw_32bit" || name == "paged_adamw") {
    setup.optimizer = Optimizer::kAdam;
  } else if (adam8.count(name) > 0 || name == "paged_adamw_8bit") {
    setup.optimizer = Optimizer::kAdam8bit;
  } else if (name == "adafactor") {
    setup.optimizer = Optimizer::kAdafactor;
  } else {
    reader.fault("optimizer", "optimizer " + name.substr(0, 40) +
                                  " is not modelled: adamw_torch(_fused), adamw_bnb_8bit, "
                                  "paged_adamw_32bit, paged_adamw_8bit and adafactor are.");
    return;
  }
  if (reader.taken("optimizer")) {
    // The optimiser read, axolotl's default where the key is given empty.
    reader.launch().read.push_back("optimizer: " + name);
  } else {
    reader.launch().notes.push_back("optimizer: axolotl's default, adamw_torch_fused (AdamW).");
  }
}

// Attention's kernel and the loss. attn_implementation, or a legacy flag axolotl maps to one
// (utils/schemas/enums.py, LEGACY_ATTN_FLAG_TO_IMPL; both at once it refuses), or else
// transformers' default, SDPA: only eager attention saves the scores. Liger's fused linear
// cross-entropy never makes the whole logits; otherwise transformers' ForCausalLMLoss.
void read_kernels(KeyReader& reader, TrainingSetup& setup) {
  const std::optional<std::string> chosen = reader.get("attn_implementation", given_text());
  if (chosen) {
    // As axolotl validates it (schemas/config.py, validate_attn_implementation; enums.py): a
    // canonical name or a hub kernel's path; the short forms refused.
    static const std::set<std::string> canonical = {
        "eager",    "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention",
        "xformers", "sage"};
    const bool flash_hub =
        chosen->find('/') != std::string::npos && chosen->find("flash-attn") != std::string::npos;
    if (*chosen == "fp8") {
      reader.fault("attn_implementation",
                   "attn_implementation fp8 (SDPA replaced by an FP8 kernel) is not modelled.");
      return;
    }
    if (canonical.count(*chosen) == 0 && !flash_hub) {
      reader.fault("attn_implementation",
                   "attn_implementation '" + chosen->substr(0, 60) +
                       "' is not one axolotl accepts and trainmem models: eager, sdpa, "
                       "flash_attention_2, flash_attention_3, flex_attention, xformers, sage, or a "
                       "hub kernel's path with flash-attn.");
      return;
    }
  }
  std::optional<std::string> attention = chosen;
  static const std::vector<std::pair<const char*, const char*>> legacy = {
      {"xformers_attention", "xformers"},
      {"sage_attention", "sage"},
      {"flex_attention", "flex_attention"},
      {"flash_attention", "flash_attention_2"},
      {"sdp_attention", "sdpa"},
      {"eager_attention", "eager"}};
  for (const auto& [flag, implementation] : legacy) {
    if (!reader.get(flag, text_bool()).value_or(false)) continue;
    if (chosen) {
      reader.fault(flag, std::string(flag) +
                             " cannot stand beside attn_implementation, as axolotl refuses: set "
                             "only attn_implementation.");
      return;
    }
    if (!attention) attention = implementation;  // the first in axolotl's order
  }
  if (chosen) reader.list_read("attn_implementation");
  setup.flash_attention = attention.value_or("sdpa") != "eager";
  // The loss's plugins first: Cut Cross-Entropy casts the output layer and the norms to BF16.
  // Liger's keys are axolotl's only with its plugin listed (utils/config/__init__.py,
  // validate_config merges the plugins' arguments; without, pydantic drops them).
  bool liger = false;
  bool cut = false;
  const auto ends_with = [](const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (const auto plugins = reader.get("plugins", name_list())) {
    for (const std::string& plugin : *plugins) {
      liger = liger || ends_with(plugin, "LigerPlugin");
      cut = cut || ends_with(plugin, "CutCrossEntropyPlugin");
    }
  }
  // The Cut Cross-Entropy plugin's cut_cross_entropy defaults to true
  // (integrations/cut_cross_entropy/args.py, CutCrossEntropyArgs): listing the plugin turns it on.
  const bool cut_on = cut && reader.get("cut_cross_entropy", text_bool()).value_or(true);
  if (!cut && reader.get("cut_cross_entropy", text_bool()).value_or(false)) {
    reader.launch().notes.push_back(
        "cut_cross_entropy is dropped: axolotl reads it only with the Cut Cross-Entropy plugin in "
        "plugins (axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin).");
  }
  // Full fine-tuning outside FSDP keeps the embedding, the output layer and the norms in FP32
  // unless the attention needs them cast (loaders/model.py, _configure_embedding_dtypes;
  // attn_needs_dtype_cast: not for eager, sdpa or none) or Cut Cross-Entropy runs.
  const bool cast = cut_on || (attention && *attention != "eager" && *attention != "sdpa");
  if (setup.lora_rank == 0 && setup.precision == Precision::kBf16 && !cast) {
    reader.fault("attn_implementation",
                 "Full fine-tuning under " +
                     attention.value_or(std::string("transformers' default SDPA")) +
                     " keeps the embedding, the output layer and the norms in FP32 beside the "
                     "BF16 layers (axolotl's loaders/model.py), which is not modelled: "
                     "attn_implementation flash_attention_2 casts them to BF16.");
    return;
  }
  setup.logits = true;
  const bool fused = reader.get("liger_fused_linear_cross_entropy", text_bool()).value_or(false);
  setup.loss = cut_on           ? Loss::kCutCrossEntropy
               : fused && liger ? Loss::kFusedLinear
                                : Loss::kFp32Upcast;
  if (cut_on && fused && liger) {
    reader.fault("liger_fused_linear_cross_entropy",
                 "liger_fused_linear_cross_entropy beside Cut Cross-Entropy: two losses over the "
                 "output layer; keep one.");
    return;
  }
  if (fused && !liger) {
    reader.launch().notes.push_back(
        "liger_fused_linear_cross_entropy is dropped: axolotl reads it only with the Liger plugin "
        "in plugins (axolotl.integrations.liger.LigerPlugin).");
  }
  if (liger && reader.get("liger_cross_entropy", text_bool()).value_or(false)) {
    reader.fault("liger_cross_entropy",
                 "Liger's cross-entropy over the whole logits is not modelled; its fused linear "
                 "cross-entropy is.");
  }
}

// axolotl's fused LoRA kernels (kernels/lora.py), which it switches on for lora and qlora unless
// one of them is set, or LoRA runs on an 8-bit base (schemas/config.py,
// check_auto_enable_lora_kernels): they save other tensors than PEFT's layers. Under gradient
// checkpointing only the layer being rebuilt holds them, and the estimate counts PEFT's; without
// it, they are not modelled.
void read_lora_kernels(KeyReader& reader, const TrainingSetup& setup) {
  if (setup.lora_rank == 0) return;
  std::optional<std::string> first_on;
  bool set = false;
  for (const char* key :
       {"lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "lora_embedding_kernel"}) {
    if (const auto on = reader.get(key, text_bool())) {
      set = true;
      if (*on && !first_on) first_on = key;
    }
  }
  const bool automatic = !set && setup.base_weights != BaseWeights::kInt8 &&
                         !reader.get("trust_remote_code", text_bool()).value_or(false);
  if (!first_on && !automatic) return;
  const std::string key = first_on.value_or("lora_mlp_kernel");
  if (setup.recompute != Recompute::kFull) {
    reader.fault(key, "axolotl's fused LoRA kernels" +
                          std::string(automatic ? ", on by default," : "") +
                          " save other tensors than PEFT's layers, which is not modelled without "
                          "gradient checkpointing: set gradient_checkpointing: true, or the "
                          "lora_*_kernel keys to false.");
    return;
  }
  reader.launch().notes.push_back(
      "axolotl's fused LoRA kernels" + std::string(automatic ? " (on by default)" : "") +
      " hold other tensors than PEFT's layers while a layer is rebuilt; the estimate counts "
      "PEFT's.");
}

// An fsdp_config key, by its name in axolotl's schema (utils/schemas/fsdp.py:
// reshard_after_forward) or the fsdp_-prefixed one of its FSDP1 configs, which it still takes.
const Json* fsdp_key(KeyReader& fsdp, const std::string& key) {
  const Json* found = fsdp.take(key);
  const Json* prefixed = fsdp.take("fsdp_" + key);
  return found != nullptr ? found : prefixed;
}

// FSDP as axolotl sets it up (utils/trainer.py, setup_fsdp_envs, prepare_optim_env): fsdp_config
// (or the older fsdp list) turns it on; fsdp_version 2 is FSDP2, which the hf stack replays under
// ZeRO 3 over the world's devices; the fsdp_config keys become accelerate's FSDP_* variables, each
// set only where true, so that accelerate's defaults stand for the rest (reshard_after_forward
// true, NO_WRAP). FSDP1 is refused: axolotl sets no backward prefetch, which the hf stack's FSDP1
// replays (BACKWARD_PRE).
void read_fsdp(KeyReader& reader, int world_size, TrainingSetup& setup) {
  const Json* list = reader.take("fsdp");
  std::optional<KeyReader> fsdp = reader.section("fsdp_config");
  const bool listed = list != nullptr && !sets_nothing(*list) && !names_of(*list).empty();
  if (!fsdp && !listed) return;
  std::string version = reader.get("fsdp_version", given_text()).value_or("");
  if (fsdp) {
    for (const char* key : {"version", "fsdp_version"}) {
      if (const Json* inner = fsdp->take(key); inner != nullptr && scalar_of(*inner)) {
        version = *scalar_of(*inner);
      }
    }
  }
  if (version != "2") {
    reader.fault(
        "fsdp_version",
        "axolotl's FSDP1 (fsdp_version " + (version.empty() ? std::string("unset") : version) +
            ") leaves FSDP's backward prefetch off, which the hf stack does not replay: FSDP2 "
            "(fsdp_version: 2) is read.");
    return;
  }
  reader.list_read("fsdp_version");
  // The older list, which transformers' TrainingArguments reads too: full_shard and auto_wrap are
  // what FSDP2's replay runs; offload, shard_grad_op and the hybrid strategies are not.
  for (const std::string& entry : listed ? names_of(*list) : std::vector<std::string>{}) {
    if (entry != "full_shard" && entry != "auto_wrap") {
      reader.fault("fsdp", "fsdp lists " + entry.substr(0, 30) +
                               ": FSDP2 is replayed with full_shard and auto_wrap alone.");
      return;
    }
  }
  if (!fsdp) {
    reader.fault("fsdp_config", "FSDP2 needs its fsdp_config (auto_wrap_policy at the least).");
    return;
  }
  const Json* wrap = fsdp_key(*fsdp, "auto_wrap_policy");
  const std::string policy = wrap != nullptr ? scalar_of(*wrap).value_or("") : "";
  if (policy != "TRANSFORMER_BASED_WRAP") {
    fsdp->fault(
        "fsdp_config.auto_wrap_policy",
        "fsdp_config.auto_wrap_policy " +
            (policy.empty() ? std::string("unset (accelerate's NO_WRAP)") : policy.substr(0, 30)) +
            ": the hf stack replays transformer-based wrapping, a unit for each decoder "
            "layer (TRANSFORMER_BASED_WRAP).");
    return;
  }
  const auto on = [&](const char* key) {
    const Json* value = fsdp_key(*fsdp, key);
    const std::optional<std::string> text = value != nullptr ? scalar_of(*value) : std::nullopt;
    return text && (*text == "true" || *text == "True" || *text == "1");
  };
  if (on("offload_params")) {
    fsdp->fault("fsdp_config.offload_params",
                "fsdp_config.offload_params: FSDP's CPU offload is not modelled under the hf "
                "stack; set it false.");
    return;
  }
  if (on("activation_checkpointing")) {
    setup.recompute = Recompute::kFull;
    reader.launch().notes.push_back(
        "fsdp_config.activation_checkpointing: each layer rebuilt in its backward pass (full "
        "recomputation).");
  }
  // Set only where true: false leaves accelerate's FSDP2 default, true.
  on("reshard_after_forward");
  for (const char* key : {"state_dict_type", "final_state_dict_type", "cpu_ram_efficient_loading",
                          "sync_module_states", "use_orig_params", "transformer_layer_cls_to_wrap",
                          "cpu_offload_pin_memory", "min_num_params"}) {
    fsdp_key(*fsdp, key);  // checkpoints, loading, and what the wrap's own keys name
  }
  fsdp->list_unread({}, &sets_nothing);
  if (world_size < 2) {
    reader.fault("fsdp_config",
                 "FSDP shards over the devices the run starts: give the world size (2 or more).");
    return;
  }
  setup.layout.zero_stage = 3;
  setup.fsdp_version = FsdpVersion::kFsdp2;
  // accelerate upcasts the trained parameters to FP32 under bf16 mixed precision (axolotl sets
  // ACCELERATE_MIXED_PRECISION from bf16): full training is bf16-mixed.
  if (setup.lora_rank == 0 && setup.precision == Precision::kBf16) {
    setup.precision = Precision::kBf16Mixed;
  }
}

// What the hf stack does not run: DeepSpeed and axolotl's other parallelisms; and
// unfrozen_parameters, which freezes all but the names it matches (utils/freeze.py,
// freeze_layers_except), so that the trained parameters are not the adapter's or the model's.
void refuse_distribution(KeyReader& reader) {
  if (const auto unfrozen = reader.get("unfrozen_parameters", name_list())) {
    reader.fault("unfrozen_parameters",
                 "unfrozen_parameters trains only the parameters it names, which is not "
                 "modelled: full fine-tuning or LoRA's adapters are.");
    return;
  }
  if (const Json* found = reader.find("deepspeed"); found != nullptr && !sets_nothing(*found)) {
    reader.take("deepspeed");
    const std::string named = scalar_of(*found).value_or("");
    reader.fault("deepspeed",
                 "deepspeed" + (named.empty() ? std::string() : " " + named.substr(0, 60)) +
                     ": axolotl hands DeepSpeed its JSON config, which this file does not hold: "
                     "open that JSON itself, with the model set (its \"auto\" values are filled "
                     "from the settings beside it).");
    return;
  }
  for (const char* key : {"tensor_parallel_size", "context_parallel_size", "dp_shard_size",
                          "sequence_parallel_degree"}) {
    if (reader.get(key, text_number(true, 1, kMaxParallelDegree)).value_or(1) > 1) {
      reader.fault(key, std::string(key) + " above 1 is not modelled under axolotl: DDP is.");
    }
  }
}

}  // namespace

LaunchConfig read_axolotl_yaml(const std::string& json_text, const TrainingSetup& base,
                               const LaunchContext& context) {
  LaunchConfig launch;
  Json config;
  // The reader's model, which base_model replaces unless it is no preset.
  if (!open_launch(launch, kAxolotlKind, base, {}, {setting_id::kModel}, json_text,
                   "axolotl config: ", config)) {
    return launch;
  }
  TrainingSetup& setup = launch.setup;
  setup.stack = Stack::kHf;
  setup.layout.data_parallel = std::max(1, context.world_size);
  KeyReader reader(launch, kDialect, keys_of(config));
  read_model(reader, setup);
  read_axolotl_batch(reader, setup);
  read_axolotl_adapter(reader, setup);
  read_axolotl_precision(reader, setup.lora_rank > 0, setup);
  read_checkpointing(reader, setup);
  read_optimizer(reader, setup);
  read_kernels(reader, setup);
  refuse_distribution(reader);
  read_fsdp(reader, context.world_size, setup);
  read_lora_kernels(reader, setup);
  // loaders/model.py calls prepare_model_for_kbit_training for LoRA on a quantised base, whose
  // FP32 upcast of the embedding, the norms and the output layer axolotl then undoes for any
  // adapter (_configure_embedding_dtypes: needs_fa2_dtype, the modules back to torch_dtype): they
  // stay BF16, as the residual stream does.
  setup.kbit_prep = false;
  if (setup.lora_rank > 0 && setup.base_weights != BaseWeights::kBf16) {
    launch.notes.push_back(
        "prepare_model_for_kbit_training's FP32 embedding, norms and output layer are cast back "
        "to BF16 by axolotl (loaders/model.py, _configure_embedding_dtypes).");
  }
  if (!launch.answer.ok()) return launch;
  reader.list_unread(axolotl_no_bearing_keys(), &sets_nothing);
  launch.notes.push_back(
      context.world_size > 0
          ? "d " + std::to_string(context.world_size) + ": the world size given, under " +
                (setup.layout.zero_stage >= 3 ? "FSDP2." : "DDP.")
          : "One device: the file does not say how many run (give the world size for DDP).");
  return launch;
}

}  // namespace trainmem
