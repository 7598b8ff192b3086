// A mixture's dense layers among its routed ones (layer_mix.hpp).
#include "estimate/layer_mix.hpp"

#include <algorithm>
#include <string>

#include "trainmem/format.hpp"

namespace trainmem {

ModelShape dense_layer_shape(const ModelShape& shape) {
  ModelShape dense = shape;
  dense.num_experts = 1;
  dense.num_experts_per_token = 1;
  dense.moe_ffn_hidden_size = 0;
  dense.shared_expert_ffn_hidden_size = 0;
  dense.shared_expert_gate = false;
  dense.router_bias = false;
  dense.num_expert_groups = 0;
  dense.num_limited_groups = 0;
  dense.num_dense_layers = 0;
  dense.moe_layer_step = 1;
  return dense;
}

// A mixture with dense layers mixed in (first_k_dense_replace, an interleave step): each kind
// counted, and a layer their mean over the layers a stage holds, weighed by their counts, which
// is exact where a stage holds its own layers alone (stage_layer_activations: the model's mean
// without a pipeline, each stage's own under 1F1B). The layer rebuilt under recomputation is
// counted as the larger kind, an upper bound (the dense layers, first, are rebuilt last). Under
// the interleaved schedule (a device's chunks hold micro-batches in flight unevenly), and in a
// hybrid (whose dense layer is of one mixer kind, not their mean), every layer is counted as the
// larger of the two kinds, an upper bound. (stage.cpp calls it but for one-part layers, which hold
// no dense MLP; LoRA and prepare_model_for_kbit_training, which change the figure after it there,
// are refused on these mixtures.)
ActivationsPerLayer with_dense_layers(ActivationsPerLayer layer, const ActivationsPerLayer& dense,
                                      const ModelShape& shape, const TrainingSetup& setup,
                                      const Pen& pen) {
  if (setup.layout.virtual_pipeline_stages <= 1 && !hybrid_linear_attention(shape)) {
    const double layers = shape.num_layers;
    const double dense_layers = dense_layers_between(shape, 0, layers);
    const std::string source = layer.source;
    const double mixture_kept = layer.kept_per_token.value();
    const double mixture_working = layer.recompute_working_bytes;
    const Figure kept =
        (pen.count(dense_layers, "dense layers") * dense.kept_per_token +
         pen.count(layers - dense_layers, "mixture layers") * layer.kept_per_token) /
        pen.count(layers, "layers");
    if (dense.recompute_working_bytes > layer.recompute_working_bytes) layer = dense;
    layer.mixture_kept_per_token = mixture_kept;
    layer.dense_kept_per_token = dense.kept_per_token.value();
    layer.mixture_working_bytes = mixture_working;
    layer.dense_working_bytes = dense.recompute_working_bytes;
    layer.kept_per_token = kept;
    layer.kept_bytes = layer.tokens_on_device * kept.value();
    layer.recompute_working_bytes = std::max(mixture_working, dense.recompute_working_bytes);
    if (pen.writing()) {
      layer.source = source + "; a layer is the mean of " + format_count(dense_layers) +
                     " dense layers (" + format_count(dense.kept_per_token.value()) +
                     " B a token) and " + format_count(layers - dense_layers) + " mixture layers" +
                     (setup.layout.pipeline_parallel == 1 ? ", all on the one stage" : "");
    }
  } else {
    if (dense.kept_bytes + dense.recompute_working_bytes >
        layer.kept_bytes + layer.recompute_working_bytes) {
      layer = dense;
    }
    if (pen.writing()) {
      layer.source +=
          "; every layer counted as the larger of a dense and a mixture layer, an upper bound "
          "on each pipeline stage";
    }
  }
  return layer;
}

ActivationsPerLayer stage_layer_activations(const ActivationsPerLayer& layer,
                                            const ModelShape& shape, const TrainingSetup& setup,
                                            const StagePlacement& stage, const Pen& pen) {
  // The plate's one device has one stage.
  if (!kBeyondThePlate || setup.layout.pipeline_parallel == 1 || layer.dense_kept_per_token <= 0 ||
      stage.layers <= 0) {
    return layer;
  }
  // Under 1F1B each stage's micro-batches in flight hold its own layers alone: their mean.
  const double dense = dense_layers_between(shape, stage.first_layer, stage.layers);
  const double mixture = stage.layers - dense;
  ActivationsPerLayer here = layer;
  here.kept_per_token =
      (pen.count(dense, "dense layers") * pen.count(layer.dense_kept_per_token, "B a token") +
       pen.count(mixture, "mixture layers") *
           pen.count(layer.mixture_kept_per_token, "B a token")) /
      pen.count(stage.layers, "layers on the stage");
  here.kept_bytes = here.tokens_on_device * here.kept_per_token.value();
  here.recompute_working_bytes = std::max(dense > 0 ? layer.dense_working_bytes : 0.0,
                                          mixture > 0 ? layer.mixture_working_bytes : 0.0);
  if (mixture == 0) here.dispatch = Figure();  // no all-to-all on a stage of dense layers alone
  if (pen.writing()) {
    here.source += "; on this stage " + format_count(dense) + " dense and " +
                   format_count(mixture) + " mixture layers, their mean";
  }
  return here;
}

}  // namespace trainmem
