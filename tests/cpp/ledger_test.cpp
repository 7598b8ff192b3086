// The arithmetic as the core records it (estimate/ledger.hpp), checked from inside: each term's
// working is the figure that was computed, so its lines sum to the term's bytes, for every kind of
// setup; no term the device holds is left without one; and the words are those of the numbers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "text/figure.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/terms.hpp"

using namespace trainmem;

namespace ledger_test {

namespace {

struct Case {
  std::string name;
  TrainingSetup setup;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  const auto add = [&all](std::string name, const auto& edit) {
    TrainingSetup setup;
    edit(setup);
    all.push_back({std::move(name), setup});
  };
  add("the plate", [](TrainingSetup&) {});
  add("no FlashAttention, logits, ZeRO-3 over 8", [](TrainingSetup& s) {
    s.flash_attention = false;
    s.logits = true;
    s.layout.data_parallel = 8;
    s.layout.zero_stage = 3;
  });
  add("70B, t 8 with SP, p 4 interleaved, logits on the last stage", [](TrainingSetup& s) {
    s.model_id = "llama3-70b";
    s.layout.tensor_parallel = 8;
    s.layout.sequence_parallel = true;
    s.layout.pipeline_parallel = 4;
    s.layout.virtual_pipeline_stages = 2;
    s.layout.data_parallel = 4;
    s.layout.zero_stage = 1;
    s.logits = true;
    s.recompute = Recompute::kFull;
  });
  add("LoRA all-linear on NF4, optimiser offloaded, activations offloaded", [](TrainingSetup& s) {
    s.lora_rank = 16;
    s.lora_targets = LoraTargets::kAllLinear;
    s.base_weights = BaseWeights::kNf4;
    s.offload = Offload::kOptimizer;
    s.offload_activations = true;
    s.logits = true;
    s.loss = Loss::kFp32Upcast;
  });
  add("LoRA on int8, the weights offloaded too, full recomputation", [](TrainingSetup& s) {
    s.lora_rank = 8;
    s.base_weights = BaseWeights::kInt8;
    s.offload = Offload::kOptimizerAndWeights;
    s.recompute = Recompute::kFull;
    s.optimizer = Optimizer::kAdafactor;
  });
  add("fp8-mixed on a B200, llama-block", [](TrainingSetup& s) {
    s.precision = Precision::kFp8Mixed;
    s.device_id = "b200";
    s.activation_model = ActivationModel::kLlamaBlock;
  });
  add("Mixtral, ep 8, capacity 1.25, ZeRO-1", [](TrainingSetup& s) {
    s.model_id = "mixtral-8x7b";
    s.layout.data_parallel = 8;
    s.layout.expert_parallel = 8;
    s.layout.zero_stage = 1;
    s.capacity_factor = 1.25;
  });
  add("DeepSeek-V3, latent attention, ep 64, p 61", [](TrainingSetup& s) {
    s.model_id = "deepseek-v3";
    s.activation_model = ActivationModel::kLlamaBlock;
    s.layout.data_parallel = 64;
    s.layout.expert_parallel = 64;
    s.layout.pipeline_parallel = 61;
    s.layout.zero_stage = 1;
  });
  add("DeepSeek-V3 with its MTP module, Megatron-LM, ep 64, p 61, logits", [](TrainingSetup& s) {
    s.model_id = "deepseek-v3";
    s.stack = Stack::kMegatron;
    s.mtp = true;
    s.logits = true;
    s.layout.data_parallel = 64;
    s.layout.expert_parallel = 64;
    s.layout.pipeline_parallel = 61;
    s.layout.zero_stage = 1;
  });
  add("Llama 4 Maverick, interleaved mixture, ep 8, p 16", [](TrainingSetup& s) {
    s.model_id = "llama4-maverick";
    s.layout.data_parallel = 8;
    s.layout.expert_parallel = 8;
    s.layout.pipeline_parallel = 16;
    s.layout.zero_stage = 1;
  });
  add("Megatron-LM, t 2 with SP, logits", [](TrainingSetup& s) {
    s.stack = Stack::kMegatron;
    s.layout.data_parallel = 8;
    s.layout.zero_stage = 1;
    s.layout.tensor_parallel = 2;
    s.layout.sequence_parallel = true;
    s.logits = true;
  });
  add("torchtitan, ZeRO-2, per-op recomputation, FP32 loss", [](TrainingSetup& s) {
    s.stack = Stack::kTorchtitan;
    s.layout.data_parallel = 8;
    s.layout.zero_stage = 2;
    s.recompute = Recompute::kSelectiveOp;
    s.logits = true;
    s.loss = Loss::kFp32Upcast;
  });
  add("DeepSpeed ZeRO-3", [](TrainingSetup& s) {
    s.stack = Stack::kDeepSpeed;
    s.layout.data_parallel = 8;
    s.layout.zero_stage = 3;
  });
  return all;
}

Calculation written(const TrainingSetup& setup) {
  return calculate(setup, setup.micro_batch_sequences, setup.flash_attention, {true, true});
}

const Working* working_of(const Calculation& calc, const std::string& id) {
  for (const Working& working : calc.ledger.workings()) {
    if (working.id == id) return &working;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "every term's working sums to the bytes the estimate holds for it, on every kind of setup") {
  for (const Case& each : cases()) {
    CAPTURE(each.name);
    const Calculation calc = written(each.setup);
    REQUIRE_MESSAGE(calc.answer.ok(), calc.answer.message);
    const bool stack = !calc.stack_terms.empty();
    Breakdown from_workings;  // each term's workings, summed
    double host = 0;
    for (const Working& working : calc.ledger.workings()) {
      CAPTURE(working.id);
      if (working.host) {
        host += working.bytes();
      } else {
        from_workings[working.term] += working.bytes();
      }
    }
    for (const TermRow& row : kTerms) {
      CAPTURE(row.id);
      // The idealised terms' workings are as counted, whole; a stack's replay finds them at its
      // peak, which each working says after its total.
      const bool replayed = stack && row.part != TermPart::kStack;
      const double expected = replayed ? calc.whole_terms[row.term] : calc.ledger.device[row.term];
      CHECK(from_workings[row.term] == doctest::Approx(expected).epsilon(1e-12));
      if ((calc.whole_terms[row.term] > 0 || calc.ledger.device[row.term] > 0) &&
          row.part != TermPart::kStack) {
        CHECK_MESSAGE(working_of(calc, row.id) != nullptr,
                      "a term the device holds has its working");
      }
      if (replayed && working_of(calc, row.id) != nullptr) {
        CHECK(working_of(calc, row.id)
                  ->formula()
                  .find("at the step's peak, in the allocator's blocks: " +
                        format_bytes(calc.ledger.device[row.term])) != std::string::npos);
      }
    }
    CHECK(host == doctest::Approx(calc.ledger.host.total()).epsilon(1e-12));
  }
}

TEST_CASE("a working's words end in its own total, and its numbers are the ones it adds") {
  const Calculation plate = written(TrainingSetup{});
  const Working* weights = working_of(plate, "weights");
  REQUIRE(weights != nullptr);
  CHECK(weights->formula() == "2 B × 8,030,261,248 parameters = 16.1 GB");
  CHECK(weights->bytes() == 2.0 * 8030261248);
  REQUIRE(weights->lines.size() == 1);
  CHECK(weights->lines[0].figure.value() == weights->bytes());
}

TEST_CASE("an estimate that is not written out keeps no workings and no words") {
  const Calculation calc = calculate(TrainingSetup{}, 1, true, {false, true});
  REQUIRE(calc.answer.ok());
  CHECK(calc.ledger.workings().empty());
  CHECK(calc.ledger.device.total() == written(TrainingSetup{}).ledger.device.total());
}

TEST_CASE("a figure's words bracket what reading them left to right would get wrong") {
  const Pen pen(true);
  const Figure sum = pen.number(34) + pen.number(5);
  CHECK((pen.number(4096) * sum.in("B")).text() == "4,096 × (34 + 5) B");
  CHECK((pen.number(2) * sum).text() == "2 × (34 + 5)");
  CHECK((pen.number(2) * sum).value() == 78);
  CHECK((pen.number(100) - sum).text() == "100 − (34 + 5)");
  CHECK((pen.number(100) / (pen.number(2) * pen.number(5))).text() == "100 / (2 × 5)");
  CHECK((pen.number(100) / (pen.number(2) * pen.number(5))).value() == 10);
  CHECK((pen.count(8, "layers") * pen.count(2, "tokens") / pen.number(4)).text() ==
        "8 layers × 2 tokens / 4");
  CHECK(pen.number(1.375).text() == "1.38");
  CHECK(pen.number(19914.285714285714).text() == "1.99e+04");
  // A pen that does not write makes bare values.
  const Pen bare;
  CHECK((bare.number(4096) * bare.count(2, "B")).text().empty());
  CHECK((bare.number(4096) * bare.count(2, "B")).value() == 8192);
}

}  // namespace ledger_test
