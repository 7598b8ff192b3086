#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

namespace {

struct Options {
  std::string model_id = TrainingSetup{}.model_id;
  std::string tokens = std::to_string(kPlateSequenceLength);
  bool no_flash_attention = false;
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

// Parses a decimal number written in full; false for anything else, out-of-range values included.
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  return error == std::errc() && end == last;
}

void print_models(std::ostream& out) {
  out << std::left << std::setw(14) << "id" << std::setw(16) << "name" << std::setw(12)
      << "parameters"
      << "source\n";
  for (const ModelShape& shape : preset_models()) {
    out << std::setw(14) << shape.id << std::setw(16) << shape.name << std::setw(12)
        << format_parameters(count_parameters(shape)) << shape.source << "\n";
  }
}

void print_table(const Estimate& estimate, std::ostream& out) {
  const MemoryBreakdown& bytes = estimate.bytes;
  const int sequences = estimate.setup.micro_batch_sequences;
  out << estimate.model_name << ": " << format_parameters(estimate.num_parameters)
      << " parameters, " << format_count(estimate.tokens_per_micro_batch)
      << " tokens per micro-batch (" << sequences << (sequences == 1 ? " sequence" : " sequences")
      << " of " << format_count(estimate.setup.sequence_length) << "), FlashAttention "
      << (estimate.setup.flash_attention ? "on" : "off") << "\n\n";
  const auto row = [&out](const std::string& label, double value) {
    out << "  " << std::left << std::setw(46) << label << std::right << std::setw(10)
        << format_bytes(value) << "\n";
  };
  row("Weights (BF16, 2 B/parameter)", bytes.weights_bytes);
  row("Gradients (BF16, 2 B/parameter)", bytes.gradients_bytes);
  row("Master weights (FP32, 4 B/parameter)", bytes.master_weights_bytes);
  row("Optimiser moments (Adam, FP32, 8 B/parameter)", bytes.optimizer_states_bytes);
  row("Activations (Korthikanti et al. 2023)", bytes.activations_bytes);
  out << "  " << std::string(56, '-') << "\n";
  row("Model states (16 B/parameter)", bytes.model_states_bytes);
  row("Total on one device", bytes.total_bytes);
  std::ostringstream worth;
  worth << std::fixed << std::setprecision(1) << estimate.devices_worth;
  out << "\n  " << worth.str() << " " << estimate.device.short_name
      << "s' worth: the total over one " << estimate.device.name << " (1 GB = 10^9 bytes)\n";
}

// Byte counts are whole numbers below 2^53: print them as JSON integers, not "1.6e10" or "…0.0".
nlohmann::ordered_json number(double value) {
  constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kLargestExactInteger && std::trunc(value) == value) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

nlohmann::ordered_json to_json(const Estimate& estimate) {
  const MemoryBreakdown& bytes = estimate.bytes;
  return {
      {"model", estimate.setup.model_id},
      {"parameters", number(estimate.num_parameters)},
      {"tokensPerMicroBatch", number(estimate.tokens_per_micro_batch)},
      {"sequenceLength", estimate.setup.sequence_length},
      {"flashAttention", estimate.setup.flash_attention},
      {"bytes",
       {{"weights", number(bytes.weights_bytes)},
        {"gradients", number(bytes.gradients_bytes)},
        {"masterWeights", number(bytes.master_weights_bytes)},
        {"optimizerStates", number(bytes.optimizer_states_bytes)},
        {"activations", number(bytes.activations_bytes)},
        {"total", number(bytes.total_bytes)}}},
      {"device",
       {{"name", estimate.device.name}, {"capacityBytes", number(estimate.device.capacity_bytes)}}},
      {"devicesWorth", estimate.devices_worth},
  };
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options options;
  CLI::App app{
      "trainmem: the memory to train a Llama 3 model on one device (Plate XIV.1, \"Where the "
      "Memory Goes\").\nModel states at 16 bytes per parameter (ZeRO) plus activations "
      "(Korthikanti et al. 2023).",
      "trainmem"};
  app.add_option("--model", options.model_id, "Model to estimate: " + preset_ids_joined())
      ->default_str(options.model_id);
  app.add_option("--tokens", options.tokens,
                 "Tokens per micro-batch: a whole multiple of the sequence length (8192)")
      ->default_str(options.tokens);
  app.add_flag("--no-flash-attention", options.no_flash_attention,
               "Keep the attention-score term (FlashAttention is on by default)");
  app.add_flag("--json", options.json, "Print one JSON object instead of a table");
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

  TrainingSetup setup;
  if (find_preset(options.model_id) == nullptr) {
    return bad_input(err, "--model: '" + options.model_id +
                              "' is not a known model; allowed: " + preset_ids_joined());
  }
  setup.model_id = options.model_id;
  setup.flash_attention = !options.no_flash_attention;

  double parsed = 0;
  const double tokens =
      parse_number(options.tokens, parsed) ? parsed : std::numeric_limits<double>::quiet_NaN();
  const MicroBatchFromTokens micro_batch =
      micro_batch_from_tokens(tokens, setup.sequence_length, kMaxMicroBatchSequences);
  if (micro_batch.status != Status::kOk) {
    return bad_input(err,
                     "--tokens: '" + options.tokens + "' is not allowed. " + micro_batch.message);
  }
  setup.micro_batch_sequences = micro_batch.micro_batch_sequences;

  const Estimate estimate = estimate_memory(setup);
  if (estimate.status != Status::kOk) return bad_input(err, estimate.message);

  if (options.json) {
    out << to_json(estimate).dump(2) << "\n";
  } else {
    print_table(estimate, out);
  }
  return kExitOk;
}

}  // namespace trainmem
