// Megatron-LM's --recompute-modules beyond core_attn (activations/recompute_modules.cpp), each
// module's dropped, kept and rebuilt tensors pinned by hand on a tiny latent-attention mixture.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "activations/layer.hpp"
#include "estimate/stage.hpp"
#include "saved_tensors.hpp"
#include "text/figure.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/setup.hpp"

using namespace trainmem;
using fixtures::find_tensor;
using fixtures::sum_of;

namespace recompute_modules_test {

namespace {

// Two layers of h 64, latent attention (4 heads; a query latent of 32, a key/value latent of 16,
// heads of 16 + 8 rotary, values of 16), the first layer a dense MLP of 128, the second a mixture
// of 4 experts of 32, top-2, with a shared expert of 32; under the megatron stack, one device,
// BF16, FlashAttention, selective recomputation (core_attn), 256 tokens.
TrainingSetup tiny_latent_mixture() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  ModelShape& shape = setup.custom_model;
  shape.id = kCustomModelId;
  shape.name = "Tiny latent mixture";
  shape.num_layers = 2;
  shape.hidden_size = 64;
  shape.ffn_hidden_size = 128;
  shape.num_attention_heads = 4;
  shape.num_key_value_heads = 4;
  shape.vocab_size = 256;
  shape.q_lora_rank = 32;
  shape.kv_lora_rank = 16;
  shape.qk_nope_head_dim = 16;
  shape.qk_rope_head_dim = 8;
  shape.v_head_dim = 16;
  shape.num_experts = 4;
  shape.num_experts_per_token = 2;
  shape.moe_ffn_hidden_size = 32;
  shape.shared_expert_ffn_hidden_size = 32;
  shape.num_dense_layers = 1;
  setup.sequence_length = 256;
  setup.stack = Stack::kMegatron;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.recompute = Recompute::kSelective;
  setup.logits = false;
  return setup;
}

const ModelShape& shape_of(const TrainingSetup& setup) { return setup.custom_model; }

std::vector<SavedTensor> tensors(const TrainingSetup& setup) {
  return llama_block_saved_tensors(shape_of(setup), setup, true);
}

// The mixture layer's rebuilt bytes, for the setup's 256 tokens.
double rebuilt_bytes(const TrainingSetup& setup) {
  return layer_activations(shape_of(setup), setup, 1, true, Pen()).mixture_working_bytes;
}

}  // namespace

TEST_CASE("recompute modules: the tiny mixture layer's tensors without them, by hand") {
  const TrainingSetup setup = tiny_latent_mixture();
  const std::vector<SavedTensor> all = tensors(setup);
  // Attention: the input norm (128 + 4), its output (128), the query latent (64 + 4 + 64), the
  // key/value latent (32 + 4 + 32), queries and keys of 4 · 24 (192 each), values and the output
  // of 4 · 16 (128 each): 1,100. The MLP: its norm (128 + 4), the router's input (128), the
  // experts' copies (2 · 64 · 2 = 256), gate, up and product (2 · 32 · 2 = 128 each), the shared
  // expert's three (64 each): 1,092. The routing (megatron_routing.cpp, Megatron-LM's defaults):
  // the router's top-k indices (2 · 8 = 16) and softmax over them (2 · 4 = 8), the permutation's
  // copy of the probabilities (4 · 2 = 8), its mask (4) and each copy's token index (2 · 8 = 16),
  // and the experts' probabilities (2 · 2 = 4): 56.
  CHECK(sum_of(all) == 1100 + 1092 + 56);
  CHECK(rebuilt_bytes(setup) == 0);
}

