// Fine-tuning: LoRA's trainable parameters (by hand, and against the counts PEFT prints), the
// quantised base's bytes per parameter, and offloading, which moves bytes and loses none.
#include "trainmem/fine_tuning.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/fit.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;

namespace fine_tuning_test {

namespace {

// h = 64, 4 heads of 16 (q = 64), 2 key/value heads (kv = 32), f = 128, 2 layers.
ModelShape tiny_shape() {
  ModelShape shape;
  shape.id = "tiny";
  shape.name = "Tiny";
  shape.num_layers = 2;
  shape.hidden_size = 64;
  shape.ffn_hidden_size = 128;
  shape.num_attention_heads = 4;
  shape.num_key_value_heads = 2;
  shape.vocab_size = 100;
  return shape;
}

TrainingSetup lora_setup(const std::string& model_id, int rank, LoraTargets targets) {
  TrainingSetup setup;
  setup.model_id = model_id;
  setup.lora_rank = rank;
  setup.lora_targets = targets;
  if (model_id == "gpt2") setup.sequence_length = 1024;  // its 1,024 learned positions
  return setup;
}

}  // namespace

TEST_CASE("lora: a tiny shape's adapters, counted by hand") {
  const ModelShape shape = tiny_shape();
  // r·(in + out) per adapted layer, r = 4: Q 4·(64 + 64) = 512, K and V 2 · 4·(64 + 32) = 768,
  // O 512: 1,792; gate and up 2 · 4·(64 + 128) = 1,536, down 4·(128 + 64) = 768: 2,304 more.
  CHECK(lora_parameters_per_layer(shape, 4, LoraTargets::kAttention) == 1792);
  CHECK(lora_parameters_per_layer(shape, 4, LoraTargets::kAllLinear) == 1792 + 2304);
  // Adafactor: 2·r + in + out values per adapted layer: 8 + 128, 2 · (8 + 96), 8 + 128.
  CHECK(lora_adafactor_values_per_layer(shape, 4, LoraTargets::kAttention) == 136 + 208 + 136);
  TrainingSetup setup = lora_setup(kCustomModelId, 4, LoraTargets::kAllLinear);
  setup.custom_model = shape;
  setup.sequence_length = 16;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.trainable_parameters == 2 * 4096);
}

TEST_CASE("lora: with lora_dropout each adapter saves a dropped copy of its input and a mask") {
  // Inputs a token passes, tiny shape: q, k, v read 64 each and o 64 (4 heads of 16): 256 on the
  // attention; gate and up 64 each and down 128: 256 more on all linear layers.
  const ModelShape shape = tiny_shape();
  CHECK(lora_input_features_per_token(shape, LoraTargets::kAttention) == 256);
  CHECK(lora_input_features_per_token(shape, LoraTargets::kAllLinear) == 512);
  TrainingSetup setup = lora_setup(kCustomModelId, 4, LoraTargets::kAllLinear);
  setup.custom_model = shape;
  setup.sequence_length = 16;
  const Estimate without = estimate_memory(setup);
  setup.lora_dropout = 0.05;
  const Estimate with = estimate_memory(setup);
  REQUIRE(with.answer.ok());
  // 2 layers × 16 tokens × 512 inputs × (2 + 1) B; the probability changes no byte.
  CHECK(with.bytes[Term::kActivations] - without.bytes[Term::kActivations] == 2 * 16 * 512 * 3);
  setup.lora_dropout = 0.5;
  CHECK(estimate_memory(setup).bytes[Term::kActivations] == with.bytes[Term::kActivations]);
  // It is the adapters': refused without LoRA, and a probability below 1.
  setup.lora_rank = 0;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kLoraDropout);
  CHECK(!apply_setting(setup, setting_id::kLoraDropout, "1").ok());
  CHECK(apply_setting(setup, setting_id::kLoraDropout, "0.1").ok());
}

