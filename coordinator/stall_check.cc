#include "coordinator/stall_check.h"

#include <algorithm>
#include <utility>

#include "coordinator/completeness.h"
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

std::string Ranks(const std::vector<int>& sorted) {
  return (sorted.size() == 1 ? "rank " : "ranks ") + FormatRankList(sorted);
}

// What a holder was doing, as the end of a sentence about it.
std::string StateText(const HolderState& s) {
  if (s.silent) {
    return "whose agent has sent nothing for " + LiveSeconds(s.silent_for) +
           " (its node, its agent or the whole machine may be stuck or gone)";
  }
  std::string text = s.inside ? "which is inside " + CallText(*s.inside) + " itself"
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

std::vector<StallFinding> StallCheck::Check(TimeNs now, const std::vector<LiveTally>& tallies) {
  // By rank, ranks sorted: index i holds rank[i].
  std::vector<const LiveTally*> by;
  for (const LiveTally& t : tallies) {
    if (t.rank >= 0) by.push_back(&t);
  }
  std::sort(by.begin(), by.end(),
            [](const LiveTally* a, const LiveTally* b) { return a->rank < b->rank; });
  const size_t n = by.size();
  const auto index_of = [&](int rank) -> int {
    const auto it = std::lower_bound(by.begin(), by.end(), rank,
                                     [](const LiveTally* t, int r) { return t->rank < r; });
    return it != by.end() && (*it)->rank == rank ? static_cast<int>(it - by.begin()) : -1;
  };
  for (const LiveTally* t : by) {
    Mark& m = marks_[t->rank];
    if (m.through != t->through) m = Mark{t->through, now, t->cpu, t->proc_wall, t->main_thread};
  }

  // Who waits, and for whom. Collective instances are grouped: the members not inside one are
  // worked out once per instance (a stall of 16,384 ranks in one all-reduce is one group).
  // A rank that cannot progress (its main thread stopped, or its agent silent) is where waits
  // end, whatever call it is inside: it waits for nobody.
  std::vector<bool> stuck(n, false);
  for (size_t i = 0; i < n; ++i) {
    const LiveTally& t = *by[i];
    if (t.heard > 0 && now - t.heard >= options_.silent) {
      stuck[i] = true;
      continue;
    }
    stuck[i] = StoppedShare(t.main_thread, marks_[t.rank].main_thread) >= kStoppedShare;
  }
  // A call the rank has left an MPI call after (on its own clock) is over: its figures so far
  // trail its records by up to a second (they come with the heartbeat), and a rank continued
  // after a stop would otherwise still read as inside the call it was stopped in, closing a false
  // cycle.
  std::vector<bool> open_now(n, false);
  for (size_t i = 0; i < n; ++i) {
    const std::optional<LiveOpenCall>& open = by[i]->open;
    open_now[i] = open && by[i]->through <= open->enter;
  }
  std::vector<bool> waiting(n, false);
  std::map<std::pair<uint64_t, uint64_t>, std::vector<int>> inside;  // (comm, seq) -> indices
  std::map<uint64_t, std::vector<int>> on_comm;  // comm -> indices inside a collective on it
  for (size_t i = 0; i < n; ++i) {
    const std::optional<LiveOpenCall>& open = by[i]->open;
    if (!open_now[i]) continue;
    waiting[i] = !stuck[i] && now - open->since >= options_.after;
    if (open->collective) {
      inside[{open->comm_id, open->seq}].push_back(static_cast<int>(i));
      on_comm[open->comm_id].push_back(static_cast<int>(i));
    }
  }
  // Per instance any rank is inside (a healthy job's ranks are inside a few at a time).
  std::map<std::pair<uint64_t, uint64_t>, std::vector<int>> absent;
  std::vector<StallFinding> found;
  for (const auto& [key, members] : inside) {
    const LiveOpenCall& call = *by[static_cast<size_t>(members.front())]->open;
    const bool any_waiting =
        std::any_of(members.begin(), members.end(), [&](int i) { return waiting[size_t(i)]; });
    std::vector<int>& missing = absent[key];
    // Its members that cannot progress it hold the others inside it.
    for (int i : members) {
      if (stuck[size_t(i)]) missing.push_back(i);
    }
    // A member inside a later instance of the communicator has left this one (a collective
    // completes at different times on different ranks): only those behind are waited for.
    const std::pair<uint64_t, uint64_t> instance = key;  // clang 14 cannot capture a binding
    const auto ahead = [&](size_t i) {
      const std::optional<LiveOpenCall>& o = by[i]->open;
      return open_now[i] && o->collective && o->comm_id == instance.first &&
             o->seq > instance.second;
    };
    if (static_cast<size_t>(call.comm_size) == members.size()) {
      // Every member is inside it: the others wait for those that cannot progress it, if any;
      // else the collective itself does not complete.
      if (!any_waiting || !missing.empty() ||
          !std::all_of(members.begin(), members.end(), [&](int i) { return waiting[size_t(i)]; })) {
        continue;
      }
      if (!NewEpisode({int(StallKind::kTogether), -1, key.first, key.second})) {
        continue;
      }
      StallFinding f;
      f.kind = StallKind::kTogether;
      for (int i : members) f.waiting.push_back(by[size_t(i)]->rank);
      const int first = *std::min_element(members.begin(), members.end(), [&](int a, int b) {
        return by[size_t(a)]->open->since < by[size_t(b)]->open->since;
      });
      f.call = by[size_t(first)]->open;
      f.call_rank = by[size_t(first)]->rank;
      f.began = f.call->since;
      f.found = now;
      found.push_back(std::move(f));
    } else if (static_cast<size_t>(call.comm_size) == n) {
      // The whole job's communicator: the ranks not inside this instance nor past it.
      size_t k = 0;
      for (size_t i = 0; i < n; ++i) {
        if (k < members.size() && members[k] == static_cast<int>(i)) {
          ++k;
        } else if (!ahead(i)) {
          missing.push_back(static_cast<int>(i));
        }
      }
    } else {
      // A smaller communicator: its members seen inside an earlier instance of it.
      for (int i : on_comm[key.first]) {
        if (!SameInstance(*by[size_t(i)]->open, call) && !ahead(size_t(i))) missing.push_back(i);
      }
    }
  }

  // Follow the waits to the ranks at their ends (iteratively: a chain of point-to-point waits may
  // run through every rank). reach[i]: the holders rank i waits for, directly or through others.
  // The waits start at ranks inside one call for `after`, and go through every rank inside a
  // blocking call that can progress, however long it has been inside: the rank next to a stopped
  // one entered its wait later than the ranks that wait for it.
  std::vector<bool> follow(n, false);
  for (size_t i = 0; i < n; ++i) follow[i] = open_now[i] && !stuck[i];
  const auto out_of = [&](size_t i, std::vector<int>* out) {
    out->clear();
    const LiveOpenCall& open = *by[i]->open;
    if (open.collective) {
      const auto it = absent.find({open.comm_id, open.seq});
      if (it != absent.end()) *out = it->second;
    } else if (open.peer >= 0) {
      const int j = index_of(open.peer);
      if (j >= 0) out->push_back(j);
    }
  };
  enum class Visit : uint8_t { kNew, kOnStack, kDone };
  std::vector<Visit> visit(n, Visit::kNew);
  std::vector<std::vector<int>> reach(n);
  std::vector<std::vector<int>> edges(n);
  for (size_t s = 0; s < n; ++s) {
    if (!waiting[s] || visit[s] != Visit::kNew) continue;     // a later start reads reach[s]
    std::vector<std::pair<size_t, size_t>> stack = {{s, 0}};  // (index, next edge)
    visit[s] = Visit::kOnStack;
    out_of(s, &edges[s]);
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next < edges[v].size()) {
        const auto u = static_cast<size_t>(edges[v][next++]);
        if (!follow[u]) {
          AddHolder(&reach[v], static_cast<int>(u));
        } else if (visit[u] == Visit::kNew) {
          visit[u] = Visit::kOnStack;
          out_of(u, &edges[u]);
          stack.emplace_back(u, 0);
        } else if (visit[u] == Visit::kOnStack) {
          // A cycle: u ... v each waiting for the next, and v for u.
          std::vector<int> cycle;
          size_t k = stack.size();
          while (k > 0 && stack[k - 1].first != u) --k;
          for (size_t j = k - 1; j < stack.size(); ++j) cycle.push_back(by[stack[j].first]->rank);
          const int low = *std::min_element(cycle.begin(), cycle.end());
          if (NewEpisode({int(StallKind::kDeadlock), low, 0, 0})) {
            StallFinding f;
            f.kind = StallKind::kDeadlock;
            f.waiting = cycle;
            f.call = by[u]->open;
            f.call_rank = by[u]->rank;
            f.began = f.call->since;
            f.found = now;
            found.push_back(std::move(f));
          }
        } else {
          for (int h : reach[u]) AddHolder(&reach[v], h);
        }
        continue;
      }
      visit[v] = Visit::kDone;
      const size_t done = v;
      stack.pop_back();
      if (!stack.empty()) {
        for (int h : reach[done]) AddHolder(&reach[stack.back().first], h);
      }
    }
  }

  // One finding per holder: the ranks held up, and the call the longest-waiting of them is in.
  std::map<int, std::vector<int>> held;  // holder index -> waiting indices
  for (size_t i = 0; i < n; ++i) {
    if (!waiting[i]) continue;
    for (int h : reach[i]) held[h].push_back(static_cast<int>(i));
  }
  std::vector<StallFinding> holders;
  for (const auto& [h, waiters] : held) {
    const int first = *std::min_element(waiters.begin(), waiters.end(), [&](int a, int b) {
      return by[size_t(a)]->open->since < by[size_t(b)]->open->since;
    });
    const LiveOpenCall& call = *by[size_t(first)]->open;
    const int holder = by[size_t(h)]->rank;
    if (!NewEpisode({int(StallKind::kHeldUp), holder, 0, 0})) {
      continue;
    }
    StallFinding f;
    f.kind = StallKind::kHeldUp;
    f.holder = holder;
    f.state = Describe(now, *by[size_t(h)], open_now[size_t(h)]);
    for (int i : waiters) f.waiting.push_back(by[size_t(i)]->rank);
    f.call = call;
    f.call_rank = by[size_t(first)]->rank;
    f.began = call.since;
    f.found = now;
    holders.push_back(std::move(f));
  }
  std::stable_sort(holders.begin(), holders.end(),
                   [](const StallFinding& a, const StallFinding& b) {
                     return a.waiting.size() > b.waiting.size();
                   });
  for (StallFinding& f : holders) found.push_back(std::move(f));
  previous_ = std::move(current_);
  current_.clear();
  return found;
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
             std::to_string(f.call_rank) + " in " + CallText(*f.call) + "), " + StateText(f.state);
      break;
    case StallKind::kTogether:
      line = "all " + std::to_string(f.waiting.size()) + " ranks of a communicator have been " +
             "inside " + CallText(*f.call) + " for " + waited + ": the collective itself does " +
             "not complete (the network or the MPI transport, not a late rank)";
      break;
    case StallKind::kDeadlock: {
      line = "ranks ";
      for (size_t i = 0; i < f.waiting.size(); ++i) {
        line += std::to_string(f.waiting[i]) + " -> ";
      }
      line += std::to_string(f.waiting.front()) + " each wait for the next inside MPI (rank " +
              std::to_string(f.call_rank) + " in " + CallText(*f.call) + " for " + waited +
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
