#include "trainmem/models.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <iterator>

using namespace trainmem;

namespace models_test {

TEST_CASE("the Llama 3 presets carry the shapes of the Llama 3 paper's Table 3") {
  const ModelShape* shape_8b = find_preset("llama3-8b");
  REQUIRE(shape_8b != nullptr);
  CHECK(shape_8b->num_layers == 32);
  CHECK(shape_8b->hidden_size == 4096);
  CHECK(shape_8b->ffn_hidden_size == 14336);
  CHECK(shape_8b->num_attention_heads == 32);
  CHECK(shape_8b->num_key_value_heads == 8);
  CHECK(shape_8b->vocab_size == 128256);
  CHECK_FALSE(shape_8b->tied_embeddings);

  const ModelShape* shape_70b = find_preset("llama3-70b");
  REQUIRE(shape_70b != nullptr);
  CHECK(shape_70b->num_layers == 80);
  CHECK(shape_70b->hidden_size == 8192);
  CHECK(shape_70b->ffn_hidden_size == 28672);
  CHECK(shape_70b->num_attention_heads == 64);

  const ModelShape* shape_405b = find_preset("llama3-405b");
  REQUIRE(shape_405b != nullptr);
  CHECK(shape_405b->num_layers == 126);
  CHECK(shape_405b->hidden_size == 16384);
  CHECK(shape_405b->ffn_hidden_size == 53248);
  CHECK(shape_405b->num_attention_heads == 128);
  CHECK(shape_405b->num_key_value_heads == 8);
}

TEST_CASE("parameter counts derived from the shape match Meta's published counts exactly") {
  // 8,030,261,248 / 70,553,706,496 / 405,853,388,800: the counts of the released checkpoints.
  CHECK(count_parameters(*find_preset("llama3-8b")) == 8030261248.0);
  CHECK(count_parameters(*find_preset("llama3-70b")) == 70553706496.0);
  CHECK(count_parameters(*find_preset("llama3-405b")) == 405853388800.0);
}

TEST_CASE("tying the embedding to the output head removes one vocabulary-by-hidden matrix") {
  ModelShape tied = *find_preset("llama3-8b");
  tied.tied_embeddings = true;
  CHECK(count_parameters(*find_preset("llama3-8b")) - count_parameters(tied) == 128256.0 * 4096);
}

TEST_CASE("grouped-query attention counts only the key/value heads' projections") {
  ModelShape full_attention = *find_preset("llama3-8b");
  full_attention.num_key_value_heads = full_attention.num_attention_heads;
  // K and V grow from 8 to 32 heads of 128 in each of 32 layers.
  const double extra = 32 * 2 * 4096.0 * (32 - 8) * 128;
  CHECK(count_parameters(full_attention) - count_parameters(*find_preset("llama3-8b")) == extra);
}

TEST_CASE("an unknown preset id finds nothing") {
  CHECK(find_preset("llama3-7b") == nullptr);
  CHECK(find_preset("") == nullptr);
  CHECK(preset_ids_joined() ==
        "llama3-8b, llama3-70b, llama3-405b, llama3.1-8b, llama3.1-70b, llama3.3-70b, "
        "llama3.2-1b, llama3.2-3b, llama4-scout, llama4-maverick, llama2-7b, llama2-13b, "
        "llama2-70b, qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b, qwen3-14b, qwen3-32b, "
        "qwen3-30b-a3b, qwen3-235b-a22b, qwen3-next-80b-a3b, qwen3.5-27b, qwen3.5-35b-a3b, "
        "qwen3.5-122b-a10b, qwen3.5-397b-a17b, "
        "qwen2.5-7b, qwen2.5-72b, deepseek-v3, deepseek-v2-lite, deepseek-v3.2, kimi-k2, "
        "kimi-linear-48b-a3b, glm4.5, "
        "glm4.5-air, glm-5, gemma4-31b, gemma4-26b-a4b, gemma3-1b, gemma3-4b, gemma3-12b, "
        "gemma3-27b, gemma2-9b, "
        "lfm2-350m, "
        "lfm2-700m, lfm2-1.2b, lfm2-8b-a1b, nemotron3-nano-30b-a3b, nemotron-nano-9b-v2, "
        "nemotron3-super-120b-a12b, "
        "mistral-7b, "
        "mixtral-8x7b, gpt-oss-20b, gpt-oss-120b, gpt2, gpt2-medium, gpt2-large, gpt2-xl, phi-4, "
        "ling-lite, ling-mini-2.0, olmo2-7b, olmo2-13b, olmo2-32b, pythia-160m");
}

TEST_CASE("the plate's three Llama 3 presets come first, and every preset names its source") {
  const std::vector<ModelShape>& presets = preset_models();
  REQUIRE(presets.size() == 65);
  CHECK(presets[0].id == "llama3-8b");
  CHECK(presets[1].id == "llama3-70b");
  CHECK(presets[2].id == "llama3-405b");
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(presets[i].source == "Llama 3 paper, arXiv:2407.21783, Table 3");
    CHECK(presets[i].head_dim == 0);
    CHECK(presets[i].norms_per_layer == 2);
    CHECK(presets[i].num_experts == 1);
  }
  for (std::size_t i = 3; i < presets.size(); ++i) {
    CAPTURE(presets[i].id);
    const std::string& source = presets[i].source;
    CHECK(source.size() > std::string(" config.json").size());
    // A multimodal model's preset is its text tower: "… config.json, text_config".
    const std::string text_tower = " config.json, text_config";
    const bool tower = source.size() > text_tower.size() &&
                       source.substr(source.size() - text_tower.size()) == text_tower;
    CHECK((tower || source.substr(source.size() - 12) == " config.json"));
    CHECK_FALSE(presets[i].family.empty());
    CHECK(model_shape_problem(presets[i]).empty());
  }
  CHECK(find_preset("mistral-7b")->source == "mistralai/Mistral-7B-v0.1 config.json");
  CHECK(find_preset("gemma2-9b")->source == "google/gemma-2-9b config.json");
}