TEST_CASE("host: the node's devices share its host, which holds their offloaded states or not") {
  TrainingSetup setup = lora_setup(kCustomModelId, 0, LoraTargets::kAttention);
  setup.custom_model = tiny_shape();
  setup.sequence_length = 16;
  setup.offload = Offload::kOptimizer;
  setup.layout.data_parallel = 16;  // two nodes: the host is shared by 8 devices
  Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.host_devices == 8);
  CHECK(estimate.host_node_bytes == 8 * estimate.host.total());
  CHECK(estimate.host_fits);                                // unchecked: no host memory given
  setup.host_capacity_gb = estimate.host_node_bytes / 1e9;  // exactly enough
  CHECK(estimate_memory(setup).host_fits);
  setup.host_capacity_gb = estimate.host_node_bytes / 1e9 * 0.99;
  CHECK_FALSE(estimate_memory(setup).host_fits);
  setup.layout.data_parallel = 2;  // one node of two devices
  estimate = estimate_memory(setup);
  CHECK(estimate.host_devices == 2);
  CHECK(estimate.host_fits);
}

// PEFT's print_trainable_parameters() prints "trainable params: T || all params: A": A is the
// base's count plus the adapters'. Both lines below are printed by get_peft_model with
// LoraConfig(r=16, target_modules="all-linear" or the seven projections, bias="none"), as quoted
// in public fine-tuning write-ups (docs/formulas.md, "LoRA").
TEST_CASE("lora: Llama 3 8B at r = 16 on all linear layers trains PEFT's 41,943,040") {
  const Estimate estimate = estimate_memory(lora_setup("llama3-8b", 16, LoraTargets::kAllLinear));
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.trainable_parameters == 41943040);
  CHECK(estimate.num_parameters + estimate.trainable_parameters == 8072204288);  // all params
}

TEST_CASE("lora: Llama 2 7B at r = 16 on all linear layers trains PEFT's 39,976,960") {
  const Estimate estimate = estimate_memory(lora_setup("llama2-7b", 16, LoraTargets::kAllLinear));
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.trainable_parameters == 39976960);
  CHECK(estimate.num_parameters + estimate.trainable_parameters == 6778392576);
}

TEST_CASE("lora: Llama 2 7B at r = 16 on q, k, v and o trains PEFT's 16,777,216") {
  const Estimate estimate = estimate_memory(lora_setup("llama2-7b", 16, LoraTargets::kAttention));
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.trainable_parameters == 16777216);
  CHECK(estimate.num_parameters + estimate.trainable_parameters == 6755192832);
}

TEST_CASE("lora: a GPT-style block is refused, not counted as a Llama block's adapters") {
  // GPT-2 fuses Q, K and V into c_attn, and its MLP has two projections: other adapters.
  const Estimate estimate = estimate_memory(lora_setup("gpt2", 8, LoraTargets::kAttention));
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.setting == setting_id::kLoraRank);
  CHECK(estimate.answer.message.find("GPT-2 124M is a GPT-style block") != std::string::npos);
  CHECK(estimate_memory(lora_setup("gpt2", 0, LoraTargets::kAttention)).answer.status ==
        Status::kOk);
}

TEST_CASE("lora: latent attention and extended mixtures are refused, not counted as Llama's") {
  const Estimate deepseek = estimate_memory(lora_setup("deepseek-v3", 16, LoraTargets::kAttention));
  CHECK(deepseek.answer.setting == setting_id::kLoraRank);
  CHECK(deepseek.answer.message.find("has latent attention") != std::string::npos);
  const Estimate qwen = estimate_memory(lora_setup("qwen3-30b-a3b", 16, LoraTargets::kAllLinear));
  CHECK(qwen.answer.setting == setting_id::kLoraRank);
  CHECK(qwen.answer.message.find("experts of their own width") != std::string::npos);
  CHECK(estimate_memory(lora_setup("qwen3-8b", 16, LoraTargets::kAllLinear)).answer.ok());
}

TEST_CASE("lora: the frozen base keeps its weights and nothing else, the adapters keep 16 B") {
  const Estimate estimate = estimate_memory(lora_setup("llama3-8b", 16, LoraTargets::kAllLinear));
  const double base = 8030261248.0;
  const double adapters = 41943040.0;
  CHECK(estimate.bytes[Term::kWeights] == 2 * base + 2 * adapters);
  CHECK(estimate.bytes[Term::kGradients] == 2 * adapters);
  CHECK(estimate.bytes[Term::kMasterWeights] == 4 * adapters);
  CHECK(estimate.bytes[Term::kOptimizerStates] == 8 * adapters);
  CHECK(estimate.bytes[Term::kDequantization] == 0);
  CHECK(estimate.parameters_on_device == base + adapters);
}

