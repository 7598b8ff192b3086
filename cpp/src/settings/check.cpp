// The checks of a whole setup: each value within its setting's bounds (settings.cpp), then what
// the settings must satisfy together: degrees that divide the model and the sequence, and switches
// that need another setting.
#include "settings/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "settings/check_experts.hpp"
#include "settings/check_hybrid.hpp"
#include "settings/check_nvfp4.hpp"
#include "settings/check_per_op.hpp"
#include "settings/check_recompute.hpp"
#include "settings/check_rollout.hpp"
#include "settings/check_sparse.hpp"
#include "stacks/stack_rows.hpp"
#include "stacks/stack_run.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/config.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

namespace {

// Uneven pipeline stages, by Megatron-LM's rule (TransformerConfig.__post_init__): the first and
// last stages' layers as set, each above 0, and the rest split evenly over the stages left, each
// taking at least one; none left, and nothing may be. With virtual stages each device's layers
// split evenly over them, unless `any_virtual_split` (torchtitan's generate_split_points splits
// the virtual stages themselves unevenly).
Answer check_uneven_stages(const ParallelLayout& layout, const ModelShape& shape,
                           bool any_virtual_split) {
  const int first = layout.pipeline_first_stage_layers;
  const int last = layout.pipeline_last_stage_layers;
  const char* at_fault = first > 0 ? id::kPipelineFirstLayers : id::kPipelineLastLayers;
  const std::string named = first > 0 && last > 0 ? "The first and last pipeline stages' layers"
                            : first > 0           ? "The first pipeline stage's layers"
                                                  : "The last pipeline stage's layers";
  const int p = layout.pipeline_parallel;
  if (p == 1) {
    return refusal(at_fault, named +
                                 " split a pipeline; they need pipeline parallelism above 1, or "
                                 "0 for one stage.");
  }
  const long long stages_left = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const long long layers_left = static_cast<long long>(shape.num_layers) - first - last;
  const bool even = stages_left == 0 ? layers_left == 0
                                     : layers_left >= stages_left && layers_left % stages_left == 0;
  if (even) {
    // Each device's layers over its virtual stages: evenly by Megatron-LM's rule, at least one each
    // by torchtitan's.
    const int v = layout.virtual_pipeline_stages;
    if (v == 1) return {};
    const long long middle = stages_left > 0 ? layers_left / stages_left : 0;
    const std::pair<const char*, long long> stages[] = {
        {"first stage's", first}, {"last stage's", last}, {"middle stages'", middle}};
    for (const auto& [whose, layers] : stages) {
      if (layers == 0) continue;
      const bool splits = any_virtual_split ? layers >= v : layers % v == 0;
      if (splits) continue;
      return refusal(at_fault, "With " + std::to_string(v) + " virtual stages a device, the " +
                                   whose + " " + std::to_string(layers) + " layers " +
                                   (any_virtual_split ? "cannot give each one layer at least."
                                                      : "must split evenly over them "
                                                        "(Megatron-LM's rule)."));
    }
    return {};
  }
  std::string text = named + " (" + (first > 0 ? std::to_string(first) : "") +
                     (first > 0 && last > 0 ? " and " : "") +
                     (last > 0 ? std::to_string(last) : "") + ") leave " +
                     std::to_string(std::max(layers_left, 0LL)) + " of the " +
                     std::to_string(shape.num_layers) + " layers of " + shape.name + " to ";
  if (stages_left == 0) {
    return refusal(at_fault, text + "no stage: with p " + std::to_string(p) +
                                 " they must add up to " + std::to_string(shape.num_layers) + ".");
  }
  text += std::to_string(stages_left) + (stages_left == 1 ? " stage" : " stages") +
          ", which must take an equal whole number each, at least one (Megatron-LM's rule)";
  // The sums of the set stages' layers that leave each other stage k layers, the three nearest
  // the sum given.
  const long long given = static_cast<long long>(first) + last;
  std::vector<long long> allowed;
  for (long long k = 1; shape.num_layers - k * stages_left >= (first > 0) + (last > 0); ++k) {
    allowed.push_back(shape.num_layers - k * stages_left);
  }
  std::sort(allowed.begin(), allowed.end(), [given](long long left, long long right) {
    return std::llabs(left - given) != std::llabs(right - given)
               ? std::llabs(left - given) < std::llabs(right - given)
               : left < right;
  });
  allowed.resize(std::min<std::size_t>(allowed.size(), 3));
  std::sort(allowed.begin(), allowed.end());
  std::string sums;
  for (std::size_t index = 0; index < allowed.size(); ++index) {
    sums += (index == 0                    ? ""
             : index + 1 == allowed.size() ? " or "
                                           : ", ") +
            std::to_string(allowed[index]);
  }
  if (sums.empty()) {
    return refusal(at_fault, text + "; with p " + std::to_string(p) +
                                 " no split does. Choose a "
                                 "smaller pipeline parallelism.");
  }
  return refusal(at_fault,
                 text + ": with p " + std::to_string(p) + ", " +
                     (first > 0 && last > 0 ? "their layers must add up to " : "it must hold ") +
                     sums + ".");
}

// "h100, h100-96gb, ..., rtx-5090 and a custom device": the devices whose architecture FP8
// training is modelled on (their rows).
std::string fp8_devices() {
  std::string devices;
  for (const Device& device : device_catalog()) {
    if (architecture_row(device.architecture).fp8_weight_copies == 0) continue;
    devices += (devices.empty() ? "" : ", ") + device.id;
  }
  return devices + " and a custom device";
}

// FP8 training (fp8.hpp) is modelled as Transformer Engine runs it on Ada, Hopper and Blackwell,
// training every parameter, with the weights on the device.
Answer check_fp8(const TrainingSetup& setup, const ModelShape& shape) {
  if (setup.precision != Precision::kFp8Mixed) return {};
  // torchao's MXFP8Linear is counted for a dense decoder's block linears on whole tokens (the
  // casts its backward pass makes: stack_torchtitan.cpp).
  if (torchao_mxfp8(setup) && shape.num_experts > 1) {
    return refusal(id::kFp8Recipe,
                   "torchao's MXFP8 is modelled for a dense model's linear layers; its grouped "
                   "GEMMs for a mixture's experts (MXFP8GroupedExpertsConverter) are not. Choose "
                   "the delayed recipe (tensorwise), or a dense model.");
  }
  // Uncompiled, MXTensor.to_mx runs in plain PyTorch (an FP32 copy of each operand, its scaled
  // and clamped values, about 12 B a value at once); compiled, Inductor fuses the casts, as the
  // published runs ran them (fp8.hpp, mx_linear_backward_casts).
  if (torchao_mxfp8(setup) && !blocks_compiled(setup.compile)) {
    return refusal(id::kFp8Recipe,
                   "torchao's MXFP8 is modelled compiled, as torchtitan's published MXFP8 runs "
                   "ran it; uncompiled its casts make FP32 copies of each operand first, which "
                   "are not modelled. Compile the blocks (torch.compile), or choose the delayed "
                   "recipe (tensorwise).");
  }
  // torchtitan v0.2.2's mx.py asserts "TP not yet supported with torch.compile for mxfp8".
  if (torchao_mxfp8(setup) && setup.layout.tensor_parallel > 1) {
    return refusal(id::kFp8Recipe,
                   "torchao's MXFP8 under tensor parallelism is not modelled (torchtitan refuses "
                   "it compiled); set tp to 1, or choose the delayed recipe (tensorwise).");
  }
  const std::string fp8 = "Precision fp8-mixed";
  const std::string other_precisions = "bf16-mixed, bf16 or fp32";
  if (fp8_weight_copies(setup) == 0) {
    const Device device = device_of(setup);
    return refusal(id::kPrecision,
                   fp8 + " is modelled on the " + fp8_devices() +
                       " (Transformer Engine's FP8 recipes on Ada, Hopper and Blackwell); the " +
                       device.name + architecture_row(device.architecture).fp8_refusal +
                       ". Choose " + other_precisions + ", or one of those devices.");
  }
  if (setup.lora_rank > 0) {
    return refusal(id::kPrecision, fp8 +
                                       " is counted for training every parameter; a frozen LoRA "
                                       "base in FP8 is not modelled. Choose " +
                                       other_precisions + ", or set the LoRA rank to 0.");
  }
  if (setup.offload == Offload::kOptimizerAndWeights) {
    return refusal(id::kPrecision,
                   fp8 +
                       " keeps FP8 copies of the weights on the device; offloading the weights "
                       "with them is not modelled. Choose offload none or optimizer, or " +
                       other_precisions + ".");
  }
  return {};
}

// Each setting's own rules (settings.cpp's rows), for a setting held at anything but its
// default: a framework's switch under a stack that has it, and what its value needs of the rest.
Answer check_setting_rules(const TrainingSetup& setup) {
  for (const Setting& setting : settings()) {
    if (setting.refused_elsewhere.empty() && setting.rules.empty()) continue;
    if (setting_text(setup, setting.id) == setting.default_text) continue;
    const std::vector<std::string>& allowing = setting.requires_values;
    if (!setting.refused_elsewhere.empty() &&
        std::find(allowing.begin(), allowing.end(),
                  setting_text(setup, setting.requires_setting)) == allowing.end()) {
      return refusal(setting.id, setting.refused_elsewhere);
    }
    for (const SettingRule& rule : setting.rules) {
      if (!rule.holds(setup)) return refusal(setting.id, rule.refusal);
    }
  }
  return {};
}

// A stack is modelled for what its row says: its precisions, full training on the device, its
// ZeRO stages, its loss and its layouts. Anything else is refused, in the row's words, rather than
// counted as something else.
Answer check_stack(const TrainingSetup& setup, const ModelShape& shape) {
  const StackRow& row = stack_row(setup.stack);
  // The host's step under bf16-master reads BF16 gradients and moments (DeepSpeedCPUAdam with
  // fp32_optimizer_states off), which the host's FP32 gradients do not count.
  if (setup.precision == Precision::kBf16Master && setup.offload != Offload::kNone) {
    return refusal(id::kOffload,
                   "Offloading under bf16-master (the host's step on BF16 gradients and moments) "
                   "is not modelled; set offload to none, or choose bf16-mixed.");
  }
  if (!row.replayed) return {};  // the idealised step takes any setup
  const ParallelLayout& layout = setup.layout;
  const std::string name = choice_name(setup.stack);
  const bool fp8_here = row.fp8 && setup.precision == Precision::kFp8Mixed;
  // torchao's NVFP4Linear, where torchao runs the low-precision linears (check_nvfp4.cpp).
  const bool nvfp4_here =
      row.fp8_engine == Fp8Engine::kTorchao && setup.precision == Precision::kNvfp4Mixed;
  if (row.single_dtype) {
    // FP32 training would keep FP32 activations, which the activation models (BF16) do not
    // count: refused rather than undercounted. The hf stack also runs a model loaded in FP32
    // under bf16 autocast (bf16-mixed), for full training without FSDP.
    const bool fp32_loaded = row.transformers_loading && setup.precision == Precision::kBf16Mixed &&
                             setup.lora_rank == 0;
    if (setup.precision != Precision::kBf16 && !fp32_loaded) {
      return refusal(id::kPrecision, row.precision_refusal);
    }
  } else if (setup.precision != Precision::kBf16Mixed && !fp8_here && !nvfp4_here &&
             !(row.bf16_master && setup.precision == Precision::kBf16Master)) {
    const bool two = row.fp8 || row.bf16_master;
    return refusal(
        id::kStack,
        "The " + name + " stack is modelled for bf16-mixed precision" +
            (row.fp8 ? std::string(" and fp8-mixed (") + fp8_engine_name(row.fp8_engine) + ")"
                     : "") +
            (row.fp8_engine == Fp8Engine::kTorchao ? " and nvfp4-mixed" : "") +
            (row.bf16_master ? " and bf16-master (its BF16 master weights and optimiser state)"
                             : "") +
            "; choose " + (two ? "one of them" : "bf16-mixed") + ", or the ideal stack.");
  }
  // Megatron-LM's precision-aware optimiser (megatron/core/optimizer/__init__.py): "only
  // supported with distributed optimizer", and modelled as its BF16 path without FP8
  // (use_precision_aware_optimizer_no_fp8_or_ds_fp8), with FP32 main gradients.
  if (setup.stack == Stack::kMegatron && setup.optimizer == Optimizer::kAdamBf16Moments &&
      (layout.zero_stage != 1 || setup.precision != Precision::kBf16Mixed ||
       setup.grad_reduce_in_bf16)) {
    return refusal(id::kOptimizer,
                   "Under the megatron stack adam-bf16-moments is Megatron-LM's precision-aware "
                   "optimiser (--use-precision-aware-optimizer --exp-avg-dtype bf16 "
                   "--exp-avg-sq-dtype bf16), modelled on its distributed optimiser (ZeRO 1) in "
                   "bf16-mixed with FP32 main gradients; choose those, or adam.");
  }
  if (!row.fine_tuning && setup.lora_rank > 0) {
    return refusal(id::kStack, "The " + name +
                                   " stack is modelled for full training; set the LoRA rank to 0, "
                                   "or choose the ideal or deepspeed stack.");
  }
  if (row.zero_offload) {
    if (setup.offload_activations) {
      return refusal(id::kOffloadActivations,
                     "DeepSpeed offloads the optimiser's states and the parameters "
                     "(offload_optimizer, offload_param), not the activations; turn activation "
                     "offloading off.");
    }
    if (setup.offload == Offload::kOptimizer && layout.zero_stage < 2) {
      return refusal(id::kOffload,
                     "DeepSpeed's offload_optimizer is modelled under ZeRO 2 and 3 (ZeRO-Offload "
                     "with ZeRO 1 is not); choose ZeRO 2 or 3.");
    }
    if (setup.offload == Offload::kOptimizerAndWeights && layout.zero_stage < 3) {
      return refusal(id::kOffload,
                     "DeepSpeed offloads the parameters (offload_param) under ZeRO 3 alone, as it "
                     "requires; choose ZeRO 3.");
    }
  }
  const bool activations_alone = row.offloads_activations_only && setup.offload == Offload::kNone;
  // verl's engine offloads the actor's optimizer state (optimizer_offload) and with it its
  // parameters (param_offload) between the phases that use them; not its activations.
  const bool verl = setup.rl_trainer == RlTrainer::kVerl && setup.rollout != Rollout::kNone;
  if (verl && setup.offload_activations) {
    return refusal(id::kOffloadActivations,
                   "verl's activation offloading (enable_activation_offload) is not modelled; "
                   "turn activation offloading off.");
  }
  if (!row.offloading && !activations_alone && !verl &&
      (setup.offload != Offload::kNone || setup.offload_activations)) {
    return refusal(id::kStack, "The " + name + " stack is modelled with everything on the device" +
                                   (row.offloads_activations_only ? " but the activations" : "") +
                                   "; set offload to none, or choose the ideal stack.");
  }
  if (activations_alone && setup.offload_activations && setup.recompute != Recompute::kFull) {
    return refusal(id::kOffloadActivations,
                   "torchtune offloads the activations under activation checkpointing alone "
                   "(enable_activation_offloading needs enable_activation_checkpointing); choose "
                   "full recomputation, or turn offloading off.");
  }
  if (row.data_parallel_only && (layout.tensor_parallel > 1 || layout.pipeline_parallel > 1 ||
                                 layout.context_parallel > 1 || layout.expert_parallel > 1)) {
    return refusal(id::kStack, row.layout_refusal);
  }
  if (row.fsdp_across_devices && layout.zero_stage != (num_devices(layout) > 1 ? 3 : 0)) {
    return refusal(id::kStack, row.zero_refusal);
  }
  if (!row.int8_base && setup.lora_rank > 0 && setup.base_weights == BaseWeights::kInt8) {
    return refusal(id::kBaseWeights,
                   "torchtune's QLoRA holds the base in NF4 (torchao's NF4Tensor); choose bf16 "
                   "or nf4 base weights, or another stack.");
  }
  const double shards = static_cast<double>(layout.data_parallel) * layout.context_parallel;
  if (layout.zero_stage < row.min_zero_stage || layout.zero_stage > row.max_zero_stage ||
      shards < row.min_shards) {
    return refusal(id::kStack, row.zero_refusal);
  }
  if (row.full_shard_only && layout.zero_stage != 0 && layout.zero_stage != 3) {
    return refusal(id::kStack, row.zero_refusal);
  }
  if (std::find(row.optimizers.begin(), row.optimizers.end(), setup.optimizer) ==
      row.optimizers.end()) {
    if (*row.optimizer_refusal != '\0') return refusal(id::kOptimizer, row.optimizer_refusal);
    std::string allowed;
    for (const Optimizer optimizer : row.optimizers) {
      allowed += (allowed.empty()                      ? ""
                  : optimizer == row.optimizers.back() ? " or "
                                                       : ", ") +
                 choice_id(optimizer);
    }
    return refusal(id::kOptimizer, "The " + choice_name(setup.stack) + " stack is modelled with " +
                                       allowed + ", not " + choice_id(setup.optimizer) +
                                       "; choose one of them, or the ideal stack.");
  }
  if (!row.losses.empty() && setup.logits &&
      std::find(row.losses.begin(), row.losses.end(), setup.loss) == row.losses.end()) {
    return refusal(id::kStack, row.loss_refusal);
  }
  if (!row.tensor_parallel && (layout.tensor_parallel > 1 || layout.expert_parallel > 1)) {
    return refusal(id::kStack, row.layout_refusal);
  }
  if (row.torchtitan_mixture && shape.num_experts > 1) {
    if (setup.capacity_factor > 0) {
      return refusal(id::kCapacityFactor,
                     "torchtitan's all-to-all token dispatcher drops no token and pads no "
                     "expert's buffer to a capacity; set the capacity factor to 0.");
    }
    // GroupedExperts (moe.py): SwiGLU experts without biases, and shared experts without a gate;
    // or gpt-oss's GptOssGroupedExperts (models/gpt_oss/moe.py), with biases and a clamped SwiGLU,
    // beside attention with sinks: torchtitan builds no other pairing.
    const bool gpt_oss = shape.clamped_swiglu && shape.mlp_bias && shape.attention_sinks;
    const bool grouped = !shape.clamped_swiglu && !shape.mlp_bias && !shape.attention_sinks;
    if (!(gpt_oss || grouped) || !shape.gated_mlp || shape.shared_expert_gate) {
      return refusal(id::kStack,
                     "torchtitan's mixture is counted as its GroupedExperts build it (moe.py: "
                     "SwiGLU experts without biases, shared experts without a gate), or as "
                     "gpt-oss's GptOssGroupedExperts beside its attention sinks; " +
                         shape.name + "'s are neither. Choose the megatron stack.");
    }
  }
  // Megatron-LM's MoELayer.forward raises in training where tensor parallelism runs without
  // sequence parallelism.
  if (setup.stack == Stack::kMegatron && shape.num_experts > 1 && layout.tensor_parallel > 1 &&
      !layout.sequence_parallel) {
    return refusal(id::kSequenceParallel,
                   "Megatron-LM trains a mixture of experts under tensor parallelism only with "
                   "sequence parallelism (MoELayer.forward raises otherwise); turn sequence "
                   "parallelism on.");
  }
  if (megatron_fsdp(setup)) {
    // What Megatron-FSDP's replay follows: the layers, each one unit and one bucket (two for a
    // mixture's layer: its routed experts' and the rest), each stage's own under 1F1B, with BF16
    // parameters and FP32 main weights.
    const char* asked =
        layout.pipeline_parallel > 1 && layout.virtual_pipeline_stages > 1
            ? "the interleaved pipeline schedule (a Megatron-FSDP instance for each virtual "
              "stage)"
        : shape.num_experts > 1 && setup.fp8_param_gather
            ? "FP8 parameters (--fp8-param-gather) on a mixture of experts"
        : setup.fp8_param_gather && layout.zero_stage < 3
            ? "FP8 parameters (--fp8-param-gather) under optim_grads"
        : setup.fp8_param_gather &&
                (setup.fp8_recipe == Fp8Recipe::kMxfp8 || setup.fp8_recipe == Fp8Recipe::kBlockwise)
            ? "FP8 parameters (--fp8-param-gather) in MXFP8 (whose column-wise data "
              "it gathers too) or blockwise FP8 (made column-wise after each "
              "gather, with its scales)"
            : nullptr;
    if (asked != nullptr) {
      return refusal(
          id::kZeroStage,
          "ZeRO 2 and 3 under Megatron-LM are Megatron-FSDP's optim_grads and "
          "optim_grads_params, modelled without a pipeline and under 1F1B; " +
              std::string(asked) +
              " beside it is not modelled: choose ZeRO 0 or 1 (the distributed optimiser), or "
              "leave it out.");
    }
  }
  if (row.dtensor_tensor_parallel && layout.tensor_parallel > 1 && !layout.sequence_parallel) {
    return refusal(id::kSequenceParallel,
                   "torchtitan runs tensor parallelism with sequence parallelism always on (its "
                   "norms are SequenceParallel, apply_tp); turn sequence parallelism on, or "
                   "choose the megatron stack.");
  }
  return {};
}

}  // namespace

