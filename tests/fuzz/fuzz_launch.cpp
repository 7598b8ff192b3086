// Fuzz target: a launch config: any kind, as launch.cpp tells them apart.
#include "fuzz_launch.hpp"

#include "launch/launch_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  return trainmem::fuzz::fuzz_launch(bytes, size, trainmem::read_launch_config);
}
