#include "trainmem/models.hpp"

#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// Llama 3 configurations: Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783,
// Table 3. Vocabulary 128,256; input embedding and output head untied.
constexpr int kLlama3VocabSize = 128256;
constexpr const char* kLlama3Source = "Llama 3 paper, arXiv:2407.21783, Table 3";

// The others: each model's config.json on the Hugging Face hub, field for field
// (tests/cpp/config_test.cpp parses those texts and finds these shapes).
constexpr int kLlama2VocabSize = 32000;   // Llama 2's SentencePiece vocabulary
constexpr int kMistralVocabSize = 32000;  // Mistral 7B v0.1 and Mixtral 8x7B
constexpr int kQwen25VocabSize = 152064;  // Qwen2.5 7B and 72B (embedding rows, padded)
constexpr int kGemma2VocabSize = 256000;
// GPT-2: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", Table 2 (the
// four sizes), and openai-community/gpt2{,-medium,-large,-xl} config.json: a byte-level BPE of
// 50,257 tokens and 1,024 learned positions (n_positions).
constexpr int kGpt2VocabSize = 50257;
constexpr int kGpt2Positions = 1024;
constexpr int kGpt2FfnMultiple = 4;  // GPT2MLP's width when n_inner is null: 4 · n_embd
// Pythia: EleutherAI/pythia-160m config.json; 50,304 embedding rows (GPT-NeoX-20B's tokenizer,
// padded).
constexpr int kPythiaVocabSize = 50304;

// What sets a preset apart from the Llama family's defaults.
ModelShape with_head_dim(ModelShape shape, int head_dim) {
  shape.head_dim = head_dim;
  return shape;
}

ModelShape with_experts(ModelShape shape, int num_experts, int num_experts_per_token) {
  shape.num_experts = num_experts;
  shape.num_experts_per_token = num_experts_per_token;
  return shape;
}

ModelShape with_qkv_bias(ModelShape shape) {
  shape.attention_qkv_bias = true;  // model_type qwen2: Q, K and V carry biases, O does not
  return shape;
}

ModelShape with_norms_per_layer(ModelShape shape, int norms_per_layer) {
  shape.norms_per_layer = norms_per_layer;
  return shape;
}

ModelShape with_parallel_attention_mlp(ModelShape shape) {
  shape.parallel_attention_mlp = true;
  return shape;
}

// A GPT-style block (transformers' GPT2Block, GPTNeoXLayer): every projection has a bias, the
// MLP is a plain one (up, an elementwise GELU, down), the norms are LayerNorms with biases, and
// `num_position_embeddings` learned positions (0 for rotary ones) sit beside the embedding.
ModelShape gpt_block(ModelShape shape, int num_position_embeddings) {
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  shape.gated_mlp = false;
  shape.norm_bias = true;
  shape.num_position_embeddings = num_position_embeddings;
  return shape;
}

// GPT-2 of width h, depth L and a heads: f = 4·h, one matrix for embedding and head
// (GPT2LMHeadModel ties lm_head to wte).
ModelShape gpt2(const char* id, const char* name, const char* source, int layers, int hidden,
                int heads) {
  return gpt_block({id, name, source, layers, hidden, kGpt2FfnMultiple * hidden, heads, heads,
                    kGpt2VocabSize, true},
                   kGpt2Positions);
}

