// The table of model types the config.json reader knows, each with what its type implies, the
// Llama family's fields (the fields the shape was made for), a multimodal config's text tower, and
// the choice of reader for each type (the GPT-style blocks' in config_gpt.cpp, the mixtures' with
// fields of their own in config_experts.cpp). A model_type not listed here is refused, never read
// as another's.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// The architectures whose weights trainmem counts, by model_type: each a row of kModelTypes,
// whose columns say what the type implies beyond its config's fields, each from transformers'
// modeling_<type>.py or configuration_<type>.py as its comment names. Adding a model type means
// adding a row; no code below asks for a type by its name.
enum class Block {
  kLlama,
  kGpt2,
  kGptNeoX,
  kOpt,
  kPhi,
  kDeepseekV2,
  kDeepseekV3,
  kSparseAttention,
  kGlm4Moe,
  kGptOss,
  kLlama4,
  kMiniMaxM2,
  kLfm2,
  kLfm2Moe,
  kBailingMoe,
  kHunyuanMoe,
  kGemma4,
  kKimiLinear,
  kNemotronH,
  kJamba,
  kMiniMax,
  kMultimodal,
};
enum class QkNorm { kNone, kPerHead, kWhole };
// The experts a Llama-style block reads (num_local_experts or num_experts, num_experts_per_tok).
enum class Experts {
  kNone,        // one MLP a layer: its modeling code reads no expert count
  kCounted,     // as many as the config gives (MixtralSparseMoeBlock, modeling_mixtral.py)
  kQwen,        // Qwen3MoeSparseMoeBlock (modeling_qwen3_moe.py): num_experts, never defaulted
  kQwenShared,  // Qwen2MoeSparseMoeBlock (modeling_qwen2_moe.py): Qwen3-MoE's and a shared expert
};

// The fields of today's mixtures of experts and of latent attention that only some model types
// read, as bits of a row's typed_fields (kTypedFields names their keys); a config of any other
// type that gives one is refused.
constexpr unsigned kExpertWidth = 1u << 0;        // moe_intermediate_size
constexpr unsigned kQwenSharedExpert = 1u << 1;   // shared_expert_intermediate_size
constexpr unsigned kSharedExpertCount = 1u << 2;  // n_shared_experts
constexpr unsigned kLatentAttention = 1u << 3;    // q_lora_rank, kv_lora_rank
constexpr unsigned kInterleavedDense = 1u << 4;  // intermediate_size_mlp, interleave_moe_layer_step
constexpr unsigned kLinearAttention = 1u << 5;   // full_attention_interval, linear_num_value_heads
constexpr unsigned kSparseIndexer = 1u << 6;     // index_n_heads, index_topk
constexpr unsigned kShortConv = 1u << 7;         // conv_L_cache

// Each family's dropout keys, with its config class's defaults (configuration_<type>.py), as
// config_dropout.cpp reads them.
constexpr DropoutKey kAttentionDropout = {"attention_dropout", 0};
// The Llama family's: attention_dropout on the probabilities alone, no residual dropout.
constexpr DropoutKeys kLlamaDropout = {{}, kAttentionDropout, {}};
// GPT2Config's: resid_pdrop, attn_pdrop and embd_pdrop.
constexpr DropoutKeys kGpt2Dropout = {
    {"resid_pdrop", 0.1}, {"attn_pdrop", 0.1}, {"embd_pdrop", 0.1}};
// GPTNeoXConfig's: hidden_dropout after attention, after the MLP and on the embedding's output.
constexpr DropoutKeys kGptNeoXDropout = {
    {"hidden_dropout", 0}, kAttentionDropout, {"hidden_dropout", 0}};
// OPTConfig's: dropout after attention and the MLP; activation_dropout and layerdrop refused.
constexpr DropoutKeys kOptDropout = {
    {"dropout", 0.1}, kAttentionDropout, {}, {"activation_dropout", "layerdrop"}};
// PhiConfig's and Phi3Config's: PhiDecoderLayer's resid_dropout, and Phi3DecoderLayer's after its
// attention and its MLP (resid_attn_dropout, resid_mlp_dropout).
constexpr DropoutKeys kPhiDropout = {{"resid_pdrop", 0}, kAttentionDropout, {"embd_pdrop", 0}};
// NemotronHConfig's: attention_dropout on the probabilities; hidden_dropout refused.
constexpr DropoutKeys kNemotronHDropout = {{}, kAttentionDropout, {}, {"hidden_dropout"}};

// A field a multimodal config's text_config may leave to its text model's config class.
using TextDefault = FieldDefault;
// Gemma3TextConfig's defaults (configuration_gemma3.py), which Gemma 3's multimodal configs leave
// out: 8 heads, 4 key/value heads, head_dim 256, 262,208 embedding rows (262,144 tokens and 64
// rows the vision checkpoints add) and 131,072 positions.
constexpr TextDefault kGemma3TextDefaults[] = {{"num_attention_heads", 8},
                                               {"num_key_value_heads", 4},
                                               {"head_dim", 256},
                                               {"vocab_size", 262208},
                                               {"max_position_embeddings", 131072}};

