// Where the parameters are (placement.hpp), as Megatron-LM places them.
#include "estimate/placement.hpp"

#include <algorithm>
#include <cmath>

namespace trainmem {

namespace {

// The layers' parameters on a stage that starts at `first_layer`: their matrices split by t and
// their norms kept whole; a mixture's routed experts spread over ep and split over etp (Megatron-
// LM's parallel_state.py), attention, the shared experts and the dense layers split by t, the
// router whole. A mixture's dense layers are its first num_dense_layers (DeepSeek-V3's
// first_k_dense_replace): the first stage holds as many of them as it can.
struct StageLayers {
  double parameters = 0;
  double expert_parameters = 0;
};
StageLayers stage_layers(const ModelShape& shape, const ParallelLayout& layout,
                         const Placement& placement, double first_layer) {
  const ParameterCounts& counts = placement.counts;
  const double t = layout.tensor_parallel;
  const double ep = layout.expert_parallel;
  const double etp = expert_tensor_parallel_of(layout);
  const double routed_per_layer = counts.routed_experts_per_layer / (ep * etp) +
                                  counts.routed_experts_replicated_per_layer / ep;
  const double dense_layers = shape.num_experts > 1 ? shape.num_dense_layers : 0;
  const double dense_here =
      std::clamp(dense_layers - first_layer, 0.0, static_cast<double>(placement.layers_per_stage));
  const double mixture_here = placement.layers_per_stage - dense_here;
  StageLayers layers;
  layers.parameters =
      mixture_here * ((counts.attention_and_mlp_per_layer - counts.routed_experts_per_layer) / t +
                      counts.replicated_per_layer - counts.routed_experts_replicated_per_layer +
                      routed_per_layer) +
      dense_here *
          (counts.dense_attention_and_mlp_per_layer / t + counts.dense_replicated_per_layer) +
      placement.layers_per_stage * counts.norms_per_layer;
  layers.expert_parameters = mixture_here * routed_per_layer;
  return layers;
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
  for (StagePlacement* stage : {&placement.first, &placement.last}) {
    stage->split.frozen_linear = placement.layers_per_stage * linear_per_layer;
    stage->split.frozen_linear_rows = placement.layers_per_stage * rows_per_layer;
    stage->split.frozen_other = stage->parameters - stage->split.frozen_linear;
    stage->split.trainable = placement.layers_per_stage * adapters_per_layer;
    stage->parameters += stage->split.trainable;
  }
}

}  // namespace

Placement place_parameters(const ModelShape& shape, const TrainingSetup& setup) {
  const ParallelLayout& layout = setup.layout;
  const double t = layout.tensor_parallel;
  const double p = layout.pipeline_parallel;
  Placement placement;
  placement.counts = parameter_counts(shape);
  placement.linear = linear_layers(shape);
  placement.layers_per_stage = shape.num_layers / p;
  placement.zero_shards = static_cast<double>(layout.data_parallel) * layout.context_parallel;
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
  const double last_first_layer = shape.num_layers - placement.layers_per_stage;
  const StageLayers first = stage_layers(shape, layout, placement, 0);
  const StageLayers last = stage_layers(shape, layout, placement, last_first_layer);
  placement.first.root_parameters =
      embedding + counts.position_embedding + (p == 1 ? last_extra : 0);
  placement.first.parameters =
      first.parameters + embedding + counts.position_embedding + (p == 1 ? last_extra : 0);
  placement.first.expert_parameters = first.expert_parameters;
  placement.last.first_layer = last_first_layer;
  placement.last.root_parameters = p == 1 ? placement.first.root_parameters : last_extra;
  placement.last.parameters = last.parameters + last_extra;
  placement.last.expert_parameters = last.expert_parameters;

  // One layer's parameters on the first stage, on average: offloading's unit in flight.
  const double parameters_per_layer = first.parameters / placement.layers_per_stage;
  placement.layer_unit = {parameters_per_layer, 0, 0, 0};
  placement.embedding_unit = {embedding, 0, 0, 0};
  if (setup.lora_rank > 0) {
    split_for_lora(shape, setup, parameters_per_layer, embedding, placement);
  } else {
    placement.first.split.trainable = placement.first.parameters;
    placement.last.split.trainable = placement.last.parameters;
  }
  return placement;
}

}  // namespace trainmem
