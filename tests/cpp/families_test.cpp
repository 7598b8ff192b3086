// Today's families: each reader on a tiny shape counted by hand, the presets against the totals
// their authors publish, multimodal configs' text towers, and the multi-token-prediction modules.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hub_configs.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;

namespace families_test {

namespace {

double count_of(const std::string& text, bool text_tower = false) {
  const ConfigParse result = parse_hf_config(text, text_tower);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  return count_parameters(result.shape);
}

// A tiny Llama-style config of the given type: h 8, 2 heads of 4, 1 key/value head, an MLP of 16,
// a vocabulary of 10, untied unless the type ties by default.
std::string tiny(const std::string& model_type, const std::string& more = "") {
  return R"({"model_type": ")" + model_type +
         R"(", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
             "vocab_size": 10)" +
         (more.empty() ? "" : ", " + more) + "}";
}

// Llama's count of tiny(): per layer Q 64, K 32, V 32, O 64, MLP 3·8·16 = 384, 2 norms 16: 592;
// twice, with the embedding 80, the head 80 and the final norm 8.
constexpr double kTinyLlama = 2 * 592 + 80 + 80 + 8;  // 1,352

}  // namespace

TEST_CASE("each new model_type's weights on a tiny shape, counted by hand") {
  CHECK(count_of(tiny("llama")) == kTinyLlama);
  // Phi-3's fused qkv_proj and gate_up_proj hold the same weights as Llama's.
  CHECK(count_of(tiny("phi3")) == kTinyLlama);
  CHECK(count_of(tiny("granite", R"("tie_word_embeddings": false)")) == kTinyLlama);
  // SmolLM3 ties by default (SmolLM3Config): one matrix of 80 fewer.
  CHECK(count_of(tiny("smollm3")) == kTinyLlama - 80);
  // OLMo 2: q_norm over a·d = 8 and k_norm over k·d = 4, per layer.
  CHECK(count_of(tiny("olmo2")) == kTinyLlama + 2 * (8 + 4));
  // Gemma 3: q_norm and k_norm of head_dim (4 each), four norms of 8 instead of two, tied.
  CHECK(count_of(tiny("gemma3_text")) == kTinyLlama + 2 * (2 * 4 + 2 * 8) - 80);
  // Cohere 2: one LayerNorm without a bias per layer (attention and MLP side by side), tied.
  CHECK(count_of(tiny("cohere2")) == kTinyLlama - 2 * 8 - 80);
  // The Qwen2-VL text towers: Qwen2's Q, K and V biases (8 + 4 + 4).
  CHECK(count_of(tiny("qwen2_5_vl_text")) == kTinyLlama + 2 * 16);
}

TEST_CASE("gpt-oss by hand: biased attention and a sink per head, biased experts and router") {
  // Per layer: attention 192 + biases (Q 8, K 4, V 4, O 8) + 2 sinks = 218; 4 experts of 6, each
  // gate_up 8·12 + 12 and down 6·8 + 8 = 164; a router of 8·4 + 4; two norms 16: 926.
  const std::string config = tiny("gpt_oss", R"("num_local_experts": 4, "num_experts_per_tok": 2)");
  std::string six = config;
  six.replace(six.find("\"intermediate_size\": 16"), 23, "\"intermediate_size\": 6");
  CHECK(count_of(six) == 2 * (218 + 4 * 164 + 36 + 16) + 80 + 80 + 8);
}