// Fields in ModelShape's order: id, name, source, L, h, f, a, k, V, tied.
std::vector<ModelShape> make_presets() {
  return {
      {"llama3-8b", "Llama 3 8B", kLlama3Source, 32, 4096, 14336, 32, 8, kLlama3VocabSize, false},
      {"llama3-70b", "Llama 3 70B", kLlama3Source, 80, 8192, 28672, 64, 8, kLlama3VocabSize, false},
      {"llama3-405b", "Llama 3 405B", kLlama3Source, 126, 16384, 53248, 128, 8, kLlama3VocabSize,
       false},
      {"llama2-7b", "Llama 2 7B", "meta-llama/Llama-2-7b-hf config.json", 32, 4096, 11008, 32, 32,
       kLlama2VocabSize, false},
      {"llama2-13b", "Llama 2 13B", "meta-llama/Llama-2-13b-hf config.json", 40, 5120, 13824, 40,
       40, kLlama2VocabSize, false},
      {"llama2-70b", "Llama 2 70B", "meta-llama/Llama-2-70b-hf config.json", 80, 8192, 28672, 64, 8,
       kLlama2VocabSize, false},
      with_head_dim({"llama3.2-1b", "Llama 3.2 1B", "meta-llama/Llama-3.2-1B config.json", 16, 2048,
                     8192, 32, 8, kLlama3VocabSize, true},
                    64),
      with_head_dim({"llama3.2-3b", "Llama 3.2 3B", "meta-llama/Llama-3.2-3B config.json", 28, 3072,
                     8192, 24, 8, kLlama3VocabSize, true},
                    128),
      {"mistral-7b", "Mistral 7B", "mistralai/Mistral-7B-v0.1 config.json", 32, 4096, 14336, 32, 8,
       kMistralVocabSize, false},
      with_experts({"mixtral-8x7b", "Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1 config.json", 32,
                    4096, 14336, 32, 8, kMistralVocabSize, false},
                   8, 2),
      with_qkv_bias({"qwen2.5-7b", "Qwen2.5 7B", "Qwen/Qwen2.5-7B config.json", 28, 3584, 18944, 28,
                     4, kQwen25VocabSize, false}),
      with_qkv_bias({"qwen2.5-72b", "Qwen2.5 72B", "Qwen/Qwen2.5-72B config.json", 80, 8192, 29568,
                     64, 8, kQwen25VocabSize, false}),
      with_norms_per_layer(
          with_head_dim({"gemma2-9b", "Gemma 2 9B", "google/gemma-2-9b config.json", 42, 3584,
                         14336, 16, 8, kGemma2VocabSize, true},
                        256),
          kGemma2NormsPerLayer),
      gpt2("gpt2", "GPT-2 124M", "openai-community/gpt2 config.json", 12, 768, 12),
      gpt2("gpt2-medium", "GPT-2 355M", "openai-community/gpt2-medium config.json", 24, 1024, 16),
      gpt2("gpt2-large", "GPT-2 774M", "openai-community/gpt2-large config.json", 36, 1280, 20),
      gpt2("gpt2-xl", "GPT-2 1.5B", "openai-community/gpt2-xl config.json", 48, 1600, 25),
      // GPT-NeoX: rotary positions (no parameters), an untied embed_out, and attention and MLP
      // side by side (use_parallel_residual).
      with_parallel_attention_mlp(
          gpt_block({"pythia-160m", "Pythia 160M", "EleutherAI/pythia-160m config.json", 12, 768,
                     3072, 12, 12, kPythiaVocabSize, false},
                    0)),
  };
}

bool in_range(int value, int low, int high) { return value >= low && value <= high; }

