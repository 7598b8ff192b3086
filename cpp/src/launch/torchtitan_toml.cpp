// torchtitan's TOML job config, read into the setup (launch.hpp), as torchtitan 9dec370 (December
// 2024, the commit of its published benchmark) reads it: torchtitan/config_manager.py's keys and
// defaults, torchtitan/parallelisms/parallel_dims.py's mesh, pipelining_utils.py's split and
// schedule, train.py's loss.
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

constexpr const char* kKind = "torchtitan job config (TOML, torchtitan 9dec370)";

// Keys with no bearing on the device's memory: logging, profiling, data, the learning rate's
// schedule, checkpoints (written from the host), timeouts. Read and set aside.
const std::set<std::string>& no_bearing() {
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
const KeyDialect kDialect = {ListRead::kOnTake,
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
    for (const auto& [key, value] : *table) {
      keys[name + "." + std::string(key.str())] = json_of(value);
    }
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

// The pipeline's schedule, its split points if set, and its micro-batches a step.
struct Schedule {
  bool interleaved = false;
  std::optional<std::vector<std::string>> points;
  long long micro_batches = 1;
};

// The model and the optimiser (model.*, optimizer.*).
void read_model(KeyReader& keys, TrainingSetup& setup) {
  const std::string name = keys.get("model.name", json_string()).value_or("llama");
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
  const std::string norm = keys.get("model.norm_type", json_string()).value_or("rmsnorm");
  if (norm != "rmsnorm" && norm != "fused_rmsnorm") {
    keys.fault("model.norm_type", "model.norm_type " + quoted(norm) +
                                      " is not modelled: Llama's RMSNorm is (rmsnorm, "
                                      "fused_rmsnorm).");
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

// The largest degree read (torchtitan's own have no bound; Python's integers do not overflow).
constexpr long long kMaxDegree = 1'000'000;

// The degrees; data_parallel_shard_degree -1 takes the world size the others leave.
Mesh read_mesh(KeyReader& keys, const LaunchContext& context, std::vector<std::string>& notes) {
  Mesh mesh;
  mesh.batch = keys.get("training.batch_size", json_integer()).value_or(8);
  mesh.sequence = keys.get("training.seq_len", json_integer()).value_or(2048);
  mesh.replicate = keys.get("training.data_parallel_replicate_degree", json_integer()).value_or(1);
  mesh.shard = keys.get("training.data_parallel_shard_degree", json_integer()).value_or(-1);
  mesh.tp = keys.get("training.tensor_parallel_degree", json_integer()).value_or(1);
  mesh.pp = keys.get("experimental.pipeline_parallel_degree", json_integer()).value_or(1);
  mesh.cp = keys.get("experimental.context_parallel_degree", json_integer()).value_or(1);
  for (const auto& [key, value] :
       {std::pair<const char*, long long>{"training.batch_size", mesh.batch},
        {"training.seq_len", mesh.sequence},
        {"training.data_parallel_replicate_degree", mesh.replicate},
        {"training.tensor_parallel_degree", mesh.tp},
        {"experimental.pipeline_parallel_degree", mesh.pp},
        {"experimental.context_parallel_degree", mesh.cp}}) {
    keys.within(key, value, 1, kMaxDegree);
  }
  if (mesh.shard != -1 && (mesh.shard < 1 || mesh.shard > kMaxDegree)) {
    keys.fault("training.data_parallel_shard_degree",
               "training.data_parallel_shard_degree must be -1 or 1 to 1,000,000; it is " +
                   std::to_string(mesh.shard) + ".");
  }
  if (mesh.replicate > 1) {
    keys.fault("training.data_parallel_replicate_degree",
               "training.data_parallel_replicate_degree " + std::to_string(mesh.replicate) +
                   " (HSDP) is not modelled: set it to 1.");
  }
  if (keys.ok() && mesh.shard == -1) {
    const long long others = mesh.replicate * mesh.tp * mesh.pp * mesh.cp;
    if (context.world_size < 1) {
      keys.fault("training.data_parallel_shard_degree",
                 "training.data_parallel_shard_degree -1 takes the devices the others leave, and "
                 "the file does not say how many devices run: give the world size (--world-size).");
    } else if (context.world_size % others != 0) {
      keys.fault("training.data_parallel_shard_degree",
                 "The world size " + std::to_string(context.world_size) +
                     " is not a whole multiple of the other degrees' product " +
                     std::to_string(others) + " (replicate × tensor × pipeline × context).");
    } else {
      mesh.shard = context.world_size / others;
      notes.push_back("training.data_parallel_shard_degree -1: " + std::to_string(mesh.shard) +
                      ", the world size " + std::to_string(context.world_size) +
                      " over the other degrees' " + std::to_string(others) + ".");
    }
  } else if (keys.ok() && context.world_size > 0) {
    // Each degree is at most 10^6 and replicate is 1 here: the product in a double is exact up
    // to 2^53 and never overflows.
    const double degrees = static_cast<double>(mesh.replicate) * static_cast<double>(mesh.shard) *
                           static_cast<double>(mesh.tp) * static_cast<double>(mesh.pp) *
                           static_cast<double>(mesh.cp);
    if (degrees != static_cast<double>(context.world_size)) {
      keys.fault("training.data_parallel_shard_degree",
                 "The degrees (replicate × shard × tensor × pipeline × context = " +
                     format_count(degrees) + ") do not make the world size " +
                     std::to_string(context.world_size) + ".");
    }
  }
  // Without FSDP (no sharding, no context parallelism) torchtitan sets no MixedPrecisionPolicy
  // (parallelize_llama.py): the run is FP32.
  if (keys.ok() && mesh.shard == 1 && mesh.cp == 1) {
    keys.fault("training.data_parallel_shard_degree",
               "training.data_parallel_shard_degree 1 without context parallelism runs without "
               "FSDP, and so in FP32 (no MixedPrecisionPolicy), which is not modelled under "
               "torchtitan.");
  }
  return mesh;
}

// What each device's step holds besides: FSDP2's precision and offload, the loss's parallelism,
// compile, context parallelism's exchange.
void read_step(KeyReader& keys, long long tp, TrainingSetup& setup) {
  if (keys.get("training.enable_cpu_offload", json_boolean()).value_or(false)) {
    keys.fault("training.enable_cpu_offload",
               "training.enable_cpu_offload (FSDP2's CPU offload) is not modelled under "
               "torchtitan.");
  }
  if (keys.get("training.disable_loss_parallel", json_boolean()).value_or(false) && tp > 1) {
    keys.fault("training.disable_loss_parallel",
               "training.disable_loss_parallel with tensor parallelism is not modelled: "
               "torchtitan's loss_parallel is.");
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
  setup.compile = keys.get("training.compile", json_boolean()).value_or(false) ? Compile::kBlocks
                                                                               : Compile::kOff;
  if (keys.get("experimental.enable_compiled_autograd", json_boolean()).value_or(false)) {
    keys.fault("experimental.enable_compiled_autograd",
               "experimental.enable_compiled_autograd is not modelled.");
  }
  const std::string rotate =
      keys.get("experimental.context_parallel_rotate_method", json_string()).value_or("allgather");
  if (rotate != "allgather") {
    keys.fault("experimental.context_parallel_rotate_method",
               "experimental.context_parallel_rotate_method " + quoted(rotate) +
                   " is not modelled: \"allgather\" is.");
  }
}

Schedule read_schedule(KeyReader& keys, const Mesh& mesh) {
  Schedule schedule;
  const std::string name =
      keys.get("experimental.pipeline_parallel_schedule", json_string()).value_or("1F1B");
  schedule.interleaved = name == "Interleaved1F1B";
  if (name != "1F1B" && !schedule.interleaved) {
    keys.fault("experimental.pipeline_parallel_schedule",
               "experimental.pipeline_parallel_schedule " + quoted(name) +
                   " is not modelled: \"1F1B\" and \"Interleaved1F1B\" are.");
  }
  if (!keys.get("experimental.pipeline_parallel_schedule_csv", json_string())
           .value_or("")
           .empty()) {
    keys.fault("experimental.pipeline_parallel_schedule_csv",
               "experimental.pipeline_parallel_schedule_csv (a schedule of its own) is not "
               "modelled.");
  }
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

// activation_checkpoint.*: none, full, or torchtitan's per-op selective policy.
void read_recompute(KeyReader& keys, TrainingSetup& setup) {
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
    keys.fault("activation_checkpoint.mode", "activation_checkpoint.mode " + quoted(mode) +
                                                 " is not one of \"none\", \"selective\" and "
                                                 "\"full\".");
  }
}

// float8.*: torchao's Float8 linear layers and FSDP2's FP8 all-gather.
void read_float8(KeyReader& keys, TrainingSetup& setup) {
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
}

// Each device's layers from the split (the file's points, or generate_split_points'), as the
// first, the last and an even share between; a split this cannot hold is refused.
Answer split_pipeline(const Mesh& mesh, const Schedule& schedule, TrainingSetup& setup,
                      std::vector<std::string>& notes) {
  const ModelShape* shape = find_preset(setup.model_id);
  const int layers = shape != nullptr ? shape->num_layers : 0;
  const int per_device = schedule.interleaved ? 2 : 1;
  std::vector<int> stages;
  if (schedule.points) {
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
  if (stages.size() % static_cast<std::size_t>(mesh.pp) != 0) {
    return refusal("experimental.pipeline_parallel_split_points",
                   "The split's " + std::to_string(stages.size()) +
                       " stages do not share out over the pipeline's " + std::to_string(mesh.pp) +
                       " devices.");
  }
  const int virtual_stages = static_cast<int>(stages.size() / static_cast<std::size_t>(mesh.pp));
  if (virtual_stages > 1 && !schedule.interleaved) {
    return refusal("experimental.pipeline_parallel_split_points",
                   "The split's " + std::to_string(stages.size()) +
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
        schedule.points ? "experimental.pipeline_parallel_split_points"
                        : "experimental.pipeline_parallel_degree",
        "The split leaves the devices between the first and the last unequal layers, which "
        "is not modelled: set split points that give them an equal share.");
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
  launch.kind = kKind;
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
  KeyReader keys(launch, kDialect, section_keys(parsed.table(), stray));
  for (const std::string& key : stray) keys.list_not_understood(key);
  TrainingSetup& setup = launch.setup;
  // torchtitan's step: FSDP2 over dp_shard × cp, the FP32-upcast loss over the logits.
  setup.stack = Stack::kTorchtitan;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.flash_attention = true;
  setup.layout = ParallelLayout{};
  setup.layout.zero_stage = 3;
  read_model(keys, setup);
  const Mesh mesh = read_mesh(keys, context, launch.notes);
  read_step(keys, mesh.tp, setup);
  const Schedule schedule = read_schedule(keys, mesh);
  read_recompute(keys, setup);
  read_float8(keys, setup);
  // FSDP2 gathers in FP8 only where it shards over dp_shard (float8.py: dp_shard_enabled).
  if (setup.fp8_all_gather && mesh.shard == 1) {
    setup.fp8_all_gather = false;
    launch.notes.push_back(
        "float8.enable_fsdp_float8_all_gather is dropped: torchtitan gathers in FP8 only when "
        "data_parallel_shard_degree is above 1.");
  }
  // Async TP needs training.compile under tensor parallelism (parallelize_llama.py).
  const bool async_tp =
      keys.get("experimental.enable_async_tensor_parallel", json_boolean()).value_or(false);
  if (async_tp && mesh.tp > 1 && setup.compile == Compile::kOff) {
    keys.fault("experimental.enable_async_tensor_parallel",
               "experimental.enable_async_tensor_parallel needs training.compile, as torchtitan "
               "requires.");
  }
  keys.list_unread(no_bearing());
  if (!keys.ok()) return launch;
  setup.sequence_length = static_cast<int>(mesh.sequence);
  setup.micro_batch_sequences = static_cast<int>(mesh.batch / schedule.micro_batches);
  setup.layout.data_parallel = static_cast<int>(mesh.shard);
  setup.layout.tensor_parallel = static_cast<int>(mesh.tp);
  setup.layout.sequence_parallel = mesh.tp > 1;
  setup.layout.pipeline_parallel = static_cast<int>(mesh.pp);
  setup.layout.context_parallel = static_cast<int>(mesh.cp);
  if (mesh.pp > 1) {
    launch.answer = split_pipeline(mesh, schedule, setup, launch.notes);
    if (!launch.answer.ok()) return launch;
  }
  if (async_tp && mesh.tp > 1) {
    launch.notes.push_back(
        "Async TP's symmetric memory is outside PyTorch's caching allocator and not counted.");
  }
  return launch;
}

}  // namespace trainmem
