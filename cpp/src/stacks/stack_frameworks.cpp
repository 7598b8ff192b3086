// Each framework's order of allocations and frees in one training step (stack_step.hpp), with the
// sources docs/formulas.md quotes: Megatron-LM with Transformer Engine, its distributed optimiser
// and Megatron-FSDP (DeepSpeed ZeRO's: stack_deepspeed.cpp; torchtitan's: stack_torchtitan.cpp;
// torchtune's recipes: stack_torchtune.cpp; transformers': stack_hf.cpp).
#include "stacks/stack_frameworks.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem::replay {

namespace {

// DeepSpeed's ZeRO defaults (deepspeed/runtime/zero/config.py), in elements.

}  // namespace

namespace {

using WeightShape = std::pair<double, double>;  // (rows, columns) on a rank

// One layer's linear weights on a tensor-parallel rank, each tensor once, as Megatron-LM's
// Transformer Engine layer spec builds them: the attention's (MLASelfAttention's down projections
// whole on every rank, its up projections and output split over t), and a dense layer's MLP or a
// mixture layer's experts (TE's GroupedLinear keeps weight0 … weightN-1, one tensor per local
// expert, split over etp) and shared experts (over t).
std::vector<WeightShape> layer_weight_shapes(const StepDevice& device, bool mixture) {
  const ModelShape& shape = device.shape;
  const ParallelLayout& layout = device.setup.layout;
  const double t = layout.tensor_parallel;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  std::vector<WeightShape> shapes;
  const auto add = [&](double rows, double columns, double copies = 1) {
    for (int copy = 0; rows > 0 && columns > 0 && copy < static_cast<int>(copies); ++copy) {
      shapes.push_back({rows, columns});
    }
  };
  if (latent_attention(shape)) {
    const double qk = shape.qk_nope_head_dim + shape.qk_rope_head_dim;
    if (shape.q_lora_rank > 0) {
      add(shape.q_lora_rank, h);
      add(a * qk / t, shape.q_lora_rank);
    } else {
      add(a * qk / t, h);
    }
    add(shape.kv_lora_rank + shape.qk_rope_head_dim, h);
    add(a * (shape.qk_nope_head_dim + shape.v_head_dim) / t, shape.kv_lora_rank);
    add(h, a * shape.v_head_dim / t);
  } else {
    const double d = head_dim_of(shape);
    add((a + 2.0 * shape.num_key_value_heads) * d / t, h);  // linear_qkv
    add(h, a * d / t);                                      // linear_proj
  }
  const double gates = shape.gated_mlp ? 2 : 1;
  const auto mlp = [&](double width, double split, double copies) {
    add(gates * width / split, h, copies);  // linear_fc1
    add(h, width / split, copies);          // linear_fc2
  };
  if (!mixture) {
    mlp(shape.ffn_hidden_size, t, 1);
  } else {
    mlp(routed_expert_width(shape), expert_tensor_parallel_of(layout),
        static_cast<double>(shape.num_experts) / layout.expert_parallel);
    mlp(shape.shared_expert_ffn_hidden_size, t, 1);
  }
  return shapes;
}

// The output layer's, or the embedding's: the vocabulary split over t.
WeightShape vocabulary_shape(const StepDevice& device) {
  return {
      std::ceil(static_cast<double>(device.shape.vocab_size) / device.setup.layout.tensor_parallel),
      static_cast<double>(device.shape.hidden_size)};
}

// The layers' linear weights on the device, elements each, in the order the model builds them.
std::vector<double> layer_weight_elements(const StepDevice& device) {
  std::vector<double> elements;
  const auto layers = [&](double count, bool mixture) {
    const std::vector<WeightShape> shapes = layer_weight_shapes(device, mixture);
    for (int layer = 0; layer < static_cast<int>(count); ++layer) {
      for (const auto& [rows, columns] : shapes) elements.push_back(rows * columns);
    }
  };
  layers(device.dense_layers, false);
  layers(device.mixture_layers, true);
  return elements;
}

// The device's BF16 weight tensors in the order the model builds them, elements each: the
// embedding (first stage), each layer's linear weights (not under --fp8-param-gather, where they
// are FP8 parameters), the output layer (last stage).
std::vector<double> weight_tensor_elements(const StepDevice& device) {
  std::vector<double> elements;
  const WeightShape vocabulary = vocabulary_shape(device);
  if (device.embedding) elements.push_back(vocabulary.first * vocabulary.second);
  if (!device.setup.fp8_param_gather) {
    for (const double tensor : layer_weight_elements(device)) elements.push_back(tensor);
  }
  // A tied output layer on the embedding's stage is the embedding itself.
  if (device.output_layer && !(device.embedding && device.shape.tied_embeddings)) {
    elements.push_back(vocabulary.first * vocabulary.second);
  }
  return elements;
}

}  // namespace

namespace {

// The most elements of any one linear weight in the stage's layers.
double largest_layer_weight(const StepDevice& device) {
  double most = 0;
  for (const bool mixture : {false, true}) {
    if ((mixture ? device.mixture_layers : device.dense_layers) <= 0) continue;
    for (const auto& [rows, columns] : layer_weight_shapes(device, mixture)) {
      most = std::max(most, rows * columns);
    }
  }
  return most;
}

}  // namespace

double te_cached_wgrad_bytes(const StepDevice& device) {
  std::set<WeightShape> shapes;
  for (const bool mixture : {false, true}) {
    if ((mixture ? device.mixture_layers : device.dense_layers) > 0) {
      for (const WeightShape& shape : layer_weight_shapes(device, mixture)) shapes.insert(shape);
    }
  }
  if (device.output_layer) shapes.insert(vocabulary_shape(device));
  double elements = 0;
  for (const auto& [rows, columns] : shapes) elements += rows * columns;
  return kBf16Bytes * elements;
}

