// Each term's arithmetic, with the setup's own numbers written into its formula, and its source.
#include <cmath>
#include <cstdio>

#include "calculation.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

std::string number(double value) {
  // Whole numbers with separators; fractions to three significant places.
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return format_count(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string state_formula(double bytes_per_parameter, double parameters, double shards,
                          double bytes) {
  std::string formula = number(bytes_per_parameter) + " B × " + number(parameters) + " parameters";
  if (shards > 1) formula += " / " + number(shards) + " ZeRO shards";
  return formula + " = " + format_bytes(bytes);
}

// Under expert parallelism the routed experts' states shard over their own group.
std::string state_formula(double bytes_per_parameter, double parameters, double shards,
                          double expert_parameters, double expert_shards, double bytes) {
  if (expert_parameters == 0 || (shards == 1 && expert_shards == 1) || shards == expert_shards) {
    return state_formula(bytes_per_parameter, parameters, shards, bytes);
  }
  return number(bytes_per_parameter) + " B × (" + number(parameters - expert_parameters) +
         " parameters / " + number(shards) + " ZeRO shards + " + number(expert_parameters) +
         " routed experts' / " + number(expert_shards) +
         (expert_shards == 1 ? " shard" : " shards") +
         " of their data-parallel group) = " + format_bytes(bytes);
}

}  // namespace

std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup) {
  const Calculation calc =
      calculate_estimate(setup, setup.micro_batch_sequences, setup.flash_attention);
  const Estimate& estimate = calc.estimate;
  if (!estimate.answer.ok()) return {};

  const ModelShape& shape = *calc.shape;
  const ParallelLayout& layout = setup.layout;
  const BytesPerParameter& per = calc.bytes_per_parameter;
  const double parameters = estimate.parameters_on_device;
  const int zero = layout.zero_stage;
  const auto shards = [&](int stage_that_shards) {
    return zero >= stage_that_shards ? calc.zero_shards : 1.0;
  };
  const auto expert_shards = [&](int stage_that_shards) {
    return zero >= stage_that_shards ? calc.expert_zero_shards : 1.0;
  };
  const double expert_parameters =
      calc.last_is_most_loaded ? calc.last.expert_parameters : calc.first.expert_parameters;
  const auto formula = [&](double bytes_per_parameter, int stage_that_shards, double bytes) {
    return state_formula(bytes_per_parameter, parameters, shards(stage_that_shards),
                         expert_parameters, expert_shards(stage_that_shards), bytes);
  };
  const std::string zero_source = "Rajbhandari et al., \"ZeRO\", SC 2020";
  const MemoryBreakdown& bytes = estimate.bytes;

  std::vector<TermArithmetic> terms;
  terms.push_back({"weights", "Weights", formula(per.weights, 3, bytes.weights_bytes),
                   zero_source + "; precision " + choice_id(setup.precision)});
  terms.push_back({"gradients", "Gradients", formula(per.gradients, 2, bytes.gradients_bytes),
                   zero_source + "; precision " + choice_id(setup.precision)});
  terms.push_back({"masterWeights", "Master weights",
                   formula(per.master_weights, 1, bytes.master_weights_bytes),
                   "Micikevicius et al., \"Mixed Precision Training\", ICLR 2018"});
  const Choice& optimizer = choices<Optimizer>()[static_cast<std::size_t>(setup.optimizer)];
  const std::string optimizer_source = optimizer.name + ": " + optimizer.source;
  terms.push_back({"optimizerStates", "Optimiser states",
                   formula(per.optimizer_states, 1, bytes.optimizer_states_bytes),
                   optimizer_source});

  const ActivationsPerLayer& layer = calc.layer;
  const bool full = setup.recompute == Recompute::kFull;
  const bool first_stage = !calc.last_is_most_loaded;
  const double layers = first_stage ? shape.num_layers : calc.layers_per_stage;
  std::string activations = number(layers) + " layers";
  if (first_stage && calc.in_flight_factor != 1) {
    activations += " × " + number(calc.in_flight_factor) + " (interleaved schedule)";
  }
  const bool llama_block = setup.activation_model == ActivationModel::kLlamaBlock;
  activations += " × " + number(layer.tokens_on_device) + " tokens × ";
  if (full) {
    activations += number(shape.hidden_size) + " × " +
                   number(kFullRecomputeBytesPerTokenPerHidden) +
                   (layout.sequence_parallel ? " / " + number(layout.tensor_parallel) : "") +
                   " B + one layer rebuilt (" + format_bytes(layer.recompute_working_bytes) +
                   (bytes.logits_bytes > 0 ? ", less the logits' memory it reuses" : "") + ")";
  } else if (llama_block) {
    activations += number(layer.saved_bytes_per_token) + " B saved per token";
  } else {
    activations += number(shape.hidden_size) + " × (" + number(layer.replicated_factor) + " + " +
                   number(layer.score_factor) + ") B";
  }
  activations += " = " + format_bytes(bytes.activations_bytes);
  std::string activations_source = "Korthikanti et al., MLSys 2023, equation 1 and Table 2";
  if (llama_block) {
    activations_source =
        "the Llama block's saved tensors, one by one (docs/activations.md); the layer's input "
        "alone under full recomputation (Chen et al. 2016)";
  } else if (shape.num_experts > 1 &&
             (shape.moe_ffn_hidden_size > 0 || shape.shared_expert_ffn_hidden_size > 0)) {
    activations_source += "; top-" + std::to_string(shape.num_experts_per_token) +
                          " routing and shared experts: section 4.1's MLP share (19) for each "
                          "MLP a token passes through, its 16 scaled by the MLP's width over 4h";
  } else if (shape.num_experts_per_token > 1) {
    activations_source += "; top-" + std::to_string(shape.num_experts_per_token) +
                          " routing: section 4.1's MLP share (19) once more for each expert "
                          "past the first";
  }
  if (!llama_block && latent_attention(shape)) {
    activations_source +=
        "; its attention share assumes heads of h/a, which latent attention does not keep: the "
        "llama-block model counts latent attention's tensors";
  }
  if (shape.num_experts > 1 && shape.num_dense_layers > 0) {
    activations_source += "; every layer counted as the larger of a dense and a mixture layer";
  }
  terms.push_back({"activations", "Activations", activations, activations_source});

  if (setup.logits) {
    const std::string logits =
        number(logits_bytes_per_token_per_vocab(setup.loss)) + " B × " +
        number(layer.tokens_on_device) + " tokens × " + number(shape.vocab_size) + " vocabulary" +
        (layout.tensor_parallel > 1 ? " / " + number(layout.tensor_parallel) : "") + " = " +
        format_bytes(bytes.logits_bytes);
    terms.push_back(
        {"logits", "Logits and loss", logits,
         setup.loss == Loss::kVocabParallel
             ? "BF16 logits plus their FP32 copy for Megatron-LM's vocab-parallel cross-entropy"
             : "an unfused cross-entropy over FP32-upcast logits: its saved log-softmax and two "
               "gradients at the loss's backward (measured: tests/data/loss-peak-cpu.json)"});
  }
  return terms;
}

}  // namespace trainmem
