// What to estimate: the model, the tokens, the layout, the recipe, the device and the training
// stack. These are the types every part of the core reads, at the bottom of the house: they
// include nothing of the arithmetic. Each field is a setting of settings.hpp's table, which reads
// its default from here.
#pragma once

#include <string>

#include "trainmem/models.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

// The plate's sequence length, and the bounds an input must keep to.
constexpr int kPlateSequenceLength = 8192;
constexpr int kMaxSequenceLength = 1 << 20;        // 1,048,576 tokens
constexpr int kMaxMicroBatchSequences = 1 << 16;   // 65,536 sequences
constexpr int kMaxParallelDegree = 1 << 16;        // any one of d, t, p, c, v
constexpr int kMaxGlobalBatchSequences = 1 << 24;  // 16,777,216 sequences a step
constexpr int kMaxZeroStage = 3;                   // Rajbhandari et al.: stages 1 to 3
constexpr double kDefaultHeadroomPercent = 10;     // of each device's memory kept free
constexpr double kMaxHeadroomPercent = 90;
constexpr double kMaxDevices = 1 << 24;  // d·t·p·c
// An HGX node's devices (H100, H200, B200): its NVLink domain, and the devices that share its
// host's memory.
constexpr int kDevicesPerNode = 8;
constexpr double kMaxHostCapacityGb = 1e6;
// vLLM's gpu_memory_utilization as TRL's GRPOConfig sets it (vllm_gpu_memory_utilization, 0.3
// since colocation came, trl#3394), and its bounds: above 0, at most the whole device.
constexpr double kDefaultRolloutMemoryUtilization = 0.3;
constexpr double kMinRolloutMemoryUtilization = 0.01;
// verl's gpu_memory_utilization (verl 1dda039b, verl/trainer/config/rollout/rollout.yaml).
constexpr double kVerlRolloutMemoryUtilization = 0.5;
// verl's rollout.checkpoint_engine.update_weights_bucket_megabytes: its weight sync's CUDA-IPC
// bucket, in MiB.
constexpr double kVerlWeightSyncBucketMiB = 2048;
// verl's critic's token budget a micro-batch (verl 1dda039b, verl/workers/config/critic.py,
// CriticConfig.ppo_infer_max_token_len_per_gpu), for both its passes.
constexpr int kVerlCriticTokenBudget = 32768;
// TRL's GRPOConfig max_completion_length: the completion's tokens of each sequence (512 since
// TRL 286d19fc7, after v1.9.0).
constexpr int kDefaultCompletionLength = 512;
// Megatron-LM's --make-vocab-size-divisible-by default (megatron/training/arguments.py).
constexpr int kMegatronVocabSizeDivisibleBy = 128;
// PyTorch's max_split_size_mb must be above kLargeBuffer's 20 MiB (CUDAAllocatorConfig); a bound
// of our own above it, 16 TiB.
constexpr int kMinAllocatorSplitMb = 21;
constexpr int kMaxAllocatorSplitMb = 1 << 24;
// DeepSpeed's bucket defaults, in elements (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig:
// reduce_bucket_size, prefetch_bucket_size, param_persistence_threshold), and the largest read.
constexpr double kDeepSpeedReduceBucket = 5e8;
constexpr double kDeepSpeedPrefetchBucket = 5e7;
constexpr double kDeepSpeedPersistenceThreshold = 1e5;
constexpr double kMaxDeepSpeedBucket = 1e12;

