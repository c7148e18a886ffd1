#include "coordinator/stall_check.h"

#include <algorithm>
#include <utility>

#include "coordinator/completeness.h"
#include "core/comm_id.h"
#include "core/records.h"

namespace rankscope {
namespace {

// How many ranks a holder list keeps per rank while following waits (the line names them).
constexpr size_t kMaxHolders = 16;

// A rank whose main thread was found stopped in at least this share of the samples since its
// last MPI exit cannot progress: waits end at it.
constexpr double kStoppedShare = 0.5;

// The share of the main thread's samples between `before` and `now` that found it stopped; 0
// without samples.
double StoppedShare(const MainThreadStates& now, const MainThreadStates& before) {
  const int32_t samples = now.samples - before.samples;
  return samples > 0 ? static_cast<double>(now.stopped - before.stopped) / samples : 0;
}

bool SameInstance(const LiveOpenCall& a, const LiveOpenCall& b) {
  return a.collective && b.collective && a.comm_id == b.comm_id && a.seq == b.seq;
}

void AddHolder(std::vector<int>* holders, int h) {
  if (holders->size() < kMaxHolders &&
      std::find(holders->begin(), holders->end(), h) == holders->end()) {
    holders->push_back(h);
  }
}

// "allreduce #41 on a communicator of 8 ranks", "a receive from rank 5", ...
std::string CallText(const LiveOpenCall& c) {
  if (c.collective) {
    return std::string(CollectiveOpName(static_cast<CollectiveOp>(c.op))) + " #" +
           std::to_string(c.seq) + " on a communicator of " + std::to_string(c.comm_size) +
           " ranks";
  }
  const std::string peer = c.peer >= 0 ? "rank " + std::to_string(c.peer) : "any rank";
  switch (static_cast<P2PKind>(c.op)) {
    case P2PKind::kRecv:
    case P2PKind::kIrecv:
    case P2PKind::kProbe:
      return "a receive from " + peer;
    default:
      return "a send to " + peer;
  }
}

// "`word` allreduce #41 ...", or for a loop of MPI_Test*/MPI_Iprobe "polling for a receive ...".
std::string InsideText(const LiveOpenCall& c, const char* word) {
  return (c.polling ? std::string("polling for ") : std::string(word) + " ") + CallText(c);
}

std::string Ranks(const std::vector<int>& sorted) {
  return (sorted.size() == 1 ? "rank " : "ranks ") + FormatRankList(sorted);
}

// What a holder was doing, as the end of a sentence about it.
std::string StateText(const HolderState& s) {
  if (s.silent) {
    return "whose agent has sent nothing for " + LiveSeconds(s.silent_for) +
           " (its node, its agent or the whole machine may be stuck or gone)";
  }
  std::string text = s.inside ? "which is " + InsideText(*s.inside, "inside") + " itself"
                              : "which has been outside MPI for " + LiveSeconds(s.quiet);
  const std::string over = " of the " + LiveSeconds(s.quiet) + " since its last MPI call";
  if (s.samples > 0 && s.stopped >= kStoppedShare) {
    return text + ": its main thread was stopped (a signal such as SIGSTOP, or a debugger) " +
           LivePercent(s.stopped) + over;
  }
  if (s.samples > 0 && s.blocked >= 0.5) {
    return text + ": its main thread was blocked in the kernel" +
           (s.blocked_in.empty() || s.blocked_in == "?" ? "" : " in " + s.blocked_in) + " " +
           LivePercent(s.blocked) + over + " (I/O, a lock, a sleep or a child process)";
  }
  if (s.samples > 0 && s.running >= 0.5) {
    text += ": its main thread was running " + LivePercent(s.running) + over;
    if (s.cpu_share >= 0) text += ", using " + LivePercent(s.cpu_share) + " of a CPU";
    return text + (s.inside ? "" : " (it computes, or loops in its own code)");
  }
  if (s.cpu_share >= 0) text += ": it used " + LivePercent(s.cpu_share) + " of a CPU" + over;
  return text;
}

}  // namespace

StallCheck::StallCheck(StallCheckOptions options) : options_(options) {}

HolderState StallCheck::Describe(TimeNs now, const LiveTally& t, bool open_now) const {
  HolderState s;
  s.silent_for = now - t.heard;
  s.silent = t.heard > 0 && s.silent_for >= options_.silent;
  if (open_now) s.inside = t.open;
  const auto it = marks_.find(t.rank);
  if (it == marks_.end()) return s;
  const Mark& m = it->second;
  s.quiet = now - m.at;
  const DurationNs wall = t.proc_wall - m.proc_wall;
  if (wall > 0) s.cpu_share = static_cast<double>(t.cpu - m.cpu) / static_cast<double>(wall);
  s.samples = t.main_thread.samples - m.main_thread.samples;
  if (s.samples <= 0) {
    s.samples = 0;
    return s;
  }
  const double n = s.samples;
  s.running = (t.main_thread.running - m.main_thread.running) / n;
  s.stopped = StoppedShare(t.main_thread, m.main_thread);
  s.blocked = (t.main_thread.blocked() - m.main_thread.blocked()) / n;
  int32_t most = 0;
  for (const auto& [where, count] : t.main_thread.blocked_in) {
    const auto before = m.main_thread.blocked_in.find(where);
    const int32_t d = count - (before == m.main_thread.blocked_in.end() ? 0 : before->second);
    if (d > most) {
      most = d;
      s.blocked_in = where;
    }
  }
  return s;
}

// This check's ranks, sorted by rank (index i holds by[i]->rank), and what each is doing.
struct StallCheck::View {
  TimeNs now = 0;
  std::vector<const LiveTally*> by;
  std::vector<bool> stuck;     // cannot progress (main thread stopped, or agent silent)
  std::vector<bool> open_now;  // its open call is current (not one it has made progress since)
  std::vector<bool> waiting;   // inside one call for `after` or longer, and not stuck
  uint64_t world_comm = 0;     // MPI_COMM_WORLD's id, for a job of this many ranks

