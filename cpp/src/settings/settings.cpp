#include "trainmem/settings.hpp"

#include <cmath>

#include "trainmem/decimal.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

namespace {

namespace id = setting_id;

// How a setting reads and writes its field of a TrainingSetup: numbers (a switch is 1 or 0) or a
// choice's id. A choice's setter is given only ids among its choices.
struct Access {
  double (*number)(const TrainingSetup&) = nullptr;
  void (*set_number)(TrainingSetup&, double) = nullptr;
  std::string (*id)(const TrainingSetup&) = nullptr;
  void (*set_id)(TrainingSetup&, const std::string&) = nullptr;
  // A choice whose field may also hold an id that no typed text selects (the custom model, which
  // a config.json gives): whether `id` may stand in a setup.
  bool (*holds)(const std::string& id) = nullptr;
  bool always_valid = false;  // an enum class field, which holds only its choices: nothing to check
  // A choice that also reads other text as one of its ids (dropout's probability); the text itself
  // where it does not.
  std::string (*read_as)(std::string_view text) = nullptr;
};

struct Entry {
  Setting setting;
  Access access;
};

std::string range_text(double low, double high) {
  return "from " + format_count(low) + " to " + format_count(high);
}

// "0, 1, 2 or 3".
std::string each_of(int first, int last) {
  std::string text;
  for (int value = first; value <= last; ++value) {
    text += (value == first ? "" : value == last ? " or " : ", ") + std::to_string(value);
  }
  return text;
}

std::vector<Choice> model_choices() {
  std::vector<Choice> choices;
  for (const ModelShape& shape : preset_models()) {
    choices.push_back({shape.id, shape.name, shape.source});
  }
  return choices;
}

// A choice setting over an enum class, by member pointer.
template <typename Enum, Enum TrainingSetup::*field>
Access enum_access() {
  Access access;
  access.id = [](const TrainingSetup& setup) { return choice_id(setup.*field); };
  access.set_id = [](TrainingSetup& setup, const std::string& id) {
    choice_from_id(id, setup.*field);
  };
  access.always_valid = true;
  return access;
}

// A choice setting held as its id: the model, the device.
template <std::string TrainingSetup::*field>
Access id_access() {
  Access access;
  access.id = [](const TrainingSetup& setup) { return setup.*field; };
  access.set_id = [](TrainingSetup& setup, const std::string& id) { setup.*field = id; };
  return access;
}

// A number or a switch (1 or 0) of the setup, or of its layout, by member pointer.
template <typename Field, Field TrainingSetup::*field>
Access number_access() {
  Access access;
  access.number = [](const TrainingSetup& setup) { return static_cast<double>(setup.*field); };
  access.set_number = [](TrainingSetup& setup, double value) {
    setup.*field = static_cast<Field>(value);
  };
  return access;
}
template <typename Field, Field ParallelLayout::*field>
Access layout_access() {
  Access access;
  access.number = [](const TrainingSetup& setup) {
    return static_cast<double>(setup.layout.*field);
  };
  access.set_number = [](TrainingSetup& setup, double value) {
    setup.layout.*field = static_cast<Field>(value);
  };
  return access;
}

Setting make(const char* id, const char* name, SettingKind kind, std::string help,
             const char* api_key) {
  Setting setting;
  setting.id = id;
  setting.name = name;
  setting.kind = kind;
  setting.help = std::move(help);
  setting.api_key = api_key;
  return setting;
}

// A whole number from `min` to `max`; `allowed` says so, or "{name} must be a whole number …".
Setting whole(const char* id, const char* name, const char* help, const char* api_key, double min,
              double max, std::string allowed = "") {
  Setting setting = make(id, name, SettingKind::kWhole, help, api_key);
  setting.min = min;
  setting.max = max;
  setting.allowed = allowed.empty()
                        ? setting.name + " must be a whole number " + range_text(min, max) + "."
                        : std::move(allowed);
  return setting;
}

// A parallel degree, from 1 to kMaxParallelDegree, that the fewest-devices search chooses.
Setting degree(const char* id, const char* name, const char* help, const char* api_key) {
  Setting setting = whole(id, name, help, api_key, 1, kMaxParallelDegree);
  setting.chosen_by_fit = true;
  return setting;
}

Setting choice(const char* id, const char* name, std::vector<Choice> choices,
               const std::string& help, const char* api_key) {
  Setting setting = make(id, name, SettingKind::kChoice, help, api_key);
  setting.choices = std::move(choices);
  setting.help += ": " + ids_joined(setting.choices);
  return setting;
}

using Entries = std::vector<Entry>;
constexpr SettingKind kSwitch = SettingKind::kSwitch;

// `setting` as `change` leaves it.
template <typename Change>
Setting from(Setting setting, const Change& change) {
  change(setting);
  return setting;
}

// A setting added after the API was published: a setup written without it gets its default.
Setting added(Setting setting) {
  setting.defaulted_in_api = true;
  return setting;
}

// Each group's settings, in the table's order (the URL's and the page's).
// The model, the sequence and the micro-batch.
void add_model_and_batch(Entries& entries) {
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };
  Access model = id_access<&TrainingSetup::model_id>();
  model.holds = [](const std::string& id) {
    return id == kCustomModelId || find_preset(id) != nullptr;
  };
  add(choice(id::kModel, "Model", model_choices(), "Model", "modelId"), model);
  add(from(whole(id::kSequenceLength, "Sequence length", "Sequence length in tokens",
                 "sequenceLength", 1, kMaxSequenceLength,
                 "Sequence length must be a whole number of tokens " +
                     range_text(1, kMaxSequenceLength) + "."),
           [](Setting& setting) { setting.keeps = id::kTokens; }),
      number_access<int, &TrainingSetup::sequence_length>());
  // Tokens per micro-batch: the micro-batch again, in tokens, a whole multiple of the sequence
  // length (apply_setting reads it through micro_batch_from_tokens).
  Access tokens;
  tokens.number = [](const TrainingSetup& setup) {
    return static_cast<double>(setup.sequence_length) * setup.micro_batch_sequences;
  };
  add(from(make(id::kTokens, "Tokens per micro-batch", SettingKind::kWhole,
                "Tokens per micro-batch: a whole multiple of the sequence length", ""),
           [](Setting& setting) {
             setting.min = 1;
             setting.max = static_cast<double>(kMaxSequenceLength) * kMaxMicroBatchSequences;
             setting.allowed =
                 "Tokens per micro-batch must be a whole multiple of the sequence length.";
             setting.excludes = id::kMicroBatch;
           }),
      tokens);
  add(from(whole(id::kMicroBatch, "Micro-batch", "Sequences per micro-batch", "microBatchSequences",
                 1, kMaxMicroBatchSequences,
                 "Micro-batch must hold a whole number of sequences " +
                     range_text(1, kMaxMicroBatchSequences) + "."),
           [](Setting& setting) { setting.in_url = false; }),  // links give tokens
      number_access<int, &TrainingSetup::micro_batch_sequences>());
  add(make(id::kFlashAttention, "FlashAttention", kSwitch,
           "FlashAttention: without it, keep the attention-score term", "flashAttention"),
      number_access<bool, &TrainingSetup::flash_attention>());
}