namespace {

// fp8-mixed: Transformer Engine's FP8 copy of each linear weight (its modules' workspaces, made
// by the first micro-batch's forward pass and kept: Megatron-LM passes is_first_microbatch) and
// the recipe's scaling state, the ledger's FP8 term spread over the layers' weight tensors, one
// block each. Under --fp8-param-gather they are the parameters themselves, each made in BF16 and
// quantised as the model is built (module/base.py, reset_parameters: the BF16 value moved to the
// host): the handles of their row-wise data (1 B a value), which DDP moves into its buffer.
Handles take_fp8_weights(Step& step, const StepDevice& device, bool as_parameters) {
  const double fp8 = device.bytes[Term::kFp8Weights];
  if (fp8 <= 0) return {};
  const std::vector<double> tensors = layer_weight_elements(device);
  double elements = 0;
  for (const double tensor : tensors) elements += tensor;
  if (elements <= 0) return {};
  // Under Megatron-FSDP the FP8 term is its shards, taken with its buffers (build_megatron_model).
  const bool sharded = megatron_fsdp(device.setup);
  Handles row_wise;
  for (const double tensor : tensors) {
    const auto initial = step.take(tag(Term::kWeights), as_parameters ? kBf16Bytes * tensor : 0);
    const double data = as_parameters ? kFp8Bytes * tensor : 0;
    if (as_parameters) row_wise.push_back(step.take(tag(Term::kFp8Weights), data));
    if (!sharded) step.take(tag(Term::kFp8Weights), fp8 * tensor / elements - data);
    step.give(initial);
  }
  return row_wise;
}

// Building the model: each parameter its own BF16 tensor (the norms, biases and router in one
// block beside them; under --fp8-param-gather the linear weights FP8, take_fp8_weights). Under the
// distributed optimiser DDP moves them into one contiguous buffer and frees them, their blocks left
// in the cache (param_and_grad_buffer.py); the FP32 main gradients are one buffer; the optimiser
// then clones each parameter's shard into FP32 (distrib_optimizer.py,
// shard_fp32_from_float16_groups), one block each.
void build_megatron_model(Step& step, const StepDevice& device) {
  const Breakdown& bytes = device.bytes;
  const std::vector<double> tensors = weight_tensor_elements(device);
  double elements = 0;
  for (const double tensor : tensors) elements += tensor;
  const double weights = bytes[Term::kWeights];
  const double rest = std::max(0.0, weights - kBf16Bytes * elements);
  // Built whole on the device, unless on the meta device for Megatron-FSDP to materialise only
  // its shards (--init-model-with-meta-device; training.py, get_model).
  Handles built;
  const bool on_meta = megatron_fsdp(device.setup) && device.setup.meta_device_init;
  if (!on_meta) {
    for (const double tensor : tensors) {
      built.push_back(step.take(tag(Term::kWeights), kBf16Bytes * tensor));
    }
    built.push_back(step.take(tag(Term::kWeights), rest));
  }
  Handles row_wise;
  const bool fsdp_fp8 = megatron_fsdp(device.setup) && device.setup.fp8_param_gather;
  if (device.setup.fp8_param_gather && !on_meta) row_wise = take_fp8_weights(step, device, true);
  const bool buffered = device.setup.layout.zero_stage > 0;
  if (buffered) step.take(tag(Term::kWeights), weights);
  if (fsdp_fp8) {
    // Megatron-FSDP's float8 group: the FP8 data's shards in its uint8 buffer, the whole FP8
    // parameters freed with the model (param_and_grad_buffer.py; mixed_precision.py).
    step.take(tag(Term::kFp8Weights), bytes[Term::kFp8Weights]);
    give_all(step, row_wise);
  } else if (buffered && !row_wise.empty() && device.setup.fp8_recipe != Fp8Recipe::kMxfp8) {
    // The FP8 parameters' row-wise data moved into DDP's uint8 buffer (param_and_grad_buffer.py,
    // modify_underlying_storage and Transformer Engine's replace_raw_data); MXFP8's stay where
    // they are, gathered through the gradient buffer (--reuse-grad-buf-for-mxfp8-param-ag).
    double elements_fp8 = 0;
    for (const double tensor : layer_weight_elements(device)) elements_fp8 += tensor;
    step.take(tag(Term::kFp8Weights), kFp8Bytes * elements_fp8);
    give_all(step, row_wise);
  }
  step.take(tag(Term::kGradients), bytes[Term::kGradients]);
  if (buffered) give_all(step, built);
  // The FP32 shards, one a parameter, the FP8 parameters' too.
  std::vector<double> trained = tensors;
  if (device.setup.fp8_param_gather) {
    for (const double tensor : layer_weight_elements(device)) trained.push_back(tensor);
  }
  double trained_elements = 0;
  for (const double tensor : trained) trained_elements += tensor;
  const double master = bytes[Term::kMasterWeights];
  const double total = kBf16Bytes * trained_elements + rest;
  for (const double tensor : trained) {
    step.take(tag(Term::kMasterWeights), master * kBf16Bytes * tensor / total);
  }
  step.take(tag(Term::kMasterWeights), master * rest / total);
  if (device.setup.layout.zero_stage >= 2) {
    // Megatron-FSDP's wrapper ends its buffers' making with gc.collect() and
    // torch.cuda.empty_cache() (param_and_grad_buffer.py, _init_each_parameter_group_buffers).
    // Under optim_grads_params the modules outside the layers (the embedding, the output layer,
    // the final norm) are gathered whole at their first forward pass and kept so for the step
    // (AllGatherPipeline.reset(preserve_non_fsdp_units=True)), beside their shards.
    step.empty_cache();
    if (device.setup.layout.zero_stage >= 3) {
      // The stage's own: under a pipeline the first holds the embedding, the last the output
      // layer and the final norm.
      const char* label = device.embedding && device.output_layer
                              ? "Embedding and output layer, gathered (BF16)"
                          : device.embedding ? "Embedding, gathered (BF16)"
                                             : "Output layer and final norm, gathered (BF16)";
      step.take(step.term("megatron-fsdp-gathered-root", label,
                          "Megatron-LM, megatron_fsdp/megatron_fsdp.py: the modules outside the "
                          "transformer layers get no post-forward release; "
                          "param_and_grad_buffer.py, AllGatherPipeline.reset keeps them gathered"),
                kBf16Bytes * (device.root_parameters - device.mtp_unit_parameters));
    }
  }
}

// --fp8-param-gather, after the optimiser's step: the distributed optimiser casts its FP32 shards
// of the FP8 parameters into them (distrib_optimizer.py, _get_fp8_params_and_shard_fp32_from_fp8
// and quantize_param_shard; Transformer Engine's tensor/utils.py, cast_master_weights_to_fp8:
// master_weight.to(model_weight.dtype) for every shard, all at once), a BF16 copy of each shard.
void cast_fp8_parameters(Step& step, const StepDevice& device) {
  if (!device.setup.fp8_param_gather || device.bytes[Term::kFp8Weights] <= 0) return;
  double fp8_elements = 0;
  for (const double tensor : layer_weight_elements(device)) fp8_elements += tensor;
  double bf16_elements = 0;
  for (const double tensor : weight_tensor_elements(device)) bf16_elements += tensor;
  const double rest = std::max(0.0, device.bytes[Term::kWeights] - kBf16Bytes * bf16_elements);
  const double shards = device.bytes[Term::kMasterWeights] * kBf16Bytes * fp8_elements /
                        (kBf16Bytes * (fp8_elements + bf16_elements) + rest);
  step.give(step.take(tag(Term::kFp8Weights), shards * kBf16Bytes / kFp32Bytes));
}

// The global memory buffer (get_global_memory_buffer(), "mpu": one tensor, grown to the largest
// asked of it and kept): under sequence parallelism it gathers the output layer's input, s·b·h;
// under the all-gather token dispatcher the t·ep group's tokens, s·b·ep of the experts' width.
void take_output_gather_buffer(Step& step, const StepDevice& device) {
  const ParallelLayout& layout = device.setup.layout;
  const double tokens = static_cast<double>(device.setup.sequence_length) /
                        layout.context_parallel * device.setup.micro_batch_sequences;
  const double output =
      layout.sequence_parallel && layout.tensor_parallel > 1 && device.logit_count > 0
          ? tokens * device.shape.hidden_size
          : 0;
  const double experts = gathers_expert_tokens(device.setup) && device.mixture_layers > 0
                             ? tokens * layout.expert_parallel * expert_token_width(device.shape)
                             : 0;
  if (output <= 0 && experts <= 0) return;
  const std::size_t buffer =
      experts > output
          ? step.term("megatron-moe-gather-buffer", "Experts' token gather buffer (BF16)",
                      "Megatron-LM, megatron/core/transformer/moe/token_dispatcher.py, "
                      "MoEAllGatherTokenDispatcher.token_dispatch: "
                      "gather_from_sequence_parallel_region(use_global_buffer=True), "
                      "get_global_memory_buffer()")
          : step.term("megatron-gather-buffer", "Output layer's gather buffer (BF16)",
                      "Megatron-LM, megatron/core/tensor_parallel/layers.py, "
                      "LinearWithGradAccumulationAndAsyncCommunication.forward: "
                      "get_global_memory_buffer()");
  step.take(buffer, kBf16Bytes * std::max(output, experts));
}

// Megatron-LM's own terms beyond the gather buffer, in the order the step lists them.
struct MegatronTerms {
  // --defer-embedding-wgrad-compute's buffers, where the stage defers any.
  std::optional<std::size_t> deferred_wgrad;
  // The data loader's attention masks, on a stage that reads the data.
  std::optional<std::size_t> attention_mask;
  std::size_t cached_wgrads = 0;
  // --no-gradient-accumulation-fusion's weight gradients, each made and freed in turn.
  std::optional<std::size_t> unfused_wgrads;
  std::size_t te_workspaces = 0;
  std::size_t activation_gradients = 0;
  std::size_t embedding_gradient = 0;
};

MegatronTerms megatron_terms(Step& step, const StepDevice& device) {
  MegatronTerms terms;
  if (device.deferred_wgrad_micro_batches > 0 || device.defers_last_wgrad) {
    terms.deferred_wgrad = step.term(
        "megatron-deferred-wgrad", "Deferred output-layer inputs and gradients (BF16)",
        "Megatron-LM, --defer-embedding-wgrad-compute: tensor_parallel/layers.py, "
        "LinearWithGradAccumulationAndAsyncCommunication.backward appends each micro-batch's "
        "grad_output, ColumnParallelLinear.forward its input, up to --wgrad-deferral-limit; "
        "schedules.py, finish_embedding_wgrad_compute drains them after the last backward pass");
  }
  if (device.attention_masks_held > 0) {
    terms.attention_mask = step.term(
        "megatron-attention-mask", "Data loader's attention masks (bool)",
        "Megatron-LM, megatron/core/datasets/gpt_dataset.py, _get_ltor_masks_and_position_ids: "
        "a b × 1 × s × s causal mask per micro-batch unless --no-create-attention-mask-in-"
        "dataloader; pretrain_gpt.py, get_batch moves it to the device (s/c of its rows kept "
        "under context parallelism, get_batch_on_this_cp_rank); recomputation's checkpoints save "
        "it to the backward pass (tensor_parallel/random.py, CheckpointFunction)");
  }
  // Cached by the first step's backward pass, held through every later step's.
  terms.cached_wgrads = step.term(
      "te-cached-wgrads", "Cached weight gradients (BF16)",
      "Transformer Engine 2.3 on, transformer_engine/pytorch/module/base.py, get_dummy_wgrad: one "
      "per linear weight shape (the output layer's too, Megatron-Core 0.14 on, "
      "tensor_parallel/layers.py), under gradient-accumulation fusion");
  if (device.setup.no_gradient_accumulation_fusion) {
    terms.unfused_wgrads = step.term(
        "megatron-unfused-wgrads", "Weight gradient, unfused (BF16)",
        "Megatron-LM, --no-gradient-accumulation-fusion: Transformer Engine's linear layers "
        "(module/linear.py, without fuse_wgrad_accumulation) and the output layer "
        "(tensor_parallel/layers.py) return each weight's gradient as its own tensor, which the "
        "parameter's hook adds to the main gradient and frees (distributed_data_parallel.py, "
        "_make_backward_post_hook; under Megatron-FSDP megatron_fsdp.py's post-accumulate-grad "
        "hook, del param.grad)");
  }
  terms.te_workspaces = step.term(
      "te-cublas-workspaces", "Transformer Engine's cuBLAS workspaces",
      "Transformer Engine, pytorch/cpp_extensions/gemm.py, get_cublas_workspace (one, and "
      "get_num_cublas_streams() = 4 more for grouped GEMMs)",
      Term::kRuntime);
  // The gradients the backward pass makes and frees: the activations' (the residual stream's and
  // each operation's), and the embedding's weight gradient before it joins the main gradient.
  terms.activation_gradients =
      step.term("megatron-activation-gradients", "Activation gradients (BF16)",
                "autograd's backward pass: each operation's input gradient, the size of "
                "the tensor it saved; Megatron-LM, tensor_parallel/layers.py, "
                "LinearWithGradAccumulationAndAsyncCommunication.backward (the output "
                "layer's input gradient, whole before its reduce-scatter)");
  terms.embedding_gradient = step.term(
      "megatron-embedding-gradient", "Embedding's weight gradient (BF16)",
      "PyTorch's embedding_dense_backward: a dense gradient of the embedding's weight; "
      "Megatron-LM, "
      "distributed/distributed_data_parallel.py, _make_backward_post_hook: main_grad.add_(grad), "
      "then grad = None");
  return terms;
}

// Transformer Engine's cuBLAS workspaces, cached: one for its GEMMs, and one for each of its
// four compute streams once a grouped GEMM (the experts') runs.
void take_te_workspaces(Step& step, const StepDevice& device, std::size_t te_workspaces) {
  const double workspace =
      architecture_row(device_of(device.setup).architecture).te_cublas_workspace_bytes;
  for (int stream = 0; stream < (device.mixture_layers > 0 ? 5 : 1); ++stream) {
    step.take(te_workspaces, workspace);
  }
}

// What the hidden state between blocks is split over: t under sequence parallelism.
double between_blocks_split(const ParallelLayout& layout) {
  return layout.sequence_parallel ? layout.tensor_parallel : 1;
}

// The output layer's backward pass: the gradient it passes to the last block (the handle).
CachingAllocator::Handle megatron_output_layer_backward(Step& step, const StepDevice& device,
                                                        std::size_t activation_gradients) {
  const double hidden_bytes = kBf16Bytes * device.tokens * device.shape.hidden_size;
  const double between_blocks = between_blocks_split(device.setup.layout);
  if (device.logit_count <= 0) {
    // Received from the next pipeline stage.
    return step.take(activation_gradients, hidden_bytes / between_blocks);
  }
  // The output layer's input gradient, whole on every rank, then reduce-scattered to the
  // sequence-parallel part the final norm's backward pass reads.
  const auto whole = step.take(activation_gradients, hidden_bytes);
  const auto gradient =
      between_blocks > 1 ? step.take(activation_gradients, hidden_bytes / between_blocks) : whole;
  if (between_blocks > 1) step.give(whole);
  return gradient;
}

// The embedding's backward pass, on the first stage; elsewhere the gradient is sent to the
// previous stage.
// `accumulated`: what the embedding's weight gradient, once made, is accumulated into (Megatron-
// FSDP's root bucket on a first stage without the output layer).
void megatron_embedding_backward(Step& step, const StepDevice& device, const MegatronTerms& terms,
                                 CachingAllocator::Handle gradient,
                                 const std::function<void()>& accumulated) {
  if (!device.embedding) {
    step.give(gradient);  // sent to the previous stage
    return;
  }
  // Under sequence parallelism the embedding's output was scattered: its gradient is gathered
  // back whole before the embedding's backward pass.
  const double between_blocks = between_blocks_split(device.setup.layout);
  const auto gathered = between_blocks > 1
                            ? step.take(terms.activation_gradients,
                                        kBf16Bytes * device.tokens * device.shape.hidden_size)
                            : gradient;
  if (between_blocks > 1) step.give(gradient);
  const WeightShape vocabulary = vocabulary_shape(device);
  const auto weight_gradient =
      step.take(terms.embedding_gradient, kBf16Bytes * vocabulary.first * vocabulary.second);
  step.give(gathered);
  if (accumulated) accumulated();
  step.give(weight_gradient);
}

// The first step's optimizer step: Adam's moments do not exist until it makes them (torch.optim's
// lazy state), one per parameter, in the blocks its activations left cached.
void make_adam_moments(Step& step, const StepDevice& device) {
  const double layers = device.layers_per_stage;
  const double states = device.bytes[Term::kOptimizerStates];
  const double root_share = device.parameters > 0 ? device.root_parameters / device.parameters : 0;
  for (int moment = 0; moment < 2; ++moment) {
    for (int layer = 0; layer < static_cast<int>(layers); ++layer) {
      step.take(tag(Term::kOptimizerStates), states * (1 - root_share) / layers / 2);
    }
    step.take(tag(Term::kOptimizerStates), states * root_share / 2);
  }
}

// Megatron-FSDP (--use-megatron-fsdp; ZeRO 2 and 3 under the megatron stack, its
// optim_grads and optim_grads_params sharding strategies; Megatron-LM d98e8a6,
// megatron/core/distributed/fsdp/src/megatron_fsdp/): each transformer layer a unit and one bucket.
// Under optim_grads_params each layer is gathered whole (BF16) for its passes with the next ones
// prefetched while fewer than W elements are (param_and_grad_buffer.py, AllGatherPipeline
// .all_gather_params: suggested_AG_prefetch_size; megatron_fsdp.py sets W = C // 2 with
// C = max(1e9, 2 × a unit's parameters) unless --suggested-communication-unit-size), and freed
// after its pass (_post_forward, _post_backward_release_module). The final norm's forward
// prefetches from the first layer on, a window held to the backward pass's first gather. In the
// backward pass each layer's gradient is made whole in a BF16 bucket (the main-gradient dtype, the
// parameters' unless --megatron-fsdp-main-grads-dtype; get_main_grad), reduce-scattered once
// complete, and freed only while the buckets reduce-scattering hold more than C elements
// (GradReducePipeline: the oldest first), all by the end of the micro-batch's backward pass
// (_root_post_backward).
// Under --fsdp-double-buffer (and --use-nccl-ub, which turns it on) the layers of the largest
// group of identical units (FixedPoolAllocator: fsdp_double_buffer_units, the first such group
// where two tie) are gathered into two slots of a layer each and make their gradients in two more
// (param_and_grad_buffer.py, FixedPoolAllocator over GlobalMemoryBuffer.get_tensor, which keeps
// each slot by name for the run); the other units (a mixture's dense layers) are allocated as
// without it (its backup_allocator, fsdp_db_use_persist_buf_on_alloc_fail unset). One unit is
// prefetched at most (all_gather_params: need_skip_prefetch past the second unit), and the
// gradients of the running unit and, before it, at most two more units reduce-scatter at once
// (_enforce_double_buffer_limit), one more where the running unit is in the pool. The root's
// gathers and its gradient bucket are allocated as before.
class MegatronFsdp {
 public:
  MegatronFsdp(Step& step, const StepDevice& device)
      : step_(step),
        on_(device.setup.layout.zero_stage >= 2),
        gathers_(device.setup.layout.zero_stage >= 3),
        double_buffer_(device.setup.fsdp_double_buffer),
        undistributed_experts_(device.expert_zero_shards <= 1),
        units_(device.layer_units),
        stage_layers_(static_cast<int>(device.layers_per_stage)),
        in_flight_slots_(static_cast<int>(
            std::lround(device.micro_batches_in_flight * device.layers_per_stage))) {
    if (!on_) return;
    // Each of the stage's layers its own unit (replay.cpp fills them under Megatron-FSDP); the
    // mean layer for each where none is given.
    if (units_.empty()) {
      units_.assign(static_cast<std::size_t>(device.layers_per_stage),
                    {device.layer_parameters, device.layer_expert_parameters});
    }
    layers_ = static_cast<int>(units_.size());
    if (double_buffer_) choose_pool();
    // A stage of no layers (a layout's empty stage) gathers none and makes no layer's bucket.
    if (layers_ == 0) gathers_ = false;
    // A group of one rank is not distributed (param_and_grad_buffer.py: is_data_distributed
    // needs group.size() > 1): where the experts' data-parallel group is one rank their gathered
    // weights and their gradient bucket are views of the persistent buffers, no temporary.
    // Under --fp8-param-gather a layer's linear weights are gathered as their FP8 data, and on
    // Hopper Transformer Engine makes each one's transpose after its backward gather
    // (tensor/utils.py, post_all_gather_processing), dropped as the layer is released
    // (megatron_fsdp.py; --keep-fp8-transpose-cache, which keeps them, is not read). A dense
    // decoder's alone: a mixture's are refused (check.cpp).
    fp8_ = device.setup.fp8_param_gather ? device.fp8_layer_weights : 0;
    if (fp8_ > 0 && fp8_weight_copies(device.setup) > 1) transpose_bytes_ = kFp8Bytes * fp8_;
    // megatron_fsdp.py: C = max(1e9, 2 × the mean unit's parameters, over this stage's units)
    // under optim_grads_params, max(1e9, the DDP bucket size or 1e9) otherwise (--ddp-bucket-size
    // is unset by default); the all-gathers' window is C / 2.
    double elements = 0;
    for (const LayerUnit& unit : units_) elements += unit.parameters;
    const double mean = layers_ > 0 ? elements / layers_ : 0;
    queue_elements_ = gathers_ ? std::max(1e9, 2 * mean) : 1e9;
    window_ = std::max(1e9, 2 * mean) / 2;
    if (double_buffer_) {
      const char* source =
          "Megatron-LM, megatron_fsdp/param_and_grad_buffer.py, FixedPoolAllocator: two slots "
          "of a layer each from GlobalMemoryBuffer.get_tensor, kept for the run "
          "(--fsdp-double-buffer)";
      gathered_ = step.term("megatron-fsdp-gathered-layers",
                            fp8_ > 0 ? "Gathered layers, double buffer (FP8)"
                                     : "Gathered layers, double buffer (BF16)",
                            source);
      gradients_ = step.term("megatron-fsdp-unsharded-gradients",
                             "Unsharded gradients, double buffer (BF16)", source);
      return;
    }
    gathered_ =
        step.term("megatron-fsdp-gathered-layers",
                  fp8_ > 0 ? "Gathered layers, prefetch (FP8)" : "Gathered layers, prefetch (BF16)",
                  "Megatron-LM, megatron/core/distributed/fsdp/src/megatron_fsdp/"
                  "param_and_grad_buffer.py, AllGatherPipeline.all_gather_params: the "
                  "layer and the next while fewer than max(1e9, 2 × a layer's "
                  "parameters) / 2 elements are prefetched");
    gradients_ = step.term("megatron-fsdp-unsharded-gradients", "Unsharded gradient buckets (BF16)",
                           "Megatron-LM, megatron_fsdp/param_and_grad_buffer.py, "
                           "GradReducePipeline: each layer's whole gradient until its "
                           "reduce-scatter and C elements after it are queued (10^9; "
                           "max(10^9, 2 × a layer's parameters) under optim_grads_params), all "
                           "by the end of the backward pass");
  }

