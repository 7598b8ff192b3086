// torchtitan's torchrun line since its Python configs (issue 43's first item, for the configs of
// issue 46's 2026 step): read as torchtitan b5bcd76c builds the named config where the line pins
// its era, refused by name otherwise.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "example_files.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace torchtitan_line_test {

namespace {

using fixtures::example;

LaunchConfig read(const std::string& text, int world_size = 0) {
  LaunchContext context;
  context.world_size = world_size;
  TrainingSetup base;
  base.device_id = "gb200";
  return read_launch_config(text, base, context);
}

std::string line(const std::string& config, const std::string& overrides) {
  return "torchrun --nproc_per_node 4 -m torchtitan.train --module llama3 --config " + config +
         " " + overrides + "\n";
}

constexpr const char* kTokens =
    "--training.num_tokens_per_microbatch_per_dp_rank 65536 --training.max_context_length 2048 "
    "--training.disable_cuda_graphs";

}  // namespace

TEST_CASE("torchtitan line: the NVFP4 recipe's line is read as its config builds it") {
  const LaunchConfig launch = read(example("torchtitan-llama3-8b-nvfp4.sh"));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.not_understood.empty());
  const TrainingSetup& setup = launch.setup;
  CHECK(setup.stack == Stack::kTorchtitan);
  CHECK(setup.model_id == "llama3.1-8b");
  CHECK(setup.device_id == "gb200");  // left by the file
  CHECK(setup.sequence_length == 2048);
  CHECK(setup.micro_batch_sequences == 32);
  CHECK(setup.layout.data_parallel == 4);
  CHECK(setup.layout.zero_stage == 3);
  CHECK(setup.recompute == Recompute::kSelectiveOp);
  CHECK(setup.compile == Compile::kBlocks);
  CHECK(setup.fused_qkv);
  CHECK(setup.loss == Loss::kChunkedWrapper);
  CHECK(setup.precision == Precision::kNvfp4Mixed);
  // The same setup as the measured GB200 NVFP4 run, so the same estimate.
  const MeasuredCase* measured = nullptr;
  for (const MeasuredCase& each : measured_cases()) {
    if (each.id == "torchtitan-2026-08-gb200-nvfp4") measured = &each;
  }
  REQUIRE(measured != nullptr);
  TrainingSetup run = measured->setup;
  run.activation_model = setup.activation_model;
  CHECK(estimate_memory(run).peak_reserved_bytes == estimate_memory(setup).peak_reserved_bytes);
}

TEST_CASE("torchtitan line: the mesh's -1 is the world size over t·c, and overrides are read") {
  const LaunchConfig launch =
      read(line("llama3_8b", std::string(kTokens) + " --compile.enable --compile.components model "
                                                    "--parallelism.data_parallel_shard_degree -1"));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.setup.layout.data_parallel == 4);  // torchrun's --nproc_per_node 4
  CHECK(launch.setup.compile == Compile::kBlocks);
  CHECK(launch.setup.precision == Precision::kBf16Mixed);
  // tyro's negated switch: NVFP4 uncompiled, which the estimate refuses by the setting.
  const LaunchConfig eager = read(
      line("llama3_8b_first_85_pct_layers_nvfp4", std::string(kTokens) + " --compile.no-enable"));
  REQUIRE(eager.answer.ok());
  CHECK(eager.setup.compile == Compile::kOff);
  CHECK(estimate_memory(eager.setup).answer.setting == setting_id::kCompile);
  // Without the world size -1 cannot be filled.
  const LaunchConfig unknown =
      read("python -m torchtitan.train --module llama3 --config llama3_8b " + std::string(kTokens));
  CHECK(unknown.answer.setting == "--parallelism.data_parallel_shard_degree");
  CHECK(
      read("python -m torchtitan.train --module llama3 --config llama3_8b " + std::string(kTokens),
           8)
          .setup.layout.data_parallel == 8);
}

