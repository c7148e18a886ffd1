#include "coordinator/analysis/blame.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "coordinator/analysis/off_cpu.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

constexpr TimeNs kUnknown = std::numeric_limits<TimeNs>::min();

// What an event's exit waits for, beside its own enter.
enum class DepKind : uint8_t {
  kNone,
  kAllMembers,    // N-to-N collective: every member's enter
  kRoot,          // one-to-all receiver: the root's enter
  kLowerMembers,  // scan: the enters of the members of lower communicator rank (and its own)
  kEvents,        // point-to-point: the enters of the partner events (PartnersOf)
};

// A call's name as an event keeps it: the enum it comes from and its value (two bytes where a
// string_view takes sixteen; the names are static).
struct CallCode {
  enum Family : uint8_t { kNone, kCollective, kP2P, kOther };
  Family family = kNone;
  uint8_t value = 0;
  bool operator==(const CallCode&) const = default;
};

static_assert(kMaxCollectiveOp < 256 && kMaxP2PKind < 256 && kMaxMpiCall < 256,
              "a call code's value is one byte");
CallCode CallOf(CollectiveOp op) { return {CallCode::kCollective, static_cast<uint8_t>(op)}; }
CallCode CallOf(P2PKind kind) { return {CallCode::kP2P, static_cast<uint8_t>(kind)}; }
CallCode CallOf(MpiCall call) { return {CallCode::kOther, static_cast<uint8_t>(call)}; }

std::string_view CallName(CallCode c) {
  switch (c.family) {
    case CallCode::kCollective:
      return CollectiveOpName(static_cast<CollectiveOp>(c.value));
    case CallCode::kP2P: {
      const auto kind = static_cast<P2PKind>(c.value);
      return kind == P2PKind::kWait ? std::string_view("wait") : P2PKindName(kind);
    }
    case CallCode::kOther:
      return MpiCallName(static_cast<MpiCall>(c.value));
    case CallCode::kNone:
      break;
  }
  return {};
}

// One rank's event: one MPI call (or several recorded with the same interval: a Waitall that
// completed several requests, a Sendrecv). Small and without heap parts: a session holds one
// per MPI call (10 M at 1,024 ranks with halo exchanges) and the replays stream over them.
struct Event {
  TimeNs enter = 0;
  TimeNs exit = 0;
  DurationNs gap = 0;       // own work before it (outside MPI), from the previous exit
  DurationNs transfer = 0;  // exit - when its dependencies were met, as recorded
  int instance = -1;        // collective instance, for the collective kinds
  int member = -1;          // its index among the instance's members
  // Its ranges in Graph::partners (the (rank index, event index) it waits for, for kEvents)
  // and Graph::involved (ranks whose progress the call's transfer needs without waiting for
  // them, the receiver of a send: a replay that makes one of them typical speeds it up too).
  uint32_t partners_at = 0, partners_n = 0;
  uint32_t involved_at = 0, involved_n = 0;
  CallCode call;  // the call's name, for caused_at
  DepKind dep = DepKind::kNone;
  bool interpreted = true;
  bool other = false;  // an MPI call that is neither collective nor point-to-point
  // The rank's MPI_Init as an N-to-N event (its gap is the rank's start-up): replayed, so the
  // what-if has a typical start-up, but left out of the figures a rank is judged on (JudgedGap).
  bool startup = false;
};
static_assert(sizeof(Event) <= 64, "a session holds one Event per MPI call");

// The events a rank is judged on start at its first MPI event after MPI_Init (at its first
// event when MPI_Init is not in the chain), as they did before MPI_Init was recorded. Its
// start-up (before MPI_Init) and its setup (between MPI_Init and that event) are replayed but
// not judged: launch order and a busy node's exec times vary them run to run (a clean 10-step
// mpi_train, 4 ranks on 2 cores, 0.75 s: one rank's set-up 60 ms longer, either rank).
size_t FirstJudged(const std::vector<Event>& ev) {
  return !ev.empty() && ev.front().startup ? 1 : 0;
}

// Event k's own work as judged: 0 up to the first judged event.
DurationNs JudgedGap(const std::vector<Event>& ev, size_t k) {
  return k <= FirstJudged(ev) ? 0 : ev[k].gap;
}

// Event k's transfer as judged: 0 for MPI_Init.
DurationNs JudgedTransfer(const std::vector<Event>& ev, size_t k) {
  return k < FirstJudged(ev) ? 0 : ev[k].transfer;
}

struct Instance {
  WaitPattern pattern = WaitPattern::kAllToAll;
  bool prefix = false;                       // scan / exscan
  std::vector<std::pair<int, int>> members;  // (rank index, event index)
  std::vector<int> comm_ranks;
  int root = -1;  // index into members
};

struct Graph {
  std::vector<int> ranks;                  // world rank per rank index
  std::vector<std::vector<Event>> events;  // per rank index, by enter
  std::vector<Instance> instances;
  std::vector<std::pair<int, int>> partners;  // Event::partners_at/_n index these
  std::vector<int> involved;                  // Event::involved_at/_n
  // Where each rank's chain starts: its first event's enter, or the session's start when that
  // event is its MPI_Init (every rank's is recorded): its start-up is then replayed.
  std::vector<TimeNs> start;
  TimeNs first = 0;
  // Per rank index: its collective and point-to-point records (in the chain or not).
  std::vector<int> collective_calls, p2p_calls;
  std::vector<bool> on_gpu;  // per rank index: its chain is its GPU's (OnGpuTimeline)
};

std::span<const std::pair<int, int>> PartnersOf(const Graph& g, const Event& e) {
  return {g.partners.data() + e.partners_at, e.partners_n};
}

std::span<const int> InvolvedOf(const Graph& g, const Event& e) {
  return {g.involved.data() + e.involved_at, e.involved_n};
}

// Scan and exscan: a member needs the contributions of the members below it only.
bool IsPrefixOp(CollectiveOp op) {
  return op == CollectiveOp::kScan || op == CollectiveOp::kExscan;
}

// MPI-IO moves the rank's own data: a call of fixed length, nothing to wait for. The others
// (one-sided synchronisation, persistent starts) wait on partners the records do not name.
bool IsFileCall(MpiCall call) {
  return call >= MpiCall::kFileRead && call <= MpiCall::kFileWriteAtAll;
}

// A rank whose chain is its GPU's timeline: NCCL collectives (their own work is GPU work). Read
// window by window, a rank's chain is its host's until the first window with an NCCL collective,
// and its GPU's from there on (what it was before is dropped: the whole run's chain has NCCL
// collectives alone, and none came before).
bool OnGpuTimeline(const RankData& r) {
  return std::any_of(r.collectives.begin(), r.collectives.end(), [](const CollectiveRecord& c) {
    return c.source == CollectiveRecord::Source::kNccl;
  });
}

// One MPI record of a rank's chain: (enter, exit, kind, index, place); kind 0 collective, 1 p2p,
// 2 any other MPI call (RankData::mpi_calls); index: its place among the whole rank's records
// of its kind; place: in the RankData it was read from (the same, or one window's records).
using ChainRecord = std::tuple<TimeNs, TimeNs, int, size_t, size_t>;

// Per kind, the whole rank's index of each record of a RankData that holds part of them (one
// window's); nullptr: it holds them all.
using RecordIndices = std::array<std::vector<size_t>, 3>;

// The records of `r` that make up its chain, by enter. An NCCL rank's collectives are its GPU's
// timeline (on_gpu: OnGpuTimeline, of the whole rank or, window by window, since its first NCCL
// collective); its host MPI calls are on another axis
// and are left out. A nonblocking collective counts at its completion (its record spans the
// work done between post and Wait). A request completed after polling enters where the polling
// began (ChainEnter): the polls that completed nothing are its wait, and where the agent
// recorded that start the records do not overlap.
std::vector<ChainRecord> ChainRecords(const RankData& r, bool on_gpu,
                                      const RecordIndices* indices = nullptr) {
  auto index = [&](int kind, size_t i) {
    return indices == nullptr ? i : (*indices)[static_cast<size_t>(kind)][i];
  };
  // Each kind arrives (nearly always) in call order: sort each if it is not, then merge.
  std::array<std::vector<ChainRecord>, 3> of_kind;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRecord& c = r.collectives[i];
    if (on_gpu && c.source != CollectiveRecord::Source::kNccl) continue;
    if (c.exit < c.enter) continue;
    of_kind[0].emplace_back(c.nonblocking ? c.exit : c.enter, c.exit, 0, index(0, i), i);
  }
  if (!on_gpu) {
    for (size_t i = 0; i < r.p2p.size(); ++i) {
      const P2PRecord& p = r.p2p[i];
      if (p.exit < ChainEnter(p)) continue;
      of_kind[1].emplace_back(ChainEnter(p), p.exit, 1, index(1, i), i);
    }
    for (size_t i = 0; i < r.mpi_calls.size(); ++i) {
      const MpiCallRecord& c = r.mpi_calls[i];
      if (c.exit < c.enter) continue;
      of_kind[2].emplace_back(c.enter, c.exit, 2, index(2, i), i);
    }
  }
  for (auto& v : of_kind) {
    if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  }
  std::vector<ChainRecord> two, records;
  two.reserve(of_kind[0].size() + of_kind[1].size());
  std::merge(of_kind[0].begin(), of_kind[0].end(), of_kind[1].begin(), of_kind[1].end(),
             std::back_inserter(two));
  records.reserve(two.size() + of_kind[2].size());
  std::merge(two.begin(), two.end(), of_kind[2].begin(), of_kind[2].end(),
             std::back_inserter(records));
  return records;
}

// Where each rank's records landed in its chain: collectives by (comm, seq) in a sorted vector
// per rank, point-to-point records by index (-1: not in the chain).
struct RecordEvents {
  using CollectiveKey = std::tuple<uint64_t, uint64_t, int>;  // (comm, seq, event index)
  std::vector<std::vector<CollectiveKey>> collective;
  std::vector<std::vector<int>> p2p;
  // Per rank index: the rank's point-to-point record that p2p[ri][0] is (a segment of the graph
  // maps the records from its first one on).
  std::vector<size_t> p2p_base;

  // The event of rank index `ri`'s point-to-point record `record` (-1: none).
  int P2PEvent(int ri, size_t record) const {
    const std::vector<int>& events = p2p[static_cast<size_t>(ri)];
    const size_t base = p2p_base[static_cast<size_t>(ri)];
    return record >= base && record - base < events.size() ? events[record - base] : -1;
  }

  // The event of rank index `ri`'s collective (comm, seq); the last one if it recorded several.
  int CollectiveAt(int ri, uint64_t comm, uint64_t seq) const {
    const std::vector<CollectiveKey>& keys = collective[static_cast<size_t>(ri)];
    auto it = std::upper_bound(keys.begin(), keys.end(),
                               CollectiveKey{comm, seq, std::numeric_limits<int>::max()});
    if (it == keys.begin()) return -1;
    --it;
    return std::get<0>(*it) == comm && std::get<1>(*it) == seq ? std::get<2>(*it) : -1;
  }
};

// Records -> events of rank index ri, appended to its chain: one event per distinct
// (enter, exit). `r` holds the records: all of the rank's, or (with `indices`) one window's.
void AppendChain(size_t ri, const RankData& r, bool on_gpu, const RecordIndices* indices,
                 RecordEvents* at_event, Graph* g) {
  std::vector<Event>& ev = g->events[ri];
  std::vector<int>& p2p_events = at_event->p2p[ri];
  for (const auto& [enter, exit, kind, global, i] : ChainRecords(r, on_gpu, indices)) {
    if (ev.empty() || ev.back().enter != enter || ev.back().exit != exit) {
      Event e;
      e.enter = enter;
      e.exit = exit;
      ev.push_back(std::move(e));
    }
    Event& e = ev.back();
    const int at = static_cast<int>(ev.size()) - 1;
    if (kind == 0) {
      const CollectiveRecord& c = r.collectives[i];
      at_event->collective[ri].emplace_back(c.comm_id, c.seq, at);
      e.call = CallOf(c.op);
      e.interpreted = false;  // until its instance says otherwise
    } else if (kind == 1) {
      const size_t mapped = global - at_event->p2p_base[ri];
      if (p2p_events.size() <= mapped) p2p_events.resize(mapped + 1, -1);
      p2p_events[mapped] = at;
      if (e.call.family == CallCode::kNone) e.call = CallOf(r.p2p[i].kind);
      e.interpreted = false;  // until a message says otherwise
    } else {
      const MpiCall call = r.mpi_calls[i].call;
      if (e.call.family == CallCode::kNone) e.call = CallOf(call);
      // MPI_Init is interpreted either way: an N-to-N instance below, else (one rank, or
      // not every rank's first event) time in MPI that waits for no recorded event.
      e.interpreted = IsFileCall(call) || call == MpiCall::kInit;
      e.other = true;
    }
  }
  g->collective_calls[ri] += static_cast<int>(r.collectives.size());
  g->p2p_calls[ri] += static_cast<int>(r.p2p.size());
}

// A graph of the session's ranks without events yet, and where their records will land.
RecordEvents StartGraph(const Session& s, Graph* g) {
  for (const RankData& r : s.ranks) g->ranks.push_back(r.id.rank);
  g->events.resize(g->ranks.size());
  g->collective_calls.assign(g->ranks.size(), 0);
  g->p2p_calls.assign(g->ranks.size(), 0);
  g->on_gpu.assign(g->ranks.size(), false);
  RecordEvents at_event;
  at_event.collective.resize(g->ranks.size());
  at_event.p2p.resize(g->ranks.size());
  at_event.p2p_base.assign(g->ranks.size(), 0);
  return at_event;
}

