// The stacks: PyTorch's caching allocator's rules worked by hand, each stack's terms on a small
// shape, the ideal stack pinned to the plate, refusals, and totals that never grow with a degree.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "estimate/calculation.hpp"
#include "estimate/replay.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/allocator.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace stack_test {

namespace {

constexpr double kMiB = 1 << 20;

// Llama 3 8B under torchtitan over 8 devices, full recomputation, the FP32-upcast loss: a step
// whose loss leaves the allocator's segments in pieces.
TrainingSetup torchtitan_8b_on_8() {
  TrainingSetup setup;
  setup.stack = Stack::kTorchtitan;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  return setup;
}

const StackTerm* term_with_id(const Estimate& estimate, const std::string& id) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == id) return &term;
  }
  return nullptr;
}

TrainingSetup tiny(Stack stack) {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.stack = stack;
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = stack == Stack::kMegatron ? 1 : 3;
  return setup;
}

}  // namespace

TEST_CASE("allocator: requests round to 512 B and take 2 MiB, 20 MiB or rounded segments") {
  CHECK(allocator_block_bytes(1) == 512);
  CHECK(allocator_block_bytes(513) == 1024);
  CHECK(allocator_segment_bytes(512) == 2 * kMiB);       // small pool
  CHECK(allocator_segment_bytes(1 * kMiB) == 2 * kMiB);  // still small: at most 1 MiB
  CHECK(allocator_segment_bytes(1 * kMiB + 512) == 20 * kMiB);
  CHECK(allocator_segment_bytes(10 * kMiB) == 10 * kMiB);  // from 10 MiB: rounded to 2 MiB
  CHECK(allocator_segment_bytes(11 * kMiB) == 12 * kMiB);

  CachingAllocator allocator;
  const auto small = allocator.allocate(100);
  CHECK(allocator.allocated_bytes() == 512);
  CHECK(allocator.reserved_bytes() == 2 * kMiB);
  allocator.allocate(100);  // the small segment's remainder, split: no new segment
  CHECK(allocator.reserved_bytes() == 2 * kMiB);
  const auto mid = allocator.allocate(5 * kMiB);
  CHECK(allocator.reserved_bytes() == 22 * kMiB);
  allocator.free(mid);  // cached: still reserved, merged back into one 20 MiB block
  CHECK(allocator.allocated_bytes() == 1024);
  CHECK(allocator.reserved_bytes() == 22 * kMiB);
  // 19.5 MiB leaves 0.5 MiB: a large block is split only for more than 1 MiB, so the request
  // takes, and counts as allocated, all 20.
  const auto most = allocator.allocate(19.5 * kMiB);
  CHECK(allocator.allocated_bytes() == 1024 + 20 * kMiB);
  CHECK(allocator.reserved_bytes() == 22 * kMiB);
  allocator.free(most);
  allocator.free(small);
  CHECK(allocator.peak_allocated_bytes() == 1024 + 20 * kMiB);
}

TEST_CASE("allocator: empty_cache gives back the segments that hold nothing, and only those") {
  CachingAllocator allocator;
  const auto small = allocator.allocate(100);
  const auto large = allocator.allocate(5 * kMiB);
  const auto whole = allocator.allocate(30 * kMiB);
  CHECK(allocator.reserved_bytes() == (2 + 20 + 30) * kMiB);
  allocator.free(large);
  allocator.free(whole);
  allocator.empty_cache();
  // The small segment still holds a block; the 20 MiB and 30 MiB ones are released.
  CHECK(allocator.reserved_bytes() == 2 * kMiB);
  CHECK(allocator.allocated_bytes() == 512);
  CHECK(allocator.peak_reserved_bytes() == (2 + 20 + 30) * kMiB);
  // A released segment serves nothing: the next request maps a new one.
  allocator.allocate(5 * kMiB);
  CHECK(allocator.reserved_bytes() == 22 * kMiB);
  allocator.free(small);
}

TEST_CASE(
    "allocator: under expandable segments empty_cache unmaps the whole free pages at a segment's "
    "end, and what follows maps them again") {
  AllocatorConfig config;
  config.expandable_segments = true;
  CachingAllocator allocator(config);
  // Mapped 20 MiB at a time: 30 MiB maps 40, whose last 10 the next request takes.
  const auto first = allocator.allocate(30 * kMiB);
  const auto middle = allocator.allocate(10 * kMiB);
  const auto last = allocator.allocate(100 * kMiB);
  CHECK(allocator.reserved_bytes() == 140 * kMiB);
  allocator.free(middle);
  allocator.free(last);  // merged with the middle one: 110 MiB free from 30 MiB on
  allocator.empty_cache();
  // The page the first block shares (30 to 40 MiB) stays mapped; the 100 MiB after it go.
  CHECK(allocator.reserved_bytes() == 40 * kMiB);
  CHECK(allocator.peak_reserved_bytes() == 140 * kMiB);
  // The segment grows again from there: 20 MiB takes the free 10 and maps one more page.
  allocator.allocate(20 * kMiB);
  CHECK(allocator.reserved_bytes() == 60 * kMiB);
  allocator.free(first);
}

