#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/report.hpp"

namespace trainmem {

namespace {

constexpr int kFitLayoutsShown = 10;

// Every flag's text as typed, so that each message can quote the input; the core reads numbers.
struct Options {
  std::string model_id = TrainingSetup{}.model_id;
  std::string config_path;  // a Hugging Face config.json instead of a preset
  std::string tokens;
  std::string seq_len;
  std::string micro_batch;
  std::string dp;
  std::string zero;
  std::string tp;
  bool sequence_parallel = false;
  std::string pp;
  std::string vpp;
  std::string cp;
  std::string recompute = kDefaultRecompute;
  std::string activations = kDefaultActivationModel;
  std::string loss = kDefaultLoss;
  std::string optimizer = kDefaultOptimizer;
  std::string precision = kDefaultPrecision;
  std::string device = TrainingSetup{}.device_id;
  std::string device_gb;
  bool no_flash_attention = false;
  bool logits = false;
  bool fit = false;
  bool savings = false;
  bool timeline = false;
  bool fit_map = false;
  bool saved_tensors = false;
  bool compare_measured = false;
  bool json = false;
  bool list_models = false;
};

// CLI11's messages can span lines; the contract is one line.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int bad_input(std::ostream& err, const std::string& message) {
  err << "trainmem: " << one_line(message) << "\n";
  return kExitBadInput;
}

// A whole-number flag: its default when not given, else the core's reading of the text (which
// refuses empty text too).
int whole_or(const CLI::App& app, const char* flag, const std::string& text, int if_not_given) {
  return app.count(flag) == 0 ? if_not_given : parse_whole_number(text);
}

void print_models(std::ostream& out) {
  out << std::left << std::setw(14) << "id" << std::setw(15) << "name" << std::setw(12)
      << "parameters"
      << "source\n";
  for (const ModelShape& shape : preset_models()) {
    out << std::setw(14) << shape.id << std::setw(15) << shape.name << std::setw(12)
        << format_parameters(count_parameters(shape)) << shape.source << "\n";
  }
}

// The text of a config.json, read whole; I/O stays here, out of the core. Refuses what is not a
// regular file, and files over the parser's limit before reading them.
struct ConfigFile {
  bool ok = false;
  std::string text;
  std::string problem;
};

ConfigFile read_config_file(const std::string& path) {
  ConfigFile file;
  const std::string quoted_path = "'" + path + "'";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    file.problem = "cannot read " + quoted_path + ": not a readable file";
    return file;
  }
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  const auto too_large = [&](double bytes) {
    return quoted_path + " is " + format_count(bytes) + " bytes; at most " +
           format_count(kMaxConfigBytes) + " (1 MiB) are allowed";
  };
  if (error) {
    file.problem = "cannot read " + quoted_path + ": " + error.message();
    return file;
  }
  if (size > static_cast<std::uintmax_t>(kMaxConfigBytes)) {
    file.problem = too_large(static_cast<double>(size));
    return file;
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    file.problem = "cannot read " + quoted_path + ": it cannot be opened";
    return file;
  }
  // One byte past the limit tells a file that grew since it was measured.
  file.text.resize(static_cast<std::size_t>(kMaxConfigBytes) + 1);
  stream.read(file.text.data(), static_cast<std::streamsize>(file.text.size()));
  if (stream.bad()) {
    file.problem = "cannot read " + quoted_path + ": a read failed";
    return file;
  }
  file.text.resize(static_cast<std::size_t>(stream.gcount()));
  if (file.text.size() > static_cast<std::size_t>(kMaxConfigBytes)) {
    file.problem = too_large(static_cast<double>(file.text.size())) + " (it grew while read)";
    return file;
  }
  file.ok = true;
  return file;
}

