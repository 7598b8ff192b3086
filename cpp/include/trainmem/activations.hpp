// The activation models' constants and the llama-block model's tensors: what one layer saves for
// its backward pass, per Korthikanti et al. (the plate's model) or tensor by tensor for a Llama
// block in a standard implementation (docs/activations.md derives each and names its source).
#pragma once

#include <string>
#include <vector>

#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Activations saved per layer (Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", MLSys 2023, equation 1 and Table 2), in bytes:
//   no parallelism                 s·b·h·(34 + 5·a·s/h)
//   tensor parallel t              s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   tensor and sequence parallel   s·b·h·(34/t + 5·a·s/(h·t))
//   full recomputation             2·s·b·h per layer (2·s·b·h/t with sequence parallelism)
// FlashAttention never materialises the a·s·s scores, which removes the 5·a·s/h term, as does
// selective recomputation.
constexpr double kKorthikantiBytesPerTokenPerHidden = 34;
constexpr double kKorthikantiReplicatedBytesPerTokenPerHidden = 10;  // LayerNorms, dropout masks,
                                                                     // inputs: not split by TP
constexpr double kKorthikantiShardedBytesPerTokenPerHidden = 24;     // split by TP
constexpr double kKorthikantiScoreBytesPerHeadPerTokenPair = 5;
// Without dropout (section 4.1's terms less the masks): the attention output's and the MLP's 1-byte
// masks leave the replicated 10 (8), the MLP's mask its 3 (2); the scores keep the softmax's 2 of
// their 5 (the probabilities' mask, 1, and their dropped copy, 2, go).
constexpr double kKorthikantiDropoutMaskBytesPerTokenPerHidden = 1;  // each of two
// Of the replicated 10, the two inputs the projections read (the QKV projection's and the MLP's,
// 2 each): DTensor's sequence parallelism (torchtitan) saves them all-gathered, whole on each rank.
constexpr double kKorthikantiGatheredInputBytesPerTokenPerHidden = 4;
constexpr double kKorthikantiScoreBytesWithoutDropout = 2;
constexpr double kFullRecomputeBytesPerTokenPerHidden = 2;  // each layer's BF16 input

// Korthikanti et al. 2023, section 4.1, split the 34 by block: attention 11 (input 2, Q and K 4,
// V 2, output projection's input 2, dropout mask 1), MLP 19 (input 2, the two 8·s·b·h
// intermediates of the 4h-wide MLP, dropout mask 1) and the two layer norms' inputs 4.
constexpr double kKorthikantiAttentionBytesPerTokenPerHidden = 11;
constexpr double kKorthikantiMlpBytesPerTokenPerHidden = 19;
constexpr double kKorthikantiNormBytesPerTokenPerHidden = 4;
static_assert(kKorthikantiAttentionBytesPerTokenPerHidden + kKorthikantiMlpBytesPerTokenPerHidden +
                      kKorthikantiNormBytesPerTokenPerHidden ==
                  kKorthikantiBytesPerTokenPerHidden,
              "section 4.1's split must sum to equation 1's 34");
// Under tensor parallelism without sequence parallelism the MLP's input (2) and dropout mask (1)
// stay whole on every rank; its two 8·s·b·h intermediates are split over t.
constexpr double kKorthikantiMlpReplicatedBytesPerTokenPerHidden = 3;
constexpr double kKorthikantiMlpShardedBytesPerTokenPerHidden = 16;
static_assert(kKorthikantiMlpReplicatedBytesPerTokenPerHidden +
                      kKorthikantiMlpShardedBytesPerTokenPerHidden ==
                  kKorthikantiMlpBytesPerTokenPerHidden,
              "the MLP's parts must sum to its 19");
// A mixture of experts routing each token to its top k experts saves the MLP's activations k
// times: k - 1 more MLP shares per layer, 19 (3 + 16/t under tensor parallelism, 19/t with
// sequence parallelism). The router's s·b·E logits are left out, as Korthikanti leaves out
// anything below s·b·h, except where a stack's routing is counted beyond the shares (torchtitan's,
// Megatron-LM's: activations/megatron_routing.cpp).

// Expert parallelism's token dispatch (Megatron-LM's MoEAlltoAllTokenDispatcher,
// megatron/core/transformer/moe/token_dispatcher.py): a mixture layer permutes each device's
// tokens into k copies (times the capacity factor), h wide in BF16, and sends them to the experts'
// devices with an all-to-all, which receives as many on balanced routing; the combine sends the
// experts' outputs back the same way. Only the experts' input is saved for the backward pass (the
// experts' first projection saves it: counted with the MLP); the permutation's maps and the
// routed probabilities are counted with the router's tensors (activations/megatron_routing.cpp).
// The send and the receive buffer of one all-to-all are transient: two buffers of
// T·k·C·h BF16 values, one layer at a time.
constexpr double kAllToAllBuffersInFlight = 2;

