// TRL's DPOConfig (`trl dpo --config`, TRL f2cd5771; issue 43): read into the flags' setup, the
// trainer told from the file's keys, and what it sets that is not modelled refused by its key.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "cli.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/verdict.hpp"
#include "yaml_launch.hpp"

using namespace trainmem;

namespace trl_dpo_test {

#ifdef TRAINMEM_YAML  // yaml-cpp: the native build's YAML parser (the page's: tests/browser)

namespace {

// A DPO run as TRL's docs write one: Llama 3 8B Instruct in BF16, LoRA r 16 on every linear
// layer, 2 pairs a device of up to 2,048 tokens, the sigmoid loss.
const char* const kTrlDpo =
    "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n"
    "dtype: bfloat16\n"
    "use_peft: true\n"
    "lora_r: 16\n"
    "lora_target_modules: all-linear\n"
    "dataset_name: trl-lib/ultrafeedback_binarized\n"
    "per_device_train_batch_size: 2\n"
    "max_length: 2048\n"
    "loss_type: sigmoid\n"
    "beta: 0.1\n"
    "learning_rate: 5.0e-7\n"
    "output_dir: out\n";

LaunchConfig read_yaml(const std::string& text, int world_size = 0) {
  return fixtures::read_yaml_launch(text, {}, world_size);
}

// The same run from flags: --stack hf --model llama3-8b --seq-len 2048 --micro-batch 4
// --precision bf16 --lora-rank 16 --lora-targets all-linear --lora-dropout 0.05 --recompute full
// --logits --loss dpo --reference-model --dropout off (disable_dropout: PEFT's lora_dropout too).
TrainingSetup dpo_flags() {
  TrainingSetup flags;
  flags.stack = Stack::kHf;
  flags.model_id = "llama3-8b";
  flags.sequence_length = 2048;
  flags.micro_batch_sequences = 4;
  flags.precision = Precision::kBf16;
  flags.lora_rank = 16;
  flags.lora_targets = LoraTargets::kAllLinear;
  flags.lora_dropout = 0.05;
  flags.recompute = Recompute::kFull;
  flags.logits = true;
  flags.loss = Loss::kDpo;
  flags.reference_model = true;
  flags.dropout = Dropout::kOff;
  return flags;
}

std::string refused(const std::string& text) { return read_yaml(text).answer.setting; }

}  // namespace

TEST_CASE("trl dpo: DPOConfig opens to the flags' setup, both sequences of each pair counted") {
  const LaunchConfig launch = read_yaml(kTrlDpo);
  REQUIRE_MESSAGE(launch.answer.ok(), launch.answer.message);
  CHECK(launch.kind ==
        "TRL config (YAML, trl dpo --config; DPOConfig at TRL f2cd5771, after v1.9.0)");
  CHECK(launch.not_understood.empty());
  const Estimate file = estimate_memory(launch.setup);
  const Estimate flags = estimate_memory(dpo_flags());
  REQUIRE_MESSAGE(file.answer.ok(), file.answer.message);
  CHECK(file.bytes.total() == flags.bytes.total());
  CHECK(file.peak_allocated_bytes == flags.peak_allocated_bytes);
  CHECK(file.peak_reserved_bytes == flags.peak_reserved_bytes);
  CHECK(launch.setup.micro_batch_sequences == 4);  // 2 pairs
  // No published DPO run: the headroom decides the verdict, and says so.
  const VerdictAnswer verdict = verdict_of(file, false);
  CHECK_FALSE(verdict.from_band);
  CHECK(verdict.reason.find("No published run measures DPO's step") != std::string::npos);
  // precompute_ref_log_probs: no reference model in the step, and less memory.
  const LaunchConfig precomputed =
      read_yaml(std::string(kTrlDpo) + "precompute_ref_log_probs: true\n");
  REQUIRE_MESSAGE(precomputed.answer.ok(), precomputed.answer.message);
  CHECK_FALSE(precomputed.setup.reference_model);
  CHECK(estimate_memory(precomputed.setup).peak_allocated_bytes < file.peak_allocated_bytes);
  // DPOConfig's defaults: 8 pairs of 1,024 tokens; full training (the reference a second copy).
  const LaunchConfig defaults = read_yaml(
      "model_name_or_path: meta-llama/Llama-3.2-1B\ndtype: bfloat16\nloss_type: [sigmoid, "
      "bco_pair]\n");
  REQUIRE_MESSAGE(defaults.answer.ok(), defaults.answer.message);
  CHECK(defaults.setup.micro_batch_sequences == 16);
  CHECK(defaults.setup.sequence_length == 1024);
  CHECK(defaults.setup.lora_rank == 0);
  CHECK(defaults.setup.reference_model);
}

TEST_CASE("trl dpo: the trainer is told from the keys, and a file that does not say is refused") {
  // DPOConfig's own keys, without loss_type, name it.
  CHECK(read_yaml(std::string(kTrlDpo) + "label_smoothing: 0.1\n").kind.find("trl dpo") !=
        std::string::npos);
  // beta alone is any preference or RL trainer's.
  std::string shared = kTrlDpo;
  shared.replace(shared.find("loss_type: sigmoid\n"), 18, "");
  CHECK(refused(shared) == "beta");
  CHECK(read_yaml(shared).answer.message.find(
            "GRPOConfig's, DPOConfig's, KTOConfig's and RLOOConfig's alike") != std::string::npos);
  // KTO's own keys and loss types, and RLOO's, named before the keys they share.
  CHECK(refused(std::string(kTrlDpo) + "desirable_weight: 1.0\n") == "desirable_weight");
  CHECK(refused(shared + "loss_type: kto\n") == "loss_type");
  CHECK(read_yaml(shared + "loss_type: apo_zero_unpaired\n").answer.message.find("KTOConfig's") !=
        std::string::npos);
  CHECK(refused(shared + "normalize_advantages: true\n") == "normalize_advantages");
  // truncation_mode is SFTConfig's too: an SFT file that sets it stays SFT's.
  const LaunchConfig sft = read_yaml(
      "model_name_or_path: meta-llama/Llama-3.2-1B\nmax_length: 2048\n"
      "per_device_train_batch_size: 4\ntruncation_mode: keep_start\n");
  REQUIRE_MESSAGE(sft.answer.ok(), sft.answer.message);
  CHECK(sft.kind.find("trl sft") != std::string::npos);
  CHECK(sft.setup.micro_batch_sequences == 4);
  CHECK(sft.not_understood.empty());
  // None of SFTConfig's own keys: said that a DPO file of the same keys would read the same.
  CHECK(std::any_of(sft.notes.begin(), sft.notes.end(), [](const std::string& note) {
    return note.rfind("Read as trl sft's", 0) == 0;
  }));
}

TEST_CASE("trl dpo: what a DPO config sets that is not modelled is refused by its key") {
  const std::string dpo = kTrlDpo;
  std::string with_sft = dpo;
  with_sft.replace(with_sft.find("loss_type: sigmoid"), 18, "loss_type: [sigmoid, sft]");
  CHECK(refused(with_sft) == "loss_type");
  CHECK(refused(dpo + "use_weighting: true\n") == "use_weighting");
  CHECK(refused(dpo + "use_liger_kernel: true\n") == "use_liger_kernel");
  std::string untruncated = dpo;
  untruncated.replace(untruncated.find("max_length: 2048"), 16, "max_length: null");
  CHECK(refused(untruncated) == "max_length");
  CHECK(refused(dpo + "loss_weights: [1.0, 2.0]\n") == "loss_weights");
  // DPOTrainer refuses syncing the reference under PEFT, and with precomputed log-probabilities.
  CHECK(refused(dpo + "sync_ref_model: true\n") == "sync_ref_model");
  CHECK(refused(dpo + "max_prompt_length: 512\n") == "max_prompt_length");
  CHECK(refused(dpo + "load_in_4bit: true\n") == "load_in_4bit");
  CHECK(read_yaml(dpo + "load_in_4bit: true\n").answer.message.find("DPOTrainer casts") == 0);
  // Under FSDP or DeepSpeed the reference is prepared apart: refused by the file's key.
  CHECK(refused(dpo + "fsdp: full_shard\n") == "fsdp");
  // The loss's coefficients and, under full training, the reference's syncing (in place) bear on
  // nothing held: read.
  const std::string full =
      "model_name_or_path: meta-llama/Llama-3.2-1B\ndtype: bfloat16\nloss_type: sigmoid\n";
  const LaunchConfig coefficients =
      read_yaml(full +
                "label_smoothing: 0.1\nld_alpha: 0.5\nf_divergence_type: js_divergence\n"
                "sync_ref_model: true\nref_model_sync_steps: 64\nignore_bias_buffers: false\n");
  REQUIRE_MESSAGE(coefficients.answer.ok(), coefficients.answer.message);
  CHECK(coefficients.not_understood.empty());
  CHECK(refused(full + "precompute_ref_log_probs: true\nsync_ref_model: true\n") ==
        "sync_ref_model");
  // disable_dropout (true): no dropout masks; false: the model's own.
  CHECK(coefficients.setup.dropout == Dropout::kOff);
  const LaunchConfig dropout = read_yaml(full + "disable_dropout: false\n");
  REQUIRE_MESSAGE(dropout.answer.ok(), dropout.answer.message);
  CHECK(dropout.setup.dropout == Dropout::kModel);
  // A precomputing pass larger than a step's micro-batch is not modelled: it withholds the
  // verdict, named.
  const LaunchConfig precompute =
      read_yaml(full + "precompute_ref_log_probs: true\nprecompute_ref_batch_size: 64\n");
  REQUIRE(precompute.answer.ok());
  CHECK(precompute.not_understood == std::vector<std::string>{"precompute_ref_batch_size"});
  CHECK(read_yaml(full + "precompute_ref_batch_size: 64\n").not_understood.empty());
  // A key DPOConfig does not have withholds the verdict, named.
  const LaunchConfig unknown = read_yaml(dpo + "rpo_alpha: 1.0\n");
  REQUIRE(unknown.answer.ok());
  CHECK(unknown.not_understood == std::vector<std::string>{"rpo_alpha"});
}

TEST_CASE("trl dpo: the CLI reads the DPO example and gives its verdict") {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli(
      {"--launch", std::string(TRAINMEM_SOURCE_DIR) + "/docs/examples/trl-dpo-llama3-8b-lora.yaml"},
      out, err);
  CHECK(status == 0);
  const std::string text = out.str();
  CHECK(text.find("Launch config: TRL config (YAML, trl dpo --config; DPOConfig at TRL f2cd5771") !=
        std::string::npos);
  CHECK(text.find("4 sequences a micro-batch") != std::string::npos);
  CHECK(text.find("Verdict: Fits.") != std::string::npos);
}

#endif

}  // namespace trl_dpo_test
