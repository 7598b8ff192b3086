#include "trainmem/report.hpp"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "estimate/rollout.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

namespace {

// Byte counts are whole numbers below 2^53: print them as JSON integers, not "1.6e10" or "…0.0".
nlohmann::ordered_json number(double value) {
  constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kLargestExactInteger && std::trunc(value) == value) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

nlohmann::ordered_json stack_terms_json(const std::vector<StackTerm>& terms) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const StackTerm& term : terms) {
    list.push_back({{"id", term.id},
                    {"label", term.label},
                    {"bytes", number(term.bytes)},
                    {"inAllocator", term.in_allocator},
                    {"source", term.source}});
  }
  return list;
}

// A breakdown's terms held on the device (or on the host), by their ids (terms.hpp), in the
// table's order, then their total.
nlohmann::ordered_json breakdown_json(const Breakdown& bytes, bool on_host, bool with_total) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const TermRow& row : kTerms) {
    if (on_host ? row.on_host : row.on_device) object[row.id] = number(bytes[row.term]);
  }
  if (with_total) object["total"] = number(bytes.total());
  return object;
}

nlohmann::ordered_json stage_json(const StageFigures& stage) {
  return {{"index", stage.index},
          {"role", choice_id(stage.role)},
          {"layers", number(stage.layers)},
          {"parameters", number(stage.parameters)},
          {"totalBytes", number(stage.total_bytes)},
          {"peakAllocatedBytes", number(stage.peak_allocated_bytes)},
          {"peakReservedBytes", number(stage.peak_reserved_bytes)}};
}

// Every pipeline stage's figures (every_stage), for the CLI's answers: one estimate a stage.
nlohmann::ordered_json every_stage_json(const TrainingSetup& setup) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const StageFigures& stage : every_stage(setup)) list.push_back(stage_json(stage));
  return list;
}

// RL post-training's rollout engine (estimate.hpp, RolloutFigures); null without one.
nlohmann::ordered_json rollout_json(const Estimate& estimate) {
  const RolloutFigures rollout = rollout_figures(estimate);
  if (!rollout.counted) return nullptr;
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const RolloutPhase& phase : rollout.phases) {
    phases.push_back({{"phase", phase.id},
                      {"allocatedBytes", number(phase.allocated_bytes)},
                      {"bytes", number(phase.bytes)},
                      {"fits", phase.fits}});
  }
  return {
      {"engine", choice_id(estimate.setup.rollout)},
      {"memoryUtilization", estimate.setup.rollout_memory_utilization},
      {"engineBytes", number(rollout.engine_bytes)},
      {"weightsBytes", number(rollout.weights_bytes)},
      {"kvBytesPerToken", number(rollout.kv_bytes_per_token)},
      {"kvTokens", number(rollout.kv_tokens)},
      // A hybrid's cache in blocks (0 for attention layers alone): their tokens, their count, and
      // the bytes one sequence's state takes of it (its blocks, padded).
      {"kvBlockTokens", number(rollout.hybrid.block_tokens)},
      {"kvBlocks", number(rollout.kv_blocks)},
      {"kvStateBytesPerSequence",
       number(rollout.hybrid.running_state_blocks() * rollout.hybrid.block_bytes())},
      {"rolloutSequences", number(rollout.rollout_sequences)},
      {"rolloutTokens", number(rollout.rollout_tokens)},
      {"trainerBytes", number(rollout.trainer_bytes)},
      {"sleepMode", estimate.setup.rollout_sleep_mode},
      {"residentBytes", number(rollout.resident_bytes)},
      {"generationBytes", number(rollout.generation_bytes)},
      {"phases", phases},
      {"startupBytes", rollout.startup_bytes < 0
                           ? nlohmann::ordered_json(nullptr)
                           : nlohmann::ordered_json(number(rollout.startup_bytes))},
      {"maxModelLength", number(rollout.max_model_length)},
      {"starts", rollout.starts()},
      {"startFailure", rollout_start_failure(rollout, estimate.setup)},
      {"largestMemoryUtilization", rollout.largest_utilization},
      {"leastStartingMemoryUtilization", rollout.least_starting_utilization},
      {"smallestMemoryUtilization", rollout.smallest_utilization},
  };
}

