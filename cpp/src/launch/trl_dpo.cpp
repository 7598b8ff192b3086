// TRL's DPOConfig (`trl dpo --config`) within TRL's YAML reader (trl_yaml.cpp): its own keys and
// defaults at TRL f2cd5771 (after v1.9.0; trl/trainer/dpo_config.py, trl/scripts/dpo.py), read
// into the run the hf stack with DPO's loss models (options.hpp, Loss::kDpo). The model, the
// weights, PEFT and the step are SFTConfig's keys, which trl_yaml.cpp reads for both.
#include "launch/trl_dpo.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/trl_grpo.hpp"
#include "launch/yaml_keys.hpp"
#include "trainmem/format.hpp"

namespace trainmem::trl_dpo {

namespace {

using Json = nlohmann::json;
using namespace yaml_keys;

// DPOTrainer's loss types (dpo_trainer.py, _compute_loss): each a function of the pairs' summed
// log-ratios, but "sft", which adds a cross-entropy over the chosen sequences' logits.
const std::set<std::string>& loss_types() {
  static const std::set<std::string> types = {"sigmoid",  "hinge",        "ipo",      "exo_pair",
                                              "nca_pair", "robust",       "bco_pair", "sppo_hard",
                                              "aot",      "aot_unpaired", "apo_zero", "apo_down",
                                              "discopop", "sigmoid_norm", "sft"};
  return types;
}

// loss_type as given: one name or a list of them.
std::vector<std::string> given_loss_types(const Json& value) {
  std::vector<std::string> names;
  if (value.is_string()) names.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const Json& each : value) {
      if (each.is_string()) names.push_back(each.get<std::string>());
    }
  }
  return names;
}

}  // namespace

bool is_dpo_file(const KeyReader& reader) {
  for (const char* key : {"f_divergence_type", "f_alpha_divergence_coef", "ld_alpha",
                          "label_smoothing", "use_weighting", "discopop_tau", "loss_weights"}) {
    const Json* found = reader.find(key);
    if (found != nullptr && !sets_nothing(*found)) return true;
  }
  const Json* loss = reader.find("loss_type");
  if (loss == nullptr) return false;
  const std::vector<std::string> names = given_loss_types(*loss);
  return !names.empty() && std::all_of(names.begin(), names.end(), [](const std::string& name) {
    return loss_types().count(name) > 0;
  });
}

const std::set<std::string>& no_bearing_keys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all = trl_no_bearing_keys();
    // clang-format off
    for (const char* key : {
        "beta", "label_smoothing", "f_divergence_type", "f_alpha_divergence_coef", "loss_weights",
        "ld_alpha", "discopop_tau", "sync_ref_model", "ref_model_mixup_alpha",
        "ref_model_sync_steps", "router_aux_loss_coef",
        // trl/scripts/dpo.py's: DDP's boolean buffers left out of its broadcast.
        "ignore_bias_buffers"}) {
      all.insert(key);
    }
    // clang-format on
    return all;
  }();
  return keys;
}

// Each sequence (a prompt and its chosen or rejected completion) at most max_length tokens (1024),
// per_device_train_batch_size pairs (8), both sequences of each in the batch
// (DataCollatorForPreference: the chosen, then the rejected), padded to the batch's longest.
void read_batch(KeyReader& reader, TrainingSetup& setup) {
  if (reader.find("max_prompt_length") != nullptr) {
    reader.fault("max_prompt_length",
                 "max_prompt_length is DPOConfig's key before its prompts and completions were "
                 "truncated together at max_length: this reader reads TRL f2cd5771's keys; drop "
                 "it.");
    return;
  }
  const Json* given_length = reader.find("max_length");
  if (given_length != nullptr && given_length->is_null()) {
    reader.fault("max_length",
                 "max_length null leaves the sequences untruncated: give the longest, prompt and "
                 "completion, as max_length.");
    return;
  }
  setup.sequence_length = static_cast<int>(
      reader.get("max_length", text_number(true, 1, kMaxSequenceLength)).value_or(1024));
  const int pairs = static_cast<int>(
      reader.get("per_device_train_batch_size", text_number(true, 1, kMaxMicroBatchSequences / 2))
          .value_or(8));
  setup.micro_batch_sequences = 2 * pairs;
  const bool padding_free = reader.get("padding_free", text_bool()).value_or(false);
  reader.launch().notes.push_back(
      "per_device_train_batch_size " + std::to_string(pairs) + (pairs == 1 ? " pair" : " pairs") +
      ": DPOTrainer runs each pair's chosen and rejected sequences in one batch, " +
      std::to_string(setup.micro_batch_sequences) +
      " sequences a micro-batch, each counted at max_length (" +
      format_count(setup.sequence_length) +
      " tokens), the most it holds padded to the batch's longest: shorter data holds less." +
      (padding_free ? " padding_free: DPOTrainer turns it off (unavailable at f2cd5771) and pads."
                    : ""));
  if (reader.find("pad_to_multiple_of") != nullptr &&
      !sets_nothing(*reader.find("pad_to_multiple_of"))) {
    reader.take("pad_to_multiple_of");
    reader.list_not_understood("pad_to_multiple_of");
  }
}

