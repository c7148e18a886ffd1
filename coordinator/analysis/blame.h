// The blame model: every wait state of a session is put on the rank whose delay caused it, and a
// what-if replay says what the job would have taken had a rank run like the others.
//
// Each rank's run is read as a chain of MPI events (collective calls, point-to-point calls and
// the Wait/Test calls that completed them, grouped where one call completed several) separated
// by the rank's own work: the time outside MPI. Matching (collective instances, point-to-point
// messages) gives the dependencies between the chains: a member of an N-to-N collective leaves
// after the last arrival, a broadcast's receivers after its root, a reduce's root after its last
// sender, a scan's member after every lower rank, a receive after its send was posted, a send
// that had to wait for its receiver after the receive was posted. Each event keeps what it took
// after its dependencies were met (the transfer), so replaying the chains with the recorded own
// work reproduces the run; replaying them with one rank's own work scaled to the typical rank's
// gives the what-if. The difference in the others' waiting is the waiting that rank caused,
// chains included (a rank that waited for it and then made a third wait passes that on to it),
// as in Scalasca's delay analysis, measured by replay rather than by rules.
//
// A rank is a straggler when (1) its own work stands apart from the other ranks' (robust
// statistics: median and MAD), and (2) the what-if says the job would be a material share
// faster had it run like the typical rank. No rule counts how often a rank was last.
//
// Everything here uses facts an agent can compute per window (time outside MPI, per-instance
// arrivals, time blocked per peer), so it keeps working when agents send summaries.
// Pure functions over an aligned session.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/p2p_matcher.h"
#include "coordinator/session.h"
#include "coordinator/session_matches.h"
#include "coordinator/windows.h"
#include "core/time.h"

namespace rankscope {

struct BlameOptions {
  // A candidate's own work (time outside MPI) exceeds the median of the other ranks' by more
  // than this fraction of that median ...
  double min_excess_fraction = 0.10;
  // ... and by more than this many robust standard deviations (1.4826 MAD) of the others' ...
  double excess_sigmas = 4.0;
  // ... or this many for a rank the agents saw starved of CPU or running far less than the
  // others (StarvedOfCpu, RanFarLess): that evidence from outside the program stands beside the
  // MPI figures, whose spread across the others is inflated by the same rank (their transfers
  // with it wait for it to run; on HPCC their busy times spread 0.8-2.0 s around it).
  double excess_sigmas_outside_evidence = 2.0;
  // ... and by more than this many standard deviations of what chance gives over the run: the
  // run is cut into tenths, and how far a rank's own work in a tenth strays from the others' by
  // chance is read from the other ranks (with two ranks, from its own tenths, so it must be
  // late steadily). Random jitter that happens to add up on one rank does not pass.
  double steady_sigmas = 5.0;
  // With two ranks, one of them seen slowed from outside (StarvedOfCpu, RanFarLess, frozen or
  // stopped), its ratio to the other rank's in each part may pass instead: the mean of the
  // parts' log ratios this many standard errors above 0 (HPCC, whose phases differ in size,
  // with a rank frozen 40 ms of every 100: 4.1, its busy time 1.4-3.5x the other's in every
  // part).
  double steady_sigmas_outside_evidence = 3.0;
  // At most this many candidates are replayed, most excess first (each replay is one pass over
  // the session's events).
  int max_candidates = 8;
  // A straggler's what-if saves at least this fraction of the job's wall time (launch to last
  // exit, BlameModel::job: what the user timed, and what the what-if sentence states) ...
  double min_gain_fraction = 0.05;
  // ... and critical above this fraction.
  double critical_gain_fraction = 0.25;
  // Ranks with fewer MPI events than this are not judged (nothing to replay).
  int min_events = 3;
};

// Where a rank's time went, and what it cost the others.
struct RankBlame {
  int rank = -1;
  TimeNs first = 0;         // its first MPI event's enter (after MPI_Init: its exit)
  TimeNs last = 0;          // its last MPI event's exit
  DurationNs in_mpi = 0;    // inside MPI calls (merged), within [first, last)
  DurationNs own_work = 0;  // outside MPI within [first, last)
  // Its own work plus the time its MPI calls took once their partners were there (the
  // transfer): the part of its run in which it was not waiting for anyone. What the candidate
  // test compares and the what-if scales: a rank starved of CPU is slow inside MPI too (it
  // cannot progress messages while it does not run), and codes that spend most of their time
  // communicating (HPCC) show it there.
  DurationNs busy = 0;
  DurationNs waited = 0;  // inside MPI waiting for another rank (first order)
  DurationNs caused = 0;  // others' waiting it caused directly (first order: it was last)
  int events = 0;         // MPI events in its chain
  int collective_calls = 0;
  int p2p_calls = 0;
  int other_calls = 0;  // MPI calls neither collective nor point-to-point (MPI-IO, RMA, ...)
  // Calls the model could not turn into dependencies: collectives of incomplete instances,
  // point-to-point calls without a matched partner, calls of kinds it does not model.
  int uninterpreted_calls = 0;
  // First-order waiting it caused, by the kind of call the others waited in ("allreduce",
  // "recv", "wait", ...).
  std::map<std::string, DurationNs, std::less<>> caused_at;

