// The arithmetic of one estimate (calculation.hpp): each part in its own place, composed here.
#include "estimate/calculation.hpp"

#include <algorithm>
#include <cstddef>

#include "estimate/layer_mix.hpp"
#include "estimate/offload.hpp"
#include "estimate/replay.hpp"
#include "estimate/stage.hpp"
#include "settings/check.hpp"
#include "stacks/stack_rows.hpp"
#include "stacks/stack_run.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

// Everything one pipeline stage holds on its device, and what it gives the host.
Ledger stage_ledger(const Calculation& calc, const TrainingSetup& setup,
                    const StagePlacement& stage, const ActivationsPerLayer& layer, bool writing) {
  Ledger ledger(writing);
  add_model_states(ledger, setup, calc.placement, stage, calc.per, calc.base);
  add_stage_terms(ledger, *calc.shape, setup, calc.placement, stage, layer);
  offload_to_host(ledger, setup, calc.placement, stage, calc.per, calc.base, layer);
  rollout_to_host(ledger, setup, calc.placement, stage);
  return ledger;
}

// The placement, the bytes per parameter and one layer's activations of a checked setup, as run.
void place_and_count(Calculation& calc, const TrainingSetup& setup, int micro_batch_sequences,
                     bool flash_attention, CalculationOptions options) {
  const ModelShape& shape = *calc.shape;
  calc.placement = place_parameters(shape, setup);
  calc.per = state_bytes_per_parameter(shape, setup);
  calc.base = base_weight_bytes(shape, setup);
  calc.layer =
      layer_activations(shape, setup, micro_batch_sequences, flash_attention, Pen(options.writing));
}

// The pipeline's stages: the first holds the most activations, the last the output layer, and
// under uneven stages a middle stage may hold more layers than either (without a pipeline the
// first and the last are one).
std::vector<const StagePlacement*> stages_of(const Calculation& calc, const TrainingSetup& setup) {
  std::vector<const StagePlacement*> stages = {&calc.placement.first};
  if (setup.layout.pipeline_parallel > 1) {
    stages.push_back(&calc.placement.last);
    for (const StagePlacement& middle : calc.placement.middle) stages.push_back(&middle);
  }
  return stages;
}

// A stage's figures, for the most loaded's.
StageFigures figures_of(const StagePlacement& stage, const TrainingSetup& setup, double total,
                        double peak_allocated, double peak_reserved) {
  StageFigures figures;
  figures.index = stage.index;
  figures.role = setup.layout.pipeline_parallel == 1 ? PipelineStage::kOnly
                 : stage.role == StageRole::kLast    ? PipelineStage::kLast
                 : stage.role == StageRole::kMiddle  ? PipelineStage::kMiddle
                                                     : PipelineStage::kFirst;
  figures.layers = stage.layers;
  figures.parameters = stage.parameters;
  figures.total_bytes = total;
  figures.peak_allocated_bytes = peak_allocated;
  figures.peak_reserved_bytes = peak_reserved;
  return figures;
}

// Each stage weighed as a stage's device is weighed (its ledger, and under a stack its replayed
// step): the most loaded is the one that weighs the most, and the ledger holds the stage the setup
// asks for, or that one.
struct Weighed {
  Ledger ledger;
  Breakdown whole;  // its terms whole, as counted, before a stack's replay
  StackHoldings holdings;
  double weight = 0;
};
template <typename Weigh>
void choose_stage(Calculation& calc, const TrainingSetup& setup, const Weigh& weigh) {
  const int asked = answered_stage_index(setup);
  bool any = false;
  double most_weight = 0;
  bool answered = false;
  double answered_weight = 0;
  for (const StagePlacement* stage : stages_of(calc, setup)) {
    Weighed weighed = weigh(*stage);
    const StageFigures figures =
        figures_of(*stage, setup, weighed.ledger.device.total(),
                   weighed.holdings.peak_allocated_bytes, weighed.holdings.peak_reserved_bytes);
    if (!any || weighed.weight > most_weight) {
      calc.most_loaded = figures;
      most_weight = weighed.weight;
    }
    any = true;
    const bool answer = asked < 0 ? !answered || weighed.weight > answered_weight
                                  : stage->index == asked && !answered;
    if (!answer) continue;
    answered = true;
    answered_weight = weighed.weight;
    calc.whole_terms = weighed.whole;
    calc.ledger = std::move(weighed.ledger);
    calc.stage = *stage;
    calc.stage_figures = figures;
    calc.stack_terms = std::move(weighed.holdings.terms);
    calc.peak_allocated_bytes = weighed.holdings.peak_allocated_bytes;
    calc.peak_reserved_bytes = weighed.holdings.peak_reserved_bytes;
  }
}

