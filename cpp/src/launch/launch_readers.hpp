// Each launch config's reader (launch.hpp reads any of them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainmem/launch.hpp"

namespace trainmem {

// The largest parallel degree torchtitan's readers take, in a TOML file or on a launch line
// (torchtitan's own have no bound; Python's integers do not overflow).
inline constexpr long long kTorchtitanMaxDegree = 1'000'000;

// The settings no launch config says, in the table's order: the device and its memory, the
// headroom, the activation model, the host's memory and the allocator's settings.
const std::vector<std::string>& left_by_every_file();

// What a reader starts from: the defaults, with `base`'s value of each setting in `leaves` (the
// model's shape too, where "model" is among them).
TrainingSetup setup_beside(const TrainingSetup& base, const std::vector<std::string>& leaves);

// A JSON reader's opening (DeepSpeed's, and the YAML readers' through the front end's JSON): its
// kind; the settings it leaves to the reader, every file's and `leaves`, which the setup takes from
// `base` with `also_from_base` (the model, which a YAML file names or leaves); and the file's
// object in `config` (`what` heads a refusal). False, the launch refused, where the text is none.
bool open_launch(LaunchConfig& launch, const char* kind, const TrainingSetup& base,
                 const std::vector<std::string>& leaves,
                 const std::vector<std::string>& also_from_base, const std::string& text,
                 const char* what, nlohmann::json& config);

// The loss transformers' Trainer computes: the one set where it is one of the Trainer's (the hf
// stack's: ForCausalLMLoss over FP32-upcast logits, or Liger's fused linear loss), else
// transformers' own, said in the notes.
void keep_trainer_loss(LaunchConfig& launch);

// accelerate's config, as the front end's YAML parser wrote it in JSON.
LaunchConfig read_accelerate_yaml(const std::string& json_text, const TrainingSetup& base,
                                  const LaunchContext& context);
// axolotl's config, as the front end's YAML parser wrote it in JSON.
LaunchConfig read_axolotl_yaml(const std::string& json_text, const TrainingSetup& base,
                               const LaunchContext& context);
LaunchConfig read_deepspeed_json(const std::string& text, const TrainingSetup& base,
                                 const LaunchContext& context);
LaunchConfig read_megatron_args(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context);
// TRL's YAML config (trl sft --config), as the front end's YAML parser wrote it in JSON.
LaunchConfig read_trl_yaml(const std::string& json_text, const TrainingSetup& base,
                           const LaunchContext& context);
LaunchConfig read_torchtitan_toml(const std::string& text, const TrainingSetup& base,
                                  const LaunchContext& context);
// torchtitan's torchrun line since its Python configs (-m torchtitan.train --module llama3
// --config NAME and overrides), as torchtitan b5bcd76c builds the config.
LaunchConfig read_torchtitan_line(const std::string& text, const TrainingSetup& base,
                                  const LaunchContext& context);
// verl's main_ppo line (python3 -m verl.trainer.main_ppo and Hydra's key=value overrides), as
// verl 1dda039b runs its colocated GRPO.
LaunchConfig read_verl_line(const std::string& text, const TrainingSetup& base,
                            const LaunchContext& context);

}  // namespace trainmem
