// What a real training stack holds (options.hpp's Stack): one training step of the most loaded
// device replayed, allocation by allocation, through PyTorch's caching allocator's rules
// (allocator.hpp), in the order the framework allocates and frees. The allocated peak is the
// busiest moment of that step, each term as it stands then; the reserved peak adds what the
// allocator keeps cached. docs/formulas.md derives each term and quotes its source.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calculation.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

namespace {

constexpr double kMebibyte = 1 << 20;

// PyTorch's cuBLAS workspace for each handle and stream, allocated through the caching allocator
// (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize: ":4096:8", 32 MiB, on
// Hopper and Blackwell; ":4096:2:16:8", 8 MiB + 128 KiB, before them; 128 MiB on ROCm's gfx94x),
// and cuBLASLt's (parseCUDABlasLtWorkspaceSize: 1 MiB; hipBLASLt 76 MiB). One stream computes.
struct BlasWorkspaces {
  double cublas = 0;
  double cublaslt = 0;
};
BlasWorkspaces blas_workspaces(const std::string& device_id) {
  if (device_id == "mi300x") return {128 * kMebibyte, 76 * kMebibyte};
  if (device_id == "h100" || device_id == "h200" || device_id == "b200") {
    return {32 * kMebibyte, 1 * kMebibyte};
  }
  return {8 * kMebibyte + 128 * 1024, 1 * kMebibyte};  // A100 and a custom device
}

// The CUDA context with lazy module loading (CUDA 11.7 and later; PyTorch's default since 1.13,
// pytorch/pytorch#86509): "around 400MB" (pytorch/pytorch#109888). Outside the allocator.
constexpr double kCudaContextBytes = 400e6;

// NCCL's buffers for one communicator (src/init.cc): each channel's connection holds a Simple
// FIFO of NCCL_BUFFSIZE (4 MiB), an LL FIFO (8 lines × 512 threads × 8 steps × 16 B = 512 KiB)
// and an LL128 FIFO (120 × 640 × 8 × 8 B). A ring receives from one peer; 16 channels assumed
// (NVLS's 16 on Hopper; a ring over NVLink uses up to 32). Outside the allocator.
constexpr double kNcclConnectionBytes = 4 * kMebibyte + 512 * 1024 + 120.0 * 640 * 8 * 8;
constexpr double kNcclChannels = 16;

// DeepSpeed's ZeRO defaults (deepspeed/runtime/zero/config.py), in elements.
constexpr double kDeepSpeedReduceBucketElements = 5e8;    // reduce_bucket_size
constexpr double kDeepSpeedPrefetchBucketElements = 5e7;  // stage3_prefetch_bucket_size
constexpr double kDeepSpeedPersistenceThresholdElements =
    1e5;  // stage3_param_persistence_threshold

// The idealised terms, then the runtime's workspace, then each stack's own terms by index.
enum Tag : std::size_t {
  kWeights,
  kGradients,
  kMasterWeights,
  kOptimizerStates,
  kActivations,
  kLogits,
  kWorkspace,
  kFirstFrameworkTag,
};

// One step's allocations through the allocator, each under a term, with each term's bytes at the
// allocated peak.
class Step {
 public:
  // A term of the stack's own: its tag.
  std::size_t term(std::string id, std::string label, std::string source) {
    terms_.push_back({std::move(id), std::move(label), 0, std::move(source), true});
    held_.resize(kFirstFrameworkTag + terms_.size(), 0);
    return kFirstFrameworkTag + terms_.size() - 1;
  }

  CachingAllocator::Handle take(std::size_t tag, double bytes) {
    const double before = allocator_.allocated_bytes();
    const CachingAllocator::Handle handle = allocator_.allocate(bytes);
    if (!(bytes > 0)) return handle;  // nothing taken: a handle that frees nothing
    const double block = allocator_.allocated_bytes() - before;
    if (handle >= blocks_.size()) blocks_.resize(handle + 1, {0, 0});
    blocks_[handle] = {tag, block};
    held_[tag] += block;
    if (allocator_.allocated_bytes() > phase_peak_) {
      phase_peak_ = allocator_.allocated_bytes();
      if (timeline_ != nullptr) at_phase_peak_ = held_;
    }
    if (allocator_.allocated_bytes() > peak_) {
      peak_ = allocator_.allocated_bytes();
      at_peak_ = held_;
    }
    return handle;
  }

