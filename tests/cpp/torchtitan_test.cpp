// torchtitan's tensor parallelism as DTensor runs it (issue 30's item 3): sequence parallelism on,
// the projections' all-gathered inputs saved whole, the loss under loss_parallel, the output
// layer's gathered input; what it does not run refused by name; and the fewest-devices search
// trying it.
#include <doctest/doctest.h>

#include <string>

#include "estimate/calculation.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "whole_terms.hpp"

using namespace trainmem;

namespace torchtitan_test {

namespace {

constexpr double kTokens = 128, kH = 64, kLayers = 2;

// The harness's tiny shape (h 64, a 4, k 2, d 16, f 224, 2 layers, 128 tokens) under `stack` on
// d 2 × t 2 with sequence parallelism.
TrainingSetup tiny_tp(Stack stack, ActivationModel model) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(static_cast<int>(kLayers));
  setup.custom_model.ffn_hidden_size = 256;  // t 2 divides it
  setup.sequence_length = static_cast<int>(kTokens);
  setup.activation_model = model;
  setup.stack = stack;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = stack == Stack::kMegatron ? 1 : 3;
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  return setup;
}

// The same under FSDP alone: d 2, tp 1, the llama-block model, with `recompute`.
TrainingSetup tiny_fsdp(Recompute recompute) {
  TrainingSetup setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.layout.tensor_parallel = 1;
  setup.layout.sequence_parallel = false;
  setup.recompute = recompute;
  return setup;
}

Estimate estimated(const TrainingSetup& setup) {
  Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

using fixtures::whole;

}  // namespace

TEST_CASE("torchtitan tp: the projections' all-gathered inputs are saved whole on every rank") {
  // The Llama block: Q, K and V's input and gate and up's, h each in BF16, whole rather than over
  // t = 2 as Megatron-LM's sequence parallelism saves them; and, uncompiled, SiLU's output (f/t
  // in BF16), which torchtitan's FeedForward saves apart from the product.
  const double torchtitan =
      whole(tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock))[Term::kActivations];
  const double megatron =
      whole(tiny_tp(Stack::kMegatron, ActivationModel::kLlamaBlock))[Term::kActivations];
  constexpr double kF = 256;
  CHECK(torchtitan - megatron == kLayers * kTokens * (2 * (2 * kH) * (1 - 1.0 / 2) + 2 * kF / 2));
  // Korthikanti's: 34/t of which the two inputs' 4 stay whole: 34/2 + 4·(1 - 1/2) = 19.
  CHECK(whole(tiny_tp(Stack::kTorchtitan, ActivationModel::kKorthikanti))[Term::kActivations] ==
        kLayers * kTokens * kH * 19);
  CHECK(whole(tiny_tp(Stack::kMegatron, ActivationModel::kKorthikanti))[Term::kActivations] ==
        kLayers * kTokens * kH * 17);
  // At t 1 nothing is gathered: the two stacks' activations differ by SiLU's output alone.
  TrainingSetup one = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  one.layout.tensor_parallel = 1;
  one.layout.sequence_parallel = false;
  TrainingSetup megatron_one = tiny_tp(Stack::kMegatron, ActivationModel::kLlamaBlock);
  megatron_one.layout.tensor_parallel = 1;
  megatron_one.layout.sequence_parallel = false;
  CHECK(whole(one)[Term::kActivations] - whole(megatron_one)[Term::kActivations] ==
        kLayers * kTokens * 2 * kF);
}

TEST_CASE("torchtitan tp: loss_parallel holds 16 bytes a logit, beside the gathered head input") {
  TrainingSetup setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.custom_model.vocab_size = 64000;  // the loss is the step's peak
  const double logits = kTokens * 64000 / 2;
  CHECK(whole(setup)[Term::kLogits] == 16 * logits + 2 * kTokens * kH);
  // The replay holds them at the loss's backward peak, the step's: the saved log-softmax,
  // zeros_like, exp and their sum, and the output layer's all-gathered input.
  CHECK(estimated(setup).bytes[Term::kLogits] >= 16 * logits + 2 * kTokens * kH);
  // At t 1, plain cross_entropy: 12 bytes a logit, no gathered input.
  setup.layout.tensor_parallel = 1;
  setup.layout.sequence_parallel = false;
  CHECK(whole(setup)[Term::kLogits] == 12 * kTokens * 64000);
}

