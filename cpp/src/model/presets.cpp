// The presets: each model's shape from its config.json (Llama 3's from its paper), by family, in
// the order the menu shows them.
#include <utility>
#include <vector>

#include "trainmem/models.hpp"

namespace trainmem {

namespace {

// Llama 3 configurations: Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783,
// Table 3. Vocabulary 128,256; input embedding and output head untied.
constexpr int kLlama3VocabSize = 128256;
constexpr const char* kLlama3Source = "Llama 3 paper, arXiv:2407.21783, Table 3";

// The others: each model's config.json on the Hugging Face hub, field for field
// (tests/cpp/config_test.cpp parses those texts and finds these shapes).
constexpr int kLlama2VocabSize = 32000;   // Llama 2's SentencePiece vocabulary
constexpr int kMistralVocabSize = 32000;  // Mistral 7B v0.1 and Mixtral 8x7B
constexpr int kQwen25VocabSize = 152064;  // Qwen2.5 7B and 72B (embedding rows, padded)
constexpr int kGemma2VocabSize = 256000;
// GPT-2: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", Table 2 (the
// four sizes), and openai-community/gpt2{,-medium,-large,-xl} config.json: a byte-level BPE of
// 50,257 tokens and 1,024 learned positions (n_positions).
constexpr int kGpt2VocabSize = 50257;
constexpr int kGpt2Positions = 1024;
constexpr int kGpt2FfnMultiple = 4;  // GPT2MLP's width when n_inner is null: 4 · n_embd
// Pythia: EleutherAI/pythia-160m config.json; 50,304 embedding rows (GPT-NeoX-20B's tokenizer,
// padded).
constexpr int kPythiaVocabSize = 50304;

constexpr int kQwen3VocabSize = 151936;  // Qwen3 8B and 30B-A3B (embedding rows, padded)
constexpr int kDeepseekV3VocabSize = 129280;
constexpr int kDeepseekV2VocabSize = 102400;
constexpr int kQwen35VocabSize = 248320;  // Qwen3.5's text towers (embedding rows, padded)

// A family's presets, in the order its menu group shows them: each added with its id, name and
// source and the Llama family's fields (in ModelShape's order: L, h, f, a, k, V, tied), then
// given what sets it apart, in place.
struct PresetBase {
  const char* id;
  const char* name;
  const char* source;
  int num_layers;
  int hidden_size;
  int ffn_hidden_size;
  int num_attention_heads;
  int num_key_value_heads;
  int vocab_size;
  bool tied_embeddings;
};

class Family {
 public:
  Family(std::vector<ModelShape>& presets, const char* name) : presets_(presets), name_(name) {}
  // The new preset, valid until the next is added.
  ModelShape& add(const PresetBase& base) {
    ModelShape& shape = presets_.emplace_back();
    shape.id = base.id;
    shape.name = base.name;
    shape.source = base.source;
    shape.num_layers = base.num_layers;
    shape.hidden_size = base.hidden_size;
    shape.ffn_hidden_size = base.ffn_hidden_size;
    shape.num_attention_heads = base.num_attention_heads;
    shape.num_key_value_heads = base.num_key_value_heads;
    shape.vocab_size = base.vocab_size;
    shape.tied_embeddings = base.tied_embeddings;
    shape.family = name_;
    return shape;
  }

