// DeepSpeed's JSON config, read into the setup (launch.hpp) by DeepSpeed's own keys and defaults
// (deepspeedai/DeepSpeed edaa722: deepspeed/runtime/config.py, runtime/zero/config.py): the batch,
// the ZeRO stage and its switches, the precision and the optimiser, under the deepspeed stack.
// The file names no model, sequence or recomputation (the training script does): those stay the
// reader's, the model from --model or --config (or the page's model), and are said in the notes.
#include <cctype>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/launch_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/config.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;

constexpr const char* kKind = "DeepSpeed config (JSON, DeepSpeed edaa722)";

// Top-level keys with no bearing on the device's memory: logging, monitors, the learning rate's
// schedule, clipping, checkpoints.
const std::set<std::string>& no_bearing_keys() {
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

// ZeRO's keys the deepspeed stack replays at DeepSpeed's default only (stack_frameworks.cpp): any
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
      {"reduce_bucket_size", 5e8, false, false},
      {"use_multi_rank_bucket_allreduce", 1, true, false},
      {"stage3_prefetch_bucket_size", 5e7, false, true},
      {"prefetch_bucket_size", 5e7, false, true},
      {"stage3_param_persistence_threshold", 1e5, false, true},
      {"param_persistence_threshold", 1e5, false, true},
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

struct Reader {
  LaunchConfig& launch;

  void fault(const std::string& key, const std::string& message) {
    if (launch.answer.ok()) launch.answer = refusal(key, message);
  }
  // "auto" is transformers' Trainer's to fill from its TrainingArguments; the config alone does
  // not say it.
  bool refuse_auto(const std::string& key, const Json& value) {
    if (!value.is_string() || value.get<std::string>() != "auto") return false;
    fault(key, key +
                   " is \"auto\", which transformers' Trainer fills from its TrainingArguments: "
                   "give the value it runs with.");
    return true;
  }
  std::optional<long long> whole(const Json& object, const std::string& path,
                                 const std::string& key, long long least) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) return std::nullopt;
    const std::string name = path + key;
    if (refuse_auto(name, *found)) return std::nullopt;
    const std::optional<double> number = number_of(*found);
    if (!number || *number != std::floor(*number) || *number < static_cast<double>(least) ||
        *number > static_cast<double>(kMaxWhole)) {
      fault(name, name + " must be a whole number of at least " + std::to_string(least) +
                      "; it is " + describe(*found) + ".");
      return std::nullopt;
    }
    launch.read.push_back(name + " = " + describe(*found));
    return static_cast<long long>(*number);
  }
  std::optional<bool> flag(const Json& object, const std::string& path, const std::string& key) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) return std::nullopt;
    const std::string name = path + key;
    if (refuse_auto(name, *found)) return std::nullopt;
    if (!found->is_boolean()) {
      fault(name, name + " must be true or false; it is " + describe(*found) + ".");
      return std::nullopt;
    }
    launch.read.push_back(name + " = " + describe(*found));
    return found->get<bool>();
  }
  // An object's value, or nothing (refused) when the key holds something else.
  const Json* section(const Json& object, const std::string& path, const std::string& key) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) return nullptr;
    if (!found->is_object()) {
      fault(path + key, path + key + " must be an object, {…}; it is " + describe(*found) + ".");
      return nullptr;
    }
    return &*found;
  }
};