TEST_CASE("MiniMax-M2 by hand and to its hub total: whole-projection q/k norms, routed experts") {
  // tiny(): attention 192 and norms 16 as Llama's, q_norm over a·d 8 and k_norm over k·d 4; 4
  // experts of 16 (3·8·16 each), a router of 8·4 and its bias of 4.
  const std::string config = tiny("minimax_m2", R"("num_local_experts": 4, "num_experts_per_tok": 2,
      "qk_norm_type": "per_layer", "use_qk_norm": true, "use_routing_bias": true,
      "shared_intermediate_size": 0, "attn_type_list": [1, 1])");
  CHECK(count_of(config) == 2 * (192 + 12 + 4 * 384 + 32 + 4 + 16) + 80 + 80 + 8);
  // MiniMax-M2.7's published config.json (the fields that make the shape): 228,689,764,864
  // parameters; the hub's safetensors total, 228,703,644,928, adds the FP8 weights' 128 × 128
  // block scales: per layer q_proj 48·24, k_proj and v_proj 8·24 each, o_proj 24·48 and 256
  // experts' three 12·24, 62 layers.
  const std::string m27 = R"({"model_type": "minimax_m2", "hidden_size": 3072,
      "intermediate_size": 1536, "num_hidden_layers": 62, "num_attention_heads": 48,
      "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 256,
      "num_experts_per_tok": 8, "vocab_size": 200064, "tie_word_embeddings": false,
      "qk_norm_type": "per_layer", "use_qk_norm": true, "use_routing_bias": true,
      "shared_intermediate_size": 0, "use_mtp": true, "num_mtp_modules": 3})";
  const ConfigParse parsed = parse_hf_config(m27);
  REQUIRE_MESSAGE(parsed.answer.status == Status::kOk, parsed.answer.message);
  CHECK(count_parameters(parsed.shape) == 228689764864.0);
  const double scales = 62 * (48 * 24 + 2 * 8 * 24 + 24 * 48 + 256 * 3 * 12 * 24);
  CHECK(count_parameters(parsed.shape) + scales == 228703644928.0);
  // Active: 11.03B with the embedding and head; 9.80B without, the card's "10B".
  CHECK(count_active_parameters(parsed.shape) == 11030553088.0);
  CHECK(count_active_parameters(parsed.shape) - 2.0 * 200064 * 3072 == 9801359872.0);
  // MiniMax-M1's lightning-attention layers, and a shared expert, are refused by name.
  const ConfigParse lightning = parse_hf_config(tiny("minimax_m2", R"("num_local_experts": 4,
      "num_experts_per_tok": 2, "attn_type_list": [0, 1])"));
  CHECK(lightning.answer.message ==
        "config.json: 'attn_type_list' must list num_hidden_layers 1s (softmax attention in every "
        "layer, as MiniMax-M2's); lightning-attention layers (0) are not counted by trainmem.");
  CHECK(parse_hf_config(tiny("minimax_m2", R"("num_local_experts": 4, "num_experts_per_tok": 2,
      "shared_intermediate_size": 512)"))
            .answer.message.find("'shared_intermediate_size' must be 0") != std::string::npos);
}

TEST_CASE("Llama 4 by hand: every second layer a mixture with a shared expert, dense between") {
  // 4 layers, interleave step 2: layers 1 and 3 hold 4 experts of 6 (4·3·8·6 = 576), a router of
  // 32 and a shared expert of 6 (144); layers 0 and 2 a dense MLP of intermediate_size_mlp 16
  // (384). Attention 192 and norms 16 in each.
  const std::string config = R"({"model_type": "llama4_text", "hidden_size": 8,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "intermediate_size": 6, "intermediate_size_mlp": 16, "num_local_experts": 4,
    "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "vocab_size": 10})";
  CHECK(count_of(config) == 2 * (208 + 576 + 32 + 144) + 2 * (208 + 384) + 168);
  // An explicit moe_layers must be the step's.
  std::string listed = config;
  listed.insert(listed.size() - 1, R"(, "moe_layers": [1, 3])");
  CHECK(count_of(listed) == count_of(config));
  std::string other = config;
  other.insert(other.size() - 1, R"(, "moe_layers": [0, 2])");
  const ConfigParse refused = parse_hf_config(other);
  CHECK(refused.answer.message ==
        "config.json: 'moe_layers' must list every interleave_moe_layer_step-th layer (2), from "
        "layer 1 on; it holds 0 where 1 would be.");
}

TEST_CASE("GLM-4.5 by hand: Q/K/V biases and per-head norms, DeepSeek's experts, one MTP layer") {
  // 3 layers: attention 192 + biases 16 + q/k norms 2·4 = 216, norms 16; layer 0 dense (384),
  // layers 1 and 2 hold 4 experts of 6 (576), a router of 32 with its bias of 4, a shared expert
  // (144).
  const std::string config = R"({"model_type": "glm4_moe", "hidden_size": 8,
    "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "intermediate_size": 16, "moe_intermediate_size": 6, "n_routed_experts": 4,
    "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
    "attention_bias": true, "use_qk_norm": true, "num_nextn_predict_layers": 1,
    "vocab_size": 10})";
  const ConfigParse result = parse_hf_config(config);
  REQUIRE(result.answer.status == Status::kOk);
  const double mixture_layer = 216 + 16 + 576 + 36 + 144;  // 988
  CHECK(count_parameters(result.shape) == (216 + 16 + 384) + 2 * mixture_layer + 168);
  // The MTP module: enorm and hnorm (16), eh_proj 2·8·8 (128), one mixture layer, a final norm.
  CHECK(result.shape.num_mtp_layers == 1);
  CHECK(count_mtp_parameters(result.shape) == 16 + 128 + mixture_layer + 8);
}

