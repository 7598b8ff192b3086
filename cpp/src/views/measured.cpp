#include "trainmem/measured.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"
#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

// ---- Our own runs: scripts/measure/measure.py on a CPU, tiny shape ------------------------------

// torch 1.13 has no scaled_dot_product_attention, so the harness materialises the scores: no
// FlashAttention. Nothing recomputed, one device, the plate's recipe. `kernels` is true for the
// harness's default, which saves what fused kernels save (the llama-block model's standard), and
// false for Llama's reference code, op by op (--norm eager --mlp eager).
MeasuredCase harness_case(const std::string& file, bool kernels, int layers, int micro_batch,
                          double saved_bytes_in_layers) {
  MeasuredCase measured;
  measured.id = std::string("harness-cpu-tiny-") + (kernels ? "kernels" : "reference-code") + "-" +
                std::to_string(layers) + "x" + std::to_string(micro_batch);
  measured.title =
      "Tiny Llama, " + std::to_string(layers) + (layers == 1 ? " layer" : " layers") + " × " +
      std::to_string(micro_batch) + (micro_batch == 1 ? " sequence" : " sequences") + " of 128, " +
      (kernels ? "saving what fused kernels save" : "Llama's reference code, op by op");
  measured.citation = "trainmem's measurement harness, PyTorch 1.13 on a CPU";
  measured.source = "trainmem's scripts/measure/measure.py --device cpu --tiny" +
                    std::string(kernels ? "" : " --norm eager --mlp eager") +
                    " (torch 1.13, CPU): " + file;
  measured.statistic =
      "bytes of every tensor autograd saves inside the layers "
      "(torch.autograd.graph.saved_tensors_hooks), once per storage";
  measured.quantity = MeasuredQuantity::kActivations;
  measured.setup.model_id = kCustomModelId;
  measured.setup.custom_model = harness_tiny_shape(layers);
  measured.setup.sequence_length = 128;
  measured.setup.micro_batch_sequences = micro_batch;
  measured.setup.flash_attention = false;
  measured.measured_bytes = saved_bytes_in_layers;
  measured.note =
      kernels
          ? "A check of the model's bookkeeping, not of a production stack: the harness's RMSNorm "
            "and SwiGLU save what the fused kernels save, and the run shows which tensors are "
            "shared, that RoPE saves nothing per token, and that K and V are repeated without "
            "FlashAttention; the 8 bytes a layer over the model are the float64 scalar the "
            "scores' scaling keeps"
          : "Not modelled: RMSNorm and SwiGLU written op by op, as in Llama's reference code. "
            "Under torch 1.13 each norm keeps its FP32 input, that input squared and the BF16 "
            "normalised input besides 1/RMS (8·h bytes per token more than a fused kernel's BF16 "
            "input), and the MLP keeps SiLU's output as well (2·f more)";
  return measured;
}

// scripts/measure/loss_peak.py: an unfused cross-entropy over FP32-upcast logits, the BF16 logits
// freed before the backward pass, its peak resident memory per case on a CPU.
MeasuredCase loss_case(const std::string& file, int tokens, int vocab, double peak_bytes) {
  MeasuredCase measured;
  measured.id = "loss-peak-cpu-" + std::to_string(tokens) + "x" + std::to_string(vocab);
  measured.title = "Cross-entropy over FP32-upcast logits, " + format_count(tokens) + " tokens × " +
                   format_count(vocab) + " vocabulary";
  measured.citation = "trainmem's loss measurement, PyTorch 1.13 on a CPU";
  measured.source = "trainmem's scripts/measure/loss_peak.py (torch 1.13, CPU): " + file;
  measured.statistic =
      "peak resident memory (VmHWM, reset just before the loss) above the resident memory then, "
      "the BF16 logits freed before the backward pass";
  measured.quantity = MeasuredQuantity::kLogits;
  measured.setup.model_id = kCustomModelId;
  measured.setup.custom_model = harness_tiny_shape(1);
  measured.setup.custom_model.vocab_size = vocab;
  measured.setup.sequence_length = tokens;
  measured.setup.logits = true;
  measured.setup.loss = Loss::kFp32Upcast;
  measured.measured_bytes = peak_bytes;
  measured.note =
      "Both activation models count the loss the same way; the estimate here is the "
      "fp32-upcast loss's 12 bytes per logit, where Megatron-LM's vocab-parallel loss's 6 would "
      "be 50% under";
  return measured;
}

// scripts/measure/grpo_loss_peak.py: TRL's GRPO loss written out op by op (BF16 logits, their
// log-softmax over .float(), as CUDA autocast casts it), its peak resident memory on a CPU; set
// against the grpo loss of the hf stack with vLLM colocated, full training of BF16 weights.
// The vocabulary of the loss scripts' cases (grpo_loss_peak.py, dpo_loss_peak.py).
constexpr int kCpuLossVocab = 32768;

