// FP8 training's weight copies and scaling state (fp8.hpp); its saved activations are counted by
// each activation model (korthikanti.cpp, llama_block.cpp).
#include "trainmem/fp8.hpp"

#include <algorithm>
#include <cmath>

namespace trainmem {

double fp8_weight_copies(const TrainingSetup& setup) {
  return architecture_row(device_of(setup).architecture).fp8_weight_copies;
}

double fp8_weight_cache_bytes_per_value(const TrainingSetup& setup) {
  switch (setup.fp8_recipe) {
    case Fp8Recipe::kMxfp8:
      return 2 * (kFp8Bytes + kMxfp8ScaleBytesPerValue);
    case Fp8Recipe::kBlockwise:
      return 2 * (kFp8Bytes + kBlockwiseWeightScaleBytesPerValue);
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise:
      break;
  }
  return fp8_weight_copies(setup) * kFp8Bytes;
}

// The column-wise copy a linear layer saves (module/linear.py: "Discard row-wise data since it
// is not needed in backward pass"), with its block scales.
double fp8_saved_input_bytes_per_value(const TrainingSetup& setup) {
  switch (setup.fp8_recipe) {
    case Fp8Recipe::kMxfp8:
      return kFp8Bytes + kMxfp8ScaleBytesPerValue;
    case Fp8Recipe::kBlockwise:
      return kFp8Bytes + kBlockwiseInputScaleBytesPerValue;
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise:
      break;
  }
  return kFp8Bytes;
}

double fp8_amax_history_length(const TrainingSetup& setup) {
  return setup.stack == Stack::kMegatron ? kMegatronFp8AmaxHistoryLength : kFp8AmaxHistoryLength;
}

double fp8_scaling_bytes_per_gemm(const TrainingSetup& setup) {
  switch (setup.fp8_recipe) {
    case Fp8Recipe::kDelayed:
      return kFp8TensorsPerGemm * (fp8_amax_history_length(setup) + 2) * kFp32Bytes;
    case Fp8Recipe::kTensorwise:
      return kFp8TensorsPerGemm * 2 * kFp32Bytes;
    case Fp8Recipe::kMxfp8:
    case Fp8Recipe::kBlockwise:
      break;
  }
  return 0;
}

Fp8Layer fp8_layer(const ModelShape& shape, const ParallelLayout& layout, bool dense_layer) {
  const double t = layout.tensor_parallel;
  const double ep = layout.expert_parallel;
  const double experts_split = ep * expert_tensor_parallel_of(layout);
  Fp8Layer layer;
  for (const LayerWeight& weight : layer_weights(shape, dense_layer)) {
    if (!weight.matrix || weight.high_precision) continue;
    const double values = weight.rows * weight.cols * weight.copies;
    if (weight.routed_expert) {
      layer.weights += values / experts_split;
    } else if (weight.placement == WeightPlacement::kSplit) {
      layer.weights += values / t;
    } else {
      layer.weights += values;  // latent attention's down-projections, whole on every rank
    }
  }
  constexpr double kGemmsPerMlp = 2;  // fused gate-and-up (or up), and down
  if (latent_attention(shape)) {
    layer.gemms = (shape.q_lora_rank > 0 ? 2 : 1) + 2 + 1;
  } else {
    layer.gemms = 2;  // fused QKV, the output projection
  }
  const bool mixture = shape.num_experts > 1 && !dense_layer;
  if (mixture) {
    layer.gemms += kGemmsPerMlp * shape.num_experts / ep;
    if (shape.shared_expert_ffn_hidden_size > 0) layer.gemms += kGemmsPerMlp;
  } else {
    layer.gemms += kGemmsPerMlp;
  }
  return layer;
}

Fp8Layer fp8_layers(const ModelShape& shape, const ParallelLayout& layout, double first_layer,
                    double layers) {
  const Fp8Layer mixture_layer = fp8_layer(shape, layout, false);
  const Fp8Layer dense_layer = fp8_layer(shape, layout, true);
  const double dense = dense_layers_between(shape, first_layer, layers);
  const double mixture = layers - dense;
  return {mixture * mixture_layer.weights + dense * dense_layer.weights,
          mixture * mixture_layer.gemms + dense * dense_layer.gemms};
}

namespace {

// The most of (2·T·out + T·in + in·out) over a dense block's linear layers, in values.
double largest_linear_backward_values(const ModelShape& shape, double tokens) {
  double most = 0;
  for (const LayerWeight& weight : layer_weights(shape, true)) {
    if (!weight.matrix || weight.high_precision) continue;
    const double in = weight.rows;  // layer_weights lists each matrix as in x out
    const double out = weight.cols;
    most = std::max(most, 2 * tokens * out + tokens * in + in * out);
  }
  return most;
}

}  // namespace

double mx_linear_backward_casts(const ModelShape& shape, double tokens) {
  return (kFp8Bytes + kMxfp8ScaleBytesPerValue) * largest_linear_backward_values(shape, tokens);
}

double nvfp4_layers(const ModelShape& shape, const TrainingSetup& setup) {
  if (setup.precision != Precision::kNvfp4Mixed) return 0;
  const double layers = shape.num_layers;
  return layers - std::ceil(layers * setup.nvfp4_bf16_tail);
}

std::vector<Nvfp4Linear> nvfp4_block_linears(const ModelShape& shape, bool fused_qkv) {
  const double h = shape.hidden_size;
  const double d = head_dim_of(shape);
  const double queries = shape.num_attention_heads * d;
  const double keys = shape.num_key_value_heads * d;
  const double f = shape.ffn_hidden_size;
  // wqkv, or wq, wk and wv; then wo, w1, w3 and w2.
  std::vector<Nvfp4Linear> linears =
      fused_qkv ? std::vector<Nvfp4Linear>{{h, queries + 2 * keys}}
                : std::vector<Nvfp4Linear>{{h, queries}, {h, keys}, {h, keys}};
  for (const Nvfp4Linear& linear :
       {Nvfp4Linear{queries, h}, Nvfp4Linear{h, f}, Nvfp4Linear{h, f}, Nvfp4Linear{f, h}}) {
    linears.push_back(linear);
  }
  return linears;
}

double nvfp4_linear_backward_casts(const ModelShape& shape, bool fused_qkv, double tokens) {
  double most = 0;
  for (const Nvfp4Linear& linear : nvfp4_block_linears(shape, fused_qkv)) {
    // At the input-gradient GEMM: the weight's codes both ways and grad_output's both ways; at
    // the weight-gradient GEMM: the input's both ways and grad_output's column-wise.
    most = std::max(most, std::max(2 * linear.in * linear.out + 2 * tokens * linear.out,
                                   2 * tokens * linear.in + tokens * linear.out));
  }
  return kNvfp4BytesPerValue * most;
}

}  // namespace trainmem