TEST_CASE("which layers are dense: the first k, then those the interleave step leaves") {
  ModelShape shape = *find_preset("qwen3-30b-a3b");
  shape.num_layers = 10;
  shape.num_dense_layers = 2;
  shape.moe_layer_step = 3;  // past layer 1, layers 2, 5 and 8 are mixtures
  CHECK(dense_layers_between(shape, 0, 10) == 7);
  CHECK(dense_layers_between(shape, 2, 3) == 2);
  CHECK(dense_layers_between(shape, 5, 1) == 0);
  CHECK(dense_layers_between(shape, 0, 1) == 1);
  CHECK(mixes_dense_layers(shape));
  shape.num_dense_layers = 0;
  shape.moe_layer_step = 1;
  CHECK_FALSE(mixes_dense_layers(shape));
  CHECK(dense_layers_between(*find_preset("llama3-8b"), 3, 5) == 5);  // no mixture: all dense
}

TEST_CASE("each of today's presets counts to the total its authors publish") {
  struct Published {
    const char* id;
    double total;      // as published
    double precision;  // its last digit's place: 1 when exact
  };
  const Published published[] = {
      // The hub's safetensors totals (Hugging Face's model metadata).
      {"llama3.1-8b", 8030261248.0, 1},
      {"llama3.1-70b", 70553706496.0, 1},
      {"gemma3-1b", 999885952.0, 1},
      {"gpt-oss-20b", 20914757184.0, 1},    // model card arXiv:2508.10925, Table 1: 20.91B
      {"gpt-oss-120b", 116829156672.0, 1},  // 116.83B
      {"phi-4", 14659507200.0, 1},
      {"olmo2-7b", 7298617344.0, 1},
      {"olmo2-13b", 13716198400.0, 1},
      {"olmo2-32b", 32234279936.0, 1},
      // The Qwen3 model cards: 0.6B, 1.7B, 4.0B, 14.8B, 32.8B, 235B.
      {"qwen3-0.6b", 0.6e9, 0.1e9},
      {"qwen3-1.7b", 1.7e9, 0.1e9},
      {"qwen3-4b", 4.0e9, 0.1e9},
      {"qwen3-14b", 14.8e9, 0.1e9},
      {"qwen3-32b", 32.8e9, 0.1e9},
      {"qwen3-235b-a22b", 235e9, 1e9},
      // Kimi K2's README: "1 trillion total parameters". Its technical report's 1.04T is about
      // one mixture layer (17B) above what its config.json builds; not explained here.
      {"kimi-k2", 1e12, 0.1e12},
  };
  for (const Published& model : published) {
    CAPTURE(model.id);
    const ModelShape* shape = find_preset(model.id);
    REQUIRE(shape != nullptr);
    const double rounded = std::round(count_parameters(*shape) / model.precision) * model.precision;
    CHECK(rounded == doctest::Approx(model.total).epsilon(1e-12));
  }
}

TEST_CASE("a multimodal preset is its text tower: with the published vision tower, the total") {
  // The hub's totals less the vision tower and projector that transformers builds beside the text
  // tower (SiglipVisionModel without its head and Gemma3MultiModalProjector; Llama4VisionModel,
  // its adapter and Llama4MultiModalProjector), which trainmem does not count.
  struct Multimodal {
    const char* id;
    double total;
    double vision_and_projector;
  };
  const Multimodal models[] = {
      {"gemma3-4b", 4300079472.0, 416866032.0 + 2950272.0},
      {"gemma3-12b", 12187325040.0, 416866032.0 + 4424832.0},
      {"gemma3-27b", 27432406640.0, 416866032.0 + 6194304.0},
      {"llama4-scout", 108641793536.0, 850960896.0 + 20971520.0},
      {"llama4-maverick", 401583781376.0, 850960896.0 + 20971520.0},
  };
  for (const Multimodal& model : models) {
    CAPTURE(model.id);
    CHECK(count_parameters(*find_preset(model.id)) == model.total - model.vision_and_projector);
    CHECK(count_of(hub_config(model.id), true) == count_parameters(*find_preset(model.id)));
    CHECK(count_of(hub_config(model.id)) == model.total);  // its vision tower counted too
  }
}

