#include "trainmem/measured.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "trainmem/format.hpp"

using namespace trainmem;

namespace {

// The bytes autograd saved inside the layers, in the last step of one case of a harness run.
double saved_in_layers(const nlohmann::json& run, int layers, int micro_batch) {
  for (const auto& measured_case : run.at("cases")) {
    if (measured_case.at("layers") != layers || measured_case.at("micro_batch") != micro_batch) {
      continue;
    }
    double bytes = 0;
    for (const auto& [scope, scope_bytes] :
         measured_case.at("steps").back().at("saved_tensors_by_scope").items()) {
      if (scope.rfind("layer", 0) == 0) bytes += scope_bytes.get<double>();
    }
    return bytes;
  }
  return -1;
}

const MeasuredComparison& comparison_with_id(const std::vector<MeasuredComparison>& all,
                                             const std::string& id) {
  for (const MeasuredComparison& comparison : all) {
    if (comparison.measured.id == id) return comparison;
  }
  FAIL("no measured case " << id);
  return all.front();
}

}  // namespace

TEST_CASE("measured: every case's figure is the one in its committed harness run") {
  int harness_cases = 0;
  for (const MeasuredCase& measured : measured_cases()) {
    if (measured.id.rfind("harness-", 0) != 0) continue;
    ++harness_cases;
    const std::string file = measured.source.substr(measured.source.rfind(' ') + 1);
    std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/" + file);
    REQUIRE_MESSAGE(in.good(), file);
    const nlohmann::json run = nlohmann::json::parse(in);
    CHECK(run.at("settings").at("seq") == measured.setup.sequence_length);
    CHECK(run.at("settings").at("shape").at("hidden") == measured.setup.custom_model.hidden_size);
    CHECK(run.at("settings").at("attention") == "explicit");  // no FlashAttention
    CHECK(saved_in_layers(run, measured.setup.custom_model.num_layers,
                          measured.setup.micro_batch_sequences) == measured.measured_bytes);
  }
  CHECK(harness_cases == 4);
}

TEST_CASE("measured: ids are unique and every case's setup is accepted by the core") {
  std::set<std::string> ids;
  for (const MeasuredComparison& comparison : compare_measured()) {
    CHECK(ids.insert(comparison.measured.id).second);
    CHECK_MESSAGE(comparison.status == Status::kOk, comparison.message);
    CHECK(comparison.measured.measured_bytes > 0);
    CHECK(std::isfinite(comparison.korthikanti_error_percent));
    CHECK(std::isfinite(comparison.llama_block_error_percent));
  }
}

TEST_CASE("measured: the llama-block model matches the harness's saved tensors to 0.01%") {
  const auto all = compare_measured();
  // 4 layers × 512 tokens × 3,848 B (the tiny shape without FlashAttention) = 7,880,704 B; the
  // harness saw 32 B more (an 8-byte scalar per layer).
  const MeasuredComparison& four = comparison_with_id(all, "harness-cpu-tiny-fused-4x4");
  CHECK(four.llama_block_bytes == 4.0 * 512 * 3848);
  CHECK(four.measured.measured_bytes - four.llama_block_bytes == 32);
  for (const char* id :
       {"harness-cpu-tiny-fused-1x1", "harness-cpu-tiny-fused-2x2", "harness-cpu-tiny-fused-4x4"}) {
    CAPTURE(id);
    CHECK(std::fabs(comparison_with_id(all, id).llama_block_error_percent) < 0.01);
  }
  // Korthikanti's GPT block counts 34·h + 5·a·s = 4,736 B per token: 23% over.
  CHECK(four.korthikanti_bytes == 4.0 * 512 * (34 * 64 + 5 * 4 * 128));
  CHECK(format_error_percent(four.korthikanti_error_percent) == "+23.1%");
}

TEST_CASE("measured: an eager RMSNorm saves 8·h bytes per token more per norm than the model") {
  const auto all = compare_measured();
  const MeasuredComparison& eager = comparison_with_id(all, "harness-cpu-tiny-eager-4x4");
  // Its FP32 input (4·h) and that input squared (4·h), and the BF16 normalised input in place of
  // the BF16 input: 4 layers × 512 tokens × 2 norms × 8·64, and the 32 B of scalars.
  CHECK(eager.measured.measured_bytes - eager.llama_block_bytes == 4.0 * 512 * 2 * 8 * 64 + 32);
  CHECK(format_error_percent(eager.llama_block_error_percent) == "\u221221.0%");
  CHECK_FALSE(eager.measured.not_modelled.empty());
}

TEST_CASE("measured: torchtitan's Table 2 runs, read as GiB, against the same layout's total") {
  const auto all = compare_measured();
  const MeasuredComparison& fsdp8 = comparison_with_id(all, "torchtitan-2024-12-fsdp8-cp1");
  CHECK(fsdp8.measured.measured_bytes == 83.9 * 1024 * 1024 * 1024);
  CHECK(fsdp8.measured.quantity == MeasuredQuantity::kTotal);
  const Estimate estimate = estimate_memory(fsdp8.measured.setup);
  REQUIRE(estimate.status == Status::kOk);
  CHECK(estimate.num_devices == 8);
  CHECK(fsdp8.korthikanti_bytes == estimate.bytes.total_bytes);
  // Each row holds 32,768 tokens per GPU and shards the states over 8: one estimate for all four.
  for (const char* id : {"torchtitan-2024-12-fsdp4-cp2", "torchtitan-2024-12-fsdp2-cp4",
                         "torchtitan-2024-12-fsdp1-cp8"}) {
    CAPTURE(id);
    CHECK(comparison_with_id(all, id).llama_block_bytes == fsdp8.llama_block_bytes);
  }
}

TEST_CASE("measured: errors are signed percentages to one decimal") {
  CHECK(format_error_percent(23.14) == "+23.1%");
  CHECK(format_error_percent(-45.06) == "\u221245.1%");
  CHECK(format_error_percent(0.0004) == "\u00b10.0%");
  CHECK(format_error_percent(-0.04) == "\u00b10.0%");
}
