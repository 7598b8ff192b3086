// The checks of post-training (check_rollout.hpp): a rollout engine and GRPO's loss, and DPO's.
#include "settings/check_rollout.hpp"

#include <string>

#include "settings/check.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

// GRPO's loss (TRL's GRPOTrainer, _compute_loss): the only one a rollout engine's trainer runs,
// and modelled where that trainer runs it, over whole sequences, each a prompt and a shorter
// completion, on a whole output layer (the ideal step counts it alike). Without a rollout engine it
// is a GRPO update whose completions come from elsewhere (TRL's vllm_mode="server").
Answer check_grpo_loss(const TrainingSetup& setup) {
  if (!setup.logits) return {};
  const bool grpo = setup.loss == Loss::kGrpo;
  if (!grpo) {
    if (setup.rollout == Rollout::kNone) return {};
    return refusal(setting_id::kLoss,
                   "TRL's GRPOTrainer computes its own loss over the completions (GRPO's "
                   "per-token log-probabilities), not this one: choose the grpo loss, or no "
                   "rollout engine.");
  }
  if (setup.stack != Stack::kHf && setup.stack != Stack::kIdeal) {
    return refusal(setting_id::kLoss,
                   "GRPO's loss is modelled as TRL's GRPOTrainer runs it, over transformers' "
                   "Trainer (the hf stack), and in the ideal step: choose one of those, or "
                   "another loss.");
  }
  if (setup.layout.tensor_parallel > 1 || setup.layout.context_parallel > 1) {
    return refusal(setting_id::kLoss,
                   "GRPO's loss is modelled over whole sequences on a whole output layer: set "
                   "tensor and context parallelism to 1, or choose another loss.");
  }
  if (setup.mtp) {
    return refusal(setting_id::kMtp,
                   "TRL's GRPOTrainer trains no multi-token-prediction modules: untick them, or "
                   "choose another loss.");
  }
  if (setup.completion_length >= setup.sequence_length) {
    return refusal(setting_id::kCompletionLength,
                   "GRPO's sequence is its prompt and then its completion: the completion length "
                   "must be below the sequence length, which holds both.");
  }
  return {};
}

// DPO's loss (TRL's DPOTrainer, _compute_loss): modelled over transformers' Trainer, each pair's
// two sequences in one micro-batch, over whole sequences on a whole output layer; the ideal step
// counts the policy's logits alike, with no reference model (as under precompute_ref_log_probs).
// Under FSDP and DeepSpeed TRL prepares its reference model apart (prepare_fsdp,
// prepare_deepspeed), not modelled. A mixture's auxiliary loss (router_aux_loss_coef, 0.001:
// output_router_logits, and transformers' load_balancing_loss_func over every layer's router
// logits) is not modelled.
Answer check_dpo_loss(const TrainingSetup& setup, const ModelShape& shape) {
  if (!setup.logits || setup.loss != Loss::kDpo) return {};
  if (setup.stack != Stack::kHf && setup.stack != Stack::kIdeal) {
    return refusal(setting_id::kLoss,
                   "DPO's loss is modelled as TRL's DPOTrainer runs it, over transformers' "
                   "Trainer (the hf stack), and in the ideal step: choose one of those, or "
                   "another loss.");
  }
  if (setup.layout.tensor_parallel > 1 || setup.layout.context_parallel > 1) {
    return refusal(setting_id::kLoss,
                   "DPO's loss is modelled over whole sequences on a whole output layer: set "
                   "tensor and context parallelism to 1, or choose another loss.");
  }
  if (setup.stack == Stack::kHf && setup.reference_model && setup.layout.zero_stage > 0) {
    return refusal(setting_id::kLoss,
                   "DPO's reference model is modelled on one device and under DDP (ZeRO 0): under "
                   "FSDP and DeepSpeed TRL prepares it apart (prepare_fsdp, prepare_deepspeed), "
                   "not modelled. Set ZeRO to 0, untick the reference model "
                   "(precompute_ref_log_probs), or choose another loss.");
  }
  if (setup.stack == Stack::kHf && shape.num_experts > 1) {
    return refusal(setting_id::kLoss,
                   "DPO over a mixture of experts is not modelled: DPOTrainer adds its "
                   "load-balancing loss over every layer's router logits (router_aux_loss_coef, "
                   "0.001 by default). Choose a dense model, or another loss.");
  }
  if (const Answer pairs = check_dpo_pairs(setup); !pairs.ok()) return pairs;
  if (setup.mtp) {
    return refusal(setting_id::kMtp,
                   "TRL's DPOTrainer trains no multi-token-prediction modules: untick them, or "
                   "choose another loss.");
  }
  return {};
}

}  // namespace

