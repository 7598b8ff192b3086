// The memory terms: each thing an estimate counts, described once. Its row gives its id (the JSON
// key, the arithmetic's id and the page's key; the JavaScript API's key is the id + "Bytes"), its
// label, where it can be held, and its place in every breakdown: a Breakdown is indexed by it.
// The CLI's table, the JSON, the CSV, the bindings, the timeline, the readout and the charts all
// read this table. A new term is a row here, the arithmetic that computes it, its test, and its
// colour on the page (web/src/terms.js).
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace trainmem {

enum class Term : std::size_t {
  kWeights,
  kGradients,
  kMasterWeights,
  kOptimizerStates,
  kActivations,
  kLogits,
  kDequantization,
  kFp8Weights,
  kFramework,
  kRolloutEngine,
  kRuntime,
  kAllocatorCache,
  kFp32Gradients,
  kCount,  // not a term: how many there are
};
inline constexpr std::size_t kNumTerms = static_cast<std::size_t>(Term::kCount);

// What a term is part of, and so when in a step it is held (the timeline reads it): the model
// states; the activations; the logits and loss; what is held alongside the states through the
// step (FP8 weight copies); what is held only while a layer computes, in either pass (a
// dequantised layer); what a training stack holds beside its step's terms; what only the host
// holds.
enum class TermPart { kModelState, kActivations, kLogits, kAlongside, kInPasses, kStack, kHost };

struct TermRow {
  Term term;
  const char* id;      // "masterWeights"
  const char* label;   // "Master weights"
  const char* phrase;  // how a sentence names its bytes: "of FP8 weights and scales"
  TermPart part;
  bool on_device;  // held on the device
  bool on_host;    // held in the host's memory (offloading)
  // Listed (a table's row, a legend's entry, a CSV row) only where some of it is held; the others
  // always are.
  bool listed_when_held;
  // The switch (a setting's id, settings.hpp) that counts the term, "" when it is always counted:
  // a table lists such a term while it is on, a chart while some is held.
  const char* counted_by;
};

inline constexpr std::array<TermRow, kNumTerms> kTerms = {{
    {Term::kWeights, "weights", "Weights", "of weights", TermPart::kModelState, true, true, false,
     ""},
    {Term::kGradients, "gradients", "Gradients", "of gradients", TermPart::kModelState, true, true,
     false, ""},
    {Term::kMasterWeights, "masterWeights", "Master weights", "of master weights",
     TermPart::kModelState, true, true, false, ""},
    {Term::kOptimizerStates, "optimizerStates", "Optimiser states", "of optimiser states",
     TermPart::kModelState, true, true, false, ""},
    {Term::kActivations, "activations", "Activations", "of activations", TermPart::kActivations,
     true, true, false, ""},
    // The output layer's logits and the loss, when counted (the setting "logits").
    {Term::kLogits, "logits", "Logits and loss", "of logits and loss", TermPart::kLogits, true,
     false, false, "logits"},
    // A quantised base (QLoRA): the BF16 copy of the layer being dequantised for its matmul.
    {Term::kDequantization, "dequantization", "Dequantised layer (BF16)",
     "for the layer being dequantised", TermPart::kInPasses, true, false, true, ""},
    // FP8 training: the linear weights' FP8 copies and the recipe's scaling state (fp8.hpp).
    {Term::kFp8Weights, "fp8Weights", "FP8 weights and scales", "of FP8 weights and scales",
     TermPart::kAlongside, true, false, true, ""},
    // Under a training stack: its own buffers, the runtime (CUDA context, NCCL, cuBLAS) and what
    // the caching allocator keeps reserved beyond its allocated peak.
    {Term::kFramework, "framework", "Framework buffers", "of the stack's own buffers",
     TermPart::kStack, true, false, true, ""},
    // RL post-training: the rollout engine colocated with the trainer (vLLM's or SGLang's pools).
    {Term::kRolloutEngine, "rolloutEngine", "Rollout engine", "for the rollout engine",
     TermPart::kStack, true, true, true, ""},
    {Term::kRuntime, "runtime", "Runtime", "of runtime", TermPart::kStack, true, false, true, ""},
    {Term::kAllocatorCache, "allocatorCache", "Allocator's cache",
     "that the caching allocator keeps reserved", TermPart::kStack, true, false, true, ""},
    // Offloading: the FP32 gradients the host's optimiser step reads (DeepSpeed's pinned buffer).
    {Term::kFp32Gradients, "fp32Gradients", "FP32 gradients", "of FP32 gradients of its own",
     TermPart::kHost, false, true, true, ""},
}};

// Each row at its term's place, each named: a row missing or out of order fails the build.
constexpr bool terms_in_order() {
  for (std::size_t index = 0; index < kNumTerms; ++index) {
    const TermRow& row = kTerms[index];
    if (static_cast<std::size_t>(row.term) != index || row.id == nullptr || row.label == nullptr ||
        row.phrase == nullptr || row.counted_by == nullptr)
      return false;
  }
  return true;
}
static_assert(terms_in_order(), "kTerms: one row per Term, in the enum's order");

constexpr const TermRow& term_row(Term term) { return kTerms[static_cast<std::size_t>(term)]; }

// Bytes by term: of one device, or of its host's memory.
class Breakdown {
 public:
  double& operator[](Term term) { return bytes_[static_cast<std::size_t>(term)]; }
  double operator[](Term term) const { return bytes_[static_cast<std::size_t>(term)]; }
  // The model states' sum, and every term's, each in the table's order.
  double model_states() const {
    double sum = 0;
    for (const TermRow& row : kTerms) {
      sum += row.part == TermPart::kModelState ? (*this)[row.term] : 0;
    }
    return sum;
  }
  double total() const {
    double sum = 0;
    for (const TermRow& row : kTerms) sum += (*this)[row.term];
    return sum;
  }

 private:
  std::array<double, kNumTerms> bytes_{};
};

// One thing a training stack holds beyond the idealised terms, at the step's peak: named, sized
// and sourced (the framework's file and function), and counted in its term (the framework's
// buffers, or the runtime).
struct StackTerm {
  std::string id;     // "fsdp-root"
  std::string label;  // "Root module, unsharded (BF16)"
  double bytes = 0;   // held at the moment of the step's allocated peak
  std::string source;
  // false: memory PyTorch's caching allocator never sees (the CUDA context, NCCL's buffers), and
  // so outside any figure torch.cuda reports.
  bool in_allocator = true;
  Term term = Term::kFramework;
};

// One moment of a training step on the most loaded device (timeline.hpp): the busiest moment of a
// phase, with what each term holds then.
struct TimelinePoint {
  std::string phase;  // "start", "forward", "loss", "recompute", "backward", "optimizer"
  int layer = 0;      // the layer slot the point follows (0 for start and optimizer)
  // Everything held then: under a stack, what is allocated and the runtime outside the allocator.
  double bytes = 0;
  double reserved_bytes = 0;  // under a stack, what the caching allocator has reserved by then
  Breakdown held;             // `bytes` by term
};

}  // namespace trainmem
