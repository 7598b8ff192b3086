// RL post-training's colocated rollout engine (issue 49's first slice): vLLM's pools as TRL's
// GRPOTrainer makes them beside the trainer, counted by hand on Qwen3-8B and one H100; its KV
// cache against a generation, vLLM's startup check, the utilizations between which the run
// works, and what is not modelled refused by name.
#include "estimate/rollout.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/verdict.hpp"

using namespace trainmem;

namespace rollout_test {

namespace {

// Qwen3-8B (36 layers, 8 key-value heads of 128) under the hf stack on one H100, LoRA r 16 on a
// BF16 base, full recomputation, 8 sequences of 1,024 tokens, vLLM colocated at 0.3.
TrainingSetup grpo_on_one_h100() {
  TrainingSetup setup;
  setup.model_id = "qwen3-8b";
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  setup.lora_rank = 16;
  setup.recompute = Recompute::kFull;
  setup.sequence_length = 1024;
  setup.micro_batch_sequences = 8;
  setup.rollout = Rollout::kVllm;
  return setup;
}

double stack_term(const Estimate& estimate, const std::string& id) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == id) return term.bytes;
  }
  return -1;
}

}  // namespace

TEST_CASE(
    "rollout: vLLM takes gpu_memory_utilization of the device's total, its BF16 weights and a KV "
    "cache of 2·L·k·d·2 B a token, by hand") {
  const TrainingSetup setup = grpo_on_one_h100();
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const RolloutFigures rollout = rollout_figures(estimate);
  REQUIRE(rollout.counted);
  // The H100's total as PyTorch (and vLLM's mem_get_info) reads it.
  const double total = device_total_bytes(setup);
  CHECK(total == estimate.limit_bytes);
  CHECK(rollout.engine_bytes == std::ceil(0.3 * total));
  CHECK(rollout.weights_bytes == 2 * estimate.num_parameters);
  CHECK(rollout.kv_bytes_per_token == 2.0 * 36 * 8 * 128 * 2);
  CHECK(rollout.kv_tokens == std::floor((std::ceil(0.3 * total) - 2 * estimate.num_parameters) /
                                        (2.0 * 36 * 8 * 128 * 2)));
  // One generation: the micro-batch's 8 sequences (one micro-batch a step), 1,024 tokens each.
  CHECK(rollout.rollout_sequences == 8);
  CHECK(rollout.rollout_tokens == 8 * 1024);
  // Two micro-batches a step (a global batch of 16 on one device) generate together.
  TrainingSetup accumulating = setup;
  accumulating.global_batch_sequences = 16;
  CHECK(rollout_figures(estimate_memory(accumulating)).rollout_sequences == 16);
}

TEST_CASE(
    "rollout: the engine is held through the trainer's step, in its caching allocator, and the "
    "utilizations between which the run works follow") {
  const TrainingSetup setup = grpo_on_one_h100();
  const Estimate with_engine = estimate_memory(setup);
  TrainingSetup alone = setup;
  alone.rollout = Rollout::kNone;
  const Estimate trainer = estimate_memory(alone);
  REQUIRE(with_engine.answer.ok());
  REQUIRE(trainer.answer.ok());
  const double engine = rollout_figures(with_engine).engine_bytes;
  // In the allocator's blocks of 512 B.
  CHECK(stack_term(with_engine, "rollout-engine") == 512 * std::ceil(engine / 512));
  CHECK(stack_term(trainer, "rollout-engine") == -1);
  // The trainer beside it as alone, but for where the allocator's segments fall (within 0.01%).
  CHECK(rollout_figures(with_engine).trainer_bytes ==
        doctest::Approx(trainer.most_loaded.total_bytes).epsilon(1e-4));
  // Allocated before the step, held through it: both peaks carry it (the reserved one as whole
  // 2 MiB pages of a segment of its own).
  CHECK(with_engine.peak_allocated_bytes - trainer.peak_allocated_bytes ==
        doctest::Approx(engine).epsilon(1e-4));
  CHECK(with_engine.peak_reserved_bytes - trainer.peak_reserved_bytes >= engine);
  // The most the engine may take: what the usable share leaves beside the trainer; the least that
  // holds a generation: its weights and 8,192 tokens of KV cache.
  const double total = device_total_bytes(setup);
  CHECK(rollout_figures(with_engine).largest_utilization ==
        doctest::Approx((0.9 * total - rollout_figures(with_engine).trainer_bytes) / total));
  CHECK(rollout_figures(with_engine).smallest_utilization ==
        doctest::Approx((rollout_figures(with_engine).weights_bytes + 8192 * 147456.0) / total));
  // No published run measures it: the headroom decides, and says so.
  const VerdictAnswer verdict = verdict_of(with_engine, false);
  CHECK(!verdict.from_band);
  CHECK(verdict.reason.find("No published run measures RL post-training") != std::string::npos);
}

