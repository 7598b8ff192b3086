// Today's architectures' weights: fine-grained and shared experts, dense layers mixed into a
// mixture, DeepSeek-V3's router bias, Qwen3's q/k norms and multi-head latent attention, each
// counted by hand on a tiny shape, read from config.json, and placed on pipeline stages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/models.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace moe_mla_test {

namespace {

// One layer of attention of h = 16 with 2 heads of 8 (Q, K, V and O: 4 · 16 · 16 = 1,024), a
// dense MLP of 8 (3 · 16 · 8 = 384), two RMSNorms (32), a vocabulary of 10 (embedding and head,
// 160 each) and a final norm (16).
ModelShape tiny() {
  ModelShape shape;
  shape.id = kCustomModelId;
  shape.name = "Tiny";
  shape.num_layers = 1;
  shape.hidden_size = 16;
  shape.ffn_hidden_size = 8;
  shape.num_attention_heads = 2;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 10;
  return shape;
}

// Two layers: the first dense, the second a mixture of 4 experts of 4, top-2, a shared expert
// of 8 and DeepSeek-V3's router bias.
ModelShape tiny_mixture() {
  ModelShape shape = tiny();
  shape.num_layers = 2;
  shape.num_experts = 4;
  shape.num_experts_per_token = 2;
  shape.moe_ffn_hidden_size = 4;
  shape.shared_expert_ffn_hidden_size = 8;
  shape.router_bias = true;
  shape.num_dense_layers = 1;
  return shape;
}

ModelShape parsed(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  return result.shape;
}

std::string refusal(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

// A tiny deepseek_v3 config.json; `extra` adds or overrides fields (the later key wins).
std::string deepseek_config(const std::string& extra = "") {
  return R"({"model_type": "deepseek_v3", "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 8,
             "vocab_size": 10, "q_lora_rank": 8, "kv_lora_rank": 4, "qk_nope_head_dim": 3,
             "qk_rope_head_dim": 2, "v_head_dim": 5, "n_routed_experts": 4,
             "num_experts_per_tok": 2, "moe_intermediate_size": 4, "n_shared_experts": 2,
             "first_k_dense_replace": 1, "num_nextn_predict_layers": 1)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

std::string qwen_moe_config(const std::string& model_type, const std::string& extra = "") {
  return R"({"model_type": ")" + model_type +
         R"(", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 8, "vocab_size": 10,
             "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("the tiny shape counts 1,024 + 384 + 32 per layer and 336 once, by hand") {
  CHECK(count_parameters(tiny()) == 1024 + 384 + 32 + 160 + 160 + 16);
}

TEST_CASE(
    "a mixture layer holds E experts of moe_intermediate_size, the router and its bias, "
    "and the shared expert, and a dense layer its f-wide MLP") {
  // Mixture layer: 4 · 3 · 16 · 4 = 768 experts, 16 · 4 = 64 router, 4 bias, 3 · 16 · 8 = 384
  // shared; dense layer: 384.
  const double mixture_mlp = 768 + 64 + 4 + 384;
  CHECK(count_parameters(tiny_mixture()) == 2 * (1024 + 32) + mixture_mlp + 384 + 160 + 160 + 16);
  // A token passes through 2 of the 4 experts: 2 · 3 · 16 · 4 = 384 fewer.
  CHECK(count_active_parameters(tiny_mixture()) == count_parameters(tiny_mixture()) - 384);
  const ParameterCounts counts = parameter_counts(tiny_mixture());
  CHECK(counts.attention_and_mlp_per_layer == 1024 + 768 + 384);
  CHECK(counts.replicated_per_layer == 64 + 4);
  CHECK(counts.dense_attention_and_mlp_per_layer == 1024 + 384);
  CHECK(counts.dense_replicated_per_layer == 0);
}

TEST_CASE(
    "pipeline stages hold the dense layers first: stage 1 the dense one, stage 2 the "
    "mixture") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = tiny_mixture();
  setup.layout.pipeline_parallel = 2;
  setup.sequence_length = 16;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  // The last stage, with the mixture layer and the output head, is the most loaded.
  CHECK(estimate.most_loaded_stage == PipelineStage::kLast);
  CHECK(estimate.parameters_on_device == 1024 + 32 + (768 + 64 + 4 + 384) + 160 + 16);
  // Both layers dense-first on one stage: the dense layer is counted once, the mixture once.
  setup.layout.pipeline_parallel = 1;
  setup.custom_model.num_dense_layers = 1;
  CHECK(estimate_memory(setup).parameters_on_device == count_parameters(tiny_mixture()));
}

