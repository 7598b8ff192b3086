// Launch configs in, verdicts out (issue 28): torchtitan's TOML job config read into the setup the
// flags make, what it sets and the estimate does not understand listed, what it cannot model and
// what contradicts itself refused by key; the verdict from the stack's measured band; the CLI's
// exit codes; and the examples under docs/examples.
#include "trainmem/launch.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "cli.hpp"
#include "example_files.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/verdict.hpp"
#include "yaml_json.hpp"
#include "yaml_launch.hpp"

using namespace trainmem;

namespace launch_test {

namespace {

using fixtures::example;

LaunchConfig read(const std::string& text, int world_size = 0) {
  LaunchContext context;
  context.world_size = world_size;
  return read_launch_config(text, TrainingSetup{}, context);
}

LaunchConfig read_ok(const std::string& text, int world_size = 0) {
  LaunchConfig launch = read(text, world_size);
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  return launch;
}

void check_refused(const std::string& text, const std::string& key, const std::string& message,
                   int world_size = 8) {
  const LaunchConfig launch = read(text, world_size);
  CAPTURE(text);
  CHECK_FALSE(launch.answer.ok());
  CHECK(launch.answer.setting == key);
  CHECK(launch.answer.message == message);
}

// A small job config: Llama 3.1 8B, FSDP over the world, full recomputation; `extra` appended.
std::string job(const std::string& extra) {
  return "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nbatch_size = 2\nseq_len = "
         "4096\n[activation_checkpoint]\nmode = \"full\"\n" +
         extra;
}

int cli(const std::vector<std::string>& args, std::string* out_text = nullptr) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli(args, out, err);
  if (out_text != nullptr) *out_text = out.str() + err.str();
  return status;
}

// The file's setup and the flags' (or a measured case's) give the same figures: parameters,
// total and both peaks.
void check_same_figures(const TrainingSetup& from_file, const TrainingSetup& from_flags) {
  const Estimate file = estimate_memory(from_file);
  const Estimate flags = estimate_memory(from_flags);
  REQUIRE_MESSAGE(file.answer.ok(), file.answer.message);
  REQUIRE_MESSAGE(flags.answer.ok(), flags.answer.message);
  CHECK(file.num_parameters == flags.num_parameters);
  CHECK(file.bytes.total() == flags.bytes.total());
  CHECK(file.peak_allocated_bytes == flags.peak_allocated_bytes);
  CHECK(file.peak_reserved_bytes == flags.peak_reserved_bytes);
}

}  // namespace

TEST_CASE("launch: torchtitan's 3D example opens to Table 5's setup, figure for figure") {
  // The example writes Table 5's 1F1B run as its job config; the measured case sets it by hand.
  TrainingSetup measured;
  for (const MeasuredCase& each : measured_cases()) {
    if (each.id == "torchtitan-2024-12-table5-fsdp8-tp8-pp8") measured = each.setup;
  }
  REQUIRE(measured.model_id == "llama3-405b");
  // What the file does not say, the device, as the case sets it.
  TrainingSetup base;
  base.device_id = measured.device_id;
  base.custom_capacity_gb = measured.custom_capacity_gb;
  const LaunchConfig launch =
      read_launch_config(example("torchtitan-llama3-405b-3d.toml"), base, LaunchContext{});
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.not_understood.empty());
  const TrainingSetup& read = launch.setup;
  CHECK(read.stack == Stack::kTorchtitan);
  CHECK(read.layout.data_parallel == 8);
  CHECK(read.layout.tensor_parallel == 8);
  CHECK(read.layout.sequence_parallel);
  CHECK(read.layout.pipeline_parallel == 8);
  // generate_split_points: 126 layers over 8 stages, 15, six of 16, 15.
  CHECK(read.layout.pipeline_first_stage_layers == 15);
  CHECK(read.layout.pipeline_last_stage_layers == 15);
  // The local batch of 32 over the pipeline's 8 micro-batches.
  CHECK(read.micro_batch_sequences == 4);
  CHECK(read.compile == Compile::kBlocks);
  CHECK(read.precision == Precision::kFp8Mixed);
  CHECK(read.fp8_all_gather);
  check_same_figures(read, measured);
}

TEST_CASE("launch: the 8B example opens to the flags' setup, the shard degree from the world") {
  const LaunchConfig launch = read_ok(example("torchtitan-llama3-8b-fsdp.toml"), 8);
  TrainingSetup flags;
  flags.stack = Stack::kTorchtitan;
  flags.model_id = "llama3-8b";
  flags.sequence_length = 8192;
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.recompute = Recompute::kFull;
  flags.compile = Compile::kBlocks;
  flags.logits = true;
  flags.loss = Loss::kFp32Upcast;
  check_same_figures(launch.setup, flags);
  // Each key read is listed with its value; the metrics' and the learning rate's are not.
  CHECK(std::find(launch.read.begin(), launch.read.end(), "training.seq_len = 8192") !=
        launch.read.end());
  CHECK(std::find(launch.read.begin(), launch.read.end(), "optimizer.lr = 3e-4") ==
        launch.read.end());
}

TEST_CASE("launch: a torchtitan v0.2.2 job config is read by v0.2.2's keys, and named so") {
  const LaunchConfig launch = read_ok(example("torchtitan-v0.2.2-llama3-8b.toml"), 8);
  CHECK(launch.kind == "torchtitan job config (TOML, torchtitan v0.2.2, 238fa99)");
  CHECK(launch.not_understood.empty());
  TrainingSetup flags;
  flags.stack = Stack::kTorchtitan;
  flags.model_id = "llama3-8b";
  flags.sequence_length = 8192;
  flags.micro_batch_sequences = 2;  // training.local_batch_size, the default 8 no more
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.recompute = Recompute::kSelectiveOp;
  flags.logits = true;
  flags.loss = Loss::kFp32Upcast;
  check_same_figures(launch.setup, flags);
  // [parallelism]'s degrees are read: tensor parallelism 2 over the 8 leaves FSDP 4.
  std::string text = example("torchtitan-v0.2.2-llama3-8b.toml");
  text.replace(text.find("tensor_parallel_degree = 1"), 26, "tensor_parallel_degree = 2");
  text.replace(text.find("mode = \"selective\""), 18, "mode = \"full\"");
  text.replace(text.find("enable = false\ncomponents"), 14, "enable = true");
  const LaunchConfig tp = read_ok(text, 8);
  CHECK(tp.setup.layout.tensor_parallel == 2);
  CHECK(tp.setup.layout.sequence_parallel);
  CHECK(tp.setup.layout.data_parallel == 4);
  CHECK(tp.setup.recompute == Recompute::kFull);
  // compile.components "model" and "loss": the blocks and the loss compiled.
  CHECK(tp.setup.compile == Compile::kBlocksAndLoss);
  // Compiled under the config's own per-op recomputation (torchtitan's default step, published in
  // its benchmarks): answered, with the compiled blocks' saved tensors.
  std::string compiled = example("torchtitan-v0.2.2-llama3-8b.toml");
  compiled.replace(compiled.find("enable = false\ncomponents"), 14, "enable = true");
  const LaunchConfig op = read_ok(compiled, 8);
  CHECK(op.setup.recompute == Recompute::kSelectiveOp);
  CHECK(op.setup.compile == Compile::kBlocksAndLoss);
  const Estimate estimate = estimate_memory(op.setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.peak_reserved_bytes < estimate_memory(launch.setup).peak_reserved_bytes);
  // compile.components ["loss"]: the loss compiled alone, the blocks eager.
  std::string loss_alone = compiled;
  loss_alone.replace(loss_alone.find("[\"model\", \"loss\"]"), 17, "[\"loss\"]");
  const LaunchConfig alone = read_ok(loss_alone, 8);
  CHECK(alone.setup.compile == Compile::kLoss);
  REQUIRE(estimate_memory(alone.setup).answer.ok());
  // Nothing named: nothing compiled, which torchtitan's apply_compile would not do either.
  std::string none = compiled;
  none.replace(none.find("[\"model\", \"loss\"]"), 17, "[]");
  CHECK(read(none, 8).answer.setting == "compile.components");
  // Async TP needs the blocks compiled: the loss alone does not.
  std::string async = loss_alone;
  async.replace(async.find("tensor_parallel_degree = 1"), 26,
                "tensor_parallel_degree = 2\nenable_async_tensor_parallel = true");
  const LaunchConfig refused = read(async, 8);
  CHECK(refused.answer.setting == "parallelism.enable_async_tensor_parallel");
  CHECK(refused.answer.message.find("\"model\" in compile.components") != std::string::npos);
}

TEST_CASE("launch: torchtitan v0.2.2's pipeline split, micro-batches and converters") {
  const auto v022 = [](const std::string& extra) {
    return "[model]\nname = \"llama3\"\nflavor = \"405B\"\n[activation_checkpoint]\nmode = "
           "\"full\"\n[training]\nlocal_batch_size = 8\n" +
           extra;
  };
  // 126 layers, the embedding and the output counted one each: 128 over 16 stages of 8, the
  // first and last 7; two stages a device under Interleaved1F1B: 15, six of 16, 15.
  const LaunchConfig interleaved =
      read_ok(v022("[parallelism]\npipeline_parallel_degree = 8\ntensor_parallel_degree = 8\n"
                   "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"),
              512);
  CHECK(interleaved.setup.layout.virtual_pipeline_stages == 2);
  CHECK(interleaved.setup.layout.pipeline_first_stage_layers == 15);
  CHECK(interleaved.setup.layout.pipeline_last_stage_layers == 15);
  // local_batch_size 8 in micro-batches of 1: under 1F1B, 8 over a pipeline of 4 holds 4 in
  // flight, as the degree's own count does.
  const LaunchConfig one_f_one_b = read_ok(
      v022("[parallelism]\npipeline_parallel_degree = 4\ntensor_parallel_degree = 8\n"), 512);
  CHECK(one_f_one_b.setup.micro_batch_sequences == 1);
  check_refused(v022("[parallelism]\npipeline_parallel_degree = 4\n"
                     "pipeline_parallel_microbatch_size = 4\n"),
                "parallelism.pipeline_parallel_microbatch_size",
                "The pipeline's 2 micro-batches a step (training.local_batch_size over "
                "parallelism.pipeline_parallel_microbatch_size) are not modelled: at least the "
                "pipeline's degree (4) are.",
                512);
  // Float8 by its converter's name, then or now.
  const LaunchConfig float8 = read_ok(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = "
      "[\"quantize.linear.float8\"]\n[activation_checkpoint]\nmode = \"full\"\n"
      "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\nfilter_fqns = "
      "[\"output\"]\n",
      8);
  CHECK(float8.setup.precision == Precision::kFp8Mixed);
  CHECK(float8.setup.fp8_all_gather);
  // Float8Linear's filter_fqns defaults to [] in v0.2.2, which converts the output layer too.
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = "
      "[\"quantize.linear.float8\"]\n[activation_checkpoint]\nmode = \"full\"\n",
      "quantize.linear.float8.filter_fqns",
      "quantize.linear.float8.filter_fqns must be [\"output\"], the output layer kept in BF16, as "
      "torchtitan's own configs set it: other layers left out are not modelled.");
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.grouped_mm.mx\"]\n"
      "[activation_checkpoint]\nmode = \"full\"\n",
      "model.converters",
      "model.converters \"quantize.grouped_mm.mx\" is not modelled: \"quantize.linear.float8\" "
      "(torchao's Float8 linear layers, tensorwise) and \"quantize.linear.mx\" (its MXFP8 linear "
      "layers) are.");
}

TEST_CASE(
    "launch: torchtitan v0.2.2's MX converter is torchao's MXFP8, its other recipes refused") {
  const auto mx = [](const std::string& table) {
    return "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.linear.mx\"]\n"
           "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n"
           "[quantize.linear.mx]\n" +
           table;
  };
  // The defaults: mxfp8_cublas, the triton dim1 cast, the output layer left in BF16.
  for (const char* table :
       {"", "recipe_name = \"mxfp8_cublas_rceil\"\n",
        "mxfp8_dim1_cast_kernel_choice = \"cuda\"\nfilter_fqns = [\"output\"]\n"}) {
    CAPTURE(table);
    const LaunchConfig launch = read_ok(mx(table), 8);
    CHECK(launch.setup.precision == Precision::kFp8Mixed);
    CHECK(launch.setup.fp8_recipe == Fp8Recipe::kMxfp8);
    CHECK_FALSE(launch.setup.fp8_all_gather);
  }
  // The short name of the shipped files before 5b5d468.
  CHECK(read_ok("[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"mx\"]\n"
                "[activation_checkpoint]\nmode = \"full\"\n",
                8)
            .setup.fp8_recipe == Fp8Recipe::kMxfp8);
  check_refused(mx("recipe_name = \"mxfp8_emulated\"\n"), "quantize.linear.mx.recipe_name",
                "quantize.linear.mx.recipe_name \"mxfp8_emulated\" is not modelled: "
                "\"mxfp8_cublas\" and \"mxfp8_cublas_rceil\" are.");
  check_refused(mx("mxfp8_dim1_cast_kernel_choice = \"torch\"\n"),
                "quantize.linear.mx.mxfp8_dim1_cast_kernel_choice",
                "quantize.linear.mx.mxfp8_dim1_cast_kernel_choice \"torch\" is not modelled: "
                "\"triton\" and \"cuda\" are.");
  check_refused(mx("filter_fqns = []\n"), "quantize.linear.mx.filter_fqns",
                "quantize.linear.mx.filter_fqns must be [\"output\"], the output layer kept in "
                "BF16, as torchtitan's own configs set it: other layers left out are not "
                "modelled.");
  // The Float8 table the shipped files carry is no bearing when MX runs.
  const LaunchConfig shipped =
      read_ok(mx("") +
                  "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = false\n"
                  "precompute_float8_dynamic_scale_for_fsdp = false\nfilter_fqns = [\"output\"]\n",
              8);
  CHECK(shipped.not_understood.empty());
  CHECK(shipped.setup.fp8_recipe == Fp8Recipe::kMxfp8);
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"float8\", \"mx\"]\n"
      "[activation_checkpoint]\nmode = \"full\"\n",
      "model.converters",
      "model.converters with both Float8 and MX linear layers is not modelled: choose one.");
}

TEST_CASE("launch: a torchtitan file of two versions, or its launch line, is refused by name") {
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nbatch_size = 2\n"
      "[parallelism]\ntensor_parallel_degree = 2\n",
      "training.batch_size",
      "training.batch_size is a key of torchtitan's job config before v0.2.2, and "
      "parallelism.tensor_parallel_degree one of v0.2.2's (or of the months between, March 2025 "
      "to January 2026, when the keys moved a table at a time): files of 9dec370 (December 2024) "
      "and of v0.2.2 (February 2026) are read. Write the file in one of them.");
  const LaunchConfig registry =
      read("NGPU=8 MODULE=llama3 CONFIG=llama3_8b ./run_train.sh --training.steps 10\n");
  REQUIRE_FALSE(registry.answer.ok());
  CHECK(registry.answer.message.rfind(
            "This is torchtitan's run_train.sh, whose configs since 9810191 (February 2026) are "
            "Python functions (llama3_8b of llama3,",
            0) == 0);
  const LaunchConfig toml_line = read(
      "CONFIG_FILE=./train_configs/llama3_8b.toml NGPU=8 ./run_train.sh --training.steps 10\n");
  REQUIRE_FALSE(toml_line.answer.ok());
  CHECK(toml_line.answer.message.rfind("This is torchtitan's launch line for a TOML job config "
                                       "(./train_configs/llama3_8b.toml): open that file itself.",
                                       0) == 0);
}

TEST_CASE("launch: what the file sets and the estimate does not understand is listed by name") {
  const LaunchConfig launch =
      read_ok(job("mystery = 1\n[float8]\nscaling_factor = 2\n[novel]\nknob = true\n"), 8);
  CHECK(launch.not_understood == std::vector<std::string>{"activation_checkpoint.mystery",
                                                          "float8.scaling_factor", "novel.knob"});
  // Keys with no bearing on the device's memory are read and set aside, not listed.
  const LaunchConfig quiet =
      read_ok(job("[metrics]\nlog_freq = 5\n[checkpoint]\nenable_checkpoint = true\n"), 8);
  CHECK(quiet.not_understood.empty());
}