  void give(CachingAllocator::Handle handle) {
    if (handle >= blocks_.size() || blocks_[handle].second == 0) return;
    held_[blocks_[handle].first] -= blocks_[handle].second;
    blocks_[handle].second = 0;
    allocator_.free(handle);
  }

  // Records the phase just ended: its busiest moment and what is reserved, each with the memory
  // outside the allocator.
  void mark(const char* phase, int layer) {
    if (timeline_ == nullptr) return;
    TimelinePoint point;
    point.phase = phase;
    point.layer = layer;
    point.bytes = phase_peak_ + outside_;
    point.reserved_bytes = allocator_.reserved_bytes() + outside_;
    const auto held = [&](std::size_t tag) {
      return tag < at_phase_peak_.size() ? at_phase_peak_[tag] : 0.0;
    };
    point.states_bytes =
        held(kWeights) + held(kGradients) + held(kMasterWeights) + held(kOptimizerStates);
    point.activations_bytes = held(kActivations);
    point.logits_bytes = held(kLogits);
    point.runtime_bytes = held(kWorkspace) + outside_;
    for (std::size_t tag = kFirstFrameworkTag; tag < at_phase_peak_.size(); ++tag) {
      point.framework_bytes += held(tag);
    }
    timeline_->push_back(point);
    phase_peak_ = allocator_.allocated_bytes();
    at_phase_peak_ = held_;
  }
  void record(std::vector<TimelinePoint>* timeline, double outside) {
    timeline_ = timeline;
    outside_ = outside;
  }

  double at_peak(std::size_t tag) const { return tag < at_peak_.size() ? at_peak_[tag] : 0; }
  double peak_allocated() const { return allocator_.peak_allocated_bytes(); }
  double peak_reserved() const { return allocator_.peak_reserved_bytes(); }

  std::vector<StackTerm> terms_at_peak() const {
    std::vector<StackTerm> terms = terms_;
    for (std::size_t index = 0; index < terms.size(); ++index) {
      terms[index].bytes = at_peak(kFirstFrameworkTag + index);
    }
    return terms;
  }