// Gemma4TextConfig's defaults (configuration_gemma4.py) for the fields a text_config may leave
// out: 8 heads, 4 key/value heads, head_dim 256, 262,144 tokens, 131,072 positions.
constexpr TextDefault kGemma4TextDefaults[] = {{"num_attention_heads", 8},
                                               {"num_key_value_heads", 4},
                                               {"head_dim", 256},
                                               {"vocab_size", 262144},
                                               {"max_position_embeddings", 131072}};

struct ModelType {
  const char* name;
  Block block;  // which reader reads its fields
  // tie_word_embeddings' default: true in GemmaConfig, Gemma2Config, Gemma3TextConfig,
  // SmolLM3Config and Cohere2Config (configuration_<type>.py).
  bool tied = false;
  // Biases on Q, K and V whatever attention_bias says (Qwen2Attention in modeling_qwen2.py, and
  // modeling_qwen2_moe.py's and the Qwen2-VL text towers' alike); otherwise attention_bias puts
  // biases on Q, K, V and O.
  bool qkv_bias = false;
  // Whether attention_bias is read at all: MistralAttention, MixtralAttention and Phi3Attention
  // build their projections with bias=False (modeling_mistral.py, modeling_mixtral.py,
  // modeling_phi3.py) whatever the config says.
  bool reads_attention_bias = true;
  // Whether mlp_bias is read: LlamaMLP and GraniteMLP take bias=config.mlp_bias
  // (modeling_llama.py, modeling_granite.py); every other family's MLP has bias=False.
  bool reads_mlp_bias = false;
  // Query and key norms: per head (Qwen3Attention, Gemma3Attention: modeling_qwen3.py,
  // modeling_gemma3.py) or over the whole projections (Olmo2Attention, modeling_olmo2.py).
  QkNorm qk_norm = QkNorm::kNone;
  // Norms per layer: 4 in Gemma2DecoderLayer and Gemma3DecoderLayer, 1 in Cohere2DecoderLayer.
  int norms_per_layer = 2;
  // Attention and the MLP read one norm's output side by side (Cohere2DecoderLayer,
  // modeling_cohere2.py: input_layernorm only, a LayerNorm without a bias).
  bool parallel_attention_mlp = false;
  // The experts the block reads, and the counts its config class gives where the config gives
  // neither num_local_experts nor num_experts (0: no default): MixtralConfig's 8 experts, 2 a
  // token (configuration_mixtral.py). A dense family refuses more than one expert.
  Experts experts = Experts::kNone;
  int default_num_experts = 0;
  int default_num_experts_per_token = 0;
  // The typed fields its modeling_<type>.py reads (kExpertWidth, …), and its place when a refusal
  // of one lists the types that read it (1 first; 0 when it reads none).
  unsigned typed_fields = 0;
  int typed_fields_rank = 0;
  // Its dropout keys and their defaults (modeling_<type>.py, configuration_<type>.py).
  const DropoutKeys* dropout = &kLlamaDropout;
  // The fields its config class gives by default that a multimodal config's text_config may
  // leave out (configuration_<type>.py): added when a text tower of this type is read out of one.
  const TextDefault* text_defaults = nullptr;
  std::size_t num_text_defaults = 0;
  // final_logit_softcapping is read (Gemma2ForCausalLM and Gemma3ForCausalLM apply it; other
  // families' modeling code never reads the key).
  bool softcaps_logits = false;
  // Gated DeltaNet layers beside gated full-attention ones (config_hybrid.cpp), as Qwen3-Next's
  // or Qwen3.5's modeling code builds and runs them.
  GatedDeltaNet gated_deltanet = GatedDeltaNet::kNone;
  // Every layer a mixture unless mlp_only_layers says otherwise, and intermediate_size, the dense
  // layers' width, left out of a config that has none (Qwen3_5MoeTextConfig's published files).
  bool dense_width_optional = false;
  const char* text_type = nullptr;          // kMultimodal: text_config's type when it names none
  bool text_at_top = false;                 // kMultimodal: the text fields may sit at the top level
  VisionTower vision = VisionTower::kNone;  // kMultimodal: the vision tower counted
};

// A row of kModelTypes: its name and block, then by name each column that differs from the
// defaults above.
class Row {
  ModelType type_;

  // This row with one column set. Defined before the setters: clang will not evaluate a constexpr
  // member template whose body it has not yet seen.
  template <typename T>
  constexpr Row with(T ModelType::*column, T value) const {
    Row row = *this;
    row.type_.*column = value;
    return row;
  }

 public:
  constexpr Row(const char* name, Block block) : type_{name, block} {}
  constexpr operator ModelType() const { return type_; }  // NOLINT(google-explicit-constructor)

