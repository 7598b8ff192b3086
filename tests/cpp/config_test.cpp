// The config.json parser: every field and default, each preset's published config.json, and
// hostile input of every kind, which must give a one-line message and never a crash.
#include "trainmem/config.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>

#include "hub_configs.hpp"
#include "trainmem/format.hpp"

using namespace trainmem;

namespace config_test {

namespace {

// A small valid config, for tests that change one field.
std::string config_with(const std::string& extra_fields) {
  return R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "intermediate_size": 14336, "vocab_size": 32000)" +
         (extra_fields.empty() ? "" : ", " + extra_fields) + "}";
}

// The same config with one required field's value replaced (or removed, for "").
std::string config_where(const std::string& field, const std::string& value) {
  std::string fields;
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "vocab_size"}) {
    std::string text = std::string(key) == "hidden_size"           ? "4096"
                       : std::string(key) == "num_hidden_layers"   ? "32"
                       : std::string(key) == "num_attention_heads" ? "32"
                       : std::string(key) == "intermediate_size"   ? "14336"
                                                                   : "32000";
    if (key == field) {
      if (value.empty()) continue;
      text = value;
    }
    if (!fields.empty()) fields += ", ";
    fields += "\"" + std::string(key) + "\": " + text;
  }
  return "{" + fields + "}";
}

ModelShape parsed(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  CHECK(result.answer.message.empty());
  return result.shape;
}

void check_refused(const std::string& text, const std::string& message) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  CHECK(result.answer.message == message);
}

// What every refusal must look like, whatever the input.
void check_one_line_refusal(const ConfigParse& result) {
  CHECK(result.answer.status == Status::kInvalidInput);
  CHECK(result.answer.message.rfind("config.json: ", 0) == 0);
  CHECK(result.answer.message.find('\n') == std::string::npos);
  CHECK(result.answer.message.find('\r') == std::string::npos);
  // The longest names every model_type trainmem reads (some 620 characters with the hybrids).
  CHECK(result.answer.message.size() < 700);
}

std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("each preset's published config.json parses to exactly that preset's shape and count") {
  CHECK(hub_configs().size() == preset_models().size());
  for (const HubConfig& hub : hub_configs()) {
    CAPTURE(hub.preset_id);
    const ModelShape* preset = find_preset(hub.preset_id);
    REQUIRE(preset != nullptr);
    const ConfigParse result = parse_hf_config(hub.text, hub.multimodal);
    REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
    const ModelShape& shape = result.shape;
    CHECK(shape.id == kCustomModelId);
    CHECK(shape.source == "config.json");
    CHECK(shape.num_layers == preset->num_layers);
    CHECK(shape.hidden_size == preset->hidden_size);
    CHECK(shape.ffn_hidden_size == preset->ffn_hidden_size);
    CHECK(shape.num_attention_heads == preset->num_attention_heads);
    CHECK(shape.num_key_value_heads == preset->num_key_value_heads);
    CHECK(shape.vocab_size == preset->vocab_size);
    CHECK(shape.tied_embeddings == preset->tied_embeddings);
    CHECK(shape.head_dim == preset->head_dim);
    CHECK(shape.attention_qkv_bias == preset->attention_qkv_bias);
    CHECK(shape.attention_output_bias == preset->attention_output_bias);
    CHECK(shape.mlp_bias == preset->mlp_bias);
    CHECK(shape.norms_per_layer == preset->norms_per_layer);
    CHECK(shape.num_experts == preset->num_experts);
    CHECK(shape.num_experts_per_token == preset->num_experts_per_token);
    CHECK(shape.gated_mlp == preset->gated_mlp);
    CHECK(shape.norm_bias == preset->norm_bias);
    CHECK(shape.num_position_embeddings == preset->num_position_embeddings);
    CHECK(shape.max_positions == preset->max_positions);
    CHECK(shape.output_head_bias == preset->output_head_bias);
    CHECK(shape.parallel_attention_mlp == preset->parallel_attention_mlp);
    CHECK(shape.moe_ffn_hidden_size == preset->moe_ffn_hidden_size);
    CHECK(shape.shared_expert_ffn_hidden_size == preset->shared_expert_ffn_hidden_size);
    CHECK(shape.shared_expert_gate == preset->shared_expert_gate);
    CHECK(shape.router_bias == preset->router_bias);
    CHECK(shape.num_dense_layers == preset->num_dense_layers);
    CHECK(shape.qk_norm == preset->qk_norm);
    CHECK(shape.qk_norm_whole == preset->qk_norm_whole);
    CHECK(shape.attention_sinks == preset->attention_sinks);
    CHECK(shape.clamped_swiglu == preset->clamped_swiglu);
    CHECK(shape.moe_layer_step == preset->moe_layer_step);
    CHECK(shape.num_mtp_layers == preset->num_mtp_layers);
    CHECK(shape.recurrent_state_fp32 == preset->recurrent_state_fp32);
    CHECK(shape.q_lora_rank == preset->q_lora_rank);
    CHECK(shape.kv_lora_rank == preset->kv_lora_rank);
    CHECK(shape.qk_nope_head_dim == preset->qk_nope_head_dim);
    CHECK(shape.qk_rope_head_dim == preset->qk_rope_head_dim);
    CHECK(shape.v_head_dim == preset->v_head_dim);
    CHECK(count_parameters(shape) == count_parameters(*preset));
  }
}

