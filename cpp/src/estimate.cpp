#include "trainmem/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "trainmem/activations.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

std::string range_text(double low, double high) {
  return "from " + format_count(low) + " to " + format_count(high);
}

// ---- Validation ----------------------------------------------------------------------------

struct Refusal {
  std::string field;
  std::string message;
};

bool in_range(int value, int low, int high) { return value >= low && value <= high; }

std::string degree_message(const std::string& what) {
  return what + " must be a whole number " + range_text(1, kMaxParallelDegree) + ".";
}

// The first problem with `setup`, or an empty field when there is none.
Refusal check(const TrainingSetup& setup, const ModelShape* shape) {
  if (shape == nullptr) {
    return {"model", "Model '" + setup.model_id + "' is not known; choose one of " +
                         preset_ids_joined() + "."};
  }
  if (setup.model_id == kCustomModelId) {
    const std::string problem = model_shape_problem(*shape);
    if (!problem.empty()) return {"config", "The custom model's shape is not usable: " + problem};
  }
  if (!in_range(setup.sequence_length, 1, kMaxSequenceLength)) {
    return {"seq-len", "Sequence length must be a whole number of tokens " +
                           range_text(1, kMaxSequenceLength) + "."};
  }
  if (!in_range(setup.micro_batch_sequences, 1, kMaxMicroBatchSequences)) {
    return {"micro-batch", "Micro-batch must hold a whole number of sequences " +
                               range_text(1, kMaxMicroBatchSequences) + "."};
  }
  const ParallelLayout& layout = setup.layout;
  if (!in_range(layout.data_parallel, 1, kMaxParallelDegree)) {
    return {"dp", degree_message("Data parallelism")};
  }
  if (!in_range(layout.tensor_parallel, 1, kMaxParallelDegree)) {
    return {"tp", degree_message("Tensor parallelism")};
  }
  if (!in_range(layout.pipeline_parallel, 1, kMaxParallelDegree)) {
    return {"pp", degree_message("Pipeline parallelism")};
  }
  if (!in_range(layout.virtual_pipeline_stages, 1, kMaxParallelDegree)) {
    return {"vpp", degree_message("Virtual pipeline stages")};
  }
  if (!in_range(layout.context_parallel, 1, kMaxParallelDegree)) {
    return {"cp", degree_message("Context parallelism")};
  }
  if (!in_range(layout.zero_stage, 0, 3)) {
    return {"zero", "ZeRO stage must be 0, 1, 2 or 3."};
  }
  const int t = layout.tensor_parallel;
  if (shape->num_attention_heads % t != 0 || shape->num_key_value_heads % t != 0 ||
      shape->ffn_hidden_size % t != 0) {
    return {"tp", "Tensor parallelism " + std::to_string(t) + " must divide the " +
                      std::to_string(shape->num_attention_heads) + " attention heads, " +
                      std::to_string(shape->num_key_value_heads) + " key/value heads and " +
                      format_count(shape->ffn_hidden_size) + " FFN width of " + shape->name + "."};
  }
  if (layout.sequence_parallel && t == 1) {
    return {"sequence-parallel",
            "Sequence parallelism splits what tensor parallelism leaves whole; it needs tensor "
            "parallelism above 1."};
  }
  const int p = layout.pipeline_parallel;
  if (shape->num_layers % p != 0) {
    return {"pp", "Pipeline parallelism " + std::to_string(p) + " must divide the " +
                      std::to_string(shape->num_layers) + " layers of " + shape->name + "."};
  }
  const int v = layout.virtual_pipeline_stages;
  if (v > 1 && p == 1) {
    return {"vpp",
            "Virtual pipeline stages interleave a pipeline; they need pipeline "
            "parallelism above 1."};
  }
  if (shape->num_layers % (static_cast<long long>(p) * v) != 0) {
    return {"vpp", "Pipeline parallelism times virtual stages (" + std::to_string(p) + " × " +
                       std::to_string(v) + ") must divide the " +
                       std::to_string(shape->num_layers) + " layers of " + shape->name + "."};
  }
  const int c = layout.context_parallel;
  if (setup.sequence_length % c != 0) {
    return {"cp", "Context parallelism " + std::to_string(c) + " must divide the sequence length " +
                      format_count(setup.sequence_length) + "."};
  }
  const double num_devices = static_cast<double>(layout.data_parallel) * t * p * c;
  if (num_devices > kMaxDevices) {
    return {"dp",
            "The layout's d·t·p·c devices must number at most " + format_count(kMaxDevices) + "."};
  }
  if (layout.zero_stage > 0 && static_cast<long long>(layout.data_parallel) * c == 1) {
    return {"zero",
            "ZeRO shards the model states over data-parallel replicas; a ZeRO stage "
            "above 0 needs data or context parallelism above 1."};
  }
  if (!has_choice(recompute_choices(), setup.recompute)) {
    return {"recompute", "Recomputation '" + setup.recompute + "' is not known; choose one of " +
                             ids_joined(recompute_choices()) + "."};
  }
  if (!has_choice(activation_model_choices(), setup.activation_model)) {
    return {"activations", "Activation model '" + setup.activation_model +
                               "' is not known; choose one of " +
                               ids_joined(activation_model_choices()) + "."};
  }
  if (!has_choice(loss_choices(), setup.loss)) {
    return {"loss", "Loss '" + setup.loss + "' is not known; choose one of " +
                        ids_joined(loss_choices()) + "."};
  }
  if (!has_choice(optimizer_choices(), setup.optimizer)) {
    return {"optimizer", "Optimizer '" + setup.optimizer + "' is not known; choose one of " +
                             ids_joined(optimizer_choices()) + "."};
  }
  if (!has_choice(precision_choices(), setup.precision)) {
    return {"precision", "Precision '" + setup.precision + "' is not known; choose one of " +
                             ids_joined(precision_choices()) + "."};
  }
  // Checked whatever the device, so that no unusable capacity sits in a setup (or a link, or a
  // field) waiting for "custom" to be chosen.
  if (!(setup.custom_capacity_gb > 0 && setup.custom_capacity_gb <= kMaxCustomCapacityGb)) {
    return {"device-gb", "A custom device's memory must be more than 0 GB and at most " +
                             format_count(kMaxCustomCapacityGb) + " GB."};
  }
  if (setup.device_id != kCustomDeviceId && find_device(setup.device_id) == nullptr) {
    return {"device", "Device '" + setup.device_id + "' is not known; choose one of " +
                          ids_joined(device_choices()) + "."};
  }
  return {};
}

