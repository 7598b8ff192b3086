// Hybrid linear attention (issue 45's first family): Qwen3-Next's and Qwen3.5's Gated DeltaNet
// layers beside gated full-attention ones, counted by hand on a tiny shape, read from the
// published config.json files to the hub's totals, their saved tensors pinned by hand, their
// activations stacked on pipeline stages, their step under transformers' stacks (hf, deepspeed),
// and every setting trainmem does not count for them refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "activations/layer.hpp"
#include "estimate/replay.hpp"
#include "estimate/stage.hpp"
#include "hub_configs.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace hybrid_test {

namespace {

ModelShape parsed(const std::string& text, bool text_tower = false) {
  const ConfigParse result = parse_hf_config(text, text_tower);
  REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
  return result.shape;
}

std::string refusal(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

// A tiny qwen3_next: h 8, 4 layers (every 2nd full attention), 2 heads of 4 and 1 key/value
// head, Gated DeltaNet layers of 1 query/key head and 2 value heads of 4 with a convolution of
// 3, 2 experts of 4 (top 1) and a shared expert of 4, a vocabulary of 10.
std::string tiny_next(const std::string& more = "") {
  return R"({"model_type": "qwen3_next", "hidden_size": 8, "num_hidden_layers": 4,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
    "vocab_size": 10, "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4,
    "shared_expert_intermediate_size": 4, "full_attention_interval": 2,
    "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 4,
    "linear_value_head_dim": 4, "linear_conv_kernel_dim": 3)" +
         (more.empty() ? "" : ", " + more) + "}";
}

// By hand, per layer:
//   gated attention  q_proj 8 × (2 · 8) = 128, k_proj 32, v_proj 32, o_proj 64, q/k norms 4 + 4
//   Gated DeltaNet   in_proj_qkvz 8 × (2·4 + 2·8) = 192, in_proj_ba 8 × 4 = 32, conv1d
//                    (2·4 + 8) × 3 = 48, dt_bias and A_log 2 + 2, its norm 4, out_proj 8 × 8 = 64
//   MoE              experts 2 × 3 × 8 × 4 = 192, router 16, shared expert 96, its gate 8
//   norms            2 × 8
constexpr double kAttention = 128 + 32 + 32 + 64 + 8;                        // 264
constexpr double kDeltaNet = 192 + 32 + 48 + 4 + 4 + 64;                     // 344
constexpr double kMixture = 192 + 16 + 96 + 8;                               // 312
constexpr double kTinyNext = 2 * (kAttention + kMixture + 16) +              //
                             2 * (kDeltaNet + kMixture + 16) + 80 + 80 + 8;  // 2,696

TrainingSetup setup_of(const ModelShape& shape) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 64;
  return setup;
}

double sum_of(const std::vector<SavedTensor>& tensors, const std::vector<std::string>& ids) {
  double sum = 0;
  for (const SavedTensor& tensor : tensors) {
    for (const std::string& id : ids) {
      if (tensor.id == id) sum += tensor.bytes_per_token;
    }
  }
  return sum;
}

// The Gated DeltaNet mixer's own tensors (after the input norm, before the MLP's norm).
const std::vector<std::string> kMixerIds = {
    "linear-input",      "conv-input",          "beta",
    "softplus-input",    "softplus-output",     "linear-query",
    "linear-query-rstd", "linear-key",          "linear-key-rstd",
    "linear-value",      "decay-cumsum",        "wy-inverse",
    "delta-rule-output", "output-gate",         "gated-norm-rstd",
    "linear-output",     "gated-norm-input",    "gated-norm-normed",
    "gated-norm-gate",   "gated-norm-weighted", "gated-norm-silu"};