  bool on() const { return on_; }

  // The forward pass's and the backward pass's gathers and gradient buckets, around each slot.
  // Under a pipeline the stage's slots are its micro-batches in flight, one after another, each
  // its layers: each micro-batch's passes gather its layers again, and reduce-scatter their
  // gradients (optim_grads and optim_grads_params reduce every backward pass:
  // _process_post_backward_gradients).
  SlotHooks forward() {
    if (!gathers_) return {};
    return {[this](int slot) { gather(layer_of(slot), +1); },
            [this](int slot) { release(layer_of(slot)); }};
  }
  SlotHooks backward() {
    return {[this](int slot) {
              const int layer = layer_of(slot);
              give_all(step_, wrapped_);  // recycled by the first gather of the backward pass
              if (layers_ == 0) return;
              if (gathers_) gather(layer, -1);
              if (transpose_bytes_ > 0) transpose_ = step_.take(gathered_, transpose_bytes_);
              const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
              if (double_buffer_) {
                trim_double_buffered(layer);
                pooled_making_.first = layer;
                if (in_pool(layer)) {
                  take_slots(gradient_slots_, gradients_, bucket_bytes(pool_unit_, false));
                } else {
                  pooled_making_.second.push_back(step_.take(gradients_, gradient_bytes(layer)));
                }
                return;
              }
              // A mixture's layer is two buckets, its routed experts' and the rest
              // (param_and_grad_buffer.py groups a unit's parameters by is_expert_param:
              // ".experts." in the name), each reduce-scattered over its own data-parallel group.
              if (unit.expert_parameters > 0) {
                making_.push_back({step_.take(gradients_, kBf16Bytes * (unit.expert_parameters -
                                                                        held_experts(unit))),
                                   unit.expert_parameters});
              }
              making_.push_back(
                  {step_.take(gradients_, kBf16Bytes * (unit.parameters - unit.expert_parameters)),
                   unit.parameters - unit.expert_parameters});
            },
            [this](int slot) {
              if (gathers_) release(layer_of(slot));
              if (transpose_) step_.give(*transpose_);
              transpose_.reset();
              if (double_buffer_) {
                if (layers_ > 0) queue_double_buffered();
                return;
              }
              // Its reduce-scatters queued, the experts' bucket first (complete once the MLP's
              // backward is), then the rest's; before each the oldest freed while more than C
              // elements wait (wait_for_previous_grad_reduce). Each bucket is padded to a multiple
              // of D × its rows' least common multiple, where C counts a layer unpadded: whole
              // layers reaching C are more than it.
              for (const auto& bucket : making_) {
                buckets_.push_back(bucket);
                double queued = 0;
                for (const auto& each : buckets_) queued += each.second;
                while (buckets_.size() > 1 && queued - buckets_.back().second >= queue_elements_) {
                  queued -= buckets_.front().second;
                  step_.give(buckets_.front().first);
                  buckets_.pop_front();
                }
              }
              making_.clear();
            }};
  }
  // The final norm's forward, on the stage that holds it, in the run's first micro-batch: its
  // prefetch gathers the first layers again, to the backward pass. After the first backward pass
  // the modules outside the layers stay PRE_BACKWARD (_root_pre_backward sets every submodule;
  // only the units return to IDLE, _post_backward_release_module), and a pre-forward hook in that
  // state prefetches nothing (_pre_forward_param_unshard).
  void regather_at_the_loss() {
    if (!gathers_ || double_buffer_) return;  // the slots hold the first layer again
    prefetch_from(0, wrapped_);
  }
  // The modules outside the layers share one bucket: its whole gradient is made at its first
  // parameter's gradient (get_main_grad) and complete only once the last's is, its
  // reduce-scatter waiting for all. Where the stage holds the output layer, as its backward
  // pass starts: with the embedding beside it (no pipeline) complete at the pass's end; on a last
  // stage without it complete at once with the final norm's gradient, and queued with the
  // layers' (`completes_at_once`; in the double buffer's queue as a unit of its own). On a first
  // stage without the output layer, at the embedding's weight gradient.
  void take_root_gradients(double root_parameters, bool completes_at_once) {
    if (!on_ || root_parameters <= 0) return;
    const auto bucket = step_.take(gradients_, kBf16Bytes * root_parameters);
    if (completes_at_once && double_buffer_) {
      pooled_queue_.push_back({kRootUnit, Handles{bucket}});
    } else if (completes_at_once) {
      buckets_.push_back({bucket, root_parameters});
    } else {
      root_bucket_.push_back(bucket);
    }
  }
  // _root_post_backward, at the end of each micro-batch's backward pass (an earlier one in flight
  // under a pipeline, or the step's last): every reduce-scatter waited on and its bucket freed.
  void end_of_backward() {
    for (const auto& bucket : buckets_) step_.give(bucket.first);
    buckets_.clear();
    for (auto& queued : pooled_queue_) give_all(step_, queued.second);
    pooled_queue_.clear();
    give_all(step_, root_bucket_);
  }
  // After the optimiser's step, start_param_sync gathers the bucket of the stage's first
  // parameter (megatron_fsdp.py: parameters()[0]) and prefetches from there: the embedding's on a
  // stage that holds it, then the first layers; else the first layer's, then the next.
  Handles prefetch_next_step(bool from_the_embedding) {
    Handles next;
    if (!gathers_ || double_buffer_) return next;
    if (!from_the_embedding && layers_ > 0) {
      next.push_back(step_.take(gathered_, unit_bytes(0)));
      prefetch_from(1, next);
    } else {
      prefetch_from(0, next);
    }
    return next;
  }