// DeepSpeed's batch rule (runtime/config.py, _set_batch_related_parameters and _batch_assertion):
// train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps × the
// data-parallel world, each missing one worked out from the others; the world from the three
// when the launch does not give it.
void read_batch(Reader& reader, const Json& config, long long world, TrainingSetup& setup) {
  const auto train = reader.whole(config, "", "train_batch_size", 1);
  const auto micro = reader.whole(config, "", "train_micro_batch_size_per_gpu", 1);
  const auto steps = reader.whole(config, "", "gradient_accumulation_steps", 1);
  if (!reader.launch.answer.ok()) return;
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
      reader.launch.notes.push_back(
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
    reader.launch.notes.push_back("d " + std::to_string(world) + ": the world size given.");
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
std::string offload_device(Reader& reader, const Json& zero, const std::string& key,
                           const std::string& alias) {
  const Json* section = reader.section(zero, "zero_optimization.", key);
  if (const auto old = reader.flag(zero, "zero_optimization.", alias)) {
    if (section != nullptr) {
      reader.fault("zero_optimization." + alias,
                   "zero_optimization." + alias + " and zero_optimization." + key +
                       " are given together, which DeepSpeed refuses: give " + key + " alone.");
      return "none";
    }
    return *old ? "cpu" : "none";
  }
  if (section == nullptr) return "none";
  const std::string name = "zero_optimization." + key + ".device";
  const auto found = section->find("device");
  if (found == section->end()) return "none";
  if (reader.refuse_auto(name, *found)) return "none";
  if (!found->is_string() ||
      (found->get<std::string>() != "none" && found->get<std::string>() != "cpu" &&
       found->get<std::string>() != "nvme")) {
    reader.fault(name, name + " must be none, cpu or nvme; it is " + describe(*found) + ".");
    return "none";
  }
  reader.launch.read.push_back(name + " = " + describe(*found));
  return found->get<std::string>();
}

// zero_optimization: the stage, overlap_comm, ZeRO-Offload, and the knobs replayed at their
// defaults only.
void read_zero(Reader& reader, const Json& config, TrainingSetup& setup) {
  LaunchConfig& launch = reader.launch;
  const Json* zero = reader.section(config, "", "zero_optimization");
  if (zero == nullptr) {
    setup.layout.zero_stage = 0;
    return;
  }
  const long long stage = reader.whole(*zero, "zero_optimization.", "stage", 0).value_or(0);
  if (stage > kMaxZeroStage) {
    reader.fault("zero_optimization.stage", "zero_optimization.stage must be 0, 1, 2 or 3.");
    return;
  }
  setup.layout.zero_stage = static_cast<int>(stage);
  if (const auto overlap = reader.flag(*zero, "zero_optimization.", "overlap_comm")) {
    setup.overlap_comm = *overlap ? OverlapComm::kOn : OverlapComm::kOff;
  }
  const std::string optimizer = offload_device(reader, *zero, "offload_optimizer", "cpu_offload");
  const std::string parameters =
      offload_device(reader, *zero, "offload_param", "cpu_offload_param");
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
  for (const auto& [key, value] : zero->items()) {
    if (key == "stage" || key == "overlap_comm" || key == "offload_optimizer" ||
        key == "offload_param" || key == "cpu_offload" || key == "cpu_offload_param" ||
        zero_no_bearing_keys().count(key) > 0) {
      continue;
    }
    const std::string name = "zero_optimization." + key;
    const FixedKey* fixed = nullptr;
    for (const FixedKey& each : fixed_keys()) {
      if (key == each.key) fixed = &each;
    }
    if (fixed == nullptr) {
      launch.not_understood.push_back(name);
      continue;
    }
    if (fixed->stage3 && stage < 3) continue;  // read by ZeRO 3 alone
    if (reader.refuse_auto(name, value)) return;
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
    launch.read.push_back(name + " = " + describe(value));
  }
}

// bf16 (or its old name bfloat16), fp16 and amp: the precision.
void read_precision(Reader& reader, const Json& config, TrainingSetup& setup) {
  // DeepSpeed reads bfloat16 only where bf16 is absent or null (precision_config.py,
  // get_bfloat16_config).
  const auto named = config.find("bf16");
  const std::string read_as = named != config.end() && !named->is_null() ? "bf16" : "bfloat16";
  bool bf16 = false;
  if (const Json* section = reader.section(config, "", read_as)) {
    const std::string path = read_as + ".";
    bf16 = reader.flag(*section, path, "enabled").value_or(false);
    for (const auto& [name, value] : section->items()) {
      if (name == "enabled") continue;
      if (name == "bf16_master_weights_and_grads" || name == "bf16_optimizer_states") {
        // DeepSpeedBF16Config: the ZeRO optimiser's master weights and gradients, or its
        // states, in BF16 (runtime/base_optimizer.py), which the stack does not replay.
        if (reader.flag(*section, path, name).value_or(false)) {
          reader.fault(path + name, path + name +
                                        " is not modelled: the deepspeed stack holds the master "
                                        "weights, gradients and optimiser states in FP32.");
          return;
        }
      } else if (name == "immediate_grad_update" || name == "check_grad_overflow") {
        // When the gradients are applied and whether overflow is checked: no memory of their own.
        reader.launch.read.push_back(path + name + " = " + describe(value));
      } else {
        reader.launch.not_understood.push_back(path + name);
      }
    }
  }
  for (const char* key : {"fp16", "amp"}) {
    const Json* section = reader.section(config, "", key);
    if (section != nullptr &&
        reader.flag(*section, std::string(key) + ".", "enabled").value_or(false)) {
      reader.fault(std::string(key) + ".enabled",
                   std::string(key) + ".enabled: " +
                       (std::string(key) == "fp16" ? "FP16 mixed precision (its loss scaler)"
                                                   : "Apex's AMP") +
                       " is not modelled; bf16 is.");
      return;
    }
  }
  setup.precision = bf16 ? Precision::kBf16Mixed : Precision::kFp32;
  if (!bf16) {
    reader.launch.notes.push_back("FP32 throughout: the file enables neither bf16 nor fp16.");
  }
}

// optimizer.type: Adam and AdamW (DeepSpeed's FusedAdam or CPU Adam); with no optimizer section
// the training script's own, which stays the reader's.
void read_optimizer(Reader& reader, const Json& config, const TrainingSetup& base,
                    TrainingSetup& setup) {
  const Json* section = reader.section(config, "", "optimizer");
  if (section == nullptr) {
    setup.optimizer = base.optimizer;
    reader.launch.leaves.push_back(setting_id::kOptimizer);
    reader.launch.notes.push_back(
        "The optimiser is the training script's (the file has no optimizer section): the one "
        "set stays.");
    return;
  }
  const auto type = section->find("type");
  if (type == section->end() || !type->is_string()) {
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
  reader.launch.read.push_back("optimizer.type = " + describe(*type));
  setup.optimizer = Optimizer::kAdam;
}

// What DeepSpeed runs that the deepspeed stack does not: tensor (AutoTP) and sequence (Ulysses)
// parallelism, refused by key when above 1.
void refuse_other_parallelism(Reader& reader, const Json& config) {
  // Elastic training works the batch out anew for the devices it finds (runtime/config.py,
  // compute_elastic_config), replacing the batch keys read here.
  if (const Json* section = reader.section(config, "", "elasticity")) {
    if (reader.flag(*section, "elasticity.", "enabled").value_or(false)) {
      reader.fault("elasticity.enabled",
                   "elasticity.enabled: DeepSpeed's elastic training chooses the batch for the "
                   "devices it finds, which is not modelled; give the batch it runs with.");
    }
  }
  if (const Json* section = reader.section(config, "", "tensor_parallel")) {
    if (reader.whole(*section, "tensor_parallel.", "autotp_size", 0).value_or(0) > 1) {
      reader.fault("tensor_parallel.autotp_size",
                   "DeepSpeed's AutoTP is not modelled; the deepspeed stack runs ZeRO over data "
                   "parallelism alone.");
    }
  }
  if (reader.whole(config, "", "sequence_parallel_size", 1).value_or(1) > 1) {
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
  launch.kind = kKind;
  launch.leaves = left_by_every_file();
  for (const std::string& id : left_to_the_reader()) launch.leaves.push_back(id);
  launch.setup = setup_beside(base, launch.leaves);
  Json config;
  const ConfigParse parsed = parse_json_object(text, config, "DeepSpeed config: ");
  if (!parsed.answer.ok()) {
    launch.answer = refusal("launch", parsed.answer.message);
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
  Reader reader{launch};
  read_batch(reader, config, context.world_size, setup);
  read_zero(reader, config, setup);
  read_precision(reader, config, setup);
  read_optimizer(reader, config, base, setup);
  refuse_other_parallelism(reader, config);
  if (!launch.answer.ok()) return launch;
  static const std::set<std::string> read_keys = {"train_batch_size",
                                                  "train_micro_batch_size_per_gpu",
                                                  "gradient_accumulation_steps",
                                                  "zero_optimization",
                                                  "bf16",
                                                  "bfloat16",
                                                  "fp16",
                                                  "amp",
                                                  "optimizer",
                                                  "tensor_parallel",
                                                  "sequence_parallel_size",
                                                  "elasticity"};
  for (const auto& [key, value] : config.items()) {
    if (read_keys.count(key) == 0 && no_bearing_keys().count(key) == 0) {
      launch.not_understood.push_back(key);
    }
  }
  const ModelShape* model = resolve_model(setup);
  launch.notes.insert(
      launch.notes.begin(),
      "The model (" + (model != nullptr ? model->name : std::string("none")) + "), the sequence (" +
          format_count(setup.sequence_length) +
          " tokens), recomputation and the loss are the reader's: a DeepSpeed config names none of "
          "them. The logits are counted, as every training step makes them.");
  return launch;
}

}  // namespace trainmem
