// One layer's activations on the most loaded device, as each activation model counts them
// (korthikanti.cpp, llama_block.cpp): what the estimate's stages stack up (estimate/stage.cpp).
#pragma once

#include <string>
#include <vector>

#include "text/figure.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// What the training stack does to a layer's saved tensors, handed down as data by the estimate,
// which reads the stack's row (estimate/stage.cpp, layer_stack_of): the activation models stand
// below the stacks and never ask their table.
struct LayerStack {
  // DTensor's tensor parallelism above 1 (torchtitan's apply_tp): the projections' all-gathered
  // inputs saved whole on every rank (stack_rows.hpp, dtensor_tensor_parallel).
  bool saves_gathered_inputs = false;
  // fp8-mixed as Transformer Engine runs it (fp8.hpp): the linear layers save their inputs in FP8.
  bool transformer_engine_fp8 = false;
  // Then each saved input's bytes per value: 1, and MXFP8's or blockwise's block scale (fp8.hpp).
  double fp8_saved_input_bytes = 1;
  // torchtune's modules run eager as written (stack_rows.hpp, eager_modules): RMSNorm op by op in
  // FP32, SiLU apart from the product, K and V expanded to every head before attention.
  bool eager_modules = false;
  // SiLU's output saved apart from the product (eager_modules, or torchtitan's MLPs uncompiled:
  // stack_rows.hpp, silu_apart).
  bool silu_apart = false;
  // torchtitan's mixture of experts (stack_rows.hpp, torchtitan_mixture): the router's FP32 copy
  // of its input and its scores, the dispatcher's indices, and the combine's FP32 upcast of the
  // experts' outputs.
  bool torchtitan_mixture = false;
  // Megatron-LM's mixture of experts (stack_rows.hpp, megatron_routing): its router's scores and
  // indices, the permutation's maps and the experts' saved probabilities.
  bool megatron_routing = false;
};

struct ActivationsPerLayer {
  double tokens_on_device = 0;  // s/c · b
  // Saved for the backward pass, per token: "4,096 × (34 + 0) B", "139,400 B saved per token";
  // kept_bytes is tokens_on_device × kept_per_token.
  Figure kept_per_token;
  double kept_bytes = 0;
  // Full recomputation (and per-op recomputation): what the layer makes beyond what it keeps, in
  // its forward pass and again as it is rebuilt in its backward pass.
  double recompute_working_bytes = 0;
  // Under nvfp4-mixed, what one of the BF16 tail's layers rebuilds: recompute_working_bytes is
  // then a converted layer's (fp8.hpp, nvfp4_layers), which keeps less and rebuilds more. Below 0
  // otherwise.
  double tail_recompute_working_bytes = -1;
  // Under nvfp4-mixed, what a converted layer and a BF16 tail layer each keep, per token
  // (kept_per_token is their mean); 0 otherwise.
  double converted_kept_per_token = 0;
  double tail_kept_per_token = 0;
  // Expert parallelism: one mixture layer's all-to-all buffers (the send and the receive buffer
  // of the dispatch or the combine), in flight while that layer runs, forward or rebuilt
  // (estimate/stage.cpp counts them).
  Figure dispatch;
  std::string source;  // the model's, when the pen writes
  // A hybrid's two kinds of layer (stage.cpp), each one's kept bytes per token; 0 otherwise.
  double linear_kept_per_token = 0;
  double attention_kept_per_token = 0;
  // A mixture with dense layers counted as their mean (stage.cpp): each kind's kept bytes per
  // token (an MTP module's layer keeps a mixture layer's) and rebuilt bytes; 0 otherwise.
  double mixture_kept_per_token = 0;
  double dense_kept_per_token = 0;
  double mixture_working_bytes = 0;
  double dense_working_bytes = 0;
  // Every kind a hybrid's layers hold (models.hpp, hybrid_layers), in kHybridLayerKinds
  // (models.hpp): its character and kept bytes per token; empty otherwise.
  struct Kind {
    char kind = 'A';
    double kept_per_token = 0;
  };
  std::vector<Kind> kinds;
};

