// Transformer Engine's FP8 recipes (--fp8-recipe) under the ideal step and the megatron stack:
// each recipe's FP8 weight cache and scaling state by hand, MXFP8's block scales on the saved
// inputs, the megatron stack's replay holding them at its peak, what is refused, and a launch
// line's FP8 flags.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace fp8_recipes_test {

namespace {

// fp8_test.cpp's tiny layer: Q, K, V and O 1,024 values and a gated MLP of 384 run in FP8, in 4
// GEMMs (fused QKV, O, fused gate-and-up, down).
TrainingSetup tiny(Fp8Recipe recipe, const char* device) {
  TrainingSetup setup;
  ModelShape shape;
  shape.id = kCustomModelId;
  shape.name = "Tiny";
  shape.num_layers = 1;
  shape.hidden_size = 16;
  shape.ffn_hidden_size = 8;
  shape.num_attention_heads = 2;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 10;
  setup.model_id = kCustomModelId;
  setup.custom_model = shape;
  setup.sequence_length = 16;
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_recipe = recipe;
  setup.device_id = device;
  return setup;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

constexpr double kTinyFp8Values = 1024 + 384;
constexpr double kTinyGemms = 4;

}  // namespace

TEST_CASE("fp8 recipes: each recipe's weight cache and scaling state, by hand") {
  // Delayed: the FP8 copy and its transpose on Hopper, 5 tensors × (1,024 + 2) × 4 B a GEMM.
  CHECK(ok(tiny(Fp8Recipe::kDelayed, "h100")).bytes[Term::kFp8Weights] ==
        2 * kTinyFp8Values + kTinyGemms * 5 * (1024 + 2) * 4);
  // Tensor-wise current scaling: the same copies, a scale and an amax for each tensor.
  CHECK(ok(tiny(Fp8Recipe::kTensorwise, "h100")).bytes[Term::kFp8Weights] ==
        2 * kTinyFp8Values + kTinyGemms * 5 * 2 * 4);
  CHECK(ok(tiny(Fp8Recipe::kTensorwise, "b200")).bytes[Term::kFp8Weights] ==
        kTinyFp8Values + kTinyGemms * 5 * 2 * 4);
  // MXFP8 on Blackwell: both orientations, each with an E8M0 scale per 32 values; no state.
  CHECK(ok(tiny(Fp8Recipe::kMxfp8, "b200")).bytes[Term::kFp8Weights] ==
        2 * (1 + 1.0 / 32) * kTinyFp8Values);
  // Blockwise, on Hopper as on Blackwell: both orientations, each with an FP32 scale per
  // 128 × 128 block; no state.
  for (const char* device : {"h100", "b200"}) {
    CHECK(ok(tiny(Fp8Recipe::kBlockwise, device)).bytes[Term::kFp8Weights] ==
          2 * (1 + 4.0 / (128 * 128)) * kTinyFp8Values);
  }
}

TEST_CASE("fp8 recipes: MXFP8's and blockwise's saved inputs carry their block scales") {
  // Every saved FP8 input of the llama block keeps its block's scale beside its byte: MXFP8's
  // E8M0 byte per 32 values (on Blackwell), blockwise's FP32 per 128 (on Hopper): 1/32 B a value
  // either way.
  for (const auto& recipe_on :
       {std::pair{Fp8Recipe::kMxfp8, "b200"}, std::pair{Fp8Recipe::kBlockwise, "h100"}}) {
    const Fp8Recipe recipe = recipe_on.first;
    const char* device = recipe_on.second;
    CAPTURE(device);
    TrainingSetup delayed = tiny(Fp8Recipe::kDelayed, device);
    delayed.activation_model = ActivationModel::kLlamaBlock;
    TrainingSetup scaled = delayed;
    scaled.fp8_recipe = recipe;
    double fp8_per_token = 0;
    for (const SavedTensor& tensor :
         llama_block_saved_tensors(delayed.custom_model, delayed, true)) {
      if (tensor.dtype == "FP8") fp8_per_token += tensor.bytes_per_token;
    }
    REQUIRE(fp8_per_token > 0);
    CHECK(ok(scaled).bytes[Term::kActivations] - ok(delayed).bytes[Term::kActivations] ==
          doctest::Approx(16 * fp8_per_token / 32));
    // Korthikanti's sum: the same share of each FP8 input.
    delayed.activation_model = ActivationModel::kKorthikanti;
    scaled.activation_model = ActivationModel::kKorthikanti;
    CHECK(ok(scaled).bytes[Term::kActivations] > ok(delayed).bytes[Term::kActivations]);
  }
  // Blockwise runs from compute capability 9.0: not on Ada.
  TrainingSetup ada = tiny(Fp8Recipe::kBlockwise, "l40s");
  CHECK(estimate_memory(ada).answer.setting == setting_id::kFp8Recipe);
  CHECK(estimate_memory(ada).answer.message ==
        "Blockwise FP8 runs on compute capability 9.0 and up (Hopper and Blackwell); choose the "
        "delayed or tensorwise recipe, or one of those devices.");
}

TEST_CASE("fp8 recipes: the megatron stack holds the FP8 copies at its peak") {
  // Llama 3 8B, t 1: each layer's QKV (6,144 × 4,096), O, fused gate-and-up and down,
  // 218,103,808 values, an FP8 copy and its transpose on an H100; delayed scaling at
  // Megatron-LM's amax history of 1: 5 × (1 + 2) × 4 = 60 B for each of the 4 GEMMs.
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.sequence_length = 4096;
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  setup.precision = Precision::kFp8Mixed;
  const Estimate fp8 = ok(setup);
  const double layer_values = 218103808.0 / 8;
  // (As the allocator holds them: a block may keep its segment's unsplit remainder, under 1 MiB.)
  CHECK(fp8.bytes[Term::kFp8Weights] >= 32 * (2 * layer_values + 4 * 60));
  CHECK(fp8.bytes[Term::kFp8Weights] - 32 * (2 * layer_values + 4 * 60) < 2 * 1048576.0);
  setup.precision = Precision::kBf16Mixed;
  const Estimate bf16 = ok(setup);
  // At the peak beside everything bf16-mixed holds, less what the FP8 saved inputs give back.
  CHECK(fp8.peak_allocated_bytes - bf16.peak_allocated_bytes ==
        doctest::Approx(fp8.bytes[Term::kFp8Weights] + fp8.bytes[Term::kActivations] -
                        bf16.bytes[Term::kActivations])
            .epsilon(0.02));
}

TEST_CASE("fp8 recipes: refused off fp8-mixed, off Transformer Engine, and MXFP8 off Blackwell") {
  TrainingSetup hopper = tiny(Fp8Recipe::kMxfp8, "h100");
  CHECK(estimate_memory(hopper).answer.setting == setting_id::kFp8Recipe);
  CHECK(estimate_memory(hopper).answer.message ==
        "MXFP8 runs on Blackwell's tensor cores (the B200 and B300); choose the delayed or "
        "tensorwise recipe, or one of those devices.");
  TrainingSetup bf16 = tiny(Fp8Recipe::kTensorwise, "h100");
  bf16.precision = Precision::kBf16Mixed;
  CHECK(estimate_memory(bf16).answer.message ==
        "The FP8 recipe is fp8-mixed's: choose that precision, or the delayed recipe.");
  TrainingSetup torchtitan = tiny(Fp8Recipe::kTensorwise, "h100");
  torchtitan.stack = Stack::kTorchtitan;
  CHECK(estimate_memory(torchtitan).answer.setting == setting_id::kFp8Recipe);
}

TEST_CASE("fp8 recipes: a Megatron-LM line's FP8 flags are read, or refused by name") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --fp8-format hybrid";
  const LaunchConfig delayed = read_launch_config(line + " --fp8-amax-history-len 1024", {}, {});
  REQUIRE_MESSAGE(delayed.answer.ok(), delayed.answer.message);
  CHECK(delayed.setup.precision == Precision::kFp8Mixed);
  CHECK(delayed.setup.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(delayed.not_understood.empty());
  CHECK(std::find(delayed.notes.begin(), delayed.notes.end(),
                  "--fp8-amax-history-len 1024: the amax histories are counted at Megatron-LM's "
                  "default, 1 value per FP8 tensor; the 1,023 more, 4 B for each of a GEMM's 5 "
                  "FP8 tensors, hold 20,460 B per FP8 GEMM, left out.") != delayed.notes.end());
  // A history of none is refused rather than said as "-1 more".
  const LaunchConfig empty = read_launch_config(line + " --fp8-amax-history-len 0", {}, {});
  CHECK(empty.answer.setting == "--fp8-amax-history-len");
  CHECK(read_launch_config(line + " --fp8-amax-history-len 1", {}, {}).notes.size() ==
        delayed.notes.size() - 1);
  const LaunchConfig tensorwise = read_launch_config(line + " --fp8-recipe tensorwise", {}, {});
  REQUIRE_MESSAGE(tensorwise.answer.ok(), tensorwise.answer.message);
  CHECK(tensorwise.setup.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(estimate_memory(tensorwise.setup).answer.ok());
  const LaunchConfig blockwise = read_launch_config(line + " --fp8-recipe blockwise", {}, {});
  REQUIRE_MESSAGE(blockwise.answer.ok(), blockwise.answer.message);
  CHECK(blockwise.setup.fp8_recipe == Fp8Recipe::kBlockwise);
  const LaunchConfig custom = read_launch_config(line + " --fp8-recipe custom", {}, {});
  CHECK(custom.answer.setting == "--fp8-recipe");
  CHECK(custom.answer.message ==
        "--fp8-recipe custom is not modelled: delayed (the default), tensorwise, mxfp8 or "
        "blockwise.");
}

TEST_CASE("fp8 param gather: the linear weights are FP8 parameters, with no BF16 copy, by hand") {
  // Under the megatron stack the tiny model's vocabulary is padded to 128 rows: 5,552 parameters,
  // of which the layer's 1,408 FP8 values now hold no BF16 weight; the FP8 term, the parameter
  // itself, is as before. (The terms' bytes are the replay's blocks, rounded: the arithmetic
  // says the count.)
  TrainingSetup setup = tiny(Fp8Recipe::kDelayed, "h100");
  setup.stack = Stack::kMegatron;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 1;
  setup.fp8_param_gather = true;
  std::string weights;
  std::string fp8;
  for (const TermArithmetic& term : explain_estimate(setup)) {
    if (term.term == "weights") weights = term.formula + " | " + term.source;
    if (term.term == "fp8Weights") fp8 = term.formula + " | " + term.source;
  }
  CHECK(weights.rfind("2 B × 4,144 parameters outside the FP8 GEMMs = ", 0) == 0);
  CHECK(weights.find("--fp8-param-gather: the linear layers' weights are FP8 parameters") !=
        std::string::npos);
  CHECK(fp8.rfind("2 × 1 B × 1,408 FP8 GEMM weights (each FP8 weight and its transpose) + 60 B × "
                  "4 GEMMs' scaling state",
                  0) == 0);
  CHECK(fp8.find("the linear weights are FP8 parameters (--fp8-param-gather") != std::string::npos);
  const Estimate parameters = ok(setup);
  setup.fp8_param_gather = false;
  const Estimate copies = ok(setup);
  // (The FP8 term's blocks differ: the parameters' row-wise data is moved into DDP's buffer.)
  for (const Term term : {Term::kGradients, Term::kMasterWeights, Term::kOptimizerStates}) {
    CHECK(parameters.bytes[term] == copies.bytes[term]);
  }
}

TEST_CASE("fp8 param gather: the megatron stack's peak gives back the BF16 weights") {
  // Llama 3 8B at t 8: 32 layers × 218,103,808 / 8 FP8 values, 2 B each no longer held.
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.sequence_length = 4096;
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  setup.layout.data_parallel = 4;
  setup.layout.zero_stage = 1;
  setup.precision = Precision::kFp8Mixed;
  const Estimate copies = ok(setup);
  setup.fp8_param_gather = true;
  const Estimate parameters = ok(setup);
  const double bf16 = 2 * 32 * 218103808.0 / 8;
  CHECK(copies.bytes[Term::kWeights] - parameters.bytes[Term::kWeights] == bf16);
  CHECK(copies.peak_allocated_bytes - parameters.peak_allocated_bytes ==
        doctest::Approx(bf16).epsilon(0.02));
}

TEST_CASE("fp8 param gather: refused off the megatron stack, off fp8-mixed, and off ZeRO 1") {
  TrainingSetup setup = tiny(Fp8Recipe::kDelayed, "h100");
  setup.fp8_param_gather = true;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 1;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8ParamGather);
  setup.stack = Stack::kMegatron;
  CHECK(estimate_memory(setup).answer.ok());
  setup.precision = Precision::kBf16Mixed;
  CHECK(estimate_memory(setup).answer.message ==
        "--fp8-param-gather is Megatron-LM's, under fp8-mixed and its distributed optimiser "
        "(ZeRO 1); choose those, or turn it off.");
  setup.precision = Precision::kFp8Mixed;
  setup.layout.zero_stage = 0;
  CHECK(estimate_memory(setup).answer.message ==
        "Megatron-LM gathers FP8 parameters only through its distributed optimiser: set ZeRO 1 "
        "(--use-distributed-optimizer), or turn --fp8-param-gather off.");
}

TEST_CASE("fp8 param gather: a Megatron-LM line's --fp8-param-gather is read, with MXFP8's rule") {
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --use-distributed-optimizer --fp8-param-gather";
  const LaunchConfig delayed = read_launch_config(line + " --fp8-format hybrid", {}, {});
  REQUIRE_MESSAGE(delayed.answer.ok(), delayed.answer.message);
  CHECK(delayed.setup.fp8_param_gather);
  CHECK(delayed.not_understood.empty());
  CHECK(estimate_memory(delayed.setup).answer.ok());
  // FP8 parameters need FP8 training (transformer_config.py).
  const LaunchConfig bf16 = read_launch_config(line, {}, {});
  CHECK(bf16.answer.setting == "--fp8-param-gather");
  // MXFP8's are gathered through the gradient buffer, which its own flag turns on.
  const std::string mxfp8 = line + " --fp8-format e4m3 --fp8-recipe mxfp8";
  CHECK(read_launch_config(mxfp8, {}, {}).answer.setting == "--fp8-param-gather");
  const LaunchConfig reused =
      read_launch_config(mxfp8 + " --reuse-grad-buf-for-mxfp8-param-ag", {}, {});
  REQUIRE_MESSAGE(reused.answer.ok(), reused.answer.message);
  CHECK(reused.setup.fp8_param_gather);
  CHECK(reused.setup.fp8_recipe == Fp8Recipe::kMxfp8);
  CHECK(
      read_launch_config(line + " --fp8-format hybrid --reuse-grad-buf-for-mxfp8-param-ag", {}, {})
          .answer.setting == "--reuse-grad-buf-for-mxfp8-param-ag");
}

}  // namespace fp8_recipes_test