TEST_CASE(
    "allocator: under expandable segments empty_cache unmaps a free block's whole pages between "
    "live blocks too, and the next request maps the lowest hole with room") {
  AllocatorConfig config;
  config.expandable_segments = true;
  CachingAllocator allocator(config);
  // Three blocks of 40, 60 and 20 MiB on whole 20 MiB pages: 120 MiB mapped.
  const auto first = allocator.allocate(40 * kMiB);
  const auto hole = allocator.allocate(60 * kMiB);
  const auto last = allocator.allocate(20 * kMiB);
  CHECK(allocator.reserved_bytes() == 120 * kMiB);
  allocator.free(hole);
  allocator.empty_cache();
  // The middle block's three pages are unmapped (release_blocks → unmap_block), the live ones
  // around it kept.
  CHECK(allocator.reserved_bytes() == 60 * kMiB);
  CHECK(allocator.allocated_bytes() == 60 * kMiB);
  // An unmapped block is in no free pool: 30 MiB maps two of its pages (find_expandable_block, the
  // lowest hole with room), not the segment's end; 10 MiB of them stay free for the next.
  const auto again = allocator.allocate(30 * kMiB);
  CHECK(allocator.reserved_bytes() == 100 * kMiB);
  const auto rest = allocator.allocate(10 * kMiB);
  CHECK(allocator.reserved_bytes() == 100 * kMiB);
  // The hole's last 20 MiB cannot hold 30, and a live block follows it: the request is mapped
  // where the segment ends.
  const auto beyond = allocator.allocate(30 * kMiB);
  CHECK(allocator.reserved_bytes() == 140 * kMiB);
  // A page shared with a live block stays mapped: 10 MiB freed inside a page unmaps nothing.
  allocator.free(rest);
  allocator.empty_cache();
  CHECK(allocator.reserved_bytes() == 140 * kMiB);
  for (const auto handle : {first, again, last, beyond}) allocator.free(handle);
  allocator.empty_cache();
  CHECK(allocator.reserved_bytes() == 0);
}

TEST_CASE(
    "allocator: under expandable segments best fit passes over the block at a segment's end, "
    "which could grow, for a larger one that could not") {
  AllocatorConfig config;
  config.expandable_segments = true;
  CachingAllocator allocator(config);
  const auto first = allocator.allocate(40 * kMiB);
  const auto live = allocator.allocate(20 * kMiB);
  const auto last = allocator.allocate(20 * kMiB);
  allocator.free(first);
  allocator.free(last);
  // 20 MiB fits the last block exactly, but get_free_block counts it with the unmapped space after
  // it and takes the first, 40 MiB, splitting it; 30 MiB then fits neither free block of 20 and
  // maps a page after the last.
  const auto twenty = allocator.allocate(20 * kMiB);
  CHECK(allocator.reserved_bytes() == 80 * kMiB);
  const auto thirty = allocator.allocate(30 * kMiB);
  CHECK(allocator.reserved_bytes() == 100 * kMiB);
  for (const auto handle : {live, twenty, thirty}) allocator.free(handle);
}

TEST_CASE("megatron: --empty-unused-memory-level lowers the reserved peak, not the allocated one") {
  TrainingSetup setup;
  setup.stack = Stack::kMegatron;
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 1;
  const Estimate kept = estimate_memory(setup);
  setup.empty_cache_level = 1;
  const Estimate emptied = estimate_memory(setup);
  REQUIRE(emptied.answer.ok());
  // (Within the blocks' rounding: a fresh segment splits where a cached block was taken whole.)
  CHECK(emptied.peak_allocated_bytes == doctest::Approx(kept.peak_allocated_bytes).epsilon(0.001));
  CHECK(emptied.peak_reserved_bytes < kept.peak_reserved_bytes);
  setup.expandable_segments = true;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kEmptyCacheLevel);
  setup.expandable_segments = false;
  setup.stack = Stack::kIdeal;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kEmptyCacheLevel);
}

TEST_CASE("allocator: expandable segments grow one segment a page at a time") {
  AllocatorConfig expandable;
  expandable.expandable_segments = true;
  // Without them: 30 MiB takes a segment of its own; freed, it cannot hold 40, which takes
  // another: 70 MiB reserved.
  CachingAllocator segments;
  segments.free(segments.allocate(30 * kMiB));
  segments.allocate(40 * kMiB);
  CHECK(segments.reserved_bytes() == 70 * kMiB);
  // With them: 30 MiB maps two 20 MiB pages and splits off the 10 left; freed, the 40 MiB block
  // holds 40: nothing more is mapped.
  CachingAllocator grown(expandable);
  const auto first = grown.allocate(30 * kMiB);
  CHECK(grown.reserved_bytes() == 40 * kMiB);
  CHECK(grown.allocated_bytes() == 30 * kMiB);
  grown.free(first);
  const auto second = grown.allocate(40 * kMiB);
  CHECK(grown.reserved_bytes() == 40 * kMiB);
  // A request past the end maps only what the free block at the end lacks: 10 MiB held, 50
  // asked, 40 more mapped.
  grown.free(second);
  grown.allocate(30 * kMiB);
  grown.allocate(50 * kMiB);
  CHECK(grown.reserved_bytes() == 80 * kMiB);
  CHECK(grown.allocated_bytes() == 80 * kMiB);
  // Any remainder of 512 B is split off: 19.5 of a free 20 MiB counts 19.5 allocated (20 without).
  CachingAllocator split(expandable);
  split.free(split.allocate(20 * kMiB));
  split.allocate(19.5 * kMiB);
  CHECK(split.allocated_bytes() == 19.5 * kMiB);
  // The small pool maps pages of 2 MiB.
  CachingAllocator small(expandable);
  small.allocate(100);
  CHECK(small.reserved_bytes() == 2 * kMiB);
}

TEST_CASE("allocator: expandable segments change a stack's reserved peak, not what it holds") {
  TrainingSetup setup = torchtitan_8b_on_8();
  const Estimate cached = estimate_memory(setup);
  setup.expandable_segments = true;
  const Estimate expanded = estimate_memory(setup);
  REQUIRE(cached.answer.ok());
  REQUIRE(expanded.answer.ok());
  // Llama 3 8B on 8 devices: the loss's FP32 blocks no longer leave segments too small for the
  // next; the reserved peak falls by gigabytes, the allocated one by the split rule's slack alone.
  CHECK(expanded.peak_reserved_bytes < cached.peak_reserved_bytes - 4e9);
  CHECK(expanded.peak_allocated_bytes ==
        doctest::Approx(cached.peak_allocated_bytes).epsilon(1e-3));
  // The idealised step has no allocator: refused by name.
  setup.stack = Stack::kIdeal;
  const Estimate ideal = estimate_memory(setup);
  CHECK(ideal.answer.setting == "expandable-segments");
}

