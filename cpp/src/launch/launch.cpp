// A launch config, read as the kind of file it is (launch.hpp).
#include "trainmem/launch.hpp"

#include <algorithm>
#include <cctype>

#include "launch/launch_readers.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

constexpr std::size_t kMaxLaunchBytes = 1 << 20;

// Whether the text is a YAML mapping: its first line that is neither blank nor a comment starts
// a document (---) or is a key and a colon (TOML writes keys with '=', tables in brackets).
bool looks_like_yaml(const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::size_t first = text.find_first_not_of(" \t\r", at);
    if (first < end && text[first] != '#') {
      if (text.compare(first, 3, "---") == 0) return true;
      std::size_t key = first;
      while (key < end && (std::isalnum(static_cast<unsigned char>(text[key])) != 0 ||
                           text[key] == '_' || text[key] == '-' || text[key] == '.')) {
        ++key;
      }
      return key > first && key < end && text[key] == ':' &&
             (key + 1 == end || text[key + 1] == ' ' || text[key + 1] == '\t' ||
              text[key + 1] == '\r');
    }
    at = end + 1;
  }
  return false;
}

LaunchConfig refused(const TrainingSetup& base, const std::string& message) {
  LaunchConfig launch;
  launch.setup = base;
  launch.answer = refusal("launch", message);
  return launch;
}

}  // namespace

const std::vector<std::string>& left_by_every_file() {
  namespace id = setting_id;
  static const std::vector<std::string> ids = {
      id::kDevice,       id::kDeviceCapacity,     id::kHeadroom,    id::kActivationModel,
      id::kHostCapacity, id::kExpandableSegments, id::kMaxSplitSize};
  return ids;
}

TrainingSetup setup_beside(const TrainingSetup& base, const std::vector<std::string>& leaves) {
  TrainingSetup setup;
  for (const Setting& setting : settings()) {
    if (std::find(leaves.begin(), leaves.end(), setting.id) == leaves.end()) continue;
    if (setting.id == setting_id::kModel) {
      setup.model_id = base.model_id;
      setup.custom_model = base.custom_model;
    } else if (setting.id != setting_id::kTokens) {  // the tokens are the sequence's and batch's
      // A value read back from the setup it came from: apply_setting takes it as it was.
      static_cast<void>(apply_setting(setup, setting.id, setting_text(base, setting.id)));
    }
  }
  return setup;
}

LaunchConfig read_launch_config(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context) {
  if (text.size() > kMaxLaunchBytes) {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch", "A launch config must be at most 1 MiB.");
    return launch;
  }
  // A JSON object is DeepSpeed's config; a line that runs pretrain_gpt.py, Megatron-LM's; other
  // launch lines are refused; a YAML mapping is axolotl's config; anything else is read as
  // torchtitan's TOML.
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
  if (looks_like_yaml(text)) {
    if (!context.read_yaml) return refused(base, "YAML is not read by this build.");
    const YamlAsJson parsed = context.read_yaml(text);
    if (!parsed.problem.empty()) {
      return refused(base, "The YAML does not parse: " + parsed.problem.substr(0, 300));
    }
    return read_axolotl_yaml(parsed.json, base, context);
  }
  return read_torchtitan_toml(text, base, context);
}

}  // namespace trainmem
