// The presets by their hub repositories: base and post-trained, as their publishers name them,
// and mirrors by name.
#include "trainmem/hub.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "cli.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

TEST_CASE("hub: every preset whose shape is a hub config.json is found by that repository") {
  constexpr const char* kSuffix = " config.json";
  int listed = 0;
  for (const ModelShape& preset : preset_models()) {
    const std::size_t at = preset.source.find(kSuffix);
    if (at == std::string::npos) continue;  // Llama 3's from its paper: below
    const std::string repository = preset.source.substr(0, at);
    const HubMatch match = preset_for_hub_id(repository);
    REQUIRE_MESSAGE(match.preset != nullptr, repository);
    CHECK_MESSAGE(match.preset->id == preset.id, repository);
    CHECK_FALSE(match.by_name);
    ++listed;
  }
  CHECK(listed == static_cast<int>(preset_models().size()) - 3);
}

TEST_CASE("hub: Llama 3's own repositories, base and instruct, and their mirrors by name") {
  CHECK(preset_for_hub_id("meta-llama/Meta-Llama-3-8B").preset->id == "llama3-8b");
  CHECK(preset_for_hub_id("meta-llama/Meta-Llama-3-8B-Instruct").preset->id == "llama3-8b");
  CHECK(preset_for_hub_id("meta-llama/meta-llama-3-70b").preset->id == "llama3-70b");
  CHECK(preset_for_hub_id("meta-llama/Llama-3.1-405B").preset->id == "llama3-405b");
  CHECK(preset_for_hub_id("meta-llama/Meta-Llama-3.1-8B-Instruct").preset->id == "llama3.1-8b");
  const HubMatch mirror = preset_for_hub_id("NousResearch/Meta-Llama-3-8B");
  REQUIRE(mirror.preset != nullptr);
  CHECK(mirror.preset->id == "llama3-8b");
  CHECK(mirror.by_name);
  CHECK(mirror.repository == "meta-llama/Meta-Llama-3-8B");
  CHECK(preset_for_hub_id("gpt2").preset->id == "gpt2");
  // Qwen3.6 keeps Qwen3.5's shapes; Qwen3-Next's Thinking release its Instruct's.
  CHECK(preset_for_hub_id("Qwen/Qwen3.6-35B-A3B").preset->id == "qwen3.5-35b-a3b");
  CHECK(preset_for_hub_id("Qwen/Qwen3-Next-80B-A3B-Thinking").preset->id == "qwen3-next-80b-a3b");
  // A name no preset's repository has, and one whose shape changed under the family's name.
  CHECK(preset_for_hub_id("someone/Mystery-7B").preset == nullptr);
  CHECK(preset_for_hub_id("mistralai/Mistral-7B-v0.3").preset == nullptr);
  CHECK(preset_for_hub_id("deepseek-ai/DeepSeek-V4").preset == nullptr);
  // DeepSeek-V3.2's releases share one shape, and GLM-5.1 GLM-5's.
  CHECK(preset_for_hub_id("deepseek-ai/DeepSeek-V3.2-Exp").preset->id == "deepseek-v3.2");
  CHECK(preset_for_hub_id("zai-org/GLM-5.1").preset->id == "glm-5");
  CHECK(preset_for_hub_id("").preset == nullptr);
}

TEST_CASE("hub: --model takes a hub repository's id") {
  std::ostringstream out;
  std::ostringstream err;
  const int status =
      run_cli({"--model", "meta-llama/Meta-Llama-3-8B", "--seq-len", "1024"}, out, err);
  CHECK(status != 2);
  CHECK(out.str().rfind("Llama 3 8B: 8.03 B parameters", 0) == 0);
}

}  // namespace trainmem
