// How the YAML readers (axolotl's, TRL's) read a key: the front end writes the YAML as JSON, every
// scalar a string (YAML's failsafe schema; yaml-cpp natively, the npm package yaml on the page),
// and each reader reads the text as its tool would read the value (pydantic's or argparse's
// coercion), so both front ends read a file alike.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "trainmem/setup.hpp"

namespace trainmem::yaml_keys {

// A scalar as the front end writes it: the failsafe schema's string ("" for an empty value, "~"
// and "null" for YAML's null, which yaml-cpp writes as JSON's null).
std::optional<std::string> scalar_of(const nlohmann::json& value);

// A value's names: a list's, or the one it is (the empty and the null left out).
std::vector<std::string> names_of(const nlohmann::json& value);

// A key left empty (the tools' examples keep wandb_project: and the like) or null sets nothing: it
// reads as absent, and is not listed as not understood.
bool sets_nothing(const nlohmann::json& value);

// Each value accepted is listed as the file writes it, "lora_r: 16" ("lora_target_modules: q_proj,
// v_proj"); a refusal quotes the text's first bytes, and refuses a list or a mapping where one
// value is read as such.
extern const KeyDialect kDialect;

// The key's text, which the reader lists itself once it knows what it made of it.
const ValueType<std::string>& given_text();
// A switch: true, yes, on, 1 and their opposites, in any case (pydantic's bool; YAML 1.1's, which
// PyYAML reads for argparse, alike).
const ValueType<bool>& text_bool();
// A number read from text: whole where `whole`, within [least, most].
ValueType<double> text_number(bool whole, double least, double most);
// A list of names, or one name.
const ValueType<std::vector<std::string>>& name_list();

// LoRA's targets as PEFT's target_modules names them: every linear layer ("all-linear", or the
// seven projections), or the four attention projections; nothing for other modules or none given
// (PEFT's own default, q_proj and v_proj for Llama), which is not modelled.
std::optional<LoraTargets> lora_targets_of(const std::optional<std::vector<std::string>>& modules);

// Whether gradient checkpointing runs reentrant (TrainingSetup::reentrant_checkpointing) as
// gradient_checkpointing_kwargs sets it for the Trainer: its use_reentrant; `without_table` where
// the file has none; where the table leaves it out, `without_key`, or, where that is not known,
// the key refused (torch.utils.checkpoint runs use_reentrant=None as True, but TRL under
// transformers 4 sets False into the table first). Its other keys have no bearing.
bool use_reentrant(KeyReader& reader, bool without_table, std::optional<bool> without_key);

// The model a hub repository's id names (`key`: axolotl's base_model, TRL's model_name_or_path): a
// preset that repository holds (by its id, or by its name under another owner), said in the
// notes; otherwise the config.json the reader opened, or a refusal asking for it.
void read_hub_model(KeyReader& reader, const std::string& key, const std::string& id,
                    TrainingSetup& setup);

}  // namespace trainmem::yaml_keys