// What one of the setup's full-attention layers saves a token: the same shape with every layer
// full attention, as the llama-block model counts it.
double full_attention_bytes_per_token(TrainingSetup setup) {
  setup.mtp = false;
  ModelShape& shape = setup.custom_model;
  shape.hybrid_layers.clear();
  shape.linear_num_key_heads = 0;
  shape.linear_num_value_heads = 0;
  shape.linear_key_head_dim = 0;
  shape.linear_value_head_dim = 0;
  shape.linear_conv_kernel_dim = 0;
  return saved_tensors_of(setup).bytes_per_token;
}

}  // namespace

TEST_CASE("a tiny Qwen3-Next counts its attention, Gated DeltaNet and MoE layers by hand") {
  const ModelShape shape = parsed(tiny_next());
  CHECK(shape.hybrid_layers == "LALA");
  CHECK(shape.attention_output_gate);
  CHECK(linear_attention_layers_between(shape, 0, 4) == 2);
  CHECK(linear_attention_layers_between(shape, 1, 2) == 1);  // layers 1 (full) and 2 (linear)
  CHECK(count_parameters(shape) == kTinyNext);
  // Active: one expert of the two in each layer, 96 idle.
  CHECK(count_active_parameters(shape) == kTinyNext - 4 * 96);
  // layer_types, as transformers builds each layer from its entry: the interval's pattern, or
  // another with as many of each kind (the same count), or more linear layers (344 - 264 more
  // each).
  CHECK(count_parameters(parsed(tiny_next(
            R"("layer_types": ["linear_attention", "full_attention", "linear_attention",
                               "full_attention"])"))) == kTinyNext);
  const ModelShape irregular = parsed(tiny_next(
      R"("layer_types": ["full_attention", "linear_attention", "linear_attention",
                         "full_attention"])"));
  CHECK(irregular.hybrid_layers == "ALLA");
  CHECK(linear_attention_layers_between(irregular, 1, 2) == 2);
  CHECK(count_parameters(irregular) == kTinyNext);
  CHECK(count_parameters(parsed(tiny_next(
            R"("layer_types": ["linear_attention", "linear_attention", "linear_attention",
                               "full_attention"])"))) == kTinyNext + (kDeltaNet - kAttention));
  CHECK(refusal(tiny_next(R"("layer_types": ["full_attention", "conv", "linear_attention",
                                             "full_attention"])")) ==
        "config.json: 'layer_types' must list num_hidden_layers (4) entries, each "
        "\"full_attention\" or \"linear_attention\"; entry 1 is \"conv\".");
}

TEST_CASE("Qwen3-Next 80B-A3B reads to the hub's safetensors total with its MTP layer") {
  const ModelShape shape = parsed(hub_config("qwen3-next-80b-a3b"));
  // 12 full-attention and 36 Gated DeltaNet layers: 79.67B, the card's "80B"; without the
  // embedding and the head, 79.05B, its "79B" non-embedding.
  CHECK(count_parameters(shape) == 79674391296.0);
  CHECK(count_parameters(shape) - 2.0 * 151936 * 2048 == 79052061440.0);
  // Active: 3.87B with the embedding and head; 3.25B without, the card's "3B activated".
  CHECK(count_active_parameters(shape) == 3874929408.0);
  // The checkpoint's mtp.* (fc 2·h², three norms, one gated-attention layer with its MoE), which
  // transformers leaves unloaded (_keys_to_ignore_on_load_unexpected): with it, the hub's
  // safetensors total exactly.
  ModelShape with_mtp = shape;
  with_mtp.num_mtp_layers = 1;
  CHECK(count_parameters(shape) + count_mtp_parameters(with_mtp) == 81324862720.0);
  // The preset is the config's shape.
  CHECK(count_parameters(*find_preset("qwen3-next-80b-a3b")) == count_parameters(shape));
}

TEST_CASE("Qwen3.5's text towers, vision towers and MTP layers make the hub's totals") {
  // 27B (dense): text 26,895,998,464, vision 460,730,096, MTP 424,699,392.
  const ModelShape dense = parsed(hub_config("qwen3.5-27b"));
  CHECK(dense.vision_parameters == 460730096.0);
  CHECK(count_parameters(dense) == 26895998464.0 + 460730096.0);
  CHECK(dense.num_mtp_layers == 1);
  CHECK(count_parameters(dense) + count_mtp_parameters(dense) == 27781427952.0);
  // 35B-A3B: no intermediate_size in its config, every layer a mixture.
  const ModelShape mixture = parsed(hub_config("qwen3.5-35b-a3b"));
  CHECK(mixture.vision_parameters == 446571248.0);
  CHECK(count_parameters(mixture) + count_mtp_parameters(mixture) == 35951822704.0);
  const ModelShape text = parsed(hub_config("qwen3.5-35b-a3b"), true);
  CHECK(count_parameters(text) == 34660610688.0);
  CHECK(count_parameters(*find_preset("qwen3.5-35b-a3b")) == 34660610688.0);
  CHECK(count_parameters(*find_preset("qwen3.5-27b")) == 26895998464.0);
}

TEST_CASE("Qwen3.5 122B-A10B's and 397B-A17B's configs read to the hub's safetensors totals") {
  // The hub's totals: 125,086,497,008 (122B-A10B) and 403,397,928,944 (397B-A17B), each the text
  // tower, the vision tower (27 blocks of 1,152, its merger to h) and one MTP layer.
  struct Published {
    const char* id;
    double text;
    double vision;
    double total;
  };
  for (const Published& published :
       {Published{"qwen3.5-122b-a10b", 122111526912.0, 451290864.0, 125086497008.0},
        Published{"qwen3.5-397b-a17b", 396346350336.0, 456010480.0, 403397928944.0}}) {
    CAPTURE(published.id);
    const ModelShape whole = parsed(hub_config(published.id));
    CHECK(whole.vision_parameters == published.vision);
    CHECK(count_parameters(whole) == published.text + published.vision);
    CHECK(count_parameters(whole) + count_mtp_parameters(whole) == published.total);
    const ModelShape text = parsed(hub_config(published.id), true);
    CHECK(count_parameters(text) == published.text);
    CHECK(count_parameters(*find_preset(published.id)) == published.text);
  }
}

TEST_CASE("hybrid fields trainmem cannot count are refused by name") {
  // Gated DeltaNet fields in a model_type that builds none.
  CHECK(refusal(R"({"model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "intermediate_size": 16, "vocab_size": 10,
                    "linear_num_value_heads": 4})") ==
        "config.json: 'linear_num_value_heads' (Gated DeltaNet layers) is not read for this "
        "model_type: trainmem reads it for qwen3_next, qwen3_5_moe_text and qwen3_5_text.");
  // A missing linear field is never guessed at.
  std::string missing = tiny_next();
  missing.replace(missing.find("\"linear_conv_kernel_dim\": 3"), 27, "\"x\": 0");
  CHECK(refusal(missing) ==
        "config.json: 'linear_conv_kernel_dim' is missing; it must be a whole number from 1 to "
        "1,048,576.");
  // Qwen3.5 without its attention's output gate, or with an MTP embedding of its own.
  std::string text = tiny_next(R"("attn_output_gate": false)");
  text.replace(text.find("qwen3_next"), 10, "qwen3_5_moe_text");
  CHECK(refusal(text) ==
        "config.json: 'attn_output_gate' must be true (absent or null means true): trainmem does "
        "not count full-attention layers without their output gate.");
  CHECK(refusal(R"({"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text",
      "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 4,
      "intermediate_size": 16, "vocab_size": 10, "linear_num_key_heads": 1,
      "linear_num_value_heads": 2, "linear_key_head_dim": 4, "linear_value_head_dim": 4,
      "linear_conv_kernel_dim": 3}, "vision_config": {"depth": 1, "hidden_size": 8,
      "intermediate_size": 8, "out_hidden_size": 8, "num_position_embeddings": 4,
      "deepstack_visual_indexes": [1]}})") ==
        "config.json: in the vision tower (vision_config): 'deepstack_visual_indexes' must be [] "
        "(absent or null means none); it is an array: trainmem does not count deepstack "
        "mergers.");
}

TEST_CASE("a Gated DeltaNet layer's mixer saves what fla's chunked kernel keeps, by hand") {
  // The helper's tiny shape: h 64, H_k 2, H_v 4, d_k = d_v = 16, a convolution of 4. Per token:
  // input 2·64 = 128, the convolution's input 2·(2·2·16 + 4·16) = 256, β 2·4 = 8, softplus's
  // input and output 4·4 each, the L2-normalised q and k 2·H_q·16 each with 4·H_q of 1/norm,
  // v's copy 2·64 = 128, the decays' cumsum 4·4 = 16, A 2·64·4 = 512, then the gated norm and
  // out_proj's input.
  ModelShape shape = parsed(tiny_next());
  shape.hidden_size = 64;
  shape.num_attention_heads = 16;
  shape.linear_num_key_heads = 2;
  shape.linear_num_value_heads = 4;
  shape.linear_key_head_dim = 16;
  shape.linear_value_head_dim = 16;
  shape.linear_conv_kernel_dim = 4;
  TrainingSetup setup = setup_of(shape);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const SavedTensorList next = saved_tensors_of(setup);
  REQUIRE(next.in_use);
  // Qwen3-Next: q and k repeated to H_v = 4 heads (128 + 16 each); fla's fused gated norm keeps
  // the kernel's output, z (128 each) and 1/RMS (16); out_proj's input 128.
  CHECK(sum_of(next.tensors, kMixerIds) ==
        128 + 256 + 8 + 16 + 16 + 2 * (128 + 16) + 128 + 16 + 512 + 128 + 128 + 16 + 128);
  CHECK(sum_of(next.tensors, kMixerIds) == 1768);
  // Qwen3.5: H_k = 2 heads of q and k (64 + 8 each), its gated norm in PyTorch: x.float() 256,
  // 1/RMS 16, the BF16 normed copy 128, z.float() 256, the weighted product 128, SiLU(z) 256.
  setup.custom_model.linear_qk_repeated = false;
  setup.custom_model.linear_norm_unfused = true;
  CHECK(sum_of(saved_tensors_of(setup).tensors, kMixerIds) ==
        128 + 256 + 8 + 16 + 16 + 2 * (64 + 8) + 128 + 16 + 512 + 256 + 16 + 128 + 256 + 128 + 256 +
            128);
  CHECK(sum_of(saved_tensors_of(setup).tensors, kMixerIds) == 2392);
}

TEST_CASE("a hybrid's activations are its kinds' mean where every stage holds the model's mix") {
  const ModelShape shape = parsed(tiny_next());
  TrainingSetup setup = setup_of(shape);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const double linear = saved_tensors_of(setup).bytes_per_token;
  const double attention = full_attention_bytes_per_token(setup);
  CHECK(linear != attention);
  const double tokens = 64;
  // One stage: 2 layers of each kind.
  Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kActivations] ==
        doctest::Approx(tokens * (2 * linear + 2 * attention)).epsilon(1e-12));
  // The readout's note says how many layers of each kind there are and what each keeps.
  REQUIRE(estimate.notes.size() >= 1);
  CHECK(estimate.notes.back() ==
        "Of its 4 layers, 2 are Gated DeltaNet layers, each keeping " + format_count(linear) +
            " B a token, and 2 full-attention layers, " + format_count(attention) +
            " B a token, both kinds counted tensor by tensor whichever activation model is "
            "chosen.");
  // The Korthikanti model counts a hybrid's layers tensor by tensor all the same.
  setup.activation_model = ActivationModel::kKorthikanti;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == estimate.bytes[Term::kActivations]);
  // Two stages of 2 layers, one of each kind as the model: the first holds 2 micro-batches of its
  // 2 layers.
  setup.layout.pipeline_parallel = 2;
  estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kActivations] ==
        doctest::Approx(2 * tokens * (linear + attention)).epsilon(1e-12));
  // Four stages of 1 layer each hold one kind alone: each layer the larger kind, an upper bound.
  setup.layout.pipeline_parallel = 4;
  estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kActivations] ==
        doctest::Approx(4 * tokens * std::max(linear, attention)).epsilon(1e-12));
  // Full recomputation keeps each layer's input, 2·h a token, whatever its kind.
  setup.layout.pipeline_parallel = 1;
  setup.recompute = Recompute::kFull;
  estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kActivations] >= 4 * tokens * 2 * 8);
}

