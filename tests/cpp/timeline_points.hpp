// The replayed step's timeline, as tests read it: a phase's point by its name and layer.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "trainmem/estimate.hpp"
#include "trainmem/timeline.hpp"

namespace trainmem {

inline const TimelinePoint& point_at(const std::vector<TimelinePoint>& points,
                                     const std::string& phase, int layer) {
  for (const TimelinePoint& point : points) {
    if (point.phase == phase && point.layer == layer) return point;
  }
  FAIL("no point " << phase << " " << layer);
  return points.front();
}

// The replay's logits at the loss's busiest moment (its "loss" point), the setup answered.
inline double replayed_loss(const TrainingSetup& setup) {
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  for (const TimelinePoint& point : memory_timeline(setup)) {
    if (point.phase == "loss") return point.held[Term::kLogits];
  }
  FAIL("no loss in the timeline");
  return 0;
}

}  // namespace trainmem
