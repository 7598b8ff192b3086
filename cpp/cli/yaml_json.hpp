// The CLI's YAML parser for launch configs (launch.hpp's YamlReader): yaml-cpp, Debian's
// libyaml-cpp-dev. Built natively only; the page brings the npm package yaml instead.
#pragma once

#include <string>

#include "trainmem/launch.hpp"

namespace trainmem {

// The first document of `yaml` as JSON text, every scalar a string and an empty or null value
// JSON's null; or the problem, with its line and column. Refused too: a key given twice in one
// mapping, a mapping's key that is not a plain value, nesting deeper than 64, and more than
// 100,000 values (aliases can repeat a subtree without end).
YamlAsJson yaml_to_json(const std::string& yaml);

}  // namespace trainmem
