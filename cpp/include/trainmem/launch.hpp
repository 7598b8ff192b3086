// A run's own launch config, read into the setup the controls make: "read my launch config, and
// stop me before I spend GPU hours". What the file sets that the estimate does not understand is
// listed by name, never dropped; what it cannot model, or a file that contradicts itself, is
// refused with the keys at fault.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

struct LaunchConfig {
  Answer answer;  // refused: the message names the file's keys at fault
  TrainingSetup setup;
  std::string kind;               // "torchtitan job config (TOML, torchtitan 9dec370)"
  std::vector<std::string> read;  // each key read into the setup: "training.seq_len = 8192"
  std::vector<std::string> not_understood;  // each key set that is neither read nor of no bearing
  std::vector<std::string> notes;           // what to know: defaults taken, what is outside
  // The settings (settings.hpp ids) the file does not say, which stay as the reader set them: under
  // every file the device, the headroom, the activation model, the host and the allocator's
  // settings (the environment's PYTORCH_CUDA_ALLOC_CONF); a DeepSpeed config's model, tokens and
  // recomputation too. Every other setting is the file's, or its tool's default.
  std::vector<std::string> leaves;
};

// A YAML document as JSON text, every scalar a string as YAML's failsafe schema reads it, or the
// parser's problem ("line 3, column 5: …"). Each front end brings its parser (yaml-cpp natively,
// the npm package yaml on the page); the core reads the JSON, once.
struct YamlAsJson {
  std::string json;
  std::string problem;
};
using YamlReader = std::function<YamlAsJson(const std::string& yaml)>;

// What the file leaves to the launch: torchrun's world size (0: not given); and the front end's
// YAML parser (none: a YAML file is refused).
struct LaunchContext {
  int world_size = 0;
  YamlReader read_yaml;
};

// Reads `text` over `base` (the device, the headroom and what else the file does not say), as the
// kind of file it is: torchtitan's TOML job config as of torchtitan 9dec370 (December 2024, its
// benchmark's commit), Megatron-LM's pretrain_gpt.py line, DeepSpeed's JSON config, whose
// model, tokens and recomputation are `base`'s, and axolotl's YAML config.
LaunchConfig read_launch_config(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context);

}  // namespace trainmem
