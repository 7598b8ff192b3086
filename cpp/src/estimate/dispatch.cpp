// A mixture layer's token exchange (dispatch.hpp).
#include "estimate/dispatch.hpp"

#include <algorithm>
#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// Expert parallelism's all-to-all (activations.hpp): one mixture layer's send and receive buffers
// of its own tokens' routed copies (over t with sequence parallelism, as the tokens are), in
// flight while that layer runs. With ep 1 there is no exchange: the permuted tokens are the
// experts' input.
Figure all_to_all_buffers(const ModelShape& shape, const TrainingSetup& setup,
                          const ActivationsPerLayer& layer, const Pen& pen) {
  const ParallelLayout& layout = setup.layout;
  const double capacity = setup.capacity_factor > 0 ? setup.capacity_factor : 1;
  Figure tokens = pen.count(layer.tokens_on_device, "tokens");
  if (layout.sequence_parallel) tokens = tokens / pen.number(layout.tensor_parallel);
  // Under expert tensor parallelism Megatron-LM gathers the received copies over the etp group
  // (dispatch_postprocess) and, with more than one local expert, sorts the gathered copies into
  // the experts' saved input, while MoELayer's custom_forward still holds the send buffer
  // (hidden_states): the send and receive buffers and the gather, 2 + etp of the received
  // copies' size at once. With one local expert the gather is the experts' input.
  const int etp = expert_tensor_parallel_of(layout);
  const bool sorted_after_gather = etp > 1 && shape.num_experts / layout.expert_parallel > 1;
  const double in_flight = kAllToAllBuffersInFlight + (sorted_after_gather ? etp : 0);
  Figure buffers = pen.said(in_flight, [&] {
    return sorted_after_gather
               ? number_text(in_flight) + " (send and receive, and the gather over etp " +
                     std::to_string(etp) + ")"
               : number_text(kAllToAllBuffersInFlight) + " (send and receive)";
  }) * tokens * pen.count(shape.num_experts_per_token, "experts");
  if (capacity != 1) {
    buffers =
        buffers * pen.said(capacity, [&] { return "capacity factor " + number_text(capacity); });
  }
  // A latent mixture exchanges its latent tokens (Megatron-LM's MoELayer: fc1_latent_proj before
  // the dispatch, fc2_latent_proj after the combine).
  buffers = buffers * pen.number(expert_token_width(shape)) * pen.bytes(kBf16Bytes);
  return pen.said(buffers.value(), [&] {
    return "one layer's all-to-all buffers, " + buffers.text() + " (" +
           format_bytes(buffers.value()) + ")";
  });
}

// torchtitan's combine (token_dispatcher.py, combine, b5bcd76c), the largest of the layer's
// transients. Forward: the experts' BF16 output, still held by RoutedExperts.forward; under
// expert parallelism the all-to-all's output back in the tokens' ranks; the FP32 product with the
// scores and its BF16 cast; zeros_like of the tokens: 8 B a routed copy's value (10 under expert
// parallelism) and 2/k, beside the FP32 upcast the product saves. Backward: the product's
// incoming FP32 gradient (ToCopyBackward's), the upcast's gradient and the scores' gradient at
// the copies' full size before its sum, three FP32 tensors, 12 B a value at any ep: the larger,
// held one layer at a time, forward or backward, against the dispatch's send and receive
// buffers' 4.
Figure torchtitan_combine_buffers(const ModelShape& shape, const TrainingSetup& setup,
                                  const ActivationsPerLayer& layer, const Pen& pen) {
  // Under tensor parallelism each rank combines the copies of the tokens it routes, T·etp/t of
  // them (its own T/t with expert parallelism, etp 1; all T without it, etp t: moe_sharding.py),
  // their outputs h wide either way.
  const ParallelLayout& layout = setup.layout;
  Figure tokens = pen.count(layer.tokens_on_device, "tokens");
  const double split =
      layout.tensor_parallel / static_cast<double>(expert_tensor_parallel_of(layout));
  if (split > 1) tokens = tokens / pen.number(split);
  const Figure buffers = pen.said(3 * kFp32Bytes,
                                  [] {
                                    return std::string(
                                        "3 × 4 B (the product's backward: its FP32 gradient, the "
                                        "upcast's and the scores' before their sum)");
                                  }) *
                         tokens * pen.count(shape.num_experts_per_token, "experts") *
                         pen.count(shape.hidden_size, "h");
  return pen.said(buffers.value(), [&] {
    return "one layer's combine, " + buffers.text() + " (" + format_bytes(buffers.value()) + ")";
  });
}

// Megatron-LM's MoEAllGatherTokenDispatcher (token_dispatcher.py, d98e8a64): the tensor- and
// expert-parallel group's t·ep devices gather their tokens (each its T/t under sequence
// parallelism) into one global buffer (the megatron stack holds it); each permutes those its
// experts take, as the all-to-all's devices receive them. The combine scatters the experts'
// outputs back into the group's T_g tokens (BF16), casts them to FP32 and reduce-scatters into the
// device's own T_l, FP32: 6·T_g·w + 4·T_l·w bytes (w the experts' token width), transient, one
// layer at a time; the backward pass's all-gather of the gradient holds as much.
Figure all_gather_buffers(const ModelShape& shape, const TrainingSetup& setup,
                          const ActivationsPerLayer& layer, const Pen& pen) {
  const ParallelLayout& layout = setup.layout;
  Figure local = pen.count(layer.tokens_on_device, "tokens");
  if (layout.sequence_parallel) local = local / pen.number(layout.tensor_parallel);
  const Figure group = pen.said(layout.tensor_parallel * layout.expert_parallel, [&] {
    return std::to_string(layout.tensor_parallel * layout.expert_parallel) + " (t·ep)";
  });
  const Figure width = pen.number(expert_token_width(shape));
  const Figure buffers =
      (pen.bytes(kBf16Bytes + kFp32Bytes) * local * group + pen.bytes(kFp32Bytes) * local) * width;
  return pen.said(buffers.value(), [&] {
    return "one layer's all-gather combine, " + buffers.text() + " (" +
           format_bytes(buffers.value()) + ")";
  });
}