 private:
  // The unit of slot `slot` (from 1): the stage's micro-batches in flight are its layers each,
  // then the multi-token-prediction modules' slots their units, after the layers'.
  int layer_of(int slot) const {
    if (stage_layers_ <= 0) return 0;
    if (slot > in_flight_slots_)
      return std::min(layers_ - 1, stage_layers_ + slot - in_flight_slots_ - 1);
    return (slot - 1) % stage_layers_;
  }
  // Of a unit's routed experts, those in their persistent buffers (an undistributed group's).
  double held_experts(const LayerUnit& unit) const {
    return undistributed_experts_ ? unit.expert_parameters : 0;
  }
  // A layer gathered: BF16, its FP8 parameters' data in FP8.
  double unit_bytes(int layer) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    return kBf16Bytes * (unit.parameters - fp8_ - held_experts(unit)) + kFp8Bytes * fp8_;
  }
  // From layer `first` on, while fewer than the window's elements are prefetched.
  void prefetch_from(int first, Handles& held) {
    double prefetched = 0;
    for (int layer = first; layer < layers_ && prefetched < window_; ++layer) {
      held.push_back(step_.take(gathered_, unit_bytes(layer)));
      prefetched += units_[static_cast<std::size_t>(layer)].parameters;
    }
  }
  // The double buffer's pool: the units of the largest group alike (the first where two tie).
  void choose_pool() {
    int best = 0;
    int best_count = 0;
    for (int unit = 0; unit < layers_; ++unit) {
      int count = 0;
      for (int other = 0; other < layers_; ++other) count += same_unit(unit, other) ? 1 : 0;
      if (count > best_count) {
        best = unit;
        best_count = count;
      }
    }
    pool_unit_ = best;
  }
  bool same_unit(int a, int b) const {
    const LayerUnit& x = units_[static_cast<std::size_t>(a)];
    const LayerUnit& y = units_[static_cast<std::size_t>(b)];
    return std::abs(x.parameters - y.parameters) < 0.5 &&
           std::abs(x.expert_parameters - y.expert_parameters) < 0.5;
  }
  bool in_pool(int layer) const { return same_unit(layer, pool_unit_); }
  // A unit's gradient buckets, whole: its routed experts' (unless undistributed) and the rest's.
  double gradient_bytes(int layer) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    return kBf16Bytes * (unit.parameters - held_experts(unit));
  }
  // _enforce_double_buffer_limit, as the running unit's gradient is first allocated
  // (main_grad_getter) and again as its buckets are queued: the queued units, newest first, kept
  // while with the running one (if in the pool) they are two units at most, the bucket outside the
  // layers counting as one (its unit id None); the older ones waited on, their buckets (outside
  // the pool) freed.
  void trim_double_buffered(int running) {
    std::set<int> units;
    if (running >= 0 && in_pool(running)) units.insert(running);
    std::size_t keep = pooled_queue_.size();
    for (auto queued = pooled_queue_.rbegin(); queued != pooled_queue_.rend(); ++queued) {
      units.insert(queued->first);
      if (units.size() > 2) --keep;
    }
    while (pooled_queue_.size() > keep) {
      give_all(step_, pooled_queue_.front().second);
      pooled_queue_.pop_front();
    }
  }
  void queue_double_buffered() {
    trim_double_buffered(pooled_making_.first);
    pooled_queue_.push_back(std::move(pooled_making_));
    pooled_making_ = {};
  }
  // The double buffer's two slots of a layer each, made at their first use and kept.
  // Each slot one buffer a bucket of the unit (FixedPoolAllocator: a buffer for each bucket
  // offset): a mixture layer's routed experts' and the rest's.
  void take_slots(Handles& slots, std::size_t term, const std::vector<double>& buckets) {
    if (!slots.empty()) return;
    for (int slot = 0; slot < 2; ++slot) {
      for (const double bytes : buckets) slots.push_back(step_.take(term, bytes));
    }
  }
  // A unit's buckets, gathered (`weights`: its FP8 parameters' data in FP8) or its gradients':
  // a mixture layer's routed experts' (unless undistributed: the persistent buffers' views) and
  // the rest's.
  std::vector<double> bucket_bytes(int layer, bool weights) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    const double experts = unit.expert_parameters - held_experts(unit);
    std::vector<double> buckets;
    if (experts > 0) buckets.push_back(kBf16Bytes * experts);
    buckets.push_back(weights ? unit_bytes(layer) - kBf16Bytes * experts
                              : kBf16Bytes * (unit.parameters - unit.expert_parameters));
    return buckets;
  }
  // Layer `layer` (from 0) gathered, then the next in the pass's direction while fewer than the
  // window's elements are prefetched (all_gather_params: the buckets beyond the base).
  void gather(int layer, int direction) {
    if (double_buffer_) {
      // The unit, then the next while fewer than the window's elements are prefetched and the
      // units counted stay two (need_skip_prefetch: the running unit counted only if in the pool,
      // so beside a unit outside it two more): the pool's in its slots, the others allocated for
      // their pass.
      std::set<int> counted;
      if (in_pool(layer)) counted.insert(layer);
      double prefetched = 0;
      for (int next = layer; next >= 0 && next < layers_; next += direction) {
        if (next != layer) {
          if (prefetched >= window_) break;
          counted.insert(next);
          if (counted.size() > 2) break;
          prefetched += units_[static_cast<std::size_t>(next)].parameters;
        }
        if (in_pool(next)) {
          take_slots(gathered_slots_, gathered_, bucket_bytes(pool_unit_, true));
        } else if (resident_.count(next) == 0) {
          resident_[next] = step_.take(gathered_, unit_bytes(next));
        }
      }
      return;
    }
    double prefetched = 0;
    for (int next = layer; next >= 0 && next < layers_; next += direction) {
      if (next != layer && prefetched >= window_) break;
      if (resident_.count(next) == 0) resident_[next] = step_.take(gathered_, unit_bytes(next));
      if (next != layer) prefetched += units_[static_cast<std::size_t>(next)].parameters;
    }
  }
  void release(int layer) {
    const auto found = resident_.find(layer);
    if (found == resident_.end()) return;
    step_.give(found->second);
    resident_.erase(found);
  }

  Step& step_;
  bool on_;
  bool gathers_;
  bool double_buffer_;
  bool undistributed_experts_;  // the experts' data-parallel group is one rank
  std::vector<LayerUnit> units_;
  int stage_layers_ = 0;     // the stage's decoder layers (units_ has the modules' after)
  int in_flight_slots_ = 0;  // its micro-batches in flight times them
  int layers_ = 0;
  double fp8_ = 0;              // a layer's linear weights gathered in FP8 (a dense decoder's)
  double transpose_bytes_ = 0;  // their transposes on Hopper, while the layer's backward runs
  std::optional<CachingAllocator::Handle> transpose_;
  double queue_elements_ = 0;
  double window_ = 0;
  std::size_t gathered_ = 0;
  std::size_t gradients_ = 0;
  std::map<int, CachingAllocator::Handle> resident_;
  std::deque<std::pair<CachingAllocator::Handle, double>> buckets_;
  // The running layer's gradient buckets, made at its backward pass's start, queued at its end.
  std::vector<std::pair<CachingAllocator::Handle, double>> making_;
  Handles wrapped_;
  Handles root_bucket_;
  Handles gathered_slots_;
  Handles gradient_slots_;
  // The double buffer: a unit of the pool's group, and the units whose reduce-scatters are queued
  // (the running one's last), each with its buckets outside the pool.
  int pool_unit_ = 0;
  static constexpr int kRootUnit = -1;  // the bucket outside the layers, in the queue
  std::pair<int, Handles> pooled_making_;
  std::deque<std::pair<int, Handles>> pooled_queue_;
};

