// Model shapes and their parameter counts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainmem {

// The shape of a decoder-only transformer: pre-norm blocks of grouped-query attention and a gated
// MLP (SwiGLU or GeGLU: gate, up and down projections), norm weights, and optionally biases and a
// mixture of experts. The defaults of the later fields describe the Llama family: no biases, two
// norms per layer, one dense MLP, rotary positions. GPT-style blocks (GPT-2, GPT-NeoX, OPT, Phi)
// set the last five: a plain MLP, LayerNorms with biases, learned positions, a head's bias, and
// attention and MLP side by side. Field
// comments name the Hugging Face config.json key they hold.
struct ModelShape {
  std::string id;                // stable key: CLI --model, the page's URL and <select>
  std::string name;              // for people: "Llama 3 8B"
  std::string source;            // where the shape comes from
  int num_layers = 0;            // L, num_hidden_layers
  int hidden_size = 0;           // h, the model dimension
  int ffn_hidden_size = 0;       // f, intermediate_size: the gated MLP's (each expert's) width
  int num_attention_heads = 0;   // a
  int num_key_value_heads = 0;   // k
  int vocab_size = 0;            // V
  bool tied_embeddings = false;  // tie_word_embeddings: one matrix for embedding and output head
  int head_dim = 0;  // d; 0 means h / a. When given, queries are a·d wide and keys and values
                     // k·d, which may differ from h (Gemma 2: 16 × 256 = 4,096 against 3,584)
  bool attention_qkv_bias = false;     // biases on Q, K and V (Qwen2 and Qwen2.5)
  bool attention_output_bias = false;  // a bias on the output projection O
  bool mlp_bias = false;               // biases on the gate, up and down projections
  int norms_per_layer = 2;             // norm weights per layer: 2 pre-norms; Gemma 2 has 4
  int num_experts = 1;                 // E, num_local_experts: 1 is a dense MLP
  int num_experts_per_token = 1;       // top-k, num_experts_per_tok: 1 when dense
  bool gated_mlp = true;   // false: a plain MLP of two projections, up and down (GPT-2's c_fc and
                           // c_proj), with an elementwise activation (GELU, ReLU) between them
  bool norm_bias = false;  // LayerNorm: every norm, the final one too, has a bias of h
  int num_position_embeddings = 0;  // learned absolute positions (GPT-2's wpe): rows of h; 0 for
                                    // rotary or no position parameters
  int max_positions = 0;  // the longest sequence the model takes: its learned positions, or
                          // max_position_embeddings for rotary ones; 0 where no source gives it
  bool output_head_bias = false;        // a bias of V on the output head (Phi's lm_head)
  bool parallel_attention_mlp = false;  // attention and MLP both read the layer's input
                                        // (GPT-NeoX's use_parallel_residual, Phi): no weights, but
                                        // the MLP's norm shares its input (one norm: its output)
  // Today's mixtures of experts (DeepSeek-V3, Qwen3-MoE, Qwen2-MoE). With E > 1:
  int moe_ffn_hidden_size = 0;  // moe_intermediate_size: each routed expert's width; 0 means f
  int shared_expert_ffn_hidden_size = 0;  // the shared experts' one MLP, every token through it:
                                          // DeepSeek's n_shared_experts · moe_intermediate_size,
                                          // Qwen2-MoE's shared_expert_intermediate_size; 0: none
  bool shared_expert_gate = false;        // Qwen2-MoE's shared_expert_gate: a sigmoid gate, h x 1
  bool router_bias = false;               // DeepSeek-V3's e_score_correction_bias: E per MoE layer
  int num_expert_groups = 0;   // group-limited routing (DeepSeek-V3's n_group 8): the experts in
                               // groups, each token routed within the best num_limited_groups
  int num_limited_groups = 0;  // of them (topk_group 4); 0 (or 1 group): no limit. No parameters
  int moe_latent_size = 0;     // Nemotron 3 Super's latent MoE: the routed experts read and write
                               // tokens of this width, projected from h and back around them
                               // (fc1_latent_proj, fc2_latent_proj); 0: the experts read h
  int num_dense_layers = 0;    // first_k_dense_replace: the first layers hold a dense MLP of f
                               // instead of the mixture (Qwen3-MoE's mlp_only_layers = [0, …])
  int moe_layer_step = 1;  // past the first num_dense_layers, layer i (from 0) is a mixture when
                           // i + 1 is a multiple of this, else dense (Llama 4's
                           // interleave_moe_layer_step, Qwen2-MoE's decoder_sparse_step)
  bool qk_norm = false;    // Qwen3's q_norm and k_norm: an RMSNorm of d on every head
  bool qk_norm_whole = false;    // OLMo 2's q_norm and k_norm: RMSNorms over the whole projections,
                                 // a·d and k·d wide
  bool attention_sinks = false;  // gpt-oss's sinks: one learned logit per head in every layer
  bool clamped_swiglu = false;   // gpt-oss's experts: a SwiGLU over the gate half clamped at 7 and
                                 // the up half to ±7, (up + 1) · gate · σ(1.702 · gate); no
                                 // parameters of its own
  int num_mtp_layers = 0;        // num_nextn_predict_layers: multi-token-prediction modules the
                                 // checkpoint adds after the main model (DeepSeek-V3, GLM-4.5); not
                                 // among its parameters unless a setup trains them (setup.hpp)
  // Multi-head latent attention (DeepSeek-V2 and V3), in use when kv_lora_rank > 0: queries
  // through a latent of q_lora_rank (0: one q_proj), keys and values through one of
  // kv_lora_rank, a rotary key of qk_rope_head_dim shared by the heads.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // A hybrid's layers (models.hpp, hybrid_linear_attention), one character a layer from the
  // first: 'A' a full-attention layer, 'L' a linear mixer's layer in its place, both holding the
  // same MLP; empty when every layer is full attention. Nemotron-H's blocks hold one part each
  // behind one norm: 'a' attention alone, 'l' the linear mixer alone, 'F' the MLP (the mixture,
  // with E > 1) alone; 'a' and 'l' count as a mixture's dense layers (dense_layers_between). The
  // linear mixer is a Gated DeltaNet (Qwen3-Next's and Qwen3.5's: Yang et al., "Gated Delta
  // Networks", arXiv:2412.06464; transformers' Qwen3NextGatedDeltaNet), or, when short_conv_kernel
  // is above 0, LFM2's gated short convolution (transformers' Lfm2ShortConv), or, when
  // global_head_dim is above 0, Gemma 4's global attention beside its sliding-window layers
  // (Gemma4TextAttention).
  std::string hybrid_layers = {};
  int linear_num_key_heads = 0;    // H_k: the linear layers' query and key heads
  int linear_num_value_heads = 0;  // H_v: their value heads (and gates, decays)
  int linear_key_head_dim = 0;     // d_k
  int linear_value_head_dim = 0;   // d_v
  int linear_conv_kernel_dim = 0;  // the short causal convolution's width over q, k and v
  // LFM2's short-convolution mixer (Lfm2ShortConv): in_proj h x 3h making B, C and x, a depthwise
  // causal convolution of this width over B·x, C times its output, and out_proj h x h.
  int short_conv_kernel = 0;     // conv_L_cache; 0: the linear mixer is a Gated DeltaNet
  bool short_conv_bias = false;  // conv_bias: biases on in_proj, the convolution and out_proj
  // Gemma 4's full-attention layers, among sliding-window ones ('A'): heads of global_head_dim,
  // num_global_key_value_heads key/value heads, and with attention_k_eq_v no v_proj (the values
  // are k_proj's output, normalised apart).
  int global_head_dim = 0;     // 0: the linear layers are no attention layers
  int global_kv_heads = 0;     // num_global_key_value_heads
  bool global_k_eq_v = false;  // attention_k_eq_v
  // This attention's values are k_proj's output, no v_proj (global_attention_shape's, under
  // attention_k_eq_v).
  bool keys_are_values = false;
  // Gemma 4's v_norm: an RMSNorm without a weight over each value head, before attention.
  bool value_norm = false;
  // Gemma 2's and Gemma 4's final_logit_softcapping: the logits pass through cap·tanh(x / cap)
  // in transformers' forward; 0: none.
  double final_logit_softcapping = 0;
  // Gemma 4's layer_scalar: one value a layer, a buffer the checkpoint holds (counted, as the
  // published totals count it).
  bool layer_scalar = false;
  // Qwen3-Next's gated attention (Qwen3NextAttention): q_proj also makes a gate of a·d, whose
  // sigmoid multiplies the attention's output before o_proj.
  bool attention_output_gate = false;
  // How transformers runs the linear layers, which decides what they save: Qwen3-Next repeats q
  // and k to the H_v value heads before fla's kernel and normalises through fla's fused gated
  // norm; Qwen3.5 hands the kernel its H_k heads (fla 0.5 on) and runs its gated norm in PyTorch.
  bool linear_qk_repeated = false;
  bool linear_norm_unfused = false;
  // Qwen3.5 splits the linear layers' input projection into in_proj_qkv, in_proj_z, in_proj_b and
  // in_proj_a (the same weights as Qwen3-Next's in_proj_qkvz and in_proj_ba): four modules for
  // LoRA's adapters rather than two.
  bool linear_projections_split = false;
  // Kimi Delta Attention (Kimi Linear, arXiv:2510.26692; transformers' KimiLinearDeltaAttention)
  // in place of a Gated DeltaNet: q_proj, k_proj and v_proj, a short convolution over each, a
  // decay per key channel through a low-rank forget gate (f_a h x d_v, f_b d_v x H·d_k) with
  // dt_bias per channel and A_log per head, β, a low-rank output gate (g_a, g_b), a gated norm
  // over d_v, o_proj; the linear_* fields give its heads, widths and convolution.
  bool kimi_delta_attention = false;
  // Mamba-2's mixer (Dao and Gu, "Transformers are SSMs", arXiv:2405.21060; transformers'
  // NemotronHMamba2Mixer) in place of a Gated DeltaNet, its fields read as SSD's attention: the
  // linear_* key heads and width are n_groups and ssm_state_size (B and C), the value heads and
  // width mamba_num_heads and mamba_head_dim (x), the convolution's width conv_kernel. in_proj
  // makes z, x, B, C and dt; the depthwise convolution over x, B and C (with its bias under
  // linear_conv_bias); dt_bias, A_log and D a head; a gated RMSNorm over H·P; out_proj.
  bool mamba2 = false;
  bool linear_conv_bias = false;
  // Mamba-2's chunk_size (NemotronHConfig's, 128 by default): the scan's chunk, to which vLLM
  // aligns the blocks it caches a state in under prefix caching (rollout.cpp, vllm_hybrid_cache).
  int mamba_chunk_size = 0;
  // Whether vLLM keeps the linear mixers' recurrent state (the delta rule's or the SSM's) in FP32:
  // its mamba_ssm_cache_dtype as the model makes it from the config (vllm/model_executor/models/
  // config.py: Qwen3.5's mamba_ssm_dtype, float32 in its configs; Nemotron-H's
  // mamba_ssm_cache_dtype, float32 unless the config says otherwise); else the model's dtype, BF16
  // (Qwen3-Next's, whatever its config says). A bool beside the others: the first view's module
  // copies this struct, and an int here cost it 0.2 KB.
  bool recurrent_state_fp32 = false;
  // Mamba's selective scan (Gu and Dao, arXiv:2312.00752), as transformers' JambaMambaMixer
  // builds it (Jamba), in place of a Gated DeltaNet, its fields read as Mamba-2's: one key head of
  // the state N (B and C, shared by every channel), linear_num_value_heads channels of width 1, the
  // inner width d = mamba_expand·h (x and the gate z), the convolution's width. in_proj h x 2d
  // makes x and z (with biases under mamba_proj_bias); the depthwise convolution over x (with its
  // bias under linear_conv_bias); x_proj d x (R + 2N) makes dt's low-rank input and B and C, each
  // through an RMSNorm of its own (dt_layernorm, b_layernorm, c_layernorm); dt_proj R x d with its
  // bias; A_log d x N and D; out_proj d x h.
  bool mamba1 = false;
  // MiniMax's lightning attention (arXiv:2501.08313; transformers' MiniMaxLightningAttention), in
  // place of a Gated DeltaNet: the linear_* heads and widths are the attention's own H heads of d
  // (no convolution). qkv_proj h x 3·H·d under SiLU, output_gate h x H·d, an RMSNorm over H·d,
  // out_proj; run in PyTorch over blocks of this many tokens, each block's attention within it
  // and a d x d state a head carried between blocks.
  int lightning_block_size = 0;  // block_size; 0: no lightning attention
  int mamba_dt_rank = 0;         // R: mamba_dt_rank
  bool mamba_proj_bias = false;  // mamba_proj_bias: biases on in_proj and out_proj
  // DeepSeek Sparse Attention (DeepSeek-V3.2, arXiv:2512.02556; GLM-5), in use when
  // index_n_heads > 0: beside latent attention every layer holds a lightning indexer
  // (transformers' DeepseekV32Indexer: wq_b from the query latent, wk and a LayerNorm from the
  // layer's input, weights_proj), whose scores pick the index_topk keys each query attends to.
  int index_n_heads = 0;   // H_I, index_n_heads
  int index_head_dim = 0;  // D_I, index_head_dim
  int index_topk = 0;      // k_I, index_topk: keys each query attends to
  std::string family = {};  // the menu's group for a preset: "Llama", "Qwen", …; empty for a config
  // A multimodal model's vision tower and projector, as transformers builds them beside the text
  // tower (config_vision.cpp): their parameters, whole on the first pipeline stage, frozen unless
  // a setup trains them; 0 for a text model.
  double vision_parameters = 0;
  // The dropout a config.json sets (config_dropout.cpp), which --dropout model follows
  // (options.hpp, Dropout); a preset states none, and each activation model then follows its own
  // source.
  bool dropout_stated = false;
  bool residual_dropout = false;     // p > 0 on the attention's and the MLP's outputs
  bool probability_dropout = false;  // p > 0 on the attention probabilities
  std::string dropout_said = {};     // the config's dropout keys and values, as a note says them
};