Device device_for(const TrainingSetup& setup) {
  if (setup.device_id == kCustomDeviceId) {
    const std::string gigabytes = format_bytes(setup.custom_capacity_gb * kBytesPerGigabyte, 0);
    return {kCustomDeviceId, "Custom " + gigabytes, "device", setup.custom_capacity_gb * 1e9};
  }
  return *find_device(setup.device_id);
}

// ---- The arithmetic, once, for the estimate and its explanation --------------------------------

struct ActivationsPerLayer {
  double kept_bytes = 0;               // saved for the backward pass, per layer
  double recompute_working_bytes = 0;  // full recomputation: one layer rebuilt, less its input
  double replicated_factor = 0;        // Korthikanti: the bracket's first part: 34, 10 + 24/t…
  double score_factor = 0;             // Korthikanti: 5·a·s/(h·t), or 0
  double saved_bytes_per_token = 0;    // llama-block: the saved tensors' sum, per token
  double tokens_on_device = 0;         // s/c · b
};

ActivationsPerLayer layer_activations(const ModelShape& shape, const TrainingSetup& setup,
                                      int micro_batch_sequences, bool flash_attention) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double s = setup.sequence_length;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;

  ActivationsPerLayer layer;
  layer.tokens_on_device = s / layout.context_parallel * micro_batch_sequences;
  const double kept_under_full =
      layer.tokens_on_device * layer_input_bytes_per_token(shape, layout);

  if (setup.activation_model == kLlamaBlockActivationModel) {
    layer.saved_bytes_per_token =
        saved_bytes_per_token(llama_block_saved_tensors(shape, setup, flash_attention));
    const double saved = layer.tokens_on_device * layer.saved_bytes_per_token;
    if (setup.recompute == "full") {
      layer.kept_bytes = kept_under_full;
      layer.recompute_working_bytes = saved - kept_under_full;
    } else {
      layer.kept_bytes = saved;
    }
    return layer;
  }

  // Top-k routing: each token's activations pass through k experts' MLPs, k - 1 more than a
  // dense layer's one (Korthikanti et al. 2023, section 4.1's MLP share; see estimate.hpp).
  const double extra_mlps = shape.num_experts_per_token - 1;
  if (layout.sequence_parallel) {
    layer.replicated_factor =
        (kKorthikantiBytesPerTokenPerHidden + extra_mlps * kKorthikantiMlpBytesPerTokenPerHidden) /
        t;
  } else {
    layer.replicated_factor = kKorthikantiReplicatedBytesPerTokenPerHidden +
                              kKorthikantiShardedBytesPerTokenPerHidden / t +
                              extra_mlps * (kKorthikantiMlpReplicatedBytesPerTokenPerHidden +
                                            kKorthikantiMlpShardedBytesPerTokenPerHidden / t);
  }
  const bool scores_stored = !flash_attention && setup.recompute == "none";
  const double score_factor = kKorthikantiScoreBytesPerHeadPerTokenPair * a * s / (h * t);
  layer.score_factor = scores_stored ? score_factor : 0;

  const double unit = layer.tokens_on_device * h;  // bytes per unit of the bracket
  if (setup.recompute == "full") {
    layer.kept_bytes = kept_under_full;
    const double rebuilt = unit * (layer.replicated_factor + (flash_attention ? 0 : score_factor));
    layer.recompute_working_bytes = rebuilt - layer.kept_bytes;
  } else {
    layer.kept_bytes = unit * (layer.replicated_factor + layer.score_factor);
  }
  return layer;
}

