// LoRA's parameters and the quantised base's bytes per parameter (fine_tuning.hpp).
#include "trainmem/fine_tuning.hpp"

#include <algorithm>
#include <vector>

namespace trainmem {

LinearLayers linear_layers(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double f = shape.ffn_hidden_size;
  const double head_dim = head_dim_of(shape);
  const double q = shape.num_attention_heads * head_dim;
  const double kv = shape.num_key_value_heads * head_dim;
  const double experts = shape.num_experts;
  LinearLayers layers;
  layers.router_weights = shape.num_experts > 1 ? h * experts : 0;
  layers.weights = h * q + 2 * h * kv + q * h + experts * 3 * h * f + layers.router_weights;
  layers.column_parallel_rows = q + 2 * kv + experts * 2 * f;
  layers.whole_rows = h + experts * h + (shape.num_experts > 1 ? experts : 0);
  layers.output_rows = layers.column_parallel_rows + layers.whole_rows;
  layers.largest_weight = std::max({h * q, h * kv, h * f});
  return layers;
}

namespace {

// A linear layer of in × out, `count` of them per transformer layer.
struct LinearModule {
  double in = 0;
  double out = 0;
  double count = 1;
};

std::vector<LinearModule> adapted_modules(const ModelShape& shape, LoraTargets targets) {
  const double h = shape.hidden_size;
  const double f = shape.ffn_hidden_size;
  const double head_dim = head_dim_of(shape);
  const double q = shape.num_attention_heads * head_dim;
  const double kv = shape.num_key_value_heads * head_dim;
  const double experts = shape.num_experts;
  std::vector<LinearModule> modules = {{h, q, 1}, {h, kv, 2}, {q, h, 1}};  // Q; K and V; O
  if (targets == LoraTargets::kAllLinear) {
    modules.push_back({h, f, 2 * experts});                         // gate and up
    modules.push_back({f, h, experts});                             // down
    if (shape.num_experts > 1) modules.push_back({h, experts, 1});  // the router
  }
  return modules;
}

}  // namespace

double lora_parameters_per_layer(const ModelShape& shape, int rank, LoraTargets targets) {
  double parameters = 0;
  for (const LinearModule& module : adapted_modules(shape, targets)) {
    parameters += module.count * rank * (module.in + module.out);
  }
  return parameters;
}

double lora_parameters_in_matrices_of_at_least(const ModelShape& shape, int rank,
                                               LoraTargets targets, double min_elements,
                                               double shards) {
  double parameters = 0;
  for (const LinearModule& module : adapted_modules(shape, targets)) {
    // lora_A, r × in, and lora_B, out × r.
    for (const double size : {rank * module.in, rank * module.out}) {
      if (size / shards >= min_elements) parameters += module.count * size;
    }
  }
  return parameters;
}

double linear_parameters_in_matrices_of_at_least(const ModelShape& shape, double min_elements,
                                                 double shards) {
  double parameters = 0;
  for (const LinearModule& module : adapted_modules(shape, LoraTargets::kAllLinear)) {
    const double size = module.in * module.out;
    if (size / shards >= min_elements) parameters += module.count * size;
  }
  return parameters;
}

double lora_adafactor_values_per_layer(const ModelShape& shape, int rank, LoraTargets targets) {
  double values = 0;
  for (const LinearModule& module : adapted_modules(shape, targets)) {
    // lora_A, r × in: a row of r and a column of in; lora_B, out × r: out and r.
    values += module.count * (2.0 * rank + module.in + module.out);
  }
  return values;
}

double lora_modules_per_token(const ModelShape& shape, LoraTargets targets) {
  constexpr double kAttentionProjections = 4;  // Q, K, V, O
  constexpr double kMlpProjections = 3;        // gate, up, down
  double modules = kAttentionProjections;
  if (targets == LoraTargets::kAllLinear) {
    modules += kMlpProjections * shape.num_experts_per_token;
    if (shape.num_experts > 1) modules += 1;  // the router
  }
  return modules;
}

double lora_input_features_per_token(const ModelShape& shape, LoraTargets targets) {
  const double h = shape.hidden_size;
  double features = 3 * h + shape.num_attention_heads * head_dim_of(shape);
  if (targets == LoraTargets::kAllLinear) {
    const double f = routed_expert_width(shape);
    features += shape.num_experts_per_token * (2 * h + f);
    if (shape.num_experts > 1) features += h;
  }
  return features;
}

double base_linear_bytes_per_parameter(const ModelShape& shape, BaseWeights base) {
  switch (base) {
    case BaseWeights::kNf4:
      return kNf4BytesPerParameter;
    case BaseWeights::kInt8: {
      const LinearLayers layers = linear_layers(shape);
      return kInt8BytesPerValue + kInt8ScaleBytesPerRow * layers.output_rows / layers.weights;
    }
    case BaseWeights::kBf16:
      break;
  }
  return kBf16Bytes;
}

}  // namespace trainmem
