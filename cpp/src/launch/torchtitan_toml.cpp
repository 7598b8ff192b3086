// torchtitan's TOML job config, read into the setup (launch.hpp) in either schema it is read in,
// each as its torchtitan reads it:
// - 9dec370 (December 2024, the commit of its published benchmark): torchtitan/config_manager.py's
//   keys and defaults, parallelisms/parallel_dims.py's mesh, pipelining_utils.py's split and
//   schedule, train.py's loss;
// - v0.2.2 (238fa99, February 2026, the last release with TOML): torchtitan/config/job_config.py's
//   dataclasses ([parallelism] since 785c34c, March 2025; training.local_batch_size since 8570415,
//   June 2025; [compile] since 08b8b24, August 2025; [quantize.linear.float8] since 8a2686c,
//   September 2025), distributed/pipeline_parallel.py's split, components/loss.py's loss,
//   models/llama3/infra/parallelize.py's FSDP2 and compile.
// A file with keys of both, as files written between the two are, is refused by name: its keys'
// meanings moved in steps this reader does not follow. After v0.2.2 torchtitan has no TOML (its
// configs are Python functions in config_registry.py since 9810191): launch.cpp says so.
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
// toml++ 3.3.0 assumes (TOML_ASSERT_ASSUME: __builtin_assume under clang in a release build, the
// page's module among them) that a table header's key starts with a bare key's character or a
// quote, which a file can break ("[;odel]"): undefined behaviour where its parser would otherwise
// refuse the key itself, as it does under GCC, whose TOML_ASSUME is nothing. The assumption is
// made nothing here too, so that the parser's own refusal stands (found by fuzz_launch_torchtitan).
#include <toml++/impl/preprocessor.h>
#undef TOML_ASSUME
#define TOML_ASSUME(...) static_cast<void>(0)
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

// The schemas read, and each one's name for the keys both have.
enum class Era { kDec2024, kV022 };

struct EraKeys {
  const char* kind;
  const char* batch;
  const char* replicate;
  const char* shard;
  const char* tp;
  const char* pp;
  const char* cp;
  const char* schedule;
  const char* schedule_csv;
  const char* async_tp;
  const char* rotate;
  const char* loss_parallel;
};

const EraKeys& keys_of(Era era) {
  static const EraKeys dec2024 = {"torchtitan job config (TOML, torchtitan 9dec370)",
                                  "training.batch_size",
                                  "training.data_parallel_replicate_degree",
                                  "training.data_parallel_shard_degree",
                                  "training.tensor_parallel_degree",
                                  "experimental.pipeline_parallel_degree",
                                  "experimental.context_parallel_degree",
                                  "experimental.pipeline_parallel_schedule",
                                  "experimental.pipeline_parallel_schedule_csv",
                                  "experimental.enable_async_tensor_parallel",
                                  "experimental.context_parallel_rotate_method",
                                  "training.disable_loss_parallel"};
  static const EraKeys v022 = {"torchtitan job config (TOML, torchtitan v0.2.2, 238fa99)",
                               "training.local_batch_size",
                               "parallelism.data_parallel_replicate_degree",
                               "parallelism.data_parallel_shard_degree",
                               "parallelism.tensor_parallel_degree",
                               "parallelism.pipeline_parallel_degree",
                               "parallelism.context_parallel_degree",
                               "parallelism.pipeline_parallel_schedule",
                               "parallelism.pipeline_parallel_schedule_csv",
                               "parallelism.enable_async_tensor_parallel",
                               "parallelism.context_parallel_rotate_method",
                               "parallelism.disable_loss_parallel"};
  return era == Era::kDec2024 ? dec2024 : v022;
}

// Keys that only 9dec370's schema has (renamed or removed by v0.2.2), and keys or tables that only
// v0.2.2's has: which a file holds names its schema.
bool dec2024_only(const std::string& key) {
  static const std::set<std::string> keys = {"training.batch_size",
                                             "training.data_parallel_replicate_degree",
                                             "training.data_parallel_shard_degree",
                                             "training.tensor_parallel_degree",
                                             "training.disable_loss_parallel",
                                             "training.compile",
                                             "training.fsdp_reshard_after_forward",
                                             "model.norm_type",
                                             "model.tokenizer_path",
                                             "optimizer.fused",
                                             "checkpoint.enable_checkpoint",
                                             "experimental.pipeline_parallel_degree",
                                             "experimental.pipeline_parallel_split_points",
                                             "experimental.pipeline_parallel_schedule",
                                             "experimental.pipeline_parallel_schedule_csv",
                                             "experimental.pipeline_parallel_microbatches",
                                             "experimental.context_parallel_degree",
                                             "experimental.context_parallel_rotate_method",
                                             "experimental.enable_async_tensor_parallel",
                                             "experimental.enable_compiled_autograd"};
  return keys.count(key) > 0 || key.rfind("float8.", 0) == 0;
}

bool v022_only(const std::string& key) {
  static const std::set<std::string> keys = {
      "training.local_batch_size", "training.global_batch_size", "training.dtype",
      "model.converters",          "model.hf_assets_path",       "checkpoint.enable",
      "optimizer.implementation"};
  for (const char* table : {"parallelism.", "compile.", "quantize.", "validation.", "debug."}) {
    if (key.rfind(table, 0) == 0) return true;
  }
  return keys.count(key) > 0;
}

// Keys with no bearing on the device's memory: logging, profiling, data, the learning rate's
// schedule, checkpoints (written from the host), timeouts. Read and set aside. Under v0.2.2 whole
// tables are (no_bearing_tables), and these keys besides.
const std::set<std::string>& no_bearing_v022() {
  // clang-format off
  static const std::set<std::string> keys = {
      "model.hf_assets_path",
      "model.tokenizer_path",
      "model.print_after_conversion",
      "optimizer.lr",
      "optimizer.beta1",
      "optimizer.beta2",
      "optimizer.eps",
      "optimizer.weight_decay",
      "optimizer.implementation",  // for-loop, foreach or fused: 9dec370's optimizer.fused, too
      "training.steps",
      "training.dataset",
      "training.dataset_path",
      "training.max_norm",
      "training.gc_freq",
      "training.gc_debug",
      "training.dataloader",  // the host's loader workers
      "parallelism.pipeline_parallel_expert_parallel_overlap",  // DualPipeV with experts only
      "parallelism.expert_parallel_comm_backend",               // experts only
      "activation_checkpoint.preserve_rng_state",
      "activation_checkpoint.determinism_check",
      "activation_checkpoint.debug",
      "activation_checkpoint.visualize_memory_budget_pareto",
      "activation_checkpoint.memory_budget",  // read in mode "memory_budget" alone, refused
      "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp",
      // Validation's own; its tokens are read where it runs (read_v022_rest).
      "validation.dataset",
      "validation.dataset_path",
      "validation.freq",
      "validation.steps",
      "validation.dataloader",
      "validation.local_batch_size",
      "validation.seq_len",
      "debug.seed",
      "debug.deterministic",
      "debug.deterministic_warn_only"};
  // clang-format on
  return keys;
}

