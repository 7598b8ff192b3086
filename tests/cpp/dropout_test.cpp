// Dropout as a setting (issue 30's item 4): both activation models follow it, Korthikanti's
// constants without it as section 4.1 derives them, the Llama block's masks with it; the plate's
// figures stay those of each model's own source.
#include <doctest/doctest.h>

#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace {

// The harness's tiny shape on one device: h 64, a 4, k 2, d 16, f 224, 128 tokens.
TrainingSetup tiny(ActivationModel model, Dropout dropout) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.activation_model = model;
  setup.dropout = dropout;
  return setup;
}

double activations(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  return estimate.bytes[Term::kActivations];
}

}  // namespace

TEST_CASE(
    "dropout: Korthikanti's 34 counts its masks, and without dropout it is 32, the scores' 5 two") {
  const double tokens = 128, h = 64, a = 4, s = 128, layers = 2;
  for (const Dropout with : {Dropout::kModel, Dropout::kOn}) {
    CHECK(activations(tiny(ActivationModel::kKorthikanti, with)) == layers * tokens * h * 34);
  }
  TrainingSetup off = tiny(ActivationModel::kKorthikanti, Dropout::kOff);
  CHECK(activations(off) == layers * tokens * h * 32);
  off.flash_attention = false;
  CHECK(activations(off) == doctest::Approx(layers * tokens * h * (32 + 2 * a * s / h)));
  TrainingSetup with = tiny(ActivationModel::kKorthikanti, Dropout::kModel);
  with.flash_attention = false;
  CHECK(activations(with) == doctest::Approx(layers * tokens * h * (34 + 5 * a * s / h)));
  // Under tensor parallelism without sequence parallelism, 10 + 24/t becomes 8 + 24/t.
  off.flash_attention = true;
  off.custom_model.num_key_value_heads = 4;
  off.layout.tensor_parallel = 2;
  off.custom_model.ffn_hidden_size = 256;
  CHECK(activations(off) == layers * tokens * h * (8 + 24.0 / 2));
}

TEST_CASE("dropout: the Llama block saves two 1-byte masks a token, and the probabilities' too") {
  const double tokens = 128, h = 64, a = 4, s = 128, layers = 2;
  const double without = activations(tiny(ActivationModel::kLlamaBlock, Dropout::kModel));
  CHECK(activations(tiny(ActivationModel::kLlamaBlock, Dropout::kOff)) == without);
  CHECK(activations(tiny(ActivationModel::kLlamaBlock, Dropout::kOn)) - without ==
        layers * tokens * 2 * h);
  // Without FlashAttention the probabilities' mask (1 byte) and dropped copy (2) come too.
  TrainingSetup eager = tiny(ActivationModel::kLlamaBlock, Dropout::kOff);
  eager.flash_attention = false;
  const double eager_without = activations(eager);
  eager.dropout = Dropout::kOn;
  CHECK(activations(eager) - eager_without == layers * tokens * (2 * h + 3 * a * s));
}

TEST_CASE("dropout: a probability reads as off at 0 and on above, and 1 or more is refused") {
  TrainingSetup setup;
  CHECK(apply_setting(setup, setting_id::kDropout, "0").ok());
  CHECK(setup.dropout == Dropout::kOff);
  CHECK(apply_setting(setup, setting_id::kDropout, "0.1").ok());
  CHECK(setup.dropout == Dropout::kOn);
  CHECK(apply_setting(setup, setting_id::kDropout, "model").ok());
  CHECK(setup.dropout == Dropout::kModel);
  const Answer refused = apply_setting(setup, setting_id::kDropout, "1");
  CHECK(refused.setting == setting_id::kDropout);
  CHECK(refused.message == "Dropout must be model, off, on, or a probability from 0 to below 1.");
  CHECK(setup.dropout == Dropout::kModel);
  CHECK(!apply_setting(setup, setting_id::kDropout, "sometimes").ok());
}