TEST_CASE("allocator: max_split_size_mb keeps oversize blocks whole for smaller requests") {
  AllocatorConfig limited;
  limited.max_split_size_bytes = 100 * kMiB;
  // Without it: 50 MiB takes the cached 200 MiB block and splits it; nothing more is reserved.
  CachingAllocator open;
  open.free(open.allocate(200 * kMiB));
  open.allocate(50 * kMiB);
  CHECK(open.reserved_bytes() == 200 * kMiB);
  CHECK(open.allocated_bytes() == 50 * kMiB);
  // With a 100 MiB limit the 200 MiB block is oversize: a 50 MiB request takes a segment of its
  // own (get_free_block), 250 MiB reserved.
  CachingAllocator kept(limited);
  kept.free(kept.allocate(200 * kMiB));
  const auto small = kept.allocate(50 * kMiB);
  CHECK(kept.reserved_bytes() == 250 * kMiB);
  // A request over the limit takes an oversize block that leaves under 20 MiB, whole (no split:
  // should_split), 200 MiB allocated for 190 asked; one that would leave 20 or more cannot.
  kept.free(small);
  const auto large = kept.allocate(190 * kMiB);
  CHECK(kept.allocated_bytes() == 200 * kMiB);
  CHECK(kept.reserved_bytes() == 250 * kMiB);
  kept.free(large);
  kept.allocate(180 * kMiB);
  CHECK(kept.reserved_bytes() == 430 * kMiB);
  // A block under the limit is split as before: 50 MiB out of the cached 60.
  CachingAllocator under(limited);
  under.free(under.allocate(60 * kMiB));
  under.allocate(40 * kMiB);
  CHECK(under.allocated_bytes() == 40 * kMiB);
  CHECK(under.reserved_bytes() == 60 * kMiB);
}

TEST_CASE("allocator: max_split_size_mb changes a stack's reserved peak, and is checked") {
  TrainingSetup setup = torchtitan_8b_on_8();
  const Estimate open = estimate_memory(setup);
  setup.max_split_size_mb = 128;
  const Estimate limited = estimate_memory(setup);
  REQUIRE(open.answer.ok());
  REQUIRE_MESSAGE(limited.answer.ok(), limited.answer.message);
  CHECK(limited.peak_reserved_bytes != open.peak_reserved_bytes);
  CHECK(limited.peak_allocated_bytes >= open.peak_allocated_bytes);
  setup.max_split_size_mb = 20;
  CHECK(estimate_memory(setup).answer.setting == "max-split-size-mb");
  setup.max_split_size_mb = 128;
  setup.stack = Stack::kIdeal;
  CHECK(estimate_memory(setup).answer.setting == "max-split-size-mb");
}

TEST_CASE("allocator: a block freed on one stream is cached for that stream alone") {
  CachingAllocator allocator;
  const auto exchanged = allocator.allocate(30 * kMiB, 1);
  allocator.free(exchanged);
  CHECK(allocator.reserved_bytes() == 30 * kMiB);
  // The compute stream cannot take stream 1's cached block: a segment of its own.
  const auto computed = allocator.allocate(30 * kMiB);
  CHECK(allocator.reserved_bytes() == 60 * kMiB);
  allocator.free(computed);
  // Each stream takes its own again, split as ever: 12 of the 30 MiB, 18 left cached.
  allocator.allocate(12 * kMiB, 1);
  allocator.allocate(12 * kMiB);
  CHECK(allocator.reserved_bytes() == 60 * kMiB);
  allocator.allocate(18 * kMiB, 1);
  CHECK(allocator.reserved_bytes() == 60 * kMiB);
  allocator.allocate(20 * kMiB, 1);  // stream 0's 18 MiB left over does not serve stream 1
  CHECK(allocator.reserved_bytes() == 80 * kMiB);
}

TEST_CASE("allocator: the unfused loss's freed blocks are too small for its backward pass") {
  // In units of the logits' BF16 size: the logits (2), their FP32 copy (4) and the saved
  // log-softmax (4); the copy and the logits freed; then two FP32 gradients (4, 4). The first
  // reuses the copy's block; the second finds only the logits' 2 and takes a new segment:
  // allocated peaks at 12 units, reserved at 14.
  const double unit = 100 * kMiB;
  CachingAllocator allocator;
  const auto logits = allocator.allocate(2 * unit);
  const auto upcast = allocator.allocate(4 * unit);
  const auto saved = allocator.allocate(4 * unit);
  allocator.free(upcast);
  allocator.free(logits);
  const auto output_gradient = allocator.allocate(4 * unit);
  CHECK(allocator.reserved_bytes() == 10 * unit);
  const auto input_gradient = allocator.allocate(4 * unit);
  CHECK(allocator.allocated_bytes() == 12 * unit);
  CHECK(allocator.reserved_bytes() == 14 * unit);
  allocator.free(output_gradient);
  allocator.free(saved);
  allocator.free(input_gradient);
  CHECK(allocator.peak_allocated_bytes() == 12 * unit);
  CHECK(allocator.peak_reserved_bytes() == 14 * unit);
}

TEST_CASE("stack: ideal keeps the plate's figures, both peaks equal to its total") {
  const Estimate estimate = estimate_memory(TrainingSetup{});
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.bytes.total() == 164991401984.0);
  CHECK(estimate.peak_allocated_bytes == estimate.bytes.total());
  CHECK(estimate.peak_reserved_bytes == estimate.bytes.total());
  CHECK(estimate.stack_terms.empty());
  CHECK(estimate.bytes[Term::kFramework] == 0);
  CHECK(estimate.bytes[Term::kRuntime] == 0);
  CHECK(estimate.bytes[Term::kAllocatorCache] == 0);
  const nlohmann::json json = nlohmann::json::parse(estimate_to_json(estimate));
  CHECK(json["stack"] == "ideal");
  CHECK(json["peakAllocatedBytes"].is_number_integer());
  CHECK(json["peakAllocatedBytes"].get<double>() == 164991401984.0);
  CHECK(json["peakReservedBytes"].get<double>() == 164991401984.0);
}