TEST_CASE("every preset's derived count is the count its authors publish, exactly") {
  // The safetensors totals of the released checkpoints (Hugging Face's model metadata; the
  // model cards round them, e.g. "7.61B" for Qwen2.5 7B).
  struct Published {
    const char* id;
    double parameters;
  };
  const Published published[] = {
      {"llama3-8b", 8030261248.0},
      {"llama3-70b", 70553706496.0},
      {"llama3-405b", 405853388800.0},
      {"llama2-7b", 6738415616.0},
      {"llama2-13b", 13015864320.0},
      {"llama2-70b", 68976648192.0},
      {"llama3.2-1b", 1235814400.0},
      {"llama3.2-3b", 3212749824.0},
      {"mistral-7b", 7241732096.0},
      {"mixtral-8x7b", 46702792704.0},
      {"qwen2.5-7b", 7615616512.0},
      {"qwen2.5-72b", 72706203648.0},
      {"gemma2-9b", 9241705984.0},
      // GPT-2: the totals the model cards round to 124M, 355M, 774M and 1.5B (Radford et al.
      // 2019, Table 2, lists 117M, 345M, 762M and 1542M), counted from transformers'
      // GPT2LMHeadModel: wte, wpe, per block ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (all with
      // biases), ln_f, and lm_head tied to wte. The hub's safetensors metadata says 137M for
      // gpt2 because it also counts each block's causal-mask buffer attn.bias (1,024 × 1,024),
      // which is not a parameter.
      {"gpt2", 124439808.0},
      {"gpt2-medium", 354823168.0},
      {"gpt2-large", 774030080.0},
      {"gpt2-xl", 1557611200.0},
      // Pythia 160M: 162,322,944 in the table of exact parameter counts on the EleutherAI/
      // pythia-160m model card (85,056,000 of them non-embedding, as the Pythia paper's Table 1,
      // Biderman et al. 2023, arXiv:2304.01373, gives).
      {"pythia-160m", 162322944.0},
      // Qwen3 8B and 30B-A3B: the hub's safetensors totals, which its model cards round to
      // 8.2B and 30.5B (Qwen3 Technical Report, arXiv:2505.09388, Tables 1 and 2).
      {"qwen3-8b", 8190735360.0},
      {"qwen3-30b-a3b", 30532122624.0},
      // DeepSeek-V3: "671B total parameters" (arXiv:2412.19437, abstract; the repository's
      // README_WEIGHTS.md: the main model's 671B, besides the multi-token-prediction module's
      // 11.5B unique parameters that the hub's total of 685B adds). This exact figure is the
      // shape's count, which rounds to the published one (see the next test).
      {"deepseek-v3", 671026419200.0},
      // Today's families (tests/cpp/families_test.cpp gives each figure's source, and holds those
      // published only rounded to their rounding). Llama 3.1 and 3.3 have Llama 3's shapes.
      {"llama3.1-8b", 8030261248.0},
      {"llama3.1-70b", 70553706496.0},
      {"llama3.3-70b", 70553706496.0},
      {"llama4-scout", 107769861120.0},
      {"llama4-maverick", 400711848960.0},
      {"qwen3-0.6b", 596049920.0},
      {"qwen3-1.7b", 1720574976.0},
      {"qwen3-4b", 4022468096.0},
      {"qwen3-14b", 14768307200.0},
      {"qwen3-32b", 32762123264.0},
      {"qwen3-235b-a22b", 235093634560.0},
      {"kimi-k2", 1026408232448.0},
      {"glm4.5", 352797829024.0},
      {"glm4.5-air", 106852251264.0},
      {"gemma3-1b", 999885952.0},
      {"gemma3-4b", 3880263168.0},
      {"gemma3-12b", 11766034176.0},
      {"gemma3-27b", 27009346304.0},
      {"gpt-oss-20b", 20914757184.0},
      {"gpt-oss-120b", 116829156672.0},
      {"phi-4", 14659507200.0},
      {"olmo2-7b", 7298617344.0},
      {"olmo2-13b", 13716198400.0},
      {"olmo2-32b", 32234279936.0},
      // The hybrids: the hub's safetensors totals less the multi-token-prediction layer that
      // transformers leaves unloaded (and Qwen3.5's vision tower, which its text-tower preset
      // leaves out); families_test.cpp holds each sum to the hub's total.
      {"qwen3-next-80b-a3b", 79674391296.0},
      {"qwen3.5-27b", 26895998464.0},
      {"qwen3.5-35b-a3b", 34660610688.0},
      {"qwen3.5-122b-a10b", 122111526912.0},
      {"qwen3.5-397b-a17b", 396346350336.0},
      // DeepSeek-V2-Lite: counted by hand in families_test.cpp (the paper's "15.7B").
      {"deepseek-v2-lite", 15706484224.0},
      // DeepSeek-V3.2 and GLM-5 (sparse_attention_test.cpp: the hub's totals, with MTP).
      {"deepseek-v3.2", 671877944064.0},
      {"glm-5", 743911218432.0},
      // LFM2 (hybrid_test.cpp counts each by hand).
      {"lfm2-350m", 354483968.0},
      {"lfm2-700m", 742489344.0},
      {"lfm2-1.2b", 1170340608.0},
      // LFM2-8B-A1B: counted by hand in short_conv_test.cpp (the card's "8.3B total").
      {"lfm2-8b-a1b", 8339930560.0},
      // Ling-lite: counted by hand in families_test.cpp (the card's "16.8B").
      {"ling-lite", 16801974272.0},
      // Ling-mini-2.0: counted by hand in families_test.cpp (the card's 16.26B and 789M).
      {"ling-mini-2.0", 16255643392.0},
      // Gemma 4 31B's text tower (gemma4_test.cpp: with its 60 layer_scalar buffers, as the
      // checkpoint holds them).
      {"gemma4-31b", 30697345340.0},
      {"gemma4-26b-a4b", 25233141790.0},
      // Kimi Linear 48B-A3B: counted by hand in kimi_linear_test.cpp (the card rounds its 48.37B
      // beside the embedding and head to "48B"); the hub's safetensors metadata was not at hand.
      {"kimi-linear-48b-a3b", 49122681728.0},
      // Nemotron 3 Nano: llama.cpp's n_params for the BF16 checkpoint (nemotron_h_test.cpp counts
      // it by hand).
      {"nemotron3-nano-30b-a3b", 31577940288.0},
      // NVIDIA-Nemotron-Nano-9B-v2: the hub's safetensors total (nemotron_h_test.cpp).
      {"nemotron-nano-9b-v2", 8888227328.0},
      // Nemotron 3 Super: the BF16 checkpoint's index less its MTP block (nemotron_h_test.cpp).
      {"nemotron3-super-120b-a12b", 120668707840.0},
  };
  CHECK(std::size(published) == preset_models().size());
  for (const Published& model : published) {
    CAPTURE(model.id);
    const ModelShape* shape = find_preset(model.id);
    REQUIRE(shape != nullptr);
    CHECK(count_parameters(*shape) == model.parameters);
  }
}