// MPI_Init: one N-to-N instance when it is every rank's first event (a capture window that starts
// later has none), and the chains start at the session's start.
void AddStartUp(TimeNs session_start, Graph* g) {
  g->start.assign(g->ranks.size(), 0);
  bool init_first = true;
  size_t with_events = 0;
  for (const auto& ev : g->events) {
    if (ev.empty()) continue;
    ++with_events;
    init_first &= ev.front().call == CallOf(MpiCall::kInit);
  }
  const bool init_instance = init_first && with_events >= 2;
  if (init_instance) {
    Instance in;
    in.pattern = WaitPattern::kAllToAll;
    const int id = static_cast<int>(g->instances.size());
    for (size_t ri = 0; ri < g->events.size(); ++ri) {
      if (g->events[ri].empty()) continue;
      Event& e = g->events[ri].front();
      e.instance = id;
      e.member = static_cast<int>(in.members.size());
      e.dep = DepKind::kAllMembers;
      e.interpreted = true;
      e.startup = true;
      in.members.emplace_back(static_cast<int>(ri), 0);
      in.comm_ranks.push_back(g->ranks[ri]);
    }
    g->instances.push_back(std::move(in));
  }
  TimeNs first = std::numeric_limits<TimeNs>::max();
  for (size_t ri = 0; ri < g->events.size(); ++ri) {
    const auto& ev = g->events[ri];
    if (ev.empty()) continue;
    g->start[ri] = init_instance ? std::min(session_start, ev.front().enter) : ev.front().enter;
    first = std::min(first, g->start[ri]);
  }
  g->first = first == std::numeric_limits<TimeNs>::max() ? 0 : first;
}

// Collective instances: each complete one whose members' events are all in the chains, with the
// dependency its wait-state pattern gives each member.
void AddCollectiveInstances(const SessionMatches& matches,
                            const std::unordered_map<int, int>& index_of,
                            const RecordEvents& at_event, Graph* g) {
  for (const CollectiveInstance& inst : matches.collectives) {
    if (!inst.complete || inst.mismatched || inst.members.size() < 2) continue;
    Instance in;
    in.pattern = WaitPatternOf(inst.op);
    in.prefix = IsPrefixOp(inst.op);
    bool ok = true;
    for (const CollectiveParticipant& m : inst.members) {
      auto ri = index_of.find(m.rank);
      const int ev =
          ri == index_of.end() ? -1 : at_event.CollectiveAt(ri->second, inst.comm_id, inst.seq);
      if (ev < 0) {
        ok = false;
        break;
      }
      if (m.comm_rank == inst.root_comm_rank) in.root = static_cast<int>(in.members.size());
      in.members.emplace_back(ri->second, ev);
      in.comm_ranks.push_back(m.comm_rank);
    }
    if (!ok) continue;
    if (in.pattern != WaitPattern::kAllToAll && in.root < 0) continue;
    const int id = static_cast<int>(g->instances.size());
    for (size_t k = 0; k < in.members.size(); ++k) {
      const auto [ri, ei] = in.members[k];
      Event& e = g->events[static_cast<size_t>(ri)][static_cast<size_t>(ei)];
      // A member takes part in one instance; a second would make the event ambiguous.
      if (e.instance >= 0) continue;
      e.instance = id;
      e.member = static_cast<int>(k);
      e.interpreted = true;
      const bool is_root = static_cast<int>(k) == in.root;
      if (in.prefix) {
        e.dep = DepKind::kLowerMembers;
      } else if (in.pattern == WaitPattern::kAllToAll) {
        e.dep = DepKind::kAllMembers;
      } else if (in.pattern == WaitPattern::kRootToAll) {
        e.dep = is_root ? DepKind::kNone : DepKind::kRoot;
      } else {
        e.dep = is_root ? DepKind::kAllMembers : DepKind::kNone;
      }
    }
    g->instances.push_back(std::move(in));
  }
}

// Per message: (rank index, event index, partner rank index, partner event index) dependencies
// and (rank index, event index, involved rank index) involvements.
struct MessageEdges {
  std::vector<std::array<int, 4>> partners;
  std::vector<std::array<int, 3>> involved;
};

// Point-to-point messages: a receive waits for its send's post; a send that had to wait for its
// receiver waits for the receive's post.
MessageEdges MessageDependencies(std::span<const MessageLink> links,
                                 const std::unordered_map<int, int>& index_of,
                                 const RecordEvents& at_event, Graph* g) {
  MessageEdges edges;
  for (const MessageLink& m : links) {
    auto snd = index_of.find(m.sender);
    auto rcv = index_of.find(m.receiver);
    if (snd == index_of.end() || rcv == index_of.end()) continue;
    const int si = snd->second, ri = rcv->second;
    const int post = at_event.P2PEvent(si, m.send_record);
    const int receive = at_event.P2PEvent(ri, m.receive_record);
    if (post < 0 || receive < 0) continue;
    Event& r = g->events[static_cast<size_t>(ri)][static_cast<size_t>(receive)];
    if (r.dep == DepKind::kNone || r.dep == DepKind::kEvents) {
      r.dep = DepKind::kEvents;
      edges.partners.push_back({ri, receive, si, post});
      r.interpreted = true;
    }
    g->events[static_cast<size_t>(si)][static_cast<size_t>(post)].interpreted = true;
    edges.involved.push_back({si, post, ri});
    const int blocking = at_event.P2PEvent(si, m.send_blocked_record);
    if (blocking >= 0 && blocking != post) edges.involved.push_back({si, blocking, ri});
    if (m.send_waited) {
      const int posted =
          m.receive_posted_known ? at_event.P2PEvent(ri, m.receive_posted_record) : receive;
      if (blocking >= 0 && posted >= 0) {
        Event& b = g->events[static_cast<size_t>(si)][static_cast<size_t>(blocking)];
        if (b.dep == DepKind::kNone || b.dep == DepKind::kEvents) {
          b.dep = DepKind::kEvents;
          edges.partners.push_back({si, blocking, ri, posted});
        }
      }
    }
    if (m.receive_posted_known) {
      const int posted = at_event.P2PEvent(ri, m.receive_posted_record);
      if (posted >= 0) {
        g->events[static_cast<size_t>(ri)][static_cast<size_t>(posted)].interpreted = true;
      }
    }
  }
  return edges;
}

// Each event's partners and (distinct) involved ranks, contiguous in the graph's pools. Stable:
// an event's partners keep the messages' order (the first of equal enters is blamed).
void LayOutEdges(MessageEdges edges, Graph* g) {
  std::stable_sort(edges.partners.begin(), edges.partners.end(), [](const auto& a, const auto& b) {
    return std::tie(a[0], a[1]) < std::tie(b[0], b[1]);
  });
  g->partners.reserve(edges.partners.size());
  for (const auto& [ri, ei, pr, pe] : edges.partners) {
    Event& e = g->events[static_cast<size_t>(ri)][static_cast<size_t>(ei)];
    if (e.partners_n == 0) e.partners_at = static_cast<uint32_t>(g->partners.size());
    ++e.partners_n;
    g->partners.emplace_back(pr, pe);
  }
  std::sort(edges.involved.begin(), edges.involved.end());
  edges.involved.erase(std::unique(edges.involved.begin(), edges.involved.end()),
                       edges.involved.end());
  g->involved.reserve(edges.involved.size());
  for (const auto& [ri, ei, r] : edges.involved) {
    Event& e = g->events[static_cast<size_t>(ri)][static_cast<size_t>(ei)];
    if (e.involved_n == 0) e.involved_at = static_cast<uint32_t>(g->involved.size());
    ++e.involved_n;
    g->involved.push_back(r);
  }
}

// Own work before each event, and what each event took after its dependencies, as recorded. A
// rank's run starts at its chain's start: its first MPI event, or the session's start before its
// MPI_Init (then its start-up is the gap before MPI_Init: replayed, not judged).
void AddGaps(Graph* g) {
  for (size_t ri = 0; ri < g->events.size(); ++ri) {
    auto& ev = g->events[ri];
    TimeNs busy_until = ev.empty() ? g->first : g->start[ri];
    for (Event& e : ev) {
      e.gap = std::max<DurationNs>(e.enter - busy_until, 0);
      busy_until = std::max(busy_until, e.exit);
    }
  }
}

// The indices among the whole rank's of an upload's MPI records (collectives, point-to-point,
// other calls).
RecordIndices MpiIndices(const RankUpload& u) {
  return {u.index.collectives, u.index.p2p, u.index.mpi_calls};
}

// The dependencies between the chains, once every rank's chain is in.
void FinishGraph(const Session& s, const SessionMatches& matches, RecordEvents* at_event,
                 Graph* g) {
  std::unordered_map<int, int> index_of;
  for (size_t ri = 0; ri < g->ranks.size(); ++ri) index_of[g->ranks[ri]] = static_cast<int>(ri);
  for (auto& keys : at_event->collective) std::sort(keys.begin(), keys.end());
  AddStartUp(s.start, g);
  AddCollectiveInstances(matches, index_of, *at_event, g);
  LayOutEdges(MessageDependencies(matches.links, index_of, *at_event, g), g);
  AddGaps(g);
}

// Builds each rank's chain and the dependencies between chains.
Graph BuildGraph(const Session& s, const SessionMatches& matches) {
  Graph g;
  RecordEvents at_event = StartGraph(s, &g);
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    const RankData& r = s.ranks[ri];
    g.on_gpu[ri] = OnGpuTimeline(r);
    AppendChain(ri, r, g.on_gpu[ri], nullptr, &at_event, &g);
    at_event.p2p[ri].resize(r.p2p.size(), -1);
  }
  FinishGraph(s, matches, &at_event, &g);
  return g;
}

// The same, each rank's records taken window by window as its agent uploads them
// (coordinator/windows.h): each window's records (by their end) become events and are not read
// again. A rank's chain is its host's until the first window with an NCCL collective, and its
// GPU's from there on (OnGpuTimeline).
class ChainFold {
 public:
  explicit ChainFold(const Session& s) : at_event_(StartGraph(s, &g_)) {}

  void Reserve(const std::vector<size_t>& records, const std::vector<size_t>& p2p) {
    for (size_t ri = 0; ri < g_.events.size() && ri < records.size() && ri < p2p.size(); ++ri) {
      g_.events[ri].reserve(records[ri]);
      at_event_.p2p[ri].reserve(p2p[ri]);
    }
  }

  void Add(const std::vector<RankUpload>& uploads) {
    for (size_t ri = 0; ri < uploads.size(); ++ri) {
      const RankData& records = uploads[ri].records;
      if (!g_.on_gpu[ri] && OnGpuTimeline(records)) {
        g_.on_gpu[ri] = true;
        g_.events[ri].clear();
        at_event_.collective[ri].clear();
        at_event_.p2p[ri].clear();
      }
      const RecordIndices indices = MpiIndices(uploads[ri]);
      AppendChain(ri, records, g_.on_gpu[ri], &indices, &at_event_, &g_);
    }
  }

  Graph Finish(const Session& s, const SessionMatches& matches) {
    FinishGraph(s, matches, &at_event_, &g_);
    return std::move(g_);
  }

 private:
  Graph g_;
  RecordEvents at_event_;
};

// When the dependencies of `e` were met, over the given enters (kUnknown when some are not yet
// known), and which rank index met them last (-1 when none).
struct Ready {
  bool known = true;
  TimeNs at = kUnknown;  // kUnknown when the event has no dependency
  int culprit = -1;
};

// The two latest enters among an instance's members, and how many are known: an N-to-N member
// waits for the latest of the others, which is the latest of all unless that is its own. Kept
// per instance so a member's dependency costs O(1), not O(members) (1,024 ranks x 2,000
// instances made the replay quadratic).
struct Top2 {
  int known = 0;
  TimeNs best = kUnknown, second = kUnknown;
  int best_rank = -1, second_rank = -1;
  void Add(TimeNs t, int rank) {
    ++known;
    if (t > best) {
      second = best;
      second_rank = best_rank;
      best = t;
      best_rank = rank;
    } else if (t > second) {
      second = t;
      second_rank = rank;
    }
  }
};

// tops[instance], over the enters the caller reads (the recorded ones, or a replay's).
template <typename EnterOf>
Ready DependencyTime(const Graph& g, int ri, const Event& e, EnterOf enter_of,
                     const std::vector<Top2>& tops) {
  Ready out;
  auto consider = [&](int r, int ei) {
    const TimeNs t = enter_of(r, ei);
    if (t == kUnknown) {
      out.known = false;
      return;
    }
    if (t > out.at) {
      out.at = t;
      out.culprit = r;
    }
  };
  switch (e.dep) {
    case DepKind::kNone:
      break;
    case DepKind::kAllMembers: {
      const Top2& top = tops[static_cast<size_t>(e.instance)];
      const auto size =
          static_cast<int>(g.instances[static_cast<size_t>(e.instance)].members.size());
      // Incomplete: not known yet, but what is known stands (a forced replay step uses it).
      if (top.known < size) out.known = false;
      if (top.best_rank != ri) {
        out.at = top.best;
        out.culprit = top.best_rank;
      } else {
        out.at = top.second;
        out.culprit = top.second_rank;
      }
      break;
    }
    case DepKind::kRoot: {
      const Instance& in = g.instances[static_cast<size_t>(e.instance)];
      const auto [r, ei] = in.members[static_cast<size_t>(in.root)];
      consider(r, ei);
      break;
    }
    case DepKind::kLowerMembers: {
      const Instance& in = g.instances[static_cast<size_t>(e.instance)];
      int mine = -1;
      for (size_t k = 0; k < in.members.size(); ++k) {
        if (in.members[k].first == ri) mine = in.comm_ranks[k];
      }
      for (size_t k = 0; k < in.members.size(); ++k) {
        if (in.comm_ranks[k] < mine) consider(in.members[k].first, in.members[k].second);
      }
      break;
    }
    case DepKind::kEvents:
      for (const auto& [r, ei] : PartnersOf(g, e)) consider(r, ei);
      break;
  }
  return out;
}

// Top2 per instance over the recorded enters.
std::vector<Top2> RecordedTops(const Graph& g) {
  std::vector<Top2> tops(g.instances.size());
  for (size_t i = 0; i < g.instances.size(); ++i) {
    for (const auto& [r, ei] : g.instances[i].members) {
      tops[i].Add(g.events[static_cast<size_t>(r)][static_cast<size_t>(ei)].enter, r);
    }
  }
  return tops;
}