// Megatron-LM's flex dispatcher over DeepEP (token_dispatcher.py, _DeepepManager and
// MoEFlexTokenDispatcher, d98e8a64; fused_a2a.py, FusedDispatch): each token goes once to each
// device that holds one of its k experts, and is permuted there into its experts' order (the
// experts' input, saved with the layer as the all-to-all's is). MoELayer's custom_forward keeps
// the received tokens (dispatched_input) through the experts and the combine, as it keeps the
// all-to-all's send and receive buffers, while the tokens it sends are the layer's own (a view):
// R rows of w, BF16, of each device's T tokens (T/t under sequence parallelism). As under the
// all-to-all, the combine side's own (the experts' output, its unpermuted copy of R rows) is not
// counted; the handle's tensors are saved with the layer (activations/megatron_routing.cpp). At
// balanced
// routing (k of the E experts alike, g = E/ep on each device) a token misses a device when all k
// experts are elsewhere, C(E−g, k)/C(E, k), so each device receives R = ep·T·(1 − C(E−g, k)/C(E,
// k)) of the ep devices' T tokens each: at most the T·k copies, T·k where k is 1. A router that
// limits each token's groups (DeepSeek-V3's n_group) sends fewer; the unrestricted R bounds those
// from above.
Figure flex_buffers(const ModelShape& shape, const TrainingSetup& setup,
                    const ActivationsPerLayer& layer, const Pen& pen) {
  const int ep = setup.layout.expert_parallel;
  const double experts = shape.num_experts;
  const int k = shape.num_experts_per_token;
  const double share = flex_received_share(experts, ep, k);
  Figure tokens = pen.count(layer.tokens_on_device, "tokens");
  if (setup.layout.sequence_parallel) tokens = tokens / pen.number(setup.layout.tensor_parallel);
  const Figure received = tokens * pen.said(share, [&] {
    return number_text(share) + " (ep·(1 − C(E−E/ep, k)/C(E, k)), ep " + std::to_string(ep) +
           ", E " + format_count(experts) + ", k " + std::to_string(k) +
           ": each token once to each device holding one of its experts)";
  });
  const Figure buffers = received * pen.number(expert_token_width(shape)) * pen.bytes(kBf16Bytes);
  return pen.said(buffers.value(), [&] {
    return "one layer's DeepEP receive buffer, " + buffers.text() + " (" +
           format_bytes(buffers.value()) + ")";
  });
}

}  // namespace

Figure mixture_dispatch_buffers(const ModelShape& shape, const TrainingSetup& setup,
                                const ActivationsPerLayer& layer, const Pen& pen) {
  if (stack_row(setup.stack).torchtitan_mixture) {
    return torchtitan_combine_buffers(shape, setup, layer, pen);
  }
  if (gathers_expert_tokens(setup)) return all_gather_buffers(shape, setup, layer, pen);
  if (setup.moe_dispatcher == MoeDispatcher::kFlex) return flex_buffers(shape, setup, layer, pen);
  if (setup.moe_dispatcher == MoeDispatcher::kAllToAll && setup.layout.expert_parallel > 1) {
    return all_to_all_buffers(shape, setup, layer, pen);
  }
  return {};
}

std::string dispatch_source(const TrainingSetup& setup) {
  if (setup.moe_dispatcher == MoeDispatcher::kFlex) {
    return "the flex dispatcher keeps the tokens DeepEP delivers, once to each device that holds "
           "one of their experts, through the experts and the combine, BF16, transient, one "
           "layer at a time (Megatron-LM's MoEFlexTokenDispatcher and MoELayer, "
           "megatron/core/transformer/moe/token_dispatcher.py and moe_layer.py)";
  }
  return setup.moe_dispatcher == MoeDispatcher::kAllGather
             ? "the all-gather dispatcher's combine scatters the experts' outputs into the "
               "group's tokens (BF16), casts them to FP32 and reduce-scatters them (FP32), "
               "transient, one layer at a time (Megatron-LM's MoEAllGatherTokenDispatcher, "
               "megatron/core/transformer/moe/token_dispatcher.py)"
         : stack_row(setup.stack).torchtitan_mixture
             ? "torchtitan's combine: the backward of its product of the experts' FP32 "
               "outputs with the scores holds three FP32 tensors of the routed copies (its "
               "gradient, the upcast's and the scores' before their sum), more than its "
               "forward (the experts' BF16 output, the FP32 product and its cast) or the "
               "dispatch's send and receive buffers; transient, one layer at a time "
               "(torchtitan/models/common/token_dispatcher.py, combine, b5bcd76c)"
             : "the dispatch's and the combine's all-to-all hold a send and a receive buffer "
               "of the routed copies, BF16, transient, one layer at a time (Megatron-LM's "
               "MoEAlltoAllTokenDispatcher, megatron/core/transformer/moe/token_dispatcher.py)";
}

}  // namespace trainmem
