// accelerate's config (YAML, `accelerate config`'s default_config.yaml, passed as `accelerate
// launch
// --config_file`), read into the setup (launch.hpp) by the keys and defaults of accelerate v1.14.0
// (June 2026): commands/config/config_args.py (ClusterConfig), commands/launch.py (what a key
// becomes), utils/dataclasses.py (FullyShardedDataParallelPlugin, DeepSpeedPlugin) and
// accelerator.py (prepare_model). It says how the processes train, not what: the model, the
// tokens, LoRA and the optimiser stay the reader's, as transformers' Trainer (or TRL) run under
// it: the hf stack (NO, MULTI_GPU, FSDP) or the deepspeed stack (DEEPSPEED).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "launch/yaml_keys.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

constexpr const char* kAccelerateKind = "accelerate config (YAML; accelerate v1.14.0)";

// Keys with no bearing on the device's memory: where the processes run and how they meet, what
// the TPU and the CPU would do, checkpoints' format and how the model is first loaded.
const std::set<std::string>& accelerate_no_bearing_keys() {
  // clang-format off
  static const std::set<std::string> keys = {
      "compute_environment", "debug", "machine_rank", "main_process_ip", "main_process_port",
      "main_training_function", "rdzv_backend", "same_network", "gpu_ids", "enable_cpu_affinity",
      "downcast_bf16", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "tpu_name", "tpu_zone",
      "commands", "command_file", "num_cpu_threads_per_process", "ipex_config",
      "mpirun_config"};
  // clang-format on
  return keys;
}

// FSDP's keys with no bearing on the step: how the checkpoint is saved and the model first loaded
// (rank 0 alone, then broadcast), and use_orig_params (FSDP1's parameters as views of the same flat
// parameter).
const std::set<std::string>& no_bearing_fsdp_keys() {
  static const std::set<std::string> keys = {
      "fsdp_state_dict_type", "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states",
      "fsdp_use_orig_params", "fsdp_transformer_layer_cls_to_wrap"};
  return keys;
}

// DeepSpeed's plugin keys with no bearing on the step: saving, the launcher, the accumulation
// (which holds no more at the peak) and clipping; zero3_init_flag partitions the model as it
// loads, before the step.
const std::set<std::string>& no_bearing_deepspeed_keys() {
  static const std::set<std::string> keys = {
      "zero3_save_16bit_model",      "deepspeed_multinode_launcher",
      "deepspeed_hostfile",          "deepspeed_exclusion_filter",
      "deepspeed_inclusion_filter",  "gradient_accumulation_steps",
      "gradient_clipping",           "zero3_init_flag",
      "offload_optimizer_nvme_path", "offload_param_nvme_path"};
  return keys;
}

// What the file leaves to the reader, as the settings' ids: what the training script says.
std::vector<std::string> accelerate_left_to_the_reader() {
  namespace id = setting_id;
  return {id::kModel,       id::kSequenceLength, id::kTokens,
          id::kMicroBatch,  id::kFlashAttention, id::kRecompute,
          id::kDropout,     id::kLoss,           id::kLossChunks,
          id::kLoraRank,    id::kLoraTargets,    id::kLoraDropout,
          id::kBaseWeights, id::kOptimizer,      id::kPagedOptimizer,
          id::kKbitPrep,    id::kKbitCastBack,   id::kMtp,
          id::kTrainVision, id::kCapacityFactor, id::kReentrantCheckpointing,
          id::kNoAutocast};
}

