// The runtime every stack brings, and the replay of a stack's step (stack.hpp). Each framework's
// order of allocations is in stack_frameworks.cpp, the pieces they share in stack_step.cpp.
#include "stacks/stack.hpp"

#include <cmath>

#include "model/units.hpp"
#include "stacks/stack_frameworks.hpp"
#include "stacks/stack_rows.hpp"

namespace trainmem::replay {

namespace {

// The CUDA context with lazy module loading (CUDA 11.7 and later; PyTorch's default since 1.13,
// pytorch/pytorch#86509): "around 400MB" (pytorch/pytorch#109888). Outside the allocator.
constexpr double kCudaContextBytes = 400e6;

// NCCL's buffers for one communicator (src/init.cc): each channel's connection holds a Simple
// FIFO of NCCL_BUFFSIZE (4 MiB), an LL FIFO (8 lines × 512 threads × 8 steps × 16 B = 512 KiB)
// and an LL128 FIFO (120 × 640 × 8 × 8 B). A ring receives from one peer; 16 channels assumed
// (NVLS's 16 on Hopper; a ring over NVLink uses up to 32). Outside the allocator.
constexpr double kNcclConnectionBytes = 4 * kMebibyte + 512 * 1024 + 120.0 * 640 * 8 * 8;
constexpr double kNcclChannels = 16;

// Each framework's order of allocations in a step (stack_frameworks.hpp): what a stack whose row
// is replayed runs.
void step_of(Stack stack, Step& step, const StepDevice& device) {
  switch (stack) {
    case Stack::kMegatron:
      return megatron_step(step, device);
    case Stack::kTorchtitan:
      return torchtitan_step(step, device);
    case Stack::kDeepSpeed:
      return deepspeed_step(step, device);
    case Stack::kTorchtune:
      return torchtune_step(step, device);
    case Stack::kHf:
      return hf_step(step, device);
    case Stack::kIdeal:
    case Stack::kCount:
      break;
  }
}

// Devices that talk to others: one communicator per parallel group of more than one device.
double communicators(const ParallelLayout& layout) {
  double count = 0;
  for (const int degree : {layout.data_parallel, layout.tensor_parallel, layout.pipeline_parallel,
                           layout.context_parallel, layout.expert_parallel}) {
    if (degree > 1) count += 1;
  }
  return count;
}

// The CUDA context and NCCL's buffers: on the device, outside the allocator.
StackTerm cuda_context_term() {
  return {"cuda-context",
          "CUDA context",
          kCudaContextBytes,
          "pytorch/pytorch#86509 and #109888: about 400 MB with lazy module loading",
          false,
          Term::kRuntime};
}
StackTerm nccl_term(const ParallelLayout& layout) {
  return {"nccl-buffers",
          "NCCL buffers",
          communicators(layout) * kNcclChannels * kNcclConnectionBytes,
          "NCCL, src/init.cc: NCCL_BUFFSIZE, the LL and LL128 FIFOs, per channel and "
          "communicator",
          false,
          Term::kRuntime};
}

// DeepEP's buffer under Megatron-LM's flex dispatcher (options.hpp, kDeepep*): made once, by the
// first mixture layer's dispatch (fused_a2a.py's get_buffer; a stage of dense layers alone makes
// none), the largest of the dispatch's and the combine's hints for the etp·ep NVLink peers, in
// two cudaMallocs of DeepEP's own (shared_memory_allocator, and the workspace), each in the
// driver's 2 MiB pages: on the device and outside PyTorch's allocator, so in neither peak.
StackTerm deepep_term(const StepDevice& device) {
  const TrainingSetup& setup = device.setup;
  double bytes = 0;
  if (setup.moe_dispatcher == MoeDispatcher::kFlex && device.shape.num_experts > 1 &&
      device.mixture_layers > 0) {
    const double peers =
        static_cast<double>(setup.layout.expert_parallel) * expert_tensor_parallel_of(setup.layout);
    const double hidden_bytes = kBf16Bytes * expert_token_width(device.shape);
    const double queues =
        kDeepepChannels * peers * (2 * 1 + 3) * 4 +
        kDeepepChannels * peers * kDeepepRecvTokens * (hidden_bytes + kDeepepTokenMetaBytes);
    const double page = 2 * kMebibyte;
    const double nvl = std::ceil(queues / 128) * 128 + kDeepepSignalBytes;
    bytes = std::ceil(nvl / page) * page + std::ceil(kDeepepWorkspaceBytes / page) * page;
  }
  return {"deepep-buffer",
          "DeepEP's buffer",
          bytes,
          "megatron/core/transformer/moe/fused_a2a.py (d98e8a64), get_buffer: DeepEP's "
          "Config::get_nvl_buffer_size_hint (dd758caf, csrc/legacy/config.hpp), 10 channels (20 "
          "SMs) × ep peers × (5 ints + 256 tokens × (2·w + 2,056 B: SourceMeta, 128 int64 "
          "indices, 128 FP32 weights and 128 FP32 scales)), rounded to 128 B, with 160 B of "
          "signals and pointers, and the 32 MiB workspace (csrc/legacy/buffer.hpp), each in 2 "
          "MiB pages",
          false,
          Term::kRuntime};
}

// verl's engine, a worker process of its own on each device (verl 1dda039b: vLLM's
// vllm_async_server.py, distributed_executor_backend "mp"; SGLang's scheduler processes,
// async_sglang_server.py): its CUDA context, and NCCL's buffers for its tensor-parallel group;
// outside its pools (vLLM's memory profile and SGLang's free-memory reading start after them) and
// the trainer's allocator.
StackTerm rollout_process_term(const TrainingSetup& setup) {
  const bool own = setup.rollout != Rollout::kNone && setup.rl_trainer == RlTrainer::kVerl;
  return {"rollout-runtime",
          setup.rollout == Rollout::kSglang ? "SGLang's CUDA context and NCCL"
                                            : "vLLM's CUDA context and NCCL",
          own ? kCudaContextBytes +
                    (setup.rollout_tensor_parallel > 1 ? kNcclChannels * kNcclConnectionBytes : 0)
              : 0,
          "pytorch/pytorch#86509 (a CUDA context of about 400 MB); NCCL, src/init.cc "
          "(NCCL_BUFFSIZE, the LL and LL128 FIFOs per channel), for the engine's tensor-parallel "
          "group",
          false,
          Term::kRuntime};
}

}  // namespace

double startup_runtime_bytes(const TrainingSetup& setup) {
  return cuda_context_term().bytes + nccl_term(setup.layout).bytes +
         rollout_process_term(setup).bytes;
}

Replayed replay(const StepDevice& device, std::vector<TimelinePoint>* timeline) {
  const TrainingSetup& setup = device.setup;
  const StackTerm context = cuda_context_term();
  const StackTerm nccl = nccl_term(setup.layout);
  // bitsandbytes' paged optimiser state, made by the first step and held since (the step
  // reported is a later one): on the device, outside the allocator.
  const StackTerm paged{"paged-optimizer-state",
                        "Optimiser states, paged (counted above)",
                        device.paged_state,
                        "bitsandbytes, bitsandbytes/optim/optimizer.py, "
                        "Optimizer8bit.get_state_buffer: the state of each parameter of 10^5 "
                        "elements or more in cudaMallocManaged memory (GlobalPageManager), on the "
                        "device until memory runs short",
                        false,
                        Term::kOptimizerStates};
  AllocatorConfig allocator;
  allocator.expandable_segments = setup.expandable_segments;
  allocator.max_split_size_bytes = setup.max_split_size_mb * kMebibyte;
  Step step(allocator);
  const StackTerm rollout_process = rollout_process_term(setup);
  const StackTerm deepep = deepep_term(device);
  Breakdown outside;
  for (const StackTerm* term : {&context, &nccl, &paged, &rollout_process, &deepep}) {
    outside[term->term] += term->bytes;
  }
  step.record(timeline, outside);
  // PyTorch's cuBLAS and cuBLASLt workspaces, one stream computing (the device's architecture
  // row gives their sizes).
  const std::size_t workspace =
      step.term("cublas-workspace", "cuBLAS workspaces",
                "PyTorch, aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize and "
                "getCUDABlasLtWorkspaceSize",
                Term::kRuntime);
  const ArchitectureRow& architecture = architecture_row(device_of(setup).architecture);
  step.take(workspace, architecture.cublas_workspace_bytes);
  step.take(workspace, architecture.cublaslt_workspace_bytes);
  step_of(setup.stack, step, device);
  step.mark("optimizer", 0);

  Replayed replayed;
  for (const Term term : kReplayedTerms) replayed.at_peak[term] = step.at_peak(tag(term));
  // bitsandbytes' paged state, a second model's terms (verl's critic: stack_rl.cpp), the
  // framework's, then the runtime's.
  if (paged.bytes > 0) replayed.terms.push_back(paged);
  for (const Term term :
       {Term::kWeights, Term::kGradients, Term::kOptimizerStates, Term::kActivations,
        Term::kFramework, Term::kRolloutEngine, Term::kRuntime}) {
    for (const StackTerm& held : step.terms_at_peak()) {
      if (held.term == term) replayed.terms.push_back(held);
    }
  }
  if (rollout_process.bytes > 0) replayed.terms.push_back(rollout_process);
  if (deepep.bytes > 0) replayed.terms.push_back(deepep);
  replayed.terms.push_back(context);
  replayed.terms.push_back(nccl);
  replayed.peak_allocated = step.peak_allocated();
  replayed.peak_reserved = step.peak_reserved();
  return replayed;
}

}  // namespace trainmem::replay