namespace {

// The layout against the model and the sequence: degrees that divide what they split, switches
// that need another degree, and ZeRO's replicas.
// Megatron-LM's global batch: a whole number of micro-batches on each of the d replicas
// (megatron/core/num_microbatches_calculator.py, ConstantNumMicroBatchesCalculator); under the
// interleaved schedule groups of g micro-batches (p, its default
// microbatch_group_size_per_vp_stage), g no more than the step's, and the last group whole or of p
// at least (schedules.py, forward_backward_pipelining_with_interleaving).
Answer check_global_batch(const TrainingSetup& setup) {
  const long long global = setup.global_batch_sequences;
  if (global == 0) return {};
  const auto count = [](long long value) { return format_count(static_cast<double>(value)); };
  const ParallelLayout& layout = setup.layout;
  const long long per_step =
      static_cast<long long>(setup.micro_batch_sequences) * layout.data_parallel;
  if (global % per_step != 0) {
    return refusal(id::kGlobalBatch,
                   "Global batch " + count(global) +
                       " must be a whole number of micro-batches of " +
                       format_count(setup.micro_batch_sequences) +
                       (setup.micro_batch_sequences == 1 ? " sequence" : " sequences") +
                       " on each data-parallel replica (d " + format_count(layout.data_parallel) +
                       "): a multiple of " + count(per_step) + ".");
  }
  const long long n = global / per_step;
  const int p = layout.pipeline_parallel;
  if (layout.virtual_pipeline_stages <= 1) return {};
  // forward_backward_pipelining_with_interleaving: the group g (p by default) within [p, n], and
  // the last group empty or of p at least.
  const long long g = layout.microbatch_group_size > 0 ? layout.microbatch_group_size : p;
  if (layout.microbatch_group_size > 0 && g > n) {
    return refusal(id::kMicrobatchGroupSize,
                   "The micro-batches a virtual stage runs in a row (" + count(g) +
                       ") must not pass the step's " + count(n) +
                       " (global batch over micro-batch × d), as Megatron-LM's schedules.py "
                       "requires; choose " +
                       count(p) + " to " + count(n) + ".");
  }
  if (n % g != 0 && n % g < p) {
    const std::string groups = layout.microbatch_group_size > 0
                                   ? count(g) + ", and its last group must be whole or hold p " +
                                         format_count(p) + " at least"
                                   : "p " + format_count(p);
    return refusal(id::kGlobalBatch,
                   "The interleaved schedule runs its micro-batches in groups of " + groups +
                       " (Megatron-LM's schedules.py): global batch " + count(global) + " gives " +
                       count(n) + " a step; choose a multiple of " + count(per_step * g) + ".");
  }
  return {};
}

Answer check_layout(const TrainingSetup& setup, const ModelShape* shape) {
  const ParallelLayout& layout = setup.layout;
  const int t = layout.tensor_parallel;
  if (shape->num_attention_heads % t != 0 || shape->num_key_value_heads % t != 0 ||
      shape->ffn_hidden_size % t != 0) {
    return refusal(id::kTensorParallel,
                   "Tensor parallelism " + std::to_string(t) + " must divide the " +
                       std::to_string(shape->num_attention_heads) + " attention heads, " +
                       std::to_string(shape->num_key_value_heads) + " key/value heads and " +
                       format_count(shape->ffn_hidden_size) + " FFN width of " + shape->name + ".");
  }
  if (tensor_parallel_widths_gcd(*shape) % t != 0) {
    return refusal(id::kTensorParallel, "Tensor parallelism " + std::to_string(t) +
                                            " must divide the shared experts' width, " +
                                            format_count(shape->shared_expert_ffn_hidden_size) +
                                            ", of " + shape->name + ".");
  }
  const Answer titan_experts = check_torchtitan_experts(setup, *shape);
  if (!titan_experts.ok()) return titan_experts;
  const Answer experts = check_expert_layout(layout, *shape);
  if (!experts.ok()) return experts;
  // MoEAllGatherTokenDispatcher gathers over the expert tensor-and-model-parallel group, etp·ep;
  // the count takes it to be t·ep, as where etp is t (Megatron-LM's default), and takes the
  // capacity-free routing.
  if (gathers_expert_tokens(setup) && shape->num_experts > 1 &&
      expert_tensor_parallel_of(layout) != t) {
    return refusal(id::kExpertTensorParallel,
                   "The all-gather token dispatcher is counted where the experts' tensor "
                   "parallelism is t (" +
                       std::to_string(t) + "); set etp to 0 (as t), or choose alltoall.");
  }
  const Answer flex = check_flex_dispatcher(setup, *shape);
  if (!flex.ok()) return flex;
  if (setup.moe_dispatcher == MoeDispatcher::kAllGather && setup.capacity_factor > 0) {
    return refusal(id::kCapacityFactor,
                   "The all-gather token dispatcher is counted without a capacity factor; set it "
                   "to 0, or choose alltoall.");
  }
  if (setup.capacity_factor > 0 && shape->num_experts == 1) {
    return refusal(id::kCapacityFactor,
                   "A capacity factor needs a mixture of experts; " + shape->name + " has none.");
  }
  const StackRow& row = stack_row(setup.stack);
  if (layout.sequence_parallel && t == 1 && !row.drops_lone_sequence_parallel) {
    return refusal(id::kSequenceParallel,
                   "Sequence parallelism splits what tensor parallelism leaves whole; it needs "
                   "tensor parallelism above 1.");
  }
  const int p = layout.pipeline_parallel;
  const int v = layout.virtual_pipeline_stages;
  const bool uneven =
      layout.pipeline_first_stage_layers > 0 || layout.pipeline_last_stage_layers > 0;
  if (uneven) {
    const Answer stages =
        check_uneven_stages(layout, *shape, stack_row(setup.stack).torch_pipelining);
    if (!stages.ok()) return stages;
  } else if (shape->num_layers % p != 0) {
    return refusal(id::kPipelineParallel,
                   "Pipeline parallelism " + std::to_string(p) + " must divide the " +
                       std::to_string(shape->num_layers) + " layers of " + shape->name +
                       (p < shape->num_layers
                            ? ", or set the first and last pipeline stages' layers so that the "
                              "stages between split the rest evenly."
                            : "."));
  }
  if (v > 1 && p == 1) {
    return refusal(id::kVirtualPipelineStages,
                   "Virtual pipeline stages interleave a pipeline; they need pipeline "
                   "parallelism above 1.");
  }
  if (!uneven && shape->num_layers % (static_cast<long long>(p) * v) != 0) {
    return refusal(id::kVirtualPipelineStages,
                   "Pipeline parallelism times virtual stages (" + std::to_string(p) + " × " +
                       std::to_string(v) + ") must divide the " +
                       std::to_string(shape->num_layers) + " layers of " + shape->name + ".");
  }
  if (std::abs(setup.pipeline_stage) > p && p == 1) {
    return refusal(id::kStage, "Pipeline stage " + std::to_string(setup.pipeline_stage) +
                                   " needs a pipeline: with p 1 there is one stage, 0, 1 or -1.");
  }
  if (std::abs(setup.pipeline_stage) > p) {
    return refusal(id::kStage, "Pipeline stage " + std::to_string(setup.pipeline_stage) +
                                   " is beyond p " + std::to_string(p) + "'s stages: choose 1 to " +
                                   std::to_string(p) + " from the first, -1 to -" +
                                   std::to_string(p) + " from the last, or 0 for the most loaded.");
  }
  const Answer batch = check_global_batch(setup);
  if (!batch.ok()) return batch;
  const int c = layout.context_parallel;
  if (setup.sequence_length % c != 0) {
    return refusal(id::kContextParallel, "Context parallelism " + std::to_string(c) +
                                             " must divide the sequence length " +
                                             format_count(setup.sequence_length) + ".");
  }
  // The all-to-all exchanges heads for tokens: each tensor-parallel rank's heads, and its key/value
  // heads, split over its group, c under a2a (context_parallel.py,
  // AttnFuncWithCPAndQKVOA2A.forward's assertion; flash_attn_a2a_communicate's under a2a+p2p).
  if (setup.cp_comm_type == CpCommType::kA2aP2p && c % setup.cp_a2a_size != 0) {
    return refusal(id::kCpA2aSize, "The all-to-all group's " + std::to_string(setup.cp_a2a_size) +
                                       " devices must divide context parallelism's " +
                                       std::to_string(c) +
                                       " (--hierarchical-context-parallel-sizes multiply to c).");
  }
  const int group = c > 1 ? cp_all_to_all_group(setup) : 1;
  if (group > 1 && ((shape->num_attention_heads / t) % group != 0 ||
                    (shape->num_key_value_heads / t) % group != 0)) {
    const bool hierarchical = setup.cp_comm_type == CpCommType::kA2aP2p;
    return refusal(hierarchical ? id::kCpA2aSize : id::kCpCommType,
                   std::string("The all-to-all splits each tensor-parallel rank's heads over ") +
                       (hierarchical ? "its group: " : "the context: c ") + std::to_string(group) +
                       " must divide the " + std::to_string(shape->num_attention_heads / t) +
                       " attention heads and " + std::to_string(shape->num_key_value_heads / t) +
                       " key/value heads of a rank; choose p2p, or a smaller " +
                       (hierarchical ? "group." : "c."));
  }
  const double num_devices = static_cast<double>(layout.data_parallel) * t * p * c;
  if (num_devices > kMaxDevices) {
    return refusal(id::kDataParallel, "The layout's d·t·p·c devices must number at most " +
                                          format_count(kMaxDevices) + ".");
  }
  if (layout.zero_stage > 0 && static_cast<long long>(layout.data_parallel) * c == 1 &&
      !row.zero_over_one_rank) {
    return refusal(id::kZeroStage,
                   "ZeRO shards the model states over data-parallel replicas; a ZeRO stage "
                   "above 0 needs data or context parallelism above 1.");
  }
  return {};
}

// LoRA and a quantised base, on the blocks fine_tuning.cpp counts adapters on.
Answer check_lora(const TrainingSetup& setup, const ModelShape* shape) {
  if (setup.lora_dropout > 0 && setup.lora_rank == 0) {
    return refusal(id::kLoraDropout,
                   "LoRA dropout is the adapters'; it needs LoRA (a LoRA rank above 0), or set it "
                   "to 0.");
  }
  if (setup.lora_dropout > 0 && setup.layout.tensor_parallel > 1) {
    return refusal(id::kLoraDropout,
                   "LoRA dropout is counted on a whole layer (tensor parallelism 1); set it to 0 "
                   "or tensor parallelism to 1.");
  }
  if (setup.base_weights != BaseWeights::kBf16 && setup.lora_rank == 0) {
    return refusal(id::kBaseWeights,
                   "Base weights in " + choice_id(setup.base_weights) +
                       " are frozen and cannot train; quantised base weights need LoRA (a LoRA "
                       "rank above 0).");
  }
  // fine_tuning.cpp counts adapters on a Llama-style block's separate Q, K, V and O and its gated
  // MLP. GPT-2 and GPT-NeoX fuse Q, K and V into one module (PEFT's c_attn, query_key_value), so
  // their adapters differ: refused rather than counted as a Llama block's.
  if (setup.lora_rank > 0 && !shape->gated_mlp) {
    return refusal(id::kLoraRank,
                   "LoRA is counted on Llama-style blocks (separate Q, K, V and O, "
                   "a gated MLP); " +
                       shape->name + " is a GPT-style block. Set the LoRA rank to 0.");
  }
  // Nor does it count adapters on latent attention, shared experts, experts of their own width
  // or dense layers mixed in; and its frozen base shards as one group, as with ep = 1, etp = t.
  const bool extended_mixture = shape->moe_ffn_hidden_size > 0 ||
                                shape->shared_expert_ffn_hidden_size > 0 ||
                                mixes_dense_layers(*shape);
  if (setup.lora_rank > 0 && (latent_attention(*shape) || extended_mixture)) {
    const std::string what =
        latent_attention(*shape)
            ? " has latent attention"
            : " has shared experts, experts of their own width or dense layers";
    return refusal(id::kLoraRank,
                   "LoRA is counted on Llama-style blocks and plain mixtures of experts; " +
                       shape->name + what + ". Set the LoRA rank to 0.");
  }
  return {};
}

// The chunked loss's chunks: the device's tokens in chunks of equal length (torch._check in
// _chunk_local), the one rule of it on the plate's settings.
Answer check_chunked_wrapper_chunks(const TrainingSetup& setup) {
  const double tokens = static_cast<double>(setup.micro_batch_sequences) * setup.sequence_length /
                        setup.layout.context_parallel;
  if (std::fmod(tokens, setup.loss_chunks) != 0) {
    return refusal(id::kLossChunks,
                   "torchtitan's chunked loss splits each device's " + format_count(tokens) +
                       " tokens into chunks of equal length: choose a number of chunks that "
                       "divides them.");
  }
  return {};
}

// torchtitan's ChunkedLossWrapper, as its stack runs it: under the ideal step or torchtitan, on
// one pipeline stage (its pipeline schedule computes the loss per micro-batch in the stage's own
// step, not modelled), its loss_fn eager or compiled, and the device's tokens in chunks of equal
// length (torch._check in _chunk_local).
Answer check_chunked_wrapper(const TrainingSetup& setup) {
  if (setup.stack != Stack::kIdeal && setup.stack != Stack::kTorchtitan) {
    return refusal(id::kLoss,
                   "The chunked-wrapper loss is torchtitan's ChunkedLossWrapper; choose the "
                   "torchtitan or ideal stack, or another loss.");
  }
  if (setup.layout.pipeline_parallel > 1) {
    return refusal(id::kLoss,
                   "torchtitan's chunked loss under pipeline parallelism runs in the last stage's "
                   "schedule, which is not modelled; set pp to 1, or choose the fp32-upcast loss.");
  }
  return check_chunked_wrapper_chunks(setup);
}

}  // namespace

