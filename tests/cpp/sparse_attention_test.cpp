// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the readers of deepseek_v32 and glm_moe_dsa,
// the indexer's weights on a tiny shape counted by hand, the presets against their published
// totals, and what the readers refuse by name.
#include <doctest/doctest.h>

#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;

namespace sparse_attention_test {

namespace {

// A tiny DSA config: h 8, 2 layers (the first dense), 2 heads of latent attention (r_q 4, r_kv 4,
// d_nope 2, d_rope 2, d_v 2), 4 experts of 2 (top 2, one shared), a vocabulary of 10, and an
// indexer of 2 heads of 4 keeping the top 3 keys.
std::string tiny_dsa(const std::string& model_type, const std::string& more = "") {
  return R"({"model_type": ")" + model_type +
         R"(", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 16, "vocab_size": 10, "q_lora_rank": 4, "kv_lora_rank": 4,
    "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 2, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 2, "n_shared_experts": 1,
    "first_k_dense_replace": 1, "index_n_heads": 2, "index_head_dim": 4, "index_topk": 3)" +
         (more.empty() ? "" : ", " + more) + "}";
}

ConfigParse parsed(const std::string& text) { return parse_hf_config(text); }

std::string refusal(const std::string& text) {
  const ConfigParse result = parsed(text);
  CHECK(result.answer.status == Status::kInvalidInput);
  return result.answer.message;
}

bool says(const std::string& message, const std::string& words) {
  return message.find(words) != std::string::npos;
}

TrainingSetup setup_of(const ModelShape& shape) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 64;
  return setup;
}

TrainingSetup preset_setup(const char* id) {
  TrainingSetup setup;
  setup.model_id = id;
  setup.sequence_length = 4096;
  return setup;
}

// The attention's own tensors a token keeps in one layer: from the norm's output (which the
// down-projections save) to the output projection's input.
double attention_bytes(const ModelShape& shape, const TrainingSetup& setup) {
  double sum = 0;
  bool inside = false;
  for (const SavedTensor& tensor : llama_block_saved_tensors(shape, setup, true)) {
    inside = inside || tensor.id == "qkv-input";
    if (inside) sum += tensor.bytes_per_token;
    if (tensor.id == "attention-output") break;
  }
  return sum;
}

}  // namespace

TEST_CASE("DSA's indexer on a tiny shape, counted by hand: wq_b, wk, k_norm with bias, weights") {
  // Latent attention: q_a 8·4 + norm 4 + q_b 4·(2·4) + kv_a 8·(4 + 2) + norm 4 + kv_b 4·(2·4)
  // + o 4·8 = 32 + 4 + 32 + 48 + 4 + 32 + 32 = 184. The indexer: wq_b 4·(2·4) = 32, wk 8·4 = 32,
  // k_norm 4 + 4, weights_proj 8·2 = 16: 88. Norms 16. Layer 0 dense (3·8·16 = 384); layer 1 a
  // mixture: 4 experts of 3·8·2 = 48, a shared expert 48, a router 32 and its bias 4.
  const double attention = 184 + 88;
  const double dense_layer = attention + 384 + 16;
  const double mixture_layer = attention + 4 * 48 + 48 + 32 + 4 + 16;
  const double total = dense_layer + mixture_layer + 80 + 80 + 8;
  for (const char* type : {"deepseek_v32", "glm_moe_dsa"}) {
    CAPTURE(type);
    const ConfigParse result = parsed(tiny_dsa(type));
    REQUIRE_MESSAGE(result.answer.status == Status::kOk, result.answer.message);
    CHECK(sparse_attention(result.shape));
    CHECK(result.shape.index_topk == 3);
    CHECK(count_parameters(result.shape) == total);
  }
  // The same config as DeepSeek-V3: the indexer's 88 a layer fewer.
  ModelShape without = parsed(tiny_dsa("deepseek_v32")).shape;
  without.index_n_heads = without.index_head_dim = without.index_topk = 0;
  CHECK(count_parameters(without) == total - 2 * 88);
}

