// DeepSpeed's JSON config, read into the setup (launch.hpp) by DeepSpeed's own keys and defaults
// (deepspeedai/DeepSpeed edaa722: deepspeed/runtime/config.py, runtime/zero/config.py): the batch,
// the ZeRO stage and its switches, the precision and the optimiser, under the deepspeed stack.
// The file names no model, sequence or recomputation (the training script does): those stay the
// reader's, the model from --model or --config (or the page's model), and are said in the notes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "model/config_text.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/config.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;

constexpr const char* kDeepSpeedKind = "DeepSpeed config (JSON, DeepSpeed edaa722)";

// Top-level keys with no bearing on the device's memory: logging, monitors, the learning rate's
// schedule, clipping, checkpoints.
const std::set<std::string>& deepspeed_no_bearing_keys() {
  static const std::set<std::string> keys = {"steps_per_print",
                                             "wall_clock_breakdown",
                                             "memory_breakdown",
                                             "dump_state",
                                             "gradient_clipping",
                                             "prescale_gradients",
                                             "gradient_predivide_factor",
                                             "scheduler",
                                             "zero_allow_untested_optimizer",
                                             "zero_force_ds_cpu_optimizer",
                                             "tensorboard",
                                             "wandb",
                                             "csv_monitor",
                                             "comet",
                                             "flops_profiler",
                                             "comms_logger",
                                             "checkpoint",
                                             "dataloader_drop_last",
                                             "seed"};
  return keys;
}

// ZeRO's keys the deepspeed stack replays at DeepSpeed's default only (stack_deepspeed.cpp): any
// other value changes what it holds, and is refused with the default named. `stage3` keys are
// read by ZeRO 3 alone, and have no bearing under ZeRO 1 and 2.
struct FixedKey {
  const char* key;
  double value;  // a number's default; for a switch, 1 (true) or 0 (false)
  bool is_switch;
  bool stage3;
};
const std::vector<FixedKey>& fixed_keys() {
  static const std::vector<FixedKey> keys = {
      {"contiguous_gradients", 1, true, false},
      {"reduce_scatter", 1, true, false},
      {"use_multi_rank_bucket_allreduce", 1, true, false},
      {"stage3_max_live_parameters", 1e9, false, true},
      {"max_live_parameters", 1e9, false, true},
      {"stage3_max_reuse_distance", 1e9, false, true},
      {"max_reuse_distance", 1e9, false, true},
      {"stage3_module_granularity_threshold", 0, false, true},
      {"sub_group_size", 1e9, false, true},
      {"memory_efficient_linear", 1, true, true},
      {"zero_hpz_partition_size", 1, false, true},
      {"mics_shard_size", -1, false, true},
      {"zero_quantized_weights", 0, true, true},
      {"zero_quantized_nontrainable_weights", 0, true, true},
      {"zero_quantized_gradients", 0, true, false}};
  return keys;
}

// ZeRO's keys with no bearing on the device's memory. allgather_bucket_size only cuts ZeRO 1 and
// 2's gathers of the updated weights into pieces, in place (runtime/utils.py,
// all_gather_dp_groups).
const std::set<std::string>& zero_no_bearing_keys() {
  static const std::set<std::string> keys = {"allgather_partitions",
                                             "allgather_bucket_size",
                                             "load_from_fp32_weights",
                                             "elastic_checkpoint",
                                             "round_robin_gradients",
                                             "ignore_unused_parameters",
                                             "stage3_gather_16bit_weights_on_model_save",
                                             "stage3_gather_fp16_weights_on_model_save",
                                             "gather_16bit_weights_on_model_save",
                                             "legacy_stage1",
                                             "log_trace_cache_warnings",
                                             "enable_sanity_checks",
                                             "pipeline_loading_checkpoint",
                                             "override_module_apply"};
  return keys;
}

// The largest whole number read (a batch, a bucket): 10^12.
constexpr long long kMaxWhole = 1000000000000LL;

// The number as DeepSpeed reads it (pp_int: 5e8 is whole), or nothing for another type.
std::optional<double> number_of(const Json& value) {
  if (value.is_number_integer() || value.is_number_unsigned() || value.is_number_float()) {
    const double number = value.get<double>();
    if (std::isfinite(number)) return number;
  }
  return std::nullopt;
}

