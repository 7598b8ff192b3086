// Where the parameters are (placement.hpp), as Megatron-LM places them.
#include "estimate/placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "stacks/stack_rows.hpp"
#include "text/figure.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

namespace {

// The parameters of a stage's `layers` layers from `first_layer` on: their matrices split by t and
// their norms kept whole; a mixture's routed experts spread over ep and split over etp (Megatron-
// LM's parallel_state.py), attention, the shared experts and the dense layers split by t, the
// router whole. A mixture's dense layers are its first num_dense_layers (DeepSeek-V3's
// first_k_dense_replace), and past them those its interleave step leaves (Llama 4 Maverick's
// every other layer).
struct StageLayers {
  double parameters = 0;
  double expert_parameters = 0;
};
StageLayers stage_layers(const ModelShape& shape, const ParallelLayout& layout,
                         const Placement& placement, double first_layer, double layers) {
  const ParameterCounts& counts = placement.counts;
  const double t = layout.tensor_parallel;
  const double ep = layout.expert_parallel;
  const double etp = expert_tensor_parallel_of(layout);
  const double routed_per_layer = counts.routed_experts_per_layer / (ep * etp) +
                                  counts.routed_experts_replicated_per_layer / ep;
  const double dense_here = dense_layers_between(shape, first_layer, layers);
  const double mixture_here = layers - dense_here;
  StageLayers held;
  held.parameters =
      mixture_here * ((counts.attention_and_mlp_per_layer - counts.routed_experts_per_layer) / t +
                      counts.replicated_per_layer - counts.routed_experts_replicated_per_layer +
                      routed_per_layer) +
      dense_here *
          (counts.dense_attention_and_mlp_per_layer / t + counts.dense_replicated_per_layer) +
      layers * counts.norms_per_layer + layer_kind_deltas(shape, counts, first_layer, layers, t);
  held.expert_parameters = mixture_here * routed_per_layer;
  return held;
}

// LoRA: the base is frozen, its linear weights (split by t but the router) apart from the rest;
// the adapters, split by t with their layers, are what trains.
void split_for_lora(const ModelShape& shape, const TrainingSetup& setup,
                    double parameters_per_layer, double embedding, Placement& placement) {
  const double t = setup.layout.tensor_parallel;
  const LinearLayers& linear = placement.linear;
  const double linear_per_layer =
      (linear.weights - linear.router_weights) / t + linear.router_weights;
  const double adapters_per_layer =
      lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets) / t;
  const double rows_per_layer = linear.column_parallel_rows / t + linear.whole_rows;
  placement.layer_unit = {adapters_per_layer, linear_per_layer,
                          parameters_per_layer - linear_per_layer, rows_per_layer};
  placement.embedding_unit = {0, 0, embedding, 0};
  placement.embedding_unit.frozen_embeddings = embedding;
  std::vector<StagePlacement*> stages = {&placement.first, &placement.last};
  for (StagePlacement& middle : placement.middle) stages.push_back(&middle);
  for (StagePlacement* stage : stages) {
    stage->split.frozen_linear = stage->layers * linear_per_layer;
    stage->split.frozen_linear_rows = stage->layers * rows_per_layer;
    stage->split.frozen_other = stage->parameters - stage->split.frozen_linear;
    stage->split.trainable = stage->layers * adapters_per_layer;
    stage->parameters += stage->split.trainable;
  }
  const double p = setup.layout.pipeline_parallel;
  const double head = shape.tied_embeddings && p == 1 ? 0 : embedding;
  placement.first.split.frozen_embeddings =
      embedding + placement.counts.position_embedding + (p == 1 ? head : 0);
  placement.last.split.frozen_embeddings = p > 1 ? head : placement.first.split.frozen_embeddings;
}

}  // namespace

std::vector<LayerParameters> stage_layer_parameters(const ModelShape& shape,
                                                    const ParallelLayout& layout,
                                                    const Placement& placement,
                                                    const StagePlacement& stage) {
  std::vector<LayerParameters> layers;
  const int count = static_cast<int>(std::ceil(stage.layers - 1e-9));
  for (int layer = 0; layer < count; ++layer) {
    const StageLayers held = stage_layers(shape, layout, placement, stage.first_layer + layer, 1);
    layers.push_back({held.parameters, held.expert_parameters});
  }
  return layers;
}

double micro_batches_in_flight(const ParallelLayout& layout, double step_micro_batches,
                               double index) {
  const double p = layout.pipeline_parallel;
  const double v = layout.virtual_pipeline_stages;
  if (v <= 1) return std::min(step_micro_batches, p - index);
  const double g = layout.microbatch_group_size > 0 ? layout.microbatch_group_size : p;
  const double chunks = (v - 1) * g + 2 * (p - 1 - index) + 1;
  return std::min(step_micro_batches * v, chunks) / v;
}

