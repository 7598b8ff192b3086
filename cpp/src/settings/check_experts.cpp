// The checks of a mixture of experts' layout and token exchange (check_experts.hpp).
#include "settings/check_experts.hpp"

#include <cmath>
#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

// torchtitan's routed experts (torchtitan/models/common/moe_sharding.py, b5bcd76c): whole on
// their expert-parallel ranks (expert_param_placement_sparse: etp 1), and under tensor parallelism
// without expert parallelism split over the t ranks (expert_param_placement_dense, w1 and w3
// column-wise, w2 row-wise: etp t); no other expert tensor parallelism. Before the layout's own
// checks, so that a wrong etp is named as such.
Answer check_torchtitan_experts(const TrainingSetup& setup, const ModelShape& shape) {
  if (!stack_row(setup.stack).torchtitan_mixture || shape.num_experts <= 1) return {};
  // gpt-oss (models/gpt_oss): its clamped SwiGLU and sinks are counted as eager modules save them,
  // kept or rebuilt a layer at a time (its configs' FullAC); what the per-op policy and Inductor
  // keep of them is not derived.
  if (shape.clamped_swiglu && setup.recompute != Recompute::kNone &&
      setup.recompute != Recompute::kFull) {
    return refusal(id::kRecompute,
                   "gpt-oss under torchtitan is counted without recomputation or under full "
                   "recomputation (its configs' FullAC); what a selective recomputation keeps of "
                   "its clamped SwiGLU and sinks is not modelled. Choose none or full.");
  }
  if (shape.clamped_swiglu && blocks_compiled(setup.compile)) {
    return refusal(id::kCompile,
                   "gpt-oss under torchtitan is counted with its blocks eager (its configs "
                   "compile nothing); what Inductor keeps of its clamped SwiGLU and sinks is not "
                   "modelled. Compile the loss alone, or nothing.");
  }
  if (shape.clamped_swiglu && shape.attention_sinks && !setup.flash_attention) {
    return refusal(id::kFlashAttention,
                   "gpt-oss under torchtitan runs varlen or flex attention alone (GptOssModel."
                   "get_attention_masks), the sinks scaling its output by the kernel's "
                   "log-sum-exp; turn FlashAttention on.");
  }
  const ParallelLayout& layout = setup.layout;
  const int t = layout.tensor_parallel;
  const int runs = stack_expert_tensor_parallel(setup, shape) == 0 ? t : 1;
  if (expert_tensor_parallel_of(layout) == runs) return {};
  if (runs == 1) {
    return refusal(id::kExpertTensorParallel,
                   "torchtitan keeps each routed expert whole on its expert-parallel rank (its "
                   "experts' mesh is efsdp × ep, parallel_dims.py); set etp to " +
                       std::string(t == 1 ? "0 or 1." : "1."));
  }
  return refusal(id::kExpertTensorParallel,
                 "Without expert parallelism torchtitan splits each routed expert over the " +
                     std::to_string(t) +
                     " tensor-parallel ranks (moe_sharding.py, expert_param_placement_dense); set "
                     "etp to 0 (as t).");
}

// Expert parallelism (Megatron-LM's parallel_state.py): ep must divide the experts, etp each
// expert's width, and ep·etp the d·t·c devices of a pipeline stage, whose expert data-parallel
// group is what is left, d·t·c / (ep·etp).
Answer check_expert_layout(const ParallelLayout& layout, const ModelShape& shape) {
  const int ep = layout.expert_parallel;
  const int etp = expert_tensor_parallel_of(layout);
  const bool mixture = shape.num_experts > 1;
  if (!mixture && (ep > 1 || layout.expert_tensor_parallel > 0)) {
    return refusal(ep > 1 ? id::kExpertParallel : id::kExpertTensorParallel,
                   std::string(ep > 1 ? "Expert parallelism" : "Expert tensor parallelism") +
                       " needs a mixture of experts; " + shape.name + " has none.");
  }
  if (!mixture) return {};
  if (shape.num_experts % ep != 0) {
    return refusal(id::kExpertParallel, "Expert parallelism " + std::to_string(ep) +
                                            " must divide the " + format_count(shape.num_experts) +
                                            " experts of " + shape.name + ".");
  }
  const int width = routed_expert_width(shape);
  if (width % etp != 0) {
    return refusal(id::kExpertTensorParallel,
                   "Expert tensor parallelism " + std::to_string(etp) +
                       (layout.expert_tensor_parallel == 0 ? " (t, as etp is 0)" : "") +
                       " must divide each expert's width, " + format_count(width) + ", of " +
                       shape.name + ".");
  }
  const double stage_devices =
      static_cast<double>(layout.data_parallel) * layout.tensor_parallel * layout.context_parallel;
  if (std::fmod(stage_devices, static_cast<double>(ep) * etp) != 0) {
    return refusal(id::kExpertParallel,
                   "Expert parallelism × expert tensor parallelism (" + std::to_string(ep) + " × " +
                       std::to_string(etp) + ") must divide d·t·c (" + format_count(stage_devices) +
                       "), the devices of a pipeline stage they are carved from.");
  }
  return {};
}

// Megatron-LM's flex dispatcher over DeepEP (options.hpp, MoeDispatcher::kFlex), as modelled: at
// etp 1 (its group is the experts' etp·ep, expt_tp and ep; under expert tensor parallelism it
// routes etp·E experts of top etp·k over it, which is not), over 2, 4 or 8 devices (DeepEP's
// configs within one NVLink domain; past 8 its RDMA buffers, and MoEFlexTokenDispatcher asserts
// etp·ep above 1), and dropless.
Answer check_flex_dispatcher(const TrainingSetup& setup, const ModelShape& shape) {
  if (setup.moe_dispatcher != MoeDispatcher::kFlex || shape.num_experts <= 1) return {};
  const ParallelLayout& layout = setup.layout;
  const int ep = layout.expert_parallel;
  const int etp = expert_tensor_parallel_of(layout);
  if (etp > 1) {
    return refusal(id::kMoeDispatcher,
                   "The flex dispatcher is modelled at etp 1: under expert tensor parallelism "
                   "(etp " +
                       std::to_string(etp) + (layout.expert_tensor_parallel == 0 ? ", as t" : "") +
                       ") it routes etp·E experts of top etp·k over the etp·ep group "
                       "(MoEFlexTokenDispatcher), which is not; choose alltoall, or set etp to "
                       "1.");
  }
  if (ep != 2 && ep != 4 && ep != 8) {
    return refusal(
        id::kMoeDispatcher,
        ep == 1 ? std::string("The flex dispatcher needs expert parallelism: DeepEP sends over "
                              "t·ep devices, above 1 (MoEFlexTokenDispatcher asserts it); set ep "
                              "to 2, 4 or 8, or choose alltoall.")
        : ep > 8
            ? "DeepEP over " + std::to_string(ep) +
                  " devices crosses nodes: its RDMA buffers (NVSHMEM) are not modelled, only "
                  "its NVLink buffer over 2, 4 or 8; choose alltoall, or ep 8 or less."
            : "DeepEP's configs take 2, 4 or 8 devices in a node (Buffer.get_dispatch_config), "
              "not " +
                  std::to_string(ep) + "; set ep to one of them, or choose alltoall.");
  }
  if (setup.capacity_factor > 0) {
    return refusal(id::kCapacityFactor,
                   "The flex dispatcher is counted dropless; set the capacity factor to 0, or "
                   "choose alltoall.");
  }
  return {};
}

}  // namespace trainmem