TEST_CASE("torchtitan tp: what it does not run is refused, naming the setting") {
  TrainingSetup setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.layout.sequence_parallel = false;
  Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kSequenceParallel);
  CHECK(refused.message ==
        "torchtitan runs tensor parallelism with sequence parallelism always on (its norms are "
        "SequenceParallel, apply_tp); turn sequence parallelism on, or choose the megatron "
        "stack.");
  setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.recompute = Recompute::kSelectiveOp;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRecompute);
  // A mixture under tensor parallelism: its experts split over t without expert parallelism
  // (torchtitan_moe_test.cpp counts it), so etp is t, never another.
  setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.custom_model.num_experts = 4;
  setup.custom_model.num_experts_per_token = 2;
  CHECK(estimate_memory(setup).answer.ok());
  setup.layout.expert_tensor_parallel = 1;
  refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kExpertTensorParallel);
  CHECK(refused.message.find("expert_param_placement_dense") != std::string::npos);
}

TEST_CASE("torchtitan tp: the fewest-devices search tries tensor parallelism under the stack") {
  TrainingSetup setup;
  setup.model_id = "llama3-405b";
  setup.stack = Stack::kTorchtitan;
  setup.layout.zero_stage = 3;
  setup.layout.data_parallel = 2;
  setup.logits = false;
  const FitSearch search = find_fewest_devices(setup, 4);
  REQUIRE(search.answer.ok());
  REQUIRE(!search.layouts.empty());
  // Without tensor parallelism it took 504 H100s; with it, as Megatron-LM's does, far fewer.
  CHECK(search.fewest_devices < 504);
  CHECK(search.layouts[0].setup.layout.tensor_parallel > 1);
  CHECK(search.layouts[0].setup.layout.sequence_parallel);
}

TEST_CASE(
    "compile: compiled blocks under full recomputation save what eager ones save, and rebuild "
    "no SiLU output apart") {
  TrainingSetup setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.recompute = Recompute::kFull;
  const Estimate eager = estimated(setup);
  setup.compile = Compile::kBlocks;
  const Estimate compiled = estimated(setup);
  // The block rebuilt in the backward pass: eager, its FeedForward saves SiLU's output apart
  // (128 tokens × 2 B × f/t = 128); compiled, the fused SwiGLU does not.
  CHECK(eager.peak_allocated_bytes - compiled.peak_allocated_bytes == kTokens * 2 * 256 / 2);
  CHECK(compiled.peak_reserved_bytes <= eager.peak_reserved_bytes);
}

