#include "trainmem/settings.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

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
};

struct Entry {
  Setting setting;
  Access access;
};

std::string range_text(double low, double high) {
  return "from " + format_count(low) + " to " + format_count(high);
}

std::vector<Choice> model_choices() {
  std::vector<Choice> choices;
  for (const ModelShape& shape : preset_models()) {
    choices.push_back({shape.id, shape.name, shape.source});
  }
  return choices;
}

// A choice setting over an enum class: its choices and its field, by member pointer.
template <typename Enum, Enum TrainingSetup::*field>
Access enum_access() {
  Access access;
  access.id = [](const TrainingSetup& setup) { return choice_id(setup.*field); };
  access.set_id = [](TrainingSetup& setup, const std::string& id) {
    choice_from_id(id, setup.*field);
  };
  return access;
}

template <int ParallelLayout::*field>
Access degree_access() {
  Access access;
  access.number = [](const TrainingSetup& setup) {
    return static_cast<double>(setup.layout.*field);
  };
  access.set_number = [](TrainingSetup& setup, double value) {
    setup.layout.*field = static_cast<int>(value);
  };
  return access;
}

Setting degree(const char* id, const char* name, const char* help, const char* api_key) {
  Setting setting;
  setting.id = id;
  setting.name = name;
  setting.kind = SettingKind::kWhole;
  setting.min = 1;
  setting.max = kMaxParallelDegree;
  setting.allowed =
      setting.name + " must be a whole number " + range_text(1, kMaxParallelDegree) + ".";
  setting.help = help;
  setting.api_key = api_key;
  setting.chosen_by_fit = true;
  return setting;
}

Setting choice(const char* id, const char* name, std::vector<Choice> choices, std::string help,
               const char* api_key) {
  Setting setting;
  setting.id = id;
  setting.name = name;
  setting.kind = SettingKind::kChoice;
  setting.choices = std::move(choices);
  setting.help = std::move(help) + ": " + ids_joined(setting.choices);
  setting.api_key = api_key;
  return setting;
}

Setting toggle(const char* id, const char* name, const char* help, const char* api_key) {
  Setting setting;
  setting.id = id;
  setting.name = name;
  setting.kind = SettingKind::kSwitch;
  setting.help = help;
  setting.api_key = api_key;
  return setting;
}