void ComputeTransfers(Graph* g) {
  const std::vector<Top2> tops = RecordedTops(*g);
  for (size_t ri = 0; ri < g->events.size(); ++ri) {
    for (Event& e : g->events[ri]) {
      const Ready ready = DependencyTime(
          *g, static_cast<int>(ri), e,
          [&](int r, int ei) {
            return g->events[static_cast<size_t>(r)][static_cast<size_t>(ei)].enter;
          },
          tops);
      const TimeNs released = std::clamp(ready.at, e.enter, e.exit);
      e.transfer = e.exit - released;
    }
  }
}

// `d` x `factor`, rounded; `d` itself at factor 1 (most ranks' in every replay).
DurationNs Scaled(DurationNs d, double factor) {
  return factor == 1.0 ? d : static_cast<DurationNs>(std::llround(static_cast<double>(d) * factor));
}

// One replay of the chains with each rank's own work scaled by scale[rank index], and the
// transfers of the calls it takes part in by transfer_scale[rank index] (1: as recorded).
struct Replay {
  DurationNs span = 0;
  std::vector<DurationNs> waited;  // per rank index
  int broken = 0;
};

// What a replay carries from one segment of the graph to the next (docs/design.md, "The blame
// graph in segments"): where a segment begins at a clean cut (every rank's last event before it
// a member of one N-to-N instance, no dependency across it) a replay of the segments in turn,
// each starting from the carry, is the replay of the whole graph. Each rank's replayed clock,
// the latest replayed exit, the waits and the dependencies broken so far.
struct ReplayCarry {
  std::vector<TimeNs> now;  // per rank index; empty before the first segment
  TimeNs last = kUnknown;
  std::vector<DurationNs> waited;
  int broken = 0;
};

// `typical` (when not empty) holds, per rank index, own work to use event by event instead of
// the recorded gaps scaled (nullptr: scaled). With `carry`, the replay goes on from it (each
// rank's clock, the latest exit) and leaves its own end there; Replay::span is then from
// g.first to the latest exit of every segment so far, and waited and broken their sums.
Replay Run(const Graph& g, const std::vector<double>& scale,
           const std::vector<double>& transfer_scale,
           const std::vector<const std::vector<DurationNs>*>& typical = {},
           ReplayCarry* carry = nullptr) {
  const size_t n = g.events.size();
  const bool resumed = carry != nullptr && !carry->now.empty();
  std::vector<std::vector<TimeNs>> enter(n);
  for (size_t r = 0; r < n; ++r) enter[r].assign(g.events[r].size(), kUnknown);
  TimeNs last = resumed ? carry->last : g.first;  // the latest replayed exit
  std::vector<double> instance_scale(g.instances.size(), 1.0);
  for (size_t i = 0; i < g.instances.size(); ++i) {
    for (const auto& [r, ei] : g.instances[i].members) {
      instance_scale[i] = std::min(instance_scale[i], transfer_scale[static_cast<size_t>(r)]);
    }
  }
  std::vector<size_t> cursor(n, 0);
  std::vector<TimeNs> now(n, g.first);
  for (size_t r = 0; r < n; ++r) {
    if (!g.events[r].empty()) now[r] = g.start[r];
  }
  Replay out;
  out.waited.assign(n, 0);
  if (resumed) {
    now = carry->now;
    out.waited = carry->waited;
    out.broken = carry->broken;
  }
  std::vector<bool> queued(n, true);
  std::deque<int> ready;
  for (size_t r = 0; r < n; ++r) ready.push_back(static_cast<int>(r));
  // Ranks blocked on some event of rank q (woken when q computes an enter), and on instances.
  std::vector<std::vector<int>> blocked_on_rank(n);
  std::vector<std::vector<int>> blocked_on_instance(g.instances.size());
  std::vector<Top2> tops(g.instances.size());  // over the enters computed so far
  auto enter_of = [&](int r, int ei) {
    return enter[static_cast<size_t>(r)][static_cast<size_t>(ei)];
  };
  auto wake = [&](std::vector<int>* list) {
    for (int w : *list) {
      if (!queued[static_cast<size_t>(w)]) {
        queued[static_cast<size_t>(w)] = true;
        ready.push_back(w);
      }
    }
    list->clear();
  };
  size_t done = 0;
  for (size_t r = 0; r < n; ++r) done += g.events[r].empty() ? 1 : 0;

  auto advance = [&](int ri, bool force) {
    const auto ur = static_cast<size_t>(ri);
    const std::vector<Event>& ev = g.events[ur];
    while (cursor[ur] < ev.size()) {
      const size_t k = cursor[ur];
      const Event& e = ev[k];
      if (enter[ur][k] == kUnknown) {
        const std::vector<DurationNs>* own = typical.empty() ? nullptr : typical[ur];
        enter[ur][k] = now[ur] + (own != nullptr ? (*own)[k] : Scaled(e.gap, scale[ur]));
        wake(&blocked_on_rank[ur]);
        if (e.instance >= 0) {
          // Waiters of an N-to-N member can go on only when every enter is known; those of a
          // broadcast when the root's is; a scan member's with each lower one.
          const auto i = static_cast<size_t>(e.instance);
          const Instance& in = g.instances[i];
          tops[i].Add(enter[ur][k], ri);
          if (tops[i].known == static_cast<int>(in.members.size()) || e.member == in.root ||
              in.prefix) {
            wake(&blocked_on_instance[i]);
          }
        }
      }
      const Ready dep = DependencyTime(g, ri, e, enter_of, tops);
      if (!dep.known && !force) {
        if (e.instance >= 0 && e.dep != DepKind::kEvents) {
          blocked_on_instance[static_cast<size_t>(e.instance)].push_back(ri);
        } else {
          for (const auto& [r, ei] : PartnersOf(g, e)) {
            if (enter_of(r, ei) == kUnknown) blocked_on_rank[static_cast<size_t>(r)].push_back(ri);
          }
        }
        return;
      }
      if (!dep.known) ++out.broken;
      force = false;
      const TimeNs start = std::max(enter[ur][k], dep.at);
      out.waited[ur] += start - enter[ur][k];
      // The transfer takes part in the others' slowness too: a member or partner that is made
      // typical in this replay speeds up the call it takes part in (a starved rank progresses
      // its messages slowly, so its partners' transfers were long as well).
      double factor = transfer_scale[ur];
      if (e.instance >= 0) {
        factor = std::min(factor, instance_scale[static_cast<size_t>(e.instance)]);
      }
      for (const auto& [r, ei] : PartnersOf(g, e)) {
        factor = std::min(factor, transfer_scale[static_cast<size_t>(r)]);
      }
      for (int r : InvolvedOf(g, e))
        factor = std::min(factor, transfer_scale[static_cast<size_t>(r)]);
      const TimeNs exit = start + Scaled(e.transfer, factor);
      last = std::max(last, exit);
      now[ur] = std::max(now[ur], exit);
      ++cursor[ur];
    }
    ++done;
  };

  while (done < n) {
    while (!ready.empty()) {
      const int r = ready.front();
      ready.pop_front();
      queued[static_cast<size_t>(r)] = false;
      if (cursor[static_cast<size_t>(r)] < g.events[static_cast<size_t>(r)].size()) {
        advance(r, false);
      }
    }
    if (done >= n) break;
    // Nothing can move: the recorded order has a dependency cycle (a send taken for a
    // rendezvous that was eager, clock error). Drop the dependency of the stuck event that was
    // recorded first.
    int stuck = -1;
    TimeNs earliest = std::numeric_limits<TimeNs>::max();
    for (size_t r = 0; r < n; ++r) {
      if (cursor[r] >= g.events[r].size()) continue;
      if (g.events[r][cursor[r]].enter < earliest) {
        earliest = g.events[r][cursor[r]].enter;
        stuck = static_cast<int>(r);
      }
    }
    if (stuck < 0) break;
    for (auto& list : blocked_on_rank) std::erase(list, stuck);
    for (auto& list : blocked_on_instance) std::erase(list, stuck);
    advance(stuck, true);
  }
  out.span = last - g.first;
  if (carry != nullptr) {
    carry->now = std::move(now);
    carry->last = last;
    carry->waited = out.waited;
    carry->broken = out.broken;
  }
  return out;
}

// The instances `g` can be cut at cleanly, in time order, each as its member event per rank
// index (-1 for ranks without events): N-to-N instances every rank with events takes part in,
// each after the last on every rank, with no dependency and no other instance across it. A
// rank's segment s holds its events after cut s-1's member, up to and including cut s's.
std::vector<std::vector<int>> CleanCuts(const Graph& g) {
  const size_t n = g.events.size();
  size_t with_events = 0;
  for (const auto& ev : g.events) with_events += ev.empty() ? 0 : 1;
  std::vector<std::vector<int>> cuts;
  if (with_events < 2) return cuts;
  for (const Instance& in : g.instances) {
    if (in.pattern != WaitPattern::kAllToAll || in.prefix || in.members.size() != with_events) {
      continue;
    }
    std::vector<int> at(n, -1);
    bool after = true;
    for (const auto& [r, ei] : in.members) {
      const Event& e = g.events[static_cast<size_t>(r)][static_cast<size_t>(ei)];
      after &= e.dep == DepKind::kAllMembers &&
               (cuts.empty() || ei > cuts.back()[static_cast<size_t>(r)]);
      at[static_cast<size_t>(r)] = ei;
    }
    if (after) cuts.push_back(std::move(at));
  }
  // Per rank, its members' event indices in cut order; an event's segment is the number of cuts
  // whose member comes before it on its rank.
  std::vector<std::vector<int>> at_cut(n);
  for (const auto& cut : cuts) {
    for (size_t r = 0; r < n; ++r) {
      if (cut[r] >= 0) at_cut[r].push_back(cut[r]);
    }
  }
  auto segment = [&](int r, int ei) {
    const std::vector<int>& at = at_cut[static_cast<size_t>(r)];
    return static_cast<int>(std::lower_bound(at.begin(), at.end(), ei) - at.begin());
  };
  std::vector<int> across(cuts.size() + 1, 0);  // a difference array over the cuts
  auto spans = [&](int a, int b) {
    if (a == b) return;
    ++across[static_cast<size_t>(std::min(a, b))];
    --across[static_cast<size_t>(std::max(a, b))];
  };
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < g.events[r].size(); ++k) {
      const int mine = segment(static_cast<int>(r), static_cast<int>(k));
      for (const auto& [q, j] : PartnersOf(g, g.events[r][k])) spans(mine, segment(q, j));
    }
  }
  for (const Instance& in : g.instances) {
    int lo = std::numeric_limits<int>::max(), hi = -1;
    for (const auto& [r, ei] : in.members) {
      lo = std::min(lo, segment(r, ei));
      hi = std::max(hi, segment(r, ei));
    }
    if (hi >= 0) spans(lo, hi);
  }
  std::vector<std::vector<int>> clean;
  int open = 0;
  for (size_t c = 0; c < cuts.size(); ++c) {
    open += across[c];
    if (open == 0) clean.push_back(std::move(cuts[c]));
  }
  return clean;
}

// Segment `s` of `g` cut at `cuts` (CleanCuts): its events, the instances and dependencies among
// them, renumbered; each rank's chain start and the graph's first as in `g`.
Graph SegmentOf(const Graph& g, const std::vector<std::vector<int>>& cuts, size_t s) {
  const size_t n = g.events.size();
  Graph out;
  out.ranks = g.ranks;
  out.start = g.start;
  out.first = g.first;
  out.collective_calls.assign(n, 0);
  out.p2p_calls.assign(n, 0);
  out.on_gpu = g.on_gpu;
  out.events.resize(n);
  std::vector<int> lo(n, 0), hi(n, 0);
  for (size_t r = 0; r < n; ++r) {
    const auto size = static_cast<int>(g.events[r].size());
    lo[r] = s == 0 ? 0 : (cuts[s - 1][r] < 0 ? size : cuts[s - 1][r] + 1);
    hi[r] = s == cuts.size() ? size : (cuts[s][r] < 0 ? size : cuts[s][r] + 1);
  }
  std::vector<int> renumbered(g.instances.size(), -1);
  for (size_t i = 0; i < g.instances.size(); ++i) {
    const Instance& in = g.instances[i];
    if (in.members.empty()) continue;
    const auto [r, ei] = in.members.front();
    if (ei < lo[static_cast<size_t>(r)] || ei >= hi[static_cast<size_t>(r)]) continue;
    Instance copy = in;
    for (auto& [mr, mei] : copy.members) mei -= lo[static_cast<size_t>(mr)];
    renumbered[i] = static_cast<int>(out.instances.size());
    out.instances.push_back(std::move(copy));
  }
  for (size_t r = 0; r < n; ++r) {
    for (int k = lo[r]; k < hi[r]; ++k) {
      Event e = g.events[r][static_cast<size_t>(k)];
      if (e.instance >= 0) e.instance = renumbered[static_cast<size_t>(e.instance)];
      const auto partners = PartnersOf(g, g.events[r][static_cast<size_t>(k)]);
      e.partners_at = static_cast<uint32_t>(out.partners.size());
      for (const auto& [q, j] : partners)
        out.partners.emplace_back(q, j - lo[static_cast<size_t>(q)]);
      const auto involved = InvolvedOf(g, g.events[r][static_cast<size_t>(k)]);
      e.involved_at = static_cast<uint32_t>(out.involved.size());
      out.involved.insert(out.involved.end(), involved.begin(), involved.end());
      out.events[r].push_back(e);
    }
  }
  return out;
}

}  // namespace

SegmentedReplayCheck CheckReplayBySegments(const Session& aligned, const SessionMatches& matches,
                                           const std::vector<double>& scale) {
  Graph g = BuildGraph(aligned, matches);
  ComputeTransfers(&g);
  const std::vector<double> unit(g.events.size(), 1.0);
  SegmentedReplayCheck check;
  const Replay whole = Run(g, scale, unit);
  check.whole = {whole.span, whole.waited, whole.broken};
  const std::vector<std::vector<int>> cuts = CleanCuts(g);
  check.segments = cuts.size() + 1;
  ReplayCarry carry;
  Replay part;
  for (size_t s = 0; s <= cuts.size(); ++s) {
    const Graph segment = SegmentOf(g, cuts, s);
    check.largest_segment_events =
        std::max(check.largest_segment_events,
                 std::accumulate(segment.events.begin(), segment.events.end(), size_t{0},
                                 [](size_t sum, const auto& ev) { return sum + ev.size(); }));
    part = Run(segment, scale, unit, {}, &carry);
  }
  check.by_segments = {part.span, part.waited, part.broken};
  return check;
}

