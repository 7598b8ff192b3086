// Megatron-LM's routing bookkeeping (activations/megatron_routing.cpp): what its router, its
// dispatcher's permutation and its experts' weighted activation save, pinned by hand on a tiny
// mixture for each setting that changes it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "text/figure.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/setup.hpp"

using namespace trainmem;

namespace megatron_routing_test {

namespace {

// One mixture layer of h 64 (4 heads), 8 experts of 32, top-2, no shared expert; under the
// megatron stack, one device, BF16, FlashAttention, no recomputation, 256 tokens.
TrainingSetup tiny_router() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  ModelShape& shape = setup.custom_model;
  shape.id = kCustomModelId;
  shape.name = "Tiny router";
  shape.num_layers = 1;
  shape.hidden_size = 64;
  shape.ffn_hidden_size = 128;
  shape.num_attention_heads = 4;
  shape.num_key_value_heads = 4;
  shape.vocab_size = 256;
  shape.num_experts = 8;
  shape.num_experts_per_token = 2;
  shape.moe_ffn_hidden_size = 32;
  setup.sequence_length = 256;
  setup.stack = Stack::kMegatron;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.recompute = Recompute::kNone;
  setup.logits = false;
  return setup;
}

bool routing(const std::string& id) {
  const auto starts = [&id](const char* prefix) { return id.rfind(prefix, 0) == 0; };
  return (starts("router-") && id != "router-input") || starts("permute-") || starts("dispatch-") ||
         id == "chunk-sort-maps" || id == "expert-probs" || id == "activation-unweighted";
}

std::vector<SavedTensor> routing_tensors(const TrainingSetup& setup) {
  std::vector<SavedTensor> kept;
  for (const SavedTensor& tensor :
       llama_block_saved_tensors(setup.custom_model, setup, setup.flash_attention)) {
    if (routing(tensor.id)) kept.push_back(tensor);
  }
  return kept;
}

// The routing's bytes per token of the layer's.
double routing_bytes(const TrainingSetup& setup) {
  REQUIRE_MESSAGE(estimate_memory(setup).answer.ok(), estimate_memory(setup).answer.message);
  double sum = 0;
  for (const SavedTensor& tensor : routing_tensors(setup)) sum += tensor.bytes_per_token;
  return sum;
}

std::vector<std::string> ids_of(const TrainingSetup& setup) {
  std::vector<std::string> ids;
  for (const SavedTensor& tensor : routing_tensors(setup)) ids.push_back(tensor.id);
  return ids;
}

}  // namespace

TEST_CASE("megatron routing: Megatron-LM's defaults, by hand") {
  const TrainingSetup setup = tiny_router();
  // The router: the top-k indices (2 · 8) and the softmax over them, FP32 (2 · 4); the
  // all-to-all's unfused permutation: the probabilities' transposed copy (8 · 2), its mask (8)
  // and each copy's token index (2 · 8); the experts' probabilities (2 · 2): 68.
  CHECK(routing_bytes(setup) == 16 + 8 + 16 + 8 + 16 + 4);
  CHECK(ids_of(setup) == std::vector<std::string>{"router-indices", "router-probs", "permute-probs",
                                                  "permute-mask", "permute-indices",
                                                  "expert-probs"});
  // Another stack saves none of it, and refuses the router's settings by name.
  TrainingSetup ideal = setup;
  ideal.stack = Stack::kIdeal;
  CHECK(routing_tensors(ideal).empty());
  ideal.moe_permute_fusion = true;
  CHECK(estimate_memory(ideal).answer.setting == "moe-permute-fusion");
  ideal.moe_permute_fusion = false;
  ideal.moe_router_dtype = RouterDtype::kFp32;
  CHECK(estimate_memory(ideal).answer.setting == "moe-router-dtype");
}