// "auto" is transformers' Trainer's to fill from its TrainingArguments; the config alone does not
// say it, whatever the key.
std::optional<std::string> auto_refusal(const std::string& name, const Json& value) {
  if (!value.is_string() || value.get<std::string>() != "auto") return std::nullopt;
  return name +
         " is \"auto\", which transformers' Trainer does not fill here (it fills the batch, "
         "clipping, the optimiser's and schedule's numbers, bf16 and fp16, and the buckets from "
         "the model's width): give the value it runs with.";
}

// transformers' Trainer (integrations/deepspeed.py, HfTrainerDeepSpeedConfig:
// trainer_config_process and trainer_config_finalize, transformers 4.46 to 5.x) fills each "auto"
// from its TrainingArguments and the model: here from the settings beside the file, which stand for
// them. What bears on memory is read from the setup; the rest (the learning rate, clipping, the
// schedule) is set aside, as its numbers would be.
struct TrainerFill {
  bool trainer = false;             // the file has an "auto": a Trainer's, which fills it
  bool batch_from_setup = false;    // train_batch_size "auto": the world from the settings
  std::vector<std::string> filled;  // "zero_optimization.reduce_bucket_size = 16777216 (h²)"
};

// Replaces each "auto" the Trainer fills; one it does not fill stays, refused by name as read.
TrainerFill fill_trainer_autos(Json& config, const TrainingSetup& base) {
  TrainerFill fill;
  const auto is_auto = [](const Json& value) {
    return value.is_string() && value.get<std::string>() == "auto";
  };
  // A pre-pass: any "auto" at all makes the file a Trainer's.
  std::vector<const Json*> pending{&config};
  while (!pending.empty() && !fill.trainer) {
    const Json* node = pending.back();
    pending.pop_back();
    if (is_auto(*node)) fill.trainer = true;
    if (node->is_object() || node->is_array()) {
      for (const Json& child : *node) pending.push_back(&child);
    }
  }
  if (!fill.trainer) return fill;
  const ModelShape* model = resolve_model(base);
  const double h = model != nullptr ? model->hidden_size : 0;
  const auto set = [&](Json& parent, const std::string& key, const Json& value,
                       const std::string& name, const std::string& why) {
    if (!parent.is_object() || !parent.contains(key) || !is_auto(parent[key])) return;
    parent[key] = value;
    fill.filled.push_back(name + " = " + describe(value) + " (" + why + ")");
  };
  const auto drop = [&](Json& parent, const std::string& key) {
    if (parent.is_object() && parent.contains(key) && is_auto(parent[key])) parent.erase(key);
  };
  set(config, "train_micro_batch_size_per_gpu", base.micro_batch_sequences,
      "train_micro_batch_size_per_gpu", "per_device_train_batch_size: the micro-batch set");
  fill.batch_from_setup =
      config.contains("train_batch_size") && is_auto(config["train_batch_size"]);
  drop(config, "train_batch_size");             // world × micro-batch × accumulation
  drop(config, "gradient_accumulation_steps");  // holds no more at the peak
  drop(config, "gradient_clipping");
  for (const char* section : {"optimizer", "scheduler"}) {
    if (config.contains(section) && config[section].is_object() &&
        config[section].contains("params") && config[section]["params"].is_object()) {
      Json& params = config[section]["params"];
      std::vector<std::string> autos;
      for (const auto& [key, value] : params.items()) {
        if (is_auto(value)) autos.push_back(key);
      }
      for (const std::string& key : autos) params.erase(key);  // the learning rate's numbers
    }
  }
  const bool bf16 = base.precision == Precision::kBf16 || base.precision == Precision::kBf16Mixed ||
                    base.precision == Precision::kBf16Master;
  if (config.contains("bf16")) {
    set(config["bf16"], "enabled", bf16, "bf16.enabled",
        "TrainingArguments' bf16: the precision set, " + choice_id(base.precision));
  }
  if (config.contains("fp16")) {
    set(config["fp16"], "enabled", false, "fp16.enabled",
        "TrainingArguments' fp16: off, as the precision set is not FP16");
  }
  if (config.contains("zero_optimization") && config["zero_optimization"].is_object() && h > 0) {
    Json& zero = config["zero_optimization"];
    const bool stage3 =
        zero.contains("stage") && zero["stage"].is_number() && zero["stage"].get<double>() == 3;
    set(zero, "reduce_bucket_size", static_cast<long long>(h * h),
        "zero_optimization.reduce_bucket_size", "h², h = " + format_count(h));
    if (stage3) {
      set(zero, "stage3_prefetch_bucket_size", static_cast<long long>(0.9 * h * h),
          "zero_optimization.stage3_prefetch_bucket_size", "0.9·h²");
      set(zero, "stage3_param_persistence_threshold", static_cast<long long>(10 * h),
          "zero_optimization.stage3_param_persistence_threshold", "10·h");
    }
  }
  return fill;
}

