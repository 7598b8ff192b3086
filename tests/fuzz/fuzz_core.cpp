// libFuzzer target over the core's public entry points: estimates for arbitrary setups, the
// fewest-devices search, the workshop view, the timeline, the savings, the fit map, comparisons,
// the typed-text parsers, config.json parsing and launch configs with their verdict. Any
// input must give a status and a message, never a crash, a NaN, an infinity or terms that do
// not add up. Build and run: scripts/fuzz.sh.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"
#include "trainmem/verdict.hpp"
#include "yaml_json.hpp"

namespace {

using namespace trainmem;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

template <typename Choices>
std::string pick_id(FuzzedDataProvider& data, const Choices& choices) {
  // Mostly a valid id, sometimes arbitrary text.
  if (data.ConsumeBool()) return data.ConsumeRandomLengthString(24);
  const auto index = data.ConsumeIntegralInRange<std::size_t>(0, choices.size() - 1);
  return choices[index].id;
}

int small_or_any(FuzzedDataProvider& data) {
  return data.ConsumeBool() ? data.ConsumeIntegralInRange<int>(0, 16) : data.ConsumeIntegral<int>();
}

void check_estimate(const Estimate& estimate) {
  if (!estimate.answer.ok()) {
    require(!estimate.answer.message.empty(), "a refusal has a message");
    require(find_setting(estimate.answer.setting) != nullptr ||
                estimate.answer.setting == kConfigInputId,
            "a refusal names a setting");
    return;
  }
  const Breakdown& b = estimate.bytes;
  for (double value :
       {b[Term::kWeights], b[Term::kGradients], b[Term::kMasterWeights], b[Term::kOptimizerStates],
        b[Term::kActivations], b[Term::kLogits], b.model_states(), b.total(),
        estimate.devices_worth, estimate.num_devices, estimate.parameters_on_device}) {
    require(std::isfinite(value), "every figure is finite");
    require(value >= 0, "every figure is non-negative");
  }
  // Every term, a stack's buffers, runtime and cache among them, finite and non-negative.
  for (const TermRow& row : kTerms) {
    require(std::isfinite(b[row.term]) && b[row.term] >= 0, "every term is finite, non-negative");
  }
  if (estimate.stack_terms.empty()) {
    const double sum = b[Term::kWeights] + b[Term::kGradients] + b[Term::kMasterWeights] +
                       b[Term::kOptimizerStates] + b[Term::kActivations] + b[Term::kLogits] +
                       b[Term::kDequantization] + b[Term::kFp8Weights];
    require(std::fabs(sum - b.total()) <= 1e-9 * b.total(), "the terms sum to the total");
  } else {
    // A stack's replay: allocated within reserved, reserved within the total (the runtime
    // outside the allocator is beside it).
    require(std::isfinite(estimate.peak_reserved_bytes), "the reserved peak is finite");
    require(estimate.peak_allocated_bytes <= estimate.peak_reserved_bytes,
            "allocated within reserved");
    require(estimate.peak_reserved_bytes <= b.total() * (1 + 1e-9), "reserved within the total");
  }
  require(format_bytes(b.total()).find("nan") == std::string::npos, "no nan on screen");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  const int mode = data.ConsumeIntegralInRange<int>(0, 4);

  if (mode == 0) {  // config.json text, whole and as a multimodal config's text tower
    const std::string text = data.ConsumeRemainingBytesAsString();
    for (const bool text_tower : {false, true}) {
      const ConfigParse parsed = parse_hf_config(text, text_tower);
      if (!parsed.answer.ok()) {
        require(!parsed.answer.message.empty(), "a refused config has a message");
      } else {
        require(std::isfinite(count_parameters(parsed.shape)),
                "a parsed config has a finite count");
        require(std::isfinite(count_mtp_parameters(parsed.shape)), "its MTP count is finite");
      }
    }
    // The text tower as a config of its own reads as the text tower does.
    const ConfigText tower = text_tower_config_text(text);
    if (tower.answer.ok() && !tower.text.empty()) {
      const ConfigParse own = parse_hf_config(tower.text);
      const ConfigParse asked = parse_hf_config(text, true);
      require(own.answer.ok() == asked.answer.ok(), "a text tower reads alike either way");
      if (own.answer.ok() && asked.answer.ok()) {
        require(count_parameters(own.shape) == count_parameters(asked.shape),
                "a text tower counts alike either way");
      }
    } else {
      require(!tower.answer.ok() ? !tower.answer.message.empty() : true,
              "a refused text tower has a message");
    }
    return 0;
  }
  if (mode == 4) {  // a launch config's text, with or without the world size
    LaunchContext context;
    context.world_size = data.ConsumeIntegralInRange<int>(0, 4096);
    context.read_yaml = yaml_to_json;
    const std::string text = data.ConsumeRemainingBytesAsString();
    const LaunchConfig launch = read_launch_config(text, TrainingSetup{}, context);
    if (!launch.answer.ok()) {
      require(!launch.answer.message.empty(), "a refused launch config has a message");
      return 0;
    }
    const Estimate estimate = estimate_memory(launch.setup);
    check_estimate(estimate);
    if (estimate.answer.ok()) {
      const VerdictAnswer verdict = verdict_of(estimate, false);
      require(std::isfinite(verdict.likely_low_bytes) && std::isfinite(verdict.likely_high_bytes),
              "the verdict's likely figures are finite");
      require(verdict.likely_low_bytes <= verdict.likely_high_bytes, "its band is ordered");
    }
    return 0;
  }
  if (mode == 1) {  // typed text
    const std::string text = data.ConsumeRandomLengthString(64);
    const double decimal = parse_decimal(text);
    require(std::isnan(decimal) || std::isfinite(decimal), "parse_decimal is finite or NaN");
    parse_whole_number(text);
    const MicroBatchFromTokens tokens =
        micro_batch_from_tokens(decimal, small_or_any(data), small_or_any(data));
    require(tokens.answer.ok() || !tokens.answer.message.empty(), "tokens refusal has a message");
    // Any text for any setting: refused with a message naming it, or read back as itself.
    const std::vector<Setting>& all = settings();
    const Setting& setting = all[data.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
    TrainingSetup setup;
    const Answer answer = apply_setting(setup, setting.id, text);
    if (answer.ok()) {
      TrainingSetup again;
      require(apply_setting(again, setting.id, setting_text(setup, setting.id)).ok(),
              "a setting's text reads back");
      require(setting_text(again, setting.id) == setting_text(setup, setting.id),
              "a setting's text reads back as the same value");
    } else {
      require(answer.setting == setting.id && !answer.message.empty(),
              "a refused setting is named, with a message");
      require(setting_text(setup, setting.id) == setting.default_text,
              "a refused setting leaves the setup as it was");
    }
    return 0;
  }

  TrainingSetup setup;
  setup.model_id = pick_id(data, preset_models());
  setup.sequence_length = data.ConsumeBool() ? 1 << data.ConsumeIntegralInRange<int>(0, 21)
                                             : data.ConsumeIntegral<int>();
  setup.micro_batch_sequences = small_or_any(data);
  setup.flash_attention = data.ConsumeBool();
  setup.layout.data_parallel = small_or_any(data);
  setup.layout.zero_stage = data.ConsumeIntegralInRange<int>(-1, 4);
  setup.layout.tensor_parallel = small_or_any(data);
  setup.layout.sequence_parallel = data.ConsumeBool();
  setup.layout.pipeline_parallel = small_or_any(data);
  setup.layout.virtual_pipeline_stages = small_or_any(data);
  setup.layout.context_parallel = small_or_any(data);
  // Choices held as enum classes are set through their text, as every edge sets them.
  for (const char* id : {setting_id::kRecompute, setting_id::kActivationModel,
                         setting_id::kOptimizer, setting_id::kPrecision, setting_id::kLoss,
                         setting_id::kDropout, setting_id::kStack, setting_id::kCompile}) {
    // A refused choice leaves the setup as it was, which the estimate then checks.
    static_cast<void>(apply_setting(setup, id, pick_id(data, find_setting(id)->choices)));
  }
  setup.optimizer_in_backward = data.ConsumeBool();
  setup.logits = data.ConsumeBool();
  setup.device_id = pick_id(data, device_choices());
  setup.custom_capacity_gb = data.ConsumeFloatingPoint<double>();
  setup.layout.pipeline_first_stage_layers = small_or_any(data);
  setup.layout.pipeline_last_stage_layers = small_or_any(data);
  setup.mtp = data.ConsumeBool();
  setup.train_vision = data.ConsumeBool();

  if (mode == 2) {
    const WorkshopView view = workshop_view(setup, small_or_any(data));
    check_estimate(view.estimate);
    for (const ActivationPoint& point : view.activation_curve) {
      require(std::isfinite(point.flash_attention_bytes), "the curve is finite");
      // Under the llama-block model a one-token sequence is the exception: FlashAttention's FP32
      // log-sum-exp (4·a) outweighs the BF16 probabilities (2·a·s) when s = 1 and K, V are not
      // grouped (activations_test.cpp pins it).
      require(point.flash_attention_bytes <= point.without_flash_attention_bytes ||
                  (setup.activation_model == ActivationModel::kLlamaBlock &&
                   setup.sequence_length == 1),
              "FlashAttention never needs more");
    }
    explain_estimate(setup);
    if (view.estimate.answer.ok()) {
      for (const SavedTensor& tensor :
           llama_block_saved_tensors(*resolve_model(setup), setup, setup.flash_attention)) {
        require(std::isfinite(tensor.bytes_per_token) && tensor.bytes_per_token > 0,
                "every saved tensor has a finite, positive size");
      }
    }
    double peak = 0;
    for (const TimelinePoint& point : memory_timeline(setup)) {
      require(std::isfinite(point.bytes) && point.bytes >= 0, "the timeline is finite");
      peak = std::max(peak, point.bytes);
    }
    if (view.estimate.answer.ok()) {
      require(std::fabs(peak - view.estimate.bytes.total()) <= 1e-9 * peak,
              "the timeline's peak is the total");
    }
    for (const FitCell& cell : fit_map(setup).cells) {
      require(std::isfinite(cell.total_bytes), "the fit map is finite");
    }
    return 0;
  }
  const Estimate estimate = estimate_memory(setup);
  check_estimate(estimate);
  const SavingsList savings = rank_savings(setup);
  for (const Saving& saving : savings.savings) {
    check_estimate(saving.estimate);
    require(saving.bytes_saved > 0, "a listed saving saves bytes");
  }
  require(!compare_estimates(estimate, savings.baseline).empty(), "a comparison is worded");
  if (estimate.answer.ok() && data.ConsumeIntegralInRange<int>(0, 63) == 0) {
    const FitSearch search = find_fewest_devices(setup, 3);
    for (const Estimate& layout : search.layouts) {
      check_estimate(layout);
      require(layout.fits, "a listed layout fits");
    }
  }
  return 0;
}
