#include "coordinator/analysis/straggler_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/range_timeline.h"
#include "coordinator/p2p_matcher.h"
#include "core/format.h"
#include "core/robust_stats.h"
#include "model/nccl/kernel_name.h"

namespace rankscope {
namespace {

// Who waited for whom in one complete instance.
struct InstanceWaits {
  int culprit = -1;               // member index the others waited for, -1 when nobody did
  DurationNs caused = 0;          // waits attributed to the culprit, summed over the others
  std::vector<DurationNs> waits;  // per member: time spent waiting inside the collective
  // Per member: enter minus the other members' median enter; at all-to-one operations minus the
  // root's enter (the root is the one that waits there; senders need not wait for anyone, so
  // their arrivals need not stay together).
  std::vector<DurationNs> lateness;
};

int RootIndex(const CollectiveInstance& inst) {
  for (size_t i = 0; i < inst.members.size(); ++i) {
    if (inst.members[i].comm_rank == inst.root_comm_rank) return static_cast<int>(i);
  }
  return -1;
}

// A member cannot have waited longer than it spent inside the call.
DurationNs Wait(const CollectiveParticipant& m, TimeNs until) {
  return std::clamp<DurationNs>(until - m.enter, 0, std::max<DurationNs>(m.exit - m.enter, 0));
}

InstanceWaits ComputeWaits(const CollectiveInstance& inst) {
  const size_t n = inst.members.size();
  InstanceWaits out;
  out.waits.assign(n, 0);
  out.lateness.assign(n, 0);
  std::vector<double> enters;
  size_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    enters.push_back(static_cast<double>(inst.members[i].enter));
    if (inst.members[i].enter > inst.members[last].enter) last = i;
  }
  // Lateness against the *other* members' median arrival: with two ranks, the median of all
  // would sit halfway and halve a 20 ms delay (seen with torchrun on 2xH200).
  std::vector<double> sorted = enters;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), enters[i]) - sorted.begin());
    const double others = n > 1 ? MedianWithout(sorted, at) : enters[i];
    out.lateness[i] = static_cast<DurationNs>(std::llround(enters[i] - others));
  }
  const TimeNs last_enter = inst.members[last].enter;
  switch (WaitPatternOf(inst.op)) {
    case WaitPattern::kAllToAll:
      out.culprit = static_cast<int>(last);
      for (size_t i = 0; i < n; ++i) {
        if (i != last) out.waits[i] = Wait(inst.members[i], last_enter);
      }
      break;
    case WaitPattern::kRootToAll: {
      // Late Broadcast: members that came before the root wait for it. Only a root that came
      // last is the culprit, so that "last" means the same for every operation and a rank's share
      // of culprit instances is 1/n by chance in a clean run.
      const int root = RootIndex(inst);
      if (root < 0) break;
      const CollectiveParticipant& r = inst.members[static_cast<size_t>(root)];
      for (size_t i = 0; i < n; ++i) {
        if (static_cast<int>(i) != root) out.waits[i] = Wait(inst.members[i], r.enter);
      }
      if (r.enter == last_enter) out.culprit = root;
      break;
    }
    case WaitPattern::kAllToRoot: {
      // Early Reduce: the root waits for the last sender; senders need not wait for anyone.
      const int root = RootIndex(inst);
      if (root < 0) break;
      for (size_t i = 0; i < n; ++i) {
        out.lateness[i] = inst.members[i].enter - inst.members[static_cast<size_t>(root)].enter;
      }
      if (static_cast<int>(last) == root) break;
      out.waits[static_cast<size_t>(root)] =
          Wait(inst.members[static_cast<size_t>(root)], last_enter);
      if (out.waits[static_cast<size_t>(root)] > 0) out.culprit = static_cast<int>(last);
      break;
    }
  }
  if (out.culprit >= 0) {
    for (size_t i = 0; i < n; ++i) out.caused += out.waits[i];
  }
  return out;
}

bool Usable(const CollectiveInstance& inst) {
  return inst.complete && !inst.mismatched && !inst.members.empty();
}

// One rank's view of the complete instances it belongs to, in time order.
struct RankArrivals {
  std::vector<size_t> instances;     // indices into the instance list
  std::vector<size_t> member_index;  // its position among each instance's members
  std::vector<bool> culprit;
  std::vector<DurationNs> lateness;
  DurationNs wait_caused = 0;
  DurationNs wait_suffered = 0;
};

struct ArrivalTable {
  std::vector<InstanceWaits> waits;  // per instance (empty entries for unusable ones)
  std::map<int, RankArrivals> ranks;
  TimeNs span_begin = std::numeric_limits<TimeNs>::max();
  TimeNs span_end = std::numeric_limits<TimeNs>::min();
  DurationNs span() const { return span_end > span_begin ? span_end - span_begin : 0; }
};

ArrivalTable BuildArrivalTable(const std::vector<CollectiveInstance>& instances) {
  ArrivalTable table;
  table.waits.resize(instances.size());
  for (size_t k = 0; k < instances.size(); ++k) {
    const CollectiveInstance& inst = instances[k];
    if (!Usable(inst)) continue;
    InstanceWaits& w = table.waits[k];
    w = ComputeWaits(inst);
    for (size_t i = 0; i < inst.members.size(); ++i) {
      const CollectiveParticipant& m = inst.members[i];
      table.span_begin = std::min(table.span_begin, m.enter);
      table.span_end = std::max(table.span_end, m.exit);
      RankArrivals& r = table.ranks[m.rank];
      r.instances.push_back(k);
      r.member_index.push_back(i);
      const bool is_culprit = w.culprit == static_cast<int>(i);
      r.culprit.push_back(is_culprit);
      r.lateness.push_back(w.lateness[i]);
      r.wait_suffered += w.waits[i];
      if (is_culprit) r.wait_caused += w.caused;
    }
  }
  return table;
}

// Per-rank indexes answering "what did this rank do between its previous collective and this
// one".
struct RankContext {
  explicit RankContext(const RankData* rank_data)
      : data(rank_data),
        // The agent's kernel time between collectives, where it came whole and exact: the gaps
        // are read from them and the kernel records are not needed.
        pieces(data->finished && data->kernel_pieces_late == 0 && !data->kernel_pieces.empty()
                   ? &data->kernel_pieces
                   : nullptr),
        timeline(&rank_data->ranges) {
    for (const CollectiveRecord& c : data->collectives) {
      by_key[{c.comm_id, c.seq}] = &c;
      exits.push_back(c.exit);
    }
    std::sort(exits.begin(), exits.end());
    mpi = PointToPointIntervals(*data);
    for (const GpuActivityRecord& g : pieces ? std::span<const GpuActivityRecord>() : data->gpu) {
      if (g.kind != GpuActivityKind::kKernel || g.end <= g.start) continue;
      if (DecodeNcclKernel(g.name).has_value()) continue;  // the collectives themselves
      kernels.push_back({g.start, g.end, &g.name});
      max_kernel = std::max(max_kernel, g.end - g.start);
    }
    std::sort(kernels.begin(), kernels.end(),
              [](const Kernel& a, const Kernel& b) { return a.start < b.start; });
  }

  // Time in point-to-point MPI calls within [begin, end).
  DurationNs MpiTimeIn(TimeNs begin, TimeNs end) const { return OverlapWith(mpi, begin, end); }

  // GPU time per kernel name within [begin, end) (kernels on concurrent streams both count), and
  // the total.
  DurationNs KernelTimeIn(TimeNs begin, TimeNs end,
                          std::map<std::string, DurationNs>* by_name) const {
    if (pieces) return KernelTimeFromPieces(*pieces, begin, end, by_name);
    DurationNs total = 0;
    auto it = std::partition_point(kernels.begin(), kernels.end(),
                                   [&](const Kernel& k) { return k.start < begin - max_kernel; });
    for (; it != kernels.end() && it->start < end; ++it) {
      const DurationNs in = std::min(it->end, end) - std::max(it->start, begin);
      if (in <= 0) continue;
      (*by_name)[*it->name] += in;
      total += in;
    }
    return total;
  }

  struct Kernel {
    TimeNs start, end;
    const std::string* name;
  };