// The parallel layout.
void add_layout(Entries& entries) {
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };
  add(degree(id::kDataParallel, "Data parallelism", "Data-parallel degree d",
             "layout.dataParallel"),
      layout_access<int, &ParallelLayout::data_parallel>());
  add(from(degree(id::kZeroStage, "ZeRO stage", "ZeRO stage, sharded over d·c", "layout.zeroStage"),
           [](Setting& setting) {
             setting.min = 0;
             setting.max = kMaxZeroStage;
             setting.allowed = "ZeRO stage must be " + each_of(0, kMaxZeroStage) + ".";
             setting.help += ": " + each_of(0, kMaxZeroStage);
           }),
      layout_access<int, &ParallelLayout::zero_stage>());
  add(degree(id::kTensorParallel, "Tensor parallelism", "Tensor-parallel degree t",
             "layout.tensorParallel"),
      layout_access<int, &ParallelLayout::tensor_parallel>());
  add(from(make(id::kSequenceParallel, "Sequence parallelism", kSwitch,
                "Sequence parallelism with tensor parallelism", "layout.sequenceParallel"),
           [](Setting& setting) { setting.chosen_by_fit = true; }),
      layout_access<bool, &ParallelLayout::sequence_parallel>());
  add(degree(id::kPipelineParallel, "Pipeline parallelism", "Pipeline-parallel degree p, 1F1B",
             "layout.pipelineParallel"),
      layout_access<int, &ParallelLayout::pipeline_parallel>());
  add(degree(id::kVirtualPipelineStages, "Virtual pipeline stages",
             "Virtual stages per device: the interleaved schedule", "layout.virtualPipelineStages"),
      layout_access<int, &ParallelLayout::virtual_pipeline_stages>());
  // Megatron-LM's --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers.
  const auto stage_layers = [](const char* id, const char* name, const char* help,
                               const char* api_key) {
    Setting setting =
        whole(id, name, help, api_key, 0, kMaxParallelDegree,
              std::string(name) + " must be a whole number from 0 (the even split) to " +
                  format_count(kMaxParallelDegree) + ".");
    setting.defaulted_in_api = true;
    setting.chosen_by_fit = true;
    return setting;
  };
  add(stage_layers(id::kPipelineFirstLayers, "First pipeline stage's layers",
                   "Layers on the first pipeline stage; the stages without a count of their own "
                   "split the rest evenly (0: an even share)",
                   "layout.pipelineFirstStageLayers"),
      layout_access<int, &ParallelLayout::pipeline_first_stage_layers>());
  add(stage_layers(id::kPipelineLastLayers, "Last pipeline stage's layers",
                   "Layers on the last pipeline stage; the stages without a count of their own "
                   "split the rest evenly (0: an even share)",
                   "layout.pipelineLastStageLayers"),
      layout_access<int, &ParallelLayout::pipeline_last_stage_layers>());
  add(degree(id::kContextParallel, "Context parallelism", "Context-parallel degree c",
             "layout.contextParallel"),
      layout_access<int, &ParallelLayout::context_parallel>());
  add(from(degree(id::kExpertParallel, "Expert parallelism",
                  "Expert-parallel degree ep: the routed experts spread over ep of the d·t·c "
                  "devices",
                  "layout.expertParallel"),
           [](Setting& setting) { setting.defaulted_in_api = true; }),
      layout_access<int, &ParallelLayout::expert_parallel>());
  add(from(whole(id::kExpertTensorParallel, "Expert tensor parallelism",
                 "Expert tensor-parallel degree etp: each routed expert split over etp; 0 means t",
                 "layout.expertTensorParallel", 0, kMaxParallelDegree,
                 "Expert tensor parallelism must be a whole number from 0 (as tensor parallelism) "
                 "to " +
                     format_count(kMaxParallelDegree) + "."),
           [](Setting& setting) {
             setting.defaulted_in_api = true;
             setting.chosen_by_fit = true;
           }),
      layout_access<int, &ParallelLayout::expert_tensor_parallel>());
  add(from(make(id::kCapacityFactor, "Capacity factor", SettingKind::kDecimal,
                "Each expert's token buffer as a multiple of balanced routing's (0: dropless, at "
                "balanced load)",
                "capacityFactor"),
           [](Setting& setting) {
             setting.min = 0;
             setting.max = kMaxCapacityFactor;
             setting.allowed = "Capacity factor must be a number from 0 (dropless) to " +
                               format_count(kMaxCapacityFactor) + ".";
             setting.defaulted_in_api = true;
           }),
      number_access<double, &TrainingSetup::capacity_factor>());
}

