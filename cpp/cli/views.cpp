// What the `trainmem` command prints: the breakdown, and each view (--fit, --savings, --timeline,
// --fit-map, --saved-tensors, --compare-measured, --list-models, --list-devices), as a table or as
// JSON.
#include "views.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "trainmem/activations.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

namespace trainmem {

namespace {

constexpr int kFitLayoutsShown = 10;

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

}  // namespace

namespace {

// The breakdown's lines: a label padded to its column, then the bytes.
void print_row(std::ostream& out, const std::string& label, double value) {
  out << "  " << std::left << std::setw(46) << label << std::right << std::setw(10)
      << format_bytes(value) << "\n";
}

std::string per_parameter_text(double value) {
  return std::string(value == std::trunc(value) ? fixed(value, 0) : fixed(value, 3)) +
         " B/parameter";
}

// A model state's row label: the plate's recipe in the plate's words, LoRA's by what trains, any
// other by its bytes per parameter.
std::string state_label(const TermRow& row, const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const TrainingSetup plate;
  const double per = bytes_per_parameter_of(estimate.bytes_per_parameter, row.term);
  if (setup.optimizer_in_backward && row.term == Term::kGradients) {
    return "Gradients (largest parameter's, " + fixed(per, 0) + " B each)";
  }
  if (setup.lora_rank > 0) {
    if (row.term == Term::kWeights) {
      return "Weights (frozen base, " + choice_id(setup.base_weights) + ", and adapters)";
    }
    return std::string(row.label) + " (adapters, " + per_parameter_text(per) + ")";
  }
  // --fp8-param-gather: the linear layers' weights are FP8 parameters, in the FP8 term.
  if (setup.fp8_param_gather && row.term == Term::kWeights) {
    return "Weights (" + per_parameter_text(per) + ", 0 in FP8 GEMMs)";
  }
  const bool plate_recipe = setup.precision == plate.precision &&
                            setup.optimizer == plate.optimizer && estimate.stack_terms.empty();
  if (!plate_recipe) return std::string(row.label) + " (" + per_parameter_text(per) + ")";
  if (row.term == Term::kOptimizerStates) {
    return "Optimiser moments (Adam, FP32, " + per_parameter_text(per) + ")";
  }
  return std::string(row.label) + " (" + (per == kFp32Bytes ? "FP32, " : "BF16, ") +
         per_parameter_text(per) + ")";
}

// The model states' total row: their bytes per parameter where one figure says it.
std::string model_states_label(const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const BytesPerParameter& per = estimate.bytes_per_parameter;
  if (setup.lora_rank > 0) return "Model states";
  if (setup.optimizer_in_backward) {
    return "Model states (" + per_parameter_text(per.total) + " and one gradient)";
  }
  // The FP8 GEMMs' weights are FP8 parameters, in the FP8 term: theirs hold no BF16 weight.
  if (setup.fp8_param_gather) {
    return "Model states (" + fixed(per.total - per.weights, 0) + " to " +
           per_parameter_text(per.total) + ")";
  }
  return "Model states (" + per_parameter_text(per.total) + ")";
}

void print_header(const Estimate& estimate, std::ostream& out) {
  const TrainingSetup& setup = estimate.setup;
  const int sequences = setup.micro_batch_sequences;
  out << estimate.model_name << ": " << format_parameters(estimate.num_parameters)
      << " parameters, " << format_count(estimate.tokens_per_micro_batch)
      << " tokens per micro-batch (" << sequences << (sequences == 1 ? " sequence" : " sequences")
      << " of " << format_count(setup.sequence_length) << "), FlashAttention "
      << (setup.flash_attention ? "on" : "off") << "\n";
  if (setup.lora_rank > 0) {
    out << "LoRA r = " << setup.lora_rank << " on "
        << (setup.lora_targets == LoraTargets::kAttention ? "the attention projections"
                                                          : "all linear layers")
        << ": " << format_count(estimate.trainable_parameters)
        << " trainable parameters; the base frozen, its linear weights "
        << "in " << choice_id(setup.base_weights) << " ("
        << fixed(estimate.base_linear_bytes_per_parameter, 4) << " B/parameter)\n";
  }
  const TrainingSetup plate;
  const bool plate_recipe =
      setup.precision == plate.precision && setup.optimizer == plate.optimizer;
  if (estimate.num_devices > 1 || !plate_recipe || setup.recompute != plate.recompute) {
    out << "Layout: " << format_layout(setup);
    if (recomputes_modules(setup)) out << " (" << recompute_modules_text(setup) << ")";
    out << "; " << choice_id(setup.optimizer) << ", " << choice_id(setup.precision);
    if (setup.global_batch_sequences > 0) {
      out << "; global batch " << format_count(setup.global_batch_sequences);
    }
    const int p = setup.layout.pipeline_parallel;
    if (answers_another_stage(estimate)) {
      out << "\nStage answered: " << stage_words(estimate.stage, p) << ", "
          << format_count(estimate.parameters_on_device) << " parameters before ZeRO\n";
    } else {
      out << "\nMost loaded device: " << (p == 1 ? "any" : stage_words(estimate.stage, p)) << ", "
          << format_count(estimate.parameters_on_device) << " parameters before ZeRO\n";
    }
  }
  out << "\n";
}

// Under a stack: a colocated rollout engine's share, a row of its own; then the stack's own terms
// and the runtime (those outside the allocator starred), then the allocator's cache.
void print_stack_terms(const Estimate& estimate, std::ostream& out) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.term == Term::kRolloutEngine && term.bytes > 0) {
      print_row(out,
                std::string(term_row(Term::kRolloutEngine).label) + " (" +
                    choice_name(estimate.setup.rollout) + ")",
                term.bytes);
    }
  }
  out << "  Held by the " << choice_name(estimate.setup.stack) << " stack at the step's peak:\n";
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.bytes > 0 && term.term != Term::kRolloutEngine)
      print_row(out, "  " + term.label + (term.in_allocator ? "" : " *"), term.bytes);
  }
  print_row(out, "  Allocator's cache (reserved, not allocated)",
            estimate.bytes[Term::kAllocatorCache]);
}