namespace {

// A figure of a rank's processes per second of its sampled wall time, for every rank but `rank`
// with a sampled wall (and readable scheduler figures, when `sched` asks for them); its median,
// or nullopt when there is none.
template <typename Figure>
std::vector<double> OthersPerWall(const Session& session, int rank, bool sched, Figure figure) {
  std::vector<double> v;
  for (const RankData& r : session.ranks) {
    if (r.id.rank == rank || !r.proc || r.proc->sampled_wall_ns <= 0) continue;
    if (sched && r.proc->sched_unreadable) continue;
    v.push_back(figure(*r.proc) / static_cast<double>(r.proc->sampled_wall_ns));
  }
  return v;
}

template <typename Figure>
std::optional<double> OthersMedianPerWall(const Session& session, int rank, bool sched,
                                          Figure figure) {
  std::vector<double> v = OthersPerWall(session, rank, sched, figure);
  if (v.empty()) return std::nullopt;
  return Median(std::move(v));
}

double CpuNs(const ProcessTreeStats& p) {
  return static_cast<double>(p.cpu_user_ns + p.cpu_system_ns);
}

// The share of its runnable time the rank's processes got a CPU: CPU / (CPU + run delay); 0
// when they neither ran nor waited.
double GrantedShare(const ProcessTreeStats& p) {
  const double ran = CpuNs(p), waited = static_cast<double>(p.run_delay_ns);
  return ran + waited > 0 ? ran / (ran + waited) : 0.0;
}

// The other ranks' GrantedShare (OthersPerWall divides by the wall: the share is multiplied by
// it first).
std::vector<double> OthersGrantedShares(const Session& session, int rank) {
  return OthersPerWall(session, rank, true, [](const ProcessTreeStats& o) {
    return GrantedShare(o) * static_cast<double>(o.sampled_wall_ns);
  });
}

// ... and their median.
std::optional<double> OthersGrantedShare(const Session& session, int rank) {
  std::vector<double> v = OthersGrantedShares(session, rank);
  if (v.empty()) return std::nullopt;
  return Median(std::move(v));
}

// The share of its runnable time session rank index `ri` got a CPU against the other ranks'
// median (GrantedShare), at most 1: a rank progresses its messages only while it runs, so the
// calls it takes part in would have taken that share of their time had it run as the others
// did. nullopt without /proc figures.
std::optional<double> GrantedShareScale(const Session& session, size_t ri) {
  const RankData& r = session.ranks[ri];
  const std::optional<double> theirs = OthersGrantedShare(session, r.id.rank);
  if (!r.proc || !theirs || *theirs <= 0) return std::nullopt;
  return std::clamp(GrantedShare(*r.proc) / *theirs, 0.0, 1.0);
}

// Whether the share of its runnable time the rank got a CPU (GrantedShare) lies clearly below
// the other ranks' where four of them or more show how far chance spreads it: two robust sigmas
// of their shares' logarithms (shares multiply: a starved rank gets a fraction of what it
// would) below their median. True with fewer. 8 ranks on the 2-core VM under srun got
// 0.13-0.16 on two of the nodes and 0.29-0.47 on the other two, run after run (sigma 0.6 in
// logs); in CI one of the first kind at 0.11 (1.3 sigmas) was named for contention. With one
// rank per core the others' shares sit near 1, and a starved rank stands far out.
bool GrantedShareStandsOut(const Session& session, int rank, double granted) {
  std::vector<double> logs = OthersGrantedShares(session, rank);
  if (logs.size() < 4) return true;
  for (double& x : logs) x = std::log(std::max(x, 1e-6));
  const double median = Median(logs);
  return median - std::log(std::max(granted, 1e-6)) >= 2 * RobustSigma(std::move(logs));
}

// Whether the rank's CPU time is short of `share_of_others` x the others' per wall second by
// more than the figures' resolution: /proc counts CPU time in clock ticks (10 ms), so in a
// run of a second 10 ms against 20 ms is one tick, not half the CPU.
bool CpuBelow(const ProcessTreeStats& p, double others_per_wall, double share_of_others) {
  constexpr double kTicks = 5 * 10e6;  // five 10 ms ticks
  const double wall = static_cast<double>(p.sampled_wall_ns);
  const double mine = CpuNs(p);
  return mine <= share_of_others * others_per_wall * wall &&
         others_per_wall * wall - mine >= kTicks;
}

// Whether the rank's processes used at least 1.25x the other ranks' median CPU per wall second,
// and five of /proc's 10 ms ticks more (as in CpuBelow). False without /proc figures.
bool UsedClearlyMoreCpu(const Session& session, int rank) {
  constexpr double kTicks = 5 * 10e6;
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->sampled_wall_ns <= 0) return false;
  const std::optional<double> others = OthersMedianPerWall(session, rank, false, CpuNs);
  if (!others) return false;
  const double theirs = *others * static_cast<double>(self->proc->sampled_wall_ns);
  const double mine = CpuNs(*self->proc);
  return mine >= 1.25 * theirs && mine - theirs >= kTicks;
}

// The sample standard deviation (0 for fewer than two values).
double SampleSigma(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double d : v) mean += d;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double d : v) var += (d - mean) * (d - mean);
  return std::sqrt(var / static_cast<double>(v.size() - 1));
}

// The share of its main thread's samples beyond the other ranks' median in which the rank was
// frozen by a cgroup freezer or stopped by a signal, when its off-CPU cause (FindOffCpuCause)
// is one of those and the share is a tenth or more: it progressed nothing meanwhile, its
// messages included, like a rank starved of CPU. nullopt otherwise.
std::optional<double> FrozenShare(const std::optional<OffCpuCause>& cause) {
  if (!cause || (cause->kind != CauseKind::kFrozen && cause->kind != CauseKind::kStopped)) {
    return std::nullopt;
  }
  const double share = cause->share - cause->others_share;
  if (share < 0.1) return std::nullopt;
  return share;
}

// HeldShare with the rank's off-CPU cause already found.
std::optional<double> HeldShareGiven(const Session& session, int rank,
                                     const std::optional<OffCpuCause>& off_cpu) {
  if (std::optional<double> throttled = ThrottledShare(session, rank)) return throttled;
  return FrozenShare(off_cpu);
}

}  // namespace

std::optional<double> ThrottledShare(const Session& session, int rank) {
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->sampled_wall_ns <= 0) return std::nullopt;
  const ProcessTreeStats& p = *self->proc;
  if (!p.cpu_cgroup || p.cpu_cgroup->counters_unreadable) return std::nullopt;
  const double throttled =
      static_cast<double>(p.cpu_cgroup->throttled_ns) / static_cast<double>(p.sampled_wall_ns);
  const std::optional<double> others =
      OthersMedianPerWall(session, rank, false, [](const ProcessTreeStats& o) {
        return o.cpu_cgroup ? static_cast<double>(o.cpu_cgroup->throttled_ns) : 0.0;
      });
  if (!others || throttled < 0.1 || throttled < 2 * *others) return std::nullopt;
  return throttled;
}

std::optional<double> HeldShare(const Session& session, int rank) {
  return HeldShareGiven(session, rank, FindOffCpuCause(session, rank));
}

double ProportionalSteadiness(const std::vector<double>& mine, const std::vector<double>& theirs,
                              double floor) {
  std::vector<double> log_ratios;
  for (size_t t = 0; t < mine.size() && t < theirs.size(); ++t) {
    if (mine[t] < floor && theirs[t] < floor) continue;
    log_ratios.push_back(std::log((mine[t] + floor) / (theirs[t] + floor)));
  }
  if (log_ratios.empty()) return 0;
  // A part further above the others than the median part says no more than the median part
  // does: the ratios are clipped there, so phases that load the rank far more than the rest
  // (HPCC's single-rank phases beside competitors: 36x where the others' parts are 3x) do not
  // count as unsteadiness. Below the median they count in full.
  const double median = Median(log_ratios);
  double mean = 0;
  for (double& d : log_ratios) {
    d = std::min(d, median);
    mean += d;
  }
  const double m = static_cast<double>(log_ratios.size());
  mean /= m;
  return mean / std::max(SampleSigma(log_ratios), 0.01) * std::sqrt(m);
}

std::optional<double> StarvationMargin(const Session& session, int rank) {
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->sched_unreadable ||
      self->proc->sampled_wall_ns <= 0) {
    return std::nullopt;
  }
  const std::optional<double> others_delay = OthersMedianPerWall(
      session, rank, true, [](const ProcessTreeStats& o) { return double(o.run_delay_ns); });
  if (!others_delay) return std::nullopt;
  const ProcessTreeStats& p = *self->proc;
  const double wall = static_cast<double>(p.sampled_wall_ns);
  // Throttled by its cgroup's quota for a tenth of its time or more, where the other ranks'
  // cgroups throttled them at most half as much.
  if (const std::optional<double> throttled = ThrottledShare(session, rank)) {
    return ThresholdMargin(*throttled, 0.1);
  }
  // Runnable but waiting for a CPU clearly more than the others, and so running clearly less.
  // On an oversubscribed node every rank waits for CPUs a good part of the time.
  const double delay = static_cast<double>(p.run_delay_ns) / wall;
  const double delay_threshold = 1.15 * *others_delay + 0.05;
  const double others_cpu = OthersMedianPerWall(session, rank, false, CpuNs).value_or(0.0);
  const double cpu = CpuNs(p) / wall;
  if (!CpuBelow(p, others_cpu, 0.8) || !GrantedShareStandsOut(session, rank, GrantedShare(p))) {
    return std::nullopt;
  }
  const double cpu_margin = ThresholdMargin(others_cpu / std::max(cpu, 1e-12), 1 / 0.8);
  if (delay >= delay_threshold) {
    return std::min(ThresholdMargin(delay, delay_threshold), cpu_margin);
  }
  // Where the others wait for CPUs most of their time, their wait leaves little room above it
  // (4 ranks and 2 competitors on 2 cores: the others waited 66 % of their wall, the rank with
  // the competitors on its core 78 %, while it ran 0.67x their CPU). Then the share of its
  // runnable time it got a CPU (CPU / (CPU + run delay)) tells: at most 0.7x the others' (0.66x
  // there; a rank beside a quota-throttled one got 0.8x), waiting 5 % of its wall more.
  const std::optional<double> others_granted = OthersGrantedShare(session, rank);
  if (!others_granted || *others_granted <= 0 || delay < *others_delay + 0.05) return std::nullopt;
  const double granted = GrantedShare(p);
  if (granted > 0.7 * *others_granted) return std::nullopt;
  return std::min(ThresholdMargin(*others_granted / std::max(granted, 1e-12), 1 / 0.7), cpu_margin);
}

bool StarvedOfCpu(const Session& session, int rank) {
  return StarvationMargin(session, rank).has_value();
}

bool RanFarLess(const Session& session, int rank) {
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->sampled_wall_ns <= 0) return false;
  // Against the ranks on its node where the node holds more ranks than the job's nodes do (the
  // median) and two or more beside it: each rank of a crowded node gets less CPU per second,
  // which is the node's doing, not the rank's (a SLURM job of 8 ranks on 4 nodes of one 2-core
  // machine: the 4 ranks of n1 each ran 0.12 s a second against the others' median 0.22 s, and
  // one of them, its own work 1.5x the others' by the scheduler's chance, was named with
  // confidence 0.58). Where nodes hold as many ranks as the others, a node whose ranks all ran
  // less (a competitor beside them) is still held to the whole job.
  std::map<std::string, int> per_node;
  for (const RankData& r : session.ranks) ++per_node[r.id.node];
  std::vector<double> counts;
  for (const auto& [node, count] : per_node) counts.push_back(count);
  std::vector<double> mates;
  if (per_node[self->id.node] > Median(std::move(counts))) {
    for (const RankData& r : session.ranks) {
      if (r.id.rank == rank || r.id.node != self->id.node || !r.proc) continue;
      if (r.proc->sampled_wall_ns > 0) {
        mates.push_back(CpuNs(*r.proc) / static_cast<double>(r.proc->sampled_wall_ns));
      }
    }
  }
  const std::optional<double> others = mates.size() >= 2
                                           ? std::optional<double>(Median(std::move(mates)))
                                           : OthersMedianPerWall(session, rank, false, CpuNs);
  if (!others) return false;
  return CpuBelow(*self->proc, *others, 0.6);
}

BlameModel::Typical BlameModel::TypicalBesides(int rank) const {
  std::vector<DurationNs> busy, own;
  for (size_t o : judged) {
    const RankBlame& b = ranks[o];
    if (b.rank == rank) continue;
    busy.push_back(b.busy);
    own.push_back(b.own_work);
  }
  if (busy.empty()) return {typical_busy, typical_own_work};
  return {MedianNs(std::move(busy)), MedianNs(std::move(own))};
}

Intervals OwnWorkIntervals(const RankData& rank, TimeNs from) {
  Intervals out;
  const std::vector<ChainRecord> records = ChainRecords(rank, OnGpuTimeline(rank));
  TimeNs busy_until = records.empty() ? from : std::max(from, std::get<0>(records.front()));
  for (const auto& [enter, exit, kind, index, place] : records) {
    if (enter > busy_until) out.emplace_back(busy_until, enter);
    busy_until = std::max(busy_until, exit);
  }
  return out;
}

namespace {

// Own work per NVTX range name of one rank (OwnWorkRanges), its MPI records and ranges fed one
// window at a time: the own-work intervals as OwnWorkIntervals cuts them (from the latest exit of
// its MPI calls to the next call's enter, carried across cuts), each read from the ranges that
// overlap it. It holds only the ranges that end after that latest exit (one of them may overlap
// the interval going on at the cut); a range open at a cut comes cut short there
// (RangeOpenAtCut), is read in that window only, and comes whole in the window it ends in.
class OwnWorkRangeFold {
 public:
  explicit OwnWorkRangeFold(TimeNs from) : from_(from) {}

