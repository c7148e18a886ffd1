#include "coordinator/analysis/describe.h"

#include <cmath>
#include <cstdio>

namespace rankscope {

std::string FormatDuration(DurationNs d) {
  const double abs_ns = std::fabs(static_cast<double>(d));
  double value = 0;
  const char* unit = "";
  if (abs_ns < static_cast<double>(kNsPerUs)) {
    value = static_cast<double>(d);
    unit = "ns";
  } else if (abs_ns < static_cast<double>(kNsPerMs)) {
    value = static_cast<double>(d) / static_cast<double>(kNsPerUs);
    unit = "us";
  } else if (abs_ns < static_cast<double>(kNsPerSec)) {
    value = static_cast<double>(d) / static_cast<double>(kNsPerMs);
    unit = "ms";
  } else {
    value = static_cast<double>(d) / static_cast<double>(kNsPerSec);
    unit = "s";
  }
  const double abs_value = std::fabs(value);
  const int decimals = abs_value >= 100 ? 0 : abs_value >= 10 ? 1 : 2;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f %s", unit[0] == 'n' ? 0 : decimals, value, unit);
  return buf;
}

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

}  // namespace rankscope