TEST_CASE("launch: what it cannot model, and a file at odds with itself, are refused by key") {
  // Without Float8 linear layers torchtitan reads none of float8's other keys.
  const LaunchConfig unread = read_ok(job("[float8]\nenable_fsdp_float8_all_gather = true\n"), 8);
  CHECK_FALSE(unread.setup.fp8_all_gather);
  CHECK(unread.setup.precision != Precision::kFp8Mixed);
  // FSDP2 gathers in FP8 only where it shards; without FSDP the run is FP32, refused.
  const LaunchConfig cp_only =
      read_ok(job("[float8]\nenable_float8_linear = true\nenable_fsdp_float8_all_gather = true\n"
                  "[experimental]\ncontext_parallel_degree = 8\n"),
              8);
  CHECK(cp_only.setup.precision == Precision::kFp8Mixed);
  CHECK_FALSE(cp_only.setup.fp8_all_gather);
  check_refused(job(""), "training.data_parallel_shard_degree",
                "training.data_parallel_shard_degree 1 without context parallelism runs without "
                "FSDP, and so in FP32 (no MixedPrecisionPolicy), which is not modelled under "
                "torchtitan.",
                1);
  // Degrees are bounded before their product is formed.
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n"
      "data_parallel_shard_degree = 4294967304\n",
      "training.data_parallel_shard_degree",
      "training.data_parallel_shard_degree must be -1 or 1 to 1,000,000; it is "
      "4294967304.",
      0);
  // Split points as one comma-separated string, as config_manager.py's string_list reads them;
  // a leading zero names no layer.
  const LaunchConfig split = read_ok(job("[experimental]\npipeline_parallel_degree = 2\n"
                                         "pipeline_parallel_split_points = \"layers.16\"\n"),
                                     8);
  CHECK(split.setup.layout.pipeline_parallel == 2);
  check_refused(job("[experimental]\npipeline_parallel_degree = 2\n"
                    "pipeline_parallel_split_points = [\"layers.08\"]\n"),
                "experimental.pipeline_parallel_split_points",
                "experimental.pipeline_parallel_split_points must name layers \"layers.N\" in "
                "order, each inside the model's 32.");
  // torchtitan's default recomputation, every second layer, is not modelled.
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n", "activation_checkpoint.selective_ac_option",
      "activation_checkpoint.selective_ac_option \"2\" (every layer's checkpoint at that "
      "interval, torchtitan's default) is not modelled: \"op\" is, or mode \"full\" or \"none\".");
  check_refused(job("[experimental]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = "
                    "\"ZBVZeroBubble\"\n"),
                "experimental.pipeline_parallel_schedule",
                "experimental.pipeline_parallel_schedule \"ZBVZeroBubble\" is not modelled: "
                "\"1F1B\" and \"Interleaved1F1B\" are.");
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n"
      "data_parallel_shard_degree = 3\n[activation_checkpoint]\nmode = \"full\"\n",
      "training.data_parallel_shard_degree",
      "The degrees (replicate × shard × tensor × pipeline × context = 3) do not make the "
      "world size 8.");
  check_refused(job(""), "training.data_parallel_shard_degree",
                "training.data_parallel_shard_degree -1 takes the devices the others leave, and "
                "the file does not say how many devices run: give the world size (--world-size).",
                0);
  check_refused(job("[experimental]\npipeline_parallel_degree = 4\n"), "training.batch_size",
                "training.batch_size 2 must split into the pipeline's 4 micro-batches.");
  check_refused("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = \"long\"\n",
                "training.seq_len", "training.seq_len must be a whole number.");
  check_refused("[training\n", "launch",
                "The TOML does not parse at line 1: Error while parsing table header: expected "
                "']', saw '\\n'.");
  // Beyond ASCII only in strings and comments (and refused before toml++, which would reach
  // undefined behaviour asking whether U+00E9 outside a string is whitespace).
  check_refused(job("[job]\ndescription = \"x\" \u00e9\n"), "launch",
                "The TOML does not parse at line 10: a character beyond ASCII outside a string "
                "or a comment.");
  CHECK(read_ok(job("[job]\ndescription = \"caf\u00e9 \u00d7 2\" # \u00e9t\u00e9\n"), 8)
            .not_understood.empty());
}

TEST_CASE("launch: a control character in a TOML file is refused by its line") {
  // TOML allows none but the tab; a NUL would end toml++'s view of the text early.
  check_refused(job("[job]\ndump_folder = 5\x01\n"), "launch",
                "The TOML does not parse at line 10: a control character, which TOML does not "
                "allow.");
  check_refused(job(std::string("[job]\ndump_folder = 5") + '\0' + "{\"a\": \"\u02e0\"}\n"),
                "launch",
                "The TOML does not parse at line 10: a control character, which TOML does not "
                "allow.");
}

TEST_CASE("launch: the interleaved schedule runs two virtual stages a device") {
  // 126 layers over 16 virtual stages: 7, fourteen of 8, 7; each device's, 15, six of 16, 15.
  const LaunchConfig launch = read_ok(
      "[model]\nname = \"llama3\"\nflavor = \"405B\"\n[training]\nbatch_size = 8\n"
      "data_parallel_shard_degree = 2\ntensor_parallel_degree = 8\n[experimental]\n"
      "pipeline_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
      "[activation_checkpoint]\nmode = \"full\"\n");
  CHECK(launch.setup.layout.virtual_pipeline_stages == 2);
  CHECK(launch.setup.layout.pipeline_first_stage_layers == 15);
  CHECK(launch.setup.layout.pipeline_last_stage_layers == 15);
  CHECK(estimate_memory(launch.setup).answer.ok());
  // Split points that leave the devices between unequal are refused.
  check_refused(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nbatch_size = 4\n"
      "[activation_checkpoint]\nmode = \"full\"\n[experimental]\n"
      "pipeline_parallel_degree = 4\npipeline_parallel_split_points = [\"layers.8\", "
      "\"layers.15\", \"layers.24\"]\n",
      "experimental.pipeline_parallel_split_points",
      "The split leaves the devices between the first and the last unequal layers, "
      "which is not modelled: set split points that give them an equal share.");
}

TEST_CASE("verdict: the band is the spread of the stack's published errors") {
  const ErrorBand band = error_band(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  REQUIRE(band.case_ids.size() >= static_cast<std::size_t>(kMinBandCases));
  double low = 1e9;
  double high = -1e9;
  for (const MeasuredComparison& comparison : compare_measured()) {
    if (comparison.measured.setup.stack != Stack::kTorchtitan) continue;
    low = std::min(low, comparison.llama_block_error_percent);
    high = std::max(high, comparison.llama_block_error_percent);
  }
  CHECK(band.low_percent == low);
  CHECK(band.high_percent == high);
  // The idealised step has no published run of a whole device: no band.
  CHECK(error_band(Stack::kIdeal, ActivationModel::kKorthikanti).case_ids.empty());
}

TEST_CASE("verdict: fits, uncertain and does not fit against the likely range") {
  TrainingSetup setup;
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.device_id = kCustomDeviceId;
  const ErrorBand band = error_band(Stack::kTorchtitan, setup.activation_model);
  const auto verdict = [&](double gigabytes) {
    TrainingSetup on = setup;
    on.custom_capacity_gb = gigabytes;
    const Estimate estimate = estimate_memory(on);
    REQUIRE(estimate.answer.ok());
    return verdict_of(estimate, false);
  };
  const VerdictAnswer roomy = verdict(1000);
  const double total = roomy.likely_low_bytes * (1 + band.high_percent / 100);
  // The likely range: the total over 1 + each end of the band.
  CHECK(roomy.likely_high_bytes == doctest::Approx(total / (1 + band.low_percent / 100)));
  CHECK(roomy.verdict == Verdict::kFits);
  CHECK(roomy.from_band);
  const double middle = (roomy.likely_low_bytes + roomy.likely_high_bytes) / 2 / 1e9;
  CHECK(verdict(middle).verdict == Verdict::kUncertain);
  CHECK(verdict(roomy.likely_low_bytes / 1e9 * 0.99).verdict == Verdict::kDoesNotFit);
  // The headroom, asked for, decides alone: 10% of the device kept free.
  TrainingSetup asked = setup;
  asked.custom_capacity_gb = middle;
  const VerdictAnswer headroom = verdict_of(estimate_memory(asked), true);
  CHECK_FALSE(headroom.from_band);
  CHECK(headroom.limit_bytes == doctest::Approx(middle * 1e9 * 0.9));
}

TEST_CASE(
    "verdict: a training stack is judged against the memory PyTorch reports for the device, the "
    "plate against the capacity as printed") {
  TrainingSetup plate;  // the plate's view: Llama 3 8B on one H100, the ideal step
  const Estimate ideal = estimate_memory(plate);
  REQUIRE(ideal.answer.ok());
  CHECK(ideal.limit_bytes == 80e9);
  CHECK(ideal.limit_source.empty());
  CHECK(ideal.devices_worth == doctest::Approx(ideal.most_loaded.total_bytes / 80e9));
  // Megatron-LM on 8 H100s: 79.11 GiB, as PyTorch's out-of-memory message prints an H100's
  // total_memory, about 84.9 GB; the headroom is kept of that.
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 1;
  const Estimate megatron = estimate_memory(setup);
  REQUIRE(megatron.answer.ok());
  CHECK(megatron.limit_bytes == 79.11 * 1024 * 1024 * 1024);
  CHECK(megatron.limit_source.find("vllm-project/vllm#27508") != std::string::npos);
  CHECK(megatron.usable_bytes == doctest::Approx(megatron.limit_bytes * 0.9));
  CHECK(verdict_of(megatron, false).limit_bytes == megatron.limit_bytes);
  CHECK(verdict_of(megatron, false)
            .reason.find("against the 84.9 GB that PyTorch reports for H100 80 GB") !=
        std::string::npos);
  // A device whose reported memory is not known is judged against its printed capacity, and
  // says so.
  setup.device_id = "b300";
  const Estimate b300 = estimate_memory(setup);
  REQUIRE(b300.answer.ok());
  CHECK(b300.limit_bytes == 288e9);
  CHECK(verdict_of(b300, false).reason.find("not known here") != std::string::npos);
  // A custom device is the capacity it is given.
  setup.device_id = kCustomDeviceId;
  setup.custom_capacity_gb = 50;
  CHECK(estimate_memory(setup).limit_bytes == 50e9);
}

TEST_CASE("launch: the CLI exits 0, 1 or 3 for the verdict, and 2 for bad input") {
  const std::string path = std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/";
  std::string text;
  // The 8B example fits on 8 H100s; on 20 GB devices it may not; on 10 GB it does not.
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--world-size", "8"}, &text) ==
        0);
  CHECK(text.find("Verdict: Fits.") != std::string::npos);
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--world-size", "8",
             "--device-gb", "40"},
            &text) == 1);
  CHECK(text.find("Verdict: Uncertain.") != std::string::npos);
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--world-size", "8",
             "--device-gb", "20"},
            &text) == 3);
  CHECK(text.find("Verdict: Does not fit.") != std::string::npos);
  CHECK(cli({"--launch", path + "megatron-llama3-8b.sh"}, &text) == 0);
  CHECK(text.find("Launch config: Megatron-LM launch line (pretrain_gpt.py)") != std::string::npos);
  // Table 5's run fits on the benchmark's 96 GB H100s.
  CHECK(cli({"--launch", path + "torchtitan-llama3-405b-3d.toml", "--device", "h100-96gb"}) == 0);
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml"}, &text) == 2);
  CHECK(text ==
        "trainmem: --launch: training.data_parallel_shard_degree -1 takes the devices the "
        "others leave, and the file does not say how many devices run: give the world size "
        "(--world-size).\n");
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--tp", "2"}, &text) == 2);
  CHECK(cli({"--world-size", "8"}, &text) == 2);
  CHECK(text ==
        "trainmem: --world-size: give it with --launch, a launch config that leaves the devices "
        "out\n");
  // The JSON carries the launch and the verdict with its band and cases.
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--world-size", "8", "--json"},
            &text) == 0);
  CHECK(text.find("\"verdict\": \"fits\"") != std::string::npos);
  CHECK(text.find("\"bandCases\"") != std::string::npos);
  CHECK(text.find("\"notUnderstood\": []") != std::string::npos);
}