// A loss measured op by op on a CPU by one of trainmem's scripts: its source and statistic, and
// the tiny model (the scripts' vocabulary) under the hf stack, BF16 weights, the logits counted.
MeasuredCase cpu_loss_case(const std::string& script, const std::string& file, Loss loss) {
  MeasuredCase measured;
  measured.source = "trainmem's scripts/measure/" + script + " (torch 1.13, CPU): " + file;
  measured.statistic =
      "peak resident memory (VmHWM, reset just before the output layer) above the resident "
      "memory then, through the loss's backward pass";
  measured.quantity = MeasuredQuantity::kLogits;
  TrainingSetup& setup = measured.setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(1);
  setup.custom_model.vocab_size = kCpuLossVocab;
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  setup.logits = true;
  setup.loss = loss;
  return measured;
}

MeasuredCase grpo_loss_case(const std::string& file, int sequences, int completion, bool fp32,
                            double peak_bytes) {
  constexpr int kPrompt = 64;
  constexpr int kVocab = kCpuLossVocab;
  MeasuredCase measured = cpu_loss_case("grpo_loss_peak.py", file, Loss::kGrpo);
  measured.id = "grpo-loss-peak-cpu-" + std::to_string(sequences) + "x" +
                std::to_string(completion) + (fp32 ? "" : "-bf16");
  measured.title = "GRPO's loss (TRL), " + std::to_string(sequences) + " × " +
                   format_count(completion) + " completion tokens × " + format_count(kVocab) +
                   " vocabulary, " + (fp32 ? "FP32 logits" : "BF16 logits, no autocast");
  measured.citation = "trainmem's GRPO loss measurement, PyTorch 1.13 on a CPU";
  TrainingSetup& setup = measured.setup;
  setup.rollout = Rollout::kVllm;
  setup.sequence_length = kPrompt + completion;
  setup.micro_batch_sequences = sequences;
  setup.completion_length = completion;
  setup.no_autocast = !fp32;
  measured.measured_bytes = peak_bytes;
  measured.note =
      "A check of the replay against the code it follows, not of TRL on a GPU: the operations of "
      "TRL's GRPOTrainer._compute_loss in their order, written out on torch 1.13 on a CPU, the "
      "output layer's input a tensor rather than a model's. " +
      std::string(fp32 ? "accelerate's convert_outputs_to_fp32 (under bf16 autocast) is the "
                         ".float() after the output layer; the peak is the in-place divide's "
                         "backward pass, two FP32 buffers of every kept position's logits"
                       : "Without autocast the BF16 logits take selective_log_softmax's BF16 "
                         "branch; the peak is the in-place divide's backward pass");
  return measured;
}

// scripts/measure/dpo_loss_peak.py: TRL's DPO loss written out op by op (the policy's logits and
// the reference's, over .float() as CUDA autocast casts them, or BF16), its peak resident memory on
// a CPU; set against the dpo loss of the hf stack, full training of BF16 weights with a reference
// model.
MeasuredCase dpo_loss_case(const std::string& file, int sequences, int length, bool fp32,
                           double peak_bytes) {
  constexpr int kVocab = kCpuLossVocab;
  MeasuredCase measured = cpu_loss_case("dpo_loss_peak.py", file, Loss::kDpo);
  measured.id = "dpo-loss-peak-cpu-" + std::to_string(sequences) + "x" + std::to_string(length) +
                (fp32 ? "" : "-bf16");
  measured.title = "DPO's loss (TRL), " + std::to_string(sequences / 2) +
                   (sequences == 2 ? " pair (" : " pairs (") + std::to_string(sequences) +
                   " sequences) × " + format_count(length) + " tokens × " + format_count(kVocab) +
                   " vocabulary, " + (fp32 ? "FP32 logits" : "BF16 logits, no autocast");
  measured.citation = "trainmem's DPO loss measurement, PyTorch 1.13 on a CPU";
  TrainingSetup& setup = measured.setup;
  setup.reference_model = true;
  setup.sequence_length = length;
  setup.micro_batch_sequences = sequences;
  setup.no_autocast = !fp32;
  measured.measured_bytes = peak_bytes;
  measured.note =
      "A check of the replay against the code it follows, not of TRL on a GPU: the operations of "
      "TRL's DPOTrainer._compute_loss in their order, written out on torch 1.13 on a CPU, the "
      "output layer's inputs (the policy's and the reference's) tensors rather than models'. "
      "The peak is the entropy's, the policy's and the reference's logits beside a contiguous "
      "copy of the shifted ones and one chunk of 128 rows" +
      std::string(fp32 ? "; accelerate's convert_outputs_to_fp32 (under bf16 autocast) is the "
                         ".float() after the output layer"
                       : "; without autocast the BF16 logits take selective_log_softmax's BF16 "
                         "branch, every sequence's log-softmax saved");
  return measured;
}

// ---- Published runs ----------------------------------------------------------------------------

