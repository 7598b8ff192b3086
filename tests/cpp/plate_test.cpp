// The plate's view alone (plate_estimate, plate_workshop_view: what the first view's module,
// trainmem.wasm, answers with) gives exactly what the full estimate gives, over every preset, the
// plate's tokens and sequences, with and without FlashAttention; and it refuses, by name, any
// setting beyond the plate's.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace plate_test {

namespace {

constexpr int kPlateMicroBatches = 16;  // the page's slider: 1 to 16 sequences (web/src/store.js)

// The view in words and figures: the estimate as the CLI's JSON writes it, the right chart's
// curve and what the logits would add.
std::string written(const WorkshopView& view) {
  std::string text = estimate_to_json(view.estimate) + "\n";
  for (const ActivationPoint& point : view.activation_curve) {
    text += std::to_string(point.tokens) + " " + std::to_string(point.flash_attention_bytes) + " " +
            std::to_string(point.without_flash_attention_bytes) + " " +
            std::to_string(point.room_bytes) + "\n";
  }
  return text + std::to_string(view.logits_left_out_bytes) + " " +
         choice_id(view.logits_left_out_loss) + " " + view.estimate.answer.message;
}

}  // namespace

TEST_CASE("plate: the plate's view gives the full estimate's figures for every preset") {
  int compared = 0;
  for (const ModelShape& shape : preset_models()) {
    for (const char* sequence : {"8192", "2048", "1024"}) {
      for (const char* sequences : {"1", "3", "16"}) {
        for (const char* flash : {"on", "off"}) {
          TrainingSetup setup;
          REQUIRE(apply_setting(setup, setting_id::kModel, shape.id).ok());
          REQUIRE(apply_setting(setup, setting_id::kSequenceLength, sequence).ok());
          REQUIRE(apply_setting(setup, setting_id::kMicroBatch, sequences).ok());
          REQUIRE(apply_setting(setup, setting_id::kFlashAttention, flash).ok());
          CAPTURE(shape.id);
          CAPTURE(sequence);
          CAPTURE(sequences);
          CAPTURE(flash);
          CHECK(written(plate_workshop_view(setup, kPlateMicroBatches)) ==
                written(workshop_view(setup, kPlateMicroBatches)));
          ++compared;
        }
      }
    }
  }
  CHECK(compared == static_cast<int>(preset_models().size()) * 18);
}

TEST_CASE("plate: with the logits counted, each loss as the full estimate counts it") {
  for (const char* model : {"llama3-8b", "llama3-405b", "deepseek-v3", "mixtral-8x7b", "gpt2"}) {
    for (const Choice& loss : choices<Loss>()) {
      TrainingSetup setup;
      REQUIRE(apply_setting(setup, setting_id::kModel, model).ok());
      REQUIRE(apply_setting(setup, setting_id::kLogits, "on").ok());
      REQUIRE(apply_setting(setup, setting_id::kLoss, loss.id).ok());
      CAPTURE(model);
      CAPTURE(loss.id);
      CHECK(written(plate_workshop_view(setup, kPlateMicroBatches)) ==
            written(workshop_view(setup, kPlateMicroBatches)));
    }
  }
}

TEST_CASE("plate: a refusal is the full estimate's, word for word") {
  // GPT-2's 1,024 learned positions; torchtitan's 8 loss chunks over 50 tokens (the plate's
  // settings alone, each refused by a check of the full estimate's); DeepSeek-V3.2 without
  // FlashAttention.
  const std::vector<std::vector<std::pair<const char*, const char*>>> setups = {
      {{"model", "gpt2"}},
      {{"seq-len", "50"}, {"logits", "on"}, {"loss", "chunked-wrapper"}},
      {{"model", "deepseek-v3.2"}, {"flash-attention", "off"}},
  };
  for (const auto& changes : setups) {
    TrainingSetup setup;
    for (const auto& [id, text] : changes) REQUIRE(apply_setting(setup, id, text).ok());
    const Estimate plate = plate_estimate(setup);
    const Estimate full = estimate_memory(setup);
    CAPTURE(changes.front().second);
    REQUIRE_FALSE(full.answer.ok());
    CHECK(plate.answer.setting == full.answer.setting);
    CHECK(plate.answer.message == full.answer.message);
  }
}

TEST_CASE("plate: a setting beyond the plate's view is refused by name, never estimated") {
  for (const std::pair<const char*, const char*>& change :
       {std::pair<const char*, const char*>{"dp", "2"},
        {"stack", "megatron"},
        {"recompute", "full"},
        {"device", "b200"},
        {"lora-rank", "8"}}) {
    const char* id = change.first;
    const char* text = change.second;
    TrainingSetup setup;
    REQUIRE(apply_setting(setup, id, text).ok());
    const Estimate plate = plate_estimate(setup);
    CAPTURE(id);
    CHECK_FALSE(plate.answer.ok());
    CHECK(plate.answer.setting == id);
    CHECK(plate.answer.message.find("beyond the plate's view") != std::string::npos);
  }
}

TEST_CASE("plate: a config.json's model is the full module's, refused by the plate's view") {
  // The full module reads and checks a custom shape; the first view's module carries no checks
  // of its own for one, so it answers none.
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = *find_preset("llama3-8b");
  setup.custom_model.id = kCustomModelId;
  REQUIRE(estimate_memory(setup).answer.ok());
  const Estimate plate = plate_estimate(setup);
  CHECK_FALSE(plate.answer.ok());
  CHECK(plate.answer.setting == "model");
  CHECK(plate.answer.message ==
        "A config.json's model is beyond the plate's view, which the full estimator answers.");
}

}  // namespace plate_test