// Whether the shape mixes linear mixers' layers with full-attention ones.
inline bool hybrid_linear_attention(const ModelShape& shape) {
  return !shape.hybrid_layers.empty();
}

// Whether a hybrid's linear mixer is LFM2's short convolution rather than a Gated DeltaNet.
inline bool short_conv_mixer(const ModelShape& shape) { return shape.short_conv_kernel > 0; }

// Whether a hybrid's linear mixer is Kimi Delta Attention rather than a Gated DeltaNet.
inline bool kimi_delta_mixer(const ModelShape& shape) {
  return hybrid_linear_attention(shape) && shape.kimi_delta_attention;
}

// Whether a hybrid's linear mixer is Mamba-2's.
inline bool mamba2_mixer(const ModelShape& shape) {
  return hybrid_linear_attention(shape) && shape.mamba2;
}

// Whether a hybrid's linear mixer is Mamba's selective scan (Mamba-1, Jamba's).
inline bool mamba1_mixer(const ModelShape& shape) {
  return hybrid_linear_attention(shape) && shape.mamba1;
}

// Whether a hybrid's linear mixer is MiniMax's lightning attention.
inline bool lightning_mixer(const ModelShape& shape) {
  return hybrid_linear_attention(shape) && shape.lightning_block_size > 0;
}