TEST_CASE("launch: NVIDIA's Megatron-FSDP example is read whole, and answered") {
  // FP8 parameters under Megatron-FSDP with NCCL's user buffers and the double buffer, built on
  // the meta device, without gradient-accumulation fusion: every flag read or set aside.
  const LaunchConfig launch = read_ok(example("megatron-fsdp-llama3-8b-fp8.sh"));
  CHECK(launch.not_understood.empty());
  const TrainingSetup& setup = launch.setup;
  CHECK(setup.layout.data_parallel == 8);
  CHECK(setup.layout.zero_stage == 3);
  CHECK(setup.precision == Precision::kFp8Mixed);
  CHECK(setup.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(setup.fp8_param_gather);
  CHECK(setup.fsdp_double_buffer);
  CHECK(setup.meta_device_init);
  CHECK(setup.no_gradient_accumulation_fusion);
  CHECK(setup.empty_cache_level == 1);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  // 55.1 GB on an H100: the double buffer's slots, no cached weight gradients (one unfused
  // weight gradient at a time instead), the FP8 shard.
  CHECK(estimate.bytes.total() == doctest::Approx(55.1e9).epsilon(0.001));
  const auto term_bytes = [&estimate](const std::string& id) {
    for (const StackTerm& term : estimate.stack_terms) {
      if (term.id == id) return term.bytes;
    }
    return -1.0;
  };
  CHECK(term_bytes("megatron-fsdp-gathered-layers") > 0);
  CHECK(term_bytes("megatron-fsdp-unsharded-gradients") > 0);
  CHECK(term_bytes("megatron-unfused-wgrads") >= 0);
  CHECK(term_bytes("te-cached-wgrads") == 0);
  CHECK(estimate.bytes[Term::kFp8Weights] > 0);
  // No published run measures Megatron-FSDP: the headroom decides, and it fits an H100.
  CHECK(verdict_of(estimate, false).verdict == Verdict::kFits);
}

TEST_CASE("launch: Megatron-LM's example line opens to the flags' setup") {
  const LaunchConfig launch = read_ok(example("megatron-llama3-8b.sh"));
  CHECK(launch.kind == "Megatron-LM launch line (pretrain_gpt.py)");
  CHECK(launch.not_understood.empty());
  CHECK(launch.setup.overlap_grad_reduce);
  TrainingSetup flags;
  flags.stack = Stack::kMegatron;
  flags.model_id = "llama3-8b";
  flags.layout.data_parallel = 4;  // torchrun's 8 × 2 over t 2 · p 2
  flags.layout.zero_stage = 1;
  flags.layout.tensor_parallel = 2;
  flags.layout.sequence_parallel = true;
  flags.layout.pipeline_parallel = 2;
  flags.recompute = Recompute::kFull;
  flags.dropout = Dropout::kOff;
  flags.logits = true;
  flags.loss = Loss::kTeFused;
  flags.eod_token = true;  // --tokenizer-type NullTokenizer: --vocab-size + 1 before the padding
  flags.overlap_grad_reduce = true;
  check_same_figures(launch.setup, flags);
}

TEST_CASE("launch: a GPT-style Megatron-LM line counts GPT's block, its defaults where unset") {
  // GPT's 345M as Megatron-LM's examples train it: no --swiglu, --normalization,
  // --position-embedding-type or --disable-bias-linear, so a GeLU MLP of 4h, LayerNorms with
  // biases, learned positions and biased linear layers (megatron/training/arguments.py).
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 4 --global-batch-size 64 --vocab-size 50257 --bf16";
  const LaunchConfig launch = read_ok(line);
  CHECK(launch.not_understood.empty());
  const ModelShape& shape = launch.setup.custom_model;
  CHECK_FALSE(shape.gated_mlp);
  CHECK(shape.ffn_hidden_size == 4 * 1024);
  CHECK(shape.norm_bias);
  CHECK(shape.attention_qkv_bias);
  CHECK(shape.attention_output_bias);
  CHECK(shape.mlp_bias);
  CHECK(shape.num_position_embeddings == 1024);
  // By hand: a layer 4h² (QKV, O) + 8h² (MLP) + 3h + h + 4h + h of biases (QKV, O, fc1, fc2)
  // + 2 · 2h of LayerNorms = 12h² + 13h; the tied embedding, 1,024 positions and the final
  // LayerNorm.
  const double h = 1024;
  CHECK(count_parameters(shape) == 24 * (12 * h * h + 13 * h) + 50257 * h + 1024 * h + 2 * h);
  // RMSNorm, rope, no biases but Q, K and V's: --add-qkv-bias adds those alone.
  const LaunchConfig llama = read_ok(line +
                                     " --normalization RMSNorm --position-embedding-type rope "
                                     "--disable-bias-linear --add-qkv-bias --swiglu");
  const ModelShape& qkv = llama.setup.custom_model;
  CHECK(qkv.gated_mlp);
  CHECK(qkv.ffn_hidden_size == 2688);  // two thirds of 4h, down to a multiple of 64
  CHECK_FALSE(qkv.norm_bias);
  CHECK(qkv.attention_qkv_bias);
  CHECK_FALSE(qkv.attention_output_bias);
  CHECK_FALSE(qkv.mlp_bias);
  CHECK(qkv.num_position_embeddings == 0);
  CHECK(read_ok(line + " --no-position-embedding").setup.custom_model.num_position_embeddings == 0);
  check_refused(line + " --normalization ScaleNorm", "--normalization",
                "--normalization ScaleNorm is not modelled: LayerNorm (the default) or RMSNorm.");
  check_refused(line + " --position-embedding-type mrope", "--position-embedding-type",
                "--position-embedding-type mrope is not modelled: learned_absolute (the "
                "default), rope, yarn or none.");
}

TEST_CASE("launch: a Megatron-LM line's mixture of experts is read as MoELayer builds it") {
  // DeepSeek-MoE-like: one dense layer first, 64 experts of 1,408, top 6, a shared expert of
  // 2,816, over ep 8 behind the all-to-all dispatcher.
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 16 --hidden-size 2048 "
      "--num-attention-heads 16 --seq-length 4096 --max-position-embeddings 4096 "
      "--micro-batch-size 1 --global-batch-size 64 --vocab-size 50257 --bf16 --swiglu "
      "--normalization RMSNorm --position-embedding-type rope --disable-bias-linear "
      "--ffn-hidden-size 10944 --num-experts 64 --moe-router-topk 6 --moe-ffn-hidden-size 1408 "
      "--moe-shared-expert-intermediate-size 2816 --moe-aux-loss-coeff 0.001 "
      "--expert-model-parallel-size 8 --moe-grouped-gemm";
  const std::string moe = line + " --moe-token-dispatcher-type alltoall";
  const LaunchConfig launch = read_ok(moe + " --moe-layer-freq \"([0]*1+[1]*15)\"");
  CHECK(launch.not_understood.empty());
  const ModelShape& shape = launch.setup.custom_model;
  CHECK(shape.num_experts == 64);
  CHECK(shape.num_experts_per_token == 6);
  CHECK(shape.moe_ffn_hidden_size == 1408);
  CHECK(shape.shared_expert_ffn_hidden_size == 2816);
  CHECK(shape.num_dense_layers == 1);
  CHECK(launch.setup.layout.expert_parallel == 8);
  CHECK(launch.setup.layout.expert_tensor_parallel == 0);  // as t
  // By hand: attention 4h² and two norms a layer; the dense layer's MLP 3·h·10,944; each mixture
  // layer's 64 experts of 3·h·1,408, the shared expert's 3·h·2,816 and the router's 64·h; the
  // tied embedding and the final norm.
  const double h = 2048;
  const double attention = 4 * h * h + 2 * h;
  const double mixture = 64 * 3 * h * 1408 + 3 * h * 2816 + 64 * h;
  CHECK(count_parameters(shape) == 16 * attention + 3 * h * 10944 + 15 * mixture + 50257 * h + h);
  CHECK(estimate_memory(launch.setup).answer.ok());
  // Every layer a mixture by default; ungated experts without --swiglu (GPT's GeLU).
  CHECK(read_ok(moe).setup.custom_model.num_dense_layers == 0);
  CHECK_FALSE(read_ok(moe + " --moe-layer-freq 1").setup.custom_model.num_experts == 1);
  // The dispatcher: all-to-all as given; without the flag Megatron-LM's default, the all-gather,
  // which gathers the t·ep group's tokens (t 1, ep 8 here) into one buffer.
  CHECK(launch.setup.moe_dispatcher == MoeDispatcher::kAllToAll);
  const LaunchConfig gathered = read_ok(line);
  CHECK(gathered.setup.moe_dispatcher == MoeDispatcher::kAllGather);
  CHECK(gathered.not_understood.empty());
  CHECK(estimate_memory(gathered.setup).answer.ok());
  // The flex dispatcher over DeepEP, its default backend, by either spelling; its other backends
  // and another SM count are refused by their flags.
  const std::string flex = line + " --moe-token-dispatcher-type flex";
  // --moe-enable-deepep makes any backend but hybridep deepep; the flex SM count wins over a
  // deprecated one, as TransformerConfig.__post_init__ routes them.
  for (const std::string& spelling :
       {flex, flex + " --moe-flex-dispatcher-backend deepep", flex + " --moe-enable-deepep",
        flex + " --moe-enable-deepep --moe-flex-dispatcher-backend ncclep",
        flex + " --moe-flex-dispatcher-num-sms 20",
        flex + " --moe-flex-dispatcher-num-sms 20 --moe-deepep-num-sms 24",
        flex + " --moe-hybridep-num-sms 20"}) {
    const LaunchConfig read = read_ok(spelling);
    CHECK(read.setup.moe_dispatcher == MoeDispatcher::kFlex);
    CHECK(read.not_understood.empty());
    CHECK(estimate_memory(read.setup).answer.ok());
  }
  const LaunchConfig grouped =
      read_ok(flex + " --moe-router-num-groups 8 --moe-router-group-topk 4");
  CHECK(read_ok(flex + " --moe-router-num-groups 8 --moe-router-group-topk 0")
            .setup.custom_model.num_limited_groups == 0);  // 0 is off, as compute_topk reads it
  CHECK(std::find_if(grouped.notes.begin(), grouped.notes.end(), [](const std::string& note) {
          return note.find("an upper bound") != std::string::npos;
        }) != grouped.notes.end());
  check_refused(flex + " --moe-flex-dispatcher-backend hybridep", "--moe-flex-dispatcher-backend",
                "The flex dispatcher's hybridep backend is not modelled: deepep (its default) "
                "is.");
  check_refused(flex + " --moe-enable-deepep --moe-flex-dispatcher-backend hybridep",
                "--moe-flex-dispatcher-backend",
                "The flex dispatcher's hybridep backend is not modelled: deepep (its default) "
                "is.");
  check_refused(flex + " --moe-deepep-num-sms 24 --moe-hybridep-num-sms 32",
                "--moe-hybridep-num-sms",
                "--moe-hybridep-num-sms and --moe-deepep-num-sms disagree: Megatron-LM refuses "
                "conflicting deprecated SM counts.");
  check_refused(flex + " --moe-deepep-num-sms 24", "--moe-deepep-num-sms",
                "--moe-deepep-num-sms 24: DeepEP's buffer is counted for the 20 SMs Megatron-LM "
                "gives it by default (its channels, and their queues, follow the SMs).");
  check_refused(moe + " --moe-enable-deepep", "--moe-enable-deepep",
                "--moe-enable-deepep needs --moe-token-dispatcher-type flex, as Megatron-LM "
                "requires (TransformerConfig.__post_init__).");
  // What the megatron stack does not replay is refused by its flag.
  check_refused(line + " --moe-token-dispatcher-type nvls", "--moe-token-dispatcher-type",
                "The nvls token dispatcher is not known: --moe-token-dispatcher-type allgather "
                "(Megatron-LM's default), alltoall and flex are.");
  check_refused(
      moe.substr(0, moe.find(" --moe-grouped-gemm")) + " --moe-token-dispatcher-type alltoall",
      "--moe-grouped-gemm",
      "The experts are counted as Transformer Engine's GroupedLinear "
      "(--moe-grouped-gemm); Megatron-LM's SequentialMLP, without it, is not modelled.");
  check_refused(moe + " --moe-layer-freq 2", "--moe-layer-freq",
                "--moe-layer-freq is read as 1 (every layer a mixture) or ([0]*k+[1]*n) with k + "
                "n the 16 layers (k dense layers first); '2' is not.");
  check_refused(moe + " --moe-router-topk 65", "--moe-router-topk",
                "--moe-router-topk must be 1 to --num-experts (64).");
  // The router's flags are read into what its tensors follow (megatron_routing.cpp); the line's
  // --moe-aux-loss-coeff 0.001 under the default aux_loss turns the auxiliary loss on. Its
  // probabilities' scaling (a product with a number) has no bearing.
  CHECK(launch.setup.moe_aux_loss);
  CHECK(launch.setup.moe_router_score == RouterScore::kSoftmax);
  CHECK(launch.setup.moe_router_dtype == RouterDtype::kInput);
  CHECK_FALSE(launch.setup.moe_z_loss);
  CHECK_FALSE(launch.setup.moe_permute_fusion);
  const LaunchConfig routed =
      read_ok(moe +
              " --moe-router-score-function sigmoid --moe-router-num-groups 8 "
              "--moe-router-group-topk 4 --moe-router-topk-scaling-factor 2.5 --moe-router-dtype "
              "fp32 --moe-z-loss-coeff 0 --moe-router-fusion --moe-permute-fusion "
              "--moe-router-pre-softmax --moe-router-load-balancing-type seq_aux_loss");
  CHECK(routed.not_understood.empty());
  CHECK(routed.setup.moe_router_score == RouterScore::kSigmoid);  // pre-softmax is softmax's
  CHECK(routed.setup.moe_router_dtype == RouterDtype::kFp32);
  CHECK(routed.setup.custom_model.num_expert_groups == 8);
  CHECK(routed.setup.custom_model.num_limited_groups == 4);
  CHECK(routed.setup.moe_z_loss);  // any coefficient but none runs the z-loss
  CHECK(routed.setup.moe_aux_loss);
  CHECK(routed.setup.moe_router_fusion);
  CHECK(routed.setup.moe_permute_fusion);
  CHECK_FALSE(routed.setup.megatron_experimental);
  CHECK(read_ok(moe + " --enable-experimental").setup.megatron_experimental);
  CHECK(estimate_memory(routed.setup).answer.ok());
  CHECK(read_ok(moe + " --moe-router-pre-softmax").setup.moe_router_score ==
        RouterScore::kSoftmaxPre);
  // No auxiliary loss where its coefficient is 0 (Megatron-LM's default) or its type none; a
  // coefficient for each type.
  const std::string no_coefficient = moe.substr(0, moe.find(" --moe-aux-loss-coeff")) +
                                     moe.substr(moe.find(" --expert-model-parallel-size"));
  CHECK_FALSE(read_ok(no_coefficient).setup.moe_aux_loss);
  CHECK_FALSE(read_ok(moe + " --moe-router-load-balancing-type none").setup.moe_aux_loss);
  CHECK(read_ok(no_coefficient + " --moe-router-load-balancing-type none seq_aux_loss "
                                 "--moe-aux-loss-coeff 0.5 0.001")
            .setup.moe_aux_loss);
  check_refused(moe + " --moe-router-load-balancing-type aux_loss seq_aux_loss",
                "--moe-aux-loss-coeff",
                "--moe-aux-loss-coeff gives one coefficient for each "
                "--moe-router-load-balancing-type, as Megatron-LM reads them.");
  check_refused(moe + " --moe-router-load-balancing-type sinkhorn",
                "--moe-router-load-balancing-type",
                "Sinkhorn routing (--moe-router-load-balancing-type sinkhorn) is not modelled: "
                "choose aux_loss, seq_aux_loss or none.");
  check_refused(moe + " --moe-router-dtype fp64", "--moe-router-dtype",
                "--moe-router-dtype fp32 or the input's dtype (the flag left out) are modelled; "
                "fp64, which Transformer Engine's fused router refuses, is not.");
  // The groups alone are not read, as Megatron-LM's compute_topk reads them only beside
  // --moe-router-group-topk; that alone, the expert bias beside the softmax and a softmax over
  // one logit are refused as TransformerConfig refuses them.
  CHECK(read_ok(moe + " --moe-router-num-groups 8").setup.custom_model.num_limited_groups == 0);
  check_refused(moe + " --moe-router-group-topk 4", "--moe-router-group-topk",
                "--moe-router-group-topk needs --moe-router-num-groups, as Megatron-LM's "
                "group-limited routing requires.");
  check_refused(moe + " --moe-router-enable-expert-bias", "--moe-router-enable-expert-bias",
                "--moe-router-enable-expert-bias needs --moe-router-score-function sigmoid, as "
                "Megatron-LM requires.");
  check_refused(moe + " --moe-router-topk 1", "--moe-router-topk",
                "--moe-router-topk 1 under the softmax needs --moe-router-pre-softmax, as "
                "Megatron-LM requires.");
  CHECK(read_ok(moe + " --moe-router-topk 1 --moe-router-pre-softmax")
            .setup.custom_model.num_experts_per_token == 1);
  check_refused(moe + " --moe-router-num-groups 7 --moe-router-group-topk 2",
                "--moe-router-num-groups",
                "--moe-router-num-groups must divide --num-experts (64), and "
                "--moe-router-group-topk be 1 to the groups.");
  // The capacity: padded to it, or at balanced load what is routed, C of it where C is under 1.
  CHECK(read_ok(moe + " --moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity")
            .setup.capacity_factor == 1);
  CHECK(read_ok(moe + " --moe-expert-capacity-factor 1.25").setup.capacity_factor == 0);
  CHECK(read_ok(moe + " --moe-expert-capacity-factor 0.5").setup.capacity_factor == 0.5);
  // Unpadded, the router still drops and the dispatcher permutes unpadded (megatron_routing.cpp).
  CHECK(read_ok(moe + " --moe-expert-capacity-factor 1.25").setup.moe_capacity_unpadded);
  CHECK_FALSE(read_ok(moe + " --moe-expert-capacity-factor 1.0 "
                            "--moe-pad-expert-input-to-capacity")
                  .setup.moe_capacity_unpadded);
  check_refused(moe + " --moe-pad-expert-input-to-capacity", "--moe-pad-expert-input-to-capacity",
                "--moe-pad-expert-input-to-capacity pads to a capacity the line does not set "
                "(--moe-expert-capacity-factor), as Megatron-LM requires.");
}

TEST_CASE("launch: a Megatron-LM line that counts the embedding or the loss as a layer") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --pipeline-model-parallel-size ";
  // 32 layers and the embedding over p 3: 11 a stage, the first building 10.
  const ParallelLayout embedding =
      read_ok(line + "3 --account-for-embedding-in-pipeline-split", 6).setup.layout;
  CHECK(embedding.pipeline_first_stage_layers == 10);
  CHECK(embedding.pipeline_last_stage_layers == 0);  // the middle share, 11
  // With the loss too, over p 2: 17 a stage, each end building 16.
  const ParallelLayout both = read_ok(line +
                                      "2 --account-for-embedding-in-pipeline-split "
                                      "--account-for-loss-in-pipeline-split")
                                  .setup.layout;
  CHECK(both.pipeline_first_stage_layers == 16);
  CHECK(both.pipeline_last_stage_layers == 16);
  check_refused(line + "4 --account-for-loss-in-pipeline-split",
                "--account-for-loss-in-pipeline-split",
                "The 32 layers with the loss counted as layers (33) must divide over p 4, as "
                "Megatron-LM requires.");
  check_refused(line +
                    "2 --account-for-embedding-in-pipeline-split "
                    "--decoder-first-pipeline-num-layers 15",
                "--account-for-embedding-in-pipeline-split",
                "--account-for-embedding-in-pipeline-split cannot stand beside "
                "--decoder-first-pipeline-num-layers or --decoder-last-pipeline-num-layers, as "
                "Megatron-LM refuses.");
  check_refused(line +
                    "3 --num-virtual-stages-per-pipeline-rank 2 "
                    "--account-for-embedding-in-pipeline-split --world-size 6",
                "--account-for-embedding-in-pipeline-split",
                "--account-for-embedding-in-pipeline-split with virtual stages takes the layer "
                "from the first (or last) virtual stage alone, which is not modelled: only under "
                "1F1B.",
                6);
}

TEST_CASE(
    "launch: a Megatron-LM line's latent attention and multi-token prediction are read, "
    "DeepSeek-V2-Lite's parameters to the preset's") {
  // DeepSeek-V2-Lite as Megatron-LM's flags write it: 16 heads of 128 + 64 rotary, a key/value
  // latent of 512 (no query latent), --qk-layernorm (the latents' norms under MLA), 64 experts of
  // 1,408, top 6, two shared, the first layer dense; --moe-layer-freq without its parentheses,
  // as NVIDIA's DeepSeek-V3 examples write it.
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 27 --hidden-size 2048 "
      "--ffn-hidden-size 10944 --num-attention-heads 16 --seq-length 4096 "
      "--max-position-embeddings 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --rotary-scaling-factor 40 --mscale 0.707 "
      "--mscale-all-dim 0.707 --disable-bias-linear --untie-embeddings-and-output-weights --bf16 "
      "--micro-batch-size 1 --vocab-size 102400 --multi-latent-attention --kv-lora-rank 512 "
      "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --qk-layernorm "
      "--num-experts 64 --moe-router-topk 6 --moe-ffn-hidden-size 1408 "
      "--moe-shared-expert-intermediate-size 2816 --moe-layer-freq [0]*1+[1]*26 "
      "--moe-grouped-gemm --use-distributed-optimizer ";
  const LaunchConfig lite = read_ok(line);
  CHECK(lite.not_understood.empty());
  const ModelShape& shape = lite.setup.custom_model;
  CHECK(shape.kv_lora_rank == 512);
  CHECK(shape.q_lora_rank == 0);
  CHECK(shape.qk_nope_head_dim == 128);
  CHECK(shape.qk_rope_head_dim == 64);
  CHECK(shape.v_head_dim == 128);
  CHECK_FALSE(shape.qk_norm);  // the latents' norms, not a norm over each head
  CHECK(shape.num_dense_layers == 1);
  CHECK_FALSE(lite.setup.mtp);
  // The count of 1 may go unwritten, as moe_freq_type's docstring writes "([0]+[1]*23)"; spaces,
  // which _eval_pattern refuses, are refused.
  std::string unwritten = line;
  unwritten.replace(unwritten.find("[0]*1+[1]*26"), 12, "([0]+[1]*26)");
  CHECK(read_ok(unwritten).setup.custom_model.num_dense_layers == 1);
  // Selective recomputation's modules: core_attn, the default, is selective's own; the others
  // are switches, and a list without core_attn keeps the attention's core (NVIDIA's DeepSeek-V3
  // example's list); a module Megatron-LM does not have is refused by name; under full
  // recomputation, which does not read them, a note says so.
  CHECK(read_ok(line + "--recompute-granularity selective --recompute-modules core_attn")
            .setup.recompute == Recompute::kSelective);
  const TrainingSetup modules =
      read_ok(line +
              "--recompute-granularity selective --recompute-modules mlp moe mla_up_proj "
              "layernorm")
          .setup;
  CHECK(modules.recompute == Recompute::kNone);
  CHECK((modules.recompute_mlp && modules.recompute_moe && modules.recompute_mla_up_proj &&
         modules.recompute_layernorm));
  CHECK_FALSE((modules.recompute_moe_act || modules.recompute_shared_experts));
  REQUIRE(estimate_memory(modules).answer.ok());
  const TrainingSetup with_core =
      read_ok(line +
              "--recompute-activations --recompute-modules moe_act core_attn "
              "shared_experts")
          .setup;
  CHECK(with_core.recompute == Recompute::kSelective);
  CHECK((with_core.recompute_moe_act && with_core.recompute_shared_experts));
  // TransformerConfig.__post_init__'s refusals, and the deprecated --moe-layer-recompute (selective
  // with moe among the modules).
  // A dense line (the mixture's needs --moe-grouped-gemm for its experts anyway).
  const std::string dense =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 ";
  check_refused(dense + "--recompute-granularity selective --recompute-modules moe_act",
                "--recompute-modules",
                "--recompute-modules moe_act needs --moe-grouped-gemm, as Megatron-LM requires.");
  check_refused(line +
                    "--moe-shared-expert-overlap --recompute-granularity selective "
                    "--recompute-modules shared_experts",
                "--recompute-modules",
                "--recompute-modules shared_experts cannot stand beside "
                "--moe-shared-expert-overlap, as Megatron-LM requires.");
  const TrainingSetup moe_layer = read_ok(line + "--moe-layer-recompute").setup;
  CHECK(moe_layer.recompute == Recompute::kSelective);
  CHECK(moe_layer.recompute_moe);
  check_refused(line + "--moe-layer-recompute --recompute-granularity full",
                "--moe-layer-recompute",
                "--moe-layer-recompute cannot stand beside full recomputation, as Megatron-LM "
                "requires.");
  check_refused(line + "--recompute-granularity selective --recompute-modules mlp attention",
                "--recompute-modules",
                "--recompute-modules attention is not one of Megatron-LM's modules: core_attn, "
                "moe_act, layernorm, mla_up_proj, mlp, moe and shared_experts are.");
  const LaunchConfig full = read_ok(line +
                                    "--recompute-granularity full --recompute-method "
                                    "uniform --recompute-num-layers 1 --recompute-modules "
                                    "moe");
  CHECK(full.not_understood.empty());
  CHECK(std::any_of(full.notes.begin(), full.notes.end(), [](const std::string& note) {
    return note.find("--recompute-modules is selective recomputation's") != std::string::npos;
  }));
  std::string spaced = line;
  spaced.replace(spaced.find("[0]*1+[1]*26"), 12, "\"[0]*1 + [1]*26\"");
  CHECK(read(spaced).answer.setting == "--moe-layer-freq");
  const Estimate estimate = estimate_memory(lite.setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.parameters_on_device == 15706484224.0);
  // A query latent, and one multi-token-prediction module, trained.
  // With the flags of no bearing that NVIDIA's Megatron-FSDP DeepSeek-V3 example sets beside.
  const LaunchConfig mtp =
      read_ok(line +
              "--q-lora-rank 1536 --mtp-num-layers 1 "
              "--mtp-loss-scaling-factor 0.1 --manual-gc --manual-gc-interval "
              "10 --moe-router-score-function sigmoid --moe-router-enable-expert-bias "
              "--moe-router-bias-update-rate "
              "1e-3 --moe-router-force-load-balancing --auto-detect-ckpt-format "
              "--dist-ckpt-strictness log_all");
  CHECK(mtp.setup.custom_model.q_lora_rank == 1536);
  CHECK(mtp.setup.custom_model.num_mtp_layers == 1);
  CHECK(mtp.setup.mtp);
  CHECK(mtp.not_understood.empty());
  // The latents' norms are counted as DeepSeek's RMSNorms; LayerNorm's biases are refused.
  std::string layer_norm = line;
  layer_norm.replace(layer_norm.find("--normalization RMSNorm"), 23, "--normalization LayerNorm");
  check_refused(layer_norm, "--multi-latent-attention",
                "Latent attention is counted with RMSNorm's latent norms, as DeepSeek's: add "
                "--normalization RMSNorm (LayerNorm's would add their biases).");
  // Megatron-FSDP's fixed pool over the dense and mixture layers, as NVIDIA's DeepSeek-V3 example
  // runs it, is read; its max pool, which pools every unit at the largest's size, is refused.
  const std::string fsdp = line + "--use-megatron-fsdp --ckpt-format fsdp_dtensor ";
  CHECK(read_ok(fsdp + "--fsdp-double-buffer").setup.fsdp_double_buffer);
  // --log-params-norm reads Megatron-FSDP's shards in place (scalars alone); elsewhere it makes
  // FP32 copies the estimate does not replay, and withholds the verdict.
  CHECK(read_ok(fsdp + "--log-params-norm").not_understood.empty());
  CHECK(read_ok(line + "--use-distributed-optimizer --log-params-norm").not_understood ==
        std::vector<std::string>{"--log-params-norm"});
  check_refused(fsdp + "--megatron-fsdp-max-pool-double-buffer",
                "--megatron-fsdp-max-pool-double-buffer",
                "--megatron-fsdp-max-pool-double-buffer over a mixture's dense and mixture layers "
                "(units of two sizes, each pooled at the largest's) is not modelled: "
                "--fsdp-double-buffer's fixed pool is.");
}

