// fms-acceleration's A100 benchmark table (scripts/benchmarks/refs/a100_80gb.csv): LoRA and QLoRA
// on Mistral 7B through fms-hf-tuning, which runs transformers' Trainer (TRL's SFTTrainer) with
// PEFT and bitsandbytes, each row's peak allocated memory set against the estimate under the hf
// stack; and trainmem's own H200 runs of the same shape through the current Trainer, PEFT and
// bitsandbytes (measured_runs.hpp).
#include <string>

#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

enum class Method { kFull, kLora, kQlora };

MeasuredCase fms_row(Method method, int devices, int sequences, double gibibytes) {
  const bool qlora = method == Method::kQlora;
  const bool full = method == Method::kFull;
  MeasuredCase measured;
  measured.id = std::string("fms-mistral-7b-") +
                (full    ? "full"
                 : qlora ? "qlora"
                         : "lora") +
                "-" + std::to_string(devices) + "x" + std::to_string(sequences);
  measured.title =
      std::string("Mistral 7B, ") +
      (full ? "full fine-tuning"
            : std::string(qlora ? "QLoRA" : "LoRA") + " r 16 on the attention") +
      ", " + std::to_string(sequences) + " × 4K tokens packed, " +
      (devices == 1 ? std::string("one A100") : "FSDP over " + std::to_string(devices) + " A100s");
  measured.citation =
      "fms-acceleration, scripts/benchmarks/refs/a100_80gb.csv, Mistral 7B on A100 80GBs";
  measured.source =
      "foundation-model-stack/fms-acceleration, scripts/benchmarks/refs/a100_80gb.csv (February "
      "2025) with scenarios.yaml, defaults.yaml and accelerate.yaml beside it; requirements.txt "
      "pins fms-hf-tuning 2.5.0, transformers 4.48.1, TRL 0.13.0, PEFT 0.13.2, accelerate 1.0.1, "
      "bitsandbytes 0.43.3, torch 2.4.1";
  measured.statistic =
      "mem_peak_torch_mem_alloc_in_bytes: transformers' Trainer memory metrics "
      "(skip_memory_metrics=False), from torch.cuda.max_memory_allocated on rank 0, GiB";
  measured.quantity = MeasuredQuantity::kAllocated;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes = gibibytes * kGibibyte;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kHf;
  setup.model_id = "mistral-7b";
  setup.sequence_length = 4096;
  setup.micro_batch_sequences = sequences;
  if (devices > 1) {
    setup.layout.data_parallel = devices;
    setup.layout.zero_stage = 3;  // FULL_SHARD
  }
  setup.precision = Precision::kBf16;
  setup.device_id = "a100-80gb";
  setup.flash_attention = true;
  setup.recompute = Recompute::kFull;
  setup.reentrant_checkpointing = true;  // transformers 4.48's default
  if (!full) {
    setup.lora_rank = 16;
    setup.lora_targets = LoraTargets::kAttention;
    setup.lora_dropout = 0.1;
  }
  if (qlora) setup.base_weights = BaseWeights::kNf4;
  // scenarios.yaml sets bf16: True for the QLoRA scenario (baseline-peft-bnb) alone: the full and
  // LoRA ones run the Trainer without autocast.
  setup.no_autocast = !qlora;
  setup.logits = true;
  setup.loss = Loss::kFp32Shifted;  // transformers 4.48.1's ForCausalLMLoss
  measured.note =
      std::string("The table's settings (packing to 4,096 tokens, gradient checkpointing, ") +
      (full ? "every parameter trained in the model's BF16 (mixed precision off), AdamW's "
              "moments in BF16 too"
            : "LoRA r 16 with dropout 0.1 on q, k, v and o, the model in bf16") +
      ", adamw_torch, gradient accumulation 1) run under the hf stack, with transformers 4.48's "
      "loss, which shifts an FP32 copy of the logits. ";
  if (full) {
    measured.note +=
        "The peak is at the optimizer's step: the weights, their gradients, AdamW's moments and "
        "its foreach step's temporary, 2 + 2 + 4 + 2 bytes a parameter (the same at 4 and 8 "
        "sequences). ";
  }
  measured.note += devices == 1 ? "One GPU runs as plain python, no accelerate and no FSDP "
                                  "(fms-acceleration's benchmark script)"
                                : "accelerate's FSDP1 shards it (FULL_SHARD, BACKWARD_PRE; the NF4 "
                                  "weights in BF16 storage under QLoRA), counted as ZeRO 3 under "
                                  "the stack";
  if (devices > 1 && !full) {
    measured.note +=
        ". Under PEFT's wrapping each layer's unit holds no trained parameter, so FSDP1 hooks "
        "its rebuilt inputs (_register_post_backward_reshard_only_hook), which transformers "
        "4.48's reentrant checkpointing makes leaves: each layer's input and its gradient, 4·h "
        "a token a layer, are held to the backward pass's end (--reentrant-checkpointing), and "
        "the peak moves from the loss into the first layer's backward pass. Counted so; "
        "without it the rows were 10 to 11% under";
  }
  if (!full && !qlora) {
    measured.note +=
        ". The LoRA scenario (standard-peft in scenarios.yaml) sets no bf16, so the Trainer runs "
        "without autocast: PEFT's FP32 adapters save FP32 copies of their inputs, and FP32 "
        "intermediates, 32,896 B a token more in the rebuilt layer than under bf16 autocast "
        "(4 × 4,096 × 2 + 4 × 16 × 2). Counted so (--no-autocast)" +
        std::string(devices == 1 ? "; on one GPU the peak falls where no layer is rebuilt, and "
                                   "the row does not move"
                                 : "");
  } else if (qlora && devices == 1) {
    // TRL 0.13's SFTTrainer prepares a 4-bit model it finds on the GPU (not sharded):
    // prepare_model_for_kbit_training, then, under bf16, peft_module_casting_to_bf16.
    setup.kbit_prep = true;
    setup.kbit_cast_back = true;
    measured.note +=
        ". TRL 0.13's SFTTrainer, finding a 4-bit model on the GPU, runs "
        "prepare_model_for_kbit_training and then peft_module_casting_to_bf16: the embedding and "
        "output layer back in BF16 (the end-of-run memory, 4.01 GiB, has no FP32 embedding), the "
        "norms FP32, so each checkpointed layer keeps an FP32 input. Counted so (--kbit-prep "
        "--kbit-cast-back); without them the estimate is 23% under. trainmem's own H200 run of "
        "this setup through TRL 0.21's preparation measured 19.01 GiB";
  }
  return measured;
}

