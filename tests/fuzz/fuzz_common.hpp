// What the fuzz targets share (one target per entry of the core, tests/fuzz/fuzz_*.cpp): the
// invariants every answer keeps, and a setup made from the fuzzer's bytes through the table of
// settings, so that every setting, a new one too, is set with no line here. Any input must give a
// status and a message, never a crash, a NaN, an infinity or terms that do not add up.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainmem/decimal.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/terms.hpp"
#include "trainmem/verdict.hpp"

namespace trainmem::fuzz {

inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

// Mostly one of `choices`' ids, sometimes arbitrary text.
inline std::string pick_id(FuzzedDataProvider& data, const std::vector<Choice>& choices) {
  if (choices.empty() || data.ConsumeIntegralInRange<int>(0, 7) == 0) {
    return data.ConsumeRandomLengthString(24);
  }
  return choices[data.ConsumeIntegralInRange<std::size_t>(0, choices.size() - 1)].id;
}

// Where the fuzzer starts from: the defaults, or a post-training run whose settings only hold
// together (TRL's GRPOTrainer with vLLM on one device; verl's hybrid engine with vLLM or SGLang on
// 8; TRL's DPOTrainer with its reference model on one device), which setting-by-setting changes
// from the defaults would seldom reach.
inline TrainingSetup base_setup(int which) {
  TrainingSetup setup;
  if (which < 2) return setup;
  const auto set = [&setup](const char* id, const char* text) {
    static_cast<void>(apply_setting(setup, id, text));
  };
  if (which == 5) {
    set(setting_id::kModel, "qwen3-0.6b");
    set(setting_id::kStack, "hf");
    set(setting_id::kPrecision, "bf16");
    set(setting_id::kSequenceLength, "1024");
    set(setting_id::kMicroBatch, "2");
    set(setting_id::kRecompute, "full");
    set(setting_id::kLogits, "on");
    set(setting_id::kLoss, "dpo");
    set(setting_id::kReferenceModel, "on");
    return setup;
  }
  set(setting_id::kModel, "qwen3-0.6b");
  set(setting_id::kStack, "hf");
  set(setting_id::kSequenceLength, "1024");
  set(setting_id::kRecompute, "full");
  set(setting_id::kLogits, "on");
  set(setting_id::kRollout, which == 4 ? "sglang" : "vllm");
  set(setting_id::kLoss, "grpo");
  if (which == 2) return setup;
  set(setting_id::kPrecision, "bf16-mixed");
  set(setting_id::kDataParallel, "8");
  set(setting_id::kZeroStage, "3");
  set(setting_id::kRlTrainer, "verl");
  set(setting_id::kRolloutMemoryUtilization, "0.5");
  set(setting_id::kRolloutTensorParallel, "2");
  set(setting_id::kRolloutSleepMode, "on");
  set(setting_id::kExpandableSegments, "on");
  return setup;
}

// A setup from the fuzzer's bytes: from a base (above), each setting of the table, in its order,
// left as it is or given text the way every edge gives it (mostly within its bounds, sometimes
// any number or any text), and now and then a raw value past its bounds, as a setup built in code
// may hold, for the checks to refuse.
inline TrainingSetup fuzzed_setup(FuzzedDataProvider& data) {
  TrainingSetup setup = base_setup(data.ConsumeIntegralInRange<int>(0, 5));
  const std::vector<Setting>& table = settings();
  for (std::size_t index = 0; index < table.size(); ++index) {
    const Setting& setting = table[index];
    const int how = data.ConsumeIntegralInRange<int>(0, 7);
    if (how < 4) continue;  // as the base has it
    if (how == 7 && setting.kind != SettingKind::kChoice) {
      const double raw = setting.kind == SettingKind::kWhole
                             ? static_cast<double>(data.ConsumeIntegral<int>())
                             : data.ConsumeFloatingPoint<double>();
      static_cast<void>(set_setting_number(setup, index, raw));
      continue;
    }
    std::string text;
    switch (setting.kind) {
      case SettingKind::kChoice:
        text = pick_id(data, setting.choices);
        break;
      case SettingKind::kSwitch:
        text = data.ConsumeBool() ? "on" : "off";
        break;
      case SettingKind::kWhole:
        text =
            how == 6
                ? std::to_string(data.ConsumeIntegral<long long>())
                : std::to_string(data.ConsumeIntegralInRange<int>(
                      static_cast<int>(setting.min), static_cast<int>(std::fmin(setting.max, 64))));
        break;
      case SettingKind::kDecimal:
        text = how == 6 ? data.ConsumeRandomLengthString(16)
                        : shortest_decimal(data.ConsumeFloatingPointInRange<double>(
                              setting.min, std::fmin(setting.max, 1e6)));
        break;
    }
    // A refused text leaves the setup as it was, which the estimate then checks.
    static_cast<void>(apply_setting(setup, setting.id, text));
  }
  // TRAINMEM_FUZZ_SHOW=1 ./build-sanitize/fuzz_estimate FILE: the setup as the CLI's flags, to
  // reproduce a finding with build/trainmem.
  if (std::getenv("TRAINMEM_FUZZ_SHOW") != nullptr) {
    std::string flags;
    for (const Setting& setting : table) {
      const std::string text = setting_text(setup, setting.id);
      if (text != setting.default_text) flags += " --" + setting.id + "=" + text;
    }
    std::fprintf(stderr, "setup:%s\n", flags.c_str());
  }
  return setup;
}

// Every figure finite and non-negative, the terms adding up to the total (or, under a stack,
// allocated within reserved within the total), and a refusal named and worded.
inline void check_estimate(const Estimate& estimate) {
  if (!estimate.answer.ok()) {
    require(!estimate.answer.message.empty(), "a refusal has a message");
    require(find_setting(estimate.answer.setting) != nullptr ||
                estimate.answer.setting == kConfigInputId,
            "a refusal names a setting");
    return;
  }
  const Breakdown& b = estimate.bytes;
  for (double value : {b.model_states(), b.total(), estimate.devices_worth, estimate.num_devices,
                       estimate.parameters_on_device}) {
    require(std::isfinite(value), "every figure is finite");
    require(value >= 0, "every figure is non-negative");
  }
  double idealised = 0;  // every term but a stack's own
  for (const TermRow& row : kTerms) {
    require(std::isfinite(b[row.term]) && b[row.term] >= 0, "every term is finite, non-negative");
    if (row.part != TermPart::kStack) idealised += b[row.term];
  }
  if (estimate.stack_terms.empty()) {
    require(std::fabs(idealised - b.total()) <= 1e-9 * b.total(), "the terms sum to the total");
  } else {
    require(std::isfinite(estimate.peak_reserved_bytes), "the reserved peak is finite");
    require(estimate.peak_allocated_bytes <= estimate.peak_reserved_bytes,
            "allocated within reserved");
    require(estimate.peak_reserved_bytes <= b.total() * (1 + 1e-9), "reserved within the total");
  }
  require(format_bytes(b.total()).find("nan") == std::string::npos, "no nan on screen");
}

// The verdict on an accepted estimate: finite, its band ordered.
// The verdict on `estimate`; a launch config's keys `not_understood` withhold it.
inline void check_verdict(const Estimate& estimate,
                          const std::vector<std::string>& not_understood = {}) {
  if (!estimate.answer.ok()) return;
  const VerdictAnswer verdict = verdict_of(estimate, false, not_understood);
  require(std::isfinite(verdict.likely_low_bytes) && std::isfinite(verdict.likely_high_bytes),
          "the verdict's likely figures are finite");
  require(verdict.likely_low_bytes <= verdict.likely_high_bytes, "its band is ordered");
  require(not_understood.empty() ||
              (verdict.verdict == Verdict::kUncertain && verdict.withheld_for == not_understood),
          "a key not understood withholds the verdict");
}

}  // namespace trainmem::fuzz
