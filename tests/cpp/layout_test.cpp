// Parallel layouts, recomputation, precisions and devices: each term against its formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace layout_test {

namespace {

constexpr double kParameters8b = 8030261248.0;
constexpr double kTokens = 8192;
constexpr double kHidden8b = 4096;
constexpr double kLayers8b = 32;
constexpr double kSbh = kTokens * kHidden8b;  // s·b·h for one 8,192-token sequence of the 8B

TrainingSetup with_layout(int d, int zero, int t, bool sp, int p, int c) {
  TrainingSetup setup;
  setup.layout.data_parallel = d;
  setup.layout.zero_stage = zero;
  setup.layout.tensor_parallel = t;
  setup.layout.sequence_parallel = sp;
  setup.layout.pipeline_parallel = p;
  setup.layout.context_parallel = c;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.status == Status::kOk, estimate.answer.message);
  return estimate;
}

void check_refused(const TrainingSetup& setup, const std::string& field,
                   const std::string& message) {
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == field);
  CHECK(estimate.answer.message == message);
}

}  // namespace

TEST_CASE("with every degree at 1 the plate's figures come back exactly") {
  const Estimate estimate = ok(with_layout(1, 0, 1, false, 1, 1));
  CHECK(estimate.bytes.model_states() == 16 * kParameters8b);
  CHECK(estimate.bytes[Term::kActivations] == 34 * kSbh * kLayers8b);
  CHECK(format_bytes(estimate.bytes.total()) == "165.0 GB");
  CHECK(estimate.most_loaded_stage == PipelineStage::kOnly);
  CHECK(estimate.parameters_on_device == kParameters8b);
}

TEST_CASE("with d = N and ZeRO-3 the states are exactly 16·P/N bytes") {
  for (int n : {2, 8, 64, 1000}) {
    CAPTURE(n);
    const Estimate estimate = ok(with_layout(n, 3, 1, false, 1, 1));
    CHECK(estimate.bytes.model_states() == doctest::Approx(16 * kParameters8b / n).epsilon(1e-15));
    CHECK(estimate.num_devices == n);
  }
}

TEST_CASE("ZeRO-1 shards the optimiser states and master weights, ZeRO-2 the gradients too") {
  const double d = 8;
  const Estimate stage1 = ok(with_layout(8, 1, 1, false, 1, 1));
  CHECK(stage1.bytes[Term::kWeights] == 2 * kParameters8b);
  CHECK(stage1.bytes[Term::kGradients] == 2 * kParameters8b);
  CHECK(stage1.bytes[Term::kMasterWeights] == 4 * kParameters8b / d);
  CHECK(stage1.bytes[Term::kOptimizerStates] == 8 * kParameters8b / d);
  const Estimate stage2 = ok(with_layout(8, 2, 1, false, 1, 1));
  CHECK(stage2.bytes[Term::kWeights] == 2 * kParameters8b);
  CHECK(stage2.bytes[Term::kGradients] == 2 * kParameters8b / d);
  const Estimate stage0 = ok(with_layout(8, 0, 1, false, 1, 1));
  CHECK(stage0.bytes.model_states() == 16 * kParameters8b);
}

TEST_CASE(
    "tensor parallelism follows Korthikanti's Table 2, with and without sequence parallelism") {
  for (double t : {2.0, 4.0, 8.0}) {
    CAPTURE(t);
    const int degree = static_cast<int>(t);
    CHECK(ok(with_layout(1, 0, degree, false, 1, 1)).bytes[Term::kActivations] ==
          doctest::Approx(kLayers8b * kSbh * (10 + 24 / t)));
    CHECK(ok(with_layout(1, 0, degree, true, 1, 1)).bytes[Term::kActivations] ==
          doctest::Approx(kLayers8b * kSbh * 34 / t));
    TrainingSetup scores = with_layout(1, 0, degree, true, 1, 1);
    scores.flash_attention = false;
    CHECK(ok(scores).bytes[Term::kActivations] ==
          doctest::Approx(kLayers8b * kSbh * (34 / t + 5 * 32 * kTokens / (kHidden8b * t))));
  }
}

