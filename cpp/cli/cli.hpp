// The `trainmem` command, as a function of its arguments so that tests can call it in-process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "views.hpp"

namespace trainmem {

// `args` excludes the program name.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace trainmem
