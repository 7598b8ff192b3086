// The model states (states.hpp): Rajbhandari et al., "ZeRO", SC 2020, for what each stage shards;
// Hu et al., "LoRA", for what trains under it.
#include "estimate/states.hpp"

#include <algorithm>
#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

constexpr const char* kZeroSource = "Rajbhandari et al., \"ZeRO\", SC 2020";
constexpr const char* kLoraSource =
    "Hu et al., \"LoRA\", arXiv:2106.09685: the base is frozen, only the adapters (PEFT's "
    "lora_A, in × r, and lora_B, r × out) train";

}  // namespace

Figure sharded(const Pen& pen, const Placement& placement, bool shards, double count,
               double experts) {
  if (!shards) return pen.count(count, "parameters");
  const Figure zero_shards = pen.count(placement.zero_shards, "ZeRO shards");
  if (experts == 0 || placement.zero_shards == placement.expert_zero_shards) {
    return pen.count(count, "parameters") / zero_shards;
  }
  const double expert_shards = placement.expert_zero_shards;
  return pen.count(count - experts, "parameters") / zero_shards +
         pen.count(experts, "routed experts'") /
             pen.count(expert_shards, expert_shards == 1 ? "shard of their data-parallel group"
                                                         : "shards of their data-parallel group");
}

namespace {

std::string precision_source(const TrainingSetup& setup) {
  std::string source = std::string(kZeroSource) + "; precision " + choice_id(setup.precision);
  const StackRow& row = stack_row(setup.stack);
  if (megatron_fsdp(setup)) {
    source +=
        "; Megatron-FSDP: BF16 main gradients, the parameters' dtype unless "
        "--megatron-fsdp-main-grads-dtype (megatron_fsdp/param_and_grad_buffer.py, "
        "_resolve_group_grad_dtype)";
  } else if (setup.grad_reduce_in_bf16) {
    source +=
        "; --grad-reduce-in-bf16: Megatron-LM's gradient buffer in BF16 (arguments.py turns "
        "accumulate_allreduce_grads_in_fp32 off; param_and_grad_buffer.py, grad_dtype)";
  } else if (*row.state_source != '\0') {
    source += "; " + std::string(row.state_source);
  }
  return source;
}

std::string base_weights_source(const TrainingSetup& setup) {
  std::string source = kLoraSource;
  if (setup.base_weights == BaseWeights::kNf4) {
    source +=
        "; NF4 with double quantisation, 4 + 8/64 + 32/(64·256) bits (Dettmers et al., "
        "\"QLoRA\", arXiv:2305.14314; bitsandbytes' quantize_4bit, blocksize 64)";
  } else if (setup.base_weights == BaseWeights::kInt8) {
    source +=
        "; int8, 1 B per weight and an FP32 scale per output row (bitsandbytes' Linear8bitLt)";
  }
  return source;
}

}  // namespace

