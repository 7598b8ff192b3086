// Fuzz target: a launch config: torchtitan's TOML job config.
#include "fuzz_launch.hpp"
#include "launch/launch_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  return trainmem::fuzz::fuzz_launch(bytes, size, trainmem::read_torchtitan_toml);
}