void print_host(const Estimate& estimate, std::ostream& out) {
  const TrainingSetup& setup = estimate.setup;
  if (!(estimate.host.total() > 0)) return;
  const bool offloads = setup.offload != Offload::kNone || setup.offload_activations;
  if (!offloads) {
    out << "\n  Held in the host's memory (verl's):\n";
  } else {
    out << "\n  Held in the host's memory instead (offload " << choice_id(setup.offload)
        << (setup.offload_activations ? ", activations" : "") << "):\n";
  }
  for (const TermRow& row : kTerms) {
    const double bytes = estimate.host[row.term];
    if (!row.on_host || !(bytes > 0)) continue;
    print_row(out,
              row.term == Term::kFp32Gradients          ? "FP32 gradients (the host's own copy)"
              : row.term == Term::kRolloutEngine        ? "SGLang's weights, asleep"
              : row.term == Term::kWeights && !offloads ? "The reference model's FP32 shard"
                                                        : row.label,
              bytes);
  }
  print_row(out, "Total in host memory", estimate.host.total());
  if (estimate.host_capacity_bytes > 0) {
    out << "  The node's host, shared by " << format_count(estimate.host_devices)
        << (estimate.host_devices == 1 ? " device: " : " devices: ")
        << format_bytes(estimate.host_node_bytes)
        << (estimate.host_fits ? ", within its " : ", more than its ")
        << format_bytes(estimate.host_capacity_bytes)
        << (estimate.host_fits ? "; the host holds it\n" : "; the host does not hold it\n");
  }
}

}  // namespace

