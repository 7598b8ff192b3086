// Kimi Linear's hybrid (issue 45): Kimi Delta Attention layers beside latent attention ones over
// DeepSeek-V3's experts and a dense first layer, counted by hand on a tiny shape, read from the
// published config.json to the count its card rounds, KDA's saved tensors pinned by hand from
// KimiLinearDeltaAttention and fla's chunk_kda, and what no framework defines for it refused by
// name.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config_fixtures.hpp"
#include "hub_configs.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;
using namespace trainmem::fixtures;

namespace kimi_linear_test {

namespace {

ConfigParse read(const std::string& text) { return parse_hf_config(text); }

// A tiny kimi_linear: h 8, 4 layers (KDA, KDA, latent attention, KDA: numbered from 1, kda_layers
// [1, 2, 4] and full_attn_layers [3]); latent attention of 2 heads, no query latent, a key/value
// latent of 4, 2 + 2 query/key and 2 value dimensions a head; KDA of 2 heads of 4 with a
// convolution of 3; the first layer a dense MLP of 12, the others 4 experts of 6 (top 2) and one
// shared; a vocabulary of 10, untied.
constexpr const char* kTinyLinear = R"("linear_attn_config": {"num_heads": 2, "head_dim": 4,
    "short_conv_kernel_size": 3, "kda_layers": [1, 2, 4], "full_attn_layers": [3]})";
std::string tiny_kimi(const std::string& more = "", const std::string& linear = kTinyLinear) {
  std::string text = R"({"model_type": "kimi_linear", "_name_or_path": "Tiny", "hidden_size": 8,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 2,
    "intermediate_size": 12, "moe_intermediate_size": 6, "num_experts": 4,
    "num_experts_per_token": 2, "num_shared_experts": 1, "first_k_dense_replace": 1,
    "q_lora_rank": null, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
    "v_head_dim": 2, "vocab_size": 10, "tie_word_embeddings": false, "hidden_act": "silu")";
  for (const std::string& part : {linear, more}) {
    if (!part.empty()) text += ", " + part;
  }
  return text + "}";
}

// By hand, per layer:
//   latent attention  q_proj 8 × 2·4 = 64, kv_a_proj 8 × (4 + 2) = 48, kv_a_layernorm 4,
//                     kv_b_proj 4 × 2·(2 + 2) = 32, o_proj 2·2 × 8 = 32
//   KDA               q, k and v 3 × 8 × 8 = 192, conv 24 × 3 = 72, f_a 8 × 4 = 32, f_b 4 × 8 = 32,
//                     dt_bias 8, A_log 2, b_proj 8 × 2 = 16, g_a 32, g_b 32, o_norm 4,
//                     o_proj 8 × 8 = 64
//   dense MLP         3 × 8 × 12 = 288
//   mixture           experts 4 × 3 × 8 × 6 = 576, shared 3 × 8 × 6 = 144, router 8 × 4 = 32, its
//                     bias 4
//   norms             2 × 8
constexpr double kLatent = 64 + 48 + 4 + 32 + 32;                            // 180
constexpr double kKda = 192 + 72 + 32 + 32 + 8 + 2 + 16 + 32 + 32 + 4 + 64;  // 486
constexpr double kDense = 288;
constexpr double kMixture = 576 + 144 + 32 + 4;  // 756
constexpr double kTinyKimi =
    80 + 80 + 8 + (kKda + kDense + 16) + 2 * (kKda + kMixture + 16) + (kLatent + kMixture + 16);

// The KDA mixer's own tensors (after the input norm, before the MLP's norm).
double mixer_bytes(const std::vector<SavedTensor>& tensors) {
  return bytes_of(tensors, {"linear-input",       "conv-input",        "forget-gate-latent",
                            "softplus-input",     "softplus-output",   "beta",
                            "linear-query",       "linear-query-rstd", "linear-key",
                            "linear-key-rstd",    "linear-value",      "decay",
                            "decay-cumsum",       "intra-chunk-qk",    "wy-inverse",
                            "output-gate-latent", "gated-norm-input",  "gated-norm-rstd",
                            "gated-norm-normed",  "gated-norm-gate",   "gated-norm-weighted",
                            "gated-norm-silu",    "linear-output"});
}

}  // namespace

TEST_CASE("a tiny Kimi Linear counts its KDA, latent attention, dense and mixture layers by hand") {
  const ModelShape shape = parsed(tiny_kimi());
  CHECK(shape.hybrid_layers == "LLAL");
  CHECK(shape.kimi_delta_attention);
  CHECK(shape.num_dense_layers == 1);
  CHECK(std::string(linear_layers_name(shape)) == "Kimi Delta Attention layers");
  CHECK(kKda == 486);
  CHECK(count_parameters(shape) == kTinyKimi);
  // A token passes 2 of the 4 experts: 2 × 144 fewer in each of the 3 mixture layers.
  CHECK(count_active_parameters(shape) == kTinyKimi - 3 * 2 * 144);
  // The layer kinds from layer_types, as KimiLinearConfig reads them over linear_attn_config's.
  CHECK(parsed(tiny_kimi(R"("layer_types": ["full_attention", "linear_attention",
      "linear_attention", "linear_attention"])"))
            .hybrid_layers == "ALLL");
  // Without either, KimiLinearConfig's every 4th layer full attention.
  CHECK(parsed(tiny_kimi("", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4,
      "short_conv_kernel_size": 3})"))
            .hybrid_layers == "LLLA");
  // KimiLinearConfig's aliases (attribute_map) read as the hub's names.
  std::string aliased = tiny_kimi();
  aliased.replace(aliased.find(R"("num_experts_per_token")"), 23, R"("num_experts_per_tok")");
  CHECK(count_parameters(parsed(aliased)) == kTinyKimi);
}

