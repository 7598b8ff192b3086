// The estimate: model states and activations on the most loaded device of a layout, checked
// first (check.cpp), each activation model behind one signature (korthikanti.cpp,
// llama_block.cpp). The explanation (explain.cpp) and the timeline (timeline.cpp) read the same
// Calculation.
#include "trainmem/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "estimate/calculation.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"
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

// The bytes of the weights of `parameters` (of a stage, or of one unit in flight): the trainable
// ones at the precision's bytes, the frozen base's linear weights at the base's, the rest of the
// frozen base in BF16.
double weight_bytes(const Calculation& calc, const StageParameters& parameters) {
  return parameters.trainable * calc.bytes_per_parameter.weights +
         parameters.frozen_linear * calc.base_linear_bytes_per_value +
         parameters.frozen_linear_rows * calc.base_linear_bytes_per_row +
         parameters.frozen_other * kBf16Bytes;
}

// Fills every number of `calc` for a setup that passed check().
void calculate(const TrainingSetup& setup, int micro_batch_sequences, bool flash_attention,
               Calculation& calc) {
  const ModelShape& shape = *calc.shape;
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double p = layout.pipeline_parallel;
  const double v = layout.virtual_pipeline_stages;
  const bool lora = setup.lora_rank > 0;

  calc.counts = parameter_counts(shape);
  calc.bytes_per_parameter = bytes_per_parameter(setup.precision, setup.optimizer, shape);
  if (lora && setup.optimizer == Optimizer::kAdafactor) {
    // The adapters' own factored state; one state value's bytes is SGD's one buffer's.
    BytesPerParameter& per = calc.bytes_per_parameter;
    const double state_value_bytes =
        bytes_per_parameter(setup.precision, Optimizer::kSgdMomentum, shape).optimizer_states;
    per.optimizer_states =
        state_value_bytes *
        lora_adafactor_values_per_layer(shape, setup.lora_rank, setup.lora_targets) /
        lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets);
    per.total = per.weights + per.gradients + per.master_weights + per.optimizer_states;
  }
  // A stack's own precision (checked to be bf16-mixed, check.cpp). Megatron-LM accumulates and
  // reduces gradients in an FP32 main-gradient buffer (megatron/training/arguments.py: "bfloat16
  // requires gradient accumulation and all-reduce to be done in fp32"): 4 B, its docs' 6 + 12/d
  // with the distributed optimiser. FSDP2 under torchtitan keeps the sharded parameters in FP32
  // and computes in BF16 copies gathered layer by layer (MixedPrecisionPolicy param_dtype
  // bfloat16): the FP32 parameters are the weights and no master copy is kept; their gradients,
  // reduce-scattered in FP32 (reduce_dtype float32), are FP32 too.
  if (setup.stack == Stack::kMegatron) {
    calc.bytes_per_parameter.gradients = kFp32Bytes;
  } else if (setup.stack == Stack::kTorchtitan) {
    calc.bytes_per_parameter.weights = kFp32Bytes;
    calc.bytes_per_parameter.master_weights = 0;
    calc.bytes_per_parameter.gradients = kFp32Bytes;
  }
  {
    BytesPerParameter& per = calc.bytes_per_parameter;
    per.total = per.weights + per.gradients + per.master_weights + per.optimizer_states;
  }
  calc.base_linear_bytes_per_parameter =
      lora ? base_linear_bytes_per_parameter(shape, setup.base_weights) : 0;
  // Int8's scales are counted by the row, so that every byte count stays a whole number.
  const bool int8 = lora && setup.base_weights == BaseWeights::kInt8;
  calc.base_linear_bytes_per_value =
      int8 ? kInt8BytesPerValue : calc.base_linear_bytes_per_parameter;
  calc.base_linear_bytes_per_row = int8 ? kInt8ScaleBytesPerRow : 0;
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
  // One layer's parameters on the first stage, on average: offloading's unit in flight.
  const double parameters_per_layer = stage_layer_parameters(0) / calc.layers_per_stage;
  // A vocabulary that t does not divide is padded up to a multiple of t, as Megatron-LM pads it.
  const double vocab_rows_per_rank = std::ceil(static_cast<double>(shape.vocab_size) / t);
  const double embedding = vocab_rows_per_rank * shape.hidden_size;
  const bool head_matrix_here = shape.tied_embeddings ? p > 1 : true;
  const double head =
      (head_matrix_here ? embedding : 0) + (shape.output_head_bias ? vocab_rows_per_rank : 0);
  const double last_extra = head + calc.counts.final_norm;
  calc.first.parameters = stage_layer_parameters(0) + embedding + calc.counts.position_embedding +
                          (p == 1 ? last_extra : 0);
  calc.first.root_parameters =
      embedding + calc.counts.position_embedding + (p == 1 ? last_extra : 0);
  calc.last.root_parameters = p == 1 ? calc.first.root_parameters : last_extra;
  calc.last.parameters =
      stage_layer_parameters(shape.num_layers - calc.layers_per_stage) + last_extra;
  calc.first.expert_parameters = stage_expert_parameters(0);
  calc.last.expert_parameters = stage_expert_parameters(shape.num_layers - calc.layers_per_stage);

  // FP8 training (fp8.hpp): each stage's FP8 GEMMs hold an FP8 copy of their weights (and the
  // transpose on Hopper) through the step, and each GEMM its scaling state. Under ZeRO-3 (FSDP)
  // no copy is kept: each layer's weights are cast to FP8 when gathered (torchao's
  // enable_fsdp_float8_all_gather casts each shard before the all-gather; Transformer Engine
  // re-quantises the gathered weight in the backward pass), transient like the gathered BF16
  // weights, which this estimate does not count either.
  if (transformer_engine_fp8(setup)) {
    calc.fp8_weight_copies = layout.zero_stage >= 3 ? 0 : fp8_weight_copies(setup.device_id);
    const Fp8Layer mixture_layer = fp8_layer(shape, layout, false);
    const Fp8Layer dense_layer = fp8_layer(shape, layout, true);
    const auto fp8_stage = [&](double first_layer, StageMemory& stage) {
      const double dense_here =
          std::clamp(dense_layers - first_layer, 0.0, static_cast<double>(calc.layers_per_stage));
      const double mixture_here = calc.layers_per_stage - dense_here;
      stage.fp8_weights = mixture_here * mixture_layer.weights + dense_here * dense_layer.weights;
      stage.fp8_gemms = mixture_here * mixture_layer.gemms + dense_here * dense_layer.gemms;
      stage.fp8_weights_bytes = calc.fp8_weight_copies * kFp8Bytes * stage.fp8_weights +
                                kFp8ScalingBytesPerGemm * stage.fp8_gemms;
    };
    fp8_stage(0, calc.first);
    fp8_stage(shape.num_layers - calc.layers_per_stage, calc.last);
  }

  // LoRA: the base is frozen, its linear weights (split by t but the router) apart from the rest;
  // the adapters, split by t with their layers, are what trains.
  const LinearLayers linear = linear_layers(shape);
  const double linear_per_layer =
      (linear.weights - linear.router_weights) / t + linear.router_weights;
  const double adapters_per_layer =
      lora ? lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets) / t : 0;
  const double rows_per_layer = linear.column_parallel_rows / t + linear.whole_rows;
  calc.layer_unit = lora ? StageParameters{adapters_per_layer, linear_per_layer,
                                           parameters_per_layer - linear_per_layer, rows_per_layer}
                         : StageParameters{parameters_per_layer, 0, 0, 0};
  calc.embedding_unit =
      lora ? StageParameters{0, 0, embedding, 0} : StageParameters{embedding, 0, 0, 0};
  for (StageMemory* stage : {&calc.first, &calc.last}) {
    if (lora) {
      stage->split.frozen_linear = calc.layers_per_stage * linear_per_layer;
      stage->split.frozen_linear_rows = calc.layers_per_stage * rows_per_layer;
      stage->split.frozen_other = stage->parameters - stage->split.frozen_linear;
      stage->split.trainable = calc.layers_per_stage * adapters_per_layer;
      stage->parameters += stage->split.trainable;
      if (setup.base_weights != BaseWeights::kBf16) {
        stage->dequantization_bytes = kBf16Bytes * linear.largest_weight / t;
      }
    } else {
      stage->split.trainable = stage->parameters;
    }
  }

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
  if (lora) {
    // Each adapter saves its r-wide BF16 intermediate A·x for lora_B's gradient; its input x is
    // the frozen layer's, counted once already. Full recomputation rebuilds them with the layer.
    calc.lora_bytes_per_layer = calc.layer.tokens_on_device * setup.lora_rank *
                                lora_modules_per_token(shape, setup.lora_targets) * kBf16Bytes;
    if (setup.recompute == Recompute::kFull) {
      calc.layer.recompute_working_bytes += calc.lora_bytes_per_layer;
    } else {
      calc.layer.kept_bytes += calc.lora_bytes_per_layer;
    }
  }
  // Expert parallelism's all-to-all (estimate.hpp): one mixture layer's send and receive buffers
  // of its own tokens' routed copies (over t with sequence parallelism, as the tokens are), in
  // flight while that layer runs. With ep 1 there is no exchange: the permuted tokens are the
  // experts' input.
  if (shape.num_experts > 1 && layout.expert_parallel > 1) {
    const double capacity = setup.capacity_factor > 0 ? setup.capacity_factor : 1;
    const double tokens = calc.layer.tokens_on_device / (layout.sequence_parallel ? t : 1);
    calc.layer.dispatch_bytes = kAllToAllBuffersInFlight * tokens * shape.num_experts_per_token *
                                capacity * shape.hidden_size * kBf16Bytes;
  }
  calc.in_flight_factor = v > 1 ? 1 + (p - 1) / (p * v) : 1;
  const double layer_working = layer_working_bytes(calc.layer);
  calc.first.activations_bytes =
      shape.num_layers * calc.layer.kept_bytes * calc.in_flight_factor + layer_working;
  calc.last.activations_bytes = calc.layers_per_stage * calc.layer.kept_bytes + layer_working;
  // The logits and loss live on the last stage from the end of the forward pass until the output
  // layer's backward; full recomputation rebuilds the last transformer layer only after that, in
  // the memory the logits freed, and a layer's all-to-all buffers are freed before the output
  // layer runs. So that stage holds L·kept plus the larger of the two.
  StageMemory& logits_stage = p == 1 ? calc.first : calc.last;
  logits_stage.logits_bytes = logits_bytes(shape, setup, micro_batch_sequences);
  logits_stage.activations_bytes -= std::min(layer_working, logits_stage.logits_bytes);
}

