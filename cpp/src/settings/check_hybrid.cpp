// What a hybrid model's setup must keep to (check_hybrid.hpp): the parts of trainmem that count
// its linear layers (Gated DeltaNet, short convolution), each other setting refused by name rather
// than counted as an attention layer's.
#include "settings/check_hybrid.hpp"

#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

Answer check_hybrid(const TrainingSetup& setup, const ModelShape& shape) {
  if (!hybrid_linear_attention(shape)) return {};
  const std::string model = shape.name + "'s " + linear_layers_name(shape);
  const ParallelLayout& layout = setup.layout;
  // transformers' own modules (the hf and deepspeed stacks) run the mixers as counted; no other
  // stack's run of them is modelled.
  if (setup.stack != Stack::kIdeal && !stack_row(setup.stack).transformers_modules) {
    return refusal(id::kStack, model +
                                   " are counted under the ideal step and as transformers runs "
                                   "them (the hf and deepspeed stacks); " +
                                   choice_name(setup.stack) +
                                   "'s run of them is not modelled yet. Choose the ideal, hf or "
                                   "deepspeed stack.");
  }
  // transformers' modules are split over data parallelism alone here: DeepSpeed's tensor
  // parallelism (AutoTP) and pipeline (PipelineModule) do not take these layers as written.
  if (setup.stack != Stack::kIdeal && (layout.tensor_parallel > 1 || layout.pipeline_parallel > 1 ||
                                       layout.context_parallel > 1 || layout.expert_parallel > 1)) {
    const char* key = layout.tensor_parallel > 1     ? id::kTensorParallel
                      : layout.pipeline_parallel > 1 ? id::kPipelineParallel
                      : layout.context_parallel > 1  ? id::kContextParallel
                                                     : id::kExpertParallel;
    return refusal(key, "Under the " + choice_name(setup.stack) + " stack, " + model +
                            " run as transformers' modules, split over data parallelism (ZeRO) "
                            "alone; set tp, pp, cp and ep to 1, or choose the ideal stack.");
  }
  // LFM2's short convolutions, Kimi Delta Attention, Jamba's Mamba layers and MiniMax's lightning
  // attention: no framework defines a tensor- or context-parallel layout for them (transformers'
  // Lfm2Config and JambaConfig have no tensor-parallel plan, KimiLinearConfig's splits the MLPs
  // and experts alone and MiniMaxConfig's the full attention and experts; Megatron-LM d98e8a64 and
  // torchtitan build none of them), so none is guessed.
  const bool unsplit_mixer = short_conv_mixer(shape) || kimi_delta_mixer(shape) ||
                             mamba1_mixer(shape) || lightning_mixer(shape);
  if (unsplit_mixer && layout.tensor_parallel > 1) {
    return refusal(
        id::kTensorParallel,
        model + " have no tensor-parallel layout in any framework trainmem models (" +
            (kimi_delta_mixer(shape)  ? "KimiLinearConfig's plan splits the MLPs alone"
             : mamba1_mixer(shape)    ? "JambaConfig gives no plan"
             : lightning_mixer(shape) ? "MiniMaxConfig's plan splits the full attention and "
                                        "the experts alone"
                                      : "transformers' Lfm2Config gives no plan") +
            "); choose t 1.");
  }
  if (unsplit_mixer && layout.context_parallel > 1) {
    return refusal(id::kContextParallel,
                   model +
                       " have no context-parallel layout in any framework trainmem models; "
                       "choose c 1.");
  }
  // Megatron-LM's GatedDeltaNet splits the linear layers' heads over t and, under context
  // parallelism, over c as well (an all-to-all gives each rank the whole sequence for its heads:
  // megatron/core/ssm/gated_delta_net, d98e8a64), so each device keeps a t·c-th of their tensors,
  // as it keeps a c-th of the tokens elsewhere; TransformerConfig requires both head counts to
  // divide by t·c.
  const int split = layout.tensor_parallel * layout.context_parallel;
  // Megatron-LM's MambaMixer splits Mamba-2's heads and groups over t and, under context
  // parallelism, over c too (mamba_context_parallel.py: an all-to-all as GatedDeltaNet's); more c
  // than a rank's groups replicates B and C over c, which is not counted.
  if (!unsplit_mixer && split > 1 &&
      (shape.linear_num_key_heads % split != 0 || shape.linear_num_value_heads % split != 0)) {
    const bool mamba = mamba2_mixer(shape);
    return refusal(layout.context_parallel > 1 ? id::kContextParallel : id::kTensorParallel,
                   model + " split their heads over t × c = " + std::to_string(split) +
                       (mamba ? " (Megatron-LM's MambaMixer), which must divide n_groups ("
                              : " (Megatron-LM's GatedDeltaNet), which must divide "
                                "linear_num_key_heads (") +
                       std::to_string(shape.linear_num_key_heads) +
                       (mamba ? ") and mamba_num_heads (" : ") and linear_num_value_heads (") +
                       std::to_string(shape.linear_num_value_heads) + ").");
  }
  // One-part layers' adapters (each block's own modules) are not counted yet.
  if (setup.lora_rank > 0 && one_part_layers(shape)) {
    return refusal(id::kLoraRank, "LoRA on " + shape.name +
                                      "'s one-part blocks (a mixer or an MLP alone) is not counted "
                                      "yet; choose full fine-tuning.");
  }
  // LoRA's adapters and the frozen base are counted per layer as the mean of the two kinds
  // (fine_tuning.cpp), exact on stages that hold the kinds in the model's ratio.
  if (setup.lora_rank > 0 && !hybrid_stages_hold_model_mix(shape, layout)) {
    return refusal(id::kPipelineParallel,
                   "Under LoRA, " + model +
                       " are counted on pipeline stages that each hold the model's mix of its two "
                       "kinds of layer; choose a pipeline whose stages do.");
  }
  if (setup.precision == Precision::kFp8Mixed) {
    return refusal(id::kPrecision,
                   "FP8 training of " + model +
                       " is not modelled (which of their GEMMs run in FP8 differs by "
                       "framework); choose bf16-mixed.");
  }
  if (setup.recompute == Recompute::kSelectiveOp) {
    return refusal(id::kRecompute,
                   "Selective per-op recomputation is torchtitan's policy for a dense Llama-style "
                   "block; " +
                       model + " are not one. Choose none, selective or full.");
  }
  if (setup.optimizer == Optimizer::kAdafactor || setup.optimizer == Optimizer::kMuon) {
    return refusal(id::kOptimizer,
                   "Adafactor's and Muon's states follow each weight matrix's shape, which is "
                   "not counted for " +
                       model + " yet; choose another optimiser.");
  }
  return {};
}

}  // namespace trainmem
