// Megatron-LM's recompute modules (check_recompute.hpp): what TransformerConfig.__post_init__
// refuses (23e00ed), and the blocks the counts are not written for, each refused by name.
#include "settings/check_recompute.hpp"

#include <algorithm>
#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

namespace {

// The first module switched on, as its setting's id: "recompute-moe-act".
std::string first_module(const TrainingSetup& setup) {
  for (const RecomputeModule& module : kRecomputeModules) {
    if (!(setup.*module.member)) continue;
    std::string id = std::string("recompute-") + module.name;
    std::replace(id.begin(), id.end(), '_', '-');
    return id;
  }
  return {};
}

}  // namespace

Answer check_recompute_modules(const TrainingSetup& setup, const ModelShape& shape) {
  if (!recomputes_modules(setup)) return {};
  const std::string module = first_module(setup);
  if (hybrid_linear_attention(shape) || shape.parallel_attention_mlp ||
      shape.norms_per_layer != 2 || shape.moe_latent_size > 0 || shape.vision_parameters > 0) {
    return refusal(module,
                   "--recompute-modules is counted on a decoder of Llama-style blocks "
                   "(grouped-query or latent attention, a dense MLP or a mixture of "
                   "experts, two norms a layer), not on " +
                       shape.name + "'s: turn the modules off.");
  }
  // TransformerConfig.__post_init__: "mla_up_proj in recompute_modules is only supported with
  // multi_latent_attention".
  if (setup.recompute_mla_up_proj && !latent_attention(shape)) {
    return refusal(id::kRecomputeMlaUpProj,
                   "--recompute-modules mla_up_proj is latent attention's, as Megatron-LM "
                   "requires, and " +
                       shape.name + " has none: turn it off.");
  }
  const bool drops_outputs =
      setup.recompute_moe_act || setup.recompute_layernorm || setup.recompute_mla_up_proj;
  if (drops_outputs && setup.precision == Precision::kFp8Mixed) {
    // TransformerConfig.__post_init__: "Delayed scaling does not support moe_act and layernorm
    // recompute for fp8". Under the other recipes Transformer Engine's layers that read their
    // outputs save their BF16 inputs (set_save_original_input), which is not modelled; nor is
    // mla_up_proj's checkpoint under FP8.
    const bool saves_original = setup.recompute_moe_act || setup.recompute_layernorm;
    const char* which = setup.recompute_moe_act     ? id::kRecomputeMoeAct
                        : setup.recompute_layernorm ? id::kRecomputeLayernorm
                                                    : id::kRecomputeMlaUpProj;
    return refusal(which,
                   !saves_original
                       ? "--recompute-modules mla_up_proj under FP8 is not modelled: turn it off, "
                         "or choose bf16-mixed."
                   : setup.fp8_recipe == Fp8Recipe::kDelayed
                       ? "Megatron-LM refuses moe_act and layernorm recomputation under delayed "
                         "FP8 scaling: turn them off, or choose another recipe or bf16-mixed."
                       : "Under FP8 moe_act and layernorm make Transformer Engine's layers that "
                         "read their outputs save their BF16 inputs, which is not modelled: turn "
                         "them off, or choose bf16-mixed.");
  }
  // A top-1 mixture without routed copies (top-k 1, no capacity beyond 1: llama_block.cpp) is
  // counted with its experts reading the norm's output itself, where Megatron-LM's dispatcher
  // permutes a copy: which of them the norm's discarded output frees is not modelled.
  if (setup.recompute_layernorm && shape.num_experts > 1 && shape.num_experts_per_token == 1 &&
      (setup.capacity_factor == 0 || setup.capacity_factor == 1)) {
    return refusal(id::kRecomputeLayernorm, "--recompute-modules layernorm on a top-1 mixture (" +
                                                shape.name + "'s) is not modelled: turn it off.");
  }
  // Context parallelism over all-to-all exchanges the queries, keys and values the
  // up-projections' checkpoint would drop.
  if (setup.recompute_mla_up_proj && setup.layout.context_parallel > 1 &&
      setup.cp_comm_type != CpCommType::kP2p) {
    return refusal(id::kRecomputeMlaUpProj,
                   "--recompute-modules mla_up_proj beside context parallelism's all-to-all is "
                   "not modelled: turn it off, or choose --cp-comm-type p2p.");
  }
  if (setup.lora_rank > 0) {
    return refusal(module,
                   "--recompute-modules is counted for full training: turn the modules off, or "
                   "set the LoRA rank to 0.");
  }
  return {};
}

}  // namespace trainmem
