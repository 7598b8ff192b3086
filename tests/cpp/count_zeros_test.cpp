// Megatron-LM's --log-num-zeros-in-grad: at the optimiser's step count_zeros_fp32 makes a bool copy
// of one main gradient at a time (torch.count_nonzero on CUDA, (grad != 0).sum()), the largest
// one's elements in bytes, pinned by hand on a tiny model where the step is the peak; read from a
// launch line, refused under other stacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "estimate/calculation.hpp"
#include "estimate/replay.hpp"
#include "stacks/stack_frameworks.hpp"
#include "tiny_mixture.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace count_zeros_test {

namespace {

// The measurement harness's tiny Llama (h 64, f 224, 4 heads of 16 and 2 key-value heads, a
// vocabulary of 512, untied): its largest weight is the embedding's and the output layer's,
// 512 × 64 = 32,768 elements; fc1's is 448 × 64 = 28,672. Eight tokens and BF16 main gradients,
// whose FP32 copy at the step makes the step the peak.
TrainingSetup tiny(int data_parallel, int zero_stage) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 8;
  setup.stack = Stack::kMegatron;
  setup.grad_reduce_in_bf16 = true;
  setup.layout.data_parallel = data_parallel;
  setup.layout.zero_stage = zero_stage;
  return setup;
}

// The count's bool copy as the replay holds it at the peak (0 where it is not there), and the
// peak.
double zeros_bytes(const Estimate& estimate) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == "count-zeros") return term.bytes;
  }
  return 0;
}

Estimate ok(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  return estimate;
}

double blocks(double bytes) { return std::ceil(bytes / 512) * 512; }  // the allocator's rounding

// The replay's largest main gradient for `setup`, in elements.
double largest(const TrainingSetup& setup) {
  const Calculation calc = calculate(setup, 1, setup.flash_attention, {false, false});
  REQUIRE_MESSAGE(calc.answer.ok(), calc.answer.message);
  return replay::largest_main_gradient(
      step_device(setup, *calc.shape, calc.placement, calc.stage, calc.layer, calc.whole_terms));
}

}  // namespace

TEST_CASE("count zeros: the step holds a bool copy of the largest main gradient, by hand") {
  TrainingSetup setup = tiny(2, 0);
  const Estimate without = ok(setup);
  CHECK(zeros_bytes(without) == 0);
  setup.log_num_zeros_in_grad = true;
  // Without ZeRO every weight's main gradient is whole: the vocabulary's, 32,768 B.
  const Estimate whole = ok(setup);
  CHECK(zeros_bytes(whole) == 512 * 64);
  CHECK(whole.peak_allocated_bytes == without.peak_allocated_bytes + 512 * 64);
  // The distributed optimiser's single bucket over d 2: each rank's range of the buffer (the
  // model's parameters over 2) holds the embedding whole.
  setup.layout.zero_stage = 1;
  CHECK(zeros_bytes(ok(setup)) == 512 * 64);
  // Over d 8 a rank's range, the parameters over 8, is smaller than the embedding: its share.
  setup.layout.data_parallel = 8;
  const Estimate eight = ok(setup);
  REQUIRE(eight.parameters_on_device < 8 * 512 * 64);
  CHECK(zeros_bytes(eight) == blocks(eight.parameters_on_device / 8));
  // Without the flag nothing of it is held.
  setup.log_num_zeros_in_grad = false;
  CHECK(zeros_bytes(ok(setup)) == 0);
}

