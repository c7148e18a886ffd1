// Wording shared by the analyses' summaries: durations a person reads at a glance and the
// "rank 2 (node n3)" label.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/format.h"
#include "core/time.h"

namespace rankscope {

// "rank 2 (node n3)", or "rank 2" when the session does not know the rank's node.
std::string RankLabel(const Session& session, int rank);

// The rank's node name, empty when unknown.
std::string NodeOf(const Session& session, int rank);

// A finding of this kind about one rank, naming its node where the session knows it.
Finding FindingOnRank(const Session& session, FindingKind kind, int rank);

// How far clock alignment lets `rank`'s times be compared with the `others'`: lateness and waits
// compare the two sides' clocks, so either side's alignment error can fake them. The larger of
// the rank's uncertainty and the others' median one.
DurationNs ClockUncertainty(const Session& session, int rank, const std::set<int>& others);

// How ProcessEvidence ends its sentence for each verdict.
struct ProcessWords {
  std::string io;       // it read much more than the others
  std::string cpu;      // it used much more CPU
  std::string waiting;  // neither
};

// What the rank's processes did over the run, against the other ranks' median, from the agents'
// /proc sampling (`excess`: the extra time being explained): read more (I/O), computed more (CPU),
// or neither (it waits). Adds f->host_process (verdict, figures) on *f, sets
// *verdict (when given) to kHostIo, kHostCpu or kHostWaiting, and returns the sentence for the
// summary; empty (and *verdict untouched) without /proc figures for the rank and another.
std::string ProcessEvidence(const Session& session, int rank, DurationNs excess,
                            const ProcessWords& words, Finding* f, CauseKind* verdict = nullptr);

}  // namespace rankscope