TEST_CASE(
    "tensor parallelism splits the experts and the shared expert and keeps the router "
    "whole") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = tiny_mixture();
  setup.custom_model.num_dense_layers = 0;
  setup.layout.tensor_parallel = 2;
  setup.sequence_length = 16;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.parameters_on_device ==
        2 * ((1024 + 768 + 384) / 2.0 + 32 + 64 + 4) + 160 / 2.0 + 160 / 2.0 + 16);
  // t = 4 divides the heads (2)? No: and 8 does not divide the experts' width of 4.
  setup.layout.tensor_parallel = 4;
  setup.custom_model.num_attention_heads = 4;
  setup.custom_model.num_key_value_heads = 4;
  setup.custom_model.hidden_size = 32;
  setup.custom_model.moe_ffn_hidden_size = 6;
  CHECK(estimate_memory(setup).answer.message ==
        "Expert tensor parallelism 4 (t, as etp is 0) must divide each expert's width, 6, of "
        "Tiny.");
}

TEST_CASE(
    "latent attention by hand: q_a 128, its norm 8, q_b 80, kv_a 96, its norm 4, kv_b 64, "
    "O 160") {
  ModelShape shape = tiny();
  shape.q_lora_rank = 8;
  shape.kv_lora_rank = 4;
  shape.qk_nope_head_dim = 3;
  shape.qk_rope_head_dim = 2;
  shape.v_head_dim = 5;
  REQUIRE(model_shape_problem(shape).empty());
  // q_a 16·8, q_a_layernorm 8, q_b 8·2·(3+2), kv_a 16·(4+2), kv_a_layernorm 4, kv_b 4·2·(3+5),
  // O 2·5·16.
  const double attention = 128 + 8 + 80 + 96 + 4 + 64 + 160;
  CHECK(count_parameters(shape) == attention + 384 + 32 + 336);
  // Megatron-LM keeps the down-projections whole on every TP rank; the norms are norms.
  const ParameterCounts counts = parameter_counts(shape);
  CHECK(counts.attention_and_mlp_per_layer == 80 + 64 + 160 + 384);
  CHECK(counts.replicated_per_layer == 128 + 96);
  CHECK(counts.norms_per_layer == 32 + 8 + 4);
  // Without a query latent (q_lora_rank 0): one q_proj of 16 · 2 · (3 + 2).
  shape.q_lora_rank = 0;
  CHECK(count_parameters(shape) == 160 + 96 + 4 + 64 + 160 + 384 + 32 + 336);
}

TEST_CASE(
    "a deepseek_v3 config.json is read: latent attention, experts, shared experts, dense "
    "layers and the router bias") {
  const ModelShape shape = parsed(deepseek_config());
  CHECK(shape.kv_lora_rank == 4);
  CHECK(shape.q_lora_rank == 8);
  CHECK(shape.num_experts == 4);
  CHECK(shape.moe_ffn_hidden_size == 4);
  CHECK(shape.shared_expert_ffn_hidden_size == 2 * 4);  // n_shared_experts · moe width
  CHECK(shape.num_dense_layers == 1);
  CHECK(shape.router_bias);
  const double attention = 128 + 8 + 80 + 96 + 4 + 64 + 160;
  CHECK(count_parameters(shape) ==
        2 * (attention + 32) + (768 + 64 + 4 + 384) + 384 + 160 + 160 + 16);
  // q_lora_rank null: queries without a latent.
  CHECK(parsed(deepseek_config(R"("q_lora_rank": null)")).q_lora_rank == 0);
}

TEST_CASE("deepseek_v3 fields trainmem cannot count, or that are missing, are refused") {
  CHECK(refusal(deepseek_config(R"("moe_layer_freq": 2)")) ==
        "config.json: 'moe_layer_freq' must be 1 (absent or null means 1); it is 2: trainmem "
        "counts every layer past first_k_dense_replace as a mixture.");
  CHECK(refusal(deepseek_config(R"("attention_bias": true)")) ==
        "config.json: 'attention_bias' must be false (absent or null means false): trainmem does "
        "not count biases on latent attention's projections.");
  CHECK(refusal(R"({"model_type": "deepseek_v3", "hidden_size": 16, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10})") ==
        "config.json: 'q_lora_rank' is missing; it must be a whole number from 1 to 1,048,576.");
  CHECK(refusal(deepseek_config(R"("first_k_dense_replace": 2)")) ==
        "config.json: 'first_k_dense_replace' (2) must be below num_hidden_layers (2).");
}

TEST_CASE("Qwen3's q_norm and k_norm add 2·d per layer") {
  ModelShape shape = *find_preset("qwen3-8b");
  const double with_norms = count_parameters(shape);
  shape.qk_norm = false;
  CHECK(with_norms - count_parameters(shape) == 36 * 2 * 128);
}