TEST_CASE("torchtitan line: Qwen3's dense configs are read") {
  const LaunchConfig dense = read(
      "torchrun --nproc_per_node 8 -m torchtitan.train --module qwen3 --config qwen3_14b "
      "--training.num_tokens_per_microbatch_per_dp_rank 16384 "
      "--training.max_context_length 4096 --training.disable_cuda_graphs\n");
  REQUIRE_MESSAGE(dense.answer.ok(), dense.answer.message);
  CHECK(dense.setup.model_id == "qwen3-14b");
  CHECK(dense.setup.micro_batch_sequences == 4);
  CHECK(dense.setup.sequence_length == 4096);
  CHECK(dense.setup.recompute == Recompute::kFull);
  CHECK(dense.setup.layout.data_parallel == 8);
  CHECK(estimate_memory(dense.setup).answer.ok());
  // The NVFP4 recipe's name dates the line by itself.
  const LaunchConfig nvfp4 = read(
      "torchrun --nproc_per_node 4 -m torchtitan.train --module qwen3 --config "
      "qwen3_8b_first_85_pct_layers_nvfp4 --training.disable_cuda_graphs\n");
  REQUIRE_MESSAGE(nvfp4.answer.ok(), nvfp4.answer.message);
  CHECK(nvfp4.setup.precision == Precision::kNvfp4Mixed);
  CHECK(nvfp4.setup.sequence_length == 2048);
  CHECK(estimate_memory(nvfp4.setup).answer.ok());
  // A config of another family is not this one's.
  const LaunchConfig other =
      read("torchrun -m torchtitan.train --module qwen3 --config llama3_8b\n");
  CHECK(other.answer.setting == "--config");
}

TEST_CASE("torchtitan line: Qwen3-30B-A3B's config is read with its expert parallelism") {
  const auto moe_line = [](const std::string& overrides) {
    return "torchrun --nproc_per_node 8 -m torchtitan.train --module qwen3 --config "
           "qwen3_30b_a3b --training.disable_cuda_graphs " +
           overrides + "\n";
  };
  const std::string tokens =
      "--training.num_tokens_per_microbatch_per_dp_rank 8192 --training.max_context_length 4096";
  const LaunchConfig moe = read(moe_line(tokens + " --parallelism.expert_parallel_degree 8"));
  REQUIRE_MESSAGE(moe.answer.ok(), moe.answer.message);
  CHECK(moe.not_understood.empty());
  CHECK(moe.setup.model_id == "qwen3-30b-a3b");
  CHECK(moe.setup.layout.data_parallel == 8);
  CHECK(moe.setup.layout.expert_parallel == 8);
  CHECK(moe.setup.recompute == Recompute::kFull);
  CHECK(moe.setup.micro_batch_sequences == 2);
  CHECK(moe.setup.sequence_length == 4096);
  CHECK(estimate_memory(moe.setup).answer.ok());
  bool said = false;
  for (const std::string& note : moe.notes) said = said || note.find("efsdp") != std::string::npos;
  CHECK(said);
  // Without it, ep 1: the experts sharded over all d·c ranks.
  const LaunchConfig whole = read(moe_line(tokens));
  REQUIRE_MESSAGE(whole.answer.ok(), whole.answer.message);
  CHECK(whole.setup.layout.expert_parallel == 1);
  // An ep that does not divide the 128 experts is the core's to refuse, by its setting.
  const LaunchConfig three = read(moe_line(tokens + " --parallelism.expert_parallel_degree 3"));
  REQUIRE(three.answer.ok());
  CHECK(estimate_memory(three.setup).answer.setting == setting_id::kExpertParallel);
  // A line that does not date itself is refused, as the dense configs' are.
  CHECK(read(moe_line("")).answer.setting == "--config");
  // On a dense config expert parallelism has no effect (configs.py), once it divides the ranks.
  const std::string dense =
      "torchrun --nproc_per_node 8 -m torchtitan.train --module qwen3 --config qwen3_14b "
      "--training.disable_cuda_graphs " +
      tokens + " --parallelism.expert_parallel_degree ";
  const LaunchConfig ignored = read(dense + "4\n");
  REQUIRE_MESSAGE(ignored.answer.ok(), ignored.answer.message);
  CHECK(ignored.setup.layout.expert_parallel == 1);
  bool noted = false;
  for (const std::string& note : ignored.notes) {
    noted = noted || note.find("has no effect on Qwen3 14B") != std::string::npos;
  }
  CHECK(noted);
  CHECK(read(dense + "3\n").answer.setting == "--parallelism.expert_parallel_degree");
}

