// A tiny mixture of experts under torchtitan (and Qwen3-30B-A3B on eight devices), the setups the
// suites that count its tensors by hand share: two layers of h 64 (4 heads of 16, 2 key-value
// heads), each a mixture of 4 experts of 32, top-2, a vocabulary of 256; 128 tokens on d 4 with
// FSDP2 (ZeRO 3), the llama-block model, no recomputation, expert parallelism `ep`.
#pragma once

#include "trainmem/setup.hpp"

namespace trainmem::fixtures {

inline TrainingSetup tiny_torchtitan_mixture(int ep) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  ModelShape& shape = setup.custom_model;
  shape.id = kCustomModelId;
  shape.name = "Tiny mixture";
  shape.num_layers = 2;
  shape.hidden_size = 64;
  shape.ffn_hidden_size = 128;
  shape.num_attention_heads = 4;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 256;
  shape.num_experts = 4;
  shape.num_experts_per_token = 2;
  shape.moe_ffn_hidden_size = 32;
  setup.sequence_length = 128;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.stack = Stack::kTorchtitan;
  setup.logits = false;
  setup.layout.data_parallel = 4;
  setup.layout.zero_stage = 3;
  setup.layout.expert_parallel = ep;
  return setup;
}

// Qwen3-30B-A3B under torchtitan on 8 devices, FSDP2 with expert parallelism 8.
inline TrainingSetup qwen3_moe_on_eight(Recompute recompute) {
  TrainingSetup setup;
  setup.model_id = "qwen3-30b-a3b";
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  setup.layout.expert_parallel = 8;
  setup.recompute = recompute;
  return setup;
}

}  // namespace trainmem::fixtures