// Tables read from the host alone (v0.2.2): the job's names, profiling and metrics, the learning
// rate's schedule, checkpoints, the collectives' timeouts, the estimation tool.
bool in_no_bearing_table(const std::string& key) {
  for (const char* table : {"job.", "profiling.", "metrics.", "lr_scheduler.", "checkpoint.",
                            "comm.", "memory_estimation."}) {
    if (key.rfind(table, 0) == 0) return true;
  }
  return false;
}

const std::set<std::string>& titan_toml_no_bearing() {
  static const std::set<std::string> keys = {"job.config_file",
                                             "job.dump_folder",
                                             "job.description",
                                             "job.use_for_integration_test",
                                             "job.print_args",
                                             "profiling.enable_profiling",
                                             "profiling.save_traces_folder",
                                             "profiling.profile_freq",
                                             "profiling.enable_memory_snapshot",
                                             "profiling.save_memory_snapshot_folder",
                                             "metrics.log_freq",
                                             "metrics.enable_tensorboard",
                                             "metrics.disable_color_printing",
                                             "metrics.save_tb_folder",
                                             "metrics.rank_0_only",
                                             "metrics.enable_wandb",
                                             "model.tokenizer_path",
                                             "optimizer.lr",
                                             "optimizer.fused",
                                             "training.dataset",
                                             "training.dataset_path",
                                             "training.warmup_steps",
                                             "training.max_norm",
                                             "training.steps",
                                             "training.gc_freq",
                                             "training.seed",
                                             "training.deterministic",
                                             "checkpoint.enable_checkpoint",
                                             "checkpoint.folder",
                                             "checkpoint.interval_type",
                                             "checkpoint.interval",
                                             "checkpoint.model_weights_only",
                                             "checkpoint.export_dtype",
                                             "checkpoint.create_seed_checkpoint",
                                             "checkpoint.async_mode",
                                             "checkpoint.keep_latest_k",
                                             "checkpoint.load_step",
                                             "float8.precompute_float8_dynamic_scale_for_fsdp",
                                             "comm.init_timeout_seconds",
                                             "comm.train_timeout_seconds",
                                             "comm.trace_buf_size",
                                             "memory_estimation.enabled",
                                             "memory_estimation.disable_fake_mode",
                                             "experimental.enable_async_tensor_parallel"};
  return keys;
}

// A value as the file writes it, near enough: 8192, true, "full", ["layers.8", …].
std::string value_text(const nlohmann::json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return "\"" + value.get<std::string>() + "\"";
  if (value.is_array()) {
    std::string text;
    for (const nlohmann::json& item : value) text += (text.empty() ? "" : ", ") + value_text(item);
    return "[" + text + "]";
  }
  return "…";
}

// Each key read is listed when first looked up, as "section.key = value"; a refusal names the key
// and the type, not the value.
const KeyDialect kTitanTomlDialect = {ListRead::kOnTake,
                                      [](const std::string& name, const nlohmann::json& value) {
                                        return name + " = " + value_text(value);
                                      },
                                      nullptr, nullptr, false};

// A TOML value as JSON. A date or a time, which no key reads, stands as an empty table: a value of
// none of the types read, shown as "…" as a table is.
nlohmann::json json_of(const toml::node& node) {
  if (const auto value = node.value_exact<std::int64_t>()) return *value;
  if (const auto value = node.value_exact<bool>()) return *value;
  if (const auto value = node.value_exact<std::string>()) return *value;
  if (const auto value = node.value_exact<double>()) return *value;
  nlohmann::json json = nlohmann::json::object();
  if (const toml::array* array = node.as_array()) {
    json = nlohmann::json::array();
    for (const toml::node& item : *array) json.push_back(json_of(item));
  } else if (const toml::table* table = node.as_table()) {
    for (const auto& [key, value] : *table) json[std::string(key.str())] = json_of(value);
  }
  return json;
}

// A table's keys under `prefix`, a table within it by its keys in turn ([quantize.linear.float8]
// is "quantize.linear.float8.…"), except the tables that are one key's value: `whole`.
void add_keys(const toml::table& table, const std::string& prefix,
              std::map<std::string, nlohmann::json>& keys) {
  static const std::set<std::string> whole = {"training.dataloader", "validation.dataloader"};
  for (const auto& [key, value] : table) {
    const std::string name = prefix + std::string(key.str());
    const toml::table* inner = value.as_table();
    if (inner != nullptr && whole.count(name) == 0) {
      add_keys(*inner, name + ".", keys);
    } else {
      keys[name] = json_of(value);
    }
  }
}

// The file's keys, "section.key", by name; a top-level key outside any table is not understood.
FileKeys section_keys(const toml::table& file, std::vector<std::string>& stray) {
  std::map<std::string, nlohmann::json> keys;
  for (const auto& [section, node] : file) {
    const std::string name(section.str());
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      stray.push_back(name);
      continue;
    }
    add_keys(*table, name + ".", keys);
  }
  FileKeys listed;
  for (auto& [key, value] : keys) listed.push_back({key, std::move(value)});
  return listed;
}

