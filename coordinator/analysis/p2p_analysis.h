// Point-to-point wait-state findings (Scalasca's Late Sender and Late Receiver) from the
// messages MatchMessages (coordinator/p2p_matcher.h) matched, with their delay analysis: a rank
// is judged on the direct delays it caused over all its messages, so the slow pipeline stage is
// named, not the stages behind it that only passed its delay on, and random jitter (late half the
// time, early the other half) is not.
//
//   late_sender:   receivers blocked in MPI_Recv / the Wait of an Irecv before this rank sent.
//   late_receiver: senders blocked in a send that needs the receive (rendezvous-sized MPI_Send,
//                  MPI_Ssend, the Wait of a large Isend) before this rank posted it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/p2p_matcher.h"
#include "coordinator/session.h"
#include "coordinator/windows.h"
#include "core/time.h"

namespace rankscope {

struct PointToPointOptions {
  // A rank is reported when the direct waits it caused are at least this share of the waiting
  // ranks' time (the session's point-to-point span times the number of ranks that waited for
  // it) ...
  double min_cost_fraction = 0.05;
  // ... the median of its direct delays over all its messages (0 for those not waited for) is at
  // least this ...
  DurationNs min_median_wait = 1 * kNsPerMs;
  // ... it was late with at least this many messages ...
  int min_messages = 5;
  // ... and its own delays are at least this share of the waits it passed on (direct plus
  // propagated): a stage that mostly relays a delay from further along the chain, plus a little
  // of its own (ranks sharing cores add 10-30% of what it relays), is not the cause, and does not
  // set the pace either: until the stage it relays is fixed, fixing it gains nothing.
  double min_direct_share = 0.5;
  // Severity critical above this share.
  double critical_cost_fraction = 0.25;
  // The median delay must also exceed this many times the clock uncertainty of the comparison
  // (the larger of the blamed rank's and the waiting ranks' median uncertainty), as
  // StragglerOptions::clock_k asks of a straggler's lateness: a wait compares two ranks' clocks.
  double clock_k = 3.0;
};

// Where a rank was while others waited for its messages (those with a direct delay): NVTX self
// time per range name over those waits, their total, and the part any range covered.
struct WhileWaited {
  std::map<std::string, DurationNs> by_range;
  DurationNs windows = 0;
  DurationNs covered = 0;
};

// Per blamed rank, for each wait state.
struct WaitRanges {
  std::map<int, WhileWaited> late_sender;
  std::map<int, WhileWaited> late_receiver;
};

// The same, window by window (docs/design.md, "Cost bounded by the window"): the messages are
// matched by MatchMessagesByWindow, and each rank's ranges are held from the window they begin in
// until no wait still to be matched can reach back to them (MessageFold::WaitsFrom). A wait ends
// at the blamed rank's send or receive post, so the part of a range open at the cut beyond it is
// never read. What the whole run gives, on every recorded session.
// *peak_held (when not null): the most ranges held at the close of a window, all ranks together.
WaitRanges RangesWhileWaitedByWindow(const Session& aligned, const WindowSplit& split,
                                     size_t* peak_held = nullptr);

// The fold behind it, for a caller that matches the messages window by window anyway: Close at
// each close (MatchMessagesByWindow's on_close) with the window's uploads. A range is held
// from the first upload it is in until no wait still to be matched can reach back to it; one
// open at a cut is held cut short there, and comes again, cut at the next cut or ended, in each
// upload up to its end (so dropping it when a cut-short copy ends before the waits still to come
// loses nothing: they never read before that point).
class WaitRangesFold {
 public:
  void Close(const std::vector<RankUpload>& window, const MessageFold& fold,
             const std::vector<P2PMessage>& matched);
  WaitRanges Take() { return std::move(out_); }
  size_t peak_held() const { return peak_; }

 private:
  std::map<int, std::map<size_t, RangeRecord>> held_;  // per rank, by index among its ranges
  WaitRanges out_;
  size_t peak_ = 0;
};

// What one rank made the others wait for, over its matched messages, for one wait state: what
// the wait-state test and the finding read, folded message by message. The median of its direct
// delays is read exactly only where it can pass (at or above min_median_wait), so the delays
// below that are kept as a count and their largest; those above, and the late messages' sizes,
// as value-to-count maps (their number bounded by the waiting over the threshold, and by the
// sizes the code sends).
struct BlamedTally {
  int matched = 0;
  int late = 0;          // messages with a direct delay
  std::set<int> others;  // the ranks that waited for those
  DurationNs direct = 0;
  DurationNs wait = 0;  // the others' waits for it, over all its messages
  int64_t directs_below = 0;
  DurationNs largest_below = 0;
  std::map<DurationNs, int64_t> directs_above;
  std::map<Bytes, int64_t> late_bytes;
};

// BlamedTally per blamed rank, for each wait state.
struct WaitTallies {
  std::map<int, BlamedTally> late_sender;
  std::map<int, BlamedTally> late_receiver;
};

// The tallies, fed the messages as they are matched (a window's at its close, or all at once).
class WaitTallyFold {
 public:
  explicit WaitTallyFold(const PointToPointOptions& options);
  void Add(const std::vector<P2PMessage>& messages);
  WaitTallies Take() { return std::move(out_); }

 private:
  DurationNs min_median_wait_;
  WaitTallies out_;
};

// "late_sender" findings: per rank, the direct waits it caused its receivers, where it was (NVTX)
// while they waited, and next steps. `messages` and `stats` are MatchMessages(aligned). When only
// the clock uncertainty stands between a rank and a finding, a sentence saying so is appended to
// *notes (may be nullptr) instead. Where each rank was while the others waited is read from its
// ranges.
std::vector<Finding> FindLateSenders(const Session& aligned,
                                     const std::vector<P2PMessage>& messages,
                                     const P2PMatchStats& stats, const PointToPointOptions& options,
                                     std::vector<std::string>* notes = nullptr);

// The same from folded tallies (WaitTallyFold, fed every matched message) and where each rank
// was while the others waited (RangesWhileWaitedByWindow): no message is read.
std::vector<Finding> FindLateSenders(const Session& aligned, const WaitTallies& tallies,
                                     const P2PMatchStats& stats, const PointToPointOptions& options,
                                     const WaitRanges& while_waited,
                                     std::vector<std::string>* notes = nullptr);
std::vector<Finding> FindLateReceivers(const Session& aligned, const WaitTallies& tallies,
                                       const P2PMatchStats& stats,
                                       const PointToPointOptions& options,
                                       const WaitRanges& while_waited,
                                       std::vector<std::string>* notes = nullptr);

// "late_receiver" findings: the same for the senders that waited for a rank to post receives.
std::vector<Finding> FindLateReceivers(const Session& aligned,
                                       const std::vector<P2PMessage>& messages,
                                       const P2PMatchStats& stats,
                                       const PointToPointOptions& options,
                                       std::vector<std::string>* notes = nullptr);

}  // namespace rankscope
