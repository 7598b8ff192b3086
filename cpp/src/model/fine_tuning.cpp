// LoRA's parameters and the quantised base's bytes per parameter (fine_tuning.hpp).
#include "trainmem/fine_tuning.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace trainmem {

namespace {

// A linear layer of in × out, `count` of them per transformer layer (a fraction where only some
// layers hold it: a hybrid's attention and linear mixers' projections, in their layers' shares).
struct LinearModule {
  double in = 0;
  double out = 0;
  double count = 1;
  bool column_parallel = true;  // split by rows under tensor parallelism (O, down: by columns)
};

// The share of a hybrid's layers of each kind (models.hpp): per-layer figures below are the
// model's mean layer, exact on any stage that holds the kinds in the model's ratio.
struct KindShares {
  double full = 1;
  double linear = 0;
};
KindShares kind_shares(const ModelShape& shape) {
  const double linear = linear_attention_layers_between(shape, 0, shape.num_layers);
  return {(shape.num_layers - linear) / shape.num_layers, linear / shape.num_layers};
}

// Up to 13 linear modules a layer: attention's 3 kinds, a linear mixer's 7 (Kimi Delta
// Attention's), the MLP's 2 and the router. Held in place, not on the heap: the first view's module
// carries this code (page bytes).
class Modules {
 public:
  void add(LinearModule module) { items_[size_++] = module; }
  const LinearModule* begin() const { return items_.data(); }
  const LinearModule* end() const { return items_.data() + size_; }