// Whether a hybrid's second kind is Gemma 4's global attention, its first sliding-window
// attention.
inline bool global_attention_mixer(const ModelShape& shape) { return shape.global_head_dim > 0; }

// A hybrid's kinds, for people: "Gated DeltaNet layers", "short-convolution layers", "Kimi Delta
// Attention layers" or "global attention layers"; and "full-attention layers" or "sliding-window
// layers".
inline const char* linear_layers_name(const ModelShape& shape) {
  return short_conv_mixer(shape)         ? "short-convolution layers"
         : global_attention_mixer(shape) ? "global attention layers"
         : kimi_delta_mixer(shape)       ? "Kimi Delta Attention layers"
         : mamba2_mixer(shape)           ? "Mamba-2 layers"
         : mamba1_mixer(shape)           ? "Mamba layers"
         : lightning_mixer(shape)        ? "lightning-attention layers"
                                         : "Gated DeltaNet layers";
}
inline const char* attention_layers_name(const ModelShape& shape) {
  return global_attention_mixer(shape) ? "sliding-window layers" : "full-attention layers";
}

// A kind of a hybrid's layers (hybrid_layers' 'A', 'L', 'a', 'l' or 'F'), for people, in the
// plural: linear_layers_name and attention_layers_name for the full layers; the one-part kinds as
// Nemotron-H calls them, "Mamba-2 blocks", "attention blocks" and "MLP blocks" ("mixture-of-
// experts blocks" with E > 1).
std::string layer_kind_name(const ModelShape& shape, char kind);