TEST_CASE(
    "a config's name is its _name_or_path, else its architecture, else its model_type, else "
    "'Custom model'") {
  CHECK(parsed(hub_config("llama2-7b")).name == "meta-llama/Llama-2-7b-hf");
  CHECK(parsed(hub_config("mixtral-8x7b")).name == "MixtralForCausalLM");
  CHECK(parsed(config_with(R"("architectures": [], "model_type": "qwen2")")).name == "qwen2");
  CHECK(parsed(config_with("")).name == "Custom model");
  CHECK(parsed(config_with(R"("_name_or_path": "", "model_type": "llama")")).name == "llama");
  CHECK(parsed(config_with(R"("_name_or_path": null)")).name == "Custom model");
  CHECK(parsed(config_with(R"("_name_or_path": 7, "model_type": "mistral")")).name == "mistral");
}

TEST_CASE("a name loses its control and bidirectional characters and keeps at most 100 bytes") {
  CHECK(parsed(config_with(R"("_name_or_path": " my\u0000model\n\u202e\u0085 7B\t ")")).name ==
        "mymodel 7B");
  // "a" and 60 two-byte "é": 1 + 49 × 2 = 99 bytes fit; the 50th "é" would make 101.
  std::string long_name = "a";
  for (int i = 0; i < 60; ++i) long_name += "\u00e9";
  const std::string name = parsed(config_with("\"_name_or_path\": \"" + long_name + "\"")).name;
  CHECK(name.size() == 99);
  CHECK(name == long_name.substr(0, 99));
  CHECK(parsed(config_with(R"("_name_or_path": "\u0001\u0002")")).name == "Custom model");
}