BytesPerParameter state_bytes_per_parameter(const ModelShape& shape, const TrainingSetup& setup) {
  const StackRow& row = stack_row(setup.stack);
  // PEFT's adapters in FP32 (StackRow::fp32_adapters), and a model the hf stack loads in FP32
  // (bf16-mixed: FP32 weights under bf16 autocast, no master copy): what trains is held as FP32
  // training holds it.
  const bool lora = kBeyondThePlate && setup.lora_rank > 0;
  const bool fp32_trained =
      lora ? row.fp32_adapters
           : row.transformers_loading && setup.precision == Precision::kBf16Mixed;
  const Precision trained = fp32_trained ? Precision::kFp32 : setup.precision;
  BytesPerParameter per = bytes_per_parameter(trained, setup.optimizer, shape);
  if (lora && setup.optimizer == Optimizer::kAdafactor) {
    // The adapters' own factored state; one state value's bytes is SGD's one buffer's.
    const double state_value_bytes =
        bytes_per_parameter(trained, Optimizer::kSgdMomentum, shape).optimizer_states;
    per.optimizer_states =
        state_value_bytes *
        lora_adafactor_values_per_layer(shape, setup.lora_rank, setup.lora_targets) /
        lora_parameters_per_layer(shape, setup.lora_rank, setup.lora_targets);
  }
  // What the stack holds instead (its row: Megatron-LM's FP32 main gradients, FSDP2's FP32
  // sharded parameters and no master copy).
  if (row.weight_bytes > 0) per.weights = row.weight_bytes;
  if (row.gradient_bytes > 0) per.gradients = row.gradient_bytes;
  // Megatron-LM's --grad-reduce-in-bf16 (the megatron stack alone): a BF16 gradient buffer.
  // Megatron-FSDP (ZeRO 2 and 3 under it) keeps its main gradients in the parameters' dtype unless
  // --megatron-fsdp-main-grads-dtype says otherwise, and never reads grad_reduce_in_fp32
  // (param_and_grad_buffer.py, _resolve_group_grad_dtype).
  if (setup.grad_reduce_in_bf16 || megatron_fsdp(setup)) per.gradients = kBf16Bytes;
  if (!row.master_weights) per.master_weights = 0;
  // Megatron-LM's precision-aware optimiser (adam-bf16-moments under the megatron stack):
  // Transformer Engine's FusedAdam keeps each FP32 master as the 16 bits its BF16 parameter drops
  // (fused_adam.py, store_param_remainders: an int16 state; Megatron-LM's OptimizerConfig
  // defaults it on, and distrib_optimizer.py makes no FP32 shard of its own).
  if (setup.stack == Stack::kMegatron && setup.optimizer == Optimizer::kAdamBf16Moments) {
    per.master_weights = kBf16Bytes;
  }
  per.total = per.weights + per.gradients + per.master_weights + per.optimizer_states;
  // Stepped in the backward pass, the gradients no longer grow with the parameters: the largest
  // parameter's alone is held (add_model_states).
  if (setup.optimizer_in_backward) per.total -= per.gradients;
  return per;
}

BaseWeightBytes base_weight_bytes(const ModelShape& shape, const TrainingSetup& setup) {
  BaseWeightBytes base;
  if (!kBeyondThePlate || setup.lora_rank == 0) return base;
  base.per_parameter = base_linear_bytes_per_parameter(shape, setup.base_weights);
  const bool int8 = setup.base_weights == BaseWeights::kInt8;
  base.per_value = int8 ? kInt8BytesPerValue : base.per_parameter;
  base.per_row = int8 ? kInt8ScaleBytesPerRow : 0;
  base.others = setup.kbit_prep ? kFp32Bytes : kBf16Bytes;
  base.embeddings = setup.kbit_cast_back ? kBf16Bytes : base.others;
  return base;
}

Figure weight_figure(const Pen& pen, const StageParameters& parameters,
                     const BytesPerParameter& per, const BaseWeightBytes& base) {
  if (base.per_parameter == 0)
    return pen.bytes(per.weights) * pen.count(parameters.trainable, "parameters");
  Figure weights = pen.bytes(per.weights) * pen.count(parameters.trainable, "adapter") +
                   pen.bytes(base.per_value) * pen.count(parameters.frozen_linear, "frozen linear");
  if (base.per_row > 0) {
    weights = weights +
              pen.bytes(base.per_row) * pen.count(parameters.frozen_linear_rows, "rows' scales");
  }
  if (base.embeddings == base.others || parameters.frozen_embeddings == 0) {
    return weights +
           pen.bytes(base.others) * pen.count(parameters.frozen_other, "other frozen parameters");
  }
  // TRL 0.13-0.21's cast back: the embedding matrices BF16, the norms (and biases) FP32.
  return weights +
         pen.bytes(base.others) *
             pen.count(parameters.frozen_other - parameters.frozen_embeddings, "norms and biases") +
         pen.bytes(base.embeddings) * pen.count(parameters.frozen_embeddings, "embeddings");
}

