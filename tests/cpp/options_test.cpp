#include "trainmem/options.hpp"

#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/models.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace options_test {

TEST_CASE("the device catalogue carries the vendors' capacities in decimal bytes") {
  CHECK(find_device("h100")->capacity_bytes == 80e9);
  CHECK(find_device("h200")->capacity_bytes == 141e9);
  CHECK(find_device("b200")->capacity_bytes == 192e9);
  CHECK(find_device("gb200")->capacity_bytes == 186e9);
  CHECK(find_device("a100-40gb")->capacity_bytes == 40e9);
  CHECK(find_device("a100-80gb")->capacity_bytes == 80e9);
  CHECK(find_device("mi300x")->capacity_bytes == 192e9);
  CHECK(find_device("h100-96gb")->capacity_bytes == 96e9);
  CHECK(find_device("h20")->capacity_bytes == 96e9);
  CHECK(find_device("b300")->capacity_bytes == 288e9);
  CHECK(find_device("mi325x")->capacity_bytes == 256e9);
  CHECK(find_device("l40s")->capacity_bytes == 48e9);
  CHECK(find_device("l4")->capacity_bytes == 24e9);
  CHECK(find_device("a10g")->capacity_bytes == 24e9);
  CHECK(find_device("rtx-4090")->capacity_bytes == 24e9);
  CHECK(find_device("rtx-5090")->capacity_bytes == 32e9);
  CHECK(find_device("custom") == nullptr);
  CHECK(ids_joined(device_choices()) ==
        "h100, h100-96gb, h200, h20, b200, gb200, b300, a100-40gb, a100-80gb, mi300x, mi325x, "
        "l40s, l4, "
        "a10g, rtx-4090, rtx-5090, custom");
}

TEST_CASE("each device names the page that prints its memory, and the choices carry it") {
  const std::vector<Choice> choices = device_choices();
  REQUIRE(choices.size() == device_catalog().size() + 1);  // and the custom device
  std::vector<std::string> sources;
  for (std::size_t index = 0; index < device_catalog().size(); ++index) {
    const Device& device = device_catalog()[index];
    CAPTURE(device.id);
    CHECK(choices[index].id == device.id);
    CHECK(choices[index].source == device.source);
    // The figure the device is named by is the one its source prints: "48 GB" for the L40S.
    const std::string gigabytes = std::to_string(static_cast<int>(device.capacity_bytes / 1e9));
    CHECK(device.name.find(gigabytes + " GB") != std::string::npos);
    CHECK(device.source.find(gigabytes + " GB") != std::string::npos);
    CHECK(device.source.find(device.short_name) != std::string::npos);
    for (const std::string& other : sources) CHECK(device.source != other);
    sources.push_back(device.source);
  }
  CHECK(find_device("h100-96gb")->source.find("GH200") != std::string::npos);
  CHECK(find_device("a10g")->source.find("Amazon EC2 G5") != std::string::npos);
  CHECK(choices.back().id == kCustomDeviceId);
  CHECK(choices.back().source.empty());
}

TEST_CASE("the architectures' rows stand each at its architecture's place") {
  for (std::size_t index = 0; index < static_cast<std::size_t>(Architecture::kCount); ++index) {
    CAPTURE(index);
    CHECK(architecture_row(static_cast<Architecture>(index)).architecture ==
          static_cast<Architecture>(index));
  }
}