// torchtitan's December 2024 H100 benchmark (benchmarks/llama3_h100_202412_torchtitan.md at
// torchtitan 9dec370, torch 1963fc8): Llama 3.1 8B (Llama 3 8B's shape) on H100s of 96 GB, run
// under the torchtitan stack with its defaults at that commit: FSDP2 (ZeRO 3) keeps FP32
// parameters, gradients and AdamW moments sharded over dp_shard × cp and computes in BF16, and the
// loss is the cross-entropy of the FP32-upcast logits. Its memory column is the reserved peak.
MeasuredCase torchtitan_benchmark(int table, double gibibytes) {
  MeasuredCase measured;
  measured.citation =
      "torchtitan, Llama 3 benchmark on H100s, December 2024, Table " + std::to_string(table);
  measured.source = "torchtitan, benchmarks/llama3_h100_202412_torchtitan.md, Table " +
                    std::to_string(table) + " (torchtitan 9dec370, torch 1963fc8, December 2024)";
  measured.statistic =
      "peak memory reserved by PyTorch's caching allocator, GiB (torchtitan's memory log)";
  measured.quantity = MeasuredQuantity::kReserved;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kTorchtitan;
  setup.model_id = "llama3-8b";
  setup.flash_attention = true;
  setup.layout.zero_stage = 3;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.device_id = kCustomDeviceId;
  setup.custom_capacity_gb = 96;  // the benchmark's H100s: 96 GB HBM2e
  measured.measured_bytes = gibibytes * kGibibyte;
  measured.unit = MeasuredUnit::kGibibytes;
  return measured;
}

// Table 2: FSDP × CP on 8 H100s, local batch 1, full activation checkpointing, torch.compile and
// Float8.
MeasuredCase torchtitan_table2(int fsdp, int cp, int sequence_length, double gibibytes) {
  MeasuredCase measured = torchtitan_benchmark(2, gibibytes);
  measured.id = "torchtitan-2024-12-fsdp" + std::to_string(fsdp) + "-cp" + std::to_string(cp);
  measured.title = "Llama 3.1 8B, FSDP " + std::to_string(fsdp) + " × CP " + std::to_string(cp) +
                   ", " + std::to_string(sequence_length / 1024) +
                   "K tokens, full recomputation, 8 H100s";
  TrainingSetup& setup = measured.setup;
  setup.sequence_length = sequence_length;
  setup.micro_batch_sequences = 1;
  setup.layout.data_parallel = fsdp;
  setup.layout.context_parallel = cp;
  setup.recompute = Recompute::kFull;
  setup.compile = Compile::kBlocks;  // training.compile at that commit: the blocks alone
  measured.note =
      "Settings from the table's title and torchtitan's defaults at that commit, run under the "
      "torchtitan stack: FSDP2 with FP32 sharded parameters, gradients and AdamW moments, BF16 "
      "compute, every block but the last resharded after forward, the root module (embedding, "
      "final norm, output layer) unsharded, and the loss over FP32-upcast logits with the BF16 "
      "logits freed first (12 bytes per logit at its peak: 47.0 GiB of the estimate at 32,768 "
      "tokens × 128,256 logits). The caching allocator's rules leave about 17 GiB reserved beyond "
      "the allocated peak: the loss's 16 GB FP32 blocks and each block's 4 GB of forward "
      "intermediates, freed and wanted again at other sizes. torch.compile of the blocks (that "
      "commit's training.compile) under full recomputation: each compiled block saves its input "
      "alone, as eager. Not modelled: the Float8 linear layers, which change what a block saves "
      "while it is rebuilt";
  return measured;
}

// The same benchmark's Tables 1 and 3: FSDP alone on 8 or 128 GPUs, local batch 2 at the train
// config's 8,192 tokens, torchtitan's per-op selective recomputation (the config's
// selective_ac_option = "op"), without torch.compile or Float8 (the rows "FSDP").
MeasuredCase torchtitan_fsdp_selective_op(int table, int devices, double gibibytes,
                                          std::string outside_goal) {
  MeasuredCase measured = torchtitan_benchmark(table, gibibytes);
  measured.id =
      "torchtitan-2024-12-table" + std::to_string(table) + "-fsdp" + std::to_string(devices);
  measured.title = "Llama 3.1 8B, FSDP " + std::to_string(devices) +
                   ", 2 × 8K tokens, per-op selective recomputation, " + std::to_string(devices) +
                   " H100s";
  measured.citation += " (the row \"FSDP\")";
  measured.source +=
      "; train_configs/llama3_8b.toml at that commit for the sequence length and the "
      "recomputation";
  TrainingSetup& setup = measured.setup;
  setup.sequence_length = 8192;
  setup.micro_batch_sequences = 2;
  setup.layout.data_parallel = devices;
  setup.recompute = Recompute::kSelectiveOp;
  measured.note =
      "The table's settings and the config's: 8,192 tokens, local batch 2, per-op selective "
      "recomputation (torchtitan saves the matmuls' outputs but every second one and the "
      "attention kernel's), run under the torchtitan stack as Table 2's rows. The 8-device run "
      "holds 15.4 GiB more than the 128-device one, where the estimate finds 10.5: the sharded "
      "FP32 gradients (3.7 GiB, freed by zero_grad and made again in the backward pass) may be "
      "held at the measured peak. Not modelled: the gradients each block's backward pass makes "
      "and frees" +
      (outside_goal.empty() ? std::string() : ". " + outside_goal);
  measured.outside_goal = std::move(outside_goal);
  return measured;
}

