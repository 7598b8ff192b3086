// Gemma 4's text towers (issue 45): sliding-window layers and full-attention layers of their own
// widths (global_head_dim, num_global_key_value_heads, no v_proj under attention_k_eq_v), counted
// by hand on a tiny shape and read from the published config to its total, the weightless value
// norm's saved tensors pinned by hand, its mixture-of-experts block and vision tower counted to
// the hub's totals, and what trainmem does not count of Gemma 4 refused by name.
#include <doctest/doctest.h>

#include <string>

#include "hub_configs.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;

namespace gemma4_test {

namespace {

// A tiny gemma4_text: h 8, 3 layers (the default pattern, the last forced to full attention),
// sliding layers of 2 heads of 4 and 2 key/value heads, a full-attention layer of 2 heads of 8
// and 1 key/value head whose values are K's, an MLP of 16, a vocabulary of 10, tied.
std::string tiny_gemma4(const std::string& more = "") {
  return R"({"model_type": "gemma4_text", "_name_or_path": "Tiny", "hidden_size": 8,
    "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 4,
    "global_head_dim": 8, "num_global_key_value_heads": 1, "attention_k_eq_v": true,
    "intermediate_size": 16, "vocab_size": 10, "hidden_size_per_layer_input": 0)" +
         (more.empty() ? "" : ", " + more) + "}";
}

// By hand, per layer:
//   sliding  q_proj 8 × 8, k_proj and v_proj 8 × 8 each, o_proj 8 × 8, q/k norms 4 + 4: 264
//   global   q_proj 8 × 16, k_proj 8 × 8 (no v_proj), o_proj 16 × 8, q/k norms 8 + 8: 336
//   MLP      gate, up and down: 3 × 8 × 16 = 384; four norms 4 × 8; layer_scalar 1
constexpr double kSliding = 264 + 384 + 32 + 1;  // 681
constexpr double kGlobal = 336 + 384 + 32 + 1;   // 753
constexpr double kTinyGemma4 = 80 + 2 * kSliding + kGlobal + 8;

ConfigParse read(const std::string& text) { return parse_hf_config(text); }

ModelShape parsed(const std::string& text, bool text_tower = false) {
  const ConfigParse result = parse_hf_config(text, text_tower);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  return result.shape;
}

double bytes_of(const std::vector<SavedTensor>& tensors, const char* id) {
  double sum = 0;
  for (const SavedTensor& tensor : tensors) {
    if (tensor.id == id) sum += tensor.bytes_per_token;
  }
  return sum;
}

}  // namespace

TEST_CASE("a tiny Gemma 4 counts its sliding-window and full-attention layers by hand") {
  const ModelShape shape = parsed(tiny_gemma4());
  CHECK(shape.hybrid_layers == "AAL");
  CHECK(shape.global_head_dim == 8);
  CHECK(shape.global_kv_heads == 1);
  CHECK(shape.global_k_eq_v);
  CHECK(count_parameters(shape) == kTinyGemma4);
  CHECK(count_parameters(shape) == 2203);
  // Without attention_k_eq_v the full layer keeps v_proj and the sliding layers' key/value
  // heads (2 of 8): k_proj and v_proj 8 × 16 each, against 8 × 8.
  CHECK(count_parameters(parsed(tiny_gemma4().replace(
            tiny_gemma4().find(R"("attention_k_eq_v": true)"), 24,
            R"("attention_k_eq_v": false)"))) == kTinyGemma4 + 2 * 8 * 16 - 8 * 8);
  // layer_types as given; the last layer is full attention whatever they say.
  const ModelShape listed = parsed(tiny_gemma4(
      R"("layer_types": ["full_attention", "sliding_attention", "sliding_attention"])"));
  CHECK(listed.hybrid_layers == "LAL");
  CHECK(count_parameters(listed) == 80 + kSliding + 2 * kGlobal + 8);
}

TEST_CASE("Gemma 4 31B's published config reads to its text tower's total") {
  const ModelShape shape = parsed(hub_config("gemma4-31b"), true);
  // 50 sliding layers of 478,959,104 and 10 full-attention layers of 534,009,856, a layer_scalar
  // each, the final norm and the tied embedding (262,144 × 5,376).
  CHECK(count_parameters(shape) == 50 * 478959105.0 + 10 * 534009857.0 + 5376 + 262144.0 * 5376);
  CHECK(count_parameters(shape) == 30697345340.0);
  CHECK(count_parameters(*find_preset("gemma4-31b")) == 30697345340.0);
  // Read whole: its vision tower (569,550,384 with the standardize buffers) and the projector
  // (1,152 × 5,376) beside it, the hub's safetensors total.
  const ModelShape whole = parsed(hub_config("gemma4-31b"));
  CHECK(whole.vision_parameters == 569550384.0 + 1152.0 * 5376);
  CHECK(count_parameters(whole) == 31273088876.0);
}

