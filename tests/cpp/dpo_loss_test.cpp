// TRL's DPO loss (issue 43: DPOConfig's runs), pinned by hand on the tiny shape (h 64, vocabulary
// 512): each pair's chosen and rejected sequences in one batch, the logits of every position, the
// reference's beside them, the entropy's copy and chunk, and the backward pass's stacked rows;
// under the ideal step (its figure) and the hf stack (its replay, allocation by allocation); where
// it runs, and the reference model it brings.
#include <doctest/doctest.h>

#include <string>

#include "timeline_points.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace dpo_loss_test {

namespace {

// `sequences` sequences (half as many pairs) of `length` tokens, with a reference model.
TrainingSetup tiny_dpo(int sequences, int length) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = length;
  setup.micro_batch_sequences = sequences;
  setup.logits = true;
  setup.loss = Loss::kDpo;
  setup.reference_model = true;
  return setup;
}

// The hf stack, full training of BF16 weights: TRL's DPOTrainer.
TrainingSetup under_trl(TrainingSetup setup) {
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  return setup;
}

Estimate estimated(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

}  // namespace

TEST_CASE(
    "dpo loss: a pair of 128 tokens peaks at the entropy, the policy's and the reference's FP32 "
    "logits beside the shifted copy, by hand") {
  // B 2, L 128, V 512, r = min(B·(L − 1), 128) = 128 rows. Under bf16 autocast accelerate hands
  // the loss FP32 logits of every position, the policy's and the reference's (2 × 4·2·128·512);
  // the entropy reads a contiguous FP32 copy of the shifted logits (4·2·127·512) in chunks of
  // three r × V FP32 tensors (12·128·512).
  const double peak = 2 * 4.0 * 2 * 128 * 512 + 4.0 * 2 * 127 * 512 + 12.0 * 128 * 512;
  CHECK(replayed_loss(under_trl(tiny_dpo(2, 128))) == peak);
  CHECK(estimated(under_trl(tiny_dpo(2, 128))).bytes[Term::kLogits] == peak);
  // "Show the arithmetic" writes the same figure.
  bool written = false;
  for (const TermArithmetic& term : explain_estimate(under_trl(tiny_dpo(2, 128)))) {
    if (term.term != "logits") continue;
    written = true;
    CHECK(term.formula.find("the policy's and the reference's") != std::string::npos);
    CHECK(term.formula.find("(L − 1 = 127)") != std::string::npos);
    CHECK(term.formula.find("128 rows (r)") != std::string::npos);
  }
  CHECK(written);
  // The ideal step, the reference's log-probabilities precomputed (no reference model there):
  // the policy's logits alone at the entropy, and bf16-mixed's FP32 residual stream, whose cast
  // to BF16 autocast saves for the output weight's gradient (2·2·128·64).
  TrainingSetup ideal = tiny_dpo(2, 128);
  ideal.reference_model = false;
  CHECK(estimated(ideal).bytes[Term::kLogits] ==
        4.0 * 2 * 128 * 512 + 4.0 * 2 * 127 * 512 + 12.0 * 128 * 512 + 2.0 * 2 * 128 * 64);
}

TEST_CASE(
    "dpo loss: with the reference's log-probabilities precomputed, long sequences peak in the "
    "backward pass, by hand") {
  // B 4, L 512: the logits (4·4·512·512) beside the shifted logits' stacked rows and the gather's
  // gradient (8·4·511·512), above the entropy's copy and chunk (4·4·511·512 + 12·128·512).
  TrainingSetup setup = tiny_dpo(4, 512);
  setup.reference_model = false;
  setup.precision = Precision::kBf16;
  CHECK(estimated(setup).bytes[Term::kLogits] == 4.0 * 4 * 512 * 512 + 8.0 * 4 * 511 * 512);
  // TRL's run replays it (each buffer a block split from the allocator's 20 MiB segments, its
  // bytes).
  setup.stack = Stack::kHf;
  CHECK(replayed_loss(setup) == 4.0 * 4 * 512 * 512 + 8.0 * 4 * 511 * 512);
}

