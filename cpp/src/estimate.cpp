// The estimate: model states and activations on the most loaded device of a layout, checked
// first (check.cpp), each activation model behind one signature (korthikanti.cpp,
// llama_block.cpp). The explanation (explain.cpp) and the timeline (timeline.cpp) read the same
// Calculation.
#include "trainmem/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "calculation.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

Device device_for(const TrainingSetup& setup) {
  if (setup.device_id == kCustomDeviceId) {
    // Named by its capacity as given: "Custom 2.5 GB", never rounded to another size.
    const std::string gigabytes = format_bytes_short(setup.custom_capacity_gb * kBytesPerGigabyte);
    return {kCustomDeviceId, "Custom " + gigabytes, "device", setup.custom_capacity_gb * 1e9};
  }
  return *find_device(setup.device_id);
}

// One of a mixture's dense layers, as a shape of its own: attention as the mixture's, an MLP of
// intermediate_size.
ModelShape dense_layer_shape(const ModelShape& shape) {
  ModelShape dense = shape;
  dense.num_experts = 1;
  dense.num_experts_per_token = 1;
  dense.moe_ffn_hidden_size = 0;
  dense.shared_expert_ffn_hidden_size = 0;
  dense.shared_expert_gate = false;
  dense.router_bias = false;
  dense.num_dense_layers = 0;
  return dense;
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
  // Expert parallelism (Megatron-LM's parallel_state.py): the routed experts spread over ep
  // devices and split over etp; attention, the shared experts and the dense layers stay split by
  // t, the router whole. Their ZeRO shards are their own data-parallel group, the world over
  // ep·etp·p: d·t·c / (ep·etp).
  const double ep = layout.expert_parallel;
  const double etp = expert_tensor_parallel_of(layout);
  calc.expert_zero_shards = calc.zero_shards * t / (ep * etp);
  const double routed_per_layer = calc.counts.routed_experts_per_layer / (ep * etp) +
                                  calc.counts.routed_experts_replicated_per_layer / ep;

  // Parameters per device: a stage's layers, their matrices split by t and their norms kept
  // whole; the embedding on the first stage, the output head and final norm on the last, both
  // split over the vocabulary by t. Tied embeddings need a copy of the matrix on the last stage
  // when p > 1 (as Megatron-LM keeps one). Learned positions sit whole beside the embedding
  // (Megatron-LM's LanguageModelEmbedding does not split them).
  // A mixture of experts' dense layers are its first num_dense_layers (DeepSeek-V3's
  // first_k_dense_replace): the first stage holds as many of them as it can.
  const double dense_layers = shape.num_experts > 1 ? shape.num_dense_layers : 0;
  const auto stage_layer_parameters = [&](double first_layer) {
    const double dense_here =
        std::clamp(dense_layers - first_layer, 0.0, static_cast<double>(calc.layers_per_stage));
    const double mixture_here = calc.layers_per_stage - dense_here;
    return mixture_here *
               ((calc.counts.attention_and_mlp_per_layer - calc.counts.routed_experts_per_layer) /
                    t +
                calc.counts.replicated_per_layer - calc.counts.routed_experts_replicated_per_layer +
                routed_per_layer) +
           dense_here * (calc.counts.dense_attention_and_mlp_per_layer / t +
                         calc.counts.dense_replicated_per_layer) +
           calc.layers_per_stage * calc.counts.norms_per_layer;
  };
  const auto stage_expert_parameters = [&](double first_layer) {
    const double dense_here =
        std::clamp(dense_layers - first_layer, 0.0, static_cast<double>(calc.layers_per_stage));
    return (calc.layers_per_stage - dense_here) * routed_per_layer;
  };
  // A vocabulary that t does not divide is padded up to a multiple of t, as Megatron-LM pads it.
  const double vocab_rows_per_rank = std::ceil(static_cast<double>(shape.vocab_size) / t);
  const double embedding = vocab_rows_per_rank * shape.hidden_size;
  const bool head_matrix_here = shape.tied_embeddings ? p > 1 : true;
  const double head =
      (head_matrix_here ? embedding : 0) + (shape.output_head_bias ? vocab_rows_per_rank : 0);
  const double last_extra = head + calc.counts.final_norm;
  calc.first.parameters = stage_layer_parameters(0) + embedding + calc.counts.position_embedding +
                          (p == 1 ? last_extra : 0);
  calc.last.parameters =
      stage_layer_parameters(shape.num_layers - calc.layers_per_stage) + last_extra;
  calc.first.expert_parameters = stage_expert_parameters(0);
  calc.last.expert_parameters = stage_expert_parameters(shape.num_layers - calc.layers_per_stage);

  // Activations: under 1F1B the first stage holds p micro-batches of L/p layers, L layers' worth;
  // the interleaved schedule holds (1 + (p-1)/(p·v)) times that (Megatron-LM's
  // theoretical_memory_usage.py). The last stage holds one micro-batch. Full recomputation adds
  // one layer rebuilt during its backward pass.
  const LayerActivations activations_of_layer = layer_activations_of(setup.activation_model);
  calc.layer = activations_of_layer(shape, setup, micro_batch_sequences, flash_attention);
  // A mixture with dense layers mixed in (first_k_dense_replace): every layer is counted as the
  // larger of the two kinds, an upper bound that each stage's share of dense layers can only
  // lower.
  if (shape.num_experts > 1 && shape.num_dense_layers > 0) {
    const ModelShape dense = dense_layer_shape(shape);
    const ActivationsPerLayer dense_layer =
        activations_of_layer(dense, setup, micro_batch_sequences, flash_attention);
    if (dense_layer.kept_bytes + dense_layer.recompute_working_bytes >
        calc.layer.kept_bytes + calc.layer.recompute_working_bytes) {
      calc.layer = dense_layer;
    }
  }
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
  // The parameters a ZeRO stage from `stage_that_shards` on leaves on the device: the others
  // over d·c, the routed experts over their own data-parallel group.
  const auto sharded_from = [&](int stage_that_shards) {
    if (zero_stage < stage_that_shards) return stage.parameters;
    return (stage.parameters - stage.expert_parameters) / calc.zero_shards +
           stage.expert_parameters / calc.expert_zero_shards;
  };
  MemoryBreakdown bytes;
  bytes.weights_bytes = per.weights * sharded_from(3);
  bytes.gradients_bytes = per.gradients * sharded_from(2);
  bytes.master_weights_bytes = per.master_weights * sharded_from(1);
  bytes.optimizer_states_bytes = per.optimizer_states * sharded_from(1);
  bytes.activations_bytes = stage.activations_bytes;
  bytes.logits_bytes = stage.logits_bytes;
  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = bytes.model_states_bytes + bytes.activations_bytes + bytes.logits_bytes;
  return bytes;
}

}  // namespace

