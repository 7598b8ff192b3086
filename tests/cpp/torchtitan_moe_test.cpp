// torchtitan's mixture of experts with expert parallelism (issue 46's item 3), counted by hand on a
// tiny shape: what its router, dispatcher and combine save (torchtitan/models/common/moe.py and
// token_dispatcher.py, b5bcd76c), the all-to-all's buffers, FSDP2's shards over efsdp, and what it
// does not run refused by name. And the routed tokens a rank's experts read under Megatron-LM's
// expert tensor parallelism, which the same block counts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimate/calculation.hpp"
#include "tiny_mixture.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/explore.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/timeline.hpp"
#include "trainmem/verdict.hpp"
#include "whole_terms.hpp"

using namespace trainmem;

namespace torchtitan_moe_test {

namespace {

constexpr double kTokens = 128, kH = 64, kExperts = 4, kTopK = 2, kWidth = 32, kLayers = 2;

// The suites' tiny mixture (tiny_mixture.hpp): the constants above are its shape.
TrainingSetup tiny_mixture(int ep) { return fixtures::tiny_torchtitan_mixture(ep); }

// Qwen3-30B-A3B under torchtitan on 8 devices, FSDP2 with expert parallelism 8, full
// recomputation.
TrainingSetup qwen3_moe_on_eight() { return fixtures::qwen3_moe_on_eight(Recompute::kFull); }

double tensor_bytes(const std::vector<SavedTensor>& tensors, const std::string& id) {
  for (const SavedTensor& tensor : tensors) {
    if (tensor.id == id) return tensor.bytes_per_token;
  }
  return -1;
}

using fixtures::whole;

}  // namespace

TEST_CASE(
    "torchtitan moe: a routed layer saves the gate's FP32 input, its scores, the indices and "
    "the combine's FP32 upcast, by hand") {
  TrainingSetup setup = tiny_mixture(2);
  const std::vector<SavedTensor> saved =
      llama_block_saved_tensors(setup.custom_model, setup, setup.flash_attention);
  // The router: the norm's output cast to FP32 by autocast (4·h), the FP32 scores (4·E), and the
  // int64 expert ids, their argsort, the token indices and _permute's order (8 × 4 × top-k).
  CHECK(tensor_bytes(saved, "router-input") == 4 * kH);
  CHECK(tensor_bytes(saved, "router-scores") == 4 * kExperts);
  CHECK(tensor_bytes(saved, "routing-indices") == 8 * 4 * kTopK);
  // The experts: each routed copy of the input (2·h·top-k), and w1's output, SiLU's output, w3's
  // output and their product (2·f_e·top-k each), uncompiled.
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK);
  for (const char* id : {"gate-output", "activation-output", "up-output", "product"}) {
    CHECK(tensor_bytes(saved, id) == 2 * kWidth * kTopK);
  }
  // The combine: the experts' outputs upcast to FP32 (4·h·top-k) and the sorted scores (4·top-k).
  CHECK(tensor_bytes(saved, "combine-output") == 4 * kH * kTopK);
  CHECK(tensor_bytes(saved, "combine-scores") == 4 * kTopK);
  // No BF16 copy of the norm's output for the router: its FP32 copy is what it saves.
  int router_inputs = 0;
  for (const SavedTensor& tensor : saved) router_inputs += tensor.id == "router-input" ? 1 : 0;
  CHECK(router_inputs == 1);
  // Without expert parallelism no received copies are reordered: three index tensors.
  setup.layout.expert_parallel = 1;
  CHECK(tensor_bytes(llama_block_saved_tensors(setup.custom_model, setup, true),
                     "routing-indices") == 8 * 3 * kTopK);
  // Compiled, the fused SwiGLU keeps no SiLU output apart.
  setup.compile = Compile::kBlocks;
  CHECK(tensor_bytes(llama_block_saved_tensors(setup.custom_model, setup, true),
                     "activation-output") == -1);
  // Shared experts (torchtitan's FeedForward) save the BF16 norm output, the router's copy being
  // FP32, and, uncompiled, SiLU's output apart.
  setup = tiny_mixture(2);
  setup.custom_model.shared_expert_ffn_hidden_size = 16;
  const std::vector<SavedTensor> shared =
      llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(shared, "shared-input") == 2 * kH);
  CHECK(tensor_bytes(shared, "shared-activation-output") == 2 * 16);
  // Megatron-LM's router saves the BF16 norm output, and none of torchtitan's other tensors.
  setup = tiny_mixture(2);
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  const std::vector<SavedTensor> megatron =
      llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(megatron, "router-input") == 2 * kH);
  CHECK(tensor_bytes(megatron, "combine-output") == -1);
  CHECK(tensor_bytes(megatron, "routing-indices") == -1);
}