// How the model is spread over devices; all 1 is one device, the plate's view.
struct ParallelLayout {
  int data_parallel = 1;            // d
  int zero_stage = 0;               // 0–3 (Rajbhandari et al.): what the d·c replicas shard
  int tensor_parallel = 1;          // t
  bool sequence_parallel = false;   // Korthikanti et al.: split what TP leaves whole, too
  int pipeline_parallel = 1;        // p, 1F1B schedule
  int virtual_pipeline_stages = 1;  // v > 1: the interleaved schedule (Narayanan et al. 2021)
  // Under Megatron-LM's interleaved schedule, the micro-batches each virtual stage runs in a row
  // (--microbatch-group-size-per-virtual-pipeline-stage, ModelParallelConfig; 0 means p, its
  // default).
  int microbatch_group_size = 0;
  int context_parallel = 1;  // c: the sequence split over c devices
  // A mixture of experts' routed experts (Megatron-LM's expert parallelism): spread over ep
  // devices and each split over etp, carved out of the same d·t·c devices; 0 for etp means t, as
  // Megatron-LM's --expert-tensor-parallel-size defaults to --tensor-model-parallel-size.
  int expert_parallel = 1;         // ep
  int expert_tensor_parallel = 0;  // etp
  // Uneven pipeline stages (Megatron-LM's --decoder-first-pipeline-num-layers and
  // --decoder-last-pipeline-num-layers): the layers of the first and of the last stage, the rest
  // split evenly over the stages between; 0 for either means it takes the middle stages' share.
  // Both 0 is the even split, L/p layers a stage.
  int pipeline_first_stage_layers = 0;
  int pipeline_last_stage_layers = 0;
};

constexpr double kMaxCapacityFactor = 16;

// etp as the layout uses it: t when 0.
inline int expert_tensor_parallel_of(const ParallelLayout& layout) {
  return layout.expert_tensor_parallel > 0 ? layout.expert_tensor_parallel : layout.tensor_parallel;
}

// How a pipeline splits its layers (Megatron-LM's get_num_layers_to_build): the first and last
// stages' layers as set, and what is left split evenly over the stages without a count of their
// own. `middle` is 0 when no stage is left (p 2 with both set); `even` when neither is set. The
// split of a checked setup is whole; check.cpp refuses one that is not.
struct PipelineSplit {
  double first = 0;
  double middle = 0;  // each middle stage's layers
  double last = 0;
  bool even = true;
};
inline PipelineSplit pipeline_split(const ParallelLayout& layout, int num_layers) {
  const double p = layout.pipeline_parallel;
  const int first = layout.pipeline_first_stage_layers;
  const int last = layout.pipeline_last_stage_layers;
  PipelineSplit split;
  split.even = first == 0 && last == 0;
  const double stages_left = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  split.middle =
      stages_left > 0 ? (static_cast<double>(num_layers) - first - last) / stages_left : 0;
  split.first = first > 0 ? first : split.middle;
  split.last = last > 0 ? last : split.middle;
  return split;
}

// Whether every pipeline stage (every chunk of the interleaved schedule) of a hybrid
// (models.hpp, hybrid_linear_attention) holds its kinds of layer in the model's ratio, so that
// the model's mean layer is each stage's.
bool hybrid_stages_hold_model_mix(const ModelShape& shape, const ParallelLayout& layout);

// The layout's devices, d·t·p·c (expert parallelism is carved out of d·t·c).
inline double num_devices(const ParallelLayout& layout) {
  return static_cast<double>(layout.data_parallel) * layout.tensor_parallel *
         layout.pipeline_parallel * layout.context_parallel;
}