 private:
  std::array<LinearModule, 13> items_{};
  std::size_t size_ = 0;
};

// The attention's projections (PEFT's q_proj, k_proj, v_proj, o_proj), each layer's or, in a
// hybrid, the full-attention layers' share; q_proj also makes the output gate's a·d (Qwen3-Next).
void add_attention_modules(const ModelShape& shape, Modules& modules) {
  const double h = shape.hidden_size;
  const double head_dim = head_dim_of(shape);
  const double q = shape.num_attention_heads * head_dim;
  const double kv = shape.num_key_value_heads * head_dim;
  const double share = kind_shares(shape).full;
  modules.add({h, shape.attention_output_gate ? 2 * q : q, share});
  modules.add({h, kv, 2 * share});
  modules.add({q, h, share, false});
}

// A hybrid's linear mixer's projections in their layers' share: LFM2's in_proj and out_proj, Kimi
// Delta Attention's, or a Gated DeltaNet's, Qwen3-Next's in_proj_qkvz and in_proj_ba or Qwen3.5's
// in_proj_qkv, in_proj_z, in_proj_b and in_proj_a, then out_proj. The convolution is no linear
// layer (nn.Conv1d): PEFT's all-linear and bitsandbytes leave it.
void add_linear_mixer_modules(const ModelShape& shape, Modules& modules) {
  if (!hybrid_linear_attention(shape)) return;
  const double h = shape.hidden_size;
  if (global_attention_mixer(shape)) {
    // Gemma 4's global layers: q_proj, k_proj, v_proj unless the values are K's, o_proj.
    const ModelShape global = global_attention_shape(shape);
    const double q = global.num_attention_heads * head_dim_of(global);
    const double kv = global.num_key_value_heads * head_dim_of(global);
    const double share = kind_shares(shape).linear;
    modules.add({h, q, share});
    modules.add({h, kv, (global.keys_are_values ? 1.0 : 2.0) * share});
    modules.add({q, h, share, false});
    return;
  }
  if (short_conv_mixer(shape)) {
    // LFM2's Lfm2ShortConv: in_proj (B, C and x) and out_proj.
    const double share = kind_shares(shape).linear;
    modules.add({h, 3 * h, share});
    modules.add({h, h, share, false});
    return;
  }
  const double keys = static_cast<double>(shape.linear_num_key_heads) * shape.linear_key_head_dim;
  const double values =
      static_cast<double>(shape.linear_num_value_heads) * shape.linear_value_head_dim;
  const double heads = shape.linear_num_value_heads;
  const double share = kind_shares(shape).linear;
  if (lightning_mixer(shape)) {
    // MiniMaxLightningAttention: qkv_proj, output_gate, out_proj.
    modules.add({h, 3 * values, share});
    modules.add({h, values, share});
    modules.add({values, h, share, false});
    return;
  }
  if (mamba1_mixer(shape)) {
    // JambaMambaMixer: in_proj (x and z), x_proj (dt's input, B and C), dt_proj, out_proj.
    const double state = shape.linear_key_head_dim;
    const double rank = shape.mamba_dt_rank;
    modules.add({h, 2 * values, share});
    modules.add({values, rank + 2 * state, share});
    modules.add({rank, values, share});
    modules.add({values, h, share, false});
    return;
  }
  if (kimi_delta_mixer(shape)) {
    // KimiLinearDeltaAttention: q_proj, k_proj, v_proj, the gates' down and up projections,
    // beta_proj, then o_proj.
    const double rank = shape.linear_value_head_dim;
    const double decays = heads * shape.linear_key_head_dim;
    modules.add({h, keys, 2 * share});
    modules.add({h, values, share});
    modules.add({h, rank, 2 * share});
    modules.add({rank, decays, share});
    modules.add({rank, values, share});
    modules.add({h, heads, share});
  } else if (shape.linear_projections_split) {
    modules.add({h, 2 * keys + values, share});
    modules.add({h, values, share});
    modules.add({h, heads, 2 * share});
  } else {
    modules.add({h, 2 * keys + 2 * values, share});
    modules.add({h, 2 * heads, share});
  }
  modules.add({values, h, share, false});
}

// Whether `targets` adapt a hybrid's second kind of layer: under all-linear, or whichever the
// targets where that kind is attention (Gemma 4's global layers).
bool adapts_second_kind(const ModelShape& shape, LoraTargets targets) {
  return targets == LoraTargets::kAllLinear || global_attention_mixer(shape);
}

Modules adapted_modules(const ModelShape& shape, LoraTargets targets) {
  Modules modules;
  add_attention_modules(shape, modules);
  if (adapts_second_kind(shape, targets)) add_linear_mixer_modules(shape, modules);
  if (targets == LoraTargets::kAllLinear) {
    // The MLP's (each expert's gate, up and down) and the router's.
    const double h = shape.hidden_size;
    const double f = shape.ffn_hidden_size;
    const double experts = shape.num_experts;
    modules.add({h, f, 2 * experts});
    modules.add({f, h, experts, false});
    if (shape.num_experts > 1) modules.add({h, experts, 1, false});
  }
  return modules;
}

// A hybrid's linear mixer's modules alone.
Modules linear_mixer_modules(const ModelShape& shape) {
  Modules modules;
  add_linear_mixer_modules(shape, modules);
  return modules;
}

}  // namespace

LinearLayers linear_layers(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double experts = shape.num_experts;
  LinearLayers layers;
  layers.router_weights = shape.num_experts > 1 ? h * experts : 0;
  for (const LinearModule& module : adapted_modules(shape, LoraTargets::kAllLinear)) {
    layers.weights += module.count * module.in * module.out;
    (module.column_parallel ? layers.column_parallel_rows : layers.whole_rows) +=
        module.count * module.out;
    layers.largest_weight = std::max(layers.largest_weight, module.in * module.out);
  }
  layers.output_rows = layers.column_parallel_rows + layers.whole_rows;
  return layers;
}

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
  double modules = kAttentionProjections * kind_shares(shape).full;
  if (adapts_second_kind(shape, targets)) {
    for (const LinearModule& module : linear_mixer_modules(shape)) modules += module.count;
  }
  if (targets == LoraTargets::kAllLinear) {
    modules += kMlpProjections * shape.num_experts_per_token;
    if (shape.num_experts > 1) modules += 1;  // the router
  }
  return modules;
}

double lora_input_features_per_token(const ModelShape& shape, LoraTargets targets) {
  const double h = shape.hidden_size;
  double features =
      (3 * h + shape.num_attention_heads * head_dim_of(shape)) * kind_shares(shape).full;
  if (adapts_second_kind(shape, targets)) {
    for (const LinearModule& module : linear_mixer_modules(shape)) {
      features += module.count * module.in;
    }
  }
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
