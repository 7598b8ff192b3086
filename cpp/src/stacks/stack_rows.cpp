// The training stacks' rows (stack_rows.hpp). docs/formulas.md derives each holding.
#include "stacks/stack_rows.hpp"

#include <iterator>

namespace trainmem {

const char* fp8_engine_name(Fp8Engine engine) {
  return engine == Fp8Engine::kTorchao ? "torchao's Float8" : "Transformer Engine";
}

StackRow ideal_stack_row() {
  // The idealised step: the plate's terms and nothing else.
  StackRow row{Stack::kIdeal};
  row.optimizers = {Optimizer::kAdam,        Optimizer::kAdam8bit,        Optimizer::kAdafactor,
                    Optimizer::kSgdMomentum, Optimizer::kAdamBf16Moments, Optimizer::kMuon};
  return row;
}

bool saves_gathered_inputs(const TrainingSetup& setup) {
  return stack_row(setup.stack).dtensor_tensor_parallel && setup.layout.tensor_parallel > 1;
}

int stack_expert_tensor_parallel(const TrainingSetup& setup, const ModelShape& shape) {
  if (!stack_row(setup.stack).torchtitan_mixture || shape.num_experts <= 1 ||
      setup.layout.tensor_parallel <= 1) {
    return -1;
  }
  return setup.layout.expert_parallel > 1 ? 1 : 0;
}

ChunkedNllWeights chunked_nll_weights_of(const TrainingSetup& setup) {
  const bool full = setup.lora_rank == 0;
  const bool fp32_loaded = stack_row(setup.stack).transformers_loading &&
                           setup.precision == Precision::kBf16Mixed && full;
  const bool fp32_head = setup.kbit_prep && !setup.kbit_cast_back;
  return chunked_nll_weights(fp32_loaded || fp32_head || setup.precision == Precision::kFp32, full);
}

bool transformer_engine_fp8(const TrainingSetup& setup) {
  return setup.precision == Precision::kFp8Mixed &&
         stack_row(setup.stack).fp8_engine == Fp8Engine::kTransformerEngine;
}

bool torchao_mxfp8(const TrainingSetup& setup) {
  return setup.precision == Precision::kFp8Mixed && setup.fp8_recipe == Fp8Recipe::kMxfp8 &&
         stack_row(setup.stack).fp8_engine == Fp8Engine::kTorchao;
}

}  // namespace trainmem
