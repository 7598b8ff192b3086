// What a setup names: its model, its device, and its layout in words (setup.hpp).
#include "trainmem/setup.hpp"

#include <cmath>

#include "trainmem/format.hpp"

namespace trainmem {

const ModelShape* resolve_model(const TrainingSetup& setup) {
  if (setup.model_id == kCustomModelId) return &setup.custom_model;
  return find_preset(setup.model_id);
}

Device device_of(const TrainingSetup& setup) {
  if (setup.device_id == kCustomDeviceId) {
    // Named by its capacity as given: "Custom 2.5 GB", never rounded to another size.
    const std::string name =
        "Custom " + format_bytes_short(setup.custom_capacity_gb * kBytesPerGigabyte);
    const double capacity_bytes = setup.custom_capacity_gb * 1e9;
    return {kCustomDeviceId, name, "device", capacity_bytes, kCustomDeviceArchitecture, ""};
  }
  if (const Device* device = find_device(setup.device_id)) return *device;
  // A device the checks refuse: no memory, and no FP8 copies.
  return {setup.device_id, setup.device_id, "device", 0, Architecture::kAmpere, ""};
}

std::string format_layout(const TrainingSetup& setup) {
  const ParallelLayout& layout = setup.layout;
  std::string text = "d " + std::to_string(layout.data_parallel);
  if (layout.zero_stage > 0) {
    text += " (ZeRO-" + std::to_string(layout.zero_stage) + " over d·c = " +
            format_count(static_cast<double>(layout.data_parallel) * layout.context_parallel) + ")";
  }
  text += " × t " + std::to_string(layout.tensor_parallel);
  if (layout.sequence_parallel) text += " (SP)";
  text += " × p " + std::to_string(layout.pipeline_parallel);
  if (layout.virtual_pipeline_stages > 1) {
    text += " (" + std::to_string(layout.virtual_pipeline_stages) + " virtual)";
  }
  // Uneven stages: "(6 + 6 × 8 + 7 layers)", the stages without a count of their own in between.
  const int first = layout.pipeline_first_stage_layers;
  const int last = layout.pipeline_last_stage_layers;
  if (const ModelShape* shape = resolve_model(setup); shape != nullptr && (first > 0 || last > 0)) {
    const PipelineSplit split = pipeline_split(layout, shape->num_layers);
    const int shared = layout.pipeline_parallel - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    std::string parts = first > 0 ? std::to_string(first) : "";
    if (shared > 0) {
      parts += (parts.empty() ? "" : " + ") +
               (shared > 1 ? std::to_string(shared) + " × " : std::string()) +
               format_count(split.middle);
    }
    if (last > 0) parts += (parts.empty() ? "" : " + ") + std::to_string(last);
    text += " (" + parts + " layers)";
  }
  const double devices = num_devices(layout);
  text += " × c " + std::to_string(layout.context_parallel) + " = " + format_count(devices) +
          (devices == 1 ? " device" : " devices");
  if (layout.expert_parallel > 1 || layout.expert_tensor_parallel > 0) {
    text += ", experts over ep " + std::to_string(layout.expert_parallel) + " × etp " +
            std::to_string(expert_tensor_parallel_of(layout));
  }
  text += ", recompute " + choice_id(setup.recompute);
  // Megatron-LM's other modules (the CLI and the page list them).
  if (recomputes_modules(setup)) text += " + modules";
  if (setup.offload != Offload::kNone) text += ", offload " + choice_id(setup.offload);
  return text;
}

std::string recompute_modules_text(const TrainingSetup& setup) {
  std::string text;
  for (const RecomputeModule& module : kRecomputeModules) {
    if (setup.*module.member) text += (text.empty() ? "" : " ") + std::string(module.name);
  }
  return text;
}

bool hybrid_stages_hold_model_mix(const ModelShape& shape, const ParallelLayout& layout) {
  const double layers = shape.num_layers;
  // Each kind in the model's ratio: its share of the stage's layers is its share of the model's.
  const auto holds_mix = [&](double first, double count) {
    if (count <= 0) return false;
    for (const char* kind = kHybridLayerKinds; *kind != '\0'; ++kind) {
      const std::string_view one(kind, 1);
      if (layers_of_kinds_between(shape, first, count, one) * layers !=
          layers_of_kinds_between(shape, 0, layers, one) * count) {
        return false;
      }
    }
    return true;
  };
  const int p = layout.pipeline_parallel;
  if (p == 1) return true;
  if (layout.virtual_pipeline_stages > 1) {
    const int chunks = p * layout.virtual_pipeline_stages;
    const double chunk = layers / chunks;
    for (int i = 0; i < chunks; ++i) {
      if (!holds_mix(i * chunk, chunk)) return false;
    }
    return true;
  }
  const PipelineSplit split = pipeline_split(layout, shape.num_layers);
  double first = 0;
  for (int stage = 0; stage < p; ++stage) {
    const double count = stage == 0 ? split.first : stage == p - 1 ? split.last : split.middle;
    if (!holds_mix(first, count)) return false;
    first += count;
  }
  return true;
}

}  // namespace trainmem