TEST_CASE("optional fields take transformers' defaults when absent or null") {
  const ModelShape defaults = parsed(config_with(""));
  CHECK(defaults.num_key_value_heads == 32);  // no grouped-query attention
  CHECK(defaults.head_dim == 0);
  CHECK_FALSE(defaults.tied_embeddings);
  CHECK_FALSE(defaults.attention_qkv_bias);
  CHECK_FALSE(defaults.attention_output_bias);
  CHECK_FALSE(defaults.mlp_bias);
  CHECK(defaults.norms_per_layer == 2);
  CHECK(defaults.num_experts == 1);
  CHECK(defaults.num_experts_per_token == 1);

  const ModelShape nulls = parsed(config_with(
      R"("num_key_value_heads": null, "head_dim": null, "tie_word_embeddings": null,
         "attention_bias": null, "mlp_bias": null, "num_local_experts": null,
         "num_experts_per_tok": null, "model_type": null)"));
  CHECK(nulls.num_key_value_heads == 32);
  CHECK(nulls.head_dim == 0);
  CHECK_FALSE(nulls.tied_embeddings);
  CHECK(nulls.num_experts == 1);
}

TEST_CASE("every field is read: heads, head_dim, ties, biases and experts") {
  const ModelShape shape = parsed(config_with(
      R"("num_key_value_heads": 4, "head_dim": 96, "tie_word_embeddings": true,
         "attention_bias": true, "mlp_bias": true, "num_local_experts": 16,
         "num_experts_per_tok": 4)"));
  CHECK(shape.hidden_size == 4096);
  CHECK(shape.num_layers == 32);
  CHECK(shape.num_attention_heads == 32);
  CHECK(shape.ffn_hidden_size == 14336);
  CHECK(shape.vocab_size == 32000);
  CHECK(shape.num_key_value_heads == 4);
  CHECK(shape.head_dim == 96);
  CHECK(shape.tied_embeddings);
  CHECK(shape.attention_qkv_bias);  // transformers' attention_bias: Q, K, V and O
  CHECK(shape.attention_output_bias);
  CHECK(shape.mlp_bias);
  CHECK(shape.num_experts == 16);
  CHECK(shape.num_experts_per_token == 4);
  // A whole number written with a fraction part is still whole.
  CHECK(parsed(config_where("hidden_size", "4096.0")).hidden_size == 4096);
}

TEST_CASE("num_experts stands in for num_local_experts, which wins when both are given") {
  CHECK(parsed(config_with(R"("num_experts": 4, "num_experts_per_tok": 2)")).num_experts == 4);
  CHECK(parsed(config_with(R"("num_local_experts": 8, "num_experts": 4, "num_experts_per_tok": 2)"))
            .num_experts == 8);
}

TEST_CASE("model_type qwen2 means Q, K and V biases, gemma2 four norms and tied embeddings") {
  const ModelShape qwen = parsed(config_with(R"("model_type": "qwen2")"));
  CHECK(qwen.attention_qkv_bias);
  CHECK_FALSE(qwen.attention_output_bias);
  CHECK(parsed(config_with(R"("model_type": "qwen2", "attention_bias": true)")).attention_qkv_bias);

  const ModelShape gemma2 = parsed(config_with(R"("model_type": "gemma2")"));
  CHECK(gemma2.norms_per_layer == 4);
  CHECK(gemma2.tied_embeddings);
  CHECK_FALSE(parsed(config_with(R"("model_type": "gemma2", "tie_word_embeddings": false)"))
                  .tied_embeddings);
  const ModelShape gemma = parsed(config_with(R"("model_type": "gemma")"));
  CHECK(gemma.tied_embeddings);
  CHECK(gemma.norms_per_layer == 2);
  CHECK_FALSE(parsed(config_with(R"("model_type": "llama")")).tied_embeddings);
}

TEST_CASE("a missing required field is named with what it must be") {
  check_refused(config_where("hidden_size", ""),
                "config.json: 'hidden_size' is missing; it must be a whole number from 1 to "
                "1,048,576.");
  check_refused(config_where("num_hidden_layers", ""),
                "config.json: 'num_hidden_layers' is missing; it must be a whole number from 1 to "
                "1,000.");
  check_refused(config_where("num_attention_heads", ""),
                "config.json: 'num_attention_heads' is missing; it must be a whole number from 1 "
                "to 1,048,576.");
  check_refused(config_where("intermediate_size", ""),
                "config.json: 'intermediate_size' is missing; it must be a whole number from 1 to "
                "1,048,576.");
  check_refused(config_where("vocab_size", ""),
                "config.json: 'vocab_size' is missing; it must be a whole number from 1 to "
                "16,777,216.");
  check_refused(R"({"text_config": {"hidden_size": 4096}})",
                "config.json: 'hidden_size' is missing; this looks like a multimodal config, whose "
                "text model's fields sit under 'text_config': give trainmem a text model's "
                "config.json.");
}

TEST_CASE("a dimension of the wrong type or out of range is refused, quoting the value") {
  const std::string allowed = "must be a whole number from 1 to 1,048,576; it is ";
  check_refused(config_where("hidden_size", "\"4096\""),
                "config.json: 'hidden_size' " + allowed + "\"4096\".");
  check_refused(config_where("hidden_size", "4096.5"),
                "config.json: 'hidden_size' " + allowed + "4096.5.");
  check_refused(config_where("hidden_size", "true"),
                "config.json: 'hidden_size' " + allowed + "true.");
  check_refused(config_where("hidden_size", "null"),
                "config.json: 'hidden_size' " + allowed + "null.");
  check_refused(config_where("hidden_size", "{}"),
                "config.json: 'hidden_size' " + allowed + "an object.");
  check_refused(config_where("hidden_size", "[4096]"),
                "config.json: 'hidden_size' " + allowed + "an array.");
  check_refused(config_where("hidden_size", "0"), "config.json: 'hidden_size' " + allowed + "0.");
  check_refused(config_where("hidden_size", "-4096"),
                "config.json: 'hidden_size' " + allowed + "-4096.");
  check_refused(config_where("hidden_size", "1048577"),
                "config.json: 'hidden_size' " + allowed + "1048577.");
  check_refused(config_where("hidden_size", "99999999999999999999999"),
                "config.json: 'hidden_size' " + allowed + "1e+23.");
  check_refused(config_where("hidden_size", "18446744073709551615"),
                "config.json: 'hidden_size' " + allowed + "18446744073709551615.");
  check_refused(config_where("hidden_size", "-9223372036854775808"),
                "config.json: 'hidden_size' " + allowed + "-9223372036854775808.");
  check_refused(config_where("hidden_size", "1e400"),
                "config.json: 'hidden_size' " + allowed + "1e400.");
  check_refused(config_where("num_hidden_layers", "1001"),
                "config.json: 'num_hidden_layers' must be a whole number from 1 to 1,000; it is "
                "1001.");
  check_refused(config_where("vocab_size", "16777217"),
                "config.json: 'vocab_size' must be a whole number from 1 to 16,777,216; it is "
                "16777217.");
  check_refused(config_with(R"("head_dim": 0)"),
                "config.json: 'head_dim' must be a whole number from 1 to 1,048,576; it is 0.");
  check_refused(config_with(R"("num_key_value_heads": "8")"),
                "config.json: 'num_key_value_heads' must be a whole number from 1 to 1,048,576; "
                "it is \"8\".");
  check_refused(config_with(R"("num_local_experts": 1025, "num_experts_per_tok": 2)"),
                "config.json: 'num_local_experts' must be a whole number from 1 to 1,024; it is "
                "1025.");
  check_refused(config_with(R"("num_experts": 0)"),
                "config.json: 'num_experts' must be a whole number from 1 to 1,024; it is 0.");
}

TEST_CASE("a refused string is quoted in escaped ASCII, so no value can break the line") {
  check_refused(config_where("hidden_size", R"("\u202e40\"96\n\u00e9\ud83d\ude00\\")"),
                "config.json: 'hidden_size' must be a whole number from 1 to 1,048,576; it is "
                "\"\\u202e40\\\"96\\u000a\\u00e9\\ud83d\\ude00\\\\\".");
  check_refused(config_where("hidden_size", "0.1"),
                "config.json: 'hidden_size' must be a whole number from 1 to 1,048,576; it is "
                "0.1.");
}

TEST_CASE("a long refused value is quoted only in part") {
  const std::string long_text(500, 'x');
  check_refused(config_where("hidden_size", "\"" + long_text + "\""),
                "config.json: 'hidden_size' must be a whole number from 1 to 1,048,576; it is \"" +
                    std::string(39, 'x') + "….");
}

TEST_CASE("true/false fields and model_type refuse other types") {
  check_refused(config_with(R"("tie_word_embeddings": "yes")"),
                "config.json: 'tie_word_embeddings' must be true or false; it is \"yes\".");
  check_refused(config_with(R"("attention_bias": 1)"),
                "config.json: 'attention_bias' must be true or false; it is 1.");
  check_refused(config_with(R"("mlp_bias": [])"),
                "config.json: 'mlp_bias' must be true or false; it is an array.");
  check_refused(config_with(R"("model_type": 5)"),
                "config.json: 'model_type' must be a string, such as \"llama\"; it is 5.");
}

TEST_CASE("the shape must hang together: heads, key/value heads and top-k") {
  const std::string odd_heads = R"({"hidden_size": 4000, "num_hidden_layers": 32,
      "num_attention_heads": 24, "intermediate_size": 14336, "vocab_size": 32000)";
  check_refused(odd_heads + "}",
                "config.json: num_attention_heads (24) must divide hidden_size (4,000) when "
                "head_dim is not given.");
  CHECK(parsed(odd_heads + R"(, "head_dim": 128})").head_dim == 128);
  check_refused(config_with(R"("num_key_value_heads": 5)"),
                "config.json: num_key_value_heads (5) must divide num_attention_heads (32).");
  check_refused(config_with(R"("num_local_experts": 8, "num_experts_per_tok": 9)"),
                "config.json: num_experts_per_tok must be a whole number from 1 to "
                "num_local_experts (8); it is 9.");
  check_refused(config_with(R"("num_experts_per_tok": 2)"),
                "config.json: num_experts_per_tok must be a whole number from 1 to "
                "num_local_experts (1); it is 2.");
  check_refused(config_with(R"("num_local_experts": 8)"),
                "config.json: 'num_experts_per_tok' is missing; a mixture of 8 experts needs its "
                "top-k, a whole number from 1 to 8.");
}

TEST_CASE("architectures a shape cannot hold are refused, not counted wrong") {
  check_refused(config_with(R"("num_experts": 128, "num_experts_per_tok": 8,
                               "moe_intermediate_size": 768)"),
                "config.json: 'moe_intermediate_size' (experts of a width of their own) "
                "is not read for this model_type: trainmem reads it for qwen2_moe, qwen3_moe, "
                "deepseek_v3, kimi_k2, glm4_moe, deepseek_v2, qwen3_next, qwen3_5_moe_text, "
                "deepseek_v32, glm_moe_dsa, gemma4_text, kimi_linear, nemotron_h, lfm2_moe, "
                "bailing_moe and hunyuan_v1_moe.");
  check_refused(
      config_with(R"("kv_lora_rank": 512)"),
      "config.json: 'kv_lora_rank' (low-rank latent attention) is not read for this "
      "model_type: trainmem reads it for deepseek_v3, kimi_k2, deepseek_v2, deepseek_v32, "
      "glm_moe_dsa and kimi_linear.");
  check_refused(
      config_with(R"("intermediate_size_mlp": 16384)"),
      "config.json: 'intermediate_size_mlp' (dense layers of a width of their own) is not "
      "read for this model_type: trainmem reads it for llama4_text.");
  check_refused(config_with(R"("model_type": "qwen3_moe", "num_experts": 8,
                               "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                               "shared_expert_intermediate_size": 64)"),
                "config.json: 'shared_expert_intermediate_size' (shared experts) is not read for "
                "this model_type: trainmem reads it for qwen2_moe, qwen3_next and "
                "qwen3_5_moe_text.");
  CHECK(
      parse_hf_config(config_with(R"("n_shared_experts": null, "q_lora_rank": 0)")).answer.status ==
      Status::kOk);
}

TEST_CASE("the top level must be an object") {
  check_refused("[]", "config.json: the top level must be a JSON object, {…}; it is an array.");
  check_refused("\"hidden_size\"",
                "config.json: the top level must be a JSON object, {…}; it is \"hidden_size\".");
  check_refused("4096", "config.json: the top level must be a JSON object, {…}; it is 4096.");
  check_refused("null", "config.json: the top level must be a JSON object, {…}; it is null.");
}

TEST_CASE("a __proto__ key is refused wherever it is") {
  check_refused(config_with(R"("__proto__": {"hidden_size": 1})"),
                "config.json: a '__proto__' key is not allowed.");
  check_refused(config_with(R"("rope_scaling": [{"__proto__": 1}])"),
                "config.json: a '__proto__' key is not allowed.");
  // As a value it is only text.
  CHECK(parse_hf_config(config_with(R"("_name_or_path": "__proto__")")).answer.status ==
        Status::kOk);
}

TEST_CASE("bare NaN and Infinity read as Python's json reads them, as transformers does") {
  // Nemotron-H's published config.json holds "time_step_limit": [0.0, Infinity].
  const ModelShape shape = parsed(config_with(
      R"("time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN, "z": "NaN Infinity")"));
  CHECK(shape.hidden_size == 4096);
  // A field trainmem reads holding one is refused by name, the constant said as Python writes it.
  check_refused(config_where("hidden_size", "Infinity"),
                "config.json: 'hidden_size' must be a whole number from 1 to 1,048,576; it is "
                "Infinity.");
  check_refused(config_where("vocab_size", "NaN"),
                "config.json: 'vocab_size' must be a whole number from 1 to 16,777,216; it is "
                "NaN.");
  // Only the whole words: a longer name is not a constant, and JSON's own errors after a constant
  // are placed in the text as written.
  check_refused("{\"a\": NaNa}", "config.json: the text is not valid JSON (line 1, column 7).");
  check_refused("{\"a\": [Infinity, -Infinity, x]}",
                "config.json: the text is not valid JSON (line 1, column 29).");
  check_refused("{\"a\": \"x\\\"\" Infinity}",
                "config.json: the text is not valid JSON (line 1, column 13).");
}

TEST_CASE("text that is not JSON, or not UTF-8, is refused with where it goes wrong") {
  check_refused("", "config.json: the text is empty; it must be a JSON object.");
  check_refused(" \n\t", "config.json: the text is empty; it must be a JSON object.");
  check_refused("{\"a\": x}", "config.json: the text is not valid JSON (line 1, column 7).");
  check_refused("{\n  \"a\": 1,\n}", "config.json: the text is not valid JSON (line 3, column 1).");
  // Where the reader gave up: at the "a" of what began as the literal true.
  check_refused("{\"a\": 1} trailing",
                "config.json: the text is not valid JSON (line 1, column 12).");
  check_refused("{\"a\": 1", "config.json: the text is not valid JSON (line 1, column 8).");
  // At the byte that breaks the UTF-8: the stray 0xFF, or the quote after a lone lead byte.
  check_refused("{\"a\": \"\xff\"}",
                "config.json: the text is not valid UTF-8 (line 1, column 8).");
  check_refused("{\"a\": \"\xc3\"}",
                "config.json: the text is not valid UTF-8 (line 1, column 9).");
  check_refused("\xef\xbb\xbf{\"a\": \"\xed\xa0\x80\"}",
                "config.json: the text is not valid UTF-8 (line 1, column 12).");
  check_refused("{\"a\": 1} // a comment",
                "config.json: the text is not valid JSON (line 1, column 10).");
  // nlohmann::json would stop reading at a NUL byte and ignore what follows.
  check_refused(std::string("{\"a\": 1}\0{\"hidden_size\": \"x\"}", 26),
                "config.json: the text holds a NUL byte (line 1, column 9), which JSON does not "
                "allow.");
  // A byte-order mark is allowed.
  CHECK(parse_hf_config("\xef\xbb\xbf" + config_with("")).answer.status == Status::kOk);
}

TEST_CASE("a number too large for a double is refused, naming its field when it is a dimension") {
  check_refused(config_with(R"("rope_theta": 1e400)"),
                "config.json: the number at line 2, column 77 is too large for JSON's 64-bit "
                "numbers.");
  check_refused(config_where("vocab_size", "-1e999"),
                "config.json: 'vocab_size' must be a whole number from 1 to 16,777,216; it is "
                "-1e999.");
}

TEST_CASE("text over 1 MiB is refused before it is parsed, 1 MiB exactly is read") {
  const std::string two_megabytes = config_with("") + std::string(2'000'000, ' ');
  check_refused(two_megabytes, "config.json: the text is " +
                                   format_count(static_cast<double>(two_megabytes.size())) +
                                   " bytes; at most 1,048,576 (1 MiB) are allowed.");
  CHECK(two_megabytes.size() > 2'000'000);
  std::string exactly = config_with("");
  exactly += std::string(static_cast<std::size_t>(kMaxConfigBytes) - exactly.size(), ' ');
  REQUIRE(exactly.size() == static_cast<std::size_t>(kMaxConfigBytes));
  CHECK(parse_hf_config(exactly).answer.status == Status::kOk);
  check_refused(exactly + " ",
                "config.json: the text is 1,048,577 bytes; at most 1,048,576 (1 MiB) are "
                "allowed.");
}

TEST_CASE("nesting 10,000 deep is refused before parsing, 64 levels are read") {
  const std::string deep_message =
      "config.json: objects and arrays nest more than 64 deep; a config.json needs a few "
      "levels.";
  check_refused(nested_arrays(10000), deep_message);
  check_refused(std::string(10000, '{'), deep_message);
  check_refused(config_with("\"rope_scaling\": " + nested_arrays(10000)), deep_message);
  // The top-level object is level 1: 63 arrays inside it make 64, 64 make 65.
  CHECK(parse_hf_config(config_with("\"x\": " + nested_arrays(63))).answer.status == Status::kOk);
  check_refused(config_with("\"x\": " + nested_arrays(64)), deep_message);
  // Brackets inside strings, escaped quotes included, are text, not nesting.
  CHECK(parse_hf_config(config_with("\"_name_or_path\": \"\\\"" + std::string(10000, '[') + "\""))
            .answer.status == Status::kOk);
}

TEST_CASE("every prefix of a real config is refused in one line, and only the whole is read") {
  const std::string text = hub_config("mixtral-8x7b");
  for (std::size_t length = 0; length < text.size(); ++length) {
    CAPTURE(length);
    const ConfigParse result = parse_hf_config(text.substr(0, length));
    check_one_line_refusal(result);
  }
  CHECK(parse_hf_config(text).answer.status == Status::kOk);
}

TEST_CASE("random corruption of a real config never crashes and always answers in one line") {
  const std::string original = hub_config("gemma2-9b");
  std::mt19937 random(20240917);
  std::uniform_int_distribution<std::size_t> position(0, original.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> flips(1, 4);
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = original;
    for (int flip = flips(random); flip > 0; --flip) {
      text[position(random)] = static_cast<char>(byte(random));
    }
    const ConfigParse result = parse_hf_config(text);
    if (result.answer.status == Status::kOk) {
      CHECK(model_shape_problem(result.shape).empty());
      CHECK(result.answer.message.empty());
    } else {
      check_one_line_refusal(result);
      ++refused;
    }
  }
  CHECK(refused > 0);
}

// ---- GPT-style blocks
// ----------------------------------------------------------------------------

namespace {

// facebook/opt-125m's config.json on the Hugging Face hub.
constexpr const char* kOpt125mConfig = R"({
  "_name_or_path": "facebook/opt-125m",
  "activation_dropout": 0.0,
  "activation_function": "relu",
  "architectures": ["OPTForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 2,
  "do_layer_norm_before": true,
  "dropout": 0.1,
  "eos_token_id": 2,
  "ffn_dim": 3072,
  "hidden_size": 768,
  "init_std": 0.02,
  "layerdrop": 0.0,
  "max_position_embeddings": 2048,
  "model_type": "opt",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 1,
  "prefix": "</s>",
  "torch_dtype": "float16",
  "transformers_version": "4.21.0.dev0",
  "use_cache": true,
  "vocab_size": 50272,
  "word_embed_proj_dim": 768
})";

// microsoft/phi-2's config.json on the Hugging Face hub.
constexpr const char* kPhi2Config = R"({
  "_name_or_path": "microsoft/phi-2",
  "architectures": ["PhiForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 50256,
  "embd_pdrop": 0.0,
  "eos_token_id": 50256,
  "hidden_act": "gelu_new",
  "hidden_size": 2560,
  "initializer_range": 0.02,
  "intermediate_size": 10240,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 2048,
  "model_type": "phi",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "partial_rotary_factor": 0.4,
  "qk_layernorm": false,
  "resid_pdrop": 0.1,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.37.0",
  "use_cache": true,
  "vocab_size": 51200
})";

// A GPT-2 config with one more field.
std::string gpt2_with(const std::string& extra_fields) {
  return R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257,
             "n_positions": 1024)" +
         (extra_fields.empty() ? "" : ", " + extra_fields) + "}";
}

}  // namespace