TEST_CASE("stack: the JSON's peaks are top-level integers, and the terms sum to the total") {
  // The fourth: Megatron-LM at t 2 with TE's fused loss, whose peak is in the output layer's
  // backward pass, where the stack's own gradients are held. The fifth and sixth: QLoRA under
  // transformers (DDP) and torchtune, whose dequantised weight is a term of its own.
  const std::array<Stack, 6> stacks{Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed,
                                    Stack::kMegatron, Stack::kHf,         Stack::kTorchtune};
  for (std::size_t index = 0; index < stacks.size(); ++index) {
    const Stack stack = stacks[index];
    TrainingSetup setup = tiny(stack);
    setup.logits = true;
    setup.loss = stack == Stack::kMegatron ? Loss::kVocabParallel : Loss::kFp32Upcast;
    if (index == 3) {
      setup.loss = Loss::kTeFused;
      setup.layout.tensor_parallel = 2;
      setup.layout.sequence_parallel = true;
      setup.layout.data_parallel = 1;
      setup.layout.zero_stage = 0;
    }
    if (index >= 4) {
      setup.precision = Precision::kBf16;
      setup.layout.zero_stage = 0;
      setup.layout.data_parallel = index == 4 ? 2 : 1;
      setup.lora_rank = 4;
      setup.base_weights = BaseWeights::kNf4;
    }
    const Estimate estimate = estimate_memory(setup);
    CAPTURE(choice_id(stack));
    REQUIRE(estimate.answer.ok());
    const Breakdown& bytes = estimate.bytes;
    double outside = 0;
    for (const StackTerm& term : estimate.stack_terms)
      outside += term.in_allocator ? 0 : term.bytes;
    CHECK(bytes.total() == estimate.peak_reserved_bytes + outside);
    CHECK(estimate.peak_reserved_bytes >= estimate.peak_allocated_bytes);
    CHECK(bytes.model_states() + bytes[Term::kActivations] + bytes[Term::kLogits] +
              bytes[Term::kDequantization] + bytes[Term::kFramework] + bytes[Term::kRuntime] +
              bytes[Term::kAllocatorCache] ==
          doctest::Approx(bytes.total()).epsilon(1e-12));
    const nlohmann::json json = nlohmann::json::parse(estimate_to_json(estimate));
    CHECK(json["peakAllocatedBytes"].is_number_integer());
    CHECK(json["peakReservedBytes"].is_number_integer());
    CHECK(json["stackTerms"].size() == estimate.stack_terms.size());
  }
}

TEST_CASE("stack: Megatron-LM holds FP32 main gradients, 6 + 12/d bytes per parameter") {
  const TrainingSetup setup = tiny(Stack::kMegatron);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const double parameters = estimate.num_parameters;
  CHECK(estimate.bytes_per_parameter.gradients == 4);
  // Each term is one block at the peak, rounded to 512 B by the allocator.
  CHECK(estimate.bytes[Term::kWeights] == allocator_block_bytes(2 * parameters));
  CHECK(estimate.bytes[Term::kGradients] == allocator_block_bytes(4 * parameters));
  CHECK(estimate.bytes[Term::kMasterWeights] == allocator_block_bytes(4 * parameters / 2));
  // Adam's moments, made by the first step's optimizer step, one block a layer (and one for the
  // embedding, output layer and final norm) each.
  const double blocks = 2 * (setup.custom_model.num_layers + 1);
  CHECK(estimate.bytes[Term::kOptimizerStates] >= 8 * parameters / 2);
  CHECK(estimate.bytes[Term::kOptimizerStates] < 8 * parameters / 2 + blocks * 512);
  const StackTerm* workspace = term_with_id(estimate, "cublas-workspace");
  REQUIRE(workspace != nullptr);
  CHECK(workspace->bytes == 33 * kMiB);  // 32 MiB cuBLAS + 1 MiB cuBLASLt on an H100
  CHECK(workspace->in_allocator);
  const StackTerm* context = term_with_id(estimate, "cuda-context");
  REQUIRE(context != nullptr);
  CHECK_FALSE(context->in_allocator);
}

TEST_CASE("stack: torchtitan keeps FP32 shards, the root and the last block gathered in BF16") {
  TrainingSetup setup = tiny(Stack::kTorchtitan);
  setup.sequence_length = 4096;  // activations well above the parameters: the peak is at the
                                 // last layer's backward, before its gradients are reduced
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  // The tiny shape: h 64, vocabulary 512, untied: embedding and output 512·64 each, final norm 64.
  const double root = 2 * 512 * 64 + 64;
  const StackTerm* root_term = term_with_id(estimate, "fsdp-root");
  REQUIRE(root_term != nullptr);
  CHECK(root_term->bytes == allocator_block_bytes(2 * root));
  CHECK(estimate.bytes_per_parameter.weights == 4);
  CHECK(estimate.bytes_per_parameter.master_weights == 0);
  CHECK(estimate.bytes[Term::kMasterWeights] == 0);
  CHECK(estimate.bytes[Term::kWeights] == allocator_block_bytes(4 * estimate.num_parameters / 2));
  // The last block, never resharded after forward, is the one gathered; its unsharded BF16
  // gradients are made, beside the output layer's, which wait for the root's reduce-scatter; no
  // sharded gradient exists yet (zero_grad frees them between steps).
  const double layer = (estimate.num_parameters - root) / 2;
  const StackTerm* gathered = term_with_id(estimate, "fsdp-gathered-layers");
  REQUIRE(gathered != nullptr);
  CHECK(gathered->bytes == allocator_block_bytes(2 * layer));
  const StackTerm* unsharded = term_with_id(estimate, "fsdp-unsharded-gradients");
  REQUIRE(unsharded != nullptr);
  CHECK(unsharded->bytes == allocator_block_bytes(2 * layer) + allocator_block_bytes(2 * 512 * 64));
  CHECK(estimate.bytes[Term::kGradients] == 0);
  CHECK(estimate.bytes[Term::kActivations] == doctest::Approx(estimate_memory([&] {
                                                                TrainingSetup ideal = setup;
                                                                ideal.stack = Stack::kIdeal;
                                                                return ideal;
                                                              }())
                                                                  .bytes[Term::kActivations])
                                                  .epsilon(1e-3));
}