TEST_CASE(
    "compile: under per-op recomputation a compiled block saves eager's tensors but w2's "
    "output") {
  // The tiny shape on d 2, tp 1: eager keeps 2h (input) + 2q + 2kv + 2q + 4a + 2f + 2h (w2) a
  // token; compiled, the partitioner drops w2's output, which the backward graph never reads.
  TrainingSetup setup = tiny_fsdp(Recompute::kSelectiveOp);
  const double q = 4 * 16, kv = 2 * 16, a = 4, f = 256;
  const double eager_per_token = 2 * kH + 2 * q + 2 * kv + 2 * q + 4 * a + 2 * f + 2 * kH;
  // Beside them one block's rebuilt tensors in its backward pass, alike either way: what the
  // layer saves but what the policy keeps (w2's output is no tensor the layer saves).
  const double eager = whole(setup)[Term::kActivations];
  const double rebuilt = eager - kLayers * kTokens * eager_per_token;
  CHECK(rebuilt > 0);
  setup.compile = Compile::kBlocks;
  const std::vector<SavedTensor> compiled_list =
      selective_op_saved_tensors(setup.custom_model, setup);
  for (const SavedTensor& tensor : compiled_list) CHECK(tensor.id != "mlp-output");
  // The rebuilt block, compiled, makes no SiLU output apart from the product (2f a token).
  CHECK(whole(setup)[Term::kActivations] ==
        kLayers * kTokens * (eager_per_token - 2 * kH) + rebuilt - kTokens * 2 * f);
  // At 65,536 tokens the 2 × 65,536 × 2h it does not keep is 16 MiB off the replayed peak, and
  // the rebuilt block's SiLU output 32 MiB more.
  setup.sequence_length = 65536;
  const double compiled_peak = estimated(setup).peak_allocated_bytes;
  setup.compile = Compile::kOff;
  CHECK(estimated(setup).peak_allocated_bytes - compiled_peak ==
        2 * 65536 * 2 * kH + 65536 * 2 * f);
  setup.sequence_length = static_cast<int>(kTokens);
  setup.compile = Compile::kBlocks;
  // torchao's Float8 block: its matmul is aten.mm on a tensor subclass, which the policy tags as
  // BF16's, and its casts are recomputed: the same saved tensors compiled.
  const double compiled_bf16 = whole(setup)[Term::kActivations];
  setup.precision = Precision::kFp8Mixed;
  CHECK(whole(setup)[Term::kActivations] == compiled_bf16);
  // Without recomputation what the partitioner saves is not derived: refused by the setting.
  setup.recompute = Recompute::kNone;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kCompile);
  // The loss compiled alone leaves the blocks eager: eager's saved tensors, under any
  // recomputation.
  TrainingSetup loss_alone = tiny_fsdp(Recompute::kSelectiveOp);
  loss_alone.compile = Compile::kLoss;
  CHECK(whole(loss_alone)[Term::kActivations] == eager);
  loss_alone.recompute = Recompute::kNone;
  CHECK(estimate_memory(loss_alone).answer.ok());
}

TEST_CASE("torchao's MXFP8: BF16's saved tensors, and its backward pass's casts beside a block") {
  // Compiled blocks under per-op recomputation, as the published MXFP8 runs ran.
  TrainingSetup setup = tiny_fsdp(Recompute::kSelectiveOp);
  setup.device_id = "b200";
  setup.compile = Compile::kBlocks;
  const double bf16_activations = whole(setup)[Term::kActivations];
  const double bf16_peak = estimated(setup).peak_allocated_bytes;
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_recipe = Fp8Recipe::kMxfp8;
  // mx_mm saves its BF16 input and weight, as a BF16 linear does; no FP8 copy is kept.
  CHECK(whole(setup)[Term::kActivations] == bf16_activations);
  CHECK(whole(setup)[Term::kFp8Weights] == 0);
  // By hand: the up projection (64 → 256) over 128 tokens is the largest of the block's linears
  // (the down projection, 256 → 64, casts 2 × 128 × 64 + 128 × 256 + 256 × 64 = 65,536 values).
  // Its backward casts grad_output along both dimensions (2 × 128 × 256), the input (128 × 64)
  // and the weight (64 × 256), 90,112 values, each 1 byte and an E8M0 scale per 32: 92,928 B.
  CHECK(mx_linear_backward_casts(setup.custom_model, kTokens) == 92928);
  // Without the loss the peak is the first block's backward pass: the casts, in 512-byte blocks
  // (182 of them), are all it adds, and the stack lists them there.
  const Estimate mx = estimated(setup);
  CHECK(mx.peak_allocated_bytes - bf16_peak == 93184);
  double listed = -1;
  for (const StackTerm& term : mx.stack_terms) {
    if (term.id == "torchao-mx-casts") listed = term.bytes;
  }
  CHECK(listed == 93184);
}

