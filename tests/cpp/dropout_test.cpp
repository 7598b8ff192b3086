// Dropout as a setting (issue 30's item 4): both activation models follow it, Korthikanti's
// constants without it as section 4.1 derives them, the Llama block's masks with it; the plate's
// figures stay those of each model's own source.
#include <doctest/doctest.h>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace dropout_test {

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

namespace {

// The tiny shape (h 64, a 4, k 2, f 224, 2 layers) as a config.json of `model_type` with `extra`
// keys, read into a setup of `model` at dropout "model".
TrainingSetup tiny_config(const std::string& model_type, const std::string& extra,
                          ActivationModel model = ActivationModel::kKorthikanti) {
  const ConfigParse parse =
      parse_hf_config(R"({"model_type": ")" + model_type +
                      R"(", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 224, "vocab_size": 1000)" +
                      extra + "}");
  REQUIRE_MESSAGE(parse.answer.ok(), parse.answer.message);
  TrainingSetup setup = tiny(model, Dropout::kModel);
  setup.custom_model = parse.shape;
  return setup;
}

}  // namespace

TEST_CASE("dropout: under 'model' a config's own keys decide, each part of the block on its own") {
  const double tokens = 128, h = 64, a = 4, s = 128, layers = 2;
  // Llama's block drops out on the probabilities alone (attention_dropout, 0.0 by default): no
  // masks in either model, whatever the activation model's source assumes.
  TrainingSetup llama = tiny_config("llama", "");
  CHECK(llama.custom_model.dropout_stated);
  CHECK(activations(llama) == layers * tokens * h * 32);
  llama.flash_attention = false;
  CHECK(activations(llama) == doctest::Approx(layers * tokens * h * (32 + 2 * a * s / h)));
  // At attention_dropout 0.1 the scores keep their dropout (5·a·s/h), the residual masks stay out.
  TrainingSetup probabilities = tiny_config("llama", R"(, "attention_dropout": 0.1)");
  probabilities.flash_attention = false;
  CHECK(activations(probabilities) == doctest::Approx(layers * tokens * h * (32 + 5 * a * s / h)));
  // GPT-NeoX's hidden_dropout alone: the residual masks (34), the softmax alone (2·a·s/h).
  TrainingSetup neox = tiny_config("gpt_neox", R"(, "hidden_dropout": 0.1, "vocab_size": 1000)");
  neox.flash_attention = false;
  CHECK(activations(neox) == doctest::Approx(layers * tokens * h * (34 + 2 * a * s / h)));
  // The setting overrides the config either way, and then no note is said.
  neox.dropout = Dropout::kOff;
  CHECK(activations(neox) == doctest::Approx(layers * tokens * h * (32 + 2 * a * s / h)));
  CHECK(estimate_memory(neox).notes.empty());
  llama.dropout = Dropout::kOn;
  CHECK(activations(llama) == doctest::Approx(layers * tokens * h * (34 + 5 * a * s / h)));
}

TEST_CASE("dropout: the Llama block follows a config's residual and probabilities' dropout apart") {
  const double tokens = 128, h = 64, a = 4, s = 128, layers = 2;
  TrainingSetup off = tiny_config("phi3", "", ActivationModel::kLlamaBlock);
  off.flash_attention = false;
  const double without = activations(off);
  // Phi-3's resid_pdrop: a 1-byte mask after the attention and one after the MLP, h each.
  TrainingSetup residual =
      tiny_config("phi3", R"(, "resid_pdrop": 0.1)", ActivationModel::kLlamaBlock);
  residual.flash_attention = false;
  CHECK(activations(residual) - without == layers * tokens * 2 * h);
  // Its attention_dropout: the probabilities' mask (1 byte) and dropped copy (2), a·s each.
  TrainingSetup probabilities =
      tiny_config("phi3", R"(, "attention_dropout": 0.1)", ActivationModel::kLlamaBlock);
  probabilities.flash_attention = false;
  CHECK(activations(probabilities) - without == layers * tokens * 3 * a * s);
  // FlashAttention regenerates its mask: the probabilities' dropout saves nothing there.
  probabilities.flash_attention = true;
  off.flash_attention = true;
  CHECK(activations(probabilities) == activations(off));
}

TEST_CASE("dropout: GPT-2's defaults drop out everywhere, and its note says the embedding's mask") {
  const ConfigParse gpt2 = parse_hf_config(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2,
      "n_head": 4, "n_positions": 128, "vocab_size": 1000})");
  REQUIRE(gpt2.answer.ok());
  CHECK(gpt2.shape.residual_dropout);
  CHECK(gpt2.shape.probability_dropout);
  CHECK(gpt2.shape.dropout_said ==
        "resid_pdrop absent (0.1 by default), attn_pdrop absent (0.1 by default), embd_pdrop "
        "absent (0.1 by default); the embedding's own dropout mask (1 byte per token per hidden "
        "unit, once) is not counted");
  TrainingSetup setup = tiny(ActivationModel::kKorthikanti, Dropout::kModel);
  setup.custom_model = gpt2.shape;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  REQUIRE(estimate.notes.size() == 1);
  CHECK(estimate.notes[0] == "Dropout as the config sets it: " + gpt2.shape.dropout_said + ".");
  // A preset states none: the note is a config's alone.
  CHECK(estimate_memory(TrainingSetup{}).notes.empty());
}

TEST_CASE("dropout: a config's probability of 1 or more, or a dropout not counted, is refused") {
  const auto refused = [](const std::string& text) { return parse_hf_config(text).answer.message; };
  const std::string opt = R"({"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "ffn_dim": 256, "vocab_size": 1000,
      "max_position_embeddings": 128)";
  CHECK(refused(opt + "}").empty());
  CHECK(refused(opt + R"(, "activation_dropout": 0.1})") ==
        "config.json: 'activation_dropout' must be 0 (or absent): trainmem does not count what it "
        "drops; it "
        "is 0.1.");
  CHECK(refused(opt + R"(, "layerdrop": 0.05})").find("config.json: 'layerdrop' must be 0") == 0);
  CHECK(refused(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 224, "vocab_size": 1000, "attention_dropout": 1})") ==
        "config.json: 'attention_dropout' must be a probability from 0 up to 1 (not 1 itself); it "
        "is 1.");
  CHECK(refused(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 224, "vocab_size": 1000, "attention_dropout": "0.1"})")
            .find("config.json: 'attention_dropout' must be a probability") == 0);
}

}  // namespace dropout_test