TEST_CASE("lora: each adapter adds its r-wide BF16 intermediate to the activations, once") {
  TrainingSetup full_fine_tuning;
  const Estimate without = estimate_memory(full_fine_tuning);
  const Estimate attention = estimate_memory(lora_setup("llama3-8b", 16, LoraTargets::kAttention));
  const Estimate all_linear = estimate_memory(lora_setup("llama3-8b", 16, LoraTargets::kAllLinear));
  // 8,192 tokens × r 16 × 2 B × 4 (Q, K, V, O) or 7 adapted layers, in each of 32 layers.
  CHECK(attention.bytes[Term::kActivations] - without.bytes[Term::kActivations] ==
        8192.0 * 16 * 2 * 4 * 32);
  CHECK(all_linear.bytes[Term::kActivations] - without.bytes[Term::kActivations] ==
        8192.0 * 16 * 2 * 7 * 32);
  // Full recomputation keeps each layer's input only; the intermediates are rebuilt with it.
  TrainingSetup full = lora_setup("llama3-8b", 16, LoraTargets::kAllLinear);
  full.recompute = Recompute::kFull;
  TrainingSetup full_without = full;
  full_without.lora_rank = 0;
  CHECK(estimate_memory(full).bytes[Term::kActivations] -
            estimate_memory(full_without).bytes[Term::kActivations] ==
        8192.0 * 16 * 2 * 7);
}

TEST_CASE("qlora: NF4 with double quantisation is 4 + 8/64 + 32/(64·256) bits per parameter") {
  // 4.126953125 bits: 0.5 + 0.015625 + 0.000244140625 bytes.
  CHECK(kNf4BytesPerParameter == 0.515869140625);
  CHECK(base_linear_bytes_per_parameter(tiny_shape(), BaseWeights::kNf4) == 0.515869140625);
  CHECK(base_linear_bytes_per_parameter(tiny_shape(), BaseWeights::kBf16) == 2);
}

TEST_CASE("qlora: int8 is one byte per weight and one FP32 scale per output row") {
  // The tiny layer's rows: Q 64, K 32, V 32, O 64, gate 128, up 128, down 64 = 512; its weights
  // 64·64 + 2·64·32 + 64·64 + 3·64·128 = 36,864: 1 + 4·512/36,864 = 1 + 1/18.
  CHECK(base_linear_bytes_per_parameter(tiny_shape(), BaseWeights::kInt8) ==
        doctest::Approx(1.0 + 1.0 / 18).epsilon(1e-15));
  // Llama 3 8B: rows 4,096 + 2 · 1,024 + 4,096 + 2 · 14,336 + 4,096 = 43,008 over 218,103,808.
  CHECK(base_linear_bytes_per_parameter(*find_preset("llama3-8b"), BaseWeights::kInt8) ==
        1 + 4.0 * 43008 / 218103808);
}

TEST_CASE("qlora: the base's linear weights in NF4, the rest in BF16, and one layer dequantised") {
  TrainingSetup setup = lora_setup("llama3-8b", 16, LoraTargets::kAllLinear);
  setup.base_weights = BaseWeights::kNf4;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  const double linear = 32 * 218103808.0;
  const double rest = 8030261248.0 - linear;  // embeddings, output layer, norms
  CHECK(estimate.bytes[Term::kWeights] ==
        doctest::Approx(0.515869140625 * linear + 2 * rest + 2 * 41943040.0));
  // The gate or up projection, 4,096 × 14,336, in BF16 while its matmul runs.
  CHECK(estimate.bytes[Term::kDequantization] == 2.0 * 4096 * 14336);
  CHECK(estimate.bytes.total() == estimate.bytes.model_states() +
                                      estimate.bytes[Term::kActivations] +
                                      estimate.bytes[Term::kDequantization]);
}

TEST_CASE("qlora: quantised base weights without LoRA are refused, naming base-weights") {
  TrainingSetup setup;
  setup.base_weights = BaseWeights::kNf4;
  const Estimate estimate = estimate_memory(setup);
  CHECK_FALSE(estimate.answer.ok());
  CHECK(estimate.answer.setting == setting_id::kBaseWeights);
}