TEST_CASE("torchtitan line: what it does not read is refused by its flag, or listed") {
  const auto refused_by = [](const std::string& text) {
    const LaunchConfig launch = read(text);
    CHECK_FALSE(launch.answer.ok());
    return launch.answer.setting;
  };
  // A config whose defaults the line does not date.
  CHECK(refused_by(line("llama3_8b", "")) == "--config");
  // Configs not read, each saying why.
  const LaunchConfig mxfp8 = read(line("llama3_8b_mxfp8", kTokens));
  CHECK(mxfp8.answer.setting == "--config");
  CHECK(mxfp8.answer.message.find("the output layer too") != std::string::npos);
  CHECK(refused_by(line("llama3_debugmodel", kTokens)) == "--config");
  CHECK(refused_by("torchrun -m torchtitan.train --module qwen3_5 --config "
                   "qwen35_27b\n") == "--module");
  // A gpt_oss line that does not date itself is refused as the others are (73aed7f renamed its
  // batch keys, the values the same; the reader dates every config by them).
  CHECK(refused_by("torchrun -m torchtitan.train --module gpt_oss --config "
                   "gpt_oss_20b\n") == "--config");
  // deepseek_v3_16b's defaults have moved too: a line that does not date itself is refused.
  CHECK(refused_by("torchrun -m torchtitan.train --module deepseek_v3 --config "
                   "deepseek_v3_16b\n") == "--config");
  // llama3_70b's tensor parallelism of 8, this torchtitan's own.
  CHECK(refused_by(line("llama3_70b", kTokens)) == "--parallelism.tensor_parallel_degree");
  CHECK(read(line("llama3_70b", std::string(kTokens) + " --parallelism.tensor_parallel_degree 1"))
            .answer.ok());
  CHECK(refused_by(line("llama3_8b",
                        std::string(kTokens) + " --parallelism.pipeline_parallel_degree 2")) ==
        "--parallelism.pipeline_parallel_degree");
  // The CUDA graphs this torchtitan captures by default are not modelled.
  CHECK(refused_by(line("llama3_8b",
                        "--training.num_tokens_per_microbatch_per_dp_rank 65536 "
                        "--training.max_context_length 2048")) == "--training.disable_cuda_graphs");
  // A key it does not know is listed, and withholds the verdict.
  const LaunchConfig unknown =
      read(line("llama3_8b", std::string(kTokens) + " --activation_checkpoint.mode full"));
  REQUIRE(unknown.answer.ok());
  CHECK(unknown.not_understood == std::vector<std::string>{"--activation_checkpoint.mode"});
  // Validation's schedule has no bearing; turning it on runs its own batches, which are not read.
  const LaunchConfig validated =
      read(line("llama3_8b", std::string(kTokens) +
                                 " --validator.freq 100 --validator.steps 10 --validator.enable"));
  REQUIRE(validated.answer.ok());
  CHECK(validated.not_understood == std::vector<std::string>{"--validator.enable"});
}

TEST_CASE("torchtitan line: tyro's spellings, the world size, and keys of other eras") {
  // '=' forms, a list split at its commas, the last of a switch and its negation winning.
  const LaunchConfig equals = read(
      "torchrun --nnodes 2 --nproc_per_node 4 -m torchtitan.train --module=llama3 "
      "--config=llama3_8b --training.num-tokens-per-microbatch-per-dp-rank=16384 "
      "--training.max-context-length=8192 --training.disable-cuda-graphs "
      "--compile.no-enable --compile.enable --compile.components=model,loss --loss.num_chunks 4\n");
  REQUIRE_MESSAGE(equals.answer.ok(), equals.answer.message);
  CHECK(equals.not_understood.empty());
  CHECK(equals.setup.layout.data_parallel == 8);  // 2 nodes of 4
  CHECK(equals.setup.micro_batch_sequences == 2);
  CHECK(equals.setup.compile == Compile::kBlocksAndLoss);
  CHECK(equals.setup.loss_chunks == 4);
  // The loss compiled alone (torchtitan's DeepSeek-V3 and Kimi configs' components): answered,
  // the chunks' cross-entropy compiled.
  const LaunchConfig loss_alone =
      read(line("llama3_8b", std::string(kTokens) + " --compile.enable --compile.components loss"));
  REQUIRE_MESSAGE(loss_alone.answer.ok(), loss_alone.answer.message);
  CHECK(loss_alone.setup.compile == Compile::kLoss);
  CHECK(estimate_memory(loss_alone.setup).answer.ok());
  CHECK(equals.notes.front().find("the loss chunked over 4 (ChunkedLossWrapper)") !=
        std::string::npos);
  CHECK(loss_alone.notes.front().find(", the loss compiled;") != std::string::npos);
  CHECK(read(line("llama3_8b", std::string(kTokens) + " --compile.components blocks"))
            .answer.setting == "--compile.components");
  // tyro takes no value after a switch.
  CHECK(read(line("llama3_8b", std::string(kTokens) + " --compile.enable=False")).answer.setting ==
        "--compile.enable");
  // Tokens that are no whole number of contexts: one flat row, counted as one sequence.
  const LaunchConfig row = read(line("llama3_8b",
                                     "--training.num_tokens_per_microbatch_per_dp_rank 3000 "
                                     "--training.max_context_length 2048 "
                                     "--training.disable_cuda_graphs"));
  REQUIRE_MESSAGE(row.answer.ok(), row.answer.message);
  CHECK(row.setup.sequence_length == 3000);
  CHECK(row.setup.micro_batch_sequences == 1);
  // The degrees must multiply to the world size; one device is FSDP2 over one rank.
  CHECK(
      read(line("llama3_8b", std::string(kTokens) + " --parallelism.data_parallel_shard_degree 2"))
          .answer.setting == "--parallelism.data_parallel_shard_degree");
  const LaunchConfig one =
      read("torchrun --nproc_per_node 1 -m torchtitan.train --module llama3 --config llama3_8b " +
           std::string(kTokens));
  CHECK(one.answer.setting == "--parallelism.data_parallel_shard_degree");
  CHECK(one.answer.message.find("FSDP2, over one rank") != std::string::npos);
  // Keys of earlier torchtitans, refused by name.
  CHECK(read(line("llama3_8b", std::string(kTokens) + " --training.local_batch_size 2"))
            .answer.setting == "--training.local_batch_size");
  CHECK(read(line("llama3_8b", std::string(kTokens) + " --job.dump_folder out")).answer.setting ==
        "--job.dump_folder");
}

}  // namespace torchtitan_line_test

