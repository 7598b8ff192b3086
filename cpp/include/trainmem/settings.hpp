// One table of settings: every setting a TrainingSetup is made of, described once. The CLI's flags,
// help and checks, the page's controls, its URL keys and its checks of typed text, and the
// JavaScript API's checks all come from this table; the README's "Adding a setting" walks through
// what a new one touches.
#pragma once

#include <cstddef>
#include <functional>
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
constexpr const char* kGlobalBatch = "global-batch";
constexpr const char* kFlashAttention = "flash-attention";
constexpr const char* kDataParallel = "dp";
constexpr const char* kZeroStage = "zero";
constexpr const char* kTensorParallel = "tp";
constexpr const char* kSequenceParallel = "sequence-parallel";
constexpr const char* kPipelineParallel = "pp";
constexpr const char* kVirtualPipelineStages = "vpp";
constexpr const char* kPipelineFirstLayers = "pp-first-layers";
constexpr const char* kPipelineLastLayers = "pp-last-layers";
constexpr const char* kStage = "stage";
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
constexpr const char* kReduceBucket = "reduce-bucket";
constexpr const char* kPrefetchBucket = "prefetch-bucket";
constexpr const char* kPersistenceThreshold = "persistence-threshold";
constexpr const char* kVocabDivisibleBy = "make-vocab-size-divisible-by";
constexpr const char* kEodToken = "eod-token";
constexpr const char* kCpCommType = "cp-comm-type";
constexpr const char* kCpA2aSize = "cp-a2a-size";
constexpr const char* kMoeDispatcher = "moe-dispatcher";
constexpr const char* kMoeRouterDtype = "moe-router-dtype";
constexpr const char* kMoeRouterScore = "moe-router-score";
constexpr const char* kMoeAuxLoss = "moe-aux-loss";
constexpr const char* kMoeZLoss = "moe-z-loss";
constexpr const char* kMoeRouterFusion = "moe-router-fusion";
constexpr const char* kMoePermuteFusion = "moe-permute-fusion";
constexpr const char* kMoeCapacityUnpadded = "moe-capacity-unpadded";
constexpr const char* kEnableExperimental = "enable-experimental";
constexpr const char* kDeferEmbeddingWgrad = "defer-embedding-wgrad-compute";
constexpr const char* kWgradDeferralLimit = "wgrad-deferral-limit";
constexpr const char* kOptimizerInstances = "num-distributed-optimizer-instances";
constexpr const char* kFp8Recipe = "fp8-recipe";
constexpr const char* kFp8ParamGather = "fp8-param-gather";
constexpr const char* kNvfp4Bf16Tail = "nvfp4-bf16-tail";
constexpr const char* kGradReduceInBf16 = "grad-reduce-in-bf16";
constexpr const char* kLogNumZerosInGrad = "log-num-zeros-in-grad";
constexpr const char* kOverlapGradReduce = "overlap-grad-reduce";
constexpr const char* kEmptyCacheLevel = "empty-unused-memory-level";
constexpr const char* kNoDataloaderAttentionMask = "no-create-attention-mask-in-dataloader";
constexpr const char* kMetaDeviceInit = "init-model-with-meta-device";
constexpr const char* kFsdpDoubleBuffer = "fsdp-double-buffer";
constexpr const char* kMicrobatchGroupSize = "microbatch-group-size-per-virtual-pipeline-stage";
constexpr const char* kNoGradientAccumulationFusion = "no-gradient-accumulation-fusion";
constexpr const char* kRecomputeMlp = "recompute-mlp";
constexpr const char* kRecomputeMoe = "recompute-moe";
constexpr const char* kRecomputeMoeAct = "recompute-moe-act";
constexpr const char* kRecomputeSharedExperts = "recompute-shared-experts";
constexpr const char* kRecomputeLayernorm = "recompute-layernorm";
constexpr const char* kRecomputeMlaUpProj = "recompute-mla-up-proj";
constexpr const char* kCompile = "compile";
constexpr const char* kFusedQkv = "fused-qkv";
constexpr const char* kFsdpVersion = "fsdp-version";
constexpr const char* kOptimizerInBackward = "optimizer-in-backward";
constexpr const char* kPagedOptimizer = "paged-optimizer";
constexpr const char* kKbitPrep = "kbit-prep";
constexpr const char* kRollout = "rollout";
constexpr const char* kRlTrainer = "rl-trainer";
constexpr const char* kLogProbMicroBatch = "log-prob-micro-batch";
constexpr const char* kRolloutBatch = "rollout-batch";
constexpr const char* kCritic = "critic";
constexpr const char* kRolloutMemoryUtilization = "rollout-memory-utilization";
constexpr const char* kRolloutMaxModelLength = "rollout-max-model-length";
constexpr const char* kRolloutTensorParallel = "rollout-tensor-parallel";
constexpr const char* kRolloutSleepMode = "rollout-sleep-mode";
constexpr const char* kRolloutPrefixCaching = "rollout-prefix-caching";
constexpr const char* kReferenceModel = "reference-model";
constexpr const char* kCompletionLength = "completion-length";
constexpr const char* kKbitCastBack = "kbit-cast-back";
constexpr const char* kCustomShardedLayers = "custom-sharded-layers";
constexpr const char* kReentrantCheckpointing = "reentrant-checkpointing";
constexpr const char* kNoAutocast = "no-autocast";
constexpr const char* kExpandableSegments = "expandable-segments";
constexpr const char* kMaxSplitSize = "max-split-size-mb";
}  // namespace setting_id