TEST_CASE("qwen3_moe reads mlp_only_layers as dense first layers and refuses others") {
  const ModelShape shape = parsed(qwen_moe_config("qwen3_moe", R"("mlp_only_layers": [0])"));
  CHECK(shape.qk_norm);
  CHECK(shape.num_dense_layers == 1);
  // q_norm and k_norm: 2 · 8 per layer; the mixture layer's 4 experts of 4 and router 16 x 4.
  CHECK(count_parameters(shape) == 2 * (1024 + 16 + 32) + (768 + 64) + 384 + 336);
  CHECK(refusal(qwen_moe_config("qwen3_moe", R"("mlp_only_layers": [1])")) ==
        "config.json: 'mlp_only_layers' must list the first layers in order, [0, 1, …, k - 1] "
        "(or be empty): trainmem places a mixture's dense layers first; it holds 1 where 0 "
        "would be.");
  CHECK(refusal(R"({"model_type": "qwen3_moe", "hidden_size": 16, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10,
                    "moe_intermediate_size": 4})") ==
        "config.json: 'num_experts' is missing; a qwen3_moe config must give its experts, a whole "
        "number from 1 to 1,024.");
  CHECK(refusal(qwen_moe_config("qwen3_moe", R"("decoder_sparse_step": 2)")) ==
        "config.json: 'decoder_sparse_step' must be 1 (absent or null means 1); it is 2: "
        "trainmem places a mixture's dense layers first and does not count dense layers between "
        "its sparse ones.");
}

TEST_CASE("qwen2_moe reads its shared expert and the shared expert's gate, h x 1") {
  const ModelShape shape =
      parsed(qwen_moe_config("qwen2_moe", R"("shared_expert_intermediate_size": 8)"));
  CHECK(shape.attention_qkv_bias);
  CHECK(shape.shared_expert_gate);
  // Per layer: attention 1,024 and Q, K, V biases 3 · 16; experts 768, router 64, shared
  // expert 384 and its gate 16; norms 32.
  CHECK(count_parameters(shape) == 2 * (1024 + 48 + 768 + 64 + 384 + 16 + 32) + 336);
}

TEST_CASE("active parameters: Qwen3-30B-A3B's 3.3B and DeepSeek-V3's 37B") {
  // Qwen3-30B-A3B: "30.5B in total and 3.3B activated" (Qwen/Qwen3-30B-A3B model card).
  CHECK(count_active_parameters(*find_preset("qwen3-30b-a3b")) == 3353032704.0);
  // DeepSeek-V3: "37B activated for each token" (arXiv:2412.19437, abstract); its
  // README_WEIGHTS.md: 36.6B, the output head's 0.9B included and the embedding not.
  const ModelShape& deepseek = *find_preset("deepseek-v3");
  const double active = count_active_parameters(deepseek);
  CHECK(std::round(active / 1e9) == 38);  // 37.55B with the embedding
  const double embedding = 129280.0 * 7168;
  CHECK(std::round((active - embedding) / 1e8) == 366);
  CHECK(std::round(count_parameters(deepseek) / 1e9) == 671);
}

namespace {

// The tiny shape's saved tensors under the llama-block model, BF16 elements per token by id
// (FP32 statistics counted as two BF16 elements), with FlashAttention and no recomputation.
std::map<std::string, double> saved_elements(const ModelShape& shape, int t = 1) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 16;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.layout.tensor_parallel = t;
  const SavedTensorList list = saved_tensors_of(setup);
  REQUIRE(!list.tensors.empty());
  std::map<std::string, double> elements;
  for (const SavedTensor& tensor : list.tensors) elements[tensor.id] = tensor.bytes_per_token / 2;
  return elements;
}

ModelShape tiny_latent() {
  ModelShape shape = tiny();
  shape.q_lora_rank = 8;
  shape.kv_lora_rank = 4;
  shape.qk_nope_head_dim = 3;
  shape.qk_rope_head_dim = 2;
  shape.v_head_dim = 5;
  return shape;
}

}  // namespace

TEST_CASE(
    "an MLA block saves its latents, their norms' statistics, and q, k, v of its own "
    "widths, by hand") {
  std::map<std::string, double> saved = saved_elements(tiny_latent());
  CHECK(saved["query-norm-input"] == 8);  // r_q
  CHECK(saved["query-norm-rstd"] == 2);   // one FP32 value
  CHECK(saved["query-latent"] == 8);      // saved by q_b_proj
  CHECK(saved["key-value-norm-input"] == 4);
  CHECK(saved["key-value-latent"] == 4);
  CHECK(saved["query"] == 2 * (3 + 2));  // a·(d_nope + d_rope)
  CHECK(saved["key"] == 2 * (3 + 2));    // the rotary key repeated to both heads
  CHECK(saved["value"] == 2 * 5);        // a·d_v
  CHECK(saved["attention-output"] == 2 * 5);
  CHECK(saved["log-sum-exp"] == 2 * 2);  // a FP32 values
  // Under t = 2 the heads split and the latents stay whole.
  saved = saved_elements(tiny_latent(), 2);
  CHECK(saved["query"] == 5);
  CHECK(saved["value"] == 5);
  CHECK(saved["query-latent"] == 8);
  CHECK(saved["key-value-latent"] == 4);
  // Without a query latent there is none to save.
  ModelShape no_query_latent = tiny_latent();
  no_query_latent.q_lora_rank = 0;
  CHECK(saved_elements(no_query_latent).count("query-latent") == 0);
}