TEST_CASE("a hybrid's MTP layer trains as one more full-attention layer") {
  // Qwen3.5's text tower, tiny, with one MTP layer (mtp_num_hidden_layers).
  std::string text = tiny_next(R"("mtp_num_hidden_layers": 1)");
  text.replace(text.find("qwen3_next"), 10, "qwen3_5_moe_text");
  const ModelShape shape = parsed(text);
  REQUIRE(shape.num_mtp_layers == 1);
  TrainingSetup setup = setup_of(shape);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const Estimate without = estimate_memory(setup);
  REQUIRE_MESSAGE(without.answer.ok(), without.answer.message);
  setup.mtp = true;
  const Estimate with = estimate_memory(setup);
  REQUIRE_MESSAGE(with.answer.ok(), with.answer.message);
  // Its states: fc (2·8 × 8), three norms, and a gated-attention layer with its MoE and norms.
  CHECK(with.num_parameters - without.num_parameters ==
        2 * 8 * 8 + 3 * 8 + kAttention + kMixture + 16);
  // Its activations: one full-attention layer's over the tokens (the Qwen3.5 gated norm changes
  // the linear layers alone).
  CHECK(with.bytes[Term::kActivations] - without.bytes[Term::kActivations] ==
        doctest::Approx(64 * full_attention_bytes_per_token(setup)).epsilon(1e-12));
  // The timeline piles the MTP layer's own bytes on the model's layers': its peak is the total.
  double peak = 0;
  for (const TimelinePoint& point : memory_timeline(setup)) peak = std::max(peak, point.bytes);
  CHECK(peak == doctest::Approx(with.bytes.total()).epsilon(1e-12));
}