  // One window: its MPI records (ChainRecords, by enter), the ranges that ended in it and those
  // open at its cut.
  void Add(const std::vector<ChainRecord>& records, std::vector<RangeRecord> ended,
           const std::vector<RangeRecord>& open) {
    out_.has_ranges |= !ended.empty() || !open.empty();
    std::vector<RangeRecord> ranges = std::move(held_);
    ranges.insert(ranges.end(), std::make_move_iterator(ended.begin()),
                  std::make_move_iterator(ended.end()));
    const size_t whole = ranges.size();
    ranges.insert(ranges.end(), open.begin(), open.end());
    {
      const RangeTimeline timeline(&ranges);
      for (const auto& [enter, exit, kind, index, place] : records) {
        if (!busy_until_) busy_until_ = std::max(from_, enter);
        if (enter > *busy_until_) {
          const WindowTime t = timeline.TimeIn(*busy_until_, enter, std::nullopt);
          for (const auto& [name, ns] : t.by_range) out_.by_range[name] += ns;
          out_.by_range[""] += std::max<DurationNs>(t.untracked(), 0);
        }
        busy_until_ = std::max(*busy_until_, exit);
      }
    }
    ranges.erase(ranges.begin() + static_cast<std::ptrdiff_t>(whole), ranges.end());
    const TimeNs keep_after = busy_until_.value_or(from_);
    std::erase_if(ranges, [&](const RangeRecord& r) { return r.end <= keep_after; });
    held_ = std::move(ranges);
  }

  size_t held() const { return held_.size(); }
  OwnWorkRanges Take() { return std::move(out_); }

  // The rank's chain is its GPU's from here on (OnGpuTimeline): its own work so far was read
  // between host calls, which the whole run's chain does not have. The ranges held stay (those
  // that matter end after the first NCCL call, and come again if they do).
  void SwitchToGpu() {
    on_gpu_ = true;
    busy_until_.reset();
    out_.by_range.clear();
  }
  bool on_gpu() const { return on_gpu_; }

 private:
  bool on_gpu_ = false;
  TimeNs from_;
  std::optional<TimeNs> busy_until_;  // the latest exit so far (from the first record on)
  std::vector<RangeRecord> held_;
  OwnWorkRanges out_;
};

// One window's uploads into each rank's OwnWorkRangeFold; the ranges they hold after it.
size_t AddOwnWork(const std::vector<RankUpload>& uploads, std::vector<OwnWorkRangeFold>* folds) {
  size_t held = 0;
  for (size_t ri = 0; ri < uploads.size(); ++ri) {
    const RankUpload& u = uploads[ri];
    OwnWorkRangeFold& fold = (*folds)[ri];
    if (!fold.on_gpu() && OnGpuTimeline(u.records)) fold.SwitchToGpu();
    const RecordIndices indices = MpiIndices(u);
    fold.Add(ChainRecords(u.records, fold.on_gpu(), &indices), u.records.ranges, u.open_ranges);
    held += fold.held();
  }
  return held;
}

}  // namespace

std::vector<OwnWorkRanges> OwnWorkRangesByWindow(const Session& s, TimeNs from,
                                                 const WindowSplit& split, size_t* peak_held) {
  std::vector<OwnWorkRangeFold> folds(s.ranks.size(), OwnWorkRangeFold(from));
  size_t peak = 0;
  for (size_t w = 0; w < split.size(); ++w) {
    peak = std::max(peak, AddOwnWork(UploadsOf(s, split, w), &folds));
  }
  if (peak_held != nullptr) *peak_held = peak;
  std::vector<OwnWorkRanges> out;
  for (OwnWorkRangeFold& fold : folds) out.push_back(fold.Take());
  return out;
}

namespace {

// Per rank: its events and calls, and from its first judged event on its own work, busy time and
// time inside MPI.
void AddRankTotals(const Graph& g, BlameModel* model) {
  model->first = g.first;
  model->last = g.first;
  for (size_t ri = 0; ri < g.ranks.size(); ++ri) {
    RankBlame b;
    b.rank = g.ranks[ri];
    const std::vector<Event>& ev = g.events[ri];
    b.events = static_cast<int>(ev.size());
    b.collective_calls = g.collective_calls[ri];
    b.p2p_calls = g.p2p_calls[ri];
    if (!ev.empty()) {
      const size_t from = FirstJudged(ev);
      b.first = from < ev.size() ? ev[from].enter : ev.front().exit;
      TimeNs busy_until = b.first;
      for (size_t k = from; k < ev.size(); ++k) {
        const Event& e = ev[k];
        const DurationNs gap = JudgedGap(ev, k);
        b.own_work += gap;
        b.busy += gap + JudgedTransfer(ev, k);
        b.in_mpi += std::max<DurationNs>(e.exit - std::max(e.enter, busy_until), 0);
        busy_until = std::max(busy_until, e.exit);
        if (!e.interpreted) ++b.uninterpreted_calls;
        if (e.other) ++b.other_calls;
      }
      b.last = busy_until;
      model->last = std::max(model->last, busy_until);
    }
    model->ranks.push_back(std::move(b));
  }
}

// Where the ranks share ten collectives or more: nine cuts, the first shared instance at or after
// each wall-clock tenth (by its earliest arrival), so the parts are even in time although
// collectives may bunch (a code's setup). Empty otherwise.
std::vector<int> PartCuts(const Graph& g, TimeNs first, DurationNs span) {
  std::vector<int> shared;  // instances every rank with events takes part in, in time order
  size_t with_events = 0;
  for (const auto& ev : g.events) with_events += ev.empty() ? 0 : 1;
  for (size_t k = 0; k < g.instances.size(); ++k) {
    if (g.instances[k].members.size() == with_events) shared.push_back(static_cast<int>(k));
  }
  std::vector<int> cuts;
  if (shared.size() < 10 || span <= 0) return cuts;
  auto earliest = [&](size_t k) {
    TimeNs e = std::numeric_limits<TimeNs>::max();
    for (const auto& [r, ei] : g.instances[static_cast<size_t>(shared[k])].members) {
      e = std::min(e, g.events[static_cast<size_t>(r)][static_cast<size_t>(ei)].enter);
    }
    return e;
  };
  size_t j = 0;
  for (int t = 1; t < 10; ++t) {
    const TimeNs target = first + span * t / 10;
    while (j + 1 < shared.size() && earliest(j) < target) ++j;
    cuts.push_back(shared[j]);
  }
  return cuts;
}

// Ten parts of a rank's running sum: upto(t) is the sum through cut t for t < 9 and the total
// for t = 9; a part is what the sum grew since the largest value before it (never negative).
template <typename UpTo>
std::vector<DurationNs> PartsOfSums(UpTo upto) {
  std::vector<DurationNs> parts(10, 0);
  DurationNs before = 0;
  for (size_t t = 0; t < 10; ++t) {
    const DurationNs sum = upto(t);
    parts[t] = std::max<DurationNs>(sum - before, 0);
    before = std::max(before, sum);
  }
  return parts;
}

// Own work and busy time per part, the parts cut at the same instances on every rank.
void AddPartsAtCuts(const Graph& g, const std::vector<int>& cuts, BlameModel* model) {
  for (size_t ri = 0; ri < g.ranks.size(); ++ri) {
    const std::vector<Event>& ev = g.events[ri];
    // Own work and busy time of events [0, i).
    std::vector<DurationNs> prefix(ev.size() + 1, 0), busy_prefix(ev.size() + 1, 0);
    for (size_t i = 0; i < ev.size(); ++i) {
      const DurationNs gap = JudgedGap(ev, i);
      prefix[i + 1] = prefix[i] + gap;
      busy_prefix[i + 1] = busy_prefix[i] + gap + JudgedTransfer(ev, i);
    }
    // The cut instances' events on this rank.
    std::vector<size_t> at(cuts.size(), 0);
    for (size_t j = 0; j < cuts.size(); ++j) {
      for (const auto& [r, ei] : g.instances[static_cast<size_t>(cuts[j])].members) {
        if (static_cast<size_t>(r) == ri) at[j] = static_cast<size_t>(ei);
      }
    }
    // A pair, not a structured binding: clang before 16 cannot capture a binding in a lambda.
    for (const auto& sums_parts : {std::pair{&prefix, &model->ranks[ri].own_by_part},
                                   std::pair{&busy_prefix, &model->ranks[ri].busy_by_part}}) {
      const std::vector<DurationNs>* sums = sums_parts.first;
      *sums_parts.second = ev.empty() ? std::vector<DurationNs>(10, 0) : PartsOfSums([&](size_t t) {
        return t == 9 ? sums->back() : (*sums)[at[t] + 1];
      });
    }
  }
}

// Own work and busy time per wall-clock tenth of the model's span.
void AddWallClockParts(const Graph& g, DurationNs span, BlameModel* model) {
  const TimeNs start = model->first;
  for (size_t ri = 0; ri < g.ranks.size(); ++ri) {
    std::vector<DurationNs>& tenths = model->ranks[ri].own_by_part;
    std::vector<DurationNs>& busy_tenths = model->ranks[ri].busy_by_part;
    tenths.assign(10, 0);
    busy_tenths.assign(10, 0);
    const std::vector<Event>& ev = g.events[ri];
    const size_t first = FirstJudged(ev);
    if (span <= 0 || first >= ev.size()) continue;
    TimeNs busy_until = ev[first].enter;
    for (size_t k = first; k < ev.size(); ++k) {
      const Event& e = ev[k];
      TimeNs from = busy_until;
      const TimeNs to = std::max(e.enter, busy_until);
      while (from < to) {
        const auto t = static_cast<size_t>(std::clamp<int64_t>((from - start) * 10 / span, 0, 9));
        const TimeNs tenth_end = start + span * static_cast<int64_t>(t + 1) / 10;
        // Integer rounding can put tenth_end at `from`: always move on.
        const TimeNs upto = t == 9 ? to : std::min(to, std::max(tenth_end, from + 1));
        tenths[t] += upto - from;
        busy_tenths[t] += upto - from;
        from = upto;
      }
      if (e.transfer > 0) {
        busy_tenths[static_cast<size_t>(std::clamp<int64_t>((e.exit - start) * 10 / span, 0, 9))] +=
            e.transfer;
      }
      busy_until = std::max(busy_until, e.exit);
    }
  }
}

// First-order wait states: each event's wait for the partner that came last, on that partner.
void AddFirstOrderWaits(const Graph& g, BlameModel* model) {
  const std::vector<Top2> recorded_tops = RecordedTops(g);
  for (size_t ri = 0; ri < g.ranks.size(); ++ri) {
    for (const Event& e : g.events[ri]) {
      const Ready ready = DependencyTime(
          g, static_cast<int>(ri), e,
          [&](int r, int ei) {
            return g.events[static_cast<size_t>(r)][static_cast<size_t>(ei)].enter;
          },
          recorded_tops);
      if (ready.culprit < 0) continue;
      const DurationNs wait =
          std::clamp<DurationNs>(ready.at - e.enter, 0, std::max<DurationNs>(e.exit - e.enter, 0));
      if (wait <= 0) continue;
      model->ranks[ri].waited += wait;
      RankBlame& culprit = model->ranks[static_cast<size_t>(ready.culprit)];
      culprit.caused += wait;
      const std::string_view call = CallName(e.call);
      auto at = culprit.caused_at.find(call);
      if (at == culprit.caused_at.end()) at = culprit.caused_at.emplace(call, 0).first;
      at->second += wait;
      model->waits[{g.ranks[ri], g.ranks[static_cast<size_t>(ready.culprit)]}] += wait;
    }
  }
}

// The figure a rank is judged on: its own work, or its busy time (own work and transfers).
enum class Figure { kOwnWork, kBusy };

DurationNs Total(const RankBlame& r, Figure f) { return f == Figure::kBusy ? r.busy : r.own_work; }

DurationNs Part(const RankBlame& r, Figure f, size_t t) {
  return (f == Figure::kBusy ? r.busy_by_part : r.own_by_part)[t];
}

// The ranks with enough events to be judged, and medians over them.
class Judged {
 public:
  const BlameModel& model;
  const std::vector<size_t>& ranks;  // model.judged

  // Every judged rank's others on the two figures, sorted once: a copy of 16,383 figures per
  // rank and figure made the medians a quarter of a 16,384-rank analysis (O(ranks^2)).
  Judged(const BlameModel& m, const std::vector<size_t>& judged)
      : model(m),
        ranks(judged),
        position_(m.ranks.size()),
        own_(Totals(m, judged, Figure::kOwnWork)),
        busy_(Totals(m, judged, Figure::kBusy)) {
    for (size_t i = 0; i < judged.size(); ++i) position_[judged[i]] = i;
  }

  // The median of figure(rank blame) over the judged ranks other than `self`.
  template <class F>
  double OthersMedian(size_t self, F figure) const {
    std::vector<double> v;
    for (size_t o : ranks) {
      if (o != self) v.push_back(static_cast<double>(figure(model.ranks[o])));
    }
    return Median(std::move(v));
  }
  // The median and RobustSigma of a figure over the judged ranks other than `self`, itself a
  // judged rank (every rank JudgeRank is asked about).
  double OthersMedian(size_t self, Figure f) const { return Of(f).Median(position_[self]); }
  double OthersSigma(size_t self, Figure f) const { return Of(f).RobustSigma(position_[self]); }

