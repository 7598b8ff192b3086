// The losses that never hold the logits whole (issue 30, item 2): torchtune's chunked loss and
// Liger's fused linear cross-entropy, each pinned by hand on the tiny shape (128 tokens, h 64,
// vocabulary 512: 65,536 logits), and where each may run.
#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace {

TrainingSetup tiny(Loss loss) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.logits = true;
  setup.loss = loss;
  return setup;
}

double logits_bytes(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  return estimate.bytes[Term::kLogits];
}

}  // namespace

TEST_CASE("loss: the chunked loss holds 6 + 4/n bytes a logit, 12 as one chunk") {
  const double logits = 128.0 * 512;
  TrainingSetup setup = tiny(Loss::kChunked);
  CHECK(logits_bytes(setup) == 6.5 * logits);  // n 8: the BF16 chunks, the log-softmax, 1/8 upcast
  setup.loss_chunks = 2;
  CHECK(logits_bytes(setup) == 8 * logits);
  setup.loss_chunks = 1;  // the unfused loss: its backward pass's 12
  CHECK(logits_bytes(setup) == 12 * logits);
  CHECK(logits_bytes(tiny(Loss::kFp32Upcast)) == 12 * logits);
}

TEST_CASE("loss: Liger's fused linear loss holds the hidden state's gradient and one chunk") {
  // ⌈512 / 64⌉ = 8; ⌈128 / 8⌉ = 16 tokens a chunk (a power of two already): 2·128·64 for
  // grad_input, 2·16·512 for the chunk's logits, 4·128 for loss_1d.
  CHECK(logits_bytes(tiny(Loss::kFusedLinear)) == 2 * 128 * 64 + 2 * 16 * 512 + 4 * 128);
  CHECK(fused_linear_chunk_tokens(100, 512, 64) == 16);  // ⌈100/8⌉ = 13 → 16
  CHECK(fused_linear_chunk_tokens(4, 512, 64) == 1);
  CHECK(fused_linear_chunk_tokens(128, 64, 64) == 128);  // never more than the tokens
}

TEST_CASE("loss: both run on a whole output layer, and under the stacks that run any loss") {
  for (const Loss loss : {Loss::kChunked, Loss::kFusedLinear}) {
    CAPTURE(choice_id(loss));
    TrainingSetup setup = tiny(loss);
    setup.layout.tensor_parallel = 2;
    setup.custom_model.num_key_value_heads = 2;
    CHECK(estimate_memory(setup).answer.setting == setting_id::kLoss);
    setup = tiny(loss);
    setup.layout.data_parallel = 2;
    setup.layout.zero_stage = 3;
    setup.stack = Stack::kDeepSpeed;
    const Estimate deepspeed = estimate_memory(setup);
    REQUIRE(deepspeed.answer.ok());
    CHECK(deepspeed.peak_allocated_bytes > 0);
    setup.stack = Stack::kTorchtitan;
    CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
    setup.stack = Stack::kMegatron;
    setup.layout.zero_stage = 1;
    CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  }
  // The chunk count is the chunked loss's alone.
  TrainingSetup setup = tiny(Loss::kVocabParallel);
  setup.loss_chunks = 4;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kLossChunks);
}
