// The launch configs under docs/examples, as the tests of the readers open them (the test stops
// where one is missing, naming it).
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace trainmem::fixtures {

inline std::string example(const std::string& name) {
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/" + name);
  REQUIRE_MESSAGE(in.good(), name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace trainmem::fixtures
