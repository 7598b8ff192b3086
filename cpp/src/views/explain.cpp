// "Show the arithmetic" (explain.hpp): the workings each step of the estimate recorded as it
// computed, in words. Nothing here computes a byte or restates a formula.
#include "trainmem/explain.hpp"

#include "estimate/calculation.hpp"
#include "estimate/stage.hpp"
#include "settings/check.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup) {
  const Calculation calc =
      calculate(setup, setup.micro_batch_sequences, setup.flash_attention, {true, true});
  std::vector<TermArithmetic> terms;
  if (!calc.answer.ok()) return terms;
  for (const Working& working : calc.ledger.workings()) {
    terms.push_back({working.id, working.label, working.formula(), working.source()});
  }
  return terms;
}

SavedTensorList saved_tensors_of(const TrainingSetup& setup) {
  SavedTensorList list;
  if (!check_setup(setup, resolve_model(setup)).ok()) return list;
  list.in_use = layers_tensor_by_tensor(setup);
  list.caption = setup.recompute == Recompute::kFull
                     ? "The tensors one layer saves while it is rebuilt in the backward pass (full "
                       "recomputation keeps only its input between passes), per token on one device"
                     : "The tensors one layer saves for its backward pass, per token on one device";
  const ModelShape& shape = *resolve_model(setup);
  if (hybrid_linear_attention(shape)) {
    // The layers' larger kind in number; the arithmetic's activations give both kinds' bytes.
    // Nemotron-H's linear mixers stand alone in their blocks ('l').
    const double linear = linear_attention_layers_between(shape, 0, shape.num_layers);
    const char kind = layers_of_kinds_between(shape, 0, shape.num_layers, "L") > 0 ? 'L' : 'l';
    list.in_use = true;
    list.caption = list.caption + ": one of the " + format_count(linear) + " " +
                   layer_kind_name(shape, kind) + " among " + shape.name + "'s " +
                   format_count(shape.num_layers) +
                   " layers (the arithmetic's activations give its other kinds' too)";
    list.tensors =
        layer_kind_tensors(shape, setup, layer_stack_of(setup), setup.flash_attention, kind);
    list.bytes_per_token = saved_bytes_per_token(list.tensors);
    return list;
  }
  if (setup.recompute == Recompute::kSelectiveOp) {
    list.caption =
        !blocks_compiled(setup.compile)
            ? "The tensors torchtitan's per-op policy keeps of one layer for its backward pass "
              "(the rest is recomputed), per token on one device"
            : "The tensors a compiled layer keeps for its backward pass under torchtitan's per-op "
              "policy (the rest is recomputed; the down projection's output, which the backward "
              "pass never reads, is not kept), per token on one device";
    list.tensors = selective_op_saved_tensors(shape, setup);
    const double converted = nvfp4_layers(shape, setup);
    if (converted > 0) {
      list.caption += "; under nvfp4-mixed this is a BF16 layer's, and the " +
                      format_count(converted) +
                      " NVFP4 layers keep the block's input and the attention's output and "
                      "log-sum-exp alone";
    }
  } else {
    list.tensors = llama_block_saved_tensors(*resolve_model(setup), setup, setup.flash_attention);
  }
  list.bytes_per_token = saved_bytes_per_token(list.tensors);
  return list;
}

}  // namespace trainmem
