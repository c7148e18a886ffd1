// The live straggler check (issue #16, "Analysis in windows, live"): while the job runs, which
// rank holds the others up, from a few cumulative figures per rank that the coordinator keeps as
// batches arrive (LiveTally: time inside MPI on the rank's own clock, and the /proc counters its
// agent sends with every batch). Memory: ranks x the checks of one window, flat over the job.
//
// What it decides, each check, over the last `window_checks` checks, while the others wait inside
// MPI a material share of their time: a rank works (time outside MPI) clearly more of its time
// than the others, or a cause seen from outside the program sets it apart (its cgroup throttles
// it, it waits for a CPU far more than they do, or it is off its CPU) while the others wait most
// of their time (throttled while polling in MPI, its MPI time stretches too, so its work share
// need not stand out). With four ranks or more "clearly" is a robust test across ranks (the
// median and 1.4826 MAD of the others, as the blame model judges own work); with two or three
// there is no typical rank to hold one against, so a rank is named only with a cause, as the
// blame model does. A rank is reported once, after it stood out in `persist` checks in a row
// with a cause, or `persist_busy` without one; the report at the end weighs the whole run
// (blame model, what-if) and is what the live line previews. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/proc_stats.h"
#include "core/time.h"

namespace rankscope {

// A blocking MPI call a rank is inside (proto OpenMpiCall), `since` on the coordinator's clock.
struct LiveOpenCall {
  bool collective = false;  // else point to point (or a Wait on such a request)
  uint32_t op = 0;          // CollectiveOp, or P2PKind
  uint64_t comm_id = 0;
  uint64_t seq = 0;  // collectives: the instance on comm_id
  int32_t comm_size = 0;
  int32_t peer = -1;  // point to point: the peer's world rank; -1 any or unknown
  TimeNs since = 0;
  // When it entered on the rank's clock (as LiveTally::through): the call is over once an MPI
  // exit after it is seen, whatever the delays of the figures that said it was open.
  TimeNs enter = 0;
  bool polling = false;  // a loop of MPI_Test* or MPI_Iprobe calls since `enter`, not one call

  bool operator==(const LiveOpenCall&) const = default;
};

// A rank's cumulative figures as the coordinator holds them at one moment.
struct LiveTally {
  int rank = -1;
  // The rank's MPI calls so far, on its own clock, as its agent counts them (UploadBatch
  // in_mpi_ns): the latest exit, and the time inside MPI up to it (each instant once).
  // `through` is 0 before the first call.
  TimeNs through = 0;
  DurationNs in_mpi = 0;
  // The last /proc snapshot its agent sent (cumulative since the program started): scheduler CPU
  // time, run-queue delay, the cgroup's throttled time, and the sampler's wall from its first
  // sample to this one. proc_wall is 0 before the first snapshot.
  DurationNs cpu = 0;
  DurationNs run_delay = 0;
  DurationNs throttled = 0;
  DurationNs proc_wall = 0;
  // For the stall check (coordinator/stall_check.h), on the coordinator's clock: when its latest
  // batch arrived, the blocking MPI call or polling loop its main thread was inside per its
  // latest figures so far (nullopt outside one), its main thread's states sampled so far
  // (cumulative), and whether its program has ended (its final figures came).
  TimeNs heard = 0;
  std::optional<LiveOpenCall> open;
  MainThreadStates main_thread;
  bool ended = false;
};

struct LiveCheckOptions {
  // A rank's figures are compared over this many checks back, and it must stand out in `persist`
  // checks in a row with a cause seen from outside (more than window_checks: a burst shorter
  // than a check is in window_checks windows and is no straggler), or in `persist_busy` checks
  // in a row without one: ranks that share cores (oversubscribed, or polling in MPI beside
  // each other) take turns at holding the others up for a few seconds each, with nothing to
  // tell them apart from outside.
  size_t window_checks = 2;
  int persist = 3;
  int persist_busy = 10;
  // A rank is judged in a window only if its calls cover at least this share of it (from its
  // latest exit then to its latest exit now): a rank inside one long call, or computing longer
  // than the window, has shares over too short a stretch to mean anything.
  double min_covered = 0.4;
  // The others must wait inside MPI at least this share of their time (the cost is material).
  double min_others_waiting = 0.10;
  // A rank whose work share does not stand out is named by its cause alone (below) only where
  // the others wait at least this share.
  double min_others_waiting_for_cause = 0.40;
  double min_excess = 0.10;   // own-work share at least this much (relative) over the others'
  double min_sigmas = 4.0;    // and, with 4 ranks or more, this many robust sigmas over them
  double sigma_floor = 0.02;  // the least spread assumed (own-work shares are fractions)
  // Causes seen from outside, over the window: throttled share of wall (at least twice the
  // others'), run delay share of (CPU + run delay) against the others', share of wall neither on
  // a CPU nor waiting for one against the others'.
  double min_throttled = 0.10;
  double min_run_delay = 0.20;
  double starved_factor = 1.25;  // and at least starved_margin over the others' (absolute)
  double starved_margin = 0.15;
  double min_off_cpu = 0.30;
  double off_cpu_margin = 0.10;
  // Without a cause, a rank is named for more work only if it waited for a CPU less than this
  // share of its runnable time.
  double busy_max_run_delay = 0.20;
};

enum class LiveCause { kThrottled, kCpuStarved, kOffCpu, kBusy };

// What the check found for one rank, over the window it was first reported in.
struct LiveFinding {
  int rank = -1;
  LiveCause cause = LiveCause::kBusy;
  // About when it began (the caller's clock): the check before the first one it stood out in,
  // or the start of that first check's window when it stood out from the first judged check.
  TimeNs began = 0;
  TimeNs found = 0;  // the check that reported it
  DurationNs window = 0;
  double own_share = 0;         // its time outside MPI, share of its wall over the window
  double others_own_share = 0;  // the others' median
  double others_waiting = 0;    // the others' median share inside MPI
  double throttled_share = 0;   // of its wall
  double run_delay_share = 0;   // of its CPU + run delay
  double others_run_delay_share = 0;
  double off_cpu_share = 0;  // of its wall, neither on a CPU nor waiting for one
};

class LiveCheck {
 public:
  explicit LiveCheck(LiveCheckOptions options = LiveCheckOptions{});