// Gemma 4's global attention layers as a shape of their own: its heads of global_head_dim and
// its global key/value heads (models.cpp).
ModelShape global_attention_shape(const ModelShape& shape);

// The hybrid_layers of `layers` layers of which every `interval`-th (the layer's number + 1 a
// multiple of it) is of kind `every` and the others of the other kind: Qwen3-Next's
// full_attention_interval ('A' every 4th), Gemma 4's global layers ('L' every 6th).
std::string interval_hybrid_layers(int layers, int interval, char every = 'A');

// How many of the `count` layers from layer `first` on (from 0) are linear mixers' layers: none
// unless hybrid, else those hybrid_layers marks 'L' or 'l'.
double linear_attention_layers_between(const ModelShape& shape, double first, double count);

// How many of them hybrid_layers marks with one of `kinds` ("al": the one-part mixer layers).
double layers_of_kinds_between(const ModelShape& shape, double first, double count,
                               std::string_view kinds);

// Every kind of a hybrid's layer (hybrid_layers), in the order they are named in: the linear
// mixers' layers first, then the MLP alone, then attention.
constexpr const char* kHybridLayerKinds = "LlFAa";

// Whether a hybrid's layers hold one part each somewhere (Nemotron-H's: 'a', 'l' or 'F').
inline bool one_part_layers(const ModelShape& shape) {
  return shape.hybrid_layers.find_first_of("alF") != std::string::npos;
}

