// Fine-tuning: LoRA's adapters and their parameters, the bytes per parameter of a quantised frozen
// base (QLoRA's NF4, LLM.int8()), and what offloading keeps on the device. docs/formulas.md
// derives each constant.
#pragma once

#include "trainmem/models.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

constexpr int kMaxLoraRank = 1 << 16;  // 65,536: above any layer's width in practice

// NF4 with double quantisation, as bitsandbytes stores it (functional.py, quantize_4bit with
// compress_statistics=True; nn/modules.py, Params4bit's blocksize 64): 4-bit codes, one absmax
// per block of 64, the absmaxes themselves quantised to 8 bits (quantize_blockwise, blocksize
// 256) with one FP32 absmax per 256 of them. Dettmers et al., "QLoRA", arXiv:2305.14314, section 3:
// 4 + 8/64 + 32/(64·256) = 4.127 bits per parameter.
constexpr double kBitsPerByte = 8;
constexpr double kNf4BitsPerValue = 4;
constexpr double kNf4BlockSize = 64;
constexpr double kNf4QuantisedAbsmaxBits = 8;
constexpr double kNf4NestedBlockSize = 256;
constexpr double kFp32Bits = 32;
constexpr double kNf4BytesPerParameter =
    (kNf4BitsPerValue + kNf4QuantisedAbsmaxBits / kNf4BlockSize +
     kFp32Bits / (kNf4BlockSize * kNf4NestedBlockSize)) /
    kBitsPerByte;  // 0.515869140625
// LLM.int8() (bitsandbytes' Int8Params: CB, one int8 per weight; SCB, one FP32 scale per output
// row): 1 + 4/in_features bytes per parameter.
constexpr double kInt8BytesPerValue = 1;
constexpr double kInt8ScaleBytesPerRow = 4;

// Offloading keeps on the device only what is in flight: the layer being computed and the next,
// being copied (torchtune's OffloadActivations, FSDP's prefetch of one unit ahead).
constexpr double kOffloadLayersInFlight = 2;

// One transformer layer's linear layers, as LoRA and bitsandbytes see them.
struct LinearLayers {
  double weights = 0;      // every linear weight: Q, K, V, O, each expert's gate, up, down, router
  double output_rows = 0;  // the sum of their out_features (int8's one scale per row)
  // Under tensor parallelism Q, K, V, gate and up split their rows (column-parallel); O, down and
  // the router keep theirs whole on every rank.
  double column_parallel_rows = 0;
  double whole_rows = 0;
  double largest_weight = 0;  // the biggest single matrix (the dequantisation buffer)
  double router_weights = 0;  // h·E with experts, replicated under tensor parallelism
};
LinearLayers linear_layers(const ModelShape& shape);

// LoRA on a linear layer of in × out (PEFT's lora.Linear: lora_A in → r, lora_B r → out, no
// biases): r·(in + out) parameters. Per transformer layer, over `targets`:
//   attention   r·(h + q) + 2·r·(h + kv) + r·(q + h)
//   all-linear  that, + E·(2·r·(h + f) + r·(f + h)), + r·(h + E) for a router
double lora_parameters_per_layer(const ModelShape& shape, int rank, LoraTargets targets);

// The adapters' parameters of one layer in matrices of at least `min_elements` once split over
// `shards` (bitsandbytes pages the state of those: TrainingSetup::paged_optimizer).
double lora_parameters_in_matrices_of_at_least(const ModelShape& shape, int rank,
                                               LoraTargets targets, double min_elements,
                                               double shards);

// One layer's linear weights (Q, K, V, O, each expert's gate, up and down, a router) in matrices of
// at least `min_elements` once split over `shards`.
double linear_parameters_in_matrices_of_at_least(const ModelShape& shape, double min_elements,
                                                 double shards);

// Adafactor's factored state over the adapters of one layer: per matrix of rows × columns a row
// vector and a column vector (Shazeer and Stern 2018), so 2·r + in + out values per adapted layer.
double lora_adafactor_values_per_layer(const ModelShape& shape, int rank, LoraTargets targets);

// The adapted linear layers each token passes through in one transformer layer: 4 for the
// attention, + 3·k (the top-k experts' gate, up and down) + 1 (the router) for all-linear. Each
// saves its r-wide intermediate A·x for lora_B's weight gradient.
double lora_modules_per_token(const ModelShape& shape, LoraTargets targets);

// The adapted modules' input features, summed over a layer's adapters a token passes through:
// q, k and v read h each and o reads a·d; with all-linear each of the token's experts' gate and up
// read h and its down f (f_e), and a mixture's router h.
double lora_input_features_per_token(const ModelShape& shape, LoraTargets targets);
// PEFT's lora_dropout above 0 (nn.Dropout in place of nn.Identity, peft/tuners/lora/layer.py,
// Linear.forward: lora_B(lora_A(dropout(x)))): each adapter saves its own dropped copy of its
// input for lora_A's weight gradient (BF16, 2 B; FP32 without autocast) and the dropout's 1-byte
// mask.
constexpr double kLoraDropoutMaskBytes = 1;
constexpr double kMaxLoraDropout = 1;  // a probability below 1
// bitsandbytes' paged optimisers page the state of a parameter of at least 10^5 elements
// (bitsandbytes/optim/optimizer.py, Optimizer8bit.get_state_buffer: p.numel() < 1e5 stays in
// torch.zeros_like).
constexpr double kPagedStateMinElements = 1e5;

// The frozen base's linear weights, bytes per parameter: 2 (BF16), NF4's 0.515869140625, or
// int8's 1 + 4·rows/weights of the model's layers.
double base_linear_bytes_per_parameter(const ModelShape& shape, BaseWeights base);

}  // namespace trainmem
