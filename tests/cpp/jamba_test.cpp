// Jamba (issue 45): Mamba's selective-scan layers beside attention ones, each over an MLP or a
// mixture of experts, counted by hand on a tiny shape, Jamba 1.5 Mini read from its published
// config.json to its checkpoint's total, the Mamba mixer's saved tensors pinned by hand from
// transformers' JambaMambaMixer, causal-conv1d and mamba_ssm's selective_scan_fn, and what
// trainmem cannot count refused by name.
#include <doctest/doctest.h>

#include <string>

#include "config_fixtures.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

using namespace trainmem;
using namespace trainmem::fixtures;

namespace jamba_test {

namespace {

// A tiny jamba: h 8, 4 layers, attention on layer 2 (period 4, offset 2) of 2 heads of 4 and 1
// key/value head, mixtures on layers 1 and 3 (period 2, offset 1) of 2 experts of 4, top 1, the
// other layers' MLPs of 4; Mamba's mixer of d = 2·8 = 16 channels, a state of 2, a convolution of
// 3 with its bias, dt's rank 2; a vocabulary of 10, untied.
std::string tiny_jamba(const std::string& more = "") {
  std::string text = R"({"model_type": "jamba", "hidden_size": 8, "num_hidden_layers": 4,
    "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 4,
    "vocab_size": 10, "attn_layer_period": 4, "attn_layer_offset": 2, "expert_layer_period": 2,
    "expert_layer_offset": 1, "num_experts": 2, "num_experts_per_tok": 1, "mamba_d_state": 2,
    "mamba_d_conv": 3, "mamba_expand": 2, "mamba_dt_rank": 2, "mamba_conv_bias": true,
    "mamba_proj_bias": false, "tie_word_embeddings": false)";
  if (!more.empty()) text += ", " + more;
  return text + "}";
}

// By hand, per layer (each with its two norms of 8):
//   Mamba      in_proj 8 × 32 = 256, conv1d 16 × 3 + 16, x_proj 16 × (2 + 2·2) = 96, dt_proj
//              2 × 16 + 16, A_log 16 × 2 = 32, D 16, out_proj 16 × 8 = 128, the norms over dt, B
//              and C 2 + 2 + 2
//   attention  q and o 8 × 8 each, k and v 8 × 4 each: 192 (no biases)
//   MLP        gate, up and down 8 × 4 each: 96
//   mixture    2 experts of 96 and the router 8 × 2
constexpr double kMamba = 256 + 64 + 96 + 48 + 32 + 16 + 128 + 6;  // 646
constexpr double kAttention = 64 + 32 + 32 + 64;                   // 192
constexpr double kMlp = 96;
constexpr double kMixture = 2 * 96 + 16;  // 208
constexpr double kOutside = 80 + 80 + 8;  // embedding, lm_head, final norm
constexpr double kNorms = 16;

std::string refusal(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

}  // namespace

TEST_CASE("a tiny Jamba counts its Mamba, attention, MLP and mixture layers by hand") {
  const ModelShape shape = parsed(tiny_jamba());
  CHECK(shape.hybrid_layers == "LLAL");
  CHECK(shape.moe_layer_step == 2);
  CHECK(shape.head_dim == 4);
  // Layers 0 (Mamba, MLP), 1 (Mamba, mixture), 2 (attention, MLP), 3 (Mamba, mixture).
  CHECK(count_parameters(shape) == (kMamba + kMlp + kNorms) + (kMamba + kMixture + kNorms) +
                                       (kAttention + kMlp + kNorms) + (kMamba + kMixture + kNorms) +
                                       kOutside);
  CHECK(count_parameters(shape) == 2970);
  // dt's rank "auto" is ceil(h / 16): 1 here, one column of x_proj and one row of dt_proj fewer
  // for each Mamba layer, and its norm one narrower.
  const ModelShape automatic =
      parsed(tiny_jamba(R"("mamba_dt_rank": "auto")")
                 .replace(tiny_jamba().find(R"("mamba_dt_rank": 2, )"), 20, ""));
  CHECK(automatic.mamba_dt_rank == 1);
  CHECK(count_parameters(automatic) == 2970 - 3 * (16 + 16 + 1));
  // Without a mixture (num_experts 1) every layer's MLP is dense.
  const ModelShape dense = parsed(tiny_jamba(R"("num_experts": 1)")
                                      .replace(tiny_jamba().find(R"("num_experts": 2, )"), 17, ""));
  CHECK(count_parameters(dense) == 2970 - 2 * (kMixture - kMlp));
}

TEST_CASE("Jamba 1.5 Mini's published config reads to its checkpoint's total") {
  // ai21labs/AI21-Jamba-1.5-Mini config.json (transformers 4.40.2); its
  // model.safetensors.index.json holds 103,140,646,656 bytes of BF16 tensors: 51,570,323,328
  // parameters ("52B total, 12B active", the model card).
  const ModelShape shape = parsed(R"({
    "architectures": ["JambaForCausalLM"], "attention_dropout": 0.0, "attn_layer_offset": 4,
    "attn_layer_period": 8, "bos_token_id": 1, "eos_token_id": [2, 518],
    "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "mamba_conv_bias": true, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256,
    "mamba_expand": 2, "mamba_proj_bias": false, "max_position_embeddings": 262144,
    "model_type": "jamba", "num_attention_heads": 32, "num_experts": 16,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_logits_to_keep": 1, "output_router_logits": false, "pad_token_id": 0,
    "rms_norm_eps": 1e-06, "router_aux_loss_coef": 0.001, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.2",
    "use_cache": true, "use_mamba_kernels": true, "vocab_size": 65536})");
  CHECK(count_parameters(shape) == 51570323328.0);
  CHECK(count_parameters(shape) * 2 == 103140646656.0);
  // 4 attention layers (4, 12, 20, 28) and 28 Mamba layers; 2 of 16 experts a token.
  CHECK(layers_of_kinds_between(shape, 0, 32, "A") == 4);
  CHECK(count_active_parameters(shape) == 12110311296.0);
}