TEST_CASE(
    "a multimodal config counts its vision tower as transformers builds it, or its text alone") {
  // Gemma 3 4B whole: the text tower, SigLIP without its head and the projector, the hub's total.
  const ConfigParse whole = parse_hf_config(hub_config("gemma3-4b"));
  REQUIRE_MESSAGE(whole.answer.status == Status::kOk, whole.answer.message);
  CHECK(whole.shape.name == "google/gemma-3-4b-pt");
  CHECK(whole.shape.vision_parameters == 416866032.0 + 2950272.0);
  CHECK(count_parameters(whole.shape) == 4300079472.0);
  const ConfigParse tower = parse_hf_config(hub_config("gemma3-4b"), true);
  REQUIRE(tower.answer.status == Status::kOk);
  CHECK(tower.shape.name == "google/gemma-3-4b-pt (text tower)");
  CHECK(tower.shape.vision_parameters == 0);
  // The text tower as a config of its own reads to the same shape, under the same name.
  const ConfigText text = text_tower_config_text(hub_config("gemma3-4b"));
  REQUIRE(text.answer.status == Status::kOk);
  const ConfigParse again = parse_hf_config(text.text);
  REQUIRE(again.answer.status == Status::kOk);
  CHECK(count_parameters(again.shape) == count_parameters(tower.shape));
  CHECK(again.shape.name == tower.shape.name);
  // A text model is no multimodal one: asked for its text tower, it says so, either way.
  CHECK(parse_hf_config(hub_config("llama3-8b"), true).answer.message ==
        text_tower_config_text(hub_config("llama3-8b")).answer.message);
  CHECK(text_tower_config_text(hub_config("llama3-8b")).answer.message ==
        "config.json: 'model_type' must be a multimodal one (gemma3, gemma4, llama4, mistral3, "
        "qwen2_5_vl, "
        "qwen2_vl, qwen3_5 or qwen3_5_moe) for a text tower; it is \"llama\".");
  // Qwen2.5-VL's hub config keeps the text fields at the top level: Qwen2.5 7B's count.
  const std::string qwen_vl = R"({"model_type": "qwen2_5_vl", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
    "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                      "out_hidden_size": 3584, "patch_size": 14, "temporal_patch_size": 2,
                      "spatial_merge_size": 2, "in_chans": 3}})";
  CHECK(count_of(qwen_vl, true) == 7615616512.0);
  CHECK(count_of(qwen_vl) == 8292166656.0);  // with its vision tower: the hub's total
  // Mistral Small 3.1: the text tower names its own type, mistral, untied by default.
  const std::string mistral3 = R"({"model_type": "mistral3", "text_config": {
    "model_type": "mistral", "hidden_size": 5120, "intermediate_size": 32768,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 131072}, "vision_config": {"model_type": "pixtral",
    "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
    "num_attention_heads": 16, "head_dim": 64, "patch_size": 14}, "spatial_merge_size": 2})";
  CHECK(count_of(mistral3, true) == 23572403200.0);
  CHECK(count_of(mistral3) == 24011361280.0);  // Pixtral and the projector: the hub's total
  // A tower trainmem does not count is refused, naming the way to the text tower.
  const ConfigParse qwen2_vl = parse_hf_config(R"({"model_type": "qwen2_vl", "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10,
    "vision_config": {"model_type": "qwen2_vl", "depth": 32}})");
  CHECK(qwen2_vl.answer.message ==
        "config.json: 'vision_config' describes a vision tower (\"qwen2_vl\") that trainmem does "
        "not count; ask for the text tower alone (the CLI's --text-tower, the page's \"Text tower "
        "alone\").");
  // SigLIP's pooling head, which Gemma 3 leaves out, is refused by name.
  std::string with_head = hub_config("gemma3-4b");
  with_head.replace(with_head.find("\"vision_use_head\": false"), 24, "\"vision_use_head\": true");
  CHECK(parse_hf_config(with_head).answer.message ==
        "config.json: in the vision tower (vision_config): 'vision_use_head' must be false: "
        "trainmem does not count SigLIP's pooling head, which Gemma 3 leaves out.");
}

TEST_CASE("DeepSeek-V3's and GLM-4.5's multi-token prediction, against their published counts") {
  const ModelShape& deepseek = *find_preset("deepseek-v3");
  // README_WEIGHTS.md: model.layers.61 holds enorm, hnorm, eh_proj, a mixture layer and
  // shared_head's norm, besides copies of the embedding and head. Its "11.5B unique parameters"
  // and the hub's 685B (with the copies, and FP8 scales this count leaves out).
  CHECK(deepseek.num_mtp_layers == 1);
  CHECK(count_mtp_parameters(deepseek) == 11610068224.0);
  const double copies = 2.0 * deepseek.vocab_size * deepseek.hidden_size;
  CHECK(count_parameters(deepseek) + count_mtp_parameters(deepseek) + copies == 684489845504.0);
  // GLM-4.5's report (arXiv:2508.06471, Table 1) counts "the parameters of MTP layers but not word
  // embeddings and the output layer": 355B. (GLM-4.5-Air's 106B does not follow that rule: it is
  // 108.0B so counted, and transformers builds 106.85B.)
  const ModelShape& glm = *find_preset("glm4.5");
  const ParameterCounts counts = parameter_counts(glm);
  const double reported =
      count_parameters(glm) - counts.embedding - counts.output_head + count_mtp_parameters(glm);
  CHECK(std::round(reported / 1e9) == 355);
}