TEST_CASE("dpo loss: without autocast the logits stay BF16 and every log-softmax is saved") {
  TrainingSetup setup = under_trl(tiny_dpo(2, 128));
  setup.no_autocast = true;
  // At the entropy: the policy's and the reference's BF16 logits (2 × 2·2·128·512), every saved
  // BF16 log-softmax and the copy ((2 + 2)·2·127·512), the chunk's three BF16 tensors (6·128·512).
  const double peak = 2 * 2.0 * 2 * 128 * 512 + 4.0 * 2 * 127 * 512 + 6.0 * 128 * 512;
  CHECK(replayed_loss(setup) == peak);
  CHECK(estimated(setup).bytes[Term::kLogits] == peak);
}

TEST_CASE(
    "dpo loss: the reference model is a second copy of the weights under full training, none "
    "under LoRA, and its forward pass runs inside the loss") {
  const auto reference_bytes = [](const Estimate& estimate) {
    for (const StackTerm& term : estimate.stack_terms) {
      if (term.id == "reference-model") return term.bytes;
    }
    return 0.0;
  };
  const Estimate full = estimated(under_trl(tiny_dpo(2, 128)));
  CHECK(reference_bytes(full) > 0);
  CHECK(reference_bytes(full) == doctest::Approx(full.bytes[Term::kWeights]).epsilon(0.01));
  TrainingSetup lora = under_trl(tiny_dpo(2, 128));
  lora.lora_rank = 4;
  CHECK(reference_bytes(estimated(lora)) == 0);
  // Precomputed log-probabilities: no reference model, and a lower peak.
  TrainingSetup precomputed = under_trl(tiny_dpo(2, 128));
  precomputed.reference_model = false;
  CHECK(reference_bytes(estimated(precomputed)) == 0);
  CHECK(estimated(precomputed).peak_allocated_bytes < full.peak_allocated_bytes);
  // The reference's pass runs inside the loss alone: no log-probability phase before the update,
  // as GRPO's reference has.
  for (const TimelinePoint& point : memory_timeline(under_trl(tiny_dpo(2, 128)))) {
    CHECK(point.phase != "log-probabilities");
  }
}