void print_breakdown(const Estimate& estimate, std::ostream& out) {
  const Breakdown& bytes = estimate.bytes;
  const TrainingSetup& setup = estimate.setup;
  print_header(estimate, out);
  const bool stack = !estimate.stack_terms.empty();
  for (const TermRow& row : kTerms) {
    if (!row.on_device) continue;
    const double held = bytes[row.term];
    if (row.part == TermPart::kModelState) {
      print_row(out, state_label(row, estimate), held);
    } else if (row.term == Term::kActivations) {
      const ModelShape& shape = *resolve_model(setup);
      print_row(
          out,
          std::string(row.label) +
              (hybrid_linear_attention(shape) ? " (hybrid, each kind tensor by tensor)"
               : sparse_attention(shape)      ? " (sparse attention, tensor by tensor)"
               : recomputes_modules(setup) ? " (Megatron-LM's recompute modules, tensor by tensor)"
               : setup.activation_model == ActivationModel::kLlamaBlock
                   ? " (Llama block, tensor by tensor)"
                   : " (Korthikanti et al. 2023)"),
          held);
    } else if (row.term == Term::kLogits) {
      if (!setup.logits) continue;
      if (estimate.stage.role == PipelineStage::kFirst ||
          estimate.stage.role == PipelineStage::kMiddle) {
        out << "  " << row.label << ": held by the last pipeline stage, not this one\n";
      } else {
        print_row(out, row.label, held);
      }
    } else if (row.term == Term::kFramework && stack) {
      print_stack_terms(estimate,
                        out);  // the engine's, the framework's, the runtime's, the cache's
    } else if (!stack || (row.part != TermPart::kStack)) {
      if (held > 0) print_row(out, row.label, held);
    }
  }
  out << "  " << std::string(56, '-') << "\n";
  print_row(out, model_states_label(estimate), bytes.model_states());
  print_row(out,
            answers_another_stage(estimate) ? "Total on this stage's device"
            : estimate.num_devices > 1      ? "Total on the most loaded device"
                                            : "Total on one device",
            bytes.total());
  if (stack) {
    print_row(out, "  Peak allocated (max_memory_allocated)", estimate.peak_allocated_bytes);
    print_row(out, "  Peak reserved (max_memory_reserved)", estimate.peak_reserved_bytes);
    out << "  * outside PyTorch's caching allocator: on the device, in neither peak\n";
  }
  out << "\n  " << format_worth(estimate.devices_worth) << " " << estimate.device.short_name
      << "s' worth: "
      << (answers_another_stage(estimate) ? "the most loaded device's total" : "the total")
      << " over one " << estimate.device.name;
  if (!estimate.limit_source.empty()) {
    out << " as PyTorch reports it (" << format_bytes(estimate.limit_bytes)
        << ", torch.cuda.get_device_properties().total_memory: " << estimate.limit_source << ")";
  }
  out << " (1 GB = 10^9 bytes)";
  out << (estimate.fits ? "; it fits" : "; it does not fit");
  if (setup.headroom_percent > 0) {
    out << " with " << format_percent(setup.headroom_percent) << " of it kept free ("
        << format_bytes(estimate.usable_bytes) << " usable)";
  }
  out << "\n";
  for (const std::string& note : estimate.notes) out << "  Note: " << note << "\n";
  print_host(estimate, out);
}

namespace {

int print_fit(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const FitSearch search = find_fewest_devices(setup, kFitLayoutsShown);
  if (!search.answer.ok()) return refused(search.answer, err);
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
  out << "Cheapest to run first; each layout's cost, in rough percent of a step, and why:\n\n";
  for (std::size_t index = 0; index < search.layouts.size(); ++index) {
    const Estimate& estimate = search.layouts[index];
    // Where a stack's own term outweighs the states and the activations at the peak, it is named.
    const StackTerm* largest = outweighing_stack_term(estimate);
    out << "  " << std::left << std::setw(64) << format_layout(estimate.setup) << std::right
        << std::setw(10) << format_bytes(estimate.bytes.total()) << "  (states "
        << format_bytes(estimate.bytes.model_states()) << ", activations "
        << format_bytes(estimate.bytes[Term::kActivations])
        << (largest != nullptr ? ", " + largest->label + " " + format_bytes(largest->bytes) : "")
        << ")\n"
        << "    cost " << format_count(search.costs[index].score) << ": "
        << search.costs[index].reason << "\n";
  }
  return kExitOk;
}

int print_savings(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const SavingsList list = rank_savings(setup);
  if (!list.answer.ok()) return refused(list.answer, err);
  if (json) {
    out << savings_to_json(list) << "\n";
    return kExitOk;
  }
  out << list.baseline.model_name << ": " << format_bytes(list.baseline.bytes.total())
      << " on the most loaded of " << format_count(list.baseline.num_devices)
      << (list.baseline.num_devices == 1 ? " device" : " devices")
      << ". Single changes, most saved first:\n\n";
  for (const Saving& saving : list.savings) {
    out << "  " << std::left << std::setw(58) << saving.label << std::right << std::setw(10)
        << format_bytes(saving.bytes_saved) << " saved  -> " << std::setw(10)
        << format_bytes(saving.estimate.bytes.total());
    if (saving.devices_added > 0)
      out << "  (+" << format_count(saving.devices_added) << " devices)";
    out << "\n";
  }
  return kExitOk;
}

int print_timeline(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) return refused(estimate.answer, err);
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  if (json) {
    out << timeline_to_json(points) << "\n";
    return kExitOk;
  }
  const double peak = points[timeline_peak(points)].bytes;
  const bool stack = !estimate.stack_terms.empty();
  out << estimate.model_name << ": memory on the most loaded device through one step; peak "
      << format_bytes(peak)
      << (stack ? " allocated (and the runtime outside the allocator); reserved, the last column, "
                  "peaks at the estimate's total "
                : " (the estimate's total)")
      << (stack ? format_bytes(estimate.bytes.total()) + ".\n\n" : ".\n\n");
  for (const TimelinePoint& point : points) {
    out << "  " << std::left << std::setw(17) << point.phase << std::right << std::setw(5)
        << (point.layer > 0 ? std::to_string(point.layer) : "") << std::setw(11)
        << format_bytes(point.bytes);
    if (stack) out << std::setw(11) << format_bytes(point.reserved_bytes);
    out << (point.bytes == peak ? "  <- peak" : "") << "\n";
  }
  return kExitOk;
}