TEST_CASE("GPT-2's own field names are read: n_embd, n_layer, n_head, n_inner, n_positions") {
  const ModelShape gpt2 = parsed(gpt2_with(""));
  CHECK(gpt2.hidden_size == 768);
  CHECK(gpt2.num_layers == 12);
  CHECK(gpt2.num_attention_heads == 12);
  CHECK(gpt2.num_key_value_heads == 12);
  CHECK(gpt2.ffn_hidden_size == 4 * 768);  // n_inner absent: 4 · n_embd
  CHECK(gpt2.num_position_embeddings == 1024);
  CHECK(gpt2.tied_embeddings);
  CHECK_FALSE(gpt2.gated_mlp);
  CHECK(gpt2.norm_bias);
  CHECK(gpt2.norms_per_layer == 2);
  CHECK(count_parameters(gpt2) == 124439808);
  CHECK(parsed(gpt2_with(R"("n_inner": null)")).ffn_hidden_size == 3072);
  CHECK(parsed(gpt2_with(R"("n_inner": 2048)")).ffn_hidden_size == 2048);
  CHECK_FALSE(parsed(gpt2_with(R"("tie_word_embeddings": false)")).tied_embeddings);
  check_refused(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                    "vocab_size": 50257})",
                "config.json: 'n_positions' is missing; it must be a whole number from 1 to "
                "16,777,216.");
  check_refused(gpt2_with(R"("add_cross_attention": true)"),
                "config.json: 'add_cross_attention' must be false (absent or null means false): "
                "trainmem does not count cross-attention (an encoder-decoder's GPT-2).");
}