enum class SettingKind {
  kWhole,    // a whole number within [min, max]
  kDecimal,  // a decimal number within [min, max], or (min, max] when min_exclusive
  kSwitch,   // on or off
  kChoice,   // one of `choices`, by id
};

// A rule a setting's value keeps with the rest of the setup, checked by check_setup whenever the
// setting is not at its default: prepare_model_for_kbit_training needs a quantised base.
struct SettingRule {
  bool (*holds)(const TrainingSetup& setup) = nullptr;
  std::string refusal;  // the message when it does not hold
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
  // A choice held as its id (the model, the device), which a setup may also hold beyond its
  // choices (a config.json's model) and the JavaScript API types as a string; the others are enum
  // classes.
  bool held_as_id = false;
  std::string allowed;       // whole and decimal: the sentence that says what is allowed
  std::string default_text;  // TrainingSetup{}'s value, as setting_text writes it
  std::string help;          // one line, for the CLI's --help
  std::string api_key;       // where the JavaScript API's TrainingSetup holds it
                        // ("layout.dataParallel"); empty for a setting derived from others (tokens)
  // Used only while another setting has one of the given values: the loss only with the logits
  // on, a custom capacity only with the custom device, torch.compile only under the stacks that
  // compile. The page disables the control meanwhile; the CLI selects the first value itself
  // (--device-gb means --device custom) and asks for a switch.
  std::string requires_setting;
  std::vector<std::string> requires_values;
  std::string requires_reason;  // "the loss is counted with the logits"
  // A framework's own setting (requires_setting is the stack): held at anything but its default
  // under another stack, it is refused with these words rather than ignored.
  std::string refused_elsewhere;
  std::vector<SettingRule> rules;  // what its value needs of the rest of the setup
  std::string excludes;            // another setting that says the same: not both in one command
  // On the page, a change of this setting keeps that one's value where it can: a new sequence
  // length keeps the tokens per micro-batch when they are a whole number of the new sequences.
  std::string keeps;
  bool in_url = true;  // false: the link gives it another way (micro-batch by tokens)
  // One the plate's view answers for (plate_estimate): the model, the sequence, the micro-batch
  // and FlashAttention, the first view's module's own settings, and the logits and the loss,
  // which its workshop view counts as a run computes them. The rest stand at their defaults there.
  bool plate = false;
  bool chosen_by_fit = false;  // the fewest-devices search chooses it itself
  // Added to the JavaScript API's setup after it was published: a setup written without it gets
  // the default, which keeps that caller's estimate what it was.
  bool defaulted_in_api = false;
  // Where the page shows its control, built from this row (scripts/build-web.mjs): the fieldset
  // of "Go further" whose data-section is `section` (none: the page places it by hand, as the
  // workshop's own controls, or not at all), under `label` (the name where empty) with `hint`
  // beside it, both HTML; a whole number with `value_words` is a menu, each value's words from
  // `min` (ZeRO's stages).
  std::string section;
  std::string label;
  std::string hint;
  std::vector<std::string> value_words;
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

// The value of the setting at `index` of settings(), for the bindings, which carry numbers as
// numbers: a whole number, a decimal, or a switch as 1 or 0 (0 for a choice, whose value is its
// id, setting_text).
double setting_number(const TrainingSetup& setup, std::size_t index);
// Writes it, unchecked but for the field's type: `value` a whole number within an int for a whole
// setting (check_setup judges the bounds). False, and `setup` unchanged, for any other.
bool set_setting_number(TrainingSetup& setup, std::size_t index, double value);
// Writes a choice's id: false, and `setup` unchanged, for an id its field cannot hold (a choice
// held as an enum); the model and the device hold any id, which check_setup judges.
bool set_setting_choice(TrainingSetup& setup, std::size_t index, const std::string& id);

// A stack brings its own: what choosing `setup.stack` fills in of what the reader left. Where the
// reader has not chosen a setting (`chosen` says which they have) and the setup holds a value the
// stack does not run, the stack's own: the loss, under the logits (the stack's first, as
// with_logits_as_run takes it: transformers' FP32-upcast ForCausalLMLoss under hf; under a
// rollout engine its trainer's, GRPO's), and the
// precision, where the stack trains in one dtype (bf16: torchtune's configs, transformers' model
// loaded in BF16); verl's own under verl, and verl itself under SGLang. Each setting so changed is
// applied to `setup` and returned with its new text and who brought it; a choice the reader made
// is never changed (the core's check refuses it, naming it).
struct BroughtSetting {
  std::string setting_id;
  std::string text;
  // Who brought it, for sentences and the JSON: "The torchtune stack", "verl (1dda039b)",
  // "TRL's GRPOTrainer", "SGLang (modelled under verl alone here)"; the CLI's a flag,
  // "--cp-comm-type".
  std::string by;
};
std::vector<BroughtSetting> bring_stack_defaults(
    TrainingSetup& setup, const std::function<bool(const std::string&)>& chosen);

// For messages: "'text' is not known; choose one of a, b, c." after the setting's name.
std::string unknown_choice_message(const Setting& setting, std::string_view text);

}  // namespace trainmem