TEST_CASE("a Mamba layer's mixer saves what JambaMambaMixer's kernels keep, by hand") {
  // Per token over 64-token sequences (one chunk of the scan's 2,048), h 8, d 16, N 2, R 2:
  // in_proj's input 2·8; its whole output x and z, 2·32, kept by the convolution's view of x;
  // the convolution's output, x_proj's input, 2·16; each of the RMSNorms over dt, B and C its FP32
  // input, its 1/RMS and its BF16 normalised copy, 3 × (4·2 + 4 + 2·2); dt_proj's input 2·2; the
  // scan's contiguous u, delta and z, 3 × 2·16, and B and C, 2 × 2·2; its chunk states,
  // 2·N·d FP32 a sequence, 4·64 / 64; its output before the gate 2·16; out_proj's contiguous
  // copy of the gated output 2·16.
  const ModelShape shape = parsed(tiny_jamba());
  const SavedTensorList list = saved_tensors_of(setup_of(shape));
  REQUIRE(list.in_use);
  const double mixer = bytes_of(list.tensors, {"linear-input",  "mamba-projections",
                                               "conv-output",   "dt-norm-input",
                                               "dt-norm-rstd",  "dt-norm-normed",
                                               "b-norm-input",  "b-norm-rstd",
                                               "b-norm-normed", "c-norm-input",
                                               "c-norm-rstd",   "c-norm-normed",
                                               "dt-proj-input", "scan-u",
                                               "scan-delta",    "scan-b",
                                               "scan-c",        "scan-z",
                                               "scan-states",   "scan-output",
                                               "linear-output"});
  CHECK(mixer == 16 + 64 + 32 + 3 * 16 + 4 + 3 * 32 + 2 * 4 + 4 + 32 + 32);
  CHECK(mixer == 336);
  // The chunk states are one chunk's for any sequence up to 2,048 tokens, two past it.
  TrainingSetup longer = setup_of(shape);
  longer.sequence_length = 4096;
  CHECK(bytes_of(saved_tensors_of(longer).tensors, {"scan-states"}) ==
        doctest::Approx(4.0 * 2 * 2 * 16 * 2 / 4096));
  // The estimate answers it.
  const Estimate estimate = estimate_memory(longer);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("jamba fields trainmem cannot count are refused by name") {
  CHECK(refusal(tiny_jamba(R"("use_mamba_kernels": false)")).find("'use_mamba_kernels'") !=
        std::string::npos);
  CHECK(refusal(tiny_jamba(R"("hidden_act": "gelu")")) ==
        "config.json: 'hidden_act' must be \"silu\": JambaMambaMixer hands it to causal-conv1d, "
        "which fuses SiLU alone; it is \"gelu\".");
  std::string offset = tiny_jamba();
  offset.replace(offset.find(R"("expert_layer_offset": 1)"), 24, R"("expert_layer_offset": 0)");
  CHECK(refusal(offset) ==
        "config.json: 'expert_layer_offset' must be expert_layer_period - 1 (1), the mixtures on "
        "every expert_layer_period-th layer counted from 1; it is 0.");
  std::string attention = tiny_jamba();
  attention.replace(attention.find(R"("attn_layer_offset": 2)"), 22, R"("attn_layer_offset": 4)");
  CHECK(refusal(attention) ==
        "config.json: 'attn_layer_offset' must be below attn_layer_period (4, as JambaConfig "
        "requires); it is 4.");
  std::string heads = tiny_jamba();
  heads.replace(heads.find(R"("num_attention_heads": 2)"), 24, R"("num_attention_heads": 3)");
  CHECK(refusal(heads) ==
        "config.json: 'num_attention_heads' (3) must divide hidden_size (8): JambaAttention's "
        "heads are hidden_size / num_attention_heads wide.");
  std::string expand = tiny_jamba();
  expand.replace(expand.find(R"("mamba_expand": 2)"), 17, R"("mamba_expand": 1.5)");
  CHECK(refusal(expand).find("'mamba_expand'") != std::string::npos);
  // No framework splits Jamba's Mamba layers over tensor or context parallelism.
  TrainingSetup setup = setup_of(parsed(tiny_jamba()));
  REQUIRE(estimate_memory(setup).answer.ok());
  setup.layout.tensor_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "tp");
  setup.layout.tensor_parallel = 1;
  setup.layout.context_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == "cp");
}

}  // namespace jamba_test
