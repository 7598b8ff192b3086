// Which of TRL's trainers reads a YAML config (trl_trainer.hpp), by TRL f2cd5771's keys: each
// trainer's own, and those they share, which do not say.
#include "launch/trl_trainer.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/trl_dpo.hpp"
#include "launch/trl_grpo.hpp"
#include "launch/yaml_keys.hpp"

namespace trainmem {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

// The other trainers' own keys first: KTOConfig's (and its loss types), RLOOConfig's (which shares
// GRPOConfig's generation keys; its default beta, 0.05, loads a reference model). Then, where the
// file is SFT's or GRPO's, the keys the preference and RL trainers share, which do not say which
// one reads it (GRPOConfig has a beta and sync_ref_model too, DPOConfig max_prompt_length once).
void refuse_other_trainers(KeyReader& reader, bool grpo, bool dpo) {
  const auto given = [&](const char* key) {
    const Json* found = reader.find(key);
    return found != nullptr && !sets_nothing(*found);
  };
  for (const char* key : {"desirable_weight", "undesirable_weight", "train_sampling_strategy"}) {
    if (!given(key)) continue;
    reader.fault(
        key, std::string(key) + " is KTOConfig's: KTO is not modelled; DPOConfig's keys are read.");
    return;
  }
  const Json* loss = reader.find("loss_type");
  if (!grpo && !dpo && loss != nullptr && loss->is_string() &&
      (loss->get<std::string>() == "kto" || loss->get<std::string>() == "apo_zero_unpaired")) {
    reader.fault("loss_type", "loss_type " + loss->get<std::string>() +
                                  " is KTOConfig's: KTO is not modelled; DPOConfig's keys are "
                                  "read.");
    return;
  }
  for (const char* key : {"normalize_advantages", "reward_clip_range"}) {
    if (!given(key)) continue;
    reader.fault(key, std::string(key) +
                          " is RLOOConfig's: RLOO (a reference model at its default beta 0.05) is "
                          "not modelled; GRPOConfig's keys are read.");
    return;
  }
  static const std::vector<const char*> keys = {"max_prompt_length",        "beta",
                                                "precompute_ref_log_probs", "sync_ref_model",
                                                "ref_model_init_kwargs",    "reward_model_path"};
  for (const char* key : keys) {
    const std::string name = key;
    if (!given(key) || (grpo && (name == "beta" || name == "sync_ref_model")) ||
        (dpo && name != "ref_model_init_kwargs" && name != "reward_model_path")) {
      continue;
    }
    if (grpo && name == "max_prompt_length") {
      reader.fault(key,
                   "max_prompt_length is GRPOConfig's key before TRL v0.28 (prompts are no longer "
                   "truncated): this reader reads f2cd5771's keys; drop it and give the sequence "
                   "length beside the file.");
      return;
    }
    const std::string which = name == "precompute_ref_log_probs"
                                  ? "DPOConfig's and KTOConfig's alike"
                                  : "GRPOConfig's, DPOConfig's, KTOConfig's and RLOOConfig's alike";
    reader.fault(key,
                 name == "beta" || name == "precompute_ref_log_probs" || name == "sync_ref_model"
                     ? name + " is " + which +
                           ", and the file does not say which trainer reads it: give DPO's "
                           "loss_type (sigmoid, its default) to read it as DPOConfig's, or "
                           "GRPOConfig's own keys (use_vllm, num_generations) as GRPO's."
                     : name +
                           " is a preference trainer's key of another TRL version: "
                           "SFTConfig's, DPOConfig's and GRPOConfig's keys at f2cd5771 are "
                           "read.");
    return;
  }
}

}  // namespace

TrlTrainer trl_trainer_of(KeyReader& reader) {
  const bool grpo = trl_grpo::is_grpo_file(reader);
  const bool dpo = !grpo && trl_dpo::is_dpo_file(reader);
  refuse_other_trainers(reader, grpo, dpo);
  if (grpo) return TrlTrainer::kGrpo;
  if (dpo) return TrlTrainer::kDpo;
  // A file of SFTConfig's keys that DPOConfig and KTOConfig share reads the same under trl dpo:
  // said, where it sets none of SFT's own.
  bool sft_own = false;
  for (const char* key : {"packing", "packing_strategy", "completion_only_loss",
                          "assistant_only_loss", "dataset_text_field", "loss_type"}) {
    sft_own = sft_own || reader.find(key) != nullptr;
  }
  if (!sft_own) {
    reader.launch().notes.push_back(
        "Read as trl sft's: it sets none of SFTConfig's own keys, and a trl dpo file of the keys "
        "they share reads the same. For DPO, give its loss_type (sigmoid, its default).");
  }
  return TrlTrainer::kSft;
}

}  // namespace trainmem