TEST_CASE("tensor parallelism splits the matrices and the vocabulary, not the norms") {
  const Estimate estimate = ok(with_layout(1, 0, 8, true, 1, 1));
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  CHECK(estimate.parameters_on_device ==
        32 * (counts.attention_and_mlp_per_layer / 8 + counts.norms_per_layer) +
            2 * counts.embedding / 8 + counts.final_norm);
}

TEST_CASE("full recomputation keeps 2·s·b·h bytes per layer, plus one layer rebuilt") {
  TrainingSetup setup;
  setup.recompute = Recompute::kFull;
  // 32 layers' inputs, then the one layer being recomputed holds its other 34 - 2.
  CHECK(ok(setup).bytes[Term::kActivations] == kLayers8b * 2 * kSbh + (34 - 2) * kSbh);
  TrainingSetup two_layers_more = setup;
  two_layers_more.model_id = "llama3-70b";
  const double sbh70 = kTokens * 8192;
  CHECK(ok(two_layers_more).bytes[Term::kActivations] == 80 * 2 * sbh70 + 32 * sbh70);
  TrainingSetup sharded = with_layout(1, 0, 4, true, 1, 1);
  sharded.recompute = Recompute::kFull;
  CHECK(ok(sharded).bytes[Term::kActivations] ==
        kLayers8b * 2 * kSbh / 4 + (34.0 / 4 - 2.0 / 4) * kSbh);
}

TEST_CASE("selective recomputation drops the score term, as FlashAttention does") {
  TrainingSetup selective;
  selective.flash_attention = false;
  selective.recompute = Recompute::kSelective;
  CHECK(ok(selective).bytes[Term::kActivations] == ok(TrainingSetup{}).bytes[Term::kActivations]);
}

TEST_CASE("pipeline stages: the first holds p micro-batches of L/p layers and the embedding") {
  const Estimate estimate = ok(with_layout(1, 0, 1, false, 4, 1));
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  const double layer = counts.attention_and_mlp_per_layer + counts.norms_per_layer;
  // First stage: 8 layers and the embedding; last: 8 layers, the head and the final norm.
  CHECK(estimate.most_loaded_stage == PipelineStage::kFirst);
  CHECK(estimate.parameters_on_device == 8 * layer + counts.embedding);
  CHECK(estimate.bytes[Term::kActivations] == kLayers8b * 34 * kSbh);
  CHECK(estimate.num_devices == 4);
}

TEST_CASE("learned positions sit whole on the first stage, a head's bias split on the last") {
  TrainingSetup gpt2 = with_layout(1, 0, 2, false, 2, 1);
  gpt2.model_id = "gpt2";
  gpt2.sequence_length = 1024;  // its 1,024 learned positions
  const ParameterCounts counts = parameter_counts(*find_preset("gpt2"));
  const double layer =
      counts.attention_and_mlp_per_layer / 2 + counts.norms_per_layer + counts.replicated_per_layer;
  // First stage: 6 layers, half of wte's rows (50,257 padded to 50,258) and all 1,024 of wpe's.
  const Estimate first = ok(gpt2);
  CHECK(first.most_loaded_stage == PipelineStage::kFirst);
  CHECK(first.parameters_on_device == 6 * layer + 25129.0 * 768 + 1024.0 * 768);

  // A Phi-2-shaped model: its last stage holds half the head's rows and half its bias.
  ModelShape phi = *find_preset("gpt2");
  phi.name = "Phi-2";
  phi.num_layers = 32;
  phi.hidden_size = 2560;
  phi.ffn_hidden_size = 10240;
  phi.num_attention_heads = phi.num_key_value_heads = 32;
  phi.vocab_size = 51200;
  phi.num_position_embeddings = 0;
  phi.tied_embeddings = false;
  phi.norms_per_layer = 1;
  phi.output_head_bias = true;
  phi.id = kCustomModelId;
  TrainingSetup setup = with_layout(1, 0, 2, false, 2, 1);
  setup.model_id = kCustomModelId;
  setup.custom_model = phi;
  setup.logits = true;  // the logits, with activations recomputed, make the last stage heavier
  setup.recompute = Recompute::kFull;
  const ParameterCounts phi_counts = parameter_counts(phi);
  const double phi_layer = phi_counts.attention_and_mlp_per_layer / 2 + phi_counts.norms_per_layer +
                           phi_counts.replicated_per_layer;
  const Estimate last = ok(setup);
  CHECK(last.most_loaded_stage == PipelineStage::kLast);
  CHECK(last.parameters_on_device == 16 * phi_layer + 25600.0 * 2560 + 25600 + 2 * 2560);
}

