// The other views follow the newer settings: for FP8 training, expert parallelism (ep, etp),
// latent attention and a GPT-2 preset, the timeline's peak is the estimate's total, the
// arithmetic's terms are the breakdown's and add up to it, the fit map's cell at the setup is its
// estimate, and every saving is the difference of two estimates.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/format.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace views_follow_test {

namespace {

struct Case {
  std::string name;
  TrainingSetup setup;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  TrainingSetup setup;
  setup.precision = Precision::kFp8Mixed;
  all.push_back({"fp8-mixed, Llama 3 8B", setup});

  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  all.push_back({"fp8-mixed, llama-block, full recomputation, logits", setup});

  setup = TrainingSetup{};
  setup.precision = Precision::kFp8Mixed;
  setup.device_id = "b200";
  setup.layout.data_parallel = 4;
  setup.layout.zero_stage = 3;
  all.push_back({"fp8-mixed on a B200 under ZeRO-3", setup});

  setup = TrainingSetup{};
  setup.model_id = "qwen3-30b-a3b";
  setup.sequence_length = 4096;
  setup.layout.data_parallel = 2;
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.expert_parallel = 4;
  setup.layout.expert_tensor_parallel = 1;
  setup.logits = true;
  all.push_back({"Qwen3-30B-A3B, ep 4, etp 1, t 2 with sequence parallelism", setup});
  setup.precision = Precision::kFp8Mixed;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.layout.pipeline_parallel = 2;
  setup.layout.zero_stage = 1;
  all.push_back({"Qwen3-30B-A3B, fp8-mixed, llama-block, ep 4, p 2, ZeRO-1", setup});

  setup = TrainingSetup{};
  setup.model_id = "deepseek-v3";
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.layout.data_parallel = 64;
  setup.layout.expert_parallel = 64;
  setup.layout.pipeline_parallel = 61;
  setup.layout.zero_stage = 1;
  all.push_back({"DeepSeek-V3, latent attention, ep 64, p 61", setup});
  setup.precision = Precision::kFp8Mixed;
  setup.recompute = Recompute::kSelective;
  all.push_back({"DeepSeek-V3, fp8-mixed, selective recomputation", setup});

