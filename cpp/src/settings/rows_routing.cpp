// Megatron-LM's router and the dispatcher's bookkeeping (setting_rows.hpp): what a mixture layer
// saves of its routing under the megatron stack (activations/megatron_routing.cpp counts it).
#include "settings/setting_rows.hpp"

namespace trainmem::setting_rows {

namespace {

constexpr const char* kRoutingHint =
    "What Megatron-LM's router and dispatcher save of each token's routing, beside the experts' "
    "copies: E-wide scores and masks, the top-k indices, the permutation's maps.";

// A switch of Megatron-LM's router or dispatcher, `flag` as its launch line writes it.
template <bool TrainingSetup::*member>
Entry routing_switch(const char* id, const char* name, const char* flag, const char* what,
                     const char* api_key, const char* label) {
  return row<member>(id, name, std::string("Megatron-LM's ") + flag + ": " + what, api_key)
      .only_under({Stack::kMegatron},
                  "the router's and the dispatcher's switches are Megatron-LM's",
                  "The router's and the dispatcher's switches are Megatron-LM's; choose the "
                  "megatron stack, or turn the switch off.")
      .page("stack", label);
}

}  // namespace

void add_megatron_routing(Entries& entries) {
  entries.push_back(
      row<&TrainingSetup::moe_router_dtype>(
          id::kMoeRouterDtype, "Router dtype",
          "Megatron-LM's --moe-router-dtype: the dtype of a mixture's router logits, scores and "
          "routing probabilities",
          "moeRouterDtype")
          .among(choices<RouterDtype>())
          .only_under({Stack::kMegatron}, "--moe-router-dtype is Megatron-LM's",
                      "--moe-router-dtype is Megatron-LM's; choose the megatron stack, or bf16.")
          .page("stack", "Megatron-LM's router dtype", kRoutingHint));
  entries.push_back(
      row<&TrainingSetup::moe_router_score>(
          id::kMoeRouterScore, "Router score function",
          "Megatron-LM's --moe-router-score-function with --moe-router-pre-softmax: how the "
          "router turns its logits into routing probabilities",
          "moeRouterScore")
          .among(choices<RouterScore>())
          .only_under({Stack::kMegatron}, "--moe-router-score-function is Megatron-LM's",
                      "--moe-router-score-function is Megatron-LM's; choose the megatron stack, "
                      "or softmax.")
          .page("stack", "Megatron-LM's router score function"));
  entries.push_back(routing_switch<&TrainingSetup::moe_aux_loss>(
      id::kMoeAuxLoss, "Auxiliary load-balancing loss",
      "--moe-router-load-balancing-type aux_loss or seq_aux_loss with --moe-aux-loss-coeff above "
      "0",
      "the router's scores computed once more, over all E experts, for the loss", "moeAuxLoss",
      "Auxiliary load-balancing loss"));
  entries.push_back(routing_switch<&TrainingSetup::moe_z_loss>(
      id::kMoeZLoss, "Router z-loss", "--moe-z-loss-coeff",
      "the log-sum-exp of the router's logits, which keeps the logits for its backward pass",
      "moeZLoss", "Router z-loss"));
  entries.push_back(routing_switch<&TrainingSetup::moe_router_fusion>(
      id::kMoeRouterFusion, "Fused router", "--moe-router-fusion",
      "Transformer Engine's fused top-k and score kernels", "moeRouterFusion",
      "Fused router (--moe-router-fusion)"));
  entries.push_back(routing_switch<&TrainingSetup::moe_permute_fusion>(
      id::kMoePermuteFusion, "Fused permutation", "--moe-permute-fusion",
      "Transformer Engine's fused permute and unpermute, which keep one row map",
      "moePermuteFusion", "Fused permutation (--moe-permute-fusion)"));
  entries.push_back(
      routing_switch<&TrainingSetup::moe_capacity_unpadded>(
          id::kMoeCapacityUnpadded, "Capacity without padding",
          "--moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity",
          "the router drops what exceeds each expert's capacity and the dispatcher permutes the "
          "kept copies unpadded (the capacity factor then below 1, or 0 for one of 1 or more)",
          "moeCapacityUnpadded", "Capacity without padding")
          .rule(
              [](const TrainingSetup& setup) {
                return !(setup.moe_capacity_unpadded && setup.capacity_factor >= 1);
              },
              "Without padding an expert keeps at most what is routed to it, at balanced load "
              "its balanced share: give a capacity factor below 1, or 0 for one of 1 or "
              "more."));
  entries.push_back(routing_switch<&TrainingSetup::megatron_experimental>(
      id::kEnableExperimental, "Experimental kernels", "--enable-experimental",
      "its experimental fused kernels; of them the flex dispatcher's fused indices-to-multihot, "
      "beside --moe-permute-fusion, saves a position map of its own (MLA's fused YaRN RoPE saves "
      "its cos and sin, as the unfused one does)",
      "enableExperimental", "Experimental kernels (--enable-experimental)"));
}

}  // namespace trainmem::setting_rows