// Whether the shape's attention is multi-head latent attention.
inline bool latent_attention(const ModelShape& shape) { return shape.kv_lora_rank > 0; }

// Whether its latent attention is DeepSeek Sparse Attention, an indexer in every layer.
inline bool sparse_attention(const ModelShape& shape) { return shape.index_n_heads > 0; }

// How many of the `count` layers from layer `first` on (from 0) hold a dense MLP: all of them
// without a mixture; else the first num_dense_layers, and past them those whose number + 1 is not
// a multiple of moe_layer_step; with one-part layers, those of a mixer alone ('a', 'l').
double dense_layers_between(const ModelShape& shape, double first, double count);

// Whether a mixture of experts has dense layers among its layers (first or interleaved).
bool mixes_dense_layers(const ModelShape& shape);

// The model id that selects a setup's own shape rather than a preset.
constexpr const char* kCustomModelId = "custom";

// The bounds a shape must keep to: far above any released model, and low enough that every
// count stays finite.
constexpr int kMaxModelWidth = 1 << 20;  // 1,048,576: hidden, FFN width, heads, head_dim
constexpr int kMaxModelLayers = 1000;
constexpr int kMaxVocabSize = 1 << 24;  // 16,777,216
constexpr int kMaxExperts = 1024;
constexpr int kMaxNormsPerLayer = 16;
constexpr int kMaxPositionEmbeddings = 1 << 24;  // 16,777,216, as the vocabulary
constexpr std::size_t kMaxModelNameBytes = 100;  // UTF-8 bytes

// Gemma 2's layers each hold four RMSNorm weights: input, post-attention, pre- and post-feedforward
// (transformers' Gemma2DecoderLayer).
constexpr int kGemma2NormsPerLayer = 4;

// The presets, in the order a menu shows them: the plate's three Llama 3 models first.
const std::vector<ModelShape>& preset_models();

// The preset with this id, or nullptr.
const ModelShape* find_preset(std::string_view id);

// "llama3-8b, llama3-70b, …": for messages that list what is allowed.
std::string preset_ids_joined();

// What is wrong with a shape, or an empty string when it is usable: each bound above, a name of 1
// to kMaxModelNameBytes bytes, key/value heads dividing the heads, the heads dividing the hidden
// size when head_dim is 0, and top-k at most the experts. Fields are named by their config.json
// keys: "num_key_value_heads (5) must divide num_attention_heads (32)."
std::string model_shape_problem(const ModelShape& shape);