  constexpr Row tied() const { return with(&ModelType::tied, true); }
  constexpr Row qkv_bias() const { return with(&ModelType::qkv_bias, true); }
  constexpr Row ignores_attention_bias() const {
    return with(&ModelType::reads_attention_bias, false);
  }
  constexpr Row reads_mlp_bias() const { return with(&ModelType::reads_mlp_bias, true); }
  constexpr Row qk_norm(QkNorm norm) const { return with(&ModelType::qk_norm, norm); }
  constexpr Row norms_per_layer(int norms) const {
    return with(&ModelType::norms_per_layer, norms);
  }
  constexpr Row parallel_attention_mlp() const {
    return with(&ModelType::parallel_attention_mlp, true);
  }
  constexpr Row experts(Experts kind) const { return with(&ModelType::experts, kind); }
  constexpr Row expert_defaults(int num_experts, int num_experts_per_token) const {
    return with(&ModelType::default_num_experts, num_experts)
        .with(&ModelType::default_num_experts_per_token, num_experts_per_token);
  }
  constexpr Row reads(unsigned fields, int rank) const {
    return with(&ModelType::typed_fields, fields).with(&ModelType::typed_fields_rank, rank);
  }
  constexpr Row dropout(const DropoutKeys& keys) const { return with(&ModelType::dropout, &keys); }
  template <std::size_t N>
  constexpr Row text_defaults(const TextDefault (&defaults)[N]) const {
    return with(&ModelType::text_defaults, &defaults[0]).with(&ModelType::num_text_defaults, N);
  }
  constexpr Row softcaps_logits() const { return with(&ModelType::softcaps_logits, true); }
  constexpr Row dense_width_optional() const {
    return with(&ModelType::dense_width_optional, true);
  }
  constexpr Row gated_deltanet(GatedDeltaNet kind) const {
    return with(&ModelType::gated_deltanet, kind);
  }
  constexpr Row text_type(const char* type) const { return with(&ModelType::text_type, type); }
  constexpr Row text_at_top() const { return with(&ModelType::text_at_top, true); }
  constexpr Row vision(VisionTower tower) const { return with(&ModelType::vision, tower); }
};