// The recipe, the device and its headroom.
void add_recipe_and_device(Entries& entries) {
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };
  add(from(choice(id::kRecompute, "Recomputation", choices<Recompute>(), "Activation recomputation",
                  "recompute"),
           [](Setting& setting) { setting.chosen_by_fit = true; }),
      enum_access<Recompute, &TrainingSetup::recompute>());
  add(from(choice(id::kActivationModel, "Activation model", choices<ActivationModel>(),
                  "Activation model", "activationModel"),
           [](Setting& setting) { setting.defaulted_in_api = true; }),
      enum_access<ActivationModel, &TrainingSetup::activation_model>());
  add(from(choice(id::kDropout, "Dropout", choices<Dropout>(),
                  "Dropout on the residuals and the attention probabilities: model, off, on, or "
                  "its probability (0 is off, above 0 on; the masks' bytes do not depend on it)",
                  "dropout"),
           [](Setting& setting) {
             setting.defaulted_in_api = true;
             setting.allowed =
                 "Dropout must be model, off, on, or a probability from 0 to below 1.";
           }),
      [] {
        Access access = enum_access<Dropout, &TrainingSetup::dropout>();
        access.read_as = [](std::string_view text) {
          const double p = parse_decimal(text);
          if (!(p >= 0 && p < 1)) return std::string(text);
          return choice_id(p == 0 ? Dropout::kOff : Dropout::kOn);
        };
        return access;
      }());
  add(choice(id::kOptimizer, "Optimizer", choices<Optimizer>(), "Optimizer", "optimizer"),
      enum_access<Optimizer, &TrainingSetup::optimizer>());
  add(choice(id::kPrecision, "Precision", choices<Precision>(), "Precision", "precision"),
      enum_access<Precision, &TrainingSetup::precision>());
  add(make(id::kLogits, "Logits", kSwitch, "Count the output layer's logits and the loss",
           "logits"),
      number_access<bool, &TrainingSetup::logits>());
  add(from(choice(id::kLoss, "Loss", choices<Loss>(), "How the loss is computed", "loss"),
           [](Setting& setting) {
             setting.requires_setting = id::kLogits;
             setting.requires_value = "on";
             setting.requires_reason = "the loss is counted with the logits";
             setting.defaulted_in_api = true;
           }),
      enum_access<Loss, &TrainingSetup::loss>());
  add(from(whole(id::kLossChunks, "Loss chunks",
                 "The chunked loss's chunks: torchtune's num_output_chunks", "lossChunks", 1,
                 kMaxLossChunks),
           [](Setting& setting) {
             setting.requires_setting = id::kLoss;
             setting.requires_value = choice_id(Loss::kChunked);
             setting.requires_reason = "the chunks are the chunked loss's";
             setting.defaulted_in_api = true;
           }),
      number_access<int, &TrainingSetup::loss_chunks>());
  add(from(make(id::kMtp, "Multi-token prediction", kSwitch,
                "Train the model's multi-token-prediction modules (DeepSeek-V3's, GLM-4.5's)",
                "mtp"),
           [](Setting& setting) { setting.defaulted_in_api = true; }),
      number_access<bool, &TrainingSetup::mtp>());
  add(from(make(id::kTrainVision, "Train the vision tower", kSwitch,
                "Train a multimodal model's vision tower and projector; frozen otherwise",
                "trainVision"),
           [](Setting& setting) { setting.defaulted_in_api = true; }),
      number_access<bool, &TrainingSetup::train_vision>());
  add(choice(id::kDevice, "Device", device_choices(), "Device", "deviceId"),
      id_access<&TrainingSetup::device_id>());
  add(from(make(id::kDeviceCapacity, "Custom capacity", SettingKind::kDecimal,
                "A custom device's memory in GB (10^9 bytes)", "customCapacityGb"),
           [](Setting& setting) {
             setting.min = 0;
             setting.min_exclusive = true;
             setting.max = kMaxCustomCapacityGb;
             setting.allowed = "A custom device's memory must be more than 0 GB and at most " +
                               format_count(kMaxCustomCapacityGb) + " GB.";
             setting.requires_setting = id::kDevice;
             setting.requires_value = kCustomDeviceId;
             setting.requires_reason = "a capacity is given for the custom device";
             setting.excludes = id::kDevice;
           }),
      number_access<double, &TrainingSetup::custom_capacity_gb>());
  add(from(make(id::kHeadroom, "Headroom", SettingKind::kDecimal,
                "Percent of each device's memory kept free when asking whether it fits",
                "headroomPercent"),
           [](Setting& setting) {
             setting.min = 0;
             setting.max = kMaxHeadroomPercent;
             setting.allowed = "Headroom must be a percentage from 0 to " +
                               format_count(kMaxHeadroomPercent) + ".";
             setting.defaulted_in_api = true;
           }),
      number_access<double, &TrainingSetup::headroom_percent>());
}