void read_loss(KeyReader& reader, TrainingSetup& setup) {
  setup.logits = true;
  setup.loss = Loss::kDpo;
  std::size_t types = 1;
  if (const Json* loss = reader.find("loss_type")) {
    const std::vector<std::string> names = given_loss_types(*loss);
    types = names.size();
    for (const std::string& name : names) {
      if (name == "sft") {
        reader.fault("loss_type",
                     "loss_type sft adds a cross-entropy over the chosen sequences' logits "
                     "(indexed into a copy), which is not modelled: drop sft from loss_type.");
        return;
      }
      if (loss_types().count(name) == 0) {
        reader.fault("loss_type", "loss_type " + name.substr(0, 40) +
                                      " is not one of DPOTrainer's loss types at TRL f2cd5771 "
                                      "(sigmoid, its default, hinge, ipo, …).");
        return;
      }
    }
    reader.take("loss_type");
    reader.list_read("loss_type");
  }
  // DPOConfig.__post_init__: a weight for each loss type.
  const Json* weights = reader.find("loss_weights");
  if (weights != nullptr && weights->is_array() && weights->size() != types) {
    reader.fault("loss_weights",
                 "loss_weights must give one weight a loss type, as DPOConfig "
                 "requires: " +
                     std::to_string(weights->size()) + " for " + std::to_string(types) + ".");
    return;
  }
  for (const char* key : {"use_weighting", "use_liger_kernel"}) {
    if (reader.get(key, text_bool()).value_or(false)) {
      reader.fault(key, std::string(key) == "use_weighting"
                            ? "use_weighting (WPO) takes two log-sum-exps over the shifted "
                              "logits beside the loss, which is not modelled: set it false."
                            : "use_liger_kernel: Liger's fused linear DPO loss is not modelled; "
                              "DPOTrainer's own is: set it false.");
      return;
    }
  }
  // disable_dropout (True): no dropout, its masks not kept; False, the model's own.
  if (reader.get("disable_dropout", text_bool()).value_or(true)) setup.dropout = Dropout::kOff;
  const bool precomputed = reader.get("precompute_ref_log_probs", text_bool()).value_or(false);
  // DPOTrainer.__init__ refuses syncing the reference under PEFT or with precomputed
  // log-probabilities.
  if (reader.get("sync_ref_model", text_bool()).value_or(false) &&
      (setup.lora_rank > 0 || precomputed)) {
    reader.fault("sync_ref_model",
                 setup.lora_rank > 0
                     ? "sync_ref_model under PEFT: DPOTrainer refuses it (the reference is the "
                       "base with the adapters disabled); set it false."
                     : "sync_ref_model with precompute_ref_log_probs: DPOTrainer refuses the two "
                       "together; set one false.");
    return;
  }
  // The precomputing pass runs before training, a no_grad forward pass over
  // precompute_ref_batch_size pairs: not modelled where it is more than a step's micro-batch.
  const std::optional<double> batch =
      reader.get("precompute_ref_batch_size", text_number(true, 1, 1 << 30));
  if (precomputed && batch && *batch > setup.micro_batch_sequences / 2) {
    reader.list_not_understood("precompute_ref_batch_size");
  }
  setup.reference_model = !precomputed;
  reader.launch().notes.push_back(
      precomputed
          ? "precompute_ref_log_probs: the reference's log-probabilities computed before "
            "training, so no reference model in the step (--reference-model off)."
          : std::string("The reference model (--reference-model): its forward pass inside each "
                        "loss, its logits beside the policy's; ") +
                (setup.lora_rank > 0 ? "under LoRA the base, its adapters disabled."
                                     : "under full training a second copy of the model, loaded "
                                       "as the policy is."));
}

}  // namespace trainmem::trl_dpo