  const RankData* data;
  const std::vector<KernelPiece>* pieces;  // null: read the kernels
  std::vector<Kernel> kernels;             // non-NCCL kernels by start
  DurationNs max_kernel = 0;
  RangeTimeline timeline;
  std::map<std::pair<uint64_t, uint64_t>, const CollectiveRecord*> by_key;
  std::vector<TimeNs> exits;  // of all its collectives, sorted
  Intervals mpi;              // merged point-to-point call intervals
};

// What one rank did in the gap before one collective call.
struct GapTime {
  WindowTime ranges;
  DurationNs mpi = 0;
  std::map<std::string, DurationNs> kernels;  // GPU time per kernel name (mangled)
  DurationNs kernel_total = 0;
};

// What one rank did in [begin, end): its ranges on thread tid (every thread when nullopt), its
// point-to-point MPI time and its GPU kernels.
GapTime GapBetween(const RankContext& ctx, TimeNs begin, TimeNs end, std::optional<uint32_t> tid) {
  GapTime gap;
  gap.ranges = ctx.timeline.TimeIn(begin, end, tid);
  gap.mpi = ctx.MpiTimeIn(begin, end);
  gap.kernel_total = ctx.KernelTimeIn(begin, end, &gap.kernels);
  return gap;
}

// The thread a call's gap reads ranges from: the calling thread when it has any ranges
// (has_ranges), else every thread.
std::optional<uint32_t> GapThread(const RankContext& ctx, uint64_t comm_id, uint64_t seq,
                                  const std::function<bool(uint32_t)>& has_ranges) {
  auto rec = ctx.by_key.find({comm_id, seq});
  if (rec != ctx.by_key.end() && has_ranges(rec->second->tid)) return rec->second->tid;
  return std::nullopt;
}

// The gap runs from the rank's latest collective exit before this call (on any communicator: the
// tightest "since it last synchronised") to the call's enter. Ranges are taken from the calling
// thread when that thread has any, else from all threads. nullopt for a rank's first call.
std::optional<GapTime> GapBefore(const RankContext& ctx, uint64_t comm_id, uint64_t seq,
                                 TimeNs enter) {
  auto it = std::lower_bound(ctx.exits.begin(), ctx.exits.end(), enter);
  if (it == ctx.exits.begin()) return std::nullopt;
  const auto tid =
      GapThread(ctx, comm_id, seq, [&](uint32_t t) { return ctx.timeline.HasThread(t); });
  return GapBetween(ctx, *std::prev(it), enter, tid);
}

// One call's share: its gap against the other members' median, per name and in total.
GapShare ShareOf(const GapTime& mine, const std::vector<GapTime>& theirs) {
  GapShare share;
  auto median_of_others = [&](auto field) {
    std::vector<double> v;
    for (const GapTime& g : theirs) v.push_back(static_cast<double>(field(g)));
    return Median(std::move(v));
  };
  // Per name (NVTX range, kernel): the late rank's time, and the others' median (0 for a rank
  // without that name).
  auto add_by_name = [&](auto map_of, std::vector<NamedGap>* out) {
    std::set<std::string> names;
    for (const auto& [name, ns] : map_of(mine)) names.insert(name);
    for (const GapTime& g : theirs) {
      for (const auto& [name, ns] : map_of(g)) names.insert(name);
    }
    auto time_of = [&](const GapTime& g, const std::string& name) {
      const auto& m = map_of(g);
      const auto f = m.find(name);
      return f == m.end() ? DurationNs{0} : f->second;
    };
    out->reserve(names.size());
    for (const std::string& name : names) {
      out->push_back({name, time_of(mine, name),
                      median_of_others([&](const GapTime& g) { return time_of(g, name); })});
    }
  };
  add_by_name(
      [](const GapTime& g) -> const auto& { return g.ranges.by_range; }, &share.by_range);
  add_by_name(
      [](const GapTime& g) -> const auto& { return g.kernels; }, &share.by_kernel);
  share.late_gap = mine.ranges.window;
  share.others_gap = median_of_others([](const GapTime& g) { return g.ranges.window; });
  share.late_untracked = mine.ranges.untracked();
  share.others_untracked = median_of_others([](const GapTime& g) { return g.ranges.untracked(); });
  share.late_mpi = mine.mpi;
  share.others_mpi = median_of_others([](const GapTime& g) { return g.mpi; });
  share.late_kernels = mine.kernel_total;
  share.others_kernels = median_of_others([](const GapTime& g) { return g.kernel_total; });
  return share;
}

// The members of a complete instance whose call may count as late (GapsBeforeLateCalls).
std::vector<size_t> MaybeLate(const CollectiveInstance& inst, const StragglerOptions& options) {
  std::vector<size_t> out;
  if (!Usable(inst)) return out;
  const InstanceWaits w = ComputeWaits(inst);
  const bool n_to_n = WaitPatternOf(inst.op) == WaitPattern::kAllToAll;
  for (size_t i = 0; i < inst.members.size(); ++i) {
    if (w.culprit == static_cast<int>(i) || (n_to_n && w.lateness[i] > options.min_lateness)) {
      out.push_back(i);
    }
  }
  return out;
}

// The shares of one instance's calls that may count as late, from each member's gap (nullopt:
// none, or the member is not in `gaps`), into *out.
void AddShares(const CollectiveInstance& inst, const std::map<int, std::optional<GapTime>>& gaps,
               const StragglerOptions& options, const std::set<int>* only, LateGaps* out) {
  for (size_t i : MaybeLate(inst, options)) {
    const int rank = inst.members[i].rank;
    if (only != nullptr && only->count(rank) == 0) continue;
    const auto mine = gaps.find(rank);
    if (mine == gaps.end() || !mine->second) continue;
    std::vector<GapTime> theirs;
    for (const CollectiveParticipant& m : inst.members) {
      if (m.rank == rank) continue;
      const auto gap = gaps.find(m.rank);
      if (gap != gaps.end() && gap->second) theirs.push_back(*gap->second);
    }
    if (theirs.empty()) continue;
    (*out)[{inst.comm_id, inst.seq, rank}] = ShareOf(*mine->second, theirs);
  }
}

// Gap statistics of a culprit rank against the median of the other members, summed over the
// instances where both sides had a gap.
struct CauseStats {
  int instances = 0;
  std::map<std::string, double> late_by_range;    // ns summed over instances
  std::map<std::string, double> others_by_range;  // per instance the others' median, summed
  double late_gap = 0, others_gap = 0;
  double late_untracked = 0, others_untracked = 0;
  double late_mpi = 0, others_mpi = 0;
  std::map<std::string, double> late_by_kernel;    // GPU time, ns summed over instances
  std::map<std::string, double> others_by_kernel;  // per instance the others' median, summed
  double late_kernels = 0, others_kernels = 0;
};

CauseStats CollectCause(const std::vector<CollectiveInstance>& instances,
                        const RankArrivals& arrivals, const std::vector<bool>& late, int rank,
                        const LateGaps& gaps) {
  CauseStats stats;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    if (!late[j]) continue;
    const CollectiveInstance& inst = instances[arrivals.instances[j]];
    const auto found = gaps.find({inst.comm_id, inst.seq, rank});
    if (found == gaps.end()) continue;
    const GapShare& g = found->second;
    ++stats.instances;
    for (const NamedGap& n : g.by_range) {
      stats.late_by_range[n.name] += static_cast<double>(n.late);
      stats.others_by_range[n.name] += n.others;
    }
    for (const NamedGap& n : g.by_kernel) {
      stats.late_by_kernel[n.name] += static_cast<double>(n.late);
      stats.others_by_kernel[n.name] += n.others;
    }
    stats.late_gap += static_cast<double>(g.late_gap);
    stats.others_gap += g.others_gap;
    stats.late_untracked += static_cast<double>(g.late_untracked);
    stats.others_untracked += g.others_untracked;
    stats.late_mpi += static_cast<double>(g.late_mpi);
    stats.others_mpi += g.others_mpi;
    stats.late_kernels += static_cast<double>(g.late_kernels);
    stats.others_kernels += g.others_kernels;
  }
  return stats;
}

