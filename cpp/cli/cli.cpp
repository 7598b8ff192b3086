// The `trainmem` command: register the flags (settings.hpp's table, then the views) -> check what
// was given together -> build the setup, one setting at a time through the core -> print the
// breakdown or the view asked for.
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <utility>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/hub.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/models.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/verdict.hpp"
#include "views.hpp"
#include "yaml_json.hpp"

namespace trainmem {

namespace {

// The text of a config.json, read whole; I/O stays here, out of the core. Refuses what is not a
// regular file, and files over the parser's limit before reading them.
struct ConfigFile {
  bool ok = false;
  std::string text;
  std::string problem;
};

ConfigFile read_config_file(const std::string& path) {
  ConfigFile file;
  const std::string quoted_path = "'" + path + "'";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    file.problem = "cannot read " + quoted_path + ": not a readable file";
    return file;
  }
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  const auto too_large = [&](double bytes) {
    return quoted_path + " is " + format_count(bytes) + " bytes; at most " +
           format_count(kMaxConfigBytes) + " (1 MiB) are allowed";
  };
  if (error) {
    file.problem = "cannot read " + quoted_path + ": " + error.message();
    return file;
  }
  if (size > static_cast<std::uintmax_t>(kMaxConfigBytes)) {
    file.problem = too_large(static_cast<double>(size));
    return file;
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    file.problem = "cannot read " + quoted_path + ": it cannot be opened";
    return file;
  }
  // One byte past the limit tells a file that grew since it was measured.
  file.text.resize(static_cast<std::size_t>(kMaxConfigBytes) + 1);
  stream.read(file.text.data(), static_cast<std::streamsize>(file.text.size()));
  if (stream.bad()) {
    file.problem = "cannot read " + quoted_path + ": a read failed";
    return file;
  }
  file.text.resize(static_cast<std::size_t>(stream.gcount()));
  if (file.text.size() > static_cast<std::size_t>(kMaxConfigBytes)) {
    file.problem = too_large(static_cast<double>(file.text.size())) + " (it grew while read)";
    return file;
  }
  file.ok = true;
  return file;
}

// "a", "a or b", "a, b or c".
std::string words_or(const std::vector<std::string>& words) {
  std::string text;
  for (std::size_t index = 0; index < words.size(); ++index) {
    text += (index == 0 ? "" : index + 1 == words.size() ? " or " : ", ") + words[index];
  }
  return text;
}

// The flags as given: each setting's text as typed, so that each message can quote the input;
// the core reads the text. A switch's flag is read as "on" or "off" (--no-flash-attention=false
// too).
struct Given {
  std::map<std::string, CLI::Option*> settings;  // by setting id
  std::map<std::string, std::string> texts;      // by setting id
  std::map<std::string, bool> switches;          // by setting id: the flag's value
  std::string config_path;
  CLI::Option* config = nullptr;
  bool text_tower = false;
  CLI::Option* text_tower_flag = nullptr;
  std::string launch_path;
  CLI::Option* launch = nullptr;
  int world_size = 0;
  CLI::Option* world_size_flag = nullptr;
  std::map<std::string, bool> views;  // by flag
  bool json = false;
  bool list_models = false;
  bool list_devices = false;