TEST_CASE(
    "torchtitan moe: Korthikanti's shares gain the router's and the combine's tensors under "
    "torchtitan") {
  TrainingSetup setup = tiny_mixture(1);
  setup.activation_model = ActivationModel::kKorthikanti;
  const Calculation titan = calculate(setup, 1, true, {false, false});
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  const Calculation megatron = calculate(setup, 1, true, {false, false});
  REQUIRE(titan.answer.ok());
  REQUIRE(megatron.answer.ok());
  // 4·h + 4·E + 8·3·k + 4·h·k + 4·k bytes a token, as the llama-block model lists them, against
  // Megatron-LM's own routing (megatron_routing.cpp): the router's int64 indices (8·k) and FP32
  // softmax (4·k), the permutation's BF16 copy of the probabilities (2·E), its mask (E) and the
  // int64 token indices (8·k), the experts' BF16 probabilities (2·k).
  const double megatron_routing =
      8 * kTopK + 4 * kTopK + 2 * kExperts + kExperts + 8 * kTopK + 2 * kTopK;
  CHECK(titan.layer.kept_per_token.value() - megatron.layer.kept_per_token.value() ==
        doctest::Approx(4 * kH + 4 * kExperts + 8 * 3 * kTopK + 4 * kH * kTopK + 4 * kTopK -
                        megatron_routing));
}

TEST_CASE(
    "torchtitan moe: the combine's backward is the layer's largest transient, and expert "
    "parallelism adds the received copies' order") {
  // The product of the experts' FP32 outputs with the scores: its backward holds its FP32
  // gradient, the upcast's and the scores' before their sum, 12 B a routed copy's value, more
  // than its forward (8, or 10 under expert parallelism) or the dispatch's send and receive (4).
  const double copies = kTokens * kTopK * kH;
  for (int ep : {1, 2}) {
    CAPTURE(ep);
    const Calculation calc = calculate(tiny_mixture(ep), 1, true, {false, false});
    REQUIRE(calc.answer.ok());
    CHECK(calc.layer.dispatch.value() == 12 * copies);
  }
  // And every layer's int64 order of its received copies (8 × top-k a token).
  const double order = kLayers * kTokens * 8 * kTopK;
  CHECK(whole(tiny_mixture(2))[Term::kActivations] - whole(tiny_mixture(1))[Term::kActivations] ==
        order);
  // More ranks exchange as much per rank.
  CHECK(whole(tiny_mixture(4))[Term::kActivations] == whole(tiny_mixture(2))[Term::kActivations]);
}

TEST_CASE(
    "torchtitan moe: FSDP2 shards the experts over efsdp = d/ep, so each rank's states are the "
    "same share at any ep") {
  const Breakdown one = whole(tiny_mixture(1));
  for (int ep : {2, 4}) {
    CAPTURE(ep);
    const Breakdown more = whole(tiny_mixture(ep));
    // ep ranks hold E/ep experts whole, each sharded over d/ep: 1/d of them, as without it.
    for (Term term : {Term::kWeights, Term::kGradients, Term::kOptimizerStates}) {
      CHECK(more[term] == doctest::Approx(one[term]));
    }
    // The replay's gradients, made layer by layer in the backward pass, come to the same shards:
    // the experts' over efsdp, the rest over d.
    const std::vector<TimelinePoint> timeline = memory_timeline(tiny_mixture(ep));
    const std::vector<TimelinePoint> without = memory_timeline(tiny_mixture(1));
    REQUIRE(!timeline.empty());
    CHECK(timeline.back().held[Term::kGradients] ==
          doctest::Approx(without.back().held[Term::kGradients]));
  }
  // Gathered for its passes, a layer holds this rank's E/ep experts alone: the peak falls as ep
  // grows.
  CHECK(estimate_memory(tiny_mixture(4)).peak_allocated_bytes <
        estimate_memory(tiny_mixture(1)).peak_allocated_bytes);
}

