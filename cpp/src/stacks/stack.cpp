// What a real training stack holds (options.hpp's Stack): one training step of the most loaded
// device replayed, allocation by allocation, through PyTorch's caching allocator's rules
// (allocator.hpp), in the order the framework allocates and frees. The allocated peak is the
// busiest moment of that step, each term as it stands then; the reserved peak adds what the
// allocator keeps cached. docs/formulas.md derives each term and quotes its source.
// The replay's pieces are in stack_step.hpp and each framework's order in stack_frameworks.cpp;
// here are the runtime's terms and the estimate's entry points.
#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "stacks/stack_step.hpp"

namespace trainmem {

namespace {

using namespace replay;

constexpr double kMebibyte = 1 << 20;

// PyTorch's cuBLAS workspace for each handle and stream, allocated through the caching allocator
// (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize: ":4096:8", 32 MiB, on
// Hopper and Blackwell; ":4096:2:16:8", 8 MiB + 128 KiB, before them; 128 MiB on ROCm's gfx94x),
// and cuBLASLt's (parseCUDABlasLtWorkspaceSize: 1 MiB; hipBLASLt 76 MiB). One stream computes.
struct BlasWorkspaces {
  double cublas = 0;
  double cublaslt = 0;
};
BlasWorkspaces blas_workspaces(const std::string& device_id) {
  if (device_id == "mi300x") return {128 * kMebibyte, 76 * kMebibyte};
  if (device_id == "h100" || device_id == "h200" || device_id == "b200") {
    return {32 * kMebibyte, 1 * kMebibyte};
  }
  return {8 * kMebibyte + 128 * 1024, 1 * kMebibyte};  // A100 and a custom device
}

// The CUDA context with lazy module loading (CUDA 11.7 and later; PyTorch's default since 1.13,
// pytorch/pytorch#86509): "around 400MB" (pytorch/pytorch#109888). Outside the allocator.
constexpr double kCudaContextBytes = 400e6;

// NCCL's buffers for one communicator (src/init.cc): each channel's connection holds a Simple
// FIFO of NCCL_BUFFSIZE (4 MiB), an LL FIFO (8 lines × 512 threads × 8 steps × 16 B = 512 KiB)
// and an LL128 FIFO (120 × 640 × 8 × 8 B). A ring receives from one peer; 16 channels assumed
// (NVLS's 16 on Hopper; a ring over NVLink uses up to 32). Outside the allocator.
constexpr double kNcclConnectionBytes = 4 * kMebibyte + 512 * 1024 + 120.0 * 640 * 8 * 8;
constexpr double kNcclChannels = 16;

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
  return {"cuda-context", "CUDA context", kCudaContextBytes,
          "pytorch/pytorch#86509 and #109888: about 400 MB with lazy module loading", false};
}
StackTerm nccl_term(const ParallelLayout& layout) {
  return {"nccl-buffers", "NCCL buffers",
          communicators(layout) * kNcclChannels * kNcclConnectionBytes,
          "NCCL, src/init.cc: NCCL_BUFFSIZE, the LL and LL128 FIFOs, per channel and "
          "communicator",
          false};
}

// One step of the stack through the allocator, recording its timeline when asked.
Step simulate(const Calculation& calc, const TrainingSetup& setup,
              std::vector<TimelinePoint>* timeline) {
  const StepDevice device = device_of(calc, setup);
  Step step;
  step.record(timeline, cuda_context_term().bytes + nccl_term(setup.layout).bytes);
  const BlasWorkspaces workspaces = blas_workspaces(setup.device_id);
  step.take(kWorkspace, workspaces.cublas);
  step.take(kWorkspace, workspaces.cublaslt);
  switch (setup.stack) {
    case Stack::kMegatron:
      megatron_step(step, device);
      break;
    case Stack::kTorchtitan:
      torchtitan_step(step, device);
      break;
    case Stack::kDeepSpeed:
      deepspeed_step(step, device);
      break;
    case Stack::kIdeal:
      break;
  }
  step.mark("optimizer", 0);
  return step;
}

}  // namespace

std::vector<TimelinePoint> stack_timeline(const Calculation& calc, const TrainingSetup& setup) {
  std::vector<TimelinePoint> points;
  simulate(calc, setup, &points);
  return points;
}

void apply_stack(Calculation& calc, const TrainingSetup& setup) {
  Estimate& estimate = calc.estimate;
  const Step step = simulate(calc, setup, nullptr);

  MemoryBreakdown& bytes = estimate.bytes;
  bytes.weights_bytes = step.at_peak(kWeights);
  bytes.gradients_bytes = step.at_peak(kGradients);
  bytes.master_weights_bytes = step.at_peak(kMasterWeights);
  bytes.optimizer_states_bytes = step.at_peak(kOptimizerStates);
  bytes.activations_bytes = step.at_peak(kActivations);
  bytes.logits_bytes = step.at_peak(kLogits);
  bytes.dequantization_bytes = 0;
  estimate.stack_terms = step.terms_at_peak();
  bytes.framework_bytes = 0;
  for (const StackTerm& term : estimate.stack_terms) bytes.framework_bytes += term.bytes;

  StackTerm workspace{"cublas-workspace", "cuBLAS workspaces", step.at_peak(kWorkspace),
                      "PyTorch, aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize "
                      "and getCUDABlasLtWorkspaceSize",
                      true};
  const StackTerm context = cuda_context_term();
  const StackTerm nccl = nccl_term(setup.layout);
  bytes.runtime_bytes = workspace.bytes + context.bytes + nccl.bytes;
  estimate.stack_terms.push_back(workspace);
  estimate.stack_terms.push_back(context);
  estimate.stack_terms.push_back(nccl);

  estimate.peak_allocated_bytes = step.peak_allocated();
  estimate.peak_reserved_bytes = step.peak_reserved();
  bytes.allocator_cache_bytes = estimate.peak_reserved_bytes - estimate.peak_allocated_bytes;
  bytes.model_states_bytes = bytes.weights_bytes + bytes.gradients_bytes +
                             bytes.master_weights_bytes + bytes.optimizer_states_bytes;
  bytes.total_bytes = estimate.peak_reserved_bytes + context.bytes + nccl.bytes;
}

}  // namespace trainmem