// Each value accepted is listed as "zero_optimization.stage = 3", and a refused one quoted as
// JSON.
const KeyDialect kDeepSpeedDialect = {
    ListRead::kOnAccept,
    [](const std::string& name, const Json& value) { return name + " = " + describe(value); },
    &describe, &auto_refusal, false};

// A whole number of at least `least`, at most kMaxWhole.
ValueType<long long> whole_number(long long least) {
  return {"a whole number of at least " + std::to_string(least),
          [least](const Json& value) -> std::optional<long long> {
            const std::optional<double> number = number_of(value);
            if (!number || *number != std::floor(*number) || *number < static_cast<double>(least) ||
                *number > static_cast<double>(kMaxWhole)) {
              return std::nullopt;
            }
            return static_cast<long long>(*number);
          }};
}

// ZeRO-Offload's device; null is refused as a device, not read as absent.
const ValueType<std::string>& offload_device_type() {
  static const ValueType<std::string> type{
      "none, cpu or nvme",
      [](const Json& value) -> std::optional<std::string> {
        if (!value.is_string()) return std::nullopt;
        const std::string device = value.get<std::string>();
        if (device != "none" && device != "cpu" && device != "nvme") return std::nullopt;
        return device;
      },
      nullptr};
  return type;
}

// DeepSpeed's batch rule (runtime/config.py, _set_batch_related_parameters and _batch_assertion):
// train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps × the
// data-parallel world, each missing one worked out from the others; the world from the three
// when the launch does not give it.
void read_batch(KeyReader& reader, long long world, TrainingSetup& setup) {
  const auto train = reader.get("train_batch_size", whole_number(1));
  const auto micro = reader.get("train_micro_batch_size_per_gpu", whole_number(1));
  const auto steps = reader.get("gradient_accumulation_steps", whole_number(1));
  if (!reader.ok()) return;
  if (!train && !micro) {
    reader.fault("train_micro_batch_size_per_gpu",
                 "DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu; the file "
                 "gives neither.");
    return;
  }
  // Each whole number is at most 10^12: a product is formed only where it cannot pass that, so
  // none overflows (DeepSpeed's integers are Python's, unbounded).
  const auto product = [](long long a, long long b) -> std::optional<long long> {
    if (b != 0 && a > kMaxWhole / b) return std::nullopt;
    return a * b;
  };
  if (world == 0) {
    const std::optional<long long> per_device =
        train && micro && steps ? product(*micro, *steps) : std::nullopt;
    if (per_device && *train % *per_device == 0) {
      world = *train / *per_device;
      reader.launch().notes.push_back(
          "d " + std::to_string(world) +
          ": train_batch_size over train_micro_batch_size_per_gpu × gradient_accumulation_steps.");
    } else {
      reader.fault("train_batch_size",
                   "The file does not say how many devices run (train_batch_size = "
                   "train_micro_batch_size_per_gpu × gradient_accumulation_steps × the devices): "
                   "give the world size (--world-size).");
      return;
    }
  } else {
    reader.launch().notes.push_back("d " + std::to_string(world) + ": the world size given.");
  }
  long long micro_batch = micro.value_or(0);
  if (!micro) micro_batch = *train / world / steps.value_or(1);
  const long long accumulation = steps.value_or(train && micro ? *train / *micro / world : 1);
  const std::optional<long long> per_device = product(micro_batch, accumulation);
  const std::optional<long long> total =
      per_device ? product(*per_device, world) : std::optional<long long>();
  if (micro_batch < 1 || accumulation < 1 || (train && (!total || *train != *total))) {
    reader.fault("train_batch_size",
                 "train_batch_size " + std::to_string(train.value_or(0)) +
                     " is not train_micro_batch_size_per_gpu × gradient_accumulation_steps × "
                     "the devices (" +
                     std::to_string(micro_batch) + " × " + std::to_string(accumulation) + " × " +
                     std::to_string(world) + "), as DeepSpeed requires.");
    return;
  }
  if (world > kMaxParallelDegree) {
    reader.fault("train_batch_size", "d " + std::to_string(world) +
                                         " devices, from the batch, is over " +
                                         format_count(kMaxParallelDegree) + ".");
    return;
  }
  if (micro_batch > kMaxMicroBatchSequences) {
    reader.fault("train_micro_batch_size_per_gpu",
                 "train_micro_batch_size_per_gpu " + std::to_string(micro_batch) + " is over " +
                     format_count(kMaxMicroBatchSequences) + " sequences.");
    return;
  }
  setup.layout.data_parallel = static_cast<int>(world);
  setup.micro_batch_sequences = static_cast<int>(micro_batch);
}