constexpr int kCohereNormsPerLayer = 1;        // Cohere2DecoderLayer: input_layernorm only
constexpr int kGemma3NormsPerLayer = 4;        // as Gemma 2's
constexpr int kMixtralNumExperts = 8;          // MixtralConfig's num_local_experts
constexpr int kMixtralNumExpertsPerToken = 2;  // MixtralConfig's num_experts_per_tok
// DeepseekV3ForCausalLM's experts and latent attention (modeling_deepseek_v3.py), as V2's.
constexpr unsigned kDeepseekFields = kExpertWidth | kSharedExpertCount | kLatentAttention;
// Each row names the columns it sets; reads(fields, n): the typed fields it reads, and its place n
// among their readers in a refusal.
constexpr ModelType kModelTypes[] = {
    Row("llama", Block::kLlama).reads_mlp_bias(),
    Row("mistral", Block::kLlama).ignores_attention_bias(),
    Row("mixtral", Block::kLlama)
        .ignores_attention_bias()
        .experts(Experts::kCounted)
        .expert_defaults(kMixtralNumExperts, kMixtralNumExpertsPerToken),
    Row("qwen2", Block::kLlama).qkv_bias(),
    Row("gemma", Block::kLlama).tied(),
    Row("gemma2", Block::kLlama).tied().norms_per_layer(kGemma2NormsPerLayer).softcaps_logits(),
    Row("gpt2", Block::kGpt2).dropout(kGpt2Dropout),
    Row("gpt_neox", Block::kGptNeoX).dropout(kGptNeoXDropout),
    Row("opt", Block::kOpt).dropout(kOptDropout),
    Row("phi", Block::kPhi).dropout(kPhiDropout),
    Row("qwen3", Block::kLlama).qk_norm(QkNorm::kPerHead),
    Row("qwen3_moe", Block::kLlama)
        .qk_norm(QkNorm::kPerHead)
        .experts(Experts::kQwen)
        .reads(kExpertWidth, 2),
    Row("qwen2_moe", Block::kLlama)
        .qkv_bias()
        .experts(Experts::kQwenShared)
        .reads(kExpertWidth | kQwenSharedExpert, 1),
    Row("deepseek_v3", Block::kDeepseekV3).reads(kDeepseekFields, 3),
    // DeepSeek-V2 and V2-Lite: V3's latent attention and experts without the router's bias.
    Row("deepseek_v2", Block::kDeepseekV2).reads(kDeepseekFields, 6),
    // Kimi K2's config names its own type; its architecture is DeepseekV3ForCausalLM.
    Row("kimi_k2", Block::kDeepseekV3).reads(kDeepseekFields, 4),
    // DeepSeek-V3.2 (modeling_deepseek_v32.py) and GLM-5 (modeling_glm_moe_dsa.py): V3's latent
    // attention and experts with DeepSeek Sparse Attention's indexer in every layer.
    Row("deepseek_v32", Block::kSparseAttention).reads(kDeepseekFields | kSparseIndexer, 11),
    Row("glm_moe_dsa", Block::kSparseAttention).reads(kDeepseekFields | kSparseIndexer, 12),
    // Phi-3 and Phi-4 fuse Q, K, V (qkv_proj) and gate and up (gate_up_proj): the same weights.
    Row("phi3", Block::kLlama).ignores_attention_bias().dropout(kPhiDropout),
    Row("gemma3_text", Block::kLlama)
        .tied()
        .softcaps_logits()
        .qk_norm(QkNorm::kPerHead)
        .norms_per_layer(kGemma3NormsPerLayer)
        .text_defaults(kGemma3TextDefaults),
    Row("olmo2", Block::kLlama).qk_norm(QkNorm::kWhole),
    Row("smollm3", Block::kLlama).tied(),
    Row("granite", Block::kLlama).reads_mlp_bias(),
    Row("cohere2", Block::kLlama)
        .tied()
        .norms_per_layer(kCohereNormsPerLayer)
        .parallel_attention_mlp(),
    Row("qwen2_5_vl_text", Block::kLlama).qkv_bias(),
    Row("qwen2_vl_text", Block::kLlama).qkv_bias(),
    // Glm4MoeMoE: DeepSeek-V3's experts (modeling_glm4_moe.py), with grouped-query attention.
    Row("glm4_moe", Block::kGlm4Moe).reads(kExpertWidth | kSharedExpertCount, 5),
    Row("gpt_oss", Block::kGptOss),
    Row("llama4_text", Block::kLlama4).reads(kInterleavedDense, 7),
    // Qwen3-Next (modeling_qwen3_next.py) and Qwen3.5's text towers (modular_qwen3_5.py): Gated
    // DeltaNet layers and gated full-attention layers with per-head q/k norms, each over
    // Qwen2-MoE's experts and shared expert (Qwen3.5's dense models: one MLP).
    Row("qwen3_next", Block::kLlama)
        .qk_norm(QkNorm::kPerHead)
        .experts(Experts::kQwenShared)
        .gated_deltanet(GatedDeltaNet::kQwen3Next)
        .reads(kExpertWidth | kQwenSharedExpert | kLinearAttention, 8),
    Row("qwen3_5_moe_text", Block::kLlama)
        .qk_norm(QkNorm::kPerHead)
        .experts(Experts::kQwenShared)
        .dense_width_optional()
        .gated_deltanet(GatedDeltaNet::kQwen35)
        .reads(kExpertWidth | kQwenSharedExpert | kLinearAttention, 9),
    Row("minimax_m2", Block::kMiniMaxM2),
    Row("qwen3_5_text", Block::kLlama)
        .qk_norm(QkNorm::kPerHead)
        .gated_deltanet(GatedDeltaNet::kQwen35)
        .reads(kLinearAttention, 10),
    // LFM2 (modeling_lfm2.py): short-convolution layers beside full-attention ones with per-head
    // q/k norms, each over a SwiGLU MLP (config_hybrid.cpp).
    Row("lfm2", Block::kLfm2).tied().qk_norm(QkNorm::kPerHead).reads(kShortConv, 13),
    // LFM2-MoE (modular_lfm2_moe.py): LFM2's layers over dense first layers and Qwen2-MoE's
    // experts with a sigmoid router's bias (config_hybrid.cpp).
    Row("lfm2_moe", Block::kLfm2Moe)
        .tied()
        .qk_norm(QkNorm::kPerHead)
        .reads(kShortConv | kExpertWidth, 17),
    // Ling 1.0 and 2.0 (the remote code's modeling_bailing_moe.py and modeling_bailing_moe_v2.py):
    // Llama's attention over experts with shared ones (config_experts.cpp).
    Row("bailing_moe", Block::kBailingMoe).reads(kExpertWidth, 18),
    // Hunyuan-A13B (modeling_hunyuan_v1_moe.py): Llama's attention with per-head q/k norms over
    // a mixture and one shared MLP in every layer, its experts intermediate_size wide
    // (config_experts.cpp); moe_intermediate_size is read to refuse another width.
    Row("hunyuan_v1_moe", Block::kHunyuanMoe).reads(kExpertWidth, 19),
    // Gemma 4's text tower (modeling_gemma4.py): sliding-window layers and full-attention layers
    // of global_head_dim (config_hybrid.cpp), with Gemma 3's defaults where a multimodal
    // config's text_config leaves them out.
    Row("gemma4_text", Block::kGemma4)
        .tied()
        .text_defaults(kGemma4TextDefaults)
        .reads(kExpertWidth, 14),
    // Kimi Linear (modeling_kimi_linear.py): Kimi Delta Attention layers beside latent attention
    // ones, over DeepSeek-V3's experts (config_hybrid.cpp).
    Row("kimi_linear", Block::kKimiLinear).reads(kDeepseekFields, 15),
    // Nemotron-H and Nemotron 3 (modeling_nemotron_h.py): one norm and one part a block, Mamba-2,
    // attention, an MLP or a mixture of experts (config_mamba.cpp); n_shared_experts is not read
    // (one shared MLP of moe_shared_expert_intermediate_size), and hidden_dropout is refused.
    Row("nemotron_h", Block::kNemotronH)
        .dropout(kNemotronHDropout)
        .reads(kExpertWidth | kSharedExpertCount, 16),
    // Jamba (modeling_jamba.py): Mamba's mixer or attention a layer, each over an MLP or a
    // mixture of experts, as the periods and offsets place them (config_mamba.cpp).
    Row("jamba", Block::kJamba),
    // MiniMax-Text-01 and MiniMax-M1 (modeling_minimax.py): lightning or full attention a layer,
    // as layer_types says, over Mixtral's mixture (config_hybrid.cpp).
    Row("minimax", Block::kMiniMax),
    // Multimodal configs: the language model under text_config, a vision tower beside it.
    Row("gemma3", Block::kMultimodal).text_type("gemma3_text").vision(VisionTower::kSiglip),
    // Gemma 4: its vision tower counted, an audio tower refused (config_vision.cpp).
    Row("gemma4", Block::kMultimodal).text_type("gemma4_text").vision(VisionTower::kGemma4),
    Row("llama4", Block::kMultimodal).text_type("llama4_text").vision(VisionTower::kLlama4),
    Row("mistral3", Block::kMultimodal).text_type("mistral").vision(VisionTower::kPixtral),
    Row("qwen2_5_vl", Block::kMultimodal)
        .text_type("qwen2_5_vl_text")
        .text_at_top()
        .vision(VisionTower::kQwen25Vl),
    Row("qwen2_vl", Block::kMultimodal).text_type("qwen2_vl_text").text_at_top(),
    Row("qwen3_5", Block::kMultimodal).text_type("qwen3_5_text").vision(VisionTower::kQwen35),
    Row("qwen3_5_moe", Block::kMultimodal)
        .text_type("qwen3_5_moe_text")
        .vision(VisionTower::kQwen35),
};

