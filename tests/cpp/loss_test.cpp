// The losses that never hold the logits whole (issue 30, item 2): torchtune's chunked loss and
// Liger's fused linear cross-entropy, each pinned by hand on the tiny shape (128 tokens, h 64,
// vocabulary 512: 65,536 logits), and where each may run.
#include <doctest/doctest.h>

#include <string>

#include "trainmem/allocator.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace loss_test {

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

// torchtitan's chunked wrapper on 16 sequences of 128 tokens (8 chunks of 256) over a
// 65,536-token vocabulary, so that a chunk's loss is the step's peak: d 2 × t `t` (sequence
// parallel), FSDP2, full recomputation.
TrainingSetup torchtitan_chunks(int t) {
  TrainingSetup setup = tiny(Loss::kChunkedWrapper);
  setup.custom_model.vocab_size = 65536;
  setup.micro_batch_sequences = 16;
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 2;
  setup.layout.tensor_parallel = t;
  setup.layout.sequence_parallel = t > 1;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kFull;
  return setup;
}

// "Show the arithmetic"'s formula for the logits and the loss.
std::string logits_formula(const TrainingSetup& setup) {
  for (const TermArithmetic& term : explain_estimate(setup)) {
    if (term.term == "logits") return term.formula;
  }
  return "";
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

TEST_CASE(
    "loss: TRL's chunked NLL holds the sorted hidden states, a chunk and the weight's casts") {
  // 128 tokens, one chunk of them (TRL's 256 at most); V·h = 32,768 weights; c·V = 65,536 logits.
  const double weight = 512.0 * 64;
  const double chunk = 128.0 * 512;
  const double sorted = 2.0 * 128 * 64;
  // Full training in bf16-mixed under the ideal step, a BF16 weight. The arms: w.float()'s FP32
  // copy and its BF16 cast at the matmul (6 + 2 a logit); the forward's log-softmax, exp and
  // entropy (14 a logit); the backward's saved cast and log-softmax gradients (2 + 16); the
  // weight's gradient cast back (6 + 10). Here, with few weights, the backward's log-softmax.
  CHECK(logits_bytes(tiny(Loss::kChunkedNll)) == sorted + 2 * weight + 16 * chunk);
  // At 16 tokens the weight's gradient (full training), or the matmul's copies (LoRA's frozen
  // weight: the gradient arm is the saved cast alone).
  TrainingSetup short_run = tiny(Loss::kChunkedNll);
  short_run.sequence_length = 16;
  CHECK(logits_bytes(short_run) == 2.0 * 16 * 64 + 6 * weight + 10 * 16 * 512);
  short_run.lora_rank = 4;
  CHECK(logits_bytes(short_run) == 2.0 * 16 * 64 + 6 * weight + 2 * 16 * 512);
  // Each output weight's copies, by how it is held and whether it trains.
  const ChunkedNllWeights fp32_trained = chunked_nll_weights(true, true);
  CHECK(fp32_trained.matmul == 2);  // the weight itself, cast once, and cached to the forward's end
  CHECK(fp32_trained.held == 2);
  CHECK(fp32_trained.gradient == 6);
  const ChunkedNllWeights bf16_frozen = chunked_nll_weights(false, false);
  CHECK(bf16_frozen.matmul == 6);  // LoRA's BF16 base: the FP32 copy and its cast, not cached
  CHECK(bf16_frozen.held == 0);
  CHECK(bf16_frozen.gradient == bf16_frozen.saved);
  CHECK(chunked_nll_weights(true, false).matmul == 2);  // QLoRA's upcast output layer
  // Under the hf stack it is replayed, and holds less than the whole logits' loss does.
  TrainingSetup lora = tiny(Loss::kChunkedNll);
  lora.lora_rank = 4;
  lora.stack = Stack::kHf;
  lora.precision = Precision::kBf16;
  lora.sequence_length = 2048;
  const Estimate chunked = estimate_memory(lora);
  REQUIRE_MESSAGE(chunked.answer.ok(), chunked.answer.message);
  lora.loss = Loss::kFp32Upcast;
  CHECK(chunked.peak_allocated_bytes < estimate_memory(lora).peak_allocated_bytes);
}

TEST_CASE("loss: Cut Cross-Entropy holds the hidden states' gradient and 12 B a token") {
  // 2·128·64 for grad_e; the FP32 log-sum-exp and int64 index of 128 tokens; the FP32 average
  // logit and int32 order of 512 entries.
  CHECK(logits_bytes(tiny(Loss::kCutCrossEntropy)) == 2 * 128 * 64 + 12 * 128 + 8 * 512);
  TrainingSetup lora = tiny(Loss::kCutCrossEntropy);
  lora.lora_rank = 4;
  lora.stack = Stack::kHf;
  lora.precision = Precision::kBf16;
  const Estimate cut = estimate_memory(lora);
  REQUIRE_MESSAGE(cut.answer.ok(), cut.answer.message);
  lora.loss = Loss::kFp32Upcast;
  CHECK(cut.peak_allocated_bytes < estimate_memory(lora).peak_allocated_bytes);
}

TEST_CASE("loss: both run on a whole output layer, and under the stacks that run any loss") {
  for (const Loss loss :
       {Loss::kChunked, Loss::kFusedLinear, Loss::kChunkedNll, Loss::kCutCrossEntropy}) {
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

TEST_CASE(
    "loss: torchtitan's chunked wrapper holds an FP32 [T, h] buffer and one chunk, 14 B a "
    "logit") {
  // 128 tokens in 8 chunks of 16: the buffer 4·128·64 beside the trainer's pred, the final norm's
  // BF16 output (2·128·64), whose chunks the loop reads; and a chunk's 16 × 512 logits at its
  // backward peak (BF16 logits, the saved log-softmax, its gradient, the logits' FP32 gradient).
  const double held = 4 * 128 * 64 + 2 * 128 * 64;
  TrainingSetup setup = tiny(Loss::kChunkedWrapper);
  CHECK(logits_bytes(setup) == held + 14 * 16 * 512);
  // As one chunk, the whole logits at 14 B: the BF16 ones are held by the loop, where the unchunked
  // loss frees them first (12).
  setup.loss_chunks = 1;
  CHECK(logits_bytes(setup) == held + 14 * 128 * 512);
  // With 128 chunks a chunk's logits weigh less than the buffer's BF16 cast at the loop's end.
  setup.loss_chunks = 128;
  CHECK(logits_bytes(setup) == held + 2 * 128 * 64 + 2 * 1 * 512);
  // The chunks are equal: 128 tokens do not split into 3.
  setup.loss_chunks = 3;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kLossChunks);
}

TEST_CASE("loss: the chunked wrapper runs where torchtitan runs it, and is refused elsewhere") {
  TrainingSetup setup = tiny(Loss::kChunkedWrapper);
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  for (const Stack stack : {Stack::kDeepSpeed, Stack::kMegatron, Stack::kHf, Stack::kTorchtune}) {
    CAPTURE(choice_id(stack));
    setup.stack = stack;
    const Answer refused = estimate_memory(setup).answer;
    CHECK(!refused.ok());
    CHECK((refused.setting == setting_id::kLoss || refused.setting == setting_id::kStack));
  }
  setup.stack = Stack::kTorchtitan;
  REQUIRE(estimate_memory(setup).answer.ok());
  // Under a pipeline: not modelled.
  TrainingSetup pipelined = setup;
  pipelined.layout.pipeline_parallel = 2;
  CHECK(estimate_memory(pipelined).answer.setting == setting_id::kLoss);
  TrainingSetup compiled = setup;
  compiled.recompute = Recompute::kFull;
  compiled.compile = Compile::kBlocks;
  CHECK(estimate_memory(compiled).answer.ok());
  // The chunk count is its too.
  TrainingSetup chunks = setup;
  CHECK(apply_setting(chunks, setting_id::kLossChunks, "4").ok());
  CHECK(estimate_memory(chunks).answer.ok());
}

TEST_CASE(
    "loss: torchtitan's chunked wrapper with its cross-entropy compiled holds a chunk's BF16 "
    "logits and gradient, and 8 B a token of it") {
  // 16 sequences of 128 tokens in 8 chunks of 256 over a 65,536-token vocabulary (h 64), so that a
  // chunk's loss is the step's peak, under torchtitan's replay. Eager, a chunk holds its BF16
  // logits, the saved FP32 log-softmax, its gradient and the logits' FP32 gradient: 14 B a logit.
  // The compiled cross_entropy_loss on one chunk, as on the whole logits (options.hpp,
  // kCompiledLossBytesPerTokenPerVocab): the BF16 logits kept and their BF16 gradient, 4 B a
  // logit, and each of the chunk's 256 tokens' FP32 max and log-sum-exp, 2,048 B, freed with the
  // loss's backward. So a compiled chunk's peak is the output layer's backward, where its BF16
  // logits and gradient stand beside the weight's unsharded BF16 gradient (2·V·h) and the chunk's
  // hidden-state gradient (2·256·h): 10 B a logit less than eager, less those two.
  TrainingSetup setup = torchtitan_chunks(1);
  TrainingSetup eager = setup;
  setup.compile = Compile::kBlocksAndLoss;
  const double chunk = 256.0 * 65536;
  const double eager_peak = estimate_memory(eager).peak_allocated_bytes;
  const Estimate compiled = estimate_memory(setup);
  REQUIRE(compiled.answer.ok());
  CHECK(eager_peak - compiled.peak_allocated_bytes ==
        (14 - 4) * chunk - 2.0 * 65536 * 64 - 2.0 * 256 * 64);
  // "Show the arithmetic": the FP32 buffer, then the compiled loss on one chunk.
  CHECK(logits_formula(setup).find(
            "4 B × 2,048 tokens × 64 h + 2 B × 2,048 tokens × 64 h + 4 B × 2,048 tokens / 8 "
            "chunks × 65,536 vocabulary + 2 B × 2,048 tokens / 8 chunks × 64 h") == 0);
  // The replay's loss at that peak is the same: the buffer, the chunk's logits and gradient, and
  // its hidden-state gradient.
  CHECK(compiled.bytes[Term::kLogits] == 6.0 * 2048 * 64 + 4 * chunk + 2.0 * 256 * 64);
  // The loss alone compiled (torchtitan's DeepSeek-V3 configs' compile.components ["loss"]): the
  // same loss; the blocks eager under full recomputation save their input alone, as compiled.
  setup.compile = Compile::kLoss;
  CHECK(estimate_memory(setup).peak_allocated_bytes == compiled.peak_allocated_bytes);
}

TEST_CASE(
    "loss: torchtitan's chunked wrapper under tensor parallelism runs its loss-parallel "
    "cross-entropy on each chunk's V/t logits, 18 B a logit") {
  // 16 sequences of 128 tokens in 8 chunks of 256 over a 65,536-token vocabulary, t 2 with
  // sequence parallelism: the hidden states all-gathered (the root norm's Replicate), so the FP32
  // buffer is the 2,048 tokens' whole; each chunk's 256 × 32,768 local logits through
  // _LossParallelCrossEntropy: at its backward, the BF16 logits the loop holds, the saved
  // log-softmax, zeros_like of it, its exp and their sum (2 + 4 × 4). The chunk's loss is the
  // step's peak, in the replay as in the arithmetic.
  TrainingSetup setup = torchtitan_chunks(2);
  const double expected = 6.0 * 2048 * 64 + 18.0 * 256 * 32768;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(estimate.bytes[Term::kLogits] == expected);
  // The output layer over t: its 32,768 rows gathered and their gradient summed in FP32 over the
  // chunks; the root keeps the embedding's 32,768 rows and the final norm.
  const auto term = [&](const char* id) {
    for (const StackTerm& each : estimate.stack_terms) {
      if (each.id == id) return each.bytes;
    }
    return -1.0;
  };
  CHECK(term("fsdp-accumulated-gradients") == 4.0 * 32768 * 64);
  CHECK(term("fsdp-root") == allocator_block_bytes(2 * (32768.0 * 64 + 64)));
  CHECK(logits_formula(setup).find(
            "4 B × 2,048 tokens × 64 h + 2 B × 2,048 tokens × 64 h + 18 B × 2,048 tokens / 8 "
            "chunks × 65,536 vocabulary / 2") == 0);
  // Its cross-entropy compiled under tensor parallelism is not derived: refused.
  setup.compile = Compile::kBlocksAndLoss;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kCompile);
}

TEST_CASE("loss: the loss compiled alone is torchtitan's, and leaves the blocks eager") {
  TrainingSetup setup = tiny(Loss::kFp32Upcast);
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.compile = Compile::kLoss;
  setup.stack = Stack::kTorchtune;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kCompile);
  setup.stack = Stack::kTorchtitan;
  REQUIRE(estimate_memory(setup).answer.ok());
  // The whole loss compiled: 4 B a logit and 8 a token, as under blocks-and-loss.
  CHECK(logits_bytes(setup) == 4.0 * 128 * 512 + 8 * 128);
  // torchao's MXFP8 casts need compiled blocks: the loss alone does not compile them.
  CHECK(!blocks_compiled(Compile::kLoss));
  CHECK(loss_compiled(Compile::kLoss));
  CHECK(blocks_compiled(Compile::kBlocksAndLoss));
  CHECK(!loss_compiled(Compile::kBlocks));
}

}  // namespace loss_test