TEST_CASE("OPT-125M: 2,048 positions and fairseq's offset of 2 make 125,239,296 parameters") {
  // OPT-125M as Zhang et al. 2022 (arXiv:2205.01068) Table 1 names it; counted from transformers'
  // OPTForCausalLM: embed_tokens 50,272 × 768, embed_positions (2,048 + 2) × 768, 12 layers of
  // 7,087,872 (q/k/v/out_proj and fc1/fc2 with biases, two LayerNorms), the final LayerNorm, and
  // lm_head tied to embed_tokens.
  const ModelShape opt = parsed(kOpt125mConfig);
  CHECK(opt.name == "facebook/opt-125m");
  CHECK(opt.num_position_embeddings == 2050);
  CHECK(opt.ffn_hidden_size == 3072);
  CHECK(opt.tied_embeddings);
  CHECK(count_parameters(opt) == 12 * 7087872.0 + 50272.0 * 768 + 2050.0 * 768 + 2 * 768);
  CHECK(count_parameters(opt) == 125239296);
  // enable_bias false drops the projections' biases, not the LayerNorms'.
  const std::string no_bias = std::string(kOpt125mConfig)
                                  .replace(std::string(kOpt125mConfig).find("\"bos_token_id\""), 0,
                                           "\"enable_bias\": false, ");
  CHECK(count_parameters(opt) - count_parameters(parsed(no_bias)) == 12 * (4 * 768.0 + 3072 + 768));
}