// A config without a model_type: the Llama family's fields, mlp_bias read as LlamaMLP reads it,
// and as many experts as it gives.
constexpr ModelType kLlamaStyle =
    Row("", Block::kLlama).reads_mlp_bias().experts(Experts::kCounted);

// Model types that are known and not read, each with why: their remote code trains otherwise than
// the transformers type trainmem counts for the same checkpoints.
struct RefusedModelType {
  const char* name;
  const char* why;
};
constexpr RefusedModelType kRefusedModelTypes[] = {
    {"hunyuan",
     "Tencent's remote code (modeling_hunyuan.py), whose HunYuanMoE dispatches a micro-batch's "
     "tokens through (tokens × experts × capacity) tensors, growing with the square of its tokens, "
     "and drops those over capacity; trainmem counts transformers' own hunyuan_v1_moe (4.56 on), "
     "which loops over the experts and drops none."},
    {"minimax_m1",
     "MiniMax's remote code (modeling_minimax_m1.py), whose lightning attention has no training "
     "path (its forward returns nothing in training); transformers' own minimax trains MiniMax-M1 "
     "(its -hf checkpoints' config, whose layer_types trainmem reads)."},
};

const char* refused_model_type(const std::string& name) {
  for (const RefusedModelType& type : kRefusedModelTypes) {
    if (name == type.name) return type.why;
  }
  return nullptr;
}

const ModelType* model_type_row(const std::string& name) {
  for (const ModelType& type : kModelTypes) {
    if (name == type.name) return &type;
  }
  return nullptr;
}

// Each type that reads a typed field has a place of its own among their readers.
constexpr bool typed_field_readers_ranked() {
  for (const ModelType& type : kModelTypes) {
    if ((type.typed_fields != 0) != (type.typed_fields_rank > 0)) return false;
    for (const ModelType& other : kModelTypes) {
      if (&other != &type && type.typed_fields_rank > 0 &&
          other.typed_fields_rank == type.typed_fields_rank) {
        return false;
      }
    }
  }
  return true;
}
static_assert(typed_field_readers_ranked(),
              "a row reading typed fields needs a rank of its own, and only such a row");

// The typed fields' keys, each with what it describes and the bit of typed_fields that says a
// model type reads it.
struct TypedField {
  const char* key;
  const char* what;
  unsigned read_as;
};
constexpr TypedField kTypedFields[] = {
    {kMoeIntermediateSize.key, "experts of a width of their own", kExpertWidth},
    {kSharedExpertIntermediateSize.key, "shared experts", kQwenSharedExpert},
    {kNSharedExperts.key, "shared experts", kSharedExpertCount},
    {kQLoraRank.key, "low-rank latent attention", kLatentAttention},
    {kKvLoraRank.key, "low-rank latent attention", kLatentAttention},
    {kIntermediateSizeMlp.key, "dense layers of a width of their own", kInterleavedDense},
    {kInterleaveMoeLayerStep.key, "dense layers between the mixture's", kInterleavedDense},
    {kFullAttentionInterval.key, "Gated DeltaNet layers between full-attention ones",
     kLinearAttention},
    {kLinearNumValueHeads.key, "Gated DeltaNet layers", kLinearAttention},
    {kIndexNHeads.key, "DeepSeek Sparse Attention's indexer", kSparseIndexer},
    {kIndexTopk.key, "DeepSeek Sparse Attention's indexer", kSparseIndexer},
    {kConvLCache.key, "short-convolution layers", kShortConv},
};

// The activations of transformers' ACT2FN that hold no parameters and act on each element alone
// (activations.py). Which MLP a block has comes from its model_type, never from this name; a name
// outside the list (a gated "swiglu", a parametric "prelu") is refused.
constexpr const char* kActivationKeys[] = {"hidden_act", "hidden_activation",
                                           "activation_function"};
constexpr const char* kElementwiseActivations[] = {
    "gelu",          "gelu_new",    "gelu_fast", "gelu_pytorch_tanh",
    "gelu_accurate", "gelu_python", "gelu_10",   "quick_gelu",
    "relu",          "relu2",       "relu6",     "leaky_relu",
    "silu",          "swish",       "mish",      "tanh",
    "sigmoid",       "laplace",     "linear"};

template <typename Names>
std::string joined(const Names& names, const char* last_separator) {
  std::string text;
  const std::size_t count = std::size(names);
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) text += i + 1 == count ? last_separator : ", ";
    text += names[i];
  }
  return text;
}

std::string model_type_names() {
  const char* names[std::size(kModelTypes)];
  for (std::size_t i = 0; i < std::size(kModelTypes); ++i) names[i] = kModelTypes[i].name;
  return joined(names, " or ");
}