// Tables 1 and 3's rows with torch.compile (that commit's training.compile: the blocks), and with
// torchao's Float8 besides. Compiled, a block under per-op selective recomputation saves the
// policy's tensors but the down projection's output (selective_op_saved_tensors); torchao's Float8
// linear runs its matmul as aten.mm on its tensor subclass, which the policy tags as BF16's, so a
// compiled Float8 block saves the same.
MeasuredCase torchtitan_compiled_selective_op(int table, int devices, bool float8, double gibibytes,
                                              double eager_gibibytes) {
  MeasuredCase measured = torchtitan_fsdp_selective_op(table, devices, gibibytes, "");
  const std::string row = float8 ? "FSDP + torch.compile + Float8" : "FSDP + torch.compile";
  measured.id += float8 ? "-compile-float8" : "-compile";
  measured.title = "Llama 3.1 8B, FSDP " + std::to_string(devices) + ", 2 × 8K tokens, per-op " +
                   "selective recomputation, compiled" + (float8 ? ", Float8, " : ", ") +
                   std::to_string(devices) + " H100s";
  measured.citation = "torchtitan, Llama 3 benchmark on H100s, December 2024, Table " +
                      std::to_string(table) + " (the row \"" + row + "\")";
  const std::string saved = fixed_decimal(eager_gibibytes - gibibytes, 1) +
                            " GiB less than the eager row's " + fixed_decimal(eager_gibibytes, 1);
  measured.setup.compile = Compile::kBlocks;
  const std::string partitioner =
      "Inductor's min-cut partitioner follows the per-op policy's tags: what it tags "
      "PREFER_RECOMPUTE is always recomputed and what it tags MUST_SAVE always saved, but the "
      "down projection's output, which the backward graph never reads (PyTorch's functorch "
      "partitioner: must_recompute, _extract_fwd_bwd_modules): 2·h bytes a token a layer less "
      "than eager, 4.0 GiB over 32 layers of 16,384 tokens. The compiled run holds " +
      saved +
      " GiB measured. Not modelled: the compiled backward recomputes each operation just before "
      "its gradient needs it (reordering_to_mimic_autograd_engine), where the estimate rebuilds "
      "the block whole as eager does, and Inductor's fused forward makes fewer intermediates";
  if (!float8) {
    measured.note =
        "The eager row's setup with its blocks compiled (training.compile at that commit), run "
        "under the torchtitan stack. " +
        partitioner;
    return measured;
  }
  measured.setup.precision = Precision::kFp8Mixed;  // torchao's Float8
  measured.note =
      "The compiled row's setup with torchao's Float8 linear layers, run under the torchtitan "
      "stack. Float8's matmul runs as aten.mm on torchao's tensor subclass, which the per-op "
      "policy saves every second time as it does BF16's; its casts are recomputed. So the "
      "compiled Float8 block saves what the compiled BF16 block saves, and the two rows measure "
      "within 0.2 GiB of each other. " +
      partitioner;
  return measured;
}

