#include "trainmem/estimate.hpp"

#include <cmath>

#include "trainmem/format.hpp"

namespace trainmem {

namespace {

Estimate invalid(const TrainingSetup& setup, std::string message) {
  Estimate estimate;
  estimate.status = Status::kInvalidInput;
  estimate.message = std::move(message);
  estimate.setup = setup;
  return estimate;
}

std::string range_text(double low, double high) {
  return "from " + format_count(low) + " to " + format_count(high);
}

}  // namespace

const Device& h100_80gb() {
  static const Device device{"h100", "H100 80 GB", "H100", 80e9};
  return device;
}

MemoryBreakdown model_state_bytes(double num_parameters) {
  MemoryBreakdown bytes;
  bytes.weights_bytes = kBf16WeightBytesPerParameter * num_parameters;
  bytes.gradients_bytes = kBf16GradientBytesPerParameter * num_parameters;
  bytes.master_weights_bytes = kFp32MasterWeightBytesPerParameter * num_parameters;
  bytes.optimizer_states_bytes = kAdamMomentBytesPerParameter * num_parameters;
  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = bytes.model_states_bytes;
  return bytes;
}

double activation_bytes(const ModelShape& shape, int sequence_length, int micro_batch_sequences,
                        bool flash_attention) {
  const double s = sequence_length;
  const double b = micro_batch_sequences;
  const double h = shape.hidden_size;
  const double a = shape.num_attention_heads;
  const double score_term =
      flash_attention ? 0 : kKorthikantiScoreBytesPerHeadPerTokenPair * a * s / h;
  const double per_layer = s * b * h * (kKorthikantiBytesPerTokenPerHidden + score_term);
  return shape.num_layers * per_layer;
}

Estimate estimate_memory(const TrainingSetup& setup) {
  const ModelShape* shape = find_preset(setup.model_id);
  if (shape == nullptr) {
    return invalid(setup, "Model '" + setup.model_id + "' is not known; choose one of " +
                              preset_ids_joined() + ".");
  }
  if (setup.sequence_length < 1 || setup.sequence_length > kMaxSequenceLength) {
    return invalid(setup, "Sequence length must be a whole number of tokens " +
                              range_text(1, kMaxSequenceLength) + ".");
  }
  if (setup.micro_batch_sequences < 1 || setup.micro_batch_sequences > kMaxMicroBatchSequences) {
    return invalid(setup, "Micro-batch must hold a whole number of sequences " +
                              range_text(1, kMaxMicroBatchSequences) + ".");
  }

  Estimate estimate;
  estimate.setup = setup;
  estimate.model_name = shape->name;
  estimate.num_parameters = count_parameters(*shape);
  estimate.tokens_per_micro_batch =
      static_cast<double>(setup.sequence_length) * setup.micro_batch_sequences;
  estimate.bytes = model_state_bytes(estimate.num_parameters);
  estimate.bytes.activations_bytes = activation_bytes(
      *shape, setup.sequence_length, setup.micro_batch_sequences, setup.flash_attention);
  estimate.bytes.total_bytes = estimate.bytes.model_states_bytes + estimate.bytes.activations_bytes;
  estimate.device = h100_80gb();
  estimate.devices_worth = estimate.bytes.total_bytes / estimate.device.capacity_bytes;
  return estimate;
}

MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences) {
  MicroBatchFromTokens result;
  if (sequence_length < 1 || sequence_length > kMaxSequenceLength) {
    result.status = Status::kInvalidInput;
    result.message = "Sequence length must be a whole number of tokens " +
                     range_text(1, kMaxSequenceLength) + ".";
    return result;
  }
  const int max_sequences =
      max_micro_batch_sequences < 1 || max_micro_batch_sequences > kMaxMicroBatchSequences
          ? kMaxMicroBatchSequences
          : max_micro_batch_sequences;
  const double max_tokens = static_cast<double>(sequence_length) * max_sequences;
  const bool whole_multiple = std::isfinite(tokens) && tokens >= sequence_length &&
                              tokens <= max_tokens &&
                              std::fmod(tokens, static_cast<double>(sequence_length)) == 0;
  if (!whole_multiple) {
    result.status = Status::kInvalidInput;
    result.message = "Tokens per micro-batch must be a whole multiple of " +
                     format_count(sequence_length) + " (one sequence), " +
                     range_text(sequence_length, max_tokens) + ".";
    return result;
  }
  result.micro_batch_sequences = static_cast<int>(tokens / sequence_length);
  return result;
}

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences) {
  WorkshopView view;
  view.estimate = estimate_memory(setup);
  if (view.estimate.status != Status::kOk) return view;
  if (max_micro_batch_sequences < 1 || max_micro_batch_sequences > kMaxMicroBatchSequences) {
    view.estimate = invalid(setup, "The chart's micro-batches must run " +
                                       range_text(1, kMaxMicroBatchSequences) + " sequences.");
    return view;
  }
  const ModelShape& shape = *find_preset(setup.model_id);
  view.activation_curve.reserve(static_cast<std::size_t>(max_micro_batch_sequences));
  for (int sequences = 1; sequences <= max_micro_batch_sequences; ++sequences) {
    ActivationPoint point;
    point.micro_batch_sequences = sequences;
    point.tokens = static_cast<double>(setup.sequence_length) * sequences;
    point.flash_attention_bytes = activation_bytes(shape, setup.sequence_length, sequences, true);
    point.without_flash_attention_bytes =
        activation_bytes(shape, setup.sequence_length, sequences, false);
    view.activation_curve.push_back(point);
  }
  return view;
}

}  // namespace trainmem
