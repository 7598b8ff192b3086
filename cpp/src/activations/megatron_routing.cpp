// Megatron-LM's routing bookkeeping in a mixture layer (LlamaBlock::add_megatron_routing): what its
// router, its dispatcher's permutation and its experts' weighted activation save for the backward
// pass, beyond the experts' copies of the tokens. From Megatron-LM 23e00ed (core_r0.14.0):
// megatron/core/transformer/moe/router.py (TopKRouter.routing), moe_utils.py
// (topk_routing_with_score_function, group_limited_topk, compute_routing_scores_for_aux_loss,
// z_loss_func, apply_router_token_dropping, permute, RouterGatingLinearFunction),
// token_dispatcher.py (MoEAlltoAllTokenDispatcher, MoEAllGatherTokenDispatcher) and experts.py
// (TEGroupedMLP.forward's bias_act_func); with Transformer Engine 2.11 (c188b53) for the fused
// kernels (transformer_engine/pytorch/router.py, permutation.py) and PyTorch's derivatives.yaml
// for what each autograd node saves (topk and scatter their indices, softmax and sigmoid their
// outputs, masked_fill its mask, masked_select its input and mask, gather its input and index,
// index_select its index, a division both operands, logsumexp its input and output).
//
// Per token, E experts, k of them a token, r the router's bytes (2, or 4 under
// --moe-router-dtype fp32):
//   the router, unfused: the top-k indices, int64, 8·k; the softmax over the top-k logits, FP32,
//     4·k (Megatron-LM's default), or the scores over all E, FP32, 4·E (the softmax before the
//     top-k, or the sigmoid); a group-limited top-k's mask, E (bool); the sigmoid's top-k scores
//     and their sum, r·(k + 1), and, beside the expert bias, the gather's copy of the scores in
//     the logits' dtype, r·E where that is not FP32; an auxiliary loss's scores, 4·E (softmax)
//     or r·(E + 1) (sigmoid); the z-loss's logits and log-sum-exp, r·(E + 1); under a capacity
//     factor the kept tokens' map, E (bool).
//   the router, fused (--moe-router-fusion): the routing map, E, and the scores, r·E; r·E more
//     for an auxiliary loss's scores.
//   the all-to-all dispatcher's permutation: unfused, the probabilities' transposed copy, r·E,
//     its mask, E, and each copy's token index, int64, 8·k (drop-and-pad: two int64 indices a
//     padded copy, 16·k·C); fused, one int32 row map of 2·E + 1 a token, and without padding,
//     with more than one local expert, the two chunk sorts' int32 maps, 4 B a received copy each.
//   the all-gather dispatcher's: over the group's t·ep·(T/t) tokens, the local experts' E/ep
//     probabilities' transposed copy (r) and mask (bool), and the fused row map (2·E/ep + 1
//     int32) or each local copy's int64 token index.
//   the experts: each routed copy's probability, r (FP32 under the flex dispatcher, DeepEP's),
//     saved by the weighted SwiGLU; an ungated activation (GeLU) has no fused weighted kernel in
//     TEGroupedMLP, so its output is saved beside the probability, f_e a copy.
//   the flex dispatcher's: the top-k indices of the probabilities DeepEP sends, 8·k; over the R
//     rows a device receives a token (flex_received_share), their valid copies' mask (k a row)
//     and index_put's two int64 indices a local copy, and the permutation of the E/ep-wide FP32
//     multihot rows as above (unfused: the copy, 4·E/ep a row, its mask, E/ep, and the indices;
//     fused: the row map, 2·E/ep + 1 int32 a row); with --enable-experimental beside the fused
//     permutation, the fused indices-to-multihot's int32 position map, E/ep a row, in place of
//     the mask and index_put's indices.
//     DeepEP's handle: each token's devices (bool) and send head (int32), ep each, and each
//     received row's source (int32), 5·ep + 4·R.
// Not counted: the handle's prefix matrices (ep × ep, channels × ep), and the dispatcher's
// probabilities and routing map held as its
// attributes until the next micro-batch overwrites them (one copy a layer, not one for each
// micro-batch in flight).
#include <string>

