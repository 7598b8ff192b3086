// DeepSpeed ZeRO replayed (stack_frameworks.hpp): the order in which it allocates and frees in one
// training step, with the sources docs/formulas.md quotes.
#include <algorithm>

#include "stacks/stack_frameworks.hpp"
#include "trainmem/format.hpp"

namespace trainmem::replay {

namespace {

// transformers builds a quantised model outside deepspeed.zero.Init (modeling_utils.py,
// get_init_context: zero.Init only for a model that is not quantised), so under ZeRO 3 each
// rank holds the whole quantised model until DeepSpeed partitions it: its blocks stay in the
// allocator's cache for the step.
void load_whole_quantised_model(Step& step, const StepDevice& device) {
  const bool loads_whole = device.setup.layout.zero_stage >= 3 && device.setup.lora_rank > 0 &&
                           device.setup.base_weights != BaseWeights::kBf16 &&
                           device.zero_shards > 1;
  if (!loads_whole) return;
  // Partitioned parameter by parameter: each one's shard copied out and the whole freed, so the
  // peak is the whole model (the shards reuse its cached blocks).
  step.warming_up(true);
  step.give(step.take(tag(Term::kWeights), device.bytes[Term::kWeights] * device.zero_shards));
  step.warming_up(false);
}

// The model states as the stage shards them. ZeRO 2 and 3 hold their gradient partitions in a
// flat buffer for the step; ZeRO 0 and 1 keep each parameter's BF16 gradient, created in the
// backward pass.
void take_zero_model_states(Step& step, const StepDevice& device) {
  take_model_states(step, device);
  if (device.setup.layout.zero_stage >= 2) {
    step.take(tag(Term::kGradients), device.bytes[Term::kGradients]);
  }
}

// DeepSpeed's own terms, and what its passes take.
struct DeepSpeedPlan {
  bool stage3 = false;
  bool partitioned = false;  // the gradients in ZeRO 2 and 3's flat buffer
  bool offloaded = false;    // ZeRO-Offload: the gradients' partition on the host
  std::size_t gathered = 0;  // under ZeRO 3
  std::size_t bucket = 0;
  double bucket_bytes = 0;
  double layer_bytes = 0;
  double prefetch_bytes = 0;
};

DeepSpeedPlan deepspeed_plan(Step& step, const StepDevice& device) {
  DeepSpeedPlan plan;
  const TrainingSetup& setup = device.setup;
  plan.stage3 = setup.layout.zero_stage >= 3;
  plan.partitioned = setup.layout.zero_stage >= 2;
  plan.offloaded = setup.offload != Offload::kNone;
  plan.bucket_bytes = kBf16Bytes * setup.zero_reduce_bucket;
  if (plan.stage3) {
    plan.gathered = step.term("zero3-gathered-layers", "Gathered layers, prefetch (BF16)",
                              "DeepSpeed, deepspeed/runtime/zero/partitioned_param_coordinator.py, "
                              "fetch_sub_module (stage3_prefetch_bucket_size " +
                                  format_count(setup.zero_prefetch_bucket) + ")");
  }
  plan.bucket = step.term(
      "zero-reduce-bucket", "Reduce bucket (BF16)",
      plan.stage3 ? "DeepSpeed, deepspeed/runtime/zero/stage3.py, "
                    "DeepSpeedZeroOptimizer_Stage3.__init__: __ipg_bucket_flat_buffer"
                  : "DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py, "
                    "DeepSpeedZeroOptimizer.backward: ipg_buffer (and buf_1 with overlap_comm)");
  plan.layer_bytes = device.layer_weight_bytes;
  // The prefetch bucket counts elements; a layer's bytes per element are its storage's.
  plan.prefetch_bytes =
      plan.layer_bytes * std::min(1.0, setup.zero_prefetch_bucket / device.layer_parameters);
  return plan;
}

// ZeRO 3 keeps parameters below stage3_param_persistence_threshold gathered for the whole step
// (partition_parameters.py, ds_persist), beside their partitions: the norms' weights, each h
// wide, while h is under the threshold.
void take_persisted_parameters(Step& step, const StepDevice& device, const DeepSpeedPlan& plan) {
  const double threshold = device.setup.zero_persistence_threshold;
  if (!(plan.stage3 && device.shape.hidden_size <= threshold)) return;
  const std::size_t persisted = step.term(
      "zero3-persisted-parameters", "Small parameters kept gathered (BF16)",
      "DeepSpeed, deepspeed/runtime/zero/partition_parameters.py, ds_persist for parameters "
      "of stage3_param_persistence_threshold (" +
          format_count(threshold) + ") elements or fewer");
  step.take(persisted, kBf16Bytes * (device.layers_per_stage * device.counts.norms_per_layer +
                                     device.counts.final_norm));
}

// Under ZeRO 3, the layer gathered for its pass and the next prefetched.
Handles gather_layer_and_prefetch(Step& step, const DeepSpeedPlan& plan) {
  Handles in_flight;
  if (plan.stage3) {
    in_flight.push_back(step.take(plan.gathered, plan.layer_bytes));
    in_flight.push_back(step.take(plan.gathered, plan.prefetch_bytes));
  }
  return in_flight;
}

std::vector<Handles> deepspeed_forward_pass(Step& step, const StepDevice& device,
                                            const DeepSpeedPlan& plan) {
  std::vector<Handles> kept(static_cast<std::size_t>(device.slots));
  for (std::size_t index = 0; index < kept.size(); ++index) {
    Handles in_flight = gather_layer_and_prefetch(step, plan);
    kept[index] = keep_slot(step, device);
    give_all(step, in_flight);
    step.mark("forward", static_cast<int>(index) + 1);
  }
  return kept;
}

// ZeRO 1 and 2 allocate their bucket as the backward pass starts, two with overlap_comm.
Handles take_reduce_buckets(Step& step, const StepDevice& device, const DeepSpeedPlan& plan) {
  const bool overlap = device.setup.overlap_comm == OverlapComm::kOn ||
                       (device.setup.overlap_comm == OverlapComm::kDefault && plan.stage3);
  Handles buckets;
  if (!plan.stage3) {
    buckets.push_back(step.take(plan.bucket, plan.bucket_bytes));
    if (overlap) buckets.push_back(step.take(plan.bucket, plan.bucket_bytes));
  }
  return buckets;
}

void deepspeed_backward_pass(Step& step, const StepDevice& device, const DeepSpeedPlan& plan,
                             std::vector<Handles>& kept) {
  for (int slot = device.slots; slot >= 1; --slot) {
    Handles in_flight = gather_layer_and_prefetch(step, plan);
    if (plan.stage3 || plan.offloaded) {
      // The layer's unsharded gradients (its adapters' under LoRA), copied into the bucket as
      // they come (and from it to the host under ZeRO-Offload).
      in_flight.push_back(
          step.take(tag(Term::kGradients), kBf16Bytes * device.layer_trainable_parameters));
    }
    if (!plan.partitioned) {
      step.take(tag(Term::kGradients), device.bytes[Term::kGradients] / device.slots);
    }
    layer_backward(step, device, kept[static_cast<std::size_t>(slot) - 1], slot);
    give_all(step, in_flight);
    step.mark("backward", slot);
  }
}

}  // namespace

// DeepSpeed ZeRO (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py): the model states as the
// stage shards them; the reduce bucket (ipg buffer) of reduce_bucket_size elements in BF16 through
// the backward pass; under ZeRO 3 each layer gathered for its passes with the next prefetched
// (stage3_prefetch_bucket_size), and the gradient partitions' flat buffer for the whole step.
void deepspeed_step(Step& step, const StepDevice& device) {
  load_whole_quantised_model(step, device);
  take_zero_model_states(step, device);
  const DeepSpeedPlan plan = deepspeed_plan(step, device);
  take_persisted_parameters(step, device, plan);
  if (plan.stage3) step.take(plan.bucket, plan.bucket_bytes);
  // QLoRA dequantises one linear weight at a time to BF16 (bitsandbytes), in both passes.
  const auto dequantised =
      step.take(tag(Term::kDequantization), device.bytes[Term::kDequantization]);
  step.mark("start", 0);
  std::vector<Handles> kept = deepspeed_forward_pass(step, device, plan);
  // Under ZeRO 3 the output layer is gathered whole for the loss (BF16; fetch_sub_module, far
  // above the prefetch bucket and the persistence threshold), its partition on the device or, under
  // offload_param, on the host; under full training its gradient is made whole there before the
  // bucket takes it.
  Handles output;
  const bool fetched = plan.stage3 && device.output_layer;
  const double output_bytes =
      fetched ? kBf16Bytes * static_cast<double>(device.shape.vocab_size) * device.shape.hidden_size
              : 0;
  if (fetched) output.push_back(step.take(plan.gathered, output_bytes));
  const auto logits_gradient = loss_forward_and_backward(step, device);
  if (fetched && device.setup.lora_rank == 0) {
    output.push_back(step.take(tag(Term::kGradients), output_bytes));
  }
  Handles buckets = take_reduce_buckets(step, device, plan);
  step.give(logits_gradient);
  give_all(step, output);
  deepspeed_backward_pass(step, device, plan, kept);
  step.give(dequantised);
  give_all(step, buckets);
}

}  // namespace trainmem::replay