// Where ZeRO-Offload puts a state: its section's device, "none" when absent; or its deprecated
// switch `alias` (cpu_offload, cpu_offload_param), which DeepSpeed reads as the section with the
// device cpu (zero/config.py, new_param_fn), and refuses beside the section (config_utils.py,
// _process_deprecated_field).
std::string offload_device(KeyReader& zero, const std::string& key, const std::string& alias) {
  std::optional<KeyReader> section = zero.section(key);
  if (const auto old = zero.get(alias, json_boolean())) {
    if (section) {
      zero.fault(zero.name(alias), zero.name(alias) + " and " + zero.name(key) +
                                       " are given together, which DeepSpeed refuses: give " + key +
                                       " alone.");
      return "none";
    }
    return *old ? "cpu" : "none";
  }
  if (!section) return "none";
  return section->get("device", offload_device_type()).value_or("none");
}

// zero_optimization: the stage, overlap_comm, ZeRO-Offload, and the knobs replayed at their
// defaults only.
void read_zero(KeyReader& reader, TrainingSetup& setup) {
  std::optional<KeyReader> zero = reader.section("zero_optimization");
  if (!zero) {
    setup.layout.zero_stage = 0;
    return;
  }
  const long long stage = zero->get("stage", whole_number(0)).value_or(0);
  if (stage > kMaxZeroStage) {
    reader.fault("zero_optimization.stage", "zero_optimization.stage must be 0, 1, 2 or 3.");
    return;
  }
  setup.layout.zero_stage = static_cast<int>(stage);
  if (const auto overlap = zero->get("overlap_comm", json_boolean())) {
    setup.overlap_comm = *overlap ? OverlapComm::kOn : OverlapComm::kOff;
  }
  // The buckets (settings of their own), each under either of its names (zero/config.py's
  // aliases); the stage-3 ones read by ZeRO 3 alone.
  const auto bucket = [&](double& field, const char* key, const char* alias, long long least) {
    for (const char* name : {key, alias}) {
      if (name == nullptr) continue;
      if (const auto value = zero->get(name, whole_number(least))) {
        field = static_cast<double>(*value);
      }
    }
  };
  bucket(setup.zero_reduce_bucket, "reduce_bucket_size", nullptr, 1);
  if (stage == 3) {
    bucket(setup.zero_prefetch_bucket, "stage3_prefetch_bucket_size", "prefetch_bucket_size", 1);
    bucket(setup.zero_persistence_threshold, "stage3_param_persistence_threshold",
           "param_persistence_threshold", 0);
  }
  const std::string optimizer = offload_device(*zero, "offload_optimizer", "cpu_offload");
  const std::string parameters = offload_device(*zero, "offload_param", "cpu_offload_param");
  if (optimizer == "nvme" || parameters == "nvme") {
    const std::string name = std::string("zero_optimization.") +
                             (optimizer == "nvme" ? "offload_optimizer" : "offload_param") +
                             ".device";
    reader.fault(name, name +
                           " nvme: ZeRO-Infinity's NVMe offload is not modelled; the host's "
                           "memory is.");
  } else if (parameters != "none" && optimizer == "none") {
    reader.fault("zero_optimization.offload_param.device",
                 "zero_optimization.offload_param without offload_optimizer is not modelled: "
                 "the weights are offloaded with the optimiser's states.");
  }
  setup.offload = parameters != "none"  ? Offload::kOptimizerAndWeights
                  : optimizer != "none" ? Offload::kOptimizer
                                        : Offload::kNone;
  // The rest, each in the file's order: set aside, not understood, or held to its default.
  for (const auto& [key, value] : zero->keys()) {
    if (zero->taken(key) || zero_no_bearing_keys().count(key) > 0) continue;
    if (stage < 3 &&
        (key == "stage3_prefetch_bucket_size" || key == "prefetch_bucket_size" ||
         key == "stage3_param_persistence_threshold" || key == "param_persistence_threshold")) {
      continue;  // read by ZeRO 3 alone
    }
    const std::string name = zero->name(key);
    const FixedKey* fixed = nullptr;
    for (const FixedKey& each : fixed_keys()) {
      if (key == each.key) fixed = &each;
    }
    if (fixed == nullptr) {
      zero->list_not_understood(key);
      continue;
    }
    if (fixed->stage3 && stage < 3) continue;  // read by ZeRO 3 alone
    if (const std::optional<std::string> refused = auto_refusal(name, value)) {
      reader.fault(name, *refused);
      return;
    }
    const std::optional<double> number = number_of(value);
    const bool as_default = fixed->is_switch
                                ? value.is_boolean() && value.get<bool>() == (fixed->value != 0)
                                : number && *number == fixed->value;
    if (!as_default) {
      const std::string shown =
          fixed->is_switch ? (fixed->value != 0 ? "true" : "false") : format_count(fixed->value);
      reader.fault(name, name + " " + (number ? format_count(*number) : describe(value)) +
                             " is not modelled: the deepspeed stack replays DeepSpeed's "
                             "default, " +
                             shown + ".");
      return;
    }
    zero->list_read(key);
  }
}

