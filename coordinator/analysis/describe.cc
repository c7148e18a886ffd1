#include "coordinator/analysis/describe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rankscope {

std::string NodeOf(const Session& session, int rank) {
  const RankData* data = session.FindRank(rank);
  if (data == nullptr) return "";
  return data->id.node.empty() ? data->id.host : data->id.node;
}

std::string RankLabel(const Session& session, int rank) {
  std::string label = "rank " + std::to_string(rank);
  const std::string node = NodeOf(session, rank);
  if (!node.empty()) label += " (node " + node + ")";
  return label;
}

Intervals PointToPointIntervals(const RankData& rank) {
  Intervals calls;
  for (const P2PRecord& p : rank.p2p) calls.emplace_back(p.enter, p.exit);
  std::sort(calls.begin(), calls.end());
  Intervals merged;
  for (const auto& [b, e] : calls) {
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