TEST_CASE("stack: DeepSpeed's reduce bucket is 5e8 BF16 elements") {
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.layout.zero_stage = 2;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const StackTerm* bucket = term_with_id(estimate, "zero-reduce-bucket");
  REQUIRE(bucket != nullptr);
  // 1e9 B is a whole number of 512 B blocks; its segment rounds up to 2 MiB, and the 341,504 B
  // left over (not more than 1 MiB) stay with the block.
  CHECK(bucket->bytes == allocator_segment_bytes(1e9));
  CHECK(bucket->bytes == 1000341504.0);
}

TEST_CASE("stack: under ZeRO 3 DeepSpeed gathers the output layer whole for the loss") {
  // fetch_sub_module gathers every module's partitioned parameters for its pass: the output layer
  // too (BF16, V·h: 512 × 64 here), from the loss's forward pass into its backward pass, with
  // offload_param or without.
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  const double output_layer = 2.0 * 512 * 64;
  const Estimate zero3 = estimate_memory(setup);
  REQUIRE(zero3.answer.ok());
  const StackTerm* gathered = term_with_id(zero3, "zero3-gathered-layers");
  REQUIRE(gathered != nullptr);
  CHECK(gathered->bytes >= allocator_block_bytes(output_layer));
}

TEST_CASE("stack: DeepSpeed's BF16 master weights and states are 2 and 4 B a parameter") {
  // bf16_master_weights_and_grads with bf16_optimizer_states: the master partition cloned in BF16
  // (stage_1_and_2.py) and Adam's moments in its dtype, against bf16-mixed's 4 and 8.
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.layout.data_parallel = 4;
  setup.layout.zero_stage = 1;
  const Estimate mixed = estimate_memory(setup);
  setup.precision = Precision::kBf16Master;
  const Estimate master = estimate_memory(setup);
  REQUIRE_MESSAGE(master.answer.ok(), master.answer.message);
  REQUIRE(mixed.answer.ok());
  CHECK(master.bytes_per_parameter.master_weights == 2);
  CHECK(master.bytes_per_parameter.optimizer_states == 4);
  // Halved, but for the allocator's 512 B blocks.
  CHECK(master.bytes[Term::kMasterWeights] ==
        doctest::Approx(mixed.bytes[Term::kMasterWeights] / 2).epsilon(0.01));
  CHECK(master.bytes[Term::kOptimizerStates] ==
        doctest::Approx(mixed.bytes[Term::kOptimizerStates] / 2).epsilon(0.01));
  CHECK(master.bytes[Term::kWeights] == mixed.bytes[Term::kWeights]);
  // Another stack, or the host's step under offloading, is refused rather than miscounted.
  setup.offload = Offload::kOptimizer;
  setup.layout.zero_stage = 2;
  CHECK(estimate_memory(setup).answer.message ==
        "Offloading under bf16-master (the host's step on BF16 gradients and moments) is not "
        "modelled; set offload to none, or choose bf16-mixed.");
  setup = tiny(Stack::kMegatron);
  setup.precision = Precision::kBf16Master;
  CHECK(estimate_memory(setup).answer.message ==
        "The Megatron-LM stack is modelled for bf16-mixed precision and fp8-mixed (Transformer "
        "Engine); choose one of them, or the ideal stack.");
  setup = tiny(Stack::kDeepSpeed);
  setup.precision = Precision::kBf16;
  CHECK(estimate_memory(setup).answer.message ==
        "The DeepSpeed ZeRO stack is modelled for bf16-mixed precision and bf16-master (its BF16 "
        "master weights and optimiser state); choose one of them, or the ideal stack.");
}

TEST_CASE("stack: what a stack is not modelled for is refused, naming the stack") {
  TrainingSetup setup = tiny(Stack::kTorchtitan);
  setup.layout.data_parallel = 1;
  setup.layout.zero_stage = 0;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  setup = tiny(Stack::kDeepSpeed);
  setup.layout.zero_stage = 0;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  setup = tiny(Stack::kTorchtitan);
  setup.precision = Precision::kFp32;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  setup = tiny(Stack::kMegatron);
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  setup = tiny(Stack::kTorchtitan);
  setup.logits = true;  // the vocab-parallel loss by default: not torchtitan's
  CHECK(estimate_memory(setup).answer.setting == setting_id::kStack);
  setup = tiny(Stack::kMegatron);
  setup.lora_rank = 8;
  CHECK(
      estimate_memory(setup).answer.message ==
      "The Megatron-LM stack is modelled for full training; set the LoRA rank to 0, or choose the "
      "ideal or deepspeed stack.");
  setup = tiny(Stack::kDeepSpeed);
  setup.layout.zero_stage = 1;
  setup.offload = Offload::kOptimizer;
  CHECK(estimate_memory(setup).answer.message ==
        "DeepSpeed's offload_optimizer is modelled under ZeRO 2 and 3 (ZeRO-Offload with ZeRO 1 is "
        "not); choose ZeRO 2 or 3.");
  setup.layout.zero_stage = 2;
  setup.offload = Offload::kOptimizerAndWeights;
  CHECK(estimate_memory(setup).answer.message ==
        "DeepSpeed offloads the parameters (offload_param) under ZeRO 3 alone, as it requires; "
        "choose ZeRO 3.");
  setup.offload = Offload::kNone;
  setup.offload_activations = true;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOffloadActivations);
}

