#include "cli.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hub_configs.hpp"
#include "trainmem/config.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/terms.hpp"

using namespace trainmem;

namespace cli_test {

namespace {

struct CliRun {
  int status;
  std::string out;
  std::string err;
};

CliRun run(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

// A file under the system's temporary folder, removed when the test is done with it.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() / ("trainmem-cli-test-" + name)) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

const char* const kMixtralConfig = R"({
  "architectures": ["MixtralForCausalLM"],
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "tie_word_embeddings": false,
  "vocab_size": 32000
})";

void check_bad_input(const std::vector<std::string>& args, const std::string& expected_err) {
  const CliRun result = run(args);
  CHECK(result.status == 2);
  CHECK(result.out.empty());
  CHECK(result.err == expected_err);
  CHECK(count_lines(result.err) == 1);
}

}  // namespace

TEST_CASE("cli: the default breakdown is the plate's 8B view") {
  const CliRun result = run({"--model", "llama3-8b", "--tokens", "8192"});
  CHECK(result.status == kExitDoesNotFit);
  CHECK(result.err.empty());
  CHECK(result.out.find("Llama 3 8B: 8.03 B parameters, 8,192 tokens per micro-batch") !=
        std::string::npos);
  CHECK(result.out.find("FlashAttention on") != std::string::npos);
  CHECK(result.out.find("128.5 GB") != std::string::npos);
  CHECK(result.out.find("36.5 GB") != std::string::npos);
  CHECK(result.out.find("165.0 GB") != std::string::npos);
  CHECK(result.out.find("2.1 H100s' worth: the total over one H100 80 GB") != std::string::npos);
}

TEST_CASE("cli: --no-flash-attention keeps the score term") {
  const CliRun result = run({"--no-flash-attention"});
  CHECK(result.status == kExitDoesNotFit);
  CHECK(result.out.find("508.6 GB") != std::string::npos);
  CHECK(result.out.find("FlashAttention off") != std::string::npos);
}

TEST_CASE("cli: --json prints one object in the documented schema") {
  const CliRun result = run({"--model", "llama3-8b", "--tokens", "16384", "--json"});
  REQUIRE(result.status == kExitDoesNotFit);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["model"] == "llama3-8b");
  CHECK(json["modelName"] == "Llama 3 8B");
  CHECK(json["parameters"] == 8030261248.0);
  CHECK(json["tokensPerMicroBatch"] == 16384);
  CHECK(json["sequenceLength"] == 8192);
  CHECK(json["flashAttention"] == true);
  CHECK(json["bytes"]["total"].is_number_integer());
  CHECK(json["bytes"]["weights"] == 2 * 8030261248.0);
  CHECK(json["bytes"]["gradients"] == 2 * 8030261248.0);
  CHECK(json["bytes"]["masterWeights"] == 4 * 8030261248.0);
  CHECK(json["bytes"]["optimizerStates"] == 8 * 8030261248.0);
  CHECK(json["bytes"]["activations"] == 2 * 36507222016.0);
  CHECK(json["bytes"]["total"] == 16 * 8030261248.0 + 2 * 36507222016.0);
  CHECK(json["device"]["name"] == "H100 80 GB");
  CHECK(json["device"]["capacityBytes"] == 80e9);
  CHECK(json["devicesWorth"].get<double>() == doctest::Approx(201.49e9 / 80e9).epsilon(0.001));
  CHECK(json["bytes"]["logits"] == 0);
  CHECK(json["layout"] == nlohmann::json{{"dp", 1},
                                         {"zero", 0},
                                         {"tp", 1},
                                         {"sequenceParallel", false},
                                         {"pp", 1},
                                         {"vpp", 1},
                                         {"ppFirstLayers", 32},
                                         {"ppLastLayers", 32},
                                         {"cp", 1},
                                         {"ep", 1},
                                         {"etp", 1}});
  CHECK(json["devices"] == 1);
  CHECK(json["fits"] == false);
  CHECK(json["bytesPerParameter"]["total"] == 16);
}

TEST_CASE("cli: --device l40s is an L40S's 48 GB, in the table and in the JSON") {
  const CliRun table = run({"--device", "l40s"});
  REQUIRE(table.status == kExitDoesNotFit);
  CHECK(table.out.find("s' worth: the total over one L40S 48 GB (1 GB = 10^9 bytes)") !=
        std::string::npos);
  const CliRun result = run({"--device", "l40s", "--json"});
  REQUIRE(result.status == kExitDoesNotFit);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["device"]["id"] == "l40s");
  CHECK(json["device"]["name"] == "L40S 48 GB");
  CHECK(json["device"]["capacityBytes"] == 48e9);
  CHECK(json["devicesWorth"].get<double>() == doctest::Approx(164991401984.0 / 48e9));
  const CliRun rtx = run({"--device", "rtx-5090", "--json"});
  REQUIRE(rtx.status == kExitDoesNotFit);
  CHECK(nlohmann::json::parse(rtx.out)["device"]["capacityBytes"] == 32e9);
}

TEST_CASE(
    "cli: --list-devices lists every device with its memory as printed and as PyTorch reports it, "
    "its architecture and sources") {
  const CliRun result = run({"--list-devices"});
  CHECK(result.status == 0);
  for (const Device& device : device_catalog()) {
    CAPTURE(device.id);
    CHECK(result.out.find(device.id + " ") != std::string::npos);
    const ReportedMemory reported = reported_memory(device.id);
    CHECK(result.out.find(device.source +
                          (reported.bytes > 0 ? "; reported: " + reported.source : "") + "\n") !=
          std::string::npos);
  }
  CHECK(result.out.find("l40s       L40S 48 GB          48 GB    47.8 GB   Ada                 "
                        "NVIDIA L40S datasheet: 48 GB GDDR6 with ECC; reported: ") !=
        std::string::npos);
  CHECK(result.out.find("b300       B300 288 GB         288 GB   -         Blackwell  ") !=
        std::string::npos);
  CHECK(count_lines(result.out) == 1 + static_cast<int>(device_catalog().size()));
  CHECK(run({"--help"}).out.find("--list-devices") != std::string::npos);
}

