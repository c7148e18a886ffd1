#include "core/intervals.h"

#include <algorithm>

namespace rankscope {

Intervals MergeIntervals(Intervals spans) {
  std::sort(spans.begin(), spans.end());
  Intervals merged;
  for (const auto& [b, e] : spans) {
    if (!merged.empty() && b <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, e);
    } else {
      merged.emplace_back(b, e);
    }
  }
  return merged;
}

DurationNs OverlapWith(const Intervals& intervals, TimeNs begin, TimeNs end) {
  DurationNs total = 0;
  auto it = std::partition_point(intervals.begin(), intervals.end(),
                                 [&](const auto& iv) { return iv.second <= begin; });
  for (; it != intervals.end() && it->first < end; ++it) {
    total += std::min(it->second, end) - std::max(it->first, begin);
  }
  return total;
}

}  // namespace rankscope