// FSDP (utils/dataclasses.py, FullyShardedDataParallelPlugin, as accelerate launch hands it the
// keys): FULL_SHARD with transformer-based wrapping, FSDP1's with BACKWARD_PRE or FSDP2's
// (fsdp2_prepare_model), which the hf stack replays as ZeRO 3; the other strategies, policies and
// prefetches are refused by key.
void read_fsdp(KeyReader& reader, bool mixed, TrainingSetup& setup) {
  std::optional<KeyReader> fsdp = reader.section("fsdp_config");
  if (!fsdp) {
    reader.fault("fsdp_config", "distributed_type FSDP needs its fsdp_config.");
    return;
  }
  // accelerate launch's default is 1 (commands/launch.py); `accelerate config` writes 2.
  const std::string version = fsdp->get("fsdp_version", given_text()).value_or("1");
  const bool fsdp2 = version == "2";
  if (version != "1" && !fsdp2) {
    fsdp->fault("fsdp_config.fsdp_version",
                "fsdp_config.fsdp_version must be 1 or 2; it is '" + version.substr(0, 20) + "'.");
    return;
  }
  fsdp->list_read("fsdp_version");
  setup.fsdp_version = fsdp2 ? FsdpVersion::kFsdp2 : FsdpVersion::kFsdp1;
  // The strategy: fsdp_sharding_strategy, or fsdp_reshard_after_forward naming one under FSDP1
  // (accelerate v1.7 on) and true or false under FSDP2 (to_fsdp2 maps FULL_SHARD to true), by name
  // or by its number (1 is FULL_SHARD).
  std::string strategy = "FULL_SHARD";
  for (const char* key : {"fsdp_sharding_strategy", "fsdp_reshard_after_forward"}) {
    if (std::optional<std::string> given = fsdp->get(key, given_text())) {
      const bool full = *given == "1" || *given == "FULL_SHARD" ||
                        (fsdp2 && (*given == "true" || *given == "True"));
      strategy = full ? "FULL_SHARD" : *given;
      if (strategy != "FULL_SHARD") {
        fsdp->fault(fsdp->name(key),
                    fsdp->name(key) + " " + strategy.substr(0, 30) +
                        ": the hf stack replays FSDP's FULL_SHARD alone (SHARD_GRAD_OP, "
                        "NO_SHARD and the hybrid strategies are not modelled).");
        return;
      }
      fsdp->list_read(key);
    }
  }
  const std::string wrap = fsdp->get("fsdp_auto_wrap_policy", given_text()).value_or("NO_WRAP");
  if (wrap != "TRANSFORMER_BASED_WRAP") {
    fsdp->fault("fsdp_config.fsdp_auto_wrap_policy",
                "fsdp_config.fsdp_auto_wrap_policy " + wrap.substr(0, 30) +
                    (fsdp->find("fsdp_auto_wrap_policy") == nullptr ? " (FSDP's default)" : "") +
                    ": the hf stack replays transformer-based wrapping, a unit for each decoder "
                    "layer (TRANSFORMER_BASED_WRAP); SIZE_BASED_WRAP and NO_WRAP make other "
                    "units.");
    return;
  }
  fsdp->list_read("fsdp_auto_wrap_policy");
  // FSDP2 prefetches the next unit itself: accelerate sets the backward prefetch aside.
  const std::string prefetch =
      fsdp2 ? "BACKWARD_PRE"
            : fsdp->get("fsdp_backward_prefetch", given_text()).value_or("NO_PREFETCH");
  if (fsdp2) fsdp->take("fsdp_backward_prefetch");
  if (prefetch != "BACKWARD_PRE") {
    fsdp->fault("fsdp_config.fsdp_backward_prefetch",
                "fsdp_config.fsdp_backward_prefetch " + prefetch.substr(0, 30) +
                    (fsdp->find("fsdp_backward_prefetch") == nullptr ? " (FSDP's default)" : "") +
                    ": the hf stack replays BACKWARD_PRE, the next layer gathered while one "
                    "runs its backward pass.");
    return;
  }
  if (!fsdp2) fsdp->list_read("fsdp_backward_prefetch");
  if (fsdp->get("fsdp_forward_prefetch", text_bool()).value_or(false)) {
    fsdp->fault("fsdp_config.fsdp_forward_prefetch",
                "fsdp_config.fsdp_forward_prefetch: the next layer gathered in the forward pass "
                "as well is not modelled; set it false.");
    return;
  }
  if (fsdp->get("fsdp_offload_params", text_bool()).value_or(false)) {
    fsdp->fault("fsdp_config.fsdp_offload_params",
                "fsdp_config.fsdp_offload_params: FSDP's CPU offload is not modelled under the hf "
                "stack; set it false.");
    return;
  }
  if (fsdp->get("fsdp_activation_checkpointing", text_bool()).value_or(false)) {
    // checkpoint_wrapper on each wrapped layer (accelerator.py, NO_REENTRANT); transformers'
    // Trainer refuses it beside its own gradient_checkpointing.
    setup.recompute = Recompute::kFull;
    setup.reentrant_checkpointing = false;
    std::vector<std::string>& leaves = reader.launch().leaves;
    for (const char* id : {setting_id::kRecompute, setting_id::kReentrantCheckpointing}) {
      leaves.erase(std::remove(leaves.begin(), leaves.end(), id), leaves.end());
    }
    reader.launch().notes.push_back(
        "fsdp_activation_checkpointing: each layer rebuilt in its backward pass (full "
        "recomputation); the Trainer's gradient_checkpointing must then be off.");
  }
  fsdp->list_unread(no_bearing_fsdp_keys(), &sets_nothing);
  setup.layout.zero_stage = 3;
  // accelerate upcasts a trained flat parameter to FP32 under mixed precision (prepare_model):
  // full training is bf16-mixed whatever the model was loaded in; LoRA's base stays BF16.
  setup.precision = mixed && setup.lora_rank == 0 ? Precision::kBf16Mixed : Precision::kBf16;
}