TEST_CASE("stack: DeepSpeed's ZeRO-Offload keeps no gradient partition on the device") {
  // Llama 3 8B under ZeRO 3 on one device, 4K tokens, full recomputation, transformers' loss.
  TrainingSetup setup;
  setup.stack = Stack::kDeepSpeed;
  setup.layout.zero_stage = 3;
  setup.sequence_length = 4096;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kFp32Upcast;
  const Estimate whole = estimate_memory(setup);
  REQUIRE_MESSAGE(whole.answer.ok(), whole.answer.message);
  CHECK(!whole.notes.empty());  // ZeRO over one rank, said
  setup.offload = Offload::kOptimizer;
  const Estimate optimizer = estimate_memory(setup);
  REQUIRE(optimizer.answer.ok());
  const double n = whole.num_parameters;
  // The master weights, Adam's moments and the BF16 gradients' partition leave the device
  // (4 + 8 + 2 B a parameter); the BF16 weights stay.
  CHECK(optimizer.bytes[Term::kGradients] == 0);
  CHECK(optimizer.bytes[Term::kMasterWeights] == 0);
  CHECK(optimizer.bytes[Term::kOptimizerStates] == 0);
  CHECK(optimizer.bytes[Term::kWeights] == doctest::Approx(2 * n));
  CHECK(optimizer.host[Term::kGradients] == doctest::Approx(2 * n));
  CHECK(optimizer.host[Term::kFp32Gradients] == doctest::Approx(4 * n));
  CHECK(whole.bytes.total() - optimizer.bytes.total() > 13.9 * n);
  // The parameters too: none stays on the device but the layers fetched for their passes (the
  // output layer's at the loss), and the host holds 20 B a parameter.
  setup.offload = Offload::kOptimizerAndWeights;
  const Estimate both = estimate_memory(setup);
  REQUIRE(both.answer.ok());
  CHECK(both.bytes[Term::kWeights] == 0);
  CHECK(both.host.total() == doctest::Approx(20 * n));
  const double output_layer = 2.0 * 128256 * 4096;
  CHECK(both.bytes.total() > output_layer);
  CHECK(both.bytes.total() < optimizer.bytes.total() - 2 * n + 2 * output_layer + 2e9);
}

TEST_CASE("stack: each stack's total never grows with a parallel degree") {
  const auto total = [](TrainingSetup setup) {
    const Estimate estimate = estimate_memory(setup);
    REQUIRE(estimate.answer.ok());
    return estimate.bytes.total();
  };
  for (const Stack stack : {Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed}) {
    CAPTURE(choice_id(stack));
    TrainingSetup base;
    base.stack = stack;
    base.logits = true;
    base.loss = stack == Stack::kMegatron ? Loss::kVocabParallel : Loss::kFp32Upcast;
    base.layout.data_parallel = 2;
    base.layout.zero_stage = stack == Stack::kMegatron ? 1 : 3;
    base.recompute = Recompute::kFull;
    for (const int degree : {2, 4, 8}) {
      TrainingSetup more = base;
      more.layout.data_parallel = base.layout.data_parallel * degree;
      CHECK(total(more) <= total(base));
      more = base;
      more.layout.context_parallel = degree;
      CHECK(total(more) <= total(base));
      // torchtitan's pipeline keeps each stage's gradients unsharded in FP32 and, on the last
      // stage, every micro-batch's logits (output_chunks): on two stages it may hold more than
      // FSDP alone does, so its deeper pipelines are held against two stages.
      TrainingSetup fewer = base;
      if (stack == Stack::kTorchtitan) fewer.layout.pipeline_parallel = 2;
      more = base;
      more.layout.pipeline_parallel = degree;
      CHECK(total(more) <= total(fewer));
      if (stack != Stack::kTorchtitan && degree > 2) {
        TrainingSetup two = base;
        two.layout.tensor_parallel = 2;
        two.layout.sequence_parallel = true;
        more = two;
        more.layout.tensor_parallel = degree;
        CHECK(total(more) <= total(two));
      }
    }
  }
}

TEST_CASE("selective-op: torchtitan's policy keeps the input and four of seven matmuls' outputs") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);  // h 64, 4 heads of 16, 2 key/value heads, f 224
  setup.sequence_length = 128;
  setup.recompute = Recompute::kSelectiveOp;
  setup.activation_model = ActivationModel::kLlamaBlock;
  // Per token: input 2·64, wq 2·64, wv 2·(2·16), attention output 2·64, log-sum-exp 4·4, w1
  // 2·224, w2 2·64 = 1,040 B.
  const double per_token = 128 + 128 + 64 + 128 + 16 + 448 + 128;
  CHECK(saved_bytes_per_token(selective_op_saved_tensors(setup.custom_model, setup)) == per_token);
  const Estimate llama_block = estimate_memory(setup);
  REQUIRE(llama_block.answer.ok());
  // Two layers of 128 tokens kept, and one layer's other tensors rebuilt in its backward pass:
  // what the layer saves but what the policy keeps, of which w2's output (2·64) is none.
  TrainingSetup none = setup;
  none.recompute = Recompute::kNone;
  const double whole_layer = estimate_memory(none).bytes[Term::kActivations] / 2;
  CHECK(llama_block.bytes[Term::kActivations] ==
        doctest::Approx(2 * 128 * per_token + (whole_layer - 128 * (per_token - 128))));
  // Both activation models count the policy the same way: it is defined by the operations.
  setup.activation_model = ActivationModel::kKorthikanti;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == llama_block.bytes[Term::kActivations]);
  // Not a Llama-style block: refused.
  setup.model_id = "gpt2";
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRecompute);
}

TEST_CASE(
    "selective-op: the arithmetic writes the policy's tensors and its source, whichever model") {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.sequence_length = 128;
  setup.recompute = Recompute::kSelectiveOp;
  for (const ActivationModel model :
       {ActivationModel::kKorthikanti, ActivationModel::kLlamaBlock}) {
    setup.activation_model = model;
    const std::vector<TermArithmetic> terms = explain_estimate(setup);
    REQUIRE(terms.size() >= 5);
    CHECK(terms[4].term == "activations");
    // Not Korthikanti's bracket, which the policy does not count by: its 1,040 B per token.
    CHECK(terms[4].formula.rfind(
              "2 layers × 128 tokens × 1,040 B saved per token + one layer rebuilt (", 0) == 0);
    CHECK(terms[4].source.rfind("torchtitan's selective per-op recomputation", 0) == 0);
  }
}