// The idealised step: the most loaded stage is the one whose terms add up to the most.
void choose_idealised_stage(Calculation& calc, const TrainingSetup& setup, bool writing) {
  choose_stage(calc, setup, [&](const StagePlacement& stage) {
    const ActivationsPerLayer layer =
        stage_layer_activations(calc.layer, *calc.shape, setup, stage, Pen(writing));
    Weighed weighed{stage_ledger(calc, setup, stage, layer, writing), {}, {}, 0};
    weighed.whole = weighed.ledger.device;
    weighed.weight = weighed.whole.total();
    weighed.holdings.peak_allocated_bytes = weighed.weight;
    weighed.holdings.peak_reserved_bytes = weighed.weight;
    return weighed;
  });
  calc.layer = stage_layer_activations(calc.layer, *calc.shape, setup, calc.stage, Pen(writing));
}

// Under a stack's replay each stage's step is replayed and the most loaded is the one whose
// reserved peak is highest, as a run's peak is read as the highest over its ranks: a stack's
// pipeline schedule may hold on the last stage what the idealised terms do not count.
void choose_replayed_stage(Calculation& calc, const TrainingSetup& setup, bool writing) {
  choose_stage(calc, setup, [&](const StagePlacement& stage) {
    const ActivationsPerLayer layer =
        stage_layer_activations(calc.layer, *calc.shape, setup, stage, Pen(writing));
    Weighed weighed{stage_ledger(calc, setup, stage, layer, writing), {}, {}, 0};
    weighed.whole = weighed.ledger.device;
    weighed.holdings = apply_stack(weighed.ledger, step_device(setup, *calc.shape, calc.placement,
                                                               stage, layer, weighed.whole));
    weighed.weight = weighed.holdings.peak_reserved_bytes;
    return weighed;
  });
  // The views (the timeline, the replayed step) read the answered stage's layer.
  calc.layer = stage_layer_activations(calc.layer, *calc.shape, setup, calc.stage, Pen(writing));
}

// The sentences said of a setup beside its arithmetic: what its stack did to it, and what the
// activation models leave out of it.
void add_notes(Calculation& calc, const TrainingSetup& asked, std::vector<std::string> run_notes) {
  calc.notes = std::move(run_notes);
  if (asked.dropout == Dropout::kModel && calc.shape->dropout_stated) {
    calc.notes.push_back("Dropout as the config sets it: " + calc.shape->dropout_said + ".");
  }
  // What the setup brings under its stack (stack_rows.hpp; none in the first view).
  for (std::string& note : stack_notes(asked)) calc.notes.push_back(std::move(note));
}

