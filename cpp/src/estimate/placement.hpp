// Where the parameters are: a pipeline stage's layers split by tensor and expert parallelism, the
// embedding on the first stage and the output layer on the last, and under LoRA what trains
// (the adapters) apart from the frozen base. The states' bytes (states.cpp) and offloading's
// units in flight (offload.cpp) are counted on this.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainmem/fine_tuning.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Under LoRA a stage's parameters split into the adapters, which train, and the frozen base: its
// linear weights (which a quantised base holds in NF4 or int8) and the rest (embeddings, the
// output layer, norms, biases: BF16, as bitsandbytes leaves them). Without LoRA every parameter
// trains and the frozen counts are 0.
struct StageParameters {
  double trainable = 0;
  double frozen_linear = 0;
  double frozen_other = 0;
  double frozen_linear_rows = 0;  // their output rows (int8 keeps one FP32 scale per row)
  // Of frozen_other, the embedding matrices: the input embedding and learned positions on the
  // first stage, the output layer's matrix where it is its own (TRL 0.13-0.21 casts these back
  // to BF16 after prepare_model_for_kbit_training's FP32 upcast).
  double frozen_embeddings = 0;
};

// Which stage: the first holds p micro-batches in flight under 1F1B and the embedding; the last,
// the output layer; a middle stage i (from 0), p - i micro-batches. Without a pipeline the first
// and the last are one.
enum class StageRole { kFirst, kMiddle, kLast };

// One pipeline stage's share on one device.
struct StagePlacement {
  StageRole role = StageRole::kFirst;
  int index = 0;  // from 0, the first
  double first_layer = 0;
  double layers = 0;
  double micro_batches_in_flight = 1;  // micro_batches_in_flight(): under 1F1B, p - i
  double parameters = 0;               // all of them, adapters included
  double expert_parameters = 0;        // the routed experts' share of `parameters`
  double root_parameters = 0;          // the embedding, positions, output layer and final norm here
                                       // (and the multi-token-prediction modules, trained)
  double mtp_layers = 0;  // the multi-token-prediction modules here, each a layer's activations
  // Under --fp8-param-gather, the layers' FP8 GEMM weights among `parameters` (fp8_layers): FP8
  // parameters, held in the FP8 term, not as BF16 weights.
  double fp8_parameters = 0;
  StageParameters split;
};

struct Placement {
  ParameterCounts counts;
  LinearLayers linear;            // one layer's linear weights, whole
  double zero_shards = 1;         // d·c
  double expert_zero_shards = 1;  // the routed experts' data-parallel group: d·t·c / (ep·etp)
  // Under Muon, a layer's parameters outside its weight matrices (norms, biases), whole.
  double muon_vectors_per_layer = 0;
  // Offloading's units in flight: one layer's parameters on a device, and the embedding's.
  StageParameters layer_unit;
  StageParameters embedding_unit;
  StagePlacement first;
  StagePlacement last;
  // Under uneven stages, the middle stages that may be the most loaded: the second stage (the
  // most micro-batches in flight after the first) and, when a mixture's dense layers reach into
  // it, the first middle stage of mixture layers alone. Empty under an even split, whose figures
  // stay those of the first and last stages: there a middle stage holds the first's layers with
  // fewer micro-batches and no embedding (unless a mixture's dense layers lighten the first) —
  // except for a mixture with interleaved dense layers, whose second and third stages are here.
  // A middle stage the setup asks for (pipeline_stage) is here too.
  std::vector<StagePlacement> middle;
};

// The parameters of a checked setup on its first and last pipeline stages (the same stage
// without a pipeline), and the middle stages that may be the most loaded.
Placement place_parameters(const ModelShape& shape, const TrainingSetup& setup);

// One of a stage's layers as its own parameters on the device, unsharded, and its routed
// experts' among them: what Megatron-FSDP gathers and reduce-scatters as one unit (a
// TransformerLayer, MoETransformerLayer or MambaLayer; mcore_fsdp_adapter.py, fsdp_unit_modules).
struct LayerParameters {
  double parameters = 0;
  double expert_parameters = 0;
};
// The stage's layers, each its own, in the forward pass's order: a mixture's dense layers and a
// hybrid's kinds each as they are, where `stage` holds their mean.
std::vector<LayerParameters> stage_layer_parameters(const ModelShape& shape,
                                                    const ParallelLayout& layout,
                                                    const Placement& placement,
                                                    const StagePlacement& stage);

// The micro-batches' worth of its layers that pipeline stage `index` (from 0) holds at its
// busiest, in a step of `step_micro_batches` (infinite: as many as the schedule fills). Under
// 1F1B, p - i (Narayanan et al. 2021). Under the interleaved schedule, v virtual stages a device:
// its warm-up runs (v - 1)·g + 2·(p - 1 - i) chunks, each 1/v of the device's layers, and the
// steady state one more before the first backward pass (Megatron-LM's
// forward_backward_pipelining_with_interleaving with microbatch_group_size_per_vp_stage g, p by
// default: ParallelLayout::microbatch_group_size; torch's
// ScheduleInterleaved1F1B, p micro-batches a round), at most the step's n·v; on the first stage
// p·(1 + (p - 1)/(p·v)) micro-batches (Narayanan et al. 2021, section 2.2).
double micro_batches_in_flight(const ParallelLayout& layout, double step_micro_batches,
                               double index);

// How many micro-batches' inputs pipeline stage `index` (from 0) holds at once when each is kept
// to its backward pass, under Megatron-LM's schedules (schedules.py): only the stages that read the
// data do (get_batch: the first's first virtual stage, the last's last), and each keeps a
// micro-batch's from its forward to its backward pass. Played out in the schedule's own order:
// get_schedule_table's groups of g micro-batches through each virtual stage (p by default),
// get_pp_rank_microbatches' warm-up (p - i - 1 forward passes; 2·(p - i - 1) + (v - 1)·g
// interleaved), then one forward and one backward pass at a time. 1 without a pipeline, or on a
// stage that reads no data.
double data_micro_batches_held(const ParallelLayout& layout, double step_micro_batches, int index);

// A pipeline's micro-batches a step: p under torch's pipelining as torchtitan runs it (its
// local batch a pipeline_parallel_microbatch_size each); under Megatron-LM's schedules the global
// batch over the micro-batch times d (get_num_microbatches), at the setup's own micro-batch (the
// activations' chart keeps the step's count as it varies the micro-batch); as many as the
// schedule fills without a global batch.
double pipeline_micro_batches(const TrainingSetup& setup);

// The layers' worth of activations a stage holds at its busiest: its micro-batches in flight
// times its layers, and one for each multi-token-prediction module.
inline double activation_slots(const StagePlacement& stage) {
  return stage.micro_batches_in_flight * stage.layers + stage.mtp_layers;
}

// The same as whole slots for a step's replay: `count` slots, each `scale` of a layer's saved
// tensors (the interleaved schedule holds a fraction of a micro-batch's layers).
struct WholeSlots {
  int count = 1;
  double scale = 1;
};
inline WholeSlots whole_slots(const StagePlacement& stage) {
  const double exact = activation_slots(stage);
  const double count = std::max(1.0, std::ceil(exact - 1e-9));
  return {static_cast<int>(count), exact / count};
}

}  // namespace trainmem