double data_micro_batches_held(const ParallelLayout& layout, double step_micro_batches, int index) {
  const long long p = layout.pipeline_parallel;
  const long long v = std::max(1, layout.virtual_pipeline_stages);
  const long long i = index;
  const bool reads_data = i == 0 || i == p - 1;
  if (p <= 1 || !reads_data) return 1;
  const long long g = layout.microbatch_group_size > 0 ? layout.microbatch_group_size : p;
  // The schedule repeats itself group by group: a step of many micro-batches is played as eight
  // groups and its last, shorter one (the same most held).
  const double whole = std::floor(std::min(step_micro_batches, 1e9));
  const long long n =
      whole <= 8.0 * static_cast<double>(g)
          ? static_cast<long long>(whole)
          : 8 * g + static_cast<long long>(std::fmod(whole, static_cast<double>(g)));
  if (n < 1) return 1;
  std::vector<long long> chunk_of;  // get_schedule_table: each forward pass's virtual stage
  for (long long group = 0; group < n; group += g) {
    const long long end = group + g >= n ? n : group + g;
    for (long long chunk = 0; chunk < v; ++chunk) {
      chunk_of.insert(chunk_of.end(), static_cast<std::size_t>(end - group), chunk);
    }
  }
  const long long total = n * v;
  const long long warm_up = std::min(total, v == 1 ? p - i - 1 : 2 * (p - i - 1) + (v - 1) * g);
  const long long reads = i == 0 ? 0 : v - 1;  // the virtual stage that reads the data
  long long held = 0;
  long long most = 0;
  const auto forward = [&](long long k) {
    if (chunk_of[static_cast<std::size_t>(k)] == reads) most = std::max(most, ++held);
  };
  const auto backward = [&](long long k) {
    if (v - 1 - chunk_of[static_cast<std::size_t>(k)] == reads) --held;
  };
  for (long long k = 0; k < warm_up; ++k) forward(k);
  for (long long k = 0; warm_up + k < total; ++k) {
    forward(warm_up + k);
    backward(k);
  }
  return static_cast<double>(std::max<long long>(most, 1));
}