int print_explain(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) return refused(estimate.answer, err);
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  if (json) {
    out << explain_to_json(terms) << "\n";
    return kExitOk;
  }
  out << estimate.model_name
      << ": each term's arithmetic on the most loaded device, with this setup's numbers, and its "
         "source.\n";
  for (const TermArithmetic& term : terms) {
    out << "\n" << term.label << "\n  " << term.formula << "\n  source: " << term.source << "\n";
  }
  return kExitOk;
}

int print_fit_map(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err) {
  const FitMap map = fit_map(setup);
  if (!map.answer.ok()) return refused(map.answer, err);
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

int print_saved_tensors(const TrainingSetup& setup, bool, std::ostream& out, std::ostream& err) {
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) return refused(estimate.answer, err);
  const SavedTensorList list = saved_tensors_of(setup);
  const std::vector<SavedTensor>& tensors = list.tensors;
  std::string caption = list.caption;
  if (!caption.empty()) caption[0] = static_cast<char>(std::tolower(caption[0]));
  out << estimate.model_name << ": " << caption << " (docs/activations.md).\n\n";
  out << "  " << padded("tensor", 44) << padded("dtype", 7) << padded("elements", 10) << std::right
      << std::setw(10) << "bytes"
      << "  saved by\n";
  const auto bytes_text = [](double bytes) {
    return fixed(bytes, bytes == std::trunc(bytes) ? 0 : 1);
  };
  for (const SavedTensor& tensor : tensors) {
    const std::string elements =
        tensor.elements + (tensor.split > 1 ? " / " + format_count(tensor.split) : "");
    out << "  " << padded(tensor.name, 44) << padded(tensor.dtype, 7) << padded(elements, 10)
        << std::right << std::setw(10) << bytes_text(tensor.bytes_per_token) << "  "
        << tensor.saved_by << "\n";
  }
  const double sum = saved_bytes_per_token(tensors);
  out << "  " << padded("per token per layer", 61) << std::right << std::setw(10) << bytes_text(sum)
      << "  = " << fixed(sum / resolve_model(setup)->hidden_size, 2) << " × h\n";
  return kExitOk;
}

int print_compare_measured(const TrainingSetup&, bool json, std::ostream& out, std::ostream&) {
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
    if (!comparison.answer.ok()) {
      out << "  not estimated: " << comparison.answer.message << "\n";
      continue;
    }
    out << "  Korthikanti   " << std::setw(16) << figure(comparison.korthikanti_bytes) << "  "
        << format_error_percent(comparison.korthikanti_error_percent) << "\n";
    out << "  Llama block   " << std::setw(16) << figure(comparison.llama_block_bytes) << "  "
        << format_error_percent(comparison.llama_block_error_percent) << "\n";
    if (!measured.other_estimate_name.empty()) {
      out << "  " << padded(measured.other_estimate_name, 14) << std::right << std::setw(16)
          << figure(measured.other_estimate_bytes) << "  "
          << format_error_percent(comparison.other_estimate_error_percent)
          << "  (its own estimate, published with the measurement)\n";
    }
    out << "  source: " << measured.source << "\n";
    out << "  note: " << measured.note << "\n";
  }
  const std::vector<std::string> standing = standing_against_other_estimates(comparisons);
  if (!standing.empty()) {
    out << "\nAgainst another tool's estimates of the same runs (whole errors, the Llama block):\n";
    for (const std::string& sentence : standing) out << "  " << sentence << "\n";
  }
  out << "\nA measured peak also holds what no estimate here counts: the caching allocator's "
         "reserve and\nfragmentation, the CUDA context and library workspaces, communication "
         "buffers, and temporaries.\n";
  return kExitOk;
}

}  // namespace

void print_launch(const LaunchConfig& launch, std::ostream& out) {
  out << "Launch config: " << launch.kind << "\n";
  for (const std::string& note : launch.notes) out << "  " << note << "\n";
  if (launch.not_understood.empty()) {
    out << "  Every key it sets is read, or has no bearing on the device's memory.\n\n";
    return;
  }
  out << "  Set in the file and not understood, so left out of the estimate:\n";
  for (const std::string& key : launch.not_understood) out << "    " << key << "\n";
  out << "\n";
}