// Fine-tuning (fine_tuning.hpp), added after the API was published: a setup without it trains
// every parameter, on the device, as before.
void add_fine_tuning(Entries& entries) {
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };
  add(added(whole(id::kLoraRank, "LoRA rank",
                  "LoRA's rank r: adapters train, the base is frozen (0: every parameter trains)",
                  "loraRank", 0, kMaxLoraRank,
                  "LoRA rank must be a whole number from 0 (no LoRA) to " +
                      format_count(kMaxLoraRank) + ".")),
      number_access<int, &TrainingSetup::lora_rank>());
  add(added(choice(id::kLoraTargets, "LoRA targets", choices<LoraTargets>(),
                   "The layers LoRA's adapters sit on", "loraTargets")),
      enum_access<LoraTargets, &TrainingSetup::lora_targets>());
  add(from(added(make(id::kLoraDropout, "LoRA dropout", SettingKind::kDecimal,
                      "PEFT's lora_dropout: above 0 each adapter saves a dropped copy of its "
                      "input and a 1-byte mask",
                      "loraDropout")),
           [](Setting& setting) {
             setting.min = 0;
             setting.max = kMaxLoraDropout;
             setting.max_exclusive = true;
             setting.allowed = "LoRA dropout must be a probability from 0 to below 1.";
           }),
      number_access<double, &TrainingSetup::lora_dropout>());
  add(added(choice(id::kBaseWeights, "Base weights", choices<BaseWeights>(),
                   "How LoRA's frozen base linear weights are held", "baseWeights")),
      enum_access<BaseWeights, &TrainingSetup::base_weights>());
  add(added(choice(id::kOffload, "Offload", choices<Offload>(),
                   "What is held in the host's memory instead of the device's", "offload")),
      enum_access<Offload, &TrainingSetup::offload>());
  add(added(make(id::kOffloadActivations, "Offload activations", kSwitch,
                 "Hold the saved activations in the host's memory but the layers in flight",
                 "offloadActivations")),
      number_access<bool, &TrainingSetup::offload_activations>());
  add(from(added(make(id::kHostCapacity, "Host memory", SettingKind::kDecimal,
                      "The host's memory per node in GB (10^9 bytes), shared by its devices: "
                      "what offloading holds is checked against it (0: not checked)",
                      "hostCapacityGb")),
           [](Setting& setting) {
             setting.min = 0;
             setting.max = kMaxHostCapacityGb;
             setting.allowed = "Host memory must be from 0 (not checked) to " +
                               format_count(kMaxHostCapacityGb) + " GB.";
           }),
      number_access<double, &TrainingSetup::host_capacity_gb>());
}

