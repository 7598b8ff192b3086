// One table of settings: every setting a TrainingSetup is made of, described once. The CLI's flags,
// help and checks, the page's controls, its URL keys and its checks of typed text, and the
// JavaScript API's checks all come from this table; the README's "Adding a setting" walks through
// what a new one touches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/config.hpp"
#include "trainmem/options.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Each setting's id, spelled once: the CLI's flag (--seq-len), the URL key and the page control's
// id. The table and the checks that name a setting at fault use these names.
namespace setting_id {
constexpr const char* kModel = "model";
constexpr const char* kSequenceLength = "seq-len";
constexpr const char* kTokens = "tokens";
constexpr const char* kMicroBatch = "micro-batch";
constexpr const char* kFlashAttention = "flash-attention";
constexpr const char* kDataParallel = "dp";
constexpr const char* kZeroStage = "zero";
constexpr const char* kTensorParallel = "tp";
constexpr const char* kSequenceParallel = "sequence-parallel";
constexpr const char* kPipelineParallel = "pp";
constexpr const char* kVirtualPipelineStages = "vpp";
constexpr const char* kPipelineFirstLayers = "pp-first-layers";
constexpr const char* kPipelineLastLayers = "pp-last-layers";
constexpr const char* kContextParallel = "cp";
constexpr const char* kExpertParallel = "ep";
constexpr const char* kExpertTensorParallel = "etp";
constexpr const char* kCapacityFactor = "capacity-factor";
constexpr const char* kRecompute = "recompute";
constexpr const char* kActivationModel = "activations";
constexpr const char* kDropout = "dropout";
constexpr const char* kOptimizer = "optimizer";
constexpr const char* kPrecision = "precision";
constexpr const char* kLogits = "logits";
constexpr const char* kLoss = "loss";
constexpr const char* kLossChunks = "loss-chunks";
constexpr const char* kMtp = "mtp";
constexpr const char* kTrainVision = "train-vision";
constexpr const char* kDevice = "device";
constexpr const char* kDeviceCapacity = "device-gb";
constexpr const char* kHeadroom = "headroom";
constexpr const char* kLoraRank = "lora-rank";
constexpr const char* kLoraTargets = "lora-targets";
constexpr const char* kLoraDropout = "lora-dropout";
constexpr const char* kBaseWeights = "base-weights";
constexpr const char* kOffload = "offload";
constexpr const char* kOffloadActivations = "offload-activations";
constexpr const char* kHostCapacity = "host-gb";
constexpr const char* kStack = "stack";
constexpr const char* kFp8AllGather = "fp8-all-gather";
constexpr const char* kOverlapComm = "overlap-comm";
constexpr const char* kVocabDivisibleBy = "make-vocab-size-divisible-by";
constexpr const char* kEodToken = "eod-token";
constexpr const char* kCpCommType = "cp-comm-type";
constexpr const char* kCompile = "compile";
constexpr const char* kOptimizerInBackward = "optimizer-in-backward";
constexpr const char* kPagedOptimizer = "paged-optimizer";
constexpr const char* kKbitPrep = "kbit-prep";
constexpr const char* kExpandableSegments = "expandable-segments";
constexpr const char* kMaxSplitSize = "max-split-size-mb";
}  // namespace setting_id

enum class SettingKind {
  kWhole,    // a whole number within [min, max]
  kDecimal,  // a decimal number within [min, max], or (min, max] when min_exclusive
  kSwitch,   // on or off
  kChoice,   // one of `choices`, by id
};