// A hybrid (models.hpp): how many layers of each kind, and what each keeps (stage.cpp), once
// they are counted.
void add_hybrid_note(Calculation& calc, const TrainingSetup& setup) {
  if (!hybrid_linear_attention(*calc.shape)) return;
  const ModelShape& shape = *calc.shape;
  // "Of its 27 layers, 20 are Kimi Delta Attention layers, each keeping 308,232 B a token, and 7
  // full-attention layers, 153,740 B a token": each kind in kHybridLayerKinds.
  std::string text = "Of its " + format_count(shape.num_layers) + " layers, ";
  const std::vector<ActivationsPerLayer::Kind>& kinds = calc.layer.kinds;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const double count =
        layers_of_kinds_between(shape, 0, shape.num_layers, std::string_view(&kinds[i].kind, 1));
    std::string name = layer_kind_name(shape, kinds[i].kind);
    if (count == 1) name.pop_back();  // "layers" → "layer"
    if (i > 0) text += i + 1 == kinds.size() ? ", and " : ", ";
    text += format_count(count) + " " +
            (i == 0 ? std::string(count == 1 ? "is a " : "are ") + name +
                          (count == 1 ? ", keeping " : ", each keeping ")
                    : name + ", ") +
            format_count(kinds[i].kept_per_token) + " B a token";
  }
  calc.notes.push_back(
      text +
      (setup.recompute == Recompute::kFull ? " (their inputs, under full recomputation)" : "") +
      ", " + (kinds.size() == 2 ? "both kinds" : "each kind") +
      " counted tensor by tensor whichever activation model is chosen.");
}

// Gemma's final_logit_softcapping (models.hpp): the tanh transformers' forward runs over the
// logits keeps its output, one more BF16 tensor of their size, which the logits term (each
// loss's own) does not hold; Liger's fused loss and Cut Cross-Entropy cap inside their kernels.
void add_softcapping_note(Calculation& calc, const TrainingSetup& setup) {
  const ModelShape& shape = *calc.shape;
  if (shape.final_logit_softcapping <= 0 || setup.loss == Loss::kFusedLinear ||
      setup.loss == Loss::kCutCrossEntropy) {
    return;
  }
  calc.notes.push_back("Its final_logit_softcapping (" +
                       format_count(shape.final_logit_softcapping) +
                       ") runs cap·tanh(logits / cap) in transformers' forward, whose tanh keeps "
                       "one more BF16 tensor of the logits' size (2 B × V a row of logits) that "
                       "the logits figure leaves out.");
}

// A DSA model's layers (models.hpp, sparse_attention): what picks the keys, and what a layer keeps.
// Said once the answered stage is chosen (its layer: layer_mix.cpp, stage_layer_activations), in
// its place among the notes, `at`.
void add_sparse_attention_note(Calculation& calc, const TrainingSetup& setup, std::size_t at) {
  if (!sparse_attention(*calc.shape)) return;
  const ModelShape& shape = *calc.shape;
  const bool mean = calc.layer.dense_kept_per_token > 0 && setup.recompute != Recompute::kFull;
  calc.notes.insert(
      calc.notes.begin() + static_cast<std::ptrdiff_t>(std::min(at, calc.notes.size())),
      "Each of its " + format_count(shape.num_layers) +
          " layers holds DeepSeek Sparse Attention: an indexer of " +
          format_count(shape.index_n_heads) + " heads picks the " + format_count(shape.index_topk) +
          " keys each query attends to. A layer keeps " +
          format_count(calc.layer.kept_per_token.value()) + " B a token" +
          (setup.recompute == Recompute::kFull ? " (its input, under full recomputation)" : "") +
          (mean ? " (the mean of the dense and mixture layers on the answered stage)" : "") +
          ", counted tensor by tensor as Megatron-LM's TileLang kernels keep them, whichever "
          "activation model is chosen.");
}

