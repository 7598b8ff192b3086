#include "trainmem/measured.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "estimate/stage.hpp"
#include "text/figure.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

using namespace trainmem;

namespace measured_test {

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

TEST_CASE("measured: every harness case's setup and figure are those of its committed run") {
  int harness_cases = 0;
  for (const MeasuredCase& measured : measured_cases()) {
    if (measured.id.rfind("harness-", 0) != 0) continue;
    ++harness_cases;
    CAPTURE(measured.id);
    const std::string file = measured.source.substr(measured.source.rfind(' ') + 1);
    std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/" + file);
    REQUIRE_MESSAGE(in.good(), file);
    const nlohmann::json run = nlohmann::json::parse(in);
    const nlohmann::json& settings = run.at("settings");
    const ModelShape& shape = measured.setup.custom_model;
    CHECK(settings.at("seq") == measured.setup.sequence_length);
    CHECK(settings.at("shape").at("hidden") == shape.hidden_size);
    CHECK(settings.at("shape").at("ffn") == shape.ffn_hidden_size);
    CHECK(settings.at("shape").at("heads") == shape.num_attention_heads);
    CHECK(settings.at("shape").at("kv_heads") == shape.num_key_value_heads);
    CHECK(settings.at("shape").at("head_dim") == head_dim_of(shape));
    CHECK(settings.at("shape").at("vocab") == shape.vocab_size);
    CHECK(settings.at("tied_embeddings") == shape.tied_embeddings);
    // No FlashAttention: the scores are materialised and K, V repeated.
    CHECK_FALSE(measured.setup.flash_attention);
    CHECK(settings.at("attention") == "explicit");
    CHECK(settings.at("gqa") == "repeat");
    // The harness's default saves what the model counts; the reference code does not.
    const bool kernels = measured.id.find("-kernels-") != std::string::npos;
    const std::string norm = settings.at("recipe").at("rmsnorm");
    const std::string swiglu = settings.at("recipe").at("swiglu");
    CHECK(norm.rfind(kernels ? "fused" : "eager", 0) == 0);
    CHECK(swiglu.rfind(kernels ? "fused" : "eager", 0) == 0);
    CHECK(saved_in_layers(run, shape.num_layers, measured.setup.micro_batch_sequences) ==
          measured.measured_bytes);
  }
  CHECK(harness_cases == 2);
}

TEST_CASE("measured: ids are unique and every case's setup is accepted by the core") {
  std::set<std::string> ids;
  for (const MeasuredComparison& comparison : compare_measured()) {
    CHECK(ids.insert(comparison.measured.id).second);
    CHECK_MESSAGE(comparison.answer.status == Status::kOk, comparison.answer.message);
    CHECK(comparison.measured.measured_bytes > 0);
    CHECK_FALSE(comparison.measured.note.empty());
    CHECK(std::isfinite(comparison.korthikanti_error_percent));
    CHECK(std::isfinite(comparison.llama_block_error_percent));
  }
}

TEST_CASE("measured: the harness's saved tensors are the llama-block model's, to 8 bytes a layer") {
  const auto all = compare_measured();
  // 4 layers × 512 tokens × 3,400 B (the tiny shape without FlashAttention) = 6,963,200 B; the
  // harness saw 32 B more: the float64 scalar each layer's score scaling keeps.
  const MeasuredComparison& kernels = comparison_with_id(all, "harness-cpu-tiny-kernels-4x4");
  CHECK(kernels.llama_block_bytes == 4.0 * 512 * 3400);
  CHECK(kernels.measured.measured_bytes - kernels.llama_block_bytes == 4 * 8);
  CHECK(format_error_percent(kernels.llama_block_error_percent) == "\u00b10.0%");
  // Korthikanti's GPT block counts 34·h + 5·a·s = 4,736 B per token: 39% over.
  CHECK(kernels.korthikanti_bytes == 4.0 * 512 * (34 * 64 + 5 * 4 * 128));
  CHECK(format_error_percent(kernels.korthikanti_error_percent) == "+39.3%");
}

TEST_CASE(
    "measured: Llama's reference code, op by op, saves 8·h a norm and 2·f more (torch 1.13)") {
  const auto all = compare_measured();
  const MeasuredComparison& reference =
      comparison_with_id(all, "harness-cpu-tiny-reference-code-4x4");
  // Per token per layer: two norms × 8·64, and SiLU's output 2·224; and the 32 B of scalars.
  CHECK(reference.measured.measured_bytes - reference.llama_block_bytes ==
        4.0 * 512 * (2 * 8 * 64 + 2 * 224) + 32);
  CHECK(format_error_percent(reference.llama_block_error_percent) == "\u221230.2%");
}

TEST_CASE("measured: the loss's peak is the committed run's, against 12 bytes per logit") {
  const auto all = compare_measured();
  const MeasuredComparison& loss = comparison_with_id(all, "loss-peak-cpu-2048x32768");
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/loss-peak-cpu.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  const nlohmann::json& freed = run.at("cases").at(0);
  REQUIRE_FALSE(freed.at("bf16_logits_kept_through_backward").get<bool>());
  CHECK(freed.at("peak_bytes").get<double>() == loss.measured.measured_bytes);
  CHECK(freed.at("tokens") == loss.measured.setup.sequence_length);
  CHECK(freed.at("vocab") == loss.measured.setup.custom_model.vocab_size);
  CHECK(loss.measured.quantity == MeasuredQuantity::kLogits);
  CHECK(loss.llama_block_bytes == 12.0 * 2048 * 32768);
  CHECK(std::fabs(loss.llama_block_error_percent) < 0.01);
}

TEST_CASE("measured: GRPO's loss peaks are the committed runs', each within 0.5% of the replay") {
  const auto all = compare_measured();
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/grpo-loss-peak-cpu.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  int cases = 0;
  for (const nlohmann::json& measured : run.at("cases")) {
    const int sequences = measured.at("sequences").get<int>();
    const int completion = measured.at("completion_length").get<int>();
    const bool fp32 = measured.at("fp32_logits").get<bool>();
    const MeasuredComparison& grpo =
        comparison_with_id(all, "grpo-loss-peak-cpu-" + std::to_string(sequences) + "x" +
                                    std::to_string(completion) + (fp32 ? "" : "-bf16"));
    CAPTURE(grpo.measured.id);
    CHECK(measured.at("peak_bytes").get<double>() == grpo.measured.measured_bytes);
    CHECK(measured.at("vocab") == grpo.measured.setup.custom_model.vocab_size);
    CHECK(measured.at("sequence_length") == grpo.measured.setup.sequence_length);
    CHECK(grpo.measured.setup.micro_batch_sequences == sequences);
    CHECK(grpo.measured.setup.completion_length == completion);
    CHECK(grpo.measured.setup.no_autocast == !fp32);
    CHECK(grpo.measured.quantity == MeasuredQuantity::kLogits);
    // The CPU's pages and the loss's (B, C) tensors: within half a percent.
    CHECK(std::fabs(grpo.llama_block_error_percent) < 0.5);
    ++cases;
  }
  CHECK(cases == 4);
}

TEST_CASE("measured: DPO's loss peaks are the committed runs', each within 0.5% of the replay") {
  const auto all = compare_measured();
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/dpo-loss-peak-cpu.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  int cases = 0;
  for (const nlohmann::json& measured : run.at("cases")) {
    const int sequences = measured.at("sequences").get<int>();
    const int length = measured.at("sequence_length").get<int>();
    const bool fp32 = measured.at("fp32_logits").get<bool>();
    const MeasuredComparison& dpo =
        comparison_with_id(all, "dpo-loss-peak-cpu-" + std::to_string(sequences) + "x" +
                                    std::to_string(length) + (fp32 ? "" : "-bf16"));
    CAPTURE(dpo.measured.id);
    CHECK(measured.at("peak_bytes").get<double>() == dpo.measured.measured_bytes);
    CHECK(measured.at("vocab") == dpo.measured.setup.custom_model.vocab_size);
    CHECK(length == dpo.measured.setup.sequence_length);
    CHECK(dpo.measured.setup.micro_batch_sequences == sequences);
    CHECK(dpo.measured.setup.reference_model);
    CHECK(dpo.measured.setup.no_autocast == !fp32);
    CHECK(dpo.measured.quantity == MeasuredQuantity::kLogits);
    // The CPU's pages and the loss's per-token tensors: within half a percent.
    CHECK(std::fabs(dpo.llama_block_error_percent) < 0.5);
    ++cases;
  }
  CHECK(cases == 4);
}

namespace {

bool has_case(const std::vector<MeasuredComparison>& all, const std::string& id) {
  return std::any_of(all.begin(), all.end(), [&](const MeasuredComparison& comparison) {
    return comparison.measured.id == id;
  });
}

}  // namespace

TEST_CASE("measured: trainmem's H200 Trainer runs are the committed run's peaks") {
  const auto all = compare_measured();
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/peft-peak-h200.jsonl");
  REQUIRE(in.good());
  int rows = 0;
  int reserved_rows = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json run = nlohmann::json::parse(line);
    if (!run.contains("setup")) {
      CHECK(run.at("versions").at("transformers") == "5.17.0");
      continue;
    }
    const std::string id = "h200-trainer-mistral-7b-" + run.at("setup").get<std::string>() + "-" +
                           std::to_string(run.at("batch").get<int>()) + "x4096";
    const MeasuredComparison& measured = comparison_with_id(all, id);
    CHECK(measured.measured.measured_bytes == run.at("peak").get<double>());
    CHECK(measured.measured.setup.micro_batch_sequences == run.at("batch").get<int>());
    CHECK(std::fabs(measured.llama_block_error_percent) < measured.measured.goal_percent);
    ++rows;
    // The reserved peaks of the plain LoRA and QLoRA runs too, against the replayed allocator.
    if (!has_case(all, id + "-reserved")) continue;
    const MeasuredComparison& reserved = comparison_with_id(all, id + "-reserved");
    CHECK(reserved.measured.quantity == MeasuredQuantity::kReserved);
    CHECK(reserved.measured.measured_bytes == run.at("reserved_peak").get<double>());
    CHECK(std::fabs(reserved.llama_block_error_percent) < reserved.measured.goal_percent);
    ++reserved_rows;
  }
  CHECK(rows == 6);
  CHECK(reserved_rows == 4);
}

