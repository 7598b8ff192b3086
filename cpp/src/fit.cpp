#include "trainmem/fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "trainmem/format.hpp"

namespace trainmem {

namespace {

constexpr int kMaxTensorParallel = 64;  // beyond a few nodes' worth of NVLink domains
constexpr int kMaxContextParallel = 64;

std::vector<int> divisors_up_to(int value, int limit) {
  std::vector<int> divisors;
  for (int candidate = 1; candidate <= std::min(value, limit); ++candidate) {
    if (value % candidate == 0) divisors.push_back(candidate);
  }
  return divisors;
}

// A layout's per-device memory falls with d only through ZeRO's sharding: total(d) = fixed +
// shardable / (d·c). The smallest d that fits follows from two estimates, checked by a third.
struct Candidate {
  Estimate estimate;
  bool fits = false;
};

Candidate smallest_data_parallel_that_fits(TrainingSetup setup) {
  Candidate candidate;
  setup.layout.data_parallel = 1;
  if (setup.layout.zero_stage > 0 && setup.layout.context_parallel == 1) {
    setup.layout.data_parallel = 2;
  }
  const Estimate at_start = estimate_memory(setup);
  if (!at_start.answer.ok()) return candidate;
  const double capacity = at_start.device.capacity_bytes;
  if (at_start.fits) return {at_start, true};
  if (setup.layout.zero_stage == 0) return candidate;

  // ZeRO: bytes = fixed + shardable / (d·c); solve for the smallest d.
  TrainingSetup doubled = setup;
  doubled.layout.data_parallel *= 2;
  const Estimate at_double = estimate_memory(doubled);
  if (!at_double.answer.ok()) return candidate;
  const double c = setup.layout.context_parallel;
  const double d0 = setup.layout.data_parallel;
  // shardable·(1/(d0·c) − 1/(2·d0·c)) = difference
  const double shardable = (at_start.bytes.total_bytes - at_double.bytes.total_bytes) * 2 * d0 * c;
  const double fixed = at_start.bytes.total_bytes - shardable / (d0 * c);
  if (fixed >= capacity || shardable <= 0) return candidate;
  const double per_device_budget = capacity - fixed;
  double d = std::ceil(shardable / (per_device_budget * c));
  d = std::max(d, d0);
  const double others = static_cast<double>(setup.layout.tensor_parallel) *
                        setup.layout.pipeline_parallel * setup.layout.context_parallel;
  if (d > kMaxParallelDegree || d * others > kMaxDevices) return candidate;
  // Rounding can leave the closed form a hair off; step until the estimate itself fits.
  for (int step = 0; step < 3; ++step) {
    setup.layout.data_parallel = static_cast<int>(d);
    const Estimate estimate = estimate_memory(setup);
    if (estimate.answer.ok() && estimate.fits) return {estimate, true};
    d += 1;
  }
  return candidate;
}

bool fewer_devices_then_less_memory(const Estimate& left, const Estimate& right) {
  if (left.num_devices != right.num_devices) return left.num_devices < right.num_devices;
  return left.bytes.total_bytes < right.bytes.total_bytes;
}

}  // namespace

FitSearch find_fewest_devices(const TrainingSetup& base, int max_layouts) {
  FitSearch search;
  const Estimate checked = estimate_memory(base);
  if (!checked.answer.ok()) {
    search.answer = checked.answer;
    return search;
  }
  const ModelShape& shape = *resolve_model(base);
  const int heads_gcd = std::gcd(std::gcd(shape.num_attention_heads, shape.num_key_value_heads),
                                 shape.ffn_hidden_size);

  std::vector<Estimate> fitting;
  std::vector<TrainingSetup> layouts_tried;
  for (int t : divisors_up_to(heads_gcd, kMaxTensorParallel)) {
    for (int p : divisors_up_to(shape.num_layers, shape.num_layers)) {
      for (int c = 1; c <= kMaxContextParallel && base.sequence_length % c == 0; c *= 2) {
        for (int zero = 0; zero <= kMaxZeroStage; ++zero) {
          for (std::size_t recompute = 0; recompute < choices<Recompute>().size(); ++recompute) {
            TrainingSetup setup = base;
            setup.layout = ParallelLayout{};
            setup.layout.tensor_parallel = t;
            setup.layout.sequence_parallel = t > 1;
            setup.layout.pipeline_parallel = p;
            setup.layout.context_parallel = c;
            setup.layout.zero_stage = zero;
            setup.recompute = static_cast<Recompute>(recompute);
            const Candidate candidate = smallest_data_parallel_that_fits(setup);
            if (candidate.fits) fitting.push_back(candidate.estimate);
            layouts_tried.push_back(setup);
          }
        }
      }
    }
  }

  if (fitting.empty()) {
    search.why_not_fewer = "No layout of up to " + format_count(kMaxDevices) + " " +
                           checked.device.short_name + "s fits this micro-batch.";
    return search;
  }
  std::sort(fitting.begin(), fitting.end(), fewer_devices_then_less_memory);
  search.fewest_devices = fitting.front().num_devices;
  for (const Estimate& estimate : fitting) {
    if (estimate.num_devices != search.fewest_devices ||
        static_cast<int>(search.layouts.size()) >= std::max(1, max_layouts)) {
      break;
    }
    search.layouts.push_back(estimate);
  }

  // Why not fewer: each tried layout at the largest d that stays below the fewest count.
  for (TrainingSetup setup : layouts_tried) {
    const double others = static_cast<double>(setup.layout.tensor_parallel) *
                          setup.layout.pipeline_parallel * setup.layout.context_parallel;
    const double d = std::floor((search.fewest_devices - 1) / others);
    if (d < 1) continue;
    setup.layout.data_parallel = static_cast<int>(d);
    const Estimate estimate = estimate_memory(setup);
    if (!estimate.answer.ok()) continue;
    if (!search.has_best_smaller ||
        estimate.bytes.total_bytes < search.best_smaller.bytes.total_bytes) {
      search.best_smaller = estimate;
      search.has_best_smaller = true;
    }
  }
  if (search.has_best_smaller) {
    const Estimate& best = search.best_smaller;
    search.why_not_fewer =
        "With fewer than " + format_count(search.fewest_devices) +
        " devices nothing fits: the leanest layout, on " + format_count(best.num_devices) +
        (best.num_devices == 1 ? " device" : " devices") + ", still needs " +
        format_bytes(best.bytes.total_bytes) + " on its most loaded device, over the " +
        format_bytes(best.device.capacity_bytes, 0) + " of one " + best.device.name + ".";
  } else {
    search.why_not_fewer = "One device is the fewest there can be.";
  }
  return search;
}

}  // namespace trainmem