TEST_CASE("each device carries its architecture's row: FP8 weight copies and cuBLAS workspaces") {
  constexpr double kMiB = 1 << 20;
  const auto row_of = [](const char* id) -> const ArchitectureRow& {
    return architecture_row(find_device(id)->architecture);
  };
  CHECK(row_of("h100").fp8_weight_copies == 2);  // each FP8 weight and its transpose
  CHECK(row_of("h200").fp8_weight_copies == 2);
  CHECK(row_of("b200").fp8_weight_copies == 1);  // non-TN FP8 GEMMs: no transpose
  CHECK(row_of("a100-80gb").fp8_weight_copies == 0);
  CHECK(row_of("mi300x").fp8_weight_copies == 0);
  CHECK(row_of("h100").cublas_workspace_bytes == 32 * kMiB);
  CHECK(row_of("a100-40gb").cublas_workspace_bytes == 8 * kMiB + 128 * 1024);
  CHECK(row_of("mi300x").cublas_workspace_bytes == 128 * kMiB);
  CHECK(row_of("mi300x").cublaslt_workspace_bytes == 76 * kMiB);
  // The devices added for issue 27, each on its architecture's row.
  CHECK(find_device("h100-96gb")->architecture == Architecture::kHopper);
  CHECK(find_device("h20")->architecture == Architecture::kHopper);
  CHECK(find_device("b300")->architecture == Architecture::kBlackwell);
  CHECK(find_device("gb200")->architecture == Architecture::kBlackwell);  // sm_100, as the B200
  CHECK(find_device("mi325x")->architecture == Architecture::kCdna3);
  CHECK(find_device("l40s")->architecture == Architecture::kAda);
  CHECK(find_device("l4")->architecture == Architecture::kAda);
  CHECK(find_device("rtx-4090")->architecture == Architecture::kAda);
  CHECK(find_device("a10g")->architecture == Architecture::kAmpere);
  CHECK(find_device("rtx-5090")->architecture == Architecture::kBlackwellSm120);
  // Ada (sm_89): FP8 TN only, and PyTorch's workspace before Hopper.
  CHECK(row_of("l40s").fp8_weight_copies == 2);
  CHECK(row_of("l40s").cublas_workspace_bytes == 8 * kMiB + 128 * 1024);
  CHECK(row_of("a10g").fp8_weight_copies == 0);  // Ampere's sm_86: no FP8 tensor cores
  CHECK(row_of("b300").fp8_weight_copies == 1);  // sm_103: non-TN FP8 GEMMs, as sm_100
  CHECK(row_of("b300").cublas_workspace_bytes == 32 * kMiB);
  // sm_120: TN-only FP8 GEMMs as on Hopper (not Blackwell's 10.x), Hopper's 32 MiB workspace.
  CHECK(row_of("rtx-5090").fp8_weight_copies == 2);
  CHECK(row_of("rtx-5090").cublas_workspace_bytes == 32 * kMiB);
  CHECK(row_of("rtx-5090").cublaslt_workspace_bytes == 1 * kMiB);
  CHECK(row_of("mi325x").cublas_workspace_bytes == 128 * kMiB);  // gfx942, as the MI300X
  // A custom device, of a capacity given with it, is taken as Ada's row: FP8 as on Hopper, and
  // PyTorch's pre-Hopper workspace.
  TrainingSetup custom;
  custom.device_id = kCustomDeviceId;
  custom.custom_capacity_gb = 24;
  const Device device = device_of(custom);
  CHECK(device.name == "Custom 24 GB");
  CHECK(device.capacity_bytes == 24e9);
  CHECK(architecture_row(device.architecture).fp8_weight_copies == 2);
  CHECK(architecture_row(device.architecture).cublas_workspace_bytes == 8 * kMiB + 128 * 1024);
}

TEST_CASE("a device id the checks refuse names no device's figures: no memory, no FP8 copies") {
  TrainingSetup setup;
  setup.device_id = "h100-sxm";
  const Device device = device_of(setup);
  CHECK(device.name == "h100-sxm");
  CHECK(device.capacity_bytes == 0);
  CHECK(fp8_weight_copies(setup) == 0);
  const Estimate estimate = estimate_memory(setup);
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == "device");
}

TEST_CASE("each precision and optimiser states its bytes per parameter") {
  const ModelShape& shape = *find_preset("llama3-8b");
  const BytesPerParameter adam =
      bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdam, shape);
  CHECK(adam.weights == 2);
  CHECK(adam.gradients == 2);
  CHECK(adam.master_weights == 4);
  CHECK(adam.optimizer_states == 8);
  CHECK(adam.total == 16);

  // Two 8-bit moments plus one FP32 absmax per 2,048-value block each.
  CHECK(bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdam8bit, shape).optimizer_states ==
        2 * (1 + 4.0 / 2048));
  CHECK(bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kSgdMomentum, shape).total == 12);
  CHECK(bytes_per_parameter(Precision::kBf16, Optimizer::kAdam, shape).total == 2 + 2 + 0 + 4);
  CHECK(bytes_per_parameter(Precision::kFp32, Optimizer::kAdam, shape).total == 4 + 4 + 0 + 8);
  CHECK(bytes_per_parameter(Precision::kFp32, Optimizer::kSgdMomentum, shape).total == 12);
  // BF16 moments whatever holds the weights: beside an FP32 master copy, or FP32 weights.
  CHECK(bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdamBf16Moments, shape).total ==
        2 + 2 + 4 + 4);
  CHECK(bytes_per_parameter(Precision::kFp32, Optimizer::kAdamBf16Moments, shape).total ==
        4 + 4 + 0 + 4);
  CHECK(bytes_per_parameter(Precision::kBf16, Optimizer::kAdamBf16Moments, shape).total ==
        bytes_per_parameter(Precision::kBf16, Optimizer::kAdam, shape).total);
}