TEST_CASE(
    "rollout: asleep, vLLM is woken for the generation alone, beside what the trainer keeps, the "
    "log-probabilities and the update hold the trainer alone, by hand") {
  TrainingSetup setup = grpo_on_one_h100();
  setup.rollout_sleep_mode = true;
  setup.rollout_memory_utilization = 0.7;
  const Estimate asleep = estimate_memory(setup);
  REQUIRE(asleep.answer.ok());
  TrainingSetup alone = setup;
  alone.rollout = Rollout::kNone;
  alone.rollout_sleep_mode = false;
  alone.rollout_memory_utilization = kDefaultRolloutMemoryUtilization;
  const Estimate trainer = estimate_memory(alone);
  REQUIRE(trainer.answer.ok());
  const RolloutFigures rollout = rollout_figures(asleep);
  REQUIRE(rollout.phases.size() == 3);
  CHECK(rollout.phases[0].id == "generation");
  CHECK(rollout.phases[1].id == "log-probabilities");
  CHECK(rollout.phases[2].id == "update");
  // The update: the trainer's step alone, allocated as alone (what it reserves moves by where the
  // log-probabilities' cached blocks fall, within 1%).
  CHECK(rollout.phases[2].allocated_bytes ==
        doctest::Approx(trainer.peak_allocated_bytes + stack_term(trainer, "cuda-context"))
            .epsilon(1e-4));
  CHECK(rollout.phases[2].bytes == doctest::Approx(trainer.most_loaded.total_bytes).epsilon(1e-2));
  // The generation is the step's peak: the trainer's weights, optimiser state and runtime (its
  // gradients freed, nothing in flight) beside vLLM's share, in a segment of its own.
  REQUIRE(asleep.most_loaded.total_bytes == rollout.generation_bytes);
  CHECK(stack_term(asleep, "rollout-engine") == 512 * std::ceil(rollout.engine_bytes / 512));
  CHECK(asleep.bytes[Term::kGradients] == 0);
  CHECK(asleep.bytes[Term::kActivations] == 0);
  CHECK(asleep.bytes[Term::kLogits] == 0);
  const double resident = asleep.bytes[Term::kWeights] + asleep.bytes[Term::kMasterWeights] +
                          asleep.bytes[Term::kOptimizerStates] + asleep.bytes[Term::kRuntime];
  CHECK(rollout.phases[0].allocated_bytes - stack_term(asleep, "rollout-engine") ==
        doctest::Approx(resident));
  CHECK(rollout.resident_bytes >= resident);
  const double total = device_total_bytes(setup);
  CHECK(rollout.largest_utilization ==
        doctest::Approx((0.9 * total - rollout.resident_bytes) / total));
  // 0.7 of the device beside 17 GB the trainer keeps passes its usable 90%: the generation
  // decides, and the run does not fit, where 0.65 fits.
  REQUIRE(rollout.generation_bytes > asleep.usable_bytes);
  CHECK_FALSE(rollout.phases[0].fits);
  CHECK(rollout.phases[2].fits);
  CHECK_FALSE(asleep.fits);
  const VerdictAnswer verdict = verdict_of(asleep, false);
  CHECK(verdict.verdict == Verdict::kDoesNotFit);
  CHECK(verdict.likely_high_bytes == rollout.generation_bytes);
  CHECK(verdict.reason.find("The generation decides") == 0);
  setup.rollout_memory_utilization = 0.65;
  const Estimate less = estimate_memory(setup);
  CHECK(less.fits);
  CHECK(verdict_of(less, false).verdict == Verdict::kFits);
  // Awake, the same share sits beside the trainer's whole step: 0.65 no longer fits.
  setup.rollout_sleep_mode = false;
  CHECK_FALSE(estimate_memory(setup).fits);
  // Under DDP the trainer also keeps its gradient buckets between updates.
  TrainingSetup ddp = setup;
  ddp.rollout_sleep_mode = true;
  ddp.layout.data_parallel = 2;
  const Estimate replicated = estimate_memory(ddp);
  REQUIRE(replicated.answer.ok());
  CHECK(stack_term(replicated, "ddp-gradient-buckets") > 0);
  CHECK(rollout_figures(replicated).phases[0].allocated_bytes -
            stack_term(replicated, "rollout-engine") ==
        doctest::Approx(replicated.bytes[Term::kWeights] + replicated.bytes[Term::kMasterWeights] +
                        replicated.bytes[Term::kOptimizerStates] +
                        replicated.bytes[Term::kRuntime] +
                        stack_term(replicated, "ddp-gradient-buckets")));
  // Sleep mode is vLLM's.
  alone.rollout_sleep_mode = true;
  CHECK(estimate_memory(alone).answer.setting == setting_id::kRolloutSleepMode);
}

