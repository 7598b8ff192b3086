// A YAML launch config (axolotl's, TRL's, accelerate's) read as the native CLI reads it, with
// yaml-cpp (cpp/cli/yaml_json.hpp), over `base`: the suites that read YAML files share it.
#pragma once

#ifdef TRAINMEM_YAML

#include <string>

#include "trainmem/launch.hpp"
#include "yaml_json.hpp"

namespace trainmem::fixtures {

inline LaunchConfig read_yaml_launch(const std::string& text, TrainingSetup base = {},
                                     int world_size = 0) {
  LaunchContext context;
  context.world_size = world_size;
  context.read_yaml = yaml_to_json;
  return read_launch_config(text, base, context);
}

}  // namespace trainmem::fixtures

#endif  // TRAINMEM_YAML