// What to estimate. Defaults are the plate's view. Each field is a setting of settings.hpp's table
// (which reads these defaults), except the custom model, which a config.json gives.
struct TrainingSetup {
  std::string model_id = "llama3-8b";  // a preset's id, or kCustomModelId
  ModelShape custom_model;             // the model when model_id is kCustomModelId
  int sequence_length = kPlateSequenceLength;
  int micro_batch_sequences = 1;  // sequences per micro-batch
  // The sequences of an optimiser step over every data-parallel replica (Megatron-LM's
  // --global-batch-size): a pipeline's micro-batches a step, n = global ÷ (micro-batch × d)
  // (get_num_microbatches), bound how many each stage holds in flight. 0: as many as the schedule
  // fills, n ≥ p·v.
  int global_batch_sequences = 0;
  bool flash_attention = true;
  ParallelLayout layout;
  // The pipeline stage whose device the estimate answers for: 0 the most loaded; 1 to p counted
  // from the first, -1 to -p from the last (-1 the last, where the loss is). Whether the run fits
  // is judged on the most loaded stage whichever is answered.
  int pipeline_stage = 0;
  Recompute recompute = Recompute::kNone;
  ActivationModel activation_model = ActivationModel::kKorthikanti;  // how activations are counted
  Dropout dropout = Dropout::kModel;  // whether the layers save dropout masks (options.hpp)
  Optimizer optimizer = Optimizer::kAdam;
  Precision precision = Precision::kBf16Mixed;
  bool logits = false;
  Loss loss = Loss::kVocabParallel;      // how the loss over the logits is computed
  int loss_chunks = kDefaultLossChunks;  // the chunked loss's chunks (num_output_chunks)
  // Train the model's multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers,
  // Megatron-LM's --mtp-num-layers): their weights and states, a layer's activations and their
  // logits each, on the last pipeline stage.
  bool mtp = false;
  // Train a multimodal model's vision tower and projector (vision_parameters) with the rest; it is
  // held frozen otherwise, its weights alone. Images' activations are not counted.
  bool train_vision = false;
  std::string device_id = "h100";
  double custom_capacity_gb = 80;  // used when device_id is "custom"
  // The share of each device's memory kept free when asking whether a layout fits: what the
  // estimate leaves out (the caching allocator's reserve and fragmentation, the CUDA context,
  // communication buffers; How close is this? shows measured peaks 17% above the estimate) needs
  // room. A stated margin (docs/formulas.md), to be replaced by a stack's reserved-peak estimate.
  double headroom_percent = kDefaultHeadroomPercent;
  // Fine-tuning (fine_tuning.hpp): LoRA adapters of this rank on `lora_targets` (0: every
  // parameter trains), the frozen base's linear weights held as `base_weights`, and what is held
  // in the host's memory instead of the device's.
  int lora_rank = 0;
  LoraTargets lora_targets = LoraTargets::kAttention;
  double lora_dropout = 0;  // PEFT's lora_dropout: above 0 each adapter saves a dropped input
  BaseWeights base_weights = BaseWeights::kBf16;
  Offload offload = Offload::kNone;
  bool offload_activations = false;
  // The host's memory per node in GB (10^9 bytes), which its devices (up to kDevicesPerNode)
  // share: what offloading holds there is checked against it; 0 leaves it unchecked.
  double host_capacity_gb = 0;
  // A mixture's routed tokens: 0 for dropless routing, counted at balanced load (each device's
  // experts receive k copies of its tokens); C > 0 pads each expert's buffer to C times that
  // (GShard's and Switch's capacity factor; Megatron-LM's --moe-expert-capacity-factor with
  // --moe-pad-expert-input-to-capacity).
  double capacity_factor = 0;
  // What trains the model (options.hpp): ideal counts the idealised step, the plate's; the others
  // add what their framework, the runtime and the caching allocator hold (stacks/).
  Stack stack = Stack::kIdeal;
  // torchtitan's enable_fsdp_float8_all_gather (under fp8-mixed): FSDP2 gathers the linear
  // weights in FP8, cast before the all-gather (torchao/float8/fsdp_utils.py).
  bool fp8_all_gather = false;
  // DeepSpeed's overlap of the gradient reduction with the backward pass (options.hpp).
  OverlapComm overlap_comm = OverlapComm::kDefault;
  // DeepSpeed's buckets, in elements (runtime/zero/config.py's defaults): reduce_bucket_size, the
  // gradients reduced at once (ZeRO 1 to 3); stage3_prefetch_bucket_size, the parameters gathered
  // ahead; stage3_param_persistence_threshold, parameters this small or smaller kept gathered
  // (ZeRO 3). transformers' Trainer fills "auto" with h², 0.9·h² and 10·h.
  double zero_reduce_bucket = kDeepSpeedReduceBucket;
  double zero_prefetch_bucket = kDeepSpeedPrefetchBucket;
  double zero_persistence_threshold = kDeepSpeedPersistenceThreshold;
  // Megatron-LM's vocabulary padding (stacks/stack_run.hpp): --make-vocab-size-divisible-by, and
  // --tokenizer-type NullTokenizer, whose vocabulary is --vocab-size and its end-of-document token.
  int make_vocab_size_divisible_by = kMegatronVocabSizeDivisibleBy;
  bool eod_token = false;
  // Megatron-LM's --cp-comm-type under context parallelism (options.hpp).
  CpCommType cp_comm_type = CpCommType::kP2p;
  // Under a2a+p2p, the all-to-all group's devices: the first of Megatron-LM's
  // --hierarchical-context-parallel-sizes (the ring's is c over it).
  int cp_a2a_size = 1;
  // Megatron-LM's --moe-token-dispatcher-type for a mixture of experts (options.hpp).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // Megatron-LM's router and the dispatcher's bookkeeping (activations/megatron_routing.cpp):
  // --moe-router-dtype, --moe-router-score-function with --moe-router-pre-softmax; an auxiliary
  // load-balancing loss with a coefficient above 0 (--moe-router-load-balancing-type aux_loss or
  // seq_aux_loss, --moe-aux-loss-coeff), the z-loss (--moe-z-loss-coeff); Transformer Engine's
  // fused router (--moe-router-fusion) and fused permutation (--moe-permute-fusion).
  RouterDtype moe_router_dtype = RouterDtype::kInput;
  RouterScore moe_router_score = RouterScore::kSoftmax;
  bool moe_aux_loss = false;
  bool moe_z_loss = false;
  bool moe_router_fusion = false;
  bool moe_permute_fusion = false;
  // --moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity: the router drops
  // what exceeds the capacity, and the dispatcher permutes the kept copies unpadded (at balanced
  // load C of them a token below 1, all of them at 1 or more, where capacity_factor reads 0).
  bool moe_capacity_unpadded = false;
  // Megatron-LM's --enable-experimental (megatron/core/config.py, ENABLE_EXPERIMENTAL): its
  // experimental kernels run; of those, only the flex dispatcher's fused indices-to-multihot
  // (beside --moe-permute-fusion) saves anything of its own (megatron_routing.cpp).
  bool megatron_experimental = false;
  // Megatron-LM's --defer-embedding-wgrad-compute: the last pipeline stage keeps each
  // micro-batch's output-layer input and gradient until the step's end, where it computes the
  // output layer's weight gradient; --wgrad-deferral-limit, only the first that many (0: all).
  bool defer_embedding_wgrad = false;
  int wgrad_deferral_limit = 0;
  // Megatron-LM's --num-distributed-optimizer-instances: the distributed optimiser's copies over
  // the data-parallel ranks, each sharding its state over d·c / k of them (and the experts' over
  // their data-parallel group / k): parallel_state.py, intra_partial_data_parallel_size.
  int optimizer_instances = 1;
  // Transformer Engine's FP8 recipe under fp8-mixed (options.hpp).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  // Megatron-LM's --fp8-param-gather under fp8-mixed: Transformer Engine builds the linear layers'
  // weights as FP8 tensors (fp8_model_init), the FP8 copy is the parameter and no BF16 one is
  // kept; the distributed optimiser gathers them in FP8 and casts its FP32 shards into them.
  bool fp8_param_gather = false;
  // Under nvfp4-mixed, the share of the decoder's last layers kept in BF16: ceil(L × share) of
  // them (fp8.hpp, nvfp4_layers; torchtitan's recipe keeps 0.15).
  double nvfp4_bf16_tail = kNvfp4DefaultBf16TailShare;
  // Megatron-LM's --grad-reduce-in-bf16: the main-gradient buffer in BF16, not FP32
  // (arguments.py turns accumulate_allreduce_grads_in_fp32 off); the optimiser's step copies each
  // shard's gradient to FP32 (distrib_optimizer.py, _copy_model_grads_to_main_grads).
  bool grad_reduce_in_bf16 = false;
  // Megatron-LM's --log-num-zeros-in-grad: at each optimiser step count_zeros_fp32
  // (optimizer/clip_grads.py) counts each main gradient's zeros, a bool copy of one at a time.
  bool log_num_zeros_in_grad = false;
  // Megatron-LM's --overlap-grad-reduce: the distributed optimiser's gradient buffers in buckets of
  // max(4·10⁷, 10⁶·d·c) elements on the first pipeline stage (one bucket a buffer without it),
  // which sets how a large weight's gradient shards over the ranks.
  bool overlap_grad_reduce = false;
  // Megatron-LM's --empty-unused-memory-level: torch.cuda.empty_cache() after each step's forward
  // and backward passes (1), and after its optimiser step too (2) (training.py, train_step).
  int empty_cache_level = 0;
  // Megatron-LM's --no-create-attention-mask-in-dataloader: without it (the default) the data
  // loader makes each micro-batch's causal mask, a b × 1 × s × s boolean tensor, which get_batch
  // moves to the device (pretrain_gpt.py; megatron/core/datasets/gpt_dataset.py,
  // _get_ltor_masks_and_position_ids) on the first and last pipeline stages.
  bool no_dataloader_attention_mask = false;
  // Megatron-LM's --init-model-with-meta-device: the model is built on the meta device, so
  // Megatron-FSDP makes its buffers without the whole BF16 model on the device first
  // (training.py, get_model); without Megatron-FSDP the model is materialised whole all the same.
  bool meta_device_init = false;
  // Megatron-LM's --fsdp-double-buffer (implied by --use-nccl-ub): Megatron-FSDP gathers each
  // layer into one of two slots, and makes its unsharded gradients in two more, each a layer's,
  // kept for the whole run (param_and_grad_buffer.py, FixedPoolAllocator); one layer prefetched.
  bool fsdp_double_buffer = false;
  // Megatron-LM's --no-gradient-accumulation-fusion: Transformer Engine's GEMMs (and the output
  // layer's) return each weight's gradient as a tensor of its own, added to the main gradient by
  // the parameter's hook and freed, where fused they write into it (and TE keeps a dummy wgrad
  // per weight shape).
  bool no_gradient_accumulation_fusion = false;
  // Megatron-LM's --recompute-modules beyond core_attn (selective recomputation's core attention,
  // Recompute::kSelective), each a module of the layer run again in the backward pass
  // (TransformerConfig.recompute_modules at 23e00ed; activations/recompute_modules.cpp):
  //   mlp             the dense layers' MLP, whole from its input (tensor_parallel.checkpoint)
  //   moe             the mixture layers' MoE layer, whole from the pre-MLP norm's output
  //   moe_act         the routed experts' activation: its output dropped (CheckpointWithoutOutput)
  //   shared_experts  the shared experts, whole from their input
  //   layernorm       the norms Transformer Engine does not fuse into a linear layer (latent
  //                   attention's input norm, a mixture layer's pre-MLP norm): their outputs
  //                   dropped
  //   mla_up_proj     latent attention's up-projections and RoPE: the queries, keys and values
  //                   dropped, the latents kept
  bool recompute_mlp = false;
  bool recompute_moe = false;
  bool recompute_moe_act = false;
  bool recompute_shared_experts = false;
  bool recompute_layernorm = false;
  bool recompute_mla_up_proj = false;
  // What torch.compile compiles (options.hpp): the torchtitan stack's.
  Compile compile = Compile::kOff;
  // torchtitan's fuse_qkv (its Llama 3, Qwen3 and gpt-oss models' default since 3396a4b37, June
  // 2026): one wqkv matmul for the queries, keys and values, so a block runs five matmuls and the
  // per-op policy saves wqkv's whole output (activations.hpp, selective_op_saved_tensors).
  bool fused_qkv = false;
  // accelerate's FSDP version under the hf stack's ZeRO 3 (options.hpp).
  FsdpVersion fsdp_version = FsdpVersion::kFsdp1;
  // The optimiser's step in the backward pass (torchtune's optimizer_in_bwd): each parameter is
  // stepped by its gradient's hook and the gradient freed, so the largest parameter's gradient is
  // the most held at once. On one device, training every parameter, under the ideal stack.
  bool optimizer_in_backward = false;
  // bitsandbytes' paged optimisers (transformers' optim paged_adamw_32bit and paged_adamw_8bit;
  // bitsandbytes/optim/optimizer.py, Optimizer8bit.get_state_buffer): the state of each parameter
  // of 10^5 elements or more in cudaMallocManaged memory, outside PyTorch's caching allocator. On
  // the device until memory runs short, when its pages move to the host. The hf stack's.
  bool paged_optimizer = false;
  // RL post-training: the engine that generates the rollouts on the trainer's devices
  // (options.hpp), and vLLM's gpu_memory_utilization, the share of each device's total memory its
  // weights, activations and KV cache take (rollout.hpp).
  Rollout rollout = Rollout::kNone;
  // The RL trainer around it (options.hpp): TRL's GRPOTrainer, or verl's hybrid engine.
  RlTrainer rl_trainer = RlTrainer::kTrl;
  // verl's log_prob_micro_batch_size_per_gpu: the sequences a device runs at once in its
  // log-probability passes, the actor's and the reference's (0: the micro-batch's).
  int log_prob_micro_batch_sequences = 0;
  // verl's data.train_batch_size × rollout.n: the sequences each step generates over every device
  // at once, spread over its vLLM engines (0: the global batch's).
  int rollout_batch_sequences = 0;
  // verl's critic (algorithm.adv_estimator=gae, PPO's value model): a second FSDP1 model of the
  // actor's body with a value head, trained beside it on the same devices (rollout.hpp).
  bool critic = false;
  double rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  // TRL's vllm_max_model_length: the longest request vLLM's KV cache must serve to start (0: None,
  // the model config's positions).
  int rollout_max_model_length = 0;
  // TRL's vllm_tensor_parallel_size: each engine split over this many consecutive devices, which
  // generate their prompts together.
  int rollout_tensor_parallel = 1;
  // TRL's vllm_enable_sleep_mode: vLLM asleep (level 2, its weights and KV cache released)
  // through the trainer's log-probabilities and update, woken for each generation after the
  // trainer empties its cache.
  bool rollout_sleep_mode = false;
  // The engine's prefix caching as the trainer starts it: off for a hybrid by vLLM's default
  // under TRL, which passes none; on under verl (rollout.enable_prefix_caching, True by default).
  // Under vLLM it pages a hybrid's recurrent state as it caches prefixes (rollout.cpp,
  // vllm_hybrid_cache): two blocks a sequence in each state group, not one. No bearing on a model
  // of attention alone, nor on what is counted of SGLang's pool (its radix cache).
  bool rollout_prefix_caching = false;
  // TRL's GRPOTrainer with beta above 0: the KL term's reference model, whose log-probabilities it
  // computes before each update (under full training a frozen copy of the model, loaded as the
  // policy is; under LoRA the base with the adapters disabled).
  bool reference_model = false;
  // TRL's max_completion_length under GRPO's loss: the last tokens of each sequence, after its
  // prompt, whose logits the loss computes.
  int completion_length = kDefaultCompletionLength;
  // PEFT's prepare_model_for_kbit_training (peft/utils/other.py), as QLoRA scripts call it: every
  // parameter that is not 4- or 8-bit (the embedding, the norms, the output layer) upcast to FP32,
  // so the residual stream runs in FP32, and gradient checkpointing on. The hf stack's, for a
  // quantised base under full recomputation.
  bool kbit_prep = false;
  // TRL 0.13 to 0.21's SFTTrainer after prepare_model_for_kbit_training, for a 4-bit model on one
  // device with bf16=True: peft_module_casting_to_bf16 (trl/trainer/utils.py) casts the embedding
  // and the output layer back to BF16 and keeps the norms in FP32, so the residual stream still
  // runs in FP32. TRL 0.22 on calls neither. The hf stack's, with kbit_prep.
  bool kbit_cast_back = false;
  // torchtune's custom_sharded_layers: ['tok_embeddings', 'output'] (training/_distributed.py,
  // get_shard_conditions), as its Llama 3, 3.1 and 3.3 full configs set it (v0.6.1; its 70B LoRA
  // configs leave it commented out): under its distributed recipes the embedding and the output
  // layer each their own FSDP2 unit, gathered for their own passes, where otherwise they stay in
  // the root unit, gathered for the whole step. Untied embeddings only.
  bool custom_sharded_layers = false;
  // Gradient checkpointing through torch.utils.checkpoint with use_reentrant=True: transformers
  // 4.x's Trainer default (gradient_checkpointing_kwargs unset; transformers 5 and TRL default to
  // use_reentrant=False since January 2026, transformers#43203, trl#4811). Under accelerate's
  // FSDP1 with LoRA each rebuilt layer's input is a leaf that FSDP's reshard-only hook holds,
  // with its gradient, to the backward pass's end. The hf stack's, under full recomputation.
  bool reentrant_checkpointing = false;
  // transformers' Trainer without bf16 (TrainingArguments bf16=False) over a model loaded in BF16:
  // no autocast, so PEFT's FP32 adapters (peft/tuners/lora/layer.py, Linear.forward: x =
  // x.to(lora_A.weight.dtype)) run in FP32 and save FP32 inputs and intermediates where bf16
  // autocast saves BF16 copies. The hf stack's, in bf16 precision.
  bool no_autocast = false;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: PyTorch's caching allocator maps each
  // stream's pool as one growing segment (allocator.hpp), which changes the reserved peak. The
  // stacks' (each replays its step through the allocator); the idealised step has none.
  bool expandable_segments = false;
  // PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N: blocks of N MiB or more are not split for smaller
  // requests (allocator.hpp); 0 is PyTorch's default, no limit. Above 20 when set, as PyTorch
  // requires. The stacks' too.
  int max_split_size_mb = 0;
};