  setup = TrainingSetup{};
  setup.model_id = "gpt2";
  setup.sequence_length = 1024;
  setup.micro_batch_sequences = 8;
  setup.logits = true;
  all.push_back({"GPT-2 124M, 8 sequences of 1,024, logits", setup});
  setup.precision = Precision::kFp8Mixed;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.flash_attention = false;
  all.push_back({"GPT-2 124M, fp8-mixed, llama-block, no FlashAttention", setup});
  return all;
}

// The breakdown's field that an arithmetic term shows.
double term_bytes(const Breakdown& bytes, const std::string& term) {
  const std::map<std::string, double> fields = {
      {"weights", bytes[Term::kWeights]},
      {"gradients", bytes[Term::kGradients]},
      {"masterWeights", bytes[Term::kMasterWeights]},
      {"optimizerStates", bytes[Term::kOptimizerStates]},
      {"activations", bytes[Term::kActivations]},
      {"logits", bytes[Term::kLogits]},
      {"dequantization", bytes[Term::kDequantization]},
      {"fp8Weights", bytes[Term::kFp8Weights]},
  };
  const auto found = fields.find(term);
  REQUIRE_MESSAGE(found != fields.end(), "no breakdown field for the term " << term);
  return found->second;
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

TEST_CASE("the timeline's peak is the estimate's total for fp8-mixed, ep and etp, MLA and GPT-2") {
  for (const Case& each : cases()) {
    CAPTURE(each.name);
    const Estimate estimate = estimate_memory(each.setup);
    REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
    const std::vector<TimelinePoint> points = memory_timeline(each.setup);
    REQUIRE(!points.empty());
    CHECK(points[timeline_peak(points)].bytes == doctest::Approx(estimate.bytes.total()));
    // Held throughout: the model states and, under FP8, the weights' FP8 copies.
    CHECK(points.front().bytes ==
          doctest::Approx(estimate.bytes.model_states() + estimate.bytes[Term::kFp8Weights]));
  }
}

TEST_CASE(
    "the arithmetic's terms are the breakdown's, each ending in its bytes, and they add up to "
    "the total for fp8-mixed, ep and etp, MLA and GPT-2") {
  for (const Case& each : cases()) {
    CAPTURE(each.name);
    const Estimate estimate = estimate_memory(each.setup);
    REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
    double sum = 0;
    std::vector<std::string> shown;
    for (const TermArithmetic& term : explain_estimate(each.setup)) {
      CAPTURE(term.term);
      const double bytes = term_bytes(estimate.bytes, term.term);
      CHECK(ends_with(term.formula, "= " + format_bytes(bytes)));
      CHECK(!term.source.empty());
      sum += bytes;
      shown.push_back(term.term);
    }
    CHECK(sum == doctest::Approx(estimate.bytes.total()));
    // A term the total holds is never left out of the arithmetic.
    const bool fp8 = each.setup.precision == Precision::kFp8Mixed;
    CHECK((std::find(shown.begin(), shown.end(), "fp8Weights") != shown.end()) == fp8);
    CHECK((std::find(shown.begin(), shown.end(), "logits") != shown.end()) == each.setup.logits);
  }
}

TEST_CASE(
    "the fit map's cell at the setup's own sequence length and micro-batch is its estimate for "
    "fp8-mixed, ep and etp, MLA and GPT-2") {
  for (const Case& each : cases()) {
    CAPTURE(each.name);
    const Estimate estimate = estimate_memory(each.setup);
    const FitMap map = fit_map(each.setup);
    REQUIRE(map.answer.ok());
    bool found = false;
    for (const FitCell& cell : map.cells) {
      if (cell.sequence_length != each.setup.sequence_length ||
          cell.micro_batch_sequences != each.setup.micro_batch_sequences) {
        continue;
      }
      found = true;
      REQUIRE(cell.valid);
      CHECK(cell.total_bytes == estimate.bytes.total());
      CHECK(cell.fits == estimate.fits);
    }
    CHECK(found);
  }
}

TEST_CASE(
    "every saving is the difference of two estimates, and keeps the setup's precision, for "
    "fp8-mixed, ep and etp, MLA and GPT-2") {
  for (const Case& each : cases()) {
    CAPTURE(each.name);
    const SavingsList list = rank_savings(each.setup);
    REQUIRE(list.answer.ok());
    CHECK(list.baseline.bytes.total() == estimate_memory(each.setup).bytes.total());
    CHECK(!list.savings.empty());
    for (const Saving& saving : list.savings) {
      CAPTURE(saving.change);
      const Estimate changed = estimate_memory(saving.estimate.setup);
      REQUIRE(changed.answer.ok());
      CHECK(saving.bytes_saved == list.baseline.bytes.total() - changed.bytes.total());
      CHECK(saving.estimate.setup.precision == each.setup.precision);
    }
  }
}

TEST_CASE(
    "the fewest-devices search keeps fp8-mixed, and each layout it offers fits as estimated") {
  TrainingSetup setup;
  setup.precision = Precision::kFp8Mixed;
  const FitSearch search = find_fewest_devices(setup, 3);
  REQUIRE(search.answer.ok());
  REQUIRE(!search.layouts.empty());
  for (const Estimate& layout : search.layouts) {
    CHECK(layout.setup.precision == Precision::kFp8Mixed);
    const Estimate again = estimate_memory(layout.setup);
    CHECK(again.fits);
    CHECK(again.bytes.total() == layout.bytes.total());
  }
  // A precision the device cannot run is refused before the search.
  setup.device_id = "a100-80gb";
  CHECK(find_fewest_devices(setup, 3).answer.setting == "precision");
}

}  // namespace views_follow_test