std::vector<Entry> make_entries() {
  std::vector<Entry> entries;
  const auto add = [&entries](Setting setting, Access access) {
    entries.push_back({std::move(setting), access});
  };

  {
    Setting model = choice(id::kModel, "Model", model_choices(), "Model", "modelId");
    Access access;
    access.id = [](const TrainingSetup& setup) { return setup.model_id; };
    access.set_id = [](TrainingSetup& setup, const std::string& id) { setup.model_id = id; };
    access.holds = [](const std::string& id) {
      return id == kCustomModelId || find_preset(id) != nullptr;
    };
    add(model, access);
  }
  {
    Setting seq_len;
    seq_len.id = id::kSequenceLength;
    seq_len.name = "Sequence length";
    seq_len.min = 1;
    seq_len.max = kMaxSequenceLength;
    seq_len.allowed = "Sequence length must be a whole number of tokens " +
                      range_text(1, kMaxSequenceLength) + ".";
    seq_len.help = "Sequence length in tokens";
    seq_len.api_key = "sequenceLength";
    Access access;
    access.number = [](const TrainingSetup& setup) {
      return static_cast<double>(setup.sequence_length);
    };
    access.set_number = [](TrainingSetup& setup, double value) {
      setup.sequence_length = static_cast<int>(value);
    };
    add(seq_len, access);
  }
  {
    // Tokens per micro-batch: the micro-batch again, in tokens, a whole multiple of the sequence
    // length (apply_setting checks it through micro_batch_from_tokens).
    Setting tokens;
    tokens.id = id::kTokens;
    tokens.name = "Tokens per micro-batch";
    tokens.help = "Tokens per micro-batch: a whole multiple of the sequence length";
    tokens.excludes = id::kMicroBatch;
    Access access;
    access.number = [](const TrainingSetup& setup) {
      return static_cast<double>(setup.sequence_length) * setup.micro_batch_sequences;
    };
    add(tokens, access);
  }
  {
    Setting micro_batch;
    micro_batch.id = id::kMicroBatch;
    micro_batch.name = "Micro-batch";
    micro_batch.min = 1;
    micro_batch.max = kMaxMicroBatchSequences;
    micro_batch.allowed = "Micro-batch must hold a whole number of sequences " +
                          range_text(1, kMaxMicroBatchSequences) + ".";
    micro_batch.help = "Sequences per micro-batch";
    micro_batch.api_key = "microBatchSequences";
    micro_batch.in_url = false;  // links give tokens
    Access access;
    access.number = [](const TrainingSetup& setup) {
      return static_cast<double>(setup.micro_batch_sequences);
    };
    access.set_number = [](TrainingSetup& setup, double value) {
      setup.micro_batch_sequences = static_cast<int>(value);
    };
    add(micro_batch, access);
  }
  {
    Access access;
    access.number = [](const TrainingSetup& setup) { return setup.flash_attention ? 1.0 : 0.0; };
    access.set_number = [](TrainingSetup& setup, double on) { setup.flash_attention = on != 0; };
    add(toggle(id::kFlashAttention, "FlashAttention",
               "FlashAttention: without it, keep the attention-score term", "flashAttention"),
        access);
  }
  add(degree(id::kDataParallel, "Data parallelism", "Data-parallel degree d",
             "layout.dataParallel"),
      degree_access<&ParallelLayout::data_parallel>());
  {
    Setting zero = degree(id::kZeroStage, "ZeRO stage",
                          "ZeRO stage: 0, 1, 2 or 3, sharded over d·c", "layout.zeroStage");
    zero.min = 0;
    zero.max = 3;
    zero.allowed = "ZeRO stage must be 0, 1, 2 or 3.";
    add(zero, degree_access<&ParallelLayout::zero_stage>());
  }
  add(degree(id::kTensorParallel, "Tensor parallelism", "Tensor-parallel degree t",
             "layout.tensorParallel"),
      degree_access<&ParallelLayout::tensor_parallel>());
  {
    Setting sequence_parallel =
        toggle(id::kSequenceParallel, "Sequence parallelism",
               "Sequence parallelism with tensor parallelism", "layout.sequenceParallel");
    sequence_parallel.chosen_by_fit = true;
    Access access;
    access.number = [](const TrainingSetup& setup) {
      return setup.layout.sequence_parallel ? 1.0 : 0.0;
    };
    access.set_number = [](TrainingSetup& setup, double on) {
      setup.layout.sequence_parallel = on != 0;
    };
    add(sequence_parallel, access);
  }
  add(degree(id::kPipelineParallel, "Pipeline parallelism", "Pipeline-parallel degree p, 1F1B",
             "layout.pipelineParallel"),
      degree_access<&ParallelLayout::pipeline_parallel>());
  add(degree(id::kVirtualPipelineStages, "Virtual pipeline stages",
             "Virtual stages per device: the interleaved schedule", "layout.virtualPipelineStages"),
      degree_access<&ParallelLayout::virtual_pipeline_stages>());
  add(degree(id::kContextParallel, "Context parallelism", "Context-parallel degree c",
             "layout.contextParallel"),
      degree_access<&ParallelLayout::context_parallel>());
  {
    Setting recompute = choice(id::kRecompute, "Recomputation", choices<Recompute>(),
                               "Activation recomputation", "recompute");
    recompute.chosen_by_fit = true;
    add(recompute, enum_access<Recompute, &TrainingSetup::recompute>());
  }
  add(choice(id::kActivationModel, "Activation model", choices<ActivationModel>(),
             "Activation model", "activationModel"),
      enum_access<ActivationModel, &TrainingSetup::activation_model>());
  add(choice(id::kOptimizer, "Optimizer", choices<Optimizer>(), "Optimizer", "optimizer"),
      enum_access<Optimizer, &TrainingSetup::optimizer>());
  add(choice(id::kPrecision, "Precision", choices<Precision>(), "Precision", "precision"),
      enum_access<Precision, &TrainingSetup::precision>());
  {
    Access access;
    access.number = [](const TrainingSetup& setup) { return setup.logits ? 1.0 : 0.0; };
    access.set_number = [](TrainingSetup& setup, double on) { setup.logits = on != 0; };
    add(toggle(id::kLogits, "Logits", "Count the output layer's logits and the loss", "logits"),
        access);
  }
  {
    Setting loss = choice(id::kLoss, "Loss", choices<Loss>(), "How the loss is computed", "loss");
    loss.requires_setting = id::kLogits;
    loss.requires_value = "on";
    loss.requires_reason = "the loss is counted with the logits";
    add(loss, enum_access<Loss, &TrainingSetup::loss>());
  }
  {
    Setting device = choice(id::kDevice, "Device", device_choices(), "Device", "deviceId");
    Access access;
    access.id = [](const TrainingSetup& setup) { return setup.device_id; };
    access.set_id = [](TrainingSetup& setup, const std::string& id) { setup.device_id = id; };
    add(device, access);
  }
  {
    Setting device_gb;
    device_gb.id = id::kDeviceCapacity;
    device_gb.name = "Custom capacity";
    device_gb.kind = SettingKind::kDecimal;
    device_gb.min = 0;
    device_gb.max = kMaxCustomCapacityGb;
    device_gb.allowed = "A custom device's memory must be more than 0 GB and at most " +
                        format_count(kMaxCustomCapacityGb) + " GB.";
    device_gb.help = "A custom device's memory in GB (10^9 bytes)";
    device_gb.api_key = "customCapacityGb";
    device_gb.requires_setting = id::kDevice;
    device_gb.requires_value = kCustomDeviceId;
    device_gb.requires_reason = "a capacity is given for the custom device";
    device_gb.excludes = id::kDevice;
    Access access;
    access.number = [](const TrainingSetup& setup) { return setup.custom_capacity_gb; };
    access.set_number = [](TrainingSetup& setup, double value) {
      setup.custom_capacity_gb = value;
    };
    add(device_gb, access);
  }
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

// The shortest decimal text that reads back as `value`: "80", "2.5", "0.1".
std::string decimal_text(double value) {
  char buffer[32];
  if (std::trunc(value) == value && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string text_of(const Entry& entry, const TrainingSetup& setup) {
  const Access& access = entry.access;
  if (access.id != nullptr) return access.id(setup);
  const double value = access.number(setup);
  switch (entry.setting.kind) {
    case SettingKind::kSwitch:
      return value != 0 ? "on" : "off";
    case SettingKind::kDecimal:
      return decimal_text(value);
    case SettingKind::kWhole:
    case SettingKind::kChoice:
      break;
  }
  return decimal_text(value);
}

bool has_id(const std::vector<Choice>& choices, std::string_view id) {
  for (const Choice& choice : choices) {
    if (choice.id == id) return true;
  }
  return false;
}

bool number_allowed(const Setting& setting, double value) {
  if (setting.kind == SettingKind::kDecimal) return value > setting.min && value <= setting.max;
  return value >= setting.min && value <= setting.max;
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
    case SettingKind::kChoice:
      if (!has_id(setting.choices, text)) {
        return refusal(setting.id, unknown_choice_message(setting, text));
      }
      access.set_id(setup, std::string(text));
      return {};
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
  for (const Entry& entry : entries()) {
    const Setting& setting = entry.setting;
    const Access& access = entry.access;
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
