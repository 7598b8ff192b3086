// fms-acceleration's A100 benchmark table (scripts/benchmarks/refs/a100_80gb.csv): LoRA and QLoRA
// on Mistral 7B through fms-hf-tuning, which runs transformers' Trainer (TRL's SFTTrainer) with
// PEFT and bitsandbytes, each row's peak allocated memory set against the estimate under the hf
// stack (measured_runs.hpp).
#include <string>

#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

constexpr double kBytesPerGibibyte = 1024.0 * 1024.0 * 1024.0;

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
  measured.measured_bytes = gibibytes * kBytesPerGibibyte;
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
  if (!full) {
    setup.lora_rank = 16;
    setup.lora_targets = LoraTargets::kAttention;
    setup.lora_dropout = 0.1;
  }
  if (qlora) setup.base_weights = BaseWeights::kNf4;
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
  measured.note += devices == 1 ? "accelerate wraps the model in FSDP even on one GPU, where FSDP "
                                  "shards nothing (NO_SHARD), so it is counted as one device "
                                  "without FSDP"
                                : "accelerate's FSDP1 shards it (FULL_SHARD; the NF4 weights in "
                                  "BF16 storage under QLoRA), counted as ZeRO 3 under the stack";
  if (devices > 1 && sequences == 4 && !full) {
    measured.outside_goal =
        "Outside 10%: over 2 GPUs the rows hold 0.9 to 2.3 GiB more than the estimate, more "
        "with more tokens (80 to 115 KB a token), where the one-GPU LoRA rows are within 2%; what "
        "FSDP1 holds a token beyond its gathered units is not found";
    measured.note += ". " + measured.outside_goal;
  } else if (qlora && devices == 1) {
    measured.outside_goal =
        "Outside 10%: the QLoRA rows (NF4 with double quantisation, bf16 autocast) hold 4.4 GiB "
        "more than the estimate at 4 sequences and 8.8 GiB more at 8 (34.46 GiB measured), about "
        "290 KB a token either way, while the LoRA rows beside them are within 2%. That is near "
        "an FP32 residual stream (8 KB a token a layer at h 4,096): with --kbit-prep "
        "(prepare_model_for_kbit_training) the estimate is 19.6 GiB, +1.7%. It is not set here: "
        "TRL skips that preparation for a model loaded on the CPU for FSDP, and the end-of-run "
        "memory, 4.01 GiB, shows no FP32 embedding; what makes the residual FP32, if it is that, "
        "the table does not say";
    measured.note += ". " + measured.outside_goal;
  }
  return measured;
}

}  // namespace

std::vector<MeasuredCase> fms_acceleration_cases() {
  return {
      fms_row(Method::kFull, 1, 4, 67.46),  fms_row(Method::kFull, 1, 8, 67.46),
      fms_row(Method::kLora, 1, 4, 24.87),  fms_row(Method::kLora, 1, 8, 36.08),
      fms_row(Method::kQlora, 1, 4, 19.25), fms_row(Method::kFull, 2, 2, 33.74),
      fms_row(Method::kFull, 2, 4, 33.74),  fms_row(Method::kLora, 2, 2, 14.10),
      fms_row(Method::kQlora, 2, 2, 8.78),  fms_row(Method::kLora, 2, 4, 20.45),
      fms_row(Method::kQlora, 2, 4, 14.87),
  };
}

}  // namespace trainmem