TEST_CASE("pipeline stages place each kind's parameters where its layers are") {
  TrainingSetup setup = setup_of(parsed(tiny_next()));
  setup.layout.pipeline_parallel = 2;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  // Each stage holds one layer of each kind. The first, with two micro-batches in flight, is the
  // most loaded: its layers and the embedding.
  CHECK(estimate.most_loaded_stage == PipelineStage::kFirst);
  CHECK(estimate.parameters_on_device == kAttention + kDeltaNet + 2 * (kMixture + 16) + 80);
}

TEST_CASE("tensor and context parallelism split the linear layers' heads, as Megatron-LM does") {
  // The tiny shape with 2 query/key heads and 4 value heads, so that t·c = 2 divides both.
  std::string text = tiny_next(R"("_name_or_path": "Tiny")");
  text.replace(text.find("\"linear_num_key_heads\": 1"), 25, "\"linear_num_key_heads\": 2");
  text.replace(text.find("\"linear_num_value_heads\": 2"), 27, "\"linear_num_value_heads\": 4");
  text.replace(text.find("\"num_key_value_heads\": 1"), 24, "\"num_key_value_heads\": 2");
  const ModelShape shape = parsed(text);
  TrainingSetup setup = setup_of(shape);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const std::vector<SavedTensor> whole = saved_tensors_of(setup).tensors;
  setup.layout.tensor_parallel = 2;
  const Estimate split = estimate_memory(setup);
  REQUIRE_MESSAGE(split.answer.ok(), split.answer.message);
  // Each weight of a Gated DeltaNet layer but its norm is split by heads: beside a gated
  // attention layer, whose q/k norms (4 each) stay whole too, it holds in_proj_qkvz
  // 8 × (2·8 + 2·16), in_proj_ba 8 × 8, conv1d (2·8 + 16) × 3, dt_bias and A_log 4 + 4 and
  // out_proj 16 × 8 to split, against q_proj 8 × 16, k_proj and v_proj 8 × 8 each and o_proj
  // 8 × 8; its norm of d_v = 4 against the q/k norms' 8.
  const ParameterCounts counts = parameter_counts(shape);
  CHECK(counts.linear.split ==
        (8 * 48 + 8 * 8 + 32 * 3 + 8 + 16 * 8) - (8 * 16 + 2 * 8 * 8 + 8 * 8));
  CHECK(counts.linear.norms == 4 - 8);
  CHECK(counts.linear.replicated == 0);
  const std::vector<SavedTensor> halves = saved_tensors_of(setup).tensors;
  // The mixer's tensors halve but its input, which sits between the blocks (whole without
  // sequence parallelism).
  const std::vector<std::string> input = {"linear-input"};
  CHECK(sum_of(halves, kMixerIds) - sum_of(halves, input) ==
        (sum_of(whole, kMixerIds) - sum_of(whole, input)) / 2);
  CHECK(sum_of(halves, input) == sum_of(whole, input));
  // Context parallelism over 2: the same per device as half the tokens; t·c = 4 divides 2
  // query/key heads no more, refused by cp.
  setup.layout.tensor_parallel = 1;
  setup.layout.context_parallel = 2;
  REQUIRE_MESSAGE(estimate_memory(setup).answer.ok(), estimate_memory(setup).answer.message);
  setup.layout.tensor_parallel = 2;
  const Estimate both = estimate_memory(setup);
  CHECK(both.answer.setting == "cp");
  CHECK(both.answer.message ==
        "Tiny's Gated DeltaNet layers split their heads over t × c = 4 (Megatron-LM's "
        "GatedDeltaNet), which must divide linear_num_key_heads (2) and linear_num_value_heads "
        "(4).");
}

