// FP8 training (precision fp8-mixed) as Transformer Engine's delayed-scaling recipe runs it: the
// linear layers' GEMMs in FP8, their saved inputs in FP8, an FP8 copy of each linear weight beside
// the BF16 parameter, and the recipe's scaling factors. Master weights, gradients and the
// optimiser's state stay as in bf16-mixed. docs/formulas.md ("FP8 training") derives each term.
#pragma once

#include <string_view>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

constexpr double kFp8Bytes = 1;  // E4M3 forward, E5M2 backward: one byte either way

// A linear layer's input is saved for its weight-gradient GEMM as the FP8 tensor it was cast to
// (transformer_engine/pytorch/module/linear.py, _Linear.forward: saved_inputmat = inputmat, its
// row-wise data discarded; layernorm_mlp.py, _LayerNormMLP.forward: ln_out and act_out saved as
// quantised by fc1's and fc2's input quantizers, fc1_out in BF16 for the activation's backward).
// Each h-wide BF16 input so saved gives up one byte per element.
constexpr double kFp8SavedInputBytesFreed = kBf16Bytes - kFp8Bytes;
// Korthikanti's MLP share: fc2's input, GeLU's output, is 4h wide (8 of its 16 bytes).
constexpr double kKorthikantiFc2InputWidthPerHidden = 4;

// The FP8 weight cache: Transformer Engine casts each weight once per step and keeps it (its
// modules' FP8 workspaces, reused across micro-batches). cuBLAS on Hopper runs only TN FP8 GEMMs,
// so the backward pass's dgrad GEMM needs the weight's transpose too, and the modules keep both:
// 2 bytes per weight; where non-TN FP8 GEMMs run (compute capability 10.x, Blackwell) 1 byte
// (Transformer Engine's tests/pytorch/test_cpu_offloading.py, _estimate_cached_weight_size, and
// is_non_tn_fp8_gemm_supported).
constexpr double kFp8WeightCopiesTnOnly = 2;  // the FP8 weight and its transpose
constexpr double kFp8WeightCopiesNonTn = 1;   // the FP8 weight alone

// DelayedScaling's state (transformer_engine/pytorch/module/base.py, set_meta_tensor; the recipe's
// default amax_history_len in transformer_engine/common/recipe/__init__.py): per GEMM 3 FP8
// tensors forward (input, weight, output) and 2 backward (grad output, grad input), each with an
// FP32 amax history of 1,024 values, a scale and a scale_inv.
constexpr double kFp8TensorsPerGemm = 3 + 2;
constexpr double kFp8AmaxHistoryLength = 1024;
constexpr double kFp8ScalingValuesPerTensor = kFp8AmaxHistoryLength + 2;
constexpr double kFp8ScalingBytesPerGemm =
    kFp8TensorsPerGemm * kFp8ScalingValuesPerTensor * kFp32Bytes;  // 20,520

// FP8 weight copies per linear weight on `device_id`: 2 on Hopper (H100, H200, and a custom
// device, taken as Hopper), 1 on Blackwell (B200); 0 where FP8 training is not modelled (the
// A100, which has no FP8 tensor cores; the MI300X, whose ROCm stack is not modelled).
double fp8_weight_copies(std::string_view device_id);

// Whether fp8-mixed runs as Transformer Engine runs it (everything above): under every stack but
// torchtitan's, where torchao's Float8Linear runs it instead (torchao/float8/float8_linear.py,
// matmul_with_hp_or_float8_args: it saves the BF16 input and casts again in the backward pass,
// with dynamic tensor-wise scales, no amax history and no weight cache; with
// enable_fsdp_float8_all_gather, FSDP2 gathers the linear weights in FP8: stack.cpp).
bool transformer_engine_fp8(const TrainingSetup& setup);

// One layer's FP8 GEMMs on a device: the linear weights Transformer Engine runs in FP8 (every
// weight matrix but the router's and a shared expert's gate; split by t, the routed experts' by
// ep·etp, latent attention's down-projections whole), and the GEMMs that carry scaling state, as
// Megatron-LM's layer spec builds its modules: fused QKV and the output projection (latent
// attention: the query's one or two projections, the key/value down- and up-projections and the
// output), fused gate-and-up and down, each local expert's two in the grouped GEMMs, and the
// shared experts' two. `dense_layer`: one of a mixture's dense layers.
struct Fp8Layer {
  double weights = 0;
  double gemms = 0;
};
Fp8Layer fp8_layer(const ModelShape& shape, const ParallelLayout& layout, bool dense_layer);

}  // namespace trainmem
