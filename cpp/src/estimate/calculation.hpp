// Inside the core: the arithmetic of one estimate, shared by the estimate itself, its explanation
// and its timeline, so that each of them reads the same numbers. Not part of the public API.
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

// One layer's activations on the most loaded device.
struct ActivationsPerLayer {
  double kept_bytes = 0;               // saved for the backward pass, per layer
  double recompute_working_bytes = 0;  // full recomputation: one layer rebuilt, less its input
  // Expert parallelism: one mixture layer's all-to-all buffers (the send and the receive buffer
  // of the dispatch or the combine), in flight while that layer runs, forward or rebuilt.
  double dispatch_bytes = 0;
  double replicated_factor = 0;      // Korthikanti: the bracket's first part: 34, 10 + 24/t…
  double score_factor = 0;           // Korthikanti: 5·a·s/(h·t), or 0
  double saved_bytes_per_token = 0;  // llama-block: the saved tensors' sum, per token
  double tokens_on_device = 0;       // s/c · b
};

// Every activation model answers through this one signature (korthikanti.cpp, llama_block.cpp):
// one layer of `shape` under `setup`'s layout and recomputation, for `micro_batch_sequences`
// sequences, with or without FlashAttention. The setup has passed check_setup.
using LayerActivations = ActivationsPerLayer (*)(const ModelShape& shape,
                                                 const TrainingSetup& setup,
                                                 int micro_batch_sequences, bool flash_attention);
ActivationsPerLayer korthikanti_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  int micro_batch_sequences, bool flash_attention);
ActivationsPerLayer llama_block_layer_activations(const ModelShape& shape,
                                                  const TrainingSetup& setup,
                                                  int micro_batch_sequences, bool flash_attention);
LayerActivations layer_activations_of(ActivationModel model);

// What one layer holds beyond the kept activations while it runs: the layer rebuilt under full
// recomputation and its all-to-all buffers under expert parallelism.
double layer_working_bytes(const ActivationsPerLayer& layer);

// The first problem with `setup` (whose model `shape` is, or nullptr when its id is unknown), in
// the setting at fault's words; an ok answer when there is none (check.cpp).
Answer check_setup(const TrainingSetup& setup, const ModelShape* shape);

// Under LoRA a stage's parameters split into the adapters, which train, and the frozen base: its
// linear weights (which a quantised base holds in NF4 or int8) and the rest (embeddings, the
// output layer, norms, biases: BF16, as bitsandbytes leaves them). Without LoRA every parameter
// trains and the frozen counts are 0.
struct StageParameters {
  double trainable = 0;
  double frozen_linear = 0;
  double frozen_other = 0;
  double frozen_linear_rows = 0;  // their output rows (int8 keeps one FP32 scale per row)
};

struct StageMemory {
  double parameters = 0;         // all of them, adapters included
  double expert_parameters = 0;  // the routed experts' share of `parameters`
  double root_parameters = 0;    // the embedding, positions, output layer and final norm here
  StageParameters split;
  double activations_bytes = 0;
  double logits_bytes = 0;
  double dequantization_bytes = 0;
  // FP8 training: the FP8 GEMMs' weights on the device, their GEMMs, and the bytes they hold.
  double fp8_weights = 0;
  double fp8_gemms = 0;
  double fp8_weights_bytes = 0;
};

struct Calculation {
  const ModelShape* shape = nullptr;  // the setup's model (resolve_model), as long as it lives
  ParameterCounts counts;
  BytesPerParameter bytes_per_parameter;
  ActivationsPerLayer layer;
  double lora_bytes_per_layer = 0;  // the adapters' r-wide intermediates, in `layer` already
  double base_linear_bytes_per_parameter = 0;  // the frozen base's linear weights (LoRA), whole
  double base_linear_bytes_per_value = 0;      // the same less int8's per-row scales
  double base_linear_bytes_per_row = 0;        // int8's FP32 scale per output row
  double layers_per_stage = 0;
  // Offloading's units in flight: one layer's parameters on a device, and the embedding's.
  StageParameters layer_unit;
  StageParameters embedding_unit;
  double in_flight_factor = 0;    // layers' worth of activations on the first stage, over L
  double fp8_weight_copies = 0;   // FP8 training: copies per weight held (0 under ZeRO-3)
  double zero_shards = 1;         // d·c
  double expert_zero_shards = 1;  // the routed experts' data-parallel group: d·t·c / (ep·etp)
  StageMemory first;
  StageMemory last;
  bool last_is_most_loaded = false;
  // Under a stack: each term whole, as the arithmetic counts it, before the simulated step
  // (stack.cpp) replaces estimate.bytes by what it holds at its peak. Under ideal the same.
  MemoryBreakdown whole_terms;
  Estimate estimate;
};

// A stack's holdings (stack.cpp): replaces the most loaded device's breakdown by the step it
// simulates under PyTorch's caching allocator, names each term the stack adds and fills the
// allocated and reserved peaks. Called for every stack but ideal, on a checked setup.
void apply_stack(Calculation& calc, const TrainingSetup& setup);
// The same step's timeline (timeline.cpp's under a stack).
std::vector<TimelinePoint> stack_timeline(const Calculation& calc, const TrainingSetup& setup);

// Checks and computes; `estimate` holds the result either way. Without `replay_stack` a stack's
// step is not replayed: its terms are whole (whole_terms) and it names no stack term, which is all
// the activations' curve needs.
Calculation calculate_estimate(const TrainingSetup& setup, int micro_batch_sequences,
                               bool flash_attention, bool replay_stack = true);

// Bytes per token per vocabulary entry of the logits and the loss.
double logits_bytes_per_token_per_vocab(Loss loss);

}  // namespace trainmem