TEST_CASE("megatron routing: the score function, its groups and the router's dtype, by hand") {
  TrainingSetup pre = tiny_router();
  pre.moe_router_score = RouterScore::kSoftmaxPre;
  pre.custom_model.num_expert_groups = 4;
  pre.custom_model.num_limited_groups = 2;
  // The softmax over all 8, FP32 (32), and the group-limited top-k's mask (8), beside the
  // indices (16); the permutation and the experts' probabilities as before (40 + 4).
  CHECK(routing_bytes(pre) == 16 + 8 + 32 + 40 + 4);
  TrainingSetup sigmoid = pre;
  sigmoid.moe_router_score = RouterScore::kSigmoid;
  sigmoid.custom_model.router_bias = true;
  // The sigmoid's FP32 output (32), its BF16 copy that the gather of the top-k saves (16), the
  // top-k scores and their sum (3 · 2); beside the expert bias the groups' mask reaches nothing.
  CHECK(routing_bytes(sigmoid) == 16 + 32 + 16 + 6 + 40 + 4);
  // In FP32 the copy is the sigmoid's own output; the top-k scores, the permutation's copy and
  // the experts' probabilities take 4 B.
  sigmoid.moe_router_dtype = RouterDtype::kFp32;
  CHECK(routing_bytes(sigmoid) == 16 + 32 + 12 + (32 + 8 + 16) + 8);
  // Without the bias the groups' mask is saved and the gather is not.
  sigmoid.custom_model.router_bias = false;
  sigmoid.moe_router_dtype = RouterDtype::kInput;
  CHECK(routing_bytes(sigmoid) == 16 + 8 + 32 + 6 + 40 + 4);
}

TEST_CASE("megatron routing: the auxiliary loss, the z-loss and the fused router, by hand") {
  TrainingSetup aux = tiny_router();
  aux.moe_aux_loss = true;
  // The loss's softmax over all 8, FP32: 32 more.
  CHECK(routing_bytes(aux) == 68 + 32);
  TrainingSetup sigmoid = aux;
  sigmoid.moe_router_score = RouterScore::kSigmoid;
  // The sigmoid's: its BF16 scores and their sum, 9 · 2, beside the routing's sigmoid (32) and
  // top-k scores (6).
  CHECK(routing_bytes(sigmoid) == 16 + 32 + 6 + 18 + 40 + 4);
  TrainingSetup z_loss = tiny_router();
  z_loss.moe_z_loss = true;
  // The logits and their log-sum-exp, 9 · 2.
  CHECK(routing_bytes(z_loss) == 68 + 18);
  // Transformer Engine's fused router: its routing map (8) and scores in the logits' dtype (16),
  // and the loss's scores (16).
  TrainingSetup fused = aux;
  fused.moe_router_fusion = true;
  CHECK(routing_bytes(fused) == 8 + 16 + 16 + 40 + 4);
  // Korthikanti's shares gain the same bytes, beyond the MLP's.
  TrainingSetup korthikanti = tiny_router();
  korthikanti.activation_model = ActivationModel::kKorthikanti;
  const double without = layer_activations(korthikanti.custom_model, korthikanti, 1, true, Pen())
                             .kept_per_token.value();
  korthikanti.moe_aux_loss = true;
  CHECK(layer_activations(korthikanti.custom_model, korthikanti, 1, true, Pen())
                .kept_per_token.value() -
            without ==
        doctest::Approx(32));
}

TEST_CASE("megatron routing: the fused permutation and the padded capacity, by hand") {
  TrainingSetup fused = tiny_router();
  fused.moe_permute_fusion = true;
  // One int32 row map of 2 · 8 + 1 (68), and with 8 local experts the two chunk sorts' int32
  // maps of the copies (2 · 2 · 4).
  CHECK(routing_bytes(fused) == 24 + 68 + 16 + 4);
  // One expert a device: no chunk sort.
  TrainingSetup one_each = fused;
  one_each.layout.expert_parallel = 8;
  one_each.layout.data_parallel = 8;
  CHECK(routing_bytes(one_each) == 24 + 68 + 4);
  // Unpadded at a capacity of 1 or more (the factor reads 0): the router's kept-token map (8)
  // beside the fused row map and the chunk sorts.
  fused.moe_capacity_unpadded = true;
  CHECK(routing_bytes(fused) == 24 + 8 + 68 + 16 + 4);
  // Unpadded below 1 (0.5: one copy a token kept), unfused: the masked path over the kept copy.
  TrainingSetup dropping = tiny_router();
  dropping.capacity_factor = 0.5;
  dropping.moe_capacity_unpadded = true;
  dropping.layout.expert_parallel = 2;
  dropping.layout.data_parallel = 2;
  CHECK(routing_bytes(dropping) == 24 + 8 + (16 + 8 + 8) + 2);
  // Unpadded, a factor of 1 or more keeps what is routed: it reads 0, and 1.5 is refused.
  dropping.capacity_factor = 1.5;
  CHECK(estimate_memory(dropping).answer.setting == "moe-capacity-unpadded");
  // Padded to a capacity of 1.5: 3 copies a token. The router's kept-token map (8); unfused, two
  // int64 indices a padded copy (2 · 3 · 8); the experts' probabilities of 3 copies (6).
  TrainingSetup padded = tiny_router();
  padded.layout.expert_parallel = 2;
  padded.layout.data_parallel = 2;
  padded.capacity_factor = 1.5;
  CHECK(routing_bytes(padded) == 24 + 8 + 48 + 6);
  // Fused, the row map alone (the padded path sorts without a chunk sort).
  padded.moe_permute_fusion = true;
  CHECK(routing_bytes(padded) == 24 + 8 + 68 + 6);
}

