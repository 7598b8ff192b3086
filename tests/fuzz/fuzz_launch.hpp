// The launch targets' one body (fuzz_launch_*.cpp): a launch config's text, with or without
// torchrun's world size, through one reader; refused with a message, or read into a setup whose
// estimate and verdict keep the invariants.
#pragma once

#include <cstdint>

#include "fuzz_common.hpp"
#include "trainmem/launch.hpp"
#include "yaml_json.hpp"

namespace trainmem::fuzz {

using LaunchReader = LaunchConfig (*)(const std::string& text, const TrainingSetup& base,
                                      const LaunchContext& context);

inline int fuzz_launch(const std::uint8_t* bytes, std::size_t size, LaunchReader read) {
  FuzzedDataProvider data(bytes, size);
  LaunchContext context;
  context.world_size = data.ConsumeIntegralInRange<int>(0, 4096);
  context.read_yaml = yaml_to_json;
  const std::string text = data.ConsumeRemainingBytesAsString();
  const LaunchConfig launch = read(text, TrainingSetup{}, context);
  if (!launch.answer.ok()) {
    require(!launch.answer.message.empty(), "a refused launch config has a message");
    return 0;
  }
  const Estimate estimate = estimate_memory(launch.setup);
  check_estimate(estimate);
  check_verdict(estimate, launch.not_understood);
  return 0;
}

}  // namespace trainmem::fuzz