TEST_CASE("measured: a checkpointed layer keeps what the H200 runs kept a token, LoRA or QLoRA") {
  // tests/data/peft-layers-h200.jsonl: Mistral 7B's shape at 2 and 4 layers, one and two 4,096
  // token sequences; after the forward pass each layer keeps its input: 2·h bytes a token, 4·h
  // under prepare_model_for_kbit_training.
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/peft-layers-h200.jsonl");
  REQUIRE(in.good());
  std::map<std::string, double> kept;  // "setup/layers/batch": after_forward − base
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json run = nlohmann::json::parse(line);
    if (!run.contains("setup")) continue;
    kept[run.at("setup").get<std::string>() + "/" + std::to_string(run.at("layers").get<int>()) +
         "/" + std::to_string(run.at("batch").get<int>())] =
        run.at("after_forward").get<double>() - run.at("base").get<double>();
  }
  const auto measured_per_layer_token = [&](const std::string& setup) {
    return (kept.at(setup + "/4/1") - kept.at(setup + "/2/1")) / (2 * 4096);
  };
  const auto estimated_per_layer_token = [](bool qlora, bool prepared) {
    TrainingSetup setup;
    setup.stack = Stack::kHf;
    setup.model_id = "mistral-7b";
    setup.sequence_length = 4096;
    setup.micro_batch_sequences = 1;
    setup.precision = Precision::kBf16;
    setup.recompute = Recompute::kFull;
    setup.lora_rank = 16;
    if (qlora) setup.base_weights = BaseWeights::kNf4;
    setup.kbit_prep = prepared;
    const ModelShape shape = *find_preset("mistral-7b");
    const ActivationsPerLayer layer = layer_activations(shape, setup, 1, true, Pen(false));
    return layer.kept_per_token.value();
  };
  CHECK(measured_per_layer_token("lora") == 8192);
  CHECK(measured_per_layer_token("qlora") == 8192);
  CHECK(measured_per_layer_token("qlora-nonreentrant") == 8192);
  CHECK(measured_per_layer_token("qlora-kbit") == 16384);
  CHECK(estimated_per_layer_token(false, false) == measured_per_layer_token("lora"));
  CHECK(estimated_per_layer_token(true, false) == measured_per_layer_token("qlora"));
  CHECK(estimated_per_layer_token(true, true) == measured_per_layer_token("qlora-kbit"));
}

