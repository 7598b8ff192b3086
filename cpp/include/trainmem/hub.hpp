// The presets by the Hugging Face hub repositories that hold their weights: the id a launch config
// names (axolotl's base_model, TrainingArguments' model_name_or_path) or --model takes.
#pragma once

#include <string>
#include <string_view>

#include "trainmem/models.hpp"

namespace trainmem {

struct HubMatch {
  const ModelShape* preset = nullptr;  // nullptr: no preset is that repository's
  std::string repository;              // the publisher's repository it matched
  bool by_name = false;                // matched by its name under another owner (a mirror)
};

// The preset whose config.json the repository `id` holds: by the id its publisher gives it, base
// or post-trained ("meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"), case
// aside; or by that name under another owner or none, as mirrors and re-uploads are
// ("NousResearch/Meta-Llama-3-8B", "gpt2").
HubMatch preset_for_hub_id(std::string_view id);

}  // namespace trainmem
