// Wording shared by the analyses' summaries: durations a person reads at a glance and the
// "rank 2 (node n3)" label.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coordinator/session.h"
#include "core/format.h"
#include "core/time.h"

namespace rankscope {

// "rank 2 (node n3)", or "rank 2" when the session does not know the rank's node.
std::string RankLabel(const Session& session, int rank);

// The rank's node name, empty when unknown.
std::string NodeOf(const Session& session, int rank);

// Sorted, non-overlapping [begin, end) intervals.
using Intervals = std::vector<std::pair<TimeNs, TimeNs>>;

// The time the rank spent inside point-to-point MPI calls, as merged intervals.
Intervals PointToPointIntervals(const RankData& rank);

// Time within [begin, end) covered by `intervals`.
DurationNs OverlapWith(const Intervals& intervals, TimeNs begin, TimeNs end);

}  // namespace rankscope