TEST_CASE(
    "Gemma 4's value norm saves its input and a 1/RMS a head, the input K's own where V is K") {
  // Per token, BF16 inputs and FP32 1/RMS: a sliding layer's v_norm keeps V's output (2 heads of
  // 4: 16 B) and 2 × 4 B; the full layer's, whose values are K's output (kept for k_norm already),
  // its 1/RMS alone (1 head: 4 B).
  const ModelShape shape = parsed(tiny_gemma4());
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 64;
  setup.activation_model = ActivationModel::kLlamaBlock;
  const std::vector<SavedTensor> sliding = llama_block_saved_tensors(shape, setup, true);
  CHECK(bytes_of(sliding, "value-norm-input") == 16);
  CHECK(bytes_of(sliding, "value-norm-rstd") == 8);
  const SavedTensorList global = saved_tensors_of(setup);
  CHECK(bytes_of(global.tensors, "value-norm-input") == 0);
  CHECK(bytes_of(global.tensors, "value-norm-rstd") == 4);
  // Its K (1 head of 8, after k_norm and RoPE) and its V (the same 8, v_norm's) both go to
  // FlashAttention: 16 B each.
  CHECK(bytes_of(global.tensors, "key") == 16);
  CHECK(bytes_of(global.tensors, "value") == 16);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  bool noted = false;
  for (const std::string& note : estimate.notes) {
    noted = noted || note.rfind("Of its 3 layers, 1 is a global attention layer, keeping ", 0) == 0;
  }
  CHECK(noted);
}

TEST_CASE("LoRA on Gemma 4 adapts the full-attention layers' projections as attention") {
  const ModelShape shape = parsed(tiny_gemma4());
  // r 2, per layer as the mean of the kinds: sliding q, k, v, o 2·(8 + 8) each = 128 in 2 of 3
  // layers; global q 2·(8 + 16), k 2·(8 + 8), o 2·(16 + 8) = 128 in 1 of 3.
  CHECK(lora_parameters_per_layer(shape, 2, LoraTargets::kAttention) ==
        doctest::Approx(128.0 * 2 / 3 + 128.0 / 3));
  CHECK(lora_modules_per_token(shape, LoraTargets::kAttention) == doctest::Approx(4.0 * 2 / 3 + 1));
}

TEST_CASE("what trainmem does not count of Gemma 4 is refused by name") {
  // Per-layer embeddings: Gemma4TextConfig's default is 256, so a config without the key has them.
  std::string without = tiny_gemma4();
  without.replace(without.find(R"(, "hidden_size_per_layer_input": 0)"), 34, "");
  CHECK(read(without).answer.message ==
        "config.json: 'hidden_size_per_layer_input' must be 0 or null (absent means "
        "Gemma4TextConfig's 256): trainmem does not count Gemma 4's per-layer embeddings; it is "
        "256.");
  CHECK(read(tiny_gemma4(R"("num_kv_shared_layers": 1)")).answer.message ==
        "config.json: 'num_kv_shared_layers' must be 0: trainmem does not count layers that share "
        "another layer's keys and values; it is 1.");
  CHECK(read(tiny_gemma4(R"("enable_moe_block": true)")).answer.message ==
        "config.json: 'num_experts' is missing; it must be a whole number from 1 to 1,024.");
  CHECK(read(tiny_gemma4(R"("per_layer_config": {})")).answer.message ==
        "config.json: 'per_layer_config' is not read: trainmem reads Gemma 4's full-attention "
        "layers from global_head_dim and num_global_key_value_heads.");
  // Tensor parallelism must divide the full-attention layers' one key/value head as well.
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = parsed(tiny_gemma4());
  setup.layout.tensor_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "tp");
}

TEST_CASE(
    "Gemma's final logit softcapping is read, and the readout says what the logits leave out") {
  CHECK(parsed(hub_config("gemma4-31b"), true).final_logit_softcapping == 30);
  CHECK(parsed(hub_config("gemma2-9b")).final_logit_softcapping == 30);
  CHECK(parsed(hub_config("gemma3-1b")).final_logit_softcapping == 0);  // null in its config
  CHECK(read(tiny_gemma4(R"("final_logit_softcapping": "30")")).answer.message ==
        "config.json: 'final_logit_softcapping' must be a number above 0 and at most 1,000,000, "
        "or null; it is \"30\".");
  const auto softcap_noted = [](const TrainingSetup& setup) {
    const Estimate estimate = estimate_memory(setup);
    REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
    bool noted = false;
    for (const std::string& note : estimate.notes) {
      noted = noted ||
              note.rfind("Its final_logit_softcapping (30) runs cap·tanh(logits / cap)", 0) == 0;
    }
    return noted;
  };
  TrainingSetup setup;
  setup.model_id = "gemma2-9b";
  CHECK(softcap_noted(setup));
  // Liger's fused loss caps inside its kernel.
  setup.logits = true;
  setup.loss = Loss::kFusedLinear;
  CHECK_FALSE(softcap_noted(setup));
  setup = TrainingSetup();
  setup.model_id = "gemma3-1b";
  CHECK_FALSE(softcap_noted(setup));
}

