// The `trainmem` command, as a function of its arguments so that tests can call it in-process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace trainmem {

// Exit statuses: 0 success, 2 bad input (one line on `err` naming the flag and what is allowed).
constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

// `args` excludes the program name.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace trainmem