TEST_CASE("launch: a Megatron-LM line it cannot read is refused by its flag") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 ";
  CHECK(read_ok(line + "--vocab-size 32000").setup.layout.data_parallel == 8);
  check_refused(line, "--vocab-size",
                "The vocabulary is the tokenizer's, which the line does not give "
                "('GPT2BPETokenizer'): add --vocab-size N, its size before Megatron-LM's padding.");
  check_refused(
      line + "--vocab-size 32000 --multi-latent-attention", "--multi-latent-attention",
      "Latent attention without --qk-layernorm has no latent norms, which trainmem counts "
      "as DeepSeek's (q_a_layernorm, kv_a_layernorm): add --qk-layernorm, as "
      "Megatron-LM's DeepSeek recipes set it.");
  check_refused(line + "--vocab-size 32000 --kv-lora-rank 512", "--kv-lora-rank",
                "--kv-lora-rank belongs to latent attention, which the line does not turn on "
                "(--multi-latent-attention).");
  check_refused("torchrun pretrain_gpt.py --num-layers $LAYERS", "launch",
                "The line uses the shell's variables ('$LAYERS'): expand them first, as the shell "
                "would (echo the command).");
  check_refused(line + "--vocab-size 32000 --recompute-granularity full --recompute-method block",
                "--recompute-method",
                "Full recomputation is read as --recompute-method uniform with "
                "--recompute-num-layers 1 (every layer's input kept); others are not modelled.");
  // Degrees are bounded before they are multiplied: t·p of 2^32 each once wrapped to 0 and
  // divided the world by it.
  check_refused(line +
                    "--vocab-size 32000 --tensor-model-parallel-size 4294967296 "
                    "--pipeline-model-parallel-size 4294967296",
                "--tensor-model-parallel-size",
                "--tensor-model-parallel-size must be 1 to 65,536; it is 4294967296.");
  // Megatron-LM's own defaults and rules: --ffn-hidden-size two thirds of 4h under --swiglu, down
  // to a multiple of 64; --use-rotary-position-embeddings is rope; --recompute-activations is
  // selective whatever the granularity; the virtual stages by their count a rank.
  const LaunchConfig defaults =
      read_ok(line + "--vocab-size 32000 --recompute-activations --recompute-granularity full");
  CHECK(defaults.setup.custom_model.ffn_hidden_size == 10880);
  CHECK(defaults.setup.recompute == Recompute::kSelective);
  CHECK_FALSE(defaults.setup.eod_token);
  std::string legacy = line + "--vocab-size 32000 --use-rotary-position-embeddings";
  legacy.replace(legacy.find("--position-embedding-type rope "), 31, "");
  CHECK(read_ok(legacy).answer.ok());
  CHECK(read_ok(line + "--vocab-size 32000 --pipeline-model-parallel-size 4 "
                       "--num-virtual-stages-per-pipeline-rank 2",
                32)
            .setup.layout.virtual_pipeline_stages == 2);
  // --cp-comm-type: one exchange for every layer, given once or layer by layer (nargs='+': as
  // many as --num-layers under context parallelism); the all-gather and mixed layers refused.
  const std::string context = line + "--vocab-size 32000 --context-parallel-size 2 ";
  const LaunchConfig all_to_all = read_ok(context + "--cp-comm-type a2a");
  CHECK(all_to_all.setup.cp_comm_type == CpCommType::kA2a);
  CHECK(all_to_all.not_understood.empty());
  std::string each_layer = "--cp-comm-type";
  for (int layer = 0; layer < 32; ++layer) each_layer += " a2a";
  CHECK(read_ok(context + each_layer).setup.cp_comm_type == CpCommType::kA2a);
  CHECK(read_ok(context + "--cp-comm-type p2p").setup.cp_comm_type == CpCommType::kP2p);
  check_refused(context + "--cp-comm-type a2a a2a", "--cp-comm-type",
                "--cp-comm-type gives 2 types: one for every layer, or one a layer (32), as "
                "Megatron-LM's TransformerConfig requires.");
  check_refused(context + "--cp-comm-type a2a p2p", "--cp-comm-type",
                "--cp-comm-type gives the layers different exchanges, which is not modelled: one "
                "type for every layer, p2p (the default), a2a or a2a+p2p.");
  check_refused(context + "--cp-comm-type allgather", "--cp-comm-type",
                "--cp-comm-type allgather is not modelled: p2p (the default), a2a or a2a+p2p.");
  check_refused(context + "--cp-comm-type --bf16", "--cp-comm-type",
                "--cp-comm-type needs a value: p2p (the default), a2a or a2a+p2p, once or once a "
                "layer.");
  // a2a+p2p with its two sizes, the all-to-all group's first; without them, or where they do not
  // multiply to c, refused by the flag at fault. Beside another exchange the sizes build groups
  // that nothing uses, said in a note.
  const std::string hierarchical = line + "--vocab-size 32000 --context-parallel-size 4 ";
  const LaunchConfig groups = read_ok(hierarchical +
                                      "--cp-comm-type a2a+p2p "
                                      "--hierarchical-context-parallel-sizes 2 2");
  CHECK(groups.setup.cp_comm_type == CpCommType::kA2aP2p);
  CHECK(groups.setup.cp_a2a_size == 2);
  CHECK(groups.not_understood.empty());
  check_refused(hierarchical + "--cp-comm-type a2a+p2p", "--cp-comm-type",
                "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes of two sizes "
                "(the all-to-all group's, then the ring's), as Megatron-LM and Transformer Engine "
                "require.");
  check_refused(hierarchical + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4",
                "--hierarchical-context-parallel-sizes",
                "--hierarchical-context-parallel-sizes must be whole numbers whose product is "
                "--context-parallel-size (4), the all-to-all group's size first.");
  check_refused(
      hierarchical + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 1 2",
      "--hierarchical-context-parallel-sizes",
      "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes of two sizes (the "
      "all-to-all group's, then the ring's), as Megatron-LM and Transformer Engine require.");
  const LaunchConfig unused = read_ok(hierarchical + "--hierarchical-context-parallel-sizes 2 2");
  CHECK(unused.setup.cp_comm_type == CpCommType::kP2p);
  CHECK(unused.setup.cp_a2a_size == 1);
  CHECK(std::any_of(unused.notes.begin(), unused.notes.end(), [](const std::string& note) {
    return note.rfind("--hierarchical-context-parallel-sizes: Megatron-LM builds the groups", 0) ==
           0;
  }));
  // --qk-layernorm: a norm of --normalization's kind over each head's queries and keys, its
  // weight (and LayerNorm's bias) of d = 128, twice, on each of the 32 layers.
  const LaunchConfig qk = read_ok(line + "--vocab-size 32000 --qk-layernorm");
  CHECK(qk.setup.custom_model.qk_norm);
  CHECK(qk.not_understood.empty());
  CHECK(count_parameters(qk.setup.custom_model) -
            count_parameters(read_ok(line + "--vocab-size 32000").setup.custom_model) ==
        32 * 2 * 128);
  std::string layer_norm = line + "--vocab-size 32000";
  layer_norm.replace(layer_norm.find("--normalization RMSNorm "), 24, "");
  CHECK(count_parameters(read_ok(layer_norm + " --qk-layernorm").setup.custom_model) -
            count_parameters(read_ok(layer_norm).setup.custom_model) ==
        32 * 2 * 2 * 128);
  // What Megatron-LM's own example sets (examples/llama/train_llama3_8b_h100_fp8.sh) with no
  // bearing on memory is set aside; --grad-reduce-in-bf16 and the data loader's mask are read.
  const LaunchConfig example = read_ok(
      line +
      "--vocab-size 32000 --rotary-percent 1.0 --apply-layernorm-1p --lr-decay-samples 100 "
      "--lr-warmup-samples 10 --decoupled-lr 5.0e-4 --decoupled-min-lr 4.5e-5 "
      "--grad-reduce-in-bf16 --calculate-per-token-loss --tiktoken-pattern v2 "
      "--no-create-attention-mask-in-dataloader --no-mmap-bin-files --num-workers 1 --profile "
      "--profile-step-start 4 --profile-step-end 6 --ckpt-format torch_dist");
  CHECK(example.not_understood.empty());
  CHECK(example.setup.grad_reduce_in_bf16);
  CHECK(example.setup.no_dataloader_attention_mask);
  CHECK_FALSE(read_ok(line + "--vocab-size 32000").setup.no_dataloader_attention_mask);
  CHECK(
      read_ok(line + "--vocab-size 32000 --empty-unused-memory-level 1").setup.empty_cache_level ==
      1);
  check_refused(line + "--vocab-size 32000 --empty-unused-memory-level 3",
                "--empty-unused-memory-level",
                "--empty-unused-memory-level must be 0 to 2; it is 3.");
  // Megatron-FSDP: its default strategy is ZeRO 3, optim_grads ZeRO 2; the checkpoint format it
  // asserts, and its own buffers' flags, refused by name.
  const std::string fsdp =
      line + "--vocab-size 32000 --use-megatron-fsdp --ckpt-format fsdp_dtensor";
  CHECK(read_ok(fsdp).setup.layout.zero_stage == 3);
  CHECK(read_ok(fsdp + " --init-model-with-meta-device").setup.meta_device_init);
  CHECK(read_ok(fsdp).not_understood.empty());
  CHECK(read_ok(fsdp + " --data-parallel-sharding-strategy optim_grads").setup.layout.zero_stage ==
        2);
  CHECK(read_ok(fsdp + " --megatron-fsdp-main-grads-dtype bf16").setup.layout.zero_stage == 3);
  check_refused(line + "--vocab-size 32000 --use-megatron-fsdp", "--use-megatron-fsdp",
                "--use-megatron-fsdp needs --ckpt-format fsdp_dtensor, as Megatron-LM asserts.");
  check_refused(line + "--vocab-size 32000 --ckpt-format fsdp_dtensor", "--ckpt-format",
                "--ckpt-format fsdp_dtensor needs --use-megatron-fsdp, as Megatron-LM asserts.");
  check_refused(line + "--vocab-size 32000 --use-megatron-fsdp --ckpt-format torch_dist",
                "--ckpt-format",
                "--ckpt-format torch_dist is not Megatron-FSDP's: Megatron-LM asserts fsdp_dtensor "
                "beside --use-megatron-fsdp.");
  check_refused(fsdp + " --data-parallel-sharding-strategy optim",
                "--data-parallel-sharding-strategy",
                "--data-parallel-sharding-strategy optim is not modelled: optim_grads_params (the "
                "default, ZeRO 3) or optim_grads (ZeRO 2).");
  // A mixture's flags it does not run beside it.
  for (const auto& [flag, why] : std::vector<std::pair<std::string, std::string>>{
           {"--moe-single-grouped-weight",
            " beside --use-megatron-fsdp is refused by Megatron-LM (arguments.py: Megatron-FSDP "
            "does not support TE GroupedTensor parameters)."},
           {"--overlap-moe-expert-parallel-comm",
            " beside --use-megatron-fsdp is not modelled: it changes how the mixture's parameters "
            "are gathered."}}) {
    check_refused(fsdp + " " + flag, flag, flag + why);
  }
  check_refused(fsdp + " --megatron-fsdp-main-grads-dtype fp32", "--megatron-fsdp-main-grads-dtype",
                "--megatron-fsdp-main-grads-dtype fp32 is not modelled beside Megatron-FSDP: auto "
                "is (the parameters' BF16).");
  // The double buffer, and NCCL's user buffers which turn it on (with manual registration, which
  // asserts them), said in a note; its other allocators refused.
  CHECK_FALSE(read_ok(fsdp).setup.fsdp_double_buffer);
  CHECK(read_ok(fsdp + " --fsdp-double-buffer").setup.fsdp_double_buffer);
  const LaunchConfig nccl_ub = read_ok(fsdp + " --use-nccl-ub --fsdp-manual-registration");
  CHECK(nccl_ub.setup.fsdp_double_buffer);
  CHECK(nccl_ub.not_understood.empty());
  bool said = false;
  for (const std::string& note : nccl_ub.notes)
    said = said || note.rfind("--use-nccl-ub: ", 0) == 0;
  CHECK(said);
  check_refused(fsdp + " --fsdp-manual-registration", "--fsdp-manual-registration",
                "--fsdp-manual-registration needs --use-nccl-ub, as Megatron-LM asserts.");
  check_refused(line + "--vocab-size 32000 --fsdp-double-buffer", "--fsdp-double-buffer",
                "--fsdp-double-buffer is Megatron-FSDP's: add --use-megatron-fsdp, or remove it.");
  // The max pool's slots are the largest unit's, for a dense decoder the fixed pool's.
  CHECK(read_ok(fsdp + " --megatron-fsdp-max-pool-double-buffer").setup.fsdp_double_buffer);
  check_refused(fsdp + " --fsdp-db-use-persist-buf-on-alloc-fail",
                "--fsdp-db-use-persist-buf-on-alloc-fail",
                "--fsdp-db-use-persist-buf-on-alloc-fail is not modelled: Megatron-FSDP's own "
                "prefetch window, or its double buffer of two layers' slots, are.");
  // Megatron-LM's DDP takes NCCL's user buffers too; not modelled there.
  check_refused(line + "--vocab-size 32000 --use-nccl-ub", "--use-nccl-ub",
                "--use-nccl-ub without Megatron-FSDP (DDP's buffers from NCCL's pool) is not "
                "modelled: add --use-megatron-fsdp, or remove it.");
  // The interleaved schedule's micro-batch group; without virtual stages it has no bearing.
  const std::string interleaved = line + "--vocab-size 32000 --pipeline-model-parallel-size 4 ";
  CHECK(read_ok(interleaved + "--num-virtual-stages-per-pipeline-rank 2 "
                              "--microbatch-group-size-per-virtual-pipeline-stage 8")
            .setup.layout.microbatch_group_size == 8);
  const LaunchConfig plain =
      read_ok(interleaved + "--microbatch-group-size-per-virtual-pipeline-stage 8");
  CHECK(plain.setup.layout.microbatch_group_size == 0);
  CHECK(plain.not_understood.empty());
  // The reuse of the gradient buffer is MXFP8's, with FP8 parameters.
  check_refused(line + "--vocab-size 32000 --reuse-grad-buf-for-mxfp8-param-ag",
                "--reuse-grad-buf-for-mxfp8-param-ag",
                "--reuse-grad-buf-for-mxfp8-param-ag is MXFP8's with --fp8-param-gather: set "
                "--fp8-recipe mxfp8 and --fp8-param-gather, or remove it.");
  // The shell around the line: a comment naming pretrain_gpt.py above it, quotes, a pipe after.
  const LaunchConfig shell =
      read_ok("# Launch pretrain_gpt.py on one node\n" + line +
              "--vocab-size 32000 --normalization \"RMSNorm\" 2>&1 | tee log.txt\n");
  CHECK(shell.setup.custom_model.vocab_size == 32000);
  check_refused(line + "--vocab-size 32000 --fp8-param-gather", "--fp8-param-gather",
                "--fp8-param-gather makes FP8 parameters, which Megatron-LM builds under FP8 "
                "training alone: add --fp8-format (e4m3 or hybrid), or remove it.");
  std::string fp32 = line + "--vocab-size 32000";
  fp32.replace(fp32.find("--bf16 "), 7, "");
  check_refused(fp32, "--bf16",
                "Without --bf16 (or --fp16) Megatron-LM trains in FP32, which its step is not "
                "modelled for: add --bf16.");
  check_refused(line + "--vocab-size 32000 --micro-batch-size 4294967297", "--micro-batch-size",
                "--micro-batch-size must be 1 to 65,536; it is 4294967297.");
  check_refused(line + "--vocab-size 32000 --max-position-embeddings 2048",
                "--max-position-embeddings",
                "--max-position-embeddings 2048 is under --seq-length 4096, which Megatron-LM "
                "refuses.");
  check_refused(line + "--vocab-size 32000 --context-parallel-size 8 --seq-length 4100",
                "--context-parallel-size",
                "--seq-length 4100 is not a multiple of 2 × --context-parallel-size (16), as "
                "Megatron-LM requires.");
  check_refused(
      "torchrun --nproc_per_node 8 --nnodes 2:4 pretrain_gpt.py " +
          line.substr(std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ").size()) +
          "--vocab-size 32000",
      "--nnodes",
      "torchrun's --nnodes is a range or not a number: give the world size "
      "(--world-size).",
      0);
  check_refused(
      "torchrun --nproc_per_node 999999 --nnodes 999999 pretrain_gpt.py " +
          line.substr(std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ").size()) +
          "--vocab-size 32000",
      "--tensor-model-parallel-size",
      "The world size 999998000001 over t·p·c (1) leaves more than 65,536 "
      "data-parallel ranks.",
      0);
}

namespace {

// The reader's setup beside a DeepSpeed config: the example's Llama 3.1 8B config.json, 4,096
// tokens, full recomputation, the FP32-upcast loss.
TrainingSetup deepspeed_base() {
  TrainingSetup base;
  const ConfigParse model = parse_hf_config(example("llama3.1-8b-config.json"));
  REQUIRE_MESSAGE(model.answer.ok(), model.answer.message);
  base.model_id = kCustomModelId;
  base.custom_model = model.shape;
  base.sequence_length = 4096;
  base.recompute = Recompute::kFull;
  base.loss = Loss::kFp32Upcast;
  return base;
}

LaunchConfig read_deepspeed(const std::string& text, int world_size = 0) {
  LaunchContext context;
  context.world_size = world_size;
  return read_launch_config(text, deepspeed_base(), context);
}

void check_deepspeed_refused(const std::string& text, const std::string& key,
                             const std::string& message, int world_size = 8) {
  const LaunchConfig launch = read_deepspeed(text, world_size);
  CAPTURE(text);
  CHECK_FALSE(launch.answer.ok());
  CHECK(launch.answer.setting == key);
  CHECK(launch.answer.message == message);
}

}  // namespace

TEST_CASE("launch: DeepSpeed's example with a config.json opens to the flags' setup") {
  const LaunchConfig launch = read_deepspeed(example("deepspeed-zero3.json"));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind == "DeepSpeed config (JSON, DeepSpeed edaa722)");
  CHECK(launch.not_understood.empty());
  CHECK(launch.setup.overlap_comm == OverlapComm::kOn);
  // The flags: --stack deepspeed --zero 3 --dp 8 (train_batch_size 64 over 2 × 4) --micro-batch 2
  // --overlap-comm on --logits, beside the reader's model, tokens, recomputation and loss.
  TrainingSetup flags = deepspeed_base();
  flags.stack = Stack::kDeepSpeed;
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.micro_batch_sequences = 2;
  flags.overlap_comm = OverlapComm::kOn;
  flags.logits = true;
  check_same_figures(launch.setup, flags);
  CHECK(std::find(launch.read.begin(), launch.read.end(), "zero_optimization.stage = 3") !=
        launch.read.end());
  // What the file leaves stays the reader's, and is said.
  CHECK(std::find(launch.leaves.begin(), launch.leaves.end(), "model") != launch.leaves.end());
  CHECK(launch.notes.front().find("The model (LlamaForCausalLM), the sequence (4,096 tokens)") ==
        0);
}

