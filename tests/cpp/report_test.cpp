#include "trainmem/report.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "trainmem/fit.hpp"

using namespace trainmem;

namespace report_test {

TEST_CASE("report: the JSON is the CLI's schema, byte counts as integers") {
  const nlohmann::json json = nlohmann::json::parse(setup_to_json(TrainingSetup{}));
  CHECK(json["model"] == "llama3-8b");
  CHECK(json["bytes"]["total"] == 164991401984);
  CHECK(json["bytes"]["total"].is_number_integer());
  CHECK(json["layout"]["dp"] == 1);
}

TEST_CASE("report: the CSV lists each term's bytes per parameter and bytes, then the total") {
  CHECK(setup_to_csv(TrainingSetup{}) ==
        "term,bytes_per_parameter,bytes\n"
        "weights,2,16060522496\n"
        "gradients,2,16060522496\n"
        "master_weights,4,32121044992\n"
        "optimizer_states,8,64242089984\n"
        "activations,,36507222016\n"
        "logits,,0\n"
        "total,16,164991401984\n");
}

TEST_CASE("report: under fp8-mixed the CSV adds the FP8 weights' row, and its rows add up") {
  TrainingSetup setup;
  setup.precision = Precision::kFp8Mixed;
  // 2 × 6,979,321,856 FP8 GEMM weights + 20,520 B × 128 GEMMs; activations 29 · 8,192 · 4,096 · 32.
  CHECK(setup_to_csv(setup) ==
        "term,bytes_per_parameter,bytes\n"
        "weights,2,16060522496\n"
        "gradients,2,16060522496\n"
        "master_weights,4,32121044992\n"
        "optimizer_states,8,64242089984\n"
        "activations,,31138512896\n"
        "logits,,0\n"
        "fp8_weights,,13961270272\n"
        "total,16,173583963136\n");
  const nlohmann::json json = nlohmann::json::parse(setup_to_json(setup));
  CHECK(json["bytes"]["fp8Weights"] == 13961270272);
}

TEST_CASE("report: a refused setup is written as its message, never as numbers") {
  TrainingSetup setup;
  setup.layout.tensor_parallel = 3;
  const nlohmann::json json = nlohmann::json::parse(setup_to_json(setup));
  CHECK(json.size() == 1);
  CHECK(json["error"].get<std::string>().rfind("Tensor parallelism 3 must divide", 0) == 0);
  setup.device_id = "say \"hi\"";
  setup.layout.tensor_parallel = 1;
  CHECK(setup_to_csv(setup) ==
        "error\n\"Device 'say \"\"hi\"\"' is not known; choose one of h100, h100-96gb, h200, "
        "h20, b200, gb200, b300, a100-40gb, a100-80gb, mi300x, mi325x, l40s, l4, a10g, rtx-4090, "
        "rtx-5090, custom.\"\n");
}

TEST_CASE("report: the fit JSON lists the layouts with the fewest devices") {
  const TrainingSetup setup;
  const nlohmann::json json =
      nlohmann::json::parse(fit_to_json(setup, find_fewest_devices(setup, 3)));
  CHECK(json["fewestDevices"] == 2);
  CHECK(json["layouts"].size() == 3);
  CHECK(json["modelName"] == "Llama 3 8B");
}

}  // namespace report_test
