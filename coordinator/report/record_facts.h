// What the writers read of every record of a run (counts, NVTX time by name, step ranges),
// gathered apart from the records themselves so that a session read window by window (docs/
// design.md, "Cost bounded by the window") can be written without holding them: from a loaded
// session's records (GatherRecordFacts), or from a stored session's tables. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/session.h"
#include "core/time.h"

namespace rankscope {

// --- Steps, as every writer counts them (report.html's heatmap and worst step, trace.json's step
// sample): a rank's outermost NVTX ranges named like a step ("step", "Step 12", ...: the
// dataloader analysis' default), its k-th such range being its step k.
using TimeSpans = std::vector<std::pair<TimeNs, TimeNs>>;

// Whether a range is one of its rank's steps: outermost, named like a step.
bool IsStepRange(const RangeRecord& r);

struct RankRecordFacts {
  size_t collectives = 0, p2p = 0, mpi_calls = 0, ranges = 0, marks = 0, gpu = 0;
  std::map<std::string, DurationNs> range_time;  // NVTX time by range name (ends less starts)
  TimeSpans steps;  // its step ranges in start order (IsStepRange); empty when fewer than two
};

// Per rank, as Session::ranks.
struct RecordFacts {
  std::vector<RankRecordFacts> ranks;
};

RecordFacts GatherRecordFacts(const Session& session);
RankRecordFacts GatherRankFacts(const RankData& rank);

// The NVTX range name with the most total time on a rank, and that time ("", 0 without ranges).
std::pair<std::string, DurationNs> TopRange(const RankRecordFacts& rank);

}  // namespace rankscope