TEST_CASE("recompute modules: moe keeps the pre-MLP norm and its output and rebuilds the rest") {
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_moe = true;
  const std::vector<SavedTensor> kept = tensors(setup);
  // Dropped: the experts' copies 256, gate, up and product 384, the shared expert's 192, the
  // routing 56: 888.
  CHECK(sum_of(kept) == 2248 - 888);
  REQUIRE(find_tensor(kept, "router-input") != nullptr);
  CHECK(find_tensor(kept, "router-input")->saved_by == "the MoE layer's checkpoint (moe)");
  CHECK(find_tensor(kept, "mlp-norm-rstd") != nullptr);  // TENorm, outside the checkpoint
  CHECK(find_tensor(kept, "shared-product") == nullptr);
  CHECK(rebuilt_bytes(setup) == 256 * 888);
  // With moe_act too, the MoE layer's rebuild discards the product again and rebuilds it twice:
  // its whole and the product once more.
  setup.recompute_moe_act = true;
  CHECK(rebuilt_bytes(setup) == 256 * (888 + 128));
}

TEST_CASE("recompute modules: moe_act drops the product, shared_experts the shared expert's") {
  TrainingSetup act = tiny_latent_mixture();
  act.recompute_moe_act = true;
  CHECK(sum_of(tensors(act)) == 2248 - 128);
  CHECK(find_tensor(tensors(act), "product") == nullptr);
  CHECK(find_tensor(tensors(act), "up-output") != nullptr);  // the activation's input, kept
  // Rebuilt with grad into new outputs and copied into the freed storage: the product twice.
  CHECK(rebuilt_bytes(act) == 256 * 2 * 128);
  TrainingSetup shared = tiny_latent_mixture();
  shared.recompute_shared_experts = true;
  CHECK(sum_of(tensors(shared)) == 2248 - 192);
  CHECK(rebuilt_bytes(shared) == 256 * 192);
  // Both: the activation's rebuild is freed before the shared expert's runs, the larger counted.
  shared.recompute_moe_act = true;
  CHECK(rebuilt_bytes(shared) == 256 * 2 * 128);
}

TEST_CASE(
    "recompute modules: layernorm drops the unfused norms' outputs, each part rebuilding its "
    "own") {
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_layernorm = true;
  const std::vector<SavedTensor> kept = tensors(setup);
  // Latent attention's input norm's output (128) and the pre-MLP norm's (128), and their 1/RMS
  // (4 each: run under no_grad, the norms save nothing); the norms' inputs are the checkpoints'.
  CHECK(sum_of(kept) == 2248 - 264);
  CHECK(find_tensor(kept, "attention-norm-rstd") == nullptr);
  CHECK(find_tensor(kept, "qkv-input") == nullptr);
  CHECK(find_tensor(kept, "router-input") == nullptr);
  CHECK(find_tensor(kept, "attention-norm-input") != nullptr);
  // Each rebuild holds the output twice (the copy back into the freed storage and the new output,
  // kept to the checkpoint's own backward pass) and its 1/RMS: 2 · 128 + 4, the MLP's and then the
  // attention's, one at a time.
  CHECK(rebuilt_bytes(setup) == 256 * (2 * 128 + 4));
  // With the experts' activation too, the MLP's part holds the norm's rebuild (hooked on the MLP's
  // output) and the activation's inside it: 260 + 256, the larger part.
  setup.recompute_moe_act = true;
  CHECK(rebuilt_bytes(setup) == 256 * (260 + 2 * 128));
}

TEST_CASE("recompute modules: mla_up_proj keeps the latents and the rotary key") {
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_mla_up_proj = true;
  const std::vector<SavedTensor> kept = tensors(setup);
  // Dropped: the latents' 1/RMS (4 + 4) and normed copies (64 + 32), saved inside the function,
  // and its outputs, queries, keys and values (192 + 192 + 128): 616. Kept: the rotary key before
  // RoPE, 8 · 2 = 16.
  CHECK(sum_of(kept) == 2248 - 616 + 16);
  REQUIRE(find_tensor(kept, "rope-key") != nullptr);
  CHECK(find_tensor(kept, "rope-key")->bytes_per_token == 16);
  CHECK(find_tensor(kept, "key-value-norm-input")->saved_by ==
        "the up-projections' checkpoint (mla_up_proj)");
  CHECK(find_tensor(kept, "query") == nullptr);
  // Rebuilt: the outputs twice and what the function saves inside: 2 · 512 + 104.
  CHECK(rebuilt_bytes(setup) == 256 * (2 * 512 + 104));
}

