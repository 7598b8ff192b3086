// What a hybrid model's setup must keep to (check_hybrid.hpp): the parts of trainmem that count
// its Gated DeltaNet layers, each other setting refused by name rather than counted as an
// attention layer's.
#include "settings/check_hybrid.hpp"

#include <string>

#include "trainmem/settings.hpp"

namespace trainmem {

namespace id = setting_id;

Answer check_hybrid(const TrainingSetup& setup, const ModelShape& shape) {
  if (!hybrid_linear_attention(shape)) return {};
  const std::string model = shape.name + "'s Gated DeltaNet layers";
  const ParallelLayout& layout = setup.layout;
  if (setup.stack != Stack::kIdeal) {
    return refusal(id::kStack, model +
                                   " are counted under the ideal step alone; no stack's run of "
                                   "them is modelled yet. Choose the ideal stack.");
  }
  if (layout.tensor_parallel > 1) {
    return refusal(id::kTensorParallel,
                   model +
                       " under tensor parallelism (Megatron-LM's GatedDeltaNet splits their "
                       "heads) are not modelled yet; set tp to 1.");
  }
  if (layout.context_parallel > 1) {
    return refusal(id::kContextParallel,
                   model +
                       " carry a recurrent state along the sequence; context parallelism "
                       "across it is not modelled (transformers' Qwen3-Next implements "
                       "none). Set cp to 1.");
  }
  if (setup.lora_rank > 0) {
    return refusal(id::kLoraRank, "LoRA on " + model +
                                      " (in_proj_qkvz, in_proj_ba, out_proj) is not counted yet; "
                                      "set the LoRA rank to 0.");
  }
  if (setup.precision == Precision::kFp8Mixed) {
    return refusal(id::kPrecision,
                   "FP8 training of " + model +
                       " is not modelled (which of their GEMMs run in FP8 differs by "
                       "framework); choose bf16-mixed.");
  }
  if (setup.recompute == Recompute::kSelectiveOp) {
    return refusal(id::kRecompute,
                   "Selective per-op recomputation is torchtitan's policy for a dense Llama-style "
                   "block; " +
                       model + " are not one. Choose none, selective or full.");
  }
  if (setup.optimizer == Optimizer::kAdafactor || setup.optimizer == Optimizer::kMuon) {
    return refusal(id::kOptimizer,
                   "Adafactor's and Muon's states follow each weight matrix's shape, which is "
                   "not counted for " +
                       model + " yet; choose another optimiser.");
  }
  if (setup.mtp) {
    return refusal(id::kMtp,
                   "Multi-token prediction beside " + model + " is not counted; untick it.");
  }
  return {};
}

}  // namespace trainmem
