// verl's launch line (issue 49: "in the CLI, --launch for a verl config"), python3 -m
// verl.trainer.main_ppo and Hydra's overrides, read as verl 1dda039b runs its colocated GRPO: the
// example under docs/examples opens to the same figures as its flags; what bears on memory and is
// not modelled is refused by its key; what is not read leaves no verdict.
#include <doctest/doctest.h>

#include <string>

#include "example_files.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace verl_line_test {

namespace {

using fixtures::example;

LaunchConfig read(const std::string& text) {
  return read_launch_config(text, TrainingSetup{}, LaunchContext{});
}

// The smallest line verl runs GRPO from, with `extra` overrides.
std::string line(const std::string& extra) {
  return "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
         "actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.rollout.name=vllm "
         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
         "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 " +
         extra + "\n";
}

bool lists(const LaunchConfig& launch, const std::string& key) {
  for (const std::string& each : launch.not_understood) {
    if (each == key) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("verl line: the example opens to the same figures as its flags, every key read") {
  const LaunchConfig launch = read(example("verl-grpo-qwen3-8b.sh"));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.not_understood.empty());
  TrainingSetup flags;
  flags.model_id = "qwen3-8b";
  flags.stack = Stack::kHf;
  flags.precision = Precision::kBf16Mixed;
  flags.layout.data_parallel = 8;
  flags.layout.zero_stage = 3;
  flags.recompute = Recompute::kFull;
  flags.sequence_length = 1024 + 2048;
  flags.completion_length = 2048;
  flags.micro_batch_sequences = 4;
  flags.global_batch_sequences = 128 * 5;  // ppo_mini_batch_size × rollout.n
  flags.logits = true;
  flags.loss = Loss::kGrpo;
  flags.rollout = Rollout::kVllm;
  flags.rl_trainer = RlTrainer::kVerl;
  flags.rollout_memory_utilization = 0.6;
  flags.rollout_tensor_parallel = 2;
  flags.rollout_sleep_mode = true;  // free_cache_engine, verl's default
  flags.expandable_segments = true;
  flags.reference_model = true;  // use_kl_loss
  const Estimate file = estimate_memory(launch.setup);
  const Estimate by_hand = estimate_memory(flags);
  REQUIRE_MESSAGE(file.answer.ok(), file.answer.message);
  CHECK(file.most_loaded.total_bytes == by_hand.most_loaded.total_bytes);
  CHECK(file.peak_allocated_bytes == by_hand.peak_allocated_bytes);
  CHECK(file.peak_reserved_bytes == by_hand.peak_reserved_bytes);
  CHECK(launch.kind.find("verl") != std::string::npos);
}

TEST_CASE("verl line: verl's own defaults where the line sets nothing") {
  const LaunchConfig launch = read(line(""));
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  // gpu_memory_utilization 0.5 over 2 devices, free_cache_engine, 8 devices of one node, prompts
  // and responses of 512, gradient checkpointing, no reference model.
  CHECK(launch.setup.rollout_memory_utilization == 0.5);
  CHECK(launch.setup.rollout_tensor_parallel == 2);
  CHECK(launch.setup.rollout_sleep_mode);
  CHECK(launch.setup.layout.data_parallel == 8);
  CHECK(launch.setup.sequence_length == 1024);
  CHECK(launch.setup.completion_length == 512);
  CHECK(launch.setup.recompute == Recompute::kFull);
  CHECK(!launch.setup.reference_model);
  CHECK(launch.setup.global_batch_sequences == 256);
  // The step generates data.train_batch_size × n at once: the rollout batch.
  CHECK(launch.setup.rollout_batch_sequences == 1024);
  // A key given twice is Hydra's last (verl's own examples repeat some).
  const LaunchConfig twice =
      read(line("actor_rollout_ref.rollout.n=2 actor_rollout_ref.rollout.n=4"));
  REQUIRE_MESSAGE(twice.answer.ok(), twice.answer.message);
  CHECK(twice.setup.global_batch_sequences == 256 * 4);
  CHECK(twice.not_understood.empty());
}

TEST_CASE("verl line: what bears on memory and is not modelled is refused by its key") {
  const auto refused_key = [](const std::string& text) {
    const LaunchConfig launch = read(text);
    CHECK(!launch.answer.ok());
    return launch.answer.setting;
  };
  // gae, verl's default estimator, trains a critic of critic.model.path, whose default is not the
  // actor's model.
  CHECK(refused_key("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
                    "actor_rollout_ref.rollout.name=vllm "
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
                    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4\n") ==
        "critic.model.path");
  CHECK(refused_key(line("algorithm.adv_estimator=ppo")) == "algorithm.adv_estimator");
  CHECK(refused_key(line("actor_rollout_ref.actor.strategy=fsdp2")) ==
        "actor_rollout_ref.actor.strategy");
  CHECK(refused_key(line("actor_rollout_ref.actor.fsdp_config.param_offload=True")) ==
        "actor_rollout_ref.actor.fsdp_config.param_offload");
  CHECK(refused_key(line("actor_rollout_ref.model.lora_rank=32")) ==
        "actor_rollout_ref.model.lora_rank");
  CHECK(refused_key(line("actor_rollout_ref.rollout.name=trtllm")) ==
        "actor_rollout_ref.rollout.name");
  CHECK(refused_key(line("actor_rollout_ref.actor.entropy_coeff=0.001")) ==
        "actor_rollout_ref.actor.entropy_coeff");
  CHECK(refused_key(line("trainer.use_v1=False")) == "trainer.use_v1");
  // A key of January 2026's verl dates the line.
  CHECK(refused_key(line("trainer.use_legacy_worker_impl=auto")) ==
        "trainer.use_legacy_worker_impl");
  // The shell's variable in a key that bears on memory; one in the data's files is let be.
  CHECK(refused_key(line("data.max_response_length=$RESPONSE")) == "data.max_response_length");
  CHECK(read(line("data.train_files=$HOME/data/train.parquet")).answer.ok());
  // The micro-batch verl requires without dynamic batches, and one that does not split the
  // mini-batch.
  CHECK(refused_key("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                    "actor_rollout_ref.model.path=Qwen/Qwen3-8B "
                    "actor_rollout_ref.rollout.name=vllm\n") ==
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu");
  CHECK(refused_key(line("actor_rollout_ref.actor.ppo_mini_batch_size=6")) ==
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu");
  CHECK(refused_key(line("data.train_batch_size=128")) ==
        "actor_rollout_ref.actor.ppo_mini_batch_size");
  // The log-probability micro-batches verl asserts: the actor's, and the reference's with one.
  CHECK(refused_key("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                    "actor_rollout_ref.model.path=Qwen/Qwen3-8B "
                    "actor_rollout_ref.rollout.name=vllm "
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4\n") ==
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu");
  CHECK(refused_key(line("actor_rollout_ref.actor.use_kl_loss=True")) ==
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu");
  // Root units resharded after no-grad passes (fsdp_size above 1), an eager entropy.
  CHECK(refused_key(line("actor_rollout_ref.actor.fsdp_config.fsdp_size=8")) ==
        "actor_rollout_ref.actor.fsdp_config.fsdp_size");
  CHECK(refused_key(line("actor_rollout_ref.actor.use_torch_compile=False")) ==
        "actor_rollout_ref.actor.use_torch_compile");
  // A script's array of overrides, which only the shell expands.
  const LaunchConfig array = read(line("\"${DATA[@]}\""));
  CHECK(array.answer.message.find("expand it first") != std::string::npos);
}

TEST_CASE("verl line: what bears on memory and is not read leaves no verdict, named") {
  // Dynamic batches: made up to a token budget, counted at its whole sequences.
  const LaunchConfig dynamic =
      read(line("actor_rollout_ref.actor.use_dynamic_bsz=True "
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192"));
  REQUIRE_MESSAGE(dynamic.answer.ok(), dynamic.answer.message);
  CHECK(lists(dynamic, "actor_rollout_ref.actor.use_dynamic_bsz"));
  CHECK(dynamic.setup.micro_batch_sequences == 8);
  // The rollout's lengths, the data's by default, cap each prompt and response.
  const LaunchConfig capped = read(line("actor_rollout_ref.rollout.response_length=256"));
  REQUIRE_MESSAGE(capped.answer.ok(), capped.answer.message);
  CHECK(capped.setup.sequence_length == 512 + 256);
  CHECK(capped.setup.completion_length == 256);
  // Under dynamic batches the mini-batch need only split over the devices: 16 × 5 sequences over
  // 8, each device's 10 in micro-batches of the budget's 8 whole sequences of 2,048 (16,384
  // tokens, verl's default), the last one whole: 16 a device.
  const LaunchConfig packed =
      read(line("data.max_prompt_length=1024 data.max_response_length=1024 "
                "actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.rollout.n=5 "
                "actor_rollout_ref.actor.use_dynamic_bsz=True"));
  REQUIRE_MESSAGE(packed.answer.ok(), packed.answer.message);
  CHECK(packed.setup.micro_batch_sequences == 8);
  CHECK(packed.setup.global_batch_sequences == 8 * 8 * 2);
  // The actor's log-probability micro-batch, read; a reference's other than it, not.
  const LaunchConfig log_prob =
      read(line("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16"));
  REQUIRE_MESSAGE(log_prob.answer.ok(), log_prob.answer.message);
  CHECK(log_prob.not_understood.empty());
  CHECK(log_prob.setup.log_prob_micro_batch_sequences == 16);
  CHECK(read(line("")).setup.log_prob_micro_batch_sequences == 0);
  CHECK(lists(read(line("actor_rollout_ref.actor.use_kl_loss=True "
                        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8")),
              "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"));
  // The script's own arguments passed on, and a key verl has that is not read.
  CHECK(lists(read(line("$@")), "$@"));
  CHECK(lists(read(line("actor_rollout_ref.rollout.some_new_key=1")),
              "actor_rollout_ref.rollout.some_new_key"));
}

TEST_CASE("verl line: rollout.name sglang is read as SGLang under verl, its request table at 256") {
  const LaunchConfig launch = read(example("verl-grpo-qwen3-8b.sh"));
  std::string text = example("verl-grpo-qwen3-8b.sh");
  const std::string vllm = "actor_rollout_ref.rollout.name=vllm";
  REQUIRE(text.find(vllm) != std::string::npos);
  text.replace(text.find(vllm), vllm.size(), "actor_rollout_ref.rollout.name=sglang");
  const LaunchConfig sglang = read(text);
  REQUIRE_MESSAGE(sglang.answer.ok(), sglang.answer.message);
  CHECK(sglang.not_understood.empty());
  CHECK(sglang.setup.rollout == Rollout::kSglang);
  CHECK(sglang.setup.rl_trainer == RlTrainer::kVerl);
  // Every other setting as the vLLM line's.
  for (const Setting& setting : settings()) {
    if (setting.id == setting_id::kRollout) continue;
    CHECK_MESSAGE(setting_text(sglang.setup, setting.id) == setting_text(launch.setup, setting.id),
                  setting.id);
  }
  // max_model_len is vLLM's (verl passes SGLang no context length): read and let be.
  const LaunchConfig longest = read(
      line("actor_rollout_ref.rollout.name=sglang actor_rollout_ref.rollout.max_model_len=4096"));
  REQUIRE_MESSAGE(longest.answer.ok(), longest.answer.message);
  CHECK(longest.setup.rollout_max_model_length == 0);
  // Its running requests size the request table, counted at verl's 256: another leaves no verdict.
  CHECK(
      read(line("actor_rollout_ref.rollout.name=sglang actor_rollout_ref.rollout.max_num_seqs=256"))
          .not_understood.empty());
  CHECK(lists(read(line("actor_rollout_ref.rollout.name=sglang "
                        "actor_rollout_ref.rollout.max_num_seqs=1024")),
              "actor_rollout_ref.rollout.max_num_seqs"));
  CHECK(read(line("actor_rollout_ref.rollout.max_num_seqs=1024")).not_understood.empty());
}

TEST_CASE("verl line: the actor's optimizer_offload and param_offload read as verl's offload") {
  const LaunchConfig both =
      read(line("actor_rollout_ref.actor.fsdp_config.param_offload=True "
                "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True"));
  REQUIRE_MESSAGE(both.answer.ok(), both.answer.message);
  CHECK(both.setup.offload == Offload::kOptimizerAndWeights);
  CHECK(both.not_understood.empty());
  const LaunchConfig states =
      read(line("actor_rollout_ref.actor.fsdp_config.optimizer_offload=True"));
  REQUIRE_MESSAGE(states.answer.ok(), states.answer.message);
  CHECK(states.setup.offload == Offload::kOptimizer);
  CHECK(read(line("")).setup.offload == Offload::kNone);
}

TEST_CASE("verl line: gae trains the critic, of the actor's model, as verl 1dda039b runs it") {
  const std::string critic =
      "critic.model.path=Qwen/Qwen3-8B critic.ppo_micro_batch_size_per_gpu=4 ";
  const LaunchConfig gae = read(line("algorithm.adv_estimator=gae " + critic));
  REQUIRE_MESSAGE(gae.answer.ok(), gae.answer.message);
  CHECK(gae.setup.critic);
  CHECK(gae.not_understood.empty());
  CHECK(!read(line("")).setup.critic);
  // critic.enable decides over the estimator (need_critic).
  CHECK(read(line("critic.enable=True " + critic)).setup.critic);
  CHECK(!read(line("algorithm.adv_estimator=gae critic.enable=False")).setup.critic);
  const LaunchConfig unset = read(line("critic.enable=null"));
  CHECK(!unset.setup.critic);
  CHECK(unset.not_understood.empty());
  CHECK(read(line("algorithm.adv_estimator=gae critic.enable=null " + critic)).setup.critic);
  const auto refused_key = [&](const std::string& extra) {
    const LaunchConfig launch = read(line("algorithm.adv_estimator=gae " + extra));
    CHECK(!launch.answer.ok());
    return launch.answer.setting;
  };
  CHECK(refused_key("critic.model.path=Qwen/Qwen3-4B critic.ppo_micro_batch_size_per_gpu=4") ==
        "critic.model.path");
  CHECK(refused_key(critic + "critic.fsdp.optimizer_offload=True") ==
        "critic.fsdp.optimizer_offload");
  CHECK(refused_key(critic + "critic.strategy=fsdp2") == "critic.strategy");
  CHECK(refused_key(critic + "critic.model.enable_gradient_checkpointing=False") ==
        "critic.model.enable_gradient_checkpointing");
  CHECK(refused_key(critic + "critic.ppo_mini_batch_size=64") == "critic.ppo_mini_batch_size");
  // CriticConfig asks a micro-batch where batches are not dynamic.
  CHECK(refused_key("critic.model.path=Qwen/Qwen3-8B") == "critic.ppo_micro_batch_size_per_gpu");
  CHECK(refused_key(critic + "critic.fsdp.fsdp_size=2") == "critic.fsdp.fsdp_size");
  CHECK(refused_key(critic + "critic.ppo_micro_batch_size=8") == "critic.ppo_micro_batch_size");
  // A critic's key not read withholds the verdict; without the critic, its keys bear on nothing.
  CHECK(lists(read(line("algorithm.adv_estimator=gae " + critic +
                        "critic.model.override_config.attention_dropout=0.1")),
              "critic.model.override_config.attention_dropout"));
  const LaunchConfig grpo =
      read(line("critic.model.path=$MODEL critic.model.override_config.attention_dropout=0.1"));
  CHECK(grpo.answer.ok());
  CHECK(grpo.not_understood.empty());
  CHECK(refused_key(critic + "critic.model.enable_activation_offload=$OFFLOAD") ==
        "critic.model.enable_activation_offload");
  // January 2026's critic config dates the line.
  CHECK(refused_key(critic + "critic.model.fsdp_config.param_offload=False") ==
        "critic.model.fsdp_config.param_offload");
}

// verl 1dda039b serves a reward model (reward.reward_model) as a vLLM or SGLang server of its own:
// on the trainer's devices it is refused; on devices of its own (enable_resource_pool) the
// trainer's devices are answered as without it, its keys set aside and a note saying so. The
// legacy reward_model.enable, which main_ppo no longer reads, is refused naming the key it reads.
TEST_CASE("verl line: a reward model on devices of its own, and the legacy key") {
  const LaunchConfig legacy = read(line("reward_model.enable=True"));
  CHECK(legacy.answer.setting == "reward_model.enable");
  CHECK(legacy.answer.message.find("reward.reward_model.enable") != std::string::npos);
  const LaunchConfig colocated = read(line("reward.reward_model.enable=True"));
  CHECK(colocated.answer.setting == "reward.reward_model.enable");
  CHECK(colocated.answer.message.find("enable_resource_pool") != std::string::npos);
  const LaunchConfig apart =
      read(line("reward.reward_model.enable=True reward.reward_model.enable_resource_pool=True "
                "reward.reward_model.n_gpus_per_node=8 reward.reward_model.nnodes=1 "
                "reward.reward_model.model.path=$REWARD_MODEL "
                "reward.reward_model.rollout.name=vllm "
                "reward.reward_model.rollout.gpu_memory_utilization=0.8"));
  REQUIRE_MESSAGE(apart.answer.ok(), apart.answer.message);
  CHECK(apart.not_understood.empty());
  const LaunchConfig without = read(line(""));
  REQUIRE(without.answer.ok());
  CHECK(estimate_memory(apart.setup).peak_reserved_bytes ==
        estimate_memory(without.setup).peak_reserved_bytes);
  bool noted = false;
  for (const std::string& note : apart.notes) {
    noted = noted || note.find("devices of its own") != std::string::npos;
  }
  CHECK(noted);
}

}  // namespace verl_line_test
