// The second WebAssembly module, loaded by the page only when asked: config.json in, JSON and
// CSV out. The embind layer only; the work is in config.cpp and report.cpp.
#include <emscripten/bind.h>

#include "setup_types.hpp"
#include "trainmem/config.hpp"
#include "trainmem/report.hpp"

namespace {

trainmem::ConfigParse parse_hf_config_js(const std::string& text) {
  return trainmem::parse_hf_config(text);
}

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem_json) {
  using namespace emscripten;
  using namespace trainmem;

  register_setup_types();

  value_object<ConfigParse>("ConfigParse")
      .field("status", &ConfigParse::status)
      .field("message", &ConfigParse::message)
      .field("shape", &ConfigParse::shape);

  constant("maxConfigBytes", kMaxConfigBytes);

  function("parseHfConfig", &parse_hf_config_js);
  function("setupToJson", &setup_to_json);
  function("setupToCsv", &setup_to_csv);
}
