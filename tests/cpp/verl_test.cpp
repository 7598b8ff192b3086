// verl's hybrid engine (issue 49: "a verl FSDP run on 8 GPUs answers"), at verl 1dda039b: an FSDP1
// actor in FP32 with BF16 mixed precision, the reference model's parameters on the host, vLLM in
// processes of its own; its weight sync, its packed-token loss and log-probability passes, pinned
// by hand on the tiny shape (h 64, vocabulary 512) and on Qwen3-8B over 8 H100s; the defaults verl
// brings, and what is not modelled refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "estimate/rollout.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"
#include "trainmem/verdict.hpp"

using namespace trainmem;

namespace verl_test {

namespace {

// verl's defaults on `devices` devices: FSDP1 over all of them, full training in bf16-mixed,
// gradient checkpointing, vLLM at 0.5 split over 2, asleep between generations, expandable
// segments; GRPO's loss over the logits.
TrainingSetup under_verl(TrainingSetup setup, int devices) {
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16Mixed;
  setup.layout.data_parallel = devices;
  setup.layout.zero_stage = 3;
  setup.recompute = Recompute::kFull;
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  setup.rollout = Rollout::kVllm;
  setup.rl_trainer = RlTrainer::kVerl;
  setup.rollout_memory_utilization = 0.5;
  setup.rollout_tensor_parallel = 2;
  setup.rollout_sleep_mode = true;
  setup.rollout_prefix_caching = true;
  setup.expandable_segments = true;
  return setup;
}

// The tiny shape's 2 layers with a vocabulary of 4,096 (the logits above a layer's work), 2
// sequences of 128 tokens (a completion of 64) on 2 devices.
TrainingSetup tiny_verl() {
  TrainingSetup setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = harness_tiny_shape(2);
  setup.custom_model.vocab_size = 4096;
  setup.sequence_length = 128;
  setup.micro_batch_sequences = 2;
  setup.completion_length = 64;
  return under_verl(setup, 2);
}

// Qwen3-8B, 4 sequences of 3,072 tokens a device, on 8 H100s.
TrainingSetup qwen3_8b_on_8_h100s() {
  TrainingSetup setup;
  setup.model_id = "qwen3-8b";
  setup.sequence_length = 3072;
  setup.micro_batch_sequences = 4;
  setup.completion_length = 2048;
  return under_verl(setup, 8);
}

// The timeline's point at the end of `phase`: what each term held at its busiest moment.
TimelinePoint point_of(const TrainingSetup& setup, const std::string& phase) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  for (const TimelinePoint& point : memory_timeline(setup)) {
    if (point.phase == phase) return point;
  }
  FAIL("no " << phase << " in the timeline");
  return {};
}

// The timeline's point after layer slot `layer` of `phase`.
TimelinePoint point_at(const TrainingSetup& setup, const std::string& phase, int layer) {
  for (const TimelinePoint& point : memory_timeline(setup)) {
    if (point.phase == phase && point.layer == layer) return point;
  }
  FAIL("no " << phase << " " << layer << " in the timeline");
  return {};
}

double stack_term(const Estimate& estimate, const std::string& id) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == id) return term.bytes;
  }
  return -1;
}

double blocks(double bytes) { return 512 * std::ceil(bytes / 512); }

}  // namespace

TEST_CASE(
    "verl: the policy loss holds the BF16 logits of every packed token and their quotient by the "
    "temperature, 4 B a logit, by hand") {
  // T = 2 × 128 tokens, prompt and response, N = T × 4,096 logits; flash-attn's per-token loss
  // and logsumexp, 8 B a token, beside them.
  const TrainingSetup setup = tiny_verl();
  const double tokens = 2 * 128;
  const double n = tokens * 4096;
  CHECK(point_of(setup, "loss").held[Term::kLogits] ==
        blocks(2 * n) + blocks(2 * n) + blocks(8 * tokens));
  // TRL's loss over the same micro-batch computes the completions' logits alone, in FP32.
  TrainingSetup trl = setup;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(point_of(trl, "loss").held[Term::kLogits] != point_of(setup, "loss").held[Term::kLogits]);
}

TEST_CASE(
    "verl: the log-probability pass holds the logits and their quotient, the entropy's three "
    "per-token figures beside them, by hand") {
  const TrainingSetup setup = tiny_verl();
  const double tokens = 2 * 128;
  const double n = tokens * 4096;
  CHECK(point_of(setup, "log-probabilities").held[Term::kLogits] ==
        blocks(2 * n) + blocks(2 * n) + blocks(12 * tokens));
  // verl's log_prob_micro_batch_size_per_gpu at 8 sequences: four times the micro-batch's logits
  // in the passes, the update's loss as it was.
  TrainingSetup larger = setup;
  larger.log_prob_micro_batch_sequences = 8;
  CHECK(point_of(larger, "log-probabilities").held[Term::kLogits] ==
        blocks(8 * n) + blocks(8 * n) + blocks(48 * tokens));
  CHECK(point_of(larger, "loss").held[Term::kLogits] ==
        point_of(setup, "loss").held[Term::kLogits]);
  // It is verl's.
  TrainingSetup trl = larger;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(estimate_memory(trl).answer.setting == setting_id::kLogProbMicroBatch);
}