TEST_CASE("DeepSeek-V3.2 and GLM-5 count to their published totals") {
  const ModelShape& deepseek = *find_preset("deepseek-v3.2");
  // DeepSeek-V3's 671,026,419,200 and an indexer of 13,959,424 in each of 61 layers
  // (1,536·8,192 + 7,168·128 + 2·128 + 7,168·64).
  CHECK(count_parameters(deepseek) == 671877944064.0);
  CHECK(count_parameters(deepseek) - count_parameters(*find_preset("deepseek-v3")) ==
        61 * 13959424.0);
  // The hub's 685,396,921,376: the model, the MTP module (a mixture layer with its indexer,
  // enorm, hnorm, eh_proj and shared_head's norm), its own copies of the embedding and head, and
  // 41,591,584 FP32 weight_scale_inv elements of the FP8 checkpoint, which are not parameters.
  const double copies = 2.0 * deepseek.vocab_size * deepseek.hidden_size;
  CHECK(count_mtp_parameters(deepseek) == 11624027648.0);
  CHECK(count_parameters(deepseek) + count_mtp_parameters(deepseek) + copies + 41591584.0 ==
        685396921376.0);
  // GLM-5 (and GLM-5.1): the hub's BF16 total 753,864,139,008 is the model and its MTP layer,
  // which holds no copies of the embedding or head. Its model card's 744B is the model alone.
  const ModelShape& glm = *find_preset("glm-5");
  CHECK(count_parameters(glm) == 743911218432.0);
  CHECK(count_parameters(glm) + count_mtp_parameters(glm) == 753864139008.0);
  // The indexer is whole on every TP rank (Megatron-LM's DSAIndexer: duplicated linears).
  const ParameterCounts dsa = parameter_counts(glm);
  ModelShape plain = glm;
  plain.index_n_heads = plain.index_head_dim = plain.index_topk = 0;
  const ParameterCounts mla = parameter_counts(plain);
  CHECK(dsa.replicated_per_layer - mla.replicated_per_layer ==
        2048 * 4096.0 + 6144 * 128 + 6144 * 32);
  CHECK(dsa.norms_per_layer - mla.norms_per_layer == 256);
  CHECK(dsa.attention_and_mlp_per_layer == mla.attention_and_mlp_per_layer);
}