 private:
  CachingAllocator allocator_;
  std::vector<std::pair<std::size_t, double>> blocks_;  // by handle: tag and block bytes
  std::vector<double> held_ = std::vector<double>(kFirstFrameworkTag, 0);
  std::vector<double> at_peak_ = std::vector<double>(kFirstFrameworkTag, 0);
  double peak_ = -1;
  double phase_peak_ = 0;
  std::vector<double> at_phase_peak_;
  std::vector<StackTerm> terms_;
  std::vector<TimelinePoint>* timeline_ = nullptr;
  double outside_ = 0;
};

using Handles = std::vector<CachingAllocator::Handle>;

void give_all(Step& step, Handles& handles) {
  for (const CachingAllocator::Handle handle : handles) step.give(handle);
  handles.clear();
}

// What the step needs to know of the most loaded device, from the estimate's own Calculation.
struct StepDevice {
  const Calculation& calc;
  const TrainingSetup& setup;
  MemoryBreakdown bytes;  // the idealised terms under the stack's bytes per parameter
  int slots = 0;          // layers' worth of activations held (p micro-batches on stage 1)
  double kept_per_slot = 0;
  std::vector<double> kept_tensors;  // one slot's saved tensors, bytes
  double layer_parameters = 0;       // one layer's on the device, unsharded
  double root_parameters = 0;        // the embedding, output layer and final norm here
  double parameters = 0;
  double logit_count = 0;  // logits on the device: tokens × vocabulary / t
};

StepDevice device_of(const Calculation& calc, const TrainingSetup& setup) {
  StepDevice device{calc, setup, calc.estimate.bytes, 0, 0, {}, 0, 0, 0, 0};
  const bool first = !calc.last_is_most_loaded;
  const StageMemory& stage = first ? calc.first : calc.last;
  device.slots = static_cast<int>(first ? calc.shape->num_layers : calc.layers_per_stage);
  device.kept_per_slot = calc.layer.kept_bytes * (first ? calc.in_flight_factor : 1);
  device.parameters = stage.parameters;
  device.root_parameters = stage.root_parameters;
  device.layer_parameters = (stage.parameters - stage.root_parameters) / calc.layers_per_stage;
  device.logit_count = device.bytes.logits_bytes / logits_bytes_per_token_per_vocab(setup.loss);
  // A slot's saved tensors one by one (the llama-block model names them), in their shares of the
  // slot's bytes; one block for Korthikanti's sum or a recomputed layer's input.
  const bool selective_op = setup.recompute == Recompute::kSelectiveOp;
  if (selective_op || (setup.activation_model == ActivationModel::kLlamaBlock &&
                       setup.recompute != Recompute::kFull)) {
    const std::vector<SavedTensor> tensors =
        selective_op ? selective_op_saved_tensors(*calc.shape, setup)
                     : llama_block_saved_tensors(*calc.shape, setup, setup.flash_attention);
    const double sum = saved_bytes_per_token(tensors);
    for (const SavedTensor& tensor : tensors) {
      if (sum > 0 && tensor.bytes_per_token > 0) {
        device.kept_tensors.push_back(device.kept_per_slot * tensor.bytes_per_token / sum);
      }
    }
  }
  if (device.kept_tensors.empty()) device.kept_tensors.push_back(device.kept_per_slot);
  return device;
}

Handles keep_slot(Step& step, const StepDevice& device) {
  Handles handles;
  // Under recomputation the block still makes, in its forward pass, the tensors it does not keep,
  // each freed once used: counted as one block of what its backward pass rebuilds (the whole
  // layer's saved tensors less what it keeps), a stand-in for its largest live set, which the
  // replay does not follow operation by operation.
  const auto passing = step.take(kActivations, device.calc.layer.recompute_working_bytes);
  for (const double bytes : device.kept_tensors) handles.push_back(step.take(kActivations, bytes));
  step.give(passing);
  // Under expert parallelism the layer's all-to-all buffers, while it runs.
  step.give(step.take(kActivations, device.calc.layer.dispatch_bytes));
  return handles;
}

// The loss's allocations in order, each a multiple of the logits on the device. Megatron-LM's
// vocab-parallel cross-entropy (cross_entropy.py): the BF16 logits, their FP32 copy turned into
// the softmax in place and saved; the BF16 logits die with the forward pass; the backward pass
// turns the softmax into the gradient in place and casts it to BF16. cross_entropy over FP32-upcast
// logits (torchtitan's train.py): the BF16 logits, the FP32 copy, the FP32 log-softmax it saves;
// the copy and (del pred) the logits freed; backward: the log-softmax output's gradient, the
// input's, then the BF16 cast. Returns the handle of the logits' BF16 gradient, freed by the
// output layer's backward.
CachingAllocator::Handle loss_forward_and_backward(Step& step, const StepDevice& device) {
  const double n = device.logit_count;
  if (n <= 0) return step.take(kLogits, 0);
  const auto marked = [&](CachingAllocator::Handle gradient) {
    step.mark("loss", device.slots);
    return gradient;
  };
  if (device.setup.loss == Loss::kVocabParallel) {
    const auto logits = step.take(kLogits, kBf16Bytes * n);
    const auto softmax = step.take(kLogits, kFp32Bytes * n);
    step.give(logits);
    const auto gradient = step.take(kLogits, kBf16Bytes * n);
    step.give(softmax);
    return marked(gradient);
  }
  const auto logits = step.take(kLogits, kBf16Bytes * n);
  const auto upcast = step.take(kLogits, kFp32Bytes * n);
  const auto log_softmax = step.take(kLogits, kFp32Bytes * n);
  step.give(upcast);
  step.give(logits);
  const auto output_gradient = step.take(kLogits, kFp32Bytes * n);
  const auto input_gradient = step.take(kLogits, kFp32Bytes * n);
  step.give(output_gradient);
  step.give(log_softmax);
  const auto gradient = step.take(kLogits, kBf16Bytes * n);
  step.give(input_gradient);
  return marked(gradient);
}

// The stack-independent end of each layer's backward pass: the rebuilt layer (full
// recomputation) and the slot's saved tensors freed.
void layer_backward(Step& step, const StepDevice& device, Handles& kept, int slot) {
  // The rebuilt layer, and under expert parallelism its all-to-all buffers.
  const auto rebuilt = step.take(kActivations, layer_working_bytes(device.calc.layer));
  if (device.calc.layer.recompute_working_bytes > 0) step.mark("recompute", slot);
  step.give(rebuilt);
  give_all(step, kept);
}

// The forward pass's slots, each marked.
std::vector<Handles> forward_slots(Step& step, const StepDevice& device) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    kept[index] = keep_slot(step, device);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return kept;
}

