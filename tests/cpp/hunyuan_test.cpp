// Hunyuan-A13B (issue 45) as transformers' hunyuan_v1_moe builds it: Llama's attention with
// per-head q/k norms over a mixture and one shared MLP in every layer, counted by hand on a tiny
// shape, the published config read to its total, and Tencent's remote code and what transformers
// does not build refused by name.
#include <doctest/doctest.h>

#include <string>

#include "config_fixtures.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;
using namespace trainmem::fixtures;

namespace hunyuan_test {

namespace {

// A tiny hunyuan_v1_moe: h 8, 2 layers, 2 heads of 4 and 1 key/value head, 2 experts of 4 (top
// 1) and the shared MLP of 4, a vocabulary of 10, tied.
std::string tiny_hunyuan(const std::string& more = "") {
  std::string text = R"({"model_type": "hunyuan_v1_moe", "hidden_size": 8,
    "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "intermediate_size": 4, "vocab_size": 10, "num_experts": 2, "moe_topk": [1, 1],
    "num_shared_expert": [1, 1], "tie_word_embeddings": true)";
  if (!more.empty()) text += ", " + more;
  return text + "}";
}

std::string refusal(const std::string& text) {
  const ConfigParse result = parse_hf_config(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

}  // namespace

TEST_CASE("a tiny Hunyuan MoE counts its attention, q/k norms, experts and shared MLP by hand") {
  // Per layer: q and o 8 × 8 each, k and v 8 × 4 each (192); query_layernorm and key_layernorm 4
  // each; 2 experts of gate, up and down 8 × 4 (192); the shared MLP 96; the router 8 × 2; the two
  // norms 16. The tied embedding 80 and the final norm 8.
  const ModelShape shape = parsed(tiny_hunyuan());
  CHECK(count_parameters(shape) == 2 * (192 + 8 + 192 + 96 + 16 + 16) + 80 + 8);
  CHECK(count_parameters(shape) == 1128);
  CHECK(shape.num_experts_per_token == 1);
  CHECK(shape.shared_expert_ffn_hidden_size == 4);
  const Estimate estimate = estimate_memory(setup_of(shape));
  CHECK_MESSAGE(estimate.answer.ok(), estimate.answer.message);
}

TEST_CASE("Hunyuan-A13B's config reads to its published total") {
  // tencent/Hunyuan-A13B-Instruct config.json (Tencent-Hunyuan/Hunyuan-A13B models/config.json,
  // 2798f3c) with the model_type and head_dim transformers' own hunyuan_v1_moe reads: "80B total,
  // 13B active" (the model card); its safetensors headers, 80,393,183,232. By hand: 32 layers of
  // attention 4,096 × (4,096 + 2 × 1,024) + 4,096², q/k norms 2 × 128, 64 experts and the shared
  // MLP of 3 × 4,096 × 3,072 each, the router 4,096 × 64 and two norms; the tied embedding
  // 128,167 × 4,096 and the final norm.
  const double layer = 4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 2 * 128 +
                       65 * 3 * 4096.0 * 3072 + 4096.0 * 64 + 2 * 4096;
  const double total = 32 * layer + 128167.0 * 4096 + 4096;
  CHECK(total == 80393183232.0);
  const ModelShape shape = parsed(
      R"({"add_classification_head": false, "anyres_pooling_size": 2, "anyres_vit_max_image_size":
    null, "anyres_vit_two_views": false, "architectures": ["HunYuanMoEV1ForCausalLM"],
    "attention_bias": false, "attention_dropout": 0.1, "attention_head_dim": 128, "auto_map":
    {"AutoConfig": "configuration_hunyuan.HunYuanConfig", "AutoModel": "hunyuan.HunYuanModel",
    "AutoModelForCausalLM": "hunyuan.HunYuanMoEV1ForCausalLM"}, "bos_token_id": 1,
    "cla_share_factor": 2, "class_num": 0, "dense_list": [4096, 0], "eod_token_id": 127967,
    "eos_token_id": 127960, "group_limited_greedy": false, "hidden_act": "silu",
    "hidden_size": 4096, "im_end_id": 6, "im_newline_id": 12, "im_start_id": 5,
    "image_token_id": 9, "initializer_range": 0.02, "intermediate_size": 3072, "kv_lora_rank":
    null, "mask_init_id": 13, "max_position_embeddings": 32768, "mlp_bias": false,
    "model_type": "hunyuan_v1_moe", "moe_drop_tokens": false, "moe_intermediate_size": [3072,
    3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072,
    3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072,
    3072], "moe_layer_num_skipped": 0, "moe_random_routing_dropped_token": false, "moe_topk":
    [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
    8, 8], "n_group": null, "norm_topk_prob": true, "norm_type": "rms", "num_attention_heads":
    32, "num_experts": 64, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_media_embeds": 257, "num_shared_expert": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "org_vocab_size": 128167, "pad_id":
    127961, "pad_token_id": 127961, "pool_type": "last", "position_embedding_xdrope": false,
    "pretraining_tp": 1, "q_lora_rank": null, "qk_nope_head_dim": null, "qk_rope_head_dim":
    null, "rms_norm_eps": 1e-05, "rope_scaling": {"alpha": 1000.0, "beta_fast": 32,
    "beta_slow": 1, "factor": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"},
    "rope_theta": 10000.0, "routed_scaling_factor": 1.0, "sep_token_id": 127962,
    "skip_cls_token": false, "text_end_id": 8, "text_start_id": 7, "tie_word_embeddings":
    true, "topk_group": null, "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
    "use_cache": true, "use_cla": false, "use_mixed_mlp_moe": true, "use_mla": false,
    "use_qk_norm": true, "use_rotary_pos_emb": true, "v_head_dim": null, "video_end_id": 11,
    "video_start_id": 10, "vit_add_patchemb_bias": false, "vit_input_resolution": 224,
    "vit_mapping_type": "resampler", "vit_norm_type": "fused", "vit_patch": 1, "vit_path":
    null, "vit_remove_prenorm": false, "vit_token": 64, "vit_type": null, "vit_used_rms_norm":
    false, "vocab_size": 128167, "xdrope_section": null, "head_dim": 128})");
  CHECK(count_parameters(shape) == total);
}

TEST_CASE("hunyuan fields transformers does not build, and Tencent's remote code, are refused") {
  CHECK(refusal(tiny_hunyuan(R"("moe_intermediate_size": [6, 6])")) ==
        "config.json: 'moe_intermediate_size' (6) must equal intermediate_size (4): transformers' "
        "HunYuanMoEV1 experts are intermediate_size wide, so a checkpoint of other widths is not "
        "the model it builds.");
  CHECK(refusal(tiny_hunyuan(R"("use_cla": true)")).find("'use_cla'") != std::string::npos);
  std::string topk = tiny_hunyuan();
  topk.replace(topk.find(R"("moe_topk": [1, 1])"), 18, R"("moe_topk": [1, 2])");
  CHECK(refusal(topk) ==
        "config.json: 'moe_topk' must give every layer the same value (trainmem counts one "
        "mixture for all); it lists 1 and 2.");
  std::string shared = tiny_hunyuan();
  shared.replace(shared.find(R"("num_shared_expert": [1, 1])"), 27,
                 R"("num_shared_expert": [2, 2])");
  CHECK(refusal(shared).find("'num_shared_expert' must be 1") != std::string::npos);
  std::string remote = tiny_hunyuan();
  remote.replace(remote.find(R"("hunyuan_v1_moe")"), 16, R"("hunyuan")");
  CHECK(refusal(remote).rfind(
            "config.json: 'model_type' is \"hunyuan\": Tencent's remote code (modeling_hunyuan.py)",
            0) == 0);
}

}  // namespace hunyuan_test