// The model a setup names: the preset with its model_id, or its custom_model when model_id is
// kCustomModelId (checked by estimate_memory, not here); nullptr for an unknown id. Every entry
// point finds its model through this one function.
const ModelShape* resolve_model(const TrainingSetup& setup);

// The device a setup names: a row of the catalogue, or the custom device with its own capacity,
// named by it ("Custom 2.5 GB", never rounded to another size). An unknown id, which the checks
// refuse (check_setup), names a device of no memory and no FP8 weight copies: never another
// device's figures.
Device device_of(const TrainingSetup& setup);

// The sequences a micro-batch moves by: 2 under DPO's loss (TRL's DPOTrainer runs each pair's
// chosen and rejected sequences together; check_dpo_pairs refuses an odd count), else 1.
inline int micro_batch_step(const TrainingSetup& setup) {
  return setup.logits && setup.loss == Loss::kDpo ? 2 : 1;
}

// ZeRO 2 and 3 under the megatron stack are Megatron-FSDP's (--use-megatron-fsdp) optim_grads and
// optim_grads_params sharding strategies; ZeRO 1 is the distributed optimiser.
inline bool megatron_fsdp(const TrainingSetup& setup) {
  return setup.stack == Stack::kMegatron && setup.layout.zero_stage >= 2;
}