// bf16 (or its old name bfloat16), fp16 and amp: the precision.
void read_precision(KeyReader& reader, bool trainer, TrainingSetup& setup) {
  // DeepSpeed reads bfloat16 only where bf16 is absent or null (precision_config.py,
  // get_bfloat16_config); both names are its.
  const Json* named = reader.take("bf16");
  reader.take("bfloat16");
  const std::string read_as = named != nullptr && !named->is_null() ? "bf16" : "bfloat16";
  bool bf16 = false;
  // DeepSpeedBF16Config (runtime/precision_config.py): the ZeRO optimiser's master weights and
  // gradients in BF16, and its states too (runtime/base_optimizer.py, _configure_master_weights).
  bool master = false;
  bool states = false;
  if (std::optional<KeyReader> section = reader.section(read_as)) {
    bf16 = section->get("enabled", json_boolean()).value_or(false);
    for (const FileKey& each : section->keys()) {
      const std::string& key = each.key;
      if (key == "enabled") continue;
      if (key == "bf16_master_weights_and_grads") {
        master = section->get(key, json_boolean()).value_or(false);
      } else if (key == "bf16_optimizer_states") {
        states = section->get(key, json_boolean()).value_or(false);
      } else if (key == "immediate_grad_update" || key == "check_grad_overflow") {
        // When the gradients are applied and whether overflow is checked: no memory of their own.
        section->list_read(key);
      } else {
        section->list_not_understood(key);
      }
    }
  }
  for (const char* key : {"fp16", "amp"}) {
    std::optional<KeyReader> section = reader.section(key);
    if (section && section->get("enabled", json_boolean()).value_or(false)) {
      reader.fault(std::string(key) + ".enabled",
                   std::string(key) + ".enabled: " +
                       (std::string(key) == "fp16" ? "FP16 mixed precision (its loss scaler)"
                                                   : "Apex's AMP") +
                       " is not modelled; bf16 is.");
      return;
    }
  }
  if (bf16 && states && !master) {
    // DeepSpeed asserts it (runtime/config.py, _do_error_check).
    reader.fault(read_as + ".bf16_optimizer_states",
                 read_as + ".bf16_optimizer_states requires " + read_as +
                     ".bf16_master_weights_and_grads, as DeepSpeed asserts; set both.");
    return;
  }
  if (bf16 && master && !states) {
    // FP32 moments beside a BF16 master copy: DeepSpeed runs it only under ZeRO-Offload with
    // DeepSpeedCPUAdam, which the stack does not replay.
    reader.fault(read_as + ".bf16_master_weights_and_grads",
                 read_as +
                     ".bf16_master_weights_and_grads without bf16_optimizer_states (FP32 "
                     "moments on the host under ZeRO-Offload) is not modelled; with "
                     "bf16_optimizer_states it is (precision bf16-master).");
    return;
  }
  setup.precision = !bf16              ? Precision::kFp32
                    : master && states ? Precision::kBf16Master
                                       : Precision::kBf16Mixed;
  if (!bf16 && trainer && reader.find("bf16") == nullptr && reader.find("bfloat16") == nullptr) {
    reader.fault("bf16",
                 "The file has no bf16 section, so transformers' Trainer enables neither bf16 nor "
                 "fp16 in it and DeepSpeed trains in FP32, which the deepspeed stack does not "
                 "model: add \"bf16\": {\"enabled\": \"auto\"}, as transformers' bf16 configs "
                 "have, to train in BF16.");
    return;
  }
  if (!bf16) {
    reader.launch().notes.push_back(
        "FP32 throughout: the file enables neither bf16 nor fp16 (transformers' Trainer fills "
        "bf16.enabled \"auto\" from its bf16 only where the file has a bf16 section).");
  }
}

