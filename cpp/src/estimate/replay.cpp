// A training stack's step for the estimate (replay.hpp).
#include "estimate/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "activations/layer.hpp"
#include "estimate/rollout.hpp"
#include "estimate/stage.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

std::vector<SavedTensor> rebuilt_layer_tensors(const ModelShape& shape, const TrainingSetup& setup,
                                               const StagePlacement& stage) {
  TrainingSetup rebuilt = setup;
  if (rebuilt.recompute == Recompute::kFull) rebuilt.recompute = Recompute::kNone;
  // Megatron-LM's recompute modules rebuild what they dropped: the layer's whole list.
  for (const RecomputeModule& module : kRecomputeModules) rebuilt.*module.member = false;
  if (!hybrid_linear_attention(shape)) {
    return llama_block_saved_tensors(shape, rebuilt, setup.flash_attention);
  }
  const LayerStack stack = layer_stack_of(rebuilt);
  std::vector<SavedTensor> largest;
  double largest_bytes = -1;
  for (const char* kind = kHybridLayerKinds; *kind != '\0'; ++kind) {
    if (layers_of_kinds_between(shape, stage.first_layer, stage.layers,
                                std::string_view(kind, 1)) == 0) {
      continue;
    }
    std::vector<SavedTensor> tensors =
        layer_kind_tensors(shape, rebuilt, stack, setup.flash_attention, *kind);
    const double bytes = saved_bytes_per_token(tensors);
    if (bytes > largest_bytes) {
      largest_bytes = bytes;
      largest = std::move(tensors);
    }
  }
  return largest;
}