// The model types whose Llama-style block reads expert counts, in alphabetical order: "mixtral,
// qwen2_moe or qwen3_moe".
std::string llama_mixture_names() {
  std::vector<std::string> names;
  for (const ModelType& type : kModelTypes) {
    if (type.experts != Experts::kNone) names.emplace_back(type.name);
  }
  std::sort(names.begin(), names.end());
  return joined(names, " or ");
}

std::string check_activations(const Json& config) {
  for (const char* key : kActivationKeys) {
    const Json* value = present(config, key);
    if (value == nullptr) continue;
    const std::string problem = elementwise_activation_problem(key, *value);
    if (!problem.empty()) return problem;
  }
  return {};
}

std::string read_llama_block(const Json& config, const ModelType& type, ModelShape& shape) {
  Problems problems;
  const bool dense_width_absent =
      type.dense_width_optional && config.find(kIntermediateSize.key) == config.end();
  if (dense_width_absent) {
    // Read as though it were given; set from the experts' width below, or refused.
    Json with_width = config;
    with_width[kIntermediateSize.key] = 1;
    read_llama_widths(with_width, shape, problems);
  } else {
    read_llama_widths(config, shape, problems);
  }
  shape.tied_embeddings = type.tied;
  problems.add(read_boolean(config, "tie_word_embeddings", shape.tied_embeddings));
  // transformers builds some families without the biases a config may name (bias=False in their
  // modeling code): the row says whether attention_bias and mlp_bias are read.
  bool attention_bias = false;
  problems.add(read_boolean(config, "attention_bias", attention_bias));
  attention_bias = attention_bias && type.reads_attention_bias;
  shape.attention_qkv_bias = attention_bias || type.qkv_bias;
  shape.attention_output_bias = attention_bias && !type.qkv_bias;
  shape.qk_norm = type.qk_norm == QkNorm::kPerHead;
  shape.qk_norm_whole = type.qk_norm == QkNorm::kWhole;
  problems.add(read_boolean(config, "mlp_bias", shape.mlp_bias));
  shape.mlp_bias = shape.mlp_bias && type.reads_mlp_bias;
  shape.norms_per_layer = type.norms_per_layer;
  shape.parallel_attention_mlp = type.parallel_attention_mlp;
  if (type.softcaps_logits) problems.add(read_logit_softcapping(config, shape));

  if (type.gated_deltanet != GatedDeltaNet::kNone) {
    problems.add(read_gated_deltanet_fields(config, type.gated_deltanet, shape));
  }

  const bool qwen_moe = type.experts == Experts::kQwen || type.experts == Experts::kQwenShared;
  const bool expert_defaults = type.default_num_experts > 0;
  const std::string model_type = type.name;
  // A dense family builds one MLP a layer whatever the config says of experts (its modeling code
  // reads no expert count): more than one is refused rather than counted.
  if (type.experts == Experts::kNone) {
    for (const WholeField* field : {&kNumLocalExperts, &kNumExperts}) {
      const Json* value = present(config, field->key);
      if (value != nullptr && value->is_number() && value->get<double>() > 1) {
        return quoted(field->key) + " is not read for a " + model_type +
               " config: transformers builds one MLP a layer there (a mixture of experts is "
               "model_type " +
               llama_mixture_names() + ").";
      }
    }
  }
  if (expert_defaults && present(config, kNumLocalExperts.key) == nullptr &&
      present(config, kNumExperts.key) == nullptr) {
    // The config class's defaults (the row's), where the config names no count.
    shape.num_experts = type.default_num_experts;
    if (present(config, kNumExpertsPerToken.key) == nullptr) {
      shape.num_experts_per_token = type.default_num_experts_per_token;
    }
  }
  if (qwen_moe && present(config, kNumExperts.key) == nullptr) {
    // Qwen2MoeConfig and Qwen3MoeConfig default to 60 and 128 experts: never guessed at.
    return "'num_experts' is missing; a " + model_type + " config must give its experts, " +
           allowed(kNumExperts) + ".";
  }
  const WholeField& experts_field =
      present(config, kNumLocalExperts.key) != nullptr ? kNumLocalExperts : kNumExperts;
  problems.add(read_optional(config, experts_field, shape.num_experts));
  if (problems.any()) return problems.first();
  if (expert_defaults && shape.num_experts > 1 &&
      present(config, kNumExpertsPerToken.key) == nullptr) {
    shape.num_experts_per_token = std::min(type.default_num_experts_per_token, shape.num_experts);
  } else if (shape.num_experts > 1 && present(config, kNumExpertsPerToken.key) == nullptr) {
    return "'num_experts_per_tok' is missing; a mixture of " + std::to_string(shape.num_experts) +
           " experts needs its top-k, a whole number from 1 to " +
           std::to_string(shape.num_experts) + ".";
  }
  problems.add(read_optional(config, kNumExpertsPerToken, shape.num_experts_per_token));
  if (problems.any() || shape.num_experts == 1) return problems.first();
  if (!qwen_moe) return {};
  const std::string moe_problem =
      read_qwen_moe_fields(config, type.experts == Experts::kQwenShared, shape);
  if (!moe_problem.empty() || !dense_width_absent) return moe_problem;
  if (shape.num_dense_layers > 0) {
    return "'intermediate_size' is missing; the dense layers mlp_only_layers lists need it, " +
           allowed(kIntermediateSize) + ".";
  }
  // No dense layer: the width no MLP has is the experts'.
  shape.ffn_hidden_size = shape.moe_ffn_hidden_size;
  return {};
}

