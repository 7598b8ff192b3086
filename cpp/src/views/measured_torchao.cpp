// torchao's MX formats benchmark on B200s (pytorch/ao, torchao/prototype/mx_formats/README.md as
// d8bb51f6 added it, August 2025; copied into torchtitan's components/quantization/mxfp8.md):
// Llama 3 8B under torchtitan 6fc499f6 in BF16, MXFP8 and tensorwise Float8, each run's peak
// reserved memory set against the estimate under the torchtitan stack (measured_runs.hpp); and
// torchtitan's NVFP4 evidence on GB200s (nvfp4.md, August 2026), BF16 and NVFP4.
#include <string>

#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

enum class Scaling { kNone, kMxfp8, kFloat8Tensorwise };

// A torchtitan run's reserved peak in GiB, under FSDP2 (ZeRO 3) over `devices` with per-op
// selective recomputation: `sequences` of `sequence` tokens a micro-batch on each.
void torchtitan_fsdp_run(MeasuredCase& measured, double gibibytes, const char* model,
                         const char* device, int sequence, int sequences, int devices) {
  measured.quantity = MeasuredQuantity::kReserved;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes = gibibytes * kGibibyte;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kTorchtitan;
  setup.model_id = model;
  setup.device_id = device;
  setup.sequence_length = sequence;
  setup.micro_batch_sequences = sequences;
  setup.flash_attention = true;
  setup.layout.data_parallel = devices;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kSelectiveOp;
}

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
  torchtitan_fsdp_run(measured, gibibytes, "llama3-8b", "b200", 8192, 1, 8);
  TrainingSetup& setup = measured.setup;
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

// torchtitan's NVFP4 evidence on 4 GB200s (torchtitan/components/quantization/nvfp4.md, added in
// bcc09297a, August 5, 2026): Llama 3 8B as llama3_8b and llama3_8b_first_85_pct_layers_nvfp4 run
// it, and Qwen3 8B as qwen3_8b_first_85_pct_layers_nvfp4 runs it (the BF16 row with the converter
// left out).
struct Gb200Table {
  const char* id;        // the case ids' prefix
  const char* title;     // the model, the layout and the tokens
  const char* evidence;  // the table's heading
  const char* model;     // trainmem's preset
  int sequences;         // of 2,048 tokens, a micro-batch
  int converted_layers;  // of `layers`, under NVFP4 (the rest, a tail of 15%, BF16)
  int layers;
  const char* source;
  const char* settings;   // the note's opening
  const char* mxfp8_row;  // the table's MXFP8 figure, not set against the estimate, and why
  const char* mxfp8_why;
};

MeasuredCase gb200_row(const Gb200Table& table, bool nvfp4, const char* id, double gibibytes,
                       std::string outside = {}) {
  MeasuredCase measured;
  measured.id = std::string(table.id) + id;
  measured.title = std::string(table.title) + (nvfp4 ? "NVFP4 (" : "BF16") +
                   (nvfp4 ? std::to_string(table.converted_layers) + " of " +
                                std::to_string(table.layers) + " layers)"
                          : "") +
                   ", 4 GB200s";
  measured.citation = std::string("torchtitan, NVFP4 training on Blackwell, ") + table.evidence +
                      ", August 2026 (the row \"" + (nvfp4 ? "NVFP4 (bf16 tail)" : "BF16") + "\")";
  measured.source = table.source;
  measured.statistic =
      "peak memory reserved by PyTorch's caching allocator, GiB (torchtitan's memory log, "
      "\"Memory\" with its share of the device)";
  torchtitan_fsdp_run(measured, gibibytes, table.model, "gb200", 2048, table.sequences, 4);
  TrainingSetup& setup = measured.setup;
  setup.compile = Compile::kBlocks;  // compile.components = ["model"]
  setup.fused_qkv = true;
  setup.logits = true;
  setup.loss = Loss::kChunkedWrapper;
  if (nvfp4) setup.precision = Precision::kNvfp4Mixed;
  measured.note =
      std::string(table.settings) +
      (nvfp4 ? ", and torchao's NVFP4 linear layers in layers 0 to " +
                   std::to_string(table.converted_layers - 1) + ", the last " +
                   std::to_string(table.layers - table.converted_layers) +
                   " and the output layer BF16. Their matmul is not aten.mm, so the policy "
                   "recomputes it and its FP4 codes: a converted layer keeps its input and the "
                   "attention's tensors alone"
             : std::string(", in BF16")) +
      ". The MXFP8 row of the same table (" + table.mxfp8_row +
      " GiB) is not set against the estimate: " + table.mxfp8_why +
      (outside.empty() ? std::string() : ". " + outside);
  measured.outside_goal = std::move(outside);
  return measured;
}