namespace {

Answer check_values(const TrainingSetup& setup, const ModelShape* shape);

// What check_setup asks first: a custom model's shape (model_shape_problem), then check_values.
Answer check_model_and_values(const TrainingSetup& setup, const ModelShape* shape) {
  if (setup.model_id == kCustomModelId) {
    const std::string problem = model_shape_problem(*shape);
    if (!problem.empty())
      return refusal(kConfigInputId, "The custom model's shape is not usable: " + problem);
  }
  return check_values(setup, shape);
}

// Each value within its setting's bounds, and the sequence within a model's learned positions.
Answer check_values(const TrainingSetup& setup, const ModelShape* shape) {
  // The model is the table's first setting: an unknown one is refused before anything below reads
  // its shape.
  const Answer values = check_setting_values(setup);
  if (!values.ok()) return values;
  // Learned positions have a row each and no more: a longer sequence cannot run at all. (A rotary
  // model's max_position_embeddings bounds what it was trained on; the page notes a longer one.)
  if (shape->num_position_embeddings > 0 && shape->max_positions > 0 &&
      setup.sequence_length > shape->max_positions) {
    return refusal(id::kSequenceLength,
                   shape->name + " has " + format_count(shape->max_positions) +
                       " learned positions: a sequence of " + format_count(setup.sequence_length) +
                       " tokens is past them; its sequence length can be at most " +
                       format_count(shape->max_positions) + " tokens.");
  }
  return {};
}

}  // namespace