// PEFT's documentation (docs/source/accelerate/deepspeed.md and fsdp.md, the 70B QLoRA examples
// added with PEFT 0.10, March 2024): Llama 2 70B on 2 GPUs under accelerate, from
// examples/sft/run_peft_qlora_deepspeed_stage3.sh and run_peft_qlora_fsdp.sh: NF4 with double
// quantisation in BF16 storage, LoRA r 8 on every linear layer with dropout 0.1, 2 sequences of
// 2,048 packed tokens, reentrant gradient checkpointing, FlashAttention 2, AdamW, bf16.
MeasuredCase peft_70b_qlora(bool zero3, double gigabytes, std::string outside_goal) {
  MeasuredCase measured;
  measured.id = zero3 ? "peft-70b-qlora-zero3" : "peft-70b-qlora-fsdp";
  measured.title = std::string("Llama 2 70B, QLoRA r 8 on every linear layer, 2 × 2K tokens, ") +
                   (zero3 ? "DeepSpeed ZeRO 3" : "FSDP (full shard), no offload") + ", 2 GPUs";
  measured.citation = std::string("PEFT documentation, ") +
                      (zero3 ? "\"DeepSpeed\": QLoRA with ZeRO 3" : "\"FSDP\": QLoRA with FSDP") +
                      ", Llama 2 70B on 2 GPUs";
  measured.source = std::string("huggingface/peft, docs/source/accelerate/") +
                    (zero3 ? "deepspeed.md" : "fsdp.md") +
                    " and examples/sft (PEFT 0.10, March 2024: PR #1550)";
  measured.statistic =
      "\"the memory consumed per GPU\", GB, as the docs state it (which counter is not said)";
  // Under DeepSpeed the reserved peak; under accelerate's FSDP the total, reserved and runtime.
  measured.quantity = zero3 ? MeasuredQuantity::kReserved : MeasuredQuantity::kTotal;
  TrainingSetup& setup = measured.setup;
  setup.model_id = "llama2-70b";
  setup.stack = zero3 ? Stack::kDeepSpeed : Stack::kHf;
  if (!zero3) setup.precision = Precision::kBf16;  // the model loaded in its BF16 storage
  setup.sequence_length = 2048;
  setup.micro_batch_sequences = 2;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kFull;
  setup.reentrant_checkpointing = !zero3;  // the deepspeed stack does not model the variant
  setup.lora_rank = 8;
  setup.lora_targets = LoraTargets::kAllLinear;
  setup.lora_dropout = 0.1;
  setup.base_weights = BaseWeights::kNf4;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.device_id = zero3 ? "a100-40gb" : "rtx-4090";
  measured.measured_bytes = gigabytes * kBytesPerGigabyte;
  measured.unit = MeasuredUnit::kGigabytes;
  measured.note =
      zero3 ? "Run under the deepspeed stack: transformers builds a quantised model outside "
              "DeepSpeed's zero.Init (its from_pretrained uses it for other models only), so each "
              "GPU holds the "
              "whole NF4 model, 36.6 GB, until DeepSpeed partitions it, and the step reuses those "
              "cached blocks: the peak is the load's. The docs do not say which counter they read; "
              "read as GiB it would be 7% more"
            : "Run under the hf stack, accelerate's FSDP1 with FULL_SHARD as ZeRO 3 (the NF4 "
              "weights in BF16 storage, sharded; the root unit gathered for the step and a layer "
              "at a time, the next prefetched in the backward pass; with LoRA's frozen layer "
              "units under reentrant checkpointing, each layer's input and its gradient held by "
              "FSDP's reshard-only hook to the backward pass's end, without which the estimate "
              "was 14.5% under), set against its total: the "
              "reserved peak and the runtime outside it, as nvidia-smi would read it. The docs "
              "do not say which counter they read; the run evaluates each epoch, which a counter "
              "over the whole run would include";
  if (!outside_goal.empty()) measured.note += ". " + outside_goal;
  measured.outside_goal = std::move(outside_goal);
  return measured;
}

// Why Tables 5 and 6 are outside 10%.
constexpr const char* kThreeDMiss =
    "Outside 10%: the estimate is 17 to 27% under, 14 to 24 GB a GPU that the replay does not "
    "find. Not modelled: the compiled Float8 blocks' buffers while a block is rebuilt (async TP "
    "alone moves Table 4's peak by 4.3 GiB), what the first step leaves in the allocator's cache "
    "on each rank, and the spread between ranks (the highest is measured, one rank replayed per "
    "stage). The interleaved row, measured 9.8 GiB lower, is estimated lower too, by less: its "
    "FP32 gradient buffers are one virtual stage's at its peak";

// Why Table 5's interleaved row is outside 10%.
constexpr const char* kInterleavedMiss =
    "Outside 10%: under, as the 1F1B rows are, and for the same unfound reasons; it is ordered "
    "under the 1F1B row as measured, by less than the table's 9.8 GiB";

// Why Table 4's row without async TP is outside 10%.
constexpr const char* kTable4Miss =
    "Outside 10%: the estimate's peak is at the loss. Async TP, which changes only what happens "
    "inside the compiled blocks, takes 4.3 GiB off the measured peak, so that peak sits inside a "
    "block's recomputation or backward pass, where compile's and Float8's buffers, not modelled, "
    "are held";

// Table 4: 2D, FSDP 32 × TP 8 on 256 H100s, Llama 3.1 70B, local batch 16 at the 70B config's
// 8,192 tokens, full activation checkpointing, torch.compile and Float8; the second row with async
// TP. Under torchtitan's tensor parallelism (apply_tp): sequence parallelism, the projections'
// all-gathered inputs saved whole, and the loss under loss_parallel.
MeasuredCase torchtitan_table4(bool async_tp, double gibibytes, std::string outside_goal) {
  MeasuredCase measured = torchtitan_benchmark(4, gibibytes);
  measured.id = std::string("torchtitan-2024-12-table4-2d") + (async_tp ? "-async-tp" : "");
  measured.title = std::string("Llama 3.1 70B, FSDP 32 × TP 8") + (async_tp ? ", async TP" : "") +
                   ", 16 × 8K tokens, full recomputation, 256 H100s";
  measured.citation += std::string(" (the row \"2D") + (async_tp ? " + AsyncTP" : "") + "\")";
  measured.source +=
      "; train_configs/llama3_70b.toml at that commit for the sequence length and the "
      "recomputation";
  TrainingSetup& setup = measured.setup;
  setup.model_id = "llama3-70b";
  setup.sequence_length = 8192;
  setup.micro_batch_sequences = 16;
  setup.layout.data_parallel = 32;
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  setup.recompute = Recompute::kFull;
  setup.compile = Compile::kBlocks;
  measured.note =
      "The table's settings and the 70B config's: 8,192 tokens, local batch 16, full "
      "recomputation, run under the torchtitan stack with its tensor parallelism: the norms "
      "sequence-parallel, the projections' all-gathered inputs saved whole (DTensor), the "
      "cross-entropy over FP32-upcast logits under loss_parallel, each rank's 16,032 of the "
      "128,256 logits, 16 bytes a logit at its backward peak (31.3 GiB at 131,072 tokens); "
      "torch.compile of the blocks, which under full recomputation save their input alone. Not "
      "modelled: the Float8 linear layers (which change only what a block saves while it is "
      "rebuilt), and async TP's symmetric-memory workspace, which is outside the caching "
      "allocator" +
      (outside_goal.empty() ? std::string() : ". " + outside_goal);
  measured.outside_goal = std::move(outside_goal);
  return measured;
}

