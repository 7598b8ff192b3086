// Each framework's order of allocations and frees in one training step (stack_step.hpp), with the
// sources docs/formulas.md quotes: Megatron-LM with Transformer Engine, its distributed optimiser
// and Megatron-FSDP (DeepSpeed ZeRO's: stack_deepspeed.cpp; torchtitan's: stack_torchtitan.cpp;
// torchtune's recipes: stack_torchtune.cpp; transformers': stack_hf.cpp).
#include "stacks/stack_frameworks.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stacks/megatron_fsdp.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem::replay {

namespace {

using fsdp_detail::MegatronFsdp;
using WeightShape = std::pair<double, double>;  // (rows, columns) on a rank

// One layer's linear weights on a tensor-parallel rank, each tensor once, as Megatron-LM's
// Transformer Engine layer spec builds them: the attention's (MLASelfAttention's down projections
// whole on every rank, its up projections and output split over t), and a dense layer's MLP or a
// mixture layer's experts (TE's GroupedLinear keeps weight0 … weightN-1, one tensor per local
// expert, split over etp) and shared experts (over t). `routed`: the routed experts' alone (true),
// all but theirs (false), or all.
std::vector<WeightShape> layer_weight_shapes(const StepDevice& device, bool mixture,
                                             std::optional<bool> routed = std::nullopt) {
  const ModelShape& shape = device.shape;
  const ParallelLayout& layout = device.setup.layout;
  const double t = layout.tensor_parallel;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  std::vector<WeightShape> shapes;
  bool adding_routed = false;
  const auto add = [&](double rows, double columns, double copies = 1) {
    if (routed && *routed != adding_routed) return;
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
    adding_routed = true;
    mlp(routed_expert_width(shape), expert_tensor_parallel_of(layout),
        static_cast<double>(shape.num_experts) / layout.expert_parallel);
    adding_routed = false;
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

// The most elements of any one linear weight in the stage's layers: of the routed experts'
// (`routed` true), of the others' (false), or of all.
double largest_layer_weight(const StepDevice& device, std::optional<bool> routed = std::nullopt) {
  double most = 0;
  for (const bool mixture : {false, true}) {
    if ((mixture ? device.mixture_layers : device.dense_layers) <= 0) continue;
    for (const auto& [rows, columns] : layer_weight_shapes(device, mixture, routed)) {
      most = std::max(most, rows * columns);
    }
  }
  return most;
}

}  // namespace

// The most elements of one main gradient on the device, where the optimiser's step reads them
// (count_zeros_fp32 at 23e00ed: each FP32 main parameter's .grad, or under Megatron-FSDP each
// parameter's local shard). Without ZeRO each weight's whole (on its tensor-parallel rank). The
// distributed optimiser splits each bucket of its gradient buffers (the routed experts' apart,
// over their own group) evenly over the ranks (distrib_optimizer.py, _build_model_gbuf_range), a
// weight's shard being its part of the rank's range: at most the rank's share of the buffer, one
// bucket without --overlap-grad-reduce (DistributedDataParallel sets bucket_size None). With it,
// on the first pipeline stage (the later ones' DistributedDataParallel turns bucketing off) and
// without virtual stages (training.py builds each chunk's after the first with disable_bucketing),
// a bucket closes once it holds max(4·10⁷, 10⁶·d·c) elements, so a weight W's bucket holds at most
// W + that, and its shard at most (W + that) / the ranks: rising with W, the largest weight bounds
// every other's. Elsewhere the stage's parameters are one buffer, a bound over its chunks' smaller
// ones. Megatron-FSDP shards each unit's bucket alike: a layer's (its routed experts' apart) and
// the root's (embedding, output layer, final norm), counted unsplit, a bound where its bucket size
// splits them. The bounds are reached where the largest weight lies in one rank's range, as the
// embedding does at the end of a single bucket.
double largest_main_gradient(const StepDevice& device) {
  const ParallelLayout& layout = device.setup.layout;
  const WeightShape vocabulary = vocabulary_shape(device);
  const double vocabulary_weight =
      device.embedding || device.output_layer ? vocabulary.first * vocabulary.second : 0;
  const double dense_weight = largest_layer_weight(device, false);
  const double routed_weight = largest_layer_weight(device, true);
  if (layout.zero_stage == 0) return std::max({dense_weight, routed_weight, vocabulary_weight});
  const bool bucketed = device.setup.overlap_grad_reduce && device.embedding &&
                        layout.zero_stage == 1 && layout.virtual_pipeline_stages == 1;
  const double bucket =
      std::max(4e7, 1e6 * static_cast<double>(layout.data_parallel) * layout.context_parallel);
  // A weight of `weight` elements in a buffer of `buffer` over `ranks`.
  const auto shard = [&](double weight, double buffer, double ranks) {
    const double share = std::min(weight, buffer / ranks);
    return bucketed ? std::min(share, (weight + bucket) / ranks) : share;
  };
  const double routed_parameters = device.layer_expert_parameters * device.layers_per_stage;
  if (layout.zero_stage == 1) {
    return std::max(shard(std::max(dense_weight, vocabulary_weight),
                          device.parameters - routed_parameters, device.zero_shards),
                    shard(routed_weight, routed_parameters, device.expert_zero_shards));
  }
  double unit_dense = device.layer_parameters - device.layer_expert_parameters;
  double unit_routed = device.layer_expert_parameters;
  for (const LayerUnit& unit : device.layer_units) {
    unit_dense = std::max(unit_dense, unit.parameters - unit.expert_parameters);
    unit_routed = std::max(unit_routed, unit.expert_parameters);
  }
  // The root's bucket: root_parameters less the multi-token-prediction modules' layers, units of
  // their own.
  const double root = device.root_parameters - device.mtp_unit_parameters();
  return std::max({std::min(dense_weight, unit_dense / device.zero_shards),
                   std::min(routed_weight, unit_routed / device.expert_zero_shards),
                   shard(vocabulary_weight, root, device.zero_shards)});
}

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
                kBf16Bytes * (device.root_parameters - device.mtp_unit_parameters()));
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
  const double root_bucket = device.root_parameters - device.mtp_unit_parameters();
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
  std::optional<CachingAllocator::Handle> copy;
  if (device.setup.grad_reduce_in_bf16 || fsdp.on()) {
    copy = step.take(tag(Term::kGradients), device.bytes[Term::kMasterWeights]);
  }
  // --log-num-zeros-in-grad: count_zeros_fp32 (optimizer/clip_grads.py at 23e00ed), after the
  // copy and before the step, runs torch.count_nonzero on each main gradient in turn, on CUDA
  // (self != 0).sum(): a bool copy of one gradient, freed before the next, 1 B an element of the
  // largest.
  if (device.setup.log_num_zeros_in_grad) {
    const std::size_t zeros =
        step.term("count-zeros", "Gradient zeros counted (a bool copy of one gradient)",
                  "Megatron-LM 23e00ed, megatron/core/optimizer/clip_grads.py, count_zeros_fp32: "
                  "torch.count_nonzero, on CUDA (grad != 0).sum(), one main gradient at a time",
                  Term::kGradients);
    step.give(step.take(zeros, largest_main_gradient(device)));
  }
  if (copy) {
    Handles next = fsdp.prefetch_next_step(device.embedding);
    step.give(*copy);
    give_all(step, next);
  }
  cast_fp8_parameters(step, device);
}

}  // namespace trainmem::replay
