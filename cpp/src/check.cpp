// The checks of a whole setup: each value within its setting's bounds (settings.cpp), then what
// the settings must satisfy together: degrees that divide the model and the sequence, and switches
// that need another setting.
#include <string>

#include "calculation.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

Answer check_setup(const TrainingSetup& setup, const ModelShape* shape) {
  if (setup.model_id == kCustomModelId) {
    const std::string problem = model_shape_problem(*shape);
    if (!problem.empty())
      return refusal(kConfigInputId, "The custom model's shape is not usable: " + problem);
  }
  // The model is the table's first setting: an unknown one is refused before anything below reads
  // its shape.
  const Answer values = check_setting_values(setup);
  if (!values.ok()) return values;

  const ParallelLayout& layout = setup.layout;
  const int t = layout.tensor_parallel;
  if (shape->num_attention_heads % t != 0 || shape->num_key_value_heads % t != 0 ||
      shape->ffn_hidden_size % t != 0) {
    return refusal(id::kTensorParallel,
                   "Tensor parallelism " + std::to_string(t) + " must divide the " +
                       std::to_string(shape->num_attention_heads) + " attention heads, " +
                       std::to_string(shape->num_key_value_heads) + " key/value heads and " +
                       format_count(shape->ffn_hidden_size) + " FFN width of " + shape->name + ".");
  }
  if (tensor_parallel_widths_gcd(*shape) % t != 0) {
    return refusal(id::kTensorParallel,
                   "Tensor parallelism " + std::to_string(t) +
                       " must divide each expert's width and the shared experts' width of " +
                       shape->name + ".");
  }
  if (layout.sequence_parallel && t == 1) {
    return refusal(id::kSequenceParallel,
                   "Sequence parallelism splits what tensor parallelism leaves whole; it needs "
                   "tensor parallelism above 1.");
  }
  const int p = layout.pipeline_parallel;
  if (shape->num_layers % p != 0) {
    return refusal(id::kPipelineParallel,
                   "Pipeline parallelism " + std::to_string(p) + " must divide the " +
                       std::to_string(shape->num_layers) + " layers of " + shape->name + ".");
  }
  const int v = layout.virtual_pipeline_stages;
  if (v > 1 && p == 1) {
    return refusal(id::kVirtualPipelineStages,
                   "Virtual pipeline stages interleave a pipeline; they need pipeline "
                   "parallelism above 1.");
  }
  if (shape->num_layers % (static_cast<long long>(p) * v) != 0) {
    return refusal(id::kVirtualPipelineStages,
                   "Pipeline parallelism times virtual stages (" + std::to_string(p) + " × " +
                       std::to_string(v) + ") must divide the " +
                       std::to_string(shape->num_layers) + " layers of " + shape->name + ".");
  }
  const int c = layout.context_parallel;
  if (setup.sequence_length % c != 0) {
    return refusal(id::kContextParallel, "Context parallelism " + std::to_string(c) +
                                             " must divide the sequence length " +
                                             format_count(setup.sequence_length) + ".");
  }
  const double num_devices = static_cast<double>(layout.data_parallel) * t * p * c;
  if (num_devices > kMaxDevices) {
    return refusal(id::kDataParallel, "The layout's d·t·p·c devices must number at most " +
                                          format_count(kMaxDevices) + ".");
  }
  if (layout.zero_stage > 0 && static_cast<long long>(layout.data_parallel) * c == 1) {
    return refusal(id::kZeroStage,
                   "ZeRO shards the model states over data-parallel replicas; a ZeRO stage "
                   "above 0 needs data or context parallelism above 1.");
  }
  return {};
}

}  // namespace trainmem
