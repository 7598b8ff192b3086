// Fuzz target: a setup's estimate, the workshop's view of it, its arithmetic, its saved tensors
// and its timeline; and where the setup stays within the plate's view, the first view's module's
// estimate, which must be the full one's.
#include <algorithm>
#include <cstdint>

#include "fuzz_common.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/explain.hpp"
#include "trainmem/models.hpp"
#include "trainmem/timeline.hpp"

using namespace trainmem;
using namespace trainmem::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  const TrainingSetup setup = fuzzed_setup(data);
  const WorkshopView view = workshop_view(setup, data.ConsumeIntegralInRange<int>(-1, 20));
  check_estimate(view.estimate);
  for (const ActivationPoint& point : view.activation_curve) {
    require(std::isfinite(point.flash_attention_bytes), "the curve is finite");
    // DSA's layers are counted with their fused kernels alone: the curve without FlashAttention
    // is left out for them (check_sparse.cpp), never for another model.
    const ModelShape* shape = resolve_model(setup);
    require(point.without_flash_attention_counted || (shape && sparse_attention(*shape)),
            "the curve without FlashAttention is counted for every model but DSA's");
    if (!point.without_flash_attention_counted) continue;
    // Under the llama-block model a one-token sequence is the exception: FlashAttention's FP32
    // log-sum-exp (4·a) outweighs the BF16 probabilities (2·a·s) when s = 1 and K, V are not
    // grouped (activations_test.cpp pins it).
    // Under fp8-mixed, FlashAttention keeps its BF16 output beside the output projection's FP8
    // copy (2 bytes per hidden value more), which the scores' 5·a·s/h outweighs only past
    // s = 2h/(5a) tokens (51 for Llama 3 8B): a short sequence is the exception there too.
    // Where the two count the same tensors (a layer that keeps its input alone), they differ by
    // their sums' rounding: Gemma 3 1B under full recomputation, 1.2e-7 B of 1.04 GB apart.
    require(point.flash_attention_bytes <= point.without_flash_attention_bytes + 1 ||
                (setup.activation_model == ActivationModel::kLlamaBlock &&
                 setup.sequence_length == 1) ||
                setup.precision == Precision::kFp8Mixed,
            "FlashAttention never needs more");
  }
  const Estimate estimate = estimate_memory(setup);
  const Estimate plate = plate_estimate(setup);
  bool within_plate = true;
  for (const Setting& setting : settings()) {
    if (!setting.plate && setting_text(setup, setting.id) != setting.default_text) {
      within_plate = false;
    }
  }
  if (within_plate) {
    require(plate.answer.ok() == estimate.answer.ok() &&
                plate.answer.message == estimate.answer.message &&
                plate.bytes.total() == estimate.bytes.total() &&
                plate.devices_worth == estimate.devices_worth,
            "within the plate's view, the plate's estimate is the full one");
  } else {
    require(!plate.answer.ok(), "beyond the plate's view, the plate's estimate refuses");
  }
  if (!estimate.answer.ok()) return 0;
  explain_estimate(setup);
  for (const SavedTensor& tensor :
       llama_block_saved_tensors(*resolve_model(setup), setup, setup.flash_attention)) {
    require(std::isfinite(tensor.bytes_per_token) && tensor.bytes_per_token > 0,
            "every saved tensor has a finite, positive size");
  }
  double peak = 0;
  for (const TimelinePoint& point : memory_timeline(setup)) {
    require(std::isfinite(point.bytes) && point.bytes >= 0, "the timeline is finite");
    peak = std::max(peak, point.bytes);
  }
  // The idealised step's peak is its total; a stack's, its allocated peak with what the runtime
  // holds outside the allocator (the CUDA context, NCCL's buffers, a paged optimiser's state).
  double outside = 0;
  for (const StackTerm& term : estimate.stack_terms) outside += term.in_allocator ? 0 : term.bytes;
  require(std::fabs(peak - (estimate.peak_allocated_bytes + outside)) <= 1e-9 * peak,
          "the timeline's peak is the estimate's");
  check_verdict(estimate);
  return 0;
}
