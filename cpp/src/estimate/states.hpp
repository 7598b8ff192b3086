// The model states: weights, gradients, master weights and the optimiser's state, on one stage of
// a device, as its precision, its optimiser, ZeRO and its training stack hold them.
#pragma once

#include "estimate/ledger.hpp"
#include "estimate/placement.hpp"
#include "trainmem/options.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Bytes per trained parameter: the precision's and the optimiser's (options.hpp), the adapters'
// own factored state under LoRA with Adafactor, and what the stack holds instead (its row).
BytesPerParameter state_bytes_per_parameter(const ModelShape& shape, const TrainingSetup& setup);

// The frozen base's linear weights under LoRA (all 0 without): bytes per parameter (2, NF4's
// 0.516, int8's 1 + 4/in), and the same split into bytes per value and per output row, int8's
// scales counted by the row so that every byte count stays a whole number.
struct BaseWeightBytes {
  double per_parameter = 0;
  double per_value = 0;
  double per_row = 0;
  // The rest of the base (the embedding, the norms, the output layer): BF16, or FP32 under
  // prepare_model_for_kbit_training.
  double others = 0;
  // Of the rest, the embedding matrices: as `others`, but BF16 again under TRL 0.13-0.21's cast
  // back.
  double embeddings = 0;
};
BaseWeightBytes base_weight_bytes(const ModelShape& shape, const TrainingSetup& setup);

// The weights of `parameters` (of a stage, or of one unit in flight): the trainable ones at the
// precision's bytes, the frozen base's linear weights at the base's, the rest of the base in
// BF16: "2 B × 41,943,040 adapter + 0.516 B × … frozen linear + 2 B × … other frozen parameters".
Figure weight_figure(const Pen& pen, const StageParameters& parameters,
                     const BytesPerParameter& per, const BaseWeightBytes& base);

// What a ZeRO stage that shards (`shards`) leaves on the device of `count` parameters, `experts` of
// them the routed experts': the others over d·c, the experts over their own data-parallel group.
// In words: "8,030,261,248 parameters / 8 ZeRO shards".
Figure sharded(const Pen& pen, const Placement& placement, bool shards, double count,
               double experts);

// The four model states of `stage`, each a line of its term with its source.
void add_model_states(Ledger& ledger, const TrainingSetup& setup, const Placement& placement,
                      const StagePlacement& stage, const BytesPerParameter& per,
                      const BaseWeightBytes& base);

}  // namespace trainmem