TEST_CASE("dpo loss: where it runs, each pair whole, and the reference model it brings, said") {
  const auto refused_by = [](const TrainingSetup& setup) {
    return estimate_memory(setup).answer.setting;
  };
  TrainingSetup setup = tiny_dpo(2, 128);
  setup.reference_model = false;
  for (const Stack stack :
       {Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed, Stack::kTorchtune}) {
    CAPTURE(choice_id(stack));
    setup.stack = stack;
    CHECK(refused_by(setup) == setting_id::kLoss);
  }
  setup = under_trl(tiny_dpo(2, 128));
  setup.layout.tensor_parallel = 2;
  CHECK(refused_by(setup) == setting_id::kLoss);
  setup = under_trl(tiny_dpo(2, 128));
  setup.model_id = "deepseek-v3";
  setup.mtp = true;
  CHECK(refused_by(setup) == setting_id::kMtp);
  setup.model_id = "qwen3-30b-a3b";
  setup.mtp = false;
  CHECK(refused_by(setup) == setting_id::kLoss);  // a mixture: its auxiliary loss
  CHECK(estimate_memory(setup).answer.message.find("load-balancing loss") != std::string::npos);
  // The workshop's view moves the micro-batch a pair at a time, its curve's points too.
  const WorkshopView view = workshop_view(under_trl(tiny_dpo(2, 128)), 16);
  REQUIRE(view.estimate.answer.ok());
  CHECK(view.micro_batch_step == 2);
  REQUIRE(view.activation_curve.size() == 8);
  for (const ActivationPoint& point : view.activation_curve) {
    CHECK(point.micro_batch_sequences % 2 == 0);
  }
  CHECK(workshop_view(TrainingSetup{}, 16).micro_batch_step == 1);
  setup = under_trl(tiny_dpo(3, 128));  // a pair split across micro-batches
  CHECK(refused_by(setup) == setting_id::kLoss);
  CHECK(estimate_memory(setup).answer.message.find("even number") != std::string::npos);
  setup = under_trl(tiny_dpo(2, 128));
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;  // accelerate's FSDP: the reference prepared apart
  CHECK(refused_by(setup) == setting_id::kLoss);
  setup.reference_model = false;  // precomputed: nothing prepared apart
  CHECK(estimate_memory(setup).answer.ok());
  setup.reference_model = true;
  setup.layout.zero_stage = 0;  // DDP
  CHECK(estimate_memory(setup).answer.ok());
  // The reference model is DPO's by default: brought where the reader chose none, said; and taken
  // away, said, where the loss changes to one that runs none.
  setup = under_trl(tiny_dpo(2, 128));
  setup.reference_model = false;
  const auto none_chosen = [](const std::string&) { return false; };
  std::vector<BroughtSetting> brought = bring_stack_defaults(setup, none_chosen);
  REQUIRE(brought.size() == 1);
  CHECK(brought.front().setting_id == setting_id::kReferenceModel);
  CHECK(brought.front().by == "TRL's DPOTrainer (f2cd5771)");
  CHECK(setup.reference_model);
  setup.loss = Loss::kFp32Upcast;
  CHECK(refused_by(setup) == setting_id::kReferenceModel);
  brought =
      bring_stack_defaults(setup, [](const std::string& id) { return id == setting_id::kLoss; });
  REQUIRE(brought.size() == 1);
  CHECK(brought.front().setting_id == setting_id::kReferenceModel);
  CHECK_FALSE(setup.reference_model);
  // Another stack takes it away too, and a stack that refuses DPO brings none.
  setup.loss = Loss::kDpo;
  setup.reference_model = true;
  setup.stack = Stack::kIdeal;
  CHECK(bring_stack_defaults(setup, none_chosen).size() == 1);
  CHECK_FALSE(setup.reference_model);
  setup.stack = Stack::kTorchtune;
  static_cast<void>(bring_stack_defaults(setup, none_chosen));
  CHECK_FALSE(setup.reference_model);
  // Chosen, it stays: precompute_ref_log_probs under DPO.
  setup.stack = Stack::kHf;
  CHECK(bring_stack_defaults(setup, [](const std::string& id) {
          return id == setting_id::kReferenceModel;
        }).empty());
  CHECK(estimate_memory(setup).answer.ok());
}

}  // namespace dpo_loss_test

namespace dpo_loss_test {

TEST_CASE(
    "dpo loss: the reference's layers run inside the loss, beside the policy's held tensors") {
  // A vocabulary of 64 and long sequences: the reference's forward pass, one layer's work at a
  // time beside everything the policy's step holds, outweighs its logits. Under LoRA the
  // reference has no weights of its own, so the whole rise is its pass.
  TrainingSetup setup = tiny_dpo(2, 4096);
  setup.custom_model.vocab_size = 64;
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  setup.lora_rank = 4;
  setup.recompute = Recompute::kNone;
  const Estimate with = estimate_memory(setup);
  setup.reference_model = false;
  const Estimate without = estimate_memory(setup);
  REQUIRE(with.answer.ok());
  REQUIRE(without.answer.ok());
  // The reference's FP32 logits are 4·2·4,096·64 B (2.1 MB); the peak rises by some 17.8 MB,
  // the reference's layer at work beside the policy's saved activations (69.2 MB).
  const double reference_logits = 4.0 * 2 * 4096 * 64;
  CHECK(with.peak_allocated_bytes - without.peak_allocated_bytes > 4 * reference_logits);
}

}  // namespace dpo_loss_test