TEST_CASE("LoRA on a dense hybrid: each kind's projections in its layers' share, by hand") {
  // Qwen3.5's dense text tower, tiny: h 8, 4 layers (every 2nd full attention), 2 heads of 4, 1
  // key/value head, an MLP of 16; linear layers of 1 query/key head and 2 value heads of 4, their
  // input projection split in four (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a).
  const ModelShape shape = parsed(R"({"model_type": "qwen3_5_text", "_name_or_path": "Tiny",
    "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 4, "intermediate_size": 16, "vocab_size": 10, "full_attention_interval": 2,
    "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 4,
    "linear_value_head_dim": 4, "linear_conv_kernel_dim": 3})");
  REQUIRE(shape.linear_projections_split);
  // r 2, per layer as the mean of the kinds, each in half the layers:
  //   gated attention  q_proj 2·(8 + 16), k_proj and v_proj 2·(8 + 4) each, o_proj 2·(8 + 8):
  //                    128 / 2 = 64
  //   Gated DeltaNet   in_proj_qkv 2·(8 + 16), in_proj_z 2·(8 + 8), in_proj_b and in_proj_a
  //                    2·(8 + 2) each, out_proj 2·(8 + 8): 152 / 2 = 76
  //   MLP              gate and up 2·(8 + 16) each, down 2·(16 + 8): 144
  CHECK(lora_parameters_per_layer(shape, 2, LoraTargets::kAllLinear) == 64 + 76 + 144);
  CHECK(lora_parameters_per_layer(shape, 2, LoraTargets::kAttention) == 64);
  // Adapters a token passes: Q, K, V, O in half the layers, the five linear projections in the
  // other half, the MLP's three everywhere.
  CHECK(lora_modules_per_token(shape, LoraTargets::kAllLinear) == 4.0 / 2 + 5.0 / 2 + 3);
  CHECK(lora_modules_per_token(shape, LoraTargets::kAttention) == 2);
  // The frozen base's linear weights (what NF4 holds): attention 8·16 + 2·8·4 + 8·8 = 256, the
  // linear mixer's 8·16 + 8·8 + 2·8·2 + 8·8 = 288, each in half the layers, the MLP's 384; the
  // convolution, dt_bias, A_log and the norms are no linear layers.
  const LinearLayers linear = linear_layers(shape);
  CHECK(linear.weights == 256 / 2 + 288 / 2 + 384);
  CHECK(linear.largest_weight == 8 * 16);
  TrainingSetup setup = setup_of(shape);
  setup.lora_rank = 2;
  setup.lora_targets = LoraTargets::kAllLinear;
  setup.base_weights = BaseWeights::kNf4;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.trainable_parameters == 4 * (64 + 76 + 144));
  // Stages of one layer hold one kind each, not the model's mix: refused, naming the pipeline.
  setup.layout.pipeline_parallel = 4;
  const Estimate split = estimate_memory(setup);
  CHECK(split.answer.setting == "pp");
  setup.layout.pipeline_parallel = 2;
  CHECK(estimate_memory(setup).answer.ok());
}

