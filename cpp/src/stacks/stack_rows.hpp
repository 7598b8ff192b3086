// Each training stack's traits, one row each: what its framework holds per parameter, how it
// shards, how it runs FP8 and the loss, what it is modelled for (check.cpp refuses the rest with
// the row's words), and its replayed step. Adding a stack is adding a row (and its step).
#pragma once

#include <string>
#include <vector>

#include "trainmem/options.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Who runs fp8-mixed's GEMMs: Transformer Engine's delayed-scaling recipe (fp8.hpp: FP8 weight
// copies, scaling state, FP8 saved inputs), or torchao's Float8Linear (torchao/float8/
// float8_linear.py, matmul_with_hp_or_float8_args: it saves the BF16 input and casts again in the
// backward pass, with dynamic tensor-wise scales, no amax history and no weight cache).
enum class Fp8Engine { kTransformerEngine, kTorchao };

// The engine as a sentence names it: "Transformer Engine", "torchao's Float8".
const char* fp8_engine_name(Fp8Engine engine);

struct StackRow {
  Stack stack;
  // Bytes per parameter the framework holds where they differ from the precision's (0: the
  // precision's), and whether it keeps a master copy.
  double weight_bytes = 0;
  double gradient_bytes = 0;
  bool master_weights = true;
  const char* state_source = "";  // why, where they differ
  // FSDP2 shards the parameters at either of its ZeRO stages, 2 or 3: the weights are counted as
  // ZeRO 3 shards them.
  bool shards_weights = false;
  // Modelled for: ZeRO stages from `min_zero_stage` to `max_zero_stage` over at least
  // `min_shards` data- and context-parallel devices, full training on the device in bf16-mixed
  // (and fp8-mixed where `fp8`), tensor and expert parallelism where `tensor_parallel`, and its
  // own loss where `own_loss`. Each refusal's words.
  int min_zero_stage = 0;
  int max_zero_stage = 3;
  // The ZeRO stage the fewest-devices search tries the stack at first, on two devices, when the
  // setup's own layout is refused (fit.cpp).
  int first_zero_stage = 3;
  double min_shards = 1;
  const char* zero_refusal = "";
  bool fp8 = true;
  // DeepSpeed's BF16 master weights and optimiser state (bf16-master), under its ZeRO stages.
  bool bf16_master = false;
  Fp8Engine fp8_engine = Fp8Engine::kTransformerEngine;
  // The optimisers it runs; others are refused with its words.
  std::vector<Optimizer> optimizers = {Optimizer::kAdam, Optimizer::kAdam8bit,
                                       Optimizer::kAdafactor, Optimizer::kSgdMomentum};
  const char* optimizer_refusal = "";
  // The losses it computes, its default first; empty: any (the ideal step, DeepSpeed).
  std::vector<Loss> losses = {};
  const char* loss_refusal = "";
  bool tensor_parallel = true;
  const char* layout_refusal = "";
  // Tensor parallelism as DTensor runs it (torchtitan's apply_tp, torch/distributed/tensor/
  // parallel/style.py): sequence parallelism always on, and each norm's output all-gathered
  // (PrepareModuleInput, Shard(1) to Replicate) before Q, K, V and gate and up, which save the
  // gathered tensor, whole on every rank; Megatron-LM saves its shard and gathers it again.
  bool dtensor_tensor_parallel = false;
  bool fine_tuning = true;  // LoRA and a quantised base
  bool offloading = true;   // offloading to the host
  // torchtune's: the saved activations offloaded (never the optimiser), under activation
  // checkpointing alone (enable_activation_offloading needs enable_activation_checkpointing).
  bool offloads_activations_only = false;
  // DeepSpeed's ZeRO-Offload (runtime/zero/stage_1_and_2.py cpu_offload, stage3.py
  // offload_optimizer and offload_param): the states alone, never the activations; the optimiser's
  // under ZeRO 2 or 3, the parameters' too under ZeRO 3. No gradient partition stays on the device
  // (each layer's gradients pass through the reduce bucket to the host's buffer), and offloaded
  // parameters keep no partition there either (each layer is fetched whole for its passes).
  bool zero_offload = false;
  // torchtune's: its single-device recipes on one device (ZeRO 0), its distributed ones with
  // FSDP2 over more (ZeRO 3: fully_shard's reshard_after_forward=True, the configs' default);
  // other stages refused with zero_refusal. And one dtype for every tensor (dtype: bf16 or fp32;
  // no mixed precision, no master copy).
  bool fsdp_across_devices = false;
  bool single_dtype = false;
  bool steps_in_backward = false;  // torchtune's optimizer_in_bwd
  // torchtune's modules as written, which eager (compile off) save more than fused kernels
  // (torchtune at 1814feb17, November 2024, torchtune/modules): RMSNorm computed op by op in
  // FP32 (rms_norm.py: x.float(), its square's mean, rsqrt, the product cast back, then × scale)
  // keeps its FP32 input and its BF16 normalised input besides 1/RMS; FeedForward
  // (feed_forward.py) keeps SiLU's output apart from the product; and MultiHeadAttention
  // (attention.py) expands K and V to every query head before SDPA, which keeps them so.
  bool eager_modules = false;
  // torchtitan's FeedForward and GroupedExperts (torchtitan/models/common/feed_forward.py and
  // moe.py, b5bcd76c) run w2(F.silu(w1(x)) * w3(x)) as written: uncompiled, SiLU saves its input
  // and the product saves SiLU's output beside w3's, four tensors of the MLP's width (a fused
  // SwiGLU keeps three).
  bool silu_apart = false;
  // The words that refuse any precision but bf16, under single_dtype.
  const char* precision_refusal = "";
  bool int8_base = true;  // bitsandbytes' LLM.int8() base weights under LoRA
  // Data parallelism alone (DDP): tensor, pipeline, context and expert parallelism refused with
  // layout_refusal.
  bool data_parallel_only = false;
  // PEFT's: the adapters upcast to FP32 (autocast_adapter_dtype, on by default), with their
  // gradients and AdamW's moments; each adapter's FP32 input cast to BF16 by the autocast and
  // saved (stage.cpp).
  bool fp32_adapters = false;
  // transformers' loading: a model loaded in FP32 under bf16 autocast (bf16-mixed, full training
  // without FSDP).
  bool transformers_loading = false;
  // The model is transformers' own modules (modeling_<type>.py), under Trainer or TRL: a
  // hybrid's linear mixers run as transformers runs them, on the kernels mixers.cpp counts.
  bool transformers_modules = false;
  // accelerate's FSDP1 as the hf stack runs it: ZeRO 0 (DDP) or 3 (FULL_SHARD) alone; refused
  // with zero_refusal.
  bool full_shard_only = false;
  // Megatron-LM's own rules (megatron/training/arguments.py, validate_args): its distributed
  // optimiser runs over one data-parallel rank, sharding nothing; it turns sequence parallelism
  // off at tensor parallelism 1; and it pads the vocabulary to a multiple of
  // --make-vocab-size-divisible-by × t (megatron/training/tokenizer/tokenizer.py,
  // _vocab_size_with_padding), which the settings make-vocab-size-divisible-by and
  // eod-token set (stack_run.hpp).
  bool zero_over_one_rank = false;
  const char* one_rank_note = "";  // said where ZeRO runs over one rank
  bool drops_lone_sequence_parallel = false;
  bool pads_vocabulary = false;
  // Its frameworks' own switches (torch.compile, overlap_comm, …) are settings whose rows name the
  // stacks that have them (settings.cpp).
  // torch.distributed.pipelining as torchtitan runs it: p micro-batches a step
  // (build_pipeline_schedule: pipeline_parallel_microbatches unset), which cut its schedules'
  // warm-up, and the virtual stages split unevenly (generate_split_points), so the first and last
  // stages' layers are each device's whatever the virtual stages; elsewhere a step runs as many
  // micro-batches as the schedule fills, and Megatron-LM's rule splits each device's layers evenly
  // over its virtual stages.
  bool torch_pipelining = false;
  // torchtitan's mixture of experts (torchtitan/models/common/moe.py and token_dispatcher.py at
  // b5bcd76c, August 2026): TokenChoiceTopKRouter's gate under autocast(float32), its FP32 scores,
  // the dispatcher's index tensors, and a combine that multiplies the experts' outputs, upcast to
  // FP32, by the routing scores (llama_block.cpp saves what each keeps). Under expert parallelism
  // each routed expert stays whole on its rank (the sparse mesh is efsdp × ep, parallel_dims.py),
  // and FSDP2 shards the experts over efsdp = dp_shard·cp·tp / ep; under tensor parallelism
  // without it each expert is split over the t ranks (moe_sharding.py, llama_block.cpp).
  bool torchtitan_mixture = false;
  // Megatron-LM's mixture of experts (megatron/core/transformer/moe/router.py, moe_utils.py,
  // token_dispatcher.py and experts.py at 23e00ed): what its router, its dispatcher's
  // permutation and its experts' weighted activation save of the routing (megatron_routing.cpp).
  bool megatron_routing = false;
  // Whether its replay follows the activations' gradients through the backward pass (the
  // StepDevice's gradient_tensors).
  bool follows_gradients = false;
  // Whether its step is replayed through the allocator (stack.cpp, each framework's step); not the
  // idealised step's. The steps stand apart from these traits, which the first view's arithmetic
  // reads without them.
  bool replayed = false;
};

