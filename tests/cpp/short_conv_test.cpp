// LFM2's hybrid (issue 45): short-convolution layers beside full-attention ones (and LFM2-MoE's,
// over dense first layers and mixtures of experts), counted by hand
// on a tiny shape, read from the published config.json files to the published totals, the
// mixer's saved tensors pinned by hand from Lfm2ShortConv and causal-conv1d, the kinds stacked on
// pipeline stages, and the layouts no framework defines for them refused by name.
#include <doctest/doctest.h>

#include <algorithm>
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

namespace short_conv_test {

namespace {

ConfigParse read(const std::string& text) { return parse_hf_config(text); }

// A tiny lfm2: h 8, 4 layers (conv, full attention, conv, conv), 2 heads of 4 and 1 key/value
// head, block_ff_dim 24 (Lfm2MLP: int(2·24/3) = 16, rounded up to a multiple of 6: 18), a
// convolution of 3, a vocabulary of 10, tied.
constexpr const char* kTinyLayerTypes =
    R"("layer_types": ["conv", "full_attention", "conv", "conv"])";
std::string tiny_lfm2(const std::string& more = "", const std::string& layers = kTinyLayerTypes) {
  std::string text = R"({"model_type": "lfm2", "_name_or_path": "Tiny", "hidden_size": 8,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
    "block_ff_dim": 24, "block_multiple_of": 6, "vocab_size": 10, "conv_L_cache": 3)";
  for (const std::string& part : {layers, more}) {
    if (!part.empty()) text += ", " + part;
  }
  return text + "}";
}

// By hand, per layer:
//   attention   q_proj 8 × 8 = 64, k_proj and v_proj 8 × 4 = 32 each, out_proj 64, q/k norms 4 + 4
//   short conv  in_proj 8 × 24 = 192, conv1d 8 × 3 = 24, out_proj 64
//   MLP         w1, w3 and w2: 3 × 8 × 18 = 432
//   norms       operator_norm and ffn_norm, 2 × 8
constexpr double kAttention = 64 + 32 + 32 + 64 + 8;  // 200
constexpr double kShortConv = 192 + 24 + 64;          // 280
constexpr double kMlp = 432;
constexpr double kTinyLfm2 = 80 + (kAttention + kMlp + 16) + 3 * (kShortConv + kMlp + 16) + 8;

// The short convolution's own tensors (after the input norm, before the MLP's norm).
double mixer_bytes(const std::vector<SavedTensor>& tensors) {
  return bytes_of(
      tensors, {"linear-input", "conv-projections", "conv-input", "conv-output", "linear-output"});
}

}  // namespace

TEST_CASE("a tiny LFM2 counts its attention, short-convolution and MLP layers by hand") {
  const ModelShape shape = parsed(tiny_lfm2());
  CHECK(shape.hybrid_layers == "LALL");
  CHECK(shape.ffn_hidden_size == 18);
  CHECK(shape.short_conv_kernel == 3);
  CHECK(shape.tied_embeddings);
  CHECK(shape.qk_norm);
  CHECK(count_parameters(shape) == kTinyLfm2);
  CHECK(count_parameters(shape) == 2920);
  // conv_bias: in_proj's 24, the convolution's 8 and out_proj's 8 in each of 3 layers.
  CHECK(count_parameters(parsed(tiny_lfm2(R"("conv_bias": true)"))) == kTinyLfm2 + 3 * 40);
  // full_attn_idxs where layer_types is absent, as Lfm2Config reads it.
  CHECK(parsed(tiny_lfm2(R"("full_attn_idxs": [1])", "")).hybrid_layers == "LALL");
  // Neither: every layer full attention, no hybrid.
  const ModelShape neither = parsed(tiny_lfm2("", ""));
  CHECK(neither.hybrid_layers.empty());
  CHECK(count_parameters(neither) == 80 + 4 * (kAttention + kMlp + 16) + 8);
  // The width unadjusted, and without the multiplier's rounding (block_ffn_dim_multiplier null).
  CHECK(parsed(tiny_lfm2(R"("block_auto_adjust_ff_dim": false)")).ffn_hidden_size == 24);
  CHECK(parsed(tiny_lfm2(R"("block_ffn_dim_multiplier": null)")).ffn_hidden_size == 16);
  // tie_embedding, the original configs' key, wins over tie_word_embeddings.
  CHECK_FALSE(
      parsed(tiny_lfm2(R"("tie_word_embeddings": true, "tie_embedding": false)")).tied_embeddings);
}

