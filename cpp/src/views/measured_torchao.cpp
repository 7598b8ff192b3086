// torchao's MX formats benchmark on B200s (pytorch/ao, torchao/prototype/mx_formats/README.md as
// d8bb51f6 added it, August 2025; copied into torchtitan's components/quantization/mxfp8.md):
// Llama 3 8B under torchtitan 6fc499f6 in BF16, MXFP8 and tensorwise Float8, each run's peak
// reserved memory set against the estimate under the torchtitan stack (measured_runs.hpp).
#include <string>

#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

enum class Scaling { kNone, kMxfp8, kFloat8Tensorwise };

MeasuredCase b200_row(Scaling scaling, const char* id, const char* precision, const char* row,
                      double gibibytes) {
  MeasuredCase measured;
  measured.id = std::string("torchao-2025-08-b200-") + id;
  measured.title = std::string(
                       "Llama 3 8B, FSDP 8, 1 × 8K tokens, per-op selective "
                       "recomputation, compiled, ") +
                   precision + ", 8 B200s";
  measured.citation =
      std::string("torchao, MX formats training benchmark on 8 B200s, August 2025 (the row \"") +
      row + "\")";
  measured.source =
      "pytorch/ao, torchao/prototype/mx_formats/README.md at d8bb51f6 (August 15, 2025: torchao "
      "0.13.0+gite4e681be, torch 2.9.0.dev20250815, torchtitan 6fc499f6), run by "
      "benchmarks/float8/training/llama3.sh: "
      "torchtitan's llama3_8b.toml with --training.local-batch-size=1 --training.compile and the "
      "row's converter; parse_torchtitan_logs.py reads the memory log's max_reserved_gib";
  measured.statistic =
      "peak memory reserved by PyTorch's caching allocator, GiB (torchtitan's memory log, the "
      "most over 100 steps; printed as \"GB\")";
  measured.quantity = MeasuredQuantity::kReserved;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes = gibibytes * kBytesPerGibibyte;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kTorchtitan;
  setup.model_id = "llama3-8b";
  setup.device_id = "b200";
  setup.sequence_length = 8192;
  setup.micro_batch_sequences = 1;
  setup.flash_attention = true;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kSelectiveOp;
  // training.compile at 6fc499f6 compiles each block and the loss (build_cross_entropy_loss).
  setup.compile = Compile::kBlocksAndLoss;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  std::string how;
  switch (scaling) {
    case Scaling::kNone:
      how = "BF16 compute";
      break;
    case Scaling::kMxfp8:
      setup.precision = Precision::kFp8Mixed;
      setup.fp8_recipe = Fp8Recipe::kMxfp8;
      how =
          "torchao's MXFP8 linear layers but the output layer (the mx converter's filter_fqns), "
          "which save what BF16 saves, their BF16 input and weight, and cast in the backward "
          "pass: the mxfp8_cublas_rceil row measured the same 33.88 GiB";
      break;
    case Scaling::kFloat8Tensorwise:
      setup.precision = Precision::kFp8Mixed;
      setup.fp8_all_gather = true;
      how =
          "torchao's tensorwise Float8 linear layers but the output layer, their weights gathered "
          "in FP8 (enable_fsdp_float8_all_gather, as the script sets it for this recipe)";
      break;
  }
  measured.note =
      "The script's settings: torchtitan's Llama 3 8B config (8,192 tokens, per-op selective "
      "recomputation), local batch 1, FSDP over the 8 devices, the blocks and the loss compiled, "
      "and " +
      how +
      ". Under per-op selective recomputation torchao's linear layers run their matmul as aten.mm "
      "on a tensor subclass, which the policy saves every second time as it does BF16's, and "
      "their casts are recomputed: the three rows measure within 0.5 GiB of each other, as the "
      "estimate finds them. The devices were power-limited to 750 W, which does not change what "
      "they hold";
  return measured;
}

}  // namespace

std::vector<MeasuredCase> torchao_b200_cases() {
  return {
      b200_row(Scaling::kNone, "bf16", "BF16", "None (bfloat16)", 33.71),
      b200_row(Scaling::kMxfp8, "mxfp8", "MXFP8", "mxfp8_cublas", 33.88),
      b200_row(Scaling::kFloat8Tensorwise, "float8-tensorwise", "tensorwise Float8",
               "float8 tensorwise", 33.38),
  };
}

}  // namespace trainmem