TEST_CASE(
    "rollout: awake, vLLM's share sits in every phase, and the log-probabilities hold the "
    "logits' FP32 copy beside the BF16, by hand") {
  TrainingSetup setup = grpo_on_one_h100();
  setup.logits = true;
  setup.loss = Loss::kGrpo;
  const Estimate awake = estimate_memory(setup);
  REQUIRE(awake.answer.ok());
  const RolloutFigures rollout = rollout_figures(awake);
  REQUIRE(rollout.phases.size() == 3);
  const double engine = stack_term(awake, "rollout-engine");
  // The generation holds what the trainer keeps and the engine. The log-probabilities hold at
  // their peak accelerate's FP32 copy (convert_outputs_to_fp32) beside the BF16 logits of 8
  // sequences' last 513 positions, 6 B each of N = 8 × 513 × 151,936: above one layer's work,
  // and above the last sequence's logsumexp beside the FP32 logits (4N + 4 × 512 × 151,936). The
  // update, GRPO's loss and the step, the most.
  CHECK(rollout.phases[1].allocated_bytes - rollout.phases[0].allocated_bytes ==
        doctest::Approx(6 * 8.0 * 513 * 151936).epsilon(1e-3));
  CHECK(rollout.phases[2].allocated_bytes > rollout.phases[1].allocated_bytes);
  CHECK(rollout.phases[0].allocated_bytes > engine);
  // The run's peaks are the update's.
  CHECK(awake.peak_allocated_bytes + stack_term(awake, "cuda-context") ==
        doctest::Approx(rollout.phases[2].allocated_bytes));
  CHECK(rollout.trainer_bytes == rollout.phases[2].bytes - rollout.engine_bytes);
  // Two micro-batches a generation: the second's pass runs while the first's FP32 logits are still
  // bound (the loop's `outputs` and `logits`), 4N more at the conversion: 10N.
  TrainingSetup two = setup;
  two.global_batch_sequences = 16;
  const RolloutFigures both = rollout_figures(estimate_memory(two));
  CHECK(both.phases[1].allocated_bytes - both.phases[0].allocated_bytes ==
        doctest::Approx(10 * 8.0 * 513 * 151936).epsilon(1e-3));
}

TEST_CASE(
    "rollout: with beta above 0, TRL's reference model: a frozen copy of the model under full "
    "training, held through the step and on the device when vLLM starts, none under LoRA") {
  TrainingSetup setup = grpo_on_one_h100();
  setup.model_id = "qwen3-1.7b";
  setup.lora_rank = 0;
  setup.precision = Precision::kBf16Mixed;
  const Estimate without = estimate_memory(setup);
  setup.reference_model = true;
  const Estimate with = estimate_memory(setup);
  REQUIRE(without.answer.ok());
  REQUIRE(with.answer.ok());
  // Loaded as the policy is (FP32 by TRL's default): 4 B a parameter, in the allocator's blocks.
  const double copy = stack_term(with, "reference-model");
  CHECK(copy == doctest::Approx(4 * with.num_parameters).epsilon(1e-4));
  CHECK(copy == doctest::Approx(with.bytes[Term::kWeights]).epsilon(1e-4));
  CHECK(stack_term(without, "reference-model") == -1);
  CHECK(with.peak_allocated_bytes - without.peak_allocated_bytes ==
        doctest::Approx(copy).epsilon(1e-3));
  // Made before vLLM with device_map "auto": on the device at vLLM's free-memory check.
  CHECK(rollout_figures(with).startup_bytes - rollout_figures(without).startup_bytes == copy);
  // Under DDP it waits on the host until after.
  TrainingSetup ddp = setup;
  ddp.layout.data_parallel = 2;
  TrainingSetup ddp_without = ddp;
  ddp_without.reference_model = false;
  CHECK(rollout_figures(estimate_memory(ddp)).startup_bytes ==
        rollout_figures(estimate_memory(ddp_without)).startup_bytes);
  // Under LoRA the reference is the base with the adapters disabled: no copy, the same pass again.
  TrainingSetup lora = grpo_on_one_h100();
  lora.reference_model = true;
  const Estimate adapters = estimate_memory(lora);
  REQUIRE(adapters.answer.ok());
  CHECK(stack_term(adapters, "reference-model") == -1);
  CHECK(rollout_figures(adapters).phases[1].allocated_bytes ==
        doctest::Approx(
            rollout_figures(estimate_memory(grpo_on_one_h100())).phases[1].allocated_bytes));
  // It is GRPO's, under the hf stack.
  TrainingSetup alone = grpo_on_one_h100();
  alone.rollout = Rollout::kNone;
  alone.reference_model = true;
  CHECK(estimate_memory(alone).answer.setting == setting_id::kReferenceModel);
}

