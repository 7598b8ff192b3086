#include "trainmem/models.hpp"

namespace trainmem {

namespace {

// Llama 3 configurations: Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783,
// Table 3. Vocabulary 128,256; input embedding and output head untied.
constexpr int kLlama3VocabSize = 128256;
constexpr const char* kLlama3Source = "Llama 3 paper, arXiv:2407.21783, Table 3";

std::vector<ModelShape> make_presets() {
  return {
      {"llama3-8b", "Llama 3 8B", kLlama3Source, 32, 4096, 14336, 32, 8, kLlama3VocabSize, false},
      {"llama3-70b", "Llama 3 70B", kLlama3Source, 80, 8192, 28672, 64, 8, kLlama3VocabSize, false},
      {"llama3-405b", "Llama 3 405B", kLlama3Source, 126, 16384, 53248, 128, 8, kLlama3VocabSize,
       false},
  };
}

}  // namespace

const std::vector<ModelShape>& preset_models() {
  static const std::vector<ModelShape> presets = make_presets();
  return presets;
}

const ModelShape* find_preset(std::string_view id) {
  for (const ModelShape& shape : preset_models()) {
    if (shape.id == id) return &shape;
  }
  return nullptr;
}

std::string preset_ids_joined() {
  std::string joined;
  for (const ModelShape& shape : preset_models()) {
    if (!joined.empty()) joined += ", ";
    joined += shape.id;
  }
  return joined;
}

ParameterCounts parameter_counts(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double head_dim = h / shape.num_attention_heads;
  const double query_width = shape.num_attention_heads * head_dim;
  const double key_value_width = shape.num_key_value_heads * head_dim;

  ParameterCounts counts;
  const double attention = h * query_width + 2 * h * key_value_width + query_width * h;
  const double mlp = 3 * h * shape.ffn_hidden_size;
  counts.attention_and_mlp_per_layer = attention + mlp;
  counts.norms_per_layer = 2 * h;
  counts.embedding = static_cast<double>(shape.vocab_size) * h;
  counts.output_head = shape.tied_embeddings ? 0 : counts.embedding;
  counts.final_norm = h;
  return counts;
}

double count_parameters(const ModelShape& shape) {
  const ParameterCounts counts = parameter_counts(shape);
  return shape.num_layers * (counts.attention_and_mlp_per_layer + counts.norms_per_layer) +
         counts.embedding + counts.output_head + counts.final_norm;
}

}  // namespace trainmem
