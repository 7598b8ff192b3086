// Fuzz target: a launch config: Megatron-LM's launch line.
#include "fuzz_launch.hpp"
#include "launch/launch_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  return trainmem::fuzz::fuzz_launch(bytes, size, trainmem::read_megatron_args);
}