TEST_CASE("recompute modules: mlp rebuilds the dense layers' MLP from its input, not a mixture's") {
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_mlp = true;
  const ModelShape& shape = shape_of(setup);
  // The mixture layer keeps all: mlp is the dense MLP's alone (TransformerLayer: not is_moe_layer).
  CHECK(sum_of(tensors(setup)) == 2248);
  const ActivationsPerLayer layer = layer_activations(shape, setup, 1, true, Pen());
  // The dense layer: its MLP's norm input (128, the checkpoint's input) kept; dropped its 1/RMS
  // (4), its output (128) and gate, up and product (3 · 128 · 2 = 768): 900 of the attention's
  // 1,100 + 1,028.
  CHECK(layer.dense_kept_per_token == 1100 + 128);
  CHECK(layer.dense_working_bytes == 256 * 900);
  // A full list of modules, as NVIDIA's Megatron-FSDP DeepSeek-V3 example writes it (mlp moe
  // mla_up_proj layernorm): the mixture layer keeps the norms' inputs, the latents, the rotary key
  // and the attention's output, and without core_attn FlashAttention's log-sum-exp (4 · 4).
  setup.recompute_moe = setup.recompute_mla_up_proj = setup.recompute_layernorm = true;
  setup.recompute = Recompute::kNone;
  CHECK(sum_of(tensors(setup)) == 128 + (64 + 32 + 16) + 128 + 16 + 128);
  // Its MLP part: the pre-MLP norm's rebuild (2 · 128 + 4) and the MoE layer's whole (888); its
  // attention part: the input norm's (260) and the up-projections' (1,128), the larger.
  CHECK(rebuilt_bytes(setup) == 256 * (260 + 1128));
}

TEST_CASE("recompute modules: the estimate counts the layers tensor by tensor under Korthikanti") {
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_moe = true;
  setup.activation_model = ActivationModel::kKorthikanti;
  const Estimate korthikanti = estimate_memory(setup);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const Estimate llama_block = estimate_memory(setup);
  REQUIRE_MESSAGE(korthikanti.answer.ok(), korthikanti.answer.message);
  CHECK(korthikanti.bytes[Term::kActivations] == llama_block.bytes[Term::kActivations]);
  CHECK(saved_tensors_of(setup).in_use);
}

