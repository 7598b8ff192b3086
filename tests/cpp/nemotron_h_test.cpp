// Nemotron-H's blocks (issue 45): one norm and one part a block, Mamba-2, attention, an MLP or a
// mixture of experts, counted by hand on tiny shapes, Nemotron 3 Nano read from its published
// config.json to its published total, Mamba-2's saved tensors pinned by hand from
// NemotronHMamba2Mixer and mamba_ssm's mamba_split_conv1d_scan_combined, the kinds on pipeline
// stages, Megatron-LM's MambaMixer split over t and c, and what trainmem cannot count refused by
// name.
#include <doctest/doctest.h>

#include <string>

#include "config_fixtures.hpp"
#include "hub_configs.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

// layer_kind_tensors, for one kind of block's saved tensors.
#include "activations/layer.hpp"
#include "estimate/stage.hpp"

using namespace trainmem;
using namespace trainmem::fixtures;

namespace nemotron_h_test {

namespace {

ConfigParse read(const std::string& text) { return parse_hf_config(text); }

// A tiny nemotron_h: h 8; Mamba-2 of 4 heads of 2 (an inner width of 8), 2 groups, a state of 3
// and a convolution of 3 with its bias; attention of 2 heads of 4 and 2 key/value heads; an MLP
// of 12 (ReLU², up and down); a vocabulary of 10, untied. `pattern` places the blocks; a mixture
// (E) has 4 experts of 6, top 2, and a shared MLP of 5.
std::string tiny_nemotron(const std::string& pattern = "M-*-", const std::string& more = "") {
  std::string text = R"({"model_type": "nemotron_h", "_name_or_path": "Tiny", "hidden_size": 8,
    "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 4, "intermediate_size": 12,
    "mamba_num_heads": 4, "mamba_head_dim": 2, "n_groups": 2, "ssm_state_size": 3,
    "conv_kernel": 3, "use_conv_bias": true, "mlp_hidden_act": "relu2", "n_routed_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 6,
    "moe_shared_expert_intermediate_size": 5, "n_shared_experts": 1, "vocab_size": 10,
    "tie_word_embeddings": false, "hybrid_override_pattern": ")" +
                     pattern + "\"";
  if (!more.empty()) text += ", " + more;
  return text + "}";
}

// By hand, per block (each with its norm of 8):
//   Mamba-2    in_proj 8 × (2·8 + 2·2·3 + 4) = 256, conv1d 20 × 3 + 20, dt_bias, A_log and D
//              3 × 4, its gated norm 8, out_proj 8 × 8 = 64
//   attention  q and o 8 × 8 each, k and v 8 × 8 each: 256 (no biases)
//   MLP        up and down 8 × 12 each: 192
//   mixture    4 experts of up and down 8 × 6 each (384), a shared MLP 2 × 8 × 5 (80), the
//              router 8 × 4 and its bias 4
constexpr double kMamba = 256 + 60 + 20 + 12 + 8 + 64 + 8;  // 428
constexpr double kAttention = 4 * 64 + 8;                   // 264
constexpr double kMlp = 192 + 8;                            // 200
constexpr double kMixture = 384 + 80 + 32 + 4 + 8;          // 508
constexpr double kOutside = 80 + 80 + 8;                    // embedding, lm_head, norm_f

}  // namespace

TEST_CASE("tiny Nemotron-H models count their one-part blocks by hand") {
  const ModelShape dense = parsed(tiny_nemotron());
  CHECK(dense.num_layers == 4);
  CHECK(dense.hybrid_layers == "lFaF");
  CHECK(dense.mamba2);
  CHECK(dense.num_experts == 1);
  CHECK(count_parameters(dense) == kOutside + kMamba + kMlp + kAttention + kMlp);
  CHECK(count_active_parameters(dense) == count_parameters(dense));
  // A mixture's blocks, the dense intermediate_size no block's.
  const ModelShape moe = parsed(tiny_nemotron("ME*E"));
  CHECK(moe.hybrid_layers == "lFaF");
  CHECK(moe.num_experts == 4);
  CHECK(count_parameters(moe) == kOutside + kMamba + kMixture + kAttention + kMixture);
  CHECK(count_active_parameters(moe) == count_parameters(moe) - 2 * 2 * 96);
  // layers_block_type lists the same blocks by name, and wins over the pattern.
  CHECK(parsed(tiny_nemotron("MMMM", R"("layers_block_type": ["linear_attention", "moe",
      "full_attention", "moe"])"))
            .hybrid_layers == "lFaF");
  // num_hidden_layers is deprecated: the blocks are as many as the pattern says.
  CHECK(parsed(tiny_nemotron("M-*-", R"("num_hidden_layers": 52)")).num_layers == 4);
}

TEST_CASE("Nemotron 3 Nano's published config reads to its published total") {
  const ModelShape shape = parsed(hub_config("nemotron3-nano-30b-a3b"));
  CHECK(shape.num_layers == 52);
  CHECK(layers_of_kinds_between(shape, 0, 52, "l") == 23);
  CHECK(layers_of_kinds_between(shape, 0, 52, "F") == 23);
  CHECK(layers_of_kinds_between(shape, 0, 52, "a") == 6);
  // llama.cpp's n_params for the BF16 checkpoint, 31,577,940,288 (the card's 31.6B); by hand: 23
  // Mamba-2 blocks of 38,744,896 (in_proj 2,688 × 10,304, conv1d 6,144 × 5, 3 × 64, its norm
  // 4,096, out_proj 4,096 × 2,688, the block's norm), 23 mixtures of 1,297,468,160 (128 experts of
  // 2 × 2,688 × 1,856, a shared MLP of 2 × 2,688 × 3,712, the router 128 × 2,688 and its bias, the
  // norm), 6 attention blocks of 23,399,040 (2,688 × (4,096 + 2 × 256) + 4,096 × 2,688, the
  // norm), the embedding and lm_head 131,072 × 2,688 each and norm_f.
  const double mamba = 2688.0 * 10304 + 6144.0 * 5 + 3 * 64 + 4096 + 4096.0 * 2688 + 2688;
  const double mixture = 128 * 2 * 2688.0 * 1856 + 2 * 2688.0 * 3712 + 128 * 2688.0 + 128 + 2688;
  const double attention = 2688.0 * (4096 + 2 * 256) + 4096.0 * 2688 + 2688;
  CHECK(mamba == 38744896.0);
  CHECK(mixture == 1297468160.0);
  CHECK(attention == 23399040.0);
  CHECK(23 * mamba + 23 * mixture + 6 * attention + 2 * 131072.0 * 2688 + 2688 == 31577940288.0);
  CHECK(count_parameters(shape) == 31577940288.0);
  CHECK(count_parameters(*find_preset("nemotron3-nano-30b-a3b")) == 31577940288.0);
  // Six of the 128 experts a token: 3,580,076,352 active.
  CHECK(count_active_parameters(shape) == 31577940288.0 - 23 * 122 * 2 * 2688.0 * 1856);
  CHECK(count_active_parameters(shape) == 3580076352.0);
}

TEST_CASE("a Mamba-2 block saves what mamba_split_conv1d_scan_combined keeps, by hand") {
  // Per token, BF16 but the 1/RMS: in_proj's input h (8); its whole output z, x, B, C and dt,
  // 2·H·P + 2·G·N + H = 32; the scan's output before the gate, H·P = 8; the gated norm's 1/RMS, one
  // a group, FP32; the block norm's input and 1/RMS, 2·8 + 4.
  const ModelShape shape = parsed(tiny_nemotron());
  const SavedTensorList list = saved_tensors_of(setup_of(shape));
  REQUIRE(list.in_use);
  const double mixer = bytes_of(
      list.tensors, {"linear-input", "mamba-projections", "scan-output", "gated-norm-rstd"});
  CHECK(mixer == 2 * 8 + 2 * 32 + 2 * 8 + 4 * 2);
  CHECK(list.bytes_per_token == mixer + 2 * 8 + 4);
  // No MLP in a Mamba-2 block.
  CHECK(bytes_of(list.tensors, {"mlp-input", "up-output", "activation-output"}) == 0);
  // Nemotron 3 Nano's: 34,208 B a token for the mixer, 39,588 B with the block's norm; its
  // mixture blocks 102,404 B and its attention blocks 28,292 B, as the estimate's note says.
  const ModelShape nano = *find_preset("nemotron3-nano-30b-a3b");
  TrainingSetup setup;
  setup.model_id = nano.id;
  setup.sequence_length = 4096;
  const SavedTensorList nano_list = saved_tensors_of(setup);
  CHECK(nano_list.bytes_per_token == 39588);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  bool noted = false;
  for (const std::string& note : estimate.notes) {
    noted =
        noted || note.rfind(
                     "Of its 52 layers, 23 are Mamba-2 blocks, each keeping 39,588 B a token, 23 "
                     "mixture-of-experts blocks, 102,404 B a token, and 6 attention blocks, "
                     "28,292 B a token, each kind counted tensor by tensor",
                     0) == 0;
  }
  CHECK(noted);
}

TEST_CASE("a Nemotron-H mixture's intermediate_size, no block's width, changes nothing") {
  // Its Mamba-2 and attention blocks count as dense layers that hold no MLP: neither their
  // parameters nor their activations carry intermediate_size, however wide.
  std::string wide = tiny_nemotron("ME*E");
  wide.replace(wide.find(R"("intermediate_size": 12)"), 23, R"("intermediate_size": 4000)");
  const ModelShape narrow_shape = parsed(tiny_nemotron("ME*E"));
  const ModelShape wide_shape = parsed(wide);
  CHECK(wide_shape.ffn_hidden_size == 4000);
  CHECK(count_parameters(wide_shape) == count_parameters(narrow_shape));
  const Estimate narrow = estimate_memory(setup_of(narrow_shape));
  const Estimate broad = estimate_memory(setup_of(wide_shape));
  REQUIRE(narrow.answer.ok());
  REQUIRE(broad.answer.ok());
  CHECK(broad.bytes[Term::kActivations] == narrow.bytes[Term::kActivations]);
  CHECK(broad.bytes.total() == narrow.bytes.total());
}

TEST_CASE("a Nemotron-H pipeline whose stages hold another mix of blocks counts the largest") {
  const ModelShape shape = parsed(tiny_nemotron());
  ParallelLayout two;
  two.pipeline_parallel = 2;
  // "lF" and "aF": neither holds the model's 1 : 2 : 1.
  CHECK_FALSE(hybrid_stages_hold_model_mix(shape, two));
  TrainingSetup setup = setup_of(shape);
  const Estimate whole = estimate_memory(setup);
  setup.layout.pipeline_parallel = 2;
  const Estimate split = estimate_memory(setup);
  REQUIRE_MESSAGE(split.answer.ok(), split.answer.message);
  CHECK(whole.answer.ok());
  // "lFaF" twice over: each stage of 4 holds the mix.
  CHECK(hybrid_stages_hold_model_mix(parsed(tiny_nemotron("M-*-M-*-")), two));
}

TEST_CASE("Mamba-2's heads and groups split over t and c as Megatron-LM's MambaMixer splits them") {
  TrainingSetup setup = setup_of(parsed(tiny_nemotron()));
  setup.layout.tensor_parallel = 2;
  CHECK_MESSAGE(estimate_memory(setup).answer.ok(), estimate_memory(setup).answer.message);
  // t × c = 4 does not divide the 2 groups.
  setup.layout.context_parallel = 2;
  const Estimate both = estimate_memory(setup);
  CHECK(both.answer.setting == "cp");
  CHECK(both.answer.message ==
        "Tiny's Mamba-2 layers split their heads over t × c = 4 (Megatron-LM's MambaMixer), which "
        "must divide n_groups (2) and mamba_num_heads (4).");
  // LoRA on one-part blocks is not counted yet.
  setup.layout.context_parallel = 1;
  setup.lora_rank = 8;
  CHECK(estimate_memory(setup).answer.setting == "lora-rank");
}

TEST_CASE("nemotron_h fields trainmem cannot count are refused by name") {
  CHECK(read(tiny_nemotron("ME*-")).answer.message ==
        "config.json: Nemotron-H's blocks hold mixture-of-experts (E, \"moe\") and MLP (-, "
        "\"mlp\") blocks both, which trainmem does not count in one model.");
  CHECK(read(tiny_nemotron("ME*E", R"("moe_latent_size": 0)")).answer.message ==
        "config.json: 'moe_latent_size' must be a whole number from 1 to 1,048,576; it is 0.");
  CHECK(read(tiny_nemotron("M-*X")).answer.message ==
        "config.json: 'hybrid_override_pattern' must be one character a block, M (Mamba-2), E (a "
        "mixture of experts), * (attention) or - (an MLP); character 3 is 'X'.");
  CHECK(read(tiny_nemotron("M-*-", R"("use_bias": true)")).answer.status != Status::kOk);
  CHECK(read(tiny_nemotron("M-*-", R"("residual_in_fp32": true)")).answer.status != Status::kOk);
  CHECK(read(tiny_nemotron("M-*-", R"("hidden_dropout": 0.1)")).answer.status != Status::kOk);
  std::string swiglu = tiny_nemotron();
  swiglu.replace(swiglu.find(R"("relu2")"), 7, R"("swiglu")");
  CHECK(read(swiglu).answer.message.find("'mlp_hidden_act' must be one of") != std::string::npos);
  CHECK(read(tiny_nemotron("M-*-", R"("layers_block_type": ["mamba", "mlp"])"))
            .answer.message.find("entry 0 is \"mamba\"") != std::string::npos);
  CHECK(read(tiny_nemotron("-*-*")).answer.message.find("must hold Mamba-2 mixers") !=
        std::string::npos);
}

TEST_CASE("a latent mixture counts its projections and its experts in the latent width by hand") {
  // transformers' NemotronHMoE with moe_latent_size 4: fc1_latent_proj 8 × 4 and fc2_latent_proj
  // 4 × 8 (64), the 4 experts' up and down 4 × 6 each (192 against 384 at h 8); the router, its
  // bias and the shared MLP on h as before.
  const std::string latent = tiny_nemotron("ME*E", R"("moe_latent_size": 4)");
  const ModelShape shape = parsed(latent);
  CHECK(shape.moe_latent_size == 4);
  CHECK(expert_token_width(shape) == 4);
  constexpr double kLatentMixture = kMixture - 384 + 192 + 64;  // 380
  CHECK(count_parameters(shape) ==
        kOutside + kMamba + kLatentMixture + kAttention + kLatentMixture);
  // Two of the 4 experts idle for each token, in each mixture block: 2 × 2 × 2 × 4 × 6.
  CHECK(count_active_parameters(shape) == count_parameters(shape) - 2 * 2 * 48);
  // null is no latent projection, as NemotronHConfig's default.
  CHECK(parsed(tiny_nemotron("ME*E", R"("moe_latent_size": null)")).moe_latent_size == 0);
  // A latent width outside a hybrid (an API's shape) is refused: Korthikanti's equation has none.
  ModelShape qwen = *find_preset("qwen3-30b-a3b");
  qwen.moe_latent_size = 256;
  CHECK(
      model_shape_problem(qwen) ==
      "moe_latent_size (a latent mixture's width) is counted in Nemotron-H's hybrid blocks alone; "
      "it must be 0 for a model without a linear mixer.");
  // The mixture block's saved tensors: the norm's output h (the router's, fc1_latent_proj's and
  // the shared experts' input), the experts' 2 copies of the latent input, l each, and the
  // combined latent output fc2_latent_proj reads, all BF16; the experts' own in their width.
  const TrainingSetup setup = setup_of(shape);
  const std::vector<SavedTensor> mixture =
      layer_kind_tensors(shape, setup, layer_stack_of(setup), setup.flash_attention, 'F');
  CHECK(bytes_of(mixture, {"router-input"}) == 2 * 8);
  CHECK(bytes_of(mixture, {"mlp-input"}) == 2 * 2 * 4);
  CHECK(bytes_of(mixture, {"latent-combined"}) == 2 * 4);
  CHECK(bytes_of(mixture, {"up-output", "activation-output"}) == 2 * 2 * (2 * 6));
  const std::vector<SavedTensor> plain = layer_kind_tensors(
      parsed(tiny_nemotron("ME*E")), setup, layer_stack_of(setup), setup.flash_attention, 'F');
  CHECK(bytes_of(plain, {"mlp-input"}) == 2 * 2 * 8);
  CHECK(bytes_of(plain, {"latent-combined"}) == 0);
  const Estimate estimate = estimate_memory(setup_of(shape));
  CHECK_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("Nemotron 3 Super's config reads to its checkpoint's total less the MTP block") {
  // The BF16 checkpoint's safetensors index (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16):
  // 123,611,012,096 BF16 parameters and 20,992 FP32 (41 routers' e_score_correction_bias of 512).
  // Its MTP block (mtp.*: eh_proj 4,096 × 8,192, enorm and hnorm, an attention block, a mixture
  // block and a final norm), 2,942,324,736 BF16 and one bias of 512, is no part of the model
  // transformers builds. By hand: 40 Mamba-2 blocks (in_proj 4,096 × 18,560, conv1d 10,240 × 4
  // and its bias, 3 × 128, the gated norm 8,192, out_proj 8,192 × 4,096, the norm), 40 latent
  // mixtures (512 experts of 2 × 1,024 × 2,688, fc1 and fc2_latent_proj 2 × 4,096 × 1,024, a shared
  // MLP of 2 × 4,096 × 5,376, the router 512 × 4,096 and its bias, the norm) and 8 attention blocks
  // (4,096 × (4,096 + 2 × 256) + 4,096², the norm); the embedding and lm_head 131,072 × 4,096 each
  // and norm_f.
  const double mamba = 4096.0 * 18560 + 10240.0 * 4 + 10240 + 3 * 128 + 8192 + 8192.0 * 4096 + 4096;
  const double mixture =
      512 * 2 * 1024.0 * 2688 + 2 * 4096.0 * 1024 + 2 * 4096.0 * 5376 + 512 * 4096.0 + 512 + 4096;
  const double attention = 4096.0 * (4096 + 2 * 256) + 4096.0 * 4096 + 4096;
  const double mtp = 4096.0 * 8192 + 2 * 4096 + attention + mixture + 4096;
  const double total = 40 * mamba + 40 * mixture + 8 * attention + 2 * 131072.0 * 4096 + 4096;
  CHECK(mtp - 512 == 2942324736.0);
  CHECK(total + mtp == 123611012096.0 + 20992);
  CHECK(total == 120668707840.0);
  const ModelShape shape = parsed(hub_config("nemotron3-super-120b-a12b"));
  CHECK(shape.num_layers == 88);
  CHECK(layers_of_kinds_between(shape, 0, 88, "l") == 40);
  CHECK(layers_of_kinds_between(shape, 0, 88, "F") == 40);
  CHECK(layers_of_kinds_between(shape, 0, 88, "a") == 8);
  CHECK(count_parameters(shape) == total);
  CHECK(count_parameters(*find_preset("nemotron3-super-120b-a12b")) == total);
  // 22 of the 512 experts a token: 12.77B active (the card's "12B" leaves out the embedding).
  CHECK(count_active_parameters(shape) == total - 40 * 490 * 2 * 1024.0 * 2688);
  CHECK(count_active_parameters(shape) == 12770237440.0);
}

TEST_CASE(
    "NVIDIA-Nemotron-Nano-9B-v2's config reads to its published total: Mamba-2, MLP and "
    "attention blocks") {
  // The hub's safetensors total, 8,888,227,328 (the card's 9B). By hand: 27 Mamba-2 blocks
  // (in_proj 4,480 × (2 · 10,240 + 2 · 8 · 128 + 128), conv1d 12,288 × 4 and its bias, 3 × 128, the
  // gated norm 10,240, out_proj 10,240 × 4,480, the norm), 25 MLP blocks (up and down 4,480 ×
  // 15,680, the norm) and 4 attention blocks (4,480 × (5,120 + 2 · 1,024) + 5,120 × 4,480, the
  // norm); the embedding and lm_head 131,072 × 4,480 each and norm_f.
  const double mamba =
      4480.0 * 22656 + 12288.0 * 4 + 12288 + 3 * 128 + 10240 + 10240.0 * 4480 + 4480;
  const double mlp = 2 * 4480.0 * 15680 + 4480;
  const double attention = 4480.0 * (5120 + 2 * 1024) + 5120.0 * 4480 + 4480;
  const double total = 27 * mamba + 25 * mlp + 4 * attention + 2 * 131072.0 * 4480 + 4480;
  CHECK(total == 8888227328.0);
  const ModelShape shape = parsed(hub_config("nemotron-nano-9b-v2"));
  CHECK(shape.num_experts == 1);
  CHECK(layers_of_kinds_between(shape, 0, 56, "l") == 27);
  CHECK(layers_of_kinds_between(shape, 0, 56, "F") == 25);
  CHECK(layers_of_kinds_between(shape, 0, 56, "a") == 4);
  CHECK(count_parameters(shape) == total);
  CHECK(count_parameters(*find_preset("nemotron-nano-9b-v2")) == total);
  const Estimate estimate = estimate_memory(setup_of(shape));
  CHECK_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("Nemotron-H 56B's config reads to its published 56B: 54 Mamba-2, 54 MLP, 10 attention") {
  // nvidia/Nemotron-H-56B-Base-8K config.json (as ai-dynamo/aiconfigurator keeps it: its
  // time_step_limit holds a bare Infinity); the card's "56B model parameters" is the one figure
  // published. By hand: 54 Mamba-2 blocks (in_proj 8,192 × (2 · 16,384 + 2 · 8 · 256 + 256),
  // conv1d 20,480 × 4 and its bias, 3 × 256, the gated norm 16,384, out_proj 16,384 × 8,192, the
  // norm), 54 MLP blocks (up and down 8,192 × 32,768, the norm) and 10 attention blocks
  // (8,192 × (8,192 + 2 · 1,024) + 8,192², the norm); the embedding and lm_head 131,072 × 8,192
  // each and norm_f.
  const double mamba =
      8192.0 * 37120 + 20480.0 * 4 + 20480 + 3 * 256 + 16384 + 16384.0 * 8192 + 8192;
  const double mlp = 2 * 8192.0 * 32768 + 8192;
  const double attention = 8192.0 * (8192 + 2 * 1024) + 8192.0 * 8192 + 8192;
  const double total = 54 * mamba + 54 * mlp + 10 * attention + 2 * 131072.0 * 8192 + 8192;
  CHECK(total == 56324350464.0);
  const ModelShape shape = parsed(
      R"({"architectures": ["NemotronHForCausalLM"], "attention_bias": false, "attention_dropout":
    0.0, "attention_head_dim": 128, "auto_map": {"AutoConfig":
    "configuration_nemotron_h.NemotronHConfig", "AutoModelForCausalLM":
    "modeling_nemotron_h.NemotronHForCausalLM"}, "bos_token_id": 1, "chunk_size": 128,
    "conv_kernel": 4, "eos_token_id": 2, "expand": 2, "hidden_dropout": 0.0, "hidden_size":
    8192, "hybrid_override_pattern": ")" +
      std::string(
          "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-"
          "M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-") +
      R"(", "initializer_range": 0.02,
    "intermediate_size": 32768, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64,
    "mamba_hidden_act": "silu", "mamba_num_heads": 256, "mamba_proj_bias": false,
    "max_position_embeddings": 8192, "mlp_bias": false, "mlp_hidden_act": "relu2", "model_type":
    "nemotron_h", "n_groups": 8, "num_attention_heads": 64, "num_hidden_layers": 118,
    "num_key_value_heads": 8, "num_logits_to_keep": 1, "pad_token_id": 0,
    "rescale_prenorm_residual": true, "residual_in_fp32": false, "rms_norm_eps": 1e-05,
    "sliding_window": null, "ssm_state_size": 256, "tie_word_embeddings": false,
    "time_step_floor": 0.0001, "time_step_limit": [0.0, Infinity], "time_step_max": 0.1,
    "time_step_min": 0.001, "time_step_rank": 512, "torch_dtype": "bfloat16",
    "transformers_version": "4.48.0.dev0", "use_bias": false, "use_cache": true,
    "use_conv_bias": true, "use_mamba_kernels": true, "vocab_size": 131072})");
  CHECK(shape.num_layers == 118);
  CHECK(layers_of_kinds_between(shape, 0, 118, "l") == 54);
  CHECK(layers_of_kinds_between(shape, 0, 118, "F") == 54);
  CHECK(layers_of_kinds_between(shape, 0, 118, "a") == 10);
  CHECK(count_parameters(shape) == total);
}

}  // namespace nemotron_h_test
