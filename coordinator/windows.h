// Windows every rank cuts alike (docs/design.md, "Cost bounded by the window", step 1): a
// session's run cut into consecutive windows, so that each can be matched, blamed and folded on
// its own and its raw records dropped.
//
// A window ends at an instance of the world communicator's blocking N-to-N collectives
// (model/window_rule.h: AnchorsWindows, InstanceCutRule): such an instance releases every member
// at its last arrival, so the ranks' chains meet there and a replay of the next window can start
// from the instance's recorded end. The cut needs no clock: every rank cuts at the same instance,
// at its own exit from it, chosen from the world communicator's sequence numbers alone.
// Where no anchor comes for longer than WindowOptions::max_window (HPCC's RandomAccess, NetPIPE,
// a code without world collectives), time cuts at the same aligned time on every rank fill the
// gap. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/p2p_matcher.h"
#include "coordinator/session.h"
#include "coordinator/session_matches.h"
#include "core/records.h"
#include "core/time.h"
#include "model/window_rule.h"

namespace rankscope {

struct WindowOptions {
  // About one window per this much of the run: the number of anchor instances per cut is chosen
  // from the run's rate of them.
  DurationNs target = 1'000'000'000;
  // A stretch longer than this without an anchor cut is cut by time, every `target`.
  DurationNs max_window = 4'000'000'000;
};

enum class CutKind : uint8_t {
  kInstance,  // at the ranks' exits from one instance of the world communicator
  kTime,      // at one aligned time
  kEnd,       // after everything: the last window's end
};

struct WindowCut {
  CutKind kind = CutKind::kEnd;
  uint64_t seq = 0;  // kInstance: the instance's sequence number on the world communicator
  // Per rank (indexed as Session::ranks): the window ends here on that rank; a record whose end
  // is at or before it and after the previous cut's belongs to the window. A rank without the
  // instance (it ended before it) cuts at the latest exit of those that have it.
  std::vector<TimeNs> at;
};

struct WindowPlan {
  bool has_world = false;
  uint64_t world_comm = 0;      // the world communicator's id, when has_world
  uint64_t every = 0;           // sequence numbers per instance cut (0: no instance cuts)
  std::vector<WindowCut> cuts;  // in order, non-decreasing on every rank; the last is kEnd

  size_t size() const { return cuts.size(); }
  // The window a record that ends at `end` on the rank at `rank_index` belongs to.
  size_t WindowOf(size_t rank_index, TimeNs end) const;
};

// The windows of an aligned session. A session without records gives one window (kEnd).
WindowPlan PlanWindows(const Session& aligned, const WindowOptions& options = WindowOptions{});

// What PlanWindows reads of the records, for a reader that holds them elsewhere
// (coordinator/report/stored_windows.h) to make the same plan.
// A communicator of the world's size: how many ranks call it, and its anchor instances' records.
struct CommUse {
  size_t ranks = 0;
  size_t anchors = 0;
};
// The windows' communicator: of those every rank with collectives calls, the one with the most
// anchor records (an MPI job's MPI_COMM_WORLD or a copy of it, an NCCL job's world
// communicator), the lowest id on a tie. nullopt when there is none.
std::optional<uint64_t> ChooseWorldComm(const std::map<uint64_t, CommUse>& comms,
                                        size_t ranks_with_collectives);
// Over every rank's records on that communicator: its last sequence number, earliest enter and
// latest exit.
struct WorldAnchors {
  uint64_t last_seq = 0;
  TimeNs first = std::numeric_limits<TimeNs>::max();
  TimeNs last = 0;
};
// Builds a plan: SetWorld (when there is a world communicator), then its anchor instances in
// sequence order, each cut where CutsAt says (AddInstanceCut with its exits per rank index,
// nullopt for a rank without it: that rank cuts at the latest exit of those with it), then
// Finish with the records' span, which fills gaps longer than max_window with time cuts.
class PlanBuilder {
 public:
  PlanBuilder(size_t nranks, const WindowOptions& options);
  void SetWorld(uint64_t comm, const WorldAnchors& world);
  bool CutsAt(uint64_t seq);
  void AddInstanceCut(uint64_t seq, const std::vector<std::optional<TimeNs>>& exits);
  WindowPlan Finish(TimeNs start, TimeNs end) &&;