TEST_CASE("cli: --list-models lists every preset with its parameter count") {
  const CliRun result = run({"--list-models"});
  CHECK(result.status == 0);
  CHECK(result.out.find("llama3-8b") != std::string::npos);
  CHECK(result.out.find("70.55 B") != std::string::npos);
  CHECK(result.out.find("405.85 B") != std::string::npos);
  for (const ModelShape& shape : preset_models()) {
    CAPTURE(shape.id);
    CHECK(result.out.find(shape.id + " ") != std::string::npos);
    CHECK(result.out.find(shape.source) != std::string::npos);
  }
  // Each line: id, name, count and source, columns apart, so that no name runs into its count
  // ("DeepSeek-V3 671B671.03 B" once did); a heading line before each family.
  const std::string mixtral = result.out.substr(result.out.find("  mixtral-8x7b "));
  const std::string line = mixtral.substr(0, mixtral.find('\n'));
  CHECK(line.find("Mixtral 8x7B  ") != std::string::npos);
  CHECK(line.find("  46.70 B") != std::string::npos);
  CHECK(line.find("mistralai/Mixtral-8x7B-v0.1 config.json") != std::string::npos);
  CHECK(result.out.find("DeepSeek-V3 / R1 671B  ") != std::string::npos);
  CHECK(result.out.find("\nDeepSeek and Kimi\n") != std::string::npos);
  std::set<std::string> families;
  for (const ModelShape& shape : preset_models()) families.insert(shape.family);
  CHECK(count_lines(result.out) == 1 + static_cast<int>(families.size() + preset_models().size()));
}

TEST_CASE("cli: --help describes the flags and exits 0") {
  const CliRun result = run({"--help"});
  CHECK(result.status == 0);
  CHECK(result.out.find("--no-flash-attention") != std::string::npos);
  CHECK(result.out.find("--tokens") != std::string::npos);
}

TEST_CASE("cli: an unknown model exits 2 naming --model and the allowed ids") {
  check_bad_input({"--model", "llama3-7b"},
                  "trainmem: --model: 'llama3-7b' is not allowed. Model 'llama3-7b' is not known; "
                  "choose one of " +
                      preset_ids_joined() + ".\n");
}

TEST_CASE("cli: tokens that are not a positive whole multiple of 8,192 exit 2") {
  const std::string allowed =
      "Tokens per micro-batch must be a whole multiple of 8,192 (one sequence), from 8,192 to "
      "536,870,912.\n";
  check_bad_input({"--tokens", "1000"}, "trainmem: --tokens: '1000' is not allowed. " + allowed);
  check_bad_input({"--tokens", "0"}, "trainmem: --tokens: '0' is not allowed. " + allowed);
  check_bad_input({"--tokens", "-8192"}, "trainmem: --tokens: '-8192' is not allowed. " + allowed);
  check_bad_input({"--tokens", "abc"}, "trainmem: --tokens: 'abc' is not allowed. " + allowed);
  check_bad_input({"--tokens", "8192x"}, "trainmem: --tokens: '8192x' is not allowed. " + allowed);
  check_bad_input({"--tokens", "1e400"}, "trainmem: --tokens: '1e400' is not allowed. " + allowed);
  check_bad_input({"--tokens", "99999999999999999999999"},
                  "trainmem: --tokens: '99999999999999999999999' is not allowed. " + allowed);
  check_bad_input({"--tokens", "nan"}, "trainmem: --tokens: 'nan' is not allowed. " + allowed);
  check_bad_input({"--tokens", ""}, "trainmem: --tokens: '' is not allowed. " + allowed);
}

TEST_CASE("cli: unknown flags and missing values exit 2 with one line") {
  const CliRun unknown = run({"--frobnicate"});
  CHECK(unknown.status == 2);
  CHECK(unknown.out.empty());
  CHECK(count_lines(unknown.err) == 1);
  CHECK(unknown.err.find("--frobnicate") != std::string::npos);

  const CliRun missing = run({"--tokens"});
  CHECK(missing.status == 2);
  CHECK(count_lines(missing.err) == 1);
  CHECK(missing.err.find("--tokens") != std::string::npos);
}