TEST_CASE("the interleaved schedule adds (p-1)/(p·v) to the first stage's activations") {
  TrainingSetup setup = with_layout(1, 0, 1, false, 4, 1);
  setup.layout.virtual_pipeline_stages = 2;
  CHECK(ok(setup).bytes[Term::kActivations] ==
        doctest::Approx(kLayers8b * 34 * kSbh * (1 + 3.0 / 8)));
}

TEST_CASE("context parallelism splits the sequence over c devices") {
  const Estimate estimate = ok(with_layout(1, 0, 1, false, 1, 4));
  CHECK(estimate.bytes[Term::kActivations] == kLayers8b * 34 * kSbh / 4);
  TrainingSetup scores = with_layout(1, 0, 1, false, 1, 4);
  scores.flash_attention = false;
  // Each device's queries still meet all s keys: the score term keeps the full s.
  CHECK(ok(scores).bytes[Term::kActivations] ==
        kLayers8b * (kTokens / 4) * kHidden8b * (34 + 5 * 32 * kTokens / kHidden8b));
}

TEST_CASE("logits and loss: FP32 logits alone are about 4.2 GB per 8,192-token Llama 3 sequence") {
  TrainingSetup setup;
  setup.logits = true;
  const Estimate estimate = ok(setup);
  CHECK(format_bytes(kFp32Bytes * 8192 * 128256) == "4.2 GB");
  CHECK(estimate.bytes[Term::kLogits] == (2 + 4) * 8192.0 * 128256);
  CHECK(estimate.bytes.total() ==
        ok(TrainingSetup{}).bytes.total() + estimate.bytes[Term::kLogits]);
  TrainingSetup split = with_layout(1, 0, 8, true, 1, 1);
  split.logits = true;
  CHECK(ok(split).bytes[Term::kLogits] == (2 + 4) * 8192.0 * 128256 / 8);
}

TEST_CASE("with the logits on, a pipeline's last stage can be the most loaded") {
  TrainingSetup setup = with_layout(1, 0, 1, false, 32, 1);
  setup.logits = true;
  setup.micro_batch_sequences = 4;
  setup.recompute =
      Recompute::kFull;  // the first stage keeps only layer inputs; the last, 25 GB of logits
  const Estimate estimate = ok(setup);
  CHECK(estimate.most_loaded_stage == PipelineStage::kLast);
  CHECK(estimate.bytes[Term::kLogits] > 0);
}

TEST_CASE("the device sets the capacity, devices' worth and whether it fits") {
  TrainingSetup setup = with_layout(8, 3, 1, false, 1, 1);
  setup.device_id = "h200";
  const Estimate h200 = ok(setup);
  CHECK(h200.device.capacity_bytes == 141e9);
  CHECK(h200.fits);
  CHECK(h200.devices_worth == h200.bytes.total() / 141e9);
  setup.device_id = "custom";
  setup.custom_capacity_gb = 40;
  const Estimate custom = ok(setup);
  CHECK(custom.device.capacity_bytes == 40e9);
  CHECK(custom.device.name == "Custom 40 GB");
  CHECK_FALSE(custom.fits);
}

