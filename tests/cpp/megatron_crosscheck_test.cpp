// Cross-check against Megatron-LM's megatron/training/theoretical_memory_usage.py, recomputed
// here independently from its formulas. The two differ by named conventions only:
//  1. gradients: Megatron keeps FP32 main gradients, 4 bytes (its 18 = 2 + 4 + 12, and 6 + 12/d
//     with the distributed optimizer); the plate's recipe keeps BF16 gradients, 2 bytes;
//  2. norms: Megatron divides every parameter, norms included, by t, and puts the final norm in
//     the transformer block spread over p; trainmem keeps norms whole on each TP rank and puts the
//     final norm on the last stage;
//  3. activations per layer: Megatron's s·b·h·(18 + 4·f/h) scales the MLP part with the FFN width,
//     Korthikanti's 34 assumes f = 4h; Megatron adds the embedding's input (8·s·b·p) and dropout
//     (s·b·h·p), and on a single stage the output layer's 4·s·b·h·(1 + V/h);
//  4. without sequence parallelism Megatron multiplies the activations by 1.05 for temporaries.
#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"

using namespace trainmem;

namespace megatron_crosscheck_test {

namespace {

struct Layout {
  const char* model;
  int d, t, p;
};

struct Megatron {
  double parameters_on_most_loaded_shard;
  double weight_and_optimizer_bytes;
  double activation_bytes_with_sp;
  double activation_bytes_without_sp;
};

// Megatron-LM's formulas, for a Llama-shaped model (RMSNorm: norm_size 1; SwiGLU: 3/2; GQA).
Megatron megatron(const ModelShape& m, const Layout& layout, double s, double b) {
  const double h = m.hidden_size, f = m.ffn_hidden_size, L = m.num_layers, V = m.vocab_size;
  const double d = layout.d, t = layout.t, p = layout.p;
  const double query_ratio = 1.0;  // kv_channels · heads = h
  const double self_attention =
      2 * h * h * ((1 + double(m.num_key_value_heads) / m.num_attention_heads) * query_ratio);
  const double layer = 2 * h * (f * 1.5 + 1) + self_attention;
  const double embedding = h * V;
  const double block = layer * L + h;  // final layernorm in the block
  double most_loaded = (block / p + embedding) / t;
  if (p == 1) most_loaded += embedding / t;  // untied output layer on the same stage

  Megatron result;
  result.parameters_on_most_loaded_shard = most_loaded;
  result.weight_and_optimizer_bytes = most_loaded * (6 + 12 / d);  // distributed optimizer

  double with_sp = s * b * h * (18 + 4 * (f / h)) * L;
  with_sp += 8 * s * b * p + s * b * h * p;
  if (p == 1) with_sp += s * b * h * 4 * (1 + V / h);
  result.activation_bytes_with_sp = with_sp / t;

  double without_sp = s * b * h * (10 + 24 / t) * L;
  without_sp += 8 * s * b * p + s * b * h * p;
  if (p == 1) without_sp += (s * b * V / t + s * b * h) * 2;
  result.activation_bytes_without_sp = without_sp * 1.05;
  return result;
}

}  // namespace

TEST_CASE(
    "cross-check: model states match Megatron-LM's once its FP32 gradients and norm "
    "placement are named") {
  for (const Layout& layout : {Layout{"llama3-8b", 8, 1, 1}, Layout{"llama3-8b", 4, 8, 4},
                               Layout{"llama3-70b", 16, 8, 4}, Layout{"llama3-405b", 64, 8, 9}}) {
    CAPTURE(layout.model);
    CAPTURE(layout.t);
    CAPTURE(layout.p);
    const ModelShape& shape = *find_preset(layout.model);
    TrainingSetup setup;
    setup.model_id = layout.model;
    setup.layout.data_parallel = layout.d;
    setup.layout.zero_stage = 1;  // Megatron's distributed optimizer
    setup.layout.tensor_parallel = layout.t;
    setup.layout.sequence_parallel = layout.t > 1;
    setup.layout.pipeline_parallel = layout.p;
    const Estimate ours = estimate_memory(setup);
    REQUIRE(ours.answer.status == Status::kOk);
    const Megatron theirs = megatron(shape, layout, 8192, 1);

    // Convention 2: norms whole per TP rank, final norm on the last stage only.
    const double h = shape.hidden_size, t = layout.t, p = layout.p;
    const double norms_per_stage = shape.num_layers / p * 2 * h;
    const double norm_difference = norms_per_stage * (1 - 1 / t) - h / (p * t) + (p == 1 ? h : 0);
    CHECK(ours.parameters_on_device - theirs.parameters_on_most_loaded_shard ==
          doctest::Approx(norm_difference).epsilon(1e-12));

    // Convention 1: with Megatron's parameter count, ours plus 2 more gradient bytes is theirs.
    const double gradient_difference = kFp32Bytes - kBf16Bytes;
    const double ours_per_parameter = ours.bytes.model_states() / ours.parameters_on_device;
    CHECK((ours_per_parameter + gradient_difference) * theirs.parameters_on_most_loaded_shard ==
          doctest::Approx(theirs.weight_and_optimizer_bytes).epsilon(1e-12));
  }
}

TEST_CASE(
    "cross-check: activations match Megatron-LM's once its MLP scaling, embedding and "
    "output layer are named") {
  for (const Layout& layout : {Layout{"llama3-8b", 1, 1, 1}, Layout{"llama3-8b", 1, 8, 4},
                               Layout{"llama3-70b", 1, 4, 2}, Layout{"llama3-70b", 1, 8, 8}}) {
    CAPTURE(layout.model);
    CAPTURE(layout.t);
    CAPTURE(layout.p);
    const ModelShape& shape = *find_preset(layout.model);
    const double s = 8192, b = 2, h = shape.hidden_size, f = shape.ffn_hidden_size;
    const double L = shape.num_layers, V = shape.vocab_size, t = layout.t, p = layout.p;
    const Megatron theirs = megatron(shape, layout, s, b);
    const double embedding_terms = 8 * s * b * p + s * b * h * p;

    // Sequence parallelism with selective recomputation (Megatron's compute_activation_memory).
    TrainingSetup setup;
    setup.model_id = layout.model;
    setup.micro_batch_sequences = 2;
    setup.flash_attention = false;
    setup.recompute = Recompute::kSelective;
    setup.layout.tensor_parallel = layout.t;
    setup.layout.sequence_parallel = layout.t > 1;
    setup.layout.pipeline_parallel = layout.p;
    const Estimate with_sp = estimate_memory(setup);
    REQUIRE(with_sp.answer.status == Status::kOk);
    const double mlp_scaling = s * b * h * (18 + 4 * f / h - 34) * L;  // convention 3
    const double output_layer = p == 1 ? s * b * h * 4 * (1 + V / h) : 0;
    CHECK(with_sp.bytes[Term::kActivations] ==
          doctest::Approx(theirs.activation_bytes_with_sp -
                          (mlp_scaling + embedding_terms + output_layer) / t)
              .epsilon(1e-12));

    // Without sequence parallelism (Megatron's compute_activation_memory_without_sp).
    if (layout.t > 1) {
      setup.layout.sequence_parallel = false;
      const Estimate without_sp = estimate_memory(setup);
      REQUIRE(without_sp.answer.status == Status::kOk);
      const double output = p == 1 ? (s * b * V / t + s * b * h) * 2 : 0;
      CHECK(without_sp.bytes[Term::kActivations] ==
            doctest::Approx(theirs.activation_bytes_without_sp / 1.05 - embedding_terms - output)
                .epsilon(1e-12));
    }
  }
}

}  // namespace megatron_crosscheck_test