TEST_CASE(
    "verl: the weight sync holds FSDP1's cloned chunks, the 2,048 MiB bucket and one parameter "
    "gathered whole in FP32, beside vLLM's woken weights, by hand") {
  const TrainingSetup setup = tiny_verl();
  const TimelinePoint sync = point_of(setup, "weight sync");
  // The tiny shape: the embedding and the output layer 4,096 × 64 each and the final norm's 64; a
  // layer 55,424 (attention 12,288, the MLP 43,008, two norms 128). Each layer's chunk, 4 B a
  // parameter over the 2 devices, and the root's; the bucket; the embedding gathered in FP32.
  const double layer = 55424;
  const double root = 2 * 4096 * 64 + 64;
  const double chunks = 2 * blocks(4 * layer / 2) + blocks(4 * root / 2);
  const double bucket = 2048.0 * 1024 * 1024;
  CHECK(sync.held[Term::kFramework] == chunks + bucket + blocks(4 * 4096 * 64));
  // vLLM's weights woken, 2 B a parameter over its 2 devices; its KV cache not yet.
  const double parameters = 2 * layer + root;
  CHECK(sync.held[Term::kRolloutEngine] == blocks(2 * parameters / 2));
  // The generation: vLLM's whole share, weights and KV cache, in its own pool.
  const TimelinePoint generation = point_of(setup, "generation");
  CHECK(generation.held[Term::kRolloutEngine] ==
        doctest::Approx(rollout_engine_bytes(setup, 0)).epsilon(1e-4));
  CHECK(generation.held[Term::kFramework] < bucket);
}

TEST_CASE(
    "verl: Qwen3-8B on 8 H100s answers each phase, the generation vLLM's share beside the actor's "
    "FP32 shards and AdamW's state, by hand") {
  const TrainingSetup setup = qwen3_8b_on_8_h100s();
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const RolloutFigures rollout = rollout_figures(estimate);
  REQUIRE(rollout.phases.size() == 4);
  CHECK(rollout.phases[0].id == "weight sync");
  CHECK(rollout.phases[1].id == "generation");
  CHECK(rollout.phases[2].id == "log-probabilities");
  CHECK(rollout.phases[3].id == "update");
  const double p = 8190735360;
  // Outside the allocator: the trainer's CUDA context and NCCL, and vLLM's process's own.
  const double outside = stack_term(estimate, "cuda-context") +
                         stack_term(estimate, "nccl-buffers") +
                         stack_term(estimate, "rollout-runtime");
  CHECK(stack_term(estimate, "rollout-runtime") ==
        stack_term(estimate, "cuda-context") + stack_term(estimate, "nccl-buffers"));
  // As it generates the trainer keeps 12 B a parameter over 8 devices (FP32 shards, AdamW's two
  // moments), its gradients freed, beside vLLM's 0.5 of the device (and cuBLAS's workspaces).
  const double engine = rollout.engine_bytes;
  CHECK(rollout.phases[1].allocated_bytes - outside - engine ==
        doctest::Approx(12 * p / 8).epsilon(5e-3));
  // The weight sync, at the last layer's post-hook: the trainer's 12 B, vLLM's BF16 weights over
  // its 2 devices, the root unit gathered in FP32 for the whole traversal (the embedding and the
  // output layer, 151,936 × 4,096 each, and the final norm), the last layer's unit gathered in
  // FP32 (192,946,432 parameters), and every layer's chunk cloned (4 B a parameter over 8).
  const double root = 2.0 * 151936 * 4096 + 4096;
  const double layer = 192946432;
  CHECK(rollout.phases[0].allocated_bytes - outside ==
        doctest::Approx(12 * p / 8 + 2 * p / 2 + 4 * root + 4 * layer + 36 * 4 * layer / 8)
            .epsilon(5e-3));
  // vLLM starts after the actor's model is built: its FP32 shards and the runtime, both
  // processes'.
  CHECK(rollout.startup_bytes == doctest::Approx(4 * p / 8 + outside).epsilon(1e-3));
  CHECK(rollout.starts());
  // The generation decides; it fits an H100.
  CHECK(estimate.most_loaded.total_bytes == rollout.generation_bytes);
  CHECK(estimate.fits);
}