TEST_CASE("LFM2's published configs read to their published totals") {
  // The safetensors totals of LiquidAI/LFM2-350M, -700M and -1.2B (the cards' 350M, 700M and
  // 1.2B; 354,483,968, 742,489,344 and 1,170,340,608 parameters): 10 short-convolution and 6
  // full-attention layers each.
  struct Published {
    const char* id;
    double total;
  };
  for (const Published& published :
       {Published{"lfm2-350m", 354483968.0}, Published{"lfm2-700m", 742489344.0},
        Published{"lfm2-1.2b", 1170340608.0}}) {
    const char* id = published.id;
    const double total = published.total;
    CAPTURE(id);
    const ModelShape shape = parsed(hub_config(id));
    CHECK(shape.hybrid_layers == "LLALLALLALALALAL");
    CHECK(linear_attention_layers_between(shape, 0, 16) == 10);
    CHECK(count_parameters(shape) == total);
    CHECK(count_parameters(*find_preset(id)) == total);
  }
  // 1.2B by hand: embedding 65,536 × 2,048; an MLP of 8,192 (int(2 · 12,288 / 3)) in each of 16
  // layers; 10 convolutions (in_proj 2,048 × 6,144, conv1d 2,048 × 3, out_proj 2,048²); 6
  // attention layers (q and out 2,048², k and v 2,048 × 512, q/k norms 64 each); 33 norms.
  CHECK(65536.0 * 2048 + 16 * 3 * 2048.0 * 8192 + 10 * (2048.0 * 6144 + 2048 * 3 + 2048.0 * 2048) +
            6 * (2 * 2048.0 * 2048 + 2 * 2048.0 * 512 + 128) + 33 * 2048.0 ==
        1170340608.0);
}

TEST_CASE("a short-convolution layer saves what Lfm2ShortConv and causal-conv1d keep, by hand") {
  // Per token, BF16: in_proj's input h, its output B, C and x (3h, kept by the products), B·x
  // (the convolution's input, h), the convolution's output (h), C·conv (out_proj's input, h).
  const ModelShape shape = parsed(tiny_lfm2());
  TrainingSetup setup = setup_of(shape);
  const SavedTensorList list = saved_tensors_of(setup);
  REQUIRE(list.in_use);
  CHECK(mixer_bytes(list.tensors) == 2 * (8 + 24 + 8 + 8 + 8));
  CHECK(mixer_bytes(list.tensors) == 14 * 8);
  // The estimate: 3 short-convolution layers and one attention layer, one stage, their sum.
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  REQUIRE(!estimate.notes.empty());
  bool noted = false;
  for (const std::string& note : estimate.notes) {
    noted = noted || note.rfind("Of its 4 layers, 3 are short-convolution layers, each keeping " +
                                    format_count(list.bytes_per_token) +
                                    " B a token, and 1 "
                                    "full-attention layer, ",
                                0) == 0;
  }
  CHECK(noted);
}

TEST_CASE(
    "an LFM2 pipeline whose stages hold another mix than the model's counts the larger kind") {
  const ModelShape shape = parsed(tiny_lfm2());
  TrainingSetup setup = setup_of(shape);
  // Two stages: "LA" and "LL", neither the model's 3 : 1.
  CHECK_FALSE(hybrid_stages_hold_model_mix(shape, [] {
    ParallelLayout layout;
    layout.pipeline_parallel = 2;
    return layout;
  }()));
  setup.layout.pipeline_parallel = 2;
  const Estimate split = estimate_memory(setup);
  REQUIRE_MESSAGE(split.answer.ok(), split.answer.message);
  // LoRA counts its adapters on such stages no more: refused, naming the pipeline.
  setup.lora_rank = 2;
  CHECK(estimate_memory(setup).answer.setting == "pp");
}