TEST_CASE("torchtitan moe: what it does not run is refused, naming the setting") {
  TrainingSetup setup = tiny_mixture(2);
  setup.layout.expert_tensor_parallel = 2;
  Answer refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kExpertTensorParallel);
  CHECK(refused.message ==
        "torchtitan keeps each routed expert whole on its expert-parallel rank (its experts' mesh "
        "is efsdp × ep, parallel_dims.py); set etp to 0 or 1.");
  // Under tensor parallelism etp 0 means t, which torchtitan's expert parallelism does not run:
  // named before the layout's own checks.
  setup = tiny_mixture(4);
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.data_parallel = 2;
  refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kExpertTensorParallel);
  CHECK(refused.message.find("set etp to 1.") != std::string::npos);
  setup.layout.expert_parallel = 1;
  setup.layout.expert_tensor_parallel = 1;
  refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kExpertTensorParallel);
  CHECK(refused.message.find("over the 2 tensor-parallel ranks") != std::string::npos);
  setup = tiny_mixture(2);
  setup.capacity_factor = 1.25;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kCapacityFactor);
  setup = tiny_mixture(3);
  CHECK(estimate_memory(setup).answer.setting == setting_id::kExpertParallel);
  // gpt-oss's experts (biases, a clamped SwiGLU) are not GroupedExperts'.
  setup = tiny_mixture(2);
  setup.custom_model.mlp_bias = true;
  refused = estimate_memory(setup).answer;
  CHECK(refused.setting == setting_id::kStack);
  CHECK(refused.message.find("GptOssGroupedExperts") != std::string::npos);
  CHECK(estimate_memory(tiny_mixture(4)).answer.ok());
}

// The tiny mixture on d 2 × t 2 with sequence parallelism (torchtitan's tensor parallelism always
// runs with it), expert parallelism `ep`, torchtitan's etp for it.
TrainingSetup tiny_tensor_parallel(int ep) {
  TrainingSetup setup = tiny_mixture(ep);
  setup.layout.data_parallel = 2;
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.expert_tensor_parallel = ep > 1 ? 1 : 0;
  return setup;
}