TEST_CASE("GPT-2 124M by hand: biased projections, a plain MLP, LayerNorms and 1,024 positions") {
  const ModelShape& gpt2 = *find_preset("gpt2");
  const double h = 768, f = 4 * 768, v = 50257, positions = 1024;
  const double attention = 4 * h * h + 4 * h;  // c_attn h x 3h + 3h, c_proj h x h + h
  const double mlp = 2 * h * f + f + h;        // c_fc h x f + f, c_proj f x h + h
  const double norms = 2 * 2 * h;              // ln_1, ln_2: weight and bias
  CHECK(attention + mlp + norms == 7087872);
  CHECK(count_parameters(gpt2) == 12 * (attention + mlp + norms) + v * h + positions * h + 2 * h);
  CHECK(count_parameters(gpt2) == 124439808);
  const ParameterCounts counts = parameter_counts(gpt2);
  CHECK(counts.position_embedding == positions * h);
  CHECK(counts.output_head == 0);  // tied to wte
  CHECK(counts.final_norm == 2 * h);
}

TEST_CASE("each GPT-block difference adds what its weights hold, and nothing else") {
  const ModelShape& base = *find_preset("llama2-7b");
  const double layers = 32, h = 4096, f = 11008, v = 32000;
  ModelShape plain = base;
  plain.gated_mlp = false;  // no gate projection
  CHECK(count_parameters(base) - count_parameters(plain) == layers * h * f);
  plain.mlp_bias = true;  // up's f and down's h
  CHECK(count_parameters(plain) - count_parameters(base) == layers * (f + h) - layers * h * f);
  ModelShape layer_norms = base;
  layer_norms.norm_bias = true;  // two norms per layer and the final norm gain h each
  CHECK(count_parameters(layer_norms) - count_parameters(base) == layers * 2 * h + h);
  ModelShape positions = base;
  positions.num_position_embeddings = 2050;
  CHECK(count_parameters(positions) - count_parameters(base) == 2050 * h);
  ModelShape head_bias = base;
  head_bias.output_head_bias = true;
  CHECK(count_parameters(head_bias) - count_parameters(base) == v);
}