  // Busy time in each of ten parts of the run, for persistence and noise: parts cut at the same
  // collective instances on every rank where all ranks share ten or more, else wall-clock tenths
  // of the model's span.
  std::vector<DurationNs> busy_by_part;
  std::vector<DurationNs> own_by_part;  // the same for own work
  // Judged on its busy time rather than its own work: the agents saw it starved of CPU.
  bool judged_on_busy = false;
  // Judged on being held alone (neither its own work nor its busy time stood apart: a cgroup
  // quota or freezer held it inside its collectives, where every member's transfer grew with its
  // own): the share of its wall it was held (HeldShare). 0 otherwise.
  double held_share = 0;
  // One of two host ranks that stood apart on its own work and would have saved enough, but
  // with nothing seen from outside the program to explain it: not named a straggler (with two
  // ranks, a slower core and more work look alike). ApplyBlame notes it.
  bool unexplained_of_two = false;
  // Candidates: how far its own work stands from the other ranks' (excess over their median, in
  // robust standard deviations and as a fraction of the median), and the share of tenths of the
  // run in which it did clearly more own work than the others (1: all through the run).
  double excess_sigmas = 0;
  double excess_fraction = 0;
  double persistence = 0;

  // Filled for replayed candidates only (replayed == true).
  bool replayed = false;
  // The job's span had it run like the typical rank, with the stragglers in what_if_with (found
  // before it) like the typical rank too.
  DurationNs what_if_span = 0;
  std::vector<int> what_if_with;
  // What making it typical saves beyond the stragglers before it (what_if_with): its own share,
  // which the straggler test, its confidence and its severity read.
  DurationNs gain = 0;
  DurationNs caused_total = 0;  // the others' waiting it caused, chains included (beyond those)
};

// A rank's own work per NVTX range name (innermost range; "" outside every range), over its
// own-work intervals from the model's first event on, and whether it recorded ranges at all.
struct OwnWorkRanges {
  bool has_ranges = false;
  std::map<std::string, DurationNs> by_range;
};

struct BlameModel {
  TimeNs first = 0;  // first MPI event of any rank (the session's start, with MPI_Init)
  TimeNs last = 0;   // last MPI event exit of any rank
  DurationNs span() const { return last > first ? last - first : 0; }
  // The job's wall time: the session's (launch to last exit), at least span(). Gains are shares
  // of it: a rank that costs 5 % of a short MPI phase in a long job is no straggler of the job.
  DurationNs job = 0;
  DurationNs replayed_span = 0;     // the replay of the run as recorded (checks the model)
  DurationNs typical_busy = 0;      // median over ranks of RankBlame::busy
  DurationNs typical_own_work = 0;  // median over ranks of RankBlame::own_work
  // Indices into `ranks` of the ranks judged (BlameOptions::min_events events or more).
  std::vector<size_t> judged;
  int broken_dependencies = 0;   // dependencies the replay had to drop (inconsistent order)
  std::vector<RankBlame> ranks;  // ordered by rank
  // First-order waiting, seconds as ns: (waiter, culprit) -> time the waiter spent waiting for
  // the culprit inside MPI.
  std::map<std::pair<int, int>, DurationNs> waits;
  // The ranks that pass both tests (candidates whose what-if saves enough), most excess first,
  // and the replayed span with all of them like the typical rank.
  std::vector<int> stragglers;
  DurationNs what_if_all_span = 0;
  // Per rank (as `ranks`), when the model was built window by window: its OwnWorkRanges, read
  // then (the windows' ranges are not kept). Empty otherwise: read from the session when needed.
  std::vector<OwnWorkRanges> own_work_ranges;