const StackRow& stack_row(Stack stack);

// The sentences a setup brings under its stack: fp32's activations counted at 16-bit sizes, under
// accelerate's FSDP the trained parameters' dtype, and under the hf stack DPO's pairs and
// reference. From the rows' own file: the first view's module (stack_row_plate.cpp), whose setups
// are bf16-mixed under the ideal step, says none, and carries none of their words.
std::vector<std::string> stack_notes(const TrainingSetup& asked);

// The idealised step's row (stack_rows.cpp), the first of stack_row's (stack_row_table.cpp) and
// the only one the first view's module holds (stack_row_plate.cpp).
StackRow ideal_stack_row();

// Whether fp8-mixed runs as Transformer Engine runs it (fp8.hpp): under a stack whose FP8 engine
// it is.
bool transformer_engine_fp8(const TrainingSetup& setup);

// Whether fp8-mixed runs as torchao's MXFP8Linear (torchao/prototype/mx_formats/mx_linear.py,
// mx_mm): the mxfp8 recipe under a stack whose FP8 engine torchao is (torchtitan's "mx" converter).
bool torchao_mxfp8(const TrainingSetup& setup);

// Whether the layers save their all-gathered inputs whole (StackRow::dtensor_tensor_parallel):
// under DTensor's tensor parallelism above 1.
bool saves_gathered_inputs(const TrainingSetup& setup);

// The expert tensor parallelism a stack runs on the setup's layout, where it has a rule of its
// own: torchtitan's mixture under tensor parallelism (StackRow::torchtitan_mixture,
// moe_sharding.py), 1 under expert parallelism (each expert whole) and 0 (as t) without it, each
// expert split over the t ranks. -1 elsewhere, where etp is the reader's (0 meaning t).
int stack_expert_tensor_parallel(const TrainingSetup& setup, const ModelShape& shape);

// TRL's chunked_nll's output-weight copies (options.hpp) for the setup: the weight held in FP32
// where the hf stack loads the model in FP32 (bf16-mixed, full training), under
// prepare_model_for_kbit_training, or in fp32 precision; trained under full training.
ChunkedNllWeights chunked_nll_weights_of(const TrainingSetup& setup);

}  // namespace trainmem