  bool has(const std::string& id) const { return settings.at(id)->count() > 0; }
};

void register_flags(CLI::App& app, Given& given) {
  for (const Setting& setting : settings()) {
    std::string help = setting.help;
    const Setting* required = find_setting(setting.requires_setting);
    if (required != nullptr && required->kind == SettingKind::kSwitch) {
      help += " (with " + flag_of(*required) + ")";
    }
    CLI::Option* option = nullptr;
    if (setting.kind == SettingKind::kSwitch) {
      option = app.add_flag(flag_of(setting), given.switches[setting.id], help);
    } else {
      option = app.add_option("--" + setting.id, given.texts[setting.id], help)
                   ->default_str(setting.default_text)
                   ->type_name(setting.kind == SettingKind::kChoice ? "ID" : "N");
    }
    given.settings[setting.id] = option;
  }
  given.config = app.add_option("--config", given.config_path,
                                "A Hugging Face config.json (at most 1 MiB) instead of --model");
  given.text_tower_flag =
      app.add_flag("--text-tower", given.text_tower,
                   "With --config: a multimodal config's text tower (text_config) alone");
  given.launch = app.add_option(
      "--launch", given.launch_path,
      "A run's launch config (at most 1 MiB): torchtitan's TOML job config or its 2026 "
      "torchrun line (-m torchtitan.train), Megatron-LM's pretrain_gpt.py line, DeepSpeed's JSON "
      "config (with --model or --config, --seq-len, --recompute), or axolotl's, TRL's or "
      "accelerate's YAML config. Its keys that are not understood withhold the verdict "
      "(uncertain, naming them)");
  given.world_size_flag =
      app.add_option("--world-size", given.world_size,
                     "With --launch: the devices torchrun starts, where the file leaves them out")
          ->check(CLI::Range(1, 1'000'000));
  for (const View& view : views()) app.add_flag(view.flag, given.views[view.flag], view.help);
  app.add_flag("--json", given.json, "Print JSON instead of a table");
  app.add_flag("--list-models", given.list_models, "List the model presets and exit");
  app.add_flag("--list-devices", given.list_devices,
               "List the devices, their memory and its source, and exit");
}

// A switch's text from its flag: --logits is "on", --no-flash-attention "off".
void read_switches(Given& given) {
  for (const Setting& setting : settings()) {
    if (setting.kind != SettingKind::kSwitch || !given.has(setting.id)) continue;
    const bool on_by_default = setting.default_text == "on";
    given.texts[setting.id] = given.switches[setting.id] != on_by_default ? "on" : "off";
  }
}

// The flags of the given settings in the table's order, with --config right after --model.
std::vector<std::string> given_flags(const Given& given) {
  std::vector<std::string> flags;
  for (const Setting& setting : settings()) {
    if (given.has(setting.id)) flags.push_back(flag_of(setting));
    if (setting.id == setting_id::kModel && given.config->count() > 0) flags.push_back("--config");
  }
  return flags;
}

// The first flag given with another it cannot go with, or an empty string. `second_view` is a
// view given after `view`, which is refused too.
std::string conflict(const Given& given, const View* view, const View* second_view) {
  if (given.config->count() > 0 && given.has(setting_id::kModel)) {
    return "--config: give either --model or --config, not both";
  }
  if (given.world_size_flag->count() > 0 && given.launch->count() == 0) {
    return "--world-size: give it with --launch, a launch config that leaves the devices out";
  }
  if (given.launch->count() > 0 && view != nullptr) {
    return std::string(view->flag) + ": --launch answers with its estimate and verdict; drop " +
           view->flag;
  }
  if (given.text_tower_flag->count() > 0 && given.config->count() == 0) {
    return "--text-tower: give it with --config, a multimodal config.json";
  }
  for (const Setting& setting : settings()) {
    if (given.has(setting.id) && !setting.excludes.empty() && given.has(setting.excludes)) {
      return flag_of(setting) + ": give either " + flag_of(*find_setting(setting.excludes)) +
             " or " + flag_of(setting) + ", not both";
    }
  }
  if (second_view != nullptr) {
    std::string all;
    for (const View& each : views()) all += (all.empty() ? "" : ", ") + std::string(each.flag);
    return std::string(second_view->flag) + ": choose one of " + all.substr(0, all.rfind(", ")) +
           " and " + all.substr(all.rfind(", ") + 2);
  }
  const View::Uses uses = view != nullptr ? view->uses : View::Uses::kSettings;
  if (uses == View::Uses::kOwnSettings && !given_flags(given).empty()) {
    // Each measured case carries its own settings; any other flag would be ignored silently.
    const std::string flag = given_flags(given).front();
    return flag + ": " + view->flag + " uses each measured case's own settings; drop " + flag;
  }
  for (const Setting& setting : settings()) {
    const Setting* required = find_setting(setting.requires_setting);
    // A launch config sets its own switches (the logits under --loss).
    if (given.has(setting.id) && required != nullptr && required->kind == SettingKind::kSwitch &&
        !given.has(required->id) && given.launch->count() == 0) {
      return flag_of(setting) + ": " + setting.requires_reason + "; add " + flag_of(*required) +
             " or drop " + flag_of(setting);
    }
  }
  if (view != nullptr && given.json && !view->has_json) {
    return std::string("--json: ") + view->flag + " prints a table only";
  }
  const std::string& llama_block = choice_id(ActivationModel::kLlamaBlock);
  if (uses == View::Uses::kLlamaBlockModel && given.has(setting_id::kActivationModel) &&
      given.texts.at(setting_id::kActivationModel) != llama_block) {
    const std::string flag = flag_of(*find_setting(setting_id::kActivationModel));
    return flag + ": " + view->flag + " lists the " + llama_block + " model's tensors; drop " +
           flag + " " + given.texts.at(setting_id::kActivationModel);
  }
  for (const Setting& setting : settings()) {
    if (uses == View::Uses::kChoosesLayout && setting.chosen_by_fit && given.has(setting.id)) {
      return flag_of(setting) + ": " + view->flag +
             " searches the layouts and recomputation itself; drop " + flag_of(setting);
    }
  }
  return "";
}

// The first flag given beside --launch that the file sets itself, or an empty string: each
// setting the file leaves (the launch's `leaves`: the device, the headroom and the like under
// every file, a DeepSpeed config's model and tokens too) may stand beside it.
std::string launch_conflict(const Given& given, const LaunchConfig& launch) {
  const std::vector<std::string>& beside = launch.leaves;
  const bool model_left =
      std::find(beside.begin(), beside.end(), setting_id::kModel) != beside.end();
  if (given.config->count() > 0 && !model_left) {
    return "--config: the launch config names the model; drop --config";
  }
  std::string allowed;
  for (const std::string& id : beside) {
    allowed += (allowed.empty() ? "" : ", ") + flag_of(*find_setting(id));
    if (id == setting_id::kModel) allowed += ", --config";
  }
  for (const Setting& setting : settings()) {
    if (given.has(setting.id) &&
        std::find(beside.begin(), beside.end(), setting.id) == beside.end()) {
      return flag_of(setting) + ": the launch config sets it; drop " + flag_of(setting) +
             " (beside this --launch: " + allowed + ")";
    }
  }
  return "";
}

}  // namespace