TEST_CASE(
    "verl: the reference model's parameters stay on the host, but for its root unit, which no "
    "backward pass reshards") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  const Estimate without = estimate_memory(setup);
  setup.reference_model = true;
  const Estimate with = estimate_memory(setup);
  REQUIRE(with.answer.ok());
  CHECK(stack_term(with, "reference-model") == -1);
  // Its BF16 root unit (the embedding, the output layer and the final norm), gathered by its first
  // pass and never resharded (fsdp_size -1), beside every phase after; nothing else of it.
  const double root = 2.0 * 151936 * 4096 + 4096;
  for (const std::size_t phase : {0U, 1U, 3U}) {
    CHECK(rollout_figures(with).phases[phase].allocated_bytes -
              rollout_figures(without).phases[phase].allocated_bytes ==
          doctest::Approx(blocks(2 * root)).epsilon(1e-6));
  }
  CHECK(rollout_figures(with).startup_bytes == rollout_figures(without).startup_bytes);
}

TEST_CASE(
    "verl: a mini-batch of several micro-batches holds their unsharded BF16 gradients to the "
    "last one's reduce-scatter (FSDP1's no_sync)") {
  const TrainingSetup one = qwen3_8b_on_8_h100s();
  TrainingSetup two = one;
  two.global_batch_sequences = 2 * 4 * 8;  // two micro-batches of 4 a device
  const RolloutFigures single = rollout_figures(estimate_memory(one));
  const RolloutFigures accumulated = rollout_figures(estimate_memory(two));
  // Every unit's gradient whole, 2 B a parameter on each device (not sharded), at the update's
  // peak; nothing before it.
  const double p = 8190735360;
  CHECK(accumulated.phases[3].allocated_bytes - single.phases[3].allocated_bytes ==
        doctest::Approx(2 * p).epsilon(2e-2));
  CHECK(accumulated.phases[1].allocated_bytes == single.phases[1].allocated_bytes);
}

TEST_CASE(
    "verl: a generation is the step's rollout batch over its engines, which the KV cache's "
    "figures count") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  // Without a rollout batch, the global batch's: 4 sequences a device, its engine's 2 devices'.
  CHECK(rollout_figures(estimate_memory(setup)).rollout_sequences == 4 * 2);
  // 2,560 sequences a step over 4 engines of 2 devices: 640 each, 3,072 tokens apiece.
  setup.rollout_batch_sequences = 2560;
  const RolloutFigures figures = rollout_figures(estimate_memory(setup));
  CHECK(figures.rollout_sequences == 640);
  CHECK(figures.rollout_tokens == 640.0 * 3072);
  // It is verl's.
  TrainingSetup trl = setup;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(estimate_memory(trl).answer.setting == setting_id::kRolloutBatch);
}

TEST_CASE("verl: choosing it brings verl's own defaults, and says which") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  setup.rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  setup.rollout_tensor_parallel = 1;
  setup.rollout_sleep_mode = false;
  setup.rollout_prefix_caching = false;
  setup.expandable_segments = false;
  const std::vector<BroughtSetting> brought =
      bring_stack_defaults(setup, [](const std::string&) { return false; });
  std::vector<std::string> ids;
  for (const BroughtSetting& setting : brought) {
    ids.push_back(setting.setting_id);
    CHECK(setting.by == "verl (1dda039b)");  // verl's, not the hf stack's
  }
  CHECK(ids == std::vector<std::string>{
                   setting_id::kRolloutMemoryUtilization, setting_id::kRolloutSleepMode,
                   setting_id::kRolloutPrefixCaching, setting_id::kExpandableSegments,
                   setting_id::kRolloutTensorParallel});
  CHECK(setup.rollout_memory_utilization == 0.5);
  CHECK(setup.rollout_tensor_parallel == 2);
  CHECK(setup.rollout_sleep_mode);
  CHECK(setup.expandable_segments);
  // A choice the reader made stays theirs.
  TrainingSetup chosen = qwen3_8b_on_8_h100s();
  chosen.rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  CHECK(bring_stack_defaults(chosen, [](const std::string& id) {
          return id == setting_id::kRolloutMemoryUtilization;
        }).empty());
  CHECK(chosen.rollout_memory_utilization == kDefaultRolloutMemoryUtilization);
  // Under TRL nothing is brought.
  TrainingSetup trl = qwen3_8b_on_8_h100s();
  trl.rl_trainer = RlTrainer::kTrl;
  trl.rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  CHECK(bring_stack_defaults(trl, [](const std::string&) { return false; }).empty());
}