TEST_CASE("cli: a layout prints the most loaded device's bytes in the JSON") {
  const CliRun result = run({"--dp", "8", "--zero", "3", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["layout"]["dp"] == 8);
  CHECK(json["layout"]["zero"] == 3);
  CHECK(json["devices"] == 8);
  CHECK(json["fits"] == true);
  CHECK(json["bytes"]["weights"] == 2 * 8030261248 / 8);
  CHECK(json["bytes"]["optimizerStates"] == 8 * 8030261248 / 8);
}

TEST_CASE("cli: sequence length, micro-batch, device and recipe flags reach the core") {
  const CliRun result = run({"--seq-len",
                             "4096",
                             "--micro-batch",
                             "2",
                             "--device-gb",
                             "40",
                             "--optimizer",
                             "sgd-momentum",
                             "--precision",
                             "fp32",
                             "--recompute",
                             "full",
                             "--logits",
                             "--tp",
                             "8",
                             "--sequence-parallel",
                             "--pp",
                             "4",
                             "--vpp",
                             "2",
                             "--cp",
                             "2",
                             "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["sequenceLength"] == 4096);
  CHECK(json["tokensPerMicroBatch"] == 8192);
  CHECK(json["device"]["name"] == "Custom 40 GB");
  CHECK(json["device"]["capacityBytes"] == 40000000000);
  CHECK(json["optimizer"] == "sgd-momentum");
  CHECK(json["precision"] == "fp32");
  CHECK(json["recompute"] == "full");
  CHECK(json["logits"] == true);
  CHECK(json["bytesPerParameter"]["total"] == 12);
  CHECK(json["layout"]["vpp"] == 2);
  CHECK(json["devices"] == 64);

  const CliRun tokens = run({"--seq-len", "4096", "--tokens", "16384", "--json"});
  REQUIRE(tokens.status == kExitDoesNotFit);
  CHECK(nlohmann::json::parse(tokens.out)["tokensPerMicroBatch"] == 16384);
}

TEST_CASE("cli: layouts that make no sense exit 2 naming the flag") {
  check_bad_input({"--tp", "3"},
                  "trainmem: --tp: '3' is not allowed. Tensor parallelism 3 must divide the 32 "
                  "attention heads, 8 key/value heads and 14,336 FFN width of Llama 3 8B.\n");
  check_bad_input({"--zero", "1"},
                  "trainmem: --zero: '1' is not allowed. ZeRO shards the model states over "
                  "data-parallel replicas; a ZeRO stage above 0 needs data or context parallelism "
                  "above 1.\n");
  check_bad_input({"--sequence-parallel"},
                  "trainmem: --sequence-parallel: Sequence parallelism splits what tensor "
                  "parallelism leaves whole; it needs tensor parallelism above 1.\n");
  check_bad_input({"--dp", "abc"},
                  "trainmem: --dp: 'abc' is not allowed. Data parallelism must be a whole number "
                  "from 1 to 65,536.\n");
  check_bad_input({"--pp", "99999999999"},
                  "trainmem: --pp: '99999999999' is not allowed. Pipeline parallelism must be a "
                  "whole number from 1 to 65,536.\n");
  check_bad_input({"--recompute", "sometimes"},
                  "trainmem: --recompute: 'sometimes' is not allowed. Recomputation 'sometimes' is "
                  "not known; choose one of none, selective, full, selective-op.\n");
  check_bad_input({"--device-gb", "1e999"},
                  "trainmem: --device-gb: '1e999' is not allowed. A custom device's memory must be "
                  "more than 0 GB and at most 100,000 GB.\n");
  check_bad_input({"--tokens", "8192", "--micro-batch", "2"},
                  "trainmem: --tokens: give either --micro-batch or --tokens, not both\n");
  check_bad_input({"--device", "h200", "--device-gb", "100"},
                  "trainmem: --device-gb: give either --device or --device-gb, not both\n");
  check_bad_input(
      {"--fit", "--tp", "2"},
      "trainmem: --tp: --fit searches the layouts and recomputation itself; drop --tp\n");
}

TEST_CASE("cli: --fit lists the fewest devices that fit, and why fewer cannot") {
  const CliRun table = run({"--fit"});
  REQUIRE(table.status == 0);
  CHECK(table.out.find("Llama 3 8B at 8,192 tokens per micro-batch fits on 2 × H100 80 GB at the "
                       "fewest.") != std::string::npos);
  CHECK(table.out.find("With fewer than 2 devices nothing fits") != std::string::npos);

  const CliRun json_run = run({"--fit", "--json", "--model", "llama3-70b"});
  REQUIRE(json_run.status == 0);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  CHECK(json["model"] == "llama3-70b");
  CHECK(json["modelName"] == "Llama 3 70B");
  REQUIRE(json["layouts"].is_array());
  REQUIRE_FALSE(json["layouts"].empty());
  for (const nlohmann::json& layout : json["layouts"]) {
    CHECK(layout["devices"] == json["fewestDevices"]);
    CHECK(layout["fits"] == true);
    CHECK(layout["outweighing"].is_null());  // no stack: no stack's term outweighs the states
  }
}

TEST_CASE("cli: --config reads a Hugging Face config.json and estimates it as model 'custom'") {
  const TempFile config("mixtral.json", kMixtralConfig);
  const CliRun result = run({"--config", config.path(), "--json"});
  REQUIRE(result.status == kExitDoesNotFit);
  CHECK(result.err.empty());
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["model"] == "custom");
  CHECK(json["modelName"] == "MixtralForCausalLM");
  CHECK(json["parameters"] == 46702792704.0);
  // Top-2 of 8 experts without dropout, as MixtralConfig's attention_dropout default of 0.0 sets
  // (Mixtral's block has no residual dropout): 32 + 18 bytes per token per hidden unit in each of
  // 32 layers, section 4.1's 34 + 19 less the 1-byte masks; the note says so.
  CHECK(json["bytes"]["activations"] == 50 * 8192.0 * 4096 * 32);
  REQUIRE(json["notes"].size() == 1);
  CHECK(json["notes"][0] ==
        "Dropout as the config sets it: attention_dropout absent (0 by default); the block has no "
        "residual dropout.");
  // --dropout on puts the masks back: Korthikanti's published 34 + 19.
  const nlohmann::json on =
      nlohmann::json::parse(run({"--config", config.path(), "--dropout", "on", "--json"}).out);
  CHECK(on["bytes"]["activations"] == 53 * 8192.0 * 4096 * 32);
  CHECK(on["notes"].empty());

  const CliRun table = run({"--config", config.path()});
  REQUIRE(table.status == kExitDoesNotFit);
  CHECK(table.out.rfind("MixtralForCausalLM: 46.70 B parameters, 8,192 tokens per micro-batch",
                        0) == 0);
}

TEST_CASE("cli: --config works with layouts and --fit, and layouts are checked against it") {
  const TempFile config("mixtral-fit.json", kMixtralConfig);
  const CliRun fit = run({"--config", config.path(), "--fit", "--json", "--device", "h200"});
  REQUIRE(fit.status == 0);
  const nlohmann::json json = nlohmann::json::parse(fit.out);
  CHECK(json["model"] == "custom");
  CHECK(json["modelName"] == "MixtralForCausalLM");
  REQUIRE_FALSE(json["layouts"].empty());
  CHECK(json["layouts"][0]["modelName"] == "MixtralForCausalLM");

  check_bad_input(
      {"--config", config.path(), "--tp", "16"},
      "trainmem: --tp: '16' is not allowed. Tensor parallelism 16 must divide the 32 "
      "attention heads, 8 key/value heads and 14,336 FFN width of MixtralForCausalLM.\n");
}

TEST_CASE(
    "cli: a multimodal config counts its vision tower, and --text-tower its language model alone") {
  const TempFile config("gemma3.json", hub_config("gemma3-4b"));
  const CliRun whole = run({"--config", config.path(), "--json"});
  REQUIRE(whole.status == kExitDoesNotFit);
  CHECK(nlohmann::json::parse(whole.out)["parameters"] == 4300079472.0);
  const CliRun tower = run({"--config", config.path(), "--text-tower", "--json"});
  REQUIRE(tower.status == kExitDoesNotFit);
  const nlohmann::json json = nlohmann::json::parse(tower.out);
  CHECK(json["modelName"] == "google/gemma-3-4b-pt (text tower)");
  CHECK(json["parameters"] == 3880263168.0);
  check_bad_input({"--model", "gemma3-4b", "--text-tower"},
                  "trainmem: --text-tower: give it with --config, a multimodal config.json\n");
}

TEST_CASE("cli: GPT-2 at the plate's 8,192 tokens exits 2 naming its 1,024 learned positions") {
  check_bad_input(
      {"--model", "gpt2"},
      "trainmem: --seq-len: GPT-2 124M has 1,024 learned positions: a sequence of 8,192 "
      "tokens is past them; its sequence length can be at most 1,024 tokens.\n");
}

TEST_CASE("cli: --mtp trains DeepSeek-V3's MTP module, and is refused for a model without one") {
  const CliRun with = run({"--model", "deepseek-v3", "--mtp", "--json"});
  REQUIRE(with.status == kExitDoesNotFit);
  CHECK(nlohmann::json::parse(with.out)["parameters"] == 671026419200.0 + 11610068224.0);
  check_bad_input({"--mtp"},
                  "trainmem: --mtp: Llama 3 8B has no multi-token-prediction "
                  "modules (num_nextn_predict_layers 0): untick multi-token prediction.\n");
}

TEST_CASE("cli: --config and --model together exit 2") {
  const TempFile config("both.json", kMixtralConfig);
  check_bad_input({"--model", "llama3-8b", "--config", config.path()},
                  "trainmem: --config: give either --model or --config, not both\n");
}

TEST_CASE("cli: a config.json that cannot be used exits 2 with the parser's one line") {
  const TempFile not_json("not-json.json", "{\"hidden_size\": 4096,");
  check_bad_input({"--config", not_json.path()},
                  "trainmem: --config: config.json: the text is not valid JSON (line 1, column "
                  "22).\n");
  const TempFile string_size("string-size.json", R"({"hidden_size": "4096"})");
  check_bad_input({"--config", string_size.path()},
                  "trainmem: --config: config.json: 'hidden_size' must be a whole number from 1 "
                  "to 1,048,576; it is \"4096\".\n");
  const TempFile odd_heads("odd-heads.json", R"({"hidden_size": 4000, "num_hidden_layers": 2,
      "num_attention_heads": 24, "intermediate_size": 8, "vocab_size": 8})");
  check_bad_input({"--config", odd_heads.path()},
                  "trainmem: --config: config.json: num_attention_heads (24) must divide "
                  "hidden_size (4,000) when head_dim is not given.\n");
}

TEST_CASE("cli: --config refuses missing, unreadable and oversized files before parsing") {
  const std::string missing =
      (std::filesystem::temp_directory_path() / "trainmem-cli-test-absent.json").string();
  check_bad_input({"--config", missing},
                  "trainmem: --config: cannot read '" + missing + "': not a readable file\n");
  const std::string folder = std::filesystem::temp_directory_path().string();
  check_bad_input({"--config", folder},
                  "trainmem: --config: cannot read '" + folder + "': not a readable file\n");
  const TempFile big("big.json", std::string(2 * 1024 * 1024, ' '));
  check_bad_input({"--config", big.path()}, "trainmem: --config: '" + big.path() +
                                                "' is 2,097,152 bytes; at most 1,048,576 (1 MiB) "
                                                "are allowed\n");
  const TempFile limit("limit.json", std::string(kMaxConfigBytes, ' '));
  check_bad_input({"--config", limit.path()},
                  "trainmem: --config: config.json: the text is empty; it must be a JSON "
                  "object.\n");
}

TEST_CASE("cli: --savings ranks single changes, and --json gives each as an estimate") {
  const CliRun table = run({"--no-flash-attention", "--savings"});
  REQUIRE(table.status == 0);
  CHECK(table.out.find("Turn on FlashAttention") != std::string::npos);
  CHECK(table.out.find("343.6 GB saved") != std::string::npos);
  const CliRun json_run = run({"--savings", "--json"});
  REQUIRE(json_run.status == 0);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  REQUIRE_FALSE(json["savings"].empty());
  for (const nlohmann::json& saving : json["savings"]) {
    CHECK(saving["bytesSaved"] == json["baseline"]["bytes"]["total"].get<double>() -
                                      saving["estimate"]["bytes"]["total"].get<double>());
  }
}

TEST_CASE("cli: --fit-map prints the share of the device over sequence length and micro-batch") {
  const CliRun table = run({"--dp", "8", "--zero", "3", "--fit-map"});
  REQUIRE(table.status == 0);
  CHECK(table.out.find("Share of one H100 80 GB") != std::string::npos);
  CHECK(table.out.find("131,072") != std::string::npos);
  const CliRun json_run = run({"--fit-map", "--json"});
  REQUIRE(json_run.status == 0);
  CHECK(nlohmann::json::parse(json_run.out)["cells"].size() == 8 * 5);
}

TEST_CASE("cli: --timeline prints memory through one step, its peak the estimate's total") {
  const CliRun table = run({"--recompute", "full", "--timeline"});
  REQUIRE(table.status == 0);
  CHECK(table.out.find("recompute") != std::string::npos);
  CHECK(table.out.find("<- peak") != std::string::npos);
  const CliRun json_run = run({"--timeline", "--json"});
  REQUIRE(json_run.status == 0);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  REQUIRE(json.is_array());
  double peak = 0;
  for (const nlohmann::json& point : json) peak = std::max(peak, point["bytes"].get<double>());
  CHECK(peak == 164991401984.0);
  CHECK(json.front()["phase"] == "start");
}

TEST_CASE("cli: --explain prints each term's arithmetic and its source, and --json the same list") {
  const CliRun table = run({"--explain"});
  REQUIRE(table.status == 0);
  CHECK(table.out.find("Weights\n  2 B × 8,030,261,248 parameters = 16.1 GB\n  source: ") !=
        std::string::npos);
  CHECK(table.out.find("32 layers × 8,192 tokens × 4,096 h × (34 + 0 (FlashAttention: no scores)) "
                       "B = 36.5 GB") != std::string::npos);
  const CliRun json_run = run({"--explain", "--json", "--logits"});
  REQUIRE(json_run.status == 0);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  REQUIRE(json.is_array());
  REQUIRE(json.size() == 6);
  CHECK(json[5]["term"] == "logits");
  CHECK(json[5]["formula"] == "6 B × 8,192 tokens × 128,256 vocabulary = 6.3 GB");
  CHECK(!json[5]["source"].get<std::string>().empty());
  CHECK(run({"--explain", "--tp", "3"}).status == 2);
}

TEST_CASE("cli: the docs' worked example is the core's own arithmetic") {
  std::ifstream file(std::string(TRAINMEM_SOURCE_DIR) + "/docs/formulas.md");
  REQUIRE(file);
  std::stringstream docs;
  docs << file.rdbuf();
  const nlohmann::json plate = nlohmann::json::parse(run({"--explain", "--json"}).out);
  const nlohmann::json scores =
      nlohmann::json::parse(run({"--explain", "--json", "--no-flash-attention", "--logits"}).out);
  std::vector<nlohmann::json> shown(plate.begin(), plate.end());
  shown.push_back(scores[4]);
  shown.push_back(scores[5]);
  for (const nlohmann::json& term : shown) {
    const std::string label = term["label"];
    const std::string line =
        label + std::string(19 - label.size(), ' ') + term["formula"].get<std::string>();
    CAPTURE(line);
    CHECK(docs.str().find("\n" + line + "\n") != std::string::npos);
  }
}

TEST_CASE("cli: the JSON's terms are the table's, on the device and on the host") {
  const CliRun result = run({"--lora-rank", "16", "--offload", "optimizer", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(result.out);
  std::vector<std::string> device;
  std::vector<std::string> host;
  for (const TermRow& row : kTerms) {
    if (row.on_device) device.push_back(row.id);
    if (row.on_host) host.push_back(row.id);
  }
  device.push_back("total");
  host.push_back("total");
  std::vector<std::string> device_keys;
  for (const auto& [key, value] : json["bytes"].items()) device_keys.push_back(key);
  std::vector<std::string> host_keys;
  for (const auto& [key, value] : json["host"].items()) host_keys.push_back(key);
  CHECK(device_keys == device);
  CHECK(host_keys == host);
  CHECK(json["host"]["fp32Gradients"].get<double>() > 0);
  CHECK(json["hostBytes"] == json["host"]["total"]);
}

TEST_CASE("cli: --activations llama-block counts the Llama block's saved tensors") {
  const CliRun result = run({"--activations", "llama-block", "--json"});
  REQUIRE(result.status == kExitDoesNotFit);
  const auto json = nlohmann::json::parse(result.out);
  CHECK(json.at("activationModel") == "llama-block");
  CHECK(json.at("bytes").at("activations").get<double>() == 32.0 * 8192 * 139400);
  const CliRun table = run({"--activations", "llama-block"});
  CHECK(table.out.find("Activations (Llama block, tensor by tensor)") != std::string::npos);
  CHECK(table.out.find("36.5 GB") != std::string::npos);
}

TEST_CASE("cli: an unknown --activations exits 2 with one line naming the flag and the choices") {
  const CliRun result = run({"--activations", "gpt"});
  CHECK(result.status == kExitBadInput);
  CHECK(result.out.empty());
  CHECK(count_lines(result.err) == 1);
  CHECK(result.err.rfind("trainmem: --activations: 'gpt' is not allowed.", 0) == 0);
  CHECK(result.err.find("korthikanti, llama-block") != std::string::npos);
}

TEST_CASE("cli: --saved-tensors lists one layer's tensors and their sum per token") {
  const CliRun result = run({"--saved-tensors"});
  REQUIRE(result.status == kExitOk);
  for (const char* name : {"Attention norm's 1/RMS", "Softmax log-sum-exp", "Activation × up"}) {
    CHECK_MESSAGE(result.out.find(name) != std::string::npos, name);
  }
  CHECK(result.out.find("139400  = 34.03 × h") != std::string::npos);
  CHECK(run({"--saved-tensors", "--json"}).status == kExitBadInput);
}

TEST_CASE("cli: --compare-measured sets every measured case against both activation models") {
  const CliRun result = run({"--compare-measured"});
  REQUIRE(result.status == kExitOk);
  CHECK(result.out.find(
            "Tiny Llama, 4 layers × 4 sequences of 128, saving what fused kernels save") !=
        std::string::npos);
  CHECK(result.out.find("Llama 3.1 8B, FSDP 8 × CP 1") != std::string::npos);
  CHECK(result.out.find("83.9 GiB") != std::string::npos);
  CHECK(result.out.find("+39.3%") != std::string::npos);
  CHECK(result.out.find("CUDA context") != std::string::npos);
  // SimuMax's own estimate beside its run, and where trainmem stands against it.
  CHECK(result.out.find("  SimuMax v1.2         118.9 GiB  \u22122.0%  (its own estimate") !=
        std::string::npos);
  CHECK(result.out.find("Against another tool's estimates of the same runs") != std::string::npos);
  CHECK(result.out.find("  Reserved, 19 runs: trainmem's median error ") != std::string::npos);

  const CliRun json_run = run({"--compare-measured", "--json"});
  REQUIRE(json_run.status == kExitOk);
  const auto json = nlohmann::json::parse(json_run.out);
  REQUIRE(json.size() == measured_cases().size());
  for (const auto& item : json) {
    CHECK(item.contains("llamaBlockErrorPercent"));
    CHECK(item.contains("korthikantiErrorPercent"));
    CHECK(item.at("estimate").at("activationModel") == "llama-block");
    const bool simumax = item.at("id").get<std::string>().rfind("simumax-b200-", 0) == 0;
    CHECK(item.contains("otherEstimate") == simumax);
    if (simumax) CHECK(item.at("otherEstimate").at("name") == "SimuMax v1.2");
  }
}

TEST_CASE("cli: --compare-measured refuses settings of its own, naming the flag") {
  const CliRun result = run({"--compare-measured", "--tp", "2"});
  CHECK(result.status == kExitBadInput);
  CHECK(count_lines(result.err) == 1);
  CHECK(result.err.find("--tp: --compare-measured uses each measured case's own settings") !=
        std::string::npos);
  CHECK(run({"--compare-measured", "--fit"}).status == kExitBadInput);
}

TEST_CASE("cli: --loss fp32-upcast counts 12 bytes per logit, an unknown loss exits 2") {
  const CliRun result = run({"--logits", "--loss", "fp32-upcast", "--json"});
  REQUIRE(result.status == kExitDoesNotFit);
  const auto json = nlohmann::json::parse(result.out);
  CHECK(json.at("loss") == "fp32-upcast");
  CHECK(json.at("bytes").at("logits").get<double>() == 12.0 * 8192 * 128256);
  const CliRun bad = run({"--logits", "--loss", "focal"});
  CHECK(bad.status == kExitBadInput);
  CHECK(count_lines(bad.err) == 1);
  CHECK(bad.err.rfind("trainmem: --loss: 'focal' is not allowed.", 0) == 0);
  const CliRun alone = run({"--loss", "fp32-upcast"});
  CHECK(alone.status == kExitBadInput);
  CHECK(alone.err ==
        "trainmem: --loss: the loss is counted with the logits; add --logits or drop --loss\n");
}

TEST_CASE(
    "cli: --fit lists the layout a practitioner would run first, each with its cost and why") {
  const CliRun result = run({"--fit", "--model", "llama3-70b"});
  REQUIRE(result.status == kExitOk);
  const std::size_t first = result.out.find("  d 1 (ZeRO-3 over d·c = 2) × t 8 (SP) × p 1 × c 2");
  const std::size_t long_context = result.out.find("× c 16 = 16 devices");
  CHECK(first != std::string::npos);
  CHECK(first < long_context);
  CHECK(result.out.find(
            "cost 55: t 8 within one 8-device node: its all-reduces stay on NVLink (+9)") !=
        std::string::npos);
  CHECK(result.out.find("fewer than 4,096: too little to hide the ring's exchange (+112)") !=
        std::string::npos);
  const auto json = nlohmann::json::parse(run({"--fit", "--json"}).out);
  CHECK(json["layouts"][0].contains("cost"));
  CHECK(json["layouts"][0]["costReason"].get<std::string>().find("full recomputation") !=
        std::string::npos);
}

TEST_CASE("cli: the worth near one device has the digits that decide it, and the headroom shows") {
  const CliRun near = run({"--device-gb", "160", "--headroom", "0"});
  REQUIRE(near.status == kExitDoesNotFit);
  CHECK(near.out.find("1.03 devices' worth: the total over one Custom 160 GB") !=
        std::string::npos);
  CHECK(near.out.find("; it does not fit\n") != std::string::npos);
  const CliRun kept = run({"--dp", "8", "--zero", "3", "--device-gb", "55"});
  CHECK(kept.out.find("0.96 devices' worth") != std::string::npos);  // under one, yet over 90%
  CHECK(kept.out.find("it does not fit with 10% of it kept free (49.5 GB usable)") !=
        std::string::npos);
  check_bad_input({"--headroom", "95"},
                  "trainmem: --headroom: '95' is not allowed. Headroom must be a percentage from 0 "
                  "to 90.\n");
}

TEST_CASE("cli: --lora-rank and --lora-targets print the trainable parameters as an integer") {
  const CliRun result =
      run({"--model", "llama3-8b", "--lora-rank", "16", "--lora-targets", "all-linear", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["trainableParameters"].is_number_integer());
  CHECK(json["trainableParameters"] == 41943040);
  CHECK(json["loraRank"] == 16);
  CHECK(json["loraTargets"] == "all-linear");
  CHECK(json["bytes"]["gradients"] == 2 * 41943040.0);
  // Without LoRA every parameter trains.
  const nlohmann::json plate = nlohmann::json::parse(run({"--json"}).out);
  CHECK(plate["trainableParameters"] == 8030261248);
  CHECK(plate["hostBytes"] == 0);
}

TEST_CASE("cli: --base-weights nf4 holds the frozen base in NF4 and counts the dequantised layer") {
  const CliRun result = run({"--lora-rank", "16", "--base-weights", "nf4", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["baseLinearBytesPerParameter"] == 0.515869140625);
  CHECK(json["bytes"]["dequantization"] == 2 * 4096 * 14336);
  const CliRun text = run({"--lora-rank", "16", "--base-weights", "nf4"});
  CHECK(text.out.find("Dequantised layer (BF16)") != std::string::npos);
  // r·(h + q) + 2·r·(h + kv) + r·(q + h) = 16 · 26,624 = 425,984 per layer, 32 layers.
  CHECK(text.out.find("13,631,488 trainable parameters") != std::string::npos);
}

TEST_CASE("cli: --offload prints hostBytes as an integer and the host's terms in the table") {
  const CliRun result = run({"--offload", "optimizer", "--offload-activations", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["hostBytes"].is_number_integer());
  CHECK(json["hostBytes"] == json["host"]["total"]);
  CHECK(json["host"]["masterWeights"] == 4 * 8030261248.0);
  CHECK(json["host"]["fp32Gradients"] == 4 * 8030261248.0);
  CHECK(json["bytes"]["masterWeights"] == 0);
  const CliRun text = run({"--offload", "optimizer"});
  CHECK(text.out.find("Held in the host's memory instead") != std::string::npos);
  CHECK(text.out.find("FP32 gradients (the host's own copy)") != std::string::npos);
}

TEST_CASE("cli: fine-tuning flags out of bounds or unknown exit 2 with one line naming them") {
  const CliRun targets = run({"--lora-rank", "8", "--lora-targets", "everything"});
  CHECK(targets.status == 2);
  CHECK(targets.err ==
        "trainmem: --lora-targets: 'everything' is not allowed. LoRA targets 'everything' is not "
        "known; choose one of attention, all-linear.\n");
  const CliRun rank = run({"--lora-rank", "-1"});
  CHECK(rank.status == 2);
  CHECK(count_lines(rank.err) == 1);
  CHECK(rank.err.find("--lora-rank") != std::string::npos);
  const CliRun base = run({"--base-weights", "int8"});
  CHECK(base.status == 2);
  CHECK(base.err.find("--base-weights") != std::string::npos);
  CHECK(base.err.find("need LoRA") != std::string::npos);
  const CliRun offload = run({"--offload", "disk"});
  CHECK(offload.status == 2);
  CHECK(offload.err.find("optimizer-and-weights") != std::string::npos);
}

TEST_CASE("cli: a flag that brings its choice never overrides that choice given otherwise") {
  const CliRun chunks = run({"--loss-chunks", "4", "--logits", "--loss", "vocab-parallel"});
  CHECK(chunks.status == kExitBadInput);
  CHECK(chunks.out.empty());
  CHECK(chunks.err ==
        "trainmem: --loss-chunks: the chunks are the chunked losses'; it needs --loss chunked or "
        "chunked-wrapper, not vocab-parallel\n");
  const CliRun overlap = run({"--overlap-comm", "on", "--stack", "torchtitan", "--dp", "2"});
  CHECK(overlap.status == kExitBadInput);
  CHECK(count_lines(overlap.err) == 1);
  // Given alone, it brings its choice.
  CHECK(run({"--loss-chunks", "4", "--logits"}).status == kExitDoesNotFit);
}

TEST_CASE("cli: --compile runs under torchtitan or torchtune, and names both under another stack") {
  const CliRun torchtune = run({"--model", "llama3.2-1b", "--stack", "torchtune", "--precision",
                                "bf16", "--recompute", "full", "--compile", "blocks"});
  CHECK(torchtune.status == 0);
  const CliRun other = run({"--stack", "deepspeed", "--compile", "blocks"});
  CHECK(other.status == 2);
  CHECK(other.err.find("it needs --stack torchtitan or torchtune, not deepspeed") !=
        std::string::npos);
  CHECK(count_lines(other.err) == 1);
}

TEST_CASE("cli: a run set up by flags alone ends with its verdict, and exits 0, 1 or 3 for it") {
  // The plate's 405B on one H100: 88 of them, and a script gating on the exit status stops.
  const CliRun huge = run({"--model", "llama3-405b"});
  CHECK(huge.status == kExitDoesNotFit);
  CHECK(huge.out.find("\nVerdict: Does not fit.") != std::string::npos);
  // Llama 3.2 1B at 1,024 tokens: 20 GB of states and a little more, on an 80 GB device.
  const CliRun small = run({"--model", "llama3.2-1b", "--seq-len", "1024"});
  CHECK(small.status == kExitOk);
  CHECK(small.out.find("\nVerdict: Fits.") != std::string::npos);
  // Within the band of torchtitan's published runs (−26.5% to +6.9%), 8B under FSDP over 8 on
  // 30 GB devices may or may not fit: 1.
  const CliRun band = run({"--stack", "torchtitan", "--model", "llama3.1-8b", "--dp", "8", "--zero",
                           "3", "--recompute", "full", "--device-gb", "30"});
  CHECK(band.status == kExitUncertain);
  CHECK(band.out.find("\nVerdict: Uncertain. Within the estimate's error") != std::string::npos);
  // The JSON carries it.
  const CliRun json_run = run({"--model", "llama3.2-1b", "--seq-len", "1024", "--json"});
  CHECK(json_run.status == kExitOk);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  CHECK(json["verdict"]["verdict"] == "fits");
  CHECK(json["verdict"]["withheldFor"] == nlohmann::json::array());
  CHECK(json["bytes"]["total"] == json["verdict"]["likelyLowBytes"]);
}

TEST_CASE("cli: a launch config's key not understood withholds the verdict and is named") {
  // The 8B example fits on 8 H100s; a key the reader does not know may change that, so no verdict.
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) +
                   "/docs/examples/torchtitan-llama3-8b-fsdp.toml");
  std::stringstream text;
  text << in.rdbuf();
  const TempFile file("unknown-key.toml",
                      text.str() + "\n[memory_tricks]\nkeep_everything_twice = true\n");
  const CliRun plain = run({"--launch", file.path(), "--world-size", "8"});
  CHECK(plain.status == kExitUncertain);
  CHECK(plain.out.find("\nVerdict: Uncertain. Cannot tell: the launch config sets "
                       "memory_tricks.keep_everything_twice, which is not understood") !=
        std::string::npos);
  const CliRun json = run({"--launch", file.path(), "--world-size", "8", "--json"});
  CHECK(json.status == kExitUncertain);
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  CHECK(parsed["verdict"]["verdict"] == "uncertain");
  CHECK(parsed["verdict"]["withheldFor"] ==
        nlohmann::json::array({"memory_tricks.keep_everything_twice"}));
  // Without the key, the verdict stands.
  const TempFile known("known-keys.toml", text.str());
  CHECK(run({"--launch", known.path(), "--world-size", "8"}).status == kExitOk);
}

TEST_CASE("cli: a stack brings its own loss and precision where no flag chose them, and says so") {
  // QLoRA under the hf stack with the logits: transformers' loss and the model loaded in BF16,
  // where the workshop's defaults (Megatron-LM's loss, bf16-mixed) would be refused twice.
  const CliRun qlora = run({"--stack", "hf", "--lora-rank", "16", "--base-weights", "nf4",
                            "--logits", "--model", "llama3-8b", "--seq-len", "1024"});
  CHECK(qlora.status != kExitBadInput);
  CHECK(qlora.out.rfind("The Hugging Face (Trainer + PEFT) stack brings, where no flag "
                        "chose: --loss fp32-upcast, --precision bf16 (give the flag to choose "
                        "otherwise).\n",
                        0) == 0);
  const CliRun json =
      run({"--stack", "torchtune", "--model", "llama3.2-1b", "--seq-len", "1024", "--json"});
  CHECK(json.status != kExitBadInput);
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  CHECK(parsed["brought"] ==
        nlohmann::json::array(
            {{{"flag", "--precision"}, {"value", "bf16"}, {"by", "The torchtune stack"}}}));
  // A choice the reader made is never changed: the stack refuses it, naming it.
  const CliRun chosen = run({"--stack", "hf", "--lora-rank", "16", "--precision", "bf16-mixed"});
  CHECK(chosen.status == kExitBadInput);
  CHECK(chosen.err.rfind("trainmem: --precision: ", 0) == 0);
  // Nor one a flag brought with it: --loss-chunks chooses the chunked loss, which Megatron-LM
  // refuses under tensor parallelism, named.
  const CliRun chunks = run({"--stack", "megatron", "--tp", "2", "--sequence-parallel", "--dp", "4",
                             "--zero", "1", "--logits", "--loss-chunks", "8"});
  CHECK(chunks.status == kExitBadInput);
  CHECK(chunks.err.rfind("trainmem: --loss: ", 0) == 0);
  // The ideal stack brings nothing.
  CHECK(run({"--model", "llama3.2-1b", "--seq-len", "1024"}).out.rfind("Llama 3.2 1B", 0) == 0);
}

TEST_CASE("cli: what verl and SGLang bring is said as theirs, not the stack's") {
  // SGLang under the hf stack: verl, the engine's one trainer, comes with it, and with verl its own
  // loss and rollout defaults; none of them is the Hugging Face stack's.
  const CliRun run_sglang = run({"--stack", "hf", "--model", "qwen3-8b", "--dp", "8", "--zero", "3",
                                 "--rollout", "sglang", "--logits", "--seq-len", "2048"});
  CHECK(run_sglang.status != kExitBadInput);
  CHECK(run_sglang.out.rfind(
            "SGLang (modelled under verl alone here) brings, where no flag chose: --rl-trainer "
            "verl (give the flag to choose otherwise). verl (1dda039b) brings, where no flag "
            "chose: --loss grpo, --rollout-memory-utilization 0.5, --rollout-sleep-mode on, "
            "--rollout-prefix-caching on, --expandable-segments on, --rollout-tensor-parallel 2 "
            "(give the flag to choose otherwise).\n",
            0) == 0);
  CHECK(run_sglang.out.find("stack brings") == std::string::npos);
  // TRL's GRPOTrainer brings GRPO's loss under vLLM; the JSON names who brought each.
  const CliRun json = run({"--stack", "hf", "--model", "qwen3-8b", "--rollout", "vllm", "--logits",
                           "--seq-len", "2048", "--json"});
  CHECK(json.status != kExitBadInput);
  CHECK(nlohmann::json::parse(json.out)["brought"] ==
        nlohmann::json::array(
            {{{"flag", "--loss"}, {"value", "grpo"}, {"by", "TRL's GRPOTrainer"}}}));
  // Under vLLM with verl chosen, the loss is verl's, with its defaults.
  const nlohmann::json verl = nlohmann::json::parse(
      run({"--stack", "hf", "--model", "qwen3-8b", "--rollout", "vllm", "--rl-trainer", "verl",
           "--dp", "8", "--zero", "3", "--logits", "--seq-len", "2048", "--json"})
          .out)["brought"];
  REQUIRE(verl.size() == 6);
  CHECK(verl[0] ==
        nlohmann::json({{"flag", "--loss"}, {"value", "grpo"}, {"by", "verl (1dda039b)"}}));
  for (const nlohmann::json& each : verl) CHECK(each["by"] == "verl (1dda039b)");
}

TEST_CASE("cli: TRL's colocated vLLM refuses prefix caching chosen on for a hybrid, by its flag") {
  const CliRun refused = run({"--stack", "hf", "--model", "qwen3.5-27b", "--rollout", "vllm",
                              "--rollout-prefix-caching", "--lora-rank", "16"});
  CHECK(refused.status == kExitBadInput);
  CHECK(refused.err.rfind("trainmem: --rollout-prefix-caching: ", 0) == 0);
  CHECK(refused.err.find("TRL starts its colocated vLLM without enable_prefix_caching") !=
        std::string::npos);
}

TEST_CASE("cli: a choice a flag brings with it is said, in the table and in the JSON") {
  // --cp-comm-type is Megatron-LM's: given alone it brings --stack megatron, said above the table.
  const CliRun table = run({"--model", "qwen3-30b-a3b", "--cp-comm-type", "a2a"});
  CHECK(table.status != kExitBadInput);
  CHECK(table.out.rfind("--cp-comm-type brought --stack megatron, the choice it needs (give "
                        "--stack to choose otherwise).\n",
                        0) == 0);
  const CliRun json = run({"--model", "qwen3-30b-a3b", "--moe-dispatcher", "allgather", "--ep", "8",
                           "--dp", "8", "--json"});
  CHECK(json.status != kExitBadInput);
  CHECK(nlohmann::json::parse(json.out)["brought"] ==
        nlohmann::json::array(
            {{{"flag", "--stack"}, {"value", "megatron"}, {"by", "--moe-dispatcher"}}}));
  // Two flags, two choices, one sentence.
  CHECK(run({"--cp-comm-type", "a2a", "--device-gb", "96"})
            .out.rfind("--device-gb brought --device custom; --cp-comm-type brought --stack "
                       "megatron, the choices they need (give those flags to choose otherwise).\n",
                       0) == 0);
  // A choice the reader gave is not brought, and is not said.
  CHECK(run({"--stack", "megatron", "--cp-comm-type", "a2a"}).out.find("brought") ==
        std::string::npos);
}

}  // namespace cli_test