// A list of strings, or a string read as its comma-separated list (config_manager.py,
// string_list).
const ValueType<std::vector<std::string>>& string_list() {
  static const ValueType<std::vector<std::string>> type{
      "a list of strings",
      [](const nlohmann::json& value) -> std::optional<std::vector<std::string>> {
        std::vector<std::string> values;
        if (value.is_string()) {
          const std::string joined = value.get<std::string>();
          std::size_t start = 0;
          while (true) {
            const std::size_t comma = joined.find(',', start);
            values.push_back(joined.substr(start, comma - start));
            if (comma == std::string::npos) break;
            start = comma + 1;
          }
          return values;
        }
        if (!value.is_array()) return std::nullopt;
        for (const nlohmann::json& item : value) {
          if (!item.is_string()) return std::nullopt;
          values.push_back(item.get<std::string>());
        }
        return values;
      }};
  return type;
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

// torchtitan's llama3 flavors (torchtitan/models/llama/__init__.py): Llama 3.1's shapes, which
// are Llama 3's.
std::optional<std::string> llama3_preset(const std::string& flavor) {
  if (flavor == "8B") return "llama3-8b";
  if (flavor == "70B") return "llama3-70b";
  if (flavor == "405B") return "llama3-405b";
  return std::nullopt;
}

// Each stage's layers from split points "layers.N" (pipeline_llama_manual_split keeps layers from
// one point, inclusive, to the next).
std::optional<std::vector<int>> stages_of(const std::vector<std::string>& points, int layers) {
  std::vector<int> stages;
  int start = 0;
  for (const std::string& point : points) {
    const std::string prefix = "layers.";
    if (point.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string number = point.substr(prefix.size());
    // torchtitan matches the names as text (pipeline_llama.py): "layers.08" names no layer.
    if (number.empty() || number.size() > 4 || (number.size() > 1 && number[0] == '0') ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    const int at = std::stoi(number);
    if (at <= start || at >= layers) return std::nullopt;
    stages.push_back(at - start);
    start = at;
  }
  stages.push_back(layers - start);
  return stages;
}

// generate_split_points (pipelining_utils.py): the first stage ⌊L/S⌋ layers, each stage between
// one more while L mod S lasts, the last the rest.
std::vector<int> generated_stages(int layers, int stages) {
  const int base = layers / stages;
  int extra = layers % stages;
  std::vector<int> split;
  int used = 0;
  for (int index = 0; index + 1 < stages; ++index) {
    int here = base;
    if (index > 0 && extra > 0) {
      ++here;
      --extra;
    }
    split.push_back(here);
    used += here;
  }
  split.push_back(layers - used);
  return split;
}

// The v0.2.2 split (generate_llm_fqn_per_model_part, distributed/pipeline_parallel.py): the
// embedding counts as `input` layers and the norm and output layer as `output`, L + input + output
// shared evenly over S stages, one more to each of the first (L + input + output) mod S; the first
// stage then holds `input` layers fewer, the last `output` fewer. Nothing where torchtitan raises.
std::optional<std::vector<int>> weighted_stages(int layers, int stages, int input, int output) {
  if (stages == 1) return std::vector<int>{layers};
  const int effective = layers + input + output;
  const int per_stage = stages > 0 ? effective / stages : 0;
  if (stages > effective || per_stage == 0 || input > per_stage || output > per_stage) {
    return std::nullopt;
  }
  const int extra = effective % stages;
  std::vector<int> split;
  int used = 0;
  for (int index = 0; index < stages; ++index) {
    int here = per_stage + (index < extra ? 1 : 0);
    if (index == 0) here -= input;
    if (index == stages - 1) here -= output;
    here = std::max(0, std::min(here, layers - used));
    split.push_back(here);
    used += here;
  }
  return split;
}

// The batch and the mesh, as parallel_dims.py builds it: dp_replicate × dp_shard × cp × tp × pp.
struct Mesh {
  long long batch = 8;
  long long sequence = 2048;
  long long replicate = 1;
  long long shard = -1;
  long long tp = 1;
  long long pp = 1;
  long long cp = 1;
};

// The pipeline's schedule, its split if set, and its micro-batches a step.
struct Schedule {
  bool interleaved = false;
  std::optional<std::vector<std::string>> points;  // 9dec370: split points "layers.N"
  std::optional<std::vector<int>> stages;          // v0.2.2: each stage's layers
  long long micro_batches = 1;
};

// The model and the optimiser (model.*, optimizer.*).
void read_model(KeyReader& keys, Era era, TrainingSetup& setup) {
  const std::string name =
      keys.get("model.name", json_string()).value_or(era == Era::kDec2024 ? "llama" : "llama3");
  const std::string flavor = keys.get("model.flavor", json_string()).value_or("debugmodel");
  if (name != "llama3") {
    keys.fault("model.name", "model.name " + quoted(name) +
                                 " is not read: torchtitan's \"llama3\" flavors 8B, 70B and 405B "
                                 "are.");
  } else if (const auto preset = llama3_preset(flavor)) {
    setup.model_id = *preset;
  } else {
    keys.fault("model.flavor", "model.flavor " + quoted(flavor) +
                                   " is not read: 8B, 70B and 405B are (Llama 3.1's shapes).");
  }
  if (era == Era::kDec2024) {
    const std::string norm = keys.get("model.norm_type", json_string()).value_or("rmsnorm");
    if (norm != "rmsnorm" && norm != "fused_rmsnorm") {
      keys.fault("model.norm_type", "model.norm_type " + quoted(norm) +
                                        " is not modelled: Llama's RMSNorm is (rmsnorm, "
                                        "fused_rmsnorm).");
    }
  }
  const std::string optimizer = keys.get("optimizer.name", json_string()).value_or("AdamW");
  if (optimizer != "AdamW" && optimizer != "Adam") {
    keys.fault("optimizer.name",
               "optimizer.name " + quoted(optimizer) + " is not modelled: AdamW and Adam are.");
  }
  if (keys.get("optimizer.early_step_in_backward", json_boolean()).value_or(false)) {
    keys.fault("optimizer.early_step_in_backward",
               "optimizer.early_step_in_backward is not modelled under torchtitan.");
  }
}

// The degrees; data_parallel_shard_degree -1 takes the world size the others leave.
Mesh read_mesh(KeyReader& keys, Era era, const LaunchContext& context,
               std::vector<std::string>& notes) {
  const EraKeys& k = keys_of(era);
  Mesh mesh;
  mesh.batch = keys.get(k.batch, json_integer()).value_or(8);
  mesh.sequence = keys.get("training.seq_len", json_integer()).value_or(2048);
  mesh.replicate = keys.get(k.replicate, json_integer()).value_or(1);
  mesh.shard = keys.get(k.shard, json_integer()).value_or(-1);
  mesh.tp = keys.get(k.tp, json_integer()).value_or(1);
  mesh.pp = keys.get(k.pp, json_integer()).value_or(1);
  mesh.cp = keys.get(k.cp, json_integer()).value_or(1);
  for (const auto& [key, value] : {std::pair<const char*, long long>{k.batch, mesh.batch},
                                   {"training.seq_len", mesh.sequence},
                                   {k.replicate, mesh.replicate},
                                   {k.tp, mesh.tp},
                                   {k.pp, mesh.pp},
                                   {k.cp, mesh.cp}}) {
    keys.within(key, value, 1, kTorchtitanMaxDegree);
  }
  const std::string shard_key = k.shard;
  if (mesh.shard != -1 && (mesh.shard < 1 || mesh.shard > kTorchtitanMaxDegree)) {
    keys.fault(shard_key, shard_key + " must be -1 or 1 to 1,000,000; it is " +
                              std::to_string(mesh.shard) + ".");
  }
  if (mesh.replicate > 1) {
    keys.fault(k.replicate, std::string(k.replicate) + " " + std::to_string(mesh.replicate) +
                                " (HSDP) is not modelled: set it to 1.");
  }
  if (keys.ok() && mesh.shard == -1) {
    const long long others = mesh.replicate * mesh.tp * mesh.pp * mesh.cp;
    if (context.world_size < 1) {
      keys.fault(shard_key, shard_key +
                                " -1 takes the devices the others leave, and the file does not "
                                "say how many devices run: give the world size (--world-size).");
    } else if (context.world_size % others != 0) {
      keys.fault(shard_key, "The world size " + std::to_string(context.world_size) +
                                " is not a whole multiple of the other degrees' product " +
                                std::to_string(others) +
                                " (replicate × tensor × pipeline × context).");
    } else {
      mesh.shard = context.world_size / others;
      notes.push_back(shard_key + " -1: " + std::to_string(mesh.shard) + ", the world size " +
                      std::to_string(context.world_size) + " over the other degrees' " +
                      std::to_string(others) + ".");
    }
  } else if (keys.ok() && context.world_size > 0) {
    // Each degree is at most 10^6 and replicate is 1 here: the product in a double is exact up
    // to 2^53 and never overflows.
    const double degrees = static_cast<double>(mesh.replicate) * static_cast<double>(mesh.shard) *
                           static_cast<double>(mesh.tp) * static_cast<double>(mesh.pp) *
                           static_cast<double>(mesh.cp);
    if (degrees != static_cast<double>(context.world_size)) {
      keys.fault(shard_key, "The degrees (replicate × shard × tensor × pipeline × context = " +
                                format_count(degrees) + ") do not make the world size " +
                                std::to_string(context.world_size) + ".");
    }
  }
  // Without FSDP (no sharding, no context parallelism) torchtitan sets no MixedPrecisionPolicy
  // (parallelize_llama.py): the run is FP32 (9dec370), or under autocast where there is no tensor
  // or pipeline parallelism (v0.2.2, distributed/utils.py's maybe_enable_amp).
  if (keys.ok() && mesh.shard == 1 && mesh.cp == 1) {
    keys.fault(shard_key,
               shard_key + " 1 without context parallelism runs without FSDP, and so " +
                   (era == Era::kDec2024 ? "in FP32 (no MixedPrecisionPolicy)"
                                         : "with FP32 weights (under autocast on one device)") +
                   ", which is not modelled under torchtitan.");
  }
  return mesh;
}

// What each device's step holds besides: FSDP2's precision, offload and resharding, the loss's
// parallelism, compile, context parallelism's exchange.
void read_step(KeyReader& keys, Era era, long long tp, TrainingSetup& setup) {
  const EraKeys& k = keys_of(era);
  if (keys.get("training.enable_cpu_offload", json_boolean()).value_or(false)) {
    keys.fault("training.enable_cpu_offload",
               "training.enable_cpu_offload (FSDP2's CPU offload) is not modelled under "
               "torchtitan.");
  }
  if (keys.get(k.loss_parallel, json_boolean()).value_or(false) && tp > 1) {
    keys.fault(k.loss_parallel, std::string(k.loss_parallel) +
                                    " with tensor parallelism is not modelled: torchtitan's "
                                    "loss_parallel is.");
  }
  const std::string param =
      keys.get("training.mixed_precision_param", json_string()).value_or("bfloat16");
  const std::string reduce =
      keys.get("training.mixed_precision_reduce", json_string()).value_or("float32");
  if (param != "bfloat16") {
    keys.fault("training.mixed_precision_param", "training.mixed_precision_param " + quoted(param) +
                                                     " is not modelled: \"bfloat16\" is.");
  }
  if (reduce != "float32") {
    keys.fault(
        "training.mixed_precision_reduce",
        "training.mixed_precision_reduce " + quoted(reduce) + " is not modelled: \"float32\" is.");
  }
  const std::string rotate = keys.get(k.rotate, json_string()).value_or("allgather");
  if (rotate != "allgather") {
    keys.fault(k.rotate, std::string(k.rotate) + " " + quoted(rotate) +
                             " is not modelled: \"allgather\" is.");
  }
  if (era == Era::kDec2024) {
    setup.compile = keys.get("training.compile", json_boolean()).value_or(false) ? Compile::kBlocks
                                                                                 : Compile::kOff;
    if (keys.get("experimental.enable_compiled_autograd", json_boolean()).value_or(false)) {
      keys.fault("experimental.enable_compiled_autograd",
                 "experimental.enable_compiled_autograd is not modelled.");
    }
    return;
  }
  // v0.2.2: full BF16 training, FSDP2's resharding, and compile by component (the blocks,
  // parallelize.py's apply_compile; the loss, loss.py's build_cross_entropy_loss).
  const std::string dtype = keys.get("training.dtype", json_string()).value_or("float32");
  if (dtype != "float32") {
    keys.fault("training.dtype", "training.dtype " + quoted(dtype) +
                                     " (BF16 parameters and optimiser states) is not modelled: "
                                     "\"float32\" is.");
  }
  const std::string reshard =
      keys.get("parallelism.fsdp_reshard_after_forward", json_string()).value_or("default");
  if (reshard != "default") {
    keys.fault("parallelism.fsdp_reshard_after_forward",
               "parallelism.fsdp_reshard_after_forward " + quoted(reshard) +
                   " is not modelled: \"default\" (reshard unless the pipeline runs) is.");
  }
  const bool compile = keys.get("compile.enable", json_boolean()).value_or(false);
  const std::vector<std::string> components =
      keys.get("compile.components", string_list())
          .value_or(std::vector<std::string>{"model", "loss"});
  const std::string backend = keys.get("compile.backend", json_string()).value_or("inductor");
  const auto has = [&](const char* part) {
    return std::find(components.begin(), components.end(), part) != components.end();
  };
  setup.compile = Compile::kOff;
  if (!compile) return;
  if (backend != "inductor") {
    keys.fault("compile.backend",
               "compile.backend " + quoted(backend) + " is not modelled: \"inductor\" is.");
  }
  for (const std::string& part : components) {
    if (part != "model" && part != "loss") {
      keys.fault("compile.components",
                 "compile.components " + quoted(part) + " is not one of \"model\" and \"loss\".");
    }
  }
  if (!has("model") && !has("loss")) {
    keys.fault("compile.components",
               "compile.components names neither \"model\" nor \"loss\": nothing to compile.");
  }
  setup.compile = !has("model") ? Compile::kLoss
                  : has("loss") ? Compile::kBlocksAndLoss
                                : Compile::kBlocks;
}

Schedule read_schedule(KeyReader& keys, Era era, const Mesh& mesh, int layers) {
  const EraKeys& k = keys_of(era);
  Schedule schedule;
  const std::string name = keys.get(k.schedule, json_string()).value_or("1F1B");
  schedule.interleaved = name == "Interleaved1F1B";
  if (name != "1F1B" && !schedule.interleaved) {
    keys.fault(k.schedule, std::string(k.schedule) + " " + quoted(name) +
                               " is not modelled: \"1F1B\" and \"Interleaved1F1B\" are.");
  }
  if (!keys.get(k.schedule_csv, json_string()).value_or("").empty()) {
    keys.fault(k.schedule_csv,
               std::string(k.schedule_csv) + " (a schedule of its own) is not modelled.");
  }
  if (era == Era::kDec2024) {
    schedule.points = keys.get("experimental.pipeline_parallel_split_points", string_list());
    // Read under a pipeline alone (train.py, pipelining_utils.py).
    schedule.micro_batches =
        keys.get("experimental.pipeline_parallel_microbatches", json_integer()).value_or(mesh.pp);
    if (mesh.pp == 1) schedule.micro_batches = 1;
    if (schedule.micro_batches != mesh.pp) {
      keys.fault("experimental.pipeline_parallel_microbatches",
                 "experimental.pipeline_parallel_microbatches " +
                     std::to_string(schedule.micro_batches) +
                     " is not modelled: torchtitan's default, the pipeline's degree (" +
                     std::to_string(mesh.pp) + "), is.");
    }
    if (keys.ok() && mesh.batch % schedule.micro_batches != 0) {
      keys.fault("training.batch_size", "training.batch_size " + std::to_string(mesh.batch) +
                                            " must split into the pipeline's " +
                                            std::to_string(schedule.micro_batches) +
                                            " micro-batches.");
    }
    return schedule;
  }
  // v0.2.2 (distributed/pipeline_parallel.py): micro-batches of pipeline_parallel_microbatch_size
  // sequences; the split from the stages' count and the first and last stages' lighter share.
  const long long size =
      keys.get("parallelism.pipeline_parallel_microbatch_size", json_integer()).value_or(1);
  const long long input =
      keys.get("parallelism.pipeline_parallel_first_stage_less_layers", json_integer()).value_or(1);
  const long long output =
      keys.get("parallelism.pipeline_parallel_last_stage_less_layers", json_integer()).value_or(1);
  if (keys.has("parallelism.module_fqns_per_model_part")) {
    keys.fault("parallelism.module_fqns_per_model_part",
               "parallelism.module_fqns_per_model_part (a split of its own) is not read: "
               "torchtitan's split, set by the first and last stages' less_layers, is.");
  }
  if (keys.has("parallelism.pipeline_parallel_layers_per_stage")) {
    keys.fault("parallelism.pipeline_parallel_layers_per_stage",
               "parallelism.pipeline_parallel_layers_per_stage is not read: torchtitan's "
               "default stages, one a device (1F1B) or two (Interleaved1F1B), are.");
  }
  keys.within("parallelism.pipeline_parallel_microbatch_size", size, 1, kTorchtitanMaxDegree);
  keys.within("parallelism.pipeline_parallel_first_stage_less_layers", input, 0,
              kTorchtitanMaxDegree);
  keys.within("parallelism.pipeline_parallel_last_stage_less_layers", output, 0,
              kTorchtitanMaxDegree);
  if (!keys.ok() || mesh.pp == 1) return schedule;
  if (mesh.batch % size != 0) {
    keys.fault("parallelism.pipeline_parallel_microbatch_size",
               "training.local_batch_size " + std::to_string(mesh.batch) +
                   " must be a whole multiple of parallelism.pipeline_parallel_microbatch_size " +
                   std::to_string(size) + ", as torchtitan requires.");
    return schedule;
  }
  schedule.micro_batches = mesh.batch / size;
  // Under 1F1B the first stage holds min(micro-batches, stages) in flight: any count from the
  // pipeline's degree up holds as many as the degree. Interleaved's depends on the count.
  if (schedule.interleaved ? schedule.micro_batches != mesh.pp : schedule.micro_batches < mesh.pp) {
    keys.fault("parallelism.pipeline_parallel_microbatch_size",
               "The pipeline's " + std::to_string(schedule.micro_batches) +
                   " micro-batches a step (training.local_batch_size over "
                   "parallelism.pipeline_parallel_microbatch_size) are not modelled: " +
                   (schedule.interleaved ? "as many as the pipeline's degree ("
                                         : "at least the pipeline's degree (") +
                   std::to_string(mesh.pp) + ") are.");
    return schedule;
  }
  const int stage_count = static_cast<int>(mesh.pp) * (schedule.interleaved ? 2 : 1);
  schedule.stages =
      weighted_stages(layers, stage_count, static_cast<int>(input), static_cast<int>(output));
  if (!schedule.stages) {
    keys.fault("parallelism.pipeline_parallel_degree",
               "The model's " + std::to_string(layers) +
                   " layers, with the first and last "
                   "stages' less_layers, do not split over " +
                   std::to_string(stage_count) + " stages: torchtitan refuses it.");
  }
  return schedule;
}

// activation_checkpoint.*: none, full, or torchtitan's per-op selective policy.
void read_recompute(KeyReader& keys, Era era, TrainingSetup& setup) {
  const std::string mode =
      keys.get("activation_checkpoint.mode", json_string()).value_or("selective");
  // The option is read in selective mode alone (parallelize_llama.py, apply_ac).
  const std::string option =
      mode == "selective"
          ? keys.get("activation_checkpoint.selective_ac_option", json_string()).value_or("2")
          : std::string();
  if (mode == "none") {
    setup.recompute = Recompute::kNone;
  } else if (mode == "full") {
    setup.recompute = Recompute::kFull;
  } else if (mode == "selective" && option == "op") {
    setup.recompute = Recompute::kSelectiveOp;
  } else if (mode == "selective") {
    keys.fault("activation_checkpoint.selective_ac_option",
               "activation_checkpoint.selective_ac_option " + quoted(option) +
                   " (every layer's checkpoint at that interval, torchtitan's default) is not "
                   "modelled: \"op\" is, or mode \"full\" or \"none\".");
  } else {
    keys.fault("activation_checkpoint.mode",
               "activation_checkpoint.mode " + quoted(mode) +
                   (era == Era::kV022 && mode == "memory_budget"
                        ? " (the partitioner's memory budget) is not modelled: \"none\", "
                          "\"selective\" and \"full\" are."
                        : " is not one of \"none\", \"selective\" and \"full\"."));
  }
  if (era == Era::kDec2024) return;
  // v0.2.2's further keys: the per-op policy's matmuls always recomputed (a dense Llama has no
  // "moe.router.gate", the default), and the early stop of the recomputation.
  const std::vector<std::string> forced =
      keys.get("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns", string_list())
          .value_or(std::vector<std::string>{"moe.router.gate"});
  if (setup.recompute == Recompute::kSelectiveOp &&
      forced != std::vector<std::string>{"moe.router.gate"}) {
    keys.fault("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns",
               "activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns other than "
               "[\"moe.router.gate\"] (none in a dense Llama) is not modelled.");
  }
  if (keys.get("activation_checkpoint.early_stop", json_boolean()).value_or(false)) {
    keys.fault("activation_checkpoint.early_stop",
               "activation_checkpoint.early_stop is not modelled.");
  }
}

// The converter's filter_fqns, which must keep the output layer in BF16, as torchtitan's own
// configs set it (and as 9dec370's float8.py kept it); `fallback` is the converter's own default
// (v0.2.2's job_config.py: Float8Linear's [], which converts the output layer too; MXLinear's
// ["output"]).
void read_output_filter(KeyReader& keys, const std::string& prefix,
                        const std::vector<std::string>& fallback) {
  const std::vector<std::string> filtered =
      keys.get(prefix + "filter_fqns", string_list()).value_or(fallback);
  if (filtered != std::vector<std::string>{"output"}) {
    keys.fault(prefix + "filter_fqns",
               prefix +
                   "filter_fqns must be [\"output\"], the output layer kept in BF16, as "
                   "torchtitan's own configs set it: other layers left out are not "
                   "modelled.");
  }
}

// MX: torchao's MXFP8 linear layers (v0.2.2's quantize.linear.mx, components/quantization/mx.py;
// the recipe names of torchao's MXLinearConfig.from_recipe_name). mxfp8_cublas and its RCEIL
// rounding differ only in how the E8M0 scales are rounded; the emulated and FP4 recipes, and the
// dim1 cast through torch (a BF16 transposed copy first), are not modelled.
void read_mx(KeyReader& keys, TrainingSetup& setup) {
  const std::string prefix = "quantize.linear.mx.";
  const std::string recipe =
      keys.get(prefix + "recipe_name", json_string()).value_or("mxfp8_cublas");
  if (recipe != "mxfp8_cublas" && recipe != "mxfp8_cublas_rceil") {
    keys.fault(prefix + "recipe_name",
               prefix + "recipe_name " + quoted(recipe) +
                   " is not modelled: \"mxfp8_cublas\" and \"mxfp8_cublas_rceil\" are.");
  }
  const std::string cast =
      keys.get(prefix + "mxfp8_dim1_cast_kernel_choice", json_string()).value_or("triton");
  if (cast != "triton" && cast != "cuda") {
    keys.fault(prefix + "mxfp8_dim1_cast_kernel_choice",
               prefix + "mxfp8_dim1_cast_kernel_choice " + quoted(cast) +
                   " is not modelled: \"triton\" and \"cuda\" are.");
  }
  read_output_filter(keys, prefix, {"output"});
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_recipe = Fp8Recipe::kMxfp8;
}

// Float8: torchao's Float8 linear layers and FSDP2's FP8 all-gather (9dec370's float8.*;
// v0.2.2's model.converters and quantize.linear.float8.*).
void read_float8(KeyReader& keys, Era era, TrainingSetup& setup) {
  if (era == Era::kDec2024) {
    const bool float8 = keys.get("float8.enable_float8_linear", json_boolean()).value_or(false);
    const bool float8_gather =
        keys.get("float8.enable_fsdp_float8_all_gather", json_boolean()).value_or(false);
    // Without Float8 linear layers float8.py reads none of the rest.
    if (!float8) return;
    for (const char* key : {"float8.scaling_type_input", "float8.scaling_type_weight",
                            "float8.scaling_type_grad_output"}) {
      const std::string scaling = keys.get(key, json_string()).value_or("dynamic");
      if (scaling != "dynamic") {
        keys.fault(key, std::string(key) + " " + quoted(scaling) +
                            " is not modelled: \"dynamic\" is (no amax history).");
      }
    }
    setup.precision = Precision::kFp8Mixed;
    setup.fp8_all_gather = float8_gather;
    return;
  }
  const std::vector<std::string> converters =
      keys.get("model.converters", string_list()).value_or(std::vector<std::string>{});
  bool float8 = false;
  bool mx = false;
  for (const std::string& converter : converters) {
    // "float8" and "mx", the shipped files' names, were quantize.linear.float8's and
    // quantize.linear.mx's before 5b5d468.
    if (converter == "quantize.linear.float8" || converter == "float8") {
      float8 = true;
    } else if (converter == "quantize.linear.mx" || converter == "mx") {
      mx = true;
    } else {
      keys.fault("model.converters",
                 "model.converters " + quoted(converter) +
                     " is not modelled: \"quantize.linear.float8\" (torchao's Float8 linear "
                     "layers, tensorwise) and \"quantize.linear.mx\" (its MXFP8 linear layers) "
                     "are.");
    }
  }
  if (float8 && mx) {
    keys.fault("model.converters",
               "model.converters with both Float8 and MX linear layers is not modelled: choose "
               "one.");
  }
  if (!float8 && !mx) {
    // A converter's table is read only where model.converters names it (model/protocols,
    // build_model_converters): without it the table has no bearing.
    for (const FileKey& key : keys.keys()) {
      if (key.key.rfind("quantize.", 0) == 0) static_cast<void>(keys.take(key.key));
    }
    return;
  }
  // The converter not named keeps its table unread (the shipped TOMLs carry
  // [quantize.linear.float8] whichever runs): no bearing.
  const std::string unchosen = mx ? "quantize.linear.float8." : "quantize.linear.mx.";
  for (const FileKey& key : keys.keys()) {
    if (key.key.rfind(unchosen, 0) == 0) static_cast<void>(keys.take(key.key));
  }
  if (mx) {
    read_mx(keys, setup);
    return;
  }
  const std::string prefix = "quantize.linear.float8.";
  const bool float8_gather =
      keys.get(prefix + "enable_fsdp_float8_all_gather", json_boolean()).value_or(false);
  if (keys.has(prefix + "recipe_name") &&
      keys.get(prefix + "recipe_name", json_string()).value_or("tensorwise") != "tensorwise") {
    keys.fault(prefix + "recipe_name",
               prefix + "recipe_name other than \"tensorwise\" is not modelled.");
  }
  if (keys.get(prefix + "emulate", json_boolean()).value_or(false)) {
    keys.fault(prefix + "emulate", prefix + "emulate is not modelled.");
  }
  read_output_filter(keys, prefix, {});
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_all_gather = float8_gather;
}

// What v0.2.2 holds that 9dec370 did not read: the global batch (gradient accumulation, which
// holds no more at its peak: each micro-batch's gradients reduce-scatter into the same shards),
// validation (forward alone, without gradients), fault tolerance and custom code.
void read_v022_rest(KeyReader& keys, const Mesh& mesh, const Schedule& schedule,
                    std::vector<std::string>& notes) {
  const long long global = keys.get("training.global_batch_size", json_integer()).value_or(-1);
  const long long per_step = mesh.batch * mesh.shard * mesh.replicate;
  if (global != -1 && keys.ok() && (global < 1 || per_step < 1 || global % per_step != 0)) {
    keys.fault("training.global_batch_size",
               "training.global_batch_size " + std::to_string(global) +
                   " must be -1 or a whole multiple of training.local_batch_size × the data-"
                   "parallel degree (" +
                   std::to_string(per_step) + "), as torchtitan requires.");
  } else if (global > per_step && per_step > 0) {
    notes.push_back("training.global_batch_size " + std::to_string(global) + ": " +
                    std::to_string(global / per_step) +
                    " micro-batches accumulated a step, which holds no more at its peak.");
  }
  static_cast<void>(schedule);
  if (keys.get("validation.enable", json_boolean()).value_or(false)) {
    const long long batch = keys.get("validation.local_batch_size", json_integer()).value_or(8);
    const long long sequence = keys.get("validation.seq_len", json_integer()).value_or(2048);
    if (batch * sequence > mesh.batch * mesh.sequence || sequence > mesh.sequence) {
      keys.list_not_understood("validation.local_batch_size");
    } else {
      notes.push_back(
          "Validation runs forward alone on no more tokens than training's micro-batch: below "
          "the step's peak.");
    }
  }
  if (keys.get("fault_tolerance.enable", json_boolean()).value_or(false)) {
    keys.fault("fault_tolerance.enable",
               "fault_tolerance.enable (torchft's replicas) is not modelled.");
  }
  for (const char* key : {"experimental.custom_import", "experimental.custom_args_module",
                          "job.custom_config_module"}) {
    if (!keys.get(key, json_string()).value_or("").empty()) keys.list_not_understood(key);
  }
  for (const char* key :
       {"parallelism.expert_parallel_degree", "parallelism.expert_tensor_parallel_degree"}) {
    const long long degree = keys.get(key, json_integer()).value_or(1);
    if (degree != 1) {
      keys.fault(key, std::string(key) + " " + std::to_string(degree) +
                          " has no experts to split in a dense Llama: set it to 1.");
    }
  }
  const std::string balancer =
      keys.get("parallelism.context_parallel_load_balancer", json_string()).value_or("headtail");
  static_cast<void>(balancer);  // which tokens each rank takes, not how many
}

// Each device's layers from the split (the file's points, or torchtitan's own), as the first, the
// last and an even share between; a split this cannot hold is refused.
Answer split_pipeline(Era era, const Mesh& mesh, const Schedule& schedule, TrainingSetup& setup,
                      std::vector<std::string>& notes) {
  const ModelShape* shape = find_preset(setup.model_id);
  const int layers = shape != nullptr ? shape->num_layers : 0;
  const int per_device = schedule.interleaved ? 2 : 1;
  const std::string pp_key = keys_of(era).pp;
  std::vector<int> stages;
  if (schedule.stages) {
    stages = *schedule.stages;
  } else if (schedule.points) {
    const auto split = stages_of(*schedule.points, layers);
    if (!split) {
      return refusal("experimental.pipeline_parallel_split_points",
                     "experimental.pipeline_parallel_split_points must name layers "
                     "\"layers.N\" in order, each inside the model's " +
                         std::to_string(layers) + ".");
    }
    stages = *split;
  } else {
    stages = generated_stages(layers, static_cast<int>(mesh.pp) * per_device);
  }
  const std::string split_key =
      schedule.points ? "experimental.pipeline_parallel_split_points" : pp_key;
  if (stages.size() % static_cast<std::size_t>(mesh.pp) != 0) {
    return refusal(split_key, "The split's " + std::to_string(stages.size()) +
                                  " stages do not share out over the pipeline's " +
                                  std::to_string(mesh.pp) + " devices.");
  }
  const int virtual_stages = static_cast<int>(stages.size() / static_cast<std::size_t>(mesh.pp));
  if (virtual_stages > 1 && !schedule.interleaved) {
    return refusal(split_key, "The split's " + std::to_string(stages.size()) +
                                  " stages make more than one a device, which the \"1F1B\" "
                                  "schedule does not run: \"Interleaved1F1B\" does.");
  }
  // Device d holds stages d, d + p, … (stage_ids_this_rank, "loop").
  std::vector<int> devices(static_cast<std::size_t>(mesh.pp), 0);
  for (std::size_t index = 0; index < stages.size(); ++index) {
    devices[index % static_cast<std::size_t>(mesh.pp)] += stages[index];
  }
  const std::vector<int> middle(devices.begin() + 1, devices.end() - 1);
  if (!middle.empty() && !std::all_of(middle.begin(), middle.end(),
                                      [&](int count) { return count == middle.front(); })) {
    return refusal(
        split_key,
        "The split leaves the devices between the first and the last unequal layers, "
        "which is not modelled: " +
            std::string(era == Era::kDec2024 ? "set split points that give them an equal share."
                                             : "set the first and last stages' less_layers so that "
                                               "they hold an equal share."));
  }
  const bool even = std::all_of(devices.begin(), devices.end(),
                                [&](int count) { return count == devices.front(); });
  setup.layout.virtual_pipeline_stages = virtual_stages;
  if (!even) {
    setup.layout.pipeline_first_stage_layers = devices.front();
    setup.layout.pipeline_last_stage_layers = devices.back();
  }
  std::string split_text;
  for (const int count : stages)
    split_text += (split_text.empty() ? "" : ", ") + std::to_string(count);
  notes.push_back("The pipeline's stages hold " + split_text + " layers" +
                  (virtual_stages > 1 ? ", two a device" : "") +
                  (schedule.points ? " (the file's split points)." : " (torchtitan's split)."));
  return {};
}

// TOML allows characters beyond ASCII only inside strings and comments. toml++ 3.3.0 reaches
// TOML_UNREACHABLE (undefined behaviour) when it asks whether some of them, met outside, are
// whitespace (impl/unicode_autogenerated.h, is_non_ascii_horizontal_whitespace: U+00A1 to
// U+0499 among others), so such a file is refused here first, by its line: 0 if there is none.
int line_with_stray_unicode(const std::string& text) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  int line = 1;
  const auto at = [&](std::size_t index, const char* what) {
    return text.compare(index, std::char_traits<char>::length(what), what) == 0;
  };
  for (std::size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '\n') ++line;
    switch (in) {
      case In::kCode:
        if (static_cast<unsigned char>(c) >= 0x80) return line;
        if (c == '#') in = In::kComment;
        if (c == '"') {
          in = at(index, "\"\"\"") ? In::kMultiBasic : In::kBasic;
          if (in == In::kMultiBasic) index += 2;
        }
        if (c == '\'') {
          in = at(index, "'''") ? In::kMultiLiteral : In::kLiteral;
          if (in == In::kMultiLiteral) index += 2;
        }
        break;
      case In::kComment:
        if (c == '\n') in = In::kCode;
        break;
      case In::kBasic:
        if (c == '\\') {
          ++index;  // an escape (a newline here is an error toml++ reports)
        } else if (c == '"' || c == '\n') {
          in = In::kCode;
        }
        break;
      case In::kLiteral:
        if (c == '\'' || c == '\n') in = In::kCode;
        break;
      case In::kMultiBasic:
        if (c == '\\') {
          if (index + 1 < text.size() && text[index + 1] == '\n') ++line;
          ++index;
        } else if (at(index, "\"\"\"")) {
          in = In::kCode;
          index += 2;
        }
        break;
      case In::kMultiLiteral:
        if (at(index, "'''")) {
          in = In::kCode;
          index += 2;
        }
        break;
    }
  }
  return 0;
}

}  // namespace