TEST_CASE("verl: what it does not run, or is not modelled, is refused naming the RL trainer") {
  const auto refused = [](void (*change)(TrainingSetup&)) {
    TrainingSetup setup = qwen3_8b_on_8_h100s();
    change(setup);
    return estimate_memory(setup).answer;
  };
  const Answer without_engine =
      refused([](TrainingSetup& setup) { setup.rollout = Rollout::kNone; });
  CHECK(without_engine.setting != "");
  for (const Answer& answer :
       {refused([](TrainingSetup& setup) { setup.layout.zero_stage = 0; }),
        refused([](TrainingSetup& setup) { setup.fsdp_version = FsdpVersion::kFsdp2; }),
        refused([](TrainingSetup& setup) { setup.lora_rank = 16; }),
        refused([](TrainingSetup& setup) { setup.precision = Precision::kBf16; }),
        refused([](TrainingSetup& setup) { setup.expandable_segments = false; }),
        refused([](TrainingSetup& setup) { setup.model_id = "qwen3-30b-a3b"; })}) {
    CHECK(answer.setting == setting_id::kRlTrainer);
    CHECK(answer.message.find("trl with vllm.") != std::string::npos);
  }
  CHECK(estimate_memory(qwen3_8b_on_8_h100s()).answer.ok());
}

TEST_CASE(
    "verl with SGLang: its share is mem_fraction_static of the memory free as it starts, its "
    "weights, a KV cache of whole tokens and its request table, by hand") {
  TrainingSetup setup = tiny_verl();
  setup.rollout = Rollout::kSglang;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const RolloutFigures figures = rollout_figures(estimate);
  // As SGLang starts: the actor's FP32 shards, 4 B a parameter over the 2 devices (the tiny
  // shape's 635,200: two layers of 55,424, the embedding and the output layer 4,096 × 64 each, the
  // final norm 64); the trainer's CUDA context and its NCCL communicator over the 2 devices, and
  // SGLang's own context and NCCL communicator over its 2 (16 channels of a 4 MiB Simple FIFO, a
  // 512 KiB LL and a 4,915,200 B LL128 one).
  const double parameters = 2 * 55424 + 2 * 4096 * 64 + 64;
  const double nccl = 16 * (4194304 + 524288 + 4915200);
  const double startup = 4 * parameters / 2 + 2 * (400e6 + nccl);
  CHECK(figures.startup_bytes == doctest::Approx(startup).epsilon(1e-12));
  const double free_at_start = device_total_bytes(setup) - startup;
  CHECK(figures.share_of_bytes == doctest::Approx(free_at_start).epsilon(1e-12));
  // Its BF16 weights over its 2 devices; each token's K and V: 2 layers × the 2 KV heads over 2
  // devices × head dim 16 × 2 B, twice: 128 B. The KV cache is what the weights leave of half the
  // free memory, in whole tokens.
  const double weights = 2 * parameters / 2;
  CHECK(figures.weights_bytes == weights);
  CHECK(figures.kv_bytes_per_token == 128);
  const double tokens = std::floor((0.5 * free_at_start - weights) / 128);
  CHECK(figures.kv_tokens == tokens);
  // The request table beyond: (256 + 1) rows of int32, the context length (the sequence's 128,
  // the tiny shape having no positions of its own) + 4.
  const double table = 4.0 * 257 * (128 + 4);
  CHECK(figures.beyond_share_bytes == table);
  CHECK(figures.engine_bytes == weights + tokens * 128 + table);
  CHECK(stack_term(estimate, "rollout-engine") > 0);
  CHECK(point_of(setup, "generation").held[Term::kRolloutEngine] ==
        doctest::Approx(figures.engine_bytes).epsilon(1e-4));
  // SGLang's share is of the free memory, vLLM's of the total: at the same 0.5, SGLang's is less
  // by half of what the trainer and the two runtimes hold as it starts.
  TrainingSetup vllm = setup;
  vllm.rollout = Rollout::kVllm;
  const RolloutFigures vllm_figures = rollout_figures(estimate_memory(vllm));
  CHECK(vllm_figures.share_of_bytes == device_total_bytes(setup));
  CHECK(figures.engine_bytes - table ==
        doctest::Approx(vllm_figures.engine_bytes - 0.5 * startup).epsilon(1e-6));
  // The largest share that leaves the trainer room, asleep: what the trainer keeps as it
  // generates and the request table beside SGLang's share of the free memory.
  CHECK(figures.largest_utilization ==
        doctest::Approx((estimate.usable_bytes - table - figures.resident_bytes) / free_at_start)
            .epsilon(1e-9));
  // The least that holds one sequence of 128 tokens beside the weights, of the free memory.
  CHECK(figures.least_starting_utilization ==
        doctest::Approx((weights + 128 * 128) / free_at_start).epsilon(1e-12));
}