TEST_CASE(
    "measured: a rebuilt layer's MLP tensors are FP32 under prepare_model_for_kbit_training") {
  // tests/data/peft-saved-h200.jsonl (scripts/measure/peft_saved.py): what one Mistral-7B-shaped
  // layer saves for its backward pass, tensor by tensor, on an H200. QLoRA saves what LoRA saves;
  // prepared as TRL 0.13-0.21 prepares it, the gate's, SiLU's and up's outputs are FP32, 3·f·2
  // bytes a token more (PEFT's preparation alone adds RoPE's cos and sin in FP32, 2·d·2 more).
  std::ifstream in(std::string(TRAINMEM_SOURCE_DIR) + "/tests/data/peft-saved-h200.jsonl");
  REQUIRE(in.good());
  std::map<std::string, double> per_token;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json run = nlohmann::json::parse(line);
    per_token[run.at("setup").get<std::string>()] = run.at("layer_bytes_per_token").get<double>();
  }
  const double f = 14336;
  const double d = 128;
  CHECK(per_token.at("qlora") == per_token.at("lora"));
  CHECK(per_token.at("qlora-kbit-trl021") - per_token.at("qlora") == 3 * f * 2);
  CHECK(per_token.at("qlora-kbit") - per_token.at("qlora-kbit-trl021") == 2 * d * 2);
  const auto saved_per_token = [](bool prepared) {
    TrainingSetup setup;
    setup.stack = Stack::kHf;
    setup.model_id = "mistral-7b";
    setup.precision = Precision::kBf16;
    setup.recompute = Recompute::kFull;
    setup.lora_rank = 16;
    setup.base_weights = BaseWeights::kNf4;
    setup.kbit_prep = prepared;
    setup.kbit_cast_back = prepared;
    double bytes = 0;
    for (const SavedTensor& tensor :
         llama_block_saved_tensors(*find_preset("mistral-7b"), setup, true)) {
      bytes += tensor.bytes_per_token;
    }
    return bytes;
  };
  CHECK(saved_per_token(true) - saved_per_token(false) ==
        per_token.at("qlora-kbit-trl021") - per_token.at("qlora"));
}