TEST_CASE("settings trainmem does not count for Gated DeltaNet layers are refused by name") {
  const TrainingSetup base = setup_of(parsed(tiny_next()));
  REQUIRE(estimate_memory(base).answer.ok());
  const auto refused_setting = [](const TrainingSetup& setup) {
    const Estimate estimate = estimate_memory(setup);
    CHECK_FALSE(estimate.answer.ok());
    return estimate.answer.setting;
  };
  TrainingSetup setup = base;
  setup.layout.tensor_parallel = 2;
  CHECK(refused_setting(setup) == "tp");
  setup = base;
  setup.layout.context_parallel = 2;
  CHECK(refused_setting(setup) == "cp");
  // LoRA on Qwen3-Next's shared expert is not counted (check_lora, as for any shared expert).
  setup = base;
  setup.lora_rank = 8;
  CHECK(refused_setting(setup) == "lora-rank");
  setup = base;
  setup.optimizer = Optimizer::kAdafactor;
  CHECK(refused_setting(setup) == "optimizer");
  setup = base;
  setup.stack = Stack::kMegatron;
  CHECK(refused_setting(setup) == "stack");
  setup = base;
  setup.precision = Precision::kFp8Mixed;
  CHECK(refused_setting(setup) == "precision");
  setup = base;
  setup.recompute = Recompute::kSelectiveOp;
  CHECK(refused_setting(setup) == "recompute");
}