Answer check_dpo_pairs(const TrainingSetup& setup) {
  if (setup.micro_batch_sequences % micro_batch_step(setup) == 0) return {};
  return refusal(id::kLoss,
                 "DPO runs each pair's chosen and rejected sequences in one batch: set the "
                 "micro-batch to an even number of sequences (2 a pair, twice TRL's "
                 "per_device_train_batch_size), or choose another loss.");
}

Answer check_plate_setup(const TrainingSetup& setup, const ModelShape* shape) {
  for (const Setting& setting : settings()) {
    if (setting.plate || setting_text(setup, setting.id) == setting.default_text) continue;
    return refusal(setting.id,
                   setting.name + " is beyond the plate's view, which the full estimator answers.");
  }
  // A config.json's model is read by the full module alone (its reader and its checks), so the
  // first view's module carries no shape checks.
  if (setup.model_id == kCustomModelId) {
    return refusal(id::kModel,
                   "A config.json's model is beyond the plate's view, which the full estimator "
                   "answers.");
  }
  const Answer values = check_values(setup, shape);
  if (!values.ok()) return values;
  // The plate's settings the full checks refuse in their order: torchtitan's chunked loss over
  // tokens its chunks do not divide, and a DSA preset without FlashAttention (its fused sparse
  // kernels).
  if (setup.logits && setup.loss == Loss::kChunkedWrapper) {
    const Answer chunked = check_chunked_wrapper_chunks(setup);
    if (!chunked.ok()) return chunked;
  }
  if (setup.logits && setup.loss == Loss::kDpo) {
    const Answer pairs = check_dpo_pairs(setup);
    if (!pairs.ok()) return pairs;
  }
  return check_sparse_flash_attention(*shape, setup);
}