// trainmem's own runs (scripts/measure/peft_peak.py --trainer) on one H200: Mistral 7B's shape
// with random weights, 4,096-token sequences, LoRA r 16 on the attention, through transformers'
// Trainer as the current stack runs it. `setup` names the run in tests/data/peft-peak-h200.jsonl.
MeasuredCase h200_trainer_row(const std::string& run, int sequences, double peak_bytes,
                              bool reserved = false) {
  const bool qlora = run.rfind("qlora", 0) == 0;
  const bool prepared = run.find("kbit") != std::string::npos;
  const bool cast_back = run.find("trl021") != std::string::npos;
  MeasuredCase measured;
  measured.id = "h200-trainer-mistral-7b-" + run + "-" + std::to_string(sequences) + "x4096" +
                (reserved ? "-reserved" : "");
  measured.title = "Mistral 7B, " + std::string(qlora ? "QLoRA" : "LoRA") +
                   " r 16 on the attention, " + std::to_string(sequences) + " × 4K tokens" +
                   (cast_back  ? ", prepared as TRL 0.13-0.21 does"
                    : prepared ? ", prepare_model_for_kbit_training"
                               : "") +
                   ", one H200" + (reserved ? ", reserved peak" : "");
  measured.citation =
      "trainmem's own run of transformers' Trainer and PEFT on one H200, December 2026";
  measured.source =
      "tests/data/peft-peak-h200.jsonl, setup \"" + run + "\", batch " + std::to_string(sequences) +
      ": transformers 5.17.0, PEFT 0.21.0, accelerate 1.15.0, bitsandbytes 0.50.2.dev0 (built "
      "from bitsandbytes-foundation/bitsandbytes at 95f9af3), torch 2.11.0+cu130";
  measured.statistic =
      std::string(reserved ? "torch.cuda.max_memory_reserved" : "torch.cuda.max_memory_allocated") +
      " over three steps of transformers' Trainer, reset before the first, bytes";
  measured.quantity = reserved ? MeasuredQuantity::kReserved : MeasuredQuantity::kAllocated;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes = peak_bytes;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kHf;
  setup.model_id = "mistral-7b";
  setup.sequence_length = 4096;
  setup.micro_batch_sequences = sequences;
  setup.precision = Precision::kBf16;
  setup.device_id = "h200";
  setup.flash_attention = true;
  setup.recompute = Recompute::kFull;
  setup.reentrant_checkpointing = true;
  setup.lora_rank = 16;
  setup.lora_targets = LoraTargets::kAttention;
  setup.lora_dropout = 0.1;
  if (qlora) setup.base_weights = BaseWeights::kNf4;
  setup.kbit_prep = prepared;
  setup.kbit_cast_back = cast_back;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;  // transformers 5's ForCausalLMLoss: no shifted copy
  measured.note =
      "Trainer(bf16=True, gradient_checkpointing=True with use_reentrant=True, adamw_torch), the "
      "model loaded in BF16 (QLoRA: NF4 with double quantisation, BF16 compute, uint8 storage), "
      "SDPA attention, transformers 5's loss (an FP32 upcast of the logits, no shifted copy). "
      "The same run with 2 and 4 layers keeps 8,192 B a "
      "token a layer, LoRA and QLoRA alike: bitsandbytes 0.50 saves no input and frees each "
      "dequantised weight after its matmul";
  if (prepared) {
    measured.note += cast_back
                         ? "; TRL 0.13-0.21's preparation, emulated (peft_module_casting_to_bf16 "
                           "after prepare_model_for_kbit_training), keeps 16,384, an FP32 input"
                         : "; under prepare_model_for_kbit_training, 16,384: an FP32 input";
    measured.note +=
        ". Prepared, the estimate is about 1 GiB under. It counts the rebuilt layer's MLP "
        "tensors in FP32, as the H200's list of what a prepared layer saves has them (the FP32 "
        "norms' outputs through bitsandbytes' Linear4bit, which returns its input's dtype), but "
        "its peak stays at the loss, where the 2- and 4-layer runs hold 61,656 B a token more "
        "than their FP32 inputs explain; what that is, is not found";
  }
  return measured;
}