TEST_CASE(
    "a hybrid trains under transformers' stacks, hf and deepspeed, and is refused by others") {
  TrainingSetup setup = setup_of(parsed(tiny_next()));
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.peak_allocated_bytes > 0);
  CHECK(estimate.peak_reserved_bytes >= estimate.peak_allocated_bytes);
  setup.stack = Stack::kDeepSpeed;
  setup.precision = Precision::kBf16Mixed;
  setup.layout.zero_stage = 3;
  estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.peak_allocated_bytes > 0);
  // transformers' modules split over data parallelism alone: DeepSpeed's tensor parallelism and
  // pipeline do not take them.
  TrainingSetup split = setup;
  split.layout.tensor_parallel = 2;
  CHECK(estimate_memory(split).answer.setting == "tp");
  split = setup;
  split.layout.pipeline_parallel = 2;
  CHECK(estimate_memory(split).answer.setting == "pp");
  // transformers builds no multi-token-prediction modules: its stacks train none.
  TrainingSetup mtp = setup_of(parsed(tiny_next()));
  mtp.stack = Stack::kHf;
  mtp.precision = Precision::kBf16;
  CHECK(estimate_memory(mtp).answer.ok());
  mtp.custom_model.num_mtp_layers = 1;
  mtp.mtp = true;
  CHECK(estimate_memory(mtp).answer.setting == "mtp");
  CHECK(estimate_memory(mtp).answer.message.find("transformers builds no multi-token-prediction "
                                                 "modules") != std::string::npos);
  for (const Stack stack : {Stack::kMegatron, Stack::kTorchtitan, Stack::kTorchtune}) {
    TrainingSetup other = setup_of(parsed(tiny_next()));
    other.stack = stack;
    const Estimate refused = estimate_memory(other);
    CAPTURE(choice_name(stack));
    CHECK_FALSE(refused.answer.ok());
    CHECK(refused.answer.setting == "stack");
    CHECK(refused.answer.message.find("Choose the ideal, hf or deepspeed stack.") !=
          std::string::npos);
  }
}

