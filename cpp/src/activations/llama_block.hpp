// Inside the llama-block activation model (llama_block.cpp, and the linear mixers' steps in
// mixers.cpp): one Llama block's saved tensors, step by step. Not part of the public API.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "activations/layer.hpp"
#include "trainmem/activations.hpp"

namespace trainmem::llama_block_steps {

// One saved tensor, its bytes per token on one device worked out.
// The words (id, name, saved_by, elements) are kept only where words are written (figure.hpp): the
// page's estimator sums the bytes alone.
SavedTensor saved_tensor(Words id, Words name, Words saved_by, Words elements,
                         double elements_per_token, double dtype_bytes, double split, Words dtype);

// A floating-point tensor's dtype, by its bytes: FP32, BF16, or an FP8 copy of a linear input.
Words float_dtype(double dtype_bytes);

// The tensors a block saves, in the order they are added.
struct SavedTensors {
  std::vector<SavedTensor> list;

  // A floating-point tensor, or with `dtype` an integer or bool one ("int32", "bool").
  void add(Words id, Words name, Words saved_by, Words elements, double elements_per_token,
           double dtype_bytes, double split, Words dtype = {}) {
    if (std::string(dtype).empty()) dtype = float_dtype(dtype_bytes);
    list.push_back(saved_tensor(std::move(id), std::move(name), std::move(saved_by),
                                std::move(elements), elements_per_token, dtype_bytes, split,
                                std::move(dtype)));
  }
};

// One Llama block under a setup and a stack: what its steps share, worked out once, and the steps
// that add its saved tensors, each one part of the block (llama_block_tensors runs them in the
// block's order).
struct LlamaBlock {
  LlamaBlock(const ModelShape& model, const TrainingSetup& training, const LayerStack& stack,
             bool with_flash_attention);

  // The steps, in the block's order.
  void add_attention_norm(SavedTensors& saved) const;
  void add_attention_input(SavedTensors& saved) const;
  void add_latent_queries_keys_values(SavedTensors& saved) const;
  void add_queries_keys_values(SavedTensors& saved) const;
  void add_attention_scores(SavedTensors& saved) const;
  void add_attention_output(SavedTensors& saved) const;
  void add_residual_dropout_mask(SavedTensors& saved, const Words& id, const Words& name) const;
  void add_attention_output_before_all_to_all(SavedTensors& saved) const;
  void add_further_norm(SavedTensors& saved, int number) const;
  void add_mlp_norm(SavedTensors& saved) const;
  void add_mlp_input(SavedTensors& saved) const;
  void add_mlp(SavedTensors& saved) const;
  void add_latent_output(SavedTensors& saved) const;
  void add_shared_experts(SavedTensors& saved) const;
  void add_torchtitan_router(SavedTensors& saved) const;
  void add_torchtitan_combine(SavedTensors& saved) const;
  // Megatron-LM's router, its dispatcher's permutation and the experts' weighted activation
  // (megatron_routing.cpp).
  void add_megatron_routing(SavedTensors& saved) const;
  void add_routed_input(SavedTensors& saved, const Words& id, const Words& name,
                        const Words& elements, double width, double dtype_bytes) const;
  void add_attention_output_gate(SavedTensors& saved) const;
  void add_attention_sinks(SavedTensors& saved) const;
  void add_gpt_oss_experts(SavedTensors& saved) const;
  void add_gated_deltanet(SavedTensors& saved) const;
  void add_gated_norm_in_pytorch(SavedTensors& saved, const Words& gate_name) const;
  void add_kimi_delta_attention(SavedTensors& saved) const;
  void add_mamba2(SavedTensors& saved) const;
  void add_mamba1(SavedTensors& saved) const;
  void add_lightning(SavedTensors& saved) const;
  void add_short_conv(SavedTensors& saved) const;
  void add_sparse_attention(SavedTensors& saved) const;
  void add_sparse_attention_kernels(SavedTensors& saved) const;

  // What the steps share.
  void add_norm(SavedTensors& saved, const Words& id, const Words& name) const;
  void add_norm_statistics(SavedTensors& saved, const Words& id, const Words& name) const;
  void exchange_last(SavedTensors& saved, std::size_t count, Exchange way) const;
  Words attention_keeper(const char* without_flash_attention) const;
  Words linear_input(const Words& name) const;

  // Worked out once, by the constructor, which says why each is so.
  const ModelShape& shape;
  const TrainingSetup& setup;
  bool flash_attention = false;
  double h = 0;         // the hidden size
  double a = 0;         // attention heads
  double k = 0;         // key/value heads
  double d = 0;         // a head's width
  double f = 0;         // the MLP's width, or each routed expert's
  double shared_f = 0;  // the shared experts' width (0: none)
  double s = 0;         // the sequence's tokens
  double top_k = 1;     // routed copies per token
  bool routed_copies = false;
  Words top_k_text;              // " × 8 experts", "" without routed copies
  double whole = 1;              // the split of what sits between the blocks: 1 or t
  double projections_input = 1;  // the split of the projections' saved input: 1 or whole
  Words gathered_text;
  double by_heads = 1;  // the attention heads' split (and the MLP's width): t
  // The routed experts' intermediates' split: t under sequence parallelism (the tokens split,
  // gathered back over etp, the width over etp), etp without it.
  double by_expert_width = 1;
  // The routed copies a rank's experts read per token of the layer's: etp/t (the copies gathered
  // over etp), 1 without sequence parallelism.
  double expert_tokens = 1;
  // The split of the tokens torchtitan's router, dispatcher and combine keep, 1 / expert_tokens: t
  // under expert parallelism, where each tensor-parallel rank routes its own T/t tokens; 1 without
  // it, where the MoE's input is all-gathered (moe_sharding.py).
  double routing_split = 1;
  bool torchtitan_mixture = false;  // LayerStack::torchtitan_mixture
  bool megatron_routing = false;    // LayerStack::megatron_routing, with experts
  // torchtitan's gpt-oss (models/gpt_oss, b5bcd76c): GptOssGroupedExperts' clamped SwiGLU, and
  // the sinks' rescaling of the attention's output (the constructor says what each saves).
  bool gpt_oss_experts = false;
  bool sinks_rescaled = false;
  bool selective = false;
  bool keys_repeated = false;
  bool eager_modules = false;  // LayerStack::eager_modules
  bool silu_apart = false;     // LayerStack::silu_apart
  bool layer_norm = false;
  Words norm_kind;
  bool parallel = false;
  bool one_norm_for_both = false;
  Words after_rope;
  bool fp8 = false;
  double linear_input_bytes = kBf16Bytes;
  // The MLP's tensors: BF16, or FP32 under prepare_model_for_kbit_training.
  double mlp_bytes = kBf16Bytes;
  Words mlp_dtype_text;
  bool exchanged = false;
  bool flash_keeps_output = false;
  bool all_to_all_saves_output = false;
  Words output_elements;  // the attention output's elements per token: "a·d", "a·d_v"
  double output_width = 0;
  bool residual_masks = false;
};

// Megatron-LM's --recompute-modules beyond core_attn (recompute_modules.cpp): what a block keeps
// of `saved`, the tensors it saves without them, and what each part's backward pass rebuilds, per
// token on one device.
struct ModulesRecomputed {
  std::vector<SavedTensor> kept;
  double attention_rebuilt = 0;
  double mlp_rebuilt = 0;
};
ModulesRecomputed recompute_megatron_modules(std::vector<SavedTensor> saved,
                                             const ModelShape& shape, const TrainingSetup& setup);

}  // namespace trainmem::llama_block_steps