LaunchConfig read_torchtitan_toml(const std::string& text, const TrainingSetup& base,
                                  const LaunchContext& context) {
  LaunchConfig launch;
  launch.leaves = left_by_every_file();
  launch.setup = setup_beside(base, launch.leaves);
  // TOML allows no control character but the tab, anywhere (its spec; a NUL also ends toml++'s
  // view of the text early, past the guard below).
  int line = 1;
  for (const char c : text) {
    if (c == '\n') ++line;
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t' && c != '\n' && c != '\r') || byte == 0x7f) {
      launch.answer = refusal("launch", "The TOML does not parse at line " + std::to_string(line) +
                                            ": a control character, which TOML does not allow.");
      return launch;
    }
  }
  if (const int stray = line_with_stray_unicode(text); stray > 0) {
    launch.answer = refusal("launch", "The TOML does not parse at line " + std::to_string(stray) +
                                          ": a character beyond ASCII outside a string or a "
                                          "comment.");
    return launch;
  }
  const toml::parse_result parsed = toml::parse(text);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    launch.answer = refusal("launch", "The TOML does not parse at line " +
                                          std::to_string(error.source().begin.line) + ": " +
                                          std::string(error.description()) + ".");
    return launch;
  }
  std::vector<std::string> stray;
  FileKeys file_keys = section_keys(parsed.table(), stray);
  // The schema: v0.2.2's where the file has a key only it has, 9dec370's otherwise; a file with
  // keys only either has is of neither.
  const FileKey* old_key = nullptr;
  const FileKey* new_key = nullptr;
  for (const FileKey& key : file_keys) {
    if (old_key == nullptr && dec2024_only(key.key)) old_key = &key;
    if (new_key == nullptr && v022_only(key.key)) new_key = &key;
  }
  if (old_key != nullptr && new_key != nullptr) {
    launch.answer = refusal(
        old_key->key,
        old_key->key + " is a key of torchtitan's job config before v0.2.2, and " + new_key->key +
            " one of v0.2.2's (or of the months between, March 2025 to January 2026, when the "
            "keys moved a table at a time): files of 9dec370 (December 2024) and of v0.2.2 "
            "(February 2026) are read. Write the file in one of them.");
    return launch;
  }
  const Era era = new_key != nullptr ? Era::kV022 : Era::kDec2024;
  const EraKeys& names = keys_of(era);
  launch.kind = names.kind;
  std::set<std::string> set_aside =
      era == Era::kDec2024 ? titan_toml_no_bearing() : no_bearing_v022();
  if (era == Era::kV022) {
    for (const FileKey& key : file_keys) {
      if (in_no_bearing_table(key.key)) set_aside.insert(key.key);
    }
  }
  KeyReader keys(launch, kTitanTomlDialect, std::move(file_keys));
  for (const std::string& key : stray) keys.list_not_understood(key);
  TrainingSetup& setup = launch.setup;
  // torchtitan's step: FSDP2 over dp_shard × cp, the FP32-upcast loss over the logits.
  setup.stack = Stack::kTorchtitan;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.flash_attention = true;
  setup.layout = ParallelLayout{};
  setup.layout.zero_stage = 3;
  read_model(keys, era, setup);
  const Mesh mesh = read_mesh(keys, era, context, launch.notes);
  read_step(keys, era, mesh.tp, setup);
  const ModelShape* shape = find_preset(setup.model_id);
  const Schedule schedule =
      read_schedule(keys, era, mesh, shape != nullptr ? shape->num_layers : 0);
  read_recompute(keys, era, setup);
  read_float8(keys, era, setup);
  if (era == Era::kV022) read_v022_rest(keys, mesh, schedule, launch.notes);
  // FSDP2 gathers in FP8 only where it shards over dp_shard (float8.py: dp_shard_enabled).
  if (setup.fp8_all_gather && mesh.shard == 1) {
    setup.fp8_all_gather = false;
    launch.notes.push_back(
        std::string(era == Era::kDec2024 ? "float8.enable_fsdp_float8_all_gather"
                                         : "quantize.linear.float8.enable_fsdp_float8_all_gather") +
        " is dropped: torchtitan gathers in FP8 only when "
        "data_parallel_shard_degree is above 1.");
  }
  // Async TP needs the blocks compiled under tensor parallelism (parallelize_llama.py; from
  // v0.2.0 maybe_enable_async_tp asks for "model" in compile.components).
  const bool async_tp = keys.get(names.async_tp, json_boolean()).value_or(false);
  if (async_tp && mesh.tp > 1 && !blocks_compiled(setup.compile)) {
    keys.fault(names.async_tp,
               std::string(names.async_tp) + " needs " +
                   (era == Era::kDec2024 ? "training.compile"
                                         : "compile.enable with \"model\" in compile.components") +
                   ", as torchtitan requires.");
  }
  keys.list_unread(set_aside);
  if (!keys.ok()) return launch;
  setup.sequence_length = static_cast<int>(mesh.sequence);
  setup.micro_batch_sequences = static_cast<int>(mesh.batch / schedule.micro_batches);
  setup.layout.data_parallel = static_cast<int>(mesh.shard);
  setup.layout.tensor_parallel = static_cast<int>(mesh.tp);
  setup.layout.sequence_parallel = mesh.tp > 1;
  setup.layout.pipeline_parallel = static_cast<int>(mesh.pp);
  setup.layout.context_parallel = static_cast<int>(mesh.cp);
  if (mesh.pp > 1) {
    launch.answer = split_pipeline(era, mesh, schedule, setup, launch.notes);
    if (!launch.answer.ok()) return launch;
  }
  if (async_tp && mesh.tp > 1) {
    launch.notes.push_back(
        "Async TP's symmetric memory is outside PyTorch's caching allocator and not counted.");
  }
  return launch;
}

}  // namespace trainmem
