// Today's families in Chromium: one config.json of each pasted and counted, a multimodal config read
// for its text tower once the reader asks (and a link keeping it), the model menu in family groups,
// and DeepSeek-V3's multi-token-prediction module said when left out and counted when trained.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, commit, FORBIDDEN_TEXT, readout, startHarness } from './harness.mjs';

// Each family's weight-bearing config.json fields, written here from the models' hub configs.
const PHI_4 = JSON.stringify({
  _name_or_path: 'microsoft/phi-4',
  model_type: 'phi3',
  hidden_size: 5120,
  intermediate_size: 17920,
  num_hidden_layers: 40,
  num_attention_heads: 40,
  num_key_value_heads: 10,
  vocab_size: 100352,
  tie_word_embeddings: false,
  max_position_embeddings: 16384,
});
const OLMO2_7B = JSON.stringify({
  _name_or_path: 'allenai/OLMo-2-1124-7B',
  model_type: 'olmo2',
  hidden_size: 4096,
  intermediate_size: 11008,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 32,
  vocab_size: 100352,
  tie_word_embeddings: false,
  max_position_embeddings: 4096,
});
const SMOLLM3_3B = JSON.stringify({
  _name_or_path: 'HuggingFaceTB/SmolLM3-3B',
  model_type: 'smollm3',
  hidden_size: 2048,
  intermediate_size: 11008,
  num_hidden_layers: 36,
  num_attention_heads: 16,
  num_key_value_heads: 4,
  vocab_size: 128256,
  max_position_embeddings: 65536,
});
const GRANITE_33_8B = JSON.stringify({
  _name_or_path: 'ibm-granite/granite-3.3-8b-instruct',
  model_type: 'granite',
  hidden_size: 4096,
  intermediate_size: 12800,
  num_hidden_layers: 40,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  vocab_size: 49159,
  tie_word_embeddings: true,
  max_position_embeddings: 131072,
  embedding_multiplier: 12.0,
  residual_multiplier: 0.22,
  attention_multiplier: 0.0078125,
  logits_scaling: 16.0,
});
const COMMAND_R7B = JSON.stringify({
  _name_or_path: 'CohereForAI/c4ai-command-r7b-12-2024',
  model_type: 'cohere2',
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  vocab_size: 256000,
  sliding_window: 4096,
  logit_scale: 0.25,
});
const GLM45_AIR = JSON.stringify({
  _name_or_path: 'zai-org/GLM-4.5-Air',
  model_type: 'glm4_moe',
  hidden_size: 4096,
  intermediate_size: 10944,
  moe_intermediate_size: 1408,
  num_hidden_layers: 46,
  num_attention_heads: 96,
  num_key_value_heads: 8,
  head_dim: 128,
  n_routed_experts: 128,
  n_shared_experts: 1,
  num_experts_per_tok: 8,
  first_k_dense_replace: 1,
  attention_bias: true,
  use_qk_norm: false,
  num_nextn_predict_layers: 1,
  vocab_size: 151552,
  tie_word_embeddings: false,
});
const GPT_OSS_20B = JSON.stringify({
  _name_or_path: 'openai/gpt-oss-20b',
  model_type: 'gpt_oss',
  hidden_size: 2880,
  intermediate_size: 2880,
  num_hidden_layers: 24,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  head_dim: 64,
  num_local_experts: 32,
  num_experts_per_tok: 4,
  vocab_size: 201088,
  tie_word_embeddings: false,
  attention_bias: true,
  sliding_window: 128,
});
const KIMI_K2 = JSON.stringify({
  _name_or_path: 'moonshotai/Kimi-K2-Instruct',
  model_type: 'kimi_k2',
  hidden_size: 7168,
  intermediate_size: 18432,
  moe_intermediate_size: 2048,
  num_hidden_layers: 61,
  num_attention_heads: 64,
  num_key_value_heads: 64,
  q_lora_rank: 1536,
  kv_lora_rank: 512,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  n_routed_experts: 384,
  n_shared_experts: 1,
  num_experts_per_tok: 8,
  first_k_dense_replace: 1,
  num_nextn_predict_layers: 0,
  vocab_size: 163840,
  tie_word_embeddings: false,
});
const GEMMA3_4B = JSON.stringify({
  _name_or_path: 'google/gemma-3-4b-pt',
  model_type: 'gemma3',
  text_config: {
    model_type: 'gemma3_text',
    hidden_size: 2560,
    intermediate_size: 10240,
    num_hidden_layers: 34,
    sliding_window: 1024,
  },
  vision_config: {
    model_type: 'siglip_vision_model',
    hidden_size: 1152,
    intermediate_size: 4304,
    num_hidden_layers: 27,
    num_attention_heads: 16,
    image_size: 896,
    patch_size: 14,
    vision_use_head: false,
  },
});
const LLAMA4_SCOUT = JSON.stringify({
  _name_or_path: 'meta-llama/Llama-4-Scout-17B-16E',
  model_type: 'llama4',
  tie_word_embeddings: false,
  text_config: {
    model_type: 'llama4_text',
    hidden_size: 5120,
    intermediate_size: 8192,
    intermediate_size_mlp: 16384,
    num_hidden_layers: 48,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    head_dim: 128,
    vocab_size: 202048,
    num_local_experts: 16,
    num_experts_per_tok: 1,
    interleave_moe_layer_step: 1,
    max_position_embeddings: 262144,
  },
  vision_config: {
    model_type: 'llama4_vision_model',
    hidden_size: 1408,
    intermediate_size: 5632,
    num_hidden_layers: 34,
    num_attention_heads: 16,
    image_size: 336,
    patch_size: 14,
    projector_input_dim: 4096,
    projector_output_dim: 4096,
    vision_output_dim: 4096,
  },
});
const MISTRAL_SMALL_31 = JSON.stringify({
  _name_or_path: 'mistralai/Mistral-Small-3.1-24B-Base-2503',
  model_type: 'mistral3',
  spatial_merge_size: 2,
  text_config: {
    model_type: 'mistral',
    hidden_size: 5120,
    intermediate_size: 32768,
    num_hidden_layers: 40,
    num_attention_heads: 32,
    num_key_value_heads: 8,
    head_dim: 128,
    vocab_size: 131072,
  },
  vision_config: {
    model_type: 'pixtral',
    hidden_size: 1024,
    intermediate_size: 4096,
    num_hidden_layers: 24,
    num_attention_heads: 16,
    head_dim: 64,
    patch_size: 14,
  },
});
const QWEN25_VL_7B = JSON.stringify({
  _name_or_path: 'Qwen/Qwen2.5-VL-7B-Instruct',
  model_type: 'qwen2_5_vl',
  hidden_size: 3584,
  intermediate_size: 18944,
  num_hidden_layers: 28,
  num_attention_heads: 28,
  num_key_value_heads: 4,
  vocab_size: 152064,
  tie_word_embeddings: false,
  vision_config: {
    depth: 32,
    hidden_size: 1280,
    intermediate_size: 3420,
    out_hidden_size: 3584,
    patch_size: 14,
    temporal_patch_size: 2,
    spatial_merge_size: 2,
    in_chans: 3,
  },
});

