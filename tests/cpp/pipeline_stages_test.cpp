// Uneven pipeline stages (Megatron-LM's --decoder-first-pipeline-num-layers and
// --decoder-last-pipeline-num-layers): each stage's layers, micro-batches in flight and parameters
// against figures worked by hand, and the refusals of splits Megatron-LM refuses.
#include <doctest/doctest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "estimate/placement.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace pipeline_stages_test {

namespace {

constexpr double kTokens = 8192;
constexpr double kHidden8b = 4096;
constexpr double kSbh = kTokens * kHidden8b;  // s·b·h for one 8,192-token sequence of the 8B
constexpr double kKorthikantiPerLayer = 34;   // 34·s·b·h bytes a layer, FlashAttention on

TrainingSetup pipeline_of_8b(int p, int first_layers, int last_layers) {
  TrainingSetup setup;
  setup.layout.pipeline_parallel = p;
  setup.layout.pipeline_first_stage_layers = first_layers;
  setup.layout.pipeline_last_stage_layers = last_layers;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.status == Status::kOk, estimate.answer.message);
  return estimate;
}

// One Llama 3 8B layer's parameters, with t = 1.
double layer_8b() {
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  return counts.attention_and_mlp_per_layer + counts.norms_per_layer;
}

void check_refused(const TrainingSetup& setup, const std::string& setting,
                   const std::string& message) {
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == setting);
  CHECK(estimate.answer.message == message);
}

}  // namespace

TEST_CASE("uneven stages: the first stage holds p micro-batches of its own k layers") {
  // p 2 over 32 layers: 20 on the first stage, 12 on the last. The first holds 2 micro-batches of
  // 20 layers (40 layers' worth) and the embedding; the last, one of 12 and the output layer.
  const Estimate estimate = ok(pipeline_of_8b(2, 20, 12));
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  CHECK(estimate.most_loaded_stage == PipelineStage::kFirst);
  CHECK(estimate.parameters_on_device == 20 * layer_8b() + counts.embedding);
  CHECK(estimate.bytes[Term::kActivations] == 2 * 20 * kKorthikantiPerLayer * kSbh);
}

TEST_CASE("uneven stages: a lighter first stage leaves a middle stage the most loaded") {
  // p 4 over 32 layers: 5 on the first, 9 on the last, (32 - 14) / 2 = 9 on each middle stage.
  // The second stage holds p - 1 = 3 micro-batches of 9 layers (27 layers' worth), more than the
  // first's 4 × 5 = 20; its 9 layers outweigh the first's 5 and the embedding.
  const Estimate estimate = ok(pipeline_of_8b(4, 5, 9));
  CHECK(estimate.most_loaded_stage == PipelineStage::kMiddle);
  CHECK(estimate.parameters_on_device == 9 * layer_8b());
  CHECK(estimate.bytes[Term::kActivations] == 3 * 9 * kKorthikantiPerLayer * kSbh);
  CHECK(estimate.bytes[Term::kWeights] == 2 * 9 * layer_8b());
}

TEST_CASE("uneven stages: a heavy last stage holds its k layers and the output layer") {
  // p 2: 4 layers on the first, 28 on the last. The last holds one micro-batch of 28 layers.
  TrainingSetup setup = pipeline_of_8b(2, 4, 28);
  const Estimate estimate = ok(setup);
  const ParameterCounts counts = parameter_counts(*find_preset("llama3-8b"));
  CHECK(estimate.most_loaded_stage == PipelineStage::kLast);
  CHECK(estimate.parameters_on_device ==
        28 * layer_8b() + counts.embedding + counts.final_norm);  // untied output layer
  CHECK(estimate.bytes[Term::kActivations] == 28 * kKorthikantiPerLayer * kSbh);
}

TEST_CASE("uneven stages: the first stage's layers alone leave the rest to the other stages") {
  // p 4 with 2 layers on the first stage: the three others take 10 each, the last among them.
  TrainingSetup setup = pipeline_of_8b(4, 2, 0);
  const Estimate estimate = ok(setup);
  CHECK(estimate.most_loaded_stage == PipelineStage::kMiddle);
  CHECK(estimate.bytes[Term::kActivations] == 3 * 10 * kKorthikantiPerLayer * kSbh);
  CHECK(format_layout(setup) ==
        "d 1 × t 1 × p 4 (2 + 3 × 10 layers) × c 1 = 4 devices, recompute none");
}