// Every activation model answers through this one signature: one layer of `shape` under
// `setup`'s layout and recomputation and what `stack` does to it, for `micro_batch_sequences`
// sequences, with or without FlashAttention, its per-token figure written by `pen`. The setup has
// passed check_setup.
using LayerActivations = ActivationsPerLayer (*)(const ModelShape& shape,
                                                 const TrainingSetup& setup,
                                                 const LayerStack& stack, int micro_batch_sequences,
                                                 bool flash_attention, const Pen& pen);
ActivationsPerLayer korthikanti_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  const LayerStack& stack,
                                                  int micro_batch_sequences, bool flash_attention,
                                                  const Pen& pen);
ActivationsPerLayer llama_block_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  const LayerStack& stack,
                                                  int micro_batch_sequences, bool flash_attention,
                                                  const Pen& pen);

// torchtitan's router and combine, per token of a mixture layer (llama_block.cpp's
// add_torchtitan_router and add_torchtitan_combine, summed), and in gpt-oss what its experts keep
// beyond GroupedExperts' SwiGLU and its sinks' rescaling: what Korthikanti's shares lack.
double torchtitan_beyond_mlp_bytes(const ModelShape& shape, const TrainingSetup& setup);

// Megatron-LM's routing bookkeeping, per token of a mixture layer (megatron_routing.cpp,
// LlamaBlock::add_megatron_routing): what Korthikanti's shares lack.
double megatron_routing_bytes(const ModelShape& shape, const TrainingSetup& setup);

// The llama-block model's tensors under `stack` (activations.hpp's llama_block_saved_tensors,
// which the estimate answers with the setup's own stack).
std::vector<SavedTensor> llama_block_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                             const LayerStack& stack, bool flash_attention);
LayerActivations layer_activations_of(ActivationModel model);

// A hybrid's second kind of layer (models.hpp): a Gated DeltaNet's or a short convolution's
// (llama_block.cpp), its norms, MLP and mixer, tensor by tensor, or Gemma 4's global attention
// layer as the llama-block model counts it; whichever activation model counts the full-attention
// layers (Korthikanti's equation describes attention layers alone); under full recomputation its
// input, as any layer's.
std::vector<SavedTensor> linear_layer_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                              const LayerStack& stack, bool flash_attention);

// A hybrid's layer of one kind (models.hpp, hybrid_layers: 'A', 'L', or one part alone, 'a', 'l',
// 'F'), tensor by tensor, and what it keeps between passes; 'A' as the llama-block model counts
// an attention layer.
std::vector<SavedTensor> layer_kind_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                            const LayerStack& stack, bool flash_attention,
                                            char kind);
ActivationsPerLayer layer_kind_activations(const ModelShape& shape, const TrainingSetup& setup,
                                           const LayerStack& stack, int micro_batch_sequences,
                                           bool flash_attention, const Pen& pen, char kind);

// fla's chunk size for the chunked delta rule (fla/ops/gated_delta_rule/chunk.py, BT = 64): A, the
// WY inverse, holds 64 entries a token and head.
constexpr double kDeltaRuleChunk = 64;

// mamba_ssm's selective scan keeps its states once per chunk of this many tokens
// (csrc/selective_scan/selective_scan.cpp: n_chunks = (seqlen + 2048 - 1) / 2048).
constexpr double kSelectiveScanChunk = 2048;

// What a layer keeps between passes under full recomputation, whichever model: its BF16 input,
// 2·h per token, over t with sequence parallelism: "4,096 × 2 / 2 B".
Figure layer_input_per_token(const ModelShape& shape, const ParallelLayout& layout, const Pen& pen);

// What one layer holds beyond the kept activations while it runs: the layer rebuilt under full
// recomputation and its all-to-all buffers under expert parallelism.
inline double layer_working_bytes(const ActivationsPerLayer& layer) {
  return layer.recompute_working_bytes + layer.dispatch.value();
}

}  // namespace trainmem
