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

}  // namespace rankscope