TEST_CASE("OPT variants trainmem cannot count are refused, naming the field") {
  // facebook/opt-350m: 512-wide embeddings projected to 1,024, and post-norm layers.
  check_refused(R"({"model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24,
                    "num_attention_heads": 16, "ffn_dim": 4096, "vocab_size": 50272,
                    "max_position_embeddings": 2048, "word_embed_proj_dim": 512,
                    "do_layer_norm_before": false})",
                "config.json: 'word_embed_proj_dim' (512) must equal hidden_size (1024): "
                "trainmem does not count OPT's project_in and project_out.");
  const std::string opt = R"({"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12,
      "num_attention_heads": 12, "ffn_dim": 3072, "vocab_size": 50272,
      "max_position_embeddings": 2048, )";
  check_refused(opt + R"("do_layer_norm_before": false})",
                "config.json: 'do_layer_norm_before' must be true (absent or null means true): "
                "trainmem does not count post-norm layers.");
  check_refused(opt + R"("layer_norm_elementwise_affine": false})",
                "config.json: 'layer_norm_elementwise_affine' must be true (absent or null means "
                "true): trainmem does not count LayerNorms without weights and biases.");
  check_refused(opt + R"("_remove_final_layer_norm": true})",
                "config.json: '_remove_final_layer_norm' must be false (absent or null means "
                "false): trainmem does not count a decoder without its final LayerNorm.");
}

