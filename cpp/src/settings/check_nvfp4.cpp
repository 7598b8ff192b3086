// What a setup under nvfp4-mixed must keep to (check_nvfp4.hpp): what torchtitan's NVFP4 recipe
// runs and trainmem derives, each other setting refused by name rather than counted as BF16.
#include "settings/check_nvfp4.hpp"

#include <string>

#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

namespace {

// The first dimension of a converted GEMM that is not a multiple of 128 (nvfp4.py's
// NVFP4Linear.Config.__post_init__ rejects the layer; nvfp4_mm_triton the tokens), or empty.
std::string unaligned_dimension(const TrainingSetup& setup, const ModelShape& shape) {
  const auto aligned = [](double value) {
    return value == kNvfp4Dimension * static_cast<long long>(value / kNvfp4Dimension);
  };
  for (const LayerWeight& weight : layer_weights(shape, true)) {
    if (!weight.matrix) continue;
    if (!aligned(weight.rows) || !aligned(weight.cols)) {
      return "a linear layer of " + format_count(weight.rows) + " → " + format_count(weight.cols);
    }
  }
  const double tokens = static_cast<double>(setup.micro_batch_sequences) * setup.sequence_length /
                        setup.layout.context_parallel;
  if (!aligned(tokens)) return format_count(tokens) + " tokens a micro-batch on a device";
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
  if (setup.recompute != Recompute::kSelectiveOp || setup.compile == Compile::kOff) {
    return refusal(id::kRecompute,
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
  const std::string unaligned = unaligned_dimension(setup, shape);
  if (!unaligned.empty()) {
    return refusal(id::kPrecision,
                   nvfp4 +
                       " needs every converted GEMM's dimensions a multiple of 128 (torchao's "
                       "NVFP4 kernels); " +
                       shape.name + " has " + unaligned + ". Choose bf16-mixed.");
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