// The model as the script loads it, on one device or under DDP (the hf stack's): BF16 under LoRA
// or with mixed precision off; for full training under bf16 autocast, FP32 (bf16-mixed), as TRL
// loads it by default (dtype float32).
void read_loaded_model(LaunchConfig& launch, bool mixed) {
  TrainingSetup& setup = launch.setup;
  const bool full_mixed = mixed && setup.lora_rank == 0;
  setup.precision = full_mixed ? Precision::kBf16Mixed : Precision::kBf16;
  launch.notes.push_back(
      setup.lora_rank > 0 ? "LoRA's base as loaded, in BF16; PEFT's adapters in FP32."
      : full_mixed
          ? "Full training under bf16 autocast, the model loaded in FP32 as TRL loads it (dtype "
            "float32): bf16-mixed. A model loaded in BF16 holds what bf16 precision counts "
            "without the file."
          : "Full training with mixed precision off: the model loaded in BF16.");
}

// DeepSpeed (utils/dataclasses.py, DeepSpeedPlugin): without a config file the plugin builds
// DeepSpeed's config from zero_stage (2 by default), the offload devices and mixed_precision, the
// batch "auto" for the Trainer to fill; the buckets stay DeepSpeed's defaults.
void read_deepspeed(KeyReader& reader, bool mixed, TrainingSetup& setup) {
  setup.stack = Stack::kDeepSpeed;
  if (!mixed) {
    reader.fault("mixed_precision",
                 "mixed_precision no leaves DeepSpeed in FP32, which the deepspeed stack does not "
                 "model; set it to bf16.");
    return;
  }
  setup.precision = Precision::kBf16Mixed;
  int stage = 2;
  std::string optimizer_device = "none";
  std::string param_device = "none";
  if (std::optional<KeyReader> deepspeed = reader.section("deepspeed_config")) {
    if (std::optional<std::string> file = deepspeed->get("deepspeed_config_file", given_text());
        file && *file != "none") {
      deepspeed->fault("deepspeed_config.deepspeed_config_file",
                       "deepspeed_config.deepspeed_config_file names DeepSpeed's own config (" +
                           file->substr(0, 80) +
                           "), whose keys then win: open that file itself, with the model set.");
      return;
    }
    stage = static_cast<int>(
        deepspeed->get("zero_stage", text_number(true, 0, kMaxZeroStage)).value_or(2));
    optimizer_device =
        deepspeed->get("offload_optimizer_device", given_text()).value_or(optimizer_device);
    param_device = deepspeed->get("offload_param_device", given_text()).value_or(param_device);
    const auto device_read = [&](const char* key, const std::string& device) {
      const std::string name = deepspeed->name(key);
      if (device == "nvme") {
        deepspeed->fault(name, name +
                                   " nvme: ZeRO-Infinity's NVMe offload is not modelled; the "
                                   "host's memory is.");
      } else if (device != "none" && device != "cpu") {
        deepspeed->fault(
            name, name + " must be none, cpu or nvme; it is '" + device.substr(0, 20) + "'.");
      } else if (deepspeed->find(key) != nullptr) {
        deepspeed->list_read(key);
      }
    };
    device_read("offload_optimizer_device", optimizer_device);
    device_read("offload_param_device", param_device);
    if (!reader.ok()) return;
    if (param_device == "cpu" && optimizer_device != "cpu") {
      deepspeed->fault("deepspeed_config.offload_param_device",
                       "deepspeed_config.offload_param_device cpu without the optimiser offloaded "
                       "is not modelled; offload both, or neither.");
      return;
    }
    deepspeed->list_unread(no_bearing_deepspeed_keys(), &sets_nothing);
  }
  setup.layout.zero_stage = stage;
  setup.offload = param_device == "cpu"       ? Offload::kOptimizerAndWeights
                  : optimizer_device == "cpu" ? Offload::kOptimizer
                                              : Offload::kNone;
  reader.launch().notes.push_back(
      "accelerate's DeepSpeed plugin builds DeepSpeed's config from these keys (ZeRO " +
      std::to_string(stage) +
      ", bf16), its micro-batch \"auto\", which the Trainer fills from the micro-batch set; the "
      "buckets are DeepSpeed's defaults.");
}

}  // namespace

