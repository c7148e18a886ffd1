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

void CoverageFold::Add(TimeNs begin, TimeNs end) {
  const TimeNs horizon = latest_ > 0 ? latest_ - horizon_ : begin;
  begin = std::max(begin, horizon);
  if (end <= begin) return;
  // The kept spans it overlaps or touches (usually none, or the last): merged into one.
  auto first = std::partition_point(recent_.begin(), recent_.end(),
                                    [&](const auto& iv) { return iv.second < begin; });
  auto last = first;
  TimeNs b = begin;
  TimeNs e = end;
  DurationNs overlap = 0;
  for (; last != recent_.end() && last->first <= end; ++last) {
    overlap += std::max<DurationNs>(0, std::min(last->second, end) - std::max(last->first, begin));
    b = std::min(b, last->first);
    e = std::max(e, last->second);
  }
  covered_ += (end - begin) - overlap;
  recent_.insert(recent_.erase(first, last), {b, e});
  latest_ = std::max(latest_, end);
  // Spans wholly before the horizon go, a batch of them at a time.
  const auto old = std::partition_point(recent_.begin(), recent_.end(), [&](const auto& iv) {
    return iv.second < latest_ - horizon_;
  });
  if (old - recent_.begin() > 64) recent_.erase(recent_.begin(), old);
}

}  // namespace rankscope