TEST_CASE(
    "rollout: what saves the most offers vLLM's sleep mode and the least utilization that holds a "
    "generation") {
  const SavingsList list = rank_savings(grpo_on_one_h100());
  REQUIRE(list.answer.ok());
  const auto find = [&](const std::string& change) -> const Saving* {
    for (const Saving& saving : list.savings) {
      if (saving.change == change) return &saving;
    }
    return nullptr;
  };
  const Saving* sleep = find("rollout-sleep-mode");
  REQUIRE(sleep != nullptr);
  CHECK(sleep->estimate.setup.rollout_sleep_mode);
  // The least: its weights and 8,192 tokens of KV cache (TRL's max model length set to the
  // sequence length, which the model's 40,960 positions would exceed), rounded up to a hundredth.
  const Saving* least = find("rollout-memory-utilization");
  REQUIRE(least != nullptr);
  const double total = device_total_bytes(grpo_on_one_h100());
  const double share = (2 * list.baseline.num_parameters + 8192 * 147456.0) / total;
  CHECK(least->estimate.setup.rollout_memory_utilization == std::ceil(share * 100) / 100);
  CHECK(least->estimate.setup.rollout_max_model_length == 1024);
  CHECK(least->label.find("the least that holds its weights and a generation's KV cache (its max "
                          "model length 1,024)") != std::string::npos);
  CHECK(least->bytes_saved > 0);
  // Asleep at the least already, neither is offered.
  TrainingSetup settled = least->estimate.setup;
  settled.rollout_sleep_mode = true;
  const SavingsList none = rank_savings(settled);
  CHECK(std::none_of(none.savings.begin(), none.savings.end(),
                     [](const Saving& saving) { return saving.change.rfind("rollout-", 0) == 0; }));
}

TEST_CASE(
    "rollout: vLLM does not start where the trainer's weights leave less free than its share, "
    "and the run does not fit") {
  // Full training in bf16-mixed holds FP32 weights when TRL makes vLLM: 4 B a parameter and the
  // CUDA context, against 0.7 of the device.
  TrainingSetup setup = grpo_on_one_h100();
  setup.lora_rank = 0;
  setup.precision = Precision::kBf16Mixed;
  setup.rollout_memory_utilization = 0.7;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const RolloutFigures rollout = rollout_figures(estimate);
  CHECK(rollout.startup_bytes ==
        doctest::Approx(4 * estimate.num_parameters + stack_term(estimate, "cuda-context")));
  CHECK_FALSE(rollout.starts());
  CHECK_FALSE(estimate.fits);
  const VerdictAnswer verdict = verdict_of(estimate, false);
  CHECK(verdict.verdict == Verdict::kDoesNotFit);
  CHECK(verdict.reason.find("vLLM does not start") != std::string::npos);
  // Under FSDP the model is not on the device when TRL makes vLLM: the check is not derived.
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  const Estimate sharded = estimate_memory(setup);
  REQUIRE(sharded.answer.ok());
  CHECK(rollout_figures(sharded).startup_bytes < 0);
  CHECK(rollout_figures(sharded).starts());
}

