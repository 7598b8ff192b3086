// What a setup under nvfp4-mixed must keep to (check_nvfp4.hpp): what torchtitan's NVFP4 recipe
// runs and trainmem derives, each other setting refused by name rather than counted as BF16.
#include "settings/check_nvfp4.hpp"

#include <cmath>
#include <string>

#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

namespace {

bool aligned(double value) { return std::fmod(value, kNvfp4Dimension) == 0; }

// The first converted linear layer whose weight has a dimension that is not a multiple of 128
// (nvfp4.py's NVFP4Linear.Config.__post_init__ rejects it), or empty.
std::string unaligned_linear(const TrainingSetup& setup, const ModelShape& shape) {
  for (const Nvfp4Linear& linear : nvfp4_block_linears(shape, setup.fused_qkv)) {
    if (!aligned(linear.in) || !aligned(linear.out)) {
      return "a linear layer of " + format_count(linear.in) + " → " + format_count(linear.out);
    }
  }
  return "";
}

}  // namespace

Answer check_nvfp4(const TrainingSetup& setup, const ModelShape& shape) {
  if (setup.precision != Precision::kNvfp4Mixed) return {};
  const std::string nvfp4 = "Precision nvfp4-mixed";
  const std::string recipe =
      " as torchtitan's NVFP4 recipe runs it (torchao's NVFP4Linear, compiled, under per-op "
      "selective recomputation)";
  if (setup.stack != Stack::kTorchtitan) {
    return refusal(id::kPrecision, nvfp4 + " is modelled" + recipe +
                                       "; Transformer Engine's NVFP4BlockScaling is not. Choose "
                                       "the torchtitan stack, or bf16-mixed.");
  }
  // nvfp4.py: has_cuda_capability(10, 0), "NVFP4 is only supported on SM100 or later".
  const Device device = device_of(setup);
  if (device.architecture != Architecture::kBlackwell &&
      device.architecture != Architecture::kBlackwellSm120) {
    return refusal(id::kPrecision, nvfp4 +
                                       " runs on Blackwell (compute capability 10.0 on: the "
                                       "B200, GB200, B300 and RTX 5090); the " +
                                       device.name +
                                       " is not one. Choose bf16-mixed, or one of those devices.");
  }
  if (setup.recompute != Recompute::kSelectiveOp || !blocks_compiled(setup.compile)) {
    return refusal(setup.recompute == Recompute::kSelectiveOp ? id::kCompile : id::kRecompute,
                   nvfp4 + " is modelled" + recipe +
                       ": its matmul is an autograd Function the per-op policy recomputes, "
                       "whose saved FP4 codes are derived compiled alone. Choose selective-op "
                       "recomputation with compiled blocks, or bf16-mixed.");
  }
  if (shape.num_experts > 1) {
    return refusal(id::kPrecision, nvfp4 + " is modelled for a dense decoder: " + shape.name +
                                       "'s experts are grouped GEMMs, which torchtitan's "
                                       "NVFP4LinearConverter does not convert. Choose "
                                       "bf16-mixed, or a dense model.");
  }
  if (setup.layout.tensor_parallel > 1 || setup.layout.pipeline_parallel > 1) {
    return refusal(setup.layout.tensor_parallel > 1 ? id::kTensorParallel : id::kPipelineParallel,
                   nvfp4 +
                       " is modelled on whole layers on one pipeline stage: which layers a "
                       "stage converts, and NVFP4 under tensor parallelism, are not. Set tp and "
                       "pp to 1, or choose bf16-mixed.");
  }
  const std::string unaligned = unaligned_linear(setup, shape);
  if (!unaligned.empty()) {
    return refusal(id::kPrecision,
                   nvfp4 +
                       " needs every converted GEMM's dimensions a multiple of 128 (torchao's "
                       "NVFP4 kernels); " +
                       shape.name + " has " + unaligned + ". Choose bf16-mixed.");
  }
  // nvfp4_mm_triton's M: the micro-batch's tokens on the device, folded into one dimension.
  const double tokens = static_cast<double>(setup.micro_batch_sequences) * setup.sequence_length;
  const double on_device = tokens / setup.layout.context_parallel;
  if (!aligned(on_device)) {
    const bool split = aligned(tokens);
    return refusal(split ? id::kContextParallel : id::kTokens,
                   nvfp4 +
                       " needs the tokens a device runs a multiple of 128 (the M of torchao's "
                       "NVFP4 kernels); " +
                       format_count(on_device) + " tokens a micro-batch" +
                       (split ? " on each of " + format_count(setup.layout.context_parallel) +
                                    " context-parallel devices"
                              : "") +
                       " are not. Choose " + (split ? "another cp" : "a multiple of 128 tokens") +
                       ", or bf16-mixed.");
  }
  if (nvfp4_layers(shape, setup) <= 0) {
    return refusal(id::kNvfp4Bf16Tail,
                   "NVFP4's BF16 tail of " + format_count(setup.nvfp4_bf16_tail) +
                       " keeps every layer of " + shape.name +
                       " in BF16 (torchtitan's nvfp4_bf16_tail_fqns raises); choose a smaller "
                       "tail.");
  }
  return {};
}

}  // namespace trainmem