// The training stack and its frameworks' own switches.
void add_stack_settings(Entries& entries) {
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };
  add(added(choice(id::kStack, "Stack", choices<Stack>(),
                   "What trains the model: the idealised step, or a framework's real holdings",
                   "stack")),
      enum_access<Stack, &TrainingSetup::stack>());
  // A setting of one stack's: the page enables it under that stack alone.
  const auto only_under = [](Stack stack, const char* reason) {
    return [stack, reason](Setting& setting) {
      setting.requires_setting = id::kStack;
      setting.requires_value = choice_id(stack);
      setting.requires_reason = reason;
    };
  };
  add(from(added(make(id::kFp8AllGather, "FP8 all-gather", kSwitch,
                      "torchtitan under fp8-mixed: FSDP2 gathers the linear weights in FP8",
                      "fp8AllGather")),
           only_under(Stack::kTorchtitan, "FSDP2's FP8 all-gather is torchtitan's switch")),
      number_access<bool, &TrainingSetup::fp8_all_gather>());
  add(from(added(choice(id::kOverlapComm, "Overlap communication", choices<OverlapComm>(),
                        "DeepSpeed's overlap_comm: the gradient reduction overlapped with the "
                        "backward pass",
                        "overlapComm")),
           only_under(Stack::kDeepSpeed, "overlap_comm is DeepSpeed's switch")),
      enum_access<OverlapComm, &TrainingSetup::overlap_comm>());
  // Megatron-LM's vocabulary padding (stacks/stack_run.hpp).
  const auto megatrons = [&only_under](const char* reason) {
    return only_under(Stack::kMegatron, reason);
  };
  add(from(added(whole(id::kVocabDivisibleBy, "Vocabulary padded to a multiple of",
                       "Megatron-LM's --make-vocab-size-divisible-by: the vocabulary is padded "
                       "to a multiple of it × t",
                       "makeVocabSizeDivisibleBy", 1, kMaxParallelDegree)),
           megatrons("the vocabulary's padding is Megatron-LM's")),
      number_access<int, &TrainingSetup::make_vocab_size_divisible_by>());
  add(from(added(make(id::kEodToken, "NullTokenizer's end-of-document token", kSwitch,
                      "Megatron-LM's --tokenizer-type NullTokenizer before Megatron-Core 0.18: "
                      "its end-of-document token joins the vocabulary before padding",
                      "eodToken")),
           megatrons("the NullTokenizer is Megatron-LM's")),
      number_access<bool, &TrainingSetup::eod_token>());
  add(from(added(choice(id::kCpCommType, "Context-parallel exchange", choices<CpCommType>(),
                        "Megatron-LM's --cp-comm-type: how context parallelism exchanges "
                        "attention's tensors",
                        "cpCommType")),
           megatrons("--cp-comm-type is Megatron-LM's")),
      enum_access<CpCommType, &TrainingSetup::cp_comm_type>());
  add(from(added(choice(
               id::kCompile, "torch.compile", choices<Compile>(),
               "torch.compile as torchtitan and torchtune run it: the transformer blocks, or the "
               "loss too",
               "compile")),
           [&only_under](Setting& setting) {
             only_under(Stack::kTorchtitan,
                        "torch.compile is modelled as torchtitan and torchtune run it")(setting);
             setting.requires_also = choice_id(Stack::kTorchtune);
           }),
      enum_access<Compile, &TrainingSetup::compile>());
  add(added(make(id::kOptimizerInBackward, "Optimizer in backward", kSwitch,
                 "torchtune's optimizer_in_bwd: each parameter stepped as its gradient is made, "
                 "which is then freed",
                 "optimizerInBackward")),
      number_access<bool, &TrainingSetup::optimizer_in_backward>());
  add(from(added(make(id::kPagedOptimizer, "Paged optimizer", kSwitch,
                      "bitsandbytes' paged AdamW (transformers' paged_adamw_32bit and "
                      "paged_adamw_8bit): the state of each parameter of 10^5 elements or more "
                      "outside PyTorch's allocator, paged to the host when the device runs short",
                      "pagedOptimizer")),
           only_under(Stack::kHf,
                      "paged optimisers are modelled as transformers' Trainer runs "
                      "them")),
      number_access<bool, &TrainingSetup::paged_optimizer>());
  add(from(added(make(id::kKbitPrep, "prepare_model_for_kbit_training", kSwitch,
                      "PEFT's prepare_model_for_kbit_training: the embedding, norms and output "
                      "layer upcast to FP32, so the residual stream runs in FP32, with gradient "
                      "checkpointing",
                      "kbitPrep")),
           only_under(Stack::kHf,
                      "prepare_model_for_kbit_training is modelled as transformers' "
                      "Trainer runs it")),
      number_access<bool, &TrainingSetup::kbit_prep>());
  add(added(
          make(id::kExpandableSegments, "Expandable segments", kSwitch,
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator maps each "
               "stream's memory as one segment that grows page by page",
               "expandableSegments")),
      number_access<bool, &TrainingSetup::expandable_segments>());
  add(from(added(whole(id::kMaxSplitSize, "Largest block split (MiB)",
                       "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb: blocks this large or larger are "
                       "not split for smaller requests (0: no limit, PyTorch's default)",
                       "maxSplitSizeMb", 0, kMaxAllocatorSplitMb)),
           [](Setting& setting) {
             setting.allowed = "The largest block split must be 0 (no limit) or from 21 to " +
                               format_count(kMaxAllocatorSplitMb) + " MiB.";
           }),
      number_access<int, &TrainingSetup::max_split_size_mb>());
}