std::string whole_number_problem(const char* field, int value, int low, int high) {
  return std::string(field) + " must be a whole number from " + format_count(low) + " to " +
         format_count(high) + "; it is " + std::to_string(value) + ".";
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

std::string model_shape_problem(const ModelShape& shape) {
  struct Bound {
    const char* field;
    int value;
    int low;
    int high;
  };
  const Bound bounds[] = {
      {"num_hidden_layers", shape.num_layers, 1, kMaxModelLayers},
      {"hidden_size", shape.hidden_size, 1, kMaxModelWidth},
      {"intermediate_size", shape.ffn_hidden_size, 1, kMaxModelWidth},
      {"num_attention_heads", shape.num_attention_heads, 1, kMaxModelWidth},
      {"num_key_value_heads", shape.num_key_value_heads, 1, kMaxModelWidth},
      {"vocab_size", shape.vocab_size, 1, kMaxVocabSize},
      {"head_dim", shape.head_dim, 0, kMaxModelWidth},
      {"norms_per_layer", shape.norms_per_layer, 0, kMaxNormsPerLayer},
      {"max_position_embeddings", shape.num_position_embeddings, 0, kMaxPositionEmbeddings},
      {"num_local_experts", shape.num_experts, 1, kMaxExperts},
  };
  for (const Bound& bound : bounds) {
    if (!in_range(bound.value, bound.low, bound.high)) {
      return whole_number_problem(bound.field, bound.value, bound.low, bound.high);
    }
  }
  if (!in_range(shape.num_experts_per_token, 1, shape.num_experts)) {
    return "num_experts_per_tok must be a whole number from 1 to num_local_experts (" +
           std::to_string(shape.num_experts) + "); it is " +
           std::to_string(shape.num_experts_per_token) + ".";
  }
  if (shape.num_attention_heads % shape.num_key_value_heads != 0) {
    return "num_key_value_heads (" + format_count(shape.num_key_value_heads) +
           ") must divide num_attention_heads (" + format_count(shape.num_attention_heads) + ").";
  }
  if (shape.head_dim == 0 && shape.hidden_size % shape.num_attention_heads != 0) {
    return "num_attention_heads (" + format_count(shape.num_attention_heads) +
           ") must divide hidden_size (" + format_count(shape.hidden_size) +
           ") when head_dim is not given.";
  }
  if (shape.name.empty() || shape.name.size() > kMaxModelNameBytes) {
    return "The model's name must be from 1 to " + std::to_string(kMaxModelNameBytes) +
           " bytes long.";
  }
  return {};
}

double head_dim_of(const ModelShape& shape) {
  return shape.head_dim > 0 ? shape.head_dim
                            : static_cast<double>(shape.hidden_size) / shape.num_attention_heads;
}

ParameterCounts parameter_counts(const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double f = shape.ffn_hidden_size;
  const double head_dim = head_dim_of(shape);
  const double query_width = shape.num_attention_heads * head_dim;
  const double key_value_width = shape.num_key_value_heads * head_dim;
  const double experts = shape.num_experts;

  // Column-parallel (split by t): Q, K, V, gate and up with their biases; row-parallel O and
  // down split their weights but not their biases. The router is replicated.
  double attention = h * query_width + 2 * h * key_value_width + query_width * h;
  if (shape.attention_qkv_bias) attention += query_width + 2 * key_value_width;
  // A gated MLP's column-parallel gate and up, or a plain MLP's up alone; each has its down.
  const double column_projections = shape.gated_mlp ? 2 : 1;
  double mlp = experts * (column_projections + 1) * h * f;
  if (shape.mlp_bias) mlp += experts * column_projections * f;
  double replicated = 0;
  if (shape.attention_output_bias) replicated += h;
  if (shape.mlp_bias) replicated += experts * h;
  if (shape.num_experts > 1) replicated += h * experts;  // the router: h x E, no bias

  // A LayerNorm holds a weight and a bias of h each; an RMSNorm its weight alone.
  const double per_norm = shape.norm_bias ? 2 * h : h;
  const double vocab = shape.vocab_size;
  ParameterCounts counts;
  counts.attention_and_mlp_per_layer = attention + mlp;
  counts.norms_per_layer = shape.norms_per_layer * per_norm;
  counts.replicated_per_layer = replicated;
  counts.embedding = vocab * h;
  counts.position_embedding = static_cast<double>(shape.num_position_embeddings) * h;
  counts.output_head =
      (shape.tied_embeddings ? 0 : counts.embedding) + (shape.output_head_bias ? vocab : 0);
  counts.final_norm = per_norm;
  return counts;
}

double count_parameters(const ModelShape& shape) {
  const ParameterCounts counts = parameter_counts(shape);
  return shape.num_layers * (counts.attention_and_mlp_per_layer + counts.norms_per_layer +
                             counts.replicated_per_layer) +
         counts.embedding + counts.position_embedding + counts.output_head + counts.final_norm;
}

}  // namespace trainmem