TEST_CASE(
    "verl with SGLang: the weight sync holds the bucket last sent beside the one filling and the "
    "tensor just gathered, by hand") {
  TrainingSetup setup = tiny_verl();
  setup.rollout = Rollout::kSglang;
  const TimelinePoint sync = point_of(setup, "weight sync");
  // The tiny model's 635,200 parameters are one bucket of 2,048 MiB: at the output layer's
  // gathering nothing has been sent, and the bucket holds every tensor before it in FP32.
  const double layer = 55424;
  const double root = 2 * 4096 * 64 + 64;
  const double head = 4096 * 64;
  const double parameters = 2 * layer + root;
  const double chunks = 2 * blocks(4 * layer / 2) + blocks(4 * root / 2);
  CHECK(sync.held[Term::kFramework] == chunks + blocks(4 * (parameters - head)) + blocks(4 * head));
  // Qwen3-8B in FP32 (layers of 736 MiB and 33,792 B; the embedding and the output layer 2,374 MiB
  // each) fills buckets past 2,048 MiB: at the output layer's gathering the bucket last sent holds
  // 1,856.06 MiB and the one filling 928.08 MiB, 736 MiB more than vLLM's buffer and the same
  // tensor (as a walk of get_named_tensor_buckets over its state dict in Python gives).
  TrainingSetup qwen = qwen3_8b_on_8_h100s();
  qwen.rollout = Rollout::kSglang;
  const SyncBuckets sglang = verl_sync_buckets(qwen, *resolve_model(qwen));
  CHECK(sglang.sent == 1946224640);
  CHECK(sglang.filling == 973162496);
  CHECK(sglang.gathered == 151936.0 * 4096 * 4);
  const SyncBuckets vllm = verl_sync_buckets(qwen3_8b_on_8_h100s(), *resolve_model(qwen));
  CHECK(vllm.sent == 2048.0 * 1024 * 1024);
  CHECK(vllm.filling == 0);
  CHECK(sglang.sent + sglang.filling - vllm.sent ==
        doctest::Approx(736.0 * 1024 * 1024).epsilon(1e-3));
}

TEST_CASE(
    "verl: the host holds the reference model's FP32 shard and, asleep, SGLang's weights, checked "
    "against --host-gb, by hand") {
  TrainingSetup setup = tiny_verl();
  setup.rollout = Rollout::kSglang;
  setup.reference_model = true;
  const double parameters = 2 * 55424 + 2 * 4096 * 64 + 64;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  // The reference's FSDP1 flat shards in FP32 over the 2 devices, pinned, each block a power of
  // two: a layer's 27,712 parameters, 110,848 B, in 131,072; the root's 262,176, 1,048,704 B, in
  // 2,097,152; and as much again for FSDP1's gradient buffer beside them. SGLang's BF16 weights
  // over its 2, backed up unrounded.
  const double pinned_shards = 2 * 131072.0 + 2097152.0;
  CHECK(estimate.host[Term::kWeights] == 2 * pinned_shards);
  CHECK(estimate.host[Term::kRolloutEngine] == doctest::Approx(2 * parameters / 2).epsilon(1e-12));
  CHECK(estimate.host_node_bytes ==
        doctest::Approx(2 * (2 * pinned_shards + parameters)).epsilon(1e-12));
  // vLLM's level-2 sleep discards its weights; without a reference model nothing is on the host.
  TrainingSetup vllm = setup;
  vllm.rollout = Rollout::kVllm;
  CHECK(estimate_memory(vllm).host[Term::kRolloutEngine] == 0);
  vllm.reference_model = false;
  CHECK(estimate_memory(vllm).host.total() == 0);
  // A host that cannot hold it: the verdict says so, whatever the devices hold.
  setup.host_capacity_gb = 0.001;
  const Estimate small = estimate_memory(setup);
  CHECK(!small.host_fits);
  const VerdictAnswer verdict = verdict_of(small, false, {});
  CHECK(verdict.verdict == Verdict::kDoesNotFit);
  CHECK(verdict.reason.find("The node's host does not hold what its 2 devices keep there") == 0);
}