TEST_CASE("launch: a Trainer's DeepSpeed config, \"auto\" throughout, opens in one read") {
  // Hugging Face's ZeRO-3 config in its BF16 form: every "auto" the Trainer fills, filled from
  // the settings beside the file, as TrainingArguments and the model would.
  const std::string trainer = R"({
    "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto", "loss_scale": 0},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                              "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto",
                                                 "warmup_max_lr": "auto",
                                                 "warmup_num_steps": "auto"}},
    "zero_optimization": {"stage": 3, "overlap_comm": true, "contiguous_gradients": true,
                          "sub_group_size": 1e9, "reduce_bucket_size": "auto",
                          "stage3_prefetch_bucket_size": "auto",
                          "stage3_param_persistence_threshold": "auto",
                          "stage3_max_live_parameters": 1e9, "stage3_max_reuse_distance": 1e9,
                          "stage3_gather_16bit_weights_on_model_save": true},
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"})";
  TrainingSetup base = deepspeed_base();
  base.micro_batch_sequences = 2;    // per_device_train_batch_size
  base.loss = Loss::kVocabParallel;  // Megatron-LM's, which transformers never runs
  const LaunchConfig launch = read_launch_config(trainer, base, {8, {}});
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.not_understood.empty());
  const double h = 4096;
  CHECK(launch.setup.zero_reduce_bucket == h * h);
  CHECK(launch.setup.zero_prefetch_bucket == std::floor(0.9 * h * h));
  CHECK(launch.setup.zero_persistence_threshold == 10 * h);
  CHECK(launch.setup.micro_batch_sequences == 2);
  CHECK(launch.setup.layout.data_parallel == 8);
  CHECK(launch.setup.precision == Precision::kBf16Mixed);
  // The loss is the Trainer's: transformers' FP32-upcast ForCausalLMLoss.
  CHECK(launch.setup.loss == Loss::kFp32Upcast);
  TrainingSetup flags = deepspeed_base();
  flags.stack = Stack::kDeepSpeed;
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.micro_batch_sequences = 2;
  flags.overlap_comm = OverlapComm::kOn;
  flags.logits = true;
  flags.zero_reduce_bucket = h * h;
  flags.zero_prefetch_bucket = std::floor(0.9 * h * h);
  flags.zero_persistence_threshold = 10 * h;
  check_same_figures(launch.setup, flags);
  // Without the world size, train_batch_size "auto" takes the data-parallel degree set.
  base.layout.data_parallel = 4;
  CHECK(read_launch_config(trainer, base, {}).setup.layout.data_parallel == 4);
  // Its FP16 form has no bf16 section: the Trainer leaves DeepSpeed in FP32, said.
  std::string fp16_form = trainer;
  const std::string bf16_section = "\"bf16\": {\"enabled\": \"auto\"}, ";
  fp16_form.replace(fp16_form.find(bf16_section), bf16_section.size(), "");
  const LaunchConfig fp32 = read_launch_config(fp16_form, base, {8, {}});
  REQUIRE_FALSE(fp32.answer.ok());
  CHECK(fp32.answer.setting == "bf16");
}

TEST_CASE("launch: DeepSpeed's batch rule gives the devices, or refuses the file by key") {
  const std::string zero2 = R"("zero_optimization": {"stage": 2}, "bf16": {"enabled": true})";
  const std::string no_world =
      "The file does not say how many devices run (train_batch_size = "
      "train_micro_batch_size_per_gpu × gradient_accumulation_steps × the devices): give the "
      "world size (--world-size).";
  // train_batch_size = micro × accumulation × devices: the devices from the three.
  CHECK(read_deepspeed("{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": 1, "
                       "\"gradient_accumulation_steps\": 2, " +
                       zero2 + "}")
            .setup.layout.data_parallel == 16);
  // The micro-batch from the others, as DeepSpeed works it out.
  CHECK(read_deepspeed(
            "{\"train_batch_size\": 32, \"gradient_accumulation_steps\": 2, " + zero2 + "}", 8)
            .setup.micro_batch_sequences == 2);
  check_deepspeed_refused("{\"train_micro_batch_size_per_gpu\": 1, " + zero2 + "}",
                          "train_batch_size", no_world, 0);
  check_deepspeed_refused(
      "{\"train_batch_size\": 30, \"train_micro_batch_size_per_gpu\": 2, "
      "\"gradient_accumulation_steps\": 2, " +
          zero2 + "}",
      "train_batch_size",
      "train_batch_size 30 is not train_micro_batch_size_per_gpu × "
      "gradient_accumulation_steps × the devices (2 × 2 × 8), as DeepSpeed "
      "requires.");
  // Products past 2^63 are never formed: a micro-batch × accumulation of 2^64 once wrapped to 0
  // and divided by it; another wrapped to exactly the batch, which DeepSpeed's unbounded
  // integers refuse.
  check_deepspeed_refused(
      "{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": "
      "4294967296, \"gradient_accumulation_steps\": 4294967296, " +
          zero2 + "}",
      "train_batch_size", no_world, 0);
  check_deepspeed_refused(
      "{\"train_batch_size\": 33554432, \"train_micro_batch_size_per_gpu\": "
      "65536, \"gradient_accumulation_steps\": 549755813889, " +
          zero2 + "}",
      "train_batch_size",
      "train_batch_size 33554432 is not train_micro_batch_size_per_gpu × "
      "gradient_accumulation_steps × the devices (65536 × 549755813889 × "
      "512), as DeepSpeed requires.",
      512);
  check_deepspeed_refused(
      "{\"train_batch_size\": 262144, \"train_micro_batch_size_per_gpu\": "
      "131072, " +
          zero2 + "}",
      "train_micro_batch_size_per_gpu",
      "train_micro_batch_size_per_gpu 131072 is over 65,536 sequences.", 2);
}

TEST_CASE("launch: a DeepSpeed config's keys are read, listed, or refused by key") {
  const std::string batch = R"("train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, )";
  // Unknown keys are listed by their path; ZeRO 3's knobs have no bearing under ZeRO 2.
  const LaunchConfig listed =
      read_deepspeed("{" + batch +
                         R"("activation_checkpointing": {"partition_activations": true},
             "zero_optimization": {"stage": 2, "mystery": 1, "stage3_prefetch_bucket_size": 1e6,
                                   "allgather_bucket_size": 2e8}})",
                     8);
  REQUIRE_MESSAGE(listed.answer.ok(), listed.answer.message);
  CHECK(listed.not_understood ==
        std::vector<std::string>{"zero_optimization.mystery", "activation_checkpointing"});
  CHECK(listed.setup.overlap_comm == OverlapComm::kDefault);
  // Without an optimizer section the script's optimiser is the reader's, and may stand beside.
  TrainingSetup sgd = deepspeed_base();
  sgd.optimizer = Optimizer::kSgdMomentum;
  const LaunchConfig script =
      read_launch_config("{" + batch + R"("zero_optimization": {"stage": 2}})", sgd, {8, {}});
  REQUIRE(script.answer.ok());
  CHECK(script.setup.optimizer == Optimizer::kSgdMomentum);
  CHECK(script.leaves.back() == "optimizer");
  // The buckets are settings: DeepSpeed's own examples' 5e7, read.
  const LaunchConfig buckets = read_deepspeed("{" + batch + R"("zero_optimization": {"stage": 3,
                          "stage3_prefetch_bucket_size": 1e6, "reduce_bucket_size": 5e7,
                          "stage3_param_persistence_threshold": 0}})",
                                              8);
  REQUIRE_MESSAGE(buckets.answer.ok(), buckets.answer.message);
  CHECK(buckets.setup.zero_prefetch_bucket == 1e6);
  CHECK(buckets.setup.zero_reduce_bucket == 5e7);
  CHECK(buckets.setup.zero_persistence_threshold == 0);
  check_deepspeed_refused("{" + batch + R"("zero_optimization": {"stage": 2,
                          "reduce_bucket_size": 0}})",
                          "zero_optimization.reduce_bucket_size",
                          "zero_optimization.reduce_bucket_size must be a whole number of at "
                          "least 1; it is 0.");
  check_deepspeed_refused("{" + batch + R"("zero_optimization": {"stage": 2,
                          "contiguous_gradients": "auto"}})",
                          "zero_optimization.contiguous_gradients",
                          "zero_optimization.contiguous_gradients is \"auto\", which transformers' "
                          "Trainer does not fill here (it fills the batch, clipping, the "
                          "optimiser's and schedule's numbers, bf16 and fp16, and the buckets "
                          "from the model's width): give the value it runs with.");
  check_deepspeed_refused(R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}})",
                          "fp16.enabled",
                          "fp16.enabled: FP16 mixed precision (its loss scaler) is not modelled; "
                          "bf16 is.");
  check_deepspeed_refused("{" + batch + R"("optimizer": {"type": "Lion"}})", "optimizer.type",
                          "optimizer.type \"Lion\" is not modelled under DeepSpeed: Adam and "
                          "AdamW are.");
  check_deepspeed_refused("{" + batch + R"("zero_optimization": {"stage": 2, "stage": 3}})",
                          "stage",
                          "'\"stage\"' is given twice in one object, which DeepSpeed refuses.");
  check_deepspeed_refused("{" + batch + R"("sequence_parallel_size": 4})", "sequence_parallel_size",
                          "DeepSpeed-Ulysses' sequence parallelism is not modelled; the deepspeed "
                          "stack runs ZeRO over data parallelism alone.");
  check_deepspeed_refused("{\"train_micro_batch_size_per_gpu\": 1,", "launch",
                          "DeepSpeed config: the text is not valid JSON (line 1, column 38).");
  // bf16: DeepSpeed reads bfloat16 only where bf16 is absent (get_bfloat16_config); the ZeRO
  // optimiser's BF16 master weights with its BF16 states are bf16-master, either alone refused;
  // other keys in it are listed.
  CHECK(read_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {},
                           "bfloat16": {"enabled": true}})",
                       8)
            .setup.precision == Precision::kFp32);
  CHECK(read_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "bfloat16": {"enabled": true}})", 8)
            .setup.precision == Precision::kBf16Mixed);
  const LaunchConfig master = read_deepspeed(R"({"train_micro_batch_size_per_gpu": 1,
      "zero_optimization": {"stage": 2}, "bf16": {"enabled": true,
      "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}})",
                                             8);
  REQUIRE_MESSAGE(master.answer.ok(), master.answer.message);
  CHECK(master.setup.precision == Precision::kBf16Master);
  check_deepspeed_refused(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true,
                          "bf16_master_weights_and_grads": true}})",
                          "bf16.bf16_master_weights_and_grads",
                          "bf16.bf16_master_weights_and_grads without bf16_optimizer_states (FP32 "
                          "moments on the host under ZeRO-Offload) is not modelled; with "
                          "bf16_optimizer_states it is (precision bf16-master).");
  check_deepspeed_refused(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true,
                          "bf16_optimizer_states": true}})",
                          "bf16.bf16_optimizer_states",
                          "bf16.bf16_optimizer_states requires "
                          "bf16.bf16_master_weights_and_grads, as DeepSpeed asserts; set both.");
  CHECK(read_deepspeed(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true,
                           "check_grad_overflow": false, "mystery": 1}})",
                       8)
            .not_understood == std::vector<std::string>{"bf16.mystery"});
  check_deepspeed_refused("{" + batch + R"("elasticity": {"enabled": true}})", "elasticity.enabled",
                          "elasticity.enabled: DeepSpeed's elastic training chooses the batch for "
                          "the devices it finds, which is not modelled; give the batch it runs "
                          "with.");
  check_deepspeed_refused("{" + batch + R"("zero_optimization": {"stage": 3,
                          "offload_optimizer": {"device": "cpu"},
                          "offload_param": {"device": "nvme"}}})",
                          "zero_optimization.offload_param.device",
                          "zero_optimization.offload_param.device nvme: ZeRO-Infinity's NVMe "
                          "offload is not modelled; the host's memory is.");
  // The deprecated switch is its section with the device cpu, and never beside it.
  CHECK(
      read_deepspeed("{" + batch + R"("zero_optimization": {"stage": 2, "cpu_offload": true}})", 8)
          .setup.offload == Offload::kOptimizer);
  check_deepspeed_refused("{" + batch + R"("zero_optimization": {"stage": 2, "cpu_offload": true,
                          "offload_optimizer": {"device": "cpu"}}})",
                          "zero_optimization.cpu_offload",
                          "zero_optimization.cpu_offload and zero_optimization.offload_optimizer "
                          "are given together, which DeepSpeed refuses: give offload_optimizer "
                          "alone.");
  // ZeRO-Offload is read as what it is, and the stack runs it.
  const LaunchConfig offload = read_deepspeed(
      "{" + batch + R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})",
      8);
  REQUIRE(offload.answer.ok());
  CHECK(offload.setup.offload == Offload::kOptimizer);
  CHECK(estimate_memory(offload.setup).answer.ok());
  // ZeRO 3 with the optimiser and the parameters offloaded, on one device: DeepSpeed's way to
  // fine-tune an 8B model on one GPU.
  const LaunchConfig one = read_deepspeed(
      "{" + batch + R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                          "offload_param": {"device": "cpu"}}})",
      1);
  REQUIRE_MESSAGE(one.answer.ok(), one.answer.message);
  CHECK(one.setup.layout.data_parallel == 1);
  CHECK(one.setup.offload == Offload::kOptimizerAndWeights);
  CHECK(estimate_memory(one.setup).answer.ok());
}