Answer check_setup(const TrainingSetup& setup, const ModelShape* shape) {
  const Answer model_and_values = check_model_and_values(setup, shape);
  if (!model_and_values.ok()) return model_and_values;
  if (setup.mtp && shape->num_mtp_layers == 0) {
    return refusal(id::kMtp, shape->name +
                                 " has no multi-token-prediction modules (num_nextn_predict_layers "
                                 "0): untick multi-token prediction.");
  }
  if (setup.train_vision && shape->vision_parameters == 0) {
    return refusal(id::kTrainVision, shape->name +
                                         " has no vision tower counted here: untick training "
                                         "the vision tower.");
  }
  if (setup.train_vision && setup.lora_rank > 0) {
    return refusal(id::kTrainVision,
                   "Under LoRA the vision tower stays frozen: untick training it or set the LoRA "
                   "rank to 0.");
  }
  if (setup.mtp && setup.lora_rank > 0) {
    return refusal(id::kMtp,
                   "Multi-token prediction is counted for full training, not LoRA's: untick it or "
                   "set the LoRA rank to 0.");
  }
  // transformers builds no multi-token-prediction modules (its models leave mtp.* out of the
  // checkpoint they load), so no stack that runs its modules trains them.
  if (setup.mtp && stack_row(setup.stack).transformers_modules) {
    return refusal(id::kMtp,
                   "transformers builds no multi-token-prediction modules, so the " +
                       choice_name(setup.stack) +
                       " stack trains none: untick it, or choose the ideal or megatron stack.");
  }
  // torchtitan applies its activation checkpointing to model.layers alone (activation_checkpoint.py
  // apply; deepseek_v3/parallelize.py): its MTP modules run without recomputation, which the
  // estimate, pricing each as one of the recomputed layers, does not model.
  if (setup.mtp && setup.stack == Stack::kTorchtitan && setup.recompute != Recompute::kNone) {
    return refusal(id::kMtp,
                   "torchtitan recomputes model.layers alone, not its multi-token-prediction "
                   "modules, which is not modelled: untick multi-token prediction, or choose no "
                   "recomputation.");
  }
  const Answer layout_answer = check_layout(setup, shape);
  if (!layout_answer.ok()) return layout_answer;
  if (stack_row(setup.stack).pads_vocabulary &&
      padded_vocabulary(setup, shape->vocab_size) > kMaxVocabSize) {
    return refusal(id::kVocabDivisibleBy,
                   "Padded to a multiple of " + format_count(setup.make_vocab_size_divisible_by) +
                       " × t " + std::to_string(setup.layout.tensor_parallel) +
                       ", the vocabulary would pass " + format_count(kMaxVocabSize) +
                       " rows; choose a smaller multiple.");
  }
  if (setup.loss_chunks != kDefaultLossChunks && setup.loss != Loss::kChunked &&
      setup.loss != Loss::kChunkedWrapper) {
    return refusal(id::kLossChunks,
                   "The chunks are the chunked losses'; choose the chunked or chunked-wrapper "
                   "loss, or leave them at " +
                       std::to_string(kDefaultLossChunks) + ".");
  }
  if (setup.logits &&
      (setup.loss == Loss::kChunked || setup.loss == Loss::kFusedLinear ||
       setup.loss == Loss::kFp32Shifted || setup.loss == Loss::kChunkedNll ||
       setup.loss == Loss::kCutCrossEntropy) &&
      setup.layout.tensor_parallel > 1) {
    const char* why = setup.loss == Loss::kChunked
                          ? "torchtune's chunked loss gathers the logits whole under tensor "
                            "parallelism (full_tensor)"
                      : setup.loss == Loss::kFusedLinear || setup.loss == Loss::kChunkedNll ||
                              setup.loss == Loss::kCutCrossEntropy
                          ? "Liger's fused linear loss, TRL's chunked one and Cut Cross-Entropy "
                            "take the whole output layer"
                          : "transformers' shifted loss runs over the whole logits";
    // A vocabulary-sharded loss the stack runs: under torchtitan its loss_parallel (fp32-upcast).
    const char* sharded = setup.stack == Stack::kTorchtitan ? "the fp32-upcast loss (loss_parallel)"
                                                            : "a vocab-parallel loss";
    return refusal(id::kLoss, std::string(why) +
                                  ", which is not modelled: set tensor parallelism to 1, or "
                                  "choose " +
                                  sharded + ".");
  }
  // Muon's mix of states is counted for full training of a text model's layers.
  if (setup.optimizer == Optimizer::kMuon &&
      (setup.lora_rank > 0 || setup.mtp || shape->vision_parameters > 0)) {
    return refusal(id::kOptimizer,
                   "Muon is modelled for full training of a text model's layers (its momentum for "
                   "their weight matrices, AdamW for the rest); with LoRA, multi-token prediction "
                   "or a vision tower it is not. Choose another optimiser.");
  }
  if (setup.logits && setup.loss == Loss::kChunkedWrapper) {
    const Answer chunked = check_chunked_wrapper(setup);
    if (!chunked.ok()) return chunked;
  }
  const Answer hybrid = check_hybrid(setup, *shape);
  if (!hybrid.ok()) return hybrid;
  const Answer rollout = check_rollout(setup, *shape);
  if (!rollout.ok()) return rollout;
  const Answer sparse = check_sparse_attention(setup, *shape);
  if (!sparse.ok()) return sparse;
  const Answer lora = check_lora(setup, shape);
  if (!lora.ok()) return lora;
  const ParallelLayout& layout = setup.layout;
  const int t = layout.tensor_parallel;
  const Answer fp8 = check_fp8(setup, *shape);
  if (!fp8.ok()) return fp8;
  const Answer nvfp4 = check_nvfp4(setup, *shape);
  if (!nvfp4.ok()) return nvfp4;
  if (setup.lora_rank > 0 &&
      (layout.expert_parallel > 1 || expert_tensor_parallel_of(layout) != t)) {
    return refusal(id::kLoraRank,
                   "LoRA is counted without expert parallelism (ep 1, etp equal to t); set the "
                   "LoRA rank to 0, or ep to 1 and etp to 0.");
  }
  const Answer per_op = check_per_op(setup, *shape);
  if (!per_op.ok()) return per_op;
  const Answer rules = check_setting_rules(setup);
  if (!rules.ok()) return rules;
  const Answer modules = check_recompute_modules(setup, *shape);
  if (!modules.ok()) return modules;
  return check_stack(setup, *shape);
}

}  // namespace trainmem