// Tables 5 and 6: Llama 3.1 405B on 512 H100s, FSDP × TP 8 × PP 8 (and CP in Table 6), full
// activation checkpointing, torch.compile, Float8 with FP8 all-gather and async TP, as the 405B
// config at that commit sets them (train_configs/llama3_405b.toml). The 1F1B schedule over
// torchtitan's split of the 126 layers (pipelining_utils.py, generate_split_points: 15, six of
// 16, 15) and its default of p micro-batches (build_pipeline_schedule), so Table 5's local batch
// of 32 runs as 8 micro-batches of 4 sequences and Table 6's of 8 as 8 of 1.
MeasuredCase torchtitan_3d(int table, int fsdp, int cp, int sequence_length, double gibibytes,
                           bool interleaved = false) {
  MeasuredCase measured = torchtitan_benchmark(table, gibibytes);
  const bool four_d = table == 6;
  const int local_batch = four_d ? 8 : 32;
  const int micro_batches = 8;
  measured.id = "torchtitan-2024-12-table" + std::to_string(table) + "-fsdp" +
                std::to_string(fsdp) + "-tp8-pp8" + (four_d ? "-cp" + std::to_string(cp) : "") +
                (interleaved ? "-interleaved" : "");
  measured.title =
      "Llama 3.1 405B, FSDP " + std::to_string(fsdp) + " × TP 8 × PP 8" +
      (four_d ? " × CP " + std::to_string(cp) : "") +
      (interleaved ? ", interleaved 1F1B, " : ", 1F1B, ") + std::to_string(micro_batches) + " × " +
      std::to_string(local_batch / micro_batches) + " × " + std::to_string(sequence_length / 1024) +
      "K tokens, full recomputation, 512 H100s";
  if (!four_d) {
    measured.citation += interleaved ? " (the row \"Interleaved 1F1B\")" : " (the row \"1F1B\")";
  }
  measured.source +=
      "; train_configs/llama3_405b.toml, parallelisms/pipelining_utils.py (generate_split_points, "
      "build_pipeline_schedule) and pipeline_llama.py at that commit";
  TrainingSetup& setup = measured.setup;
  setup.model_id = "llama3-405b";
  setup.sequence_length = sequence_length;
  setup.micro_batch_sequences = local_batch / micro_batches;
  setup.layout.data_parallel = fsdp;
  setup.layout.context_parallel = cp;
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  setup.layout.pipeline_parallel = 8;
  setup.layout.pipeline_first_stage_layers = 15;
  setup.layout.pipeline_last_stage_layers = 15;
  setup.recompute = Recompute::kFull;
  setup.compile = Compile::kBlocks;
  setup.precision = Precision::kFp8Mixed;  // torchao's Float8
  setup.fp8_all_gather = true;
  if (interleaved) {
    // Two virtual stages a device (generate_split_points for a multi-stage schedule): 7, fourteen
    // of 8 and 7 layers, so each device's are those of 1F1B's split.
    setup.layout.virtual_pipeline_stages = 2;
    measured.note =
        "The table's settings and the 405B config's, run under the torchtitan stack: "
        "ScheduleInterleaved1F1B over torchtitan's split of 16 virtual stages (7, fourteen of 8, "
        "7 layers; two a device) with its default of 8 micro-batches, whose warm-up runs every "
        "forward pass on the first four devices; the pipeline's buffers and FSDP2's holdings as "
        "the 1F1B row's. The last device is the most loaded: its first virtual stage's 8 "
        "micro-batches in flight, one of its second's, and the 7 logits before it in "
        "output_chunks. Under pipelining FSDP2 accumulates each virtual stage's gradients "
        "unsharded in FP32 from its first backward pass to its last; the last virtual stage's "
        "run first, all 8 micro-batches in one round, and are reduce-scattered before the first "
        "virtual stage's begin, so at the peak one virtual stage's buffers are held, where 1F1B "
        "holds every layer's. " +
        std::string(kInterleavedMiss);
    measured.outside_goal = kInterleavedMiss;
    return measured;
  }
  measured.note =
      "The table's settings and the 405B config's, run under the torchtitan stack: 1F1B over "
      "torchtitan's split (15, six stages of 16, 15 layers) with its default of 8 micro-batches; "
      "under the pipeline FSDP2 keeps each stage's layers gathered (the linear weights in FP8) "
      "and accumulates its gradients unsharded in FP32 until the last micro-batch; torch's "
      "pipelining keeps a receive buffer per micro-batch, every micro-batch's output and its "
      "input's gradient until the step ends; each stage is replayed and the highest reserved peak "
      "kept, as the table takes the highest over its GPUs. " +
      std::string(kThreeDMiss);
  measured.outside_goal = kThreeDMiss;
  return measured;
}