TEST_CASE("each stack answers the optimisers it runs, and refuses the others by name") {
  TrainingSetup setup;
  setup.model_id = "llama3.2-1b";
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.stack = Stack::kTorchtitan;
  setup.optimizer = Optimizer::kAdamBf16Moments;
  const Estimate bf16_moments = estimate_memory(setup);
  REQUIRE_MESSAGE(bf16_moments.answer.ok(), bf16_moments.answer.message);
  // torchtitan's moments in BF16, 2 + 2 B a parameter over d (each tensor's in blocks of 512 B).
  CHECK(bf16_moments.bytes[Term::kOptimizerStates] ==
        doctest::Approx(4.0 * count_parameters(*find_preset("llama3.2-1b")) / 2).epsilon(1e-3));
  // torchtitan builds AdamW alone (or Adam): Adafactor is not read as something else.
  setup.optimizer = Optimizer::kAdafactor;
  Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kOptimizer);
  CHECK(refused.message.find("fused_opt_states_bf16") != std::string::npos);
  // Megatron-LM: adam, sgd, and its precision-aware adam's BF16 moments.
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOptimizer);
  setup.optimizer = Optimizer::kAdamBf16Moments;
  CHECK(estimate_memory(setup).answer.ok());
  setup.optimizer = Optimizer::kSgdMomentum;
  CHECK(estimate_memory(setup).answer.ok());
  // DeepSpeed's BF16 moments come with its BF16 master copy (bf16-master), not alone.
  setup.stack = Stack::kDeepSpeed;
  setup.optimizer = Optimizer::kAdamBf16Moments;
  refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kOptimizer);
  CHECK(refused.message ==
        "The DeepSpeed ZeRO stack is modelled with adam, adam-8bit, adafactor or sgd-momentum, "
        "not adam-bf16-moments; choose one of them, or the ideal stack.");
}

TEST_CASE("Adafactor's factored second moment costs a row and a column per matrix") {
  const ModelShape& shape = *find_preset("llama3-8b");
  const double state =
      bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdafactor, shape).optimizer_states;
  // Rows and columns of every matrix, plus the norms whole, in FP32, over 8.03 B parameters.
  const double h = 4096, kv = 1024, f = 14336, v = 128256;
  const double values =
      32 * ((h + h) + 2 * (h + kv) + (h + h) + 2 * (h + f) + (f + h) + 2 * h) + 2 * (v + h) + h;
  CHECK(state == doctest::Approx(4 * values / 8030261248.0));
  CHECK(state < 0.01);  // a tiny fraction of Adam's 8 bytes
}

TEST_CASE("the plate's recipe is the default setup") {
  const TrainingSetup setup;
  CHECK(setup.precision == Precision::kBf16Mixed);
  CHECK(setup.optimizer == Optimizer::kAdam);
  CHECK(setup.recompute == Recompute::kNone);
  CHECK(setup.device_id == "h100");
  CHECK_FALSE(setup.logits);
  CHECK(setup.layout.data_parallel == 1);
  CHECK(setup.layout.zero_stage == 0);
  CHECK(setup.layout.tensor_parallel == 1);
  CHECK_FALSE(setup.layout.sequence_parallel);
  CHECK(setup.layout.pipeline_parallel == 1);
  CHECK(setup.layout.virtual_pipeline_stages == 1);
  CHECK(setup.layout.context_parallel == 1);
}

TEST_CASE("Adafactor counts each expert's matrices, the router and every bias vector") {
  ModelShape shape = *find_preset("mixtral-8x7b");
  shape.attention_qkv_bias = true;
  shape.attention_output_bias = true;
  shape.mlp_bias = true;
  const double state =
      bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdafactor, shape).optimizer_states;
  const double h = 4096, q = 4096, kv = 1024, f = 14336, v = 32000, e = 8;
  const double matrices = (h + q) + 2 * (h + kv) + (q + h) + e * (2 * (h + f) + (f + h)) + (h + e);
  const double vectors = 2 * h + (q + 2 * kv) + h + e * (2 * f + h);
  const double values = 32 * (matrices + vectors) + 2 * (v + h) + h;
  CHECK(state == doctest::Approx(4 * values / count_parameters(shape)).epsilon(1e-12));

  // Gemma 2's wider heads and four norms.
  const ModelShape& gemma = *find_preset("gemma2-9b");
  const double gh = 3584, gq = 4096, gkv = 2048, gf = 14336, gv = 256000;
  const double gemma_values =
      42 * ((gh + gq) + 2 * (gh + gkv) + (gq + gh) + 2 * (gh + gf) + (gf + gh) + 4 * gh) +
      (gv + gh) + gh;
  CHECK(bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdafactor, gemma).optimizer_states ==
        doctest::Approx(4 * gemma_values / 9241705984.0).epsilon(1e-12));
}