LayerActivations layer_activations_of(ActivationModel model) {
  switch (model) {
    case ActivationModel::kLlamaBlock:
      return llama_block_layer_activations;
    case ActivationModel::kKorthikanti:
      break;
  }
  return korthikanti_layer_activations;
}

double logits_bytes_per_token_per_vocab(Loss loss) {
  return loss == Loss::kVocabParallel ? kLogitsBytesPerTokenPerVocab
                                      : kFp32UpcastLossBytesPerTokenPerVocab;
}

Calculation calculate_estimate(const TrainingSetup& setup, int micro_batch_sequences,
                               bool flash_attention) {
  Calculation calc;
  calc.shape = resolve_model(setup);
  calc.estimate.setup = setup;
  calc.estimate.answer = check_setup(setup, calc.shape);
  if (!calc.estimate.answer.ok()) return calc;
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
  estimate.most_loaded_stage = single_stage               ? PipelineStage::kOnly
                               : calc.last_is_most_loaded ? PipelineStage::kLast
                                                          : PipelineStage::kFirst;
  estimate.device = device_for(setup);
  const ParallelLayout& layout = setup.layout;
  estimate.num_devices = static_cast<double>(layout.data_parallel) * layout.tensor_parallel *
                         layout.pipeline_parallel * layout.context_parallel;
  estimate.devices_worth = estimate.bytes.total_bytes / estimate.device.capacity_bytes;
  estimate.usable_bytes = estimate.device.capacity_bytes * (1 - setup.headroom_percent / 100);
  estimate.fits = estimate.bytes.total_bytes <= estimate.usable_bytes;
  estimate.activation_room_bytes =
      estimate.usable_bytes - (estimate.bytes.total_bytes - estimate.bytes.activations_bytes);
  return calc;
}

const ModelShape* resolve_model(const TrainingSetup& setup) {
  if (setup.model_id == kCustomModelId) return &setup.custom_model;
  return find_preset(setup.model_id);
}

Estimate estimate_memory(const TrainingSetup& setup) {
  return calculate_estimate(setup, setup.micro_batch_sequences, setup.flash_attention).estimate;
}

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  WorkshopView view;
  view.estimate = estimate_memory(setup);
  if (!view.estimate.answer.ok()) return view;
  if (max_micro_batch_sequences < 1 || max_micro_batch_sequences > kMaxMicroBatchSequences) {
    view.estimate.answer =
        refusal(setting_id::kMicroBatch, "The chart's micro-batches must run from 1 to " +
                                             format_count(kMaxMicroBatchSequences) + " sequences.");
    return view;
  }
  view.activation_curve.reserve(static_cast<std::size_t>(max_micro_batch_sequences));
  for (int sequences = 1; sequences <= max_micro_batch_sequences; ++sequences) {
    ActivationPoint point;
    point.micro_batch_sequences = sequences;
    point.tokens = static_cast<double>(setup.sequence_length) * sequences;
    point.flash_attention_bytes =
        calculate_estimate(setup, sequences, true).estimate.bytes.activations_bytes;
    point.without_flash_attention_bytes =
        calculate_estimate(setup, sequences, false).estimate.bytes.activations_bytes;
    view.activation_curve.push_back(point);
  }
  return view;
}

}  // namespace trainmem