TEST_CASE("launch: beside a DeepSpeed config the CLI takes the model and the tokens") {
  const std::string path = std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/";
  std::string from_file;
  std::string from_flags;
  CHECK(
      cli({"--launch", path + "deepspeed-zero3.json", "--config", path + "llama3.1-8b-config.json",
           "--seq-len", "4096", "--recompute", "full", "--loss", "fp32-upcast", "--json"},
          &from_file) == 0);
  CHECK(cli({"--stack",        "deepspeed", "--zero",        "3",
             "--dp",           "8",         "--micro-batch", "2",
             "--overlap-comm", "on",        "--config",      path + "llama3.1-8b-config.json",
             "--seq-len",      "4096",      "--recompute",   "full",
             "--logits",       "--loss",    "fp32-upcast",   "--json"},
            &from_flags) == 0);
  // The estimate's JSON is the flags' (the launch's output carries it with the verdict).
  const auto field = [](const std::string& text, const std::string& key) {
    const std::size_t at = text.find("\"" + key + "\": ");
    REQUIRE(at != std::string::npos);
    return text.substr(at, text.find_first_of(",\n", at) - at);
  };
  for (const char* key : {"total", "peakAllocatedBytes", "peakReservedBytes", "parameters"}) {
    CHECK(field(from_file, key) == field(from_flags, key));
  }
  // A flag the file sets is refused, naming what may stand beside it.
  std::string text;
  CHECK(cli({"--launch", path + "deepspeed-zero3.json", "--model", "llama3-8b", "--zero", "2"},
            &text) == 2);
  CHECK(text.rfind("trainmem: --zero: the launch config sets it; drop --zero (beside this "
                   "--launch: --device, --device-gb, --headroom, --activations, --host-gb, "
                   "--expandable-segments, --max-split-size-mb, --model, --config, --seq-len",
                   0) == 0);
  // A torchtitan job config names its model.
  CHECK(cli({"--launch", path + "torchtitan-llama3-8b-fsdp.toml", "--world-size", "8", "--config",
             path + "llama3.1-8b-config.json"},
            &text) == 2);
  CHECK(text == "trainmem: --config: the launch config names the model; drop --config\n");
}

#ifdef TRAINMEM_YAML  // yaml-cpp: the native build's YAML parser (the page's: tests/browser)

namespace {

LaunchConfig read_axolotl(const std::string& text, TrainingSetup base = {}, int world_size = 0) {
  return fixtures::read_yaml_launch(text, std::move(base), world_size);
}

// A small axolotl config: LoRA on Llama 3.2 1B's every linear layer, PEFT's layers (axolotl's
// fused kernels off); `extra` appended.
std::string axolotl(const std::string& extra) {
  return "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\nlora_target_linear: "
         "true\nsequence_len: 2048\nbf16: true\nlora_mlp_kernel: false\nlora_qkv_kernel: "
         "false\nlora_o_kernel: false\n" +
         extra;
}

void check_axolotl_refused(const std::string& text, const std::string& key,
                           const std::string& message) {
  const LaunchConfig launch = read_axolotl(text);
  CAPTURE(text);
  CHECK_FALSE(launch.answer.ok());
  CHECK(launch.answer.setting == key);
  CHECK(launch.answer.message == message);
}

}  // namespace

TEST_CASE("launch: axolotl's QLoRA example opens to the flags' setup") {
  const LaunchConfig launch = read_axolotl(example("axolotl-llama3.1-8b-qlora.yml"));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind == "axolotl config (YAML, axolotl 067b021)");
  CHECK(launch.not_understood.empty());
  // --stack hf --model llama3.1-8b --seq-len 4096 --micro-batch 2 --lora-rank 16 --lora-targets
  // all-linear --lora-dropout 0.05 --base-weights nf4 --recompute full --optimizer adam-8bit
  // --paged-optimizer --precision bf16 --logits --loss fused-linear: without --kbit-prep, whose
  // FP32 embedding, norms and output layer axolotl casts back to BF16.
  TrainingSetup flags;
  flags.stack = Stack::kHf;
  flags.model_id = "llama3.1-8b";
  flags.sequence_length = 4096;
  flags.micro_batch_sequences = 2;
  flags.lora_rank = 16;
  flags.lora_targets = LoraTargets::kAllLinear;
  flags.lora_dropout = 0.05;
  flags.base_weights = BaseWeights::kNf4;
  flags.recompute = Recompute::kFull;
  flags.optimizer = Optimizer::kAdam8bit;
  flags.paged_optimizer = true;
  flags.precision = Precision::kBf16;
  flags.logits = true;
  flags.loss = Loss::kFusedLinear;
  check_same_figures(launch.setup, flags);
  CHECK(std::find(launch.read.begin(), launch.read.end(), "lora_dropout: 0.05") !=
        launch.read.end());
  // Under DDP over the world size given.
  CHECK(read_axolotl(example("axolotl-llama3.1-8b-qlora.yml"), {}, 4).setup.layout.data_parallel ==
        4);
  // Reentrant, as normalize_config sets gradient_checkpointing_kwargs where the file has none;
  // what the file's table says otherwise (use_reentrant left out: transformers 5's False), as
  // the example's does.
  CHECK_FALSE(launch.setup.reentrant_checkpointing);
  const LaunchConfig normalized = read_axolotl(axolotl("gradient_checkpointing: true\n"));
  REQUIRE_MESSAGE(normalized.answer.ok(), normalized.answer.message);
  CHECK(normalized.setup.reentrant_checkpointing);
  for (const bool reentrant : {false, true}) {
    const char* kwargs = reentrant ? "gradient_checkpointing_kwargs:\n  preserve_rng_state: true\n"
                                   : "gradient_checkpointing_kwargs:\n  use_reentrant: false\n";
    CAPTURE(kwargs);
    const LaunchConfig set =
        read_axolotl(axolotl(std::string("gradient_checkpointing: true\n") + kwargs));
    REQUIRE_MESSAGE(set.answer.ok(), set.answer.message);
    CHECK(set.not_understood.empty());
    CHECK(set.setup.reentrant_checkpointing == reentrant);
  }
}

TEST_CASE("launch: axolotl's keys are read as pydantic reads them, listed, or refused by key") {
  // The failsafe schema's strings, coerced as axolotl's pydantic model coerces them.
  const LaunchConfig read = read_axolotl(axolotl(
      "micro_batch_size: \"4\"\ngradient_checkpointing: yes\nlora_dropout: 1e-1\nnovel_knob: 3\n"
      "wandb_project:\n"));
  REQUIRE_MESSAGE(read.answer.ok(), read.answer.message);
  CHECK(read.setup.micro_batch_sequences == 4);
  CHECK(read.setup.recompute == Recompute::kFull);
  CHECK(read.setup.lora_dropout == doctest::Approx(0.1));
  CHECK(read.setup.model_id == "llama3.2-1b");
  CHECK(read.setup.optimizer == Optimizer::kAdam);  // axolotl's default, adamw_torch_fused
  CHECK(read.not_understood == std::vector<std::string>{"novel_knob"});
  check_axolotl_refused(axolotl("lora_modules_to_save:\n  - embed_tokens\n"),
                        "lora_modules_to_save",
                        "lora_modules_to_save trains whole modules (the embedding, the output "
                        "layer) beside the adapters, which is not modelled.");
  check_axolotl_refused(axolotl("deepspeed: deepspeed_configs/zero3_bf16.json\n"), "deepspeed",
                        "deepspeed deepspeed_configs/zero3_bf16.json: axolotl hands DeepSpeed "
                        "its JSON config, which this file does not hold: open that JSON itself, "
                        "with the model set (its \"auto\" values are filled from the settings "
                        "beside it).");
  // FSDP2 as axolotl's examples set it: the hf stack's ZeRO 3 over the world's devices, full
  // training upcast to FP32 shards under bf16; FSDP1 (no backward prefetch) refused.
  const std::string fsdp2 =
      "base_model: meta-llama/Llama-3.2-1B\nsequence_len: 2048\nbf16: true\n"
      "attn_implementation: flash_attention_2\nfsdp_version: 2\n"
      "fsdp_config:\n  offload_params: false\n  cpu_ram_efficient_loading: true\n"
      "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
      "  transformer_layer_cls_to_wrap: LlamaDecoderLayer\n  state_dict_type: FULL_STATE_DICT\n"
      "  reshard_after_forward: true\n  activation_checkpointing: true\n";
  const LaunchConfig sharded = read_axolotl(fsdp2, TrainingSetup{}, 4);
  REQUIRE_MESSAGE(sharded.answer.ok(), sharded.answer.message);
  CHECK(sharded.not_understood.empty());
  CHECK(sharded.setup.layout.zero_stage == 3);
  CHECK(sharded.setup.layout.data_parallel == 4);
  CHECK(sharded.setup.fsdp_version == FsdpVersion::kFsdp2);
  CHECK(sharded.setup.precision == Precision::kBf16Mixed);
  CHECK(sharded.setup.recompute == Recompute::kFull);
  CHECK(estimate_memory(sharded.setup).answer.ok());
  CHECK(read_axolotl(fsdp2).answer.message ==
        "FSDP shards over the devices the run starts: give the world size (2 or more).");
  // The older fsdp list beside it: read, and refused where it asks for what is not replayed.
  CHECK(read_axolotl(fsdp2 + "fsdp:\n  - full_shard\n  - auto_wrap\n", TrainingSetup{}, 4)
            .answer.ok());
  CHECK(read_axolotl(fsdp2 + "fsdp:\n  - full_shard\n  - offload\n", TrainingSetup{}, 4)
            .answer.message ==
        "fsdp lists offload: FSDP2 is replayed with full_shard and "
        "auto_wrap alone.");
  check_axolotl_refused(axolotl("fsdp:\n  - full_shard\n  - auto_wrap\nfsdp_config:\n"
                                "  fsdp_offload_params: false\n"),
                        "fsdp_version",
                        "axolotl's FSDP1 (fsdp_version unset) leaves FSDP's backward prefetch off, "
                        "which the hf stack does not replay: FSDP2 (fsdp_version: 2) is read.");
  // bitsandbytes' 4-bit base is qlora's alone; lora with load_in_4bit is an FP32 base.
  check_axolotl_refused(axolotl("load_in_4bit: true\n"), "load_in_4bit",
                        "adapter: lora with load_in_4bit loads the base unquantised, which "
                        "prepare_model_for_kbit_training then upcasts to FP32; that is not "
                        "modelled: set adapter: qlora for a 4-bit base.");
  CHECK(read_axolotl(axolotl("load_in_8bit: true\n")).setup.base_weights == BaseWeights::kInt8);
  CHECK_FALSE(read_axolotl(axolotl("load_in_8bit: true\n")).setup.kbit_prep);
  // axolotl's fused LoRA kernels, on unless one is set or LoRA runs on an 8-bit base: noted
  // under gradient checkpointing, refused without it.
  const std::string kernels =
      "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\nlora_target_linear: "
      "true\nbf16: true\n";
  check_axolotl_refused(kernels, "lora_mlp_kernel",
                        "axolotl's fused LoRA kernels, on by default, save other tensors than "
                        "PEFT's layers, which is not modelled without gradient checkpointing: set "
                        "gradient_checkpointing: true, or the lora_*_kernel keys to false.");
  const LaunchConfig noted = read_axolotl(kernels + "gradient_checkpointing: true\n");
  REQUIRE_MESSAGE(noted.answer.ok(), noted.answer.message);
  CHECK(std::any_of(noted.notes.begin(), noted.notes.end(), [](const std::string& note) {
    return note.rfind("axolotl's fused LoRA kernels (on by default)", 0) == 0;
  }));
  CHECK(read_axolotl(kernels + "load_in_8bit: true\n").answer.ok());
  check_axolotl_refused(axolotl("unfrozen_parameters:\n  - ^lm_head.weight$\n"),
                        "unfrozen_parameters",
                        "unfrozen_parameters trains only the parameters it names, which is not "
                        "modelled: full fine-tuning or LoRA's adapters are.");
  // Liger's keys count only with its plugin listed; without it axolotl drops them.
  CHECK(read_axolotl(axolotl("liger_fused_linear_cross_entropy: true\n")).setup.loss ==
        Loss::kFp32Upcast);
  CHECK(read_axolotl(axolotl("plugins:\n  - axolotl.integrations.liger.LigerPlugin\n"
                             "liger_fused_linear_cross_entropy: true\n"))
            .setup.loss == Loss::kFusedLinear);
  check_axolotl_refused(axolotl("plugins:\n  - axolotl.integrations.liger.LigerPlugin\n"
                                "liger_cross_entropy: true\n"),
                        "liger_cross_entropy",
                        "Liger's cross-entropy over the whole logits is not modelled; its fused "
                        "linear cross-entropy is.");
  // bf16 not given is axolotl's auto; given as null, FP32 (refused under LoRA).
  CHECK(read_axolotl("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\n"
                     "lora_target_linear: true\n")
            .setup.precision == Precision::kBf16);
  check_axolotl_refused(
      "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\n"
      "lora_target_linear: true\nbf16:\n",
      "bf16",
      "LoRA on a base loaded in FP32 is not modelled: set bf16: true (or "
      "auto).");
  check_axolotl_refused(
      "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\nlora_target_modules:\n  - "
      "q_proj\n  - v_proj\nbf16: true\n",
      "lora_target_modules",
      "LoRA is modelled on the four attention projections (q_proj, k_proj, v_proj, o_proj) or on "
      "every linear layer (lora_target_linear: true); these targets are not.");
  check_axolotl_refused(axolotl("micro_batch_size: two\n"), "micro_batch_size",
                        "micro_batch_size must be a whole number from 1 to 65,536; it is 'two'.");
  check_axolotl_refused(axolotl("lora_r: 16\n"), "launch",
                        "The YAML does not parse: line 10, column 1: the key 'lora_r' is given "
                        "twice in one mapping.");
  check_axolotl_refused(axolotl("datasets: [a,\n"), "launch",
                        "The YAML does not parse: line 11, column 1: end of sequence flow not "
                        "found.");
  // model_name_or_path, and no base_model: TRL's config, read as TRL reads it.
  CHECK(
      read_axolotl("model_name_or_path: Qwen/Qwen2.5-7B\nper_device_train_batch_size: 2\n").kind ==
      "TRL config (YAML, trl sft --config; TRL v1.9.0)");
  check_axolotl_refused("base_model: someone/Mystery-7B\nbf16: true\n", "base_model",
                        "base_model 'someone/Mystery-7B' is not one of the presets: open its "
                        "config.json (--config, or Any model on the page) and read the file "
                        "again.");
  // Listing the Cut Cross-Entropy plugin turns it on (its cut_cross_entropy defaults to true): the
  // loss without the logits, never read as the FP32-upcast logits; off, transformers' loss.
  const std::string cce =
      "plugins:\n  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin\n";
  const LaunchConfig cut = read_axolotl(axolotl(cce));
  REQUIRE_MESSAGE(cut.answer.ok(), cut.answer.message);
  CHECK(cut.setup.loss == Loss::kCutCrossEntropy);
  CHECK(read_axolotl(axolotl(cce + "cut_cross_entropy: false\n")).setup.loss == Loss::kFp32Upcast);
  // It casts the output layer and the norms to BF16, as FlashAttention does: full training under
  // SDPA is read with it.
  CHECK(read_axolotl("base_model: meta-llama/Llama-3.2-1B\nsequence_len: 2048\nbf16: true\n" + cce)
            .answer.ok());
  check_axolotl_refused(axolotl(cce + "  - axolotl.integrations.liger.LigerPlugin\n"
                                      "liger_fused_linear_cross_entropy: true\n"),
                        "liger_fused_linear_cross_entropy",
                        "liger_fused_linear_cross_entropy beside Cut Cross-Entropy: two losses "
                        "over the output layer; keep one.");
  // Llama 3 8B's own repository, the base of axolotl's examples, and a mirror of it.
  for (const char* name : {"meta-llama/Meta-Llama-3-8B", "NousResearch/Meta-Llama-3-8B"}) {
    std::string text = axolotl("");
    text.replace(text.find("meta-llama/Llama-3.2-1B"), 23, name);
    const LaunchConfig llama = read_axolotl(text);
    REQUIRE_MESSAGE(llama.answer.ok(), llama.answer.message);
    CHECK(llama.setup.model_id == "llama3-8b");
  }
  // A model that is not a preset: the reader's config.json, said.
  TrainingSetup base;
  const ConfigParse model = parse_hf_config(example("llama3.1-8b-config.json"));
  REQUIRE(model.answer.ok());
  base.model_id = kCustomModelId;
  base.custom_model = model.shape;
  const LaunchConfig custom = read_axolotl(
      "base_model: someone/Mystery-8B\nbf16: true\nattn_implementation: flash_attention_2\n", base);
  REQUIRE_MESSAGE(custom.answer.ok(), custom.answer.message);
  CHECK(custom.setup.model_id == kCustomModelId);
  CHECK(custom.leaves.back() == "model");
  // What no file says stays the reader's; what the file's tool sets is its own default, whatever
  // the workshop held before (here LoRA's targets and an offload the hf stack would refuse).
  base.lora_targets = LoraTargets::kAttention;
  base.offload = Offload::kOptimizer;
  base.device_id = "a100-40gb";
  const LaunchConfig fresh = read_axolotl(axolotl(""), base);
  REQUIRE_MESSAGE(fresh.answer.ok(), fresh.answer.message);
  CHECK(fresh.setup.device_id == "a100-40gb");
  CHECK(fresh.setup.offload == Offload::kNone);
  CHECK(fresh.setup.lora_targets == LoraTargets::kAllLinear);
  // Attention: transformers' SDPA unless eager is asked for, by name or by a legacy flag.
  CHECK(read_axolotl(axolotl("")).setup.flash_attention);
  CHECK_FALSE(read_axolotl(axolotl("eager_attention: true\n")).setup.flash_attention);
  CHECK_FALSE(read_axolotl(axolotl("attn_implementation: eager\n")).setup.flash_attention);
  check_axolotl_refused(axolotl("attn_implementation: flash\n"), "attn_implementation",
                        "attn_implementation 'flash' is not one axolotl accepts and trainmem "
                        "models: eager, sdpa, flash_attention_2, flash_attention_3, "
                        "flex_attention, xformers, sage, or a hub kernel's path with flash-attn.");
  CHECK(read_axolotl(axolotl("attn_implementation: kernels-community/flash-attn3\n")).answer.ok());
  check_axolotl_refused(axolotl("attn_implementation: sdpa\nflash_attention: true\n"),
                        "flash_attention",
                        "flash_attention cannot stand beside attn_implementation, as axolotl "
                        "refuses: set only attn_implementation.");
  // Full fine-tuning: LoRA's keys are set aside, not listed.
  const LaunchConfig full = read_axolotl(
      "base_model: meta-llama/Llama-3.2-1B\nbf16: true\nlora_r: 8\n"
      "attn_implementation: flash_attention_2\n",
      base);
  REQUIRE_MESSAGE(full.answer.ok(), full.answer.message);
  CHECK(full.setup.lora_rank == 0);
  CHECK(full.setup.precision == Precision::kBf16);
  CHECK(full.not_understood.empty());
  // Under SDPA (or eager, or none named) axolotl keeps the embedding, the output layer and the
  // norms of a full fine-tune in FP32.
  check_axolotl_refused("base_model: meta-llama/Llama-3.2-1B\nbf16: true\n", "attn_implementation",
                        "Full fine-tuning under transformers' default SDPA keeps the embedding, "
                        "the output layer and the norms in FP32 beside the BF16 layers (axolotl's "
                        "loaders/model.py), which is not modelled: attn_implementation "
                        "flash_attention_2 casts them to BF16.");
}

