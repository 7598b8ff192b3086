// gpt-oss under torchtitan (issue 43's gpt-oss configs), counted by hand on a tiny shape: what
// GptOssGroupedExperts' clamped SwiGLU and the attention's sinks save (torchtitan/models/gpt_oss,
// b5bcd76c), Korthikanti's additions, what is not derived refused by name, and the two configs
// read from their launch line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "tiny_mixture.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/models.hpp"
#include "trainmem/settings.hpp"
#include "whole_terms.hpp"

using namespace trainmem;

namespace torchtitan_gpt_oss_test {

namespace {

// The tiny mixture's shape (tiny_mixture.hpp): h 64, 4 heads of 16, 2 key-value heads, 4 experts
// of 32, top-2, 128 tokens, two layers.
constexpr double kTokens = 128, kH = 64, kHeads = 4, kHeadDim = 16, kTopK = 2, kWidth = 32,
                 kLayers = 2;

// The tiny mixture made gpt-oss: biases on the attention, the experts and the router, sinks, and
// the clamped SwiGLU.
TrainingSetup tiny_gpt_oss(Recompute recompute = Recompute::kNone) {
  TrainingSetup setup = fixtures::tiny_torchtitan_mixture(1);
  ModelShape& shape = setup.custom_model;
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  shape.router_bias = true;
  shape.attention_sinks = true;
  shape.clamped_swiglu = true;
  setup.recompute = recompute;
  return setup;
}

double tensor_bytes(const std::vector<SavedTensor>& tensors, const std::string& id) {
  double bytes = -1;
  for (const SavedTensor& tensor : tensors) {
    if (tensor.id == id) bytes = tensor.bytes_per_token;
  }
  return bytes;
}

using fixtures::whole;

}  // namespace

TEST_CASE("torchtitan gpt-oss: the clamped SwiGLU and the sinks save their tensors, by hand") {
  const TrainingSetup setup = tiny_gpt_oss();
  const std::vector<SavedTensor> saved =
      llama_block_saved_tensors(setup.custom_model, setup, setup.flash_attention);
  // mlp1's output plus its bias, 2·f_e wide, kept whole by the two clamps' views of its halves.
  CHECK(tensor_bytes(saved, "gate-up-output") == 2 * 2 * kWidth * kTopK);
  // The gate's clamped copy, the sigmoid, their product, up's clamped copy and addcmul's output.
  for (const char* id :
       {"gate-clamped", "activation-output", "glu-output", "up-clamped", "product"}) {
    CHECK(tensor_bytes(saved, id) == 2 * kWidth * kTopK);
  }
  // Two int64 row indices a routed copy, one for each bias's index_select.
  CHECK(tensor_bytes(saved, "bias-rows") == 8 * 2 * kTopK);
  // GroupedExperts' own SwiGLU tensors are not there.
  CHECK(tensor_bytes(saved, "gate-output") == -1);
  CHECK(tensor_bytes(saved, "up-output") == -1);
  // The sinks: the FP32 sigmoid of lse − sink and its BF16 cast, a head each, and the scaled
  // output the output projection saves; FlashAttention's own output stays kept as well.
  CHECK(tensor_bytes(saved, "sink-scale") == 4 * kHeads);
  CHECK(tensor_bytes(saved, "sink-scale-bf16") == 2 * kHeads);
  CHECK(tensor_bytes(saved, "sink-output") == 2 * kHeads * kHeadDim);
  CHECK(tensor_bytes(saved, "attention-output") == 2 * kHeads * kHeadDim);

  // Against GroupedExperts' SwiGLU on the same shape without biases, sinks or clamp: the gate,
  // up, SiLU and product (4 × 2·f_e·k) give way to 2·2·f_e·k + 5 × 2·f_e·k + 16·k, and the sinks
  // add 4·a + 2·a + 2·a·d.
  TrainingSetup plain = fixtures::tiny_torchtitan_mixture(1);
  const double plain_bytes = saved_bytes_per_token(
      llama_block_saved_tensors(plain.custom_model, plain, plain.flash_attention));
  const double gpt_oss_bytes = saved_bytes_per_token(saved);
  const double experts = 4 * kWidth * kTopK + 5 * 2 * kWidth * kTopK + 16 * kTopK;
  const double sinks = 4 * kHeads + 2 * kHeads + 2 * kHeads * kHeadDim;
  CHECK(gpt_oss_bytes - plain_bytes == experts - 4 * 2 * kWidth * kTopK + sinks);

  // Under tensor parallelism 2 (with sequence parallelism) and expert parallelism 2 each rank
  // routes its own T/2 tokens to whole experts: the routed copies' tensors halve with the tokens,
  // and the sinks' with the heads.
  TrainingSetup split = tiny_gpt_oss();
  split.layout.tensor_parallel = 2;
  split.layout.sequence_parallel = true;
  split.layout.data_parallel = 2;
  split.layout.expert_parallel = 2;
  split.layout.expert_tensor_parallel = 1;
  REQUIRE_MESSAGE(estimate_memory(split).answer.ok(), estimate_memory(split).answer.message);
  const std::vector<SavedTensor> halves =
      llama_block_saved_tensors(split.custom_model, split, split.flash_attention);
  CHECK(tensor_bytes(halves, "bias-rows") == 8 * 2 * kTopK / 2);
  CHECK(tensor_bytes(halves, "gate-up-output") == 2 * 2 * kWidth * kTopK / 2);
  CHECK(tensor_bytes(halves, "sink-scale") == 4 * kHeads / 2);
  CHECK(tensor_bytes(halves, "sink-output") == 2 * kHeads * kHeadDim / 2);

  // Every layer keeps them without recomputation; under full recomputation a layer keeps its
  // input and the one rebuilt layer holds them again.
  CHECK(whole(tiny_gpt_oss())[Term::kActivations] - whole(plain)[Term::kActivations] ==
        kTokens * kLayers * (gpt_oss_bytes - plain_bytes));
  plain.recompute = Recompute::kFull;
  CHECK(whole(tiny_gpt_oss(Recompute::kFull))[Term::kActivations] -
            whole(plain)[Term::kActivations] ==
        kTokens * (gpt_oss_bytes - plain_bytes));
}

TEST_CASE(
    "torchtitan gpt-oss: Korthikanti's shares gain the clamped SwiGLU's excess and the sinks") {
  TrainingSetup setup = tiny_gpt_oss();
  setup.activation_model = ActivationModel::kKorthikanti;
  TrainingSetup plain = fixtures::tiny_torchtitan_mixture(1);
  plain.activation_model = ActivationModel::kKorthikanti;
  const Calculation gpt_oss = calculate(setup, 1, true, {false, false});
  const Calculation grouped = calculate(plain, 1, true, {false, false});
  REQUIRE_MESSAGE(gpt_oss.answer.ok(), gpt_oss.answer.message);
  REQUIRE(grouped.answer.ok());
  // Beyond GroupedExperts' four tensors of f_e a routed copy: three more (6·f_e B) and the two
  // int64 bias rows; and the sinks' 4·a + 2·a + 2·a·d.
  CHECK(gpt_oss.layer.kept_per_token.value() - grouped.layer.kept_per_token.value() ==
        doctest::Approx(6 * kWidth * kTopK + 8 * 2 * kTopK + 4 * kHeads + 2 * kHeads +
                        2 * kHeads * kHeadDim));
}

TEST_CASE("torchtitan gpt-oss: what is not derived is refused, naming the setting") {
  const auto refused_by = [](const TrainingSetup& setup) {
    return estimate_memory(setup).answer.setting;
  };
  CHECK(estimate_memory(tiny_gpt_oss()).answer.ok());
  CHECK(estimate_memory(tiny_gpt_oss(Recompute::kFull)).answer.ok());
  CHECK(refused_by(tiny_gpt_oss(Recompute::kSelectiveOp)) == setting_id::kRecompute);
  CHECK(refused_by(tiny_gpt_oss(Recompute::kSelective)) == setting_id::kRecompute);
  TrainingSetup compiled = tiny_gpt_oss(Recompute::kFull);
  compiled.compile = Compile::kBlocks;
  CHECK(refused_by(compiled) == setting_id::kCompile);
  compiled.compile = Compile::kLoss;  // the loss alone leaves the blocks eager
  CHECK(estimate_memory(compiled).answer.ok());
  TrainingSetup eager_attention = tiny_gpt_oss();
  eager_attention.flash_attention = false;
  CHECK(refused_by(eager_attention) == setting_id::kFlashAttention);
  // Experts with biases but GroupedExperts' SwiGLU are neither of torchtitan's, nor is the
  // clamped SwiGLU without its biases or its attention's sinks, nor sinks beside GroupedExperts.
  TrainingSetup biased = fixtures::tiny_torchtitan_mixture(1);
  biased.custom_model.mlp_bias = true;
  CHECK(refused_by(biased) == setting_id::kStack);
  TrainingSetup unbiased = tiny_gpt_oss();
  unbiased.custom_model.mlp_bias = false;
  CHECK(refused_by(unbiased) == setting_id::kStack);
  TrainingSetup sinkless = tiny_gpt_oss();
  sinkless.custom_model.attention_sinks = false;
  CHECK(refused_by(sinkless) == setting_id::kStack);
  TrainingSetup sinks_alone = fixtures::tiny_torchtitan_mixture(1);
  sinks_alone.custom_model.attention_sinks = true;
  CHECK(refused_by(sinks_alone) == setting_id::kStack);
  sinks_alone.flash_attention = false;  // named by the stack, not by FlashAttention
  CHECK(refused_by(sinks_alone) == setting_id::kStack);
  // The preset is gpt-oss.
  TrainingSetup preset;
  preset.model_id = "gpt-oss-20b";
  preset.stack = Stack::kTorchtitan;
  preset.layout.data_parallel = 8;
  preset.layout.zero_stage = 3;
  preset.recompute = Recompute::kFull;
  CHECK(estimate_memory(preset).answer.ok());
  // docs/activations.md's figure: gpt-oss-20b's layer, 286,776 B a token.
  CHECK(saved_bytes_per_token(llama_block_saved_tensors(*find_preset("gpt-oss-20b"), preset,
                                                        preset.flash_attention)) == 286776);
}

TEST_CASE("torchtitan gpt-oss: under transformers' modules the clamped SwiGLU's gap is said") {
  const auto says = [](const Estimate& estimate, const std::string& words) {
    for (const std::string& note : estimate.notes) {
      if (note.find(words) != std::string::npos) return true;
    }
    return false;
  };
  TrainingSetup setup;
  setup.model_id = "gpt-oss-20b";
  setup.stack = Stack::kHf;
  setup.sequence_length = 2048;
  const Estimate hf = estimate_memory(setup);
  REQUIRE_MESSAGE(hf.answer.ok(), hf.answer.message);
  // Seven tensors of f_e (2,880) a routed copy against the fused SwiGLU's three: 4 × 2 × 2,880.
  CHECK(says(hf, "23,040 B more a routed copy (92,160 B a token a layer at top-4)"));
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  const Estimate titan = estimate_memory(setup);
  REQUIRE(titan.answer.ok());
  CHECK_FALSE(says(titan, "clamped SwiGLU"));
}

TEST_CASE("torchtitan gpt-oss: gpt_oss_20b's and gpt_oss_120b's lines are read as built") {
  const auto read = [](const std::string& config, const std::string& overrides) {
    LaunchContext context;
    const TrainingSetup base;
    return read_launch_config(
        "torchrun --nproc_per_node 8 -m torchtitan.train --module gpt_oss --config " + config +
            " --training.disable_cuda_graphs " + overrides + "\n",
        base, context);
  };
  const std::string tokens = "--training.num_tokens_per_microbatch_per_dp_rank 8192";
  for (const auto& [config, model] :
       {std::pair<std::string, std::string>{"gpt_oss_20b", "gpt-oss-20b"},
        {"gpt_oss_120b", "gpt-oss-120b"}}) {
    const LaunchConfig launch = read(config, tokens);
    REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
    CHECK(launch.not_understood.empty());
    CHECK(launch.setup.model_id == model);
    CHECK(launch.setup.recompute == Recompute::kFull);
    CHECK(launch.setup.compile == Compile::kOff);
    CHECK(launch.setup.loss == Loss::kChunkedWrapper);
    CHECK(launch.setup.layout.data_parallel == 8);
    CHECK(launch.setup.sequence_length == 8192);
    CHECK(launch.setup.micro_batch_sequences == 1);
    CHECK(estimate_memory(launch.setup).answer.ok());
  }
  // Its debug models' shapes are no preset's: refused by the config's name.
  CHECK(read("gpt_oss_debugmodel", tokens).answer.setting == "--config");
  // Compiled blocks on a line are the core's to refuse.
  const LaunchConfig compiled = read("gpt_oss_20b", tokens + " --compile.enable");
  REQUIRE(compiled.answer.ok());
  CHECK(estimate_memory(compiled.setup).answer.setting == setting_id::kCompile);
}

}  // namespace torchtitan_gpt_oss_test