struct StageMemory {
  double parameters = 0;
  double activations_bytes = 0;
  double logits_bytes = 0;
};

struct Calculation {
  const ModelShape* shape = nullptr;  // the setup's model (resolve_model), alive as long as it
  ParameterCounts counts;
  BytesPerParameter bytes_per_parameter;
  ActivationsPerLayer layer;
  double layers_per_stage = 0;
  double in_flight_factor = 0;  // layers' worth of activations on the first stage, over L
  double zero_shards = 1;       // d·c
  StageMemory first;
  StageMemory last;
  bool last_is_most_loaded = false;
  Estimate estimate;
};

double logits_bytes_per_token_per_vocab(const std::string& loss) {
  return loss == kDefaultLoss ? kLogitsBytesPerTokenPerVocab : kFp32UpcastLossBytesPerTokenPerVocab;
}

double logits_bytes(const ModelShape& shape, const TrainingSetup& setup,
                    int micro_batch_sequences) {
  if (!setup.logits) return 0;
  const ParallelLayout& layout = setup.layout;
  const double tokens =
      static_cast<double>(setup.sequence_length) / layout.context_parallel * micro_batch_sequences;
  const double vocab_per_rank =
      std::ceil(static_cast<double>(shape.vocab_size) / layout.tensor_parallel);
  return logits_bytes_per_token_per_vocab(setup.loss) * tokens * vocab_per_rank;
}

