// MiniMax's lightning attention (issue 45) as transformers' minimax builds and trains it:
// lightning and full-attention layers over Mixtral's mixture, counted by hand on a tiny shape,
// MiniMax-M1 read to its checkpoint's total, the lightning layer's saved tensors pinned to what
// autograd keeps (the formulas a helper measured on CPU, tensor for tensor, on 48 shapes), and what
// trainmem cannot count refused by name.
#include <doctest/doctest.h>

#include <string>

#include "config_fixtures.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

// layer_kind_tensors, for the lightning layer's own tensors.
#include "activations/layer.hpp"
#include "estimate/stage.hpp"

using namespace trainmem;
using namespace trainmem::fixtures;

namespace minimax_test {

namespace {

// A tiny minimax: h 8, a lightning layer then a full-attention one, 2 heads of 4 and 1 key/value
// head, blocks of 4 tokens, 2 experts of 4 (top 1), a vocabulary of 10, untied.
std::string tiny_minimax(const std::string& more = "") {
  std::string text = R"({"model_type": "minimax", "hidden_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 4,
    "vocab_size": 10, "num_local_experts": 2, "num_experts_per_tok": 1, "block_size": 4,
    "tie_word_embeddings": false)";
  if (!more.empty()) text += ", " + more;
  return text + "}";
}

std::string refusal(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

// The lightning layer's own tensors, per token, over `tokens`-token sequences, `sequences` a
// micro-batch, recomputed in full (no cache) or not.
double lightning_bytes(int tokens, int sequences, bool recomputed) {
  const ModelShape shape = parsed(tiny_minimax(R"("layer_types": ["linear_attention",
      "full_attention"])"));
  TrainingSetup setup = setup_of(shape);
  setup.sequence_length = tokens;
  setup.micro_batch_sequences = sequences;
  if (recomputed) setup.recompute = Recompute::kFull;
  return bytes_of(layer_kind_tensors(shape, setup, layer_stack_of(setup), true, 'L'),
                  {"linear-input", "qkv-pre-activation", "block-qkv", "block-state-values", "qkv",
                   "decayed-keys", "decayed-queries", "block-scores", "block-states",
                   "lightning-norm-input", "lightning-norm-rstd", "lightning-norm-normed",
                   "lightning-norm-output", "output-gate", "linear-output"});
}

}  // namespace

TEST_CASE("a tiny MiniMax counts its lightning, attention and mixture layers by hand") {
  // Lightning: qkv_proj 8 × 24, output_gate 8 × 8, out_proj 8 × 8, its norm 8 (328); attention:
  // q and o 8 × 8, k and v 8 × 4 (192); the mixture: 2 experts of 3 × 8 × 4 and the router 8 × 2
  // (208); two norms a layer; the embedding, lm_head and final norm.
  const ModelShape shape = parsed(tiny_minimax());
  // Without layer_types, MiniMaxConfig's alternation: full attention on layer 0, lightning on 1.
  CHECK(shape.hybrid_layers == "AL");
  CHECK(count_parameters(shape) == (328 + 208 + 16) + (192 + 208 + 16) + 80 + 80 + 8);
  CHECK(count_parameters(shape) == 1136);
  const Estimate estimate = estimate_memory(setup_of(shape));
  CHECK_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("MiniMax-M1 reads to its checkpoint's total: 70 lightning and 10 full-attention layers") {
  // MiniMax-AI/MiniMax-M1's config.json (4917af1) in transformers' minimax form (layer_types from
  // its attn_type_list, as the -hf checkpoints give them). Its model.safetensors.index.json holds
  // 912,210,767,872 bytes: 456,089,655,296 parameters in BF16 with the 80 routers' 196,608 each
  // stored in FP32, 2 bytes more. By hand: 70 lightning layers (6,144 × (3 + 1) × 8,192 +
  // 8,192 × 6,144 + 8,192), 10 attention layers (6,144 × (8,192 + 2 × 1,024) + 8,192 × 6,144), in
  // each the mixture of 32 experts of 3 × 6,144 × 9,216 and its router 6,144 × 32 and two norms;
  // the embedding and lm_head 200,064 × 6,144 each and the final norm.
  const double lightning = 6144.0 * 4 * 8192 + 8192.0 * 6144 + 8192;
  const double attention = 6144.0 * (8192 + 2 * 1024) + 8192.0 * 6144;
  const double mixture = 32 * 3 * 6144.0 * 9216 + 6144.0 * 32 + 2 * 6144;
  const double total = 70 * lightning + 10 * attention + 80 * mixture + 2 * 200064.0 * 6144 + 6144;
  CHECK(total == 456089655296.0);
  CHECK(2 * total + 80 * 196608.0 * 2 == 912210767872.0);
  const ModelShape shape = parsed(
      R"({"architectures": ["MiniMaxForCausalLM"], "attention_dropout": 0.0, "bos_token_id": null,
    "eos_token_id": null, "head_dim": 128, "hidden_act": "silu", "hidden_size": 6144,
    "initializer_range": 0.02, "intermediate_size": 9216, "max_position_embeddings": 10240000,
    "model_type": "minimax", "num_attention_heads": 64, "num_experts_per_tok": 2,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "num_local_experts": 32,
    "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 10000000,
    "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "shared_intermediate_size": 0,
    "shared_moe_mode": "sigmoid", "sliding_window": null, "tie_word_embeddings": false,
    "transformers_version": "4.45.2", "use_cache": true, "vocab_size": 200064, "layer_types":
    ["linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention",
    "linear_attention", "linear_attention", "linear_attention", "linear_attention",
    "linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "block_size": 256, "full_attn_alpha_factor": 3.5565588200778455, "full_attn_beta_factor":
    1.0, "linear_attn_alpha_factor": 3.5565588200778455, "linear_attn_beta_factor": 1.0,
    "mlp_alpha_factor": 3.5565588200778455, "mlp_beta_factor": 1.0})");
  CHECK(count_parameters(shape) == total);
  CHECK(layers_of_kinds_between(shape, 0, 80, "L") == 70);
}

TEST_CASE("a lightning layer saves what autograd keeps of its blocks, by the measured formulas") {
  // h 8, H 2 heads of d 4 (H·d 8), blocks of B 4, sequences of s 8 (2 blocks). Measured without a
  // cache, for 2 sequences and more: 2h + 30·H·d + 2·H·B + 2·H·d²/B + 4 − 6·H·d·B/s; for one,
  // 2h + 28·H·d + 2·H·B + 2·H·d²/B + 4 − 4·H·d·B/s.
  CHECK(lightning_bytes(8, 2, true) == 16 + 240 + 16 + 16 + 4 - 24);
  CHECK(lightning_bytes(8, 1, true) == 16 + 224 + 16 + 16 + 4 - 16);
  // Without gradient checkpointing the model's cache keeps the last block's state update (its V
  // and decayed keys, 2·H·d·B/s each, but for one sequence, whose V is SiLU's output) and the
  // final state, 2·H·d²/s.
  CHECK(lightning_bytes(8, 2, false) == 268 + 8 + 8 + 8);
  CHECK(lightning_bytes(8, 1, false) == 260 + 8 + 8);
  // A last block of 2 tokens (s 10): its scores 2·H·2² where a full block's are 2·H·4².
  CHECK(lightning_bytes(10, 2, true) ==
        doctest::Approx(16 + 48 + 48 + 2 * 8 * 8.0 / 10 + 2 * 8 * 8.0 / 10 + 2 * 8 * 6.0 / 10 +
                        2 * 2 * (16 + 16 + 4.0) / 10 + 2 * 2 * 16 * 3.0 / 10 + 32 + 4 + 4 * 16));
}

TEST_CASE("minimax fields trainmem cannot count are refused by name") {
  CHECK(refusal(tiny_minimax(R"("attn_type_list": [1, 0])"))
            .find("'attn_type_list' is the remote "
                  "code's list") != std::string::npos);
  CHECK(refusal(tiny_minimax(R"("shared_intermediate_size": 8)")) ==
        "config.json: 'shared_intermediate_size' must be 0: transformers' minimax builds no "
        "shared expert; it is 8.");
  std::string one = tiny_minimax();
  one.replace(one.find(R"("num_local_experts": 2)"), 22, R"("num_local_experts": 1)");
  CHECK(refusal(one) ==
        "config.json: 'num_local_experts' must be from 2 to 1,024: every MiniMax layer is a "
        "mixture of experts; it is 1.");
  std::string remote = tiny_minimax();
  remote.replace(remote.find(R"("minimax")"), 9, R"("minimax_m1")");
  CHECK(refusal(remote).find("whose lightning attention has no training path") !=
        std::string::npos);
  TrainingSetup setup = setup_of(parsed(tiny_minimax()));
  REQUIRE(estimate_memory(setup).answer.ok());
  setup.layout.tensor_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "tp");
}

}  // namespace minimax_test
