// Which of TRL's trainers reads a YAML config (`trl sft|grpo|dpo --config`): the file does not
// say, its keys do (trl_trainer.cpp). Part of TRL's YAML reader (trl_yaml.cpp).
#pragma once

#include "launch/key_reader.hpp"

namespace trainmem {

enum class TrlTrainer { kSft, kGrpo, kDpo };

// GRPOConfig's own keys name GRPO (trl_grpo.hpp), DPOConfig's own keys or loss types DPO
// (trl_dpo.hpp), and any other file is SFTConfig's. KTOConfig's and RLOOConfig's own keys, and
// the keys the preference and RL trainers share where nothing says which reads them, are refused
// by key; an SFT file of keys DPOConfig shares says so in a note.
TrlTrainer trl_trainer_of(KeyReader& reader);

}  // namespace trainmem