// Fills every number of `calc` for a setup that passed check().
void calculate(const TrainingSetup& setup, int micro_batch_sequences, bool flash_attention,
               Calculation& calc) {
  const ModelShape& shape = *calc.shape;
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double p = layout.pipeline_parallel;
  const double v = layout.virtual_pipeline_stages;

  calc.counts = parameter_counts(shape);
  calc.bytes_per_parameter = bytes_per_parameter(setup.precision, setup.optimizer, shape);
  calc.layers_per_stage = shape.num_layers / p;
  calc.zero_shards = static_cast<double>(layout.data_parallel) * layout.context_parallel;

  // Parameters per device: a stage's layers, their matrices split by t and their norms kept
  // whole; the embedding on the first stage, the output head and final norm on the last, both
  // split over the vocabulary by t. Tied embeddings need a copy of the matrix on the last stage
  // when p > 1 (as Megatron-LM keeps one).
  const double layer_parameters =
      calc.layers_per_stage * (calc.counts.attention_and_mlp_per_layer / t +
                               calc.counts.norms_per_layer + calc.counts.replicated_per_layer);
  // A vocabulary that t does not divide is padded up to a multiple of t, as Megatron-LM pads it.
  const double vocab_rows_per_rank = std::ceil(static_cast<double>(shape.vocab_size) / t);
  const double embedding = vocab_rows_per_rank * calc.counts.embedding / shape.vocab_size;
  const bool head_here = shape.tied_embeddings ? p > 1 : calc.counts.output_head > 0;
  const double head = head_here ? embedding : 0;
  const double last_extra = head + calc.counts.final_norm;
  calc.first.parameters = layer_parameters + embedding + (p == 1 ? last_extra : 0);
  calc.last.parameters = layer_parameters + last_extra;

  // Activations: under 1F1B the first stage holds p micro-batches of L/p layers, L layers' worth;
  // the interleaved schedule holds (1 + (p-1)/(p·v)) times that (Megatron-LM's
  // theoretical_memory_usage.py). The last stage holds one micro-batch. Full recomputation adds
  // one layer rebuilt during its backward pass.
  calc.layer = layer_activations(shape, setup, micro_batch_sequences, flash_attention);
  calc.in_flight_factor = v > 1 ? 1 + (p - 1) / (p * v) : 1;
  calc.first.activations_bytes = shape.num_layers * calc.layer.kept_bytes * calc.in_flight_factor +
                                 calc.layer.recompute_working_bytes;
  calc.last.activations_bytes =
      calc.layers_per_stage * calc.layer.kept_bytes + calc.layer.recompute_working_bytes;
  // The logits and loss live on the last stage from the end of the forward pass until the output
  // layer's backward; full recomputation rebuilds the last transformer layer only after that, in
  // the memory the logits freed. So that stage holds L·kept plus the larger of the two.
  StageMemory& logits_stage = p == 1 ? calc.first : calc.last;
  logits_stage.logits_bytes = logits_bytes(shape, setup, micro_batch_sequences);
  logits_stage.activations_bytes -=
      std::min(calc.layer.recompute_working_bytes, logits_stage.logits_bytes);
}

MemoryBreakdown stage_bytes(const Calculation& calc, const StageMemory& stage, int zero_stage) {
  const BytesPerParameter& per = calc.bytes_per_parameter;
  const auto sharded_from = [&](int stage_that_shards) {
    return zero_stage >= stage_that_shards ? calc.zero_shards : 1.0;
  };
  MemoryBreakdown bytes;
  bytes.weights_bytes = per.weights * stage.parameters / sharded_from(3);
  bytes.gradients_bytes = per.gradients * stage.parameters / sharded_from(2);
  bytes.master_weights_bytes = per.master_weights * stage.parameters / sharded_from(1);
  bytes.optimizer_states_bytes = per.optimizer_states * stage.parameters / sharded_from(1);
  bytes.activations_bytes = stage.activations_bytes;
  bytes.logits_bytes = stage.logits_bytes;
  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = bytes.model_states_bytes + bytes.activations_bytes + bytes.logits_bytes;
  return bytes;
}

Estimate invalid(const TrainingSetup& setup, Refusal refusal) {
  Estimate estimate;
  estimate.status = Status::kInvalidInput;
  estimate.message = std::move(refusal.message);
  estimate.invalid_field = std::move(refusal.field);
  estimate.setup = setup;
  return estimate;
}