void print_verdict(const VerdictAnswer& verdict, std::ostream& out) {
  std::string verdict_line = verdict_words(verdict.verdict);
  verdict_line[0] = static_cast<char>(verdict_line[0] - 'a' + 'A');
  out << "\nVerdict: " << verdict_line << ". " << verdict.reason << "\n";
  if (!verdict.from_band) return;
  out << "  The band's runs (the estimate's error against each):\n";
  for (std::size_t index = 0; index < verdict.band.case_ids.size(); ++index) {
    out << "    " << format_error_percent(verdict.band.case_errors_percent[index]) << "  "
        << verdict.band.case_titles[index] << "\n";
  }
}

void print_models(std::ostream& out) {
  // Columns as wide as their longest entry, so that no name runs into its count; a heading for
  // each family.
  std::size_t id_width = 2;
  std::size_t name_width = 4;
  for (const ModelShape& shape : preset_models()) {
    id_width = std::max(id_width, shape.id.size());
    name_width = std::max(name_width, shape.name.size());
  }
  const int id_column = static_cast<int>(id_width) + 2;
  const int name_column = static_cast<int>(name_width) + 2;
  constexpr int kCountColumn = 12;
  out << std::left << "  " << std::setw(id_column) << "id" << std::setw(name_column) << "name"
      << std::setw(kCountColumn) << "parameters"
      << "source\n";
  std::string family;
  for (const ModelShape& shape : preset_models()) {
    if (shape.family != family) {
      family = shape.family;
      out << family << "\n";
    }
    out << "  " << std::setw(id_column) << shape.id << std::setw(name_column) << shape.name
        << std::setw(kCountColumn) << format_parameters(count_parameters(shape)) << shape.source
        << "\n";
  }
}

void print_devices(std::ostream& out) {
  // The memory as printed, and as PyTorch reports it (what a training stack's fit is judged
  // against; "-" where not known), each with its source.
  out << std::left << std::setw(11) << "id" << std::setw(20) << "name" << std::setw(9) << "memory"
      << std::setw(10) << "reported" << std::setw(20) << "architecture"
      << "source\n";
  for (const Device& device : device_catalog()) {
    const ReportedMemory reported = reported_memory(device.id);
    out << std::setw(11) << device.id << std::setw(20) << device.name << std::setw(9)
        << format_bytes_short(device.capacity_bytes) << std::setw(10)
        << (reported.bytes > 0 ? format_bytes(reported.bytes) : "-") << std::setw(20)
        << architecture_row(device.architecture).name << device.source
        << (reported.bytes > 0 ? "; reported: " + reported.source : "") << "\n";
  }
}

int bad_input(std::ostream& err, const std::string& message) {
  std::string line = message;  // the contract is one line
  std::replace(line.begin(), line.end(), '\n', ' ');
  while (!line.empty() && line.back() == ' ') line.pop_back();
  err << "trainmem: " << line << "\n";
  return kExitBadInput;
}

int refused(const Answer& answer, std::ostream& err) {
  const Setting* setting = find_setting(answer.setting);
  return bad_input(err, (setting != nullptr ? flag_of(*setting) : "--" + answer.setting) + ": " +
                            answer.message);
}

std::string flag_of(const Setting& setting) {
  const bool on_by_default = setting.kind == SettingKind::kSwitch && setting.default_text == "on";
  return (on_by_default ? "--no-" : "--") + setting.id;
}

const std::vector<View>& views() {
  using Uses = View::Uses;
  static const std::vector<View> table = {
      {"--fit", "Find the fewest devices, and their layouts, that fit", true, Uses::kChoosesLayout,
       print_fit},
      {"--savings", "Rank single changes by the bytes each saves on the most loaded device", true,
       Uses::kSettings, print_savings},
      {"--timeline", "Memory over one training step on the most loaded device", true,
       Uses::kSettings, print_timeline},
      {"--explain",
       "Show the arithmetic: each term's formula with this setup's numbers, and its source", true,
       Uses::kSettings, print_explain},
      {"--fit-map", "Where it fits: the share of the device over sequence length x micro-batch",
       true, Uses::kSettings, print_fit_map},
      {"--saved-tensors",
       "List the tensors one layer saves for its backward pass (the llama-block model)", false,
       Uses::kLlamaBlockModel, print_saved_tensors},
      {"--compare-measured",
       "How close is this? Every measured case against the estimate of its settings", true,
       Uses::kOwnSettings, print_compare_measured},
  };
  return table;
}

}  // namespace trainmem