double pipeline_micro_batches(const TrainingSetup& setup) {
  if (stack_row(setup.stack).torch_pipelining) return setup.layout.pipeline_parallel;
  if (setup.global_batch_sequences == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(setup.global_batch_sequences) /
         (static_cast<double>(setup.micro_batch_sequences) * setup.layout.data_parallel);
}

Placement place_parameters(const ModelShape& shape, const TrainingSetup& setup) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double p = layout.pipeline_parallel;
  const PipelineSplit split = pipeline_split(layout, shape.num_layers);
  Placement placement;
  placement.counts = parameter_counts(shape);
  // The linear layers' own counts serve LoRA, FP8, Muon and the optimiser in the backward pass,
  // none of them the plate's (kBeyondThePlate: they drop out of the first view's module).
  if (kBeyondThePlate) placement.linear = linear_layers(shape);
  if (kBeyondThePlate && setup.optimizer == Optimizer::kMuon) {
    placement.muon_vectors_per_layer = muon_vector_parameters_per_layer(shape);
  }
  // The distributed optimiser's instances each shard over d·c / k ranks (Megatron-LM's
  // --num-distributed-optimizer-instances; 1 elsewhere).
  placement.zero_shards = static_cast<double>(layout.data_parallel) * layout.context_parallel /
                          setup.optimizer_instances;
  // The routed experts' ZeRO shards are their own data-parallel group, the world over ep·etp·p.
  placement.expert_zero_shards =
      placement.zero_shards * t / (layout.expert_parallel * expert_tensor_parallel_of(layout));

  // The embedding on the first stage, the output head and final norm on the last, both split over
  // the vocabulary by t. Tied embeddings need a copy of the matrix on the last stage when p > 1
  // (as Megatron-LM keeps one). Learned positions sit whole beside the embedding (Megatron-LM's
  // LanguageModelEmbedding does not split them). A vocabulary that t does not divide is padded up
  // to a multiple of t, as Megatron-LM pads it.
  const ParameterCounts& counts = placement.counts;
  const double vocab_rows_per_rank = std::ceil(static_cast<double>(shape.vocab_size) / t);
  const double embedding = vocab_rows_per_rank * shape.hidden_size;
  const bool head_matrix_here = shape.tied_embeddings ? p > 1 : true;
  const double head =
      (head_matrix_here ? embedding : 0) + (shape.output_head_bias ? vocab_rows_per_rank : 0);
  const double last_extra = head + counts.final_norm;
  const double step_micro_batches = pipeline_micro_batches(setup);
  const auto stage_at = [&](StageRole role, double index, double first_layer, double layers) {
    StagePlacement stage;
    stage.role = role;
    stage.index = static_cast<int>(index);
    stage.first_layer = first_layer;
    stage.layers = layers;
    stage.micro_batches_in_flight = micro_batches_in_flight(layout, step_micro_batches, index);
    const StageLayers held = stage_layers(shape, layout, placement, first_layer, layers);
    stage.parameters = held.parameters;
    stage.expert_parameters = held.expert_parameters;
    if (setup.fp8_param_gather) {
      stage.fp8_parameters = fp8_layers(shape, layout, first_layer, layers).weights;
    }
    return stage;
  };
  placement.first = stage_at(StageRole::kFirst, 0, 0, split.first);
  const double first_layers_parameters = placement.first.parameters;
  placement.first.root_parameters =
      embedding + counts.position_embedding + (p == 1 ? last_extra : 0);
  placement.first.parameters =
      first_layers_parameters + embedding + counts.position_embedding + (p == 1 ? last_extra : 0);
  // A multimodal model's vision tower and projector, whole beside the embedding.
  placement.first.root_parameters += shape.vision_parameters;
  placement.first.parameters += shape.vision_parameters;
  placement.last = stage_at(StageRole::kLast, p - 1, shape.num_layers - split.last, split.last);
  placement.last.root_parameters = p == 1 ? placement.first.root_parameters : last_extra;
  placement.last.parameters += last_extra;
  // Multi-token prediction, trained: each module on the last stage (Megatron-LM's placement unless
  // a layout says otherwise), one layer of the mixture's kind split as the stage's own, eh_proj
  // (2·h x h, column-parallel over t) and three norms (enorm, hnorm, the final one); with a
  // pipeline the stage keeps a replica of the embedding (Megatron-LM's GPTModel builds one where
  // mtp_process).
  if (setup.mtp && shape.num_mtp_layers > 0) {
    StagePlacement& holder = p == 1 ? placement.first : placement.last;
    const double modules = shape.num_mtp_layers;
    const StageLayers held = stage_layers(shape, layout, placement, shape.num_layers, modules);
    const double h = shape.hidden_size;
    const double extra =
        modules * (2 * h * h / t + 3 * counts.final_norm) + (p > 1 ? embedding : 0);
    holder.mtp_layers = modules;
    holder.root_parameters += held.parameters + extra;
    holder.parameters += held.parameters + extra;
    holder.expert_parameters += held.expert_parameters;
  }
  // A mixture whose dense layers are interleaved (Llama 4 Maverick's): stages of an odd number of
  // layers alternate between more dense and more mixture layers, so the second and third stages,
  // even ones too, are weighed against the first. A mixture with dense first layers: each stage's
  // activations are the mean of its own layers (layer_mix.cpp, stage_layer_activations), so the
  // middle stages wholly past the dense layers, which hold more expert parameters too, are weighed
  // against the first, even split or not.
  const bool interleaved = shape.num_experts > 1 && shape.moe_layer_step > 1;
  const double dense_layers = shape.num_experts > 1 ? shape.num_dense_layers : 0;
  if ((!split.even || interleaved || dense_layers > 0) && p > 2) {
    placement.middle.push_back(stage_at(StageRole::kMiddle, 1, split.first, split.middle));
    // A mixture's dense layers in the second stage: the first middle stage past them holds more
    // parameters, if fewer micro-batches.
    if (interleaved && p > 3) {
      placement.middle.push_back(
          stage_at(StageRole::kMiddle, 2, split.first + split.middle, split.middle));
    } else if (dense_layers > split.first && split.middle > 0) {
      const double index = 1 + std::ceil((dense_layers - split.first) / split.middle);
      if (index <= p - 2) {
        placement.middle.push_back(stage_at(
            StageRole::kMiddle, index, split.first + (index - 1) * split.middle, split.middle));
      }
    }
  }

  // A middle stage asked for by the setup, when it is not among those weighed already.
  const int asked = answered_stage_index(setup);
  if (asked > 0 && asked < p - 1 &&
      std::none_of(placement.middle.begin(), placement.middle.end(),
                   [asked](const StagePlacement& stage) { return stage.index == asked; })) {
    placement.middle.push_back(stage_at(StageRole::kMiddle, asked,
                                        split.first + (asked - 1) * split.middle, split.middle));
  }

  // One layer's parameters on the first stage, on average: offloading's unit in flight.
  const double parameters_per_layer = first_layers_parameters / placement.first.layers;
  placement.layer_unit = {parameters_per_layer, 0, 0, 0};
  placement.embedding_unit = {embedding, 0, 0, 0};
  if (kBeyondThePlate && setup.lora_rank > 0) {
    split_for_lora(shape, setup, parameters_per_layer, embedding, placement);
  } else {
    for (StagePlacement* stage : {&placement.first, &placement.last}) {
      stage->split.trainable = stage->parameters;
    }
    // A frozen vision tower holds its weights alone: no gradient, master copy or optimiser state.
    if (!setup.train_vision) {
      placement.first.split.trainable -= shape.vision_parameters;
      placement.first.split.frozen_other = shape.vision_parameters;
    }
    for (StagePlacement& stage : placement.middle) stage.split.trainable = stage.parameters;
  }
  return placement;
}

}  // namespace trainmem
