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

}  // namespace rankscope