TEST_CASE(
    "torchtitan moe: under tensor parallelism expert parallelism routes each rank's T/t tokens, "
    "and without it the input is all-gathered and the experts split over t, by hand") {
  // moe_sharding.py (b5bcd76c), EP on: the MoE's input stays sequence-sharded, so the router,
  // the dispatch and the combine keep each rank's 64 of the 128 tokens, and the experts are
  // whole: every routed tensor per token of the layer's is half the t 1 figure.
  TrainingSetup setup = tiny_tensor_parallel(2);
  std::vector<SavedTensor> saved = llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(saved, "router-input") == 4 * kH / 2);
  CHECK(tensor_bytes(saved, "router-scores") == 4 * kExperts / 2);
  CHECK(tensor_bytes(saved, "routing-indices") == 8 * 4 * kTopK / 2);
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK / 2);
  CHECK(tensor_bytes(saved, "gate-output") == 2 * kWidth * kTopK / 2);
  CHECK(tensor_bytes(saved, "combine-output") == 4 * kH * kTopK / 2);
  CHECK(tensor_bytes(saved, "combine-scores") == 4 * kTopK / 2);
  // EP off: the input all-gathered (Replicate), the router and the combine on all 128 tokens,
  // every routed copy, and each expert split over t (w1, w3 column-wise, w2 row-wise): only the
  // f_e-wide intermediates are halved.
  setup = tiny_tensor_parallel(1);
  saved = llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(saved, "router-input") == 4 * kH);
  CHECK(tensor_bytes(saved, "router-scores") == 4 * kExperts);
  CHECK(tensor_bytes(saved, "routing-indices") == 8 * 3 * kTopK);
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK);
  CHECK(tensor_bytes(saved, "gate-output") == 2 * kWidth * kTopK / 2);
  CHECK(tensor_bytes(saved, "combine-output") == 4 * kH * kTopK);
  CHECK(tensor_bytes(saved, "combine-scores") == 4 * kTopK);
  // The shared experts read their input all-gathered either way, whole on each rank; their
  // intermediates are split over t.
  for (int ep : {1, 2}) {
    CAPTURE(ep);
    setup = tiny_tensor_parallel(ep);
    setup.custom_model.shared_expert_ffn_hidden_size = 16;
    saved = llama_block_saved_tensors(setup.custom_model, setup, true);
    CHECK(tensor_bytes(saved, "shared-input") == 2 * kH);
    CHECK(tensor_bytes(saved, "shared-gate-output") == 2 * 16 / 2);
  }
  // The combine's backward, 12 B a routed copy's value, over the tokens each rank combines.
  const double copies = kTokens * kTopK * kH;
  const Calculation on = calculate(tiny_tensor_parallel(2), 1, true, {false, false});
  const Calculation off = calculate(tiny_tensor_parallel(1), 1, true, {false, false});
  REQUIRE(on.answer.ok());
  REQUIRE(off.answer.ok());
  CHECK(on.layer.dispatch.value() == 12 * copies / 2);
  CHECK(off.layer.dispatch.value() == 12 * copies);
  // Korthikanti's shares follow the same split: EP off keeps every routed copy (2·h·k), the
  // router's and the combine's tensors whole; EP on halves them, with the received copies' order.
  TrainingSetup korthikanti_on = tiny_tensor_parallel(2);
  TrainingSetup korthikanti_off = tiny_tensor_parallel(1);
  korthikanti_on.activation_model = ActivationModel::kKorthikanti;
  korthikanti_off.activation_model = ActivationModel::kKorthikanti;
  const Calculation k_on = calculate(korthikanti_on, 1, true, {false, false});
  const Calculation k_off = calculate(korthikanti_off, 1, true, {false, false});
  REQUIRE(k_on.answer.ok());
  REQUIRE(k_off.answer.ok());
  const double routing = 4 * kH + 4 * kExperts + 4 * kH * kTopK + 4 * kTopK;
  CHECK(k_off.layer.kept_per_token.value() - k_on.layer.kept_per_token.value() ==
        doctest::Approx(2 * kH * kTopK / 2 + (routing + 8 * 3 * kTopK) -
                        (routing + 8 * 4 * kTopK) / 2));
  // Against Megatron-LM's count of the same layout (its routed copies alike at etp 1), DTensor's
  // all-gathered QKV input (2·h, whole: h more than its half) and torchtitan's routing tensors
  // over the rank's T/t; with shared experts their all-gathered input too (h more); less
  // Megatron-LM's own routing (the router's and the permutation's 8·k + 4·k + 2·E + E + 8·k, and
  // the experts' probabilities 2·k, all over the rank's T/t at etp 1).
  for (const double shared : {0.0, 16.0}) {
    CAPTURE(shared);
    TrainingSetup titan = korthikanti_on;
    titan.custom_model.shared_expert_ffn_hidden_size = static_cast<int>(shared);
    TrainingSetup megatron = titan;
    megatron.stack = Stack::kMegatron;
    megatron.layout.zero_stage = 1;
    const Calculation t_calc = calculate(titan, 1, true, {false, false});
    const Calculation m_calc = calculate(megatron, 1, true, {false, false});
    REQUIRE(t_calc.answer.ok());
    REQUIRE(m_calc.answer.ok());
    CHECK(t_calc.layer.kept_per_token.value() - m_calc.layer.kept_per_token.value() ==
          doctest::Approx(
              kH * (shared > 0 ? 2 : 1) + (routing + 8 * 4 * kTopK) / 2 -
              (8 * kTopK + 4 * kTopK + 2 * kExperts + kExperts + 8 * kTopK + 2 * kTopK) / 2));
  }
}