// The model types that read a typed field, by their rows' ranks: "qwen2_moe, qwen3_moe and
// deepseek_v3".
std::string types_reading(const TypedField& field) {
  std::vector<const ModelType*> readers;
  for (const ModelType& type : kModelTypes) {
    if ((type.typed_fields & field.read_as) != 0) readers.push_back(&type);
  }
  std::sort(readers.begin(), readers.end(), [](const ModelType* a, const ModelType* b) {
    return a->typed_fields_rank < b->typed_fields_rank;
  });
  std::vector<const char*> names;
  for (const ModelType* type : readers) names.push_back(type->name);
  return joined(names, " and ");
}

// A field of today's mixtures or of latent attention in a config whose type does not read it:
// refused rather than left out of the count.
std::string check_typed_fields(const Json& config, const ModelType& type) {
  for (const TypedField& field : kTypedFields) {
    if ((type.typed_fields & field.read_as) != 0) continue;
    const Json* value = present(config, field.key);
    if (value != nullptr && !(value->is_number() && value->get<double>() == 0)) {
      return quoted(field.key) + " (" + field.what +
             ") is not read for this model_type: trainmem reads it for " + types_reading(field) +
             ".";
    }
  }
  return {};
}

std::string multimodal_type_names() {
  std::vector<const char*> names;
  for (const ModelType& type : kModelTypes) {
    if (type.block == Block::kMultimodal) names.push_back(type.name);
  }
  return joined(names, " or ");
}

std::string read_block(const Json& config, const ModelType& type, ModelShape& shape) {
  switch (type.block) {
    case Block::kGpt2:
      return read_gpt2_block(config, shape);
    case Block::kGptNeoX:
      return read_gpt_neox_block(config, shape);
    case Block::kOpt:
      return read_opt_block(config, shape);
    case Block::kPhi:
      return read_phi_block(config, shape);
    case Block::kDeepseekV3:
      return read_deepseek_v3_block(config, shape);
    case Block::kDeepseekV2:
      return read_deepseek_v2_block(config, shape);
    case Block::kSparseAttention:
      return read_sparse_attention_block(config, shape);
    case Block::kGlm4Moe:
      return read_glm4_moe_block(config, shape);
    case Block::kGptOss:
      return read_gpt_oss_block(config, shape);
    case Block::kLlama4:
      return read_llama4_block(config, shape);
    case Block::kMiniMaxM2:
      return read_minimax_m2_block(config, shape);
    case Block::kLfm2:
      return read_lfm2_block(config, shape);
    case Block::kLfm2Moe:
      return read_lfm2_moe_block(config, shape);
    case Block::kBailingMoe:
      return read_bailing_moe_block(config, shape);
    case Block::kHunyuanMoe:
      return read_hunyuan_v1_moe_block(config, shape);
    case Block::kGemma4:
      return read_gemma4_block(config, shape);
    case Block::kKimiLinear:
      return read_kimi_linear_block(config, shape);
    case Block::kNemotronH:
      return read_nemotron_h_block(config, shape);
    case Block::kJamba:
      return read_jamba_block(config, shape);
    case Block::kMiniMax:
      return read_minimax_block(config, shape);
    case Block::kLlama:
    case Block::kMultimodal:
      break;
  }
  return read_llama_block(config, type, shape);
}

// The fields the text tower's config class gives by default (its row's text_defaults), where the
// multimodal config's text_config leaves them out.
void add_text_defaults(const ModelType& type, Json& text) {
  for (std::size_t i = 0; i < type.num_text_defaults; ++i) {
    const TextDefault& field = type.text_defaults[i];
    if (text.find(field.key) == text.end()) text[field.key] = field.value;
  }
}

// A multimodal config's text tower, as a config of its own: text_config (or, for the Qwen2-VL
// family's older configs, the top level without vision_config), with its model_type (the row's
// when it names none), the top level's tie_word_embeddings where it gives none, and a name that
// says what it is. Returns the problem, or "".
std::string text_tower_of(const Json& config, const ModelType& type, Json& text) {
  const auto nested = config.find("text_config");
  if (nested != config.end() && nested->is_object()) {
    text = *nested;
  } else if (type.text_at_top && present(config, kHiddenSize.key) != nullptr) {
    text = config;
    text.erase("vision_config");
  } else {
    return "'text_config' must be an object holding the language model's fields in a " +
           std::string(type.name) + " config; it is " +
           (nested == config.end() ? std::string("missing") : describe(*nested)) + ".";
  }
  const Json* text_type = present(text, "model_type");
  if (text_type == nullptr ||
      (text_type->is_string() && text_type->get<std::string>() == type.name)) {
    text["model_type"] = type.text_type;
  }
  if (const Json* tie = present(config, "tie_word_embeddings");
      tie != nullptr && present(text, "tie_word_embeddings") == nullptr) {
    text["tie_word_embeddings"] = *tie;
  }
  const auto name = config.find("_name_or_path");
  if (name != config.end() && name->is_string() && !name->get<std::string>().empty()) {
    text["_name_or_path"] = name->get<std::string>() + " (text tower)";
  }
  text.erase("text_config");
  return {};
}

}  // namespace