struct Setting {
  std::string id;    // "seq-len": the CLI's --seq-len, the URL key and the page control's id
  std::string name;  // "Sequence length": how messages name it
  SettingKind kind = SettingKind::kWhole;
  double min = 0;  // whole and decimal: the bounds
  double max = 0;
  bool min_exclusive = false;   // a decimal that must be more than min (a capacity)
  bool max_exclusive = false;   // a decimal that must be less than max (a probability)
  std::vector<Choice> choices;  // choice: the allowed values
  std::string allowed;          // whole and decimal: the sentence that says what is allowed
  std::string default_text;     // TrainingSetup{}'s value, as setting_text writes it
  std::string help;             // one line, for the CLI's --help
  std::string api_key;          // where the JavaScript API's TrainingSetup holds it
                        // ("layout.dataParallel"); empty for a setting derived from others (tokens)
  // Used only while another setting has a given value: the loss only with the logits on, a
  // custom capacity only with the custom device. The page disables the control meanwhile; the CLI
  // selects a choice itself (--device-gb means --device custom) and asks for a switch.
  std::string requires_setting;
  std::string requires_value;
  std::string requires_also;    // a second value that allows it too (compile: torchtune's stack)
  std::string requires_reason;  // "the loss is counted with the logits"
  std::string excludes;         // another setting that says the same: not both in one command
  // On the page, a change of this setting keeps that one's value where it can: a new sequence
  // length keeps the tokens per micro-batch when they are a whole number of the new sequences.
  std::string keeps;
  bool in_url = true;          // false: the link gives it another way (micro-batch by tokens)
  bool chosen_by_fit = false;  // the fewest-devices search chooses it itself
  // Added to the JavaScript API's setup after it was published: a setup written without it gets
  // the default, which keeps that caller's estimate what it was.
  bool defaulted_in_api = false;
};

// Every setting, in the order they are applied: a later one may read an earlier one (tokens reads
// the sequence length).
const std::vector<Setting>& settings();
const Setting* find_setting(std::string_view id);

// Reads `text` as setting `id`'s value and writes it into `setup`: a whole number, a decimal, "on"
// or "off", or a choice's id. Text of the wrong form, out of bounds or not among the choices is
// refused with the setting's id and what is allowed, and `setup` is left as it was. Settings that
// depend on one another (tensor parallelism dividing the heads) are checked by estimate_memory.
// Tokens are read as whole sequences, at most `max_micro_batch_sequences` (the page's workshop
// offers fewer than the CLI).
Answer apply_setting(TrainingSetup& setup, std::string_view id, std::string_view text,
                     int max_micro_batch_sequences = kMaxMicroBatchSequences);

// apply_setting on a copy, for callers that keep setups as values (the page): the changed setup,
// or `setup` itself with the refusal.
struct [[nodiscard]] SettingChange {
  Answer answer;
  TrainingSetup setup;
};
SettingChange change_setting(const TrainingSetup& setup, std::string_view id, std::string_view text,
                             int max_micro_batch_sequences = kMaxMicroBatchSequences);

// The setting's value in `setup`, as text that apply_setting reads back to the same value: "8192",
// "on", "selective", "2.5". Empty for an unknown id.
std::string setting_text(const TrainingSetup& setup, std::string_view id);

// Whether `setup` holds a value that apply_setting would refuse (a setup built in code or by the
// JavaScript API, not from text): the first such setting, in the table's order.
Answer check_setting_values(const TrainingSetup& setup);

// Whether choice setting `setting_id` may hold `id` in a setup: one of its choices, or an id no
// text selects but a setup may hold (the custom model, given by a config.json).
Answer check_choice(std::string_view setting_id, std::string_view id);

// A micro-batch given in tokens (micro_batch_from_tokens reads it).
struct [[nodiscard]] MicroBatchFromTokens {
  Answer answer;
  int micro_batch_sequences = 0;
};

// A micro-batch given in tokens, checked against the sequence length: a whole multiple of it,
// from one sequence to `max_micro_batch_sequences`. Any double is safe to pass, NaN and
// infinities included. The setting "tokens" reads its text through this.
MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences);

// For messages: "'text' is not known; choose one of a, b, c." after the setting's name.
std::string unknown_choice_message(const Setting& setting, std::string_view text);

}  // namespace trainmem