namespace {

// The answer given as a refusal, quoting the text typed for its setting where there was one.
Answer quoted(const Given& given, const Answer& answer) {
  const Setting* setting = find_setting(answer.setting);
  if (setting == nullptr || setting->kind == SettingKind::kSwitch || !given.has(setting->id)) {
    return answer;
  }
  Answer with_text = answer;
  with_text.message = "'" + given.texts.at(setting->id) + "' is not allowed. " + answer.message;
  return with_text;
}

// The view asked for, and a second one if two were (a conflict the checks refuse).
std::pair<const View*, const View*> views_asked(const Given& given) {
  const View* view = nullptr;
  const View* second_view = nullptr;
  for (const View& candidate : views()) {
    if (!given.views.at(candidate.flag)) continue;
    if (view == nullptr) {
      view = &candidate;
    } else if (second_view == nullptr) {
      second_view = &candidate;
    }
  }
  return {view, second_view};
}

// A choice a flag brought with it (--cp-comm-type a2a: --stack megatron), to be said.
struct ImpliedSetting {
  std::string flag;        // the flag given: "--cp-comm-type"
  BroughtSetting setting;  // the choice it brought: stack, megatron
};

// The setup the flags give, through the core, one given setting at a time in the table's order;
// a setting whose choice another requires is selected first (--device-gb selects --device
// custom), and each such choice that changes the setup is kept in `implied`, to be said. The exit
// status of a refusal, said on `err`, where there is one.
std::optional<int> build_setup(const Given& given, TrainingSetup& setup, std::ostream& err,
                               std::vector<ImpliedSetting>& implied) {
  if (given.config->count() > 0) {
    const ConfigFile file = read_config_file(given.config_path);
    if (!file.ok) return bad_input(err, "--config: " + file.problem);
    const ConfigParse parse = parse_hf_config(file.text, given.text_tower);
    if (!parse.answer.ok()) return bad_input(err, "--config: " + parse.answer.message);
    setup.model_id = kCustomModelId;
    setup.custom_model = parse.shape;
  }
  for (const Setting& setting : settings()) {
    if (!given.has(setting.id)) continue;
    const Setting* required = find_setting(setting.requires_setting);
    if (required != nullptr && required->kind == SettingKind::kChoice) {
      // The flag brings its choice with it (the first that allows it), but never over one given
      // otherwise.
      const std::vector<std::string>& values = setting.requires_values;
      if (given.has(required->id) &&
          std::find(values.begin(), values.end(), given.texts.at(required->id)) == values.end()) {
        err << "trainmem: " << flag_of(setting) << ": " << setting.requires_reason << "; it needs "
            << flag_of(*required) << " " << words_or(values) << ", not "
            << given.texts.at(required->id) << "\n";
        return kExitBadInput;
      }
      if (!given.has(required->id) && setting_text(setup, required->id) != values.front()) {
        const Answer selected = apply_setting(setup, required->id, values.front());
        if (!selected.ok()) return refused(selected, err);
        implied.push_back({flag_of(setting), {required->id, values.front(), flag_of(setting)}});
      }
    }
    std::string text = given.texts.at(setting.id);
    // --model takes a hub repository's id too: meta-llama/Meta-Llama-3-8B is llama3-8b.
    if (setting.id == setting_id::kModel && find_preset(text) == nullptr) {
      if (const HubMatch match = preset_for_hub_id(text); match.preset != nullptr) {
        text = match.preset->id;
      }
    }
    const Answer answer = apply_setting(setup, setting.id, text);
    if (!answer.ok()) return refused(quoted(given, answer), err);
  }
  return std::nullopt;
}

// "--cp-comm-type brought --stack megatron, the choice it needs (give --stack to choose
// otherwise).", or several joined by "; ".
std::string implied_sentence(const std::vector<ImpliedSetting>& implied) {
  std::string said;
  for (const ImpliedSetting& each : implied) {
    said += (said.empty() ? "" : "; ") + each.flag + " brought " +
            flag_of(*find_setting(each.setting.setting_id)) + " " + each.setting.text;
  }
  return said + (implied.size() == 1
                     ? ", the choice it needs (give " +
                           flag_of(*find_setting(implied.front().setting.setting_id)) +
                           " to choose otherwise)."
                     : ", the choices they need (give those flags to choose "
                       "otherwise).");
}

// One sentence for each who brought settings, in their order: "The Hugging Face (Trainer + PEFT)
// stack brings, where no flag chose: --loss fp32-upcast, --precision bf16 (give the flag to
// choose otherwise)." Under verl, "verl (1dda039b) brings, …".
std::string brought_sentence(const std::vector<BroughtSetting>& brought) {
  std::string said;
  for (std::size_t first = 0; first < brought.size();) {
    std::string flags;
    std::size_t next = first;
    for (; next < brought.size() && brought[next].by == brought[first].by; ++next) {
      flags += (flags.empty() ? "" : ", ") + flag_of(*find_setting(brought[next].setting_id)) +
               " " + brought[next].text;
    }
    said += (said.empty() ? "" : " ") + brought[first].by +
            " brings, where no flag chose: " + flags + " (give the flag to choose otherwise).";
    first = next;
  }
  return said;
}

// The verdict's exit status: 0 fits, 1 uncertain, 3 does not fit (2 is bad input).
int exit_status(const VerdictAnswer& verdict) {
  return verdict.verdict == Verdict::kFits        ? kExitOk
         : verdict.verdict == Verdict::kUncertain ? kExitUncertain
                                                  : kExitDoesNotFit;
}

// A run's own launch config read over the flags' setup, its estimate and its verdict, whose exit
// status is the verdict's.
int run_launch(const Given& given, const TrainingSetup& setup, std::ostream& out,
               std::ostream& err) {
  const ConfigFile file = read_config_file(given.launch_path);
  if (!file.ok) return bad_input(err, "--launch: " + file.problem);
  LaunchContext context;
  context.world_size = given.world_size;
#ifdef TRAINMEM_YAML
  context.read_yaml = yaml_to_json;
#endif
  const LaunchConfig launch = read_launch_config(file.text, setup, context);
  if (!launch.answer.ok()) return bad_input(err, "--launch: " + launch.answer.message);
  if (const std::string beside = launch_conflict(given, launch); !beside.empty()) {
    return bad_input(err, beside);
  }
  const Estimate estimate = estimate_memory(launch.setup);
  if (!estimate.answer.ok()) {
    return bad_input(err, "--launch: the file's setup is refused: " + estimate.answer.message);
  }
  const VerdictAnswer verdict =
      verdict_of(estimate, given.has(setting_id::kHeadroom), launch.not_understood);
  if (given.json) {
    out << launch_to_json(estimate, launch, verdict) << "\n";
  } else {
    print_launch(launch, out);
    print_breakdown(estimate, out);
    print_verdict(verdict, out);
  }
  return exit_status(verdict);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "trainmem: the memory to train a model, per device (Plate XIV.1, \"Where the Memory "
      "Goes\").\nModel states (ZeRO, Rajbhandari et al. 2020) plus activations (Korthikanti et al. "
      "2023). 1 GB = 10^9 bytes.\nAn estimate ends with its verdict, from the flags as from a "
      "launch config: exit status 0 fits, 1 uncertain, 3 does not fit; 2 is bad input.",
      "trainmem"};
  Given given;
  register_flags(app, given);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    return bad_input(err, std::string(error.what()) + " (see trainmem --help)");
  }
  if (given.list_models) {
    print_models(out);
    return kExitOk;
  }
  if (given.list_devices) {
    print_devices(out);
    return kExitOk;
  }

  // Check what was given together: at most one view, and no flags that contradict each other.
  read_switches(given);
  const auto [view, second_view] = views_asked(given);
  const std::string problem = conflict(given, view, second_view);
  if (!problem.empty()) return bad_input(err, problem);

  TrainingSetup setup;
  std::vector<ImpliedSetting> implied;
  if (const std::optional<int> refusal = build_setup(given, setup, err, implied)) return *refusal;
  if (given.launch->count() > 0) return run_launch(given, setup, out, err);
  // The stack's own loss and precision where no flag chose them, said.
  // A flag chooses its setting, and the choice it brings with it (--loss-chunks: the chunked loss).
  const auto chosen = [&](const std::string& id) {
    if (given.has(id)) return true;
    for (const Setting& setting : settings()) {
      if (given.has(setting.id) && setting.requires_setting == id) return true;
    }
    return false;
  };
  std::vector<BroughtSetting> brought;
  for (const ImpliedSetting& each : implied) brought.push_back(each.setting);
  const std::vector<BroughtSetting> defaults = bring_stack_defaults(setup, chosen);
  brought.insert(brought.end(), defaults.begin(), defaults.end());
  if (!given.json && !implied.empty()) out << implied_sentence(implied) << "\n";
  if (!given.json && !defaults.empty()) out << brought_sentence(defaults) << "\n";
  if (!given.json && !brought.empty()) out << "\n";
  if (view != nullptr) return view->print(setup, given.json, out, err);
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) return refused(quoted(given, estimate.answer), err);
  // The verdict, as under --launch: a script gates on the flags' run as on a file's.
  const VerdictAnswer verdict = verdict_of(estimate, given.has(setting_id::kHeadroom));
  if (given.json) {
    std::vector<BroughtFlag> flags;
    for (const BroughtSetting& each : brought) {
      flags.push_back({flag_of(*find_setting(each.setting_id)), each.text, each.by});
    }
    out << estimate_to_json(estimate, verdict, flags) << "\n";
  } else {
    print_breakdown(estimate, out);
    print_verdict(verdict, out);
  }
  return exit_status(verdict);
}

}  // namespace trainmem
