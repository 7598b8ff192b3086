// The estimate: one Calculation (calculation.hpp) written into an Estimate, and the workshop's
// view of it.
#include "trainmem/estimate.hpp"

#include <algorithm>
#include <utility>

#include "estimate/calculation.hpp"
#include "estimate/rollout.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

Estimate estimate_of(Calculator calculator, const TrainingSetup& setup, int micro_batch_sequences,
                     bool flash_attention) {
  Calculation calc = calculator(setup, micro_batch_sequences, flash_attention, {});
  Estimate estimate;
  estimate.setup = setup;
  estimate.answer = calc.answer;
  if (!calc.answer.ok()) return estimate;
  const ModelShape& shape = *calc.shape;
  estimate.setup.micro_batch_sequences = micro_batch_sequences;
  estimate.setup.flash_attention = flash_attention;
  estimate.model_name = shape.name;
  estimate.max_positions = shape.max_positions;
  estimate.mtp_parameters = count_mtp_parameters(shape);
  estimate.vision_parameters = shape.vision_parameters;
  estimate.num_parameters = count_parameters(shape) + (setup.mtp ? estimate.mtp_parameters : 0);
  estimate.bytes_per_parameter = calc.per;
  estimate.tokens_per_micro_batch =
      static_cast<double>(setup.sequence_length) * micro_batch_sequences;
  estimate.bytes = calc.ledger.device;
  estimate.host = calc.ledger.host;
  estimate.host_devices = std::min(num_devices(setup.layout), static_cast<double>(kDevicesPerNode));
  estimate.host_node_bytes = estimate.host.total() * estimate.host_devices;
  estimate.host_capacity_bytes = setup.host_capacity_gb * 1e9;
  estimate.host_fits =
      estimate.host_capacity_bytes == 0 || estimate.host_node_bytes <= estimate.host_capacity_bytes;
  estimate.trainable_parameters =
      kBeyondThePlate && setup.lora_rank > 0
          ? shape.num_layers * lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets)
          : estimate.num_parameters - (setup.train_vision ? 0 : shape.vision_parameters);
  estimate.base_linear_bytes_per_parameter = calc.base.per_parameter;
  estimate.parameters_on_device = calc.stage.parameters;
  estimate.stage = calc.stage_figures;
  estimate.most_loaded = calc.most_loaded;
  estimate.most_loaded_stage = calc.most_loaded.role;
  estimate.device = device_of(setup);
  estimate.num_devices = num_devices(setup.layout);
  const double total = estimate.bytes.total();
  // The run fits when its most loaded device does, whichever stage is answered.
  const double most_loaded_total = estimate.most_loaded.total_bytes;
  estimate.limit_bytes = estimate.device.capacity_bytes;
  if (setup.stack != Stack::kIdeal) {
    ReportedMemory reported = reported_memory(estimate.device.id);
    if (reported.bytes > 0) {
      estimate.limit_bytes = reported.bytes;
      estimate.limit_source = std::move(reported.source);
    }
  }
  // Megatron-FSDP without --init-model-with-meta-device builds the whole BF16 model on each device
  // before its buffers shard it (training.py, get_model): before the first step, outside it.
  const double whole_model = kBf16Bytes * estimate.parameters_on_device;
  if (megatron_fsdp(setup) && !setup.meta_device_init && whole_model > estimate.limit_bytes) {
    calc.notes.push_back(
        "Megatron-FSDP builds the whole BF16 model on each device before sharding it, " +
        format_bytes(whole_model) +
        " here, more than the device: the run fails before its "
        "first step without --init-model-with-meta-device (the estimate is of the steps after).");
  }
  estimate.devices_worth = most_loaded_total / estimate.limit_bytes;
  estimate.usable_bytes = estimate.limit_bytes * (1 - setup.headroom_percent / 100);
  estimate.fits = most_loaded_total <= estimate.usable_bytes;
  estimate.headroom_percent = setup.headroom_percent;
  estimate.held_bytes = total - estimate.bytes[Term::kActivations];
  estimate.held_besides_bytes = estimate.held_bytes - estimate.bytes.model_states() -
                                (setup.logits ? estimate.bytes[Term::kLogits] : 0);
  estimate.activation_room_bytes = estimate.usable_bytes - estimate.held_bytes;
  estimate.peak_allocated_bytes = calc.peak_allocated_bytes;
  estimate.peak_reserved_bytes = calc.peak_reserved_bytes;
  estimate.stack_terms = std::move(calc.stack_terms);
  estimate.notes = std::move(calc.notes);
  return estimate;
}

}  // namespace

