// transformers' Trainer and the RL trainers on it, TRL's GRPOTrainer and verl's FSDP workers: the
// plan stack_hf.cpp makes and the passes it replays, and the RL phases stack_rl.cpp replays around
// them (the rollout engine, verl's weight sync, offload and critic).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "stacks/stack_frameworks.hpp"

namespace trainmem::replay {

// transformers' own terms, and what each micro-batch takes, worked out once.
struct HfPlan {
  bool fsdp = false;   // accelerate's FSDP, FULL_SHARD, under ZeRO 3
  bool fsdp2 = false;  // as FSDP2 (fully_shard), not FSDP1
  double shards = 1;
  ModelWeights model;  // a layer's and the rest's, whole
  // The root's units, as stored, whole: FSDP1's root unit (or, tied, FSDP2's [final norm,
  // embedding] unit) gathered for the step; FSDP2's embedding unit for its own passes and its
  // [final norm, output layer] unit from the loss to the end of its backward pass. Their trained
  // parameters.
  double step_unit = 0;
  double embedding_unit = 0;
  double tail_unit = 0;
  double embedding_trained = 0;
  double tail_trained = 0;
  // The root unit's trained parameters whose gradients the backward pass makes at its end, where
  // the embedding is no unit of its own (FSDP2's is, embedding_trained): an untied embedding's
  // (under full training), learned positions', a vision tower's. A tied embedding's gradient is
  // made at the output layer's backward pass, and the embedding's own is added into it at the
  // end (tied_embedding_trained).
  double late_root_trained = 0;
  double tied_embedding_trained = 0;
  std::size_t reduce_input = 0;  // FSDP2's reduce-scatter input
  // Per trained parameter on this device (a shard's share under FSDP).
  Trained trained;
  std::size_t gathered = 0;  // under FSDP
  // A unit's gathered bytes per byte stored, and a trained parameter's unsharded gradient, in
  // bytes: under FSDP's mixed precision (accelerate's, bf16-mixed) the FP32 shards are gathered
  // and their gradients made in BF16 (MixedPrecision param_dtype and reduce_dtype bfloat16).
  double gathered_per_stored = 1;
  double unsharded_gradient_bytes = 0;
  bool ddp = false;
  std::size_t ddp_buckets = 0;
  std::size_t temporary = 0;
  double step_temporary = 0;
  std::size_t activation_gradients = 0;
  std::size_t cast = 0;
  bool rebuilt = false;  // gradient checkpointing
  // Under FSDP1 with LoRA and reentrant checkpointing (torch/distributed/fsdp/_runtime_utils.py,
  // _register_post_backward_reshard_only_hook): each layer's unit holds no trained parameter, so
  // FSDP registers a multi-grad hook on its rebuilt forward's inputs, which reentrant
  // checkpointing detaches into leaves (torch/utils/checkpoint.py, CheckpointFunction.backward);
  // the hook's AccumulateGrad nodes hold each leaf, and with it the layer's checkpointed input and
  // the gradient written on it, until _finalize_params removes the hooks as the backward pass
  // ends.
  bool retains_inputs = false;
  double layer_copy = 0;
  double output_copy = 0;
  std::size_t rollout = 0;      // TRL's colocated vLLM (0: none)
  std::size_t weight_sync = 0;  // verl's weight sync (0: TRL's)
};

// What verl's step holds from one phase to the next (verl_rollout_phases, hf_micro_batch):
// - the root units its no-grad passes leave gathered: FSDP1 reshards no root after its forward
//   pass (torch/distributed/fsdp/_runtime_utils.py, _post_forward_reshard: not state._is_root),
//   and verl's EngineEvalModeCtx.__exit__ reshards it only where fsdp_size > 1, not at its
//   default -1 (verl/workers/engine/fsdp/transformer_impl.py): the actor's, from its
//   log-probability pass to its update's backward pass; the reference's, which never runs a
//   backward pass, from its first pass on;
// - the unsharded gradients of the micro-batches before a mini-batch's last, which FSDP1's
//   no_sync keeps (FSDPEngine._gradient_sync_context: no reduce-scatter but on the last), each
//   unit's until its reduce-scatter in the last micro-batch's backward pass.
// - under verl's offload (TrainingSetup::offload: optimizer, verl's fsdp_config.optimizer_offload;
//   optimizer-and-weights, with param_offload too), what its engine moves to the host between uses
//   (verl/workers/engine/base.py, BaseEngineCtx: loaded as a mode's context enters, offloaded as
//   it exits; verl/utils/fsdp_utils.py, offload_fsdp_model_to_cpu moves each flat parameter's
//   local shard, not a root's unsharded storage, and empties the cache): the actor's FP32 shards
//   and AdamW's state, each block's size, and its handle while on the device.
struct VerlHeld {
  CachingAllocator::Handle actor_root = CachingAllocator::kNothing;
  CachingAllocator::Handle reference_root = CachingAllocator::kNothing;
  Handles layer_gradients;  // unsharded, one per layer, in the forward pass's order
  CachingAllocator::Handle root_gradient = CachingAllocator::kNothing;
  std::vector<double> weight_sizes;
  Handles weights;
  std::vector<double> state_sizes;
  Handles states;
};

// stack_hf.cpp: the plan and the passes.

// Each device holds 1/shards of each layer and of the rest.
double hf_shards(const StepDevice& device);

// The terms, registered in the order the step lists them, and the sizes the micro-batches take.
// A second model's plan (verl's critic) counts its buffers under the first's terms, `sharing`.
HfPlan hf_plan(Step& step, const StepDevice& device, const ModelWeights& model,
               const HfPlan* sharing = nullptr);

// A no-grad pass computing log-probabilities (or, without logits, a critic's values); under verl
// the root unit left gathered in `kept_root`, and `from_host` for a model whose shards live on the
// host (verl's reference).
void hf_log_probability_pass(Step& step, const StepDevice& device, const HfPlan& plan,
                             CachingAllocator::Handle* kept_root = nullptr, bool from_host = false);

// One micro-batch's update; `first` for the first step's, whose optimizer makes the state. Under
// verl the mini-batch's last, with the earlier ones' unsharded gradients (VerlHeld) where it has
// several; `offloads_states` where verl moves the optimizer's state to the host as it ends.
void hf_update(Step& step, const StepDevice& device, const HfPlan& plan, bool first, VerlHeld& held,
               bool offloads_states);

// stack_rl.cpp: the RL phases.

// Whether the RL trainer is verl's (TRL's GRPOTrainer otherwise, or none).
bool verl(const StepDevice& device);

// verl's offload of the actor's parameters (param_offload) and of its optimizer's state.
bool verl_offloads_weights(const StepDevice& device);
bool verl_offloads_states(const StepDevice& device);

// Blocks of `sizes` loaded to the device (load_fsdp_model_to_gpu, load_fsdp_optimizer), where they
// are not already.
void load_to_device(Step& step, Term term, const std::vector<double>& sizes, Handles& handles);

// Blocks moved to the host, and the cache emptied (offload_fsdp_model_to_cpu,
// offload_fsdp_optimizer).
void offload_to_host(Step& step, Handles& handles);

// Where verl offloads the actor's parameters: its shards, loaded (`model`, whole), moved to the
// host as init_model ends (engine.to("cpu")), their sizes kept in `held`.
void verl_offload_loaded(Step& step, const StepDevice& device, const ModelWeights& model,
                         VerlHeld& held);

// The rollout engine's term (0 without one), its pools taken where it never sleeps.
std::size_t rollout_engine(Step& step, const StepDevice& device);

// TRL's reference model under full training, where beta is above 0: a second copy of the weights.
void trl_reference_model(Step& step, const StepDevice& device);

// verl's weight-sync term.
std::size_t verl_weight_sync_term(Step& step);

// RL's phases before each update: the generation and the log-probabilities.
void hf_rollout_phases(Step& step, const StepDevice& device, const HfPlan& plan, VerlHeld& held);

// verl's critic (verl 1dda039b; algorithm.adv_estimator=gae, verl/trainer/ppo/utils.py,
// need_critic): a TrainingWorker of model_type "value_model" (verl/workers/engine_workers.py) in
// the same process as the actor, its engine FSDPEngineWithValueHead
// (verl/workers/engine/fsdp/transformer_impl.py): AutoModelForTokenClassification with one label
// (verl/utils/model.py, load_valuehead_model), the actor's body with a value head, hidden → 1 with
// its bias, in place of the output layer; loaded in FP32 (model_dtype fp32) and wrapped as the
// actor is (FSDP1, FULL_SHARD over every device, MixedPrecision BF16 with FP32 reduces, gradient
// checkpointing and padding removal on as the actor's), with AdamW of its own (FP32 state), and
// neither offloaded (critic.fsdp's param_offload and optimizer_offload false): resident through
// every phase. Its two passes pack their micro-batches to ppo_infer_max_token_len_per_gpu
// (32,768 tokens: trainer_base.py gives the critic's engine that budget for both, and its
// use_dynamic_bsz stays True); rearrange_micro_batches (verl/utils/seqlen_balancing.py) splits a
// device's N sequences of s tokens into k = min(N, ⌈N·s / 32,768⌉) micro-batches balanced by
// Karmarkar–Karp, ⌈N / k⌉ sequences at most. compute_values runs over the device's share of the
// rollout batch after the log-probabilities; update_critic over its mini-batch, before the actor's
// update (_step_once). The value loss's tensors, a few numbers a token, are not replayed.
struct Critic {
  std::vector<std::size_t> tags;  // Step::count_as: the table's terms, as the critic's own
  StepDevice values;              // compute_values' pass: its micro-batch, log_prob_scale
  StepDevice update;              // update_critic's micro-batch, in generation_micro_batches
  HfPlan plan;
  VerlHeld held;
};

// verl's critic, where the setup trains one, made and loaded before the actor (_setup:
// critic_wg.reset() before actor_rollout_wg.init_model()): its terms, its two devices and its FP32
// shards (`model`, whole); its plan is made once the actor's is.
std::optional<Critic> load_critic(Step& step, const StepDevice& device, ModelWeights& model);

// compute_values, then update_critic.
void critic_phases(Step& step, Critic& critic, bool first);

}  // namespace trainmem::replay
