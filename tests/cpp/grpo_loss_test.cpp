// TRL's GRPO loss (issue 49: the update's loss over the completions), pinned by hand on the tiny
// shape (h 64, vocabulary 512): the logits of the last C + 1 positions, every sequence's saved
// log-softmax, the entropy's copy and chunk, the in-place divide's backward; under the ideal step
// (its figure) and the hf stack (its replay, allocation by allocation); where it runs, and what a
// rollout engine brings.
#include <doctest/doctest.h>

#include <string>

#include "timeline_points.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace grpo_loss_test {

namespace {

// `sequences` sequences of 128 tokens, the last `completion` of each the completion.
TrainingSetup tiny_grpo(int sequences, int completion) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = completion < 128 ? 128 : completion + 24;
  setup.micro_batch_sequences = sequences;
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  setup.completion_length = completion;
  return setup;
}

// The hf stack with LoRA r 4 on a BF16 base and vLLM colocated: TRL's GRPOTrainer.
TrainingSetup under_trl(TrainingSetup setup) {
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  setup.lora_rank = 4;
  setup.rollout = Rollout::kVllm;
  return setup;
}

double ideal_logits(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate.bytes[Term::kLogits];
}

}  // namespace

TEST_CASE(
    "grpo loss: two sequences of 16 completion tokens peak at the entropy, beside the FP32 logits, "
    "by hand") {
  // B 2, C 16, V 512, r = min(B·C, 128) = 32 rows. Under bf16 autocast accelerate hands the loss
  // FP32 logits of C + 1 positions (4·2·17·512); the entropy reads a contiguous FP32 copy of the
  // completions' (4·2·16·512) in chunks of three r × V FP32 tensors (12·32·512).
  const double peak = 4.0 * 2 * 17 * 512 + 4.0 * 2 * 16 * 512 + 12.0 * 32 * 512;
  // bf16-mixed's FP32 residual stream: autocast casts the output layer's input slice to BF16,
  // saved for the output weight's gradient (2·2·17·64).
  CHECK(ideal_logits(tiny_grpo(2, 16)) == peak + 2.0 * 2 * 17 * 64);
  // TRL's run replays it: LoRA's frozen output layer saves no input.
  CHECK(replayed_loss(under_trl(tiny_grpo(2, 16))) == peak);
  // Full training of BF16 weights: the slice copied for the matmul (B > 1), rounded up to the
  // caching allocator's 512-byte blocks (4,352 → 4,608).
  TrainingSetup full = under_trl(tiny_grpo(2, 16));
  full.lora_rank = 0;
  CHECK(replayed_loss(full) == peak + 4608);
  // "Show the arithmetic" writes the same figure.
  for (const TermArithmetic& term : explain_estimate(tiny_grpo(2, 16))) {
    if (term.term != "logits") continue;
    CHECK(term.formula.find("(C + 1 = 17)") != std::string::npos);
    CHECK(term.formula.find("32 rows (r)") != std::string::npos);
  }
}

TEST_CASE(
    "grpo loss: one long sequence peaks in the backward pass, at the in-place divide's two FP32 "
    "buffers, the slice's clone and its gradient, by hand") {
  // B 1, C 1,000: 8·(C + 1)·V + 8·C·V, above the entropy's 4·1,001·512 + 12·128·512.
  const double peak = 8.0 * 1001 * 512 + 8.0 * 1000 * 512;
  CHECK(replayed_loss(under_trl(tiny_grpo(1, 1000))) == peak);
  // The ideal step, training the output layer, with the cast input slice (2·1,001·64).
  CHECK(ideal_logits(tiny_grpo(1, 1000)) == peak + 2.0 * 1001 * 64);
  // FP32 weights without autocast (the ideal step): the same FP32 logits, the output layer's, and
  // its input not copied for one sequence.
  TrainingSetup fp32 = tiny_grpo(1, 1000);
  fp32.precision = Precision::kFp32;
  CHECK(ideal_logits(fp32) == peak);
}

TEST_CASE("grpo loss: without autocast the logits stay BF16 and take the BF16 branch") {
  TrainingSetup setup = under_trl(tiny_grpo(2, 16));
  setup.no_autocast = true;
  // At the entropy: the BF16 logits (2·2·17·512), every saved BF16 log-softmax and the copy
  // ((2 + 2)·2·16·512), the chunk's three BF16 tensors (6·32·512).
  CHECK(replayed_loss(setup) == 2.0 * 2 * 17 * 512 + 4.0 * 2 * 16 * 512 + 6.0 * 32 * 512);
}

TEST_CASE("grpo loss: the completions' logits alone, far below the whole sequence's loss") {
  TrainingSetup setup = under_trl(tiny_grpo(2, 16));
  setup.rollout = Rollout::kNone;  // a GRPO update whose completions come from elsewhere
  const double grpo = replayed_loss(setup);
  setup.loss = Loss::kFp32Upcast;
  setup.completion_length = kDefaultCompletionLength;
  CHECK(grpo < replayed_loss(setup));
}

TEST_CASE("grpo loss: where it runs, and the rollout engine's trainer runs no other") {
  const auto refused_by = [](const TrainingSetup& setup) {
    return estimate_memory(setup).answer.setting;
  };
  TrainingSetup setup = tiny_grpo(2, 16);
  for (const Stack stack :
       {Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed, Stack::kTorchtune}) {
    CAPTURE(choice_id(stack));
    setup.stack = stack;
    CHECK(refused_by(setup) == setting_id::kLoss);
  }
  setup = tiny_grpo(2, 16);
  setup.layout.tensor_parallel = 2;
  setup.custom_model.num_key_value_heads = 2;
  CHECK(refused_by(setup) == setting_id::kLoss);
  setup = tiny_grpo(2, 16);
  setup.mtp = true;
  setup.model_id = "deepseek-v3";
  CHECK(refused_by(setup) == setting_id::kMtp);
  // The completion is shorter than the sequence, and GRPO's loss's alone.
  setup = under_trl(tiny_grpo(2, 16));
  setup.completion_length = 128;
  CHECK(refused_by(setup) == setting_id::kCompletionLength);
  setup.completion_length = kDefaultCompletionLength;  // 512, TRL's: no room for a prompt
  setup.sequence_length = 512;
  CHECK(refused_by(setup) == setting_id::kCompletionLength);
  setup = tiny_grpo(2, 16);
  setup.loss = Loss::kFp32Upcast;
  CHECK(refused_by(setup) == setting_id::kCompletionLength);
  setup.completion_length = kDefaultCompletionLength;
  REQUIRE(estimate_memory(setup).answer.ok());
  // A rollout engine's trainer computes GRPO's loss: another chosen is refused, and where the
  // reader chose none the stack brings it, said.
  setup = under_trl(tiny_grpo(2, 16));
  setup.loss = Loss::kFp32Upcast;
  CHECK(refused_by(setup) == setting_id::kLoss);
  const auto none_chosen = [](const std::string&) { return false; };
  const std::vector<BroughtSetting> brought = bring_stack_defaults(setup, none_chosen);
  REQUIRE(brought.size() == 1);
  CHECK(brought.front().setting_id == setting_id::kLoss);
  CHECK(brought.front().text == "grpo");
  CHECK(setup.loss == Loss::kGrpo);
  setup.loss = Loss::kFp32Upcast;
  CHECK(bring_stack_defaults(setup, [](const std::string& id) {
          return id == setting_id::kLoss;
        }).empty());
  // With the logits counted as a run computes them, a rollout's run counts GRPO's.
  CHECK(with_logits_as_run(setup).loss == Loss::kGrpo);
}

}  // namespace grpo_loss_test