 private:
  size_t nranks_;
  WindowOptions options_;
  WindowPlan plan_;
  std::optional<InstanceCutRule> rule_;
  std::vector<TimeNs> previous_;  // each rank's latest cut: none goes back in time
};

// How many of each rank's records each window holds (collectives, point-to-point, other MPI
// calls, ranges, GPU activity) as SplitIntoWindows puts them (MPI records and ranges by their
// end, GPU activity by its start; the open ones not counted): [window][rank].
struct WindowRecords {
  int collectives = 0;
  int p2p = 0;
  int mpi_calls = 0;
  int ranges = 0;
  int gpu = 0;
  int total() const { return collectives + p2p + mpi_calls + ranges + gpu; }
};
std::vector<std::vector<WindowRecords>> CountWindowRecords(const Session& aligned,
                                                           const WindowPlan& plan);

// One rank's records of one window as its agent would upload them at the window's cut: indices
// into the rank's RankData of every MPI record and range that ended in the window
// (WindowPlan::WindowOf its end), each kind in the rank's order, and of the ranges still open at
// the cut (begun at or before it, ending after it), which the agent reports cut short there
// (RangeOpenAtCut), and of the collective and point-to-point calls in progress at the cut, which
// it reports as such (the point-to-point ones cut short there, CallOpenAtCut); only the last
// window has none open. GPU activity goes by the window it began in: CUPTI hands a kernel over
// only once it is done, so a window that reads kernels begun in it (a step's first kernel)
// closes once the rank's GPU records up to the cut are in.
struct RankWindow {
  std::vector<size_t> collectives, p2p, mpi_calls, ranges, gpu;
  std::vector<size_t> open_ranges, open_collectives, open_p2p;
};

// Every rank's records split into windows, [window][rank index], in one pass over the records
// (a range open across k cuts is listed at each of them).
std::vector<std::vector<RankWindow>> SplitIntoWindows(const Session& aligned,
                                                      const WindowPlan& plan);

// A session's plan and its records split by it: what every fold that reads windows is fed, made
// once per session.
struct WindowSplit {
  WindowPlan plan;
  std::vector<std::vector<RankWindow>> windows;  // [window][rank index], SplitIntoWindows
  size_t size() const { return plan.size(); }
};
WindowSplit SplitSession(const Session& aligned, WindowPlan plan);

// One rank's upload at one window's cut, the records themselves (what a fold is fed, so that the
// live path can feed it from an agent's upload as the offline path does from a session): the
// records RankWindow lists, each kind in the rank's order, with each one's index among the
// rank's records of its kind (an agent numbers them as it goes); those open at the cut come
// apart, cut short there (their exit or end is the cut; a collective's exit is unknown).
struct RankUpload {
  TimeNs cut = 0;
  // The rank (records.id) and its records that ended in the window: collectives, p2p, mpi_calls,
  // ranges; gpu: begun in it.
  RankData records;
  RankWindow index;  // each record's index among the rank's, as listed in RankWindow
  std::vector<RangeRecord> open_ranges;            // as index.open_ranges, cut short
  std::vector<CollectiveRecord> open_collectives;  // as index.open_collectives, exit = cut
  std::vector<P2PRecord> open_p2p;                 // as index.open_p2p, cut short
  // The agent's kernel time between collectives (RankData::kernel_pieces) whose piece ends in
  // the window (the last window: every one left), and whether the rank's are exact (its agent
  // finished and none came late: then the straggler's gaps read them, not the kernels).
  std::vector<KernelPiece> kernel_pieces;
  bool kernel_pieces_exact = false;
};

// Window w's uploads, one per rank (as Session::ranks), copied out of the session.
std::vector<RankUpload> UploadsOf(const Session& aligned, const WindowSplit& split, size_t w);

// A range, or a point-to-point call, open at a cut as the agent reports it then: ending at the
// cut.
RangeRecord RangeOpenAtCut(const RangeRecord& range, TimeNs cut);
P2PRecord CallOpenAtCut(const P2PRecord& call, TimeNs cut);
CollectiveRecord CollectiveOpenAtCut(const CollectiveRecord& call, TimeNs cut);

// The session's world size as the matchers take it (Session::world_size, else its ranks).
int WorldSize(const Session& aligned);

// Both matchers as folds fed one window's uploads at a time (every rank's, as Session::ranks):
// collective instances (CollectiveFold) and point-to-point messages (MessageFold, each rank's
// progress what its upload says: the earliest of its cut, its latest MPI exit and the enters of
// its calls open at the cut).
class MatchFold {
 public:
  // `keep_messages` false: the matched messages are kept as links only (SessionMatches::links);
  // a caller that needs more of them reads each window's as Add returns them.
  explicit MatchFold(int world_size, bool keep_messages = true);
  // `last`: the run's last window. The messages matched at this close (valid until the next Add).
  const std::vector<P2PMessage>& Add(const std::vector<RankUpload>& window, bool last);
  const MessageFold& messages() const { return messages_; }
  // The instances taken at the last close (valid until the next Add), and whether the matchers
  // hold nothing with a side before that cut: no open instance, MessageFold::Quiet.
  std::span<const CollectiveInstance> instances_taken() const {
    return std::span<const CollectiveInstance>(instances_).subspan(taken_from_);
  }
  bool quiet() const { return collectives_.open() == 0 && messages_.Quiet(); }
  // Without keep_messages: the links of every message matched so far, in the order they were
  // matched until Finish orders them all (a reader may order a tail of them in place: the order
  // Finish gives is total).
  std::span<MessageLink> released_links() { return links_; }
  // Once, after the last window (added with `last`): the matches in MatchSession's order.
  SessionMatches Finish();
  size_t peak_open_instances() const { return peak_open_; }  // at the close of a window
  size_t peak_held_messages() const { return peak_held_; }   // MessageFold::held, likewise

