// A launch config, read as the kind of file it is (launch.hpp).
#include "trainmem/launch.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

#include "launch/launch_readers.hpp"
#include "model/config_text.hpp"
#include "stacks/stack_rows.hpp"
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

// The word after `flag` ("--config llama3_8b", "--config=llama3_8b", "CONFIG=llama3_8b"), or "".
std::string word_after(const std::string& text, const std::string& flag) {
  std::size_t at = text.find(flag);
  while (at != std::string::npos && at > 0 && flag[0] != '-' &&
         (std::isalnum(static_cast<unsigned char>(text[at - 1])) != 0 || text[at - 1] == '_')) {
    at = text.find(flag, at + 1);  // CONFIG= inside CONFIG_FILE= or MY_CONFIG=
  }
  if (at == std::string::npos) return "";
  std::size_t begin = at + flag.size();
  if (begin < text.size() && (text[begin] == '=' || text[begin] == ' ')) ++begin;
  std::size_t end = begin;
  while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0) ++end;
  std::string word = text.substr(begin, std::min<std::size_t>(end - begin, 80));
  word.erase(std::remove(word.begin(), word.end(), '"'), word.end());
  word.erase(std::remove(word.begin(), word.end(), '\''), word.end());
  return word;
}

// torchtitan's launch line (run_train.sh, or torchrun -m torchtitan.train): one that names a TOML
// file (CONFIG_FILE=, --job.config_file), read when opened itself, and run_train.sh's, whose
// world size and config live in the script, refused by what they are; torchrun's since 9810191
// (February 2026), which names a Python config (--module, --config), read (nothing here).
std::optional<std::string> torchtitan_launch_line(const std::string& text) {
  if (text.find("torchtitan.train") == std::string::npos &&
      text.find("run_train.sh") == std::string::npos) {
    return std::nullopt;
  }
  std::string toml = word_after(text, "--job.config_file");
  if (toml.empty()) toml = word_after(text, "CONFIG_FILE=");
  if (!toml.empty()) {
    return "This is torchtitan's launch line for a TOML job config (" + toml +
           "): open that file itself. Its overrides on the line (--section.key value) are not "
           "read: write them into the file.";
  }
  // torchrun's line (-m torchtitan.train) is read (torchtitan_line.cpp).
  if (text.find("torchtitan.train") != std::string::npos) return std::nullopt;
  std::string module = word_after(text, "MODULE=");
  std::string config = word_after(text, "CONFIG=");
  return "This is torchtitan's run_train.sh, whose configs since 9810191 (February 2026) are "
         "Python functions (" +
         (config.empty() ? std::string("CONFIG")
                         : config + (module.empty() ? "" : " of " + module)) +
         ", in config_registry.py), not files, and whose world size and defaults live in the "
         "script. It is not read: write the line as torchrun runs it (torchrun --nproc_per_node N "
         "-m torchtitan.train --module … --config … and the overrides), which is read where it "
         "counts its batch in tokens. torchtitan's TOML job configs, 9dec370's and v0.2.2's, are "
         "read too.";
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

bool open_launch(LaunchConfig& launch, const char* kind, const TrainingSetup& base,
                 const std::vector<std::string>& leaves,
                 const std::vector<std::string>& also_from_base, const std::string& text,
                 const char* what, nlohmann::json& config) {
  launch.kind = kind;
  launch.leaves = left_by_every_file();
  launch.leaves.insert(launch.leaves.end(), leaves.begin(), leaves.end());
  std::vector<std::string> from_base = launch.leaves;
  from_base.insert(from_base.end(), also_from_base.begin(), also_from_base.end());
  launch.setup = setup_beside(base, from_base);
  const ConfigParse parsed = parse_json_object(text, config, what);
  if (!parsed.answer.ok()) launch.answer = refusal("launch", parsed.answer.message);
  return parsed.answer.ok();
}

void keep_trainer_loss(LaunchConfig& launch) {
  const StackRow& hf = stack_row(Stack::kHf);
  if (std::find(hf.losses.begin(), hf.losses.end(), launch.setup.loss) == hf.losses.end()) {
    launch.setup.loss = Loss::kFp32Upcast;
    launch.notes.push_back(
        "The loss is transformers' Trainer's: ForCausalLMLoss over FP32-upcast logits.");
  }
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
  if (const std::optional<std::string> torchtitan = torchtitan_launch_line(text)) {
    return refused(base, *torchtitan);
  }
  if (text.find("torchtitan.train") != std::string::npos) {
    return read_torchtitan_line(text, base, context);
  }
  if (text.find("verl.trainer.main_ppo") != std::string::npos) {
    return read_verl_line(text, base, context);
  }
  if (text.find("torchrun") != std::string::npos || text.find("--") == start) {
    LaunchConfig launch;
    launch.setup = base;
    launch.answer = refusal("launch",
                            "This looks like a launch line, but not of Megatron-LM's "
                            "pretrain_gpt.py, torchtitan's torchtitan.train or verl's "
                            "verl.trainer.main_ppo, the ones read; torchtitan's TOML job "
                            "configs and DeepSpeed's JSON configs are read too.");
    return launch;
  }
  if (looks_like_yaml(text)) {
    if (!context.read_yaml) return refused(base, "YAML is not read by this build.");
    const YamlAsJson parsed = context.read_yaml(text);
    if (!parsed.problem.empty()) {
      return refused(base, "The YAML does not parse: " + parsed.problem.substr(0, 300));
    }
    // TRL's (and TrainingArguments') configs name the model model_name_or_path; axolotl's,
    // base_model; accelerate's names none, and how the processes run (distributed_type).
    const nlohmann::json keys = nlohmann::json::parse(parsed.json, nullptr, false);
    if (keys.is_object() && keys.contains("distributed_type") &&
        !keys.contains("model_name_or_path") && !keys.contains("base_model")) {
      return read_accelerate_yaml(parsed.json, base, context);
    }
    if (keys.is_object() && keys.contains("model_name_or_path") && !keys.contains("base_model")) {
      return read_trl_yaml(parsed.json, base, context);
    }
    return read_axolotl_yaml(parsed.json, base, context);
  }
  return read_torchtitan_toml(text, base, context);
}

}  // namespace trainmem