TEST_CASE("uneven stages: an even split written out is the even split") {
  const Estimate written = ok(pipeline_of_8b(4, 8, 8));
  const Estimate even = ok(pipeline_of_8b(4, 0, 0));
  CHECK(written.bytes.total() == even.bytes.total());
  CHECK(written.most_loaded_stage == even.most_loaded_stage);
  CHECK(written.parameters_on_device == even.parameters_on_device);
}

TEST_CASE("uneven stages: a mixture's dense layers leave the first all-mixture stage heaviest") {
  // DeepSeek-V3, p 16 with 1 layer on the first stage: 60 / 15 = 4 on each other stage. Its 3
  // dense layers are layers 0 to 2: the second stage holds 2 of them, the third none. Without
  // ZeRO the third stage's 4 mixture layers, 256 experts each, outweigh the second's in-flight
  // micro-batch more.
  TrainingSetup setup;
  setup.model_id = "deepseek-v3";
  setup.layout.pipeline_parallel = 16;
  setup.layout.pipeline_first_stage_layers = 1;
  const Estimate estimate = ok(setup);
  const ParameterCounts counts = parameter_counts(*find_preset("deepseek-v3"));
  CHECK(estimate.most_loaded_stage == PipelineStage::kMiddle);
  CHECK(estimate.parameters_on_device ==
        doctest::Approx(4 * (counts.attention_and_mlp_per_layer + counts.replicated_per_layer +
                             counts.norms_per_layer)));
}

TEST_CASE("uneven stages: splits Megatron-LM refuses are refused, naming the setting") {
  check_refused(pipeline_of_8b(1, 4, 0), "pp-first-layers",
                "The first pipeline stage's layers split a pipeline; they need pipeline "
                "parallelism above 1, or 0 for one stage.");
  check_refused(pipeline_of_8b(1, 0, 4), "pp-last-layers",
                "The last pipeline stage's layers split a pipeline; they need pipeline parallelism "
                "above 1, or 0 for one stage.");
  TrainingSetup interleaved = pipeline_of_8b(4, 5, 9);
  interleaved.layout.virtual_pipeline_stages = 2;
  check_refused(interleaved, "pp-first-layers",
                "With 2 virtual stages a device, the first stage's 5 layers must split evenly "
                "over them (Megatron-LM's rule).");
  interleaved.layout.pipeline_first_stage_layers = 4;
  interleaved.layout.pipeline_last_stage_layers = 10;
  check_refused(interleaved, "pp-first-layers",
                "With 2 virtual stages a device, the middle stages' 9 layers must split evenly "
                "over them (Megatron-LM's rule).");
  // torchtitan splits the virtual stages themselves (generate_split_points): any split that
  // gives each virtual stage a layer.
  interleaved.layout.pipeline_first_stage_layers = 5;
  interleaved.layout.pipeline_last_stage_layers = 9;
  interleaved.stack = Stack::kTorchtitan;
  interleaved.layout.data_parallel = 2;
  interleaved.layout.zero_stage = 3;
  interleaved.logits = true;
  interleaved.loss = Loss::kFp32Upcast;
  CHECK(estimate_memory(interleaved).answer.ok());
  check_refused(pipeline_of_8b(4, 5, 8), "pp-first-layers",
                "The first and last pipeline stages' layers (5 and 8) leave 19 of the 32 layers of "
                "Llama 3 8B to 2 stages, which must take an equal whole number each, at least one "
                "(Megatron-LM's rule): with p 4, their layers must add up to 10, 12 or 14.");
  check_refused(pipeline_of_8b(2, 10, 10), "pp-first-layers",
                "The first and last pipeline stages' layers (10 and 10) leave 12 of the 32 layers "
                "of Llama 3 8B to no stage: with p 2 they must add up to 32.");
  check_refused(pipeline_of_8b(4, 0, 40), "pp-last-layers",
                "The last pipeline stage's layers (40) leave 0 of the 32 layers of Llama 3 8B to 3 "
                "stages, which must take an equal whole number each, at least one (Megatron-LM's "
                "rule): with p 4, it must hold 23, 26 or 29.");
  // 61 layers on p 8 cannot split evenly; Megatron-LM users give the first and last stages fewer.
  TrainingSetup deepseek;
  deepseek.model_id = "deepseek-v3";
  deepseek.layout.pipeline_parallel = 8;
  check_refused(
      deepseek, "pp",
      "Pipeline parallelism 8 must divide the 61 layers of DeepSeek-V3 / R1 671B, or set the "
      "first and last pipeline stages' layers so that the stages between split the rest "
      "evenly.");
  deepseek.layout.pipeline_first_stage_layers = 6;
  deepseek.layout.pipeline_last_stage_layers = 7;
  CHECK(estimate_memory(deepseek).answer.ok());
}