// Whether the layers save dropout's masks (options.hpp, Dropout): as --dropout says; under
// "model", as the model's config sets it (config_dropout.cpp: the residual dropout after the
// attention and the MLP, the probabilities' own), and where no config says (a preset) as each
// activation model's source does: Korthikanti's GPT block drops out, as published
// (`source_drops` true); the Llama block does not.
inline bool drops_out(const TrainingSetup& setup, bool stated, bool config_drops,
                      bool source_drops) {
  if (setup.dropout != Dropout::kModel) return setup.dropout == Dropout::kOn;
  return stated ? config_drops : source_drops;
}
inline bool residual_dropout(const ModelShape& shape, const TrainingSetup& setup,
                             bool source_drops) {
  return drops_out(setup, shape.dropout_stated, shape.residual_dropout, source_drops);
}
inline bool probability_dropout(const ModelShape& shape, const TrainingSetup& setup,
                                bool source_drops) {
  return drops_out(setup, shape.dropout_stated, shape.probability_dropout, source_drops);
}
// Korthikanti's GPT block drops out as published; the Llama block does not.
constexpr bool kKorthikantiDropsOut = true;
constexpr bool kLlamaBlockDropsOut = false;

// The devices context parallelism's all-to-all exchanges heads over: c under a2a, the group's
// size under a2a+p2p, none (1) over the ring.
inline int cp_all_to_all_group(const TrainingSetup& setup) {
  switch (setup.cp_comm_type) {
    case CpCommType::kA2a:
      return setup.layout.context_parallel;
    case CpCommType::kA2aP2p:
      return setup.cp_a2a_size;
    case CpCommType::kP2p:
      break;
  }
  return 1;
}

// Whether the attention's output is saved once more before its all-to-all back: context
// parallelism over all-to-all (Megatron-LM's --cp-comm-type a2a, or a2a+p2p with an all-to-all
// group above 1) under Transformer Engine 2.8 on (context_parallel.py,
// AttnFuncWithCPAndQKVOA2A.forward and AttnFuncWithCPAndKVP2P.forward: out_part).
inline bool cp_all_to_all_saves_output(const TrainingSetup& setup) {
  return setup.layout.context_parallel > 1 && cp_all_to_all_group(setup) > 1;
}

// Whether a mixture's tokens are gathered across devices by Megatron-LM's all-gather token
// dispatcher (options.hpp, MoeDispatcher): its t·ep group holds more than one device, or nothing is
// gathered and the layer runs as under the all-to-all at ep 1.
inline bool gathers_expert_tokens(const TrainingSetup& setup) {
  return setup.moe_dispatcher == MoeDispatcher::kAllGather &&
         setup.layout.tensor_parallel * setup.layout.expert_parallel > 1;
}

// The flex dispatcher's received rows per token of each of the ep devices' (estimate/dispatch.cpp,
// flex_buffers): each token goes once to each device holding one of its k experts; at balanced
// routing a token misses a device of E/ep experts with C(E − E/ep, k)/C(E, k), so a device receives
// ep·(1 − C(E − E/ep, k)/C(E, k)) rows a token.
inline double flex_received_share(double experts, int expert_parallel, int top_k) {
  const double local = experts / expert_parallel;
  double missed = 1;  // C(E − g, k) / C(E, k)
  for (int i = 0; i < top_k; ++i) {
    const double left = experts - local - i;
    missed *= (left > 0 ? left : 0.0) / (experts - i);
  }
  return expert_parallel * (1 - missed);
}

// Which way context parallelism's all-to-all made a tensor, if it did.
enum class Exchange { kNone, kIntoAttention, kOutOfAttention };

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
  // Made by context parallelism's all-to-all (Transformer Engine's flash_attn_a2a_communicate):
  // Q, K and V into the attention, and the output the projection reads, out of it.
  Exchange exchange = Exchange::kNone;
  std::string dtype;  // "BF16", "FP32", "FP8", or an index's or mask's: "int32", "bool"
};

// The tensors one layer of `shape` saves per token in the forward pass, on one device, for the
// setup's attention (FlashAttention or not), recomputation, tensor/sequence parallelism and what
// its stack does to them (the estimate answers it: estimate/stage.cpp).
// Under full recomputation these are what the layer saves while it is rebuilt in the backward
// pass; between passes only its input is kept (2·h per token, over t with sequence parallelism).
// The setup is assumed valid (estimate_memory checks it). The model, in brief:
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
// Under nvfp4-mixed, one of the leading layers torchao's NVFP4Linear runs (fp8.hpp,
// nvfp4_layers), compiled: its input, the attention kernel's output and log-sum-exp; its matmuls
// (not aten.mm) are recomputed.
std::vector<SavedTensor> nvfp4_selective_op_saved_tensors(const ModelShape& shape,
                                                          const TrainingSetup& setup);

// The tensors' sum: bytes per token per layer on one device.
double saved_bytes_per_token(const std::vector<SavedTensor>& tensors);

}  // namespace trainmem