TEST_CASE("torchao's MXFP8 is refused where it is not modelled, naming the recipe or the switch") {
  TrainingSetup setup = tiny_fsdp(Recompute::kSelectiveOp);
  setup.compile = Compile::kBlocks;
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_recipe = Fp8Recipe::kMxfp8;
  // Blackwell's tensor cores alone run MXFP8.
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8Recipe);
  setup.device_id = "b200";
  CHECK(estimate_memory(setup).answer.ok());
  // Uncompiled, its casts make FP32 copies first: not modelled.
  setup.compile = Compile::kOff;
  const Answer eager = estimate_memory(setup).answer;
  CHECK(eager.setting == setting_id::kFp8Recipe);
  CHECK(eager.message.find("modelled compiled") != std::string::npos);
  setup.compile = Compile::kLoss;  // the blocks still eager
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8Recipe);
  setup.compile = Compile::kBlocks;
  // torchao gathers MXFP8's weights in BF16.
  setup.fp8_all_gather = true;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8AllGather);
  setup.fp8_all_gather = false;
  // Tensor parallelism and the experts' grouped GEMMs are not modelled.
  TrainingSetup tp = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  tp.device_id = "b200";
  tp.compile = Compile::kBlocks;
  tp.recompute = Recompute::kSelectiveOp;
  tp.precision = Precision::kFp8Mixed;
  tp.fp8_recipe = Fp8Recipe::kMxfp8;
  const Answer split = estimate_memory(tp).answer;
  CHECK(split.setting == setting_id::kFp8Recipe);
  CHECK(split.message.find("tensor parallelism") != std::string::npos);
  // Transformer Engine's other recipes stay Transformer Engine's.
  setup.fp8_recipe = Fp8Recipe::kBlockwise;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8Recipe);
}

TEST_CASE("compile: the compiled loss keeps the BF16 logits and their gradient, 4 B a logit") {
  TrainingSetup setup = tiny_fsdp(Recompute::kFull);
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.custom_model.vocab_size = 64000;
  setup.compile = Compile::kBlocks;
  CHECK(whole(setup)[Term::kLogits] == 12 * kTokens * 64000);
  const double eager_loss_peak = estimated(setup).peak_allocated_bytes;
  setup.compile = Compile::kBlocksAndLoss;
  // 2 + 2 bytes a logit, and each token's FP32 max and log-sum-exp.
  CHECK(whole(setup)[Term::kLogits] == 4 * kTokens * 64000 + 8 * kTokens);
  // The replayed step's peak was the eager loss's; compiled, it is lower.
  CHECK(estimated(setup).peak_allocated_bytes < eager_loss_peak);
}

TEST_CASE("compile: where it is not modelled, it is refused by its setting") {
  TrainingSetup setup = tiny_tp(Stack::kTorchtitan, ActivationModel::kLlamaBlock);
  setup.compile = Compile::kBlocks;
  // Inductor's choice without full recomputation.
  Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kCompile);
  CHECK(refused.message.rfind("Under torch.compile trainmem models full recomputation", 0) == 0);
  // The compiled loss under loss_parallel.
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  setup.compile = Compile::kBlocksAndLoss;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kCompile);
  // A stack that does not compile.
  TrainingSetup megatron = tiny_tp(Stack::kMegatron, ActivationModel::kLlamaBlock);
  megatron.recompute = Recompute::kFull;
  megatron.compile = Compile::kBlocks;
  refused = estimate_memory(megatron).answer;
  CHECK(refused.setting == setting_id::kCompile);
  CHECK(refused.message ==
        "torch.compile is modelled as torchtitan and torchtune run it; choose one of those "
        "stacks, or off.");
  // The setting reads its ids and refuses others by name.
  TrainingSetup plain;
  CHECK(apply_setting(plain, setting_id::kCompile, "blocks-and-loss").ok());
  CHECK(plain.compile == Compile::kBlocksAndLoss);
  CHECK(!apply_setting(plain, setting_id::kCompile, "max-autotune").ok());
}