namespace torchtitan_line_test {

TEST_CASE(
    "torchtitan line: DeepSeek-V3's configs are read as they build: latent attention, ep from "
    "the config, the loss compiled alone, CUDA graphs off, no fused wqkv") {
  const auto deepseek_line = [](const std::string& config, const std::string& overrides) {
    return "torchrun --nproc_per_node 8 -m torchtitan.train --module deepseek_v3 --config " +
           config + " --training.num_tokens_per_microbatch_per_dp_rank 16384 " + overrides + "\n";
  };
  const LaunchConfig lite = read(deepseek_line("deepseek_v3_16b", ""));
  REQUIRE_MESSAGE(lite.answer.ok(), lite.answer.message);
  CHECK(lite.not_understood.empty());
  const TrainingSetup& setup = lite.setup;
  CHECK(setup.model_id == "deepseek-v2-lite");
  CHECK(setup.layout.data_parallel == 8);
  CHECK(setup.layout.expert_parallel == 8);  // ParallelismConfig(expert_parallel_degree=8)
  CHECK(setup.recompute == Recompute::kSelectiveOp);
  CHECK(setup.compile == Compile::kLoss);  // CompileConfig(components=["loss"])
  CHECK_FALSE(setup.fused_qkv);
  CHECK(setup.loss == Loss::kChunkedWrapper);
  CHECK(setup.sequence_length == 4096);
  CHECK(setup.micro_batch_sequences == 4);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  // The line's overrides win: ep, and compile off.
  const LaunchConfig overridden = read(deepseek_line(
      "deepseek_v3_16b", "--parallelism.expert_parallel_degree 4 --compile.no_enable"));
  REQUIRE_MESSAGE(overridden.answer.ok(), overridden.answer.message);
  CHECK(overridden.setup.layout.expert_parallel == 4);
  CHECK(overridden.setup.compile == Compile::kOff);
  // Its components named on the line replace the config's ["loss"].
  CHECK(read(deepseek_line("deepseek_v3_16b", "--compile.components model")).setup.compile ==
        Compile::kBlocks);
  CHECK(read(deepseek_line("deepseek_v3_16b", "--compile.enable")).setup.compile == Compile::kLoss);
  // Turning the CUDA graphs back on is refused: their pool is not modelled.
  CHECK(
      read(deepseek_line("deepseek_v3_16b", "--training.no_disable_cuda_graphs")).answer.setting ==
      "--training.disable_cuda_graphs");
  // The 671B config: DeepSeek-V3 at ep 2, without its MTP module.
  const LaunchConfig v3 = read(deepseek_line("deepseek_v3_671b", ""), 256);
  REQUIRE_MESSAGE(v3.answer.ok(), v3.answer.message);
  CHECK(v3.setup.model_id == "deepseek-v3");
  CHECK(v3.setup.layout.expert_parallel == 2);
  CHECK(v3.setup.layout.data_parallel == 256);
  CHECK_FALSE(v3.setup.mtp);
  CHECK(estimate_memory(v3.setup).answer.ok());
  // What is not modelled is refused by name.
  const LaunchConfig hybrid = read(deepseek_line("deepseek_v3_16b_hybridep", ""));
  CHECK(hybrid.answer.setting == "--config");
  CHECK(hybrid.answer.message.find("HybridEP") != std::string::npos);
  CHECK(read(deepseek_line("deepseek_v3_671b_float8", "")).answer.setting == "--config");
}

}  // namespace torchtitan_line_test