TEST_CASE("the replay's gradient stand-ins are the largest kind of layer a hybrid's stage holds") {
  const ModelShape shape = parsed(tiny_next());
  TrainingSetup setup = setup_of(shape);
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  const LayerStack stack = layer_stack_of(setup);
  const double linear = saved_bytes_per_token(layer_kind_tensors(shape, setup, stack, true, 'L'));
  const double attention =
      saved_bytes_per_token(layer_kind_tensors(shape, setup, stack, true, 'A'));
  REQUIRE(linear > attention);  // the Gated DeltaNet layer saves the more on this shape
  StagePlacement stage;
  stage.first_layer = 0;
  stage.layers = 4;
  CHECK(saved_bytes_per_token(rebuilt_layer_tensors(shape, setup, stage)) == linear);
  // Layer 1 alone is a full-attention layer (every 2nd): its stage rebuilds no linear layer.
  stage.first_layer = 1;
  stage.layers = 1;
  CHECK(saved_bytes_per_token(rebuilt_layer_tensors(shape, setup, stage)) == attention);
  // Under full recomputation the layer is rebuilt whole, as it runs without it.
  setup.recompute = Recompute::kFull;
  stage.first_layer = 0;
  stage.layers = 4;
  CHECK(saved_bytes_per_token(rebuilt_layer_tensors(shape, setup, stage)) == linear);
}

TEST_CASE("under transformers a hybrid's slots hold what the ideal step counts, kernels named") {
  TrainingSetup setup;
  setup.model_id = "qwen3.5-27b";
  setup.sequence_length = 4096;
  setup.precision = Precision::kBf16;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  const Estimate ideal = estimate_memory(setup);
  REQUIRE_MESSAGE(ideal.answer.ok(), ideal.answer.message);
  setup.stack = Stack::kHf;
  const Estimate hf = estimate_memory(setup);
  REQUIRE_MESSAGE(hf.answer.ok(), hf.answer.message);
  // No recomputation: the peak holds every layer's slot, each in the allocator's blocks.
  CHECK(hf.bytes[Term::kActivations] >= ideal.bytes[Term::kActivations]);
  CHECK(hf.bytes[Term::kActivations] ==
        doctest::Approx(ideal.bytes[Term::kActivations]).epsilon(1e-3));
  const std::string kernels =
      "The Gated DeltaNet layers are counted on fla's chunked kernels and causal-conv1d, which "
      "transformers runs where flash-linear-attention and causal-conv1d are installed; without "
      "them it falls back to PyTorch loops that keep more, which are not counted.";
  const auto said = [&](const Estimate& estimate) {
    return std::find(estimate.notes.begin(), estimate.notes.end(), kernels) != estimate.notes.end();
  };
  CHECK(said(hf));
  CHECK_FALSE(said(ideal));
  // Mamba-2's fused path, and what a plain Trainer's cache costs, are said.
  setup.model_id = "nemotron-nano-9b-v2";
  const Estimate mamba = estimate_memory(setup);
  REQUIRE_MESSAGE(mamba.answer.ok(), mamba.answer.message);
  CHECK(std::any_of(mamba.notes.begin(), mamba.notes.end(), [](const std::string& note) {
    return note.find("mamba_split_conv1d_scan_combined") != std::string::npos &&
           note.find("use_cache=False") != std::string::npos;
  }));
}

}  // namespace hybrid_test