TEST_CASE("launch: the CLI reads an axolotl config, and --config beside one that names none") {
  const std::string path = std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/";
  std::string text;
  CHECK(cli({"--launch", path + "axolotl-llama3.1-8b-qlora.yml", "--world-size", "2"}, &text) == 0);
  CHECK(text.find("Launch config: axolotl config (YAML, axolotl 067b021)") != std::string::npos);
  CHECK(text.find("Layout: d 2 × t 1") != std::string::npos);
  CHECK(cli({"--launch", path + "axolotl-llama3.1-8b-qlora.yml", "--config",
             path + "llama3.1-8b-config.json"},
            &text) == 2);
  CHECK(text == "trainmem: --config: the launch config names the model; drop --config\n");
}

namespace {

// TRL's example: LoRA r 16 on every linear layer of Llama 3 8B in BF16, Liger's fused loss.
const char* const kTrlSft =
    "model_name_or_path: meta-llama/Meta-Llama-3-8B\n"
    "dtype: bfloat16\n"
    "dataset_name: trl-lib/Capybara\n"
    "max_length: 2048\n"
    "per_device_train_batch_size: 2\n"
    "gradient_accumulation_steps: 8\n"
    "learning_rate: 2.0e-4\n"
    "use_peft: true\n"
    "lora_r: 16\n"
    "lora_alpha: 32\n"
    "lora_target_modules: all-linear\n"
    "use_liger_kernel: true\n"
    "output_dir: ./out\n";

void check_trl_refused(const std::string& text, const std::string& key,
                       const std::string& message) {
  const LaunchConfig launch = read_axolotl(text);
  CAPTURE(text);
  CHECK_FALSE(launch.answer.ok());
  CHECK(launch.answer.setting == key);
  CHECK(launch.answer.message == message);
}

}  // namespace

TEST_CASE("launch: TRL's SFT config opens to the flags' setup, by TRL v1.9.0's defaults") {
  const LaunchConfig launch = read_axolotl(kTrlSft);
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind == "TRL config (YAML, trl sft --config; TRL v1.9.0)");
  CHECK(launch.not_understood.empty());
  // The flags: --stack hf --model llama3-8b --seq-len 2048 --micro-batch 2 --precision bf16
  // --lora-rank 16 --lora-targets all-linear --lora-dropout 0.05 (ModelConfig's default)
  // --recompute full (TRL's gradient checkpointing) --logits --loss fused-linear (Liger's).
  TrainingSetup flags;
  flags.stack = Stack::kHf;
  flags.model_id = "llama3-8b";
  flags.sequence_length = 2048;
  flags.micro_batch_sequences = 2;
  flags.precision = Precision::kBf16;
  flags.lora_rank = 16;
  flags.lora_targets = LoraTargets::kAllLinear;
  flags.lora_dropout = 0.05;
  flags.recompute = Recompute::kFull;
  flags.logits = true;
  flags.loss = Loss::kFusedLinear;
  check_same_figures(launch.setup, flags);
  // TRL's defaults alone: full training of the FP32-loaded model under bf16 autocast, 8 × 1,024
  // tokens, gradient checkpointing, and SFTTrainer's chunked_nll (v1.7 on).
  const LaunchConfig defaults = read_axolotl("model_name_or_path: meta-llama/Meta-Llama-3-8B\n");
  REQUIRE_MESSAGE(defaults.answer.ok(), defaults.answer.message);
  TrainingSetup plain;
  plain.stack = Stack::kHf;
  plain.model_id = "llama3-8b";
  plain.sequence_length = 1024;
  plain.micro_batch_sequences = 8;
  plain.precision = Precision::kBf16Mixed;
  plain.recompute = Recompute::kFull;
  plain.logits = true;
  plain.loss = Loss::kChunkedNll;
  check_same_figures(defaults.setup, plain);
  // Non-reentrant checkpointing, SFTTrainer's default (v0.28 on), unless the file says otherwise.
  CHECK_FALSE(launch.setup.reentrant_checkpointing);
  const LaunchConfig reentrant = read_axolotl(
      std::string(kTrlSft) + "gradient_checkpointing_kwargs:\n  use_reentrant: true\n");
  REQUIRE_MESSAGE(reentrant.answer.ok(), reentrant.answer.message);
  CHECK(reentrant.setup.reentrant_checkpointing);
  // A table without the key: what it runs depends on the transformers beside TRL; refused by key.
  const LaunchConfig unknown = read_axolotl(
      std::string(kTrlSft) + "gradient_checkpointing_kwargs:\n  preserve_rng_state: true\n");
  CHECK_FALSE(unknown.answer.ok());
  CHECK(unknown.answer.setting == "gradient_checkpointing_kwargs");
  // bf16: false over BF16 weights: no autocast, PEFT's FP32 adapters in FP32 throughout.
  CHECK_FALSE(launch.setup.no_autocast);
  const LaunchConfig no_autocast = read_axolotl(std::string(kTrlSft) + "bf16: false\n");
  REQUIRE_MESSAGE(no_autocast.answer.ok(), no_autocast.answer.message);
  flags.no_autocast = true;
  check_same_figures(no_autocast.setup, flags);
  CHECK(estimate_memory(no_autocast.setup).peak_allocated_bytes >
        estimate_memory(launch.setup).peak_allocated_bytes);
  // accelerate launch takes the file's mixed_precision: bf16 turns autocast on whatever bf16 says.
  const LaunchConfig mixed =
      read_axolotl(std::string(kTrlSft) + "bf16: false\nmixed_precision: bf16\n");
  REQUIRE_MESSAGE(mixed.answer.ok(), mixed.answer.message);
  CHECK_FALSE(mixed.setup.no_autocast);
  CHECK(read_axolotl(std::string(kTrlSft) + "mixed_precision: fp8\n").answer.setting ==
        "mixed_precision");
  // num_processes, accelerate launch's, in the same file: DDP over them.
  const LaunchConfig ddp = read_axolotl(std::string(kTrlSft) + "num_processes: 4\n");
  REQUIRE(ddp.answer.ok());
  CHECK(ddp.setup.layout.data_parallel == 4);
}

TEST_CASE("launch: a TRL config naming a hybrid (Qwen3.5, LFM2) opens under the hf stack") {
  // LoRA r 16 on every linear layer of Qwen3.5 27B, 1 × 4,096 tokens: the Gated DeltaNet layers'
  // projections adapted beside the attention's, TRL's chunked_nll and gradient checkpointing.
  const LaunchConfig launch = read_axolotl(
      "model_name_or_path: Qwen/Qwen3.5-27B\n"
      "dtype: bfloat16\n"
      "max_length: 4096\n"
      "per_device_train_batch_size: 1\n"
      "use_peft: true\n"
      "lora_r: 16\n"
      "lora_target_modules: all-linear\n");
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.not_understood.empty());
  TrainingSetup flags;
  flags.stack = Stack::kHf;
  flags.model_id = "qwen3.5-27b";
  flags.sequence_length = 4096;
  flags.micro_batch_sequences = 1;
  flags.precision = Precision::kBf16;
  flags.lora_rank = 16;
  flags.lora_targets = LoraTargets::kAllLinear;
  flags.lora_dropout = 0.05;
  flags.recompute = Recompute::kFull;
  flags.logits = true;
  flags.loss = Loss::kChunkedNll;
  check_same_figures(launch.setup, flags);
  // TRL's defaults on LFM2 1.2B: full training under bf16 autocast, 8 × 1,024 tokens.
  const LaunchConfig lfm2 = read_axolotl("model_name_or_path: LiquidAI/LFM2-1.2B\n");
  REQUIRE_MESSAGE(lfm2.answer.ok(), lfm2.answer.message);
  TrainingSetup plain;
  plain.stack = Stack::kHf;
  plain.model_id = "lfm2-1.2b";
  plain.sequence_length = 1024;
  plain.micro_batch_sequences = 8;
  plain.precision = Precision::kBf16Mixed;
  plain.recompute = Recompute::kFull;
  plain.logits = true;
  plain.loss = Loss::kChunkedNll;
  check_same_figures(lfm2.setup, plain);
}

TEST_CASE(
    "launch: what TRL's config sets that is not modelled, or another version's key, is named") {
  const std::string base = "model_name_or_path: meta-llama/Meta-Llama-3-8B\n";
  check_trl_refused(base + "use_peft: true\nlora_target_modules: all-linear\n", "dtype",
                    "LoRA on the FP32 base TRL loads by default (dtype float32) is not modelled "
                    "yet: LoRA on a BF16 base is (dtype: bfloat16).");
  check_trl_refused(base + "use_liger_kernel: true\nloss_type: chunked_nll\n", "loss_type",
                    "loss_type chunked_nll with use_liger_kernel: SFTTrainer refuses the two "
                    "together; choose one.");
  check_trl_refused(base + "loss_type: nll\n", "loss_type",
                    "loss_type nll keeps the whole logits, upcast by transformers and again by "
                    "accelerate, and SFTTrainer takes their entropy and accuracy beside the loss, "
                    "which is not modelled; Liger's fused linear loss is: set use_liger_kernel: "
                    "true.");
  check_trl_refused(base + "torch_dtype: bfloat16\n", "torch_dtype",
                    "torch_dtype is ModelConfig's key before TRL v0.27 (January 2026; now dtype), "
                    "and TRL v1.9.0 hands it to accelerate launch: this reader reads v1.9.0's "
                    "keys.");
  check_trl_refused(base + "max_seq_length: 512\n", "max_seq_length",
                    "max_seq_length is SFTConfig's key before TRL v0.15 (now max_length): this "
                    "reader reads TRL v1.9.0's keys.");
  check_trl_refused(base + "max_prompt_length: 512\n", "max_prompt_length",
                    "max_prompt_length is a preference trainer's key of another TRL version: "
                    "SFTConfig's, DPOConfig's and GRPOConfig's keys at f2cd5771 are read.");
  check_trl_refused(std::string(kTrlSft) + "load_in_4bit: true\n", "load_in_4bit",
                    "SFTTrainer casts a quantised base's adapters to BF16, which the hf stack "
                    "(PEFT's FP32 adapters) does not model yet: LoRA on a BF16 base is read.");
  // A key the reader does not know withholds the verdict, named.
  const LaunchConfig unknown = read_axolotl(std::string(kTrlSft) + "mystery_knob: 3\n");
  REQUIRE(unknown.answer.ok());
  CHECK(unknown.not_understood == std::vector<std::string>{"mystery_knob"});
}

namespace {

// A GRPO run as TRL's docs write one: Qwen3-8B in BF16, LoRA r 16 on the attention projections,
// 8 sequences a device, completions of 256 tokens, vLLM colocated at 0.3.
const char* const kTrlGrpo =
    "model_name_or_path: Qwen/Qwen3-8B\n"
    "dtype: bfloat16\n"
    "use_peft: true\n"
    "lora_r: 16\n"
    "lora_target_modules: [q_proj, k_proj, v_proj, o_proj]\n"
    "per_device_train_batch_size: 8\n"
    "num_generations: 8\n"
    "max_completion_length: 256\n"
    "use_vllm: true\n"
    "vllm_mode: colocate\n"
    "vllm_gpu_memory_utilization: 0.3\n"
    "reward_funcs: [accuracy_reward]\n"
    "learning_rate: 1.0e-6\n"
    "output_dir: out\n";

// The same run from flags: --stack hf --model qwen3-8b --seq-len 1024 --micro-batch 8
// --precision bf16 --lora-rank 16 --lora-dropout 0.05 --recompute full --rollout vllm --logits
// --loss grpo --completion-length 256.
TrainingSetup grpo_flags() {
  TrainingSetup flags;
  flags.stack = Stack::kHf;
  flags.model_id = "qwen3-8b";
  flags.sequence_length = 1024;
  flags.micro_batch_sequences = 8;
  flags.precision = Precision::kBf16;
  flags.lora_rank = 16;
  flags.lora_dropout = 0.05;
  flags.recompute = Recompute::kFull;
  flags.rollout = Rollout::kVllm;
  flags.logits = true;
  flags.loss = Loss::kGrpo;
  flags.completion_length = 256;
  return flags;
}

// kTrlGrpo with one of its lines written otherwise.
std::string trl_grpo_with(const std::string& line, const std::string& instead) {
  std::string text = kTrlGrpo;
  const std::size_t at = text.find(line + "\n");
  REQUIRE(at != std::string::npos);
  return text.replace(at, line.size(), instead);
}

}  // namespace

TEST_CASE("launch: TRL's GRPO config opens to the flags' setup, the prompts' length beside it") {
  TrainingSetup beside;
  beside.sequence_length = 1024;
  const LaunchConfig launch = read_axolotl(kTrlGrpo, beside);
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind ==
        "TRL config (YAML, trl grpo --config; GRPOConfig at TRL f2cd5771, after "
        "v1.9.0)");
  CHECK(launch.not_understood.empty());
  check_same_figures(launch.setup, grpo_flags());
  // No key only GRPOConfig has: read as GRPO's, and RLOO's reference model said not counted.
  const auto said = [](const LaunchConfig& read, const std::string& words) {
    for (const std::string& note : read.notes) {
      if (note.find(words) != std::string::npos) return true;
    }
    return false;
  };
  CHECK(said(launch, "Under trl rloo its default beta 0.05 would load a reference model"));
  CHECK_FALSE(said(read_axolotl(std::string(kTrlGrpo) + "beta: 0.0\n", beside), "Under trl rloo"));
  // The sequence length is --seq-len's, which may stand beside the file.
  CHECK(std::find(launch.leaves.begin(), launch.leaves.end(), setting_id::kSequenceLength) !=
        launch.leaves.end());
  // Four micro-batches a generation: 32 sequences for vLLM, the step's memory the same.
  const LaunchConfig steps =
      read_axolotl(std::string(kTrlGrpo) + "steps_per_generation: 4\n", beside);
  REQUIRE_MESSAGE(steps.answer.ok(), steps.answer.message);
  CHECK(rollout_figures(estimate_memory(steps.setup)).rollout_sequences == 32);
  const LaunchConfig batch =
      read_axolotl(std::string(kTrlGrpo) + "generation_batch_size: 16\n", beside, 2);
  REQUIRE_MESSAGE(batch.answer.ok(), batch.answer.message);
  CHECK(rollout_figures(estimate_memory(batch.setup)).rollout_sequences == 8);
  CHECK(read_axolotl(std::string(kTrlGrpo) + "generation_batch_size: 12\n", beside, 2)
            .answer.setting == "generation_batch_size");
  // vLLM in server mode: on its own devices, the trainer's holding the update alone.
  const LaunchConfig server =
      read_axolotl(trl_grpo_with("vllm_mode: colocate", "vllm_mode: server"), beside);
  REQUIRE_MESSAGE(server.answer.ok(), server.answer.message);
  TrainingSetup update = grpo_flags();
  update.rollout = Rollout::kNone;
  check_same_figures(server.setup, update);
  // Sleep mode, as --rollout-sleep-mode.
  const LaunchConfig sleeping =
      read_axolotl(std::string(kTrlGrpo) + "vllm_enable_sleep_mode: true\n", beside);
  REQUIRE_MESSAGE(sleeping.answer.ok(), sleeping.answer.message);
  CHECK(sleeping.setup.rollout_sleep_mode);
  // disable_dropout: the model's dropout off, its masks not kept (a memory-bearing key, read).
  const LaunchConfig no_dropout =
      read_axolotl(std::string(kTrlGrpo) + "disable_dropout: true\n", beside);
  REQUIRE_MESSAGE(no_dropout.answer.ok(), no_dropout.answer.message);
  CHECK(no_dropout.setup.dropout == Dropout::kOff);
  CHECK(launch.setup.dropout == Dropout::kModel);
}