double error_percent(double estimate, double measured) {
  return (estimate - measured) / measured * 100;
}

double compared_bytes(const Estimate& estimate, MeasuredQuantity quantity) {
  switch (quantity) {
    case MeasuredQuantity::kActivations:
      return estimate.bytes[Term::kActivations];
    case MeasuredQuantity::kLogits:
      return estimate.bytes[Term::kLogits];
    case MeasuredQuantity::kReserved:
      return estimate.peak_reserved_bytes;
    case MeasuredQuantity::kAllocated:
      return estimate.peak_allocated_bytes;
    case MeasuredQuantity::kTotal:
      break;
  }
  return estimate.bytes.total();
}

}  // namespace

std::string quantity_id(MeasuredQuantity quantity) {
  switch (quantity) {
    case MeasuredQuantity::kActivations:
      return "activations";
    case MeasuredQuantity::kLogits:
      return "logits";
    case MeasuredQuantity::kReserved:
      return "reserved";
    case MeasuredQuantity::kAllocated:
      return "allocated";
    case MeasuredQuantity::kTotal:
      break;
  }
  return "total";
}

ModelShape harness_tiny_shape(int layers) {
  ModelShape shape;  // untied, no biases, two RMSNorms per layer, dense
  shape.id = "measure-tiny";
  shape.name = "Tiny Llama (measure.py --tiny)";
  shape.source = "scripts/measure/measure.py";
  shape.num_layers = layers;
  shape.hidden_size = 64;
  shape.ffn_hidden_size = 224;
  shape.num_attention_heads = 4;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 512;
  return shape;
}

const std::vector<MeasuredCase>& measured_cases() {
  static const std::vector<MeasuredCase> cases = [] {
    const std::string kernels = "tests/data/measure-cpu-tiny.json";
    const std::string reference_code = "tests/data/measure-cpu-tiny-eager.json";
    std::vector<MeasuredCase> all{
        harness_case(kernels, true, 4, 4, 6963232),
        harness_case(reference_code, false, 4, 4, 9977888),
        loss_case("tests/data/loss-peak-cpu.json", 2048, 32768, 805330944),
        grpo_loss_case("tests/data/grpo-loss-peak-cpu.json", 4, 512, true, 1075625984),
        grpo_loss_case("tests/data/grpo-loss-peak-cpu.json", 8, 256, true, 1076772864),
        grpo_loss_case("tests/data/grpo-loss-peak-cpu.json", 1, 2048, true, 1074765824),
        grpo_loss_case("tests/data/grpo-loss-peak-cpu.json", 4, 512, false, 539246592),
        dpo_loss_case("tests/data/dpo-loss-peak-cpu.json", 2, 1024, true, 855506944),
        dpo_loss_case("tests/data/dpo-loss-peak-cpu.json", 4, 512, true, 855179264),
        dpo_loss_case("tests/data/dpo-loss-peak-cpu.json", 8, 256, true, 854585344),
        dpo_loss_case("tests/data/dpo-loss-peak-cpu.json", 4, 512, false, 561631232),
        torchtitan_table2(8, 1, 32768, 83.9),
        torchtitan_table2(4, 2, 65536, 84.2),
        torchtitan_table2(2, 4, 131072, 84.0),
        torchtitan_table2(1, 8, 262144, 84.5),
        torchtitan_fsdp_selective_op(1, 8, 82.4, ""),
        torchtitan_fsdp_selective_op(3, 128, 67.0, ""),
        torchtitan_compiled_selective_op(1, 8, false, 77.0, 82.4),
        torchtitan_compiled_selective_op(1, 8, true, 76.8, 82.4),
        torchtitan_compiled_selective_op(3, 128, false, 62.0, 67.0),
        torchtitan_compiled_selective_op(3, 128, true, 61.8, 67.0),
        torchtitan_table4(false, 71.9, kTable4Miss),
        torchtitan_table4(true, 67.6, ""),
        torchtitan_3d(5, 8, 1, 8192, 82.5),
        torchtitan_3d(5, 8, 1, 8192, 72.7, true),
        torchtitan_3d(6, 8, 1, 32768, 75.3),
        torchtitan_3d(6, 4, 2, 65536, 75.9),
        torchtitan_3d(6, 2, 4, 131072, 77.1),
        torchtitan_3d(6, 1, 8, 262144, 84.9),
        peft_70b_qlora(true, 36.6, ""),
        peft_70b_qlora(false, 35.6, ""),
    };
    for (MeasuredCase& measured : torchao_b200_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : torchtitan_gb200_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : simumax_b200_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : torchtune_flags_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : torchtune_distributed_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : fms_acceleration_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : h200_trainer_cases()) all.push_back(std::move(measured));
    for (MeasuredCase& measured : liger_example_cases()) all.push_back(std::move(measured));
    return all;
  }();
  return cases;
}

