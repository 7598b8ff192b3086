// Each launch config's reader (launch.hpp reads any of them).
#pragma once

#include <string>

#include "trainmem/launch.hpp"

namespace trainmem {

// axolotl's config, as the front end's YAML parser wrote it in JSON.
LaunchConfig read_axolotl_yaml(const std::string& json_text, const TrainingSetup& base,
                               const LaunchContext& context);
LaunchConfig read_deepspeed_json(const std::string& text, const TrainingSetup& base,
                                 const LaunchContext& context);
LaunchConfig read_megatron_args(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context);
LaunchConfig read_torchtitan_toml(const std::string& text, const TrainingSetup& base,
                                  const LaunchContext& context);

}  // namespace trainmem