TEST_CASE(
    "torchtitan moe: under tensor parallelism FSDP2 shards the experts over efsdp = d·t/ep, and "
    "the stack brings its etp") {
  // Each rank keeps 1/(d·t) of every expert's FP32 states: E/ep whole experts over efsdp, or all
  // E split over t and sharded over d. The two layouts hold the same states.
  const Breakdown on = whole(tiny_tensor_parallel(2));
  const Breakdown off = whole(tiny_tensor_parallel(1));
  for (Term term : {Term::kWeights, Term::kGradients, Term::kOptimizerStates}) {
    CHECK(on[term] == doctest::Approx(off[term]));
  }
  // And as much as on d 4 without tensor parallelism, 1/4 of everything, but for what tensor
  // parallelism does not split: the norms (2 a layer and the final one, h each) and the router's
  // gate (E·h a layer, Replicate in moe_sharding.py), 1/2 of them against 1/4, in FP32.
  const double unsplit = (kLayers * 2 + 1) * kH + kLayers * kExperts * kH;
  CHECK(on[Term::kWeights] - whole(tiny_mixture(2))[Term::kWeights] ==
        doctest::Approx(4 * unsplit * (0.5 - 0.25)));
  // Where the reader has not chosen etp, the stack brings the one it runs, and says so; a choice
  // the reader made is kept, and refused.
  TrainingSetup setup = tiny_tensor_parallel(2);
  setup.layout.expert_tensor_parallel = 0;
  std::vector<BroughtSetting> brought =
      bring_stack_defaults(setup, [](const std::string&) { return false; });
  REQUIRE(brought.size() == 1);
  CHECK(brought.front().setting_id == setting_id::kExpertTensorParallel);
  CHECK(brought.front().by == "The torchtitan (FSDP2) stack");
  CHECK(setup.layout.expert_tensor_parallel == 1);
  CHECK(estimate_memory(setup).answer.ok());
  setup.layout.expert_parallel = 1;  // and back, without expert parallelism
  brought = bring_stack_defaults(setup, [](const std::string&) { return false; });
  REQUIRE(brought.size() == 1);
  CHECK(setup.layout.expert_tensor_parallel == 0);
  CHECK(estimate_memory(setup).answer.ok());
  setup.layout.expert_parallel = 2;
  brought = bring_stack_defaults(
      setup, [](const std::string& id) { return id == setting_id::kExpertTensorParallel; });
  CHECK(brought.empty());
  CHECK(estimate_memory(setup).answer.setting == setting_id::kExpertTensorParallel);
  // The savings view's doubled tensor parallelism runs the stack's etp (1 under expert
  // parallelism), so it is answered, not dropped as refused.
  bool doubled = false;
  for (const Saving& saving : rank_savings(qwen3_moe_on_eight()).savings) {
    if (saving.change == "tp-double") {
      doubled = true;
      CHECK(saving.estimate.setup.layout.expert_tensor_parallel == 1);
    }
  }
  CHECK(doubled);
}

TEST_CASE(
    "verdict: a mixture is not judged by dense runs alone: where the stack has measured none, "
    "the headroom decides") {
  // The torchtitan stack's published runs are dense Llamas: a mixture's verdict says so.
  TrainingSetup setup = qwen3_moe_on_eight();
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const VerdictAnswer mixture = verdict_of(estimate, false, {});
  CHECK_FALSE(mixture.from_band);
  CHECK(mixture.reason.find("No published run of the torchtitan (FSDP2) stack measures a "
                            "mixture of experts yet") != std::string::npos);
  CHECK(mixture.limit_bytes == estimate.usable_bytes);
  // A dense model under the same stack keeps its band.
  setup.model_id = "llama3.1-8b";
  setup.layout.expert_parallel = 1;
  CHECK(verdict_of(estimate_memory(setup), false, {}).from_band);
  // Megatron-LM's runs include mixtures (SimuMax's DeepSeek rows): its band stands.
  setup.model_id = "qwen3-30b-a3b";
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  setup.layout.expert_parallel = 8;
  setup.recompute = Recompute::kNone;
  const ErrorBand band = error_band(Stack::kMegatron, setup.activation_model);
  CHECK(band.mixture_cases >= kMinBandCases);
  CHECK(verdict_of(estimate_memory(setup), false, {}).from_band);
  // A hybrid of linear and full attention under the hf stack, whose runs are all of full
  // attention: the headroom decides, and says why.
  TrainingSetup hybrid;
  hybrid.model_id = "qwen3.5-27b";
  hybrid.stack = Stack::kHf;
  hybrid.precision = Precision::kBf16;
  hybrid.lora_rank = 16;
  hybrid.recompute = Recompute::kFull;
  hybrid.sequence_length = 4096;
  const Estimate hybrid_estimate = estimate_memory(hybrid);
  REQUIRE_MESSAGE(hybrid_estimate.answer.ok(), hybrid_estimate.answer.message);
  const VerdictAnswer judged = verdict_of(hybrid_estimate, false, {});
  CHECK_FALSE(judged.from_band);
  CHECK(judged.reason.find("measures a hybrid of linear and full attention yet") !=
        std::string::npos);
}

