// A setup's own model shape (model_id "custom"): estimated, explained, searched and checked
// exactly as a preset is, through the one function that resolves a setup's model.
#include <doctest/doctest.h>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fit.hpp"

using namespace trainmem;

namespace custom_model_test {

namespace {

TrainingSetup custom_copy_of(const std::string& preset_id) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = *find_preset(preset_id);
  setup.custom_model.id = kCustomModelId;
  setup.custom_model.name = "My model";
  return setup;
}

void check_same_figures(const Estimate& left, const Estimate& right) {
  REQUIRE(left.answer.status == Status::kOk);
  REQUIRE(right.answer.status == Status::kOk);
  CHECK(left.num_parameters == right.num_parameters);
  CHECK(left.parameters_on_device == right.parameters_on_device);
  CHECK(left.bytes[Term::kWeights] == right.bytes[Term::kWeights]);
  CHECK(left.bytes[Term::kOptimizerStates] == right.bytes[Term::kOptimizerStates]);
  CHECK(left.bytes[Term::kActivations] == right.bytes[Term::kActivations]);
  CHECK(left.bytes[Term::kLogits] == right.bytes[Term::kLogits]);
  CHECK(left.bytes.total() == right.bytes.total());
}

}  // namespace

TEST_CASE("the custom model id is 'custom', and a setup resolves its model by id") {
  CHECK(std::string(kCustomModelId) == "custom");
  TrainingSetup setup;
  CHECK(resolve_model(setup) == find_preset("llama3-8b"));
  setup.model_id = "gemma2-9b";
  CHECK(resolve_model(setup) == find_preset("gemma2-9b"));
  setup.model_id = kCustomModelId;
  CHECK(resolve_model(setup) == &setup.custom_model);
  setup.model_id = "nope";
  CHECK(resolve_model(setup) == nullptr);
}

TEST_CASE("a custom copy of a preset gives that preset's figures, under its own name") {
  for (const char* preset : {"llama3-8b", "mixtral-8x7b", "gemma2-9b", "qwen2.5-7b"}) {
    CAPTURE(preset);
    TrainingSetup setup = custom_copy_of(preset);
    setup.layout.tensor_parallel = 2;
    setup.layout.sequence_parallel = true;
    setup.layout.pipeline_parallel = 2;
    setup.layout.data_parallel = 4;
    setup.layout.zero_stage = 1;
    setup.logits = true;
    setup.optimizer = Optimizer::kAdafactor;
    TrainingSetup preset_setup = setup;
    preset_setup.model_id = preset;
    const Estimate custom = estimate_memory(setup);
    check_same_figures(custom, estimate_memory(preset_setup));
    CHECK(custom.model_name == "My model");
    CHECK(custom.setup.model_id == "custom");
  }
}

TEST_CASE("a preset's setup ignores its custom_model") {
  TrainingSetup setup;
  setup.custom_model = *find_preset("llama3-405b");
  check_same_figures(estimate_memory(setup), estimate_memory(TrainingSetup{}));
}

TEST_CASE("an unusable custom shape is refused as field 'config', naming the shape's field") {
  TrainingSetup setup = custom_copy_of("llama3-8b");
  setup.custom_model.num_key_value_heads = 5;
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == "config");
  CHECK(estimate.answer.message ==
        "The custom model's shape is not usable: num_key_value_heads (5) must divide "
        "num_attention_heads (32).");
  CHECK(estimate.bytes.total() == 0);

  TrainingSetup empty;
  empty.model_id = kCustomModelId;
  CHECK(estimate_memory(empty).answer.message ==
        "The custom model's shape is not usable: num_hidden_layers must be a whole number from 1 "
        "to 1,000; it is 0.");
  CHECK(workshop_view(empty, 16).estimate.answer.setting == "config");
  CHECK(workshop_view(empty, 16).activation_curve.empty());
  CHECK(explain_estimate(empty).empty());
  const FitSearch search = find_fewest_devices(empty, 5);
  CHECK(search.answer.status == Status::kInvalidInput);
  CHECK(search.answer.setting == "config");
}

TEST_CASE("a custom model's layout is checked against its own shape") {
  TrainingSetup setup = custom_copy_of("llama3-8b");
  setup.custom_model.num_layers = 30;
  setup.layout.pipeline_parallel = 4;
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.setting == "pp");
  CHECK(estimate.answer.message ==
        "Pipeline parallelism 4 must divide the 30 layers of My model, or set the first and last "
        "pipeline stages' layers so that the stages between split the rest evenly.");
}

TEST_CASE("a parsed config.json feeds the workshop view, the arithmetic and the device search") {
  const ConfigParse parse = parse_hf_config(R"({"_name_or_path": "tiny", "hidden_size": 2048,
      "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
      "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": true,
      "head_dim": 64})");
  REQUIRE(parse.answer.status == Status::kOk);
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = parse.shape;

  const WorkshopView view = workshop_view(setup, 4);
  REQUIRE(view.estimate.answer.status == Status::kOk);
  CHECK(view.estimate.model_name == "tiny");
  CHECK(view.estimate.num_parameters == 1235814400.0);  // Llama 3.2 1B's shape
  REQUIRE(view.activation_curve.size() == 4);
  // No attention_dropout: LlamaConfig's 0.0, and no residual dropout: Korthikanti's 32, not 34.
  CHECK(view.activation_curve[0].flash_attention_bytes == 16 * 32 * 8192.0 * 2048);

  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  REQUIRE(terms.size() == 5);
  CHECK(terms[0].formula == "2 B × 1,235,814,400 parameters = 2.5 GB");

  const FitSearch search = find_fewest_devices(setup, 3);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 1);  // 19.8 GB of states and 9.1 GB of activations
  REQUIRE_FALSE(search.layouts.empty());
  CHECK(search.layouts.front().setup.model_id == "custom");
  CHECK(search.layouts.front().model_name == "tiny");
  CHECK(search.why_not_fewer == "One device is the fewest there can be.");
}

}  // namespace custom_model_test