nlohmann::ordered_json to_json(const Estimate& estimate) {
  const ParallelLayout& layout = estimate.setup.layout;
  // The layers on the first and last stages (each L/p under an even split).
  const ModelShape* shape = resolve_model(estimate.setup);
  const PipelineSplit stage_split =
      shape != nullptr ? pipeline_split(layout, shape->num_layers) : PipelineSplit{};
  const BytesPerParameter& per = estimate.bytes_per_parameter;
  const Breakdown& host = estimate.host;
  return {
      {"model", estimate.setup.model_id},
      {"modelName", estimate.model_name},
      {"parameters", number(estimate.num_parameters)},
      {"tokensPerMicroBatch", number(estimate.tokens_per_micro_batch)},
      {"sequenceLength", estimate.setup.sequence_length},
      {"flashAttention", estimate.setup.flash_attention},
      {"bytes", breakdown_json(estimate.bytes, false, true)},
      {"stack", choice_id(estimate.setup.stack)},
      {"peakAllocatedBytes", number(estimate.peak_allocated_bytes)},
      {"peakReservedBytes", number(estimate.peak_reserved_bytes)},
      {"stackTerms", stack_terms_json(estimate.stack_terms)},
      {"notes", estimate.notes},
      {"device",
       {{"id", estimate.device.id},
        {"name", estimate.device.name},
        {"capacityBytes", number(estimate.device.capacity_bytes)}}},
      {"limitBytes", number(estimate.limit_bytes)},
      {"limitSource", estimate.limit_source},
      {"devicesWorth", estimate.devices_worth},
      {"layout",
       {{"dp", layout.data_parallel},
        {"zero", layout.zero_stage},
        {"tp", layout.tensor_parallel},
        {"sequenceParallel", layout.sequence_parallel},
        {"pp", layout.pipeline_parallel},
        {"vpp", layout.virtual_pipeline_stages},
        {"ppFirstLayers", number(stage_split.first)},
        {"ppLastLayers", number(stage_split.last)},
        {"cp", layout.context_parallel},
        {"ep", layout.expert_parallel},
        {"etp", expert_tensor_parallel_of(layout)}}},
      {"recompute", choice_id(estimate.setup.recompute)},
      {"activationModel", choice_id(estimate.setup.activation_model)},
      {"optimizer", choice_id(estimate.setup.optimizer)},
      {"precision", choice_id(estimate.setup.precision)},
      {"logits", estimate.setup.logits},
      {"loss", choice_id(estimate.setup.loss)},
      {"completionLength", estimate.setup.loss == Loss::kGrpo
                               ? nlohmann::ordered_json(estimate.setup.completion_length)
                               : nlohmann::ordered_json(nullptr)},
      {"devices", number(estimate.num_devices)},
      {"fits", estimate.fits},
      {"headroomPercent", estimate.setup.headroom_percent},
      {"usableBytes", number(estimate.usable_bytes)},
      {"mostLoadedStage", choice_id(estimate.most_loaded_stage)},
      {"stage", stage_json(estimate.stage)},
      {"mostLoaded", stage_json(estimate.most_loaded)},
      {"parametersOnDevice", number(estimate.parameters_on_device)},
      {"bytesPerParameter",
       {{"weights", per.weights},
        {"gradients", per.gradients},
        {"masterWeights", per.master_weights},
        {"optimizerStates", per.optimizer_states},
        {"total", per.total}}},
      {"loraRank", estimate.setup.lora_rank},
      {"loraTargets", choice_id(estimate.setup.lora_targets)},
      {"baseWeights", choice_id(estimate.setup.base_weights)},
      {"trainableParameters", number(estimate.trainable_parameters)},
      {"baseLinearBytesPerParameter", estimate.base_linear_bytes_per_parameter},
      {"offload", choice_id(estimate.setup.offload)},
      {"offloadActivations", estimate.setup.offload_activations},
      {"hostBytes", number(host.total())},
      {"hostDevices", estimate.host_devices},
      {"hostNodeBytes", number(estimate.host_node_bytes)},
      {"hostCapacityBytes", number(estimate.host_capacity_bytes)},
      {"hostFits", estimate.host_fits},
      {"host", breakdown_json(host, true, true)},
      {"rollout", rollout_json(estimate)},
  };
}

std::string csv_number(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

}  // namespace

std::string estimate_to_json(const Estimate& estimate) { return to_json(estimate).dump(2); }

