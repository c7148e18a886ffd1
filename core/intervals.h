// Time intervals: sorted, merged [begin, end) spans and the time they cover. Pure.
#pragma once

#include <utility>
#include <vector>

#include "core/time.h"

namespace rankscope {

// Sorted, non-overlapping [begin, end) intervals.
using Intervals = std::vector<std::pair<TimeNs, TimeNs>>;

// `spans` sorted, with the ones that overlap or touch merged into one.
Intervals MergeIntervals(Intervals spans);

// Time within [begin, end) covered by `intervals`.
DurationNs OverlapWith(const Intervals& intervals, TimeNs begin, TimeNs end);

// The time covered by spans that arrive in any order, each instant counted once, as they arrive
// (an agent's MPI calls: each thread's records come when its buffer is flushed). The spans of
// the last `horizon` before the latest end are kept merged, so a span that comes late counts
// only what no earlier one covered; the part of one before the horizon is not counted. Memory:
// the merged spans of one horizon.
class CoverageFold {
 public:
  explicit CoverageFold(DurationNs horizon) : horizon_(horizon) {}
  void Add(TimeNs begin, TimeNs end);
  DurationNs covered() const { return covered_; }
  TimeNs latest_end() const { return latest_; }  // 0 before the first span

 private:
  DurationNs horizon_;
  Intervals recent_;  // sorted, merged
  DurationNs covered_ = 0;
  TimeNs latest_ = 0;
};

}  // namespace rankscope