// The backward pass's slots, last first, each marked once its memory is freed.
void backward_slots(Step& step, const StepDevice& device, std::vector<Handles>& kept) {
  for (int slot = static_cast<int>(kept.size()); slot >= 1; --slot) {
    layer_backward(step, device, kept[static_cast<std::size_t>(slot) - 1], slot);
    step.mark("backward", slot);
  }
}

// Megatron-LM with Transformer Engine: the BF16 parameter buffer and the FP32 main-gradient buffer
// for the whole step (param_and_grad_buffer.py), the distributed optimiser's shards, and under
// sequence parallelism the global memory buffer that gathers the output layer's input.
void megatron_step(Step& step, const StepDevice& device) {
  const MemoryBreakdown& bytes = device.bytes;
  step.take(kWeights, bytes.weights_bytes);
  step.take(kGradients, bytes.gradients_bytes);
  step.take(kMasterWeights, bytes.master_weights_bytes);
  step.take(kOptimizerStates, bytes.optimizer_states_bytes);
  const ParallelLayout& layout = device.setup.layout;
  if (layout.sequence_parallel && layout.tensor_parallel > 1 && device.logit_count > 0) {
    const std::size_t buffer = step.term(
        "megatron-gather-buffer", "Output layer's gather buffer (BF16)",
        "Megatron-LM, megatron/core/tensor_parallel/layers.py, "
        "LinearWithGradAccumulationAndAsyncCommunication.forward: get_global_memory_buffer()");
    step.take(buffer, kBf16Bytes * device.setup.sequence_length / layout.context_parallel *
                          device.setup.micro_batch_sequences * device.calc.shape->hidden_size);
  }
  step.mark("start", 0);
  std::vector<Handles> kept = forward_slots(step, device);
  step.give(loss_forward_and_backward(step, device));
  backward_slots(step, device, kept);
}