TEST_CASE("gpt-oss's active parameters as its model card counts them") {
  // arXiv:2508.10925, Table 1: 5.13B and 3.61B active, "unembedding parameters are counted towards
  // active, but not embeddings".
  struct Active {
    const char* id;
    double parameters;
  };
  for (const Active& model :
       {Active{"gpt-oss-120b", 5132849472.0}, Active{"gpt-oss-20b", 3608307264.0}}) {
    CAPTURE(model.id);
    const ModelShape& shape = *find_preset(model.id);
    CHECK(count_active_parameters(shape) - parameter_counts(shape).embedding == model.parameters);
  }
}

TEST_CASE("the presets sit in family groups, each group together") {
  std::vector<std::string> seen;
  for (const ModelShape& shape : preset_models()) {
    CAPTURE(shape.id);
    REQUIRE_FALSE(shape.family.empty());
    if (seen.empty() || seen.back() != shape.family) {
      for (const std::string& family : seen) CHECK(family != shape.family);
      seen.push_back(shape.family);
    }
  }
  CHECK(seen.front() == "Llama");
}

TEST_CASE("training the MTP module: its states, one more layer's activations, its own logits") {
  // The tiny GLM-4.5 above: 2,760 parameters and an MTP module of 1,140, three layers.
  const ConfigParse parsed = parse_hf_config(R"({"model_type": "glm4_moe", "hidden_size": 8,
    "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "intermediate_size": 16, "moe_intermediate_size": 6, "n_routed_experts": 4,
    "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
    "attention_bias": true, "use_qk_norm": true, "num_nextn_predict_layers": 1,
    "vocab_size": 10})");
  REQUIRE(parsed.answer.status == Status::kOk);
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = parsed.shape;
  setup.logits = true;
  const Estimate without = estimate_memory(setup);
  REQUIRE(without.answer.ok());
  CHECK(without.mtp_parameters == 1140);
  CHECK(without.num_parameters == 2760);
  setup.mtp = true;
  const Estimate with = estimate_memory(setup);
  REQUIRE(with.answer.ok());
  CHECK(with.num_parameters == 2760 + 1140);
  // 16 B per parameter: BF16 weights and gradients, FP32 master weights and Adam's two moments.
  CHECK(with.bytes[Term::kWeights] - without.bytes[Term::kWeights] == 2 * 1140);
  CHECK(with.bytes[Term::kOptimizerStates] - without.bytes[Term::kOptimizerStates] == 8 * 1140);
  // One more mixture layer's activations (the three layers, one dense, count as their mean);
  // twice the logits and their loss.
  TrainingSetup all_mixture = setup;
  all_mixture.mtp = false;
  all_mixture.custom_model.num_dense_layers = 0;
  const Estimate mixtures = estimate_memory(all_mixture);
  REQUIRE(mixtures.answer.ok());
  CHECK(with.bytes[Term::kActivations] - without.bytes[Term::kActivations] ==
        doctest::Approx(mixtures.bytes[Term::kActivations] / 3));
  CHECK(with.bytes[Term::kActivations] !=
        doctest::Approx(without.bytes[Term::kActivations] * 4 / 3));
  CHECK(with.bytes[Term::kLogits] == 2 * without.bytes[Term::kLogits]);
  // A model without MTP modules refuses the switch, naming it.
  setup.model_id = "llama3-8b";
  const Estimate refused = estimate_memory(setup);
  CHECK(refused.answer.setting == "mtp");
  CHECK(refused.answer.message ==
        "Llama 3 8B has no multi-token-prediction modules (num_nextn_predict_layers 0): untick "
        "multi-token prediction.");
}