TEST_CASE("stack: under FSDP2's ZeRO 2 the weights' arithmetic says the shards it counts") {
  TrainingSetup setup = tiny(Stack::kTorchtitan);
  setup.layout.zero_stage = 2;
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  REQUIRE(!terms.empty());
  CHECK(terms[0].term == "weights");
  CHECK(terms[0].formula.find(" ZeRO shards = ") != std::string::npos);
}

TEST_CASE("stack: a row for each stack, at its stack's place, and a choice for each") {
  constexpr std::size_t kStacks = static_cast<std::size_t>(Stack::kCount);
  CHECK(choices<Stack>().size() == kStacks);
  for (std::size_t index = 0; index < kStacks; ++index) {
    const Stack stack = static_cast<Stack>(index);
    CAPTURE(choice_id(stack));
    CHECK(stack_row(stack).stack == stack);
  }
  CHECK(std::string(fp8_engine_name(stack_row(Stack::kTorchtitan).fp8_engine)) ==
        "torchao's Float8");
}

TEST_CASE("stack: each stack's row names its step, and the idealised step has none") {
  CHECK(estimate_memory(tiny(Stack::kIdeal)).stack_terms.empty());
  for (const Stack stack : {Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed}) {
    CAPTURE(choice_id(stack));
    const Estimate estimate = estimate_memory(tiny(stack));
    REQUIRE(estimate.answer.ok());
    CHECK(!estimate.stack_terms.empty());
    CHECK(estimate.peak_reserved_bytes >= estimate.peak_allocated_bytes);
  }
}

TEST_CASE("stack: the activations' curve counts the activations whole, as the ideal step does") {
  TrainingSetup setup = tiny(Stack::kTorchtitan);
  setup.sequence_length = 64;  // the peak falls in the backward pass, activations part-freed
  const WorkshopView view = workshop_view(setup, 4);
  REQUIRE(view.estimate.answer.ok());
  TrainingSetup ideal = setup;
  ideal.stack = Stack::kIdeal;
  for (const ActivationPoint& point : view.activation_curve) {
    CAPTURE(point.micro_batch_sequences);
    ideal.micro_batch_sequences = point.micro_batch_sequences;
    CHECK(point.flash_attention_bytes == estimate_memory(ideal).bytes[Term::kActivations]);
    CHECK(point.flash_attention_bytes > 0);
  }
}

TEST_CASE("stack: the timeline holds each part where it is held, summing to each point") {
  for (const Stack stack :
       {Stack::kIdeal, Stack::kMegatron, Stack::kTorchtitan, Stack::kDeepSpeed}) {
    CAPTURE(choice_id(stack));
    TrainingSetup setup = tiny(stack);
    setup.logits = true;
    setup.loss = stack == Stack::kMegatron || stack == Stack::kIdeal ? Loss::kVocabParallel
                                                                     : Loss::kFp32Upcast;
    setup.sequence_length = 1024;
    const std::vector<TimelinePoint> points = memory_timeline(setup);
    REQUIRE(!points.empty());
    double framework = 0;
    double reserved = 0;
    for (const TimelinePoint& point : points) {
      reserved = std::max(reserved, point.reserved_bytes);
      CAPTURE(point.phase);
      CHECK(point.held.total() == doctest::Approx(point.bytes).epsilon(1e-12));
      CHECK(point.reserved_bytes >= point.bytes);
      framework = std::max(framework, point.held[Term::kFramework]);
    }
    const Estimate estimate = estimate_memory(setup);
    CHECK(reserved == estimate.bytes.total());
    // The timeline replays the very step the estimate does: its highest point is the allocated
    // peak (with the runtime outside the allocator).
    double outside = 0;
    for (const StackTerm& term : estimate.stack_terms)
      outside += term.in_allocator ? 0 : term.bytes;
    CHECK(points[timeline_peak(points)].bytes == estimate.peak_allocated_bytes + outside);
    CHECK(points.front().held[Term::kActivations] == 0);
    // FSDP2's gathered layers, root and reduce-scatter buffers are held in the passes, not
    // before them; ZeRO 3 allocates its reduce bucket and keeps its small parameters whole from
    // the start; Megatron-LM holds Transformer Engine's cached weight gradients, made by the
    // step before.
    CHECK((points.front().held[Term::kFramework] > 0) ==
          (stack == Stack::kDeepSpeed || stack == Stack::kMegatron));
    CHECK((framework > 0) == (stack != Stack::kIdeal));
  }
}

TEST_CASE("stack: torchtitan trains FP8 with torchao, gathering FP8 linear weights when asked") {
  TrainingSetup setup = tiny(Stack::kTorchtitan);
  setup.sequence_length = 4096;
  TrainingSetup bf16 = setup;
  setup.precision = Precision::kFp8Mixed;
  const Estimate fp8 = estimate_memory(setup);
  REQUIRE(fp8.answer.ok());
  // torchao's Float8Linear saves its BF16 input and keeps no weight cache.
  CHECK(fp8.bytes[Term::kActivations] == estimate_memory(bf16).bytes[Term::kActivations]);
  CHECK(fp8.bytes[Term::kFp8Weights] == 0);
  setup.fp8_all_gather = true;
  const Estimate gathered_fp8 = estimate_memory(setup);
  REQUIRE(gathered_fp8.answer.ok());
  // The tiny block's linear weights: Q 64·64, K and V 64·32 each, O 64·64, gate, up and down
  // 64·224 each, 55,296 of its 55,424 parameters (the two norms' 128 stay BF16).
  const double layer = 55424;
  const double linear = 64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 224;
  CHECK(gathered_fp8.num_parameters == 2 * layer + 2 * 512 * 64 + 64);
  const StackTerm* term = term_with_id(gathered_fp8, "fsdp-gathered-layers");
  REQUIRE(term != nullptr);
  CHECK(term->bytes == allocator_block_bytes(2 * layer - linear));
  CHECK(term->label == "Gathered layers (FP8 linear weights)");
  // Only torchtitan's switch, and only under FP8.
  setup.precision = Precision::kBf16Mixed;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8AllGather);
  setup = tiny(Stack::kMegatron);
  setup.precision = Precision::kFp8Mixed;
  setup.fp8_all_gather = true;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kFp8AllGather);
}