 private:
  std::vector<ModelShape>& presets_;
  const char* name_;
};

// What sets a preset apart from the Llama family's defaults.
ModelShape& with_head_dim(ModelShape& shape, int head_dim) {
  shape.head_dim = head_dim;
  return shape;
}

ModelShape& with_experts(ModelShape& shape, int num_experts, int num_experts_per_token) {
  shape.num_experts = num_experts;
  shape.num_experts_per_token = num_experts_per_token;
  return shape;
}

ModelShape& with_qkv_bias(ModelShape& shape) {
  shape.attention_qkv_bias = true;  // model_type qwen2: Q, K and V carry biases, O does not
  return shape;
}

ModelShape& with_norms_per_layer(ModelShape& shape, int norms_per_layer) {
  shape.norms_per_layer = norms_per_layer;
  return shape;
}

ModelShape& with_parallel_attention_mlp(ModelShape& shape) {
  shape.parallel_attention_mlp = true;
  return shape;
}

// Qwen3's attention (model_type qwen3 and qwen3_moe): 128-wide heads with q_norm and k_norm.
ModelShape& qwen3(ModelShape& shape) {
  shape.head_dim = 128;
  shape.qk_norm = true;
  return shape;
}

// A mixture whose experts have a width of their own (moe_intermediate_size).
ModelShape& with_fine_grained_experts(ModelShape& shape, int num_experts, int num_experts_per_token,
                                      int expert_width) {
  with_experts(shape, num_experts, num_experts_per_token);
  shape.moe_ffn_hidden_size = expert_width;
  return shape;
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json; Liu et al., "DeepSeek-V3 Technical Report",
// arXiv:2412.19437, section 4.2): latent attention with q_lora_rank 1,536, kv_lora_rank 512,
// 128 + 64 query/key and 128 value dimensions per head; 256 routed experts of 2,048, top-8, one
// shared expert, the router's e_score_correction_bias; the first 3 of 61 layers dense.
ModelShape& deepseek_v3(ModelShape& shape) {
  with_fine_grained_experts(shape, 256, 8, 2048);
  shape.shared_expert_ffn_hidden_size = 2048;
  shape.router_bias = true;
  shape.num_expert_groups = 8;
  shape.num_limited_groups = 4;
  shape.num_dense_layers = 3;
  shape.num_mtp_layers = 1;
  shape.q_lora_rank = 1536;
  shape.kv_lora_rank = 512;
  shape.qk_nope_head_dim = 128;
  shape.qk_rope_head_dim = 64;
  shape.v_head_dim = 128;
  return shape;
}

// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer in every layer, of
// `index_heads` heads of 128, each query attending to its top 2,048 keys.
ModelShape& with_sparse_attention(ModelShape& shape, int index_heads) {
  shape.index_n_heads = index_heads;
  shape.index_head_dim = 128;
  shape.index_topk = 2048;
  return shape;
}

// GLM-5 and GLM-5.1 (zai-org/GLM-5 config.json, GlmMoeDsaForCausalLM): DeepSeek-V3's layout with
// a query latent of 2,048, 192 + 64 query/key and 256 value dimensions per head, and an indexer of
// 32 heads.
ModelShape& glm5(ModelShape& shape) {
  with_sparse_attention(deepseek_v3(shape), 32);
  shape.num_expert_groups = 0;  // n_group 1: routed over all experts
  shape.num_limited_groups = 0;
  shape.q_lora_rank = 2048;
  shape.qk_nope_head_dim = 192;
  shape.v_head_dim = 256;
  return shape;
}

// Qwen3-Next's and Qwen3.5's hybrids: 256-wide heads with q_norm and k_norm and an output gate,
// every 4th layer full attention and the others Gated DeltaNet layers of 16 query/key heads and
// `value_heads` value heads, each 128 wide, with a short convolution of 4; as transformers runs
// them (models.hpp: Qwen3-Next repeats q and k to the value heads and fuses its gated norm).
ModelShape& qwen_hybrid(ModelShape& shape, int value_heads, bool qwen3_next) {
  shape.head_dim = 256;
  shape.qk_norm = true;
  shape.attention_output_gate = true;
  shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, 4);
  shape.linear_num_key_heads = 16;
  shape.linear_num_value_heads = value_heads;
  shape.linear_key_head_dim = 128;
  shape.linear_value_head_dim = 128;
  shape.linear_conv_kernel_dim = 4;
  shape.linear_qk_repeated = qwen3_next;
  shape.linear_norm_unfused = !qwen3_next;
  shape.linear_projections_split = !qwen3_next;
  // Qwen3.5's configs name one multi-token-prediction layer (mtp_num_hidden_layers), and their
  // recurrent state's dtype for vLLM (mamba_ssm_dtype "float32").
  shape.num_mtp_layers = qwen3_next ? 0 : 1;
  shape.recurrent_state_fp32 = !qwen3_next;
  return shape;
}

// Qwen2-MoE's shared expert with its sigmoid gate, beside fine-grained experts.
ModelShape& with_gated_shared_expert(ModelShape& shape, int width) {
  shape.shared_expert_ffn_hidden_size = width;
  shape.shared_expert_gate = true;
  return shape;
}

// A GPT-style block (transformers' GPT2Block, GPTNeoXLayer): every projection has a bias, the
// MLP is a plain one (up, an elementwise GELU, down), the norms are LayerNorms with biases, and
// `num_position_embeddings` learned positions (0 for rotary ones) sit beside the embedding.
ModelShape& gpt_block(ModelShape& shape, int num_position_embeddings) {
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  shape.gated_mlp = false;
  shape.norm_bias = true;
  shape.num_position_embeddings = num_position_embeddings;
  shape.max_positions = num_position_embeddings;
  return shape;
}

// GPT-2 of width h, depth L and a heads: f = 4·h, one matrix for embedding and head
// (GPT2LMHeadModel ties lm_head to wte).
ModelShape& gpt2(Family& family, const char* id, const char* name, const char* source, int layers,
                 int hidden, int heads) {
  return gpt_block(family.add({id, name, source, layers, hidden, kGpt2FfnMultiple * hidden, heads,
                               heads, kGpt2VocabSize, true}),
                   kGpt2Positions);
}

// Today's families (each preset's config.json on the Hugging Face hub, field for field; the totals
// they make are checked against the published ones in tests/cpp/models_test.cpp).
constexpr int kLlama4VocabSize = 202048;
constexpr int kGemma3VocabSize = 262144;        // Gemma 3 1B
constexpr int kGemma3VisionVocabSize = 262208;  // the multimodal sizes: 64 rows more
constexpr int kGlm45VocabSize = 151552;
constexpr int kGptOssVocabSize = 201088;
constexpr int kOlmo2VocabSize = 100352;
constexpr int kPhi4VocabSize = 100352;
constexpr int kKimiK2VocabSize = 163840;
constexpr int kGlm5VocabSize = 154880;

// Gemma 3's layers (transformers' Gemma3DecoderLayer): Gemma 2's four norms and q_norm and k_norm
// of head_dim; the embeddings tied.
ModelShape& gemma3(ModelShape& shape, int head_dim) {
  shape.head_dim = head_dim;
  shape.norms_per_layer = kGemma2NormsPerLayer;
  shape.qk_norm = true;
  return shape;
}

// Gemma 4's text towers (google/gemma-4-*, model_type gemma4_text under gemma4): 256-wide
// sliding-window layers, five to each full-attention layer (the last layer full), whose heads are
// 512 wide with `global_kv_heads` key/value heads and no v_proj (attention_k_eq_v); q, k and
// weightless v norms, four norms and a layer_scalar in every layer, the embedding tied.
ModelShape& gemma4(ModelShape& shape, int global_kv_heads) {
  gemma3(shape, 256);
  shape.value_norm = true;
  shape.layer_scalar = true;
  shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, 6, 'L');
  shape.hybrid_layers.back() = 'L';
  shape.global_head_dim = 512;
  shape.global_kv_heads = global_kv_heads;
  shape.global_k_eq_v = true;
  shape.final_logit_softcapping = 30;
  return shape;
}

// Llama 4's text tower (Llama4TextDecoderLayer): 128-wide heads; mixture layers of E experts of
// 8,192, top-1, and a shared expert of 8,192; dense layers (every other one in Maverick) of 16,384.
ModelShape& llama4(ModelShape& shape, int num_experts, int moe_layer_step) {
  with_fine_grained_experts(with_head_dim(shape, 128), num_experts, 1, 8192);
  shape.shared_expert_ffn_hidden_size = 8192;
  shape.moe_layer_step = moe_layer_step;
  return shape;
}

// GLM-4.5 (Glm4MoeForCausalLM): 128-wide heads with Q, K and V biases; DeepSeek-V3's experts,
// one shared, the router's bias; first dense layers; one multi-token-prediction layer.
ModelShape& glm45(ModelShape& shape, int num_experts, int expert_width, int dense_layers,
                  bool qk_norm) {
  with_fine_grained_experts(with_qkv_bias(with_head_dim(shape, 128)), num_experts, 8, expert_width);
  shape.shared_expert_ffn_hidden_size = expert_width;
  shape.router_bias = true;
  shape.num_dense_layers = dense_layers;
  shape.qk_norm = qk_norm;
  shape.num_mtp_layers = 1;
  return shape;
}

// gpt-oss (GptOssForCausalLM): 64 heads of 64 with biases on Q, K, V and O and a sink each; E
// experts of 2,880 with biases, top-4, a router with a bias.
ModelShape& gpt_oss(ModelShape& shape, int num_experts) {
  with_experts(with_head_dim(shape, 64), num_experts, 4);
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  shape.router_bias = true;
  shape.attention_sinks = true;
  shape.clamped_swiglu = true;
  return shape;
}

// OLMo 2 (Olmo2Attention): q_norm and k_norm over the whole projections.
ModelShape& olmo2(ModelShape& shape) {
  shape.qk_norm_whole = true;
  return shape;
}

// LFM2's dense sizes (LiquidAI/LFM2-350M, -700M and -1.2B config.json, model_type lfm2): 16 layers,
// full attention at layers 2, 5, 8, 10, 12 and 14 (head_dim 64, per-head q/k norms) and a short
// convolution of 3 at the other ten, each over a SwiGLU MLP of the width Lfm2MLP makes of
// block_ff_dim (int(2·f/3), rounded up to a multiple of 256), the 65,536-row embedding tied.
constexpr int kLfm2VocabSize = 65536;
ModelShape& lfm2(ModelShape& shape) {
  shape.hybrid_layers = "LLALLALLALALALAL";
  shape.qk_norm = true;
  shape.short_conv_kernel = 3;
  return shape;
}

// LFM2-8B-A1B (LiquidAI/LFM2-8B-A1B config.json, model_type lfm2_moe): 24 layers, full attention at
// layers 2, 6, 10, 14, 18 and 21 (32 heads of 64, 8 key/value heads, per-head q/k norms) and a
// short convolution of 3 at the other 18; the first 2 layers over a SwiGLU MLP of 7,168 as given,
// the other 22 over 32 experts of 1,792 (top 4) with the router's expert_bias; the 65,536-row
// embedding tied.
ModelShape& lfm2_moe(ModelShape& shape) {
  lfm2(shape);
  shape.hybrid_layers = "LLALLLALLLALLLALLLALLALL";
  with_fine_grained_experts(shape, 32, 4, 1792);
  shape.router_bias = true;
  shape.num_dense_layers = 2;
  return shape;
}

// Ling-lite (inclusionAI/Ling-lite config.json, model_type bailing_moe): 28 layers, every one a
// mixture (first_k_dense_replace 0) of 64 experts of 1,408 (top 6) and two shared (one MLP of
// 2,816), a router without a bias; the 126,464-row embedding and lm_head untied.
ModelShape& ling_lite(ModelShape& shape) {
  with_fine_grained_experts(shape, 64, 6, 1408);
  shape.shared_expert_ffn_hidden_size = 2 * 1408;
  return shape;
}

// Ling-mini-2.0 (inclusionAI/Ling-mini-2.0 config.json, model_type bailing_moe,
// BailingMoeV2ForCausalLM): 20 layers of 16 heads of 128 (4 key/value heads) with per-head q/k
// norms, the first over an MLP of 5,120, the other 19 over 256 experts of 512 (top 8) and one
// shared, a sigmoid router with its expert_bias; the 157,184-row embedding and lm_head untied.
ModelShape& ling_mini_2(ModelShape& shape) {
  with_fine_grained_experts(shape, 256, 8, 512);
  shape.shared_expert_ffn_hidden_size = 512;
  shape.router_bias = true;
  shape.num_dense_layers = 1;
  shape.qk_norm = true;
  shape.head_dim = 128;
  return shape;
}

// Kimi K2 (moonshotai/Kimi-K2-Instruct config.json, model_type kimi_k2: DeepSeek-V3's
// architecture): 64 heads, 384 routed experts of 2,048, one shared, only the first layer dense.
ModelShape& kimi_k2(ModelShape& shape) {
  deepseek_v3(shape);
  shape.num_experts = 384;
  shape.num_expert_groups = 0;  // n_group 1: routed over all experts
  shape.num_limited_groups = 0;
  shape.num_dense_layers = 1;
  shape.num_mtp_layers = 0;
  return shape;
}

// Kimi Linear 48B-A3B (moonshotai/Kimi-Linear-48B-A3B-Instruct config.json, model_type
// kimi_linear): latent attention of 32 heads without a query latent in layers 4, 8, …, 24 and 27
// (numbered from 1), Kimi Delta Attention of 32 heads of 128 with a convolution of 4 in the other
// 20; 256 routed experts of 1,024 (top 8), one shared, the first layer a dense MLP of 9,216.
ModelShape& kimi_linear(ModelShape& shape) {
  with_fine_grained_experts(shape, 256, 8, 1024);
  shape.shared_expert_ffn_hidden_size = 1024;
  shape.router_bias = true;
  shape.num_dense_layers = 1;
  shape.kv_lora_rank = 512;
  shape.qk_nope_head_dim = 128;
  shape.qk_rope_head_dim = 64;
  shape.v_head_dim = 128;
  shape.hybrid_layers = interval_hybrid_layers(shape.num_layers, 4);
  shape.hybrid_layers.back() = 'A';
  shape.linear_num_key_heads = 32;
  shape.linear_num_value_heads = 32;
  shape.linear_key_head_dim = 128;
  shape.linear_value_head_dim = 128;
  shape.linear_conv_kernel_dim = 4;
  shape.kimi_delta_attention = true;
  return shape;
}

// A hybrid_override_pattern's blocks (M Mamba-2, * attention, - an MLP, E a mixture) as one-part
// layers: 'l', 'a' and 'F'.
std::string nemotron_h_blocks(const std::string& pattern) {
  std::string blocks;
  for (const char block : pattern) blocks += block == 'M' ? 'l' : block == '*' ? 'a' : 'F';
  return blocks;
}

// Nemotron-H's Mamba-2 mixers: mamba_num_heads of mamba_head_dim, n_groups of ssm_state_size, a
// convolution of 4 with its bias.
ModelShape& with_mamba2(ModelShape& shape, int heads, int head_dim) {
  shape.linear_num_key_heads = 8;
  shape.linear_key_head_dim = 128;
  shape.linear_num_value_heads = heads;
  shape.linear_value_head_dim = head_dim;
  shape.linear_conv_kernel_dim = 4;
  shape.linear_conv_bias = true;
  shape.mamba2 = true;
  shape.mamba_chunk_size = 128;       // the configs' chunk_size
  shape.recurrent_state_fp32 = true;  // vLLM's NemotronH default, float32
  return shape;
}

// NVIDIA-Nemotron-Nano-9B-v2 (nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json, model_type
// nemotron_h): 56 blocks, 27 Mamba-2 mixers (128 heads of 80, 8 groups, a state of 128), 25 MLPs
// of 15,680 with ReLU² and 4 attention blocks (40 heads of 128, 8 key/value heads).
ModelShape& nemotron_nano_9b_v2(ModelShape& shape) {
  shape.head_dim = 128;
  shape.gated_mlp = false;
  shape.hybrid_layers =
      nemotron_h_blocks("M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-");
  return with_mamba2(shape, 128, 80);
}

// Nemotron 3 Nano 30B-A3B (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json, model_type
// nemotron_h): 52 blocks of one part each, 23 Mamba-2 mixers (64 heads of 64, 8 groups, a state
// of 128, a convolution of 4 with its bias), 23 mixtures (128 experts of 1,856 with ReLU², top 6,
// one shared MLP of 3,712, a router with its bias) and 6 attention blocks (32 heads of 128, 2
// key/value heads), as hybrid_override_pattern places them. intermediate_size (1,856) is no
// block's: the one-part layers' counting cancels it (models.hpp).
ModelShape& nemotron3_nano(ModelShape& shape) {
  with_fine_grained_experts(shape, 128, 6, 1856);
  shape.head_dim = 128;
  shape.gated_mlp = false;
  shape.shared_expert_ffn_hidden_size = 3712;
  shape.router_bias = true;
  shape.hybrid_layers = nemotron_h_blocks("MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME");
  return with_mamba2(shape, 64, 64);
}

// Nemotron 3 Super 120B-A12B (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json,
// model_type nemotron_h): 88 blocks, 40 Mamba-2 mixers (128 heads of 64, 8 groups, a state of 128,
// a convolution of 4 with its bias), 40 latent mixtures (512 experts of 2,688 with ReLU² on tokens
// of 1,024 between fc1_latent_proj and fc2_latent_proj, top 22, one shared MLP of 5,376, a router
// with its bias) and 8 attention blocks (32 heads of 128, 2 key/value heads). The checkpoint's MTP
// block is not part of the model transformers builds.
ModelShape& nemotron3_super(ModelShape& shape) {
  nemotron3_nano(shape);
  with_fine_grained_experts(shape, 512, 22, 2688);
  shape.moe_latent_size = 1024;
  shape.shared_expert_ffn_hidden_size = 5376;
  shape.hybrid_layers = nemotron_h_blocks(
      "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME");
  shape.linear_num_value_heads = 128;
  return shape;
}

std::vector<ModelShape> make_presets() {
  std::vector<ModelShape> presets;
  presets.reserve(64);
  Family llama(presets, "Llama");
  llama.add(
      {"llama3-8b", "Llama 3 8B", kLlama3Source, 32, 4096, 14336, 32, 8, kLlama3VocabSize, false});
  llama.add({"llama3-70b", "Llama 3 70B", kLlama3Source, 80, 8192, 28672, 64, 8, kLlama3VocabSize,
             false});
  llama.add({"llama3-405b", "Llama 3 405B", kLlama3Source, 126, 16384, 53248, 128, 8,
             kLlama3VocabSize, false});
  with_head_dim(llama.add({"llama3.1-8b", "Llama 3.1 8B", "meta-llama/Llama-3.1-8B config.json", 32,
                           4096, 14336, 32, 8, kLlama3VocabSize, false}),
                128);
  with_head_dim(llama.add({"llama3.1-70b", "Llama 3.1 70B", "meta-llama/Llama-3.1-70B config.json",
                           80, 8192, 28672, 64, 8, kLlama3VocabSize, false}),
                128);
  with_head_dim(
      llama.add({"llama3.3-70b", "Llama 3.3 70B", "meta-llama/Llama-3.3-70B-Instruct config.json",
                 80, 8192, 28672, 64, 8, kLlama3VocabSize, false}),
      128);
  with_head_dim(llama.add({"llama3.2-1b", "Llama 3.2 1B", "meta-llama/Llama-3.2-1B config.json", 16,
                           2048, 8192, 32, 8, kLlama3VocabSize, true}),
                64);
  with_head_dim(llama.add({"llama3.2-3b", "Llama 3.2 3B", "meta-llama/Llama-3.2-3B config.json", 28,
                           3072, 8192, 24, 8, kLlama3VocabSize, true}),
                128);
  llama4(llama.add({"llama4-scout", "Llama 4 Scout 17B-16E (text)",
                    "meta-llama/Llama-4-Scout-17B-16E config.json, text_config", 48, 5120, 16384,
                    40, 8, kLlama4VocabSize, false}),
         16, 1);
  llama4(llama.add({"llama4-maverick", "Llama 4 Maverick 17B-128E (text)",
                    "meta-llama/Llama-4-Maverick-17B-128E config.json, text_config", 48, 5120,
                    16384, 40, 8, kLlama4VocabSize, false}),
         128, 2);
  llama.add({"llama2-7b", "Llama 2 7B", "meta-llama/Llama-2-7b-hf config.json", 32, 4096, 11008, 32,
             32, kLlama2VocabSize, false});
  llama.add({"llama2-13b", "Llama 2 13B", "meta-llama/Llama-2-13b-hf config.json", 40, 5120, 13824,
             40, 40, kLlama2VocabSize, false});
  llama.add({"llama2-70b", "Llama 2 70B", "meta-llama/Llama-2-70b-hf config.json", 80, 8192, 28672,
             64, 8, kLlama2VocabSize, false});

  Family qwen(presets, "Qwen");
  qwen3(qwen.add({"qwen3-0.6b", "Qwen3 0.6B", "Qwen/Qwen3-0.6B config.json", 28, 1024, 3072, 16, 8,
                  kQwen3VocabSize, true}));
  qwen3(qwen.add({"qwen3-1.7b", "Qwen3 1.7B", "Qwen/Qwen3-1.7B config.json", 28, 2048, 6144, 16, 8,
                  kQwen3VocabSize, true}));
  qwen3(qwen.add({"qwen3-4b", "Qwen3 4B", "Qwen/Qwen3-4B config.json", 36, 2560, 9728, 32, 8,
                  kQwen3VocabSize, true}));
  qwen3(qwen.add({"qwen3-8b", "Qwen3 8B", "Qwen/Qwen3-8B config.json", 36, 4096, 12288, 32, 8,
                  kQwen3VocabSize, false}));
  qwen3(qwen.add({"qwen3-14b", "Qwen3 14B", "Qwen/Qwen3-14B config.json", 40, 5120, 17408, 40, 8,
                  kQwen3VocabSize, false}));
  qwen3(qwen.add({"qwen3-32b", "Qwen3 32B", "Qwen/Qwen3-32B config.json", 64, 5120, 25600, 64, 8,
                  kQwen3VocabSize, false}));
  with_fine_grained_experts(
      qwen3(qwen.add({"qwen3-30b-a3b", "Qwen3 30B-A3B", "Qwen/Qwen3-30B-A3B config.json", 48, 2048,
                      6144, 32, 4, kQwen3VocabSize, false})),
      128, 8, 768);
  with_fine_grained_experts(
      qwen3(qwen.add({"qwen3-235b-a22b", "Qwen3 235B-A22B", "Qwen/Qwen3-235B-A22B config.json", 94,
                      4096, 12288, 64, 4, kQwen3VocabSize, false})),
      128, 8, 1536);
  // Hybrids: Qwen3-Next's total without the checkpoint's MTP layer, which
  // transformers does not load; Qwen3.5's text towers (their vision towers are
  // counted from a pasted config.json).
  with_gated_shared_expert(
      with_fine_grained_experts(
          qwen_hybrid(qwen.add({"qwen3-next-80b-a3b", "Qwen3-Next 80B-A3B",
                                "Qwen/Qwen3-Next-80B-A3B-Instruct config.json", 48, 2048, 5120, 16,
                                2, kQwen3VocabSize, false}),
                      32, true),
          512, 10, 512),
      512);
  qwen_hybrid(
      qwen.add({"qwen3.5-27b", "Qwen3.5 27B (text)", "Qwen/Qwen3.5-27B config.json, text_config",
                64, 5120, 17408, 24, 4, kQwen35VocabSize, false}),
      48, false);
  with_gated_shared_expert(
      with_fine_grained_experts(
          qwen_hybrid(qwen.add({"qwen3.5-35b-a3b", "Qwen3.5 35B-A3B (text)",
                                "Qwen/Qwen3.5-35B-A3B config.json, text_config", 40, 2048, 512, 16,
                                2, kQwen35VocabSize, false}),
                      32, false),
          256, 8, 512),
      512);
  with_gated_shared_expert(
      with_fine_grained_experts(
          qwen_hybrid(qwen.add({"qwen3.5-122b-a10b", "Qwen3.5 122B-A10B (text)",
                                "Qwen/Qwen3.5-122B-A10B config.json, text_config", 48, 3072, 1024,
                                32, 2, kQwen35VocabSize, false}),
                      64, false),
          256, 8, 1024),
      1024);
  with_gated_shared_expert(
      with_fine_grained_experts(
          qwen_hybrid(qwen.add({"qwen3.5-397b-a17b", "Qwen3.5 397B-A17B (text)",
                                "Qwen/Qwen3.5-397B-A17B config.json, text_config", 60, 4096, 1024,
                                32, 2, kQwen35VocabSize, false}),
                      64, false),
          512, 10, 1024),
      1024);
  with_qkv_bias(qwen.add({"qwen2.5-7b", "Qwen2.5 7B", "Qwen/Qwen2.5-7B config.json", 28, 3584,
                          18944, 28, 4, kQwen25VocabSize, false}));
  with_qkv_bias(qwen.add({"qwen2.5-72b", "Qwen2.5 72B", "Qwen/Qwen2.5-72B config.json", 80, 8192,
                          29568, 64, 8, kQwen25VocabSize, false}));

  Family deepseek(presets, "DeepSeek and Kimi");
  // The main model; the checkpoint's multi-token-prediction module is counted when a setup trains
  // it. DeepSeek-R1 has the same shape.
  deepseek_v3(
      deepseek.add({"deepseek-v3", "DeepSeek-V3 / R1 671B", "deepseek-ai/DeepSeek-V3 config.json",
                    61, 7168, 18432, 128, 128, kDeepseekV3VocabSize, false}));
  // DeepSeek-V2-Lite (deepseek-ai/DeepSeek-V2-Lite config.json, DeepseekV2ForCausalLM; DeepSeek-AI,
  // "DeepSeek-V2", arXiv:2405.04434, appendix B: 15.7B total): latent attention of 16 heads without
  // a query latent, 64 routed experts of 1,408 (top 6, softmax, greedy: no groups), two shared, no
  // router bias, the first of 27 layers a dense MLP of 10,944. torchtitan's deepseek_v3 "16B"
  // flavour is this shape.
  ModelShape& lite =
      with_fine_grained_experts(deepseek.add({"deepseek-v2-lite", "DeepSeek-V2-Lite 16B",
                                              "deepseek-ai/DeepSeek-V2-Lite config.json", 27, 2048,
                                              10944, 16, 16, kDeepseekV2VocabSize, false}),
                                64, 6, 1408);
  lite.shared_expert_ffn_hidden_size = 2 * 1408;
  lite.num_dense_layers = 1;
  lite.kv_lora_rank = 512;
  lite.qk_nope_head_dim = 128;
  lite.qk_rope_head_dim = 64;
  lite.v_head_dim = 128;
  // DeepSeek-V3.2 (and V3.2-Exp): V3's shape and an indexer of 64 heads.
  with_sparse_attention(deepseek_v3(deepseek.add({"deepseek-v3.2", "DeepSeek-V3.2 671B",
                                                  "deepseek-ai/DeepSeek-V3.2 config.json", 61, 7168,
                                                  18432, 128, 128, kDeepseekV3VocabSize, false})),
                        64);
  kimi_k2(deepseek.add({"kimi-k2", "Kimi K2 1T", "moonshotai/Kimi-K2-Instruct config.json", 61,
                        7168, 18432, 64, 64, kKimiK2VocabSize, false}));
  kimi_linear(deepseek.add({"kimi-linear-48b-a3b", "Kimi Linear 48B-A3B",
                            "moonshotai/Kimi-Linear-48B-A3B-Instruct config.json", 27, 2304, 9216,
                            32, 32, kKimiK2VocabSize, false}));

  Family glm(presets, "GLM");
  glm45(glm.add({"glm4.5", "GLM-4.5 355B", "zai-org/GLM-4.5 config.json", 92, 5120, 12288, 96, 8,
                 kGlm45VocabSize, false}),
        160, 1536, 3, true);
  glm45(glm.add({"glm4.5-air", "GLM-4.5-Air 106B", "zai-org/GLM-4.5-Air config.json", 46, 4096,
                 10944, 96, 8, kGlm45VocabSize, false}),
        128, 1408, 1, false);
  glm5(glm.add({"glm-5", "GLM-5 744B", "zai-org/GLM-5 config.json", 78, 6144, 12288, 64, 64,
                kGlm5VocabSize, false}));

  Family gemma(presets, "Gemma");
  gemma4(
      gemma.add({"gemma4-31b", "Gemma 4 31B (text)", "google/gemma-4-31B config.json, text_config",
                 60, 5376, 21504, 32, 16, kGemma3VocabSize, true}),
      4);
  // 26B-A4B: its MoE block beside the MLP of 2,112 (a shared expert every token passes), 128
  // experts of 704, top-8; the router's per_expert_scale as its vector of E and its scale among
  // the 8 norm-sized weights a layer (config_hybrid.cpp, read_gemma4_experts).
  ModelShape& gemma4_moe = gemma4(gemma.add({"gemma4-26b-a4b", "Gemma 4 26B-A4B (text)",
                                             "google/gemma-4-26B-A4B config.json, text_config", 30,
                                             2816, 2112, 16, 8, kGemma3VocabSize, true}),
                                  2);
  with_fine_grained_experts(gemma4_moe, 128, 8, 704);
  gemma4_moe.shared_expert_ffn_hidden_size = 2112;
  gemma4_moe.router_bias = true;
  gemma4_moe.norms_per_layer = 4 + 3 + 1;
  gemma3(gemma.add({"gemma3-1b", "Gemma 3 1B", "google/gemma-3-1b-pt config.json", 26, 1152, 6912,
                    4, 1, kGemma3VocabSize, true}),
         256);
  gemma3(
      gemma.add({"gemma3-4b", "Gemma 3 4B (text)", "google/gemma-3-4b-pt config.json, text_config",
                 34, 2560, 10240, 8, 4, kGemma3VisionVocabSize, true}),
      256);
  gemma3(gemma.add({"gemma3-12b", "Gemma 3 12B (text)",
                    "google/gemma-3-12b-pt config.json, text_config", 48, 3840, 15360, 16, 8,
                    kGemma3VisionVocabSize, true}),
         256);
  gemma3(gemma.add({"gemma3-27b", "Gemma 3 27B (text)",
                    "google/gemma-3-27b-pt config.json, text_config", 62, 5376, 21504, 32, 16,
                    kGemma3VisionVocabSize, true}),
         128);
  // Gemma 2 caps its logits at 30 (final_logit_softcapping).
  with_norms_per_layer(
      with_head_dim(gemma.add({"gemma2-9b", "Gemma 2 9B", "google/gemma-2-9b config.json", 42, 3584,
                               14336, 16, 8, kGemma2VocabSize, true}),
                    256),
      kGemma2NormsPerLayer)
      .final_logit_softcapping = 30;

  Family liquid(presets, "Liquid AI");
  lfm2(liquid.add({"lfm2-350m", "LFM2 350M", "LiquidAI/LFM2-350M config.json", 16, 1024, 4608, 16,
                   8, kLfm2VocabSize, true}));
  lfm2(liquid.add({"lfm2-700m", "LFM2 700M", "LiquidAI/LFM2-700M config.json", 16, 1536, 6912, 24,
                   8, kLfm2VocabSize, true}));
  lfm2(liquid.add({"lfm2-1.2b", "LFM2 1.2B", "LiquidAI/LFM2-1.2B config.json", 16, 2048, 8192, 32,
                   8, kLfm2VocabSize, true}));
  lfm2_moe(liquid.add({"lfm2-8b-a1b", "LFM2 8B-A1B", "LiquidAI/LFM2-8B-A1B config.json", 24, 2048,
                       7168, 32, 8, kLfm2VocabSize, true}));

  Family nvidia(presets, "NVIDIA");
  nemotron3_nano(nvidia.add({"nemotron3-nano-30b-a3b", "Nemotron 3 Nano 30B-A3B",
                             "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json", 52, 2688,
                             1856, 32, 2, 131072, false}));
  nemotron_nano_9b_v2(nvidia.add({"nemotron-nano-9b-v2", "Nemotron Nano 9B v2",
                                  "nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json", 56, 4480, 15680,
                                  40, 8, 131072, false}));
  nemotron3_super(nvidia.add({"nemotron3-super-120b-a12b", "Nemotron 3 Super 120B-A12B",
                              "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json", 88, 4096,
                              2688, 32, 2, 131072, false}));

  Family mistral(presets, "Mistral");
  mistral.add({"mistral-7b", "Mistral 7B", "mistralai/Mistral-7B-v0.1 config.json", 32, 4096, 14336,
               32, 8, kMistralVocabSize, false});
  with_experts(
      mistral.add({"mixtral-8x7b", "Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1 config.json", 32,
                   4096, 14336, 32, 8, kMistralVocabSize, false}),
      8, 2);

  Family openai(presets, "OpenAI");
  gpt_oss(openai.add({"gpt-oss-20b", "gpt-oss-20b", "openai/gpt-oss-20b config.json", 24, 2880,
                      2880, 64, 8, kGptOssVocabSize, false}),
          32);
  gpt_oss(openai.add({"gpt-oss-120b", "gpt-oss-120b", "openai/gpt-oss-120b config.json", 36, 2880,
                      2880, 64, 8, kGptOssVocabSize, false}),
          128);
  gpt2(openai, "gpt2", "GPT-2 124M", "openai-community/gpt2 config.json", 12, 768, 12);
  gpt2(openai, "gpt2-medium", "GPT-2 355M", "openai-community/gpt2-medium config.json", 24, 1024,
       16);
  gpt2(openai, "gpt2-large", "GPT-2 774M", "openai-community/gpt2-large config.json", 36, 1280, 20);
  gpt2(openai, "gpt2-xl", "GPT-2 1.5B", "openai-community/gpt2-xl config.json", 48, 1600, 25);

  Family others(presets, "Others");
  others.add({"phi-4", "Phi-4 14B", "microsoft/phi-4 config.json", 40, 5120, 17920, 40, 10,
              kPhi4VocabSize, false});
  ling_lite(others.add({"ling-lite", "Ling-lite 16.8B", "inclusionAI/Ling-lite config.json", 28,
                        2048, 5632, 16, 4, 126464, false}));
  ling_mini_2(
      others.add({"ling-mini-2.0", "Ling-mini-2.0 16B-A1.4B",
                  "inclusionAI/Ling-mini-2.0 config.json", 20, 2048, 5120, 16, 4, 157184, false}));
  olmo2(others.add({"olmo2-7b", "OLMo 2 7B", "allenai/OLMo-2-1124-7B config.json", 32, 4096, 11008,
                    32, 32, kOlmo2VocabSize, false}));
  olmo2(others.add({"olmo2-13b", "OLMo 2 13B", "allenai/OLMo-2-1124-13B config.json", 40, 5120,
                    13824, 40, 40, kOlmo2VocabSize, false}));
  olmo2(others.add({"olmo2-32b", "OLMo 2 32B", "allenai/OLMo-2-0325-32B config.json", 64, 5120,
                    27648, 40, 8, kOlmo2VocabSize, false}));
  // GPT-NeoX: rotary positions (no parameters), an untied embed_out, and attention
  // and MLP side by side (use_parallel_residual).
  with_parallel_attention_mlp(
      gpt_block(others.add({"pythia-160m", "Pythia 160M", "EleutherAI/pythia-160m config.json", 12,
                            768, 3072, 12, 12, kPythiaVocabSize, false}),
                0));
  // Each rotary model's max_position_embeddings, from its config.json (the Llama 3 sizes: Meta's
  // Meta-Llama-3-8B and -70B, and Llama-3.1-405B); GPT-2's are its learned positions.
  const std::pair<const char*, int> max_positions[] = {
      {"llama3-8b", 8192},
      {"llama3-70b", 8192},
      {"llama3-405b", 131072},
      {"llama3.1-8b", 131072},
      {"llama3.1-70b", 131072},
      {"llama3.3-70b", 131072},
      {"llama2-7b", 4096},
      {"llama2-13b", 4096},
      {"llama2-70b", 4096},
      {"llama3.2-1b", 131072},
      {"llama3.2-3b", 131072},
      {"llama4-scout", 262144},
      {"llama4-maverick", 1048576},
      {"mistral-7b", 32768},
      {"mixtral-8x7b", 32768},
      {"qwen2.5-7b", 131072},
      {"qwen2.5-72b", 131072},
      {"gemma2-9b", 8192},
      {"gemma3-1b", 32768},
      {"gemma3-4b", 131072},
      {"gemma3-12b", 131072},
      {"gemma3-27b", 131072},
      {"pythia-160m", 2048},
      {"qwen3-0.6b", 40960},
      {"qwen3-1.7b", 40960},
      {"qwen3-4b", 40960},
      {"qwen3-8b", 40960},
      {"qwen3-14b", 40960},
      {"qwen3-32b", 40960},
      {"qwen3-30b-a3b", 40960},
      {"qwen3-235b-a22b", 40960},
      {"deepseek-v3", 163840},
      {"kimi-k2", 131072},
      {"glm4.5", 131072},
      {"glm4.5-air", 131072},
      {"gpt-oss-20b", 131072},
      {"gpt-oss-120b", 131072},
      {"phi-4", 16384},
      {"olmo2-7b", 4096},
      {"olmo2-13b", 4096},
      {"olmo2-32b", 4096},
      {"qwen3-next-80b-a3b", 262144},
      {"qwen3.5-27b", 262144},
      {"qwen3.5-35b-a3b", 262144},
      {"qwen3.5-122b-a10b", 262144},
      {"qwen3.5-397b-a17b", 262144},
      {"deepseek-v3.2", 163840},
      {"glm-5", 202752},
      {"lfm2-350m", 128000},
      {"lfm2-700m", 128000},
      {"lfm2-1.2b", 128000},
      {"lfm2-8b-a1b", 128000},
      {"ling-lite", 16384},
      {"ling-mini-2.0", 32768},
      {"gemma4-31b", 262144},
      {"gemma4-26b-a4b", 262144},
      {"kimi-linear-48b-a3b", 1048576},
      {"deepseek-v2-lite", 163840},
      {"nemotron3-nano-30b-a3b", 262144},
      {"nemotron-nano-9b-v2", 131072},
  };
  for (ModelShape& preset : presets) {
    for (const auto& [id, positions] : max_positions) {
      if (preset.id == id) preset.max_positions = positions;
    }
  }
  return presets;
}

}  // namespace

const std::vector<ModelShape>& preset_models() {
  static const std::vector<ModelShape> presets = make_presets();
  return presets;
}

const ModelShape* find_preset(std::string_view id) {
  for (const ModelShape& shape : preset_models()) {
    if (shape.id == id) return &shape;
  }
  return nullptr;
}

std::string preset_ids_joined() {
  std::string joined;
  for (const ModelShape& shape : preset_models()) {
    if (!joined.empty()) joined += ", ";
    joined += shape.id;
  }
  return joined;
}

}  // namespace trainmem