TEST_CASE(
    "measured: torchtitan's Table 2 runs, read as GiB, against the reserved peak under its stack") {
  const auto all = compare_measured();
  const MeasuredComparison& fsdp8 = comparison_with_id(all, "torchtitan-2024-12-fsdp8-cp1");
  CHECK(fsdp8.measured.measured_bytes == 83.9 * 1024 * 1024 * 1024);
  CHECK(fsdp8.measured.quantity == MeasuredQuantity::kReserved);
  CHECK(fsdp8.measured.setup.stack == Stack::kTorchtitan);
  CHECK(fsdp8.measured.setup.loss == Loss::kFp32Upcast);  // torchtitan's loss over .float() logits
  const Estimate estimate = estimate_memory(fsdp8.measured.setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(estimate.num_devices == 8);
  CHECK(fsdp8.korthikanti_bytes == estimate.peak_reserved_bytes);
  CHECK(fsdp8.llama_block_estimate.peak_reserved_bytes == fsdp8.llama_block_bytes);
  // Under full recomputation the rebuilt layer fits in the logits' memory: both models agree on
  // what is allocated, and within 0.1% on what is reserved (the block each makes and frees in its
  // forward pass is their own layer's size).
  CHECK(fsdp8.korthikanti_bytes == doctest::Approx(fsdp8.llama_block_bytes).epsilon(0.001));
  // Each row holds 32,768 tokens per GPU and shards the states over 8: one estimate for all four.
  for (const char* id : {"torchtitan-2024-12-fsdp4-cp2", "torchtitan-2024-12-fsdp2-cp4",
                         "torchtitan-2024-12-fsdp1-cp8"}) {
    CAPTURE(id);
    CHECK(comparison_with_id(all, id).llama_block_bytes == fsdp8.llama_block_bytes);
  }
}

TEST_CASE(
    "measured: each published run under its stack is within its goal (10 percent, Megatron-LM's "
    "2 allocated and 5 reserved), or says why not") {
  int published = 0;
  for (const MeasuredComparison& comparison : compare_measured()) {
    // Our own runs (the CPU harness, the losses, the H200 Trainer runs) are pinned by the tests
    // above; every published run is held here.
    const std::string& id = comparison.measured.id;
    if (id.rfind("harness-", 0) == 0 || id.rfind("loss-peak-", 0) == 0 ||
        id.rfind("grpo-loss-peak-", 0) == 0 || id.rfind("dpo-loss-peak-", 0) == 0 ||
        id.rfind("h200-trainer-", 0) == 0) {
      continue;
    }
    ++published;
    CAPTURE(comparison.measured.id);
    REQUIRE(comparison.answer.ok());
    const double error = std::fabs(comparison.llama_block_error_percent);
    const double goal = comparison.measured.goal_percent;
    // Korthikanti's formula assumes heads of h/a, which latent attention does not keep (its
    // source says so), and the fused modules' tensors, which a stack's modules as written do not
    // keep eager (torchtune's): held to 10% elsewhere, unless the note says why not.
    if (!latent_attention(*resolve_model(comparison.measured.setup)) &&
        !layer_stack_of(comparison.measured.setup).eager_modules &&
        comparison.measured.outside_goal.empty()) {
      CHECK(std::fabs(comparison.korthikanti_error_percent) <= 10);
    }
    if (comparison.measured.outside_goal.empty()) {
      CHECK(error <= goal);
    } else {
      // A case that meets the goal drops its reason; the note carries it to the reader.
      CHECK(error > goal);
      CHECK(comparison.measured.note.find(comparison.measured.outside_goal) != std::string::npos);
    }
  }
  // torchao's three B200 runs and torchtitan's four GB200 runs among them, and Liger's example's
  // two
  CHECK(published == 20 + 3 + 4 + 2 * 19 + 7 + 1 + 11 + 2);
}

TEST_CASE("measured: errors are signed percentages to one decimal") {
  CHECK(format_error_percent(23.14) == "+23.1%");
  CHECK(format_error_percent(-45.06) == "\u221245.1%");
  CHECK(format_error_percent(0.0004) == "\u00b10.0%");
  CHECK(format_error_percent(-0.04) == "\u00b10.0%");
}

TEST_CASE("measured: figures are written in the unit they were published in") {
  CHECK(format_as_measured(6963232, MeasuredUnit::kBytes) == "6,963,232 B");
  CHECK(format_as_measured(83.9 * 1024 * 1024 * 1024, MeasuredUnit::kGibibytes) == "83.9 GiB");
  CHECK(format_as_measured(36.6e9, MeasuredUnit::kGigabytes) == "36.6 GB");
}

TEST_CASE(
    "measured: SimuMax's own estimate stands beside each of its runs, read as GiB, with its "
    "error") {
  int with_other = 0;
  for (const MeasuredComparison& comparison : compare_measured()) {
    const MeasuredCase& measured = comparison.measured;
    const bool simumax = measured.id.rfind("simumax-b200-", 0) == 0;
    CAPTURE(measured.id);
    // Only SimuMax's table publishes another tool's estimate beside its measurement.
    CHECK(measured.other_estimate_name.empty() != simumax);
    if (!simumax) continue;
    ++with_other;
    CHECK(measured.other_estimate_name == "SimuMax v1.2");
    CHECK(measured.other_estimate_bytes > 0);
    CHECK(comparison.other_estimate_error_percent ==
          doctest::Approx((measured.other_estimate_bytes - measured.measured_bytes) /
                          measured.measured_bytes * 100));
  }
  CHECK(with_other == 2 * 19);
  // The summary's perf_peak_reserved_gib for Llama 3 70B at 128K tokens, t 2 × c 4.
  const auto all = compare_measured();
  const MeasuredComparison& long_context = comparison_with_id(
      all, "simumax-b200-llama3_70b_l12_tp2_cp4_pp1_dp1_seq131072_mbc4_cef-reserved");
  CHECK(long_context.measured.other_estimate_bytes == 118.94 * 1024 * 1024 * 1024);
  CHECK(format_error_percent(long_context.other_estimate_error_percent) == "\u22122.0%");
}

TEST_CASE(
    "measured: the standing against another tool takes whole errors, a median and a worst for "
    "each tool and quantity, and skips runs the core refused") {
  const auto run = [](MeasuredQuantity quantity, const char* tool, double ours, double theirs,
                      bool refused = false) {
    MeasuredComparison comparison;
    comparison.measured.quantity = quantity;
    comparison.measured.other_estimate_name = tool;
    comparison.llama_block_error_percent = ours;
    comparison.other_estimate_error_percent = theirs;
    if (refused) comparison.answer = refusal("seq-len", "refused");
    return comparison;
  };
  const std::vector<MeasuredComparison> runs = {
      run(MeasuredQuantity::kAllocated, "Tool", -1.0, 0.5),
      run(MeasuredQuantity::kReserved, "Tool", 4.0, -3.0),
      run(MeasuredQuantity::kAllocated, "Tool", 3.0, -0.25),
      run(MeasuredQuantity::kAllocated, "Tool", 0.25, 2.0),
      run(MeasuredQuantity::kAllocated, "Tool", 2.0, -1.0),
      run(MeasuredQuantity::kAllocated, "Tool", 50.0, 50.0, true),
      run(MeasuredQuantity::kAllocated, "", 50.0, 50.0),
  };
  const std::vector<std::string> standing = standing_against_other_estimates(runs);
  REQUIRE(standing.size() == 2);
  // Allocated: ours 0.25, 1, 2, 3 (median 1.5, worst 3); theirs 0.25, 0.5, 1, 2 (0.75, 2).
  CHECK(standing[0] ==
        "Allocated, 4 runs: trainmem's median error 1.5%, its worst 3.0%; Tool's median 0.8%, its "
        "worst 2.0%.");
  CHECK(standing[1] ==
        "Reserved, 1 run: trainmem's median error 4.0%, its worst 4.0%; Tool's median 3.0%, its "
        "worst 3.0%.");
  CHECK(standing_against_other_estimates({}).empty());
}

TEST_CASE("measured: Table 5's two schedules are ordered as measured, 1F1B above interleaved") {
  const std::vector<MeasuredComparison> all = compare_measured();
  const MeasuredComparison& one_f_one_b =
      comparison_with_id(all, "torchtitan-2024-12-table5-fsdp8-tp8-pp8");
  const MeasuredComparison& interleaved =
      comparison_with_id(all, "torchtitan-2024-12-table5-fsdp8-tp8-pp8-interleaved");
  REQUIRE(one_f_one_b.measured.measured_bytes > interleaved.measured.measured_bytes);
  CHECK(one_f_one_b.llama_block_bytes > interleaved.llama_block_bytes);
  // By less than the table's gap, as the interleaved row's note says.
  CHECK(one_f_one_b.llama_block_bytes - interleaved.llama_block_bytes <
        one_f_one_b.measured.measured_bytes - interleaved.measured.measured_bytes);
}

}  // namespace measured_test
