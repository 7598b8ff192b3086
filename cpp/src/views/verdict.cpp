// Fits, uncertain or does not fit (verdict.hpp).
#include "trainmem/verdict.hpp"

#include <algorithm>

#include "estimate/rollout.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"
#include "trainmem/measured.hpp"

namespace trainmem {

const char* verdict_words(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFits:
      return "fits";
    case Verdict::kDoesNotFit:
      return "does not fit";
    case Verdict::kUncertain:
      break;
  }
  return "uncertain";
}

namespace {

// Every measured case against the estimate, once: the cases and the core do not change.
const std::vector<MeasuredComparison>& comparisons() {
  static const std::vector<MeasuredComparison> all = compare_measured();
  return all;
}

bool is_device_peak(MeasuredQuantity quantity) {
  return quantity == MeasuredQuantity::kReserved || quantity == MeasuredQuantity::kAllocated ||
         quantity == MeasuredQuantity::kTotal;
}

}  // namespace

ErrorBand error_band(Stack stack, ActivationModel model) {
  ErrorBand band;
  for (const MeasuredComparison& comparison : comparisons()) {
    const MeasuredCase& measured = comparison.measured;
    if (measured.setup.stack != stack || !is_device_peak(measured.quantity) ||
        !comparison.answer.ok()) {
      continue;
    }
    const double error = model == ActivationModel::kKorthikanti
                             ? comparison.korthikanti_error_percent
                             : comparison.llama_block_error_percent;
    band.case_ids.push_back(measured.id);
    band.case_titles.push_back(measured.title);
    band.case_errors_percent.push_back(error);
    const ModelShape* shape = resolve_model(measured.setup);
    if (shape != nullptr && shape->num_experts > 1) ++band.mixture_cases;
    if (shape != nullptr && hybrid_linear_attention(*shape)) ++band.hybrid_cases;
  }
  if (static_cast<int>(band.case_ids.size()) < kMinBandCases) return ErrorBand{};
  const auto [low, high] =
      std::minmax_element(band.case_errors_percent.begin(), band.case_errors_percent.end());
  band.low_percent = *low;
  band.high_percent = *high;
  return band;
}

namespace {

// "a, b and 3 more": the first few keys, for a sentence.
std::string keys_named(const std::vector<std::string>& keys) {
  constexpr std::size_t kNamed = 4;
  std::string text;
  for (std::size_t index = 0; index < keys.size() && index < kNamed; ++index) {
    text += (index == 0 ? "" : index + 1 == keys.size() ? " and " : ", ") + keys[index];
  }
  if (keys.size() > kNamed)
    text += " and " + format_count(static_cast<double>(keys.size() - kNamed)) + " more";
  return text;
}

// What the run is judged against, in words: "the 84.9 GB that PyTorch reports for H100 80 GB"
// under a training stack (Estimate::limit_bytes), "the 80.0 GB of H100 80 GB" where the printed
// capacity stands.
std::string limit_words(const Estimate& estimate) {
  const std::string bytes = format_bytes(estimate.limit_bytes);
  if (!estimate.limit_source.empty()) {
    return "the " + bytes + " that PyTorch reports for " + estimate.device.name;
  }
  if (estimate.setup.stack != Stack::kIdeal && estimate.device.id != kCustomDeviceId) {
    return "the " + bytes + " printed for " + estimate.device.name +
           " (what PyTorch reports for it is not known here, likely a few percent less)";
  }
  return "the " + bytes + " of " + estimate.device.name;
}

}  // namespace