 private:
  CollectiveFold collectives_;
  MessageFold messages_;
  std::vector<CollectiveInstance> instances_;
  const bool keep_messages_;
  std::vector<P2PMessage> matched_, closed_;
  std::vector<MessageLink> links_;                    // without keep_messages_
  std::map<int, std::optional<TimeNs>> latest_exit_;  // per world rank: of its MPI calls so far
  size_t peak_open_ = 0, peak_held_ = 0;
  size_t taken_from_ = 0;  // instances_ taken before the last close
};

// Collective instances matched window by window (CollectiveFold), in MatchCollectives' order:
// what a coordinator that folds closed windows would match. *peak_open (when not null): the most
// instances open at the close of a window, what the fold held beyond one window's calls.
std::vector<CollectiveInstance> MatchCollectivesByWindow(const Session& aligned,
                                                         const WindowSplit& split,
                                                         size_t* peak_open = nullptr);

// Point-to-point messages matched window by window (MessageFold), each rank's collectives and
// point-to-point records added in the window of their exit and its progress reported as
// MatchFold does, in MatchMessages' order (with its statistics in *stats).
// *peak_held (when not null): the most the fold held at the close of a window
// (MessageFold::held). `on_close` (when set) is called at each close with the window's uploads,
// the fold and the messages matched in it.
using OnMessagesClose = std::function<void(const std::vector<RankUpload>& window,
                                           const MessageFold&, const std::vector<P2PMessage>&)>;
std::vector<P2PMessage> MatchMessagesByWindow(const Session& aligned, const WindowSplit& split,
                                              P2PMatchStats* stats = nullptr,
                                              size_t* peak_held = nullptr,
                                              const OnMessagesClose& on_close = {});

}  // namespace rankscope
