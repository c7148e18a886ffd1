// Wait states of matched collective instances, in Scalasca's terms, as the reports show them:
// how long each member waited inside the call for the others, who arrived last, and how late
// each rank typically is. Descriptive numbers for the writers only; deciding that something is
// a problem is the analyses' job (coordinator/analysis). Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/record_facts.h"
#include "coordinator/session.h"
#include "core/time.h"

namespace rankscope {

// How long each member of `instance` waited inside the call for other members to arrive, in
// the order of instance.members. NxN ops wait for the last arrival; rooted one-to-all ops wait
// for the root (Late Broadcast); all-to-one ops make the root wait for the last sender (Early
// Reduce). Never negative, and never longer than the member's own time in the call (a longer
// one can only come from clock error).
std::vector<DurationNs> MemberWaits(const CollectiveInstance& instance);

struct RankCollectiveStats {
  int rank = -1;
  int64_t instances = 0;           // complete instances this rank took part in
  DurationNs time_in_calls = 0;    // summed exit - enter over those
  DurationNs wait = 0;             // summed MemberWaits over those
  int64_t times_last = 0;          // arrived last (strictly, of two or more members)
  DurationNs median_lateness = 0;  // median of enter - earliest member's enter
};

struct CollectiveOverview {
  int64_t instances = 0;
  int64_t complete = 0;
  int64_t mismatched = 0;
  std::map<std::string, int64_t> by_op;    // CollectiveOpName -> all instances of that op
  std::vector<RankCollectiveStats> ranks;  // sorted by rank; ranks in some complete instance
  // The largest median_lateness of any rank, and that rank (-1 when there is none).
  DurationNs max_median_lateness = 0;
  int max_median_lateness_rank = -1;
};

// --- Steps, as every writer counts them (record_facts.h: IsStepRange, RankRecordFacts::steps).

// The index of the span in `steps` (start-ordered) that contains `t`, if any.
std::optional<size_t> StepContaining(const TimeSpans& steps, TimeNs t);

struct SessionSteps {
  TimeSpans spans;  // step k: the earliest start to the latest end of the ranks' k-th steps
  std::unordered_map<int, TimeSpans> of_rank;  // by rank id; a duplicated rank: its first copy
};

// The session's steps; none (no spans) when a rank that made collective calls has no step ranges,
// since its calls would belong to no step.
// `facts`: GatherRecordFacts' (or a stored session's), per rank as Session::ranks.
SessionSteps FindSessionSteps(const Session& session, const RecordFacts& facts);

// Per step, the summed MemberWaits of the members that entered a call inside their own rank's
// step of that index.
std::vector<DurationNs> WaitPerStep(const SessionSteps& steps,
                                    const std::vector<CollectiveInstance>& instances);

// The step with the most waiting; the first step absorbs start-up and is passed over when there
// are more than two. nullopt when no step holds any wait.
std::optional<size_t> MostWaitingStep(const std::vector<DurationNs>& wait_per_step);

// Summarises instances as MatchCollectives returns them. Per-rank numbers use complete
// instances only, since an incomplete one has no trustworthy last arrival.
CollectiveOverview SummarizeCollectives(const std::vector<CollectiveInstance>& instances);

}  // namespace rankscope