  size_t size() const { return by.size(); }
  const LiveOpenCall& Open(int i) const { return *by[static_cast<size_t>(i)]->open; }
  int RankOf(int i) const { return by[static_cast<size_t>(i)]->rank; }
  int IndexOf(int rank) const {
    const auto it = std::lower_bound(by.begin(), by.end(), rank,
                                     [](const LiveTally* t, int r) { return t->rank < r; });
    return it != by.end() && (*it)->rank == rank ? static_cast<int>(it - by.begin()) : -1;
  }
  // The index among `ranks` that entered its open call first.
  int FirstIn(const std::vector<int>& ranks) const {
    return *std::min_element(ranks.begin(), ranks.end(),
                             [&](int a, int b) { return Open(a).since < Open(b).since; });
  }
  // A finding of `kind` on the ranks at `ranks` (indices), whose call is that of index `call`.
  StallFinding Finding(StallKind kind, const std::vector<int>& ranks, int call) const {
    StallFinding f;
    f.kind = kind;
    for (int i : ranks) f.waiting.push_back(RankOf(i));
    f.call = Open(call);
    f.call_rank = RankOf(call);
    f.began = f.call->since;
    f.found = now;
    return f;
  }
};

std::vector<StallFinding> StallCheck::Check(TimeNs now, const std::vector<LiveTally>& tallies) {
  const View v = Look(now, tallies);
  std::vector<StallFinding> found;
  const std::map<Instance, std::vector<int>> absent = Absent(v, &found);
  const std::vector<std::vector<int>> reach = FollowWaits(v, absent, &found);
  for (StallFinding& f : HolderFindings(v, reach)) found.push_back(std::move(f));
  previous_ = std::move(current_);
  current_.clear();
  return found;
}

StallCheck::View StallCheck::Look(TimeNs now, const std::vector<LiveTally>& tallies) {
  View v;
  v.now = now;
  for (const LiveTally& t : tallies) {
    if (t.rank >= 0) v.by.push_back(&t);
  }
  std::sort(v.by.begin(), v.by.end(),
            [](const LiveTally* a, const LiveTally* b) { return a->rank < b->rank; });
  for (const LiveTally* t : v.by) {
    Mark& m = marks_[t->rank];
    if (m.through != t->through) m = Mark{t->through, now, t->cpu, t->proc_wall, t->main_thread};
  }
  const size_t n = v.size();
  v.world_comm = WorldCommId(static_cast<int>(n));
  v.stuck.assign(n, false);
  v.open_now.assign(n, false);
  v.waiting.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const LiveTally& t = *v.by[i];
    // A rank that cannot progress (its main thread stopped, or its agent silent) is where waits
    // end, whatever call it is inside: it waits for nobody.
    v.stuck[i] = (t.heard > 0 && now - t.heard >= options_.silent) ||
                 StoppedShare(t.main_thread, marks_[t.rank].main_thread) >= kStoppedShare;
    // A call the rank has left an MPI call after (on its own clock) is over: its figures so far
    // trail its records by up to a second (they come with the heartbeat), and a rank continued
    // after a stop would otherwise still read as inside the call it was stopped in, closing a
    // false cycle.
    v.open_now[i] = t.open && t.through <= t.open->enter;
    v.waiting[i] = v.open_now[i] && !v.stuck[i] && now - t.open->since >= options_.after;
  }
  return v;
}