TEST_CASE("Qwen3's q/k norms save their inputs and a 1/RMS per head") {
  ModelShape shape = tiny();
  shape.qk_norm = true;
  const std::map<std::string, double> saved = saved_elements(shape);
  CHECK(saved.at("query-norm-input") == 16);  // a·d
  CHECK(saved.at("query-norm-rstd") == 2 * 2);
  CHECK(saved.at("key-norm-input") == 16);  // k·d
  CHECK(saved.at("key-norm-rstd") == 2 * 2);
}

TEST_CASE(
    "a mixture layer saves top-k copies of the expert's width and the shared expert's "
    "three tensors") {
  ModelShape shape = tiny_mixture();
  shape.num_dense_layers = 0;
  const std::map<std::string, double> saved = saved_elements(shape);
  CHECK(saved.at("mlp-input") == 16 * 2);   // h·top-k
  CHECK(saved.at("gate-output") == 4 * 2);  // f_e·top-k, not f·top-k
  CHECK(saved.at("product") == 4 * 2);
  CHECK(saved.at("shared-gate-output") == 8);
  CHECK(saved.at("shared-up-output") == 8);
  CHECK(saved.at("shared-product") == 8);
}

TEST_CASE(
    "Korthikanti's MLP share scales with each expert's width, and Mixtral's copies of the "
    "dense MLP keep 19 each") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = tiny_mixture();
  setup.custom_model.num_dense_layers = 0;
  setup.custom_model.num_layers = 1;
  setup.sequence_length = 16;
  // Two routed experts of 4 and a shared one of 8, against one MLP of 4h = 64 in the 34:
  // 34 + 2·3 + 16·((2·4 + 8)/64 − 1) = 28 bytes per token per hidden, with FlashAttention.
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == doctest::Approx(16 * 16 * 28.0));
}

namespace {

// The tiny mixture, every layer a mixture, on `d` data-parallel devices with t, ep and etp.
TrainingSetup tiny_expert_layout(int d, int t, int ep, int etp) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = tiny_mixture();
  setup.custom_model.num_dense_layers = 0;
  setup.custom_model.num_layers = 1;
  setup.sequence_length = 16;
  setup.layout.data_parallel = d;
  setup.layout.tensor_parallel = t;
  setup.layout.expert_parallel = ep;
  setup.layout.expert_tensor_parallel = etp;
  return setup;
}

}  // namespace

TEST_CASE(
    "an MoE layer under ep and etp, by hand: attention and the shared expert over t, the "
    "routed experts over ep·etp, the router whole") {
  // One mixture layer: attention 1,024 and the shared expert 384 split by t = 2; the routed
  // experts' 768 over ep·etp = 2 · 1; the router 64 and its bias 4 whole; norms 32; embedding
  // and head 160 each over t, the final norm 16.
  const Estimate estimate = estimate_memory(tiny_expert_layout(2, 2, 2, 1));
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.parameters_on_device ==
        (1024 + 384) / 2.0 + 768 / 2.0 + 64 + 4 + 32 + 160 / 2.0 + 160 / 2.0 + 16);
  // With ep 1 and etp 0 (as t) the routed experts split by t, as before expert parallelism.
  CHECK(estimate_memory(tiny_expert_layout(2, 2, 1, 0)).parameters_on_device ==
        (1024 + 384 + 768) / 2.0 + 64 + 4 + 32 + 160 / 2.0 + 160 / 2.0 + 16);
  // etp 2 with ep 2: the routed experts over 4.
  CHECK(estimate_memory(tiny_expert_layout(2, 2, 2, 2)).parameters_on_device ==
        (1024 + 384) / 2.0 + 768 / 4.0 + 64 + 4 + 32 + 160 / 2.0 + 160 / 2.0 + 16);
}

TEST_CASE(
    "ZeRO shards the routed experts' states over their own data-parallel group, "
    "d·t·c / (ep·etp)") {
  // d 2, t 2, ep 4, etp 1: the others' states over d·c = 2, the experts' over 2·2/4 = 1.
  TrainingSetup setup = tiny_expert_layout(2, 2, 4, 1);
  setup.layout.zero_stage = 1;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const double experts = 768 / 4.0;
  const double others = estimate.parameters_on_device - experts;
  CHECK(estimate.bytes[Term::kOptimizerStates] == doctest::Approx(8 * (others / 2 + experts / 1)));
  CHECK(estimate.bytes[Term::kWeights] == 2 * estimate.parameters_on_device);
  // ep 2: the experts' group is 2·2/2 = 2, as the others'.
  setup = tiny_expert_layout(2, 2, 2, 1);
  setup.layout.zero_stage = 1;
  const Estimate even = estimate_memory(setup);
  CHECK(even.bytes[Term::kOptimizerStates] == doctest::Approx(8 * even.parameters_on_device / 2));
}

