#include "trainmem/settings.hpp"

#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "cli.hpp"
#include "trainmem/estimate.hpp"

using namespace trainmem;

namespace settings_test {

TEST_CASE("settings: each id is unique, and each names what it is and where the API holds it") {
  std::set<std::string> ids;
  for (const Setting& setting : settings()) {
    CAPTURE(setting.id);
    CHECK(ids.insert(setting.id).second);
    CHECK_FALSE(setting.name.empty());
    CHECK_FALSE(setting.help.empty());
    CHECK(find_setting(setting.id) == &setting);
    if (setting.kind == SettingKind::kChoice) CHECK_FALSE(setting.choices.empty());
    if (setting.kind == SettingKind::kWhole || setting.kind == SettingKind::kDecimal) {
      CHECK(setting.min <= setting.max);
    }
  }
  CHECK(find_setting("colour") == nullptr);
  // The model comes first: a setup's checks refuse an unknown one before reading its shape.
  CHECK(settings().front().id == "model");
}

TEST_CASE("settings: each default is TrainingSetup{}'s value and reads back as itself") {
  const TrainingSetup defaults;
  for (const Setting& setting : settings()) {
    CAPTURE(setting.id);
    CHECK(setting_text(defaults, setting.id) == setting.default_text);
    TrainingSetup setup;
    CHECK(apply_setting(setup, setting.id, setting.default_text).ok());
    CHECK(setting_text(setup, setting.id) == setting.default_text);
  }
  CHECK(find_setting("seq-len")->default_text == "8192");
  CHECK(find_setting("flash-attention")->default_text == "on");
  CHECK(find_setting("recompute")->default_text == "none");
  CHECK(find_setting("device-gb")->default_text == "80");
}

TEST_CASE("settings: text is read by kind, and what is refused leaves the setup as it was") {
  TrainingSetup setup;
  CHECK(apply_setting(setup, "tp", "8").ok());
  CHECK(setup.layout.tensor_parallel == 8);
  CHECK(apply_setting(setup, "recompute", "selective").ok());
  CHECK(setup.recompute == Recompute::kSelective);
  CHECK(apply_setting(setup, "flash-attention", "off").ok());
  CHECK_FALSE(setup.flash_attention);
  CHECK(apply_setting(setup, "device-gb", "2.5").ok());
  CHECK(setting_text(setup, "device-gb") == "2.5");
  CHECK(apply_setting(setup, "seq-len", "4096").ok());
  CHECK(apply_setting(setup, "tokens", "16384").ok());
  CHECK(setup.micro_batch_sequences == 4);
  CHECK(setting_text(setup, "tokens") == "16384");

  const TrainingSetup before = setup;
  const auto refused = [&setup, &before](const char* id, const char* text, const char* message) {
    CAPTURE(id);
    CAPTURE(text);
    const Answer answer = apply_setting(setup, id, text);
    CHECK(answer.status == Status::kInvalidInput);
    CHECK(answer.setting == id);
    CHECK(answer.message == message);
    CHECK(setting_text(setup, id) == setting_text(before, id));
  };
  refused("tp", "0", "Tensor parallelism must be a whole number from 1 to 65,536.");
  refused("tp", "2.5", "Tensor parallelism must be a whole number from 1 to 65,536.");
  refused("zero", "4", "ZeRO stage must be 0, 1, 2 or 3.");
  refused("device-gb", "0",
          "A custom device's memory must be more than 0 GB and at most 100,000 GB.");
  refused("flash-attention", "maybe", "use on or off.");
  refused("device", "tpu",
          "Device 'tpu' is not known; choose one of h100, h100-96gb, h200, h20, b200, gb200, b300, "
          "a100-40gb, a100-80gb, mi300x, mi325x, l40s, l4, a10g, rtx-4090, rtx-5090, custom.");
  refused("tokens", "1000",
          "Tokens per micro-batch must be a whole multiple of 4,096 (one sequence), from 4,096 "
          "to 268,435,456.");
  // The page's workshop reads tokens over its slider's 16 sequences.
  const Answer page = apply_setting(setup, "tokens", "1000", 16);
  CHECK(page.message ==
        "Tokens per micro-batch must be a whole multiple of 4,096 (one sequence), from 4,096 to "
        "65,536.");
  CHECK(apply_setting(setup, "colour", "blue").setting == "colour");
}

TEST_CASE("settings: typed text never selects the custom model, which only a config.json gives") {
  TrainingSetup setup;
  CHECK_FALSE(apply_setting(setup, "model", kCustomModelId).ok());
  CHECK(check_choice("model", kCustomModelId).ok());
  CHECK(check_choice("model", "llama3-70b").ok());
  CHECK(check_choice("model", "llama3-7b").setting == "model");
  CHECK(
      check_choice("recompute", "sometimes").message ==
      "Recomputation 'sometimes' is not known; choose one of none, selective, full, selective-op.");
}

TEST_CASE("settings: a setup built in code is checked against the same bounds") {
  TrainingSetup setup;
  CHECK(check_setting_values(setup).ok());
  setup.layout.context_parallel = 0;
  CHECK(check_setting_values(setup).setting == "cp");
  setup = TrainingSetup{};
  setup.custom_capacity_gb = -1;
  CHECK(check_setting_values(setup).setting == "device-gb");
  CHECK(estimate_memory(setup).answer.setting == "device-gb");
}

TEST_CASE("settings: requirements and exclusions name settings that exist") {
  for (const Setting& setting : settings()) {
    CAPTURE(setting.id);
    if (!setting.requires_setting.empty()) {
      const Setting* required = find_setting(setting.requires_setting);
      REQUIRE(required != nullptr);
      REQUIRE_FALSE(setting.requires_values.empty());
      for (const std::string& value : setting.requires_values) {
        TrainingSetup setup;
        CHECK(apply_setting(setup, required->id, value).ok());
      }
      CHECK_FALSE(setting.requires_reason.empty());
    }
    if (!setting.excludes.empty()) CHECK(find_setting(setting.excludes) != nullptr);
  }
}

TEST_CASE("settings: the CLI offers every setting as a flag, with its help") {
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE(run_cli({"--help"}, out, err) == kExitOk);
  for (const Setting& setting : settings()) {
    CAPTURE(setting.id);
    const std::string flag = setting.kind == SettingKind::kSwitch && setting.default_text == "on"
                                 ? "--no-" + setting.id
                                 : "--" + setting.id;
    CHECK(out.str().find(flag) != std::string::npos);
    CHECK(out.str().find(setting.help) != std::string::npos);
  }
}

}  // namespace settings_test