TrainingSetup with_logits_as_run(TrainingSetup setup) {
  const StackRow& row = stack_row(setup.stack);
  setup.logits = true;
  setup.loss = setup.rollout != Rollout::kNone ? Loss::kGrpo
               : row.losses.empty()            ? Loss::kFp32Upcast
                                               : row.losses.front();
  return setup;
}

namespace {

// Every term on the device but the activations, counted whole, at `sequences` sequences.
double held_beside_activations(Calculator calculator, const TrainingSetup& setup, int sequences) {
  const Breakdown whole = calculator(setup, sequences, true, {false, false}).whole_terms;
  return whole.total() - whole[Term::kActivations];
}

Estimate estimate_with(Calculator calculator, const TrainingSetup& setup) {
  return estimate_of(calculator, setup, setup.micro_batch_sequences, setup.flash_attention);
}

WorkshopView view_with(Calculator calculator, const TrainingSetup& setup,
                       int max_micro_batch_sequences) {
  WorkshopView view{estimate_with(calculator, setup), {}};
  if (!view.estimate.answer.ok()) return view;
  if (max_micro_batch_sequences < 1 || max_micro_batch_sequences > kMaxMicroBatchSequences) {
    view.estimate.answer =
        refusal(setting_id::kMicroBatch, "The chart's micro-batches must run from 1 to " +
                                             format_count(kMaxMicroBatchSequences) + " sequences.");
    return view;
  }
  view.activation_curve.reserve(static_cast<std::size_t>(max_micro_batch_sequences));
  const CalculationOptions whole{false, false};
  // The room at the chosen micro-batch is the estimate's; at another, it moves by what the other
  // terms grow or shrink with the tokens (nothing, without the logits).
  const double held_now = held_beside_activations(calculator, setup, setup.micro_batch_sequences);
  // The curve without FlashAttention where the setup can be counted without it (DSA's layers
  // cannot: check_sparse.cpp).
  TrainingSetup without_flash = setup;
  without_flash.flash_attention = false;
  const bool without_flash_counted =
      calculator(without_flash, setup.micro_batch_sequences, false, whole).answer.ok();
  view.micro_batch_step = micro_batch_step(setup);
  for (int sequences = view.micro_batch_step; sequences <= max_micro_batch_sequences;
       sequences += view.micro_batch_step) {
    ActivationPoint point;
    point.micro_batch_sequences = sequences;
    point.tokens = static_cast<double>(setup.sequence_length) * sequences;
    // The activations as counted, whole: under a stack, whatever moment its peak falls at.
    const Breakdown flash = calculator(setup, sequences, true, whole).whole_terms;
    point.flash_attention_bytes = flash[Term::kActivations];
    point.without_flash_attention_counted = without_flash_counted;
    if (without_flash_counted) {
      point.without_flash_attention_bytes =
          calculator(setup, sequences, false, whole).whole_terms[Term::kActivations];
    }
    point.room_bytes = view.estimate.activation_room_bytes -
                       (flash.total() - flash[Term::kActivations] - held_now);
    view.activation_curve.push_back(point);
  }
  if (!setup.logits) {
    const Estimate counted = estimate_with(calculator, with_logits_as_run(setup));
    if (counted.answer.ok()) {
      view.logits_left_out_bytes = counted.bytes.total() - view.estimate.bytes.total();
      view.logits_left_out_loss = counted.setup.loss;
    }
  }
  return view;
}

}  // namespace

Estimate estimate_memory(const TrainingSetup& setup) {
  Estimate estimate = estimate_with(calculate, setup);
  add_rollout(estimate);
  return estimate;
}

std::string stage_words(const StageFigures& stage, int pipeline_parallel) {
  if (pipeline_parallel == 1) return "the only device";
  const std::string of =
      std::to_string(stage.index + 1) + " of " + std::to_string(pipeline_parallel);
  if (stage.role == PipelineStage::kMiddle) return "pipeline stage " + of;
  return "the " + choice_id(stage.role) + " pipeline stage (" + of + ")";
}

std::vector<StageFigures> every_stage(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  if (!estimate.answer.ok()) return {};
  const int p = setup.layout.pipeline_parallel;
  if (p == 1) return {estimate.stage};
  std::vector<StageFigures> stages;
  stages.reserve(static_cast<std::size_t>(p));
  for (int index = 0; index < p; ++index) {
    TrainingSetup at = setup;
    at.pipeline_stage = index + 1;
    stages.push_back(estimate_memory(at).stage);
  }
  return stages;
}

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  WorkshopView view = view_with(calculate, setup, max_micro_batch_sequences);
  add_rollout(view.estimate);
  return view;
}

Estimate plate_estimate(const TrainingSetup& setup) {
  return estimate_with(calculate_plate, setup);
}

WorkshopView plate_workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  return view_with(calculate_plate, setup, max_micro_batch_sequences);
}

}  // namespace trainmem