TEST_CASE("a vision tower is held frozen, its weights alone, unless the setup trains it") {
  const ConfigParse whole = parse_hf_config(hub_config("gemma3-4b"));
  REQUIRE(whole.answer.status == Status::kOk);
  const double vision = whole.shape.vision_parameters;
  const double total = count_parameters(whole.shape);
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = whole.shape;
  const Estimate frozen = estimate_memory(setup);
  REQUIRE(frozen.answer.ok());
  CHECK(frozen.vision_parameters == vision);
  CHECK(frozen.num_parameters == total);
  CHECK(frozen.trainable_parameters == total - vision);
  CHECK(frozen.bytes[Term::kWeights] == 2 * total);
  CHECK(frozen.bytes[Term::kGradients] == 2 * (total - vision));
  CHECK(frozen.bytes[Term::kOptimizerStates] == 8 * (total - vision));
  setup.train_vision = true;
  const Estimate trained = estimate_memory(setup);
  REQUIRE(trained.answer.ok());
  CHECK(trained.trainable_parameters == total);
  CHECK(trained.bytes[Term::kGradients] == 2 * total);
  CHECK(trained.bytes[Term::kMasterWeights] == 4 * total);
  // A text model has none to train: refused by the switch's name.
  setup.model_id = "llama3-8b";
  const Estimate refused = estimate_memory(setup);
  CHECK(refused.answer.setting == "train-vision");
  CHECK(refused.answer.message ==
        "Llama 3 8B has no vision tower counted here: untick training the vision tower.");
}

TEST_CASE(
    "DeepSeek-V2 and V2-Lite read to their published totals: no router bias, V2-Lite no q latent") {
  const std::string common = R"("model_type": "deepseek_v2", "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_shared_experts": 2,
    "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "vocab_size": 102400, "tie_word_embeddings": false)";
  // deepseek-ai/DeepSeek-V2: "236B total parameters".
  const ConfigParse v2 = parse_hf_config(R"({"hidden_size": 5120, "num_hidden_layers": 60,
    "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "n_routed_experts": 160, "q_lora_rank": 1536, )" +
                                         common + "}");
  REQUIRE_MESSAGE(v2.answer.status == Status::kOk, v2.answer.message);
  CHECK_FALSE(v2.shape.router_bias);
  CHECK(count_parameters(v2.shape) == 235741434880.0);
  // deepseek-ai/DeepSeek-V2-Lite: 15.7B on its model card.
  const ConfigParse lite = parse_hf_config(R"({"hidden_size": 2048, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "n_routed_experts": 64, "q_lora_rank": null, )" +
                                           common + "}");
  REQUIRE_MESSAGE(lite.answer.status == Status::kOk, lite.answer.message);
  CHECK(lite.shape.q_lora_rank == 0);
  CHECK(count_parameters(lite.shape) == 15706484224.0);
}

TEST_CASE(
    "Ling 1.0's bailing_moe: fused attention, dense first layers and shared experts by hand") {
  // tiny(): one dense layer (an MLP of 16: 384) and one mixture of 4 experts of 6 (4 · 3 · 8 · 6 =
  // 576), the shared experts' one MLP of 1 · 6 (144) and the router 8 × 4 (32); attention 192 and
  // two norms 16 a layer; the embedding, the untied head and the final norm 168.
  const std::string config = tiny("bailing_moe", R"("num_experts": 4, "num_experts_per_tok": 2,
                             "moe_intermediate_size": 6, "num_shared_experts": 1,
                             "first_k_dense_replace": 1)");
  constexpr double kTinyLing = 168 + 2 * (192 + 16) + 384 + (576 + 144 + 32);
  CHECK(count_of(config) == kTinyLing);
  CHECK(count_of(config) == 1720);
  // query_key_value's bias (a + 2k)·d = 16 under use_qkv_bias; dense's 8 under use_bias.
  std::string biased = config;
  biased.insert(biased.size() - 1, R"(, "use_qkv_bias": true, "use_bias": true)");
  CHECK(count_of(biased) == kTinyLing + 2 * (16 + 8));
}

TEST_CASE("Ling-lite's config reads to its count: 16.8B total, 2.75B active") {
  // inclusionAI's card and blog: "16.8B total parameters, 2.75B activated". By hand: the
  // embedding and lm_head 2 × 126,464 × 2,048; in each of 28 layers query_key_value 2,048 ×
  // 3,072 and dense 2,048², 64 experts of 3 × 2,048 × 1,408, the shared experts' MLP of 3 ×
  // 2,048 × 2,816, the router 2,048 × 64 and two norms; the final norm.
  const double total = 2 * 126464.0 * 2048 +
                       28 * (2048.0 * 3072 + 2048.0 * 2048 + 64 * 3 * 2048.0 * 1408 +
                             3 * 2048.0 * 2816 + 2048 * 64 + 2 * 2048) +
                       2048;
  CHECK(total == 16801974272.0);
  const ConfigParse result = parse_hf_config(hub_config("ling-lite"));
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  CHECK(count_parameters(result.shape) == total);
  CHECK(count_parameters(*find_preset("ling-lite")) == total);
  // Active: 6 of the 64 experts in each layer (the card's 2.75B counts the embedding and head).
  CHECK(count_active_parameters(result.shape) == total - 28 * 58 * 3 * 2048.0 * 1408);
  CHECK(count_active_parameters(result.shape) == 2753153024.0);
}

