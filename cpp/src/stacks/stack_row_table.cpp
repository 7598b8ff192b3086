// Every training stack's row (stack_rows.hpp), for the full module and the CLI. The first view's
// module links stack_row_plate.cpp in its place. docs/formulas.md derives each holding.
#include <iterator>

#include "stacks/stack_rows.hpp"

namespace trainmem {

std::vector<std::string> stack_notes(const TrainingSetup& asked) {
  std::vector<std::string> notes;
  // Both activation models count 16-bit activations; FP32 training keeps them in FP32.
  if (asked.precision == Precision::kFp32) {
    notes.push_back(
        "Under fp32 the activations and logits are counted at their 16-bit sizes, as both "
        "activation models define them; FP32 training keeps them in FP32, up to twice as much.");
  }
  // accelerate's FSDP under the hf stack, full training: in the model's BF16 with mixed precision
  // off (bf16); under bf16 mixed precision (bf16-mixed) accelerate upcasts them to FP32.
  if (stack_row(asked.stack).full_shard_only && asked.layout.zero_stage >= 3 &&
      asked.lora_rank == 0) {
    notes.push_back(
        asked.precision == Precision::kBf16
            ? "Under accelerate's FSDP with bf16 precision the trained parameters stay in the "
              "model's BF16, as accelerate keeps them with mixed precision off; under bf16 mixed "
              "precision (Trainer's bf16=True) it upcasts them to FP32: choose bf16-mixed for "
              "that run."
        : asked.rl_trainer == RlTrainer::kVerl && asked.rollout != Rollout::kNone
            ? "verl's actor is loaded in FP32 (model_dtype fp32) and sharded by FSDP1: FP32 "
              "shards, gathered in BF16, its gradients made in BF16 and reduced in FP32 (FSDP's "
              "MixedPrecision, reduce_dtype fp32)."
            : "Under accelerate's FSDP with bf16 mixed precision the trained parameters are held "
              "in FP32 shards, as accelerate upcasts them (Accelerator.prepare_model), and "
              "gathered and their gradients made in BF16 (FSDP's MixedPrecision).");
  }
  // TRL's DPOTrainer (dpo_trainer.py, _compute_loss): the pairs, and the reference's pass.
  if (asked.stack == Stack::kHf && asked.logits && asked.loss == Loss::kDpo) {
    const int pairs = asked.micro_batch_sequences / 2;
    notes.push_back(
        "DPO (TRL's DPOTrainer): " + std::to_string(pairs) + (pairs == 1 ? " pair" : " pairs") +
        " a micro-batch, each its chosen and its rejected sequence, " +
        std::to_string(asked.micro_batch_sequences) + " sequences, the logits of every position. " +
        (asked.reference_model
             ? std::string("Inside each loss the reference model's forward pass runs under "
                           "no_grad (") +
                   (asked.lora_rank > 0 ? "the base, its adapters disabled"
                                        : "its own copy of the model") +
                   "), its logits held beside the policy's until the loss returns."
             : std::string("No reference model in the step: its log-probabilities are "
                           "precomputed (precompute_ref_log_probs).")));
  }
  return notes;
}

const StackRow& stack_row(Stack stack) {
  static const StackRow rows[] = {
      ideal_stack_row(),
      // Megatron-LM accumulates and reduces gradients in an FP32 main-gradient buffer
      // (megatron/training/arguments.py: "bfloat16 requires gradient accumulation and all-reduce
      // to be done in fp32"): 4 B, its docs' 6 + 12/d with the distributed optimiser (ZeRO 1).
      [] {
        StackRow row{Stack::kMegatron};
        row.gradient_bytes = kFp32Bytes;
        row.state_source =
            "Megatron-LM accumulates and reduces the gradients in an FP32 main-gradient buffer "
            "(megatron/training/arguments.py)";
        // ZeRO 1: the distributed optimiser; 2 and 3: Megatron-FSDP (megatron_fsdp()).
        row.max_zero_stage = 3;
        row.first_zero_stage = 1;
        row.zero_refusal =
            "Megatron-LM shards with its distributed optimiser (ZeRO 1) or Megatron-FSDP (ZeRO 2, "
            "optim_grads; ZeRO 3, optim_grads_params); choose ZeRO 0 to 3.";
        row.optimizers = {Optimizer::kAdam, Optimizer::kSgdMomentum, Optimizer::kAdamBf16Moments};
        row.optimizer_refusal =
            "Megatron-LM is modelled with its adam and sgd optimisers (--optimizer), FP32 state "
            "beside FP32 main weights, and its precision-aware adam with BF16 moments "
            "(adam-bf16-moments); its Muon (layer-wise, whole matrices to each rank) is not "
            "modelled. Choose adam, sgd-momentum or adam-bf16-moments.";
        row.losses = {Loss::kVocabParallel, Loss::kNativeFused, Loss::kTeFused};
        row.loss_refusal =
            "Megatron-LM computes the loss with its vocab-parallel cross-entropy, unfused or fused "
            "(native or Transformer Engine's); choose the vocab-parallel, native-fused or "
            "te-fused loss.";
        row.zero_over_one_rank = true;
        row.one_rank_note =
            "Megatron-LM's distributed optimiser over one data-parallel rank shards nothing: every "
            "device keeps its whole master weights and optimiser states.";
        row.drops_lone_sequence_parallel = true;
        row.pads_vocabulary = true;
        row.megatron_routing = true;
        row.follows_gradients = true;
        row.fine_tuning = false;
        row.offloading = false;
        row.replayed = true;
        return row;
      }(),
      // FSDP2 under torchtitan keeps the sharded parameters in FP32 and computes in BF16 copies
      // gathered layer by layer (MixedPrecisionPolicy param_dtype bfloat16): the FP32 parameters
      // are the weights and no master copy is kept; their gradients, reduce-scattered in FP32
      // (reduce_dtype float32), are FP32 too.
      [] {
        StackRow row{Stack::kTorchtitan};
        row.weight_bytes = kFp32Bytes;
        row.gradient_bytes = kFp32Bytes;
        row.master_weights = false;
        row.state_source =
            "FSDP2 under torchtitan keeps the sharded parameters in FP32 with no master copy, and "
            "reduce-scatters FP32 gradients (MixedPrecisionPolicy: param_dtype bfloat16, "
            "reduce_dtype float32)";
        row.shards_weights = true;
        row.min_zero_stage = 2;
        row.min_shards = 2;
        row.zero_refusal =
            "torchtitan shards with FSDP2 over dp·cp devices: it needs data or context "
            "parallelism above 1 and ZeRO 3 (resharding after the forward pass) or 2 (not), or "
            "choose another stack.";
        row.fp8_engine = Fp8Engine::kTorchao;
        row.optimizers = {Optimizer::kAdam, Optimizer::kAdamBf16Moments};
        row.optimizer_refusal =
            "torchtitan builds AdamW (or Adam): FP32 moments, or BF16 ones under "
            "optimizer.implementation fused_opt_states_bf16; its DistMuon (August 2026) is not "
            "modelled. Choose adam or adam-bf16-moments.";
        row.losses = {Loss::kFp32Upcast, Loss::kChunkedWrapper};
        row.loss_refusal =
            "torchtitan computes the loss as cross_entropy over FP32-upcast logits, whole or "
            "chunked by its ChunkedLossWrapper (its llama3 configs since April 2026); choose the "
            "fp32-upcast or chunked-wrapper loss.";
        row.torchtitan_mixture = true;
        row.silu_apart = true;
        row.dtensor_tensor_parallel = true;
        row.torch_pipelining = true;
        row.fine_tuning = false;
        row.offloading = false;
        row.replayed = true;
        return row;
      }(),
      [] {
        StackRow row{Stack::kDeepSpeed};
        row.min_zero_stage = 1;
        row.bf16_master = true;
        row.zero_refusal =
            "DeepSpeed is modelled with ZeRO 1, 2 or 3 (without ZeRO its BF16 optimiser keeps "
            "FP32 gradients of its own); choose a ZeRO stage.";
        row.fp8 = false;
        // LoRA and QLoRA as transformers, PEFT and accelerate run them under ZeRO (the frozen
        // base sharded like any 16-bit tensor); ZeRO-Offload of the optimiser (ZeRO 2 and 3) and
        // of the parameters (ZeRO 3), on one device or more.
        row.zero_offload = true;
        row.transformers_modules = true;
        row.zero_over_one_rank = true;
        row.one_rank_note =
            "DeepSpeed's ZeRO over one data-parallel rank partitions the states whole: nothing is "
            "sharded, and its buffers and offloading run as on more.";
        row.replayed = true;
        return row;
      }(),
      // torchtune's recipes (v0.6.1), single-device (full_finetune_single_device.py,
      // lora_finetune_single_device.py) or distributed (full_finetune_distributed.py,
      // lora_finetune_distributed.py: FSDP2 over data parallelism, no MixedPrecisionPolicy): the
      // model in the config's dtype (bf16: the weights, their gradients and AdamW's moments in
      // BF16, no master copy).
      [] {
        StackRow row{Stack::kTorchtune};
        row.state_source =
            "torchtune trains in one dtype (its config's dtype: bf16), no master copy, and its "
            "distributed recipes' FSDP2 shards them with no mixed-precision policy "
            "(full_finetune_single_device.py, training/_distributed.py shard_model)";
        row.fsdp_across_devices = true;
        row.zero_refusal =
            "torchtune runs its single-device recipes on one device (ZeRO 0) and its distributed "
            "ones with FSDP2 over d devices (ZeRO 3; fsdp_reshard_after_forward: False is not "
            "modelled); choose ZeRO 0 on one device or ZeRO 3 over more.";
        row.fp8 = false;
        row.losses = {Loss::kFp32Upcast, Loss::kChunked};
        row.loss_refusal =
            "torchtune computes the loss with PyTorch's cross-entropy over FP32-upcast logits or "
            "with CEWithChunkedOutputLoss; choose the fp32-upcast or chunked loss.";
        row.tensor_parallel = false;
        row.data_parallel_only = true;
        row.layout_refusal =
            "torchtune's recipes are modelled on one device or under FSDP2 over data parallelism "
            "(its tensor parallelism is not); set tp, pp, cp and ep to 1, or choose the "
            "torchtitan stack.";
        row.offloading = false;
        row.offloads_activations_only = true;
        row.single_dtype = true;
        row.precision_refusal =
            "The torchtune stack is modelled for its configs' dtype, bf16: the weights, gradients "
            "and AdamW's moments in BF16, no mixed precision and no master copy (fp32's FP32 "
            "activations are not counted); choose bf16 precision.";
        row.int8_base = false;
        row.steps_in_backward = true;
        row.eager_modules = true;
        row.follows_gradients = true;
        row.replayed = true;
        return row;
      }(),
      // transformers' Trainer (or TRL's SFTTrainer) with PEFT and bitsandbytes, under accelerate
      // (transformers 4.46 on, PEFT 0.12 on): the model loaded in BF16 (torch_dtype=
      // torch.bfloat16) and run under Trainer's bf16 autocast; under full training its weights,
      // gradients and AdamW's moments in BF16, no master copy; under LoRA PEFT's adapters in FP32
      // (autocast_adapter_dtype, peft/tuners/tuners_utils.py, _cast_adapter_dtype), with FP32
      // gradients and moments.
      [] {
        StackRow row{Stack::kHf};
        row.state_source =
            "transformers loads the model in BF16 (torch_dtype=torch.bfloat16), no master copy; "
            "PEFT upcasts the adapters to FP32 (autocast_adapter_dtype), so their gradients and "
            "AdamW's moments are FP32";
        row.first_zero_stage = 0;
        row.zero_refusal =
            "The hf stack is modelled on one device or under DDP (ZeRO 0), and under accelerate's "
            "FSDP with FULL_SHARD (ZeRO 3, over d above 1); choose one of those, or the deepspeed "
            "stack for transformers and PEFT under DeepSpeed's ZeRO.";
        row.full_shard_only = true;
        row.fp8 = false;
        row.losses = {Loss::kFp32Upcast, Loss::kFp32Shifted,     Loss::kFusedLinear,
                      Loss::kChunkedNll, Loss::kCutCrossEntropy, Loss::kGrpo,
                      Loss::kDpo};
        row.loss_refusal =
            "transformers computes the loss with ForCausalLMLoss over FP32-upcast logits (4.49 "
            "on; 4.46 to 4.48 shifted a copy of them), with Liger's fused linear loss under "
            "use_liger_kernel, TRL's SFTTrainer with its chunked_nll, TRL's GRPOTrainer and "
            "DPOTrainer with their own, or axolotl with Cut Cross-Entropy; choose the "
            "fp32-upcast, fp32-shifted, fused-linear, chunked-nll, grpo, dpo or "
            "cut-cross-entropy loss.";
        row.tensor_parallel = false;
        row.data_parallel_only = true;
        row.layout_refusal =
            "The hf stack is modelled with data parallelism alone (DDP under accelerate); set "
            "tp, pp, cp and ep to 1, or choose another stack.";
        row.offloading = false;
        row.single_dtype = true;
        row.precision_refusal =
            "The hf stack is modelled with the model loaded in BF16 (torch_dtype=torch.bfloat16, "
            "bf16 precision), or for full training in FP32 under bf16 mixed precision "
            "(bf16-mixed: Trainer's autocast, or under FSDP accelerate's FP32 shards computed in "
            "BF16); LoRA on an FP32 base, fp32 and fp8-mixed are not modelled; choose bf16 "
            "precision.";
        row.fp32_adapters = true;
        row.transformers_loading = true;
        row.transformers_modules = true;
        row.follows_gradients = true;
        row.replayed = true;
        return row;
      }(),
  };
  static_assert(std::size(rows) == static_cast<std::size_t>(Stack::kCount),
                "a row for each stack, in the enum's order");
  return rows[static_cast<std::size_t>(stack)];
}

}  // namespace trainmem