 private:
  const LeaveOneOut& Of(Figure f) const { return f == Figure::kBusy ? busy_ : own_; }
  static std::vector<double> Totals(const BlameModel& m, const std::vector<size_t>& judged,
                                    Figure f) {
    std::vector<double> v;
    v.reserve(judged.size());
    for (size_t o : judged) v.push_back(static_cast<double>(Total(m.ranks[o], f)));
    return v;
  }
  std::vector<size_t> position_;  // model index -> index in ranks (judged ranks only)
  LeaveOneOut own_, busy_;
};

// How steadily a rank's excess on a figure holds over the ten parts of the run.
struct Steadiness {
  bool steady = false;
  double z = 0;     // its excess in standard errors of what chance gives over the parts
  int clear = 0;    // parts where its figure is clearly above the others'
  int counted = 0;  // parts where anyone did anything
};

// How much a rank's figure in one part of the run strays from the others' by chance. With three
// ranks or more, from the other ranks' own deviations (so a straggler that starts halfway counts
// in full); with two, from this rank's (then it must be steady).
Steadiness SteadyOverTime(const Judged& judged, size_t ri, Figure fig, double excess, double median,
                          bool outside_evidence, const BlameOptions& options) {
  Steadiness out;
  const RankBlame& b = judged.model.ranks[ri];
  std::vector<double> median_t(10), deviation, mine_minus;
  for (size_t t = 0; t < 10; ++t) {
    median_t[t] = judged.OthersMedian(ri, [&](const RankBlame& r) { return Part(r, fig, t); });
  }
  for (size_t t = 0; t < 10; ++t) {
    const double mine = static_cast<double>(Part(b, fig, t));
    if (median_t[t] <= 0 && mine <= 0) continue;
    ++out.counted;
    mine_minus.push_back(mine - median_t[t]);
    if (mine - median_t[t] >= 0.5 * options.min_excess_fraction * median_t[t] &&
        mine > median_t[t]) {
      ++out.clear;
    }
  }
  const bool many = judged.ranks.size() >= 3;
  if (many) {
    for (size_t o : judged.ranks) {
      if (o == ri) continue;
      for (size_t t = 0; t < 10; ++t) {
        const double theirs = static_cast<double>(Part(judged.model.ranks[o], fig, t));
        if (median_t[t] > 0 || theirs > 0) deviation.push_back(theirs - median_t[t]);
      }
    }
  }
  const double tenth_sigma =
      std::max(many ? RobustSigma(deviation) : SampleSigma(mine_minus), 0.005 * median / 10);
  out.z = excess / (tenth_sigma * std::sqrt(std::max(out.counted, 1)));
  out.steady = out.z >= options.steady_sigmas;
  if (!many && outside_evidence) {
    // Two ranks, one of them seen slowed from outside: steady in proportion is steady too. A
    // code whose phases differ in size (HPCC: HPL, PTRANS, RandomAccess, FFT, b_eff) makes the
    // rank's excess differ from part to part while its ratio to the other rank's stays (2-19x
    // with competitors on its core), so the ratios' mean is tested against their own spread. A
    // part's figures are floored at a twentieth of an average part's, so parts where both ranks
    // did next to nothing add no noise.
    std::vector<double> mine_t(10);
    for (size_t t = 0; t < 10; ++t) mine_t[t] = static_cast<double>(Part(b, fig, t));
    const double ratio_z = ProportionalSteadiness(mine_t, median_t, 0.05 * median / 10);
    out.steady |= ratio_z >= options.steady_sigmas_outside_evidence;
    out.z = std::max(out.z, ratio_z);
  }
  return out;
}

// Whether a rank stands apart from the others on one figure: across ranks and steadily in time.
struct Apart {
  bool passes = false;
  double excess = 0, median = 0, sigmas = 0, fraction = 0, persistence = 0;
};

Apart StandsApart(const Judged& judged, size_t ri, Figure fig, double min_sigmas,
                  bool outside_evidence, const BlameOptions& options) {
  Apart out;
  const double median = judged.OthersMedian(ri, fig);
  const double excess = static_cast<double>(Total(judged.model.ranks[ri], fig)) - median;
  if (median <= 0 || excess < options.min_excess_fraction * median) return out;
  // Across ranks: a floor under the spread, since with few ranks that agree closely the MAD can
  // be ~0.
  const double sigma = std::max(judged.OthersSigma(ri, fig), 0.01 * median);
  if (excess < min_sigmas * sigma) return out;
  const Steadiness time =
      SteadyOverTime(judged, ri, fig, excess, median, outside_evidence, options);
  if (!time.steady) return out;
  out.passes = true;
  out.excess = excess;
  out.median = median;
  out.sigmas = std::min(excess / sigma, time.z);
  out.fraction = excess / median;
  out.persistence = time.counted > 0 ? static_cast<double>(time.clear) / time.counted : 0;
  return out;
}

// A rank to replay like the typical rank, and how.
struct Candidate {
  size_t index;
  double excess;
  bool busy;              // judged on busy time (else own work)
  double scale;           // what the what-if multiplies its own work by
  double transfer_scale;  // ... and, when busy, its transfers and its partners' with it
  // Judged on busy time for sharing its CPUs (run delay, or its CPU far below the others'), not
  // for a quota or a freezer holding it.
  bool contended = false;
  // Seen held from outside (a cgroup quota throttled it, a freezer froze it), whatever it was
  // judged on.
  bool held = false;
};

// A rank held inside its collectives: its arrivals are on time and every member's transfer grows
// with its own, so neither its own work nor its busy time stands apart. Being held alone names it:
// its own work goes to theirs, its calls' transfers shrink by the held share. Its own work must
// not be clearly below theirs (a rank held only while it waited anyway delayed nobody).
std::optional<Candidate> HeldCandidate(const Judged& judged, size_t ri, std::optional<double> held,
                                       RankBlame* cb) {
  const double mine = static_cast<double>(cb->own_work);
  const double others_own = judged.OthersMedian(ri, Figure::kOwnWork);
  if (!held || cb->own_work <= 0 || mine < 0.9 * others_own) return std::nullopt;
  // Its transfers shrink by the held share, or to the others' busy time where its own busy time
  // is further above theirs: where its calls are a ping-pong with a partner (HPCC's b_eff,
  // PTRANS), a clean run's waits for the partner's latency become its transfers once it is held
  // (HPCC at np 2, frozen 60 ms of every 100: busy 2.86 s against 0.82 s, with transfers at the
  // held share 1.52x the bare clean run, at the busy ratio 1.0x). Where every member's transfer
  // grew with its own (a quota inside all-reduces), the ratio is about 1 and the held share
  // decides.
  const double throttle_scale = std::clamp(1.0 - *held, 0.1, 1.0);
  const double others_busy = judged.OthersMedian(ri, Figure::kBusy);
  const double busy_ratio =
      cb->busy > 0 ? std::clamp(others_busy / static_cast<double>(cb->busy), 0.0, 1.0) : 1.0;
  cb->judged_on_busy = true;
  cb->held_share = *held;
  return Candidate{ri,
                   std::max(static_cast<double>(cb->busy) - others_busy, 0.0),
                   true,
                   std::clamp(others_own / mine, 0.0, 1.0),
                   std::min(throttle_scale, busy_ratio),
                   false,
                   true};
}

// A rank that stands apart: how much faster it would run like the others. A rank starved of CPU
// is slowed alike in its own work and in its transfers, but the others' busy time is inflated too
// (their transfers with it wait for it to run: rendezvous messages progress only while it does),
// so its busy time against theirs understates the slowdown; its own work against theirs does not,
// where own work is a material share of a typical rank's busy time (a quarter; HPCC's is a few
// percent, too little to read). The stronger of the two estimates is taken.
Candidate ApartCandidate(const Judged& judged, size_t ri, const Apart& apart, bool busy,
                         std::optional<double> held, std::optional<double> share_scale,
                         RankBlame* cb) {
  const double mine = static_cast<double>(cb->own_work);
  const double others_own = judged.OthersMedian(ri, Figure::kOwnWork);
  double scale = apart.median / static_cast<double>(busy ? cb->busy : cb->own_work);
  if (busy && cb->own_work > 0 && others_own >= 0.25 * apart.median) {
    scale = std::min(scale, others_own / mine);
  }
  scale = std::clamp(scale, 0.0, 1.0);
  // Its cgroup's quota throttled it (or a freezer froze it) for this share of its wall: its calls
  // could not progress that long, so like the others they shrink by that share at least.
  const double throttle_scale = held ? std::clamp(1.0 - *held, 0.1, 1.0) : 1.0;
  double transfer_scale = busy ? std::min(scale, throttle_scale) : scale;
  // Starved of CPU by sharing its cores (no quota, no freezer), its share of the CPU against the
  // others' says it as well: where own work is too small to read and the others' busy time is
  // spent waiting for its messages (HPCC with competitors on its core), the busy ratio is not.
  if (busy && !held && share_scale) transfer_scale = std::min(transfer_scale, *share_scale);
  // Held (frozen, throttled: seen from outside), its own work like the others' (at least 0.8 of
  // theirs per unit, and a material share of their busy time, as above), its busy time apart: it
  // was slow inside its calls only (while its partners waited for its messages), so its
  // transfers, not its whole busy time, go to the others' (a halo exchange held 8 ms a step in
  // one rank's Waitall: the busy ratio left the what-if 1.4x). Where own work is a few percent of
  // the busy time (HPCC), the ratio of such small figures says nothing: HPCC's quota'd rank, its
  // own work 0.09 s against 0.11 s, would have its transfers cut to 0.15x (the what-if 0.6x).
  // Not for a rank merely sharing its CPUs: in a clean run on 2 cores a rank that got less CPU
  // by chance had its gain doubled by it, and was named.
  const double others_transfer = judged.OthersMedian(
      ri, [](const RankBlame& r) { return static_cast<double>(r.busy - r.own_work); });
  const double my_transfer = static_cast<double>(cb->busy - cb->own_work);
  if (busy && held && mine > 0 && others_own >= 0.8 * mine && others_own >= 0.25 * apart.median &&
      my_transfer > 0) {
    transfer_scale = std::min(transfer_scale, std::clamp(others_transfer / my_transfer, 0.0, 1.0));
  }
  cb->excess_sigmas = apart.sigmas;
  cb->excess_fraction = apart.fraction;
  cb->persistence = apart.persistence;
  cb->judged_on_busy = busy;
  return {ri, apart.excess, busy, scale, transfer_scale, busy && !held, held.has_value()};
}

// Whether and how rank ri is a candidate. Own work is measured on the rank's own clock: the test
// that clock error cannot fool. A rank the agents saw starved of CPU, or running far less than
// the others (stopped, frozen), is slow inside MPI as well (it progresses its messages only while
// it runs), so for it the busy time counts, transfers included.
std::optional<Candidate> JudgeRank(const Session& aligned, const Judged& judged, int rank,
                                   size_t ri, const BlameOptions& options, RankBlame* cb) {
  // Its off-CPU cause, read once (each reading goes over every rank's samples).
  const std::optional<OffCpuCause> off_cpu = FindOffCpuCause(aligned, rank);
  // Running far less than the others counts so only when the rank was not off its CPU by its
  // own call (blocked writing a slow FIFO, asleep): then it was not slow inside MPI, where it
  // ran as the others did, and its transfers, the collectives' start-up among them, must not
  // shrink with its own work (LAMMPS at np 2, its dump a FIFO drained at 500 kB/s: scaled,
  // MPI_Init's 0.22 s went from the what-if, 0.68x the bare clean run).
  const bool blocked = off_cpu && off_cpu->kind == CauseKind::kBlocked;
  const bool starved = StarvedOfCpu(aligned, rank);
  bool busy =
      starved || (RanFarLess(aligned, rank) && !blocked) || FrozenShare(off_cpu).has_value();
  Apart apart =
      busy ? StandsApart(judged, ri, Figure::kBusy, options.excess_sigmas_outside_evidence, true,
                         options)
           : StandsApart(judged, ri, Figure::kOwnWork, options.excess_sigmas, false, options);
  // Evidence from outside widens the test, never narrows it: a rank that sleeps (its CPU far
  // below the others') while the others' transfers spread their busy times (a rendezvous
  // pipeline on shared cores) may not stand apart on busy time, yet its own work does, at the
  // thresholds any rank is held to.
  if (busy && !apart.passes) {
    apart = StandsApart(judged, ri, Figure::kOwnWork, options.excess_sigmas, false, options);
    busy = !apart.passes;
  }
  const std::optional<double> held = HeldShareGiven(aligned, rank, off_cpu);
  if (!apart.passes) return HeldCandidate(judged, ri, held, cb);
  const std::optional<double> share_scale = starved ? GrantedShareScale(aligned, ri) : std::nullopt;
  return ApartCandidate(judged, ri, apart, busy, held, share_scale, cb);
}

// Where every judged rank's chain is the same sequence of calls (SPMD codes: LAMMPS's halo
// exchange, mpi_train), a candidate's own work is replaced event by event by the typical rank's:
// per event, the median gap before it over the judged ranks that are not candidates. Scaling its
// recorded gaps instead keeps their shape: a quota-throttled rank's gaps are short, or long by a
// throttled period, and scaled they still make the others wait at the long ones (LAMMPS at np 2,
// rank 0 under a 20 % quota: the what-if 1.35x the bare run scaled, 1.21x replaced). Elsewhere
// (HPCC's probe and Waitany loops differ between ranks) its gaps are scaled: empty.
std::vector<DurationNs> TypicalGaps(const Graph& g, const std::vector<size_t>& judged,
                                    const std::vector<Candidate>& candidates) {
  std::vector<bool> candidate(g.ranks.size(), false);
  for (const Candidate& c : candidates) candidate[c.index] = true;
  std::vector<size_t> typical_ranks;
  for (size_t ri : judged) {
    if (!candidate[ri]) typical_ranks.push_back(ri);
  }
  if (candidates.empty() || typical_ranks.empty()) return {};
  const std::vector<Event>& first_chain = g.events[judged.front()];
  for (size_t ri : judged) {
    const std::vector<Event>& ev = g.events[ri];
    if (ev.size() != first_chain.size()) return {};
    for (size_t k = 0; k < ev.size(); ++k) {
      if (ev[k].call != first_chain[k].call) return {};
    }
  }
  // At most 63 of them, evenly spread: their median is the typical rank's as well, and a
  // 1,024-rank session's 12 k events a rank are read from 63 chains, not 1,000.
  constexpr size_t kMaxTypical = 63;
  if (typical_ranks.size() > kMaxTypical) {
    std::vector<size_t> spread;
    for (size_t j = 0; j < kMaxTypical; ++j) {
      spread.push_back(typical_ranks[j * typical_ranks.size() / kMaxTypical]);
    }
    typical_ranks = std::move(spread);
  }
  const size_t m = typical_ranks.size(), events = first_chain.size();
  std::vector<DurationNs> by_event(events * m);  // [k * m + j]: rank j's gap before event k
  for (size_t j = 0; j < m; ++j) {
    const std::vector<Event>& ev = g.events[typical_ranks[j]];
    for (size_t k = 0; k < events; ++k) by_event[k * m + j] = ev[k].gap;
  }
  std::vector<DurationNs> typical_gaps(events);
  for (size_t k = 0; k < events; ++k) {
    const auto begin = by_event.begin() + static_cast<std::ptrdiff_t>(k * m);
    typical_gaps[k] =
        MedianNs(std::vector<DurationNs>(begin, begin + static_cast<std::ptrdiff_t>(m)));
  }
  return typical_gaps;
}

// The candidate's own work event by event as its what-if replays it, but its start-up and setup
// (up to its first judged event) as recorded: the replay the rank's gain is read from. A typical
// start-up belongs in the what-if, not in the gain the rank is judged on (FirstJudged): a clean
// 0.7 s run had a rank's MPI_Init 60-100 ms late, which made a 9 % gain of a rank whose judged own
// work was 1.1x the others'. Replayed, not subtracted: a start-up replayed shorter saves nothing
// where the others' start-ups were as long (MPI_Init waits for them all): HPCC at np 2 behind a
// launcher that took 2.3 s before MPI_Init, its frozen rank's start-up scaled down by 1.33 s and
// that taken from a gain of 1.29 s, which the job's span had not saved (tests/fixtures/
// cpu2-slow-launch). Empty where the what-if replays the start-up as recorded.
std::vector<DurationNs> GapsWithRecordedStartup(const std::vector<Event>& chain, const Candidate& c,
                                                const std::vector<DurationNs>& typical_gaps) {
  const size_t judged_from = FirstJudged(chain);
  if (judged_from == 0) return {};
  std::vector<DurationNs> gaps(chain.size());
  bool differs = false;
  for (size_t k = 0; k < chain.size(); ++k) {
    gaps[k] = typical_gaps.empty() ? Scaled(chain[k].gap, c.scale) : typical_gaps[k];
    if (k <= judged_from) {
      differs |= gaps[k] != chain[k].gap;
      gaps[k] = chain[k].gap;
    }
  }
  if (!differs) return {};
  return gaps;
}

// The greedy replay: the stragglers found so far, made like the typical rank.
struct Accepted {
  std::vector<double> scale, transfer_scale;
  std::vector<const std::vector<DurationNs>*> typical;
  Replay current;
  std::vector<int> ranks;
  std::set<std::string> starved_nodes;  // nodes of the stragglers judged on busy time
};

DurationNs OthersWaited(const Replay& rp, size_t self) {
  DurationNs total = 0;
  for (size_t o = 0; o < rp.waited.size(); ++o) {
    if (o != self) total += rp.waited[o];
  }
  return total;
}

// Greedy, most excess first: each candidate is replayed with the stragglers found before it
// already like the typical rank, so a second straggler hidden behind a slower one (both late at
// the same collectives) still shows its own gain, and the gains add up.
void ReplayCandidates(const Session& aligned, const Graph& g, const Replay& base,
                      const std::vector<Candidate>& candidates,
                      const std::vector<DurationNs>& typical_gaps, size_t judged_ranks,
                      const BlameOptions& options, BlameModel* model) {
  const size_t n = g.ranks.size();
  const DurationNs span = model->span();
  const std::vector<double> unit(n, 1.0);
  Accepted acc{unit, unit, {}, base, {}, {}};
  if (!typical_gaps.empty()) acc.typical.assign(n, nullptr);
  // Nodes of candidates that used clearly more CPU than the others: whatever the order the
  // candidates are tried in, a rank that waited for its CPUs there may have waited for them.
  std::set<std::string> cpu_heavy_nodes;
  for (const Candidate& c : candidates) {
    const RankData& data = aligned.ranks[c.index];
    if (UsedClearlyMoreCpu(aligned, data.id.rank)) cpu_heavy_nodes.insert(data.id.node);
  }
  for (const Candidate& c : candidates) {
    RankBlame& b = model->ranks[c.index];
    std::vector<double> trial = acc.scale;
    trial[c.index] = c.scale;
    std::vector<const std::vector<DurationNs>*> trial_typical = acc.typical;
    if (!typical_gaps.empty()) trial_typical[c.index] = &typical_gaps;
    // A rank judged on its busy time was slow inside MPI too: the calls it takes part in speed
    // up with it. One judged on its own work only works faster.
    std::vector<double> trial_transfer = acc.transfer_scale;
    if (c.busy) trial_transfer[c.index] = c.transfer_scale;
    Replay what_if = Run(g, trial, trial_transfer, trial_typical);
    b.replayed = true;
    b.what_if_with = acc.ranks;
    // Replays differ from the recording by the model's error; the what-if is read against the
    // replay of the recording, then applied to the measured span.
    b.what_if_span = std::max<DurationNs>(span - (base.span - what_if.span), 0);
    b.caused_total = std::max<DurationNs>(
        OthersWaited(acc.current, c.index) - OthersWaited(what_if, c.index), 0);
    DurationNs judged_span = what_if.span;
    const std::vector<DurationNs> recorded_startup =
        GapsWithRecordedStartup(g.events[c.index], c, typical_gaps);
    if (!recorded_startup.empty()) {
      std::vector<const std::vector<DurationNs>*> own = trial_typical;
      own.resize(n, nullptr);
      own[c.index] = &recorded_startup;
      judged_span = Run(g, trial, trial_transfer, own).span;
    }
    const DurationNs gain = acc.current.span - judged_span;
    b.gain = std::max<DurationNs>(gain, 0);
    // A rank judged on its own work that shares a node with a straggler starved of CPU competes
    // with it for the node's CPUs: part of its extra work may be that rank's doing (LAMMPS on 2
    // cores: the rank beside a quota-throttled one lost the CPU to it whenever it came back),
    // which the replay cannot undo. It must save twice as much to count.
    const std::string& node = aligned.ranks[c.index].id.node;
    const bool beside_starved = !c.busy && acc.starved_nodes.count(node) > 0;
    // The mirror case: a rank that waited for its CPUs, on a node where another candidate used
    // clearly more CPU than the others, may have waited for that rank (4 ranks on 2 cores, one
    // of them copying 20 GiB through its loader: a core-mate ran 19 % of its wall where the
    // others ran 40 %, a 5 % gain the loader's fix would take with it).
    const bool beside_cpu_heavy = c.contended && cpu_heavy_nodes.count(node) > 0;
    // Judged on its own work, yet seen off its CPU from outside (frozen, stopped, blocked): a
    // cause both tests below ask about.
    const bool own_work_off_cpu = !c.busy && FindOffCpuCause(aligned, b.rank).has_value();
    // A rank that stands apart only weakly (short of the thresholds, or in part of the run), on
    // its own work, with nothing seen from outside (not starved, held or off its CPU): on shared
    // cores the scheduler alone gives such a rank a gain just past the threshold (8 ranks on 2
    // cores: a planted rank's core-mate saved 5.03 %, separation 0.36). It must save twice as
    // much to count; a rank slow in part of the run by a material amount still does. A rank
    // held by a quota counts as seen from outside even where its own work, not its busy time,
    // set it apart (mpi_train at np 4 with 20 % of a CPU on rank 3: throttled 64 of 70 periods,
    // its own work 0.48x above the others' in 43 % of the run, a gain of 8.7 %: unnamed before).
    const bool weakly_apart =
        !c.busy && !c.held && SeparationMargin(b, options) < 0.5 && !own_work_off_cpu;
    const double min_gain = options.min_gain_fraction *
                            (beside_starved || beside_cpu_heavy || weakly_apart ? 2.0 : 1.0);
    const bool saves =
        span > 0 && static_cast<double>(gain) >= min_gain * static_cast<double>(model->job);
    // Of two ranks there is no typical rank to hold one against: a host rank that did more own
    // work than the other with nothing seen from outside to explain it (not starved, held or off
    // its CPU) may have had more work, or a slower core (on this project's 2-vCPU VM, LAMMPS's
    // own timers put one rank's pair time 1.2-1.4x the other's in clean runs, either rank).
    // Not named; the report says so.
    if (saves && !c.busy && judged_ranks == 2 && !g.on_gpu[c.index] && !own_work_off_cpu) {
      b.unexplained_of_two = true;
      continue;
    }
    if (!saves) continue;
    if (c.busy) acc.starved_nodes.insert(node);
    model->stragglers.push_back(b.rank);
    acc.ranks.push_back(b.rank);
    acc.scale = std::move(trial);
    acc.transfer_scale = std::move(trial_transfer);
    acc.typical = std::move(trial_typical);
    acc.current = std::move(what_if);
  }
  if (!model->stragglers.empty()) {
    model->what_if_all_span = std::max<DurationNs>(span - (base.span - acc.current.span), 0);
  }
}

}  // namespace