TEST_CASE("Adafactor on GPT-2: two MLP matrices, LayerNorm biases and the position matrix") {
  const ModelShape& gpt2 = *find_preset("gpt2");
  const double h = 768, f = 3072, v = 50257, positions = 1024;
  // Per layer: c_attn's Q, K, V and c_proj (rows + columns each), c_fc and the MLP's c_proj;
  // vectors whole: two LayerNorms' weights and biases, the QKV, O, c_fc and c_proj biases.
  const double matrices = 4 * (h + h) + (h + f) + (f + h);
  const double vectors = 2 * 2 * h + 3 * h + h + f + h;
  // Once: wte (tied to the head), wpe, ln_f's weight and bias.
  const double values = 12 * (matrices + vectors) + (v + h) + (positions + h) + 2 * h;
  CHECK(bytes_per_parameter(Precision::kBf16Mixed, Optimizer::kAdafactor, gpt2).optimizer_states ==
        doctest::Approx(4 * values / 124439808.0).epsilon(1e-12));
}

TEST_CASE("Muon: one momentum buffer for the blocks' matrices, AdamW's two moments for the rest") {
  const ModelShape& shape = *find_preset("llama3-8b");
  // Per layer Q and O 4,096², K and V 4,096 × 1,024, gate, up and down 4,096 × 14,336:
  // 218,103,808 in matrices, and two norms of 4,096 outside them.
  const double matrices = 32.0 * 218103808;
  CHECK(muon_vector_parameters_per_layer(shape) == 8192);
  CHECK(muon_matrix_share(shape) * count_parameters(shape) == doctest::Approx(matrices));
  // The embedding, the output layer and the final norm, and 32 layers' norms: AdamW's.
  const double adam = 2.0 * 128256 * 4096 + 4096 + 32 * 8192;
  CHECK(matrices + adam == count_parameters(shape));
  TrainingSetup setup;
  setup.optimizer = Optimizer::kMuon;
  const Estimate muon = estimate_memory(setup);
  REQUIRE_MESSAGE(muon.answer.ok(), muon.answer.message);
  CHECK(muon.bytes[Term::kOptimizerStates] == 4 * matrices + 8 * adam);
  // Each pipeline stage its own mix: the first holds the embedding (AdamW's) and 16 layers.
  setup.layout.pipeline_parallel = 2;
  const Estimate staged = estimate_memory(setup);
  REQUIRE(staged.answer.ok());
  REQUIRE(staged.most_loaded_stage == PipelineStage::kFirst);
  CHECK(staged.bytes[Term::kOptimizerStates] ==
        4 * 16.0 * 218103808 + 8 * (128256.0 * 4096 + 16 * 8192));
  setup.layout.pipeline_parallel = 1;
  // torch.optim.Muon's step on its largest matrix, gate or up (14,336 × 4,096, k 4,096), FP32
  // gradients: (4 + 8) × 58,720,256 + 4 × 4,096² = 771,751,936 B, which the passes outweigh.
  const MuonWorkingSet working = muon_working_set(shape, 4);
  CHECK(working.bytes == 771751936);
  CHECK(working.rows * working.cols == 14336.0 * 4096);
  CHECK(muon.notes.back().find("holds 0.8 GB, within the") != std::string::npos);
  // Where the passes hold less, the step would be the peak: refused by the optimiser.
  setup.sequence_length = 16;
  setup.recompute = Recompute::kFull;
  const Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kOptimizer);
  CHECK(refused.message.find("the step would be the peak") != std::string::npos);
}

TEST_CASE("Muon: counted for full training of a text model under the ideal step alone") {
  TrainingSetup setup;
  setup.optimizer = Optimizer::kMuon;
  setup.lora_rank = 16;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOptimizer);
  setup.lora_rank = 0;
  setup.model_id = kCustomModelId;  // a multimodal config's, with its vision tower
  setup.custom_model = *find_preset("llama3.2-1b");
  setup.custom_model.vision_parameters = 400e6;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kOptimizer);
  setup.model_id = "llama3.2-1b";
  setup.layout.data_parallel = 2;
  setup.layout.zero_stage = 3;
  setup.stack = Stack::kTorchtitan;
  const Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kOptimizer);
  CHECK(refused.message.find("DistMuon") != std::string::npos);
}

}  // namespace options_test
