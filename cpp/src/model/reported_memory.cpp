// The memory PyTorch reports for each device of the catalogue (options.hpp, reported_memory).
// Words only: the first view's module (TRAINMEM_WITHOUT_WORDS) estimates the plate's idealised step
// alone, judged against the printed capacity, and carries none of this.
#include <array>

#include "model/units.hpp"
#include "text/figure.hpp"
#include "trainmem/options.hpp"

namespace trainmem {

namespace {

struct Reported {
  const char* device_id;
  double bytes;
  const char* source;
};

// Each device's torch.cuda.get_device_properties(i).total_memory, from a public report that names
// the device beside the figure: an out-of-memory message ("GPU 0 has a total capacity of X GiB",
// two decimals, taken as X·2^30 bytes), get_device_properties printed (total_memory in whole MiB),
// or CUDA's deviceQuery (the same cudaDeviceProp::totalGlobalMem, in bytes). The figure moves by
// about 0.1 GiB between drivers; where reports differ, the lowest recent one. B300 and MI325X:
// none found.
constexpr std::array<Reported, 14> kReported = {{
    {"h100", 79.11 * kGibibyte,
     "PyTorch's out-of-memory message on an H100 80GB HBM3 (driver 535), \"GPU 0 has a total "
     "capacity of 79.11 GiB\": vllm-project/vllm#27508"},
    {"h100-96gb", 102005473280,
     "CUDA's deviceQuery on a GH200 480GB (driver 535), 102,005,473,280 bytes: "
     "github.com/slitvinov/grace, README.md"},
    {"h200", 143156 * kMebibyte,
     "torch.cuda.get_device_properties on an H200, total_memory=143156MB: "
     "ai-bot-pro/achatbot, deploy/modal/src/llm/vllm/vlm/skywork_r1v.py"},
    {"h20", 97285 * kMebibyte,
     "torch.cuda.get_device_properties on an H20, total_memory=97285MB: "
     "alipay/PainlessInferenceAcceleration, flood/flood/ops/seg_attn.py"},
    {"b200", 182642 * kMebibyte,
     "torch.cuda.get_device_properties on a B200, total_memory=182642MB: "
     "ai-bot-pro/achatbot, deploy/modal/src/llm/vllm/vlm/skywork_r1v.py (178.35 GiB in "
     "pytorch/ao#4002)"},
    {"gb200", 184.31 * kGibibyte,
     "PyTorch's out-of-memory message on a GB200, \"GPU 0 has a total capacity of 184.31 GiB\": "
     "NVIDIA/srt-slurm, configs/patches/vllm_deepseek_v4_mega_moe_free_orig.py (nvidia-smi "
     "prints 189471MiB: schmaustech/rhel4nv-demo, README.md)"},
    {"a100-40gb", 42298834944,
     "CUDA's deviceQuery on an A100-SXM4-40GB, 42,298,834,944 bytes: bottlerocket-os/"
     "bottlerocket#3873"},
    {"a100-80gb", 84987740160,
     "CUDA's deviceQuery on an A100-SXM4-80GB, 84,987,740,160 bytes (79.15 GiB, as PyTorch's "
     "out-of-memory message prints it in vllm-project/vllm#4408): maximilianmbeck/vlstm_cuda, "
     "README.md"},
    {"mi300x", 206141652992,
     "rocminfo's memory pool on an MI300X, 201,310,208 KB (ROCm/legacy-rocm-build#4414); PyTorch's "
     "HIP out-of-memory message prints the same 191.98 GiB (AMD ROCm blogs, GPTQ)"},
    {"l40s", 44.53 * kGibibyte,
     "PyTorch's out-of-memory message on an L40S 48GB, \"total capacity of 44.53 GiB\": "
     "Wan-Video/Wan2.1#205"},
    {"l4", 23612293120,
     "CUDA's deviceQuery on an L4 (driver 525), 23,612,293,120 bytes: kamelth/COE506_Project, "
     "README.md"},
    {"a10g", 22587 * kMebibyte,
     "torch.cuda.get_device_properties on an A10G, total_memory=22587MB: TorchCodec's "
     "documentation, \"Accelerated video decoding on GPUs with CUDA and NVDEC\""},
    {"rtx-4090", 23.64 * kGibibyte,
     "PyTorch's out-of-memory message on an RTX 4090 24GB, \"total capacity of 23.64 GiB\": "
     "ali-vilab/VGen#104"},
    {"rtx-5090", 33677180928,
     "CUDA's deviceQuery on an RTX 5090 (driver 570), 33,677,180,928 bytes: aikitoria/"
     "open-gpu-kernel-modules#1"},
}};

}  // namespace

ReportedMemory reported_memory(std::string_view device_id) {
  if constexpr (kBeyondThePlate) {
    for (const Reported& reported : kReported) {
      if (device_id == reported.device_id) return {reported.bytes, reported.source};
    }
  }
  return {};
}

}  // namespace trainmem