void add_model_states(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                      const StagePlacement& stage, const BytesPerParameter& per,
                      const BaseWeightBytes& base) {
  const Pen& pen = ledger.pen();
  // The stage from which ZeRO shards each state; FSDP2 shards the weights at either of its stages.
  const int zero_stage = stack_row(setup.stack).shards_weights ? 3 : setup.layout.zero_stage;
  const bool lora = kBeyondThePlate && setup.lora_rank > 0;
  // The frozen base and the adapters shard alike (LoRA is kept to ep = 1 and etp = t, where the
  // experts' group is everyone's: check.cpp).
  const double experts = lora ? 0 : stage.expert_parameters;
  const double trainable = stage.split.trainable;
  if (lora) {
    const Figure weights = weight_figure(pen, stage.split, per, base);
    ledger.add(
        Term::kWeights,
        zero_stage >= 3 ? weights / pen.count(placement.zero_shards, "ZeRO shards") : weights,
        [&] { return base_weights_source(setup); });
  } else if (stage.fp8_parameters > 0) {
    // --fp8-param-gather: the layers' GEMM weights are FP8 parameters, counted in the FP8 term;
    // the rest stay BF16, sharded under Megatron-FSDP's optim_grads_params (ZeRO 3).
    const Figure rest =
        pen.count(stage.parameters - stage.fp8_parameters, "parameters outside the FP8 GEMMs");
    ledger.add(
        Term::kWeights,
        pen.bytes(per.weights) *
            (zero_stage >= 3 ? rest / pen.count(placement.zero_shards, "ZeRO shards") : rest),
        [&] {
          return precision_source(setup) +
                 "; --fp8-param-gather: the linear layers' weights are FP8 parameters "
                 "(the FP8 term)";
        });
  } else {
    ledger.add(Term::kWeights,
               pen.bytes(per.weights) *
                   sharded(pen, placement, zero_stage >= 3, stage.parameters, experts),
               [&] { return precision_source(setup); });
  }
  const auto trained_source = [&] {
    return lora ? std::string(kLoraSource) : precision_source(setup);
  };
  if (kBeyondThePlate && setup.optimizer_in_backward) {
    // Each gradient is stepped and freed by its own hook: at most the largest parameter's is
    // held (one device, every parameter trained: check.cpp).
    const ParameterCounts& counts = placement.counts;
    const double largest =
        std::max({counts.embedding, counts.output_head, placement.linear.largest_weight});
    ledger.add(
        Term::kGradients,
        pen.bytes(per.gradients) *
            pen.said(largest, [&] { return format_count(largest) + " parameters, the largest"; }),
        [] {
          return std::string(
              "torchtune's optimizer_in_bwd (torchtune/training/memory.py, "
              "register_optim_in_bwd_hooks): each parameter's optimizer steps in its "
              "post-accumulate-grad hook and the gradient is freed; the largest parameter's "
              "gradient is the most held at once");
        });
  } else {
    ledger.add(
        Term::kGradients,
        pen.bytes(per.gradients) * sharded(pen, placement, zero_stage >= 2, trainable, experts),
        trained_source);
  }
  ledger.add(
      Term::kMasterWeights,
      pen.bytes(per.master_weights) * sharded(pen, placement, zero_stage >= 1, trainable, experts),
      [&] {
        const StackRow& row = stack_row(setup.stack);
        return std::string("Micikevicius et al., \"Mixed Precision Training\", ICLR 2018") +
               (row.master_weights ? "" : "; " + std::string(row.state_source));
      });
  const auto optimizer_source = [&] {
    const Choice& optimizer = choices<Optimizer>()[static_cast<std::size_t>(setup.optimizer)];
    return optimizer.name + ": " + optimizer.source;
  };
  if (setup.optimizer == Optimizer::kMuon) {
    // This stage's own mix (check.cpp keeps Muon to full training of a text model's layers): the
    // embedding, positions, output layer and final norm here, and its layers' norms and biases
    // (counted whole on each tensor-parallel rank), take AdamW's two moments; its layers' weight
    // matrices, the routed experts among them, one momentum buffer.
    const double adam = std::min(
        trainable, stage.root_parameters + stage.layers * placement.muon_vectors_per_layer);
    ledger.add(Term::kOptimizerStates,
               pen.bytes(per.state_value) *
                   (sharded(pen, placement, zero_stage >= 1, trainable - adam, experts) +
                    pen.count(kAdamMomentsPerParameter, "moments") *
                        sharded(pen, placement, zero_stage >= 1, adam, 0)),
               [&] {
                 return optimizer_source() +
                        "; the weight matrices' momentum, and AdamW's two moments for the "
                        "embedding, output layer, norms and biases";
               });
    return;
  }
  ledger.add(Term::kOptimizerStates,
             pen.bytes(per.optimizer_states) *
                 sharded(pen, placement, zero_stage >= 1, trainable, experts),
             optimizer_source);
}

}  // namespace trainmem