TEST_CASE("DeepSeek-V2-Lite's config reads to its count: 15.7B total, 2.4B active") {
  // DeepSeek-V2's appendix B: "15.7B total parameters, of which 2.4B are activated". By hand: the
  // embedding and lm_head 2 × 102,400 × 2,048; in each of 27 layers latent attention without a
  // query latent (wq 2,048 × 16 · 192, wkv_a 2,048 × 576, kv_norm 512, wkv_b 512 × 16 · 256, wo
  // 16 · 128 × 2,048) and two norms; the first layer's MLP 3 × 2,048 × 10,944; in the other 26, 64
  // experts of 3 × 2,048 × 1,408, the two shared experts' MLP 3 × 2,048 × 2,816 and the router
  // 2,048 × 64 (no bias: greedy routing, n_group 1); the final norm.
  const double attention =
      2048.0 * 16 * 192 + 2048.0 * 576 + 512 + 512.0 * 16 * 256 + 16 * 128.0 * 2048;
  const double experts = 64 * 3 * 2048.0 * 1408;
  const double total = 2 * 102400.0 * 2048 + 27 * (attention + 2 * 2048) + 3 * 2048.0 * 10944 +
                       26 * (experts + 3 * 2048.0 * 2816 + 2048 * 64) + 2048;
  CHECK(total == 15706484224.0);
  const ConfigParse result = parse_hf_config(hub_config("deepseek-v2-lite"));
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  CHECK(count_parameters(result.shape) == total);
  CHECK(count_parameters(*find_preset("deepseek-v2-lite")) == total);
  // Greedy routing over all 64 experts: no groups.
  CHECK(result.shape.num_expert_groups == 0);
  // DeepSeek-V3's noaux_tc routes within 4 of 8 groups, as the preset has it; DeepSeek-V2's
  // group_limited_greedy within 3 of 8.
  const ConfigParse v3 = parse_hf_config(hub_config("deepseek-v3"));
  REQUIRE(v3.answer.status == Status::kOk);
  CHECK(v3.shape.num_expert_groups == 8);
  CHECK(v3.shape.num_limited_groups == 4);
  CHECK(find_preset("deepseek-v3")->num_expert_groups == 8);
  std::string v2 = hub_config("deepseek-v2-lite");
  v2.replace(v2.find("\"n_group\": 1"), 12, "\"n_group\": 8");
  v2.replace(v2.find("\"topk_group\": 1"), 15, "\"topk_group\": 3");
  v2.replace(v2.find("\"greedy\""), 8, "\"group_limited_greedy\"");
  const ConfigParse grouped = parse_hf_config(v2);
  REQUIRE_MESSAGE(grouped.answer.status == Status::kOk, grouped.answer.message);
  CHECK(grouped.shape.num_expert_groups == 8);
  CHECK(grouped.shape.num_limited_groups == 3);
  // Groups that do not divide the experts are refused, naming the key.
  v2.replace(v2.find("\"n_group\": 8"), 12, "\"n_group\": 7");
  CHECK(parse_hf_config(v2).answer.message.find("'n_group'") != std::string::npos);
  // Active: 6 of the 64 experts in each mixture layer (2.66B with the embedding and head; the
  // paper's 2.4B leaves the embedding out, which a token reads one row of).
  CHECK(count_active_parameters(result.shape) == total - 26 * 58 * 3 * 2048.0 * 1408);
  CHECK(count_active_parameters(result.shape) == 2661150208.0);
}

TEST_CASE("Ling 2.0's bailing_moe: q/k norms and the router's expert_bias by hand") {
  // tiny() under BailingMoeV2ForCausalLM: Ling 1.0's count with query_layernorm and key_layernorm
  // of 4 in each layer and the router's expert_bias of 4 in the mixture.
  const std::string experts = R"("num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 6, "num_shared_experts": 1, "first_k_dense_replace": 1)";
  const std::string v2 = experts + R"(, "architectures": ["BailingMoeV2ForCausalLM"])";
  CHECK(count_of(tiny("bailing_moe", v2 + R"(, "use_qk_norm": true)")) == 1720 + 2 * 8 + 4);
  CHECK(count_of(tiny("bailing_moe", v2 + R"(, "use_qk_norm": true)")) == 1740);
  // Without use_qk_norm, no norms; the buffer whatever moe_router_enable_expert_bias says.
  CHECK(count_of(tiny("bailing_moe", v2 + R"(, "moe_router_enable_expert_bias": false)")) ==
        1720 + 4);
  CHECK(count_of(tiny("bailing_moe",
                      v2 + R"(, "moe_shared_expert_intermediate_size": 6, "n_group": 2)")) == 1724);
}