TEST_CASE(
    "stack: DeepSpeed doubles its reduce bucket with overlap_comm, and ZeRO 3 persists norms") {
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.layout.zero_stage = 2;
  setup.overlap_comm = OverlapComm::kOn;
  const Estimate doubled = estimate_memory(setup);
  REQUIRE(doubled.answer.ok());
  const StackTerm* buckets = term_with_id(doubled, "zero-reduce-bucket");
  REQUIRE(buckets != nullptr);
  CHECK(buckets->bytes == 2 * 1000341504.0);
  // ZeRO 3: the bucket from the start, and the norms (two of 64 per layer, the final one) whole.
  setup.layout.zero_stage = 3;
  setup.overlap_comm = OverlapComm::kDefault;
  const Estimate stage3 = estimate_memory(setup);
  REQUIRE(stage3.answer.ok());
  const StackTerm* persisted = term_with_id(stage3, "zero3-persisted-parameters");
  REQUIRE(persisted != nullptr);
  CHECK(persisted->bytes == allocator_block_bytes(2 * (2 * 128 + 64)));
  // overlap_comm is DeepSpeed's switch alone.
  setup = tiny(Stack::kMegatron);
  setup.overlap_comm = OverlapComm::kOn;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOverlapComm);
}

TEST_CASE("stack: the fewest-devices search works from one device under a stack that needs many") {
  TrainingSetup setup;
  setup.stack = Stack::kTorchtitan;  // refused on one device: FSDP2 needs dp·cp of 2 or more
  REQUIRE(estimate_memory(setup).answer.setting == setting_id::kStack);
  const FitSearch search = find_fewest_devices(setup, 3);
  REQUIRE(search.answer.ok());
  REQUIRE(!search.layouts.empty());
  for (const Estimate& layout : search.layouts) {
    CHECK(layout.setup.stack == Stack::kTorchtitan);
    CHECK(layout.answer.ok());
    CHECK(layout.fits);
  }
  // A refusal the layout cannot mend stays a refusal.
  setup.precision = Precision::kFp32;
  CHECK(find_fewest_devices(setup, 3).answer.setting == setting_id::kStack);
}

TEST_CASE("deepspeed: LoRA gathers each layer as stored, the quantised base in NF4") {
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.lora_rank = 8;
  setup.lora_targets = LoraTargets::kAllLinear;
  setup.base_weights = BaseWeights::kNf4;
  const Calculation calc = calculate(setup, 1, true, {false, false});
  REQUIRE(calc.answer.ok());
  const replay::StepDevice device =
      step_device(setup, *calc.shape, calc.placement, calc.stage, calc.layer, calc.whole_terms);
  // A layer's linear weights, Q 64·64, K and V 64·32, O 64·64, gate, up and down 64·224: 55,296
  // in NF4 (0.515869140625 B); its two norms (128) and adapters (10,496: r·(in + out) over the
  // seven) in BF16.
  CHECK(device.layer_trainable_parameters == 10496);
  CHECK(device.layer_weight_bytes == 55296 * 0.515869140625 + 2 * (128 + 10496));
}

TEST_CASE("deepspeed: QLoRA under ZeRO 3 holds the whole quantised model before partitioning it") {
  // Llama 2 7B at 128 tokens: its weights, not the 1 GB reduce bucket, make the peak.
  TrainingSetup setup = tiny(Stack::kDeepSpeed);
  setup.model_id = "llama2-7b";
  setup.lora_rank = 8;
  setup.base_weights = BaseWeights::kNf4;
  const Breakdown whole = calculate(setup, 1, true, {false, false}).whole_terms;
  const Estimate quantised = estimate_memory(setup);
  REQUIRE(quantised.answer.ok());
  // Each of the d = 2 ranks loads the whole model (transformers: no zero.Init for a quantised
  // one): at least twice its shard, and its blocks stay reserved.
  CHECK(quantised.peak_allocated_bytes >= 2 * whole[Term::kWeights]);
  CHECK(quantised.peak_reserved_bytes >= 2 * whole[Term::kWeights]);
  // The timeline starts with the step: the load is before it.
  const std::vector<TimelinePoint> points = memory_timeline(setup);
  REQUIRE(!points.empty());
  CHECK(points.front().phase == "start");
  // A BF16 base is built under zero.Init, partitioned as it is made: no such load.
  setup.base_weights = BaseWeights::kBf16;
  const Breakdown bf16_whole = calculate(setup, 1, true, {false, false}).whole_terms;
  CHECK(estimate_memory(setup).peak_allocated_bytes < 2 * bf16_whole[Term::kWeights]);
}

TEST_CASE("stack: the allocated peak is the reported step's, as the timeline shows it") {
  // In a warm-up micro-batch the cache can hand a gradient a block up to 1 MiB larger than it
  // asks (the large pool does not split so small a remainder): Qwen3 0.6B's tied root gradient
  // under the Trainer, 520,192 B more. The reported step's peak, which the timeline walks, is
  // the estimate's.
  for (const char* model : {"qwen3-0.6b", "qwen3-1.7b", "llama3-8b"}) {
    TrainingSetup setup;
    setup.model_id = model;
    setup.stack = Stack::kHf;
    const Estimate estimate = estimate_memory(setup);
    REQUIRE(estimate.answer.ok());
    double outside = 0;
    for (const StackTerm& term : estimate.stack_terms)
      outside += term.in_allocator ? 0 : term.bytes;
    double peak = 0;
    for (const TimelinePoint& point : memory_timeline(setup)) peak = std::max(peak, point.bytes);
    CAPTURE(model);
    CHECK(peak == estimate.peak_allocated_bytes + outside);
  }
}

}  // namespace stack_test
