// Mixtures of experts: each token's activations pass through its top-k experts' MLPs, k - 1 more
// MLP shares per layer than a dense model (Korthikanti et al. 2023, section 4.1's split).
#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"

using namespace trainmem;

namespace experts_test {

namespace {

constexpr double kTokens = 8192;
constexpr double kHidden = 4096;
constexpr double kLayers = 32;
constexpr double kSbh = kTokens * kHidden;  // s·b·h for one 8,192-token sequence, h = 4,096

TrainingSetup mixtral(int t, bool sp) {
  TrainingSetup setup;
  setup.model_id = "mixtral-8x7b";
  setup.layout.tensor_parallel = t;
  setup.layout.sequence_parallel = sp;
  return setup;
}

// Mixtral's shape with one expert: the dense equivalent, Mistral 7B's shape.
TrainingSetup dense_equivalent(int t, bool sp) {
  TrainingSetup setup = mixtral(t, sp);
  setup.model_id = kCustomModelId;
  setup.custom_model = *find_preset("mixtral-8x7b");
  setup.custom_model.id = kCustomModelId;
  setup.custom_model.num_experts = 1;
  setup.custom_model.num_experts_per_token = 1;
  return setup;
}

double activations(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.status == Status::kOk, estimate.answer.message);
  return estimate.bytes[Term::kActivations];
}

}  // namespace

TEST_CASE(
    "Korthikanti's 34 splits as attention 11, MLP 19 and norms 4, the MLP as 3 + 16 under TP") {
  CHECK(kKorthikantiAttentionBytesPerTokenPerHidden == 11);
  CHECK(kKorthikantiMlpBytesPerTokenPerHidden == 19);
  CHECK(kKorthikantiNormBytesPerTokenPerHidden == 4);
  CHECK(kKorthikantiMlpReplicatedBytesPerTokenPerHidden == 3);
  CHECK(kKorthikantiMlpShardedBytesPerTokenPerHidden == 16);
}

TEST_CASE(
    "Mixtral at top-2 saves one more MLP share, 19·s·b·h per layer, than its dense equivalent") {
  const double top2 = activations(mixtral(1, false));
  const double dense = activations(dense_equivalent(1, false));
  CHECK(dense == kLayers * 34 * kSbh);
  CHECK(top2 == kLayers * (34 + 19) * kSbh);
  CHECK(top2 - dense == kLayers * 19 * kSbh);
  CHECK(format_bytes(top2) == "56.9 GB");
}

TEST_CASE(
    "under tensor parallelism the extra expert adds 3 + 16/t, with sequence parallelism 19/t and "
    "the routed inputs gathered over etp = t") {
  for (int t : {2, 4, 8}) {
    CAPTURE(t);
    const double degree = t;
    CHECK(activations(mixtral(t, false)) ==
          doctest::Approx(kLayers * kSbh * (10 + 24 / degree + 3 + 16 / degree)));
    CHECK(activations(mixtral(t, false)) - activations(dense_equivalent(t, false)) ==
          doctest::Approx(kLayers * kSbh * (3 + 16 / degree)));
    // Each rank routes its T/t tokens and Megatron-LM gathers the copies over etp = t
    // (dispatch_postprocess): the two copies' inputs, 2 B each, are whole, not over t.
    const double gathered_inputs = 2 * 2 * (degree - 1) / degree;
    CHECK(activations(mixtral(t, true)) ==
          doctest::Approx(kLayers * kSbh * ((34 + 19) / degree + gathered_inputs)));
    CHECK(activations(mixtral(t, true)) - activations(dense_equivalent(t, true)) ==
          doctest::Approx(kLayers * kSbh * (19 / degree + gathered_inputs)));
  }
}

TEST_CASE("top-k grows the activations by k - 1 MLP shares, and top-1 is exactly dense") {
  TrainingSetup setup = dense_equivalent(1, false);
  setup.custom_model.num_experts = 8;
  for (int k : {1, 2, 4, 8}) {
    CAPTURE(k);
    setup.custom_model.num_experts_per_token = k;
    CHECK(activations(setup) == kLayers * (34 + 19.0 * (k - 1)) * kSbh);
  }
  // Top-1 of 8 experts: the dense figure to the byte, as Mistral 7B's.
  setup.custom_model.num_experts_per_token = 1;
  TrainingSetup mistral;
  mistral.model_id = "mistral-7b";
  CHECK(activations(setup) == activations(mistral));
}

TEST_CASE("the score term and full recomputation treat the extra expert like the rest of a layer") {
  TrainingSetup scores = mixtral(1, false);
  scores.flash_attention = false;
  CHECK(activations(scores) == kLayers * (34 + 19 + 5 * 32 * kTokens / kHidden) * kSbh);
  TrainingSetup full = mixtral(1, false);
  full.recompute = Recompute::kFull;
  // Each layer keeps its input; the one rebuilt layer holds its 53 less the input's 2.
  CHECK(activations(full) == kLayers * 2 * kSbh + (34 + 19 - 2) * kSbh);
}

TEST_CASE("the experts' weights: E MLPs split by t, the router whole on every rank") {
  TrainingSetup setup = mixtral(8, true);
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  const ParameterCounts counts = parameter_counts(*find_preset("mixtral-8x7b"));
  CHECK(counts.replicated_per_layer == kHidden * 8);
  CHECK(estimate.parameters_on_device ==
        kLayers * (counts.attention_and_mlp_per_layer / 8 + counts.norms_per_layer +
                   counts.replicated_per_layer) +
            2 * counts.embedding / 8 + counts.final_norm);
  CHECK(estimate.num_parameters == 46702792704.0);
}

TEST_CASE("tensor parallelism must divide heads, key/value heads and FFN width, not the experts") {
  // 8 experts do not constrain t: 16 is refused by the 8 key/value heads alone.
  const Estimate sixteen = estimate_memory(mixtral(16, true));
  CHECK(sixteen.answer.status == Status::kInvalidInput);
  CHECK(sixteen.answer.setting == "tp");
  CHECK(sixteen.answer.message ==
        "Tensor parallelism 16 must divide the 32 attention heads, 8 key/value heads and 14,336 "
        "FFN width of Mixtral 8x7B.");
  TrainingSetup three_experts = dense_equivalent(8, true);
  three_experts.custom_model.num_experts = 3;
  three_experts.custom_model.num_experts_per_token = 2;
  CHECK(estimate_memory(three_experts).answer.status == Status::kOk);
}

TEST_CASE("the activations' arithmetic names top-k routing and its source") {
  const std::vector<TermArithmetic> terms = explain_estimate(mixtral(1, false));
  REQUIRE(terms.size() == 5);
  CHECK(terms[4].formula ==
        "32 layers × 8,192 tokens × 4,096 h × (53 + 0 (FlashAttention: no scores)) B = 56.9 GB");
  CHECK(terms[4].source ==
        "Korthikanti et al., MLSys 2023, equation 1 and Table 2; top-2 routing: section 4.1's "
        "MLP share (19) once more for each expert past the first");
  CHECK(explain_estimate(TrainingSetup{})[4].source ==
        "Korthikanti et al., MLSys 2023, equation 1 and Table 2");
}

}  // namespace experts_test