// torchtitan on FSDP2 (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp; FSDP2 in
// torch/distributed/_composable/fsdp): FP32 sharded parameters and AdamW's moments for the whole
// step, gradients created by each layer's reduce-scatter and freed by zero_grad; each block
// gathered in BF16 for its passes, the next one's all-gather issued early; the root (embedding,
// final norm, output layer) gathered from its forward pass to the end of its backward pass.
void torchtitan_step(Step& step, const StepDevice& device) {
  const MemoryBreakdown& bytes = device.bytes;
  const ParallelLayout& layout = device.setup.layout;
  const std::string fsdp = "PyTorch's FSDP2, torch/distributed/_composable/fsdp/";
  const std::size_t gathered =
      step.term("fsdp-gathered-layers",
                device.setup.fp8_all_gather ? "Gathered layers (FP8 linear weights)"
                                            : "Gathered layers (BF16)",
                fsdp +
                    "_fsdp_collectives.py, foreach_all_gather and foreach_all_gather_copy_out; "
                    "_fsdp_param_group.py, the implicit forward prefetch");
  const std::size_t root = step.term(
      "fsdp-root", "Root module, unsharded (BF16)",
      fsdp + "_fsdp_state.py, FSDPState._lazy_init: the root is not resharded after forward");
  const std::size_t unsharded_gradients =
      step.term("fsdp-unsharded-gradients", "Unsharded gradients (BF16)",
                fsdp + "_fsdp_param_group.py, FSDPParamGroup.post_backward");
  const std::size_t reduce_input = step.term(
      "fsdp-reduce-scatter-input", "Reduce-scatter input (FP32)",
      fsdp +
          "_fsdp_collectives.py, foreach_reduce: reduce_scatter_input in reduce_dtype, kept "
          "until the next post_backward (ReduceScatterState)");
  step.take(kWeights, bytes.weights_bytes);
  step.take(kMasterWeights, bytes.master_weights_bytes);
  step.take(kOptimizerStates, bytes.optimizer_states_bytes);
  const double shards = device.calc.zero_shards;
  const double layer = device.layer_parameters;
  const int slots = device.slots;
  // One block's gathered bytes: BF16, or with FP8 all-gather (torchao's
  // enable_fsdp_float8_all_gather, fsdp_utils.py, WeightWithDynamicFloat8CastTensor) its linear
  // weights in FP8, cast before the all-gather, and the rest (norms) in BF16.
  const double fp8_weights =
      device.setup.fp8_all_gather ? fp8_layer(*device.calc.shape, layout, false).weights : 0;
  const double gathered_layer = kBf16Bytes * layer - (kBf16Bytes - kFp8Bytes) * fp8_weights;

  if (layout.pipeline_parallel > 1) {
    // Under pipelining torchtitan never reshards after forward, and the pipeline schedule holds
    // gradient synchronisation until the last micro-batch (torch/distributed/pipelining/stage.py,
    // backward_maybe_with_nosync): the stage's parameters stay gathered and its gradients
    // accumulate unsharded in FP32 (FSDPParam.to_accumulated_grad_if_needed).
    const std::size_t accumulated =
        step.term("fsdp-accumulated-gradients", "Accumulated gradients (FP32, unsharded)",
                  fsdp +
                      "_fsdp_param.py, FSDPParam.to_accumulated_grad_if_needed; "
                      "torch/distributed/pipelining/stage.py, backward_maybe_with_nosync");
    step.take(gathered, kBf16Bytes * device.parameters -
                            (kBf16Bytes - kFp8Bytes) * fp8_weights * device.calc.layers_per_stage);
    step.take(accumulated, kFp32Bytes * device.parameters);
    step.mark("start", 0);
    std::vector<Handles> kept = forward_slots(step, device);
    step.give(loss_forward_and_backward(step, device));
    backward_slots(step, device, kept);
    step.take(kGradients, bytes.gradients_bytes);
    return;
  }

  // ZeRO 3: reshard after forward but the last block (torchtitan keeps it for backward); ZeRO 2:
  // reshard_after_forward=False, every block stays gathered until its backward.
  const bool reshard = layout.zero_stage >= 3;
  step.mark("start", 0);
  const auto root_handle = step.take(root, kBf16Bytes * device.root_parameters);
  std::vector<Handles> copies(static_cast<std::size_t>(slots));
  auto all_gather = step.take(gathered, gathered_layer);
  std::vector<Handles> kept(static_cast<std::size_t>(slots));
  const std::size_t count = static_cast<std::size_t>(slots);
  for (std::size_t index = 0; index < count; ++index) {
    copies[index] = {step.take(gathered, gathered_layer)};
    // The next block's all-gather goes out before this one runs; its copy-in frees this one's
    // all-gather output.
    if (index + 1 < count) {
      const auto next = step.take(gathered, gathered_layer);
      step.give(all_gather);
      all_gather = next;
    } else {
      step.give(all_gather);
    }
    kept[index] = keep_slot(step, device);
    if (reshard && index + 1 < count) give_all(step, copies[index]);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  const auto logits_gradient = loss_forward_and_backward(step, device);
  // The output layer's backward: its weight's unsharded gradient waits for the root's
  // reduce-scatter at the end of the backward pass.
  const double head = device.calc.counts.output_head > 0 ? device.calc.counts.output_head
                                                         : device.calc.counts.embedding;
  const auto head_gradient = step.take(unsharded_gradients, kBf16Bytes * head);
  step.give(logits_gradient);

  CachingAllocator::Handle previous_reduce = step.take(reduce_input, 0);
  for (std::size_t index = count; index-- > 0;) {
    if (copies[index].empty()) {
      const auto output = step.take(gathered, gathered_layer);
      copies[index] = {step.take(gathered, gathered_layer)};
      step.give(output);
    }
    const auto layer_gradients = step.take(unsharded_gradients, kBf16Bytes * layer);
    layer_backward(step, device, kept[index], static_cast<int>(index) + 1);
    const auto reduce = step.take(reduce_input, kFp32Bytes * layer);
    step.give(layer_gradients);
    step.take(kGradients, kFp32Bytes * layer / shards);
    step.give(previous_reduce);
    previous_reduce = reduce;
    give_all(step, copies[index]);
    step.mark("backward", static_cast<int>(index) + 1);
  }
  // The root's post-backward: the embedding's gradient joins the output layer's, both reduced.
  const auto embedding_gradient =
      step.take(unsharded_gradients, kBf16Bytes * (device.root_parameters - head));
  const auto root_reduce = step.take(reduce_input, kFp32Bytes * device.root_parameters);
  step.give(head_gradient);
  step.give(embedding_gradient);
  step.take(kGradients, kFp32Bytes * device.root_parameters / shards);
  step.give(previous_reduce);
  step.give(root_reduce);
  step.give(root_handle);
  step.mark("backward", 0);
}

// DeepSpeed ZeRO (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py): the model states as the
// stage shards them; the reduce bucket (ipg buffer) of reduce_bucket_size elements in BF16 through
// the backward pass; under ZeRO 3 each layer gathered for its passes with the next prefetched
// (stage3_prefetch_bucket_size), and the gradient partitions' flat buffer for the whole step.
void deepspeed_step(Step& step, const StepDevice& device) {
  const MemoryBreakdown& bytes = device.bytes;
  const ParallelLayout& layout = device.setup.layout;
  step.take(kWeights, bytes.weights_bytes);
  step.take(kMasterWeights, bytes.master_weights_bytes);
  step.take(kOptimizerStates, bytes.optimizer_states_bytes);
  // ZeRO 2 and 3 hold their gradient partitions in a flat buffer for the step; ZeRO 0 and 1 keep
  // each parameter's BF16 gradient, created in the backward pass.
  const bool partitioned = layout.zero_stage >= 2;
  if (partitioned) step.take(kGradients, bytes.gradients_bytes);
  const bool stage3 = layout.zero_stage >= 3;
  const double layer = device.layer_parameters;
  std::size_t gathered = 0;
  if (stage3) {
    gathered = step.term("zero3-gathered-layers", "Gathered layers, prefetch (BF16)",
                         "DeepSpeed, deepspeed/runtime/zero/partitioned_param_coordinator.py, "
                         "fetch_sub_module (stage3_prefetch_bucket_size 5e7)");
  }
  const std::size_t bucket = step.term(
      "zero-reduce-bucket", "Reduce bucket (BF16)",
      stage3 ? "DeepSpeed, deepspeed/runtime/zero/stage3.py, "
               "DeepSpeedZeroOptimizer_Stage3.__init__: __ipg_bucket_flat_buffer"
             : "DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py, "
               "DeepSpeedZeroOptimizer.backward: ipg_buffer (and buf_1 with overlap_comm)");
  const double bucket_bytes = kBf16Bytes * kDeepSpeedReduceBucketElements;
  // ZeRO 3 keeps parameters below stage3_param_persistence_threshold gathered for the whole step
  // (partition_parameters.py, ds_persist), beside their partitions: the norms' weights, each h
  // wide, while h is under the threshold.
  if (stage3 && device.calc.shape->hidden_size < kDeepSpeedPersistenceThresholdElements) {
    const std::size_t persisted = step.term(
        "zero3-persisted-parameters", "Small parameters kept gathered (BF16)",
        "DeepSpeed, deepspeed/runtime/zero/partition_parameters.py, ds_persist for parameters "
        "below stage3_param_persistence_threshold (1e5)");
    step.take(persisted,
              kBf16Bytes * (device.calc.layers_per_stage * device.calc.counts.norms_per_layer +
                            device.calc.counts.final_norm));
  }
  if (stage3) step.take(bucket, bucket_bytes);
  const double prefetch = std::min(layer, kDeepSpeedPrefetchBucketElements);
  step.mark("start", 0);
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    Handles in_flight;
    if (stage3) {
      in_flight.push_back(step.take(gathered, kBf16Bytes * layer));
      in_flight.push_back(step.take(gathered, kBf16Bytes * prefetch));
    }
    kept[index] = keep_slot(step, device);
    give_all(step, in_flight);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  const auto logits_gradient = loss_forward_and_backward(step, device);
  // ZeRO 1 and 2 allocate their bucket as the backward pass starts, two with overlap_comm.
  const bool overlap = device.setup.overlap_comm == OverlapComm::kOn ||
                       (device.setup.overlap_comm == OverlapComm::kDefault && stage3);
  Handles buckets;
  if (!stage3) {
    buckets.push_back(step.take(bucket, bucket_bytes));
    if (overlap) buckets.push_back(step.take(bucket, bucket_bytes));
  }
  step.give(logits_gradient);
  for (int slot = device.slots; slot >= 1; --slot) {
    Handles in_flight;
    if (stage3) {
      in_flight.push_back(step.take(gathered, kBf16Bytes * layer));
      in_flight.push_back(step.take(gathered, kBf16Bytes * prefetch));
      // The layer's unsharded gradients, copied into the bucket as they come.
      in_flight.push_back(step.take(kGradients, kBf16Bytes * layer));
    }
    if (!partitioned) step.take(kGradients, bytes.gradients_bytes / device.slots);
    layer_backward(step, device, kept[static_cast<std::size_t>(slot) - 1], slot);
    give_all(step, in_flight);
    step.mark("backward", slot);
  }
  give_all(step, buckets);
}

// Devices that talk to others: one communicator per parallel group of more than one device.
double communicators(const ParallelLayout& layout) {
  double count = 0;
  for (const int degree : {layout.data_parallel, layout.tensor_parallel, layout.pipeline_parallel,
                           layout.context_parallel, layout.expert_parallel}) {
    if (degree > 1) count += 1;
  }
  return count;
}

// The CUDA context and NCCL's buffers: on the device, outside the allocator.
StackTerm cuda_context_term() {
  return {"cuda-context", "CUDA context", kCudaContextBytes,
          "pytorch/pytorch#86509 and #109888: about 400 MB with lazy module loading", false};
}
StackTerm nccl_term(const ParallelLayout& layout) {
  return {"nccl-buffers", "NCCL buffers",
          communicators(layout) * kNcclChannels * kNcclConnectionBytes,
          "NCCL, src/init.cc: NCCL_BUFFSIZE, the LL and LL128 FIFOs, per channel and "
          "communicator",
          false};
}

// One step of the stack through the allocator, recording its timeline when asked.
Step simulate(const Calculation& calc, const TrainingSetup& setup,
              std::vector<TimelinePoint>* timeline) {
  const StepDevice device = device_of(calc, setup);
  Step step;
  step.record(timeline, cuda_context_term().bytes + nccl_term(setup.layout).bytes);
  const BlasWorkspaces workspaces = blas_workspaces(setup.device_id);
  step.take(kWorkspace, workspaces.cublas);
  step.take(kWorkspace, workspaces.cublaslt);
  switch (setup.stack) {
    case Stack::kMegatron:
      megatron_step(step, device);
      break;
    case Stack::kTorchtitan:
      torchtitan_step(step, device);
      break;
    case Stack::kDeepSpeed:
      deepspeed_step(step, device);
      break;
    case Stack::kIdeal:
      break;
  }
  step.mark("optimizer", 0);
  return step;
}

}  // namespace

