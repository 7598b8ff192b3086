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
  // A JSON object (DeepSpeed's config), a YAML mapping (TrainingArguments, TRL, axolotl) and a
  // torchrun line (Megatron-LM) are not read yet; anything else is read as torchtitan's TOML.
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '{') {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch",
                            "This looks like a JSON config (DeepSpeed's?), which is not read yet: "
                            "torchtitan's TOML job configs and Megatron-LM's pretrain_gpt.py "
                            "lines are.");
    return launch;
  }
  if (text.find("pretrain_gpt.py") != std::string::npos) {
    return read_megatron_args(text, base, context);
  }
  if (text.find("torchrun") != std::string::npos || text.find("--") == start) {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch",
                            "This looks like a launch line, but not of Megatron-LM's "
                            "pretrain_gpt.py, the one read; torchtitan's TOML job configs are "
                            "read too.");
    return launch;
  }
  return read_torchtitan_toml(text, base, context);
}

}  // namespace trainmem