const Gb200Table kLlamaGb200 = {
    "torchtitan-2026-08-gb200-",
    "Llama 3.1 8B, FSDP 4, 32 × 2K tokens, per-op selective recomputation, compiled, fused QKV, ",
    "Llama 3 8B 200M-token evidence",
    "llama3.1-8b",
    32,
    27,
    32,
    "pytorch/torchtitan, torchtitan/components/quantization/nvfp4.md (73aed7f6, August 2026: "
    "PyTorch 2.14.0a0+gitd9abf9e, torchao 0.18.0+gitcb76f29), its Llama 3 8B usage line: "
    "--module llama3 --config llama3_8b_first_85_pct_layers_nvfp4 (or llama3_8b with model "
    "compile for BF16), --parallelism.data_parallel_shard_degree 4, "
    "--training.num_tokens_per_microbatch_per_dp_rank 65536, --training.max_context_length "
    "2048, at step 760",
    "The config's settings: Llama 3.1 8B's torchtitan model with fused QKV (its default since "
    "June 2026), 65,536 tokens a micro-batch in sequences of 2,048, FSDP over the 4 devices, "
    "per-op selective recomputation (SelectiveAC), the model compiled, ChunkedLossWrapper's 8 "
    "chunks",
    "179.94",
    "at that commit the MXFP8 converter converts the output layer too, which trainmem's MXFP8 "
    "does not count"};

const Gb200Table kQwenGb200 = {
    "torchtitan-2026-08-gb200-qwen3-8b-",
    "Qwen3 8B, FSDP 4, 16 × 2K tokens, per-op selective recomputation, compiled, fused QKV, ",
    "Qwen3 8B 200M-token evidence (random initialization)",
    "qwen3-8b",
    16,
    30,
    36,
    "pytorch/torchtitan, torchtitan/components/quantization/nvfp4.md (bcc09297a, August 5, "
    "2026; the same table at 73aed7f6), its Qwen3 8B rows: qwen3_8b_first_85_pct_layers_nvfp4 "
    "(SelectiveAC, the model compiled, varlen attention, ChunkedLossWrapper), local batch 16 of "
    "2,048 tokens on C4, FSDP degree 4, at step 1,520",
    "The table's settings: Qwen3 8B's torchtitan model with fused QKV, 16 sequences of 2,048 a "
    "micro-batch (32,768 tokens), FSDP over the 4 devices, per-op selective recomputation "
    "(SelectiveAC), the model compiled, ChunkedLossWrapper's 8 chunks",
    "112.63",
    "no config of that commit says how it converted Qwen3 8B (llama3_8b_mxfp8 converts the "
    "output layer too, which trainmem's MXFP8 does not count)"};

}  // namespace

std::vector<MeasuredCase> torchtitan_gb200_cases() {
  return {
      gb200_row(kLlamaGb200, false, "bf16", 174.49),
      gb200_row(kLlamaGb200, true, "nvfp4", 110.95),
      gb200_row(kQwenGb200, false, "bf16", 112.88),
      gb200_row(kQwenGb200, true, "nvfp4", 78.63,
                "Outside 10%: the estimate is 12.5% under, 9.8 GiB the replay does not find, "
                "where the same table's BF16 Qwen3 row and both Llama 3 8B rows are within 7%: "
                "what NVFP4's converted layers hold beside Qwen3's block (its q and k norms, "
                "which the Llama block lacks) is the suspect, not found without a device"),
  };
}

std::vector<MeasuredCase> torchao_b200_cases() {
  return {
      b200_row(Scaling::kNone, "bf16", "BF16", "None (bfloat16)", 33.71),
      b200_row(Scaling::kMxfp8, "mxfp8", "MXFP8", "mxfp8_cublas", 33.88),
      b200_row(Scaling::kFloat8Tensorwise, "float8-tensorwise", "tensorwise Float8",
               "float8 tensorwise", 33.38),
  };
}

}  // namespace trainmem