// Megatron-LM's --recompute-modules beyond core_attn, each once: its name as the flag writes it
// and its switch in TrainingSetup (whose setting is "recompute-" and the name, '_' as '-').
struct RecomputeModule {
  const char* name;
  bool TrainingSetup::*member;
};
inline constexpr RecomputeModule kRecomputeModules[] = {
    {"mlp", &TrainingSetup::recompute_mlp},
    {"moe", &TrainingSetup::recompute_moe},
    {"moe_act", &TrainingSetup::recompute_moe_act},
    {"shared_experts", &TrainingSetup::recompute_shared_experts},
    {"layernorm", &TrainingSetup::recompute_layernorm},
    {"mla_up_proj", &TrainingSetup::recompute_mla_up_proj}};

// Any of them: the table's switches written out, as the first view's module reads this for its
// layout's words and a loop over the table costs it 90 B more (recompute_modules_test.cpp checks
// each of the table's modules here).
inline bool recomputes_modules(const TrainingSetup& setup) {
  return setup.recompute_mlp || setup.recompute_moe || setup.recompute_moe_act ||
         setup.recompute_shared_experts || setup.recompute_layernorm || setup.recompute_mla_up_proj;
}

// The modules beyond core_attn, as --recompute-modules writes them: "mlp moe layernorm".
std::string recompute_modules_text(const TrainingSetup& setup);

// Layers counted tensor by tensor (the llama-block model): as chosen, or under Megatron-LM's
// recompute modules, which Korthikanti's sum does not split into modules.
inline bool layers_tensor_by_tensor(const TrainingSetup& setup) {
  return setup.activation_model == ActivationModel::kLlamaBlock || recomputes_modules(setup);
}

// "d 8 (ZeRO-3 over d·c = 8) × t 8 (SP) × p 2 × c 1 = 128 devices, recompute selective".
std::string format_layout(const TrainingSetup& setup);

// The stage a setup answers for, from 0 (the first); -1 for the most loaded. Checked setups only:
// |pipeline_stage| ≤ p.
inline int answered_stage_index(const TrainingSetup& setup) {
  if (setup.pipeline_stage == 0) return -1;
  return setup.pipeline_stage > 0 ? setup.pipeline_stage - 1
                                  : setup.layout.pipeline_parallel + setup.pipeline_stage;
}

}  // namespace trainmem
