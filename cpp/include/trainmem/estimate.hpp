// The memory to train a model on one device: model states plus activations.
#pragma once

#include <string>
#include <vector>

#include "trainmem/models.hpp"

namespace trainmem {

// Errors are values: every entry point says whether its input was usable, and why not.
enum class Status { kOk, kInvalidInput };

// Bytes per parameter of mixed-precision training with Adam (Rajbhandari et al., "ZeRO",
// SC 2020, section 3.1: 2Ψ + 2Ψ + 12Ψ = 16Ψ bytes).
constexpr double kBf16WeightBytesPerParameter = 2;        // BF16 weights
constexpr double kBf16GradientBytesPerParameter = 2;      // BF16 gradients
constexpr double kFp32MasterWeightBytesPerParameter = 4;  // FP32 master copy
constexpr double kAdamMomentBytesPerParameter = 8;        // Adam's two FP32 moments
constexpr double kModelStateBytesPerParameter =
    kBf16WeightBytesPerParameter + kBf16GradientBytesPerParameter +
    kFp32MasterWeightBytesPerParameter + kAdamMomentBytesPerParameter;

// Activations saved per layer, no parallelism (Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models", MLSys 2023, equation 1):
//   s·b·h·(34 + 5·a·s/h) bytes.
// FlashAttention never materialises the a·s·s score matrix, which removes the second term.
constexpr double kKorthikantiBytesPerTokenPerHidden = 34;
constexpr double kKorthikantiScoreBytesPerHeadPerTokenPair = 5;

// The plate's sequence length, and the bounds an input must keep to.
constexpr int kPlateSequenceLength = 8192;
constexpr int kMaxSequenceLength = 1 << 20;       // 1,048,576 tokens
constexpr int kMaxMicroBatchSequences = 1 << 16;  // 65,536 sequences

struct Device {
  std::string id;          // "h100"
  std::string name;        // "H100 80 GB"
  std::string short_name;  // "H100", for sentences: "2.1 H100s' worth"
  double capacity_bytes = 0;
};

// One H100's 80 GB (NVIDIA H100 Tensor Core GPU datasheet: 80 GB HBM3), decimal units.
const Device& h100_80gb();

// What to estimate. Defaults are the plate's view.
struct TrainingSetup {
  std::string model_id = "llama3-8b";
  int sequence_length = kPlateSequenceLength;
  int micro_batch_sequences = 1;  // sequences per micro-batch
  bool flash_attention = true;
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double master_weights_bytes = 0;
  double optimizer_states_bytes = 0;
  double activations_bytes = 0;
  double model_states_bytes = 0;  // the first four
  double total_bytes = 0;         // model states plus activations
};

struct Estimate {
  Status status = Status::kOk;
  std::string message;  // empty when status is kOk
  TrainingSetup setup;
  std::string model_name;
  double num_parameters = 0;
  double tokens_per_micro_batch = 0;
  MemoryBreakdown bytes;
  Device device;
  double devices_worth = 0;  // total / device capacity
};

// The four model-state terms of `num_parameters` parameters.
MemoryBreakdown model_state_bytes(double num_parameters);

// Korthikanti et al.'s activations for all layers of `shape`.
double activation_bytes(const ModelShape& shape, int sequence_length, int micro_batch_sequences,
                        bool flash_attention);

// The whole estimate for one device; an invalid setup gives status kInvalidInput and a message.
Estimate estimate_memory(const TrainingSetup& setup);

// A micro-batch given in tokens, checked against the sequence length.
struct MicroBatchFromTokens {
  Status status = Status::kOk;
  std::string message;
  int micro_batch_sequences = 0;
};

// Tokens must be a whole multiple of the sequence length, from one sequence to
// `max_micro_batch_sequences`. Any double is safe to pass, NaN and infinities included.
MicroBatchFromTokens micro_batch_from_tokens(double tokens, int sequence_length,
                                             int max_micro_batch_sequences);

// One point of the activations-against-tokens chart.
struct ActivationPoint {
  int micro_batch_sequences = 0;
  double tokens = 0;
  double flash_attention_bytes = 0;
  double without_flash_attention_bytes = 0;
};

// Everything the plate's workshop draws, from one call: the estimate for `setup`, and
// activations with and without FlashAttention for 1..max_micro_batch_sequences sequences.
struct WorkshopView {
  Estimate estimate;
  std::vector<ActivationPoint> activation_curve;
};

WorkshopView workshop_view(const TrainingSetup& setup, int max_micro_batch_sequences);

}  // namespace trainmem