TEST_CASE("uneven stages: the CLI's flags set the layout, and their text reads back the same") {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli({"--model", "deepseek-v3", "--pp", "8", "--pp-first-layers", "6",
                              "--pp-last-layers", "7", "--dp", "4", "--ep", "4", "--json"},
                             out, err);
  REQUIRE_MESSAGE(status == 3, err.str());  // answered: 671 B over 32 H100s does not fit
  const nlohmann::json json = nlohmann::json::parse(out.str());
  CHECK(json["layout"]["pp"] == 8);
  CHECK(json["layout"]["ppFirstLayers"] == 6);
  CHECK(json["layout"]["ppLastLayers"] == 7);
  CHECK(json["mostLoadedStage"] == "middle");

  TrainingSetup setup;
  CHECK(apply_setting(setup, "pp-first-layers", "6").ok());
  CHECK(apply_setting(setup, "pp-last-layers", "7").ok());
  CHECK(setup.layout.pipeline_first_stage_layers == 6);
  CHECK(setup.layout.pipeline_last_stage_layers == 7);
  CHECK(setting_text(setup, "pp-first-layers") == "6");
  CHECK(setting_text(setup, "pp-last-layers") == "7");
  const Answer negative = apply_setting(setup, "pp-first-layers", "-1");
  CHECK(negative.setting == "pp-first-layers");
  CHECK(negative.message ==
        "First pipeline stage's layers must be a whole number from 0 (the even split) to 65,536.");
  CHECK(setup.layout.pipeline_first_stage_layers == 6);
}

TEST_CASE("interleaved: each device holds its warm-up's chunks, the last (v - 1)·p + 1 of them") {
  // p 8, v 2: device i's warm-up runs (2 - 1)·8 + 2·(7 - i) chunks and the steady state one
  // more, each half of the device's layers.
  ParallelLayout layout;
  layout.pipeline_parallel = 8;
  layout.virtual_pipeline_stages = 2;
  const double unbounded = std::numeric_limits<double>::infinity();
  // The first: 23 chunks, 8 · (1 + 7/16) micro-batches (Megatron-LM's factor).
  CHECK(micro_batches_in_flight(layout, unbounded, 0) == 11.5);
  CHECK(micro_batches_in_flight(layout, unbounded, 1) == 10.5);
  // The last: 9 chunks, 4.5 micro-batches of its layers, not one.
  CHECK(micro_batches_in_flight(layout, unbounded, 7) == 4.5);
  // torchtitan's 8 micro-batches a step cap the warm-up at all 16 chunks on the first four.
  for (const double device : {0.0, 1.0, 2.0, 3.0}) {
    CHECK(micro_batches_in_flight(layout, 8, device) == 8);
  }
  CHECK(micro_batches_in_flight(layout, 8, 4) == 7.5);
  CHECK(micro_batches_in_flight(layout, 8, 7) == 4.5);
  // 1F1B: p - i, at most the step's micro-batches.
  layout.virtual_pipeline_stages = 1;
  CHECK(micro_batches_in_flight(layout, unbounded, 0) == 8);
  CHECK(micro_batches_in_flight(layout, unbounded, 7) == 1);
  CHECK(micro_batches_in_flight(layout, 4, 0) == 4);

  // The estimate's last stage under Megatron-LM's interleaving: Llama 3 8B, p 4, v 2, full
  // recomputation, no logits: 4·2 - 4 + 1 = 5 chunks of its 8 layers' halves, 2.5 micro-batches
  // of 8 layers, 20 layers' worth of 2·s·h each, and one layer rebuilt.
  TrainingSetup setup;
  setup.layout.pipeline_parallel = 4;
  setup.layout.virtual_pipeline_stages = 2;
  setup.recompute = Recompute::kFull;
  const Placement placement = place_parameters(*find_preset("llama3-8b"), setup);
  CHECK(placement.last.micro_batches_in_flight == 2.5);
  CHECK(activation_slots(placement.last) == 20);
  CHECK(placement.first.micro_batches_in_flight == 5.5);
  CHECK(activation_slots(placement.first) == doctest::Approx(32 * (1 + 3.0 / 8)));
}

