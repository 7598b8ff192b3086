// A launch config, read as the kind of file it is (launch.hpp).
#include "trainmem/launch.hpp"

#include "launch/launch_readers.hpp"

namespace trainmem {

namespace {

constexpr std::size_t kMaxLaunchBytes = 1 << 20;

}  // namespace

LaunchConfig read_launch_config(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context) {
  if (text.size() > kMaxLaunchBytes) {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch", "A launch config must be at most 1 MiB.");
    return launch;
  }
  // A JSON object is DeepSpeed's config; a line that runs pretrain_gpt.py, Megatron-LM's; other
  // launch lines are refused; anything else is read as torchtitan's TOML. A YAML mapping
  // (TrainingArguments, TRL, axolotl) is not read yet, and fails as TOML with its line named.
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '{') {
    return read_deepspeed_json(text, base, context);
  }
  if (text.find("pretrain_gpt.py") != std::string::npos) {
    return read_megatron_args(text, base, context);
  }
  if (text.find("torchrun") != std::string::npos || text.find("--") == start) {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch",
                            "This looks like a launch line, but not of Megatron-LM's "
                            "pretrain_gpt.py, the one read; torchtitan's TOML job configs and "
                            "DeepSpeed's JSON configs are read too.");
    return launch;
  }
  return read_torchtitan_toml(text, base, context);
}

}  // namespace trainmem