// Liger-Kernel's Hugging Face example (linkedin/Liger-Kernel 92047d9, examples/huggingface:
// run_patching_methods.sh, training.py and callback.py): Mistral 7B v0.1 fully fine-tuned through
// TRL's SFTTrainer on Alpaca, with and without Liger's kernels (AutoLigerKernelForCausalLM, its
// defaults: RoPE, RMSNorm, SwiGLU and the fused linear cross-entropy), each log's
// total_peak_memory_allocated_MB over steps 2 to 10.
MeasuredCase liger_example_row(bool liger, double mebibytes) {
  MeasuredCase measured;
  measured.id = std::string("liger-example-mistral-7b-") + (liger ? "liger" : "no-liger");
  measured.title = std::string(
                       "Mistral 7B, full fine-tuning, 32 × up to 512 tokens, FSDP over 4 "
                       "A100s, ") +
                   (liger ? "Liger's kernels" : "without Liger");
  measured.citation = "Liger-Kernel's Hugging Face example, its patching benchmark's logs";
  measured.source = std::string("linkedin/Liger-Kernel 92047d9, examples/huggingface/results/") +
                    (liger ? "mistral_use_liger_True_patching_type_pre_init.log"
                           : "mistral_use_liger_False_patching_type_None.log") +
                    ", from run_patching_methods.sh and training.py beside it; requirements.txt "
                    "pins transformers 4.43.3";
  measured.statistic =
      "total_peak_memory_allocated_MB: its EfficiencyCallback's torch.cuda.max_memory_allocated, "
      "reset at each step's start, the most over steps 2 to 10 on rank 0, MiB (2^20 B)";
  measured.quantity = MeasuredQuantity::kAllocated;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes = mebibytes * 1024 * 1024;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kHf;
  setup.model_id = "mistral-7b";
  setup.sequence_length = 512;
  setup.micro_batch_sequences = 32;
  setup.layout.data_parallel = 4;
  setup.layout.zero_stage = 3;  // --fsdp "full_shard auto_wrap"
  setup.device_id = "a100-80gb";
  setup.flash_attention = true;
  setup.recompute = Recompute::kFull;  // its fsdp_config.json: activation_checkpointing
  setup.logits = true;
  // transformers 4.43's MistralForCausalLM upcasts the logits to FP32, then shifts a copy; Liger's
  // fused linear cross-entropy makes none.
  setup.loss = liger ? Loss::kFusedLinear : Loss::kFp32Shifted;
  measured.note =
      "torchrun over 4 GPUs (the README's 4 A100 80 GB), --bf16 with the model loaded in BF16, "
      "per_device_train_batch_size 32, max_seq_length 512 (Alpaca, padded to the longest of each "
      "batch, a multiple of 16: 236 to 384 tokens a sequence on average in each step, by its "
      "num_input_tokens_seen), "
      "accelerate's FSDP1 (FULL_SHARD, its activation checkpointing), adamw_torch. The peak is "
      "the optimiser's step, where accelerate's FP32 shards, their FP32 gradients, AdamW's moments "
      "and its foreach step's temporary hold 20/4 bytes a parameter, so neither the sequences' "
      "lengths nor Liger's kernels move it. Each log's reserved peak (58,180 and 46,732 MiB) "
      "grows step by step as the padded lengths change, which the replay of one shape does not "
      "follow; it is not compared.";
  return measured;
}

}  // namespace