TEST_CASE(
    "expert parallelism is refused where it cannot divide: the experts, their width, "
    "d·t·c, or a dense model") {
  CHECK(estimate_memory(tiny_expert_layout(2, 1, 3, 1)).answer.message ==
        "Expert parallelism 3 must divide the 4 experts of Tiny.");
  CHECK(estimate_memory(tiny_expert_layout(8, 1, 1, 8)).answer.message ==
        "Expert tensor parallelism 8 must divide each expert's width, 4, of Tiny.");
  CHECK(estimate_memory(tiny_expert_layout(1, 2, 4, 1)).answer.message ==
        "Expert parallelism × expert tensor parallelism (4 × 1) must divide d·t·c (2), the "
        "devices of a pipeline stage they are carved from.");
  TrainingSetup dense;
  dense.layout.expert_parallel = 2;
  dense.layout.data_parallel = 2;
  CHECK(estimate_memory(dense).answer.message ==
        "Expert parallelism needs a mixture of experts; Llama 3 8B has none.");
}

TEST_CASE(
    "expert parallelism does not divide the tokens: each device's routed activations stay "
    "top-k copies of its own tokens, and one layer's all-to-all buffers come on top") {
  TrainingSetup setup = tiny_expert_layout(4, 1, 1, 0);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const double without = estimate_memory(setup).bytes[Term::kActivations];
  setup.layout.expert_parallel = 4;
  // The send and the receive buffer of one all-to-all: 2 × 16 tokens × top-2 × h 16 × 2 B.
  const double buffers = 2 * 16 * 2 * 16 * 2.0;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == without + buffers);
  // The saved tensors themselves are the same with ep 4 as with ep 1.
  TrainingSetup ep1 = setup;
  ep1.layout.expert_parallel = 1;
  CHECK(saved_tensors_of(setup).bytes_per_token == saved_tensors_of(ep1).bytes_per_token);
  // A capacity factor pads the buffers as it pads the experts' inputs; sequence parallelism
  // splits them with the tokens.
  setup.capacity_factor = 1.5;
  const double padded = estimate_memory(setup).bytes[Term::kActivations];
  setup.layout.expert_parallel = 1;
  CHECK(padded - estimate_memory(setup).bytes[Term::kActivations] == buffers * 1.5);
  TrainingSetup split = tiny_expert_layout(2, 2, 2, 1);
  split.layout.sequence_parallel = true;
  split.activation_model = ActivationModel::kLlamaBlock;
  TrainingSetup split_ep1 = split;
  split_ep1.layout.expert_parallel = 1;
  CHECK(estimate_memory(split).bytes[Term::kActivations] -
            estimate_memory(split_ep1).bytes[Term::kActivations] ==
        buffers / 2);
  // The arithmetic names them and their source; the timeline's peak holds them.
  const std::vector<TermArithmetic> terms = explain_estimate(split);
  const auto activations = std::find_if(terms.begin(), terms.end(), [](const TermArithmetic& term) {
    return term.term == "activations";
  });
  REQUIRE(activations != terms.end());
  CHECK(activations->formula.find(" + one layer's all-to-all buffers, 2 (send and receive) × 16 "
                                  "tokens / 2 × 2 experts × 16 × 2 B (") != std::string::npos);
  CHECK(activations->source.find("MoEAlltoAllTokenDispatcher") != std::string::npos);
  const std::vector<TimelinePoint> timeline = memory_timeline(split);
  CHECK(timeline[timeline_peak(timeline)].bytes ==
        doctest::Approx(estimate_memory(split).bytes.total()));
}