// Muon's step (Optimizer::kMuon, under the ideal step alone: check.cpp): its Newton–Schulz working
// set for its largest matrix is held at the optimiser's step, once the passes' activations and
// logits are freed. Where it is the larger, the step would be the peak, which the idealised terms
// do not count: refused, naming the optimiser; otherwise said in a note.
void check_muon_step(Calculation& calc) {
  const MuonWorkingSet set = muon_working_set(*calc.shape, calc.per.state_value);
  const double passes = calc.whole_terms[Term::kActivations] + calc.whole_terms[Term::kLogits];
  const std::string held =
      "At the optimiser's step Muon's Newton–Schulz iteration on its largest "
      "matrix (" +
      format_count(set.rows) + " × " + format_count(set.cols) + ") holds " +
      format_bytes(set.bytes);
  if (set.bytes > passes) {
    calc.answer = refusal(setting_id::kOptimizer,
                          held + ", more than the " + format_bytes(passes) +
                              " of activations and logits the passes hold: the step would be the "
                              "peak, which the ideal step does not count. Choose a larger "
                              "micro-batch, or another optimiser.");
    return;
  }
  calc.notes.push_back(held + ", within the " + format_bytes(passes) +
                       " the passes hold and have freed by then: the peak stays the passes'.");
}

// A stage asked for that is not the most loaded: which one decides whether the run fits.
void add_stage_note(Calculation& calc, const TrainingSetup& setup) {
  if (calc.stage_figures.index == calc.most_loaded.index) return;
  const int p = setup.layout.pipeline_parallel;
  calc.notes.push_back(
      "These figures are of " + stage_words(calc.stage_figures, p) +
      ", as asked; the most loaded device, on " + stage_words(calc.most_loaded, p) + ", holds " +
      format_bytes(calc.most_loaded.total_bytes) + ", and decides whether the run fits.");
}

}  // namespace

Calculation calculate(const TrainingSetup& asked, int micro_batch_sequences, bool flash_attention,
                      CalculationOptions options) {
  Calculation calc;
  calc.shape = resolve_model(asked);
  calc.answer = check_setup(asked, calc.shape);
  if (!calc.answer.ok()) return calc;
  StackRun run = stack_run(asked, *calc.shape);
  add_notes(calc, asked, std::move(run.notes));
  if (run.shape != nullptr) {
    calc.built_shape = std::move(run.shape);
    calc.shape = calc.built_shape.get();
  }
  const TrainingSetup& setup = run.setup;
  place_and_count(calc, setup, micro_batch_sequences, flash_attention, options);
  add_hybrid_note(calc, setup);
  const std::size_t sparse_note_at = calc.notes.size();
  add_softcapping_note(calc, setup);
  if (stack_row(setup.stack).replayed && options.replay_stack) {
    choose_replayed_stage(calc, setup, options.writing);
  } else {
    choose_idealised_stage(calc, setup, options.writing);
  }
  add_sparse_attention_note(calc, setup, sparse_note_at);
  if (!(stack_row(setup.stack).replayed && options.replay_stack) &&
      setup.optimizer == Optimizer::kMuon) {
    check_muon_step(calc);
  }
  add_stage_note(calc, setup);
  return calc;
}

std::vector<TimelinePoint> replayed_step(const Calculation& calc, const TrainingSetup& setup) {
  std::vector<TimelinePoint> points;
  if (!calc.answer.ok()) return points;
  replay::replay(
      step_device(setup, *calc.shape, calc.placement, calc.stage, calc.layer, calc.whole_terms),
      &points);
  return points;
}

Calculation calculate_plate(const TrainingSetup& setup, int micro_batch_sequences,
                            bool flash_attention, CalculationOptions options) {
  Calculation calc;
  calc.shape = resolve_model(setup);
  calc.answer = check_plate_setup(setup, calc.shape);
  if (!calc.answer.ok()) return calc;
  add_notes(calc, setup, {});
  place_and_count(calc, setup, micro_batch_sequences, flash_attention, options);
  add_hybrid_note(calc, setup);
  const std::size_t sparse_note_at = calc.notes.size();
  add_softcapping_note(calc, setup);
  choose_idealised_stage(calc, setup, options.writing);
  add_sparse_attention_note(calc, setup, sparse_note_at);
  return calc;
}

}  // namespace trainmem
