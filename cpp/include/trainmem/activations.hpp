// The llama-block activation model: the tensors one Llama block saves for its backward pass, one
// by one, in a standard implementation (docs/activations.md derives each and names its source).
#pragma once

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

// One tensor a layer keeps from its forward pass until its backward pass, per token.
struct SavedTensor {
  std::string id;                 // "attention-norm-input", "log-sum-exp", …
  std::string name;               // for people: "Attention norm's input"
  std::string saved_by;           // the operations whose backward needs it
  std::string elements;           // elements per token, in symbols: "h", "k·d", "a·s", "f"
  double elements_per_token = 0;  // the same, in numbers, before any split over devices
  double dtype_bytes = 0;         // 2 (BF16) or 4 (FP32)
  double split = 1;               // the tensor-parallel split on one device: 1 or t
  double bytes_per_token = 0;     // elements_per_token × dtype_bytes / split
};

// The tensors one layer of `shape` saves per token in the forward pass, on one device, for the
// setup's attention (FlashAttention or not), recomputation and tensor/sequence parallelism.
// Under full recomputation these are what the layer saves while it is rebuilt in the backward
// pass; between passes only its input is kept (layer_input_bytes_per_token). The setup is assumed
// valid (estimate_memory checks it). The model, in brief:
//   RMSNorm saves its BF16 input and its FP32 1/RMS per token; each projection saves its input,
//   one tensor shared by Q, K and V, and one by gate and up; FlashAttention saves Q, K and V
//   (K and V with their k heads), its output (which the output projection saves too) and an FP32
//   log-sum-exp per head; without it the BF16 softmax output of a·s per token replaces the
//   log-sum-exp and K and V are repeated to all a heads; selective recomputation keeps neither;
//   the gated MLP, fused as Megatron-LM, Transformer Engine and Liger fuse it, saves the gate's
//   and up's outputs (it recomputes the activation and the product in the backward pass) and the
//   down projection saves their product, top-k times with experts, whose router saves the norm's
//   output once more. No dropout. Tensor parallelism splits the attention and MLP tensors over t;
//   sequence parallelism splits the rest too.
std::vector<SavedTensor> llama_block_saved_tensors(const ModelShape& shape,
                                                   const TrainingSetup& setup,
                                                   bool flash_attention);

// torchtitan's per-operation selective recomputation (torchtitan/parallelisms/
// parallelize_llama.py, _apply_ac_to_transformer_block, "op"): the checkpointed block keeps its
// input, and saves the outputs of the operations in _save_list (aten.mm, the fused attention
// kernels) but every second matmul, recomputing the rest in the backward pass. A Llama block's
// matmuls run wq, wk, wv, wo, w1, w3, w2 (torchtitan's Attention and FeedForward): wq's, wv's,
// w1's and w2's outputs are saved with the attention kernel's output and FP32 log-sum-exp. The
// setup is assumed valid; check.cpp keeps the policy to dense Llama-style blocks.
std::vector<SavedTensor> selective_op_saved_tensors(const ModelShape& shape,
                                                    const TrainingSetup& setup);

// The saved tensors of a setup, for a table: none for a refused setup; `in_use` says whether the
// setup counts its activations this way (the llama-block model), `caption` what the rows are.
struct SavedTensorList {
  bool in_use = false;
  std::string caption;
  std::vector<SavedTensor> tensors;
  double bytes_per_token = 0;
};
SavedTensorList saved_tensors_of(const TrainingSetup& setup);

// The tensors' sum: bytes per token per layer on one device.
double saved_bytes_per_token(const std::vector<SavedTensor>& tensors);

// What a layer keeps between passes under full recomputation: its BF16 input, 2·h per token
// (over t with sequence parallelism), whichever activation model.
double layer_input_bytes_per_token(const ModelShape& shape, const ParallelLayout& layout);

}  // namespace trainmem