DurationNs PerInstance(double total, int count) {
  return count > 0 ? static_cast<DurationNs>(std::llround(total / count)) : 0;
}

// The verdict on one rank, with the numbers behind it.
struct Verdict {
  int rank = -1;
  int instances = 0;
  int instances_last = 0;  // it was the culprit (the last arrival others waited for)
  int instances_late = 0;  // ... or, at N-to-N ops, came later than the threshold allows
  std::vector<bool> late;  // per entry of RankArrivals: one of the above
  double frac_late = 0;
  double frac_late_needed = 0;
  double chance_probability = 1;  // of this many late instances for a clean rank
  double frac_first_half = 0;
  double frac_second_half = 0;
  DurationNs median_lateness = 0;
  DurationNs p90_lateness = 0;
  // The lateness distribution over its late calls: p10, p25, p50, p75, p90, max.
  std::vector<DurationNs> lateness_quantiles;
  // The fraction of calls it was late at in each tenth of the run (persistence over steps).
  std::vector<double> frac_late_by_decile;
  DurationNs noise = 0;
  DurationNs noise_threshold = 0;
  DurationNs clock_uncertainty = 0;
  DurationNs others_wait = 0;
  int waiters = 0;      // distinct ranks that waited for it
  int other_ranks = 0;  // distinct ranks sharing instances with it
  double cost_fraction = 0;
  std::map<std::string, int> ops;
  struct CommShare {
    int late = 0;
    int last = 0;  // of those, it arrived last
    DurationNs others_wait = 0;
  };
  std::map<uint64_t, CommShare> comms;  // per communicator
  // Per Scalasca wait-state pattern of the operations (Wait at NxN, Late Broadcast, Early Reduce).
  struct PatternShare {
    int instances = 0;  // its instances of this pattern where it could hold the others up
    int late = 0;       // ... where it did
    int last = 0;       // ... of those, it was the culprit
    std::map<std::string, int> ops;
  };
  std::map<WaitPattern, PatternShare> patterns;
  bool passes_frac = false, passes_noise = false, passes_clock = false, passes_cost = false;
};

// P(X >= k) for X ~ Binomial(n, p), summed in log space so large n does not underflow.
double BinomialUpperTail(int k, int n, double p) {
  if (k <= 0) return 1.0;
  if (k > n || p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  double total = 0.0;
  for (int i = k; i <= n; ++i) {
    double log_term = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                      i * std::log(p) + (n - i) * std::log1p(-p);
    total += std::exp(log_term);
  }
  return std::min(total, 1.0);
}

// Marks the instances where the rank held the others up: it was the culprit, or (N-to-N ops) it
// came more than `threshold` after the median. The second case lets two stragglers that take
// turns at being last both be found, while in a clean run it almost never fires, so the chance
// share stays ~1/n.
int MarkLate(const std::vector<CollectiveInstance>& instances, const RankArrivals& arrivals,
             double threshold, std::vector<bool>* late) {
  late->assign(arrivals.instances.size(), false);
  int count = 0;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    const bool n_to_n =
        WaitPatternOf(instances[arrivals.instances[j]].op) == WaitPattern::kAllToAll;
    (*late)[j] =
        arrivals.culprit[j] || (n_to_n && static_cast<double>(arrivals.lateness[j]) > threshold);
    count += (*late)[j] ? 1 : 0;
  }
  return count;
}

// Whether a member can make the others wait at an operation of this pattern: anyone at N-to-N
// operations, only the root at one-to-all (Late Broadcast), only a sender at all-to-one (Early
// Reduce).
bool CanHoldUp(WaitPattern pattern, bool is_root) {
  switch (pattern) {
    case WaitPattern::kAllToAll:
      return true;
    case WaitPattern::kRootToAll:
      return is_root;
    case WaitPattern::kAllToRoot:
      return !is_root;
  }
  return true;
}

// Noise: how far the other ranks' arrivals scatter around the instance medians (a robust sigma).
// At all-to-one operations only a sender's arrival after the root's costs anything: how early a
// sender comes is no noise there (senders that never wait run ahead of the root by more every
// call), and the root is the reference.
double OthersNoise(const std::vector<CollectiveInstance>& instances, const ArrivalTable& table,
                   const RankArrivals& arrivals) {
  std::vector<double> other_lateness;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    const CollectiveInstance& inst = instances[arrivals.instances[j]];
    const bool all_to_root = WaitPatternOf(inst.op) == WaitPattern::kAllToRoot;
    const InstanceWaits& w = table.waits[arrivals.instances[j]];
    for (size_t i = 0; i < w.lateness.size(); ++i) {
      if (i == arrivals.member_index[j]) continue;
      if (!all_to_root) {
        other_lateness.push_back(static_cast<double>(w.lateness[i]));
      } else if (inst.members[i].comm_rank != inst.root_comm_rank) {
        other_lateness.push_back(static_cast<double>(std::max<DurationNs>(w.lateness[i], 0)));
      }
    }
  }
  return RobustSigma(std::move(other_lateness));
}

// Tallies the instances marked late (v->late): per op, pattern and communicator, the others' wait
// it caused and who waited. Returns its lateness at those instances; `others` gets every rank
// that shared an instance with it.
std::vector<DurationNs> TallyLate(const std::vector<CollectiveInstance>& instances,
                                  const ArrivalTable& table, int rank, const RankArrivals& arrivals,
                                  Verdict* verdict, std::set<int>* others_out) {
  Verdict& v = *verdict;
  std::vector<DurationNs> lateness;
  std::set<int>& others = *others_out;
  std::set<int> waiters;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    const CollectiveInstance& inst = instances[arrivals.instances[j]];
    for (const CollectiveParticipant& m : inst.members) {
      if (m.rank != rank) others.insert(m.rank);
    }
    const WaitPattern pattern = WaitPatternOf(inst.op);
    Verdict::PatternShare& share = v.patterns[pattern];
    if (CanHoldUp(pattern,
                  inst.members[arrivals.member_index[j]].comm_rank == inst.root_comm_rank)) {
      ++share.instances;
    }
    if (!v.late[j]) continue;
    lateness.push_back(arrivals.lateness[j]);
    const std::string op(CollectiveOpName(inst.op));
    ++v.ops[op];
    ++share.late;
    ++share.ops[op];
    if (arrivals.culprit[j]) ++share.last;
    Verdict::CommShare& comm = v.comms[inst.comm_id];
    ++comm.late;
    const DurationNs wait_before = v.others_wait;
    const InstanceWaits& w = table.waits[arrivals.instances[j]];
    if (arrivals.culprit[j]) {
      ++v.instances_last;
      ++comm.last;
      v.others_wait += w.caused;
      for (size_t i = 0; i < inst.members.size(); ++i) {
        if (w.waits[i] > 0) waiters.insert(inst.members[i].rank);
      }
    } else {
      // Late but not last: the others' waiting up to its arrival is on it.
      const TimeNs arrival = inst.members[arrivals.member_index[j]].enter;
      for (const CollectiveParticipant& m : inst.members) {
        if (m.rank == rank) continue;
        const DurationNs wait = Wait(m, arrival);
        v.others_wait += wait;
        if (wait > 0) waiters.insert(m.rank);
      }
    }
    comm.others_wait += v.others_wait - wait_before;
  }
  v.waiters = static_cast<int>(waiters.size());
  return lateness;
}

// Whether it was late all through the run: the share of late calls per half and per tenth.
void AddPersistence(const RankArrivals& arrivals, Verdict* verdict) {
  Verdict& v = *verdict;
  const size_t half = arrivals.instances.size() / 2;
  int first = 0, second = 0;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    if (v.late[j]) (j < half ? first : second) += 1;
  }
  v.frac_first_half = half > 0 ? first / static_cast<double>(half) : 0;
  v.frac_second_half = second / static_cast<double>(arrivals.instances.size() - half);

  for (int d = 0; d < 10; ++d) {
    const size_t from = arrivals.instances.size() * static_cast<size_t>(d) / 10;
    const size_t to = arrivals.instances.size() * static_cast<size_t>(d + 1) / 10;
    int late_here = 0;
    for (size_t j = from; j < to; ++j) late_here += v.late[j] ? 1 : 0;
    v.frac_late_by_decile.push_back(to > from ? late_here / static_cast<double>(to - from) : 0);
  }
}