TEST_CASE(
    "rollout: vLLM does not start where its share leaves no KV cache, or one short of a request "
    "of its max model length") {
  // On an A100 40 GB, 0.3 of it is less than Qwen3-8B's BF16 weights: no cache blocks.
  TrainingSetup setup = grpo_on_one_h100();
  setup.device_id = "a100-40gb";
  Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  RolloutFigures rollout = rollout_figures(estimate);
  CHECK(rollout.kv_tokens == 0);
  CHECK(rollout.start_failure == RolloutStartFailure::kNoCacheMemory);
  CHECK_FALSE(estimate.fits);
  CHECK(verdict_of(estimate, false).reason.find("No available memory for the cache blocks") !=
        std::string::npos);
  // Llama 3.1 8B's 131,072 positions, vLLM's max model length where TRL sets none: 0.3 of an H100
  // caches fewer tokens (131,072 B a token), and vLLM refuses to start.
  setup = grpo_on_one_h100();
  setup.model_id = "llama3.1-8b";
  estimate = estimate_memory(setup);
  rollout = rollout_figures(estimate);
  CHECK(rollout.max_model_length == 131072);
  CHECK(rollout.kv_tokens < 131072);
  CHECK(rollout.start_failure == RolloutStartFailure::kMaxModelLength);
  CHECK(verdict_of(estimate, false).verdict == Verdict::kDoesNotFit);
  // The least share that starts: its weights and one request of 131,072 tokens.
  const double total = device_total_bytes(setup);
  CHECK(rollout.least_starting_utilization ==
        doctest::Approx((rollout.weights_bytes + 131072.0 * 131072) / total));
  // With TRL's vllm_max_model_length at 4,096 it starts, and the run fits.
  setup.rollout_max_model_length = 4096;
  estimate = estimate_memory(setup);
  CHECK(rollout_figures(estimate).starts());
  CHECK(estimate.fits);
  // A max model length short of the sequence is refused by its control.
  setup.rollout_max_model_length = 512;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRolloutMaxModelLength);
}

TEST_CASE(
    "rollout: vLLM's tensor parallelism splits its weights and key-value heads, and its devices "
    "generate their prompts together") {
  // Two devices (DDP), one engine over both: half the weights and of the 8 key-value heads on
  // each, and the two devices' 8 sequences each generated by both.
  TrainingSetup setup = grpo_on_one_h100();
  setup.layout.data_parallel = 2;
  setup.rollout_tensor_parallel = 2;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const RolloutFigures rollout = rollout_figures(estimate);
  CHECK(rollout.weights_bytes == 2 * estimate.num_parameters / 2);
  CHECK(rollout.kv_bytes_per_token == 2.0 * 36 * 4 * 128 * 2);
  CHECK(rollout.rollout_sequences == 16);
  CHECK(rollout.rollout_tokens == 16 * 1024);
  // Past the 8 key-value heads vLLM replicates them: one a device.
  setup.layout.data_parallel = 16;
  setup.rollout_tensor_parallel = 16;
  const Estimate replicated = estimate_memory(setup);
  REQUIRE(replicated.answer.ok());
  CHECK(rollout_figures(replicated).kv_bytes_per_token == 2.0 * 36 * 1 * 128 * 2);
  // A size that splits neither head count evenly is refused, and so is one that does not divide d.
  setup.layout.data_parallel = 3;
  setup.rollout_tensor_parallel = 3;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRolloutTensorParallel);
  setup.layout.data_parallel = 2;
  setup.rollout_tensor_parallel = 4;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRolloutTensorParallel);
}

TEST_CASE("rollout: what is not modelled is refused, naming the setting") {
  // The colocated engine is TRL's, over transformers' Trainer.
  TrainingSetup setup = grpo_on_one_h100();
  setup.stack = Stack::kTorchtune;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRollout);
  // A quantised base: TRL hands vLLM its quantisation.
  setup = grpo_on_one_h100();
  setup.base_weights = BaseWeights::kNf4;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kBaseWeights);
  // Latent attention's compressed cache.
  setup = grpo_on_one_h100();
  setup.model_id = "deepseek-v3";
  const Answer latent = estimate_memory(setup).answer;
  CHECK(latent.setting == setting_id::kRollout);
  CHECK(latent.message.find("latent attention") != std::string::npos);
  // gpt-oss: vLLM loads its MXFP4 experts as they are.
  setup.model_id = "gpt-oss-20b";
  CHECK(estimate_memory(setup).answer.message.find("MXFP4") != std::string::npos);
  // The utilization is the engine's: set without one, refused.
  setup = grpo_on_one_h100();
  setup.rollout = Rollout::kNone;
  setup.rollout_memory_utilization = 0.5;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kRolloutMemoryUtilization);
  setup.rollout = Rollout::kVllm;
  CHECK(estimate_memory(setup).answer.ok());
}

}  // namespace rollout_test
