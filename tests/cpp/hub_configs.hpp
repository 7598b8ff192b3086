// Every preset's config.json, for the tests that read them: config_test.cpp (each parses to its
// preset) and families_test.cpp (today's families against their published totals).
#pragma once

#include <string_view>
#include <vector>

namespace trainmem {

struct HubConfig {
  const char* preset_id;
  const char* text;
  bool multimodal = false;  // the preset is the config's text tower (read with text_tower)
};

// In no particular order; one per preset.
const std::vector<HubConfig>& hub_configs();

// The config.json of the preset with this id, or "".
const char* hub_config(std::string_view preset_id);

}  // namespace trainmem