MemoryBreakdown stage_bytes(const Calculation& calc, const StageMemory& stage,
                            const TrainingSetup& setup, HostMemory& host) {
  const BytesPerParameter& per = calc.bytes_per_parameter;
  // What a ZeRO stage from `stage_that_shards` on leaves on the device of `count` parameters,
  // `experts` of them the routed experts': the others over d·c, the experts over their own
  // data-parallel group.
  // FSDP2 (the torchtitan stack) shards the parameters at either of its ZeRO stages, 2 or 3.
  const int zero_stage = setup.stack == Stack::kTorchtitan ? 3 : setup.layout.zero_stage;
  const auto sharded = [&](int stage_that_shards, double count, double experts) {
    if (zero_stage < stage_that_shards) return count;
    return (count - experts) / calc.zero_shards + experts / calc.expert_zero_shards;
  };
  const double trainable = stage.split.trainable;
  MemoryBreakdown bytes;
  // The frozen base and the adapters shard alike (LoRA is kept to ep = 1 and etp = t, where the
  // experts' group is everyone's: check.cpp).
  const double experts = setup.lora_rank > 0 ? 0 : stage.expert_parameters;
  bytes.weights_bytes =
      setup.lora_rank > 0
          ? weight_bytes(calc, stage.split) / (setup.layout.zero_stage >= 3 ? calc.zero_shards : 1)
          : per.weights * sharded(3, stage.parameters, experts);
  bytes.gradients_bytes = per.gradients * sharded(2, trainable, experts);
  bytes.master_weights_bytes = per.master_weights * sharded(1, trainable, experts);
  bytes.optimizer_states_bytes = per.optimizer_states * sharded(1, trainable, experts);
  bytes.activations_bytes = stage.activations_bytes;
  bytes.logits_bytes = stage.logits_bytes;
  bytes.dequantization_bytes = stage.dequantization_bytes;
  bytes.fp8_weights_bytes = stage.fp8_weights_bytes;

  // Offloading moves each term to the host whole, but what is in flight: every byte that leaves
  // the device is on the host. The host adds the FP32 gradients its optimiser step reads.
  host = HostMemory{};
  if (setup.offload != Offload::kNone) {
    host.master_weights_bytes = bytes.master_weights_bytes;
    host.optimizer_states_bytes = bytes.optimizer_states_bytes;
    host.fp32_gradients_bytes = kFp32Bytes * sharded(1, trainable, experts);
    bytes.master_weights_bytes = 0;
    bytes.optimizer_states_bytes = 0;
  }
  if (setup.offload == Offload::kOptimizerAndWeights) {
    // The largest unit in flight: a layer, or the embedding (or output layer) on its own.
    const double unit_weight_bytes =
        std::max(weight_bytes(calc, calc.layer_unit), weight_bytes(calc, calc.embedding_unit));
    const double unit_gradient_bytes =
        per.gradients * std::max(calc.layer_unit.trainable, calc.embedding_unit.trainable);
    const double weights_kept =
        std::min(bytes.weights_bytes, kOffloadLayersInFlight * unit_weight_bytes);
    const double gradients_kept =
        std::min(bytes.gradients_bytes, kOffloadLayersInFlight * unit_gradient_bytes);
    host.weights_bytes = bytes.weights_bytes - weights_kept;
    host.gradients_bytes = bytes.gradients_bytes - gradients_kept;
    bytes.weights_bytes = weights_kept;
    bytes.gradients_bytes = gradients_kept;
  }
  if (setup.offload_activations) {
    // torch.autograd.graph.save_on_cpu / torchtune's OffloadActivations: each layer's saved
    // tensors go to the host as the forward pass leaves it, and come back for its backward.
    // The rebuilt layer under full recomputation and a layer's all-to-all buffers stay too (less
    // the logits' memory they reuse).
    const double working = layer_working_bytes(calc.layer);
    const double rebuilt = working - std::min(working, stage.logits_bytes);
    const double activations_kept =
        std::min(bytes.activations_bytes, kOffloadLayersInFlight * calc.layer.kept_bytes + rebuilt);
    host.activations_bytes = bytes.activations_bytes - activations_kept;
    bytes.activations_bytes = activations_kept;
  }
  host.total_bytes = host.weights_bytes + host.gradients_bytes + host.master_weights_bytes +
                     host.optimizer_states_bytes + host.activations_bytes +
                     host.fp32_gradients_bytes;

  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = bytes.model_states_bytes + bytes.activations_bytes + bytes.logits_bytes +
                      bytes.dequantization_bytes + bytes.fp8_weights_bytes;
  return bytes;
}