TEST_CASE(
    "offloading: every byte that leaves the device is on the host, and the host adds FP32 "
    "gradients") {
  for (const bool lora : {false, true}) {
    for (const Offload offload : {Offload::kOptimizer, Offload::kOptimizerAndWeights}) {
      for (const bool activations : {false, true}) {
        TrainingSetup before =
            lora ? lora_setup("llama3-8b", 16, LoraTargets::kAllLinear) : TrainingSetup{};
        TrainingSetup after = before;
        after.offload = offload;
        after.offload_activations = activations;
        const Estimate on_device = estimate_memory(before);
        const Estimate offloaded = estimate_memory(after);
        REQUIRE(offloaded.answer.ok());
        const Breakdown& was = on_device.bytes;
        const Breakdown& is = offloaded.bytes;
        const Breakdown& host = offloaded.host;
        CAPTURE(lora);
        CAPTURE(choice_id(offload));
        CAPTURE(activations);
        CHECK(was[Term::kWeights] - is[Term::kWeights] == host[Term::kWeights]);
        CHECK(was[Term::kGradients] - is[Term::kGradients] == host[Term::kGradients]);
        CHECK(was[Term::kMasterWeights] - is[Term::kMasterWeights] == host[Term::kMasterWeights]);
        CHECK(was[Term::kOptimizerStates] - is[Term::kOptimizerStates] ==
              host[Term::kOptimizerStates]);
        CHECK(was[Term::kActivations] - is[Term::kActivations] == host[Term::kActivations]);
        CHECK(is[Term::kMasterWeights] == 0);
        CHECK(is[Term::kOptimizerStates] == 0);
        CHECK(host[Term::kFp32Gradients] == 4 * offloaded.trainable_parameters);
        CHECK(was.total() - is.total() + host[Term::kFp32Gradients] == host.total());
      }
    }
  }
}

TEST_CASE("offloading: the device keeps the two layers in flight") {
  TrainingSetup setup;
  setup.offload = Offload::kOptimizerAndWeights;
  setup.offload_activations = true;
  const Estimate estimate = estimate_memory(setup);
  // Llama 3 8B's largest unit is its embedding, 128,256 × 4,096 in BF16; one layer's
  // activations are 34·s·h = 34 · 8,192 · 4,096 bytes (Korthikanti, FlashAttention on).
  CHECK(estimate.bytes[Term::kWeights] == 2 * 2 * 128256.0 * 4096);
  CHECK(estimate.bytes[Term::kGradients] == 2 * 2 * 128256.0 * 4096);
  CHECK(estimate.bytes[Term::kActivations] == 2 * 34.0 * 8192 * 4096);
}

TEST_CASE("fine-tuning: the defaults train every parameter on the device, as the plate does") {
  const Estimate estimate = estimate_memory(TrainingSetup{});
  CHECK(estimate.trainable_parameters == estimate.num_parameters);
  CHECK(estimate.host.total() == 0);
  CHECK(estimate.bytes[Term::kDequantization] == 0);
  CHECK(estimate.bytes.total() == 164991401984);
  CHECK(estimate.base_linear_bytes_per_parameter == 0);
}

