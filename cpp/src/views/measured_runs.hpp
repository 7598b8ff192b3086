// Published measured runs kept apart from measured.cpp's table, one source each (measured.hpp).
#pragma once

#include <vector>

#include "model/units.hpp"
#include "trainmem/measured.hpp"

namespace trainmem {

// SimuMax v1.2's B200 release runs: Megatron-LM with Transformer Engine 2.11 on 8 B200s, each
// run's allocated and reserved peaks (measured_megatron.cpp).
std::vector<MeasuredCase> simumax_b200_cases();

// torchtune's "Optimization flags" table: Llama 3.2 3B on one A100, each technique added to the
// rows above, the peak active memory (measured_torchtune.cpp).
std::vector<MeasuredCase> torchtune_flags_cases();
// torchtune's Llama 3.1 table: Llama 3.1 70B LoRA over 8 A100s through its distributed recipe
// (FSDP2), the peak memory per GPU (measured_torchtune.cpp).
std::vector<MeasuredCase> torchtune_distributed_cases();

// fms-acceleration's A100 table: LoRA and QLoRA on Mistral 7B through transformers' Trainer, TRL
// and PEFT, the peak allocated memory (measured_hf.cpp).
std::vector<MeasuredCase> fms_acceleration_cases();

// trainmem's own H200 runs of LoRA and QLoRA on Mistral 7B's shape through transformers' Trainer
// (scripts/measure/peft_peak.py, tests/data/peft-peak-h200.jsonl), the peak allocated memory
// (measured_hf.cpp).
std::vector<MeasuredCase> h200_trainer_cases();

// Liger-Kernel's Hugging Face example, full fine-tuning of Mistral 7B with and without Liger
// (measured_hf.cpp).
std::vector<MeasuredCase> liger_example_cases();

// torchao's MX formats benchmark: Llama 3 8B under torchtitan on 8 B200s in BF16, MXFP8 and
// tensorwise Float8, compiled under per-op selective recomputation, the peak reserved memory
// (measured_torchao.cpp).
std::vector<MeasuredCase> torchao_b200_cases();

// torchtitan's NVFP4 evidence: Llama 3 8B on 4 GB200s in BF16 and NVFP4 (a BF16 tail), compiled
// under per-op selective recomputation, the peak reserved memory (measured_torchao.cpp).
std::vector<MeasuredCase> torchtitan_gb200_cases();

}  // namespace trainmem