replay::StepDevice step_device(const TrainingSetup& setup, const ModelShape& shape,
                               const Placement& placement, const StagePlacement& stage,
                               const ActivationsPerLayer& layer, const Breakdown& whole) {
  replay::StepDevice device{
      setup, shape, placement.counts, whole, 0, 0, {}, {}, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  // Its micro-batches in flight times its layers (L on the first stage of an even split), each
  // slot a layer's saved tensors (a share of them where the interleaved schedule holds a fraction
  // of a micro-batch's layers).
  const WholeSlots slots = whole_slots(stage);
  device.slots = slots.count;
  device.kept_per_slot = layer.kept_bytes * slots.scale;
  device.recompute_working = layer.recompute_working_bytes;
  device.dispatch = layer.dispatch.value();
  device.layers_per_stage = stage.layers;
  device.zero_shards = placement.zero_shards;
  device.parameters = stage.parameters;
  device.root_parameters = stage.root_parameters;
  device.layer_parameters = (stage.parameters - stage.root_parameters) / stage.layers;
  device.layer_expert_parameters = stage.expert_parameters / stage.layers;
  device.expert_zero_shards = placement.expert_zero_shards;
  if (megatron_fsdp(setup)) {
    // The stage's layers, then the multi-token-prediction modules' (placement.cpp: past the
    // decoder's, of the mixture's kind), each a unit after the decoder's (GPTModel builds mtp
    // after decoder).
    StagePlacement modules;
    modules.first_layer = shape.num_layers;
    modules.layers = stage.mtp_layers;
    const StagePlacement& mtp = modules;
    for (const StagePlacement* held : {&stage, &mtp}) {
      for (const LayerParameters& unit :
           stage_layer_parameters(shape, setup.layout, placement, *held)) {
        device.layer_units.push_back({unit.parameters, unit.expert_parameters});
      }
    }
  }
  device.layer_weight_bytes = kBf16Bytes * device.layer_parameters;
  device.layer_trainable_parameters = device.layer_parameters;
  if (setup.lora_rank > 0) {
    // The frozen base's linear weights in their storage (QLoRA's NF4 packed in BF16, as
    // bnb_4bit_quant_storage lets ZeRO and FSDP shard them); the rest of the layer, its norms and
    // the adapters (among the stage's parameters), in BF16.
    const double t = setup.layout.tensor_parallel;
    const double linear = linear_layers(shape).weights / t;
    device.layer_trainable_parameters =
        lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets) / t;
    // The norms in BF16 (FP32 under prepare_model_for_kbit_training), the adapters in BF16 (FP32,
    // StackRow::fp32_adapters).
    const double adapters = device.layer_trainable_parameters;
    const double adapter_bytes = stack_row(setup.stack).fp32_adapters ? kFp32Bytes : kBf16Bytes;
    const double other_bytes = setup.kbit_prep ? kFp32Bytes : kBf16Bytes;
    device.layer_weight_bytes = other_bytes * (device.layer_parameters - linear - adapters) +
                                adapter_bytes * adapters +
                                base_linear_bytes_per_parameter(shape, setup.base_weights) * linear;
  }
  // The loss's tokens (its own and each multi-token-prediction module's) on the stage that holds
  // the logits, and their logits on this device.
  if (whole[Term::kLogits] > 0 && setup.loss == Loss::kGrpo && verl_trainer(setup)) {
    // verl's: every packed token's logits, prompt and response (use_remove_padding), t is 1.
    device.loss_tokens = layer.tokens_on_device;
    device.logit_count = layer.tokens_on_device * static_cast<double>(shape.vocab_size);
  } else if (whole[Term::kLogits] > 0 && setup.loss == Loss::kGrpo) {
    // GRPO's: each sequence's completion, and the logits of its last C + 1 positions (t is 1).
    const double sequences = layer.tokens_on_device / setup.sequence_length;
    device.loss_tokens = sequences * setup.completion_length;
    device.logit_count = sequences * (setup.completion_length + 1) * shape.vocab_size;
  } else if (whole[Term::kLogits] > 0) {
    device.loss_tokens = layer.tokens_on_device * (1 + stage.mtp_layers);
    device.logit_count = device.loss_tokens * std::ceil(static_cast<double>(shape.vocab_size) /
                                                        setup.layout.tensor_parallel);
  }
  device.fp8_layer_weights = fp8_layer(shape, setup.layout, false).weights;
  if (torchao_mxfp8(setup)) {
    device.casts = mx_linear_backward_casts(shape, layer.tokens_on_device);
    device.cast_slots = device.slots;
  }
  if (setup.precision == Precision::kNvfp4Mixed) {  // one stage holds every layer (check_nvfp4)
    device.casts = nvfp4_linear_backward_casts(shape, setup.fused_qkv, layer.tokens_on_device);
    device.cast_slots = nvfp4_layers(shape, setup);
    device.tail_recompute_working = layer.tail_recompute_working_bytes;
    const double mean = layer.kept_per_token.value();
    if (mean > 0) {
      device.converted_kept_scale = layer.converted_kept_per_token / mean;
      device.tail_kept_scale = layer.tail_kept_per_token / mean;
    }
  }
  const double dense = shape.num_experts > 1
                           ? dense_layers_between(shape, stage.first_layer, stage.layers)
                           : stage.layers;
  device.dense_layers = dense;
  device.mixture_layers = stage.layers - dense;
  device.output_layer = setup.layout.pipeline_parallel == 1 || stage.role == StageRole::kLast;
  device.embedding = setup.layout.pipeline_parallel == 1 || stage.role == StageRole::kFirst;
  device.tokens = layer.tokens_on_device;
  device.pipeline_micro_batches = setup.layout.pipeline_parallel;
  device.virtual_stages = setup.layout.virtual_pipeline_stages;
  device.micro_batches_in_flight = stage.micro_batches_in_flight;
  // --defer-embedding-wgrad-compute: the first `limit` micro-batches (all, at 0) of the step's n
  // append their output-layer input and gradient to the last stage's buffers
  // (tensor_parallel/layers.py), drained after the last backward pass (schedules.py,
  // finish_embedding_wgrad_compute). By the last micro-batch's backward pass the earlier
  // min(n - 1, limit) are held, and the last's own when n - 1 < limit.
  if (setup.defer_embedding_wgrad && device.output_layer && device.logit_count > 0) {
    const double n = pipeline_micro_batches(setup);
    const double limit = setup.wgrad_deferral_limit > 0
                             ? static_cast<double>(setup.wgrad_deferral_limit)
                             : std::numeric_limits<double>::infinity();
    device.deferred_wgrad_micro_batches = std::min(n - 1, limit);
    device.defers_last_wgrad = n - 1 < limit;
  }
  // Megatron-LM's data-loader mask, [b, 1, s, s] booleans (gpt_dataset.py,
  // _get_ltor_masks_and_position_ids: torch.tril(...) < 0.5), moved whole to the device by
  // get_batch on the stages that read the data (pretrain_gpt.py; the other tensor-parallel ranks
  // receive it into torch.empty, megatron/core/utils.py get_batch_on_this_tp_rank); context
  // parallelism keeps its 2 of 2·c row blocks, a copy (get_batch_on_this_cp_rank: index_select on
  // dimension 2). It is passed to every layer: the checkpoints of full and selective recomputation
  // save it (tensor_parallel/random.py, CheckpointFunction: save_for_backward(*args)) to the
  // micro-batch's backward pass; without them Transformer Engine's causal attention never reads it,
  // and it is freed as the forward step returns.
  if (setup.stack == Stack::kMegatron && !setup.no_dataloader_attention_mask &&
      (device.embedding || device.output_layer)) {
    const double s = setup.sequence_length;
    const double c = setup.layout.context_parallel;
    device.attention_mask_whole_bytes = static_cast<double>(setup.micro_batch_sequences) * s * s;
    device.attention_mask_bytes = device.attention_mask_whole_bytes / c;
    device.attention_mask_kept =
        setup.recompute == Recompute::kFull || setup.recompute == Recompute::kSelective;
    device.attention_masks_held =
        device.attention_mask_kept
            ? data_micro_batches_held(setup.layout, pipeline_micro_batches(setup), stage.index)
            : 1;
  }
  device.rollout_engine = rollout_engine_bytes(setup, verl_startup_bytes(setup, whole));
  if (verl_trainer(setup)) {
    device.rollout_weights = rollout_weights_bytes(setup, shape);
    const SyncBuckets buckets = verl_sync_buckets(setup, shape);
    device.sync_sent_bytes = buckets.sent;
    device.sync_filling_bytes = buckets.filling;
    device.sync_gathered_bytes = buckets.gathered;
    if (setup.log_prob_micro_batch_sequences > 0) {
      device.log_prob_scale =
          static_cast<double>(setup.log_prob_micro_batch_sequences) / setup.micro_batch_sequences;
    }
  }
  device.generation_micro_batches =
      std::isfinite(pipeline_micro_batches(setup)) ? pipeline_micro_batches(setup) : 1;
  device.stage_boundary_bytes = kBf16Bytes * layer.tokens_on_device * shape.hidden_size /
                                (setup.layout.sequence_parallel ? setup.layout.tensor_parallel : 1);
  // A slot's saved tensors one by one (the llama-block model names them), in their shares of the
  // slot's bytes; one block for Korthikanti's sum or a recomputed layer's input.
  const bool selective_op = setup.recompute == Recompute::kSelectiveOp;
  // A hybrid's slot is the mean of two kinds of layer (stage.cpp): one block.
  if (!hybrid_linear_attention(shape) &&
      (selective_op || (layers_tensor_by_tensor(setup) && setup.recompute != Recompute::kFull))) {
    const std::vector<SavedTensor> tensors =
        selective_op ? selective_op_saved_tensors(shape, setup)
                     : llama_block_saved_tensors(shape, setup, setup.flash_attention);
    const double sum = saved_bytes_per_token(tensors);
    for (const SavedTensor& tensor : tensors) {
      if (sum > 0 && tensor.bytes_per_token > 0) {
        device.kept_tensors.push_back(
            {device.kept_per_slot * tensor.bytes_per_token / sum, tensor.exchange});
      }
    }
  }
  if (device.kept_tensors.empty())
    device.kept_tensors.push_back({device.kept_per_slot, Exchange::kNone});
  if (setup.paged_optimizer) {
    // bitsandbytes pages the state of each parameter (an FSDP unit's flat shard) of 10^5
    // elements or more: under LoRA the adapters' larger matrices; under full training every
    // weight but the norms' (h each), the embedding and output layer among them.
    const double shards = setup.layout.zero_stage >= 3 ? placement.zero_shards : 1;
    if (setup.lora_rank > 0) {
      device.layer_paged_parameters = lora_parameters_in_matrices_of_at_least(
          shape, setup.lora_rank, setup.lora_targets, kPagedStateMinElements, shards);
    } else {
      // Each linear weight, and the embedding and output layer (V × h each), where large enough;
      // the norms are h each.
      device.layer_paged_parameters =
          linear_parameters_in_matrices_of_at_least(shape, kPagedStateMinElements, shards);
      const double matrix = static_cast<double>(shape.vocab_size) * shape.hidden_size;
      device.root_paged_parameters = matrix / shards >= kPagedStateMinElements
                                         ? device.root_parameters - placement.counts.final_norm
                                         : 0;
    }
    const double paged =
        device.layers_per_stage * device.layer_paged_parameters + device.root_paged_parameters;
    device.paged_state = replay::trained_parameters(device).state_bytes * paged;
  }
  if (stack_row(setup.stack).follows_gradients) {
    for (const SavedTensor& tensor : rebuilt_layer_tensors(shape, setup, stage)) {
      if (tensor.bytes_per_token > 0) {
        device.gradient_tensors.push_back(
            {layer.tokens_on_device * tensor.bytes_per_token, tensor.exchange});
      }
    }
  }
  return device;
}