// One micro-batch's forward and backward passes; `first` for the first step's, in whose backward
// pass the weight-gradient caches appear, the output layer's first, and whose optimizer step
// makes Adam's moments.
void megatron_micro_batch(Step& step, const StepDevice& device, const MegatronTerms& terms,
                          MegatronFsdp& fsdp, bool first) {
  // The micro-batch replayed is the step's last: under --defer-embedding-wgrad-compute the last
  // stage holds the earlier micro-batches' output-layer inputs (the hidden state, split as between
  // blocks) and gradients (its logits' BF16 gradient), one each for the output layer and every
  // multi-token-prediction module it runs.
  const double passes = device.tokens > 0 ? device.loss_tokens / device.tokens : 1;
  const double deferred_bytes =
      passes * device.stage_boundary_bytes + kBf16Bytes * device.logit_count;
  std::vector<CachingAllocator::Handle> deferred;
  if (terms.deferred_wgrad) {
    deferred.push_back(
        step.take(*terms.deferred_wgrad, device.deferred_wgrad_micro_batches * deferred_bytes));
  }
  // The data loader's masks: the earlier micro-batches' still held, and this one's as get_batch
  // receives it, then as context parallelism keeps its rows.
  Handles masks;
  std::optional<CachingAllocator::Handle> mask;
  if (terms.attention_mask) {
    if (device.attention_masks_held > 1) {
      masks.push_back(step.take(*terms.attention_mask,
                                (device.attention_masks_held - 1) * device.attention_mask_bytes));
    }
    mask = step.take(*terms.attention_mask, device.attention_mask_whole_bytes);
    if (device.attention_mask_bytes < device.attention_mask_whole_bytes) {
      const auto rows = step.take(*terms.attention_mask, device.attention_mask_bytes);
      step.give(*mask);
      mask = rows;
    }
  }
  const SlotHooks forward = fsdp.forward();
  std::vector<Handles> kept = forward_slots(step, device, &forward);
  // (The bucket outside the layers comes first where the stage holds the embedding; else last,
  // and a prefetch from it finds no bucket after it.)
  if (device.output_layer && device.embedding && first) fsdp.regather_at_the_loss();
  const auto logits_gradient = loss_forward_and_backward(step, device, [&] {
    if (mask && !device.attention_mask_kept) {
      step.give(*mask);
      mask.reset();
    }
  });
  // Fused, Transformer Engine hands back a dummy weight gradient, one per weight shape, cached.
  if (first && !terms.unfused_wgrads) step.take(terms.cached_wgrads, te_cached_wgrad_bytes(device));
  Flowing flowing;
  flowing.tag = terms.activation_gradients;
  const double root_bucket = device.root_parameters - device.mtp_unit_parameters;
  if (device.output_layer) fsdp.take_root_gradients(root_bucket, !device.embedding);
  flowing.gradient = megatron_output_layer_backward(step, device, terms.activation_gradients);
  if (terms.unfused_wgrads && device.output_layer && device.logit_count > 0) {
    const WeightShape vocabulary = vocabulary_shape(device);
    step.give(step.take(*terms.unfused_wgrads, kBf16Bytes * vocabulary.first * vocabulary.second));
  }
  if (terms.deferred_wgrad && device.defers_last_wgrad) {
    // Its own input kept past the output layer's backward pass, its gradient not freed.
    deferred.push_back(step.take(*terms.deferred_wgrad, passes * device.stage_boundary_bytes));
    deferred.push_back(logits_gradient);
  } else {
    step.give(logits_gradient);
  }
  // The first layer's checkpoint, the last to hold the mask, releases it with its saved tensors.
  SlotHooks backward = fsdp.on() ? fsdp.backward() : SlotHooks{};
  // Unfused, a layer's largest weight gradient at once (each added and freed before the next).
  std::optional<CachingAllocator::Handle> wgrad;
  if (terms.unfused_wgrads) {
    backward.before = [&, before = backward.before](int slot) {
      if (before) before(slot);
      wgrad = step.take(*terms.unfused_wgrads, kBf16Bytes * largest_layer_weight(device));
    };
  }
  // Under 1F1B the stage's slots are its micro-batches in flight, one after another: where an
  // earlier one's backward pass ends, a first stage runs its embedding's backward pass while the
  // later ones are still held, and _root_post_backward frees its buckets.
  const int layers = static_cast<int>(device.layers_per_stage);
  const double in_flight_slots = device.micro_batches_in_flight * device.layers_per_stage;
  const bool one_by_one = device.virtual_stages <= 1 && layers > 0;
  backward.after = [&, after = backward.after](int slot) {
    if (wgrad) step.give(*wgrad);
    wgrad.reset();
    if (after) after(slot);
    if (slot == 1 && mask) {
      step.give(*mask);
      mask.reset();
    }
    if (one_by_one && slot > 1 && slot <= in_flight_slots && (slot - 1) % layers == 0) {
      // The first layer's input gradient goes into the embedding's backward pass (or to the
      // previous stage); the next micro-batch's backward pass starts from the gradient the next
      // stage sends, a hidden state's (split as between blocks).
      megatron_embedding_backward(step, device, terms, flowing.gradient,
                                  [&] { fsdp.take_root_gradients(root_bucket, false); });
      fsdp.end_of_backward();
      flowing.gradient =
          step.take(flowing.tag, kBf16Bytes * device.tokens * device.shape.hidden_size /
                                     between_blocks_split(device.setup.layout));
    }
  };
  backward_slots(step, device, kept, &flowing, &backward);
  megatron_embedding_backward(step, device, terms, flowing.gradient, [&] {
    if (!device.output_layer) fsdp.take_root_gradients(root_bucket, false);
  });
  fsdp.end_of_backward();
  if (mask) step.give(*mask);
  give_all(step, masks);
  step.mark("backward", 0);
  for (const auto& handle : deferred) step.give(handle);
  // --empty-unused-memory-level: after the forward and backward passes (1), and after the
  // optimiser's step (2), torch.cuda.empty_cache() (training.py, train_step).
  if (device.setup.empty_cache_level >= 1) step.empty_cache();
  if (first) make_adam_moments(step, device);
  if (device.setup.empty_cache_level >= 2) step.empty_cache();
}

}  // namespace