TEST_CASE("Phi-2: one LayerNorm per layer and a biased head make 2,779,683,840 parameters") {
  // microsoft/phi-2: 2.78B on its hub page; counted from transformers' PhiForCausalLM: per layer
  // q/k/v_proj and dense with biases (4·h² + 4·h), fc1 and fc2 with biases (2·h·f + f + h), one
  // input_layernorm (2·h); embed_tokens V·h, final_layernorm 2·h, lm_head V·h + V.
  const ModelShape phi = parsed(kPhi2Config);
  const double h = 2560, f = 10240, v = 51200;
  CHECK(phi.norms_per_layer == 1);
  CHECK(phi.output_head_bias);
  CHECK_FALSE(phi.tied_embeddings);
  CHECK(phi.num_position_embeddings == 0);
  CHECK(count_parameters(phi) ==
        32 * (4 * h * h + 4 * h + 2 * h * f + f + h + 2 * h) + 2 * v * h + v + 2 * h);
  CHECK(count_parameters(phi) == 2779683840);
  check_refused(
      std::string(kPhi2Config).replace(std::string(kPhi2Config).find("false,"), 5, "true"),
      "config.json: 'qk_layernorm' must be false (absent or null means false): trainmem "
      "does not count Phi's per-head query and key norms.");
}

TEST_CASE("a model_type trainmem does not know is refused, naming those it reads") {
  check_refused(
      config_with(R"("model_type": "falcon")"),
      "config.json: 'model_type' must be one of llama, mistral, mixtral, qwen2, gemma, "
      "gemma2, gpt2, gpt_neox, opt, phi, qwen3, qwen3_moe, qwen2_moe, deepseek_v3, "
      "deepseek_v2, kimi_k2, deepseek_v32, glm_moe_dsa, phi3, gemma3_text, olmo2, smollm3, "
      "granite, cohere2, qwen2_5_vl_text, qwen2_vl_text, glm4_moe, gpt_oss, llama4_text, "
      "qwen3_next, qwen3_5_moe_text, "
      "minimax_m2, qwen3_5_text, lfm2, lfm2_moe, bailing_moe, hunyuan_v1_moe, gemma4_text, "
      "kimi_linear, "
      "nemotron_h, jamba, minimax, gemma3, gemma4, "
      "llama4, mistral3, "
      "qwen2_5_vl, "
      "qwen2_vl, qwen3_5 or "
      "qwen3_5_moe (or absent, for a Llama-style block); it is \"falcon\".");
  // GPT-2's names without a model_type are not guessed at.
  check_refused(R"({"n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257})",
                "config.json: 'model_type' is missing; a config with GPT-2's 'n_embd' must say its "
                "model_type, such as \"gpt2\".");
}