std::vector<Entry> make_entries() {
  Entries entries;
  add_model_and_batch(entries);
  add_layout(entries);
  add_recipe_and_device(entries);
  add_fine_tuning(entries);
  add_stack_settings(entries);
  return entries;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = make_entries();
  return table;
}

const Entry* find_entry(std::string_view id) {
  for (const Entry& entry : entries()) {
    if (entry.setting.id == id) return &entry;
  }
  return nullptr;
}

std::string text_of(const Entry& entry, const TrainingSetup& setup) {
  const Access& access = entry.access;
  if (access.id != nullptr) return access.id(setup);
  const double value = access.number(setup);
  switch (entry.setting.kind) {
    case SettingKind::kSwitch:
      return value != 0 ? "on" : "off";
    case SettingKind::kDecimal:
      return shortest_decimal(value);
    case SettingKind::kWhole:
    case SettingKind::kChoice:
      break;
  }
  return shortest_decimal(value);
}

bool has_id(const std::vector<Choice>& choices, std::string_view id) {
  for (const Choice& choice : choices) {
    if (choice.id == id) return true;
  }
  return false;
}

bool number_allowed(const Setting& setting, double value) {
  const bool above_min = setting.min_exclusive ? value > setting.min : value >= setting.min;
  const bool below_max = setting.max_exclusive ? value < setting.max : value <= setting.max;
  return above_min && below_max;  // false for NaN
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> made;
    // Each default is TrainingSetup{}'s own value, so the two can never disagree.
    const TrainingSetup defaults;
    for (const Entry& entry : entries()) {
      made.push_back(entry.setting);
      made.back().default_text = text_of(entry, defaults);
    }
    return made;
  }();
  return table;
}