TEST_CASE(
    "verl's offload: the actor's FP32 shards and AdamW's state leave the device between the phases "
    "that use them, by hand") {
  const TrainingSetup on_device = tiny_verl();
  TrainingSetup offloaded = on_device;
  offloaded.offload = Offload::kOptimizerAndWeights;  // param_offload and optimizer_offload
  REQUIRE_MESSAGE(estimate_memory(offloaded).answer.ok(),
                  estimate_memory(offloaded).answer.message);
  // The tiny model's 635,200 parameters over the 2 devices: FP32 shards of 4 B (a block each for
  // the two layers and the root) and AdamW's two FP32 moments, 8 B.
  const double layer = 55424;
  const double root = 2 * 4096 * 64 + 64;
  const double shards = 2 * blocks(4 * layer / 2) + blocks(4 * root / 2);
  const double states = 2 * blocks(8 * layer / 2) + blocks(8 * root / 2);
  // As it generates the device holds neither; it holds both on device alone.
  const TimelinePoint generating = point_of(offloaded, "generation");
  CHECK(generating.held[Term::kWeights] == 0);
  CHECK(generating.held[Term::kOptimizerStates] == 0);
  const TimelinePoint kept = point_of(on_device, "generation");
  CHECK(kept.held[Term::kWeights] == shards);
  CHECK(kept.held[Term::kOptimizerStates] == states);
  // The weight sync and the log-probabilities load the shards; the update loads both.
  CHECK(point_of(offloaded, "weight sync").held[Term::kWeights] == shards);
  CHECK(point_of(offloaded, "weight sync").held[Term::kOptimizerStates] == 0);
  // get_per_tensor_param offloads them again once the state dict is built: the buckets are sent
  // beside none of them.
  TimelinePoint buckets;
  for (const TimelinePoint& point : memory_timeline(offloaded)) {
    if (point.phase == "weight sync") buckets = point;
  }
  CHECK(buckets.held[Term::kWeights] == 0);
  CHECK(buckets.held[Term::kFramework] > 2048.0 * 1024 * 1024);
  CHECK(point_of(offloaded, "backward").held[Term::kWeights] == shards);
  CHECK(point_of(offloaded, "backward").held[Term::kOptimizerStates] == states);
  // The host holds them in pinned blocks of powers of two: each flat parameter's FP32 shard (a
  // layer's 110,848 B in 131,072; the root's 1,048,704 B in 2,097,152) and AdamW's two moments of
  // each. The engine starts beside neither.
  const double parameters = 2 * layer + root;
  const double pinned_shards = 2 * 131072.0 + 2097152.0;
  const Estimate estimate = estimate_memory(offloaded);
  CHECK(estimate.host[Term::kWeights] == pinned_shards);
  CHECK(estimate.host[Term::kOptimizerStates] == 2 * pinned_shards);
  CHECK(rollout_figures(estimate_memory(on_device)).startup_bytes -
            rollout_figures(estimate).startup_bytes ==
        doctest::Approx(4 * parameters / 2).epsilon(1e-9));
  // optimizer_offload alone: the shards stay, AdamW's state goes.
  TrainingSetup states_only = on_device;
  states_only.offload = Offload::kOptimizer;
  CHECK(point_of(states_only, "generation").held[Term::kWeights] == shards);
  CHECK(point_of(states_only, "generation").held[Term::kOptimizerStates] == 0);
  CHECK(estimate_memory(states_only).host[Term::kWeights] == 0);
  // verl's activation offloading is not modelled; TRL's trainer offloads nothing.
  TrainingSetup activations = offloaded;
  activations.offload_activations = true;
  CHECK(estimate_memory(activations).answer.setting == setting_id::kOffloadActivations);
  TrainingSetup trl = offloaded;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(!estimate_memory(trl).answer.ok());
}

TEST_CASE("verl with SGLang: a share that leaves no KV cache does not start, in SGLang's words") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  setup.rollout = Rollout::kSglang;
  setup.rollout_memory_utilization = 0.05;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const RolloutFigures figures = rollout_figures(estimate);
  // 5% of about 80 GB free holds less than Qwen3-8B's 8.2 GB of BF16 weights a device over 2.
  CHECK(figures.kv_tokens == 0);
  CHECK(figures.start_failure == RolloutStartFailure::kNoCacheMemory);
  CHECK(!estimate.fits);
  const std::string failure = rollout_start_failure(figures, setup);
  CHECK(failure.find("SGLang does not start") == 0);
  CHECK(failure.find("Not enough memory. Please try to increase --mem-fraction-static") !=
        std::string::npos);
  // No free-memory check and no max model length: a share of the free memory always fits it, and
  // a request longer than the cache is refused as it comes. At 0.12 the cache holds fewer than
  // Qwen3-8B's 40,960 positions: SGLang starts, where vLLM at the same share would not.
  setup.rollout_memory_utilization = 0.12;
  const RolloutFigures starts = rollout_figures(estimate_memory(setup));
  CHECK(starts.starts());
  CHECK(starts.kv_tokens > 0);
  CHECK(starts.kv_tokens < starts.max_model_length);
  setup.rollout = Rollout::kVllm;
  CHECK(rollout_figures(estimate_memory(setup)).start_failure ==
        RolloutStartFailure::kMaxModelLength);
}