  // One check at `now` (any monotonic clock; only differences are read) with every rank's
  // cumulative tally (any order; a rank missing from one check is skipped in it). Returns the
  // ranks reported by this check (each rank once per LiveCheck).
  std::vector<LiveFinding> Check(TimeNs now, std::vector<LiveTally> tallies);

 private:
  struct Snapshot {
    TimeNs at = 0;
    std::vector<LiveTally> tallies;  // sorted by rank
  };
  LiveCheckOptions options_;
  std::deque<Snapshot> history_;      // the last window_checks + 1 checks
  std::vector<int> streak_;           // by rank: checks in a row it stood out in
  std::vector<int> cause_streak_;     // by rank: of those, the last ones in a row with a cause
  std::vector<TimeNs> streak_began_;  // by rank: when the first of them began
  std::set<int> reported_;
  bool judged_before_ = false;  // an earlier check compared ranks
};

// The ranks a live finding asks for raw records around it (Uplink's CAPTURE_AROUND_NOW): the rank
// named and the `peers` of the others in `known` nearest to it in rank number, the lower first
// on a tie (in a ring or a halo exchange, its neighbours: who waited for it).
std::vector<int> CaptureRanks(int rank, std::vector<int> known, size_t peers = 2);

// One line for the terminal and the report, e.g. "rank 1 holds the others up: its cgroup
// throttled it 41% of the last 2 s, while the others waited in MPI 58% of theirs (outside MPI it
// spent 93%, the others 40%). Began about 0:03, seen 4 s later." `start` is the job's start on
// the finding's clock (0 where its times are since the job's start).
std::string LiveFindingLine(const LiveFinding& f, TimeNs start = 0);

// The live lines' figures: 0.93 -> "93%", 65 s -> "1:05" (since the job's start), "4 s".
std::string LivePercent(double share);
std::string LiveClock(DurationNs d);
std::string LiveSeconds(DurationNs d);

// The cause's name in report.json and session.sqlite ("cgroup_throttled", "cpu_starved",
// "off_cpu", "busy"), and back (nullopt for a name it does not know).
const char* LiveCauseName(LiveCause cause);
std::optional<LiveCause> LiveCauseFromName(std::string_view name);

}  // namespace rankscope