std::vector<MeasuredCase> liger_example_cases() {
  return {liger_example_row(false, 34547.91), liger_example_row(true, 34547.82)};
}

std::vector<MeasuredCase> h200_trainer_cases() {
  return {
      h200_trainer_row("lora", 4, 25571471872),
      h200_trainer_row("lora", 8, 36426658304),
      h200_trainer_row("qlora", 4, 15218423296),
      h200_trainer_row("qlora", 8, 26074658304),
      h200_trainer_row("qlora-kbit", 4, 21068831232),
      h200_trainer_row("qlora-kbit-trl021", 4, 20408228352),
      h200_trainer_row("lora", 4, 29334962176, true),
      h200_trainer_row("lora", 8, 43855642624, true),
      h200_trainer_row("qlora", 4, 18591252480, true),
      h200_trainer_row("qlora", 8, 31562137600, true),
  };
}

std::vector<MeasuredCase> fms_acceleration_cases() {
  return {
      fms_row(Method::kFull, 1, 4, 67.46),  fms_row(Method::kFull, 1, 8, 67.46),
      fms_row(Method::kLora, 1, 4, 24.87),  fms_row(Method::kLora, 1, 8, 36.08),
      fms_row(Method::kQlora, 1, 4, 19.25), fms_row(Method::kFull, 2, 2, 33.74),
      fms_row(Method::kFull, 2, 4, 33.74),  fms_row(Method::kLora, 2, 2, 14.10),
      fms_row(Method::kLora, 2, 4, 20.45),  fms_row(Method::kQlora, 2, 2, 8.78),
      fms_row(Method::kQlora, 2, 4, 14.87),
  };
}

}  // namespace trainmem