TEST_CASE(
    "verl with SGLang: choosing it brings verl where no trainer was chosen, and TRL refuses it") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  setup.rollout = Rollout::kSglang;
  setup.rl_trainer = RlTrainer::kTrl;
  setup.rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  const std::vector<BroughtSetting> brought =
      bring_stack_defaults(setup, [](const std::string&) { return false; });
  REQUIRE(!brought.empty());
  CHECK(brought.front().setting_id == setting_id::kRlTrainer);
  CHECK(brought.front().by == "SGLang (modelled under verl alone here)");
  CHECK(setup.rl_trainer == RlTrainer::kVerl);
  CHECK(setup.rollout_memory_utilization == 0.5);
  // From the hf stack's own ZeRO 0, verl's FSDP over every device comes with it: the run answers,
  // with no refusal that would send the reader back to trl.
  TrainingSetup from_ddp = qwen3_8b_on_8_h100s();
  from_ddp.rollout = Rollout::kSglang;
  from_ddp.rl_trainer = RlTrainer::kTrl;
  from_ddp.layout.zero_stage = 0;
  std::vector<std::string> ids;
  for (const BroughtSetting& setting :
       bring_stack_defaults(from_ddp, [](const std::string&) { return false; })) {
    ids.push_back(setting.setting_id);
  }
  CHECK(ids.at(0) == setting_id::kRlTrainer);
  CHECK(ids.at(1) == setting_id::kZeroStage);
  CHECK(from_ddp.layout.zero_stage == 3);
  CHECK(estimate_memory(from_ddp).answer.ok());
  // TRL chosen: SGLang refused by the rollout engine's control, naming verl.
  TrainingSetup trl = qwen3_8b_on_8_h100s();
  trl.rollout = Rollout::kSglang;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(bring_stack_defaults(trl, [](const std::string& id) {
          return id == setting_id::kRlTrainer;
        }).empty());
  const Answer refused = estimate_memory(trl).answer;
  CHECK(refused.setting == setting_id::kRollout);
  CHECK(refused.message.find("choose verl") != std::string::npos);
  // vLLM's max model length is not SGLang's.
  TrainingSetup longest = qwen3_8b_on_8_h100s();
  longest.rollout = Rollout::kSglang;
  longest.rollout_max_model_length = 4096;
  CHECK(estimate_memory(longest).answer.setting == setting_id::kRolloutMaxModelLength);
}

// The tiny shape's value model: its 2 layers of 55,424, the embedding (4,096 × 64), the final norm
// and the value head (64 weights and a bias) in place of the output layer.
constexpr double kTinyLayer = 55424;
constexpr double kTinyCriticRoot = 4096.0 * 64 + 64 + 65;

TEST_CASE(
    "verl critic: the value model, the actor's body with a one-output head, keeps its FP32 shards "
    "and AdamW's state beside the actor's through the generation, by hand") {
  TrainingSetup setup = tiny_verl();
  const TimelinePoint without = point_of(setup, "generation");
  setup.critic = true;
  const TimelinePoint with = point_of(setup, "generation");
  // 4 B a parameter over the 2 devices, one block a layer and one for the rest; AdamW's two
  // moments, 8 B.
  CHECK(with.held[Term::kWeights] - without.held[Term::kWeights] ==
        2 * blocks(4 * kTinyLayer / 2) + blocks(4 * kTinyCriticRoot / 2));
  CHECK(with.held[Term::kOptimizerStates] - without.held[Term::kOptimizerStates] ==
        2 * blocks(8 * kTinyLayer / 2) + blocks(8 * kTinyCriticRoot / 2));
  // Its gradients are freed by its optimizer's zero_grad, as the actor's.
  CHECK(with.held[Term::kGradients] == without.held[Term::kGradients]);
  CHECK(value_model_parameters(*resolve_model(setup)) == 2 * kTinyLayer + kTinyCriticRoot);
  // Its terms are listed apart.
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  CHECK(stack_term(estimate, "critic-weights") ==
        2 * blocks(4 * kTinyLayer / 2) + blocks(4 * kTinyCriticRoot / 2));
  CHECK(stack_term(estimate, "critic-optimizer-states") ==
        2 * blocks(8 * kTinyLayer / 2) + blocks(8 * kTinyCriticRoot / 2));
}