namespace {

nlohmann::ordered_json verdict_json(const VerdictAnswer& verdict) {
  nlohmann::ordered_json json;
  json["verdict"] = verdict_words(verdict.verdict);
  json["fromBand"] = verdict.from_band;
  json["bandPercent"] =
      verdict.from_band
          ? nlohmann::ordered_json::array({verdict.band.low_percent, verdict.band.high_percent})
          : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (std::size_t index = 0; index < verdict.band.case_ids.size(); ++index) {
    cases.push_back({{"id", verdict.band.case_ids[index]},
                     {"title", verdict.band.case_titles[index]},
                     {"errorPercent", verdict.band.case_errors_percent[index]}});
  }
  json["bandCases"] = cases;
  json["likelyLowBytes"] = std::llround(verdict.likely_low_bytes);
  json["likelyHighBytes"] = std::llround(verdict.likely_high_bytes);
  json["limitBytes"] = std::llround(verdict.limit_bytes);
  json["reason"] = verdict.reason;
  json["withheldFor"] = verdict.withheld_for;
  return json;
}

}  // namespace

std::string verdict_to_json(const VerdictAnswer& verdict) { return verdict_json(verdict).dump(2); }

std::string estimate_to_json(const Estimate& estimate, const VerdictAnswer& verdict,
                             const std::vector<BroughtFlag>& brought) {
  nlohmann::ordered_json json = to_json(estimate);
  nlohmann::ordered_json filled = nlohmann::ordered_json::array();
  for (const BroughtFlag& each : brought) {
    filled.push_back({{"flag", each.flag}, {"value", each.value}, {"by", each.by}});
  }
  json["brought"] = filled;
  json["stages"] = every_stage_json(estimate.setup);
  json["verdict"] = verdict_json(verdict);
  return json.dump(2);
}

std::string launch_to_json(const Estimate& estimate, const LaunchConfig& launch,
                           const VerdictAnswer& verdict) {
  nlohmann::ordered_json json = to_json(estimate);
  json["launch"] = {{"kind", launch.kind},
                    {"read", launch.read},
                    {"notUnderstood", launch.not_understood},
                    {"notes", launch.notes},
                    {"leaves", launch.leaves}};
  json["stages"] = every_stage_json(estimate.setup);
  json["verdict"] = verdict_json(verdict);
  return json.dump(2);
}

const StackTerm* outweighing_stack_term(const Estimate& estimate) {
  const double named = estimate.bytes.model_states() + estimate.bytes[Term::kActivations];
  const StackTerm* largest = nullptr;
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.bytes > named && (largest == nullptr || term.bytes > largest->bytes)) largest = &term;
  }
  return largest;
}

std::string fit_to_json(const TrainingSetup& setup, const FitSearch& search) {
  nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
  for (std::size_t index = 0; index < search.layouts.size(); ++index) {
    nlohmann::ordered_json layout = to_json(search.layouts[index]);
    layout["cost"] = search.costs[index].score;
    layout["costReason"] = search.costs[index].reason;
    // The stack's term that outweighs its states and activations, as the page's table names it.
    const StackTerm* outweighing = outweighing_stack_term(search.layouts[index]);
    layout["outweighing"] = outweighing != nullptr
                                ? nlohmann::ordered_json{{"label", outweighing->label},
                                                         {"bytes", number(outweighing->bytes)}}
                                : nlohmann::ordered_json(nullptr);
    layouts.push_back(std::move(layout));
  }
  const ModelShape* shape = resolve_model(setup);
  return nlohmann::ordered_json{{"model", setup.model_id},
                                {"modelName", shape != nullptr ? shape->name : setup.model_id},
                                {"fewestDevices", number(search.fewest_devices)},
                                {"layouts", layouts},
                                {"whyNotFewer", search.why_not_fewer}}
      .dump(2);
}

std::string savings_to_json(const SavingsList& list) {
  nlohmann::ordered_json savings = nlohmann::ordered_json::array();
  for (const Saving& saving : list.savings) {
    savings.push_back({{"change", saving.change},
                       {"label", saving.label},
                       {"bytesSaved", number(saving.bytes_saved)},
                       {"devicesAdded", number(saving.devices_added)},
                       {"estimate", to_json(saving.estimate)}});
  }
  return nlohmann::ordered_json{{"baseline", to_json(list.baseline)}, {"savings", savings}}.dump(2);
}