TEST_CASE("torchtitan pp: the schedule keeps receive buffers, outputs and input gradients") {
  // The tiny shape's 2 layers over p 2 (one each), d 2 under FSDP2, full recomputation, and
  // torchtitan's default of p = 2 micro-batches, each of 8,192 tokens: a stage boundary is
  // 8,192 tokens × h 64 in BF16, 1 MiB.
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(static_cast<int>(kLayers));
  setup.sequence_length = 8192;
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.layout.pipeline_parallel = 2;
  setup.recompute = Recompute::kFull;
  const double boundary = 2 * 8192 * kH;
  const auto pipeline_buffers = [](const Estimate& estimate) {
    double bytes = -1;
    for (const StackTerm& term : estimate.stack_terms) {
      if (term.id == "pipeline-buffers") bytes = term.bytes;
    }
    return bytes;
  };
  // Without the logits the first stage holds the most: both micro-batches in flight, their two
  // outputs in output_chunks, and the two receive buffers for their gradients, made once.
  const Estimate first = estimated(setup);
  CHECK(first.most_loaded_stage == PipelineStage::kFirst);
  CHECK(pipeline_buffers(first) == 4 * boundary);
  // With them the last stage does: its two receive buffers, and at its second micro-batch the
  // first's BF16 logits (8,192 × 512 × 2 B) in output_chunks and its input's gradient in .grad.
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  const Estimate last = estimated(setup);
  CHECK(last.most_loaded_stage == PipelineStage::kLast);
  CHECK(pipeline_buffers(last) == 2 * boundary + 2 * 8192 * 512 + boundary);
  // Without a pipeline there is no schedule, and nothing of its own.
  setup.layout.pipeline_parallel = 1;
  CHECK(pipeline_buffers(estimated(setup)) == -1);
}

TEST_CASE(
    "torchtitan chunked loss: the output layer gathered in the loss, its gradient summed in "
    "FP32") {
  // The tiny shape with 65,536 logits a token on d 2 (each of the loss's blocks a whole number of
  // the allocator's 2 MiB): the loss outweighs the rest, and its peak is
  // the last chunk's post_backward, where the output weight's FP32 sum (4·V·h) is copied into
  // the reduce-scatter input (4·V·h). Then the loss holds the FP32 [T, h] buffer, the last
  // chunk's BF16 logits (16 tokens × V) and its hidden states' BF16 gradient (16 × h); the
  // gathered layers are the output weight (2·V·h) and the last block, kept for its backward.
  TrainingSetup setup = tiny_fsdp(Recompute::kFull);
  setup.logits = true;
  setup.loss = Loss::kChunkedWrapper;
  constexpr double kVocab = 65536;
  setup.custom_model.vocab_size = static_cast<int>(kVocab);
  const auto term = [](const Estimate& estimate, const char* id) {
    double bytes = -1;
    for (const StackTerm& each : estimate.stack_terms) {
      if (each.id == id) bytes = each.bytes;
    }
    return bytes;
  };
  const Estimate chunked = estimated(setup);
  CHECK(term(chunked, "fsdp-accumulated-gradients") == 4 * kVocab * kH);
  CHECK(term(chunked, "fsdp-reduce-scatter-input") == 4 * kVocab * kH);
  // The buffer and the trainer's pred (the final norm's output), then a chunk's logits and its
  // hidden-state gradient.
  CHECK(chunked.bytes[Term::kLogits] == (4 + 2) * kTokens * kH + 2 * 16 * kVocab + 2 * 16 * kH);
  // The root keeps the embedding and the final norm alone.
  CHECK(term(chunked, "fsdp-root") == allocator_block_bytes(2 * (kVocab * kH + kH)));
  // The whole logits' loss holds more at its peak.
  setup.loss = Loss::kFp32Upcast;
  CHECK(chunked.peak_allocated_bytes < estimated(setup).peak_allocated_bytes);
  // As one chunk the weight's gradient is reduced at once, never summed.
  setup.loss = Loss::kChunkedWrapper;
  setup.loss_chunks = 1;
  CHECK(term(estimated(setup), "fsdp-accumulated-gradients") <= 0);
}

}  // namespace torchtitan_test