TEST_CASE(
    "megatron moe: a rank's experts read etp/t of its tokens' routed copies, and their "
    "intermediates are split over t") {
  // t 2 with sequence parallelism: each rank routes its 64 of the 128 tokens; etp 2 gathers the
  // copies of both ranks (token_dispatcher.py, dispatch_postprocess), each expert half as wide.
  TrainingSetup setup = tiny_mixture(2);
  setup.stack = Stack::kMegatron;
  setup.layout.zero_stage = 1;
  setup.layout.data_parallel = 2;
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.expert_tensor_parallel = 1;
  std::vector<SavedTensor> saved = llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK / 2);
  CHECK(tensor_bytes(saved, "gate-output") == 2 * kWidth * kTopK / 2);
  setup.layout.expert_tensor_parallel = 2;
  saved = llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK);
  CHECK(tensor_bytes(saved, "gate-output") == 2 * kWidth * kTopK / 2);
  // The all-to-all's send and receive buffers (64 tokens' 2 copies) beside its gather over etp 2,
  // before the sort into the 2 local experts' input: 4 of them. With one local expert nothing is
  // sorted and the gather is the experts' input: 2.
  const Calculation gathered = calculate(setup, 1, true, {false, false});
  REQUIRE(gathered.answer.ok());
  CHECK(gathered.layer.dispatch.value() == 4 * (kTokens / 2) * kTopK * kH * 2);
  setup.layout.expert_parallel = 4;
  setup.layout.data_parallel = 4;
  const Calculation one_local = calculate(setup, 1, true, {false, false});
  REQUIRE_MESSAGE(one_local.answer.ok(), one_local.answer.message);
  CHECK(one_local.layer.dispatch.value() == 2 * (kTokens / 2) * kTopK * kH * 2);
  setup.layout.expert_parallel = 2;
  setup.layout.data_parallel = 2;
  // At t 1 etp 2 gathers two data-parallel ranks' copies: twice top-k of them, each half as wide.
  setup.layout.tensor_parallel = 1;
  setup.layout.sequence_parallel = false;
  setup.layout.data_parallel = 4;
  saved = llama_block_saved_tensors(setup.custom_model, setup, true);
  CHECK(tensor_bytes(saved, "mlp-input") == 2 * kH * kTopK * 2);
  CHECK(tensor_bytes(saved, "gate-output") == 2 * kWidth * kTopK);
  // Korthikanti's model follows the same rule: the routed copies of the input (2·h each, no
  // dropout) at etp/t, the experts' 16-shares over t, whatever etp; and under Megatron-LM each
  // copy's probability (2 B) at etp/t too.
  setup.layout.tensor_parallel = 2;
  setup.layout.sequence_parallel = true;
  setup.layout.data_parallel = 2;
  setup.activation_model = ActivationModel::kKorthikanti;
  setup.layout.expert_tensor_parallel = 1;
  const Calculation korthikanti_one = calculate(setup, 1, true, {false, false});
  setup.layout.expert_tensor_parallel = 2;
  const Calculation korthikanti_two = calculate(setup, 1, true, {false, false});
  REQUIRE(korthikanti_one.answer.ok());
  REQUIRE(korthikanti_two.answer.ok());
  CHECK(korthikanti_two.layer.kept_per_token.value() -
            korthikanti_one.layer.kept_per_token.value() ==
        doctest::Approx((2 * kH + 2) * kTopK * (2.0 / 2 - 1.0 / 2)));
  setup.activation_model = ActivationModel::kLlamaBlock;
  // Megatron-LM's MoELayer refuses tensor parallelism without sequence parallelism in training.
  setup.layout.sequence_parallel = false;
  setup.layout.expert_tensor_parallel = 0;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kSequenceParallel);
}

}  // namespace torchtitan_moe_test