TEST_CASE("recompute modules: refused where Megatron-LM refuses them or the counts do not reach") {
  const auto refused = [](const TrainingSetup& setup) {
    const Estimate estimate = estimate_memory(setup);
    CHECK_FALSE(estimate.answer.ok());
    return estimate.answer.setting + ": " + estimate.answer.message;
  };
  TrainingSetup setup = tiny_latent_mixture();
  setup.recompute_moe = true;
  setup.stack = Stack::kTorchtitan;
  CHECK(refused(setup).rfind("recompute-moe: --recompute-modules is Megatron-LM's", 0) == 0);
  setup.stack = Stack::kMegatron;
  setup.recompute = Recompute::kFull;
  CHECK(refused(setup).rfind("recompute-moe: Megatron-LM reads --recompute-modules", 0) == 0);
  setup = tiny_latent_mixture();
  setup.recompute_mla_up_proj = true;
  ModelShape& shape = setup.custom_model;
  shape.kv_lora_rank = shape.q_lora_rank = 0;
  shape.qk_nope_head_dim = shape.qk_rope_head_dim = shape.v_head_dim = 0;
  CHECK(refused(setup).rfind("recompute-mla-up-proj: --recompute-modules mla_up_proj is latent "
                             "attention's",
                             0) == 0);
  setup = tiny_latent_mixture();
  setup.recompute_layernorm = true;
  setup.precision = Precision::kFp8Mixed;
  CHECK(refused(setup).rfind("recompute-layernorm: Megatron-LM refuses moe_act and layernorm", 0) ==
        0);
  // mla_up_proj alone under delayed scaling Megatron-LM accepts; its FP8 inputs are not modelled.
  setup.recompute_layernorm = false;
  setup.recompute_mla_up_proj = true;
  CHECK(refused(setup).rfind("recompute-mla-up-proj: --recompute-modules mla_up_proj under FP8",
                             0) == 0);
  // Context parallelism's all-to-all exchanges the queries, keys and values it would drop.
  setup = tiny_latent_mixture();
  setup.recompute_mla_up_proj = true;
  setup.layout.context_parallel = 2;
  setup.cp_comm_type = CpCommType::kA2a;
  CHECK(refused(setup).rfind("recompute-mla-up-proj: --recompute-modules mla_up_proj beside", 0) ==
        0);
  setup.cp_comm_type = CpCommType::kP2p;
  CHECK(estimate_memory(setup).answer.ok());
  // A top-1 mixture's norm output is the experts' input in the block's count.
  setup = tiny_latent_mixture();
  setup.recompute_layernorm = true;
  setup.custom_model.num_experts_per_token = 1;
  CHECK(refused(setup).rfind("recompute-layernorm: --recompute-modules layernorm on a top-1", 0) ==
        0);
  // So is one padded to a capacity of 1, which routes no copies either.
  setup.capacity_factor = 1;
  CHECK(refused(setup).rfind("recompute-layernorm: --recompute-modules layernorm on a top-1", 0) ==
        0);
}

}  // namespace recompute_modules_test

namespace recompute_modules_test {

TEST_CASE("latent attention's latents are split over t under Megatron-LM's sequence parallelism") {
  // The duplicated down-projections read the input norm's [s/t] output, so the latents, their
  // norms' statistics and normed copies are T/t tokens a rank; the rotary key before RoPE, which
  // mla_up_proj keeps, is gathered to all T.
  TrainingSetup setup = tiny_latent_mixture();
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.data_parallel = 1;
  const std::vector<SavedTensor> split = tensors(setup);
  CHECK(find_tensor(split, "query-norm-input")->bytes_per_token == 32 * 2 / 2);
  CHECK(find_tensor(split, "key-value-latent")->bytes_per_token == 16 * 2 / 2);
  CHECK(find_tensor(split, "key-value-norm-rstd")->bytes_per_token == 4.0 / 2);
  setup.recompute_mla_up_proj = true;
  CHECK(find_tensor(tensors(setup), "rope-key")->bytes_per_token == 8 * 2);
  // Without sequence parallelism every rank holds all T tokens.
  setup.layout.sequence_parallel = false;
  CHECK(find_tensor(tensors(setup), "query-norm-input")->bytes_per_token == 32 * 2);
}

}  // namespace recompute_modules_test

namespace recompute_modules_test {

TEST_CASE("recompute modules: each module of kRecomputeModules is a setting that sets its switch") {
  // The table names each module once; its setting is "recompute-" and the name, '_' as '-'.
  for (const RecomputeModule& module : kRecomputeModules) {
    std::string id = std::string("recompute-") + module.name;
    std::replace(id.begin(), id.end(), '_', '-');
    CAPTURE(id);
    REQUIRE(find_setting(id) != nullptr);
    TrainingSetup setup = tiny_latent_mixture();
    const SettingChange change = change_setting(setup, id, "on");
    REQUIRE_MESSAGE(change.answer.ok(), change.answer.message);
    CHECK(change.setup.*module.member);
    CHECK(recomputes_modules(change.setup));
    CHECK(recompute_modules_text(change.setup) == module.name);
  }
}

}  // namespace recompute_modules_test