TEST_CASE(
    "the all-gather dispatcher: the t·ep group's tokens scattered back, cast to FP32 and "
    "reduce-scattered, its map kept, and under the megatron stack one global buffer") {
  // One mixture layer of 4 experts, top-2, h 16, 16 tokens, ep 4, under the megatron stack.
  TrainingSetup setup = tiny_expert_layout(4, 1, 4, 0);
  setup.stack = Stack::kMegatron;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.moe_dispatcher = MoeDispatcher::kAllGather;
  // The group's 16 × 4 tokens: their BF16 scatter and its FP32 copy, and the FP32 reduce-scatter
  // into the device's 16, each h wide: (6 × 64 + 4 × 16) × 16 B.
  const double combine = (6 * 16 * 4 + 4 * 16) * 16.0;
  const Estimate gathered = estimate_memory(setup);
  REQUIRE_MESSAGE(gathered.answer.ok(), gathered.answer.message);
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  const auto activations = std::find_if(terms.begin(), terms.end(), [](const TermArithmetic& term) {
    return term.term == "activations";
  });
  REQUIRE(activations != terms.end());
  CHECK(activations->formula.find("one layer's all-gather combine, (6 B × 16 tokens × 4 (t·ep) + "
                                  "4 B × 16 tokens) × 16 (") != std::string::npos);
  CHECK(activations->source.find("MoEAllGatherTokenDispatcher") != std::string::npos);
  CHECK(combine == 7168);
  // The map of the group's tokens to this device's experts: E bools a token, kept for the
  // routed probabilities' gradient.
  double map = 0;
  for (const SavedTensor& tensor : saved_tensors_of(setup).tensors) {
    if (tensor.id == "dispatch-local-map") map = tensor.bytes_per_token;
  }
  CHECK(map == 4);
  // The megatron stack holds the global memory buffer the group's tokens are gathered into:
  // 16 tokens × ep 4 × h 16, BF16.
  double buffer = 0;
  for (const StackTerm& term : gathered.stack_terms) {
    if (term.id == "megatron-moe-gather-buffer") buffer = term.bytes;
  }
  CHECK(buffer >= 16 * 4 * 16 * 2.0);
  CHECK(buffer < 16 * 4 * 16 * 2.0 + 512);  // the allocator's 512-byte rounding
  // Without tensor or expert parallelism there is no group: nothing gathered, nothing kept.
  TrainingSetup alone = setup;
  alone.layout.expert_parallel = 1;
  TrainingSetup all_to_all = alone;
  all_to_all.moe_dispatcher = MoeDispatcher::kAllToAll;
  CHECK(estimate_memory(alone).bytes.total() == estimate_memory(all_to_all).bytes.total());
  // The group is etp·ep in Megatron-LM; counted where etp is t, and without a capacity factor.
  TrainingSetup other_etp = setup;
  other_etp.layout.expert_tensor_parallel = 2;
  other_etp.layout.data_parallel = 8;
  CHECK(estimate_memory(other_etp).answer.setting == "etp");
  TrainingSetup capacity = setup;
  capacity.capacity_factor = 1.25;
  CHECK(estimate_memory(capacity).answer.setting == "capacity-factor");
  // Another stack than Megatron-LM's refuses the setting by name.
  TrainingSetup ideal = setup;
  ideal.stack = Stack::kIdeal;
  CHECK(estimate_memory(ideal).answer.setting == "moe-dispatcher");
}

