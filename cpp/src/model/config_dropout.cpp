// The dropout a config.json sets (config_readers.hpp, read_dropout). Each key is read as the
// transformers model that owns it applies it (modeling_<type>.py), with its config class's
// default where the key is absent (configuration_<type>.py):
// - the Llama family and every row of config_blocks.cpp's table that names no other keys:
//   attention_dropout (0.0) on the probabilities alone; their blocks hold no residual dropout;
// - GPT-2: resid_pdrop, attn_pdrop and embd_pdrop (each 0.1);
// - GPT-NeoX: hidden_dropout (0.0) after the attention, after the MLP and on the embedding's
//   output (emb_dropout), attention_dropout (0.0);
// - OPT: dropout (0.1) after the attention and the MLP, attention_dropout (0.0); its
//   activation_dropout (inside the MLP) and layerdrop are refused above 0;
// - Phi and Phi-3: resid_pdrop, embd_pdrop and attention_dropout (each 0.0).
#include <cmath>

#include "model/config_readers.hpp"
#include "model/config_text.hpp"

namespace trainmem {

namespace {

// A probability the config gives for `key`, or `absent` where it gives none; the problem, or "".
std::string read_probability(const Json& config, const char* key, double absent, double& out,
                             std::string& said) {
  const Json* value = present(config, key);
  if (!said.empty()) said += ", ";
  if (value == nullptr) {
    out = absent;
    said += std::string(key) + " absent (" + describe(Json(absent)) + " by default)";
    return {};
  }
  if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() < 0 ||
      value->get<double>() >= 1) {
    return quoted(key) + " must be a probability from 0 up to 1 (not 1 itself); it is " +
           describe(*value) + ".";
  }
  out = value->get<double>();
  said += std::string(key) + " " + describe(*value);
  return {};
}

}  // namespace

std::string read_dropout(const Json& config, const DropoutKeys& keys, ModelShape& shape) {
  for (const char* refused : keys.refused) {
    if (refused == nullptr) continue;
    const Json* value = present(config, refused);
    if (value != nullptr && !(value->is_number() && value->get<double>() == 0)) {
      return quoted(refused) +
             " must be 0 (or absent): trainmem does not count what it drops; "
             "it is " +
             describe(*value) + ".";
    }
  }
  std::string said;
  double residual = 0;
  double probabilities = 0;
  double embedding = 0;
  std::string problem;
  if (keys.residual.key != nullptr) {
    problem = read_probability(config, keys.residual.key, keys.residual.absent, residual, said);
  }
  if (problem.empty()) {
    problem = read_probability(config, keys.probabilities.key, keys.probabilities.absent,
                               probabilities, said);
  }
  if (problem.empty() && keys.embedding.key != nullptr && keys.embedding.key != keys.residual.key) {
    problem = read_probability(config, keys.embedding.key, keys.embedding.absent, embedding, said);
  } else if (keys.embedding.key != nullptr) {
    embedding = residual;
  }
  if (!problem.empty()) return problem;
  if (keys.residual.key == nullptr) said += "; the block has no residual dropout";
  if (embedding > 0) {
    said +=
        "; the embedding's own dropout mask (1 byte per token per hidden unit, once) is not "
        "counted";
  }
  shape.dropout_stated = true;
  shape.residual_dropout = residual > 0;
  shape.probability_dropout = probabilities > 0;
  shape.dropout_said = said;
  return {};
}

}  // namespace trainmem