TEST_CASE("megatron routing: the all-gather and flex dispatchers, by hand") {
  // t 2 with sequence parallelism, ep 2: the router on each rank's 128 of the 256 tokens (24 / 2
  // a token of the layer's); the all-gather's copy of its 4 experts' probabilities and its mask
  // over the group's 2 · 2 · 128 tokens (8 · 2 and 8 a token of the layer's), and each local
  // copy's int64 index (2 · 8); the experts read 2 copies a token (etp 2 over t 2).
  TrainingSetup gathered = tiny_router();
  gathered.moe_dispatcher = MoeDispatcher::kAllGather;
  gathered.layout.tensor_parallel = 2;
  gathered.layout.sequence_parallel = true;
  gathered.layout.expert_parallel = 2;
  gathered.layout.data_parallel = 2;
  CHECK(routing_bytes(gathered) == 12 + 16 + 8 + 16 + 4);
  // Fused: the row map of the group's tokens, (2 · 4 + 1) · 4 B each, ep 2 of them a token.
  gathered.moe_permute_fusion = true;
  CHECK(routing_bytes(gathered) == 12 + 16 + 8 + 72 + 4);
  // The flex dispatcher at ep 2: each device receives 2 · (1 − C(4, 2)/C(8, 2)) = 11/7 rows a
  // token. The top-k indices of the probabilities DeepEP sends (2 · 8); each received row's mask
  // of valid copies (2 · 11/7) and index_put's two int64 indices a local copy (2 · 2 · 8); the
  // permutation of the 4-wide FP32 multihot rows: their copy (4 · 4 · 11/7), its mask (4 · 11/7)
  // and each local copy's index (2 · 8); DeepEP's handle, each token's devices and send head
  // (2 · (1 + 4)) and each received row's source (4 · 11/7); the experts' probabilities in FP32
  // (2 · 4).
  TrainingSetup flex = tiny_router();
  flex.moe_dispatcher = MoeDispatcher::kFlex;
  flex.layout.expert_parallel = 2;
  flex.layout.data_parallel = 2;
  const double rows = 11.0 / 7;
  CHECK(routing_bytes(flex) ==
        doctest::Approx(24 + 16 + 2 * rows + 32 + 16 * rows + 4 * rows + 16 + 10 + 4 * rows + 8));
  // Fused: the row map of the received rows, 2 · 4 + 1 int32 each.
  flex.moe_permute_fusion = true;
  CHECK(routing_bytes(flex) ==
        doctest::Approx(24 + 16 + 2 * rows + 32 + 36 * rows + 10 + 4 * rows + 8));
  // With --enable-experimental the fused indices-to-multihot keeps one int32 position map of the
  // 4 local experts a row (4 · 4 · 11/7) in place of the mask and index_put's indices.
  flex.megatron_experimental = true;
  CHECK(routing_bytes(flex) ==
        doctest::Approx(24 + 16 + 16 * rows + 36 * rows + 10 + 4 * rows + 8));
  // Unfused, it changes nothing.
  flex.moe_permute_fusion = false;
  CHECK(routing_bytes(flex) ==
        doctest::Approx(24 + 16 + 2 * rows + 32 + 16 * rows + 4 * rows + 16 + 10 + 4 * rows + 8));
}

TEST_CASE("megatron routing: ungated experts save the activation before its weighting") {
  TrainingSetup gelu = tiny_router();
  gelu.custom_model.gated_mlp = false;
  // TEGroupedMLP has no fused weighted GeLU: the product with the probabilities saves the
  // activation's output, 32 · 2 copies · 2 B.
  CHECK(routing_bytes(gelu) == 68 + 128);
  // Under moe_act it is inside the discarded activation, rebuilt in the backward pass.
  gelu.recompute_moe_act = true;
  CHECK(routing_bytes(gelu) == 68);
  // Rebuilt: the product twice (the copy into the freed storage and the new output) and the
  // unweighted output inside the function, 2 · 128 + 128 a token.
  CHECK(layer_activations(gelu.custom_model, gelu, 1, true, Pen()).recompute_working_bytes ==
        256 * (2 * 128 + 128));
}

}  // namespace megatron_routing_test
