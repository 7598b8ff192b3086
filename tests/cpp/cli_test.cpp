#include "cli.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

using namespace trainmem;

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
  CHECK(result.status == 0);
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
  CHECK(result.status == 0);
  CHECK(result.out.find("508.6 GB") != std::string::npos);
  CHECK(result.out.find("FlashAttention off") != std::string::npos);
}

TEST_CASE("cli: --json prints one object in the documented schema") {
  const CliRun result = run({"--model", "llama3-8b", "--tokens", "16384", "--json"});
  REQUIRE(result.status == 0);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["model"] == "llama3-8b");
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
  CHECK(json.size() == 8);
  CHECK(json["bytes"].size() == 6);
}

TEST_CASE("cli: --list-models lists every preset with its parameter count") {
  const CliRun result = run({"--list-models"});
  CHECK(result.status == 0);
  CHECK(result.out.find("llama3-8b") != std::string::npos);
  CHECK(result.out.find("70.55 B") != std::string::npos);
  CHECK(result.out.find("405.85 B") != std::string::npos);
}

TEST_CASE("cli: --help describes the flags and exits 0") {
  const CliRun result = run({"--help"});
  CHECK(result.status == 0);
  CHECK(result.out.find("--no-flash-attention") != std::string::npos);
  CHECK(result.out.find("--tokens") != std::string::npos);
}

TEST_CASE("cli: an unknown model exits 2 naming --model and the allowed ids") {
  check_bad_input({"--model", "llama3-7b"},
                  "trainmem: --model: 'llama3-7b' is not a known model; allowed: llama3-8b, "
                  "llama3-70b, llama3-405b\n");
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