TEST_CASE("launch: the CLI reads the GRPO example, the sequence length beside it and no more") {
  const std::string path = std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/";
  std::string text;
  CHECK(cli({"--launch", path + "trl-grpo-qwen3-8b.yaml", "--seq-len", "1024"}, &text) == 0);
  CHECK(text.find("Launch config: TRL config (YAML, trl grpo --config; GRPOConfig at TRL "
                  "f2cd5771, after v1.9.0)") != std::string::npos);
  CHECK(text.find("Each sequence is counted at 1,024 tokens, the sequence length given beside "
                  "the file") != std::string::npos);
  CHECK(text.find("vLLM, colocated at gpu_memory_utilization 0.3") != std::string::npos);
  CHECK(text.find("Verdict: Fits.") != std::string::npos);
  // The JSON says GRPO's completion length, and the rollout engine's figures.
  CHECK(cli({"--launch", path + "trl-grpo-qwen3-8b.yaml", "--seq-len", "1024", "--json"}, &text) ==
        0);
  const nlohmann::json json = nlohmann::json::parse(text);
  CHECK(json.at("loss") == "grpo");
  CHECK(json.at("completionLength") == 256);
  CHECK(json.at("rollout").at("engineBytes").get<double>() > 0);
  // Each phase side by side, in the order they run, the largest the run's total.
  const nlohmann::json& phases = json.at("rollout").at("phases");
  REQUIRE(phases.size() == 3);
  CHECK(phases[0].at("phase") == "generation");
  CHECK(phases[1].at("phase") == "log-probabilities");
  CHECK(phases[2].at("phase") == "update");
  double largest = 0;
  for (const nlohmann::json& phase : phases) {
    CHECK(phase.at("allocatedBytes").get<double>() <= phase.at("bytes").get<double>());
    CHECK(phase.at("fits").get<bool>());
    largest = std::max(largest, phase.at("bytes").get<double>());
  }
  CHECK(largest == json.at("mostLoaded").at("totalBytes").get<double>());
  CHECK(cli({"--launch", path + "trl-grpo-qwen3-8b.yaml", "--micro-batch", "2"}, &text) == 2);
  CHECK(text.find("trainmem: --micro-batch: the launch config sets it") == 0);
}

TEST_CASE("launch: what a GRPO config sets that is not modelled is refused by its key") {
  const std::string grpo = kTrlGrpo;
  const auto refused = [](const std::string& text) {
    TrainingSetup beside;
    beside.sequence_length = 1024;
    return read_axolotl(text, beside).answer.setting;
  };
  CHECK(refused(trl_grpo_with("use_vllm: true", "use_vllm: false")) == "use_vllm");
  CHECK(refused(grpo + "use_liger_kernel: true\n") == "use_liger_kernel");
  CHECK(refused(grpo + "entropy_coef: 0.01\n") == "entropy_coef");
  CHECK(refused(grpo + "cast_lm_head_to_fp32: true\n") == "cast_lm_head_to_fp32");
  CHECK(refused(grpo + "loss_type: chunked_nll\n") == "loss_type");
  CHECK(refused(grpo + "reward_model_name_or_path: some/reward-model\n") ==
        "reward_model_name_or_path");
  CHECK(refused(grpo + "vllm_model_impl: transformers\n") == "vllm_model_impl");
  CHECK(refused(trl_grpo_with("max_completion_length: 256", "max_completion_length: null")) ==
        "max_completion_length");
  // RLOO shares the generation keys; its own name it (its default beta loads a reference model).
  CHECK(refused(grpo + "normalize_advantages: true\n") == "normalize_advantages");
  // GRPOConfig's key before v0.28.
  CHECK(refused(grpo + "max_prompt_length: 512\n") == "max_prompt_length");
  // The loss's forms over the same logits, and beta 0, are read; beta above 0 is the reference
  // model's.
  TrainingSetup beside;
  beside.sequence_length = 1024;
  const LaunchConfig kl = read_axolotl(grpo + "beta: 0.04\n", beside);
  REQUIRE(kl.answer.ok());
  CHECK(kl.setup.reference_model);
  CHECK_FALSE(read_axolotl(grpo + "beta: 0.0\n", beside).setup.reference_model);
  // Syncing the reference mixes into it in place: nothing more on the device, understood; TRL
  // refuses it without a reference of its own (the example's PEFT, or beta 0).
  const std::string sync =
      "sync_ref_model: true\nref_model_sync_steps: 512\nref_model_mixup_alpha: 0.6\n";
  CHECK(refused(grpo + "beta: 0.04\n" + sync) == "sync_ref_model");
  CHECK(refused(grpo + "beta: 0.0\n" + sync) == "sync_ref_model");
  const LaunchConfig synced = read_axolotl(
      trl_grpo_with("use_peft: true", "use_peft: false") + "beta: 0.04\n" + sync, beside);
  REQUIRE(synced.answer.ok());
  CHECK(synced.setup.reference_model);
  CHECK(synced.setup.lora_rank == 0);
  CHECK(synced.not_understood.empty());
  for (const char* loss : {"grpo", "dr_grpo", "bnpo", "cispo"}) {
    CAPTURE(loss);
    const LaunchConfig read = read_axolotl(grpo + "loss_type: " + loss + "\nbeta: 0.0\n", beside);
    CHECK(read.answer.ok());
  }
}

namespace {

// accelerate's config: DDP over 4 processes, bf16 mixed precision; `extra` appended.
std::string accelerate(const std::string& extra) {
  return "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: "
         "bf16\nnum_machines: 1\nnum_processes: 4\nmachine_rank: 0\nuse_cpu: false\n" +
         extra;
}

}  // namespace

TEST_CASE("launch: accelerate's FSDP1 config opens to the flags' setup, upcast to FP32 shards") {
  const std::string path = std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/";
  TrainingSetup base;
  base.model_id = "llama3-8b";
  base.sequence_length = 4096;
  base.micro_batch_sequences = 2;
  const LaunchConfig launch = read_axolotl(example("accelerate-fsdp1.yaml"), base);
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind == "accelerate config (YAML; accelerate v1.14.0)");
  CHECK(launch.not_understood.empty());
  // The flags: --stack hf --dp 8 --zero 3 (FULL_SHARD) --precision bf16-mixed (mixed_precision
  // bf16: accelerate's FP32 upcast) --recompute full (fsdp_activation_checkpointing) --logits
  // --loss fp32-upcast (the Trainer's), beside the model and tokens the script says.
  TrainingSetup flags = base;
  flags.stack = Stack::kHf;
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.precision = Precision::kBf16Mixed;
  flags.recompute = Recompute::kFull;
  flags.logits = true;
  flags.loss = Loss::kFp32Upcast;
  check_same_figures(launch.setup, flags);
  // The recomputation is the file's: a flag for it is refused beside the file.
  std::string text;
  CHECK(cli({"--launch", path + "accelerate-fsdp1.yaml", "--recompute", "none"}, &text) == 2);
  CHECK(text.find("--recompute: the launch config sets it") != std::string::npos);
  // In the CLI, beside the script's tokens, as the flags.
  std::string from_file;
  std::string from_flags;
  cli({"--launch", path + "accelerate-fsdp1.yaml", "--seq-len", "4096", "--micro-batch", "2",
       "--json"},
      &from_file);
  cli({"--stack", "hf", "--dp", "8", "--zero", "3", "--precision", "bf16-mixed", "--seq-len",
       "4096", "--micro-batch", "2", "--recompute", "full", "--logits", "--loss", "fp32-upcast",
       "--json"},
      &from_flags);
  for (const char* key : {"\"peakAllocatedBytes\"", "\"peakReservedBytes\""}) {
    const std::size_t file_at = from_file.find(key);
    const std::size_t flags_at = from_flags.find(key);
    REQUIRE(file_at != std::string::npos);
    REQUIRE(flags_at != std::string::npos);
    CHECK(from_file.substr(file_at, 40) == from_flags.substr(flags_at, 40));
  }
}

TEST_CASE("launch: accelerate's keys are read as v1.14.0 reads them, set aside, or refused") {
  TrainingSetup lora;
  lora.lora_rank = 16;
  // DDP over the processes; LoRA's base in BF16 beside PEFT's FP32 adapters.
  const LaunchConfig ddp = read_axolotl(accelerate(""), lora);
  REQUIRE_MESSAGE(ddp.answer.ok(), ddp.answer.message);
  CHECK(ddp.setup.stack == Stack::kHf);
  CHECK(ddp.setup.layout.data_parallel == 4);
  CHECK(ddp.setup.precision == Precision::kBf16);
  CHECK(ddp.setup.lora_rank == 16);
  // mixed_precision bf16 turns the Trainer's autocast on whatever its bf16 says: the file sets
  // it, and --no-autocast is not left to the reader. With no, the Trainer's bf16 decides.
  TrainingSetup lora_off = lora;
  lora_off.no_autocast = true;
  const LaunchConfig autocast = read_axolotl(accelerate(""), lora_off);
  REQUIRE_MESSAGE(autocast.answer.ok(), autocast.answer.message);
  CHECK_FALSE(autocast.setup.no_autocast);
  CHECK(std::find(autocast.leaves.begin(), autocast.leaves.end(), setting_id::kNoAutocast) ==
        autocast.leaves.end());
  const LaunchConfig plain = read_axolotl(
      "distributed_type: MULTI_GPU\nmixed_precision: 'no'\nnum_processes: 4\n", lora_off);
  REQUIRE_MESSAGE(plain.answer.ok(), plain.answer.message);
  CHECK(plain.setup.no_autocast);
  // Full training under bf16 autocast: the model loaded in FP32 (bf16-mixed); mixed precision
  // off: the model in BF16. The world size given wins over num_processes.
  CHECK(read_axolotl(accelerate("")).setup.precision == Precision::kBf16Mixed);
  const LaunchConfig off = read_axolotl(
      "distributed_type: NO\nmixed_precision: 'no'\nnum_processes: 1\n", TrainingSetup{}, 2);
  REQUIRE(off.answer.ok());
  CHECK(off.setup.precision == Precision::kBf16);
  CHECK(off.setup.layout.data_parallel == 2);
  // DeepSpeed's plugin without a file: ZeRO 3 with the optimiser and parameters on the host.
  const LaunchConfig deepspeed = read_axolotl(
      "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 8\ndeepspeed_config:\n"
      "  zero_stage: 3\n  offload_optimizer_device: cpu\n  offload_param_device: cpu\n"
      "  zero3_init_flag: true\n  zero3_save_16bit_model: true\n");
  REQUIRE_MESSAGE(deepspeed.answer.ok(), deepspeed.answer.message);
  CHECK(deepspeed.setup.stack == Stack::kDeepSpeed);
  CHECK(deepspeed.setup.layout.zero_stage == 3);
  CHECK(deepspeed.setup.offload == Offload::kOptimizerAndWeights);
  CHECK(deepspeed.setup.precision == Precision::kBf16Mixed);
  CHECK(deepspeed.not_understood.empty());
  const auto refused = [](const std::string& text, const std::string& key,
                          const std::string& message) { check_trl_refused(text, key, message); };
  refused(
      "distributed_type: DEEPSPEED\nmixed_precision: bf16\ndeepspeed_config:\n"
      "  deepspeed_config_file: ds_z3.json\n",
      "deepspeed_config.deepspeed_config_file",
      "deepspeed_config.deepspeed_config_file names DeepSpeed's own config (ds_z3.json), "
      "whose keys then win: open that file itself, with the model set.");
  const std::string fsdp =
      "distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 8\nfsdp_config:\n"
      "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_backward_prefetch: BACKWARD_PRE\n";
  CHECK(read_axolotl(fsdp + "  fsdp_version: 1\n").setup.layout.zero_stage == 3);
  // FSDP2, as `accelerate config` writes it: resharding after forward, its prefetch its own.
  const LaunchConfig fsdp2 =
      read_axolotl(fsdp + "  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n");
  REQUIRE_MESSAGE(fsdp2.answer.ok(), fsdp2.answer.message);
  CHECK(fsdp2.setup.fsdp_version == FsdpVersion::kFsdp2);
  CHECK(fsdp2.setup.precision == Precision::kBf16Mixed);
  CHECK(fsdp2.not_understood.empty());
  TrainingSetup fsdp2_flags;
  fsdp2_flags.stack = Stack::kHf;
  fsdp2_flags.layout.data_parallel = 8;
  fsdp2_flags.layout.zero_stage = 3;
  fsdp2_flags.fsdp_version = FsdpVersion::kFsdp2;
  fsdp2_flags.precision = Precision::kBf16Mixed;
  fsdp2_flags.logits = true;
  fsdp2_flags.loss = Loss::kFp32Upcast;
  check_same_figures(fsdp2.setup, fsdp2_flags);
  refused(fsdp + "  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n",
          "fsdp_config.fsdp_reshard_after_forward",
          "fsdp_config.fsdp_reshard_after_forward false: the hf stack replays FSDP's FULL_SHARD "
          "alone (SHARD_GRAD_OP, NO_SHARD and the hybrid strategies are not modelled).");
  refused(fsdp + "  fsdp_sharding_strategy: SHARD_GRAD_OP\n", "fsdp_config.fsdp_sharding_strategy",
          "fsdp_config.fsdp_sharding_strategy SHARD_GRAD_OP: the hf stack replays FSDP's "
          "FULL_SHARD alone (SHARD_GRAD_OP, NO_SHARD and the hybrid strategies are not "
          "modelled).");
  refused(fsdp + "  fsdp_offload_params: true\n", "fsdp_config.fsdp_offload_params",
          "fsdp_config.fsdp_offload_params: FSDP's CPU offload is not modelled under the hf "
          "stack; set it false.");
  refused("distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 1\n",
          "fsdp_config.fsdp_auto_wrap_policy",
          "fsdp_config.fsdp_auto_wrap_policy NO_WRAP (FSDP's default): the hf stack replays "
          "transformer-based wrapping, a unit for each decoder layer (TRANSFORMER_BASED_WRAP); "
          "SIZE_BASED_WRAP and NO_WRAP make other units.");
  refused("distributed_type: XLA\nnum_processes: 8\n", "distributed_type",
          "distributed_type XLA is not modelled: NO, MULTI_GPU, FSDP and DEEPSPEED (on GPUs) "
          "are.");
  refused("distributed_type: NO\nuse_cpu: true\n", "use_cpu",
          "use_cpu: training on the CPU is not modelled; GPUs are.");
  refused("distributed_type: MULTI_GPU\nmixed_precision: fp8\n", "mixed_precision",
          "mixed_precision fp8 is not modelled: bf16 and no are.");
  refused(accelerate("dynamo_config:\n  dynamo_backend: INDUCTOR\n"),
          "dynamo_config.dynamo_backend",
          "dynamo_config.dynamo_backend INDUCTOR: torch.compile under accelerate is not "
          "modelled; set it to NO.");
  // A key the reader does not know withholds the verdict, named; one of no bearing is set aside.
  const LaunchConfig unknown =
      read_axolotl(accelerate("mystery_knob: 3\nmain_process_port: 29500\n"));
  REQUIRE(unknown.answer.ok());
  CHECK(unknown.not_understood == std::vector<std::string>{"mystery_knob"});
}

#endif  // TRAINMEM_YAML

TEST_CASE(
    "launch: Megatron-LM's --pipeline-model-parallel-layout, where the estimate can hold it") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 ";
  // 8 stages over p 8: 3 layers beside the embedding, six of 4, 5 beside the loss.
  const ParallelLayout uneven =
      read_ok(line +
              "--pipeline-model-parallel-size 8 --pipeline-model-parallel-layout "
              "\"Et*3|(tttt|)*6,tttttL\"")
          .setup.layout;
  CHECK(uneven.virtual_pipeline_stages == 1);
  CHECK(uneven.pipeline_first_stage_layers == 3);
  CHECK(uneven.pipeline_last_stage_layers == 5);
  CHECK(estimate_memory(read_ok(line +
                                "--pipeline-model-parallel-size 8 --pipeline-model-parallel-layout "
                                "\"Et*3|(tttt|)*6,tttttL\"")
                            .setup)
            .answer.ok());
  // 8 stages over p 4: two virtual stages a rank, 4 layers each: the even split.
  const ParallelLayout interleaved =
      read_ok(line +
              "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "
              "\"Et*4|(t*4|)*6t*4L\"")
          .setup.layout;
  CHECK(interleaved.virtual_pipeline_stages == 2);
  CHECK(interleaved.pipeline_first_stage_layers == 0);
  CHECK(interleaved.pipeline_last_stage_layers == 0);
  // A rank whose virtual stages differ (3 + 5 on the first) cannot be held.
  check_refused(line +
                    "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "
                    "\"Et*3|(t*4|)*3t*5|(t*4|)*2t*4L\"",
                "--pipeline-model-parallel-layout",
                "--pipeline-model-parallel-layout puts 8, 8, 8 and 8 decoder layers on the "
                "pipeline ranks, unevenly over a rank's virtual stages: the estimate holds the "
                "first and last ranks' layers with the ranks between alike, each rank's split "
                "evenly over its virtual stages, and a layer at least on each end.");
  check_refused(line +
                    "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
                    "\"Et*16|t*15L\"",
                "--pipeline-model-parallel-layout",
                "--pipeline-model-parallel-layout must begin with the embedding (E), end with "
                "the loss (L), hold the 32 decoder layers (t) and p·v stages (p 2), as "
                "Megatron-LM requires.");
  check_refused(line +
                    "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
                    "\"Et*16|t*16L\" --decoder-first-pipeline-num-layers 16",
                "--pipeline-model-parallel-layout",
                "--pipeline-model-parallel-layout cannot stand beside "
                "--decoder-first-pipeline-num-layers, as Megatron-LM refuses.");
  check_refused(line +
                    "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
                    "\"Et*16|(t)*99999999L\"",
                "--pipeline-model-parallel-layout",
                "--pipeline-model-parallel-layout unrolls to more than 65,536 characters.");
}

}  // namespace launch_test