namespace {

// A stack's own term (or the runtime's), as a working of its own.
Working stack_term_working(const StackTerm& term, const std::string& stack, const Pen& pen) {
  Working working;
  working.id = "stack-" + term.id;
  working.label = term.label;
  working.term = term.term;
  working.lines.push_back({pen.said(term.bytes, [&] {
    return format_bytes(term.bytes) +
           (term.in_allocator ? " at the step's peak" : ", outside PyTorch's caching allocator");
  })});
  working.sources.push_back(stack + ": " + term.source);
  working.shows_total = false;
  return working;
}

}  // namespace

StackHoldings apply_stack(Ledger& ledger, const replay::StepDevice& device) {
  const replay::Replayed replayed = replay::replay(device);
  const Pen& pen = ledger.pen();
  for (const Term term : replay::kReplayedTerms) {
    ledger.device[term] = replayed.at_peak[term];
    if (Working* working = ledger.find_working(term)) {
      working->after = "; at the step's peak, in the allocator's blocks: " +
                       format_bytes(replayed.at_peak[term]);
    }
  }
  for (const StackTerm& term : replayed.terms) {
    ledger.device[term.term] += term.bytes;
    if (ledger.writing()) {
      ledger.add_working(stack_term_working(term, choice_name(device.setup.stack), pen));
    }
  }
  StackHoldings holdings{replayed.terms, replayed.peak_allocated, replayed.peak_reserved};
  const double cache = holdings.peak_reserved_bytes - holdings.peak_allocated_bytes;
  ledger.device[Term::kAllocatorCache] = cache;
  if (ledger.writing()) {
    Working working;
    working.id = term_row(Term::kAllocatorCache).id;
    working.label = term_row(Term::kAllocatorCache).label;
    working.term = Term::kAllocatorCache;
    working.lines.push_back({pen.said(holdings.peak_reserved_bytes, [&] {
      return "reserved peak " + format_bytes(holdings.peak_reserved_bytes);
    }) - pen.said(holdings.peak_allocated_bytes, [&] {
      return "allocated peak " + format_bytes(holdings.peak_allocated_bytes);
    })});
    working.sources.push_back(
        "the step replayed through PyTorch's caching allocator's rules: 512 B rounding, 2 MiB and "
        "20 MiB segments, best fit and splitting (c10/cuda/CUDACachingAllocator.cpp)");
    ledger.add_working(working);
  }
  return holdings;
}

}  // namespace trainmem