std::vector<TimelinePoint> stack_timeline(const Calculation& calc, const TrainingSetup& setup) {
  std::vector<TimelinePoint> points;
  simulate(calc, setup, &points);
  return points;
}

void apply_stack(Calculation& calc, const TrainingSetup& setup) {
  Estimate& estimate = calc.estimate;
  const Step step = simulate(calc, setup, nullptr);

  MemoryBreakdown& bytes = estimate.bytes;
  bytes.weights_bytes = step.at_peak(kWeights);
  bytes.gradients_bytes = step.at_peak(kGradients);
  bytes.master_weights_bytes = step.at_peak(kMasterWeights);
  bytes.optimizer_states_bytes = step.at_peak(kOptimizerStates);
  bytes.activations_bytes = step.at_peak(kActivations);
  bytes.logits_bytes = step.at_peak(kLogits);
  bytes.dequantization_bytes = 0;
  estimate.stack_terms = step.terms_at_peak();
  bytes.framework_bytes = 0;
  for (const StackTerm& term : estimate.stack_terms) bytes.framework_bytes += term.bytes;

  StackTerm workspace{"cublas-workspace", "cuBLAS workspaces", step.at_peak(kWorkspace),
                      "PyTorch, aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize "
                      "and getCUDABlasLtWorkspaceSize",
                      true};
  const StackTerm context = cuda_context_term();
  const StackTerm nccl = nccl_term(setup.layout);
  bytes.runtime_bytes = workspace.bytes + context.bytes + nccl.bytes;
  estimate.stack_terms.push_back(workspace);
  estimate.stack_terms.push_back(context);
  estimate.stack_terms.push_back(nccl);

  estimate.peak_allocated_bytes = step.peak_allocated();
  estimate.peak_reserved_bytes = step.peak_reserved();
  bytes.allocator_cache_bytes = estimate.peak_reserved_bytes - estimate.peak_allocated_bytes;
  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = estimate.peak_reserved_bytes + context.bytes + nccl.bytes;
}

}  // namespace trainmem