const Setting* find_setting(std::string_view id) {
  for (const Setting& setting : settings()) {
    if (setting.id == id) return &setting;
  }
  return nullptr;
}

std::string unknown_choice_message(const Setting& setting, std::string_view text) {
  return setting.name + " '" + std::string(text) + "' is not known; choose one of " +
         ids_joined(setting.choices) + ".";
}

MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences) {
  MicroBatchFromTokens result;
  const Setting& seq_len = *find_setting(id::kSequenceLength);
  if (!number_allowed(seq_len, sequence_length)) {
    result.answer = refusal(seq_len.id, seq_len.allowed);
    return result;
  }
  const int max_sequences =
      max_micro_batch_sequences >= 1 && max_micro_batch_sequences <= kMaxMicroBatchSequences
          ? max_micro_batch_sequences
          : kMaxMicroBatchSequences;
  const double max_tokens = static_cast<double>(sequence_length) * max_sequences;
  const bool whole_multiple = std::isfinite(tokens) && tokens >= sequence_length &&
                              tokens <= max_tokens &&
                              std::fmod(tokens, static_cast<double>(sequence_length)) == 0;
  if (!whole_multiple) {
    result.answer = refusal(id::kTokens, "Tokens per micro-batch must be a whole multiple of " +
                                             format_count(sequence_length) + " (one sequence), " +
                                             range_text(sequence_length, max_tokens) + ".");
    return result;
  }
  result.micro_batch_sequences = static_cast<int>(tokens / sequence_length);
  return result;
}