// Its lateness over every call where its arrival could hold anyone up: at a reduce where it is the
// root, or a broadcast where it is not, its lateness says nothing (0 by definition at its own
// root). All its calls where there are none such.
std::vector<DurationNs> LatenessWhereItCouldHoldUp(const std::vector<CollectiveInstance>& instances,
                                                   const RankArrivals& arrivals) {
  std::vector<DurationNs> all_lateness;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    const CollectiveInstance& inst = instances[arrivals.instances[j]];
    const bool is_root = inst.members[arrivals.member_index[j]].comm_rank == inst.root_comm_rank;
    if (CanHoldUp(WaitPatternOf(inst.op), is_root)) all_lateness.push_back(arrivals.lateness[j]);
  }
  if (all_lateness.empty()) all_lateness.assign(arrivals.lateness.begin(), arrivals.lateness.end());
  return all_lateness;
}

Verdict Judge(const Session& session, const std::vector<CollectiveInstance>& instances,
              const ArrivalTable& table, int rank, const RankArrivals& arrivals,
              const StragglerOptions& options) {
  Verdict v;
  v.rank = rank;
  v.instances = static_cast<int>(arrivals.instances.size());
  if (v.instances < std::max(options.min_instances, 1)) return v;
  const double n = v.instances;

  // A clean rank is the culprit with probability ~1/size per instance; ask for a share well
  // above that, by frac_last_sigmas binomial standard deviations.
  double chance = 0;
  for (size_t k : arrivals.instances)
    chance += 1.0 / static_cast<double>(instances[k].members.size());
  const double p = chance / n;
  v.frac_late_needed =
      std::max(options.min_frac_last, p + options.frac_last_sigmas * std::sqrt(p * (1 - p) / n));

  // Cheap screen with the smallest possible threshold before the per-rank noise is computed.
  const auto min_lateness = static_cast<double>(options.min_lateness);
  if (MarkLate(instances, arrivals, min_lateness, &v.late) < v.frac_late_needed * n) return v;

  v.noise = static_cast<DurationNs>(std::llround(OthersNoise(instances, table, arrivals)));
  const double threshold = std::max(min_lateness, options.noise_k * static_cast<double>(v.noise));
  v.noise_threshold = static_cast<DurationNs>(std::llround(threshold));
  v.instances_late = MarkLate(instances, arrivals, threshold, &v.late);
  v.frac_late = v.instances_late / n;
  v.chance_probability = BinomialUpperTail(v.instances_late, v.instances, p);
  v.passes_frac =
      v.frac_late >= v.frac_late_needed && v.chance_probability <= options.max_chance_probability;

  std::set<int> others;
  const std::vector<DurationNs> lateness = TallyLate(instances, table, rank, arrivals, &v, &others);
  v.other_ranks = static_cast<int>(others.size());
  AddPersistence(arrivals, &v);

  v.median_lateness = MedianNs(lateness);
  v.p90_lateness = QuantileNs(lateness, 0.9);
  for (double q : {0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
    v.lateness_quantiles.push_back(QuantileNs(lateness, q));
  }

  v.clock_uncertainty = ClockUncertainty(session, rank, others);

  // Which instances count as late is a per-instance call, judged against the per-instance
  // noise (threshold). Whether the rank stands out overall is asked of its median lateness over
  // *all* its instances (not only the late ones, whose lateness is positive by selection): a
  // median of N instances has a standard error ~sigma/sqrt(N). Under CPU contention the others
  // scatter by milliseconds, yet a rank whose median over 52 calls is 14 ms late is no accident.
  // Only calls where its arrival could hold anyone up count.
  const std::vector<DurationNs> all_lateness = LatenessWhereItCouldHoldUp(instances, arrivals);
  const double overall_median = static_cast<double>(MedianNs(all_lateness));
  const double median_threshold =
      std::max(min_lateness, options.noise_k * static_cast<double>(v.noise) /
                                 std::sqrt(static_cast<double>(all_lateness.size())));
  v.passes_noise = !lateness.empty() && overall_median > median_threshold;
  // A clock error shifts every arrival of the rank alike, so it is weighed against the median
  // over all its calls (the late-only median is inflated by selection).
  v.passes_clock = overall_median > options.clock_k * static_cast<double>(v.clock_uncertainty);

  // The others' loss relative to their time: a wait summed over many ranks is compared with
  // that many spans.
  const double budget = static_cast<double>(table.span()) * std::max(v.other_ranks, 1);
  v.cost_fraction = budget > 0 ? static_cast<double>(v.others_wait) / budget : 0;
  v.passes_cost = v.cost_fraction >= options.min_cost_fraction;
  return v;
}

// Whether the rank is late all through the run or mainly in one half of it (it started late in
// the run, or recovered).
Lateness Persistence(const Verdict& v) {
  const double high = std::max(v.frac_first_half, v.frac_second_half);
  if (std::min(v.frac_first_half, v.frac_second_half) >= 0.75 * high) return Lateness::kThroughout;
  return v.frac_first_half > v.frac_second_half ? Lateness::kFirstHalf : Lateness::kSecondHalf;
}

// 1 - 0.5/margin: 0.5 at the threshold, approaching 1 as the margin grows.
double MarginFactor(double value, double threshold) {
  if (threshold <= 0) return 1.0;
  return std::clamp(1.0 - 0.5 * threshold / std::max(value, 1.0), 0.0, 1.0);
}

// Scalasca's name of the wait state at operations of this pattern, and its evidence key.
struct PatternWords {
  const char* name;  // "Late Broadcast"
  const char* key;   // "late_broadcast"
};

PatternWords WordsFor(WaitPattern pattern) {
  switch (pattern) {
    case WaitPattern::kAllToAll:
      return {"Wait at NxN", "wait_at_nxn"};
    case WaitPattern::kRootToAll:
      return {"Late Broadcast", "late_broadcast"};
    case WaitPattern::kAllToRoot:
      return {"Early Reduce", "early_reduce"};
  }
  return {"", ""};
}

const char* PatternName(WaitPattern pattern) { return WordsFor(pattern).name; }
const char* PatternKey(WaitPattern pattern) { return WordsFor(pattern).key; }

// The pattern in which the rank held the others up most often (on a tie, the first in
// WaitPattern's order).
WaitPattern DominantPattern(const Verdict& v) {
  WaitPattern best = WaitPattern::kAllToAll;
  int most = -1;
  for (const auto& [pattern, share] : v.patterns) {
    if (share.late > most) {
      best = pattern;
      most = share.late;
    }
  }
  return best;
}

std::string OpsLabel(const std::map<std::string, int>& ops) {
  if (ops.size() == 1) return ops.begin()->first;
  std::string detail;
  for (const auto& [op, count] : ops) {
    if (!detail.empty()) detail += ", ";
    detail += op + " " + std::to_string(count);
  }
  return "collective (" + detail + ")";
}

// Where an NCCL rank's lateness arises, over its late instances where it and at least one other
// member have launch times (CUPTI's launch records): on the host (it launched the collective
// late) or on the GPU (launched on time, its kernel queued behind earlier work on the stream).
struct LaunchSplit {
  int instances = 0;
  DurationNs launch_lateness = 0;  // median of: its launch minus the others' median launch
  DurationNs queue = 0;            // median of: its kernel start minus its launch
  DurationNs others_queue = 0;     // median of: the others' median (start - launch)
};

LaunchSplit SplitLaunch(const std::vector<CollectiveInstance>& instances,
                        const RankArrivals& arrivals, const std::vector<bool>& late) {
  std::vector<DurationNs> launch_lateness, queue, others_queue;
  for (size_t j = 0; j < arrivals.instances.size(); ++j) {
    if (!late[j]) continue;
    const CollectiveInstance& inst = instances[arrivals.instances[j]];
    const CollectiveParticipant& me = inst.members[arrivals.member_index[j]];
    if (me.launched == 0) continue;
    std::vector<double> launches, queues;
    for (size_t i = 0; i < inst.members.size(); ++i) {
      const CollectiveParticipant& m = inst.members[i];
      if (i == arrivals.member_index[j] || m.launched == 0) continue;
      launches.push_back(static_cast<double>(m.launched));
      queues.push_back(static_cast<double>(m.enter - m.launched));
    }
    if (launches.empty()) continue;
    launch_lateness.push_back(me.launched - static_cast<TimeNs>(std::llround(Median(launches))));
    queue.push_back(me.enter - me.launched);
    others_queue.push_back(static_cast<DurationNs>(std::llround(Median(queues))));
  }
  LaunchSplit s;
  s.instances = static_cast<int>(queue.size());
  s.launch_lateness = MedianNs(launch_lateness);
  s.queue = MedianNs(queue);
  s.others_queue = MedianNs(others_queue);
  return s;
}

// The names (ranges, kernels) where the late rank spent more than the others, with how much
// more, largest first.
std::vector<std::pair<double, std::string>> ExcessByName(
    const std::map<std::string, double>& late, const std::map<std::string, double>& others) {
  std::vector<std::pair<double, std::string>> out;
  for (const auto& [name, ns] : late) {
    const double diff = ns - others.at(name);
    if (diff > 0) out.emplace_back(diff, name);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

// What the late rank's gap before its late calls says about why it was late.
struct CauseVerdict {
  CauseKind kind = CauseKind::kUnexplained;  // gpu_queue, gpu_kernels, nvtx_range, mpi_p2p,
                                             // untracked_host_time, unexplained
  std::vector<std::pair<double, std::string>> excess;         // by NVTX range, largest first
  std::vector<std::pair<double, std::string>> kernel_excess;  // by kernel, largest first
  bool launch_known = false;  // NCCL launch times for most late instances
  bool gpu_side() const { return kind == CauseKind::kGpuQueue || kind == CauseKind::kGpuKernels; }
};

CauseVerdict ClassifyCause(const Verdict& v, const CauseStats& cause, const LaunchSplit& launch) {
  CauseVerdict out;
  // The cause: the range whose time before the call exceeds the other ranks' most, unless time
  // outside every range grew more. Below a quarter of the lateness neither explains it.
  const int ci = cause.instances;
  out.excess = ExcessByName(cause.late_by_range, cause.others_by_range);
  const double range_excess = out.excess.empty() ? 0.0 : out.excess.front().first;
  const double untracked_excess = cause.late_untracked - cause.others_untracked;
  const double mpi_excess = cause.late_mpi - cause.others_mpi;
  const double explains = 0.25 * static_cast<double>(v.median_lateness) * ci;
  // With launch times for most late instances: a collective launched on time whose kernel still
  // started late was held up on the GPU, whatever the host did before the launch.
  out.launch_known = launch.instances > 0 && 2 * launch.instances >= v.instances_late;
  const bool gpu_queue = out.launch_known && static_cast<double>(launch.launch_lateness) <
                                                 0.5 * static_cast<double>(v.median_lateness);
  // Without launch times: GPU kernel time before the call that grew by half the lateness or more
  // is the GPU's doing too (the window is the gap between collectives on the GPU's axis).
  out.kernel_excess = ExcessByName(cause.late_by_kernel, cause.others_by_kernel);
  const double kernels_excess = cause.late_kernels - cause.others_kernels;
  const bool gpu_kernels =
      !out.launch_known && ci > 0 &&
      kernels_excess >= std::max(0.5 * static_cast<double>(v.median_lateness) * ci, 1.0);
  if (gpu_queue) {
    out.kind = CauseKind::kGpuQueue;
  } else if (gpu_kernels) {
    out.kind = CauseKind::kGpuKernels;
  } else if (ci > 0 &&
             std::max({range_excess, untracked_excess, mpi_excess}) >= std::max(explains, 1.0)) {
    // On a tie the more specific account wins: a named range, then MPI calls (which may sit
    // inside a range or outside all of them), then untracked time.
    if (range_excess >= mpi_excess && range_excess >= untracked_excess) {
      out.kind = CauseKind::kNvtxRange;
    } else if (mpi_excess >= untracked_excess) {
      out.kind = CauseKind::kMpiP2p;
    } else {
      out.kind = CauseKind::kUntrackedHostTime;
    }
  }
  return out;
}

// The arrival figures behind a straggler: how often and how late it came, where the others waited
// for it (by wait-state pattern and by communicator), onto *f.
void AddArrivalEvidence(const Verdict& v, DurationNs lateness_threshold, Finding* f) {
  f->arrivals =
      LateArrivals{v.instances_last, v.instances, v.median_lateness, v.others_wait, v.waiters,
                   v.cost_fraction,  v.ops};
  ArrivalFigures a;
  a.instances_late = v.instances_late;
  a.frac_last = static_cast<double>(v.instances_last) / v.instances;
  a.frac_late = v.frac_late;
  a.frac_late_needed = v.frac_late_needed;
  a.chance_probability = v.chance_probability;
  a.frac_late_first_half = v.frac_first_half;
  a.frac_late_second_half = v.frac_second_half;
  a.persistence = Persistence(v);
  a.p90_lateness = v.p90_lateness;
  if (v.lateness_quantiles.size() == 6) a.lateness_quantiles = v.lateness_quantiles;
  // Tenths of the run need ten calls at least; fewer would read as "not late" in empty tenths.
  if (v.frac_late_by_decile.size() == 10 && v.instances >= 10) {
    a.frac_late_by_decile = v.frac_late_by_decile;
  }
  a.noise = v.noise;
  a.lateness_threshold = lateness_threshold;
  a.clock_uncertainty = v.clock_uncertainty;
  for (const auto& [pattern, share] : v.patterns) {
    if (share.late > 0) a.wait_states[PatternKey(pattern)] = share.late;
  }
  // Where the others waited for it. With several communicators (a tensor-parallel group per
  // node, data-parallel groups across nodes) first the one where it is the last to arrive (it
  // holds that group up itself), then the ones its lateness spreads to (its whole node is late
  // there, and the wait there is often the larger).
  std::vector<std::pair<uint64_t, Verdict::CommShare>> by_comm(v.comms.begin(), v.comms.end());
  std::stable_sort(by_comm.begin(), by_comm.end(), [](const auto& x, const auto& y) {
    return std::tie(x.second.last, x.second.others_wait) >
           std::tie(y.second.last, y.second.others_wait);
  });
  for (const auto& [comm, share] : by_comm) {
    a.communicators.push_back({FormatHex(comm), share.late, share.last, share.others_wait});
  }
  f->arrival_figures = std::move(a);
}

// What the rank did before the calls it was late at, against the others: per NVTX range, outside
// them, in MPI, in GPU kernels, and the NCCL launch split where known.
void AddCauseEvidence(const CauseStats& cause, const CauseVerdict& verdict,
                      const LaunchSplit& launch, Finding* f) {
  const int ci = cause.instances;
  const CauseKind cause_kind = verdict.kind;
  const auto& excess = verdict.excess;
  const auto& kernel_excess = verdict.kernel_excess;
  if (cause_kind == CauseKind::kNvtxRange) {
    const std::string& name = excess.front().second;
    f->cause_range = CauseRange{name, PerInstance(cause.late_by_range.at(name), ci),
                                PerInstance(cause.others_by_range.at(name), ci), true};
  }
  BeforeLateCalls b;
  b.instances = ci;
  for (size_t i = 0; i < excess.size() && i < 3; ++i) {
    const std::string& name = excess[i].second;
    b.ranges.push_back({name, PerInstance(cause.late_by_range.at(name), ci),
                        PerInstance(cause.others_by_range.at(name), ci), true});
  }
  b.gap = PerInstance(cause.late_gap, ci);
  b.others_gap = PerInstance(cause.others_gap, ci);
  b.untracked = PerInstance(cause.late_untracked, ci);
  b.others_untracked = PerInstance(cause.others_untracked, ci);
  b.mpi = PerInstance(cause.late_mpi, ci);
  b.others_mpi = PerInstance(cause.others_mpi, ci);
  b.kernels = PerInstance(cause.late_kernels, ci);
  b.others_kernels = PerInstance(cause.others_kernels, ci);
  if (verdict.launch_known) {
    b.launch = BeforeLateCalls::Launch{launch.instances, launch.launch_lateness, launch.queue,
                                       launch.others_queue};
  }
  f->before_late_calls = std::move(b);
  std::vector<KernelExcess> kernels;
  for (size_t i = 0; i < kernel_excess.size() && i < 3; ++i) {
    const std::string& name = kernel_excess[i].second;
    kernels.push_back({Demangle(name), PerInstance(cause.late_by_kernel.at(name), ci),
                       PerInstance(cause.others_by_kernel.at(name), ci)});
  }
  f->kernels = std::move(kernels);
}

// The summary's first sentence: how it held the others up, led by the wait-state pattern in which
// it held them up most, in Scalasca's terms.
std::string ArrivalProse(const Session& session, const Verdict& v) {
  const std::string label = RankLabel(session, v.rank);
  const WaitPattern dominant = DominantPattern(v);
  const Verdict::PatternShare& main_share = v.patterns.at(dominant);
  const std::string main_ops = OpsLabel(main_share.ops);
  std::string summary = label;
  switch (dominant) {
    case WaitPattern::kAllToAll:
      summary += " arrived last at " + std::to_string(main_share.last) + "/" +
                 std::to_string(main_share.instances) + " " + main_ops + " calls";
      if (main_share.late > main_share.last) {
        // Another straggler came even later in those: this one still held everyone else up.
        summary += " (and late at " + std::to_string(main_share.late - main_share.last) + " more)";
      }
      break;
    case WaitPattern::kRootToAll:
      summary += " held up " + std::to_string(main_share.late) + "/" +
                 std::to_string(main_share.instances) + " " + main_ops + " calls as their root";
      break;
    case WaitPattern::kAllToRoot:
      summary += " was the last sender into " + std::to_string(main_share.late) + "/" +
                 std::to_string(main_share.instances) + " " + main_ops + " calls";
      break;
  }
  for (const auto& [pattern, share] : v.patterns) {
    if (pattern == dominant || share.late == 0) continue;
    std::string names;
    for (const auto& [op, count] : share.ops) names += (names.empty() ? "" : ", ") + op;
    summary += " (and " + std::to_string(share.late) + " " + PatternName(pattern) +
               " calls: " + names + ")";
  }
  summary += std::string(", median ") + FormatDuration(v.median_lateness) + " late; the other " +
             std::to_string(v.waiters) + (v.waiters == 1 ? " rank" : " ranks") + " lost " +
             FormatDuration(v.others_wait) + " waiting (" + PatternName(dominant);
  if (dominant == WaitPattern::kRootToAll) {
    summary += ": they entered first and waited for the root";
  } else if (dominant == WaitPattern::kAllToRoot) {
    summary += ": the root entered first and waited for the last sender";
  }
  summary += ").";
  return summary;
}

// The summary's account of the cause (appended) and what to look for next.
struct CauseProse {
  std::string summary;
  std::string look_for;
};

CauseProse DescribeCause(const Verdict& v, const CauseStats& cause, const CauseVerdict& verdict,
                         const LaunchSplit& launch) {
  const int ci = cause.instances;
  const CauseKind cause_kind = verdict.kind;
  const auto& excess = verdict.excess;
  const auto& kernel_excess = verdict.kernel_excess;
  const bool launch_known = verdict.launch_known;
  const bool gpu_side = verdict.gpu_side();
  const std::string ops = OpsLabel(v.ops);
  std::string summary;
  std::string look_for;
  if (launch_known && !gpu_side) {
    summary += " It also launched those collectives " + FormatDuration(launch.launch_lateness) +
               " late on the host, so the delay is before the launch.";
  }
  if (cause_kind == CauseKind::kGpuQueue) {
    summary += " It launched those collectives on time (" + FormatDuration(launch.launch_lateness) +
               " after the others), but their kernels waited " + FormatDuration(launch.queue) +
               " on the GPU behind earlier work on the stream (other ranks: " +
               FormatDuration(launch.others_queue) +
               "): its GPU is slower, or is given more work, before each call.";
  } else if (cause_kind == CauseKind::kGpuKernels) {
    summary += " Its GPU ran longer before those calls: " +
               FormatDuration(PerInstance(cause.late_kernels, ci)) +
               " of kernels per call (other ranks: " +
               FormatDuration(PerInstance(cause.others_kernels, ci)) + ").";
  }
  if (gpu_side) {
    if (!kernel_excess.empty()) {
      const std::string& name = kernel_excess.front().second;
      std::string shown = Demangle(name);
      if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
      summary += " The most added GPU time is in kernel '" + shown +
                 "': " + FormatDuration(PerInstance(cause.late_by_kernel.at(name), ci)) +
                 " per call vs " +
                 FormatDuration(PerInstance(cause.others_by_kernel.at(name), ci)) + ".";
    }
    look_for = "the kernels rank " + std::to_string(v.rank) + " runs before each " + ops +
               " call, against another rank's: longer kernels mean a slower GPU (clocks, "
               "throttling), more kernels mean more work on this rank";
  } else if (cause_kind == CauseKind::kNvtxRange) {
    const std::string& name = excess.front().second;
    const DurationNs late = PerInstance(cause.late_by_range.at(name), ci);
    const DurationNs others = PerInstance(cause.others_by_range.at(name), ci);
    summary += " Before those calls it spent " + FormatDuration(late) +
               " per call in NVTX range '" + name + "' (other ranks: " + FormatDuration(others) +
               ").";
    look_for = "what rank " + std::to_string(v.rank) + " does inside NVTX range '" + name +
               "' before each " + ops + " call (" + FormatDuration(late) + " vs " +
               FormatDuration(others) + " on the other ranks): CPU work, OS runtime calls, waits";
  } else if (cause_kind == CauseKind::kMpiP2p) {
    summary += " Before those calls it spent " + FormatDuration(PerInstance(cause.late_mpi, ci)) +
               " per call in MPI point-to-point calls (other ranks: " +
               FormatDuration(PerInstance(cause.others_mpi, ci)) +
               "): it may itself be waiting for a peer.";
    look_for = "which peer rank " + std::to_string(v.rank) +
               " waits for in MPI point-to-point calls before each " + ops +
               " call: the root cause may be that peer (a wait chain)";
  } else if (cause_kind == CauseKind::kUntrackedHostTime) {
    summary += " Before those calls it spent " +
               FormatDuration(PerInstance(cause.late_untracked, ci)) +
               " per call outside any NVTX range (other ranks: " +
               FormatDuration(PerInstance(cause.others_untracked, ci)) + ").";
    look_for = "what rank " + std::to_string(v.rank) + " runs between its collectives outside " +
               "any NVTX range (host code, OS runtime calls, page faults)";
  } else {
    summary +=
        " Its time before those calls looks like the other ranks'; no NVTX range "
        "explains the delay.";
    look_for = "where rank " + std::to_string(v.rank) + " loses time before each " + ops +
               " call compared with the other ranks";
  }
  return {std::move(summary), std::move(look_for)};
}

Finding MakeFinding(const Session& session, const Verdict& v, const CauseStats& cause,
                    const CauseVerdict& verdict, const LaunchSplit& launch,
                    const StragglerOptions& options) {
  Finding f = FindingOnRank(session, FindingKind::kStraggler, v.rank);
  f.cost_ns = v.others_wait;
  f.severity =
      v.cost_fraction > options.critical_cost_fraction ? Severity::kCritical : Severity::kWarning;

  const DurationNs noise_threshold = v.noise_threshold;
  const auto clock_threshold =
      static_cast<DurationNs>(options.clock_k * static_cast<double>(v.clock_uncertainty));
  f.confidence = std::clamp(v.frac_late *
                                MarginFactor(static_cast<double>(v.median_lateness),
                                             static_cast<double>(noise_threshold)) *
                                MarginFactor(static_cast<double>(v.median_lateness),
                                             static_cast<double>(clock_threshold)),
                            0.0, 1.0);
  AddArrivalEvidence(v, std::max(noise_threshold, clock_threshold), &f);
  f.cause = verdict.kind;
  AddCauseEvidence(cause, verdict, launch, &f);

  CauseProse prose = DescribeCause(v, cause, verdict, launch);
  std::string summary = ArrivalProse(session, v) + prose.summary;
  // Host-side causes: what the rank's processes did, from /proc (a CPU-bound rank, an I/O-heavy
  // one, or one that waits).
  if (verdict.kind == CauseKind::kNvtxRange || verdict.kind == CauseKind::kUntrackedHostTime ||
      verdict.kind == CauseKind::kUnexplained) {
    summary += ProcessEvidence(session, v.rank,
                               static_cast<DurationNs>(v.median_lateness) * v.instances_late,
                               {"it is I/O-heavy", "it is CPU-bound on the host",
                                "it waits (sleep, network, a lock, child processes)"},
                               &f);
  }
  const Lateness persistence = Persistence(v);
  if (persistence == Lateness::kFirstHalf) {
    summary += " It happens mainly in the first half of the run.";
  }
  if (persistence == Lateness::kSecondHalf) {
    summary += " It happens mainly in the second half of the run.";
  }
  f.summary = summary;

  f.focus = std::move(prose.look_for);
  return f;
}

}  // namespace

LateGaps GapsBeforeLateCalls(const Session& aligned,
                             const std::vector<CollectiveInstance>& instances,
                             const StragglerOptions& options, const std::set<int>* only) {
  std::map<int, RankContext> contexts;
  for (const RankData& r : aligned.ranks) contexts.emplace(r.id.rank, &r);
  LateGaps out;
  for (const CollectiveInstance& inst : instances) {
    if (MaybeLate(inst, options).empty()) continue;
    std::map<int, std::optional<GapTime>> gaps;
    for (const CollectiveParticipant& m : inst.members) {
      const auto ctx = contexts.find(m.rank);
      if (ctx != contexts.end())
        gaps[m.rank] = GapBefore(ctx->second, inst.comm_id, inst.seq, m.enter);
    }
    AddShares(inst, gaps, options, only, &out);
  }
  return out;
}

namespace {

void Add(const WindowTime& from, WindowTime* to) {
  to->window += from.window;
  to->covered += from.covered;
  for (const auto& [name, ns] : from.by_range) to->by_range[name] += ns;
}

void Add(const GapTime& from, GapTime* to) {
  Add(from.ranges, &to->ranges);
  to->mpi += from.mpi;
  for (const auto& [name, ns] : from.kernels) to->kernels[name] += ns;
  to->kernel_total += from.kernel_total;
}

// Takes `part` (a stretch inside *whole) out of *whole; names left without time go.
void Subtract(const GapTime& part, GapTime* whole) {
  auto take = [](const std::map<std::string, DurationNs>& p, std::map<std::string, DurationNs>* w) {
    for (const auto& [name, ns] : p) {
      if (((*w)[name] -= ns) == 0) w->erase(name);
    }
  };
  whole->ranges.window -= part.ranges.window;
  whole->ranges.covered -= part.ranges.covered;
  take(part.ranges.by_range, &whole->ranges.by_range);
  whole->mpi -= part.mpi;
  take(part.kernels, &whole->kernels);
  whole->kernel_total -= part.kernel_total;
}

// One rank's records as the gaps of a window read them: those held from earlier windows, then
// the window's upload (what ended in it, GPU activity begun in it, and the ranges and
// point-to-point calls open at its cut, cut short there). The collectives the window adds begin
// at `first_new`.
struct GapRecords {
  RankData data;
  size_t first_new = 0;
};

GapRecords WindowGapRecords(RankData held, const RankUpload& upload) {
  GapRecords out{std::move(held), 0};
  RankData& d = out.data;
  d.id = upload.records.id;
  out.first_new = d.collectives.size();
  const RankData& in = upload.records;
  d.collectives.insert(d.collectives.end(), in.collectives.begin(), in.collectives.end());
  d.p2p.insert(d.p2p.end(), in.p2p.begin(), in.p2p.end());
  d.gpu.insert(d.gpu.end(), in.gpu.begin(), in.gpu.end());
  d.ranges.insert(d.ranges.end(), in.ranges.begin(), in.ranges.end());
  d.p2p.insert(d.p2p.end(), upload.open_p2p.begin(), upload.open_p2p.end());
  d.ranges.insert(d.ranges.end(), upload.open_ranges.begin(), upload.open_ranges.end());
  return out;
}

// What the next window's gaps may read of `records` (the window's, without the open ones cut
// short at the cut): what ends after `from`, the earliest of the cut and the enters of the
// collectives in progress at it (a gap begun before the window is carried from its latest exit;
// a call entered before the window's start reads back to its enter).
RankData HeldForNextWindow(RankData records, const RankUpload& upload) {
  records.p2p.resize(records.p2p.size() - upload.open_p2p.size());
  records.ranges.resize(records.ranges.size() - upload.open_ranges.size());
  TimeNs from = upload.cut;
  for (const CollectiveRecord& c : upload.open_collectives) from = std::min(from, c.enter);
  std::erase_if(records.collectives, [&](const CollectiveRecord& c) { return c.exit <= from; });
  std::erase_if(records.p2p, [&](const P2PRecord& p) { return p.exit <= from; });
  std::erase_if(records.gpu, [&](const GpuActivityRecord& g) { return g.end <= from; });
  std::erase_if(records.ranges, [&](const RangeRecord& r) { return r.end <= from; });
  return records;
}

size_t RecordCount(const RankData& r) {
  return r.collectives.size() + r.p2p.size() + r.gpu.size() + r.ranges.size();
}

// What one rank did from its latest collective exit up to the start of the next window: gaps
// that begin before a window are this plus their part inside it (every figure is a sum over
// time, so the parts add up exactly).
struct GapCarry {
  std::optional<TimeNs> since;               // its latest collective exit so far
  GapTime all;                               // since it, ranges on every thread
  std::map<uint32_t, WindowTime> by_thread;  // ... ranges on one thread (absent: none there)
  std::set<uint32_t> range_threads;          // threads with ranges so far
  // The agent's kernel pieces so far: where exact, a gap's kernel time is read from them whole
  // (a gap's parts at a cut are not piece ends).
  std::vector<KernelPiece> pieces;
  bool pieces_exact = false;

  WindowTime OnThread(std::optional<uint32_t> tid) const {
    if (!tid) return all.ranges;
    const auto it = by_thread.find(*tid);
    if (it != by_thread.end()) return it->second;
    WindowTime untracked;
    untracked.window = all.ranges.window;
    return untracked;
  }

  // Carries [from, to) of the window read by ctx, from `from` (a fresh start at an exit).
  void Extend(const RankContext& ctx, TimeNs from, TimeNs to, bool fresh) {
    if (fresh) {
      by_thread.clear();
      all = GapTime{};
    }
    for (uint32_t t : range_threads) {
      if (!by_thread.count(t)) by_thread[t] = OnThread(t);
      Add(ctx.timeline.TimeIn(from, to, t), &by_thread[t]);
    }
    Add(GapBetween(ctx, from, to, std::nullopt), &all);
  }
};

}  // namespace

struct LateGapFold::State {
  State(const StragglerOptions& o, std::optional<std::set<int>> of)
      : options(o), only(std::move(of)) {}
  StragglerOptions options;
  std::optional<std::set<int>> only;
  CollectiveFold fold;
  // The gaps of calls whose instance is still open.
  std::map<std::pair<uint64_t, uint64_t>, std::map<int, std::optional<GapTime>>> pending;
  std::vector<GapCarry> carry;
  std::vector<RankData> held;
  std::vector<TimeNs> previous_cut;
  size_t peak = 0;
  LateGaps out;
};

LateGapFold::LateGapFold(const StragglerOptions& options, std::optional<std::set<int>> only)
    : state_(std::make_unique<State>(options, std::move(only))) {}
LateGapFold::~LateGapFold() = default;

void LateGapFold::Add(const std::vector<RankUpload>& uploads, bool last) {
  State& s = *state_;
  const size_t n = uploads.size();
  if (s.carry.empty()) {
    s.carry.resize(n);
    s.held.resize(n);
    s.previous_cut.assign(n, std::numeric_limits<TimeNs>::min());
  }
  size_t held_now = 0;
  for (size_t r = 0; r < n; ++r) {
    const RankUpload& upload = uploads[r];
    const TimeNs from = s.previous_cut[r];
    const TimeNs to = s.previous_cut[r] = upload.cut;
    GapRecords window = WindowGapRecords(std::move(s.held[r]), upload);
    const RankData& records = window.data;
    const RankContext ctx(&records);
    GapCarry& c = s.carry[r];
    for (const RangeRecord& range : records.ranges) c.range_threads.insert(range.tid);
    c.pieces.insert(c.pieces.end(), upload.kernel_pieces.begin(), upload.kernel_pieces.end());
    c.pieces_exact = upload.kernel_pieces_exact;
    // As RankContext reads a whole run's: from the pieces where the agent sent them exact.
    auto kernels_from_pieces = [&](TimeNs begin, TimeNs end, GapTime* gap) {
      if (!c.pieces_exact || c.pieces.empty()) return;
      gap->kernels.clear();
      gap->kernel_total = KernelTimeFromPieces(c.pieces, begin, end, &gap->kernels);
    };
    auto has_ranges = [&](uint32_t t) { return c.range_threads.count(t) > 0; };
    for (size_t k = window.first_new; k < records.collectives.size(); ++k) {
      const CollectiveRecord& call = records.collectives[k];
      s.fold.Add(upload.records.id.rank, call);
      std::optional<GapTime>& gap = s.pending[{call.comm_id, call.seq}][upload.records.id.rank];
      const auto tid = GapThread(ctx, call.comm_id, call.seq, has_ranges);
      auto it = std::lower_bound(ctx.exits.begin(), ctx.exits.end(), call.enter);
      if (it != ctx.exits.begin()) {
        gap = GapBetween(ctx, *std::prev(it), call.enter, tid);
        kernels_from_pieces(*std::prev(it), call.enter, &*gap);
      } else if (c.since && *c.since < call.enter) {
        // From its latest exit before the window, carried to the window's start, to the call:
        // plus the part inside the window, or less the part after its enter.
        gap = c.all;
        gap->ranges = c.OnThread(tid);
        if (call.enter >= from) {
          rankscope::Add(GapBetween(ctx, from, call.enter, tid), &*gap);
        } else {
          Subtract(GapBetween(ctx, call.enter, from, tid), &*gap);
        }
        kernels_from_pieces(*c.since, call.enter, &*gap);
      }
    }
    if (last) continue;
    if (!ctx.exits.empty()) {
      c.since = ctx.exits.back();
      c.Extend(ctx, *c.since, to, true);
    } else if (c.since) {
      c.Extend(ctx, from, to, false);
    }
    s.held[r] = HeldForNextWindow(std::move(window.data), upload);
    held_now += RecordCount(s.held[r]);
  }
  s.peak = std::max(s.peak, held_now);
  for (const CollectiveInstance& inst : s.fold.TakeFull()) {
    auto gaps = s.pending.find({inst.comm_id, inst.seq});
    if (gaps == s.pending.end()) continue;
    AddShares(inst, gaps->second, s.options, s.only ? &*s.only : nullptr, &s.out);
    s.pending.erase(gaps);
  }
  if (!last) return;
  for (const CollectiveInstance& inst : s.fold.Finish()) s.pending.erase({inst.comm_id, inst.seq});
}

LateGaps LateGapFold::Take() { return std::move(state_->out); }

size_t LateGapFold::peak_held() const { return state_->peak; }

LateGaps GapsBeforeLateCallsByWindow(const Session& aligned, const WindowSplit& split,
                                     const StragglerOptions& options, size_t* peak_held) {
  LateGapFold fold(options);
  for (size_t w = 0; w < split.size(); ++w) {
    fold.Add(UploadsOf(aligned, split, w), w + 1 == split.size());
  }
  if (peak_held != nullptr) *peak_held = fold.peak_held();
  return fold.Take();
}

std::vector<RankArrivalStats> DescribeArrivals(const std::vector<CollectiveInstance>& instances) {
  const ArrivalTable table = BuildArrivalTable(instances);
  std::vector<RankArrivalStats> out;
  for (const auto& [rank, arrivals] : table.ranks) {
    RankArrivalStats s;
    s.rank = rank;
    s.instances = static_cast<int>(arrivals.instances.size());
    s.instances_last =
        static_cast<int>(std::count(arrivals.culprit.begin(), arrivals.culprit.end(), true));
    s.median_lateness_ns = MedianNs(arrivals.lateness);
    s.wait_caused_ns = arrivals.wait_caused;
    s.wait_suffered_ns = arrivals.wait_suffered;
    out.push_back(s);
  }
  return out;
}

std::vector<Finding> FindStragglers(const Session& session,
                                    const std::vector<CollectiveInstance>& instances,
                                    const StragglerOptions& options,
                                    std::vector<std::string>* notes) {
  return FindStragglers(
      session, instances,
      [&](const std::set<int>& ranks) {
        return GapsBeforeLateCalls(session, instances, options, &ranks);
      },
      options, notes);
}

std::vector<Finding> FindStragglers(
    const Session& session, const std::vector<CollectiveInstance>& instances,
    const std::function<LateGaps(const std::set<int>& ranks)>& gaps_of,
    const StragglerOptions& options, std::vector<std::string>* notes) {
  const ArrivalTable table = BuildArrivalTable(instances);
  std::vector<Verdict> flagged;
  for (const auto& [rank, arrivals] : table.ranks) {
    const Verdict v = Judge(session, instances, table, rank, arrivals, options);
    if (!v.passes_frac || !v.passes_noise || !v.passes_cost) continue;
    if (v.passes_clock) {
      flagged.push_back(v);
    } else if (notes != nullptr) {
      notes->push_back(RankLabel(session, rank) + " was late at " +
                       std::to_string(v.instances_late) + "/" + std::to_string(v.instances) +
                       " collective calls, median " + FormatDuration(v.median_lateness) +
                       " late, but clock alignment is only good to " +
                       FormatDuration(v.clock_uncertainty) +
                       ", so it is not reported as a straggler; a tighter clock sync (lower "
                       "round-trip time to the coordinator) would decide it.");
    }
  }
  if (flagged.empty()) return {};

  std::set<int> flagged_ranks;
  for (const Verdict& v : flagged) flagged_ranks.insert(v.rank);
  const LateGaps gaps = gaps_of(flagged_ranks);
  std::vector<Finding> findings;
  for (const Verdict& v : flagged) {
    const RankArrivals& arrivals = table.ranks.at(v.rank);
    const CauseStats cause = CollectCause(instances, arrivals, v.late, v.rank, gaps);
    const LaunchSplit launch = SplitLaunch(instances, arrivals, v.late);
    const CauseVerdict verdict = ClassifyCause(v, cause, launch);
    // Late with nothing to show for it: its time between calls is the others' (it did not work
    // or wait longer), so it arrived late only because it left the previous collective late, in
    // the collective's own release order (MPI progress, ranks sharing cores). Not its doing.
    const int ci = cause.instances;
    if (verdict.kind == CauseKind::kUnexplained && ci > 0 &&
        cause.late_gap - cause.others_gap < 0.25 * static_cast<double>(v.median_lateness) * ci) {
      if (notes != nullptr) {
        notes->push_back(RankLabel(session, v.rank) + " arrived late at " +
                         std::to_string(v.instances_late) + "/" + std::to_string(v.instances) +
                         " collective calls, median " + FormatDuration(v.median_lateness) +
                         ", but its time between calls matches the other ranks' (" +
                         FormatDuration(PerInstance(cause.late_gap, ci)) + " vs " +
                         FormatDuration(PerInstance(cause.others_gap, ci)) +
                         "): it left each previous collective late (release order, CPU sharing), "
                         "so it is not reported as a straggler.");
      }
      continue;
    }
    findings.push_back(MakeFinding(session, v, cause, verdict, launch, options));
  }
  return findings;
}

}  // namespace rankscope
