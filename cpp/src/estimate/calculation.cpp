// The arithmetic of one estimate (calculation.hpp): each part in its own place, composed here.
#include "estimate/calculation.hpp"

#include "estimate/offload.hpp"
#include "estimate/replay.hpp"
#include "estimate/stage.hpp"
#include "settings/check.hpp"
#include "stacks/stack_rows.hpp"

namespace trainmem {

namespace {

// Everything one pipeline stage holds on its device, and what it gives the host.
Ledger stage_ledger(const Calculation& calc, const TrainingSetup& setup, StageRole role,
                    bool writing) {
  Ledger ledger(writing);
  const StagePlacement& stage =
      role == StageRole::kFirst ? calc.placement.first : calc.placement.last;
  add_model_states(ledger, setup, calc.placement, stage, calc.per, calc.base);
  add_stage_terms(ledger, *calc.shape, setup, calc.placement, role, calc.layer);
  offload_to_host(ledger, setup, calc.placement, stage, calc.per, calc.base, calc.layer);
  return ledger;
}

}  // namespace

Calculation calculate(const TrainingSetup& setup, int micro_batch_sequences, bool flash_attention,
                      CalculationOptions options) {
  Calculation calc;
  calc.shape = resolve_model(setup);
  calc.answer = check_setup(setup, calc.shape);
  if (!calc.answer.ok()) return calc;
  const ModelShape& shape = *calc.shape;
  calc.placement = place_parameters(shape, setup);
  calc.per = state_bytes_per_parameter(shape, setup);
  calc.base = base_weight_bytes(shape, setup);
  calc.layer =
      layer_activations(shape, setup, micro_batch_sequences, flash_attention, Pen(options.writing));

  // The first stage holds the most activations, the last the output layer: the most loaded is
  // whichever holds more (without a pipeline the two are one).
  calc.ledger = stage_ledger(calc, setup, StageRole::kFirst, options.writing);
  if (setup.layout.pipeline_parallel > 1) {
    Ledger last = stage_ledger(calc, setup, StageRole::kLast, options.writing);
    calc.last_is_most_loaded = last.device.total() > calc.ledger.device.total();
    if (calc.last_is_most_loaded) calc.ledger = std::move(last);
  }
  calc.whole_terms = calc.ledger.device;
  if (stack_row(setup.stack).step != nullptr && options.replay_stack) {
    StackHoldings holdings =
        apply_stack(calc.ledger, step_device(setup, shape, calc.placement, calc.last_is_most_loaded,
                                             calc.layer, calc.whole_terms));
    calc.stack_terms = std::move(holdings.terms);
    calc.peak_allocated_bytes = holdings.peak_allocated_bytes;
    calc.peak_reserved_bytes = holdings.peak_reserved_bytes;
  } else {
    calc.peak_allocated_bytes = calc.ledger.device.total();
    calc.peak_reserved_bytes = calc.peak_allocated_bytes;
  }
  return calc;
}

}  // namespace trainmem