TEST_CASE("Pythia 160M: 85,056,000 parameters outside its embedding and untied head") {
  const ModelShape& pythia = *find_preset("pythia-160m");
  const double embeddings = 2 * 50304.0 * 768;  // embed_in and embed_out
  CHECK(count_parameters(pythia) - embeddings == 85056000);
}

TEST_CASE("Gemma 2 9B: 256-wide heads, four norms per layer and a tied embedding make 9.24 B") {
  const ModelShape& gemma = *find_preset("gemma2-9b");
  CHECK(head_dim_of(gemma) == 256);
  const double h = 3584, q = 16 * 256, kv = 8 * 256, f = 14336, v = 256000;
  const double per_layer = h * q + 2 * h * kv + q * h + 3 * h * f + 4 * h;
  CHECK(count_parameters(gemma) == 42 * per_layer + v * h + h);
  // Had queries been h wide (head_dim h/a = 224), the count would be smaller.
  ModelShape narrow = gemma;
  narrow.head_dim = 0;
  CHECK(count_parameters(gemma) - count_parameters(narrow) ==
        42 * (2 * h * (q - h) + 2 * h * (kv - h / 2)));
}

TEST_CASE("biases add their widths: Q, K and V biases q + 2·kv, O h, each expert's MLP 2·f + h") {
  const ModelShape& base = *find_preset("llama2-70b");
  const double layers = 80, h = 8192, f = 28672, kv = 8 * 128;
  ModelShape qkv = base;
  qkv.attention_qkv_bias = true;
  CHECK(count_parameters(qkv) - count_parameters(base) == layers * (h + 2 * kv));
  ModelShape output = base;
  output.attention_output_bias = true;
  CHECK(count_parameters(output) - count_parameters(base) == layers * h);
  ModelShape mlp = base;
  mlp.mlp_bias = true;
  CHECK(count_parameters(mlp) - count_parameters(base) == layers * (2 * f + h));
  mlp.num_experts = 4;
  mlp.num_experts_per_token = 2;
  ModelShape experts = base;
  experts.num_experts = 4;
  experts.num_experts_per_token = 2;
  CHECK(count_parameters(mlp) - count_parameters(experts) == layers * 4 * (2 * f + h));
}