// f_e: each routed expert's width, moe_intermediate_size when given, else f.
int routed_expert_width(const ModelShape& shape);
// The width of the tokens the routed experts read and write, and the all-to-all moves: the latent
// width where the mixture has one (moe_latent_size), else h.
int expert_token_width(const ModelShape& shape);

// d: head_dim when given, else h / a.
double head_dim_of(const ModelShape& shape);

// The widths tensor parallelism must divide: the heads and key/value heads (all heads under
// latent attention), the FFN width and the shared experts' width. The routed experts' width is
// expert tensor parallelism's to divide (t's too when etp is t).
int tensor_parallel_widths_gcd(const ModelShape& shape);

// How tensor parallelism places a weight of a layer (Megatron-LM's placement).
enum class WeightPlacement {
  kSplit,       // column- or row-parallel: split over t
  kReplicated,  // whole on every TP rank: row-parallel biases, the router, MLA's down-projections
  kNorm,        // a norm's weight or bias: whole on every TP rank
};

// One weight of a layer, `copies` times: a matrix of rows x cols, or a vector of rows (cols 1).
struct LayerWeight {
  double rows = 0;
  double cols = 1;
  double copies = 1;
  bool matrix = true;
  WeightPlacement placement = WeightPlacement::kSplit;
  bool routed_expert = false;  // a routed expert's: expert parallelism places it (ep·etp)
  // The router and a shared expert's gate: GEMMs that FP8 training leaves in BF16 (Megatron-LM's
  // TopKRouter computes its logits outside Transformer Engine's FP8 modules).
  bool high_precision = false;
};

// Every weight of one layer: of a mixture-of-experts layer (or the only kind of layer), or, with
// `dense_layer`, of one of the num_dense_layers layers whose MLP is dense (f wide, no router).
// Parameter counts and Adafactor's factored states both read this one list.
std::vector<LayerWeight> layer_weights(const ModelShape& shape, bool dense_layer);

// A difference in a layer's parameters: split over t, whole on every rank, and in norms.
struct LayerDelta {
  double split = 0;
  double replicated = 0;
  double norms = 0;
  double on_device(double t) const { return split / t + replicated + norms; }
};

// Where the parameters are, for placing them on pipeline stages and tensor-parallel ranks.
// Megatron-LM's placement: column-parallel layers (Q, K, V, gate, up) split their weights and
// biases over t, row-parallel layers (O, down) split their weights and keep their biases whole,
// and the router is replicated.
struct ParameterCounts {
  double attention_and_mlp_per_layer = 0;  // what tensor parallelism splits
  double norms_per_layer = 0;              // norm weights, replicated on every TP rank
  double replicated_per_layer = 0;         // O and down biases, the router: whole on every rank
  // The same two for one of the num_dense_layers dense layers mixed into a mixture of experts
  // (equal to the above when every layer is alike).
  double dense_attention_and_mlp_per_layer = 0;
  double dense_replicated_per_layer = 0;
  // The routed experts' share of a mixture layer's two above: what expert parallelism spreads
  // over ep and splits over etp instead of t (their weights and gate/up biases; their down
  // biases, whole on each expert-tensor rank).
  double routed_experts_per_layer = 0;
  double routed_experts_replicated_per_layer = 0;
  double embedding = 0;           // V x h, split over the vocabulary by TP
  double position_embedding = 0;  // P x h learned positions, whole on every TP rank
  double output_head = 0;         // V x h, or 0 when tied to the embedding; + V bias
  double final_norm = 0;          // h, or 2·h with a LayerNorm's bias
  // What a hybrid's layer of another kind holds beyond a full layer of the same kind of MLP
  // (hybrid_layers): its linear mixer less the attention ('L', 'l'), no MLP ('a', 'l': less the
  // dense MLP, such layers counting as dense ones) and no mixer ('F': less the attention), each
  // with half the layer's norms in the one-part kinds. Negative where the layer holds less.
  LayerDelta linear;
  LayerDelta mlpless;
  LayerDelta mixerless;
};
ParameterCounts parameter_counts(const ModelShape& shape);

// What the `count` layers from layer `first` on hold beyond as many full layers, on one of t
// tensor-parallel ranks: each delta above times the layers of its kinds (0 unless hybrid).
double layer_kind_deltas(const ModelShape& shape, const ParameterCounts& counts, double first,
                         double count, double t);