std::map<StallCheck::Instance, std::vector<int>> StallCheck::Absent(
    const View& v, std::vector<StallFinding>* found) {
  // Collective instances are grouped: the members not inside one are worked out once per
  // instance (a stall of 16,384 ranks in one all-reduce is one group).
  std::map<Instance, std::vector<int>> inside;   // indices inside each instance
  std::map<uint64_t, std::vector<int>> on_comm;  // comm -> indices inside a collective on it
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v.open_now[i] || !v.by[i]->open->collective) continue;
    const LiveOpenCall& open = *v.by[i]->open;
    inside[{open.comm_id, open.seq}].push_back(static_cast<int>(i));
    on_comm[open.comm_id].push_back(static_cast<int>(i));
  }
  const auto waiting = [&](int i) { return bool(v.waiting[size_t(i)]); };
  std::map<Instance, std::vector<int>> absent;
  for (const auto& [instance, members] : inside) {
    const LiveOpenCall& call = v.Open(members.front());
    std::vector<int>& missing = absent[instance];
    // Its members that cannot progress it hold the others inside it.
    for (int i : members) {
      if (v.stuck[size_t(i)]) missing.push_back(i);
    }
    // A member inside a later instance of the communicator has left this one (a collective
    // completes at different times on different ranks): only those behind are waited for.
    const Instance key = instance;  // clang 14 cannot capture a structured binding
    const auto ahead = [&](size_t i) {
      if (!v.open_now[i]) return false;
      const LiveOpenCall& o = *v.by[i]->open;
      return o.collective && o.comm_id == key.first && o.seq > key.second;
    };
    if (static_cast<size_t>(call.comm_size) == members.size()) {
      // Every member is inside it: the others wait for those that cannot progress it, if any;
      // else, once all of them have waited long, the collective itself does not complete.
      if (missing.empty() && std::all_of(members.begin(), members.end(), waiting) &&
          NewEpisode({int(StallKind::kTogether), -1, key.first, key.second})) {
        found->push_back(v.Finding(StallKind::kTogether, members, v.FirstIn(members)));
      }
    } else if (static_cast<size_t>(call.comm_size) == v.size()) {
      // The whole job's communicator: the ranks not inside this instance nor past it.
      size_t k = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        if (k < members.size() && members[k] == static_cast<int>(i)) {
          ++k;
        } else if (!ahead(i)) {
          missing.push_back(static_cast<int>(i));
        }
      }
    } else {
      // A smaller communicator: its members seen inside an earlier instance of it.
      for (int i : on_comm[key.first]) {
        if (!SameInstance(v.Open(i), call) && !ahead(size_t(i))) missing.push_back(i);
      }
    }
  }
  return absent;
}

