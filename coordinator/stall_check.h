// The live stall check (issue #16, "Analysis in windows, live"): while the job runs, which rank
// the others have been waiting for inside MPI far longer than any step takes, and what that rank
// is doing. The straggler check (live_check.h) compares shares of time over windows and cannot
// see a rank that stops: a rank stalled in its own code or stopped sends no MPI record, and the
// ranks waiting for it send none either. Each agent reads, every second, the blocking MPI call
// its rank's main thread is inside (core/control_page.h OpenCallSlot, written by the inject
// library) and sends it with the rank's /proc figures, with or without records
// (UplinkOptions::heartbeat_period); the coordinator keeps the latest per rank (LiveTally).
//
// A rank inside one blocking call or polling loop (LiveOpenCall::polling) for `after` or longer
// waits: in a collective instance for the members not inside it (known when the communicator is
// the whole job: its size is the number of ranks; else those inside another instance of it), in a
// point-to-point call for its peer, in a receive from any rank on the whole job's communicator
// for the few ranks (16 at most) that cannot progress or made no MPI progress for `after`. Those
// edges are followed, through every rank inside a blocking call however long, to the ranks at
// their ends, outside MPI or unable to progress: the ranks holding the job up. Each is described
// from its own figures since its last MPI call ended: outside MPI or inside another call, its CPU
// use, and where its main thread was (running, stopped by a signal or a debugger, blocked in the
// kernel and where), or silent (its agent sent nothing for `silent`). Ranks all inside the same
// collective instance are a stall of the collective itself; waits that close a cycle are a
// deadlock. Each is reported once per episode (again only after a check in which it did not stand).
// Memory: one snapshot per rank, flat over the job. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coordinator/live_check.h"
#include "core/time.h"

namespace rankscope {

struct StallCheckOptions {
  // A rank inside one blocking MPI call this long waits for another (NCCL's watchdog and
  // torch's flight recorder wait minutes; a live line can say it sooner).
  DurationNs after = 20 * kNsPerSec;
  // A rank whose agent sent nothing for this long is silent (the heartbeat is every second).
  DurationNs silent = 5 * kNsPerSec;
};

enum class StallKind {
  kHeldUp,    // ranks wait for `holder`, which is not waiting so long itself
  kTogether,  // every member of a collective instance is inside it: it does not complete
  kDeadlock,  // waits that close a cycle (`waiting` in order; each waits for the next)
};

// What a holder was doing since its last MPI call ended (or since it was first seen).
struct HolderState {
  bool silent = false;  // its agent sent nothing for StallCheckOptions::silent
  DurationNs silent_for = 0;
  std::optional<LiveOpenCall> inside;  // the blocking call it is inside, if any
  DurationNs quiet = 0;                // since its last MPI call ended (or first seen)
  double cpu_share = -1;               // CPU time over that stretch's wall; -1 unknown
  int samples = 0;                     // its main thread's samples over that stretch
  double running = 0;                  // shares of those samples
  double stopped = 0;
  double blocked = 0;
  std::string blocked_in;  // the kernel function it was blocked in most ("" none)
};

struct StallFinding {
  StallKind kind = StallKind::kHeldUp;
  int holder = -1;                   // kHeldUp
  HolderState state;                 // kHeldUp: the holder's
  std::vector<int> waiting;          // the ranks held up (directly or through others), sorted
  std::optional<LiveOpenCall> call;  // what the longest-waiting of them is inside
  int call_rank = -1;                // that rank
  TimeNs began = 0;                  // when that rank entered it (the caller's clock)
  TimeNs found = 0;
  // The command that shows where the holder is (its stacks), filled by the caller who knows its
  // node and pid; "" none.
  std::string next;
};

class StallCheck {
 public:
  explicit StallCheck(StallCheckOptions options = StallCheckOptions{});

  // One check at `now` (the clock of LiveTally::heard and LiveOpenCall::since) with every
  // rank's latest tally. Returns what this check found that no earlier check reported.
  std::vector<StallFinding> Check(TimeNs now, const std::vector<LiveTally>& tallies);

 private:
  // A rank's figures when its latest MPI exit last moved (or when first seen).
  struct Mark {
    TimeNs through = -1;
    TimeNs at = 0;
    DurationNs cpu = 0;
    DurationNs proc_wall = 0;
    MainThreadStates main_thread;
  };
  // (kind, rank, comm, seq): a holder, a collective instance all inside, a deadlock's lowest rank.
  using Key = std::tuple<int, int, uint64_t, uint64_t>;
  using Instance = std::pair<uint64_t, uint64_t>;  // a collective instance: (comm, seq)
  struct View;  // this check's ranks and what each is doing (stall_check.cc)

  // The check's phases. Look: the ranks sorted, their marks moved, who is stuck, inside a current
  // call, waiting. Absent: per collective instance any rank is inside, the indices it waits for
  // (adds a finding where every member is inside it). FollowWaits: per index, the holders it
  // waits for through others (adds deadlocks). HolderFindings: one finding per holder.
  View Look(TimeNs now, const std::vector<LiveTally>& tallies);
  std::map<Instance, std::vector<int>> Absent(const View& v, std::vector<StallFinding>* found);
  std::vector<std::vector<int>> FollowWaits(const View& v,
                                            const std::map<Instance, std::vector<int>>& absent,
                                            std::vector<StallFinding>* found);
  std::vector<StallFinding> HolderFindings(const View& v,
                                           const std::vector<std::vector<int>>& reach);
  // `t` as a holder; `open_now`: its open call is current (not one it has made progress since).
  HolderState Describe(TimeNs now, const LiveTally& t, bool open_now) const;
  // Notes `key` as standing in this check; true when it did not stand in the one before (a new
  // episode: reported; the same stall seen again is not).
  bool NewEpisode(const Key& key);

  StallCheckOptions options_;
  std::map<int, Mark> marks_;
  std::set<Key> previous_;  // what stood in the last check
  std::set<Key> current_;   // what stands in this one so far
};

// One line for the terminal and the report, e.g. "ranks 0-2,4-7 have waited 21 s inside
// allreduce #41 (8 ranks) for rank 3, which is outside MPI: its main thread was stopped (a signal
// or a debugger) 100 % of the 22 s since its last MPI call. Began about 0:05, seen 21 s later."
// `start` is the job's start on the finding's clock (0 where its times are since the start).
std::string StallFindingLine(const StallFinding& f, TimeNs start = 0);

// "held_up", "together", "deadlock", and back (nullopt for a name it does not know).
const char* StallKindName(StallKind kind);
std::optional<StallKind> StallKindFromName(const std::string& name);

}  // namespace rankscope
