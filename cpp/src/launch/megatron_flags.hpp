// What the Megatron-LM launch line's readers share (megatron_args.cpp, the recipe;
// megatron_model.cpp, the model; megatron_layout.cpp, the layout): each flag's value types and the
// layout's reading. Not part of the public API.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem::megatron {

// A flag's value: its text; digits alone as a whole number; or a number, as strtod reads it.
const ValueType<std::string>& flag_text();
const ValueType<long long>& whole_number();
const ValueType<double>& decimal_number();

// A whole number within [least, most], refused by its flag outside.
std::optional<long long> bounded(KeyReader& flags, const std::string& flag, long long least,
                                 long long most);
// A number, refused where it is not finite (1e999).
std::optional<double> decimal(KeyReader& flags, const std::string& flag);
// A flag's several values (nargs='+'), as the line gave them, space-separated.
std::vector<std::string> words_of(const std::string& text);

// The line's model (megatron_model.cpp), a GPT- or Llama-style decoder, dense or a mixture of
// experts, with latent attention and multi-token prediction, with what the setup and the notes
// need.
struct LineModel {
  ModelShape shape;
  long long layers = 0;
  long long sequence = 0;
  long long vocabulary = 0;
};

// The model: written as the config.json it is and read by the config reader; nothing where the
// flags refuse it.
std::optional<LineModel> read_model(KeyReader& flags);

// The router's flags (--moe-router-dtype, --moe-router-score-function, --moe-router-pre-softmax,
// the auxiliary and z-losses, --moe-router-fusion, --moe-permute-fusion) into the setup.
void read_router(KeyReader& flags, TrainingSetup& setup);

// The layout: d from the world size over t·p·c, the pipeline's virtual and uneven stages (the
// first and last stages' counts, the embedding or the loss counted as a layer, or a layout
// string), expert parallelism, the distributed optimizer as ZeRO 1.
void read_layout(KeyReader& flags, long long world, long long layers, long long sequence,
                 ParallelLayout& layout);

// --cp-comm-type: how context parallelism exchanges attention's tensors (options.hpp,
// CpCommType), one type for every layer.
void read_cp_comm_type(KeyReader& flags, long long layers, TrainingSetup& setup,
                       std::vector<std::string>& notes);

// --use-megatron-fsdp: Megatron-FSDP's sharding strategy as ZeRO 2 (optim_grads) or 3
// (optim_grads_params, its default), with the flags it asserts beside it; what it is not modelled
// with refused by its flag. Its flags and defaults as of Megatron-LM d98e8a6 (August 2026),
// --megatron-fsdp-version 1. --fsdp-double-buffer, and --use-nccl-ub which turns it on (its
// registered pool said in a note), set TrainingSetup::fsdp_double_buffer.
void read_megatron_fsdp(KeyReader& flags, TrainingSetup& setup, std::vector<std::string>& notes);

}  // namespace trainmem::megatron