std::vector<MeasuredComparison> compare_measured() {
  std::vector<MeasuredComparison> comparisons;
  for (const MeasuredCase& measured : measured_cases()) {
    MeasuredComparison comparison;
    comparison.measured = measured;
    TrainingSetup setup = measured.setup;
    setup.activation_model = ActivationModel::kKorthikanti;
    const Estimate korthikanti = estimate_memory(setup);
    setup.activation_model = ActivationModel::kLlamaBlock;
    const Estimate llama_block = estimate_memory(setup);
    comparison.llama_block_estimate = llama_block;
    if (!korthikanti.answer.ok() || !llama_block.answer.ok()) {
      comparison.answer = !korthikanti.answer.ok() ? korthikanti.answer : llama_block.answer;
    } else {
      comparison.korthikanti_bytes = compared_bytes(korthikanti, measured.quantity);
      comparison.llama_block_bytes = compared_bytes(llama_block, measured.quantity);
      comparison.korthikanti_error_percent =
          error_percent(comparison.korthikanti_bytes, measured.measured_bytes);
      comparison.llama_block_error_percent =
          error_percent(comparison.llama_block_bytes, measured.measured_bytes);
    }
    if (!measured.other_estimate_name.empty()) {
      comparison.other_estimate_error_percent =
          error_percent(measured.other_estimate_bytes, measured.measured_bytes);
    }
    comparisons.push_back(std::move(comparison));
  }
  return comparisons;
}

namespace {

// The median of `values` (not empty): the middle one, or the mean of the two middle ones.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// "0.2%": a whole error to one decimal.
std::string whole_percent(double percent) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", std::round(std::fabs(percent) * 10) / 10);
  return buffer;
}

}  // namespace

std::vector<std::string> standing_against_other_estimates(
    const std::vector<MeasuredComparison>& comparisons) {
  struct Errors {
    std::string tool;
    MeasuredQuantity quantity;
    std::vector<double> ours, theirs;
  };
  std::vector<Errors> groups;
  for (const MeasuredComparison& comparison : comparisons) {
    const MeasuredCase& measured = comparison.measured;
    if (measured.other_estimate_name.empty() || !comparison.answer.ok()) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const Errors& errors) {
      return errors.tool == measured.other_estimate_name && errors.quantity == measured.quantity;
    });
    if (group == groups.end()) {
      groups.push_back({measured.other_estimate_name, measured.quantity, {}, {}});
      group = groups.end() - 1;
    }
    group->ours.push_back(std::fabs(comparison.llama_block_error_percent));
    group->theirs.push_back(std::fabs(comparison.other_estimate_error_percent));
  }
  std::vector<std::string> sentences;
  for (const Errors& errors : groups) {
    std::string quantity = quantity_id(errors.quantity);
    quantity[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(quantity[0])));
    const auto worst = [](const std::vector<double>& values) {
      return *std::max_element(values.begin(), values.end());
    };
    const std::size_t runs = errors.ours.size();
    sentences.push_back(quantity + ", " + std::to_string(runs) + (runs == 1 ? " run" : " runs") +
                        ": trainmem's median error " + whole_percent(median(errors.ours)) +
                        ", its worst " + whole_percent(worst(errors.ours)) + "; " + errors.tool +
                        "'s median " + whole_percent(median(errors.theirs)) + ", its worst " +
                        whole_percent(worst(errors.theirs)) + ".");
  }
  return sentences;
}

std::string format_error_percent(double percent) {
  char buffer[32];
  const double rounded = std::round(percent * 10) / 10;
  // U+2212 for the minus sign, as the page's other figures; "±0.0%" never shows as "-0.0%".
  std::snprintf(buffer, sizeof buffer, "%.1f%%", std::fabs(rounded));
  if (rounded > 0) return std::string("+") + buffer;
  if (rounded < 0) return std::string("\u2212") + buffer;
  return std::string("\u00b1") + buffer;
}

std::string format_as_measured(double bytes, MeasuredUnit unit) {
  if (!std::isfinite(bytes)) return "—";
  if (unit == MeasuredUnit::kBytes) return format_count(std::round(bytes)) + " B";
  char buffer[64];
  if (unit == MeasuredUnit::kGigabytes) {
    std::snprintf(buffer, sizeof buffer, "%.1f GB", bytes / kBytesPerGigabyte);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f GiB", bytes / kGibibyte);
  }
  return buffer;
}

}  // namespace trainmem
