#include "trainmem/models.hpp"

#include <doctest/doctest.h>

using namespace trainmem;

TEST_CASE("the Llama 3 presets carry the shapes of the Llama 3 paper's Table 3") {
  const ModelShape* shape_8b = find_preset("llama3-8b");
  REQUIRE(shape_8b != nullptr);
  CHECK(shape_8b->num_layers == 32);
  CHECK(shape_8b->hidden_size == 4096);
  CHECK(shape_8b->ffn_hidden_size == 14336);
  CHECK(shape_8b->num_attention_heads == 32);
  CHECK(shape_8b->num_key_value_heads == 8);
  CHECK(shape_8b->vocab_size == 128256);
  CHECK_FALSE(shape_8b->tied_embeddings);

  const ModelShape* shape_70b = find_preset("llama3-70b");
  REQUIRE(shape_70b != nullptr);
  CHECK(shape_70b->num_layers == 80);
  CHECK(shape_70b->hidden_size == 8192);
  CHECK(shape_70b->ffn_hidden_size == 28672);
  CHECK(shape_70b->num_attention_heads == 64);

  const ModelShape* shape_405b = find_preset("llama3-405b");
  REQUIRE(shape_405b != nullptr);
  CHECK(shape_405b->num_layers == 126);
  CHECK(shape_405b->hidden_size == 16384);
  CHECK(shape_405b->ffn_hidden_size == 53248);
  CHECK(shape_405b->num_attention_heads == 128);
  CHECK(shape_405b->num_key_value_heads == 8);
}

TEST_CASE("parameter counts derived from the shape match Meta's published counts exactly") {
  // 8,030,261,248 / 70,553,706,496 / 405,853,388,800: the counts of the released checkpoints.
  CHECK(count_parameters(*find_preset("llama3-8b")) == 8030261248.0);
  CHECK(count_parameters(*find_preset("llama3-70b")) == 70553706496.0);
  CHECK(count_parameters(*find_preset("llama3-405b")) == 405853388800.0);
}

TEST_CASE("tying the embedding to the output head removes one vocabulary-by-hidden matrix") {
  ModelShape tied = *find_preset("llama3-8b");
  tied.tied_embeddings = true;
  CHECK(count_parameters(*find_preset("llama3-8b")) - count_parameters(tied) == 128256.0 * 4096);
}

TEST_CASE("grouped-query attention counts only the key/value heads' projections") {
  ModelShape full_attention = *find_preset("llama3-8b");
  full_attention.num_key_value_heads = full_attention.num_attention_heads;
  // K and V grow from 8 to 32 heads of 128 in each of 32 layers.
  const double extra = 32 * 2 * 4096.0 * (32 - 8) * 128;
  CHECK(count_parameters(full_attention) - count_parameters(*find_preset("llama3-8b")) == extra);
}

TEST_CASE("an unknown preset id finds nothing") {
  CHECK(find_preset("llama3-7b") == nullptr);
  CHECK(find_preset("") == nullptr);
  CHECK(preset_ids_joined() == "llama3-8b, llama3-70b, llama3-405b");
}