TEST_CASE("Gemma 4's mixture-of-experts block beside its MLP, by hand and to 26B-A4B's total") {
  // The tiny shape with the block on: 4 experts of 4, top-2. Per layer: the experts' gate_up_proj
  // and down_proj 4 × 3 × 8 × 4 = 384, the router's proj 8 × 4, its scale 8 and per_expert_scale
  // 4, three more norms 3 × 8; the dense MLP stays, every token through it.
  const ModelShape shape = parsed(tiny_gemma4(
      R"("enable_moe_block": true, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 4)"));
  CHECK(shape.num_experts == 4);
  CHECK(shape.num_experts_per_token == 2);
  CHECK(shape.shared_expert_ffn_hidden_size == 16);
  CHECK(count_parameters(shape) == kTinyGemma4 + 3 * (384 + 32 + 8 + 4 + 24));
  // Active: two of the four experts (96 each) idle in each layer.
  CHECK(count_active_parameters(shape) == count_parameters(shape) - 3 * 2 * 96);
  // 26B-A4B: 25 sliding layers of 814,094,976 and 5 full-attention layers of 828,513,408 (each
  // with the router's 363,392 and 128 experts' 761,266,176), a layer_scalar each, the final norm
  // and the tied embedding: 25.23B, the card's 25.2B; active 3.82B, its 3.8B.
  const ModelShape published = parsed(hub_config("gemma4-26b-a4b"), true);
  CHECK(count_parameters(published) == 25 * 814094977.0 + 5 * 828513409.0 + 2816 + 262144.0 * 2816);
  CHECK(count_parameters(published) == 25233141790.0);
  CHECK(count_active_parameters(published) == 3822530590.0);
  CHECK(count_parameters(*find_preset("gemma4-26b-a4b")) == 25233141790.0);
  // With its vision tower and projector (1,152 × 2,816): the hub's 25,805,936,206.
  CHECK(count_parameters(parsed(hub_config("gemma4-26b-a4b"))) == 25805936206.0);
}

TEST_CASE("Gemma 4's vision tower counted as Gemma4VisionModel builds it, by hand") {
  // A tiny tower: Hv 8, 2 layers of 2 heads of 4 (2 key/value heads), an MLP of 16, patches of 2,
  // 4 position rows. Patch embedder 3·2²·8 = 96 and 2·4·8 = 64; a layer's Q, K, V, O 4 × 8 × 8,
  // q/k norms 4 + 4, MLP 3 × 8 × 16, four norms 32: 680; the projector 8 × 8 (text h).
  const std::string tower = R"("vision_config": {"hidden_size": 8, "intermediate_size": 16,
      "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 4,
      "patch_size": 2, "position_embedding_size": 4})";
  const std::string text =
      R"({"model_type": "gemma4", "text_config": )" + tiny_gemma4() + ", " + tower + "}";
  CHECK(parsed(text).vision_parameters == 96 + 64 + 2 * 680 + 64);
  // standardize: std_bias and std_scale, 8 each.
  std::string standardized = text;
  standardized.replace(standardized.find(R"("patch_size")"), 12,
                       R"("standardize": true, "patch_size")");
  CHECK(parsed(standardized).vision_parameters == 96 + 64 + 2 * 680 + 64 + 16);
  // Without a vision_config Gemma4Model builds no tower; an audio tower is refused by name.
  CHECK(parsed(R"({"model_type": "gemma4", "text_config": )" + tiny_gemma4() + "}")
            .vision_parameters == 0);
  CHECK(read(R"({"model_type": "gemma4", "text_config": )" + tiny_gemma4() +
             R"(, "audio_config": {"hidden_size": 8}})")
            .answer.message.find("'audio_config' describes an audio tower") != std::string::npos);
  std::string clipped = text;
  clipped.replace(clipped.find(R"("patch_size")"), 12,
                  R"("use_clipped_linears": true, "patch_size")");
  CHECK(read(clipped).answer.message.find("clipped linears") != std::string::npos);
}

}  // namespace gemma4_test
