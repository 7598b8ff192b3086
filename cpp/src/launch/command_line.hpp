// A launch line as the shell runs it (megatron_args.cpp's pretrain_gpt.py, torchtitan_line.cpp's
// torchtitan.train): its program's words, torchrun's own before them, and its --flags.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"

namespace trainmem {

// The command's words after `program` (its script or module, matched at a word's end: the line's
// first mention of it outside a comment), the shell's line continuations joined, its tail (a pipe,
// a redirection, a comment, the next command) dropped, quotes taken off; torchrun's own
// --nproc_per_node and --nnodes (−1: a range, or no number) from before it; or the problem (the
// shell's variables, which the line does not say; with `variables`, a word that holds one is kept,
// for the reader to judge by its key).
struct Command {
  std::vector<std::string> words;
  long long nproc = 0;
  long long nnodes = 1;
  std::string problem;
};
Command command_of(const std::string& text, const std::string& program, bool variables = false);

// The words' flags, each with its value ("" for one of `switches`), in the order given; a flag's
// value may be several words (--data-path 1 a 0.5 b), up to the next flag. `program` names the
// command in the problem, where a word stands where a flag was expected.
FileKeys flags_of(const std::vector<std::string>& words, const std::set<std::string>& switches,
                  const std::string& program, std::string& problem);

// How a line's flags are listed and quoted: each flag read listed once the line is read, in the
// line's order, with its value ("--num-layers 32"; a switch alone); a refusal quotes the value's
// first bytes.
const KeyDialect& command_line_dialect();

}  // namespace trainmem
