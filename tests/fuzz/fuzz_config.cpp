// Fuzz target: a config.json's text, whole and as a multimodal config's text tower: refused with
// a message, or read to a finite count that reads the same either way.
#include <cstdint>

#include "fuzz_common.hpp"
#include "trainmem/config.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;
using namespace trainmem::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  for (const bool text_tower : {false, true}) {
    const ConfigParse parsed = parse_hf_config(text, text_tower);
    if (!parsed.answer.ok()) {
      require(!parsed.answer.message.empty(), "a refused config has a message");
      continue;
    }
    require(std::isfinite(count_parameters(parsed.shape)), "a parsed config has a finite count");
    require(std::isfinite(count_mtp_parameters(parsed.shape)), "its MTP count is finite");
    TrainingSetup setup;
    setup.model_id = kCustomModelId;
    setup.custom_model = parsed.shape;
    check_estimate(estimate_memory(setup));
  }
  // The text tower as a config of its own reads as the text tower does.
  const ConfigText tower = text_tower_config_text(text);
  if (tower.answer.ok() && !tower.text.empty()) {
    const ConfigParse own = parse_hf_config(tower.text);
    const ConfigParse asked = parse_hf_config(text, true);
    require(own.answer.ok() == asked.answer.ok(), "a text tower reads alike either way");
    if (own.answer.ok() && asked.answer.ok()) {
      require(count_parameters(own.shape) == count_parameters(asked.shape),
              "a text tower counts alike either way");
    }
  } else if (!tower.answer.ok()) {
    require(!tower.answer.message.empty(), "a refused text tower has a message");
  }
  return 0;
}