TEST_CASE(
    "interleaved under torchtitan: FSDP2's FP32 gradient buffers at the peak are the last virtual "
    "stage's when the step is one round of micro-batches") {
  // Llama 3 8B under torchtitan, p 4, FSDP 2, full recomputation, the last device asked for. Each
  // virtual stage accumulates its gradients unsharded in FP32 from its first backward pass to its
  // last; the interleaved schedule runs the last virtual stage's p = n micro-batches first and
  // reduce-scatters them before the first virtual stage's begin.
  TrainingSetup setup;
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.layout.pipeline_parallel = 4;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.pipeline_stage = -1;
  const auto accumulated = [](const Estimate& estimate) {
    for (const StackTerm& term : estimate.stack_terms) {
      if (term.id == "fsdp-accumulated-gradients") return term.bytes;
    }
    return -1.0;
  };
  const double layer = layer_8b();
  const double root = 128256.0 * 4096 + 4096;  // the output layer and the final norm
  // 1F1B: every layer's and the root's, 4 B each.
  const Estimate one_f_one_b = ok(setup);
  CHECK(accumulated(one_f_one_b) == allocator_block_bytes(4 * one_f_one_b.parameters_on_device));
  // Interleaved, v 2: half the device's layers and the root, the last virtual stage's.
  setup.layout.virtual_pipeline_stages = 2;
  const Estimate interleaved = ok(setup);
  const double layers = (interleaved.parameters_on_device - root) / layer;
  CHECK(layers == 8);
  CHECK(accumulated(interleaved) == allocator_block_bytes(4 * (layer * layers / 2 + root)));
}

TEST_CASE(
    "interleaved: Megatron-LM's micro-batch group sets each virtual stage's warm-up, and its "
    "limits are Megatron-LM's") {
  // p 4, v 2: the warm-up runs (v - 1)·g + 2·(p - 1 - i) chunks, g = p = 4 by default.
  ParallelLayout layout;
  layout.pipeline_parallel = 4;
  layout.virtual_pipeline_stages = 2;
  const double unbounded = std::numeric_limits<double>::infinity();
  CHECK(micro_batches_in_flight(layout, unbounded, 0) == (4 + 6 + 1) / 2.0);
  // In groups of 8: 8 + 6 + 1 chunks on the first device, 8 + 0 + 1 on the last.
  layout.microbatch_group_size = 8;
  CHECK(micro_batches_in_flight(layout, unbounded, 0) == (8 + 6 + 1) / 2.0);
  CHECK(micro_batches_in_flight(layout, unbounded, 3) == (8 + 0 + 1) / 2.0);
  // The estimate: Llama 3 8B under the megatron stack, p 4, v 2, one sequence a micro-batch on
  // d 1, 16 micro-batches a step.
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.layout.pipeline_parallel = 4;
  setup.layout.virtual_pipeline_stages = 2;
  setup.recompute = Recompute::kFull;
  setup.global_batch_sequences = 16;
  const double by_p = ok(setup).peak_allocated_bytes;
  setup.layout.microbatch_group_size = 8;
  CHECK(ok(setup).peak_allocated_bytes > by_p);
  // Fewer than p, more than the step's, or a last group of fewer than p: refused.
  setup.layout.microbatch_group_size = 2;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kMicrobatchGroupSize);
  setup.layout.microbatch_group_size = 32;
  check_refused(setup, setting_id::kMicrobatchGroupSize,
                "The micro-batches a virtual stage runs in a row (32) must not pass the step's "
                "16 (global batch over micro-batch × d), as Megatron-LM's schedules.py requires; "
                "choose 4 to 16.");
  setup.layout.microbatch_group_size = 6;  // 16 = 2 × 6 + 4: the last group of 4, p, stands
  CHECK(estimate_memory(setup).answer.ok());
  setup.layout.microbatch_group_size = 7;  // 16 = 2 × 7 + 2: fewer than p
  check_refused(setup, setting_id::kGlobalBatch,
                "The interleaved schedule runs its micro-batches in groups of 7, and its last "
                "group must be whole or hold p 4 at least (Megatron-LM's schedules.py): global "
                "batch 16 gives 16 a step; choose a multiple of 7.");
  // It is the interleaved schedule's, and Megatron-LM's.
  setup.layout.microbatch_group_size = 8;
  setup.layout.virtual_pipeline_stages = 1;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kMicrobatchGroupSize);
}

}  // namespace pipeline_stages_test
