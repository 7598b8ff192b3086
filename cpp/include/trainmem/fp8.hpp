// FP8 training (precision fp8-mixed) as Transformer Engine's delayed-scaling recipe runs it: the
// linear layers' GEMMs in FP8, their saved inputs in FP8, an FP8 copy of each linear weight beside
// the BF16 parameter, and the recipe's scaling factors. Master weights, gradients and the
// optimiser's state stay as in bf16-mixed. docs/formulas.md ("FP8 training") derives each term.
#pragma once

#include <vector>

#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

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
// modules' FP8 workspaces, reused across micro-batches): kFp8WeightCopiesTnOnly or
// kFp8WeightCopiesNonTn bytes per weight, as the device's architecture row says (options.hpp).

// DelayedScaling's state (transformer_engine/pytorch/module/base.py, set_meta_tensor; the recipe's
// default amax_history_len in transformer_engine/common/recipe/__init__.py): per GEMM 3 FP8
// tensors forward (input, weight, output) and 2 backward (grad output, grad input), each with an
// FP32 amax history of 1,024 values, a scale and a scale_inv.
constexpr double kFp8TensorsPerGemm = 3 + 2;
constexpr double kFp8AmaxHistoryLength = 1024;
constexpr double kFp8ScalingValuesPerTensor = kFp8AmaxHistoryLength + 2;
constexpr double kFp8ScalingBytesPerGemm =
    kFp8TensorsPerGemm * kFp8ScalingValuesPerTensor * kFp32Bytes;  // 20,520

// FP8 weight copies per linear weight on the setup's device (its architecture's row): 2 on
// Hopper (H100, H200) and Ada (a custom device is taken as Ada), 1 on Blackwell (B200); 0 where FP8
// training is not modelled (the A100, which has no FP8 tensor cores; the MI300X, whose ROCm stack
// is not modelled). Whether Transformer Engine runs fp8-mixed at all is the stack's (its row's
// FP8 engine, cpp/src/stacks/stack_rows.hpp). An unknown device (refused by the checks): 0.
double fp8_weight_copies(const TrainingSetup& setup);

// MXFP8's E8M0 scale: one byte for each block of 32 values (MXFP8BlockScaling).
constexpr double kMxfp8BlockValues = 32;
constexpr double kMxfp8ScaleBytesPerValue = 1 / kMxfp8BlockValues;
// Float8BlockScaling's FP32 scales (Float8BlockQuantizer, block_len 128): one for each 1×128
// block of an input or gradient, one for each 128×128 block of a weight (the scales' padding to
// a multiple of 4 left out).
constexpr double kBlockwiseBlockValues = 128;
constexpr double kBlockwiseInputScaleBytesPerValue = kFp32Bytes / kBlockwiseBlockValues;
constexpr double kBlockwiseWeightScaleBytesPerValue =
    kFp32Bytes / (kBlockwiseBlockValues * kBlockwiseBlockValues);
// Megatron-LM's --fp8-amax-history-len default (megatron/training/arguments.py), where Transformer
// Engine's own DelayedScaling default is kFp8AmaxHistoryLength.
constexpr double kMegatronFp8AmaxHistoryLength = 1;

// The recipe's bytes per value, as Transformer Engine keeps them:
//   the FP8 weight cache per weight value: delayed and tensor-wise scaling fp8_weight_copies
//   bytes (a transpose beside the weight on Hopper and Ada); MXFP8 both orientations, each with
//   its block scales, 2 · (1 + 1/32); blockwise both orientations, 2 · (1 + 4/128²);
//   a linear layer's saved input per value: 1 byte, and MXFP8's block scale (1/32) or
//   blockwise's (4/128) beside it;
//   the scaling state per GEMM: delayed scaling's amax histories (kFp8AmaxHistoryLength values, or
//   Megatron-LM's 1 under the megatron stack) with a scale and scale_inv for each of its 5 FP8
//   tensors; tensor-wise scaling a scale and an amax for each; MXFP8 none beyond its block scales.
double fp8_weight_cache_bytes_per_value(const TrainingSetup& setup);
double fp8_saved_input_bytes_per_value(const TrainingSetup& setup);
double fp8_amax_history_length(const TrainingSetup& setup);
double fp8_scaling_bytes_per_gemm(const TrainingSetup& setup);

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

