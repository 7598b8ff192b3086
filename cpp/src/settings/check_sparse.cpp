// What a setup of a model with DeepSeek Sparse Attention must keep to (check_sparse.hpp): the
// parts of trainmem that count its layers, each other setting refused by name rather than
// counted as dense latent attention.
#include "settings/check_sparse.hpp"

#include <string>

#include "trainmem/activations.hpp"
#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

Answer check_sparse_flash_attention(const ModelShape& shape, const TrainingSetup& setup) {
  if (!sparse_attention(shape)) return {};
  const std::string model = shape.name + "'s sparse attention";
  if (!setup.flash_attention) {
    return refusal(id::kFlashAttention,
                   model +
                       " is counted with its fused sparse kernels; Megatron-LM's unfused path "
                       "keeps 13 B per query-key pair per head, which is not modelled. Turn "
                       "FlashAttention on.");
  }
  return {};
}

Answer check_sparse_attention(const TrainingSetup& setup, const ModelShape& shape) {
  if (!sparse_attention(shape)) return {};
  const std::string model = shape.name + "'s sparse attention";
  const ParallelLayout& layout = setup.layout;
  if (setup.stack != Stack::kIdeal) {
    return refusal(id::kStack, model +
                                   " is counted under the ideal step alone, as Megatron-LM's "
                                   "TileLang kernels train it; no stack's run of it is modelled "
                                   "yet. Choose the ideal stack.");
  }
  const Answer flash = check_sparse_flash_attention(shape, setup);
  if (!flash.ok()) return flash;
  // The sparse kernels drop nothing out of the attention's probabilities.
  if (probability_dropout(shape, setup, kLlamaBlockDropsOut)) {
    return refusal(id::kDropout, "Dropout on " + model +
                                     "'s probabilities is not modelled (its fused kernels have "
                                     "none); choose dropout off.");
  }
  // AbsorbedMLASelfAttention: "AbsorbedMLA requires sequence_parallel when
  // tensor_model_parallel_size > 1".
  if (layout.tensor_parallel > 1 && !layout.sequence_parallel) {
    return refusal(id::kSequenceParallel,
                   "Megatron-LM's absorbed latent attention, which DSA runs on, requires "
                   "sequence parallelism when tensor parallelism is above 1; turn it on.");
  }
  // DSAttention gathers its keys across context parallelism (cp_comm_type allgather alone, since
  // core_r0.19.0; refused before): not modelled.
  if (layout.context_parallel > 1) {
    return refusal(id::kContextParallel,
                   model +
                       " under context parallelism (Megatron-LM all-gathers its keys and the "
                       "indexer's) is not modelled; set cp to 1.");
  }
  if (setup.lora_rank > 0) {
    return refusal(id::kLoraRank, "LoRA on " + model +
                                      "'s layers is not counted by trainmem; set the LoRA "
                                      "rank to 0.");
  }
  if (setup.precision == Precision::kFp8Mixed) {
    return refusal(id::kPrecision, "FP8 training of " + model +
                                       " is not modelled (which of its GEMMs run in FP8 differs "
                                       "by framework); choose bf16-mixed.");
  }
  return {};
}

}  // namespace trainmem