TEST_CASE("fine-tuning: the timeline's peak is the estimate's total, whatever is offloaded") {
  for (const Recompute recompute : {Recompute::kNone, Recompute::kFull}) {
    for (const bool logits : {false, true}) {
      for (const bool offload_activations : {false, true}) {
        TrainingSetup setup = lora_setup("llama3-8b", 16, LoraTargets::kAllLinear);
        setup.base_weights = BaseWeights::kNf4;
        setup.recompute = recompute;
        setup.logits = logits;
        setup.offload = Offload::kOptimizer;
        setup.offload_activations = offload_activations;
        const std::vector<TimelinePoint> points = memory_timeline(setup);
        REQUIRE_FALSE(points.empty());
        CAPTURE(choice_id(recompute));
        CAPTURE(logits);
        CAPTURE(offload_activations);
        CHECK(points[timeline_peak(points)].bytes ==
              doctest::Approx(estimate_memory(setup).bytes.total()).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("fine-tuning: the arithmetic writes the adapters, the dequantised layer and the host") {
  TrainingSetup setup = lora_setup("llama3-8b", 16, LoraTargets::kAllLinear);
  setup.base_weights = BaseWeights::kNf4;
  setup.offload = Offload::kOptimizer;
  const std::vector<TermArithmetic> terms = explain_estimate(setup);
  const auto find = [&](const std::string& term) -> const TermArithmetic* {
    for (const TermArithmetic& each : terms) {
      if (each.term == term) return &each;
    }
    return nullptr;
  };
  REQUIRE(find("weights") != nullptr);
  CHECK(find("weights")->formula.find("41,943,040 adapter") != std::string::npos);
  CHECK(find("weights")->source.find("QLoRA") != std::string::npos);
  CHECK(find("gradients")->formula.find("41,943,040 parameters") != std::string::npos);
  REQUIRE(find("dequantization") != nullptr);
  CHECK(find("dequantization")->formula.find("58,720,256") != std::string::npos);
  REQUIRE(find("host") != nullptr);
  CHECK(find("host")->source.find("ZeRO-Offload") != std::string::npos);
}

TEST_CASE("fine-tuning: the fewest-devices search reads LoRA, NF4 and offloading") {
  TrainingSetup setup;
  setup.model_id = "llama3-70b";
  CHECK(find_fewest_devices(setup, 1).fewest_devices == 16);
  setup.lora_rank = 16;
  setup.base_weights = BaseWeights::kNf4;
  // 70.6 B parameters' linear weights at 0.516 B, the embeddings in BF16, full recomputation.
  const FitSearch search = find_fewest_devices(setup, 1);
  CHECK(search.fewest_devices == 1);
  REQUIRE_FALSE(search.layouts.empty());
  CHECK(search.layouts.front().setup.base_weights == BaseWeights::kNf4);
  CHECK(search.layouts.front().fits);
}

TEST_CASE("qlora: int8's scales are counted by the row, whole under tensor parallelism") {
  TrainingSetup setup = lora_setup("llama3-8b", 16, LoraTargets::kAllLinear);
  setup.base_weights = BaseWeights::kInt8;
  const double rest = 8030261248.0 - 32 * 218103808.0;
  CHECK(estimate_memory(setup).bytes[Term::kWeights] ==
        32 * (218103808.0 + 4 * 43008) + 2 * rest + 2 * 41943040.0);
  // t 2 splits Q, K, V, gate and up by their rows, O and down by their columns: O's and down's
  // 4,096 rows each stay whole on every rank.
  setup.layout.tensor_parallel = 2;
  const double rows_per_rank = (4096 + 2 * 1024 + 2 * 14336) / 2.0 + 2 * 4096;
  const double weights = estimate_memory(setup).bytes[Term::kWeights];
  CHECK(weights == 32 * (218103808.0 / 2 + 4 * rows_per_rank) + 2 * 64128.0 * 4096 * 2 +
                       2 * 32 * 2 * 4096 + 2 * 4096 + 2 * 41943040.0 / 2);
  CHECK(std::trunc(weights) == weights);
}

TEST_CASE("optimizer in backward: the largest parameter's gradient is the most held at once") {
  TrainingSetup setup;  // Llama 3 8B on one device
  setup.precision = Precision::kBf16;
  const Estimate stepped_after = estimate_memory(setup);
  setup.optimizer_in_backward = true;
  const Estimate stepped_in = estimate_memory(setup);
  REQUIRE(stepped_in.answer.ok());
  // The embedding (and the untied output layer), 128,256 × 4,096, BF16 (pure bf16: 2 B).
  CHECK(stepped_in.bytes[Term::kGradients] == 2 * 128256.0 * 4096);
  CHECK(stepped_after.bytes[Term::kGradients] == 2 * 8030261248.0);
  // The gradients leave the bytes per parameter: 2 B of weights and Adam's two BF16 moments.
  CHECK(stepped_in.bytes_per_parameter.total == 6);
  CHECK(stepped_in.bytes[Term::kActivations] == stepped_after.bytes[Term::kActivations]);
}

TEST_CASE("optimizer in backward: refused beyond torchtune's single-device full training") {
  for (const auto& change : std::vector<void (*)(TrainingSetup&)>{
           [](TrainingSetup& s) { s.layout.data_parallel = 2; },
           [](TrainingSetup& s) { s.lora_rank = 8; },
           [](TrainingSetup& s) { s.offload = Offload::kOptimizer; },
       }) {
    TrainingSetup setup;
    setup.optimizer_in_backward = true;
    change(setup);
    const Answer refused = estimate_memory(setup).answer;
    CHECK(refused.setting == setting_id::kOptimizerInBackward);
    CHECK(refused.message.rfind("The optimizer's step in the backward pass is modelled as "
                                "torchtune's single-device full training runs it",
                                0) == 0);
  }
}

}  // namespace fine_tuning_test