TEST_CASE(
    "verl critic: its values and its update are phases of their own, between the "
    "log-probabilities and the actor's update, with no logits") {
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  setup.critic = true;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const RolloutFigures rollout = rollout_figures(estimate);
  REQUIRE(rollout.phases.size() == 6);
  CHECK(rollout.phases[2].id == "log-probabilities");
  CHECK(rollout.phases[3].id == "values");
  CHECK(rollout.phases[4].id == "critic update");
  CHECK(rollout.phases[5].id == "update");
  CHECK(point_of(setup, "values").held[Term::kLogits] == 0);
  CHECK(point_at(setup, "critic backward", 0).held[Term::kLogits] == 0);
  // Every phase holds the critic's 12 B a parameter over 8 devices: the actor's update, against
  // the same run without it.
  TrainingSetup without = qwen3_8b_on_8_h100s();
  const double p = 8190735360;
  const double critic = p - 151936.0 * 4096 + 4096 + 1;
  const Estimate alone = estimate_memory(without);
  const RolloutFigures alone_rollout = rollout_figures(alone);
  CHECK(rollout.phases[5].allocated_bytes - alone_rollout.phases[3].allocated_bytes ==
        doctest::Approx(12 * critic / 8).epsilon(1e-3));
  // vLLM starts after the critic's model is built too: its FP32 shards.
  CHECK(rollout.startup_bytes - alone_rollout.startup_bytes ==
        doctest::Approx(4 * critic / 8).epsilon(1e-9));
}

TEST_CASE(
    "verl critic: its micro-batches pack whole sequences to 32,768 tokens, balanced over a "
    "device's mini-batch, whatever the actor's micro-batch") {
  // A mini-batch of 640 sequences over 8 devices, 80 each of 3,072 tokens: 245,760 tokens in
  // ⌈245,760 / 32,768⌉ = 8 micro-batches of 10 sequences, where the actor runs 4 at a time.
  TrainingSetup setup = qwen3_8b_on_8_h100s();
  setup.global_batch_sequences = 640;
  setup.critic = true;
  const double actor = point_at(setup, "forward", 36).held[Term::kActivations];
  const double critic = point_at(setup, "critic forward", 36).held[Term::kActivations];
  CHECK(critic / actor == doctest::Approx(10.0 / 4).epsilon(1e-3));
  // With one micro-batch of 4 a mini-batch, the critic's is the actor's.
  TrainingSetup one = qwen3_8b_on_8_h100s();
  one.critic = true;
  CHECK(point_at(one, "critic forward", 36).held[Term::kActivations] ==
        point_at(one, "forward", 36).held[Term::kActivations]);
}

TEST_CASE("verl critic: it is verl's, and a sequence longer than its token budget is refused") {
  TrainingSetup trl = qwen3_8b_on_8_h100s();
  trl.rl_trainer = RlTrainer::kTrl;
  trl.critic = true;
  const Answer refused = estimate_memory(trl).answer;
  CHECK(refused.setting == setting_id::kCritic);
  CHECK(refused.message.find("choose verl") != std::string::npos);
  TrainingSetup longest = qwen3_8b_on_8_h100s();
  longest.critic = true;
  longest.sequence_length = 32769;
  longest.micro_batch_sequences = 1;
  CHECK(estimate_memory(longest).answer.setting == setting_id::kCritic);
  longest.sequence_length = 32768;
  CHECK(estimate_memory(longest).answer.setting != setting_id::kCritic);
}

// verl brings ZeRO 3, which one device refuses: the search checks the setup on two, as for a stack
// that needs data parallelism. Where the generation decides (vLLM at 0.8 beside the actor's shards
// and state), verl's own offload empties the device for it: with the host's memory given, the
// search tries it, at its own cost, and the fewest devices drop from 14 to 4. Below the fewest,
// an odd count refuses vLLM's tensor parallelism of 2, so the leanest smaller layout said is on 2.
TEST_CASE("verl fit: the search starts from verl's ZeRO 3 and tries verl's offload") {
  TrainingSetup setup;
  setup.model_id = "qwen3-8b";
  setup.sequence_length = 4096;
  setup.completion_length = 3072;
  setup.micro_batch_sequences = 1;
  setup = under_verl(setup, 1);
  setup.rollout_memory_utilization = 0.8;
  REQUIRE(estimate_memory(setup).answer.setting == setting_id::kZeroStage);

  const FitSearch resident = find_fewest_devices(setup, 1);
  REQUIRE_MESSAGE(resident.answer.ok(), resident.answer.message);
  CHECK(resident.fewest_devices == 14);
  CHECK(resident.layouts.front().setup.offload == Offload::kNone);

  setup.host_capacity_gb = 1000;
  const FitSearch offloaded = find_fewest_devices(setup, 1);
  REQUIRE_MESSAGE(offloaded.answer.ok(), offloaded.answer.message);
  CHECK(offloaded.fewest_devices == 4);
  const Estimate& cheapest = offloaded.layouts.front();
  CHECK(cheapest.setup.offload == Offload::kOptimizerAndWeights);
  CHECK(offloaded.costs.front().reason.find("verl moves the actor's weights to the host") !=
        std::string::npos);
  CHECK(offloaded.why_not_fewer.find("on 2 devices") != std::string::npos);
}

}  // namespace verl_test
