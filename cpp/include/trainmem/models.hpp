// Model shapes and their parameter counts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainmem {

// The shape of a decoder-only transformer of the Llama family: pre-norm blocks
// of grouped-query attention and a SwiGLU MLP, RMSNorm weights, no biases.
struct ModelShape {
  std::string id;      // stable key: CLI --model, the page's URL and <select>
  std::string name;    // for people: "Llama 3 8B"
  std::string source;  // where the shape comes from
  int num_layers = 0;
  int hidden_size = 0;      // h, the model dimension
  int ffn_hidden_size = 0;  // the SwiGLU MLP's inner width
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int vocab_size = 0;
  bool tied_embeddings = false;  // one matrix for the input embedding and the output head
};

// The presets, in the order a menu shows them.
const std::vector<ModelShape>& preset_models();

// The preset with this id, or nullptr.
const ModelShape* find_preset(std::string_view id);

// "llama3-8b, llama3-70b, llama3-405b": for messages that list what is allowed.
std::string preset_ids_joined();

// Where the parameters are, for placing them on pipeline stages and tensor-parallel ranks.
struct ParameterCounts {
  double attention_and_mlp_per_layer = 0;  // matrices that tensor parallelism splits
  double norms_per_layer = 0;              // RMSNorm weights, replicated on every TP rank
  double embedding = 0;                    // V x h, split over the vocabulary by TP
  double output_head = 0;                  // V x h, or 0 when tied to the embedding
  double final_norm = 0;
};
ParameterCounts parameter_counts(const ModelShape& shape);

// Parameters derived from the shape, never typed in:
//   per layer  attention  h·(a·d) + 2·h·(k·d) + (a·d)·h   (Q, K, V, O; d = h/a)
//              MLP        3·h·f                           (gate, up, down)
//              norms      2·h                             (two RMSNorm weights)
//   once       embedding  V·h, output head V·h unless tied, final norm h
double count_parameters(const ModelShape& shape);

}  // namespace trainmem