TEST_CASE("Kimi Linear 48B-A3B's published config reads to its card's 48B and 3B active") {
  const ModelShape shape = parsed(hub_config("kimi-linear-48b-a3b"));
  CHECK(shape.hybrid_layers == "LLLALLLALLLALLLALLLALLLALLA");
  CHECK(linear_attention_layers_between(shape, 0, 27) == 20);
  CHECK(shape.max_positions == 1048576);
  const double total = count_parameters(shape);
  CHECK(total == 49122681728.0);
  CHECK(count_parameters(*find_preset("kimi-linear-48b-a3b")) == total);
  CHECK(count_active_parameters(shape) == 3484459904.0);
  // By hand: embedding and head 2 × 163,840 × 2,304; 20 KDA mixers of 39,514,272 (q, k, v
  // 3 × 2,304 × 4,096; conv 12,288 × 4; the gates' 2 × (2,304 × 128 + 128 × 4,096); dt_bias
  // 4,096; A_log 32; b_proj 2,304 × 32; o_norm 128; o_proj 4,096 × 2,304); 7 latent attention
  // layers of 29,114,880 (q_proj 2,304 × 6,144, kv_a 2,304 × 576, its norm 512, kv_b
  // 512 × 8,192, o_proj 4,096 × 2,304); one dense MLP 3 × 2,304 × 9,216; 26 mixtures of 256 + 1
  // experts of 3 × 2,304 × 1,024 with a router of 2,304 × 256 and its bias; 55 norms of 2,304.
  const double kda = 3 * 2304.0 * 4096 + 12288.0 * 4 + 2 * (2304.0 * 128 + 128.0 * 4096) + 4096 +
                     32 + 2304.0 * 32 + 128 + 4096.0 * 2304;
  const double latent = 2304.0 * 6144 + 2304.0 * 576 + 512 + 512.0 * 8192 + 4096.0 * 2304;
  CHECK(kda == 39514272.0);
  CHECK(latent == 29114880.0);
  CHECK(2 * 163840.0 * 2304 + 20 * kda + 7 * latent + 3 * 2304.0 * 9216 +
            26 * (257 * 3 * 2304.0 * 1024 + 2304.0 * 256 + 256) + 55 * 2304.0 ==
        total);
  // A KDA mixer at this shape keeps 202,240 B a token (docs/activations.md).
  const SavedTensorList list = saved_tensors_of(setup_of(shape));
  CHECK(mixer_bytes(list.tensors) == 202240);
  // The card's "48B total, 3B activated" round the counts beside the embedding and head.
  const double outside = 2 * 163840.0 * 2304;
  CHECK(std::round((total - outside) / 1e9) == 48);
  CHECK(std::round((3484459904.0 - outside) / 1e9) == 3);
}

TEST_CASE("a KDA layer saves what KimiLinearDeltaAttention and fla's chunk_kda keep, by hand") {
  // Per token, H = 2 heads of d = 4, h = 8: the projections' input h (BF16); q, k and v before
  // their convolutions 3·H·d; the forget gate's latent d; softplus's FP32 input and output H·d
  // each; β in FP32, H; the kernel's L2-normalised q and k, H·d each, with FP32 1/norms, H each;
  // v, H·d; the decay and its cumulative sum, FP32 H·d each; Aqk and Akk, 64·H each; the output
  // gate's latent d; the gated norm's FP32 input, 1/RMS, BF16 normalised copy, FP32 gate, BF16
  // weighted product and FP32 SiLU; o_proj's input H·d.
  const ModelShape shape = parsed(tiny_kimi());
  const SavedTensorList list = saved_tensors_of(setup_of(shape));
  REQUIRE(list.in_use);
  const double expected = 2 * 8 + 2 * 24 + 2 * 4 + 4 * 8 + 4 * 8 + 4 * 2 + 2 * 8 + 4 * 2 + 2 * 8 +
                          4 * 2 + 2 * 8 + 4 * 8 + 4 * 8 + 2 * 64 * 2 + 2 * 64 * 2 + 2 * 4 +
                          (4 * 8 + 4 * 2 + 2 * 8 + 4 * 8 + 2 * 8 + 4 * 8) + 2 * 8;
  CHECK(expected == 944);
  CHECK(mixer_bytes(list.tensors) == expected);
  // The estimate names both kinds and what each keeps a token.
  const Estimate estimate = estimate_memory(setup_of(shape));
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  bool noted = false;
  for (const std::string& note : estimate.notes) {
    noted =
        noted || note.rfind("Of its 4 layers, 3 are Kimi Delta Attention layers, each keeping " +
                                format_count(list.bytes_per_token) + " B a token, and 1 ",
                            0) == 0;
  }
  CHECK(noted);
}