// `text` followed by spaces to `width` characters on screen: UTF-8 continuation bytes ("·", "×")
// take no column of their own, which std::setw would count.
std::string padded(const std::string& text, std::size_t width) {
  std::size_t columns = 0;
  for (char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return text + std::string(columns < width ? width - columns : 1, ' ');
}

std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

void print_table(const Estimate& estimate, std::ostream& out) {
  const MemoryBreakdown& bytes = estimate.bytes;
  const BytesPerParameter& per = estimate.bytes_per_parameter;
  const TrainingSetup& setup = estimate.setup;
  const int sequences = setup.micro_batch_sequences;
  out << estimate.model_name << ": " << format_parameters(estimate.num_parameters)
      << " parameters, " << format_count(estimate.tokens_per_micro_batch)
      << " tokens per micro-batch (" << sequences << (sequences == 1 ? " sequence" : " sequences")
      << " of " << format_count(setup.sequence_length) << "), FlashAttention "
      << (setup.flash_attention ? "on" : "off") << "\n";
  const bool plate_recipe =
      setup.precision == kDefaultPrecision && setup.optimizer == kDefaultOptimizer;
  if (estimate.num_devices > 1 || !plate_recipe || setup.recompute != kDefaultRecompute) {
    out << "Layout: " << format_layout(estimate) << "; " << setup.optimizer << ", "
        << setup.precision << "\nMost loaded device: "
        << (estimate.most_loaded_stage == "only"
                ? "any"
                : "the " + estimate.most_loaded_stage + " pipeline stage")
        << ", " << format_count(estimate.parameters_on_device) << " parameters before ZeRO\n";
  }
  out << "\n";
  const auto row = [&out](const std::string& label, double value) {
    out << "  " << std::left << std::setw(46) << label << std::right << std::setw(10)
        << format_bytes(value) << "\n";
  };
  const auto per_parameter = [](double value) {
    return std::string(value == std::trunc(value) ? fixed(value, 0) : fixed(value, 3)) +
           " B/parameter";
  };
  if (plate_recipe) {
    row("Weights (BF16, 2 B/parameter)", bytes.weights_bytes);
    row("Gradients (BF16, 2 B/parameter)", bytes.gradients_bytes);
    row("Master weights (FP32, 4 B/parameter)", bytes.master_weights_bytes);
    row("Optimiser moments (Adam, FP32, 8 B/parameter)", bytes.optimizer_states_bytes);
  } else {
    row("Weights (" + per_parameter(per.weights) + ")", bytes.weights_bytes);
    row("Gradients (" + per_parameter(per.gradients) + ")", bytes.gradients_bytes);
    row("Master weights (" + per_parameter(per.master_weights) + ")", bytes.master_weights_bytes);
    row("Optimiser states (" + per_parameter(per.optimizer_states) + ")",
        bytes.optimizer_states_bytes);
  }
  row(setup.activation_model == kLlamaBlockActivationModel
          ? "Activations (Llama block, tensor by tensor)"
          : "Activations (Korthikanti et al. 2023)",
      bytes.activations_bytes);
  if (setup.logits) {
    if (estimate.most_loaded_stage == "first") {
      out << "  Logits and loss: held by the last pipeline stage, not this one\n";
    } else {
      row("Logits and loss", bytes.logits_bytes);
    }
  }
  out << "  " << std::string(56, '-') << "\n";
  row("Model states (" + per_parameter(per.total) + ")", bytes.model_states_bytes);
  row(estimate.num_devices > 1 ? "Total on the most loaded device" : "Total on one device",
      bytes.total_bytes);
  out << "\n  " << fixed(estimate.devices_worth, 1) << " " << estimate.device.short_name
      << "s' worth: the total over one " << estimate.device.name << " (1 GB = 10^9 bytes)";
  out << (estimate.fits ? "; it fits\n" : "; it does not fit\n");
}

int print_fit(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const FitSearch search = find_fewest_devices(setup, kFitLayoutsShown);
  if (search.status != Status::kOk) {
    return bad_input(err, "--" + search.invalid_field + ": " + search.message);
  }
  if (json) {
    out << fit_to_json(setup, search) << "\n";
    return kExitOk;
  }
  if (search.layouts.empty()) {
    out << search.why_not_fewer << "\n";
    return kExitOk;
  }
  const Estimate& first = search.layouts.front();
  out << first.model_name << " at " << format_count(first.tokens_per_micro_batch)
      << " tokens per micro-batch fits on " << format_count(search.fewest_devices) << " "
      << "× " << first.device.name << " at the fewest.\n"
      << search.why_not_fewer << "\n\n";
  for (const Estimate& estimate : search.layouts) {
    out << "  " << std::left << std::setw(64) << format_layout(estimate) << std::right
        << std::setw(10) << format_bytes(estimate.bytes.total_bytes) << "  (states "
        << format_bytes(estimate.bytes.model_states_bytes) << ", activations "
        << format_bytes(estimate.bytes.activations_bytes) << ")\n";
  }
  return kExitOk;
}

int print_savings(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const SavingsList list = rank_savings(setup);
  if (list.status != Status::kOk)
    return bad_input(err, "--" + list.invalid_field + ": " + list.message);
  if (json) {
    out << savings_to_json(list) << "\n";
    return kExitOk;
  }
  out << list.baseline.model_name << ": " << format_bytes(list.baseline.bytes.total_bytes)
      << " on the most loaded of " << format_count(list.baseline.num_devices)
      << (list.baseline.num_devices == 1 ? " device" : " devices")
      << ". Single changes, most saved first:\n\n";
  for (const Saving& saving : list.savings) {
    out << "  " << std::left << std::setw(58) << saving.label << std::right << std::setw(10)
        << format_bytes(saving.bytes_saved) << " saved  -> " << std::setw(10)
        << format_bytes(saving.estimate.bytes.total_bytes);
    if (saving.devices_added > 0)
      out << "  (+" << format_count(saving.devices_added) << " devices)";
    out << "\n";
  }
  return kExitOk;
}

int print_timeline(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const Estimate estimate = estimate_memory(setup);
  if (estimate.status != Status::kOk) {
    return bad_input(err, "--" + estimate.invalid_field + ": " + estimate.message);
  }
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  if (json) {
    out << timeline_to_json(points) << "\n";
    return kExitOk;
  }
  const double peak = points[timeline_peak(points)].bytes;
  out << estimate.model_name << ": memory on the most loaded device through one step; peak "
      << format_bytes(peak) << " (the estimate's total).\n\n";
  for (const TimelinePoint& point : points) {
    out << "  " << std::left << std::setw(10) << point.phase << std::right << std::setw(5)
        << (point.layer > 0 ? std::to_string(point.layer) : "") << std::setw(11)
        << format_bytes(point.bytes) << (point.bytes == peak ? "  <- peak" : "") << "\n";
  }
  return kExitOk;
}

int print_fit_map(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const FitMap map = fit_map(setup);
  if (map.status != Status::kOk)
    return bad_input(err, "--" + map.invalid_field + ": " + map.message);
  if (json) {
    out << fit_map_to_json(map) << "\n";
    return kExitOk;
  }
  const Estimate estimate = estimate_memory(setup);
  out << "Share of one " << estimate.device.name
      << " on the most loaded device; '*' does not fit.\n\n"
      << std::setw(12) << "seq \\ mb";
  for (int b : map.micro_batch_sequences) out << std::setw(10) << b;
  out << "\n";
  std::size_t index = 0;
  for (int s : map.sequence_lengths) {
    out << std::setw(12) << format_count(s);
    for (std::size_t column = 0; column < map.micro_batch_sequences.size(); ++column, ++index) {
      const FitCell& cell = map.cells[index];
      const std::string text =
          !cell.valid ? "-" : format_share(cell.devices_worth) + (cell.fits ? " " : "*");
      out << std::setw(10) << text;
    }
    out << "\n";
  }
  return kExitOk;
}

int print_saved_tensors(const TrainingSetup& setup, std::ostream& out, std::ostream& err) {
  const Estimate estimate = estimate_memory(setup);
  if (estimate.status != Status::kOk) {
    return bad_input(err, "--" + estimate.invalid_field + ": " + estimate.message);
  }
  const std::vector<SavedTensor> tensors =
      llama_block_saved_tensors(*resolve_model(setup), setup, setup.flash_attention);
  const bool full = setup.recompute == "full";
  out << estimate.model_name
      << ": the tensors one layer saves for its backward pass (llama-block model)"
      << (full ? ", while it is rebuilt (full recomputation keeps only its input between passes)"
               : "")
      << ", per token on one device (docs/activations.md).\n\n";
  out << "  " << padded("tensor", 44) << padded("dtype", 7) << padded("elements", 10) << std::right
      << std::setw(10) << "bytes"
      << "  saved by\n";
  const auto bytes_text = [](double bytes) {
    return fixed(bytes, bytes == std::trunc(bytes) ? 0 : 1);
  };
  for (const SavedTensor& tensor : tensors) {
    const std::string elements =
        tensor.elements + (tensor.split > 1 ? " / " + format_count(tensor.split) : "");
    out << "  " << padded(tensor.name, 44) << padded(tensor.dtype_bytes == 4 ? "FP32" : "BF16", 7)
        << padded(elements, 10) << std::right << std::setw(10) << bytes_text(tensor.bytes_per_token)
        << "  " << tensor.saved_by << "\n";
  }
  const double sum = saved_bytes_per_token(tensors);
  out << "  " << padded("per token per layer", 61) << std::right << std::setw(10) << bytes_text(sum)
      << "  = " << fixed(sum / resolve_model(setup)->hidden_size, 2) << " × h\n";
  return kExitOk;
}

int print_compare_measured(bool json, std::ostream& out) {
  const std::vector<MeasuredComparison> comparisons = compare_measured();
  if (json) {
    out << measured_to_json(comparisons) << "\n";
    return kExitOk;
  }
  out << "How close is this? Measured memory against trainmem's estimate of the same settings;\n"
         "error = (estimate - measured) / measured.\n";
  for (const MeasuredComparison& comparison : comparisons) {
    const MeasuredCase& measured = comparison.measured;
    const auto figure = [&](double bytes) { return format_as_measured(bytes, measured.unit); };
    out << "\n" << measured.title << "\n";
    out << "  measured      " << std::right << std::setw(16) << figure(measured.measured_bytes)
        << "  " << quantity_id(measured.quantity) << ": " << measured.statistic << "\n";
    if (comparison.status != Status::kOk) {
      out << "  not estimated: " << comparison.message << "\n";
      continue;
    }
    out << "  Korthikanti   " << std::setw(16) << figure(comparison.korthikanti_bytes) << "  "
        << format_error_percent(comparison.korthikanti_error_percent) << "\n";
    out << "  Llama block   " << std::setw(16) << figure(comparison.llama_block_bytes) << "  "
        << format_error_percent(comparison.llama_block_error_percent) << "\n";
    out << "  source: " << measured.source << "\n";
    out << "  note: " << measured.note << "\n";
  }
  out << "\nA measured peak also holds what no estimate here counts: the caching allocator's "
         "reserve and\nfragmentation, the CUDA context and library workspaces, communication "
         "buffers, and temporaries.\n";
  return kExitOk;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options options;
  CLI::App app{
      "trainmem: the memory to train a model, per device (Plate XIV.1, \"Where the Memory "
      "Goes\").\nModel states (ZeRO, Rajbhandari et al. 2020) plus activations (Korthikanti et al. "
      "2023). 1 GB = 10^9 bytes.",
      "trainmem"};
  app.add_option("--model", options.model_id, "Model: " + preset_ids_joined())
      ->default_str(options.model_id);
  app.add_option("--config", options.config_path,
                 "A Hugging Face config.json (at most 1 MiB) instead of --model");
  app.add_option("--tokens", options.tokens,
                 "Tokens per micro-batch: a whole multiple of the sequence length (default 8192)");
  app.add_option("--seq-len", options.seq_len, "Sequence length in tokens (default 8192)");
  app.add_option("--micro-batch", options.micro_batch, "Sequences per micro-batch (default 1)");
  app.add_flag("--no-flash-attention", options.no_flash_attention,
               "Keep the attention-score term (FlashAttention is on by default)");
  app.add_option("--dp", options.dp, "Data-parallel degree d (default 1)");
  app.add_option("--zero", options.zero, "ZeRO stage: 0, 1, 2 or 3 (default 0)");
  app.add_option("--tp", options.tp, "Tensor-parallel degree t (default 1)");
  app.add_flag("--sequence-parallel", options.sequence_parallel,
               "Sequence parallelism with tensor parallelism");
  app.add_option("--pp", options.pp, "Pipeline-parallel degree p, 1F1B (default 1)");
  app.add_option("--vpp", options.vpp, "Virtual stages per device: the interleaved schedule");
  app.add_option("--cp", options.cp, "Context-parallel degree c (default 1)");
  app.add_option("--recompute", options.recompute,
                 "Activation recomputation: " + ids_joined(recompute_choices()))
      ->default_str(options.recompute);
  app.add_option("--activations", options.activations,
                 "Activation model: " + ids_joined(activation_model_choices()))
      ->default_str(options.activations);
  app.add_option("--optimizer", options.optimizer, "Optimizer: " + ids_joined(optimizer_choices()))
      ->default_str(options.optimizer);
  app.add_option("--precision", options.precision, "Precision: " + ids_joined(precision_choices()))
      ->default_str(options.precision);
  std::vector<Choice> devices = device_choices();
  devices.pop_back();  // "custom" is --device-gb
  app.add_option("--device", options.device, "Device: " + ids_joined(devices))
      ->default_str(options.device);
  app.add_option("--device-gb", options.device_gb, "A custom device's memory in GB (10^9 bytes)");
  app.add_flag("--logits", options.logits, "Count the output layer's logits and the loss");
  app.add_option("--loss", options.loss,
                 "How the loss is computed, with --logits: " + ids_joined(loss_choices()))
      ->default_str(options.loss);
  app.add_flag("--fit", options.fit, "Find the fewest devices, and their layouts, that fit");
  app.add_flag("--timeline", options.timeline,
               "Memory over one training step on the most loaded device");
  app.add_flag("--savings", options.savings,
               "Rank single changes by the bytes each saves on the most loaded device");
  app.add_flag("--fit-map", options.fit_map,
               "Where it fits: the share of the device over sequence length x micro-batch");
  app.add_flag("--saved-tensors", options.saved_tensors,
               "List the tensors one layer saves for its backward pass (the llama-block model)");
  app.add_flag("--compare-measured", options.compare_measured,
               "How close is this? Every measured case against the estimate of its settings");
  app.add_flag("--json", options.json, "Print JSON instead of a table");
  app.add_flag("--list-models", options.list_models, "List the model presets and exit");

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    return bad_input(err, std::string(error.what()) + " (see trainmem --help)");
  }

  if (options.list_models) {
    print_models(out);
    return kExitOk;
  }
  const bool from_config = app.count("--config") > 0;
  if (from_config && app.count("--model") > 0) {
    return bad_input(err, "--config: give either --model or --config, not both");
  }
  if (!from_config && find_preset(options.model_id) == nullptr) {
    return bad_input(err, "--model: '" + options.model_id +
                              "' is not a known model; allowed: " + preset_ids_joined());
  }
  if (app.count("--tokens") > 0 && app.count("--micro-batch") > 0) {
    return bad_input(err,
                     "--tokens: give the micro-batch either in tokens or with --micro-batch, "
                     "not both");
  }
  if (app.count("--device") > 0 && app.count("--device-gb") > 0) {
    return bad_input(err, "--device-gb: give either --device or --device-gb, not both");
  }
  // The views print one thing each; a second one given is named as the flag refused.
  const std::vector<std::pair<const char*, bool>> views = {
      {"--fit", options.fit},
      {"--savings", options.savings},
      {"--timeline", options.timeline},
      {"--fit-map", options.fit_map},
      {"--saved-tensors", options.saved_tensors},
      {"--compare-measured", options.compare_measured}};
  std::vector<std::string> given_views;
  for (const auto& [flag, given] : views) {
    if (given) given_views.emplace_back(flag);
  }
  if (given_views.size() > 1) {
    return bad_input(err, given_views[1] +
                              ": choose one of --fit, --savings, --timeline, "
                              "--fit-map, --saved-tensors and --compare-measured");
  }
  if (options.compare_measured) {
    // Each measured case carries its own settings; any other flag would be ignored silently.
    for (const CLI::Option* option : app.get_options()) {
      const std::string name = option->get_name();
      if (option->count() > 0 && name != "--compare-measured" && name != "--json") {
        return bad_input(err, name +
                                  ": --compare-measured uses each measured case's own "
                                  "settings; drop " +
                                  name);
      }
    }
    return print_compare_measured(options.json, out);
  }
  if (app.count("--loss") > 0 && !options.logits) {
    return bad_input(err,
                     "--loss: the loss is counted with the logits; add --logits or drop --loss");
  }
  if (options.saved_tensors && options.json) {
    return bad_input(err, "--json: --saved-tensors prints a table only");
  }
  if (options.saved_tensors && app.count("--activations") > 0 &&
      options.activations != kLlamaBlockActivationModel) {
    return bad_input(err,
                     "--activations: --saved-tensors lists the llama-block model's tensors; "
                     "drop --activations " +
                         options.activations);
  }
  if (options.fit) {
    for (const char* flag : {"--dp", "--zero", "--tp", "--sequence-parallel", "--pp", "--vpp",
                             "--cp", "--recompute"}) {
      if (app.count(flag) > 0) {
        return bad_input(err, std::string(flag) +
                                  ": --fit searches the layouts and recomputation itself; drop " +
                                  flag);
      }
    }
  }

  TrainingSetup setup;
  setup.model_id = options.model_id;
  if (from_config) {
    const ConfigFile file = read_config_file(options.config_path);
    if (!file.ok) return bad_input(err, "--config: " + file.problem);
    const ConfigParse parse = parse_hf_config(file.text);
    if (parse.status != Status::kOk) return bad_input(err, "--config: " + parse.message);
    setup.model_id = kCustomModelId;
    setup.custom_model = parse.shape;
  }
  setup.flash_attention = !options.no_flash_attention;
  setup.sequence_length = whole_or(app, "--seq-len", options.seq_len, kPlateSequenceLength);
  setup.micro_batch_sequences = whole_or(app, "--micro-batch", options.micro_batch, 1);
  setup.layout.data_parallel = whole_or(app, "--dp", options.dp, 1);
  setup.layout.zero_stage = whole_or(app, "--zero", options.zero, 0);
  setup.layout.tensor_parallel = whole_or(app, "--tp", options.tp, 1);
  setup.layout.sequence_parallel = options.sequence_parallel;
  setup.layout.pipeline_parallel = whole_or(app, "--pp", options.pp, 1);
  setup.layout.virtual_pipeline_stages = whole_or(app, "--vpp", options.vpp, 1);
  setup.layout.context_parallel = whole_or(app, "--cp", options.cp, 1);
  setup.recompute = options.recompute;
  setup.activation_model = options.activations;
  setup.optimizer = options.optimizer;
  setup.precision = options.precision;
  setup.logits = options.logits;
  setup.loss = options.loss;
  setup.device_id = options.device;
  if (app.count("--device-gb") > 0) {
    setup.device_id = kCustomDeviceId;
    setup.custom_capacity_gb = parse_decimal(options.device_gb);
  }

  if (app.count("--tokens") > 0 && setup.sequence_length > 0) {
    const MicroBatchFromTokens micro_batch = micro_batch_from_tokens(
        parse_decimal(options.tokens), setup.sequence_length, kMaxMicroBatchSequences);
    if (micro_batch.status != Status::kOk) {
      return bad_input(err,
                       "--tokens: '" + options.tokens + "' is not allowed. " + micro_batch.message);
    }
    setup.micro_batch_sequences = micro_batch.micro_batch_sequences;
  }

  if (options.fit) return print_fit(setup, options.json, out, err);
  if (options.savings) return print_savings(setup, options.json, out, err);
  if (options.timeline) return print_timeline(setup, options.json, out, err);
  if (options.fit_map) return print_fit_map(setup, options.json, out, err);
  if (options.saved_tensors) return print_saved_tensors(setup, out, err);

  const Estimate estimate = estimate_memory(setup);
  if (estimate.status != Status::kOk) {
    // Quote what was typed for the flag the core refused.
    const std::map<std::string, std::string> typed = {{"seq-len", options.seq_len},
                                                      {"micro-batch", options.micro_batch},
                                                      {"dp", options.dp},
                                                      {"zero", options.zero},
                                                      {"tp", options.tp},
                                                      {"pp", options.pp},
                                                      {"vpp", options.vpp},
                                                      {"cp", options.cp},
                                                      {"recompute", options.recompute},
                                                      {"activations", options.activations},
                                                      {"loss", options.loss},
                                                      {"optimizer", options.optimizer},
                                                      {"precision", options.precision},
                                                      {"device", options.device},
                                                      {"device-gb", options.device_gb}};
    const auto found = typed.find(estimate.invalid_field);
    const std::string quoted =
        found != typed.end() ? "'" + found->second + "' is not allowed. " : "";
    return bad_input(err, "--" + estimate.invalid_field + ": " + quoted + estimate.message);
  }

  if (options.json) {
    out << estimate_to_json(estimate) << "\n";
  } else {
    print_table(estimate, out);
  }
  return kExitOk;
}

}  // namespace trainmem