TEST_CASE("a mixture of E experts holds E MLPs and an h-by-E router per layer, top-k adds none") {
  const ModelShape& mistral = *find_preset("mistral-7b");
  const ModelShape& mixtral = *find_preset("mixtral-8x7b");
  const double h = 4096, f = 14336;
  CHECK(count_parameters(mixtral) - count_parameters(mistral) == 32 * (7 * 3 * h * f + h * 8));
  ModelShape top_one = mixtral;
  top_one.num_experts_per_token = 1;
  CHECK(count_parameters(top_one) == count_parameters(mixtral));
}

TEST_CASE("norms count h parameters each, per layer") {
  ModelShape four_norms = *find_preset("llama3-8b");
  four_norms.norms_per_layer = 4;
  CHECK(count_parameters(four_norms) - count_parameters(*find_preset("llama3-8b")) ==
        32 * 2 * 4096.0);
}

TEST_CASE(
    "tensor parallelism splits matrices and column biases, row biases and router stay whole") {
  ModelShape shape = *find_preset("mixtral-8x7b");
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  const ParameterCounts counts = parameter_counts(shape);
  const double h = 4096, f = 14336, q = 4096, kv = 1024, e = 8;
  CHECK(counts.attention_and_mlp_per_layer ==
        2 * h * q + 2 * h * kv + q + 2 * kv + e * (3 * h * f + 2 * f));
  CHECK(counts.replicated_per_layer == h + e * h + h * e);
  CHECK(counts.norms_per_layer == 2 * h);
}

TEST_CASE("a shape's problems are named by their config.json fields") {
  ModelShape shape = *find_preset("llama3-8b");
  CHECK(model_shape_problem(shape).empty());
  shape.num_key_value_heads = 5;
  CHECK(model_shape_problem(shape) ==
        "num_key_value_heads (5) must divide num_attention_heads (32).");
  shape = *find_preset("llama3-8b");
  shape.hidden_size = 4000;
  shape.num_attention_heads = 24;
  CHECK(model_shape_problem(shape) ==
        "num_attention_heads (24) must divide hidden_size (4,000) when head_dim is not given.");
  shape.head_dim = 128;
  CHECK(model_shape_problem(shape).empty());
  shape = *find_preset("llama3-8b");
  shape.num_layers = 0;
  CHECK(model_shape_problem(shape) ==
        "num_hidden_layers must be a whole number from 1 to 1,000; it is 0.");
  shape = *find_preset("llama3-8b");
  shape.vocab_size = -1;
  CHECK(model_shape_problem(shape) ==
        "vocab_size must be a whole number from 1 to 16,777,216; it is -1.");
  shape = *find_preset("llama3-8b");
  shape.head_dim = -1;
  CHECK(model_shape_problem(shape) ==
        "head_dim must be a whole number from 0 to 1,048,576; it is -1.");
  shape = *find_preset("llama3-8b");
  shape.norms_per_layer = 17;
  CHECK(model_shape_problem(shape) ==
        "norms_per_layer must be a whole number from 0 to 16; it is 17.");
  shape = *find_preset("mixtral-8x7b");
  shape.num_experts_per_token = 0;
  CHECK(model_shape_problem(shape) ==
        "num_experts_per_tok must be a whole number from 1 to num_local_experts (8); it is 0.");
  shape = *find_preset("llama3-8b");
  shape.name = "";
  CHECK(model_shape_problem(shape) == "The model's name must be from 1 to 100 bytes long.");
  shape.name = std::string(101, 'x');
  CHECK(model_shape_problem(shape) == "The model's name must be from 1 to 100 bytes long.");
}

TEST_CASE("the largest shape the bounds allow still counts to a finite number") {
  ModelShape huge;
  huge.name = "huge";
  huge.num_layers = kMaxModelLayers;
  huge.hidden_size = kMaxModelWidth;
  huge.ffn_hidden_size = kMaxModelWidth;
  huge.num_attention_heads = kMaxModelWidth;
  huge.num_key_value_heads = kMaxModelWidth;
  huge.head_dim = kMaxModelWidth;
  huge.vocab_size = kMaxVocabSize;
  huge.num_experts = kMaxExperts;
  huge.num_experts_per_token = kMaxExperts;
  huge.attention_qkv_bias = huge.attention_output_bias = huge.mlp_bias = true;
  huge.norms_per_layer = kMaxNormsPerLayer;
  REQUIRE(model_shape_problem(huge).empty());
  CHECK(std::isfinite(count_parameters(huge)));
  CHECK(count_parameters(huge) > 1e21);
}

}  // namespace models_test