double shape_lora_parameters(const ModelShape& shape, const TrainingSetup& setup) {
  return shape.num_layers * lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets);
}

}  // namespace

double layer_working_bytes(const ActivationsPerLayer& layer) {
  return layer.recompute_working_bytes + layer.dispatch_bytes;
}

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
                               bool flash_attention, bool replay_stack) {
  Calculation calc;
  calc.shape = resolve_model(setup);
  calc.estimate.setup = setup;
  calc.estimate.answer = check_setup(setup, calc.shape);
  if (!calc.estimate.answer.ok()) return calc;
  calculate(setup, micro_batch_sequences, flash_attention, calc);

  HostMemory first_host;
  HostMemory last_host;
  const MemoryBreakdown first = stage_bytes(calc, calc.first, setup, first_host);
  const MemoryBreakdown last = stage_bytes(calc, calc.last, setup, last_host);
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
  estimate.host = calc.last_is_most_loaded ? last_host : first_host;
  estimate.trainable_parameters =
      setup.lora_rank > 0 ? shape_lora_parameters(*calc.shape, setup) : estimate.num_parameters;
  estimate.base_linear_bytes_per_parameter = calc.base_linear_bytes_per_parameter;
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
  estimate.peak_allocated_bytes = estimate.bytes.total_bytes;
  estimate.peak_reserved_bytes = estimate.bytes.total_bytes;
  calc.whole_terms = estimate.bytes;
  if (setup.stack != Stack::kIdeal && replay_stack) {
    apply_stack(calc, setup);
    estimate.devices_worth = estimate.bytes.total_bytes / estimate.device.capacity_bytes;
  }
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
    // The activations as counted, whole: under a stack, whatever moment its peak falls at.
    point.flash_attention_bytes =
        calculate_estimate(setup, sequences, true, false).whole_terms.activations_bytes;
    point.without_flash_attention_bytes =
        calculate_estimate(setup, sequences, false, false).whole_terms.activations_bytes;
    view.activation_curve.push_back(point);
  }
  return view;
}

}  // namespace trainmem