// Validates and computes; `calc.estimate` holds the result either way.
Calculation run(const TrainingSetup& setup, int micro_batch_sequences, bool flash_attention) {
  Calculation calc;
  calc.shape = resolve_model(setup);
  Refusal refusal = check(setup, calc.shape);
  if (!refusal.field.empty()) {
    calc.estimate = invalid(setup, std::move(refusal));
    return calc;
  }
  calculate(setup, micro_batch_sequences, flash_attention, calc);

  const int zero_stage = setup.layout.zero_stage;
  const MemoryBreakdown first = stage_bytes(calc, calc.first, zero_stage);
  const MemoryBreakdown last = stage_bytes(calc, calc.last, zero_stage);
  const bool single_stage = setup.layout.pipeline_parallel == 1;
  calc.last_is_most_loaded = !single_stage && last.total_bytes > first.total_bytes;

  Estimate& estimate = calc.estimate;
  estimate.setup = setup;
  estimate.setup.micro_batch_sequences = micro_batch_sequences;
  estimate.setup.flash_attention = flash_attention;
  estimate.model_name = calc.shape->name;
  estimate.num_parameters = count_parameters(*calc.shape);
  estimate.bytes_per_parameter = calc.bytes_per_parameter;
  estimate.tokens_per_micro_batch =
      static_cast<double>(setup.sequence_length) * micro_batch_sequences;
  estimate.bytes = calc.last_is_most_loaded ? last : first;
  estimate.parameters_on_device =
      calc.last_is_most_loaded ? calc.last.parameters : calc.first.parameters;
  estimate.most_loaded_stage = single_stage ? "only" : calc.last_is_most_loaded ? "last" : "first";
  estimate.device = device_for(setup);
  const ParallelLayout& layout = setup.layout;
  estimate.num_devices = static_cast<double>(layout.data_parallel) * layout.tensor_parallel *
                         layout.pipeline_parallel * layout.context_parallel;
  estimate.devices_worth = estimate.bytes.total_bytes / estimate.device.capacity_bytes;
  estimate.fits = estimate.bytes.total_bytes <= estimate.device.capacity_bytes;
  return calc;
}

}  // namespace

const ModelShape* resolve_model(const TrainingSetup& setup) {
  if (setup.model_id == kCustomModelId) return &setup.custom_model;
  return find_preset(setup.model_id);
}

Estimate estimate_memory(const TrainingSetup& setup) {
  return run(setup, setup.micro_batch_sequences, setup.flash_attention).estimate;
}

MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences) {
  MicroBatchFromTokens result;
  if (!in_range(sequence_length, 1, kMaxSequenceLength)) {
    result.status = Status::kInvalidInput;
    result.message = "Sequence length must be a whole number of tokens " +
                     range_text(1, kMaxSequenceLength) + ".";
    return result;
  }
  const int max_sequences = in_range(max_micro_batch_sequences, 1, kMaxMicroBatchSequences)
                                ? max_micro_batch_sequences
                                : kMaxMicroBatchSequences;
  const double max_tokens = static_cast<double>(sequence_length) * max_sequences;
  const bool whole_multiple = std::isfinite(tokens) && tokens >= sequence_length &&
                              tokens <= max_tokens &&
                              std::fmod(tokens, static_cast<double>(sequence_length)) == 0;
  if (!whole_multiple) {
    result.status = Status::kInvalidInput;
    result.message = "Tokens per micro-batch must be a whole multiple of " +
                     format_count(sequence_length) + " (one sequence), " +
                     range_text(sequence_length, max_tokens) + ".";
    return result;
  }
  result.micro_batch_sequences = static_cast<int>(tokens / sequence_length);
  return result;
}

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  WorkshopView view;
  view.estimate = estimate_memory(setup);
  if (view.estimate.status != Status::kOk) return view;
  if (!in_range(max_micro_batch_sequences, 1, kMaxMicroBatchSequences)) {
    view.estimate =
        invalid(setup, {"micro-batch", "The chart's micro-batches must run " +
                                           range_text(1, kMaxMicroBatchSequences) + " sequences."});
    return view;
  }
  view.activation_curve.reserve(static_cast<std::size_t>(max_micro_batch_sequences));
  for (int sequences = 1; sequences <= max_micro_batch_sequences; ++sequences) {
    ActivationPoint point;
    point.micro_batch_sequences = sequences;
    point.tokens = static_cast<double>(setup.sequence_length) * sequences;
    point.flash_attention_bytes = run(setup, sequences, true).estimate.bytes.activations_bytes;
    point.without_flash_attention_bytes =
        run(setup, sequences, false).estimate.bytes.activations_bytes;
    view.activation_curve.push_back(point);
  }
  return view;
}