#include "activations/llama_block.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/decimal.hpp"

namespace trainmem::llama_block_steps {

void LlamaBlock::add_megatron_routing(SavedTensors& saved) const {
  const double experts = shape.num_experts;
  const double k_copies = shape.num_experts_per_token;
  const bool fp32_router = setup.moe_router_dtype == RouterDtype::kFp32;
  const double r = fp32_router ? kFp32Bytes : kBf16Bytes;
  const Words r_dtype = fp32_router ? "FP32" : "BF16";
  const bool sigmoid = setup.moe_router_score == RouterScore::kSigmoid;
  // Group-limited top-k runs wherever its group count is set (compute_topk: "if group_topk").
  const bool groups = shape.num_limited_groups > 0;
  // A capacity: the router's drop (apply_router_token_dropping) wherever one is set; the
  // dispatcher's drop-and-pad path only where --moe-pad-expert-input-to-capacity pads to it.
  const bool capacity = setup.capacity_factor > 0 || setup.moe_capacity_unpadded;
  const bool padded = setup.capacity_factor > 0 && !setup.moe_capacity_unpadded;
  const Words k_text = "k";
  const Words copies_text = routed_copies ? "top-k" : "1";

  // The router, on the rank's own tokens (T/t under sequence parallelism).
  if (setup.moe_router_fusion) {
    saved.add("router-map", "Router's routing map (fused top-k)",
              "Transformer Engine's fused top-k (FusedTopkScoreFunction)", "E", experts, 1, whole,
              "bool");
    saved.add("router-scores", "Router's scores (fused top-k's intermediate output)",
              "Transformer Engine's fused top-k (FusedTopkScoreFunction)", "E", experts, r, whole,
              r_dtype);
    if (setup.moe_aux_loss) {
      saved.add("router-aux-scores", "Router's scores for the auxiliary loss",
                "Transformer Engine's fused score (FusedComputeScoresForMoEAuxLoss)", "E", experts,
                r, whole, r_dtype);
    }
  } else {
    saved.add("router-indices", "Router's top-k expert indices",
              "topk and the probabilities' scatter", "k", k_copies, 8, whole, "int64");
    // The group-limited top-k's mask, where its masked scores reach the probabilities: not
    // beside the expert bias, whose top-k gives indices alone.
    if (groups && !(sigmoid && shape.router_bias)) {
      saved.add("router-group-mask", "Router's mask of the tokens' unchosen groups",
                "masked_fill (group-limited top-k)", "E", experts, 1, whole, "bool");
    }
    if (setup.moe_router_score == RouterScore::kSoftmax) {
      saved.add("router-probs", "Router's softmax over the top-k logits", "the softmax", k_text,
                k_copies, kFp32Bytes, whole);
    } else {
      saved.add("router-scores",
                sigmoid ? "Router's sigmoid of the logits" : "Router's softmax over all experts",
                sigmoid ? "the sigmoid" : "the softmax (--moe-router-pre-softmax)", "E", experts,
                kFp32Bytes, whole);
    }
    if (sigmoid && shape.router_bias && !fp32_router) {
      saved.add("router-scores-copy", "Router's scores cast back to the logits' dtype",
                "the gather of the top-k scores", "E", experts, r, whole, r_dtype);
    }
    if (sigmoid && k_copies > 1) {
      saved.add("router-topk-scores", "Router's top-k scores and their sum",
                "the normalising division", "k + 1", k_copies + 1, r, whole, r_dtype);
    }
    if (setup.moe_aux_loss) {
      saved.add("router-aux-scores", "Router's scores for the auxiliary loss",
                sigmoid ? "the normalising division" : "the softmax", sigmoid ? "E + 1" : "E",
                sigmoid ? experts + 1 : experts, sigmoid ? r : kFp32Bytes, whole,
                sigmoid ? r_dtype : Words("FP32"));
    }
  }
  if (setup.moe_z_loss) {
    saved.add("router-z-logits", "Router's logits and their log-sum-exp", "the z-loss's logsumexp",
              "E + 1", experts + 1, r, whole, r_dtype);
  }
  if (capacity) {
    saved.add("router-capacity-map", "Router's map of the tokens each expert keeps",
              "the probabilities' product with it (apply_router_token_dropping)", "E", experts, 1,
              whole, "bool");
  }

  // The dispatcher's permutation.
  const double local_experts = experts / setup.layout.expert_parallel;
  if (setup.moe_dispatcher == MoeDispatcher::kAllGather) {
    // Over the t·ep group's tokens, (T/whole)·t·ep of them for the layer's T: per token of the
    // layer's, E/ep experts' values t·ep/whole times over.
    const double ep = setup.layout.expert_parallel;
    const double gathered = whole / setup.layout.tensor_parallel;
    saved.add("dispatch-local-probs", "The all-gather dispatcher's probabilities for its experts",
              "masked_select (the routed probabilities)", "E", experts, r, gathered, r_dtype);
    saved.add("dispatch-local-map", "The all-gather dispatcher's map of the group's tokens",
              "masked_select (the routed probabilities)", "E", experts, 1, gathered, "bool");
    if (setup.moe_permute_fusion) {
      saved.add("permute-row-map", "Fused permutation's row map",
                "Transformer Engine's fused permute and unpermute", "(2·E/ep + 1)·ep",
                (2 * local_experts + 1) * ep, 4, gathered, "int32");
    } else {
      saved.add("permute-indices", "Each local copy's token index",
                "index_select and the unpermute's scatter_add", k_text, k_copies, 8, gathered,
                "int64");
    }
  } else if (setup.moe_dispatcher == MoeDispatcher::kAllToAll) {
    if (setup.moe_permute_fusion) {
      saved.add("permute-row-map", "Fused permutation's row map",
                "Transformer Engine's fused permute and unpermute", "2·E + 1", 2 * experts + 1, 4,
                whole, "int32");
      if (!padded && local_experts > 1) {
        saved.add(
            "chunk-sort-maps", "The chunk sorts' row maps (by local expert)",
            "Transformer Engine's fused chunk sort, after the dispatch and before the combine",
            "2·" + copies_text, 2 * top_k, 4, 1 / expert_tokens, "int32");
      }
    } else if (padded) {
      saved.add("permute-indices", "Each padded copy's token index and its probability's",
                "the index_selects of the tokens and the probabilities", "2·" + copies_text,
                2 * top_k, 8, whole, "int64");
    } else {
      saved.add("permute-probs", "The probabilities' transposed copy", "masked_select", "E",
                experts, r, whole, r_dtype);
      saved.add("permute-mask", "The routing map's transposed copy", "masked_select", "E", experts,
                1, whole, "bool");
      saved.add("permute-indices", "Each copy's token index",
                "index_select and the unpermute's scatter_add", copies_text, top_k, 8, whole,
                "int64");
    }
  } else if (setup.moe_dispatcher == MoeDispatcher::kFlex) {
    // _DeepepManager (token_dispatcher.py): the top-k of the probabilities that DeepEP sends
    // keeps its indices; each received row's k probabilities go into an E/ep-wide FP32 multihot
    // row (_indices_to_multihot: the bool mask of the valid ones, and index_put's two int64
    // indices a local copy), which permute then reads as the all-to-all's does.
    const double share =
        flex_received_share(experts, setup.layout.expert_parallel, shape.num_experts_per_token);
    const Words rows = "rows (" + shortest_decimal(share) + " a token)";
    saved.add("permute-topk-indices", "DeepEP's top-k indices of the probabilities",
              "setup_metadata's topk", k_text, k_copies, 8, whole, "int64");
    // DeepEP's handle (fused_a2a.py, FusedDispatch keeps it on ctx for the combine and the
    // backward pass; DeepEP dd758caf, deep_ep/buffers/legacy.py, intranode dispatch): which of
    // the ep devices each token goes to (bool) and its send head (int32), ep each, and each
    // received row's source (int32); its prefix matrices (ep × ep, channels × ep) are left out.
    const double ep = setup.layout.expert_parallel;
    saved.add("permute-deepep-handle", "DeepEP's handle: each token's devices and send head",
              "the dispatch's handle, kept for the combine and the backward pass",
              "5·ep + 4·" + rows, 5 * ep + 4 * share, 1, whole, "bool, int32");
    if (setup.moe_permute_fusion && setup.megatron_experimental) {
      // --enable-experimental beside the fused permutation: fused_indices_to_multihot
      // (fusions/fused_indices_converter.py, IndicesToMultihot) saves one int32 position map.
      saved.add("permute-multihot-positions", "Each received row's multihot position map",
                "the fused indices-to-multihot (IndicesToMultihot)", "E/ep·" + rows,
                local_experts * share, 4, whole, "int32");
    } else {
      saved.add("permute-multihot-mask", "Each received row's mask of valid copies",
                "the multihot's indexing (_indices_to_multihot)", "k·" + rows, k_copies * share, 1,
                whole, "bool");
      saved.add("permute-multihot-indices", "Each local copy's row and expert index",
                "the multihot's index_put (_indices_to_multihot)", "2·" + copies_text, 2 * top_k, 8,
                1 / expert_tokens, "int64");
    }
    if (setup.moe_permute_fusion) {
      saved.add("permute-row-map", "Fused permutation's row map",
                "Transformer Engine's fused permute and unpermute", "(2·E/ep + 1)·" + rows,
                (2 * local_experts + 1) * share, 4, whole, "int32");
    } else {
      saved.add("permute-probs", "The multihot probabilities' transposed copy", "masked_select",
                "E/ep·" + rows, local_experts * share, kFp32Bytes, whole);
      saved.add("permute-mask", "The multihot map's transposed copy", "masked_select",
                "E/ep·" + rows, local_experts * share, 1, whole, "bool");
      saved.add("permute-indices", "Each local copy's token index",
                "index_select and the unpermute's scatter_add", copies_text, top_k, 8,
                1 / expert_tokens, "int64");
    }
  }

  // The experts: each copy's probability, which the weighted activation multiplies in.
  const bool flex = setup.moe_dispatcher == MoeDispatcher::kFlex;
  add_routed_input(
      saved, "expert-probs",
      flex ? "Each routed copy's probability (FP32, DeepEP's)" : "Each routed copy's probability",
      copies_text, 1, flex ? kFp32Bytes : r);
  saved.list.back().saved_by =
      shape.gated_mlp ? "the weighted SwiGLU" : "the probabilities' product";
  if (!shape.gated_mlp) {
    const Words width_name = shape.moe_ffn_hidden_size > 0 ? "f_e" : "f";
    saved.add("activation-unweighted",
              "Activation's output before the probabilities' product" + top_k_text + mlp_dtype_text,
              "the probabilities' product (no fused weighted GeLU in TEGroupedMLP)",
              routed_copies ? width_name + "·top-k" : width_name, f * top_k, mlp_bytes,
              by_expert_width);
  }
}

}  // namespace trainmem::llama_block_steps

namespace trainmem {

double megatron_routing_bytes(const ModelShape& shape, const TrainingSetup& setup) {
  LayerStack stack;
  stack.megatron_routing = true;
  const llama_block_steps::LlamaBlock block(shape, setup, stack, true);
  llama_block_steps::SavedTensors saved;
  block.add_megatron_routing(saved);
  return saved_bytes_per_token(saved.list);
}

}  // namespace trainmem