// optimizer.type: Adam and AdamW (DeepSpeed's FusedAdam or CPU Adam); with no optimizer section
// the training script's own, which stays the reader's.
void read_optimizer(KeyReader& reader, const TrainingSetup& base, TrainingSetup& setup) {
  std::optional<KeyReader> section = reader.section("optimizer");
  if (!section) {
    setup.optimizer = base.optimizer;
    reader.launch().leaves.push_back(setting_id::kOptimizer);
    reader.launch().notes.push_back(
        "The optimiser is the training script's (the file has no optimizer section): the one "
        "set stays.");
    return;
  }
  const Json* type = section->take("type");
  if (type == nullptr || !type->is_string()) {
    reader.fault("optimizer.type", "optimizer.type must name DeepSpeed's optimiser (Adam, AdamW).");
    return;
  }
  std::string name = type->get<std::string>();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name != "adam" && name != "adamw") {
    reader.fault("optimizer.type", "optimizer.type " + describe(*type) +
                                       " is not modelled under DeepSpeed: Adam and AdamW are.");
    return;
  }
  section->list_read("type");
  setup.optimizer = Optimizer::kAdam;
}

// What DeepSpeed runs that the deepspeed stack does not: tensor (AutoTP) and sequence (Ulysses)
// parallelism, refused by key when above 1.
void refuse_other_parallelism(KeyReader& reader) {
  // Elastic training works the batch out anew for the devices it finds (runtime/config.py,
  // compute_elastic_config), replacing the batch keys read here.
  if (std::optional<KeyReader> section = reader.section("elasticity")) {
    if (section->get("enabled", json_boolean()).value_or(false)) {
      reader.fault("elasticity.enabled",
                   "elasticity.enabled: DeepSpeed's elastic training chooses the batch for the "
                   "devices it finds, which is not modelled; give the batch it runs with.");
    }
  }
  if (std::optional<KeyReader> section = reader.section("tensor_parallel")) {
    if (section->get("autotp_size", whole_number(0)).value_or(0) > 1) {
      reader.fault("tensor_parallel.autotp_size",
                   "DeepSpeed's AutoTP is not modelled; the deepspeed stack runs ZeRO over data "
                   "parallelism alone.");
    }
  }
  if (reader.get("sequence_parallel_size", whole_number(1)).value_or(1) > 1) {
    reader.fault("sequence_parallel_size",
                 "DeepSpeed-Ulysses' sequence parallelism is not modelled; the deepspeed stack "
                 "runs ZeRO over data parallelism alone.");
  }
}

