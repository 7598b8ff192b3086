// Fuzz target: a launch config: axolotl's YAML config, as the CLI's YAML parser writes it in JSON
// (a YAML that does not parse is the parser's to refuse, with its problem).
#include "fuzz_launch.hpp"
#include "launch/launch_readers.hpp"

namespace {

trainmem::LaunchConfig read_axolotl(const std::string& text, const trainmem::TrainingSetup& base,
                                    const trainmem::LaunchContext& context) {
  const trainmem::YamlAsJson parsed = trainmem::yaml_to_json(text);
  if (!parsed.problem.empty()) {
    trainmem::LaunchConfig refused;
    refused.answer = trainmem::refusal("launch", "The YAML does not parse: " + parsed.problem);
    return refused;
  }
  return trainmem::read_axolotl_yaml(parsed.json, base, context);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  return trainmem::fuzz::fuzz_launch(bytes, size, read_axolotl);
}