double SeparationMargin(const RankBlame& rank, const BlameOptions& options) {
  return rank.persistence *
         std::min(ThresholdMargin(rank.excess_fraction, options.min_excess_fraction),
                  ThresholdMargin(rank.excess_sigmas, rank.judged_on_busy
                                                          ? options.excess_sigmas_outside_evidence
                                                          : options.excess_sigmas));
}

struct BlameEventFold::State {
  explicit State(const Session& s)
      : chains(s),
        // Its first record starts a rank's own work: nothing before it is read.
        own_work(s.ranks.size(), OwnWorkRangeFold(std::numeric_limits<TimeNs>::min())) {}
  ChainFold chains;
  std::vector<OwnWorkRangeFold> own_work;
  size_t peak = 0;
};

BlameEventFold::BlameEventFold(const Session& session) : state_(std::make_unique<State>(session)) {}
BlameEventFold::~BlameEventFold() = default;

void BlameEventFold::Reserve(const std::vector<size_t>& records, const std::vector<size_t>& p2p) {
  state_->chains.Reserve(records, p2p);
}

void BlameEventFold::Add(const std::vector<RankUpload>& window) {
  state_->chains.Add(window);
  state_->peak = std::max(state_->peak, AddOwnWork(window, &state_->own_work));
}

size_t BlameEventFold::peak_ranges_held() const { return state_->peak; }

namespace {

// Busy time across ranks: the typical rank (medians over the ranks with options.min_events
// events or more), and those ranks as the ones judged. False, with neither set, where there are
// fewer than two of them: no rank can stand apart.
bool AddTypicalAndJudged(const BlameOptions& options, BlameModel* model) {
  std::vector<DurationNs> work, own;
  std::vector<size_t> judged;
  for (size_t ri = 0; ri < model->ranks.size(); ++ri) {
    const RankBlame& b = model->ranks[ri];
    if (b.events < options.min_events) continue;
    work.push_back(b.busy);
    own.push_back(b.own_work);
    judged.push_back(ri);
  }
  if (work.size() < 2) return false;
  model->typical_busy = MedianNs(work);
  model->typical_own_work = MedianNs(std::move(own));
  model->judged = std::move(judged);
  return true;
}

// The model from the ranks' chains (BuildGraph, or a ChainFold's) and, when read window by
// window, own work per range (BlameModel::own_work_ranges).
BlameModel ModelOf(const Session& aligned, Graph g, const BlameOptions& options,
                   std::vector<OwnWorkRanges>* own_work_ranges) {
  BlameModel model;
  ComputeTransfers(&g);
  const size_t n = g.ranks.size();
  bool any = false;
  for (const auto& ev : g.events) any |= !ev.empty();
  if (!any) return model;
  AddRankTotals(g, &model);
  if (own_work_ranges != nullptr) model.own_work_ranges = std::move(*own_work_ranges);

  // Own work in ten parts of the run. Where the ranks share enough collectives, the parts are
  // cut at the same instances on every rank, so each part holds the same work on every rank
  // (a straggler that is always working would otherwise fill every wall-clock tenth, and a rank
  // that runs ahead of a reduce's root would too). Otherwise, wall-clock tenths.
  const DurationNs span = model.span();
  model.job = std::max<DurationNs>(aligned.end - aligned.start, span);
  const std::vector<int> cuts = PartCuts(g, model.first, span);
  if (cuts.size() == 9) {
    AddPartsAtCuts(g, cuts, &model);
  } else {
    AddWallClockParts(g, span, &model);
  }
  AddFirstOrderWaits(g, &model);

  if (!AddTypicalAndJudged(options, &model)) return model;
  const std::vector<double> unit(n, 1.0);
  const Replay base = Run(g, unit, unit);
  model.replayed_span = base.span;
  model.broken_dependencies = base.broken;

  // Candidates: busy time or own work above the other ranks' by a robust margin, or held alone.
  const Judged judged(model, model.judged);
  std::vector<Candidate> candidates;
  for (size_t ri : judged.ranks) {
    std::optional<Candidate> c =
        JudgeRank(aligned, judged, g.ranks[ri], ri, options, &model.ranks[ri]);
    if (c) candidates.push_back(*c);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.excess > b.excess; });
  if (static_cast<int>(candidates.size()) > options.max_candidates) {
    candidates.resize(static_cast<size_t>(options.max_candidates));
  }
  const std::vector<DurationNs> typical_gaps = TypicalGaps(g, judged.ranks, candidates);
  ReplayCandidates(aligned, g, base, candidates, typical_gaps, judged.ranks.size(), options,
                   &model);
  return model;
}

}  // namespace

BlameModel BlameEventFold::Finish(const Session& aligned, const SessionMatches& matches,
                                  const BlameOptions& options) {
  std::vector<OwnWorkRanges> own_work;
  for (OwnWorkRangeFold& fold : state_->own_work) own_work.push_back(fold.Take());
  return ModelOf(aligned, state_->chains.Finish(aligned, matches), options, &own_work);
}

namespace {

// A rank's figures summed over the segments so far (AddRankTotals' loop, carried).
struct RankRunning {
  size_t events = 0;             // in the segments finished
  size_t first_judged = 0;       // FirstJudged of its chain, known once it has an event
  TimeNs front_exit = 0;         // its first event's exit
  TimeNs busy_until = 0;         // AddRankTotals': from its first judged event on
  TimeNs gap_until = 0;          // AddGaps': the latest exit so far
  DurationNs own = 0, busy = 0;  // judged own work and busy time so far
};

// An instance every rank with events took part in, where the ten parts may be cut: its earliest
// enter and each rank's judged own work and busy time up to its member (PartCuts,
// AddPartsAtCuts).
struct SharedInstance {
  size_t members = 0;
  TimeNs earliest = 0;
  std::vector<DurationNs> own, busy;  // per rank index
};

}  // namespace