TEST_CASE(
    "Ling-mini-2.0's config reads to its count: 16.26B total, 789M active beside the "
    "embedding and head") {
  // inclusionAI's card: "16.26B total parameters", "1.4B activated (789M non-embedding)". By hand:
  // the embedding and lm_head 2 × 157,184 × 2,048; in each of 20 layers query_key_value 2,048 ×
  // 3,072, dense 2,048², q/k norms 128 each and two norms; the first layer's MLP of 3 × 2,048 ×
  // 5,120; in the other 19, 256 experts of 3 × 2,048 × 512, the shared one, the router 2,048 ×
  // 256 and its expert_bias; the final norm.
  const double expert = 3 * 2048.0 * 512;
  const double layers = 20 * (2048.0 * 3072 + 2048.0 * 2048 + 256 + 2 * 2048) + 3 * 2048.0 * 5120 +
                        19 * (257 * expert + 2048 * 256 + 256);
  const double total = 2 * 157184.0 * 2048 + layers + 2048;
  CHECK(total == 16255643392.0);
  const ConfigParse result = parse_hf_config(hub_config("ling-mini-2.0"));
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  CHECK(count_parameters(result.shape) == total);
  CHECK(count_parameters(*find_preset("ling-mini-2.0")) == total);
  // Active: 8 of the 256 experts; beside the embedding, the head and the final norm, 789M.
  const double active = total - 19 * 248 * expert;
  CHECK(count_active_parameters(result.shape) == active);
  CHECK(active - 2 * 157184.0 * 2048 - 2048 == 789145344.0);
}

TEST_CASE(
    "Ling's fields trainmem cannot count, and Ling 2.0's keys without its architecture, are "
    "refused") {
  const std::string experts = R"("num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 6, "num_shared_experts": 1)";
  for (const char* key : {"use_qk_norm", "moe_router_enable_expert_bias"}) {
    CAPTURE(key);
    const std::string text = tiny("bailing_moe", experts + ", \"" + key + "\": true");
    CHECK(parse_hf_config(text).answer.message ==
          "config.json: '" + std::string(key) +
              "' is Ling 2.0's: a bailing_moe config that gives it must name "
              "BailingMoeV2ForCausalLM in 'architectures' (without it, trainmem reads Ling 1.0's "
              "BailingMoeForCausalLM).");
  }
  // false and 0 are Ling 1.0's own.
  CHECK(parse_hf_config(tiny("bailing_moe", experts + R"(, "use_qk_norm": false,
                                                "num_nextn_predict_layers": 0)"))
            .answer.ok());
  const std::string v2 = experts + R"(, "architectures": ["BailingMoeV2ForCausalLM"])";
  CHECK(parse_hf_config(tiny("bailing_moe", v2 + R"(, "num_nextn_predict_layers": 1)"))
            .answer.message ==
        "config.json: 'num_nextn_predict_layers' must be 0: trainmem does not count Ling 2.0's "
        "MTP layers (BailingMoeV2MTPLayer, the last of num_hidden_layers) yet; it is 1.");
  CHECK(parse_hf_config(tiny("bailing_moe", v2 + R"(, "moe_shared_expert_intermediate_size": 12)"))
            .answer.message ==
        "config.json: 'moe_shared_expert_intermediate_size' (12) must be moe_intermediate_size "
        "times num_shared_experts (6), the width BailingMoeV2SparseMoeBlock builds.");
  CHECK(parse_hf_config(tiny("bailing_moe", R"("num_experts": 4, "num_experts_per_tok": 2,
                                               "moe_intermediate_size": 6)"))
            .answer.message.find("'num_shared_experts' is missing") != std::string::npos);
  CHECK(parse_hf_config(tiny("bailing_moe", experts + R"(, "first_k_dense_replace": 2)"))
            .answer.message ==
        "config.json: 'first_k_dense_replace' (2) must be below num_hidden_layers (2): Ling's "
        "layers past it are mixtures.");
}

}  // namespace families_test