// A key given twice in one object: DeepSpeed refuses the file (runtime/config_utils.py,
// dict_raise_error_on_duplicate_keys); the first such key, or "".
std::string duplicate_key(const std::string& text) {
  std::vector<std::set<std::string>> objects;
  std::string found;
  const Json::parser_callback_t callback = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) objects.emplace_back();
    if (event == Json::parse_event_t::object_end && !objects.empty()) objects.pop_back();
    if (event == Json::parse_event_t::key && !objects.empty() && parsed.is_string() &&
        !objects.back().insert(parsed.get<std::string>()).second && found.empty()) {
      found = parsed.get<std::string>();
    }
    return true;
  };
  const Json reparsed = Json::parse(text, callback, /*allow_exceptions=*/false);
  return reparsed.is_discarded() ? std::string() : found;
}

// "a; b; c".
std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

// What the file leaves to the reader, as the settings' ids.
std::vector<std::string> left_to_the_reader() {
  namespace id = setting_id;
  return {id::kModel,          id::kSequenceLength, id::kTokens,
          id::kFlashAttention, id::kRecompute,      id::kDropout,
          id::kLoss,           id::kLossChunks,     id::kMtp,
          id::kTrainVision,    id::kLoraRank,       id::kLoraTargets,
          id::kLoraDropout,    id::kBaseWeights,    id::kOffloadActivations,
          id::kCapacityFactor};
}

}  // namespace

LaunchConfig read_deepspeed_json(const std::string& text, const TrainingSetup& base,
                                 const LaunchContext& context) {
  LaunchConfig launch;
  Json config;
  if (!open_launch(launch, kDeepSpeedKind, base, left_to_the_reader(), {}, text,
                   "DeepSpeed config: ", config)) {
    return launch;
  }
  if (const std::string twice = duplicate_key(text); !twice.empty()) {
    launch.answer = refusal(twice, "'" + json_string_text(twice).substr(0, 60) +
                                       "' is given twice in one object, which DeepSpeed refuses.");
    return launch;
  }
  // The setup the file makes: the deepspeed stack over data parallelism alone; the model, the
  // tokens and recomputation as the reader has them, the rest DeepSpeed's defaults.
  TrainingSetup& setup = launch.setup;
  setup.stack = Stack::kDeepSpeed;
  // Every training step computes the logits; how the loss is taken over them is the script's.
  setup.logits = true;
  const TrainerFill trainer = fill_trainer_autos(config, base);
  long long world = context.world_size;
  if (trainer.trainer) {
    launch.notes.push_back(
        "\"auto\" is transformers' Trainer's to fill, from its TrainingArguments and the model: "
        "filled from the settings beside the file" +
        (trainer.filled.empty() ? std::string(".") : ": " + join(trainer.filled) + ".") +
        " The learning rate's, clipping's and the schedule's numbers have no bearing.");
    if (trainer.batch_from_setup && world == 0) {
      world = base.layout.data_parallel;
      launch.notes.push_back("d " + std::to_string(world) +
                             ": train_batch_size is \"auto\", the Trainer's world size: the "
                             "data-parallel degree set.");
    }
    keep_trainer_loss(launch);
  }
  KeyReader reader(launch, kDeepSpeedDialect, keys_of(config));
  read_batch(reader, world, setup);
  read_zero(reader, setup);
  read_precision(reader, trainer.trainer, setup);
  read_optimizer(reader, base, setup);
  refuse_other_parallelism(reader);
  if (!launch.answer.ok()) return launch;
  reader.list_unread(deepspeed_no_bearing_keys());
  const ModelShape* model = resolve_model(setup);
  launch.notes.insert(
      launch.notes.begin(),
      "The model (" + (model != nullptr ? model->name : std::string("none")) + "), the sequence (" +
          format_count(setup.sequence_length) +
          (trainer.trainer ? " tokens) and recomputation are the reader's"
                           : " tokens), recomputation and the loss are the reader's") +
          ": a DeepSpeed config names none of them. The logits are counted, as every training "
          "step makes them.");
  return launch;
}

}  // namespace trainmem