LaunchConfig read_accelerate_yaml(const std::string& json_text, const TrainingSetup& base,
                                  const LaunchContext& context) {
  LaunchConfig launch;
  Json config;
  if (!open_launch(launch, kAccelerateKind, base, accelerate_left_to_the_reader(), {}, json_text,
                   "accelerate config: ", config)) {
    return launch;
  }
  TrainingSetup& setup = launch.setup;
  setup.stack = Stack::kHf;
  setup.logits = true;  // every training step makes them
  keep_trainer_loss(launch);
  KeyReader reader(launch, kDialect, keys_of(config));
  // The processes: num_processes over every machine (accelerate launch's world size).
  const long long processes = static_cast<long long>(
      reader.get("num_processes", text_number(true, 1, kMaxParallelDegree)).value_or(1));
  reader.get("num_machines", text_number(true, 1, kMaxParallelDegree));
  // mixed_precision: what a plain script runs; the Trainer's bf16 and fp16 override it
  // (TrainingArguments.__post_init__ sets ACCELERATE_MIXED_PRECISION).
  const std::string precision = reader.get("mixed_precision", given_text()).value_or("no");
  if (precision != "no" && precision != "bf16") {
    reader.fault("mixed_precision", "mixed_precision " + precision.substr(0, 20) +
                                        " is not modelled: bf16 and no are.");
  }
  const bool mixed = precision == "bf16";
  if (mixed) {
    // accelerate launch hands bf16 to the Trainer (ACCELERATE_MIXED_PRECISION), which runs under
    // autocast whatever its own bf16 says: the file sets it. With no, the Trainer's bf16 decides
    // (--no-autocast where it is off over a model loaded in BF16).
    setup.no_autocast = false;
    std::vector<std::string>& leaves = launch.leaves;
    leaves.erase(std::remove(leaves.begin(), leaves.end(), setting_id::kNoAutocast), leaves.end());
  }
  if (reader.get("use_cpu", text_bool()).value_or(false)) {
    reader.fault("use_cpu", "use_cpu: training on the CPU is not modelled; GPUs are.");
  }
  const std::string type = reader.get("distributed_type", given_text()).value_or("NO");
  if (type == "NO" || type == "MULTI_GPU") {
    setup.layout.zero_stage = 0;
    read_loaded_model(launch, mixed);
  } else if (type == "FSDP") {
    read_fsdp(reader, mixed, setup);
  } else if (type == "DEEPSPEED") {
    read_deepspeed(reader, mixed, setup);
  } else {
    reader.fault("distributed_type",
                 "distributed_type " + type.substr(0, 30) +
                     " is not modelled: NO, MULTI_GPU, FSDP and DEEPSPEED (on GPUs) are.");
  }
  for (const char* key : {"fp8_config", "megatron_lm_config", "parallelism_config"}) {
    const Json* found = reader.find(key);
    if (found != nullptr && !sets_nothing(*found) && !(found->is_object() && found->empty())) {
      reader.take(key);
      reader.fault(key, std::string(key) +
                            " is not modelled under accelerate: data parallelism, FSDP and "
                            "DeepSpeed's ZeRO are.");
    }
  }
  if (std::optional<KeyReader> dynamo = reader.section("dynamo_config")) {
    const std::string backend = dynamo->get("dynamo_backend", given_text()).value_or("NO");
    if (backend != "NO") {
      dynamo->fault("dynamo_config.dynamo_backend",
                    "dynamo_config.dynamo_backend " + backend.substr(0, 20) +
                        ": torch.compile under accelerate is not modelled; set it to NO.");
    }
    dynamo->list_unread({}, &sets_nothing);
  }
  if (!launch.answer.ok()) return launch;
  reader.list_unread(accelerate_no_bearing_keys(), &sets_nothing);
  const long long world = context.world_size > 0 ? context.world_size : processes;
  setup.layout.data_parallel = static_cast<int>(world);
  const ModelShape* model = resolve_model(setup);
  launch.notes.insert(
      launch.notes.begin(),
      "The model (" + (model != nullptr ? model->name : std::string("none")) +
          "), the tokens, LoRA, recomputation and the optimiser are the training script's, the "
          "reader's: an accelerate config names none of them. d " +
          std::to_string(world) + ": " +
          (context.world_size > 0 ? "the world size given" : "num_processes") + ".");
  return launch;
}

}  // namespace trainmem