bool runs_a_reference(const TrainingSetup& setup) {
  return setup.rollout != Rollout::kNone || setup.loss == Loss::kGrpo || setup.loss == Loss::kDpo;
}

Answer check_rollout(const TrainingSetup& setup, const ModelShape& shape) {
  if (const Answer loss = check_grpo_loss(setup); !loss.ok()) return loss;
  if (const Answer loss = check_dpo_loss(setup, shape); !loss.ok()) return loss;
  if (setup.rollout == Rollout::kNone) return {};
  const auto refuse = [&](const std::string& why) {
    return refusal(setting_id::kRollout,
                   "The colocated rollout engine's KV cache is counted for grouped-query "
                   "attention in every layer; " +
                       shape.name + why + " Choose another model, or no rollout engine.");
  };
  if (latent_attention(shape)) {
    return refuse(" caches its latent attention's compressed keys and values, not modelled.");
  }
  // vLLM's hybrid cache (rollout.hpp, vllm_hybrid_cache) is modelled for Gated DeltaNet, Mamba-2
  // and short-convolution layers; SGLang keeps a hybrid's state in a pool of its own.
  const bool vllm_hybrid = hybrid_linear_attention(shape) && !global_attention_mixer(shape) &&
                           !kimi_delta_mixer(shape) && !mamba1_mixer(shape) &&
                           !lightning_mixer(shape);
  if (global_attention_mixer(shape) || (hybrid_linear_attention(shape) && !vllm_hybrid)) {
    return refuse(" has layers whose cache the engine sizes apart (" +
                  std::string(global_attention_mixer(shape)
                                  ? "a sliding window"
                                  : std::string("its ") + linear_layers_name(shape) + "' state") +
                  "), not modelled.");
  }
  // TRL starts its colocated vLLM without enable_prefix_caching, which vLLM turns off for a hybrid
  // (on for a model of attention alone, where it bears on nothing counted).
  if (vllm_hybrid && setup.rollout_prefix_caching && setup.rl_trainer == RlTrainer::kTrl) {
    return refusal(setting_id::kRolloutPrefixCaching,
                   "TRL starts its colocated vLLM without enable_prefix_caching, which vLLM "
                   "leaves off for " +
                       shape.name + ", a hybrid: choose verl, or turn it off.");
  }
  // vLLM pages a hybrid's state beside its attention's blocks; a model of one kind alone (a
  // linear mixer without attention) it sizes otherwise (MambaModelConfig), not modelled.
  if (vllm_hybrid) {
    const bool attention = layers_of_kinds_between(shape, 0, shape.num_layers, "Aa") > 0;
    const bool linear = layers_of_kinds_between(shape, 0, shape.num_layers, "Ll") > 0;
    if (!attention || !linear) {
      return refuse(std::string(" has ") +
                    (attention ? "no linear mixer's layer" : "no attention layer") +
                    ", and vLLM sizes such a cache otherwise, not modelled.");
    }
  }
  if (vllm_hybrid && setup.rollout == Rollout::kSglang) {
    return refusal(setting_id::kRollout,
                   "SGLang keeps a hybrid's recurrent state in a pool of its own (its mamba pool), "
                   "not modelled; " +
                       shape.name + " has " + linear_layers_name(shape) +
                       ". Choose vllm, or another model.");
  }
  // gpt-oss (its sinks mark it): vLLM loads its checkpoint's MXFP4 experts as they are, and half
  // its layers attend over a sliding window.
  if (shape.attention_sinks) {
    return refuse(
        " stores its experts in MXFP4, which the engine loads as they are, and attends over a "
        "sliding window in half its layers: not modelled.");
  }
  if (sparse_attention(shape)) {
    return refuse(" has sparse attention's indexer cache, not modelled.");
  }
  // vLLM splits the heads over its tensor parallelism (vllm/config: the attention heads a multiple
  // of it; the key-value heads a multiple of it, or it of them, where they are replicated).
  const int tp = setup.rollout_tensor_parallel;
  const int k = shape.num_key_value_heads;
  if (shape.num_attention_heads % tp != 0 || (tp <= k ? k % tp != 0 : tp % k != 0)) {
    return refusal(setting_id::kRolloutTensorParallel,
                   std::string(setup.rollout == Rollout::kSglang ? "SGLang" : "vLLM") + " splits " +
                       shape.name + "'s " + std::to_string(shape.num_attention_heads) +
                       " attention heads and " + std::to_string(k) +
                       " key-value heads over its tensor parallelism: choose a size that divides "
                       "both, or a multiple of the key-value heads that divides the attention "
                       "heads.");
  }
  // vLLM splits a hybrid's linear layers by their heads too (mamba_utils.py's divide): a Gated
  // DeltaNet's key and value heads, Mamba-2's heads and groups, a short convolution's channels.
  if (vllm_hybrid) {
    const int splits[] = {
        short_conv_mixer(shape) ? shape.hidden_size
        : mamba2_mixer(shape)   ? shape.linear_num_value_heads
                                : shape.linear_num_key_heads,
        short_conv_mixer(shape) ? shape.hidden_size
        // Mamba-2's groups (MambaMixer2: n_groups % tp == 0, or a single group, replicated).
        : mamba2_mixer(shape) ? (shape.linear_num_key_heads == 1 ? shape.linear_num_value_heads
                                                                 : shape.linear_num_key_heads)
                              : shape.linear_num_value_heads};
    if (splits[0] % tp != 0 || splits[1] % tp != 0) {
      return refusal(setting_id::kRolloutTensorParallel,
                     "vLLM splits " + shape.name + "'s " + linear_layers_name(shape) +
                         " by their " + (short_conv_mixer(shape) ? "channels (" : "heads (") +
                         std::to_string(splits[0]) +
                         (splits[1] != splits[0] ? " and " + std::to_string(splits[1]) : "") +
                         ") over its tensor parallelism: choose a size that divides them.");
    }
  }
  // verl's weight sync unfuses a mixture's packed experts (unfuse_moe_params), whose whole
  // tensors it gathers in FP32; its units differ too.
  if (setup.rl_trainer == RlTrainer::kVerl && shape.num_experts > 1) {
    return refusal(setting_id::kRlTrainer,
                   "verl is modelled for dense models; " + shape.name +
                       "'s experts (their FSDP units, and the weight sync's unfused tensors) are "
                       "not: choose a dense model, or trl with vllm.");
  }
  // On ROCm verl starts SGLang with the aiter attention backend (async_sglang_server.py,
  // launch_server), under which SGLang's server_args scale mem_fraction_static down for long
  // contexts.
  if (setup.rollout == Rollout::kSglang && device_of(setup).architecture == Architecture::kCdna3) {
    return refusal(setting_id::kRollout,
                   "On ROCm verl starts SGLang with its aiter attention, under which SGLang "
                   "lowers mem_fraction_static for long contexts, not modelled: choose an NVIDIA "
                   "device, or vllm.");
  }
  if (setup.lora_rank > 0 && setup.base_weights != BaseWeights::kBf16) {
    return refusal(setting_id::kBaseWeights,
                   "The colocated rollout engine is counted with BF16 weights; TRL hands vLLM a "
                   "quantised base's quantisation, not modelled. Choose bf16 base weights, or no "
                   "rollout engine.");
  }
  return {};
}

}  // namespace trainmem