VerdictAnswer verdict_of(const Estimate& estimate, bool headroom_asked,
                         const std::vector<std::string>& not_understood) {
  VerdictAnswer answer;
  // The run fits when its most loaded device does: that one decides, whichever stage is answered.
  // Under RL post-training its step holds the generation and the log-probabilities before the
  // update (hf_rollout_phases): its total is the largest phase's. Under sleep mode the
  // generation, the engine woken beside what the trainer keeps, may be that one.
  const double total = estimate.most_loaded.total_bytes;
  const RolloutFigures sleeping =
      estimate.setup.rollout_sleep_mode ? rollout_figures(estimate) : RolloutFigures{};
  const bool generation_decides =
      sleeping.starts() && sleeping.counted && sleeping.generation_bytes >= total;
  const int p = estimate.setup.layout.pipeline_parallel;
  const std::string judged =
      (generation_decides
           ? std::string("The generation decides, ") + rollout_engine_name(estimate.setup) +
                 " woken beside " +
                 (!verl_trainer(estimate.setup) || estimate.setup.offload == Offload::kNone
                      ? "the trainer's weights and optimiser state. "
                  : estimate.setup.offload == Offload::kOptimizer
                      ? "the trainer's weights, its optimiser state on the host. "
                      : "the trainer's runtime, its weights and optimiser state on the host. ")
           : "") +
      (!answers_another_stage(estimate)
           ? std::string()
           : "The most loaded device decides, on " + stage_words(estimate.most_loaded, p) + ". ");
  if (!not_understood.empty()) {
    // No verdict on a setup the file may not be: the estimate stands, said as the file's figure
    // without what it leaves out.
    answer.withheld_for = not_understood;
    answer.likely_low_bytes = total;
    answer.likely_high_bytes = answer.likely_low_bytes;
    answer.limit_bytes = estimate.limit_bytes;
    answer.reason = "Cannot tell: the launch config sets " + keys_named(not_understood) +
                    (not_understood.size() == 1 ? ", which is" : ", which are") +
                    " not understood and may change the memory, so the estimate of " +
                    format_bytes(answer.likely_low_bytes) + " leaves " +
                    (not_understood.size() == 1 ? "it" : "them") + " out. For a verdict, remove " +
                    (not_understood.size() == 1 ? "it" : "them") + " from the file and set what " +
                    (not_understood.size() == 1 ? "it does" : "they do") + " with the settings.";
    return answer;
  }
  // The host's memory, where it is given (--host-gb): a run whose node cannot hold what its
  // devices keep there (offloading, verl's reference model and SGLang's sleeping weights) fails
  // whatever its devices hold.
  if (!estimate.host_fits) {
    answer.verdict = Verdict::kDoesNotFit;
    answer.likely_low_bytes = total;
    answer.likely_high_bytes = total;
    answer.limit_bytes = estimate.limit_bytes;
    answer.reason = "The node's host does not hold what its " +
                    format_count(estimate.host_devices) +
                    (estimate.host_devices == 1 ? " device keeps" : " devices keep") +
                    " there: " + format_bytes(estimate.host_node_bytes) + ", more than its " +
                    format_bytes(estimate.host_capacity_bytes) + ".";
    return answer;
  }
  const double capacity = estimate.limit_bytes;
  const std::string stack = choice_name(estimate.setup.stack);
  // The megatron stack's published runs are its distributed optimiser's: none measures
  // Megatron-FSDP (ZeRO 2 and 3 there), whose verdict the headroom decides.
  const bool fsdp = megatron_fsdp(estimate.setup);
  // Nor does any measure RL post-training with a rollout engine beside the trainer.
  const bool rollout = estimate.setup.rollout != Rollout::kNone;
  // Nor DPO's step, its loss measured on a CPU alone (scripts/measure/dpo_loss_peak.py).
  const bool dpo = estimate.setup.logits && estimate.setup.loss == Loss::kDpo;
  if (!headroom_asked && !fsdp && !rollout && !dpo)
    answer.band = error_band(estimate.setup.stack, estimate.setup.activation_model);
  // A mixture of experts, or a hybrid of linear and full attention, is not judged by other
  // models' runs alone: where fewer than kMinBandCases of the stack's runs are of its kind, the
  // headroom decides (the torchtitan stack's runs are all dense Llamas; no stack's are hybrids).
  // A hybrid mixture needs runs of both kinds.
  const ModelShape* shape = resolve_model(estimate.setup);
  const bool hybrid_unmeasured = shape != nullptr && hybrid_linear_attention(*shape) &&
                                 answer.band.hybrid_cases < kMinBandCases;
  const bool mixture_unmeasured =
      shape != nullptr && shape->num_experts > 1 && answer.band.mixture_cases < kMinBandCases;
  const int kind_runs = hybrid_unmeasured ? answer.band.hybrid_cases : answer.band.mixture_cases;
  const bool unmeasured_kind =
      (hybrid_unmeasured || mixture_unmeasured) && !answer.band.case_ids.empty();
  const std::string kind =
      hybrid_unmeasured ? "a hybrid of linear and full attention" : "a mixture of experts";
  if (unmeasured_kind) answer.band = ErrorBand{};
  answer.from_band = !answer.band.case_ids.empty();
  if (!answer.from_band) {
    // The headroom decides: the estimate against the device's usable share.
    answer.likely_low_bytes = total;
    answer.likely_high_bytes = total;
    answer.limit_bytes = estimate.usable_bytes;
    answer.verdict = total <= answer.limit_bytes ? Verdict::kFits : Verdict::kDoesNotFit;
    // vLLM that cannot start fails the run before its first step, whatever the step would hold.
    if (rollout) {
      const RolloutFigures engine = rollout_figures(estimate);
      if (!engine.starts()) {
        answer.verdict = Verdict::kDoesNotFit;
        answer.reason = judged + rollout_start_failure(engine, estimate.setup);
        return answer;
      }
    }
    // The plate's step keeps its headroom of the device as printed: "10% of H100 80 GB".
    const bool printed = estimate.setup.stack == Stack::kIdeal;
    const std::string kept = format_count(estimate.setup.headroom_percent) + "% of " +
                             (printed ? estimate.device.name : limit_words(estimate)) +
                             " kept free";
    const std::string stands_in = ", so the headroom stands in for the estimate's error: ";
    answer.reason =
        judged +
        (headroom_asked ? "The headroom asked for decides: "
         : fsdp || rollout || dpo
             ? std::string("No published run measures ") +
                   (fsdp      ? "Megatron-FSDP"
                    : rollout ? "RL post-training with a colocated rollout engine"
                              : "DPO's step (TRL's DPOTrainer)") +
                   " yet" + stands_in
         : unmeasured_kind
             ? (kind_runs == 0
                    ? "No published run of the " + stack + " stack measures " + kind + " yet"
                    : "Fewer than " + format_count(kMinBandCases) + " published runs of the " +
                          stack + " stack measure " + kind) +
                   stands_in
             : "Fewer than " + format_count(kMinBandCases) + " published runs measure the " +
                   stack + " stack, so the headroom stands in for their spread: ") +
        format_bytes(total) + (answer.verdict == Verdict::kFits ? " within " : " over ") +
        format_bytes(answer.limit_bytes) + " (" + kept + ").";
    return answer;
  }
  // A run measured e% below its estimate is estimate / (1 + e/100): the highest error gives the
  // lowest likely figure.
  answer.likely_low_bytes = total / (1 + answer.band.high_percent / 100);
  answer.likely_high_bytes = total / (1 + answer.band.low_percent / 100);
  answer.limit_bytes = capacity;
  answer.verdict = answer.likely_high_bytes <= capacity ? Verdict::kFits
                   : answer.likely_low_bytes > capacity ? Verdict::kDoesNotFit
                                                        : Verdict::kUncertain;
  const std::string band = "the estimate's error against the " +
                           format_count(static_cast<double>(answer.band.case_ids.size())) +
                           " published runs of the " + stack + " stack, " +
                           format_error_percent(answer.band.low_percent) + " to " +
                           format_error_percent(answer.band.high_percent);
  const std::string likely = "likely " + format_bytes(answer.likely_low_bytes) + " to " +
                             format_bytes(answer.likely_high_bytes) + " against " +
                             limit_words(estimate);
  switch (answer.verdict) {
    case Verdict::kFits:
      answer.reason = judged + "Even at the low end of " + band + ", it fits: " + likely + ".";
      break;
    case Verdict::kDoesNotFit:
      answer.reason =
          judged + "Even at the high end of " + band + ", it does not fit: " + likely + ".";
      break;
    case Verdict::kUncertain:
      answer.reason = judged + "Within " + band + ", it may or may not fit: " + likely + ".";
      break;
  }
  return answer;
}

}  // namespace trainmem