TEST_CASE(
    "tensor and context parallelism for short convolutions are refused: no framework splits them") {
  // Two key/value heads, so that t = 2 divides every width attention and the MLP have.
  std::string text = tiny_lfm2();
  text.replace(text.find(R"("num_key_value_heads": 1)"), 24, R"("num_key_value_heads": 2)");
  TrainingSetup setup = setup_of(parsed(text));
  REQUIRE(estimate_memory(setup).answer.ok());
  setup.layout.tensor_parallel = 2;
  const Estimate tp = estimate_memory(setup);
  CHECK(tp.answer.setting == "tp");
  CHECK(tp.answer.message ==
        "Tiny's short-convolution layers have no tensor-parallel layout in any framework "
        "trainmem models (transformers' Lfm2Config gives no plan); choose t 1.");
  setup.layout.tensor_parallel = 1;
  setup.layout.context_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "cp");
}

TEST_CASE("LFM2 fields elsewhere, and lfm2 fields trainmem cannot count, are refused by name") {
  CHECK(read(R"({"model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 2,
                 "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10,
                 "conv_L_cache": 3})")
            .answer.message ==
        "config.json: 'conv_L_cache' (short-convolution layers) is not read for this model_type: "
        "trainmem reads it for lfm2 and lfm2_moe.");
  CHECK(read(tiny_lfm2(R"("num_experts": 4)")).answer.message ==
        "config.json: 'num_experts' is not read for an lfm2 config: Lfm2DecoderLayer builds one "
        "MLP a layer (a mixture of experts is model_type lfm2_moe).");
  std::string wrong = tiny_lfm2();
  wrong.replace(wrong.find(R"("full_attention")"), 16, R"("linear_attention")");
  CHECK(read(wrong).answer.message ==
        "config.json: 'layer_types' must list num_hidden_layers (4) entries, each "
        "\"full_attention\" or \"conv\"; entry 1 is \"linear_attention\".");
  CHECK(read(tiny_lfm2(R"("block_ffn_dim_multiplier": "1.0")")).answer.message ==
        "config.json: 'block_ffn_dim_multiplier' must be a number above 0 and at most 1,000, or "
        "null; it is \"1.0\".");
}

TEST_CASE("a hybrid's layer list must name each layer, first kind or second") {
  ModelShape shape = parsed(tiny_lfm2());
  shape.hybrid_layers = "LAX";
  CHECK(model_shape_problem(shape) ==
        "A hybrid's layer kinds (hybridLayers) must be one character a layer for each of its "
        "num_hidden_layers (4), 'A' for the first kind or 'L' for the second, 'a', 'l' or 'F' "
        "for their mixer or MLP alone; they are 3 characters, \"LAX\".");
  shape.hybrid_layers = "LALL";
  CHECK(model_shape_problem(shape).empty());
}

namespace {

// A tiny lfm2_moe: the tiny lfm2's layers (conv, full attention, conv, conv) and widths, the
// first layer over an MLP of intermediate_size 24 as given, the other 3 over 4 experts of 6, top
// 2, a router of 8 × 4 and its expert_bias of 4.
std::string tiny_lfm2_moe(const std::string& more = "",
                          const std::string& layers = kTinyLayerTypes) {
  std::string text = R"({"model_type": "lfm2_moe", "_name_or_path": "Tiny", "hidden_size": 8,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
    "intermediate_size": 24, "moe_intermediate_size": 6, "num_experts": 4,
    "num_experts_per_tok": 2, "num_dense_layers": 1, "vocab_size": 10, "conv_L_cache": 3)";
  for (const std::string& part : {layers, more}) {
    if (!part.empty()) text += ", " + part;
  }
  return text + "}";
}

// By hand: the dense MLP 3 × 8 × 24 = 576; a mixture's experts 4 × 3 × 8 × 6 = 576, its router
// 8 × 4 = 32 and expert_bias 4.
constexpr double kDenseMlp = 576;
constexpr double kMixture = 576 + 32 + 4;
constexpr double kTinyLfm2Moe = 80 + (kShortConv + kDenseMlp + 16) + (kAttention + kMixture + 16) +
                                2 * (kShortConv + kMixture + 16) + 8;

}  // namespace