// A Gated DeltaNet layer's mixer weights (empty unless the shape is hybrid).
std::vector<LayerWeight> linear_attention_weights(const ModelShape& shape);

// Parameters derived from the shape, never typed in; q = a·d and kv = k·d:
//   per layer  attention  h·q + 2·h·kv + q·h          (Q, K, V, O)
//                         + q + 2·kv with QKV biases, + h with an output bias
//              MLP        E · 3·h·f                   (gate, up, down in each of E experts)
//                         or E · 2·h·f when not gated (up, down)
//                         + E · (2·f + h) with MLP biases (E · (f + h) not gated),
//                         + h·E for the router when E > 1
//              norms      norms_per_layer · h, twice that with LayerNorm biases
//   once       embedding  V·h, positions P·h, output head V·h unless tied (+ V with its bias),
//                         final norm h (2·h with a bias)
//   today's MoE (E > 1)  routed experts E · 3·h·f_e (f_e = moe_intermediate_size), one shared
//                        MLP 3·h·f_s, + h with its gate, + E with the router's bias; the first
//                        num_dense_layers layers hold a dense 3·h·f MLP and no router instead
//   q/k norms            + 2·d per layer (Qwen3), + a·d + k·d over the whole projections (OLMo 2)
//   attention sinks      + a per layer (gpt-oss)
//   interleaved mixtures past the first num_dense_layers, layer i is a mixture only when i + 1 is
//                        a multiple of moe_layer_step (Llama 4 Maverick: every second layer)
//   latent attention     q: h·r_q + r_q + r_q·a·(d_nope + d_rope), or h·a·(d_nope + d_rope)
//                        kv: h·(r_kv + d_rope) + r_kv + r_kv·a·(d_nope + d_v);  O: a·d_v·h
//   a vision tower       + vision_parameters (a multimodal model's, with its projector)
//   hybrid linear        q = a·d doubled with an output gate (2·h·q for q_proj); each Gated
//   attention            DeltaNet layer holds, instead of the attention and its q/k norms,
//                        h·(2·H_k·d_k + 2·H_v·d_v) + h·2·H_v (in_proj_qkvz, in_proj_ba)
//                        + (2·H_k·d_k + H_v·d_v)·kernel (conv1d) + 2·H_v (dt_bias, A_log)
//                        + d_v (its gated norm) + H_v·d_v·h (out_proj)
//                        Kimi Delta Attention: h·(2·H_k·d_k + H_v·d_v) (q, k, v)
//                        + (2·H_k·d_k + H_v·d_v)·kernel + h·d_v + d_v·H_v·d_k (forget gate)
//                        + H_v·d_k (dt_bias) + H_v (A_log) + h·H_v (β) + h·d_v + d_v·H_v·d_v
//                        (output gate) + d_v (gated norm) + H_v·d_v·h (o_proj)
//                        Mamba-2: h·(2·H·P + 2·G·N + H) (in_proj) + (H·P + 2·G·N)·kernel
//                        (+ H·P + 2·G·N with its bias) + 3·H (dt_bias, A_log, D) + H·P (gated
//                        norm) + H·P·h (out_proj)
//   one-part layers      half the layer's norms and its mixer alone, or its MLP alone
double count_parameters(const ModelShape& shape);
// The model with a value head of one output in place of its output layer, as a PPO critic is
// built (transformers' AutoModelForTokenClassification with num_labels 1: its `score`, hidden →
// 1 with a bias, and no output layer; an embedding tied to it stays).
double value_model_parameters(const ModelShape& shape);

// The parameters one token passes through: the same count with top-k of the E routed experts.
double count_active_parameters(const ModelShape& shape);

// The multi-token-prediction modules' parameters (DeepSeek-V3's, arXiv:2412.19437 section 2.2;
// Megatron-LM's MultiTokenPredictionLayer): per module the norms of the hidden state and of the
// next token's embedding (2·h), their projection eh_proj (2·h x h), one transformer layer of the
// model's mixture kind and a final norm (h); the embedding and output head are the main model's,
// shared. 0 without such modules.
double count_mtp_parameters(const ModelShape& shape);

}  // namespace trainmem
