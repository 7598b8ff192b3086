// RL post-training's settings: the rollout engine that generates on the trainer's devices, and
// its share of their memory (rollout.hpp counts them).
#include "settings/check_rollout.hpp"
#include "settings/setting_rows.hpp"

namespace trainmem::setting_rows {

void add_rollout(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(entry.later()); };
  add(row<&TrainingSetup::rollout>(
          id::kRollout, "Rollout engine",
          "RL post-training: the engine that generates the rollouts on the trainer's own devices "
          "(vLLM colocated under TRL's GRPOTrainer or verl; SGLang under verl)",
          "rollout")
          .among(choices<Rollout>())
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout != Rollout::kSglang || setup.rl_trainer == RlTrainer::kVerl;
              },
              "SGLang generates for verl's hybrid engine here (TRL's GRPOTrainer drives vLLM "
              "alone): choose verl, or vllm.")
          .only_under({Stack::kHf},
                      "the colocated rollout engine is modelled as TRL's GRPOTrainer and verl "
                      "run it, over the hf stack's replay",
                      "The colocated rollout engine is modelled as TRL's GRPOTrainer and verl run "
                      "it, over the hf stack's replay; choose the hf stack, or no rollout engine.")
          .page("rl", "",
                "vLLM or SGLang generating on the trainer's own devices, its weights and KV "
                "cache beside the trainer's: vLLM under TRL's GRPOTrainer "
                "(<code>vllm_mode=\"colocate\"</code>) or verl, SGLang under verl."));
  add(row<&TrainingSetup::rl_trainer>(
          id::kRlTrainer, "RL trainer",
          "The trainer around the rollout engine: TRL's GRPOTrainer (vLLM in the trainer's "
          "process), "
          "or verl's hybrid engine (an FSDP1 actor in FP32, the reference model on the host, "
          "vLLM or SGLang in processes of their own, woken by a weight sync)",
          "rlTrainer")
          .among(choices<RlTrainer>())
          .requires_values(id::kRollout, {"vllm", "sglang"},
                           "the RL trainer drives the rollout engine")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl || setup.rollout != Rollout::kNone;
              },
              "The RL trainer drives the rollout engine: choose vllm or sglang, or trl.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl || setup.layout.zero_stage == 3;
              },
              "verl's actor is an FSDP model sharded over every device (FULL_SHARD, fsdp_size "
              "-1): set ZeRO to 3, or choose trl with vllm.")

          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl ||
                       setup.fsdp_version == FsdpVersion::kFsdp1;
              },
              "verl's strategy fsdp2 wraps its units otherwise than accelerate's FSDP2, not "
              "modelled: choose fsdp1 (verl's default strategy, fsdp), or trl with vllm.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl || setup.lora_rank == 0;
              },
              "verl's LoRA (its adapters synced to vLLM apart from the base) is not modelled: set "
              "the LoRA rank to 0, or choose trl with vllm.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl ||
                       setup.precision == Precision::kBf16Mixed;
              },
              "verl's actor keeps FP32 parameters and computes in BF16 (model_dtype fp32, "
              "FSDP's MixedPrecision): choose bf16-mixed, or trl with vllm.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl || !setup.reentrant_checkpointing;
              },
              "verl checkpoints with use_reentrant=False: untick reentrant checkpointing, or "
              "choose trl with vllm.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kTrl || setup.expandable_segments;
              },
              "verl turns expandable segments on itself after each weight sync "
              "(set_expandable_segments(True)): tick them, or choose trl with vllm.")
          .page("rl", "",
                "TRL's GRPOTrainer runs vLLM in its own process. verl's hybrid engine keeps an "
                "FSDP1 actor in FP32 and its reference model on the host, and runs vLLM or "
                "SGLang in processes of their own, woken each step by a weight sync."));
  add(row<&TrainingSetup::log_prob_micro_batch_sequences>(
          id::kLogProbMicroBatch, "Log-probability micro-batch",
          "verl's log_prob_micro_batch_size_per_gpu: the sequences each device runs at once in "
          "its log-probability passes (0: the micro-batch's)",
          "logProbMicroBatch")
          .bounds(0, kMaxMicroBatchSequences)
          .requires_value(id::kRlTrainer, "verl", "the log-probability micro-batch is verl's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kVerl ||
                       setup.log_prob_micro_batch_sequences == 0;
              },
              "The log-probability micro-batch is verl's (TRL's is the micro-batch): choose verl, "
              "or 0.")
          .page("rl",
                "verl's <code>log_prob_micro_batch_size_per_gpu</code> (0: the micro-batch's)",
                "The sequences each device runs at once in verl's log-probability passes; their "
                "logits grow with it."));
  add(row<&TrainingSetup::rollout_batch_sequences>(
          id::kRolloutBatch, "Rollout batch",
          "verl's data.train_batch_size × rollout.n: the sequences each step generates over every "
          "device at once, which its KV cache serves (0: the global batch's)",
          "rolloutBatch")
          .bounds(0, kMaxGlobalBatchSequences)
          .requires_value(id::kRlTrainer, "verl", "the rollout batch is verl's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kVerl || setup.rollout_batch_sequences == 0;
              },
              "The rollout batch is verl's (TRL's generation is its global batch): choose verl, "
              "or 0.")
          .page("rl", "verl's rollout batch (<code>train_batch_size</code> × <code>n</code>)",
                "The sequences each step generates at once over every device: what vLLM's KV "
                "cache must hold to generate them without waiting."));
  add(row<&TrainingSetup::critic>(
          id::kCritic, "Critic",
          "verl's PPO critic (algorithm.adv_estimator=gae, verl's default): the actor's model "
          "with a value head in place of its output layer (AutoModelForTokenClassification, one "
          "label), an FSDP1 model in FP32 with its own AdamW state, resident through every phase "
          "in the actor's process; its values computed after the log-probabilities, and its "
          "update before the actor's",
          "critic")
          .requires_value(id::kRlTrainer, "verl", "the critic is verl's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rl_trainer == RlTrainer::kVerl || !setup.critic;
              },
              "The critic is verl's (TRL's GRPOTrainer trains none): choose verl, or turn it off.")
          .rule(
              [](const TrainingSetup& setup) {
                return !setup.critic || setup.sequence_length <= kVerlCriticTokenBudget;
              },
              "verl's critic packs micro-batches of at most 32,768 tokens "
              "(ppo_infer_max_token_len_per_gpu) and asserts a sequence fits one: shorten the "
              "sequence, or turn the critic off.")
          .page("rl", "verl's critic (<code>adv_estimator=gae</code>)",
                "PPO's value model: the actor's body with a one-output head, kept in FP32 with its "
                "own AdamW state on every device, updated before the actor each step."));
  add(row<&TrainingSetup::rollout_memory_utilization>(
          id::kRolloutMemoryUtilization, "Rollout memory utilization",
          "The rollout engine's gpu_memory_utilization: vLLM's share of each device's total "
          "memory for its weights, activations and KV cache (TRL's vllm_gpu_memory_utilization, "
          "0.3); under verl with SGLang its mem_fraction_static, a share of the memory free as it "
          "starts for its weights and KV cache",
          "rolloutMemoryUtilization")
          .bounds(kMinRolloutMemoryUtilization, 1,
                  "The rollout memory utilization must be a share from 0.01 to 1.")
          .requires_values(id::kRollout, {"vllm", "sglang"}, "the utilization is the engine's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout != Rollout::kNone ||
                       setup.rollout_memory_utilization == kDefaultRolloutMemoryUtilization;
              },
              "The memory utilization is the rollout engine's: choose one, or 0.3.")
          .page("rl", "The engine's <code>gpu_memory_utilization</code>",
                "vLLM's share of each device's total memory for its weights, activations and KV "
                "cache (TRL's default 0.3); under verl, SGLang's <code>mem_fraction_static</code>, "
                "a share of the memory free as it starts."));
  add(row<&TrainingSetup::rollout_max_model_length>(
          id::kRolloutMaxModelLength, "vLLM max model length",
          "TRL's vllm_max_model_length: the longest request vLLM's KV cache must serve to start "
          "(0: None, the model config's positions)",
          "rolloutMaxModelLength")
          .bounds(0, kMaxSequenceLength)
          .requires_value(id::kRollout, "vllm", "the max model length is vLLM's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout == Rollout::kVllm || setup.rollout_max_model_length == 0;
              },
              "vLLM's max model length is the rollout engine's: choose vllm, or 0.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout_max_model_length == 0 ||
                       setup.rollout_max_model_length >= setup.sequence_length;
              },
              "vLLM's max model length must hold a whole sequence, prompt and completion: set it "
              "to the sequence length or more, or 0 for the model's own.")
          .page("rl", "vLLM's <code>max_model_len</code> (0: the model's)",
                "The longest request vLLM's KV cache must serve before it starts: TRL's "
                "<code>vllm_max_model_length</code>, else the model's positions."));
  add(row<&TrainingSetup::rollout_tensor_parallel>(
          id::kRolloutTensorParallel, "Rollout tensor parallel",
          "TRL's vllm_tensor_parallel_size (verl's rollout.tensor_model_parallel_size): each "
          "engine split over this many consecutive devices, which generate their prompts together",
          "rolloutTensorParallel")
          .bounds(1, kMaxParallelDegree)
          .requires_values(id::kRollout, {"vllm", "sglang"},
                           "the tensor parallelism is the engine's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout != Rollout::kNone || setup.rollout_tensor_parallel == 1;
              },
              "The rollout tensor parallelism is the engine's: choose one, or 1.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.layout.data_parallel % setup.rollout_tensor_parallel == 0;
              },
              "Each engine is split over consecutive devices of the world: its tensor parallelism "
              "must divide the data-parallel devices, d.")
          .page("rl", "The engine's tensor parallel size",
                "TRL's <code>vllm_tensor_parallel_size</code>: each engine split over this many "
                "devices, which gather their prompts and generate them together."));
  add(row<&TrainingSetup::rollout_sleep_mode>(
          id::kRolloutSleepMode, "Rollout sleep mode",
          "TRL's vllm_enable_sleep_mode (verl's free_cache_engine): the engine sleeps through the "
          "trainer's log-probabilities and update (its weights and KV cache released) and wakes "
          "for each generation, after the trainer empties its cache",
          "rolloutSleepMode")
          .requires_values(id::kRollout, {"vllm", "sglang"}, "sleep mode is the engine's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout != Rollout::kNone || !setup.rollout_sleep_mode;
              },
              "Sleep mode is the rollout engine's: choose one, or turn it off.")
          .page("rl", "",
                "TRL's <code>vllm_enable_sleep_mode</code>: vLLM releases its weights and KV "
                "cache once it has generated, and takes them back for the next generation."));
  add(row<&TrainingSetup::rollout_prefix_caching>(
          id::kRolloutPrefixCaching, "Rollout prefix caching",
          "The engine's prefix caching as the trainer starts it (verl's "
          "rollout.enable_prefix_caching, on by default; TRL passes vLLM none, which leaves it "
          "off for a hybrid): under vLLM a hybrid's recurrent state takes two blocks a sequence "
          "in each state group, not one; SGLang's radix cache it bears on nothing counted",
          "rolloutPrefixCaching")
          .requires_values(id::kRollout, {"vllm", "sglang"}, "prefix caching is the engine's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.rollout != Rollout::kNone || !setup.rollout_prefix_caching;
              },
              "Prefix caching is the rollout engine's: choose one, or turn it off.")
          .page("rl", "",
                "vLLM's <code>enable_prefix_caching</code> (verl's, on by default): vLLM keeps a "
                "hybrid model's recurrent state in two blocks a sequence, the running one and "
                "the one before it, where without it one serves."));
  add(row<&TrainingSetup::reference_model>(
          id::kReferenceModel, "Reference model",
          "TRL's GRPOTrainer with beta above 0, or its DPOTrainer (without "
          "precompute_ref_log_probs): the reference model, whose log-probabilities GRPO computes "
          "before each update and DPO inside each loss (under full training a frozen copy of "
          "the model; under LoRA the base, its adapters disabled)",
          "referenceModel")
          .only_under({Stack::kHf},
                      "the reference model is modelled as TRL's trainers load it, over "
                      "transformers' Trainer",
                      "The reference model is modelled as TRL's trainers load it, over "
                      "transformers' Trainer; choose the hf stack, or no reference model.")
          .rule(
              [](const TrainingSetup& setup) {
                return !setup.reference_model || runs_a_reference(setup);
              },
              "The reference model is GRPO's or DPO's: choose a rollout engine, count the "
              "logits and choose GRPO or DPO for them, or no reference model.")
          .page("rl", "Reference model (GRPO's <code>beta</code> &gt; 0, DPO's)",
                "GRPO's KL term and DPO's loss compare against it: GRPO computes its "
                "log-probabilities before each update, DPO within each loss, beside the policy's "
                "logits (DPO's <code>precompute_ref_log_probs</code> unticks it). Under full "
                "training it is a frozen copy of the model on each device; under LoRA, the base "
                "with the adapters disabled."));
  add(row<&TrainingSetup::completion_length>(
          id::kCompletionLength, "Completion length",
          "TRL's max_completion_length under GRPO's loss: the tokens each sequence's completion "
          "takes after its prompt, over which the loss computes the logits (512)",
          "completionLength")
          .bounds(1, kMaxSequenceLength)
          .requires_value(id::kLoss, "grpo", "the completion length is GRPO's loss's")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.loss == Loss::kGrpo ||
                       setup.completion_length == kDefaultCompletionLength;
              },
              "The completion length is GRPO's loss's: choose the grpo loss, or 512.")
          .page("rl", "Completion length (GRPO's <code>max_completion_length</code>)",
                "The tokens each completion takes after its prompt, at most: GRPO's loss computes "
                "the logits of these alone."));
}

}  // namespace trainmem::setting_rows
