// The RL phases of transformers' stack (stack_hf.hpp): TRL's GRPOTrainer and verl's FSDP workers
// around their rollout engine, with the sources docs/formulas.md quotes.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "stacks/stack_hf.hpp"

namespace trainmem::replay {

bool verl(const StepDevice& device) { return device.setup.rl_trainer == RlTrainer::kVerl; }

bool verl_offloads_weights(const StepDevice& device) {
  return verl(device) && device.setup.offload == Offload::kOptimizerAndWeights;
}
bool verl_offloads_states(const StepDevice& device) {
  return verl(device) && device.setup.offload != Offload::kNone;
}

void load_to_device(Step& step, Term term, const std::vector<double>& sizes, Handles& handles) {
  if (!handles.empty()) return;
  for (const double bytes : sizes) handles.push_back(step.take(tag(term), bytes));
}

void offload_to_host(Step& step, Handles& handles) {
  if (handles.empty()) return;
  give_all(step, handles);
  step.empty_cache();
}

void verl_offload_loaded(Step& step, const StepDevice& device, const ModelWeights& model,
                         VerlHeld& held) {
  if (held.weights.empty()) return;
  const double shards = hf_shards(device);
  for (int layer = 0; layer < static_cast<int>(device.layers_per_stage); ++layer) {
    held.weight_sizes.push_back(model.layer / shards);
  }
  held.weight_sizes.push_back(model.root / shards);
  offload_to_host(step, held.weights);
}

std::size_t rollout_engine(Step& step, const StepDevice& device) {
  const std::size_t engine =
      device.rollout_engine > 0 && device.setup.rollout == Rollout::kSglang
          ? step.term("rollout-engine",
                      "SGLang rollout engine, its own processes (weights, KV cache and request "
                      "table)",
                      "SGLang, python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py "
                      "(profile_max_num_token: mem_fraction_static × the memory free before its "
                      "weights load, less the weights, to the KV cache; init_memory: the "
                      "request table beyond), in servers of their own as verl makes them (verl "
                      "1dda039b, verl/workers/rollout/sglang_rollout/async_sglang_server.py, "
                      "launch_server: mem_fraction_static = gpu_memory_utilization, "
                      "enable_memory_saver), released but for the generation under "
                      "free_cache_engine",
                      Term::kRolloutEngine)
      : device.rollout_engine > 0 && verl(device)
          ? step.term("rollout-engine",
                      "vLLM rollout engine, its own processes (weights and KV cache)",
                      "vLLM, vllm/v1/worker/gpu_worker.py (Worker.init_device: total memory × "
                      "gpu_memory_utilization; determine_available_memory gives the KV cache "
                      "what the weights and the profiled pass leave), in vLLM servers of their "
                      "own as verl makes them (verl 1dda039b, verl/workers/rollout/vllm_rollout/"
                      "vllm_async_server.py, distributed_executor_backend \"mp\"), asleep at "
                      "level 2 but for the generation under free_cache_engine",
                      Term::kRolloutEngine)
      : device.rollout_engine > 0
          ? step.term("rollout-engine", "vLLM rollout engine, colocated (weights and KV cache)",
                      "vLLM, vllm/v1/worker/gpu_worker.py (Worker.init_device: total memory × "
                      "gpu_memory_utilization; determine_available_memory gives the KV cache "
                      "what the weights and the profiled pass leave), in the trainer's process "
                      "as TRL's GRPOTrainer makes it (trl/generation/vllm_generation.py, "
                      "VLLMGeneration._init_vllm, vllm_mode \"colocate\"), asleep through the "
                      "update under sleep mode",
                      Term::kRolloutEngine)
          : 0;
  if (engine > 0 && !device.setup.rollout_sleep_mode) step.take(engine, device.rollout_engine);
  return engine;
}

// TRL's reference model under full training (GRPO's beta above 0; DPO's unless
// precompute_ref_log_probs): a second copy of the model, loaded as the policy is
// (trl/trainer/utils.py, create_model_from_path, FP32 unless model_init_kwargs say otherwise) and
// put on the device (accelerator.prepare_model with evaluation_mode, or prepare_fsdp's shards): the
// policy's weights' bytes.
void trl_reference_model(Step& step, const StepDevice& device) {
  if (!device.setup.reference_model || device.setup.lora_rank > 0 || verl(device)) return;
  const bool dpo = device.setup.loss == Loss::kDpo;
  step.take(
      step.term("reference-model",
                dpo ? "Reference model (TRL's DPOTrainer)" : "Reference model (TRL, beta above 0)",
                dpo ? "TRL f2cd5771, trl/trainer/dpo_trainer.py, DPOTrainer.__init__: "
                      "ref_model = create_model_from_path(...) where the model is no PEFT "
                      "model and precompute_ref_log_probs is off; prepared with "
                      "evaluation_mode=True"
                    : "TRL, trl/trainer/grpo_trainer.py, GRPOTrainer.__init__: ref_model = "
                      "create_model_from_path(...) where beta is not 0 and the model is no "
                      "PEFT model; prepared with evaluation_mode=True (or prepare_fsdp, "
                      "prepare_deepspeed)"),
      device.bytes[Term::kWeights]);
}

std::size_t verl_weight_sync_term(Step& step) {
  return step.term(
      "weight-sync", "Weight sync (verl)",
      "verl 1dda039b, verl/workers/engine/fsdp/transformer_impl.py, get_per_tensor_param "
      "(FSDP1's SHARDED_STATE_DICT: each unit gathered in FP32, its chunks cloned; each "
      "parameter gathered whole in FP32) and verl/workers/rollout/vllm_rollout/"
      "bucketed_weight_transfer.py, BucketedWeightSender (a CUDA-IPC bucket of "
      "update_weights_bucket_megabytes, 2048), or for SGLang verl/workers/rollout/"
      "sglang_rollout/utils.py, get_named_tensor_buckets (the gathered tensors themselves, up "
      "to 2048 MiB, sent by CUDA IPC)");
}

namespace {

// verl's weight sync (verl 1dda039b: verl/workers/engine_workers.py,
// ActorRolloutRefWorker.update_weights, checkpoint_engine backend "naive"), which wakes vLLM for
// the next generation: the trainer's cache emptied (aggressive_empty_cache); vLLM's weights woken
// under sleep mode (resume(tags=["weights"])), in its own process's pool; the actor's weights
// streamed to it (verl/workers/engine/fsdp/transformer_impl.py, get_per_tensor_param). FSDP1's
// SHARDED_STATE_DICT (torch/distributed/fsdp/_state_dict_utils.py): each unit gathered whole in
// FP32 by its pre-hook (the root unit, the embedding, final norm and output layer, for the whole
// traversal) and each of its parameters' local chunks cloned by the post-hook
// (_create_chunk_dtensor), the clones, 4·P/N, held by the state dict until the stream ends; each
// parameter then gathered whole in FP32 (full_tensor(), no cast), one at a time, into a CUDA-IPC
// bucket of update_weights_bucket_megabytes (2048) that the trainer allocates and vLLM maps
// (verl/workers/rollout/vllm_rollout/bucketed_weight_transfer.py, BucketedWeightSender); one
// larger than the bucket, the embedding's or the output layer's, is sent as it is. SGLang's
// buckets are the gathered tensors themselves, the one last sent still held as the next fills
// (rollout.hpp, verl_sync_buckets: the busiest moment, taken here). The buckets and the clones
// freed, the cache emptied again; the engine's KV cache is woken after (the generation).
// verl turns expandable segments off for the sync and back on after; the sync is replayed under
// the step's setting. Returns vLLM's weights' handle (0 where it is awake through the step).
CachingAllocator::Handle verl_weight_sync(Step& step, const StepDevice& device, const HfPlan& plan,
                                          VerlHeld& held) {
  const bool sleeping = device.setup.rollout_sleep_mode;
  step.empty_cache();
  const auto weights = sleeping ? step.take(plan.rollout, device.rollout_weights, kRolloutPool) : 0;
  // get_per_tensor_param loads the actor's shards where verl offloads them, builds the state dict
  // and offloads them again before the stream begins (verl/workers/engine/fsdp/
  // transformer_impl.py, FSDPEngine.get_per_tensor_param).
  load_to_device(step, Term::kWeights, held.weight_sizes, held.weights);
  const auto root = step.take(plan.weight_sync, plan.model.root);
  Handles chunks;
  for (int layer = 0; layer < static_cast<int>(device.layers_per_stage); ++layer) {
    const auto unit = step.take(plan.weight_sync, plan.model.layer);
    chunks.push_back(step.take(plan.weight_sync, plan.model.layer / plan.shards));
    step.give(unit);
  }
  chunks.push_back(step.take(plan.weight_sync, plan.model.root / plan.shards));
  step.give(root);
  if (!held.weights.empty()) {
    step.mark("weight sync", 0);  // what is reserved before the cache is emptied
    offload_to_host(step, held.weights);
  }
  const auto sent = step.take(plan.weight_sync, device.sync_sent_bytes);
  const auto filling =
      device.sync_filling_bytes > 0 ? step.take(plan.weight_sync, device.sync_filling_bytes) : 0;
  step.give(step.take(plan.weight_sync, device.sync_gathered_bytes));
  if (filling != 0) step.give(filling);
  step.give(sent);
  give_all(step, chunks);
  step.mark("weight sync", 0);
  step.empty_cache();
  step.settle();
  return weights;
}

// verl's step before each update (verl 1dda039b: verl/trainer/ppo/v1/trainer_base.py, _step_once,
// and the weight sync that ends the step before): the weight sync; the generation, vLLM's KV cache
// woken beside its weights (resume(tags=["kv_cache"])) and both released by its level-2 sleep
// (sleep_replicas) under free_cache_engine; the actor's log-probabilities (compute_log_prob) and,
// with a reference model, the reference's (compute_ref_log_prob): each the same pass, the
// reference's units gathered from the host (CPUOffload(offload_params=True), which verl forces on
// a forward-only model), so nothing of it stays on the device.
void verl_rollout_phases(Step& step, const StepDevice& device, const HfPlan& plan, VerlHeld& held) {
  const auto weights = verl_weight_sync(step, device, plan, held);
  if (device.setup.rollout_sleep_mode) {
    const auto cache =
        step.take(plan.rollout, device.rollout_engine - device.rollout_weights, kRolloutPool);
    step.mark("generation", 0);
    step.give(cache);
    step.give(weights);
    step.empty_cache();
    step.settle();
  } else {
    step.mark("generation", 0);
  }
  // compute_log_prob's eval mode loads the actor's shards where verl offloads them, and offloads
  // them as it exits.
  load_to_device(step, Term::kWeights, held.weight_sizes, held.weights);
  hf_log_probability_pass(step, device, plan, &held.actor_root);
  if (!held.weights.empty()) {
    step.mark("log-probabilities", 0);  // what is reserved before the cache is emptied
    offload_to_host(step, held.weights);
  }
  if (device.setup.reference_model) {
    hf_log_probability_pass(step, device, plan, &held.reference_root, true);
  }
  step.mark("log-probabilities", 0);
}

}  // namespace

// TRL's GRPOTrainer before each update (trl/trainer/grpo_trainer.py, _prepare_inputs →
// _generate_and_score_completions, once every steps_per_generation micro-batches: the step's,
// here), the last step's gradients freed by its zero_grad.
// - The generation, in vLLM's pools. Under sleep mode (trl/generation/vllm_generation.py,
//   VLLMGeneration.generate): torch.cuda.empty_cache(), vLLM woken (its weights, then its KV
//   cache), then put back to sleep at level 2, which unmaps its pools (vLLM's CuMemAllocator, a
//   pool of their own that the trainer's cache keeps nothing of).
// - old_per_token_logps, the policy's log-probability pass (vLLM's importance-sampling correction
//   needs them); then, with beta above 0, ref_per_token_logps, the reference model's: the
//   reference's own copy under full training, the policy with its adapters disabled under LoRA,
//   each the same pass (the reference's parameters require gradients as from_pretrained makes
//   them, so autocast caches its copies too).
void hf_rollout_phases(Step& step, const StepDevice& device, const HfPlan& plan, VerlHeld& held) {
  // DPO's reference runs inside its loss (stack_loss.cpp, dpo_loss), not before the update.
  const bool reference = device.setup.reference_model && device.setup.loss != Loss::kDpo;
  if (plan.rollout == 0 && !reference) return;
  if (verl(device)) {
    verl_rollout_phases(step, device, plan, held);
    return;
  }
  if (plan.rollout != 0 && device.setup.rollout_sleep_mode) {
    step.empty_cache();
    const auto engine = step.take(plan.rollout, device.rollout_engine, kRolloutPool);
    step.mark("generation", 0);
    step.give(engine);
    step.empty_cache();
    step.settle();
  } else if (plan.rollout != 0) {
    step.mark("generation", 0);
  }
  if (plan.rollout != 0) hf_log_probability_pass(step, device, plan);
  if (reference) hf_log_probability_pass(step, device, plan);
  step.mark("log-probabilities", 0);
}

namespace {

// The sequences of a device's `sequences` that one of the critic's micro-batches packs, at most,
// and how many micro-batches they take.
std::pair<double, double> critic_micro_batch(double sequences, double sequence_length) {
  const double count = std::max(
      1.0, std::min(sequences, std::ceil(sequences * sequence_length / kVerlCriticTokenBudget)));
  return {std::ceil(sequences / count), count};
}

// The critic's device: the actor's, its output layer a value head (the parameter counts and the
// model states with it), no logits; its activations those of `sequences` sequences a micro-batch.
StepDevice critic_device(const StepDevice& actor, double sequences) {
  StepDevice critic = actor;
  critic.value_head = true;
  const double head = actor.shape.hidden_size + 1.0;
  critic.counts.output_head = head;
  critic.parameters = actor.parameters - actor.counts.output_head + head;  // value_model_parameters
  critic.root_parameters = actor.root_parameters - actor.counts.output_head + head;
  const double states = critic.parameters / actor.parameters;
  for (const Term term :
       {Term::kWeights, Term::kMasterWeights, Term::kGradients, Term::kOptimizerStates}) {
    critic.bytes[term] = actor.bytes[term] * states;
  }
  critic.loss_tokens = 0;
  critic.logit_count = 0;
  critic.log_prob_scale = 1;
  const double scale = sequences / actor.setup.micro_batch_sequences;
  critic.tokens = actor.tokens * scale;
  critic.kept_per_slot = actor.kept_per_slot * scale;
  critic.recompute_working = actor.recompute_working * scale;
  critic.dispatch = actor.dispatch * scale;
  for (SlotTensor& tensor : critic.kept_tensors) tensor.bytes *= scale;
  for (SlotTensor& tensor : critic.gradient_tensors) tensor.bytes *= scale;
  return critic;
}

}  // namespace

// compute_values, then update_critic: the values pass as a log-probability pass without logits,
// its root unit left gathered to the update (as the actor's); the update as the actor's.
void critic_phases(Step& step, Critic& critic, bool first) {
  step.count_as(critic.tags, "");
  hf_log_probability_pass(step, critic.values, critic.plan, &critic.held.actor_root);
  step.mark("values", 0);
  step.count_as(critic.tags, "critic ");
  hf_update(step, critic.update, critic.plan, first, critic.held, false);
  step.mark("optimizer", 0);  // its AdamW step, the critic's update's end
  step.count_as({}, "");
}

// verl's critic, where the setup trains one, made and loaded before the actor (_setup:
// critic_wg.reset() before actor_rollout_wg.init_model()): its terms, its two devices and its FP32
// shards (`model`, whole); its plan is made once the actor's is.
std::optional<Critic> load_critic(Step& step, const StepDevice& device, ModelWeights& model) {
  if (!device.setup.critic || !verl(device)) return std::nullopt;
  const TrainingSetup& setup = device.setup;
  const double s = setup.sequence_length;
  // A device's mini-batch (the actor's micro-batches of one optimizer step) and its share of
  // the rollout batch.
  const double mini = setup.micro_batch_sequences * device.generation_micro_batches;
  const double rollout =
      setup.rollout_batch_sequences > 0
          ? static_cast<double>(setup.rollout_batch_sequences) / setup.layout.data_parallel
          : mini;
  std::vector<std::size_t> tags(kNumTerms);
  std::iota(tags.begin(), tags.end(), std::size_t{0});
  const char* source =
      "verl 1dda039b, verl/workers/engine/fsdp/transformer_impl.py, FSDPEngineWithValueHead "
      "(AutoModelForTokenClassification, one label, in FP32 under FSDP1), trained by "
      "verl/trainer/ppo/v1/trainer_base.py, _step_once (compute_values, update_critic)";
  tags[tag(Term::kWeights)] =
      step.term("critic-weights", "Critic's weights (verl)", source, Term::kWeights);
  tags[tag(Term::kGradients)] =
      step.term("critic-gradients", "Critic's gradients (verl)", source, Term::kGradients);
  tags[tag(Term::kOptimizerStates)] = step.term(
      "critic-optimizer-states", "Critic's AdamW state (verl)", source, Term::kOptimizerStates);
  tags[tag(Term::kActivations)] =
      step.term("critic-activations", "Critic's activations (verl)", source, Term::kActivations);
  const auto values = critic_micro_batch(rollout, s);
  const auto update = critic_micro_batch(mini, s);
  Critic critic{tags, critic_device(device, values.first), critic_device(device, update.first),
                HfPlan{}, VerlHeld{}};
  critic.update.generation_micro_batches = update.second;
  step.count_as(critic.tags, "");
  model = load_model(step, critic.update, hf_shards(device));
  step.count_as({}, "");
  return critic;
}

}  // namespace trainmem::replay