TEST_CASE(
    "the flex dispatcher: each token received once by each device holding one of its experts, "
    "and DeepEP's buffer outside the allocator, by hand") {
  // One mixture layer of 4 experts, top-2, h 16, 16 tokens, ep 2, under the megatron stack: each
  // device holds g = 2 experts, so a token misses it with C(2, 2)/C(4, 2) = 1/6, and each device
  // receives 2 × 16 × (1 − 1/6) tokens of h 16, BF16.
  TrainingSetup setup = tiny_expert_layout(2, 1, 2, 0);
  setup.stack = Stack::kMegatron;
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.moe_dispatcher = MoeDispatcher::kFlex;
  const Estimate flex = estimate_memory(setup);
  REQUIRE_MESSAGE(flex.answer.ok(), flex.answer.message);
  TrainingSetup all_to_all = setup;
  all_to_all.moe_dispatcher = MoeDispatcher::kAllToAll;
  const Estimate exchanged = estimate_memory(all_to_all);
  const double received = 2 * 16 * (1 - 1.0 / 6) * 16 * 2;
  const double send_and_receive = 2 * 16 * 2 * 16 * 2.0;  // the all-to-all's, for comparison
  // The replay takes each in the allocator's 512-byte blocks: 1,024 B against 2,048.
  CHECK(std::ceil(received / 512) * 512 == 1024);
  CHECK(send_and_receive == 2048);
  // The permutations' tensors (megatron_routing.cpp), each under a 512-byte block at 16 tokens:
  // the all-to-all's three (the probabilities' copy, its mask, the token indices), flex's seven
  // (the top-k indices, DeepEP's handle, the multihot's mask and indices, and its permutation's
  // three); the
  // experts' probabilities, FP32 under flex, BF16 under the all-to-all, one block either way.
  const double permutation = (7 - 3) * 512;
  CHECK(flex.bytes[Term::kActivations] - exchanged.bytes[Term::kActivations] ==
        1024 - send_and_receive + permutation);
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  const auto activations = std::find_if(terms.begin(), terms.end(), [](const TermArithmetic& term) {
    return term.term == "activations";
  });
  REQUIRE(activations != terms.end());
  CHECK(activations->formula.find("one layer's DeepEP receive buffer, 16 tokens × 1.67 (ep·(1 − "
                                  "C(E−E/ep, k)/C(E, k)), ep 2, E 4, k 2") != std::string::npos);
  CHECK(activations->source.find("MoEFlexTokenDispatcher") != std::string::npos);
  // With one expert a device every copy goes to a device of its own: the T·k copies.
  TrainingSetup one_each = setup;
  one_each.layout.data_parallel = 4;
  one_each.layout.expert_parallel = 4;
  TrainingSetup one_each_a2a = one_each;
  one_each_a2a.moe_dispatcher = MoeDispatcher::kAllToAll;
  CHECK(estimate_memory(one_each_a2a).bytes[Term::kActivations] -
            estimate_memory(one_each).bytes[Term::kActivations] ==
        doctest::Approx(16 * 2 * 16 * 2.0 - permutation));
  // 1,024 tokens tell the share from the T·k copies in the allocator's blocks: R = 1,706.7
  // tokens, 54,613 B, in 54,784 B of blocks, where T·k would take 65,536 and the all-to-all's
  // two buffers 131,072. The all-to-all's permutation saves 1,024 × (8 + 4 + 16) B and its
  // experts' probabilities 1,024 × 2 × 2 B; flex's 1,024 × (16 + 32 + 16) B of indices, its
  // masks' and FP32 copy's 3,413, 3,413 and 13,653 B in 3,584, 3,584 and 13,824 of blocks,
  // DeepEP's handle's 1,024 × (5 · 2 + 4 · 5/3) = 17,067 B in 17,408, and its probabilities
  // 1,024 × 2 × 4 B: 79,360 B more.
  TrainingSetup longer = setup;
  longer.sequence_length = 1024;
  TrainingSetup longer_a2a = longer;
  longer_a2a.moe_dispatcher = MoeDispatcher::kAllToAll;
  CHECK(std::ceil(2 * 1024 * (5.0 / 6) * 16 * 2 / 512) * 512 == 54784);
  CHECK(estimate_memory(longer).bytes[Term::kActivations] -
            estimate_memory(longer_a2a).bytes[Term::kActivations] ==
        54784 - 131072 + 79360);
  // DeepEP's buffer: 10 channels × 2 peers × (5 ints of 4 B + 256 tokens × (2·16 + 8 + 128 × 16)
  // B), rounded up to 128 B, with its signals and peer pointers (160 B), and its 32 MiB
  // workspace, each a cudaMalloc in 2 MiB pages; on the device, in neither peak.
  const double queues = 10 * 2 * 5 * 4 + 10 * 2 * 256 * (2 * 16 + 8 + 128 * 16.0);
  CHECK(queues == 10690960);
  CHECK(std::ceil(queues / 128) * 128 + 160 == 10691232);  // 5.1 pages of 2 MiB: 6
  double buffer = 0;
  for (const StackTerm& term : flex.stack_terms) {
    if (term.id == "deepep-buffer") {
      buffer = term.bytes;
      CHECK_FALSE(term.in_allocator);
    }
  }
  CHECK(buffer == (6 + 16) * 2 * 1024 * 1024.0);
  // The total on the device (the reserved pool and what lies outside it) gains the buffer, give
  // or take the pool's blocks.
  CHECK(std::abs(flex.bytes.total() - exchanged.bytes.total() - buffer) <= 2048);
  CHECK(flex.peak_allocated_bytes - exchanged.peak_allocated_bytes <= permutation);
  // Under tensor parallelism with etp 1 the group is ep's alone, each device sending its T/t
  // under sequence parallelism: half the tokens of t 1.
  TrainingSetup split = tiny_expert_layout(2, 2, 2, 1);
  split.stack = Stack::kMegatron;
  split.activation_model = ActivationModel::kLlamaBlock;
  split.layout.sequence_parallel = true;
  split.sequence_length = 1024;
  split.moe_dispatcher = MoeDispatcher::kFlex;
  REQUIRE_MESSAGE(estimate_memory(split).answer.ok(), estimate_memory(split).answer.message);
  const std::vector<TermArithmetic> split_terms = explain_estimate(split);
  const auto split_activations =
      std::find_if(split_terms.begin(), split_terms.end(),
                   [](const TermArithmetic& term) { return term.term == "activations"; });
  REQUIRE(split_activations != split_terms.end());
  CHECK(split_activations->formula.find("one layer's DeepEP receive buffer, 1,024 tokens / 2 × "
                                        "1.67") != std::string::npos);
  // What is not modelled is refused by name: expert tensor parallelism, ep 1, 6 or past 8, a
  // capacity.
  TrainingSetup refused = setup;
  refused.layout.expert_parallel = 1;
  CHECK(estimate_memory(refused).answer.setting == "moe-dispatcher");
  refused = setup;
  refused.capacity_factor = 0.5;
  CHECK(estimate_memory(refused).answer.setting == "capacity-factor");
  refused = split;
  refused.layout.expert_tensor_parallel = 2;
  CHECK(estimate_memory(refused).answer.message.find("modelled at etp 1") != std::string::npos);
  refused = setup;
  refused.custom_model.num_experts = 48;
  refused.layout.data_parallel = 16;
  refused.layout.expert_parallel = 16;
  CHECK(estimate_memory(refused).answer.message.find("crosses nodes") != std::string::npos);
  refused.layout.data_parallel = 6;
  refused.layout.expert_parallel = 6;
  CHECK(estimate_memory(refused).answer.message.find("take 2, 4 or 8 devices") !=
        std::string::npos);
}