TEST_CASE("Kimi Linear's dense first layer counts as the larger of its kinds, not left out") {
  // Every layer is counted as the larger of a dense and a mixture layer, each of both kinds: a
  // dense MLP of 400 keeps more a token than the mixture's experts of 6 (top 2) and shared 6,
  // and so the model's activations grow with it; a dense MLP of 1 leaves them the mixture's.
  const ModelShape shape = parsed(tiny_kimi());
  const Estimate mixture_only = estimate_memory(setup_of(parsed(tiny_kimi(
      "", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4, "short_conv_kernel_size": 3,
      "kda_layers": [1, 2, 4], "full_attn_layers": [3]}, "dense_ffn_hidden": 1)"))));
  const Estimate wide_dense = estimate_memory(setup_of(parsed(tiny_kimi(
      "", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4, "short_conv_kernel_size": 3,
      "kda_layers": [1, 2, 4], "full_attn_layers": [3]}, "dense_ffn_hidden": 400)"))));
  REQUIRE(mixture_only.answer.ok());
  REQUIRE(wide_dense.answer.ok());
  CHECK(wide_dense.bytes[Term::kActivations] > mixture_only.bytes[Term::kActivations]);
  CHECK(estimate_memory(setup_of(shape)).answer.ok());
}

TEST_CASE("Kimi Delta Attention's tensor and context parallelism are refused: none is defined") {
  TrainingSetup setup = setup_of(parsed(tiny_kimi()));
  setup.layout.tensor_parallel = 2;
  const Estimate tp = estimate_memory(setup);
  CHECK(tp.answer.setting == "tp");
  CHECK(tp.answer.message ==
        "Tiny's Kimi Delta Attention layers have no tensor-parallel layout in any framework "
        "trainmem models (KimiLinearConfig's plan splits the MLPs alone); choose t 1.");
  setup.layout.tensor_parallel = 1;
  setup.layout.context_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "cp");
  // Pipeline and expert parallelism are counted.
  setup.layout.context_parallel = 1;
  setup.layout.pipeline_parallel = 2;
  setup.layout.expert_parallel = 2;
  setup.layout.data_parallel = 2;
  const Estimate split = estimate_memory(setup);
  CHECK_MESSAGE(split.answer.ok(), split.answer.message);
}

TEST_CASE("kimi_linear fields trainmem cannot count are refused by name") {
  CHECK(read(tiny_kimi("", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4,
      "kda_layers": [1, 2, 4], "full_attn_layers": [3], "gate_lower_bound": -5.0})"))
            .answer.message ==
        "config.json: 'linear_attn_config.gate_lower_bound' is not read: trainmem reads Kimi "
        "Linear's num_heads, head_dim, short_conv_kernel_size, kda_layers and full_attn_layers.");
  CHECK(read(tiny_kimi("", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4,
      "kda_layers": [1, 2], "full_attn_layers": [3]})"))
            .answer.message ==
        "config.json: 'linear_attn_config' must list in kda_layers and full_attn_layers each "
        "layer from 1 to 4 once (KimiLinearConfig numbers them from 1); layer 4 is in neither.");
  CHECK(read(tiny_kimi("", R"("linear_attn_config": {"num_heads": 2, "head_dim": 4,
      "kda_layers": [0, 1, 2], "full_attn_layers": [3]})"))
            .answer.message ==
        "config.json: 'linear_attn_config' must list in kda_layers and full_attn_layers each "
        "layer from 1 to 4 once (KimiLinearConfig numbers them from 1); 0 is not.");
  CHECK(read(tiny_kimi(R"("mla_use_output_gate": true)"))
            .answer.message.find("'mla_use_output_gate'") != std::string::npos);
  CHECK(read(tiny_kimi(R"("attn_res_block_size": 2)")).answer.message ==
        "config.json: 'attn_res_block_size' must be 0: trainmem does not count block attention "
        "residuals (Kimi K3's); it is 2.");
  std::string one_expert = tiny_kimi();
  one_expert.replace(one_expert.find(R"("num_experts": 4)"), 16, R"("num_experts": 1)");
  CHECK(read(one_expert).answer.message ==
        "config.json: 'num_experts' must be from 2 to 1,024: Kimi Linear's layers past "
        "first_k_dense_replace are mixtures; it is 1.");
  std::string situ = tiny_kimi();
  situ.replace(situ.find(R"("silu")"), 6, R"("situ")");
  CHECK(read(situ).answer.message.find("'hidden_act' must be one of") != std::string::npos);
  // A KDA field outside Kimi Linear.
  ModelShape shape = parsed(tiny_kimi());
  shape.hybrid_layers.clear();
  CHECK(model_shape_problem(shape).find(
            "Kimi Delta Attention, Mamba-2 and Mamba belong to a hybrid's second kind") !=
        std::string::npos);
}

}  // namespace kimi_linear_test