std::vector<std::vector<int>> StallCheck::FollowWaits(
    const View& v, const std::map<Instance, std::vector<int>>& absent,
    std::vector<StallFinding>* found) {
  // Follow the waits to the ranks at their ends (iteratively: a chain of point-to-point waits may
  // run through every rank). reach[i]: the holders rank i waits for, directly or through others.
  // The waits start at ranks inside one call for `after`, and go through every rank inside a
  // blocking call that can progress, however long it has been inside: the rank next to a stopped
  // one entered its wait later than the ranks that wait for it.
  const size_t n = v.size();
  std::vector<bool> follow(n, false);
  for (size_t i = 0; i < n; ++i) follow[i] = v.open_now[i] && !v.stuck[i];
  // A receive from any rank of the whole job waits for whichever rank sends: where every rank but
  // a few is inside MPI itself (HPCC's RandomAccess polls MPI_Irecv(MPI_ANY_SOURCE) on every rank,
  // one stopped), those few are what it waits for; with many outside MPI, no one in particular.
  // Only ranks that made no MPI progress for `after` count (or cannot progress): one caught
  // between two calls is not what the others wait for (HPCC: rank 2 between receives while
  // rank 1 was stopped was named too).
  // A rank whose program has ended sends nothing more, and is no one's sender. Ranks that
  // cannot progress are kept where there are too many quiet ones to name.
  std::vector<int> ends;
  std::vector<int> quiet_ends;
  for (size_t i = 0; i < n; ++i) {
    if (follow[i] || v.by[i]->ended) continue;
    const auto mark = marks_.find(v.RankOf(static_cast<int>(i)));
    if (v.stuck[i]) {
      ends.push_back(static_cast<int>(i));
    } else if (mark != marks_.end() && v.now - mark->second.at >= options_.after &&
               quiet_ends.size() <= kMaxHolders) {
      quiet_ends.push_back(static_cast<int>(i));
    }
  }
  if (ends.size() + quiet_ends.size() <= kMaxHolders) {
    ends.insert(ends.end(), quiet_ends.begin(), quiet_ends.end());
    std::sort(ends.begin(), ends.end());
  } else if (ends.size() > kMaxHolders) {
    ends.clear();
  }
  const auto out_of = [&](size_t i, std::vector<int>* out) {
    out->clear();
    const LiveOpenCall& open = *v.by[i]->open;
    if (open.collective) {
      const auto it = absent.find({open.comm_id, open.seq});
      if (it != absent.end()) *out = it->second;
    } else if (open.peer >= 0) {
      const int j = v.IndexOf(open.peer);
      if (j >= 0) out->push_back(j);
    } else if (open.comm_id == v.world_comm) {
      *out = ends;
    }
  };
  enum class Visit : uint8_t { kNew, kOnStack, kDone };
  std::vector<Visit> visit(n, Visit::kNew);
  std::vector<std::vector<int>> reach(n);
  std::vector<std::vector<int>> edges(n);
  for (size_t s = 0; s < n; ++s) {
    if (!v.waiting[s] || visit[s] != Visit::kNew) continue;   // a later start reads reach[s]
    std::vector<std::pair<size_t, size_t>> stack = {{s, 0}};  // (index, next edge)
    visit[s] = Visit::kOnStack;
    out_of(s, &edges[s]);
    while (!stack.empty()) {
      auto& [at, next] = stack.back();
      if (next >= edges[at].size()) {
        visit[at] = Visit::kDone;
        const size_t done = at;
        stack.pop_back();
        if (!stack.empty()) {
          for (int h : reach[done]) AddHolder(&reach[stack.back().first], h);
        }
        continue;
      }
      const auto u = static_cast<size_t>(edges[at][next++]);
      if (!follow[u]) {
        AddHolder(&reach[at], static_cast<int>(u));
      } else if (visit[u] == Visit::kNew) {
        visit[u] = Visit::kOnStack;
        out_of(u, &edges[u]);
        stack.emplace_back(u, 0);
      } else if (visit[u] == Visit::kDone) {
        for (int h : reach[u]) AddHolder(&reach[at], h);
      } else {
        // A cycle: u ... at each waiting for the next, and `at` for u.
        std::vector<int> cycle;
        size_t k = stack.size();
        while (k > 0 && stack[k - 1].first != u) --k;
        for (size_t j = k - 1; j < stack.size(); ++j) {
          cycle.push_back(static_cast<int>(stack[j].first));
        }
        const int low = *std::min_element(cycle.begin(), cycle.end());  // the lowest rank
        if (NewEpisode({int(StallKind::kDeadlock), v.RankOf(low), 0, 0})) {
          found->push_back(v.Finding(StallKind::kDeadlock, cycle, static_cast<int>(u)));
        }
      }
    }
  }
  return reach;
}

