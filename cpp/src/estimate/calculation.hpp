// The arithmetic of one estimate, before it is written into an Estimate (estimate.cpp): checked
// (settings/check.cpp), placed (placement.cpp), its states (states.cpp), each stage's activations
// and the rest (stage.cpp), offloading (offload.cpp) and, under a stack, the replayed step
// (replay.cpp). The estimate, its arithmetic (views/explain.cpp) and its timeline
// (views/timeline.cpp) all read this one Calculation. Not part of the public API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "activations/layer.hpp"
#include "estimate/ledger.hpp"
#include "estimate/placement.hpp"
#include "estimate/states.hpp"
#include "trainmem/answer.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

struct Calculation {
  Answer answer;  // refused: nothing below is filled
  // The setup's model as its stack builds it (stacks/stack_run.hpp): resolve_model's, as long as
  // it lives, or `built_shape` (a padded vocabulary).
  const ModelShape* shape = nullptr;
  std::shared_ptr<const ModelShape> built_shape;
  // What the stack did to the setup before it ran it (stack_run.hpp), a sentence each; the
  // arithmetic below is of the setup as run.
  std::vector<std::string> notes;
  Placement placement;
  BytesPerParameter per;  // bytes per trained parameter, as the stack holds them
  BaseWeightBytes base;   // the frozen base's linear weights (LoRA)
  ActivationsPerLayer layer;
  StagePlacement stage;  // the stage whose terms the ledger holds: the setup's, or the most loaded
  StageFigures stage_figures;  // its figures
  // The most loaded stage's figures, its total and peaks (the ledger's own when it is the stage
  // answered), on which the fit is judged.
  StageFigures most_loaded;
  // The most loaded stage's terms (and, when written, their workings); under a stack, as they
  // stand at the step's allocated peak, with the stack's own terms.
  Ledger ledger;
  Breakdown whole_terms;  // the same terms whole, as counted, before a stack's replay
  // Under a stack: its own terms and the runtime's, and the step's peaks.
  std::vector<StackTerm> stack_terms;
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
};

// What to calculate: `writing` for the workings' words; without `replay_stack` a stack's step is
// not replayed (its terms are whole and it names no stack term, which is all the activations'
// curve needs).
struct CalculationOptions {
  bool writing = false;
  bool replay_stack = true;
};

// Checks `setup` and calculates it for `micro_batch_sequences` sequences, with or without
// FlashAttention.
Calculation calculate(const TrainingSetup& setup, int micro_batch_sequences, bool flash_attention,
                      CalculationOptions options = {});

// The plate's view alone (the first view's module, trainmem.wasm, carries this and not the
// rest): a setup whose every setting but the plate's (Setting::plate) stands at its default,
// under the idealised step. The same stages as `calculate`, without a stack's run or replay, so
// the same Calculation for such a setup (tests/cpp/plate_test.cpp); any other is refused.
Calculation calculate_plate(const TrainingSetup& setup, int micro_batch_sequences,
                            bool flash_attention, CalculationOptions options = {});

// The answered stage's step under its stack, replayed once more with each mark recorded (the
// timeline, and RL post-training's phases); empty for a refused calculation.
std::vector<TimelinePoint> replayed_step(const Calculation& calc, const TrainingSetup& setup);

// Either of the two, for the estimate and the workshop's view written over it (estimate.cpp).
using Calculator = Calculation (*)(const TrainingSetup& setup, int micro_batch_sequences,
                                   bool flash_attention, CalculationOptions options);

}  // namespace trainmem
