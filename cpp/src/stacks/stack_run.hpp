// A setup as its stack runs it: what the framework does to the setup it is given before it
// trains, each change said in words. Megatron-LM (megatron/training/arguments.py, validate_args;
// megatron/training/tokenizer/tokenizer.py) turns sequence parallelism off at tensor parallelism
// 1, runs its distributed optimiser over one data-parallel rank sharding nothing, and pads the
// vocabulary; the other stacks run the setup as given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

struct StackRun {
  TrainingSetup setup;  // as the stack runs it
  // The model as the stack builds it, where that differs from the setup's (a padded
  // vocabulary); null where it is the setup's own.
  std::shared_ptr<const ModelShape> shape;
  std::vector<std::string> notes;  // each change, a sentence
};

// Megatron-LM's _vocab_size_with_padding: the tokenizer's vocabulary (the config's, and the
// NullTokenizer's end-of-document token besides) rounded up to a multiple of
// make_vocab_size_divisible_by × t.
double padded_vocabulary(const TrainingSetup& setup, double vocabulary);

// `setup` (checked) on `shape`, as its stack runs it.
StackRun stack_run(const TrainingSetup& setup, const ModelShape& shape);

}  // namespace trainmem