TEST_CASE("an activation that is not one of transformers' elementwise ones is refused") {
  const std::string allowed =
      "one of transformers' elementwise activations (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, "
      "gelu_accurate, gelu_python, gelu_10, quick_gelu, relu, relu2, relu6, leaky_relu, silu, "
      "swish, mish, tanh, sigmoid, laplace or linear)";
  const std::string pythia = R"({"model_type": "gpt_neox", "hidden_size": 768,
      "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
      "vocab_size": 50304, )";
  check_refused(pythia + R"("hidden_act": "swiglu"})",
                "config.json: 'hidden_act' must be " + allowed + "; it is \"swiglu\".");
  check_refused(gpt2_with(R"("activation_function": "prelu")"),
                "config.json: 'activation_function' must be " + allowed + "; it is \"prelu\".");
  check_refused(config_with(R"("hidden_act": 3)"),
                "config.json: 'hidden_act' must be " + allowed + "; it is 3.");
  CHECK(parsed(pythia + R"("hidden_act": "gelu_fast"})").ffn_hidden_size == 3072);
  // GPT-NeoX's attention biases follow attention_bias, true unless it says otherwise.
  CHECK(count_parameters(parsed(pythia + R"("hidden_act": "gelu"})")) -
            count_parameters(parsed(pythia + R"("attention_bias": false})")) ==
        12 * (3 * 768 + 768));
}

TEST_CASE(
    "experts are read where transformers builds them: mixtral (8 and 2 by default), Qwen's "
    "mixtures, or a block without a model_type") {
  // MixtralConfig's defaults when the config leaves them out.
  const ModelShape mixtral = parsed(config_with(R"("model_type": "mixtral")"));
  CHECK(mixtral.num_experts == 8);
  CHECK(mixtral.num_experts_per_token == 2);
  CHECK(parsed(config_with(R"("model_type": "mixtral", "num_local_experts": 4)"))
            .num_experts_per_token == 2);
  // A named dense family builds one MLP a layer: more experts than one are refused.
  check_refused(config_with(R"("model_type": "mistral", "num_local_experts": 8,
                               "num_experts_per_tok": 2)"),
                "config.json: 'num_local_experts' is not read for a mistral config: transformers "
                "builds one MLP a layer there (a mixture of experts is model_type mixtral, "
                "qwen2_moe, qwen3_5_moe_text, qwen3_moe or qwen3_next).");
  check_refused(config_with(R"("model_type": "qwen2", "num_experts": 4, "num_experts_per_tok": 2)"),
                "config.json: 'num_experts' is not read for a qwen2 config: transformers builds "
                "one MLP a layer there (a mixture of experts is model_type mixtral, qwen2_moe, "
                "qwen3_5_moe_text, qwen3_moe or qwen3_next).");
  CHECK(parsed(config_with(R"("model_type": "llama", "num_local_experts": 1)")).num_experts == 1);
}

TEST_CASE("biases are counted where transformers' modeling code reads them from the config") {
  const std::string biased = R"("attention_bias": true, "mlp_bias": true)";
  // Mistral's and Phi-3's layers are built with bias=False whatever the config says.
  for (const char* type : {"mistral", "mixtral", "phi3"}) {
    CAPTURE(type);
    const ModelShape shape =
        parsed(config_with(std::string(R"("model_type": ")") + type + "\", " + biased));
    CHECK_FALSE(shape.attention_qkv_bias);
    CHECK_FALSE(shape.attention_output_bias);
    CHECK_FALSE(shape.mlp_bias);
  }
  // Qwen 3's attention reads attention_bias; its MLP has none.
  const ModelShape qwen3 = parsed(config_with(R"("model_type": "qwen3", )" + biased));
  CHECK(qwen3.attention_output_bias);
  CHECK_FALSE(qwen3.mlp_bias);
  // Llama's reads both.
  CHECK(parsed(config_with(R"("model_type": "llama", )" + biased)).mlp_bias);
}

TEST_CASE("a multimodal config without its vision_config is refused, not counted without a tower") {
  check_refused(R"({"model_type": "gemma3", "text_config": {"hidden_size": 2560,
                   "intermediate_size": 10240, "num_hidden_layers": 34,
                   "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                   "vocab_size": 262208}})",
                "config.json: 'vision_config' is missing; transformers would build its default "
                "vision tower, which is not counted: give the vision_config of the checkpoint.");
}

}  // namespace config_test