TEST_CASE("the per-device total never grows when a parallel degree or the ZeRO stage grows") {
  for (const char* model : {"llama3-8b", "llama3-70b"}) {
    for (bool logits : {false, true}) {
      for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (int zero = 0; zero <= 3; ++zero) {
          for (int t : {1, 2, 8}) {
            for (int p : {1, 2, 8}) {
              for (int c : {1, 2}) {
                for (int d : {2, 4}) {
                  TrainingSetup base = with_layout(d, zero, t, t > 1, p, c);
                  base.model_id = model;
                  base.logits = logits;
                  base.recompute = recompute;
                  const Estimate before = ok(base);
                  CAPTURE(model);
                  CAPTURE(choice_id(recompute));
                  CAPTURE(zero);
                  CAPTURE(t);
                  CAPTURE(p);
                  CAPTURE(c);
                  CAPTURE(d);
                  for (int change = 0; change < 5; ++change) {
                    TrainingSetup grown = base;
                    if (change == 0) grown.layout.data_parallel *= 2;
                    if (change == 1 && zero == 3) continue;  // no stage above 3
                    if (change == 1) grown.layout.zero_stage = zero + 1;
                    if (change == 2) grown.layout.tensor_parallel *= 2;
                    if (change == 3) grown.layout.pipeline_parallel *= 2;
                    if (change == 4) grown.layout.context_parallel *= 2;
                    grown.layout.sequence_parallel = grown.layout.tensor_parallel > 1;
                    const Estimate after = estimate_memory(grown);
                    if (after.answer.status != Status::kOk) continue;
                    CAPTURE(change);
                    CHECK(after.bytes.total() <= before.bytes.total());
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("layouts that make no sense are refused, naming the field") {
  check_refused(with_layout(1, 0, 3, false, 1, 1), "tp",
                "Tensor parallelism 3 must divide the 32 attention heads, 8 key/value heads and "
                "14,336 FFN width of Llama 3 8B.");
  check_refused(with_layout(1, 0, 16, true, 1, 1), "tp",
                "Tensor parallelism 16 must divide the 32 attention heads, 8 key/value heads and "
                "14,336 FFN width of Llama 3 8B.");
  check_refused(with_layout(1, 0, 1, true, 1, 1), "sequence-parallel",
                "Sequence parallelism splits what tensor parallelism leaves whole; it needs tensor "
                "parallelism above 1.");
  check_refused(with_layout(1, 0, 1, false, 5, 1), "pp",
                "Pipeline parallelism 5 must divide the 32 layers of Llama 3 8B, or set the first "
                "and last pipeline stages' layers so that the stages between split the rest "
                "evenly.");
  check_refused(with_layout(1, 1, 1, false, 1, 1), "zero",
                "ZeRO shards the model states over data-parallel replicas; a ZeRO stage above 0 "
                "needs data or context parallelism above 1.");
  check_refused(with_layout(2, 4, 1, false, 1, 1), "zero", "ZeRO stage must be 0, 1, 2 or 3.");
  check_refused(with_layout(0, 0, 1, false, 1, 1), "dp",
                "Data parallelism must be a whole number from 1 to 65,536.");
  check_refused(with_layout(1, 0, 1, false, 1, 3), "cp",
                "Context parallelism 3 must divide the sequence length 8,192.");
  check_refused(with_layout(65536, 0, 8, true, 32, 2), "dp",
                "The layout's d·t·p·c devices must number at most 16,777,216.");

  TrainingSetup interleaved = with_layout(1, 0, 1, false, 1, 1);
  interleaved.layout.virtual_pipeline_stages = 2;
  check_refused(interleaved, "vpp",
                "Virtual pipeline stages interleave a pipeline; they need pipeline parallelism "
                "above 1.");
  interleaved.layout.pipeline_parallel = 4;
  interleaved.layout.virtual_pipeline_stages = 3;
  check_refused(interleaved, "vpp",
                "Pipeline parallelism times virtual stages (4 × 3) must divide the 32 layers of "
                "Llama 3 8B.");

  // A choice no setup can hold is refused where its text is read.
  const auto check_text_refused = [](const char* id, const char* text, const std::string& message) {
    TrainingSetup setup;
    const Answer answer = apply_setting(setup, id, text);
    CHECK(answer.status == Status::kInvalidInput);
    CHECK(answer.setting == id);
    CHECK(answer.message == message);
    CHECK(setting_text(setup, id) == find_setting(id)->default_text);
  };
  check_text_refused(
      "recompute", "some",
      "Recomputation 'some' is not known; choose one of none, selective, full, selective-op.");
  check_text_refused("optimizer", "lion",
                     "Optimizer 'lion' is not known; choose one of adam, adam-8bit, adafactor, "
                     "sgd-momentum, adam-bf16-moments, muon.");
  check_text_refused("precision", "fp8",
                     "Precision 'fp8' is not known; choose one of bf16-mixed, bf16, fp32, "
                     "fp8-mixed, bf16-master, nvfp4-mixed.");
  TrainingSetup names;
  names.device_id = "tpu";
  check_refused(
      names, "device",
      "Device 'tpu' is not known; choose one of h100, h100-96gb, h200, h20, b200, gb200, b300, "
      "a100-40gb, a100-80gb, mi300x, mi325x, l40s, l4, a10g, rtx-4090, rtx-5090, "
      "custom.");
  names = TrainingSetup{};
  names.device_id = "custom";
  for (double gigabytes : {0.0, -1.0, 1e9, std::numeric_limits<double>::quiet_NaN()}) {
    names.custom_capacity_gb = gigabytes;
    check_refused(names, "device-gb",
                  "A custom device's memory must be more than 0 GB and at most 100,000 GB.");
  }
}

TEST_CASE("each term's arithmetic shows this setup's numbers and its source") {
  const std::vector<TermArithmetic> plate = explain_estimate(TrainingSetup{});
  REQUIRE(plate.size() == 5);
  CHECK(plate[0].term == "weights");
  CHECK(plate[0].formula == "2 B × 8,030,261,248 parameters = 16.1 GB");
  CHECK(plate[3].formula == "8 B × 8,030,261,248 parameters = 64.2 GB");
  CHECK(plate[4].term == "activations");
  CHECK(plate[4].formula ==
        "32 layers × 8,192 tokens × 4,096 h × (34 + 0 (FlashAttention: no scores)) B = 36.5 GB");
  CHECK(plate[4].source == "Korthikanti et al., MLSys 2023, equation 1 and Table 2");

  TrainingSetup sharded = with_layout(8, 3, 1, false, 1, 1);
  sharded.logits = true;
  sharded.flash_attention = false;
  const std::vector<TermArithmetic> terms = explain_estimate(sharded);
  REQUIRE(terms.size() == 6);
  CHECK(terms[0].formula == "2 B × 8,030,261,248 parameters / 8 ZeRO shards = 2.0 GB");
  CHECK(terms[4].formula ==
        "32 layers × 8,192 tokens × 4,096 h × (34 + 320 (5·a·s/h, a = 32 heads, s = 8,192)) B = "
        "380.1 GB");
  CHECK(terms[5].formula == "6 B × 8,192 tokens × 128,256 vocabulary = 6.3 GB");
  CHECK(explain_estimate(with_layout(1, 0, 3, false, 1, 1)).empty());
}

TEST_CASE("more tokens never need less memory, and FlashAttention never needs more") {
  for (const ModelShape& shape : preset_models()) {
    for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (int t : {1, 2}) {
        for (int c : {1, 2}) {
          TrainingSetup setup = with_layout(1, 0, t, t > 1, 1, c);
          setup.model_id = shape.id;
          setup.recompute = recompute;
          setup.logits = c == 2;
          CAPTURE(shape.id);
          CAPTURE(choice_id(recompute));
          double previous = 0;
          for (int sequences : {1, 2, 3, 8, 64}) {
            setup.micro_batch_sequences = sequences;
            setup.flash_attention = true;
            const Estimate flash = estimate_memory(setup);
            setup.flash_attention = false;
            const Estimate scores = estimate_memory(setup);
            if (flash.answer.status != Status::kOk)
              continue;  // a preset whose heads t does not divide
            CHECK(flash.bytes.total() >= previous);
            // DSA's layers are not counted without their fused kernels (check_sparse.cpp).
            CHECK((scores.answer.status != Status::kOk) == sparse_attention(shape));
            if (scores.answer.status == Status::kOk) {
              CHECK(flash.bytes.total() <= scores.bytes.total());
            }
            previous = flash.bytes.total();
          }
        }
      }
    }
  }
}

TEST_CASE("a custom capacity is checked even while a catalogue device is chosen") {
  TrainingSetup setup;
  setup.custom_capacity_gb = std::numeric_limits<double>::quiet_NaN();
  check_refused(setup, "device-gb",
                "A custom device's memory must be more than 0 GB and at most 100,000 GB.");
}

TEST_CASE(
    "a vocabulary that t does not divide is padded to a multiple of t, never split in halves") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = *find_preset("llama3-8b");
  setup.custom_model.id = kCustomModelId;
  setup.custom_model.vocab_size = 50257;
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.logits = true;
  const Estimate estimate = ok(setup);
  CHECK(estimate.parameters_on_device == std::trunc(estimate.parameters_on_device));
  CHECK(estimate.bytes[Term::kLogits] == 6 * 8192.0 * 25129);  // ceil(50,257 / 2) rows
}

}  // namespace layout_test