  const RankBlame* Find(int rank) const {
    for (const RankBlame& r : ranks) {
      if (r.rank == rank) return &r;
    }
    return nullptr;
  }

  // The typical rank that `rank` is held against: the median busy time and own work of the other
  // judged ranks. typical_busy counts the rank itself, which with two ranks is half of it (HPCC
  // with a starved rank busy 10.4 s and the other 2.5 s: "typical 6.4 s").
  struct Typical {
    DurationNs busy = 0;
    DurationNs own_work = 0;
  };
  Typical TypicalBesides(int rank) const;
};

// Whether the agents saw the rank starved of CPU from outside the program: its cgroup's quota
// throttled it for a tenth of its sampled wall time or more (twice the other ranks' median
// share at least), or it was runnable but waiting for a CPU (run delay) for a share of its time
// at least 1.15x the others' median + 0.05 while its CPU share was at most 0.8x theirs (and
// 50 ms short at least: /proc counts CPU time in 10 ms ticks). False
// without /proc scheduler figures for it and another rank.
bool StarvedOfCpu(const Session& session, int rank);

// StarvedOfCpu as a margin (ThresholdMargin: 0.5 at its thresholds, towards 1 far past them), for
// the confidence: the quota's throttled share against a tenth, else the weaker of the run delay
// against its threshold and the others' CPU share against 1.25x its own. nullopt when it is not
// starved.
std::optional<double> StarvationMargin(const Session& session, int rank);

// The share of its sampled wall time the rank's cgroup CPU quota throttled it, when that is a
// tenth or more and at least twice the other ranks' median share (their cgroups throttled them
// less, or not at all); nullopt otherwise. The quota half of StarvedOfCpu.
std::optional<double> ThrottledShare(const Session& session, int rank);

// The share of its wall the rank could not run although it wanted to, as seen from outside: its
// cgroup quota's throttling (ThrottledShare), else its main thread's samples frozen by a cgroup
// freezer or stopped by a signal beyond the other ranks' median (FindOffCpuCause), when that is
// a tenth or more. nullopt otherwise.
std::optional<double> HeldShare(const Session& session, int rank);

// How steadily `mine` exceeds `theirs` in proportion over the parts of a run: the mean of the
// parts' log ratios, each figure floored at `floor` (> 0) and each ratio clipped at their median
// (a part far above the rest is no sign of unsteadiness), in standard errors of that mean (their
// spread floored at 0.01). Parts where both are below the floor are left out; 0 when none is
// left.
double ProportionalSteadiness(const std::vector<double>& mine, const std::vector<double>& theirs,
                              double floor);

// Whether the rank's processes got at most 0.6x the CPU per wall second of the other ranks'
// median, and 50 ms less at least (five of /proc's 10 ms ticks): stopped, frozen or starved
// (ranks waiting in MPI poll, so they burn CPU).
bool RanFarLess(const Session& session, int rank);

// The rank's own work as the model reads it: the intervals between consecutive MPI events of its
// chain, from its first event (or `from`, when later) on. Sorted, non-overlapping.
Intervals OwnWorkIntervals(const RankData& rank, TimeNs from);

// OwnWorkRanges of every rank (as s.ranks) from its own-work intervals since `from`, its MPI
// records and ranges fed window by window as its agent would upload them (SplitIntoWindows).
// *peak_held (when not null): the most ranges held across a cut, summed over the ranks.
std::vector<OwnWorkRanges> OwnWorkRangesByWindow(const Session& s, TimeNs from,
                                                 const WindowSplit& split,
                                                 size_t* peak_held = nullptr);

// How clearly the rank stands apart from the other ranks, for the confidence (docs/design.md):
// the share of the run it stood apart in (persistence) times the weaker ThresholdMargin of its
// excess as a fraction and in robust sigmas (0.5 at the thresholds, all through the run).
double SeparationMargin(const RankBlame& rank, const BlameOptions& options);

// The model of `aligned` with its matches (MatchSession(aligned)). A session without MPI or NCCL
// collective events gives an empty model (no ranks). With `by_window`, the ranks' MPI records
// are read window by window into the model's per-call events (each window once, as a
// coordinator that drops a window's records once folded would), not all at once: the model
// must be the same.
BlameModel BuildBlameModel(const Session& aligned, const SessionMatches& matches,
                           const BlameOptions& options = BlameOptions{},
                           const WindowSplit* by_window = nullptr);

// What the model reads of the records, folded window by window as the agents upload them: each
// rank's chain (one event per MPI call) and its own work per NVTX range, so that the records are
// not read again. Fed every rank's upload of one window at a time (as Session::ranks); Finish,
// once the run is over and matched, gives BuildBlameModel's model with `by_window`.
class BlameEventFold {
 public:
  explicit BlameEventFold(const Session& session);  // its ranks and their ids
  ~BlameEventFold();
  BlameEventFold(const BlameEventFold&) = delete;
  BlameEventFold& operator=(const BlameEventFold&) = delete;
  // Room for each rank's chain (as Session::ranks: at most its MPI records, `p2p` of them
  // point-to-point), made once instead of by doubling (NetPIPE: 9.8 M events a rank, each
  // doubling a copy); optional, before the first Add.
  void Reserve(const std::vector<size_t>& records, const std::vector<size_t>& p2p);
  void Add(const std::vector<RankUpload>& window);
  // Once, after the last window: the fold's chains go into the model.
  BlameModel Finish(const Session& aligned, const SessionMatches& matches,
                    const BlameOptions& options = BlameOptions{});
  size_t peak_ranges_held() const;  // ranges held across a cut for own work, all ranks

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The blame model folded segment by segment (docs/design.md, "The blame graph in segments"), so
// that the end of a run holds one segment's events, not the run's. Each window's chains are
// added as BlameEventFold adds them; when the matchers close a window holding nothing open
// (MatchFold::quiet) and every rank's last event is one N-to-N instance of them all, no
// dependency crosses that cut: the segment's graph is made from the instances and messages
// released since the last one, its figures (totals, first-order waits, the instances the ten
// parts may be cut at, the replay carried on from the segment before) are added up, and its
// events are dropped. Finish gives BuildBlameModel's model where the segments suffice: no rank
// stands apart or is held (a candidate's what-if replays each event with typical own work) and
// the parts can be cut at shared instances. Otherwise nullopt: the caller builds the whole
// graph (BlameEventFold) in another pass. Not for GPU timelines.
class SegmentedBlameFold {
 public:
  explicit SegmentedBlameFold(const Session& session);  // its ranks, their ids and its start
  ~SegmentedBlameFold();
  SegmentedBlameFold(const SegmentedBlameFold&) = delete;
  SegmentedBlameFold& operator=(const SegmentedBlameFold&) = delete;
  // Room as BlameEventFold::Reserve makes it, for a run that never cuts: pages a segment does
  // not reach are never touched (optional, before the first Add).
  void Reserve(const std::vector<size_t>& records, const std::vector<size_t>& p2p);
  void Add(const std::vector<RankUpload>& window);
  // Once the matchers closed the window: the instances they released at the close, the links of
  // every message they matched so far (MatchFold::released_links: the segment's, a tail of them,
  // are ordered in place), MatchFold::quiet, and whether it was the run's last.
  void Close(std::span<const CollectiveInstance> instances, std::span<MessageLink> released,
             bool quiet, bool last);
  // Once, after the last window was added and closed, with the matchers' result
  // (MatchFold::Finish).
  std::optional<BlameModel> Finish(const Session& aligned, const SessionMatches& matches,
                                   const BlameOptions& options = BlameOptions{});
  size_t segments() const;
  size_t peak_events() const;  // the most events a segment held, all ranks

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// For tests of the blame graph replayed in segments (docs/design.md, "The blame graph in
// segments"): the session's graph replayed whole, and cut at its clean cuts (N-to-N instances
// of every rank with no dependency across them) and replayed segment by segment, each from
// where the one before left every rank's clock. Own work scaled per rank index by `scale`.
struct SegmentedReplayCheck {
  struct Figures {
    DurationNs span = 0;
    std::vector<DurationNs> waited;  // per rank index
    int broken = 0;
  };
  Figures whole, by_segments;
  size_t segments = 0;
  size_t largest_segment_events = 0;
};
SegmentedReplayCheck CheckReplayBySegments(const Session& aligned, const SessionMatches& matches,
                                           const std::vector<double>& scale);

}  // namespace rankscope
