// Straggler analysis: which rank arrives last at collectives, how late, what the others lose
// waiting for it, and what it was doing instead (NVTX ranges, untracked host time, MPI calls).
// Waiting follows Scalasca's wait-state patterns (WaitPatternOf in core/records.h): at N-to-N
// operations everyone waits for the last arrival (Wait at NxN), at one-to-all operations the
// others wait only for a late root (Late Broadcast), at all-to-one operations only the root waits,
// for the last sender (Early Reduce). Pure functions over an aligned session.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "coordinator/windows.h"
#include "core/time.h"

namespace rankscope {

struct StragglerOptions {
  // A straggler holds the others up in at least this fraction of its complete collective
  // instances. Holding up means being the culprit (the last arrival the others waited for) or, at
  // N-to-N operations, arriving later than the lateness threshold below even when another
  // straggler came later still: two slow ranks that take turns at being last are both found.
  double min_frac_last = 0.5;
  // ... and that fraction also lies this many binomial standard deviations above 1/n, the share
  // of culprit instances a rank gets by chance in a clean run (matters for small n and few
  // instances: with n = 2 and 50 instances it asks for 0.71).
  double frac_last_sigmas = 3.0;
  // ... and a clean rank would reach that many late instances by chance with probability at
  // most this (binomial upper tail at the chance share). Stops "10 of 16" flukes that a normal
  // approximation lets through; "51 of 52" passes however noisy the arrivals are.
  double max_chance_probability = 1e-6;
  int min_instances = 3;  // fewer complete instances than this: no judgement

  // Its median lateness (arrival minus the instance's median arrival, over the instances where it
  // held the others up) must exceed all of: min_lateness, noise_k * the robust sigma (1.4826 MAD)
  // of the other ranks' lateness divided by sqrt(number of instances) (the standard error of
  // its median lateness over all instances; a single instance counts as late only past
  // noise_k * sigma), and clock_k * the clock uncertainty of the comparison (the
  // larger of its own and the other ranks' median uncertainty).
  DurationNs min_lateness = 1 * kNsPerMs;
  double noise_k = 5.0;
  double clock_k = 3.0;

  // The other ranks must lose at least this fraction of their time waiting for it: their summed
  // wait over (number of other ranks x the job's collective-covered span, first enter to last
  // exit of any complete instance). Above critical_cost_fraction the finding is critical.
  double min_cost_fraction = 0.01;
  double critical_cost_fraction = 0.20;
};

// What one rank's arrivals look like over the complete instances it belongs to.
struct RankArrivalStats {
  int rank = -1;
  int instances = 0;                  // complete instances it was a member of
  int instances_last = 0;             // ... where it was the culprit others waited for
  DurationNs median_lateness_ns = 0;  // over all its instances (negative: usually early)
  DurationNs wait_caused_ns = 0;      // time others waited for it, summed over them
  DurationNs wait_suffered_ns = 0;    // time it waited for others
};

// Per-rank arrival statistics over the complete instances, ordered by rank; for the report's rank
// table. Incomplete and mismatched instances are ignored.
std::vector<RankArrivalStats> DescribeArrivals(const std::vector<CollectiveInstance>& instances);

// One call's share of what a late rank did before its collectives against the other members
// (summed over its late calls, it is the cause a straggler finding states): the time it spent
// in the gap before the call (since its latest collective exit) per NVTX range, outside every
// range, in point-to-point MPI calls and in GPU kernels (per name), and per figure the other
// members' median. Names are those of either side (0 on a side without them).
// One name's part of it: the late rank's time and the others' median. Flat, in name order: a
// share is kept per call that may count as late until the run is judged, so it is held small.
struct NamedGap {
  std::string name;
  DurationNs late = 0;
  double others = 0;
  bool operator==(const NamedGap&) const = default;
};
struct GapShare {
  std::vector<NamedGap> by_range, by_kernel;
  DurationNs late_gap = 0, late_untracked = 0, late_mpi = 0, late_kernels = 0;
  double others_gap = 0, others_untracked = 0, others_mpi = 0, others_kernels = 0;
  bool operator==(const GapShare&) const = default;
};

// (communicator id, sequence number, world rank): one rank's call of one instance.
using CallKey = std::tuple<uint64_t, uint64_t, int>;
using LateGaps = std::map<CallKey, GapShare>;

// The shares of the calls that may count as late, over complete instances: a culprit's (the
// last arrival the others waited for) and, at N-to-N operations, any call later than
// options.min_lateness (below every threshold the judgement uses, so the calls finally judged
// late are among them). A call without a gap before it (a rank's first) or whose instance has no
// other member with one has none. Of the ranks in `only` (every rank when nullptr).
LateGaps GapsBeforeLateCalls(const Session& aligned,
                             const std::vector<CollectiveInstance>& instances,
                             const StragglerOptions& options, const std::set<int>* only = nullptr);

// The same, window by window (coordinator/windows.h), as a coordinator that drops each window's
// records once it is folded would take them: each rank's gaps are read from its window's upload
// (SplitIntoWindows) and what it held of the windows before (the records that end after the
// window's start, or after the enter of a collective in progress there), with the time since
// its latest collective exit carried across cuts; an instance's shares are taken once all its
// members called. *peak_held (when not null): the most records held across a cut, summed over
// the ranks.
LateGaps GapsBeforeLateCallsByWindow(const Session& aligned, const WindowSplit& split,
                                     const StragglerOptions& options, size_t* peak_held = nullptr);

// The fold behind it, fed one window's uploads (every rank's, as Session::ranks) at a time;
// `last`: the run's last window (its cut is the end).
class LateGapFold {
 public:
  // `only`: keep the shares of these ranks' calls only (every rank's when nullopt).
  explicit LateGapFold(const StragglerOptions& options,
                       std::optional<std::set<int>> only = std::nullopt);
  ~LateGapFold();
  LateGapFold(const LateGapFold&) = delete;
  LateGapFold& operator=(const LateGapFold&) = delete;
  void Add(const std::vector<RankUpload>& window, bool last);
  LateGaps Take();
  size_t peak_held() const;  // the most records held across a cut, summed over the ranks

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Findings of kind "straggler", at most one per rank, for the ranks that pass every threshold in
// options; a clean run gives none. Each names, in its summary and in evidence "wait_states"
// (late instances per pattern: "wait_at_nxn", "late_broadcast", "early_reduce"), the wait-state
// patterns in which it held the others up. `instances` is MatchCollectives(session) of the same,
// aligned, session. When only the clock uncertainty stands between a rank and a finding, a sentence
// saying so is appended to *notes (may be nullptr) instead.
std::vector<Finding> FindStragglers(const Session& session,
                                    const std::vector<CollectiveInstance>& instances,
                                    const StragglerOptions& options,
                                    std::vector<std::string>* notes = nullptr);

// The same with the gaps before late calls from elsewhere (GapsBeforeLateCallsByWindow):
// gaps_of(ranks) gives at least those of the ranks flagged.
std::vector<Finding> FindStragglers(
    const Session& session, const std::vector<CollectiveInstance>& instances,
    const std::function<LateGaps(const std::set<int>& ranks)>& gaps_of,
    const StragglerOptions& options, std::vector<std::string>* notes = nullptr);

}  // namespace rankscope