// The FP8 GEMMs of `layers` layers from `first_layer` (a pipeline stage's), on one device: their
// weights' values and their GEMMs.
Fp8Layer fp8_layers(const ModelShape& shape, const ParallelLayout& layout, double first_layer,
                    double layers);

// torchao's MXFP8Linear (torchao/prototype/mx_formats/mx_linear.py, mx_mm; torchtitan's "mx"
// converter) keeps no FP8 copy and saves what a BF16 linear saves (ctx.save_for_backward(input_hp,
// weight_hp)); its backward pass casts, each at 1 + 1/32 bytes a value (FP8 and an E8M0 scale per
// 32): the output's gradient along both dimensions (grad_output_mx_dim0, and dim1 for the weight's
// gradient), the weight along dim1 and the input along dim1, all held until the weight's gradient
// is made: (2·T·out + T·in + in·out)·(1 + 1/32) bytes for a linear of in → out over T tokens. The
// most of any of a dense block's linear layers, unsplit (tensor parallelism is refused with it).
// Compiled, as modelled (check.cpp refuses MXFP8 uncompiled, where to_mx makes FP32 copies first):
// Inductor fuses each cast, and may free grad_output's dim0 cast and the weight's dim1 cast after
// the input's gradient is made, so this is the most the casts hold. The forward pass's casts
// (input and weight along dim0) are fewer, and the backward pass of the first block it meets holds
// all the forward pass held.
double mx_linear_backward_casts(const ModelShape& shape, double tokens);

// ---- NVFP4 (precision nvfp4-mixed), as torchtitan runs it ---------------------------------------

// torchao's NVFP4 (torchao cb76f29, prototype/moe_training/nvfp4_training/nvfp4_linear.py): an
// E2M1 value is half a byte (two to a float4_e2m1fn_x2), each block of 16 values has an E4M3
// scale (BlockWise1x16), and each tensor one FP32 scale: 1/2 + 1/16 = 9/16 B a value. Its Triton
// kernels need every dimension a multiple of 128, so the swizzled scales (32_4_4) need no padding.
constexpr double kNvfp4BlockValues = 16;
constexpr double kNvfp4BytesPerValue = 0.5 + 1 / kNvfp4BlockValues;
constexpr double kNvfp4Dimension = 128;  // _NVFP4_BLOCK: each GEMM dimension's multiple
// The decoder layers whose linear layers run NVFP4 under nvfp4-mixed: the leading L −
// ceil(L × tail) (torchtitan's nvfp4_bf16_tail_fqns, "layers.0." to the last converted); 0 under
// any other precision. The output layer is never converted.
double nvfp4_layers(const ModelShape& shape, const TrainingSetup& setup);

// A converted block's linear layers, each in → out: torchtitan's Llama block (per-op recomputation
// keeps NVFP4 to dense Llama-style blocks: check.cpp), wq, wk and wv as one wqkv where it fuses
// them (TrainingSetup::fused_qkv), then wo, w1, w3 and w2.
struct Nvfp4Linear {
  double in = 0;
  double out = 0;
};
std::vector<Nvfp4Linear> nvfp4_block_linears(const ModelShape& shape, bool fused_qkv);

// One converted block's backward pass (nvfp4_mm_triton.backward), at its largest linear of
// in → out over T tokens, in FP4 codes at 9/16 B a value. Compiled under per-op recomputation
// the codes its forward pass saved are rebuilt in the backward pass (the policy recomputes the
// custom ops that make them), each kernel making a tensor's row-wise and column-wise codes
// together, inserted before its first use (the partitioner's reordering_to_mimic_autograd_engine):
// grad_output quantised both ways (2·T·out) beside the weight's codes both ways (2·in·out) at the
// input-gradient GEMM, then the input's both ways (2·T·in) beside grad_output's column-wise codes
// (T·out) at the weight-gradient GEMM: max(2·in·out + 2·T·out, 2·T·in + T·out)·9/16 bytes.
double nvfp4_linear_backward_casts(const ModelShape& shape, bool fused_qkv, double tokens);

}  // namespace trainmem