// Hybrid linear attention: Qwen3-Next 80B-A3B's weight-bearing fields, with a bare Infinity as
// Nemotron's published files hold one (Python's json reads it), and Qwen3.5 35B-A3B's text and
// vision towers.
const QWEN3_NEXT = JSON.stringify({
  _name_or_path: 'Qwen/Qwen3-Next-80B-A3B-Instruct',
  model_type: 'qwen3_next',
  hidden_size: 2048,
  intermediate_size: 5120,
  num_hidden_layers: 48,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  head_dim: 256,
  vocab_size: 151936,
  num_experts: 512,
  num_experts_per_tok: 10,
  moe_intermediate_size: 512,
  shared_expert_intermediate_size: 512,
  full_attention_interval: 4,
  linear_conv_kernel_dim: 4,
  linear_key_head_dim: 128,
  linear_num_key_heads: 16,
  linear_num_value_heads: 32,
  linear_value_head_dim: 128,
  tie_word_embeddings: false,
  time_step_limit: [0, 'INFINITY'],
}).replace('"INFINITY"', 'Infinity');
// LFM2 1.2B's, as LiquidAI/LFM2-1.2B publishes them: short convolutions beside attention.
const LFM2_12B = JSON.stringify({
  _name_or_path: 'LiquidAI/LFM2-1.2B',
  model_type: 'lfm2',
  block_auto_adjust_ff_dim: true,
  block_ff_dim: 12288,
  block_ffn_dim_multiplier: 1.0,
  block_multiple_of: 256,
  conv_L_cache: 3,
  conv_bias: false,
  hidden_size: 2048,
  intermediate_size: 12288,
  layer_types: [2, 5, 8, 10, 12, 14].reduce(
    (types, index) => types.with(index, 'full_attention'),
    Array(16).fill('conv'),
  ),
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  tie_embedding: true,
  vocab_size: 65536,
});
// Kimi Linear 48B-A3B's, as moonshotai/Kimi-Linear-48B-A3B-Instruct publishes it: Kimi Delta
// Attention layers beside latent attention ones, numbered from 1.
const KIMI_LINEAR = JSON.stringify({
  _name_or_path: 'moonshotai/Kimi-Linear-48B-A3B-Instruct',
  model_type: 'kimi_linear',
  first_k_dense_replace: 1,
  head_dim: 72,
  hidden_act: 'silu',
  hidden_size: 2304,
  intermediate_size: 9216,
  kv_lora_rank: 512,
  linear_attn_config: {
    full_attn_layers: [4, 8, 12, 16, 20, 24, 27],
    head_dim: 128,
    kda_layers: Array.from({ length: 26 }, (_, i) => i + 1).filter((layer) => layer % 4 !== 0),
    num_heads: 32,
    short_conv_kernel_size: 4,
  },
  mla_use_nope: true,
  model_max_length: 1048576,
  moe_intermediate_size: 1024,
  moe_layer_freq: 1,
  num_attention_heads: 32,
  num_experts: 256,
  num_experts_per_token: 8,
  num_hidden_layers: 27,
  num_key_value_heads: 32,
  num_nextn_predict_layers: 0,
  num_shared_experts: 1,
  q_lora_rank: null,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  vocab_size: 163840,
  tie_word_embeddings: false,
});
// Nemotron 3 Nano 30B-A3B's, as nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 publishes it: blocks of
// one part each, Mamba-2, a mixture of experts or attention.
const NEMOTRON3_NANO = JSON.stringify({
  _name_or_path: 'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16',
  architectures: ['NemotronHForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 1,
  chunk_size: 128,
  conv_kernel: 4,
  eos_token_id: 2,
  expand: 2,
  head_dim: 128,
  hidden_dropout: 0.0,
  hidden_size: 2688,
  hybrid_override_pattern: 'MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME',
  initializer_range: 0.02,
  intermediate_size: 1856,
  layer_norm_epsilon: 1e-5,
  mamba_head_dim: 64,
  mamba_hidden_act: 'silu',
  mamba_num_heads: 64,
  mamba_proj_bias: false,
  mamba_ssm_cache_dtype: 'float32',
  max_position_embeddings: 262144,
  mlp_bias: false,
  mlp_hidden_act: 'relu2',
  model_type: 'nemotron_h',
  moe_intermediate_size: 1856,
  moe_shared_expert_intermediate_size: 3712,
  n_group: 1,
  n_groups: 8,
  n_routed_experts: 128,
  n_shared_experts: 1,
  norm_eps: 1e-5,
  norm_topk_prob: true,
  num_attention_heads: 32,
  num_experts_per_tok: 6,
  num_hidden_layers: 52,
  num_key_value_heads: 2,
  num_logits_to_keep: 1,
  pad_token_id: 0,
  partial_rotary_factor: 1.0,
  rescale_prenorm_residual: true,
  residual_in_fp32: false,
  rope_theta: 10000,
  routed_scaling_factor: 2.5,
  sliding_window: null,
  ssm_state_size: 128,
  tie_word_embeddings: false,
  time_step_floor: 0.0001,
  time_step_max: 0.1,
  time_step_min: 0.001,
  topk_group: 1,
  torch_dtype: 'bfloat16',
  transformers_version: '4.55.4',
  use_bias: false,
  use_cache: true,
  use_conv_bias: true,
  use_mamba_kernels: true,
  vocab_size: 131072,
});
// Gemma 4 31B's: sliding-window layers, every sixth a full-attention layer of 512-wide heads,
// beside its vision tower.
const GEMMA4_31B = JSON.stringify({
  _name_or_path: 'google/gemma-4-31B',
  model_type: 'gemma4',
  text_config: {
    model_type: 'gemma4_text',
    attention_k_eq_v: true,
    final_logit_softcapping: 30.0,
    global_head_dim: 512,
    head_dim: 256,
    hidden_size: 5376,
    hidden_size_per_layer_input: 0,
    intermediate_size: 21504,
    num_attention_heads: 32,
    num_global_key_value_heads: 4,
    num_hidden_layers: 60,
    num_key_value_heads: 16,
    vocab_size: 262144,
  },
  vision_config: {
    model_type: 'gemma4_vision',
    head_dim: 72,
    hidden_size: 1152,
    intermediate_size: 4304,
    num_attention_heads: 16,
    num_hidden_layers: 27,
    num_key_value_heads: 16,
    standardize: true,
  },
});
// DeepSeek Sparse Attention: DeepSeek-V3.2's and GLM-5's weight-bearing fields.
const DSA_FIELDS = {
  first_k_dense_replace: 3,
  kv_lora_rank: 512,
  qk_rope_head_dim: 64,
  moe_intermediate_size: 2048,
  n_routed_experts: 256,
  n_shared_experts: 1,
  num_experts_per_tok: 8,
  num_nextn_predict_layers: 1,
  index_head_dim: 128,
  index_topk: 2048,
  tie_word_embeddings: false,
};
const DEEPSEEK_V32 = JSON.stringify({
  _name_or_path: 'deepseek-ai/DeepSeek-V3.2',
  model_type: 'deepseek_v32',
  ...DSA_FIELDS,
  hidden_size: 7168,
  intermediate_size: 18432,
  num_hidden_layers: 61,
  num_attention_heads: 128,
  num_key_value_heads: 128,
  vocab_size: 129280,
  q_lora_rank: 1536,
  qk_nope_head_dim: 128,
  v_head_dim: 128,
  index_n_heads: 64,
});
const GLM5 = JSON.stringify({
  _name_or_path: 'zai-org/GLM-5',
  model_type: 'glm_moe_dsa',
  ...DSA_FIELDS,
  hidden_size: 6144,
  intermediate_size: 12288,
  num_hidden_layers: 78,
  num_attention_heads: 64,
  num_key_value_heads: 64,
  head_dim: 64,
  vocab_size: 154880,
  q_lora_rank: 2048,
  qk_nope_head_dim: 192,
  v_head_dim: 256,
  index_n_heads: 32,
  indexer_types: Array(78).fill('full'),
});
const QWEN35_35B = JSON.stringify({
  _name_or_path: 'Qwen/Qwen3.5-35B-A3B',
  model_type: 'qwen3_5_moe',
  tie_word_embeddings: false,
  text_config: {
    model_type: 'qwen3_5_moe_text',
    hidden_size: 2048,
    num_hidden_layers: 40,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    head_dim: 256,
    vocab_size: 248320,
    num_experts: 256,
    num_experts_per_tok: 8,
    moe_intermediate_size: 512,
    shared_expert_intermediate_size: 512,
    attn_output_gate: true,
    full_attention_interval: 4,
    linear_conv_kernel_dim: 4,
    linear_key_head_dim: 128,
    linear_num_key_heads: 16,
    linear_num_value_heads: 32,
    linear_value_head_dim: 128,
    mtp_num_hidden_layers: 1,
  },
  vision_config: {
    depth: 27,
    hidden_size: 1152,
    intermediate_size: 4304,
    num_position_embeddings: 2304,
    out_hidden_size: 2048,
    patch_size: 16,
    spatial_merge_size: 2,
    temporal_patch_size: 2,
    deepstack_visual_indexes: [],
  },
});

// LFM2-8B-A1B: LFM2's layers over 2 dense layers and 22 mixtures (lfm2_moe).
const LFM2_8B_A1B = JSON.stringify({
  _name_or_path: 'LiquidAI/LFM2-8B-A1B',
  model_type: 'lfm2_moe',
  conv_L_cache: 3,
  conv_bias: false,
  hidden_size: 2048,
  intermediate_size: 7168,
  layer_types: [
    ...['conv', 'conv', 'full_attention', 'conv', 'conv', 'conv', 'full_attention', 'conv'],
    ...['conv', 'conv', 'full_attention', 'conv', 'conv', 'conv', 'full_attention', 'conv'],
    ...['conv', 'conv', 'full_attention', 'conv', 'conv', 'full_attention', 'conv', 'conv'],
  ],
  moe_intermediate_size: 1792,
  num_attention_heads: 32,
  num_dense_layers: 2,
  num_experts: 32,
  num_experts_per_tok: 4,
  num_hidden_layers: 24,
  num_key_value_heads: 8,
  use_expert_bias: true,
  vocab_size: 65536,
});

// Ling-lite: Ling 1.0's bailing_moe, every layer a mixture with two shared experts.
const LING_LITE = JSON.stringify({
  _name_or_path: 'inclusionAI/Ling-lite',
  architectures: ['BailingMoeForCausalLM'],
  model_type: 'bailing_moe',
  first_k_dense_replace: 0,
  hidden_size: 2048,
  intermediate_size: 5632,
  moe_intermediate_size: 1408,
  num_attention_heads: 16,
  num_experts: 64,
  num_experts_per_tok: 6,
  num_hidden_layers: 28,
  num_key_value_heads: 4,
  num_shared_experts: 2,
  tie_word_embeddings: false,
  use_bias: false,
  use_qkv_bias: false,
  vocab_size: 126464,
});

// Ling-mini-2.0: Ling 2.0's bailing_moe, q/k norms and a dense first layer.
const LING_MINI_2 = JSON.stringify({
  _name_or_path: 'inclusionAI/Ling-mini-2.0',
  architectures: ['BailingMoeV2ForCausalLM'],
  model_type: 'bailing_moe',
  first_k_dense_replace: 1,
  head_dim: 128,
  hidden_size: 2048,
  intermediate_size: 5120,
  moe_intermediate_size: 512,
  moe_router_enable_expert_bias: true,
  num_attention_heads: 16,
  num_experts: 256,
  num_experts_per_tok: 8,
  num_hidden_layers: 20,
  num_key_value_heads: 4,
  num_nextn_predict_layers: 0,
  num_shared_experts: 1,
  tie_word_embeddings: false,
  use_qk_norm: true,
  vocab_size: 157184,
});

// Nemotron 3 Super: Mamba-2, attention and latent mixture blocks (nemotron_h, moe_latent_size).
const NEMOTRON3_SUPER = JSON.stringify({
  _name_or_path: 'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16',
  model_type: 'nemotron_h',
  conv_kernel: 4,
  expand: 2,
  head_dim: 128,
  hidden_size: 4096,
  hybrid_override_pattern:
    'MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME',
  intermediate_size: 2688,
  mamba_head_dim: 64,
  mamba_num_heads: 128,
  mlp_hidden_act: 'relu2',
  moe_intermediate_size: 2688,
  moe_latent_size: 1024,
  moe_shared_expert_intermediate_size: 5376,
  n_groups: 8,
  n_routed_experts: 512,
  n_shared_experts: 1,
  num_attention_heads: 32,
  num_experts_per_tok: 22,
  num_key_value_heads: 2,
  num_nextn_predict_layers: 1,
  ssm_state_size: 128,
  tie_word_embeddings: false,
  use_conv_bias: true,
  vocab_size: 131072,
});

// Hunyuan-A13B as transformers' hunyuan_v1_moe reads it: per-head q/k norms, a mixture and a shared MLP.
const HUNYUAN_A13B = JSON.stringify({
  add_classification_head: false,
  architectures: ['HunYuanMoEV1ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.1,
  attention_head_dim: 128,
  bos_token_id: 1,
  cla_share_factor: 2,
  class_num: 0,
  dense_list: [4096, 0],
  eod_token_id: 127967,
  eos_token_id: 127960,
  group_limited_greedy: false,
  hidden_act: 'silu',
  hidden_size: 4096,
  image_token_id: 9,
  initializer_range: 0.02,
  intermediate_size: 3072,
  kv_lora_rank: null,
  mask_init_id: 13,
  max_position_embeddings: 32768,
  mlp_bias: false,
  model_type: 'hunyuan_v1_moe',
  moe_drop_tokens: false,
  moe_intermediate_size: [
    3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072,
    3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072, 3072,
  ],
  moe_layer_num_skipped: 0,
  moe_random_routing_dropped_token: false,
  moe_topk: [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8],
  n_group: null,
  norm_topk_prob: true,
  norm_type: 'rms',
  num_attention_heads: 32,
  num_experts: 64,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  num_media_embeds: 257,
  num_shared_expert: [
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  ],
  org_vocab_size: 128167,
  pad_id: 127961,
  pad_token_id: 127961,
  pool_type: 'last',
  position_embedding_xdrope: false,
  pretraining_tp: 1,
  q_lora_rank: null,
  qk_nope_head_dim: null,
  qk_rope_head_dim: null,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    alpha: 1000.0,
    beta_fast: 32,
    beta_slow: 1,
    factor: 1.0,
    mscale: 1.0,
    mscale_all_dim: 1.0,
    type: 'dynamic',
  },
  rope_theta: 10000.0,
  routed_scaling_factor: 1.0,
  sep_token_id: 127962,
  skip_cls_token: false,
  text_end_id: 8,
  text_start_id: 7,
  tie_word_embeddings: true,
  topk_group: null,
  torch_dtype: 'bfloat16',
  transformers_version: '4.41.2',
  use_cache: true,
  use_cla: false,
  use_mixed_mlp_moe: true,
  use_mla: false,
  use_qk_norm: true,
  use_rotary_pos_emb: true,
  v_head_dim: null,
  video_end_id: 11,
  video_start_id: 10,
  vocab_size: 128167,
  xdrope_section: null,
  head_dim: 128,
});

// MiniMax-M1 in transformers' minimax form: 70 lightning-attention layers, 10 full-attention ones.
const MINIMAX_M1 = JSON.stringify({
  architectures: ['MiniMaxForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: null,
  eos_token_id: null,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 6144,
  initializer_range: 0.02,
  intermediate_size: 9216,
  max_position_embeddings: 10240000,
  model_type: 'minimax',
  num_attention_heads: 64,
  num_experts_per_tok: 2,
  num_hidden_layers: 80,
  num_key_value_heads: 8,
  num_local_experts: 32,
  output_router_logits: false,
  rms_norm_eps: 1e-5,
  rope_theta: 10000000,
  router_aux_loss_coef: 0.001,
  router_jitter_noise: 0.0,
  shared_intermediate_size: 0,
  shared_moe_mode: 'sigmoid',
  sliding_window: null,
  tie_word_embeddings: false,
  transformers_version: '4.45.2',
  use_cache: true,
  vocab_size: 200064,
  layer_types: [
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'linear_attention',
    'full_attention',
  ],
  block_size: 256,
  full_attn_alpha_factor: 3.5565588200778455,
  full_attn_beta_factor: 1.0,
  linear_attn_alpha_factor: 3.5565588200778455,
  linear_attn_beta_factor: 1.0,
  mlp_alpha_factor: 3.5565588200778455,
  mlp_beta_factor: 1.0,
});

// Jamba 1.5 Mini: Mamba layers beside attention ones, mixtures on every second layer (jamba).
const JAMBA_15_MINI = JSON.stringify({
  architectures: ['JambaForCausalLM'],
  attention_dropout: 0.0,
  attn_layer_offset: 4,
  attn_layer_period: 8,
  bos_token_id: 1,
  eos_token_id: [2, 518],
  expert_layer_offset: 1,
  expert_layer_period: 2,
  hidden_act: 'silu',
  hidden_size: 4096,
  initializer_range: 0.02,
  intermediate_size: 14336,
  mamba_conv_bias: true,
  mamba_d_conv: 4,
  mamba_d_state: 16,
  mamba_dt_rank: 256,
  mamba_expand: 2,
  mamba_proj_bias: false,
  max_position_embeddings: 262144,
  model_type: 'jamba',
  num_attention_heads: 32,
  num_experts: 16,
  num_experts_per_tok: 2,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  num_logits_to_keep: 1,
  output_router_logits: false,
  pad_token_id: 0,
  rms_norm_eps: 1e-6,
  router_aux_loss_coef: 0.001,
  sliding_window: null,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  transformers_version: '4.40.2',
  use_cache: true,
  use_mamba_kernels: true,
  vocab_size: 65536,
});

// Each config, the name it reads under and its count as the readout writes it (tests/cpp holds the
// exact totals to the published ones).
const TEXT_MODELS = [
  [PHI_4, 'microsoft/phi-4', '14.66 B'],
  [OLMO2_7B, 'allenai/OLMo-2-1124-7B', '7.30 B'],
  [SMOLLM3_3B, 'HuggingFaceTB/SmolLM3-3B', '3.08 B'],
  [GRANITE_33_8B, 'ibm-granite/granite-3.3-8b-instruct', '8.17 B'],
  [COMMAND_R7B, 'CohereForAI/c4ai-command-r7b-12-2024', '8.03 B'],
  [GLM45_AIR, 'zai-org/GLM-4.5-Air', '106.85 B'],
  [GPT_OSS_20B, 'openai/gpt-oss-20b', '20.91 B'],
  [KIMI_K2, 'moonshotai/Kimi-K2-Instruct', '1026.41 B'],
  [LFM2_8B_A1B, 'LiquidAI/LFM2-8B-A1B', '8.34 B'],
  [LING_LITE, 'inclusionAI/Ling-lite', '16.80 B'],
  [HUNYUAN_A13B, 'HunYuanMoEV1ForCausalLM', '80.39 B'],
  [LING_MINI_2, 'inclusionAI/Ling-mini-2.0', '16.26 B'],
  [NEMOTRON3_SUPER, 'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16', '120.67 B'],
];
// Each multimodal config, its name, its trained parameters beside the frozen vision tower (the text
// tower's own) and the text tower's count alone.
const MULTIMODAL = [
  [GEMMA3_4B, 'google/gemma-3-4b-pt', '3.88 B', '3.88 B'],
  [LLAMA4_SCOUT, 'meta-llama/Llama-4-Scout-17B-16E', '107.77 B', '107.77 B'],
  [MISTRAL_SMALL_31, 'mistralai/Mistral-Small-3.1-24B-Base-2503', '23.57 B', '23.57 B'],
  [QWEN25_VL_7B, 'Qwen/Qwen2.5-VL-7B-Instruct', '7.62 B', '7.62 B'],
  [QWEN35_35B, 'Qwen/Qwen3.5-35B-A3B', '34.66 B', '34.66 B'],
  [GEMMA4_31B, 'google/gemma-4-31B', '30.70 B', '30.70 B'],
];
// Qwen2-VL's vision tower is one trainmem does not count.
const QWEN2_VL = JSON.stringify({
  model_type: 'qwen2_vl',
  hidden_size: 1536,
  intermediate_size: 8960,
  num_hidden_layers: 28,
  num_attention_heads: 12,
  num_key_value_heads: 2,
  vocab_size: 151936,
  vision_config: { model_type: 'qwen2_vl', depth: 32, embed_dim: 1280 },
});

const escaped = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe("today's families, in Chromium", () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness.close();
  });

  async function use(page, text) {
    await page.fill('#config', text);
    await page.click('#use-config');
  }

  async function readsAs(page, name, count) {
    await page.waitForFunction(
      (expected) => document.getElementById('readout').textContent.startsWith(expected),
      name,
    );
    assert.match(await readout(page), new RegExp(`× ${escaped(count)} parameters\\)`));
    assert.equal(await page.isHidden('#config-error'), true);
  }

  it("reads one config.json of each of today's text families to its count", async () => {
    const { page, problems } = await harness.openPage();
    for (const [text, name, count] of TEXT_MODELS) {
      await use(page, text);
      await readsAs(page, name, count);
    }
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads a hybrid's config to its count and says what each kind of layer keeps", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, QWEN3_NEXT);
    await readsAs(page, 'Qwen/Qwen3-Next-80B-A3B-Instruct', '79.67 B');
    assert.match(
      await readout(page),
      /Of its 48 layers, 36 are Gated DeltaNet layers, each keeping 165,706 B a token, and 12 full-attention layers, 139,410 B a token, both kinds counted tensor by tensor whichever activation model is chosen\./,
    );
    // Context parallelism splits the linear layers' heads with t: over 32, more than their 16
    // query/key heads, it waits, named, and the view stays.
    const before = await readout(page);
    await commit(page, '#cp', '32');
    assert.match(
      await page.textContent('#cp-error'),
      /Gated DeltaNet layers split their heads over t × c = 32 \(Megatron-LM's GatedDeltaNet\)/,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads Kimi Linear's config to its count, each kind's bytes, and refuses t it cannot split", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, KIMI_LINEAR);
    await readsAs(page, 'moonshotai/Kimi-Linear-48B-A3B-Instruct', '49.12 B');
    assert.match(
      await readout(page),
      /Of its 27 layers, 20 are Kimi Delta Attention layers, each keeping 308,232 B a token, and 7 full-attention layers, 153,740 B a token/,
    );
    const before = await readout(page);
    await commit(page, '#tp', '2');
    assert.match(
      await page.textContent('#tp-error'),
      /Kimi Delta Attention layers have no tensor-parallel layout in any framework trainmem models/,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads Nemotron 3 Nano's blocks to its count, each kind's bytes, and splits as MambaMixer does", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, NEMOTRON3_NANO);
    await readsAs(page, 'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', '31.58 B');
    assert.match(
      await readout(page),
      /Of its 52 layers, 23 are Mamba-2 blocks, each keeping 39,588 B a token, 23 mixture-of-experts blocks, 102,404 B a token, and 6 attention blocks, 28,292 B a token/,
    );
    // Over c 16, more than the 8 groups, it waits, named, and the view stays.
    const before = await readout(page);
    await commit(page, '#cp', '16');
    assert.match(
      await page.textContent('#cp-error'),
      /Mamba-2 layers split their heads over t × c = 16 \(Megatron-LM's MambaMixer\)/,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads LFM2's config to its count, and refuses tensor parallelism no framework defines for it", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, LFM2_12B);
    await readsAs(page, 'LiquidAI/LFM2-1.2B', '1.17 B');
    assert.match(
      await readout(page),
      /Of its 16 layers, 10 are short-convolution layers, each keeping 90,120 B a token, and 6 full-attention layers, 81,192 B a token/,
    );
    const before = await readout(page);
    await commit(page, '#tp', '2');
    assert.match(
      await page.textContent('#tp-error'),
      /short-convolution layers have no tensor-parallel layout in any framework trainmem models/,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads Jamba's config to its count, each kind's bytes, and refuses t no framework defines for it", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, JAMBA_15_MINI);
    await readsAs(page, 'JambaForCausalLM', '51.57 B');
    assert.match(
      await readout(page),
      /Of its 32 layers, 28 are Mamba layers, each keeping [\d,]+ B a token, and 4 full-attention layers, [\d,]+ B a token/,
    );
    const before = await readout(page);
    await commit(page, '#tp', '2');
    assert.match(
      await page.textContent('#tp-error'),
      /Mamba layers have no tensor-parallel layout in any framework trainmem models \(JambaConfig gives no plan\)/,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads MiniMax-M1's lightning layers to its count and each kind's bytes", async () => {
    const { page, problems } = await harness.openPage();
    await use(page, MINIMAX_M1);
    await readsAs(page, 'MiniMaxForCausalLM', '456.09 B');
    assert.match(
      await readout(page),
      /Of its 80 layers, 70 are lightning-attention layers, each keeping [\d,]+ B a token, and 10 full-attention layers, [\d,]+ B a token/,
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('reads DeepSeek-V3.2 and GLM-5 to their counts, and keeps the view when FlashAttention is turned off', async () => {
    const { page, problems } = await harness.openPage();
    await use(page, DEEPSEEK_V32);
    await readsAs(page, 'deepseek-ai/DeepSeek-V3.2', '671.88 B');
    await use(page, GLM5);
    await readsAs(page, 'zai-org/GLM-5', '743.91 B');
    assert.match(
      await readout(page),
      // GLM-5's 3 dense layers and 75 mixtures, on one stage: a layer is their mean, and says so.
      /Each of its 78 layers holds DeepSeek Sparse Attention: an indexer of 32 heads picks the 2,048 keys each query attends to\. A layer keeps [\d,]+ B a token \(the mean of the dense and mixture layers on the answered stage\), counted tensor by tensor/,
    );
    // The chart draws no curve it cannot count: DSA's layers without their fused kernels.
    const legend = () => page.evaluate(() => globalThis.trainmemPage.charts.activationsGeometry().legend);
    assert.deepEqual(
      (await legend()).filter((text) => text.includes('FlashAttention')),
      ['With FlashAttention'],
    );
    // Turned off, FlashAttention is refused by name, and the view stays.
    const before = await readout(page);
    await page.uncheck('#flash-attention');
    // The checkbox has no message box of its own: the workshop's says it.
    const shown = () =>
      page.$$eval('.error:not([hidden])', (boxes) => boxes.map((box) => box.textContent).join(' '));
    await page.waitForFunction(() => document.querySelector('.error:not([hidden])') !== null);
    assert.match(await shown(), /sparse attention is counted with its fused sparse kernels/);
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('counts a multimodal config with its vision tower, or its text tower once asked; a link keeps it', async () => {
    const { page, problems } = await harness.openPage();
    for (const [text, name, whole, textTower] of MULTIMODAL) {
      await page.uncheck('#config-text-tower');
      await use(page, text);
      // Frozen, the tower holds its weights alone beside the language model's full states.
      await page.waitForFunction(
        (expected) => document.getElementById('readout').textContent.startsWith(expected),
        name,
      );
      assert.match(
        await readout(page),
        new RegExp(`× ${escaped(whole)} trained parameters and 2 × [\\d.]+ [MB] frozen\\)`),
      );
      assert.match(
        await readout(page),
        /vision tower and projector \([\d.]+ [MB] parameters\) are held frozen/,
      );
      await page.check('#config-text-tower');
      await use(page, text);
      await readsAs(page, `${name} (text tower)`, textTower);
    }
    // The link carries the text tower as a config of its own: the reopened page counts the same.
    const reopened = await harness.openPage({ query: new URL(page.url()).search });
    await reopened.page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('(text tower)'),
    );
    assert.equal(await readout(reopened.page), await readout(page));
    // A vision tower trainmem does not count is refused by the config's control, naming the way to
    // the text tower; the view stays.
    await page.uncheck('#config-text-tower');
    const before = await readout(page);
    await use(page, QWEN2_VL);
    await page.waitForSelector('#config-error:not([hidden])');
    assert.match(
      await page.textContent('#config-error'),
      /'vision_config' describes a vision tower \("qwen2_vl"\) that trainmem does not count; .*"Text tower alone"/,
    );
    assert.equal(await readout(page), before);
    assert.deepEqual([...problems, ...reopened.problems], []);
    await page.close();
    await reopened.page.close();
  });

  it("reads Gemma 4's text tower and says what each kind of layer keeps", async () => {
    const { page, problems } = await harness.openPage();
    await page.check('#config-text-tower');
    await use(page, GEMMA4_31B);
    await readsAs(page, 'google/gemma-4-31B (text tower)', '30.70 B');
    assert.match(
      await readout(page),
      /Of its 60 layers, 10 are global attention layers, each keeping [\d,]+ B a token, and 50 sliding-window layers, [\d,]+ B a token/,
    );
    // Its logits pass through a tanh the logits figure does not hold: the readout says so.
    assert.match(await readout(page), /Its final_logit_softcapping \(30\) runs cap·tanh/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('trains the vision tower when asked, and refuses to for a text model', async () => {
    const { page, problems } = await harness.openPage();
    await use(page, GEMMA3_4B);
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('frozen'));
    const frozen = await readout(page);
    await page.check('#train-vision');
    await page.waitForFunction((before) => document.getElementById('readout').textContent !== before, frozen);
    // Trained, every parameter holds its 16 bytes: the hub's 4.30 B.
    assert.match(await readout(page), /× 4\.30 B parameters\)/);
    assert.match(
      await readout(page),
      /vision tower and projector \([\d.]+ [MB] parameters\) train with the rest/,
    );
    await page.selectOption('#model', 'llama3-8b');
    assert.equal(await page.getAttribute('#model', 'data-pending'), 'true');
    assert.match(
      await page.textContent('[data-error-default]'),
      /Llama 3 8B has no vision tower counted here/,
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("groups the model menu by family, the plate's Llama 3 sizes first", async () => {
    const { page, problems } = await harness.openPage();
    const groups = await page.$$eval('#model optgroup', (elements) =>
      elements.map((group) => [group.label, group.querySelectorAll('option').length]),
    );
    assert.deepEqual(
      groups.map(([label]) => label),
      [
        'Llama',
        'Qwen',
        'DeepSeek and Kimi',
        'GLM',
        'Gemma',
        'Liquid AI',
        'NVIDIA',
        'Mistral',
        'OpenAI',
        'Others',
      ],
    );
    assert.equal(
      await page.$$eval('#model optgroup:first-child option', (options) => options[0].value),
      'llama3-8b',
    );
    assert.equal(await page.inputValue('#model'), 'llama3-8b');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("brings a sequence the reader never set within GPT-2's learned positions, and says so", async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#model', 'gpt2');
    await page.waitForFunction(() =>
      document.getElementById('readout').textContent.startsWith('GPT-2 124M needs'),
    );
    assert.equal(await page.inputValue('#seq-len'), '1024');
    assert.match(
      await page.textContent('#url-notice'),
      /Sequence length is now 1,024 tokens: GPT-2 124M has 1,024 learned positions\. Tokens per micro-batch stays 8,192: 8 sequences of 1,024 tokens\. Set the sequence length to choose another\./,
    );
    // A sequence the reader set stays theirs: the model waits, and the message names the positions.
    await commit(page, '#seq-len', '2048');
    assert.match(await readout(page), /^GPT-2 124M needs/);
    assert.match(await page.textContent('#seq-len-error'), /GPT-2 124M has 1,024 learned positions/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("says DeepSeek-V3's MTP module is left out, and counts it once the reader trains it", async () => {
    const { page, problems } = await harness.openPage({ query: '?model=deepseek-v3' });
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('DeepSeek-V3'));
    assert.match(
      await readout(page),
      /Not trained: DeepSeek-V3 \/ R1 671B's multi-token-prediction modules \(11\.61 B parameters\)/,
    );
    await page.check('#mtp');
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('682.64 B'));
    assert.doesNotMatch(await readout(page), /Not trained/);
    // A model without one is held pending, with the reason by the model's menu;
    // unticking it lets the model in, said in words.
    await page.selectOption('#model', 'llama3-8b');
    assert.equal(await page.getAttribute('#model', 'data-pending'), 'true');
    assert.match(
      await page.textContent('[data-error-default]'),
      /Llama 3 8B has no multi-token-prediction modules/,
    );
    await page.uncheck('#mtp');
    await page.waitForFunction(() => document.getElementById('readout').textContent.startsWith('Llama 3 8B'));
    assert.match(
      await page.textContent('#url-notice'),
      /Applied your earlier choice, which the setup now allows: Model: Llama 3 8B\./,
    );
    assert.deepEqual(problems, []);
    await page.close();
  });
});
