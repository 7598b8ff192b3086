// The replayed step's timeline, as tests read it: a phase's point by its name and layer.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

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

}  // namespace trainmem
