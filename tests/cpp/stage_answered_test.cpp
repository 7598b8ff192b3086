// The pipeline stage answered (--stage): any stage's device, counted from the first or the last,
// with the fit and the verdict judged on the most loaded whichever is answered; every stage's
// figures in the CLI's JSON.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/verdict.hpp"

using namespace trainmem;

namespace stage_answered_test {

namespace {

constexpr double kSbh = 8192.0 * 4096;       // s·b·h for one 8,192-token sequence of the 8B
constexpr double kKorthikantiPerLayer = 34;  // 34·s·b·h bytes a layer, FlashAttention on

// Llama 3 8B over p 4, 8 layers a stage, answering `stage`.
TrainingSetup pipeline_of_8b(int stage) {
  TrainingSetup setup;
  setup.layout.pipeline_parallel = 4;
  setup.pipeline_stage = stage;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

double layer_8b() {
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  return counts.attention_and_mlp_per_layer + counts.norms_per_layer;
}

}  // namespace

TEST_CASE("stage answered: each stage holds p - i micro-batches of its 8 layers") {
  // 1F1B: stage i (from 0) holds p - i micro-batches in flight; the first also the embedding, the
  // last the output layer and the final norm.
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  for (int index = 0; index < 4; ++index) {
    CAPTURE(index);
    const Estimate estimate = ok(pipeline_of_8b(index + 1));
    CHECK(estimate.stage.index == index);
    CHECK(estimate.bytes[Term::kActivations] == (4 - index) * 8 * kKorthikantiPerLayer * kSbh);
    const double roots = index == 0   ? counts.embedding
                         : index == 3 ? counts.embedding + counts.final_norm
                                      : 0;
    CHECK(estimate.parameters_on_device == 8 * layer_8b() + roots);
    CHECK(estimate.stage.role == (index == 0   ? PipelineStage::kFirst
                                  : index == 3 ? PipelineStage::kLast
                                               : PipelineStage::kMiddle));
  }
  // Counted from the last: -1 is the last, -4 the first.
  CHECK(ok(pipeline_of_8b(-1)).stage.index == 3);
  CHECK(ok(pipeline_of_8b(-4)).stage.index == 0);
  CHECK(ok(pipeline_of_8b(-1)).bytes.total() == ok(pipeline_of_8b(4)).bytes.total());
}

TEST_CASE("stage answered: the fit and the verdict are the most loaded stage's") {
  const Estimate most = ok(pipeline_of_8b(0));
  const Estimate last = ok(pipeline_of_8b(-1));
  CHECK(most.stage.index == 0);
  CHECK(last.most_loaded.index == 0);
  CHECK(last.most_loaded.total_bytes == most.bytes.total());
  CHECK(last.bytes.total() < most.bytes.total());
  CHECK(last.devices_worth == most.devices_worth);
  CHECK(last.fits == most.fits);
  CHECK(answers_another_stage(last));
  CHECK_FALSE(answers_another_stage(most));
  // The verdict weighs the most loaded device and says so; the note says whose figures they are.
  const VerdictAnswer verdict = verdict_of(last, true);
  CHECK(verdict.likely_high_bytes == most.bytes.total());
  CHECK(verdict.verdict == verdict_of(most, true).verdict);
  CHECK(verdict.reason.find("The most loaded device decides, on the first pipeline stage (1 of "
                            "4). The headroom asked for decides: ") == 0);
  CHECK(std::find(last.notes.begin(), last.notes.end(),
                  "These figures are of the last pipeline stage (4 of 4), as asked; the most "
                  "loaded device, on the first pipeline stage (1 of 4), holds " +
                      format_bytes(most.bytes.total()) + ", and decides whether the run fits.") !=
        last.notes.end());
  CHECK(most.notes.empty());
}

TEST_CASE("stage answered: every stage's figures, the most loaded among them") {
  TrainingSetup setup = pipeline_of_8b(0);
  setup.stack = Stack::kMegatron;
  setup.logits = true;
  setup.loss = Loss::kVocabParallel;
  const std::vector<StageFigures> stages = every_stage(setup);
  REQUIRE(stages.size() == 4);
  const Estimate most = ok(setup);
  const auto heaviest =
      std::max_element(stages.begin(), stages.end(), [](const auto& left, const auto& right) {
        return left.peak_reserved_bytes < right.peak_reserved_bytes;
      });
  CHECK(heaviest->index == most.most_loaded.index);
  for (int index = 0; index < 4; ++index) {
    CAPTURE(index);
    TrainingSetup at = setup;
    at.pipeline_stage = index + 1;
    const Estimate estimate = ok(at);
    CHECK(stages[index].index == index);
    CHECK(stages[index].peak_allocated_bytes == estimate.peak_allocated_bytes);
    CHECK(stages[index].peak_reserved_bytes == estimate.peak_reserved_bytes);
    CHECK(stages[index].total_bytes == estimate.bytes.total());
  }
  // Without a pipeline, one stage: the only device.
  const std::vector<StageFigures> one = every_stage(TrainingSetup{});
  REQUIRE(one.size() == 1);
  CHECK(one[0].role == PipelineStage::kOnly);
  CHECK(stage_words(one[0], 1) == "the only device");
  CHECK(stage_words(stages[1], 4) == "pipeline stage 2 of 4");
  CHECK(every_stage(pipeline_of_8b(5)).empty());
}

TEST_CASE("stage answered: a stage beyond the pipeline is refused, naming the setting") {
  const Estimate beyond = estimate_memory(pipeline_of_8b(-5));
  CHECK(beyond.answer.setting == setting_id::kStage);
  CHECK(beyond.answer.message ==
        "Pipeline stage -5 is beyond p 4's stages: choose 1 to 4 from the first, -1 to -4 from "
        "the last, or 0 for the most loaded.");
  TrainingSetup one;
  one.pipeline_stage = 2;
  CHECK(estimate_memory(one).answer.message ==
        "Pipeline stage 2 needs a pipeline: with p 1 there is one stage, 0, 1 or -1.");
  one.pipeline_stage = -1;
  CHECK(estimate_memory(one).answer.ok());
}

TEST_CASE("stage answered: the CLI answers the stage asked for, every stage in its JSON") {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli({"--pp", "4", "--stage", "-1", "--json"}, out, err);
  // Answered, and judged on the first stage: its 72.8 GB is over the 72.0 GB usable (exit 3).
  REQUIRE_MESSAGE(status == 3, err.str());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  CHECK(json["stage"]["index"] == 3);
  CHECK(json["stage"]["role"] == "last");
  CHECK(json["mostLoaded"]["index"] == 0);
  CHECK(json["mostLoadedStage"] == "first");
  REQUIRE(json["stages"].size() == 4);
  CHECK(json["stages"][3]["totalBytes"] == json["bytes"]["total"]);
  CHECK(json["stages"][0]["totalBytes"] == json["mostLoaded"]["totalBytes"]);
  std::ostringstream text;
  CHECK(run_cli({"--pp", "4", "--stage", "2"}, text, err) == 3);
  CHECK(text.str().find("Stage answered: pipeline stage 2 of 4, ") != std::string::npos);
  CHECK(text.str().find("Total on this stage's device") != std::string::npos);
}

}  // namespace stage_answered_test