std::vector<StallFinding> StallCheck::HolderFindings(const View& v,
                                                     const std::vector<std::vector<int>>& reach) {
  // One finding per holder: the ranks held up, and the call the longest-waiting of them is in;
  // those holding up the most ranks first.
  std::map<int, std::vector<int>> held;  // holder index -> waiting indices
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v.waiting[i]) continue;
    for (int h : reach[i]) held[h].push_back(static_cast<int>(i));
  }
  std::vector<StallFinding> holders;
  for (const auto& [h, waiters] : held) {
    const int holder = v.RankOf(h);
    if (!NewEpisode({int(StallKind::kHeldUp), holder, 0, 0})) continue;
    StallFinding f = v.Finding(StallKind::kHeldUp, waiters, v.FirstIn(waiters));
    f.holder = holder;
    f.state = Describe(v.now, *v.by[size_t(h)], v.open_now[size_t(h)]);
    holders.push_back(std::move(f));
  }
  std::stable_sort(holders.begin(), holders.end(),
                   [](const StallFinding& a, const StallFinding& b) {
                     return a.waiting.size() > b.waiting.size();
                   });
  return holders;
}

bool StallCheck::NewEpisode(const Key& key) {
  current_.insert(key);
  return !previous_.count(key);
}

std::string StallFindingLine(const StallFinding& f, TimeNs start) {
  const std::string waited = f.call ? LiveSeconds(f.found - f.began) : "";
  std::string line;
  switch (f.kind) {
    case StallKind::kHeldUp:
      line = Ranks(f.waiting) + (f.waiting.size() == 1 ? " has" : " have") + " waited " + waited +
             " inside MPI for rank " + std::to_string(f.holder) + " (rank " +
             std::to_string(f.call_rank) + " " + InsideText(*f.call, "in") + "), " +
             StateText(f.state);
      break;
    case StallKind::kTogether:
      line = "all " + std::to_string(f.waiting.size()) + " ranks of a communicator have been " +
             InsideText(*f.call, "inside") + " for " + waited + ": the collective itself does " +
             "not complete (the network or the MPI transport, not a late rank)";
      break;
    case StallKind::kDeadlock: {
      line = "ranks ";
      for (size_t i = 0; i < f.waiting.size(); ++i) {
        line += std::to_string(f.waiting[i]) + " -> ";
      }
      line += std::to_string(f.waiting.front()) + " each wait for the next inside MPI (rank " +
              std::to_string(f.call_rank) + " " + InsideText(*f.call, "in") + " for " + waited +
              "): a deadlock";
      break;
    }
  }
  line += ". Began about " + LiveClock(f.began - start) + ", seen " +
          LiveSeconds(f.found - f.began) + " later.";
  if (!f.next.empty()) line += " Its stacks: " + f.next;
  return line;
}

const char* StallKindName(StallKind kind) {
  switch (kind) {
    case StallKind::kHeldUp:
      return "held_up";
    case StallKind::kTogether:
      return "together";
    case StallKind::kDeadlock:
      return "deadlock";
  }
  return "held_up";
}

std::optional<StallKind> StallKindFromName(const std::string& name) {
  for (StallKind k : {StallKind::kHeldUp, StallKind::kTogether, StallKind::kDeadlock}) {
    if (name == StallKindName(k)) return k;
  }
  return std::nullopt;
}

}  // namespace rankscope