TEST_CASE("count zeros: the largest main gradient by ZeRO mode, buffer and unit, by hand") {
  // A layer of the tiny Llama: QKV 128 × 64 = 8,192, O 4,096, fc1 28,672, fc2 14,336 and two
  // norms of 64, 55,424; the root: the embedding and output layer, 32,768 each, and the final
  // norm, 64.
  const double layer = 8192 + 4096 + 28672 + 14336 + 128;
  const double root = 2 * 32768 + 64;
  TrainingSetup setup = tiny(8, 1);
  setup.log_num_zeros_in_grad = true;
  // The distributed optimiser, one bucket: a rank's range is the model over 8 (22,056).
  CHECK(largest(setup) == (2 * layer + root) / 8);
  // Megatron-FSDP, a bucket a unit: a layer's over 8 (6,928) is less than fc1, the root's over 8
  // (8,200) less than the embedding; the root's share is the most.
  setup.layout.zero_stage = 3;
  CHECK(largest(setup) == root / 8);
  // Over d 2 the root's share (32,800) passes the embedding (32,768): the embedding's whole, more
  // than a layer's share (27,712, less than fc1's 28,672).
  setup.layout.data_parallel = 2;
  CHECK(largest(setup) == 32768);
  // A mixture's routed experts shard over their own group: the tiny mixture (h 64, 4 experts,
  // top-2) made 256 wide, on d 32 with ep 2, etp 1. The experts' group is 32 / 2 = 16 ranks, and
  // each rank's 2 experts a layer (2 × (2·256·64 + 64·256) = 98,304, 196,608 in two layers) split
  // over it, 12,288 a rank, less than an expert's fc1 (2·256 × 64 = 32,768). The rest (attention,
  // routers, norms, embedding and output layer, 58,176) splits over 32, 1,818: the experts' share
  // is the most.
  TrainingSetup mixture = fixtures::tiny_torchtitan_mixture(2);
  mixture.custom_model.moe_ffn_hidden_size = 256;
  mixture.stack = Stack::kMegatron;
  mixture.layout.data_parallel = 32;
  mixture.layout.zero_stage = 1;
  mixture.log_num_zeros_in_grad = true;
  CHECK(largest(mixture) == 2 * 2 * (2 * 256 * 64 + 64 * 256) / 16.0);
  // docs/formulas.md's Llama 3 8B over d 8 in one bucket: a rank's range (8.03 B / 8) holds the
  // embedding whole, 128,256 × 4,096.
  TrainingSetup llama;
  llama.stack = Stack::kMegatron;
  llama.layout.data_parallel = 8;
  llama.layout.zero_stage = 1;
  CHECK(largest(llama) == 128256.0 * 4096);
  // Under --overlap-grad-reduce the buckets close at max(4·10⁷, 10⁶·8) elements: the embedding's
  // bucket holds at most it and 4·10⁷ more, a rank's range of it an eighth.
  llama.overlap_grad_reduce = true;
  CHECK(largest(llama) == (128256.0 * 4096 + 4e7) / 8);
  // Past the first pipeline stage DistributedDataParallel turns bucketing off: over d 4 the
  // output layer lies in its one bucket's first range (the last of 2 stages holds 16 layers and
  // it, 4.0 B over 4), whole, where buckets would have cut it to (525 M + 4·10⁷) / 4.
  llama.layout.pipeline_parallel = 2;
  llama.layout.data_parallel = 4;
  llama.pipeline_stage = -1;
  CHECK(largest(llama) == 128256.0 * 4096);
  // Nor does the first stage's under virtual stages (each chunk after the first unbucketed): the
  // stage's parameters are counted as one buffer, a bound over its chunks', and hold the
  // embedding whole.
  llama.layout.virtual_pipeline_stages = 2;
  llama.pipeline_stage = 1;
  CHECK(largest(llama) == 128256.0 * 4096);
  // Without ZeRO the largest weight is whole: an expert's fc1, 2·256 × 64, more than the
  // embedding's 256 × 64.
  mixture.layout.zero_stage = 0;
  mixture.layout.data_parallel = 4;
  CHECK(largest(mixture) == 2 * 256 * 64);
}

TEST_CASE("count zeros: docs/formulas.md's Llama 3 8B peak, 525,336,576 B more at the step") {
  // Over d 8 at 128 tokens with BF16 main gradients the step is the peak, and the count's bool
  // copy of the embedding's gradient adds itself to it.
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 1;
  setup.sequence_length = 128;
  setup.grad_reduce_in_bf16 = true;
  const Estimate without = ok(setup);
  setup.log_num_zeros_in_grad = true;
  const Estimate with = ok(setup);
  CHECK(with.peak_allocated_bytes - without.peak_allocated_bytes == 128256.0 * 4096);
}

TEST_CASE("count zeros: the flag is Megatron-LM's, read from its launch line") {
  TrainingSetup setup = tiny(2, 1);
  setup.log_num_zeros_in_grad = true;
  setup.grad_reduce_in_bf16 = false;
  setup.stack = Stack::kIdeal;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kLogNumZerosInGrad);
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
      "--num-attention-heads 32 --seq-length 4096 --swiglu --normalization RMSNorm "
      "--position-embedding-type rope --disable-bias-linear --bf16 --micro-batch-size 1 "
      "--vocab-size 32000 --use-distributed-optimizer";
  const LaunchConfig plain = read_launch_config(line, {}, {});
  REQUIRE_MESSAGE(plain.answer.ok(), plain.answer.message);
  CHECK_FALSE(plain.setup.log_num_zeros_in_grad);
  const LaunchConfig counted = read_launch_config(line + " --log-num-zeros-in-grad", {}, {});
  REQUIRE_MESSAGE(counted.answer.ok(), counted.answer.message);
  CHECK(counted.setup.log_num_zeros_in_grad);
  CHECK_FALSE(counted.setup.overlap_grad_reduce);
  CHECK(counted.not_understood.empty());
  // A switch: a word after it is not its value.
  CHECK_FALSE(read_launch_config(line + " --log-num-zeros-in-grad 1", {}, {}).answer.ok());
  const LaunchConfig overlapped = read_launch_config(line + " --overlap-grad-reduce", {}, {});
  REQUIRE_MESSAGE(overlapped.answer.ok(), overlapped.answer.message);
  CHECK(overlapped.setup.overlap_grad_reduce);
  setup.stack = Stack::kMegatron;
  setup.log_num_zeros_in_grad = false;
  setup.overlap_grad_reduce = true;
  CHECK(estimate_memory(setup).answer.ok());
  setup.stack = Stack::kDeepSpeed;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOverlapGradReduce);
}

}  // namespace count_zeros_test