// ---- Explanations ------------------------------------------------------------------------------

namespace {

std::string number(double value) {
  // Whole numbers with separators; fractions to three significant places.
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return format_count(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string state_formula(double bytes_per_parameter, double parameters, double shards,
                          double bytes) {
  std::string formula = number(bytes_per_parameter) + " B × " + number(parameters) + " parameters";
  if (shards > 1) formula += " / " + number(shards) + " ZeRO shards";
  return formula + " = " + format_bytes(bytes);
}

}  // namespace

std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup) {
  const Calculation calc = run(setup, setup.micro_batch_sequences, setup.flash_attention);
  const Estimate& estimate = calc.estimate;
  if (estimate.status != Status::kOk) return {};

  const ModelShape& shape = *calc.shape;
  const ParallelLayout& layout = setup.layout;
  const BytesPerParameter& per = calc.bytes_per_parameter;
  const double parameters = estimate.parameters_on_device;
  const int zero = layout.zero_stage;
  const auto shards = [&](int stage_that_shards) {
    return zero >= stage_that_shards ? calc.zero_shards : 1.0;
  };
  const std::string zero_source = "Rajbhandari et al., \"ZeRO\", SC 2020";
  const MemoryBreakdown& bytes = estimate.bytes;

  std::vector<TermArithmetic> terms;
  terms.push_back({"weights", "Weights",
                   state_formula(per.weights, parameters, shards(3), bytes.weights_bytes),
                   zero_source + "; precision " + setup.precision});
  terms.push_back({"gradients", "Gradients",
                   state_formula(per.gradients, parameters, shards(2), bytes.gradients_bytes),
                   zero_source + "; precision " + setup.precision});
  terms.push_back(
      {"masterWeights", "Master weights",
       state_formula(per.master_weights, parameters, shards(1), bytes.master_weights_bytes),
       "Micikevicius et al., \"Mixed Precision Training\", ICLR 2018"});
  std::string optimizer_source;
  for (const Choice& choice : optimizer_choices()) {
    if (choice.id == setup.optimizer) optimizer_source = choice.name + ": " + choice.source;
  }
  terms.push_back(
      {"optimizerStates", "Optimiser states",
       state_formula(per.optimizer_states, parameters, shards(1), bytes.optimizer_states_bytes),
       optimizer_source});

  const ActivationsPerLayer& layer = calc.layer;
  const bool full = setup.recompute == "full";
  const bool first_stage = !calc.last_is_most_loaded;
  const double layers = first_stage ? shape.num_layers : calc.layers_per_stage;
  std::string activations = number(layers) + " layers";
  if (first_stage && calc.in_flight_factor != 1) {
    activations += " × " + number(calc.in_flight_factor) + " (interleaved schedule)";
  }
  const bool llama_block = setup.activation_model == kLlamaBlockActivationModel;
  activations += " × " + number(layer.tokens_on_device) + " tokens × ";
  if (full) {
    activations += number(shape.hidden_size) + " × " +
                   number(kFullRecomputeBytesPerTokenPerHidden) +
                   (layout.sequence_parallel ? " / " + number(layout.tensor_parallel) : "") +
                   " B + one layer rebuilt (" + format_bytes(layer.recompute_working_bytes) +
                   (bytes.logits_bytes > 0 ? ", less the logits' memory it reuses" : "") + ")";
  } else if (llama_block) {
    activations += number(layer.saved_bytes_per_token) + " B saved per token";
  } else {
    activations += number(shape.hidden_size) + " × (" + number(layer.replicated_factor) + " + " +
                   number(layer.score_factor) + ") B";
  }
  activations += " = " + format_bytes(bytes.activations_bytes);
  std::string activations_source = "Korthikanti et al., MLSys 2023, equation 1 and Table 2";
  if (llama_block) {
    activations_source =
        "the Llama block's saved tensors, one by one (docs/activations.md); the layer's input "
        "alone under full recomputation (Chen et al. 2016)";
  } else if (shape.num_experts_per_token > 1) {
    activations_source += "; top-" + std::to_string(shape.num_experts_per_token) +
                          " routing: section 4.1's MLP share (19) once more for each expert "
                          "past the first";
  }
  terms.push_back({"activations", "Activations", activations, activations_source});

  if (setup.logits) {
    const std::string logits =
        number(logits_bytes_per_token_per_vocab(setup.loss)) + " B × " +
        number(layer.tokens_on_device) + " tokens × " + number(shape.vocab_size) + " vocabulary" +
        (layout.tensor_parallel > 1 ? " / " + number(layout.tensor_parallel) : "") + " = " +
        format_bytes(bytes.logits_bytes);
    terms.push_back(
        {"logits", "Logits and loss", logits,
         setup.loss == kDefaultLoss
             ? "BF16 logits plus their FP32 copy for Megatron-LM's vocab-parallel cross-entropy"
             : "an unfused cross-entropy over FP32-upcast logits: its saved log-softmax and two "
               "gradients at the loss's backward (measured: tests/data/loss-peak-cpu.json)"});
  }
  return terms;
}

std::size_t timeline_peak(const std::vector<TimelinePoint>& points) {
  std::size_t peak = 0;
  for (std::size_t index = 1; index < points.size(); ++index) {
    if (points[index].bytes > points[peak].bytes) peak = index;
  }
  return peak;
}

std::vector<TimelinePoint> memory_timeline(const TrainingSetup& setup) {
  const Calculation calc = run(setup, setup.micro_batch_sequences, setup.flash_attention);
  if (calc.estimate.status != Status::kOk) return {};
  const Estimate& estimate = calc.estimate;
  const MemoryBreakdown& bytes = estimate.bytes;

  // The most loaded device's layer slots: under 1F1B the first stage holds L layers' worth (p
  // micro-batches of L/p layers, times the interleaved schedule's factor), the last L/p.
  const bool first_stage = !calc.last_is_most_loaded;
  const int slots = static_cast<int>(first_stage ? calc.shape->num_layers : calc.layers_per_stage);
  const double kept_per_slot = calc.layer.kept_bytes * (first_stage ? calc.in_flight_factor : 1);
  const double states = bytes.model_states_bytes;

  std::vector<TimelinePoint> points;
  points.push_back({"start", 0, states});
  for (int layer = 1; layer <= slots; ++layer) {
    points.push_back({"forward", layer, states + layer * kept_per_slot});
  }
  const double all_kept = slots * kept_per_slot;
  if (bytes.logits_bytes > 0)
    points.push_back({"loss", slots, states + all_kept + bytes.logits_bytes});
  for (int layer = slots; layer >= 1; --layer) {
    if (calc.layer.recompute_working_bytes > 0) {
      points.push_back({"recompute", layer,
                        states + layer * kept_per_slot + calc.layer.recompute_working_bytes});
    }
    points.push_back({"backward", layer, states + (layer - 1) * kept_per_slot});
  }
  points.push_back({"optimizer", 0, states});
  return points;
}

}  // namespace trainmem