// Megatron-LM with Transformer Engine: the BF16 parameter buffer and the FP32 main-gradient buffer
// for the whole step (param_and_grad_buffer.py), the distributed optimiser's shards, and under
// sequence parallelism the global memory buffer that gathers the output layer's input.
void megatron_step(Step& step, const StepDevice& device) {
  build_megatron_model(step, device);
  take_output_gather_buffer(step, device);
  const MegatronTerms terms = megatron_terms(step, device);
  take_te_workspaces(step, device, terms.te_workspaces);
  if (!device.setup.fp8_param_gather) (void)take_fp8_weights(step, device, false);
  // A micro-batch with the moments made, for the blocks it leaves cached: the cache then stops
  // growing, and the micro-batch the timeline shows is as every later one (the panel's runs
  // replayed with eight such micro-batches in place of one reserve no more).
  MegatronFsdp fsdp(step, device);
  replay_after_warm_up(step,
                       [&](bool first) { megatron_micro_batch(step, device, terms, fsdp, first); });
  // --grad-reduce-in-bf16: the optimiser's step reads FP32 gradients, each shard's BF16 gradient
  // copied (distrib_optimizer.py, _copy_model_grads_to_main_grads: shard_model_grad.float(); the
  // whole gradient under ZeRO 0, optimizer.py), the FP32 shards' size; freed by zero_grad.
  // Megatron-FSDP's BF16 gradients likewise (param_and_grad_buffer.py, update_main_grads:
  // gbuf shard .to(FP32) a parameter), held through the step to the next zero_grad, while
  // start_param_sync prefetches the next step's first layers.
  if (device.setup.grad_reduce_in_bf16 || fsdp.on()) {
    const auto copy = step.take(tag(Term::kGradients), device.bytes[Term::kMasterWeights]);
    Handles next = fsdp.prefetch_next_step(device.embedding);
    step.give(copy);
    give_all(step, next);
  }
  cast_fp8_parameters(step, device);
}

}  // namespace trainmem::replay