std::string timeline_to_json(const std::vector<TimelinePoint>& points) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TimelinePoint& point : points) {
    list.push_back({{"phase", point.phase},
                    {"layer", point.layer},
                    {"bytes", number(point.bytes)},
                    {"reservedBytes", number(point.reserved_bytes)},
                    {"held", breakdown_json(point.held, false, false)}});
  }
  return list.dump(2);
}

std::string explain_to_json(const std::vector<TermArithmetic>& terms) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TermArithmetic& term : terms) {
    list.push_back({{"term", term.term},
                    {"label", term.label},
                    {"formula", term.formula},
                    {"source", term.source}});
  }
  return list.dump(2);
}

std::string fit_map_to_json(const FitMap& map) {
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const FitCell& cell : map.cells) {
    cells.push_back({{"sequenceLength", cell.sequence_length},
                     {"microBatchSequences", cell.micro_batch_sequences},
                     {"valid", cell.valid},
                     {"totalBytes", number(cell.total_bytes)},
                     {"devicesWorth", cell.devices_worth},
                     {"fits", cell.fits}});
  }
  return nlohmann::ordered_json{{"sequenceLengths", map.sequence_lengths},
                                {"microBatchSequences", map.micro_batch_sequences},
                                {"cells", cells}}
      .dump(2);
}

std::string measured_to_json(const std::vector<MeasuredComparison>& comparisons) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const MeasuredComparison& comparison : comparisons) {
    const MeasuredCase& measured = comparison.measured;
    nlohmann::ordered_json item = {
        {"id", measured.id},
        {"title", measured.title},
        {"citation", measured.citation},
        {"source", measured.source},
        {"statistic", measured.statistic},
        {"quantity", quantity_id(measured.quantity)},
        {"measuredBytes", number(measured.measured_bytes)},
        {"note", measured.note},
        {"outsideGoal", measured.outside_goal},
    };
    if (!comparison.answer.ok()) {
      item["error"] = comparison.answer.message;
    } else {
      item["korthikantiBytes"] = number(comparison.korthikanti_bytes);
      item["llamaBlockBytes"] = number(comparison.llama_block_bytes);
      item["korthikantiErrorPercent"] = comparison.korthikanti_error_percent;
      item["llamaBlockErrorPercent"] = comparison.llama_block_error_percent;
      item["estimate"] = to_json(comparison.llama_block_estimate);
    }
    if (!measured.other_estimate_name.empty()) {
      item["otherEstimate"] = {
          {"name", measured.other_estimate_name},
          {"bytes", number(measured.other_estimate_bytes)},
          {"errorPercent", comparison.other_estimate_error_percent},
      };
    }
    cases.push_back(std::move(item));
  }
  return cases.dump(2);
}

namespace {

// "masterWeights" -> "master_weights": a term's id as a CSV row names it.
std::string snake_case(const std::string& id) {
  std::string name;
  for (const char c : id) {
    if (c >= 'A' && c <= 'Z') {
      name += '_';
      name += static_cast<char>(c - 'A' + 'a');
    } else {
      name += c;
    }
  }
  return name;
}

}  // namespace

std::string estimate_to_csv(const Estimate& estimate) {
  const BytesPerParameter& per = estimate.bytes_per_parameter;
  std::string csv = "term,bytes_per_parameter,bytes\n";
  // Each term the device holds, those that only some setups hold where they do, so that the rows
  // always add up to the total.
  for (const TermRow& row : kTerms) {
    const double bytes = estimate.bytes[row.term];
    if (!row.on_device || (row.listed_when_held && !(bytes > 0))) continue;
    const std::string per_parameter =
        row.part == TermPart::kModelState ? csv_number(bytes_per_parameter_of(per, row.term)) : "";
    csv += snake_case(row.id) + "," + per_parameter + "," + csv_number(bytes) + "\n";
  }
  return csv + "total," + csv_number(per.total) + "," + csv_number(estimate.bytes.total()) + "\n";
}

std::string setup_to_json(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) {
    return nlohmann::ordered_json{{"error", estimate.answer.message}}.dump(2);
  }
  return estimate_to_json(estimate);
}

std::string setup_to_csv(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  if (estimate.answer.ok()) return estimate_to_csv(estimate);
  std::string quoted;
  for (char c : estimate.answer.message)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return "error\n\"" + quoted + "\"\n";
}

}  // namespace trainmem