TEST_CASE("DSA configs refused by name: shared top-k layers, a missing query latent, elsewhere") {
  // GLM-5.2's IndexShare: layers reusing another's top-k build no indexer of their own.
  CHECK(says(refusal(tiny_dsa("glm_moe_dsa", R"("index_topk_freq": 2)")), "'index_topk_freq'"));
  CHECK(says(refusal(tiny_dsa("glm_moe_dsa", R"("index_topk_pattern": "FS")")),
             "'index_topk_pattern'"));
  CHECK(says(refusal(tiny_dsa("glm_moe_dsa", R"("indexer_types": ["full", "shared"])")),
             "entry 1 is \"shared\""));
  CHECK(parsed(tiny_dsa("glm_moe_dsa", R"("indexer_types": ["full", "full"],
    "index_topk_pattern": "FF", "index_topk_freq": 1)"))
            .answer.status == Status::kOk);
  // mlp_layer_types must agree with first_k_dense_replace.
  CHECK(
      parsed(tiny_dsa("glm_moe_dsa", R"("mlp_layer_types": ["dense", "sparse"])")).answer.status ==
      Status::kOk);
  CHECK(says(refusal(tiny_dsa("glm_moe_dsa", R"("mlp_layer_types": ["sparse", "sparse"])")),
             "'mlp_layer_types'"));
  // The indexer reads the query latent.
  std::string no_latent = tiny_dsa("deepseek_v32");
  no_latent.replace(no_latent.find("\"q_lora_rank\": 4"), 16, "\"q_lora_rank\": null");
  CHECK(says(refusal(no_latent), "'q_lora_rank'"));
  CHECK(says(refusal(tiny_dsa("deepseek_v32", R"("index_topk": 0)")), "'index_topk'"));
  // An indexer's fields in a DeepSeek-V3 config are not silently left out of the count.
  const std::string elsewhere = refusal(tiny_dsa("deepseek_v3"));
  CHECK(says(elsewhere, "'index_n_heads'"));
  CHECK(says(elsewhere, "deepseek_v32 and glm_moe_dsa"));
}

TEST_CASE("a DSA layer saves what Megatron-LM's TileLang kernels keep, pinned by hand") {
  const ModelShape shape = parsed(tiny_dsa("deepseek_v32")).shape;
  TrainingSetup setup = setup_of(shape);
  // h 8, r_q 4, r_kv 4, d_nope 2, d_rope 2, d_v 2, a 2, H_I 2, D_I 4, k_I 3, b 1, t 1:
  //   the down-projections' input 2h 16, the latents' norms 2r_q + 4 and 2r_kv + 4 (16),
  //   q_up's input 2r_q 8: 48; q_up's output 2·a·(d_nope + d_rope) 16; RoPE's tables 8·d_rope 16;
  //   SparseMLA: queries padded to 16 heads 2·16·(r_kv + d_rope) 192, the latent key/values 12,
  //   int32 indices 4k 12, a bool per padded head 16; W_UV's input 2·a·r_kv 16;
  //   the indexer: k_norm's input and statistics 2·D_I + 8 16, its RoPE tables 16, queries
  //   2·H_I·D_I 16, keys 8, FP32 weights 8, int32 bounds 8, top-k 12, invalid slots 3, the KL
  //   loss's FP32 gradient 12; the output projection's input 2·a·d_v 8.
  CHECK(attention_bytes(shape, setup) == 435);
  // Two sequences a micro-batch share RoPE's tables: 32 halved.
  setup.micro_batch_sequences = 2;
  CHECK(attention_bytes(shape, setup) == 435 - 16);
  // Selective recomputation checkpoints the sparse attention whole: it keeps the absorbed queries
  // 2·a·(r_kv + d_rope) 24 and the latent key/values 12, beside the tensors outside it.
  setup = setup_of(shape);
  setup.recompute = Recompute::kSelective;
  CHECK(attention_bytes(shape, setup) == 48 + 16 + 16 + 24 + 12 + 8);
}

TEST_CASE("DeepSeek-V3.2's attention keeps 428,056 B a token, 129,569 at t = 8") {
  const ModelShape& shape = *find_preset("deepseek-v3.2");
  TrainingSetup setup = preset_setup("deepseek-v3.2");
  // (2h + 4r_q + 2r_kv + 8)/t + a/t·(2(d_nope + d_rope) + 2r_kv + 2d_v)
  // + max(a/t, 16)·(2(r_kv + d_rope) + 1) + 2(r_kv + d_rope) + 16·d_rope/b + 4·D_I + 16
  // + 2·H_I·D_I + 4·H_I + 13·k_I, and under t > 1 the gathered input and query latent and the
  // sorted indices, 2h + 2r_q + 9·k_I: 21,512 + 360,576 + 45,968 at t = 1.
  CHECK(attention_bytes(shape, setup) == 428056);
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  CHECK(attention_bytes(shape, setup) == 2689 + 45072 + 45968 + 35840);
  // Whichever activation model is chosen, DSA layers are counted tensor by tensor.
  setup = preset_setup("deepseek-v3.2");
  setup.activation_model = ActivationModel::kKorthikanti;
  const Estimate korthikanti = estimate_memory(setup);
  setup.activation_model = ActivationModel::kLlamaBlock;
  const Estimate block = estimate_memory(setup);
  REQUIRE(block.answer.ok());
  CHECK(korthikanti.bytes[Term::kActivations] == block.bytes[Term::kActivations]);
}

TEST_CASE("settings trainmem does not count for DSA layers are refused by name") {
  const TrainingSetup base = setup_of(parsed(tiny_dsa("glm_moe_dsa")).shape);
  REQUIRE(estimate_memory(base).answer.ok());
  struct Change {
    void (*apply)(TrainingSetup&);
    const char* refused;  // the setting refused, or "" where the change is counted
  };
  const Change changes[] = {
      {[](TrainingSetup& setup) { setup.stack = Stack::kMegatron; }, "stack"},
      {[](TrainingSetup& setup) { setup.flash_attention = false; }, "flash-attention"},
      {[](TrainingSetup& setup) { setup.dropout = Dropout::kOn; }, "dropout"},
      // AbsorbedMLASelfAttention requires sequence parallelism under t > 1.
      {[](TrainingSetup& setup) { setup.layout.tensor_parallel = 2; }, "sequence-parallel"},
      {[](TrainingSetup& setup) {
         setup.layout.tensor_parallel = 2;
         setup.layout.sequence_parallel = true;
       },
       ""},
      {[](TrainingSetup& setup) { setup.layout.context_parallel = 2; }, "cp"},
      {[](TrainingSetup& setup) { setup.lora_rank = 8; }, "lora-rank"},
      {[](TrainingSetup& setup) { setup.precision = Precision::kFp8Mixed; }, "precision"},
      {[](TrainingSetup& setup) { setup.recompute = Recompute::kSelectiveOp; }, "recompute"},
      {[](TrainingSetup& setup) { setup.recompute = Recompute::kSelective; }, ""},
      {[](TrainingSetup& setup) { setup.recompute = Recompute::kFull; }, ""},
  };
  for (const Change& change : changes) {
    CAPTURE(change.refused);
    TrainingSetup setup = base;
    change.apply(setup);
    const Estimate estimate = estimate_memory(setup);
    CHECK(estimate.answer.ok() == (*change.refused == '\0'));
    if (!estimate.answer.ok()) CHECK(estimate.answer.setting == change.refused);
  }
}

TEST_CASE("the activation curve leaves out FlashAttention off where DSA's layers refuse it") {
  const WorkshopView sparse = workshop_view(preset_setup("glm-5"), 4);
  REQUIRE(sparse.estimate.answer.ok());
  REQUIRE(sparse.activation_curve.size() == 4);
  for (const ActivationPoint& point : sparse.activation_curve) {
    CHECK_FALSE(point.without_flash_attention_counted);
    CHECK(point.without_flash_attention_bytes == 0);
    CHECK(point.flash_attention_bytes > 0);
  }
  const WorkshopView dense = workshop_view(preset_setup("deepseek-v3"), 4);
  CHECK(dense.activation_curve[0].without_flash_attention_counted);
  CHECK(dense.activation_curve[0].without_flash_attention_bytes >
        dense.activation_curve[0].flash_attention_bytes);
}

}  // namespace sparse_attention_test
