// Megatron-LM's --recompute-modules beyond core_attn (setting_rows.hpp): a switch for each module,
// under the megatron stack, beside no recomputation or selective's core attention
// (activations/recompute_modules.cpp counts what each drops and rebuilds).
#include "settings/setting_rows.hpp"

namespace trainmem::setting_rows {

namespace {

// A module's switch: `module` as --recompute-modules writes it.
template <bool TrainingSetup::*member>
Entry module_row(const char* id, const char* name, const char* module, const char* what,
                 const char* api_key, const char* label, const char* hint = "") {
  const std::string flag = std::string("--recompute-modules ") + module;
  return row<member>(id, name, "Megatron-LM's " + flag + ": " + what, api_key)
      .only_under({Stack::kMegatron}, "--recompute-modules is Megatron-LM's",
                  "--recompute-modules is Megatron-LM's; choose the megatron stack, or turn its "
                  "modules off.")
      .rule(
          [](const TrainingSetup& setup) {
            return !(setup.*member) || setup.recompute == Recompute::kNone ||
                   setup.recompute == Recompute::kSelective;
          },
          "Megatron-LM reads --recompute-modules under selective recomputation (core_attn is "
          "selective's own), and full recomputation rebuilds every module: choose selective or "
          "none, or turn the module off.")
      .page("stack", label, hint);
}

}  // namespace

void add_recompute_modules(Entries& entries) {
  entries.push_back(module_row<&TrainingSetup::recompute_mlp>(
      id::kRecomputeMlp, "Recompute the dense MLPs", "mlp",
      "each dense layer's MLP kept as its input and run again in the backward pass", "recomputeMlp",
      "Recompute the dense MLPs (mlp)",
      "Megatron-LM's --recompute-modules beyond core_attn (selective recomputation's): each "
      "module's tensors dropped after the forward pass and rebuilt, one layer at a time, in the "
      "backward pass; the layers are then counted tensor by tensor."));
  entries.push_back(module_row<&TrainingSetup::recompute_moe>(
      id::kRecomputeMoe, "Recompute the MoE layers", "moe",
      "each mixture layer kept as the pre-MLP norm's output and run again in the backward pass",
      "recomputeMoe", "Recompute the MoE layers (moe)"));
  entries.push_back(module_row<&TrainingSetup::recompute_moe_act>(
      id::kRecomputeMoeAct, "Recompute the experts' activation", "moe_act",
      "the routed experts' activation output dropped and rebuilt in the backward pass",
      "recomputeMoeAct", "Recompute the experts' activation (moe_act)"));
  entries.push_back(module_row<&TrainingSetup::recompute_shared_experts>(
      id::kRecomputeSharedExperts, "Recompute the shared experts", "shared_experts",
      "the shared experts kept as their input and run again in the backward pass",
      "recomputeSharedExperts", "Recompute the shared experts (shared_experts)"));
  entries.push_back(module_row<&TrainingSetup::recompute_layernorm>(
      id::kRecomputeLayernorm, "Recompute the unfused norms", "layernorm",
      "the outputs of the norms Transformer Engine does not fuse into a linear layer (latent "
      "attention's input norm, a mixture layer's pre-MLP norm) dropped and rebuilt",
      "recomputeLayernorm", "Recompute the unfused norms (layernorm)"));
  entries.push_back(module_row<&TrainingSetup::recompute_mla_up_proj>(
      id::kRecomputeMlaUpProj, "Recompute latent attention's up-projections", "mla_up_proj",
      "latent attention's queries, keys and values dropped and rebuilt from the latents",
      "recomputeMlaUpProj", "Recompute the latent up-projections (mla_up_proj)"));
}

}  // namespace trainmem::setting_rows