std::string elementwise_activation_problem(const char* key, const Json& value) {
  bool known = false;
  if (value.is_string()) {
    for (const char* name : kElementwiseActivations) {
      known = known || value.get<std::string>() == name;
    }
  }
  if (known) return {};
  return quoted(key) + " must be one of transformers' elementwise activations (" +
         joined(kElementwiseActivations, " or ") + "); it is " + describe(value) + ".";
}

void read_llama_widths(const Json& config, ModelShape& shape, Problems& problems) {
  problems.add(read_required(config, kHiddenSize, shape.hidden_size));
  problems.add(read_required(config, kNumLayers, shape.num_layers));
  problems.add(read_required(config, kNumHeads, shape.num_attention_heads));
  shape.num_key_value_heads = shape.num_attention_heads;  // transformers' default: no GQA
  problems.add(read_optional(config, kNumKeyValueHeads, shape.num_key_value_heads));
  problems.add(read_required(config, kIntermediateSize, shape.ffn_hidden_size));
  problems.add(read_required(config, kVocabSize, shape.vocab_size));
  problems.add(read_optional(config, kHeadDim, shape.head_dim));
}

std::string head_dim_from_hidden_size(ModelShape& shape, const char* why) {
  if (shape.hidden_size % shape.num_attention_heads != 0) {
    return "'num_attention_heads' (" + std::to_string(shape.num_attention_heads) +
           ") must divide hidden_size (" + std::to_string(shape.hidden_size) + "): " + why + ".";
  }
  shape.head_dim = shape.hidden_size / shape.num_attention_heads;
  return {};
}

bool multimodal_model_type(const std::string& model_type) {
  const ModelType* type = model_type_row(model_type);
  return type != nullptr && type->block == Block::kMultimodal;
}

std::string text_tower_config(const Json& config, const std::string& model_type, Json& text) {
  const ModelType* type = model_type_row(model_type);
  if (type == nullptr || type->block != Block::kMultimodal) {
    return "'model_type' must be a multimodal one (" + multimodal_type_names() +
           ") for a text tower; it is " + describe(Json(model_type)) + ".";
  }
  const std::string problem = text_tower_of(config, *type, text);
  if (!problem.empty()) return "in the text tower: " + problem;
  const Json* text_type = present(text, "model_type");
  const ModelType* text_row = text_type != nullptr && text_type->is_string()
                                  ? model_type_row(text_type->get<std::string>())
                                  : nullptr;
  if (text_row == nullptr || text_row->block == Block::kMultimodal) {
    return "'text_config' must be a language model's config whose model_type trainmem reads; its "
           "model_type is " +
           (text_type != nullptr ? describe(*text_type) : std::string("missing")) + ".";
  }
  add_text_defaults(*text_row, text);
  return {};
}

const WholeField* whole_field_named(std::string_view key) {
  for (const WholeField& field : kWholeFields) {
    if (key == field.key) return &field;
  }
  return nullptr;
}

std::string read_block_shape(const Json& config, const std::string& model_type, bool text_tower,
                             ModelShape& shape) {
  const ModelType* type = &kLlamaStyle;
  if (model_type.empty()) {
    // Without a model_type the Llama family's fields are read; GPT-2's names say otherwise.
    if (present(config, kNEmbd.key) != nullptr) {
      return "'model_type' is missing; a config with GPT-2's 'n_embd' must say its model_type, "
             "such as \"gpt2\".";
    }
  } else {
    type = model_type_row(model_type);
    if (const char* why = refused_model_type(model_type); type == nullptr && why != nullptr) {
      return "'model_type' is " + describe(Json(model_type)) + ": " + why;
    }
    if (type == nullptr) {
      return "'model_type' must be one of " + model_type_names() +
             " (or absent, for a Llama-style block); it is " + describe(Json(model_type)) + ".";
    }
  }
  if (type->block == Block::kMultimodal) {
    // The text tower, then (unless it alone is asked for) the vision tower beside it.
    Json text;
    std::string problem = text_tower_config(config, model_type, text);
    if (problem.empty()) {
      problem = read_block_shape(text, text["model_type"].get<std::string>(), false, shape);
    }
    if (!problem.empty() || text_tower) return problem;
    return read_vision_tower(config, type->vision, shape.hidden_size, shape.vision_parameters);
  }
  const std::string typed_problem = check_typed_fields(config, *type);
  if (!typed_problem.empty()) return typed_problem;
  const std::string activation_problem = check_activations(config);
  if (!activation_problem.empty()) return activation_problem;
  const std::string problem = read_block(config, *type, shape);
  if (!problem.empty()) return problem;
  const std::string dropout_problem = read_dropout(config, *type->dropout, shape);
  if (!dropout_problem.empty()) return dropout_problem;
  // The longest sequence: learned positions have a row each (OPT's two extra rows are fairseq's
  // offset, not positions); a rotary model's config gives max_position_embeddings.
  if (type->block == Block::kGpt2) {
    shape.max_positions = shape.num_position_embeddings;
  } else if (type->block == Block::kOpt) {
    shape.max_positions = shape.num_position_embeddings - kOptPositionOffset;
  } else {
    return read_optional(config, kMaxPositions, shape.max_positions);
  }
  return {};
}

}  // namespace trainmem