Answer apply_setting(TrainingSetup& setup, std::string_view id, std::string_view text,
                     int max_micro_batch_sequences) {
  const Entry* entry = find_entry(id);
  if (entry == nullptr) {
    return refusal(std::string(id), "'" + std::string(id) + "' is not a setting.");
  }
  const Setting& setting = entry->setting;
  const Access& access = entry->access;
  switch (setting.kind) {
    case SettingKind::kChoice: {
      const std::string chosen =
          access.read_as != nullptr ? access.read_as(text) : std::string(text);
      if (!has_id(setting.choices, chosen)) {
        return refusal(setting.id, access.read_as != nullptr
                                       ? setting.allowed
                                       : unknown_choice_message(setting, text));
      }
      access.set_id(setup, chosen);
      return {};
    }
    case SettingKind::kSwitch:
      if (text != "on" && text != "off") return refusal(setting.id, "use on or off.");
      access.set_number(setup, text == "on" ? 1 : 0);
      return {};
    case SettingKind::kDecimal: {
      const double value = parse_decimal(text);
      if (!number_allowed(setting, value)) return refusal(setting.id, setting.allowed);
      access.set_number(setup, value);
      return {};
    }
    case SettingKind::kWhole:
      break;
  }
  if (access.set_number == nullptr) {  // tokens: the micro-batch, checked against the sequence
    const MicroBatchFromTokens micro_batch = micro_batch_from_tokens(
        parse_decimal(text), setup.sequence_length, max_micro_batch_sequences);
    if (!micro_batch.answer.ok()) return micro_batch.answer;
    setup.micro_batch_sequences = micro_batch.micro_batch_sequences;
    return {};
  }
  const int value = parse_whole_number(text);
  if (!number_allowed(setting, value)) return refusal(setting.id, setting.allowed);
  access.set_number(setup, value);
  return {};
}

SettingChange change_setting(const TrainingSetup& setup, std::string_view id, std::string_view text,
                             int max_micro_batch_sequences) {
  SettingChange change{{}, setup};
  change.answer = apply_setting(change.setup, id, text, max_micro_batch_sequences);
  if (!change.answer.ok()) change.setup = setup;
  return change;
}

std::string setting_text(const TrainingSetup& setup, std::string_view id) {
  const Entry* entry = find_entry(id);
  return entry != nullptr ? text_of(*entry, setup) : std::string();
}

Answer check_choice(std::string_view setting_id, std::string_view id) {
  const Entry* entry = find_entry(setting_id);
  if (entry == nullptr || entry->setting.kind != SettingKind::kChoice) {
    return refusal(std::string(setting_id), "'" + std::string(setting_id) + "' is not a choice.");
  }
  const bool held = entry->access.holds != nullptr ? entry->access.holds(std::string(id))
                                                   : has_id(entry->setting.choices, id);
  return held ? Answer{} : refusal(entry->setting.id, unknown_choice_message(entry->setting, id));
}

Answer check_setting_values(const TrainingSetup& setup) {
  for (const auto& [setting, access] : entries()) {
    if (access.always_valid) continue;
    if (setting.kind == SettingKind::kChoice) {
      Answer answer = check_choice(setting.id, access.id(setup));
      if (!answer.ok()) return answer;
    } else if (setting.kind != SettingKind::kSwitch && access.set_number != nullptr &&
               !number_allowed(setting, access.number(setup))) {
      return refusal(setting.id, setting.allowed);
    }
  }
  return {};
}

}  // namespace trainmem