TEST_CASE("a tiny LFM2-MoE counts its dense first layers and its experts by hand") {
  const ModelShape shape = parsed(tiny_lfm2_moe());
  CHECK(shape.hybrid_layers == "LALL");
  CHECK(shape.ffn_hidden_size == 24);  // Lfm2MoeMLP takes intermediate_size as it is
  CHECK(shape.num_dense_layers == 1);
  CHECK(shape.router_bias);
  CHECK(shape.tied_embeddings);
  CHECK(count_parameters(shape) == kTinyLfm2Moe);
  CHECK(count_parameters(shape) == 3604);
  // Active: 2 of the 4 experts in each mixture layer.
  CHECK(count_active_parameters(shape) == kTinyLfm2Moe - 3 * 2 * 3 * 8 * 6);
  // Without use_expert_bias, no buffer; Lfm2MoeConfig's 2 dense layers where none is said.
  CHECK(count_parameters(parsed(tiny_lfm2_moe(R"("use_expert_bias": false)"))) ==
        kTinyLfm2Moe - 3 * 4);
  std::string two_dense = tiny_lfm2_moe();
  two_dense.erase(two_dense.find(R"("num_dense_layers": 1, )"), 23);
  CHECK(parsed(two_dense).num_dense_layers == 2);
  // The estimate answers, one stage.
  TrainingSetup setup = setup_of(shape);
  const Estimate estimate = estimate_memory(setup);
  CHECK_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("LFM2-8B-A1B's config reads to its hand count: 8.3B total, 1.5B active") {
  // transformers' model card (docs/source/en/model_doc/lfm2_moe.md): "8.3B total parameters and
  // 1.5B active parameters". By hand: the embedding 65,536 × 2,048 (tied); 6 attention layers (q
  // and out 2,048², k and v 2,048 × 512, q/k norms 64 each); 18 convolutions (in_proj 2,048 ×
  // 6,144, conv1d 2,048 × 3, out_proj 2,048²); 2 dense MLPs of 7,168; 22 mixtures (32 experts of
  // 3 × 2,048 × 1,792, the router 2,048 × 32, expert_bias 32); 49 norms of 2,048.
  const double total = 65536.0 * 2048 + 6 * (2 * 2048.0 * 2048 + 2 * 2048.0 * 512 + 128) +
                       18 * (2048.0 * 6144 + 2048 * 3 + 2048.0 * 2048) + 2 * 3 * 2048.0 * 7168 +
                       22 * (32 * 3 * 2048.0 * 1792 + 2048 * 32 + 32) + 49 * 2048.0;
  CHECK(total == 8339930560.0);
  const ModelShape shape = parsed(hub_config("lfm2-8b-a1b"));
  CHECK(shape.hybrid_layers == "LLALLLALLLALLLALLLALLALL");
  CHECK(count_parameters(shape) == total);
  CHECK(count_parameters(*find_preset("lfm2-8b-a1b")) == total);
  // Active: 4 of the 32 experts in each of the 22 mixtures.
  const double active = total - 22 * 28 * 3 * 2048.0 * 1792;
  CHECK(active == 1557740992.0);
  CHECK(count_active_parameters(shape) == active);
}

TEST_CASE("lfm2_moe fields trainmem cannot count are refused by name") {
  CHECK(read(tiny_lfm2_moe("", "")).answer.message ==
        "config.json: 'layer_types' is missing; an lfm2_moe config must list num_hidden_layers "
        "(4) entries, each \"full_attention\" or \"conv\".");
  CHECK(read(tiny_lfm2_moe(R"("num_local_experts": 4)")).answer.message ==
        "config.json: 'num_local_experts' is not read for an lfm2_moe config: Lfm2MoeConfig "
        "counts its experts in num_experts.");
  std::string one_expert = tiny_lfm2_moe();
  one_expert.replace(one_expert.find(R"("num_experts": 4)"), 16, R"("num_experts": 1)");
  one_expert.replace(one_expert.find(R"("num_experts_per_tok": 2)"), 24,
                     R"("num_experts_per_tok": 1)");
  CHECK(read(one_expert).answer.message ==
        "config.json: 'num_experts' must be from 2 to 1,024: LFM2-MoE's layers past "
        "num_dense_layers are mixtures; it is 1.");
  std::string all_dense = tiny_lfm2_moe();
  all_dense.replace(all_dense.find(R"("num_dense_layers": 1)"), 21, R"("num_dense_layers": 4)");
  CHECK(read(all_dense).answer.message ==
        "config.json: 'num_dense_layers' (4) must be below num_hidden_layers (4): LFM2-MoE's "
        "layers past it are mixtures.");
  std::string no_width = tiny_lfm2_moe();
  no_width.erase(no_width.find(R"("moe_intermediate_size": 6, )"), 28);
  CHECK(read(no_width).answer.message.find("'moe_intermediate_size' is missing") !=
        std::string::npos);
}

}  // namespace short_conv_test