TEST_CASE(
    "expert tensor parallelism splits the routed experts' saved tensors, t the shared "
    "expert's") {
  TrainingSetup setup = tiny_expert_layout(2, 2, 1, 1);
  setup.activation_model = ActivationModel::kLlamaBlock;
  std::map<std::string, double> saved;
  for (const SavedTensor& tensor : saved_tensors_of(setup).tensors) {
    saved[tensor.id] = tensor.bytes_per_token / 2;
  }
  CHECK(saved.at("gate-output") == 4 * 2);         // f_e·top-k over etp = 1
  CHECK(saved.at("shared-gate-output") == 8 / 2);  // f_s over t = 2
  // Korthikanti: the routed 16-shares, 16 · 2 · 4/64 = 2, over etp = 1 rather than t = 2.
  TrainingSetup korthikanti = tiny_expert_layout(2, 2, 1, 1);
  TrainingSetup as_t = tiny_expert_layout(2, 2, 1, 0);
  CHECK(estimate_memory(korthikanti).bytes[Term::kActivations] -
            estimate_memory(as_t).bytes[Term::kActivations] ==
        doctest::Approx(16 * 16 * (2 - 2 / 2.0)));
}

TEST_CASE(
    "the arithmetic writes the routed experts' ZeRO shards beside the others' when they "
    "differ") {
  TrainingSetup setup = tiny_expert_layout(2, 2, 4, 1);
  setup.layout.zero_stage = 1;
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  REQUIRE(terms.size() >= 4);
  CHECK(terms[3].term == "optimizerStates");
  // 8 B × (others / 2 d·c shards + 192 routed experts' / 1 shard of their group).
  CHECK(terms[3].formula.find(" parameters / 2 ZeRO shards + 192 routed experts' / 1 shard of "
                              "their data-parallel group) = ") != std::string::npos);
  // ep 1: one group, one formula as before.
  setup = tiny_expert_layout(2, 2, 1, 0);
  setup.layout.zero_stage = 1;
  CHECK(explain_estimate(setup)[3].formula.find("routed") == std::string::npos);
}

TEST_CASE(
    "'What saves the most' offers doubling expert parallelism for a mixture, carving it "
    "from the data-parallel devices") {
  TrainingSetup setup;
  setup.model_id = "qwen3-30b-a3b";
  setup.layout.data_parallel = 2;
  setup.layout.tensor_parallel = 2;
  const auto find_saving = [](const SavingsList& list) -> const Saving* {
    for (const Saving& saving : list.savings) {
      if (saving.change == "ep-double") return &saving;
    }
    return nullptr;
  };
  const SavingsList with_dp = rank_savings(setup);
  const Saving* saving = find_saving(with_dp);
  REQUIRE(saving != nullptr);
  CHECK(saving->label == "Double expert parallelism (ep 2)");
  CHECK(saving->devices_added == 0);
  // d 1, t 1: ep 2 needs 2 devices, so d doubles with it.
  setup.layout = ParallelLayout{};
  const SavingsList alone = rank_savings(setup);
  saving = find_saving(alone);
  REQUIRE(saving != nullptr);
  CHECK(saving->label == "Double expert parallelism (ep 2, d 2)");
  setup.model_id = "llama3-8b";
  const SavingsList dense = rank_savings(setup);
  CHECK(find_saving(dense) == nullptr);
}

TEST_CASE(
    "a capacity factor pads each device's routed copies to C times top-k, and 0 is dropless "
    "at balanced load") {
  TrainingSetup setup = tiny_expert_layout(1, 1, 1, 0);
  setup.activation_model = ActivationModel::kLlamaBlock;
  setup.capacity_factor = 1.5;
  std::map<std::string, double> saved;
  for (const SavedTensor& tensor : saved_tensors_of(setup).tensors) {
    saved[tensor.id] = tensor.bytes_per_token / 2;
  }
  CHECK(saved.at("mlp-input") == 16 * 2 * 1.5);   // h·top-k·C
  CHECK(saved.at("gate-output") == 4 * 2 * 1.5);  // f_e·top-k·C
  CHECK(saved.at("router-input") == 16);          // the router reads each token once
  CHECK(saved.at("shared-gate-output") == 8);     // the shared expert sees every token once
  // Korthikanti: the routed shares, 2 · (3 + 16 · 4/64) = 8, grow by half: + 4.
  TrainingSetup korthikanti = tiny_expert_layout(1, 1, 1, 0);
  const double dropless = estimate_memory(korthikanti).bytes[Term::kActivations];
  korthikanti.capacity_factor = 1.5;
  CHECK(estimate_memory(korthikanti).bytes[Term::kActivations] - dropless ==
        doctest::Approx(16 * 16 * 4.0));
  TrainingSetup dense;
  dense.capacity_factor = 1;
  CHECK(estimate_memory(dense).answer.message ==
        "A capacity factor needs a mixture of experts; Llama 3 8B has none.");
}

}  // namespace moe_mla_test