struct SegmentedBlameFold::State {
  explicit State(const Session& s)
      : session_start(s.start),
        at_event(StartGraph(s, &g)),
        last_collective(s.ranks.size()),
        running(s.ranks.size()),
        own_work(s.ranks.size(), OwnWorkRangeFold(std::numeric_limits<TimeNs>::min())) {
    for (size_t ri = 0; ri < g.ranks.size(); ++ri) index_of[g.ranks[ri]] = static_cast<int>(ri);
    for (int rank : g.ranks) {
      RankBlame b;
      b.rank = rank;
      model.ranks.push_back(std::move(b));
    }
  }

  TimeNs session_start;
  Graph g;  // the open segment's
  RecordEvents at_event;
  std::unordered_map<int, int> index_of;
  std::vector<CollectiveInstance> instances;  // released since the last cut
  size_t links_from = 0;  // the first link released since the last cut (MatchFold's)
  // Per rank index: the collective (comm, seq) its latest event is, if it is one.
  std::vector<std::optional<std::pair<uint64_t, uint64_t>>> last_collective;
  std::vector<size_t> p2p_next;  // per rank index: past the highest p2p record index seen
  bool unsupported = false;      // a GPU timeline, records out of order, a rank starting late
  bool closed = false;           // the last window closed
  size_t segments = 0, peak = 0;
  TimeNs first = 0;
  ReplayCarry carry;
  std::vector<RankRunning> running;
  std::vector<SharedInstance> shared;
  BlameModel model;
  std::vector<OwnWorkRangeFold> own_work;

  size_t SegmentEvents() const {
    size_t n = 0;
    for (const auto& ev : g.events) n += ev.size();
    return n;
  }
  bool IsAnchor() const;
  // `links` in OrderMessages' order: those released since the last cut, or the run's (those of
  // earlier segments are not found among this one's records).
  void FinishSegment(std::span<const MessageLink> links);
};

// Every rank with events so far ends the open segment with one N-to-N instance of them all.
bool SegmentedBlameFold::State::IsAnchor() const {
  std::optional<std::pair<uint64_t, uint64_t>> key;
  size_t with_events = 0;
  for (size_t ri = 0; ri < g.events.size(); ++ri) {
    if (g.events[ri].empty()) {
      if (running[ri].events > 0) return false;  // a rank that ended, or has no event since
      continue;
    }
    ++with_events;
    if (!last_collective[ri] || (key && *key != *last_collective[ri])) return false;
    key = last_collective[ri];
  }
  if (!key) return false;
  for (const CollectiveInstance& in : instances) {
    if (in.comm_id != key->first || in.seq != key->second) continue;
    return in.complete && !in.mismatched && WaitPatternOf(in.op) == WaitPattern::kAllToAll &&
           !IsPrefixOp(in.op) && in.members.size() == with_events;
  }
  return false;
}

void SegmentedBlameFold::State::FinishSegment(std::span<const MessageLink> links) {
  const size_t n = g.ranks.size();
  for (auto& keys : at_event.collective) std::sort(keys.begin(), keys.end());
  if (segments == 0) {
    AddStartUp(session_start, &g);
    first = g.first;
  } else {
    for (size_t ri = 0; ri < n; ++ri) {
      // A rank whose chain begins after the first segment: its start is its first event's
      // enter in the whole graph, which this segment cannot know is first. Not supported.
      if (!g.events[ri].empty() && running[ri].events == 0) unsupported = true;
      g.start[ri] = running[ri].gap_until;
    }
    g.first = first;
  }
  SessionMatches matches;
  matches.collectives = std::move(instances);
  OrderInstances(&matches.collectives);
  AddCollectiveInstances(matches, index_of, at_event, &g);
  LayOutEdges(MessageDependencies(links, index_of, at_event, &g), &g);
  AddGaps(&g);
  ComputeTransfers(&g);
  peak = std::max(peak, SegmentEvents());

  // The instances every rank with events so far takes part in, where the parts may be cut.
  size_t with_events = 0;
  for (size_t ri = 0; ri < n; ++ri) {
    with_events += running[ri].events > 0 || !g.events[ri].empty() ? 1 : 0;
  }
  std::vector<int> shared_at(g.instances.size(), -1);  // per instance: its place in `shared`
  for (size_t i = 0; i < g.instances.size(); ++i) {
    const Instance& in = g.instances[i];
    if (in.members.size() != with_events) continue;
    shared_at[i] = static_cast<int>(shared.size());
    SharedInstance si;
    si.members = in.members.size();
    si.earliest = std::numeric_limits<TimeNs>::max();
    for (const auto& [r, ei] : in.members) {
      si.earliest =
          std::min(si.earliest, g.events[static_cast<size_t>(r)][static_cast<size_t>(ei)].enter);
    }
    si.own.assign(n, 0);
    si.busy.assign(n, 0);
    shared.push_back(std::move(si));
  }
  // Totals, carried from the segments before (AddRankTotals), and each rank's sums up to its
  // member of each shared instance.
  for (size_t ri = 0; ri < n; ++ri) {
    const std::vector<Event>& ev = g.events[ri];
    RankRunning& run = running[ri];
    RankBlame& b = model.ranks[ri];
    b.collective_calls += g.collective_calls[ri];
    b.p2p_calls += g.p2p_calls[ri];
    if (!ev.empty() && run.events == 0) {
      run.first_judged = FirstJudged(ev);
      run.front_exit = ev.front().exit;
    }
    for (size_t k = 0; k < ev.size(); ++k) {
      const Event& e = ev[k];
      const size_t at = run.events + k;  // in the rank's whole chain
      const DurationNs gap = at <= run.first_judged ? 0 : e.gap;
      const DurationNs transfer = at < run.first_judged ? 0 : e.transfer;
      run.own += gap;
      run.busy += gap + transfer;
      if (e.instance >= 0 && shared_at[static_cast<size_t>(e.instance)] >= 0) {
        SharedInstance& si =
            shared[static_cast<size_t>(shared_at[static_cast<size_t>(e.instance)])];
        si.own[ri] = run.own;
        si.busy[ri] = run.busy;
      }
      if (at < run.first_judged) continue;
      if (at == run.first_judged) {
        b.first = e.enter;
        run.busy_until = e.enter;
      }
      b.in_mpi += std::max<DurationNs>(e.exit - std::max(e.enter, run.busy_until), 0);
      run.busy_until = std::max(run.busy_until, e.exit);
      if (!e.interpreted) ++b.uninterpreted_calls;
      if (e.other) ++b.other_calls;
    }
    if (!ev.empty()) {
      TimeNs until = run.events == 0 ? g.start[ri] : run.gap_until;
      for (const Event& e : ev) until = std::max(until, e.exit);
      run.gap_until = until;
    }
    run.events += ev.size();
  }
  AddFirstOrderWaits(g, &model);
  const std::vector<double> unit(n, 1.0);
  Run(g, unit, unit, {}, &carry);

  // The next segment maps its records from where this one's end.
  for (size_t ri = 0; ri < n; ++ri) {
    g.events[ri].clear();
    at_event.collective[ri].clear();
    at_event.p2p[ri].clear();
    at_event.p2p_base[ri] = p2p_next[ri];
  }
  g.instances.clear();
  g.partners.clear();
  g.involved.clear();
  g.collective_calls.assign(n, 0);
  g.p2p_calls.assign(n, 0);
  instances.clear();
  ++segments;
}

SegmentedBlameFold::SegmentedBlameFold(const Session& session)
    : state_(std::make_unique<State>(session)) {
  state_->p2p_next.assign(session.ranks.size(), 0);
}
SegmentedBlameFold::~SegmentedBlameFold() = default;

void SegmentedBlameFold::Reserve(const std::vector<size_t>& records,
                                 const std::vector<size_t>& p2p) {
  State& st = *state_;
  for (size_t ri = 0; ri < st.g.events.size() && ri < records.size() && ri < p2p.size(); ++ri) {
    st.g.events[ri].reserve(records[ri]);
    st.at_event.p2p[ri].reserve(p2p[ri]);
  }
}

void SegmentedBlameFold::Add(const std::vector<RankUpload>& window) {
  State& st = *state_;
  for (size_t ri = 0; ri < window.size() && ri < st.g.events.size(); ++ri) {
    const RankUpload& u = window[ri];
    if (OnGpuTimeline(u.records)) st.unsupported = true;
    for (size_t index : u.index.p2p) {
      if (index < st.at_event.p2p_base[ri]) st.unsupported = true;  // before the segment's
      st.p2p_next[ri] = std::max(st.p2p_next[ri], index + 1);
    }
    if (st.unsupported) continue;
    const RecordIndices indices = MpiIndices(u);
    AppendChain(ri, u.records, false, &indices, &st.at_event, &st.g);
    const std::vector<Event>& ev = st.g.events[ri];
    const auto& keys = st.at_event.collective[ri];
    if (!ev.empty()) {
      st.last_collective[ri].reset();
      if (!keys.empty() && std::get<2>(keys.back()) + 1 == static_cast<int>(ev.size())) {
        st.last_collective[ri] = std::pair{std::get<0>(keys.back()), std::get<1>(keys.back())};
      }
    }
  }
  AddOwnWork(window, &st.own_work);
}

void SegmentedBlameFold::Close(std::span<const CollectiveInstance> instances,
                               std::span<MessageLink> released, bool quiet, bool last) {
  State& st = *state_;
  if (st.unsupported) return;
  st.instances.insert(st.instances.end(), instances.begin(), instances.end());
  // The last segment is made by Finish, once the matchers' state is gone.
  if (!last && quiet && st.IsAnchor()) {
    const std::span<MessageLink> links = released.subspan(std::min(st.links_from, released.size()));
    OrderMessages(links);
    st.FinishSegment(links);
    st.links_from = released.size();
  }
  st.closed = last;
}

size_t SegmentedBlameFold::segments() const { return state_->segments; }
size_t SegmentedBlameFold::peak_events() const { return state_->peak; }

std::optional<BlameModel> SegmentedBlameFold::Finish(const Session& aligned,
                                                     const SessionMatches& matches,
                                                     const BlameOptions& options) {
  State& st = *state_;
  // The open segment's room goes before the caller builds the whole graph, if it must.
  auto release = [&st] {
    for (auto& ev : st.g.events) std::vector<Event>().swap(ev);
    for (auto& p2p : st.at_event.p2p) std::vector<int>().swap(p2p);
    for (auto& keys : st.at_event.collective) std::vector<RecordEvents::CollectiveKey>().swap(keys);
  };
  if (st.unsupported || !st.closed) {
    release();
    return std::nullopt;
  }
  // The run's links, in order: those of earlier segments are not found among this one's records.
  st.FinishSegment(matches.links);
  release();
  if (st.unsupported) return std::nullopt;
  const size_t n = st.g.ranks.size();
  size_t with_events = 0;
  for (const RankRunning& run : st.running) with_events += run.events > 0 ? 1 : 0;
  if (with_events == 0) return BlameModel{};
  BlameModel model = std::move(st.model);
  model.first = st.first;
  model.last = st.first;
  for (size_t ri = 0; ri < n; ++ri) {
    RankBlame& b = model.ranks[ri];
    const RankRunning& run = st.running[ri];
    b.events = static_cast<int>(run.events);
    if (run.events == 0) continue;
    if (run.first_judged >= run.events) {  // its MPI_Init alone
      b.first = run.front_exit;
      b.last = b.first;
    } else {
      b.last = run.busy_until;
    }
    b.own_work = run.own;
    b.busy = run.busy;
    model.last = std::max(model.last, b.last);
  }
  for (OwnWorkRangeFold& fold : st.own_work) model.own_work_ranges.push_back(fold.Take());
  const DurationNs span = model.span();
  model.job = std::max<DurationNs>(aligned.end - aligned.start, span);
  // The parts, cut as PartCuts cuts them: at shared instances (wall-clock tenths need the
  // events).
  std::vector<const SharedInstance*> shared;
  for (const SharedInstance& si : st.shared) {
    if (si.members == with_events) shared.push_back(&si);
  }
  if (shared.size() < 10 || span <= 0) return std::nullopt;
  std::vector<const SharedInstance*> cuts;
  size_t j = 0;
  for (int t = 1; t < 10; ++t) {
    const TimeNs target = model.first + span * t / 10;
    while (j + 1 < shared.size() && shared[j]->earliest < target) ++j;
    cuts.push_back(shared[j]);
  }
  for (size_t ri = 0; ri < n; ++ri) {
    RankBlame& b = model.ranks[ri];
    for (bool busy : {false, true}) {
      (busy ? b.busy_by_part : b.own_by_part) =
          st.running[ri].events == 0 ? std::vector<DurationNs>(10, 0) : PartsOfSums([&](size_t t) {
            return t == 9 ? (busy ? b.busy : b.own_work)
                          : (busy ? cuts[t]->busy : cuts[t]->own)[ri];
          });
    }
  }
  if (!AddTypicalAndJudged(options, &model)) return model;
  model.replayed_span = st.carry.last - st.first;
  model.broken_dependencies = st.carry.broken;
  const Judged judged(model, model.judged);
  for (size_t ri : judged.ranks) {
    // A candidate's what-if replays its every event with other own work: the whole graph.
    if (JudgeRank(aligned, judged, st.g.ranks[ri], ri, options, &model.ranks[ri])) {
      return std::nullopt;
    }
  }
  return model;
}

BlameModel BuildBlameModel(const Session& aligned, const SessionMatches& matches,
                           const BlameOptions& options, const WindowSplit* by_window) {
  if (by_window == nullptr) {
    return ModelOf(aligned, BuildGraph(aligned, matches), options, nullptr);
  }
  BlameEventFold fold(aligned);
  for (size_t w = 0; w < by_window->size(); ++w) fold.Add(UploadsOf(aligned, *by_window, w));
  return fold.Finish(aligned, matches, options);
}

}  // namespace rankscope
