#include "coordinator/analysis/straggler_blame.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/off_cpu.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

bool NamesRankAlone(const Finding& f, int rank) {
  return f.ranks.size() == 1 && f.ranks.front() == rank &&
         (f.kind == FindingKind::kStraggler || f.kind == FindingKind::kLateSender ||
          f.kind == FindingKind::kLateReceiver || f.kind == FindingKind::kDataloaderSkew);
}

// Own work per NVTX range name (innermost range; "" for time outside every range), summed over
// the rank's own-work intervals.
std::map<std::string, DurationNs> OwnWorkByRange(const RankData& rank, TimeNs from) {
  std::map<std::string, DurationNs> out;
  const RangeTimeline timeline(&rank.ranges);
  for (const auto& [begin, end] : OwnWorkIntervals(rank, from)) {
    const WindowTime w = timeline.TimeIn(begin, end, std::nullopt);
    for (const auto& [name, ns] : w.by_range) out[name] += ns;
    out[""] += std::max<DurationNs>(w.untracked(), 0);
  }
  return out;
}

// The NVTX range in which the rank's own work grew most against the other ranks' median, when it
// explains at least a quarter of its excess: (name, its time, the others' median).
struct RangeExcess {
  std::string name;
  DurationNs mine = 0;
  DurationNs others = 0;
};

std::optional<RangeExcess> ExcessRange(const Session& s, const BlameModel& blame, int rank,
                                       DurationNs excess) {
  // Per session rank index: read by the model (built window by window), else from the session.
  auto has_ranges = [&](size_t i) {
    return blame.own_work_ranges.empty() ? !s.ranks[i].ranges.empty()
                                         : blame.own_work_ranges[i].has_ranges;
  };
  auto own_work_of = [&](size_t i) {
    return blame.own_work_ranges.empty() ? OwnWorkByRange(s.ranks[i], blame.first)
                                         : blame.own_work_ranges[i].by_range;
  };
  size_t self = s.ranks.size();
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (s.ranks[i].id.rank == rank) self = i;
  }
  if (self == s.ranks.size() || !has_ranges(self)) return std::nullopt;
  const std::map<std::string, DurationNs> mine = own_work_of(self);
  // The others' median per name, over at most 32 of them (enough for a median).
  std::map<std::string, std::vector<DurationNs>> others;
  int taken = 0;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (i == self || !has_ranges(i)) continue;
    if (++taken > 32) break;
    const std::map<std::string, DurationNs> theirs = own_work_of(i);
    for (const auto& [name, ns] : mine) {
      auto it = theirs.find(name);
      others[name].push_back(it == theirs.end() ? 0 : it->second);
    }
  }
  if (taken == 0) return std::nullopt;
  std::optional<RangeExcess> best;
  DurationNs best_excess = 0;
  for (const auto& [name, ns] : mine) {
    if (name.empty()) continue;
    const DurationNs median = MedianNs(others[name]);
    if (ns - median > best_excess) {
      best_excess = ns - median;
      best = RangeExcess{name, ns, median};
    }
  }
  if (!best || best_excess < excess / 4) return std::nullopt;
  return best;
}

// The median over the other ranks with /proc figures of one figure of theirs.
template <typename Figure>
double OthersMedian(const Session& s, int rank, Figure figure) {
  std::vector<double> v;
  for (const RankData& r : s.ranks) {
    if (r.id.rank != rank && r.proc) v.push_back(figure(*r.proc));
  }
  return Median(std::move(v));
}

double Wall(const ProcessTreeStats& p) { return static_cast<double>(p.sampled_wall_ns); }

// Why a rank was slow as seen from outside the program, and how clearly.
struct OutsideView {
  std::string sentence;  // empty when nothing seen from outside explains it
  double margin = 0;     // ThresholdMargin of the cause's figure; 0 without a cause
};

// Whether the rank was starved of CPU from outside the program, from the agents' scheduler and
// cgroup figures: runnable but waiting for a CPU (run delay) well beyond the other ranks and
// enough to explain a good part of its extra own work. Throttled by its cgroup's CPU quota, or
// sharing its CPU with something else. Sets f's cause (kCpuStarved) and cpu_starvation (and
// quota_cgroup when a quota starved it) and returns the sentence with StarvationMargin; empty
// when it was not starved.
OutsideView StarvedOfCpu(const Session& s, int rank, DurationNs excess, Finding* f) {
  const RankData* self = s.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->sched_unreadable) return {};
  const ProcessTreeStats& p = *self->proc;
  if (p.sampled_wall_ns <= 0) return {};
  const double others_delay =
      OthersMedian(s, rank, [](const ProcessTreeStats& o) { return double(o.run_delay_ns); });
  const double others_delay_per_wall = OthersMedian(s, rank, [](const ProcessTreeStats& o) {
    return o.sampled_wall_ns > 0 ? double(o.run_delay_ns) / Wall(o) : 0.0;
  });
  const double delay = static_cast<double>(p.run_delay_ns);
  const double delay_per_wall = delay / Wall(p);
  // Ranks sharing cores (oversubscribed) all wait for CPUs; this one must wait clearly more,
  // and the extra wait must account for a quarter of its extra own work at least.
  const std::optional<double> margin = StarvationMargin(s, rank);
  if (!margin) return {};
  if (delay - others_delay < 0.25 * static_cast<double>(excess)) return {};

  const double others_involuntary = OthersMedian(
      s, rank, [](const ProcessTreeStats& o) { return double(o.involuntary_switches); });
  const double others_cpu = OthersMedian(s, rank, [](const ProcessTreeStats& o) {
    return o.sampled_wall_ns > 0 ? double(o.cpu_user_ns + o.cpu_system_ns) / Wall(o) : 0.0;
  });
  const double cpu_per_wall = static_cast<double>(p.cpu_user_ns + p.cpu_system_ns) / Wall(p);
  CpuStarvation cpu{p.run_delay_ns,         p.sampled_wall_ns, delay_per_wall,
                    others_delay_per_wall,  cpu_per_wall,      others_cpu,
                    p.involuntary_switches, others_involuntary};
  // Run delay is summed over the rank's threads: more than its wall when several of them waited
  // at once (four MPI ranks spinning on two cores: 4m 27s in 3m 14s), which "X of Y" would
  // misstate.
  const std::string waited =
      p.run_delay_ns <= p.sampled_wall_ns
          ? FormatDuration(p.run_delay_ns) + " of " + FormatDuration(p.sampled_wall_ns)
          : FormatDuration(p.run_delay_ns) + " in all, summed over its " +
                std::to_string(p.threads) + " threads, during its " +
                FormatDuration(p.sampled_wall_ns);
  std::string sentence = " It was runnable but waiting for a CPU " + waited +
                         " (other ranks: " + FormatDouble("%.0f", 100 * others_delay_per_wall) +
                         " % of their time)";
  // Throttled by its own cgroup: its quota binds and the other ranks' cgroup does not (or less).
  const std::optional<CpuCgroupStats>& cg = p.cpu_cgroup;
  const bool throttled = cg && !cg->counters_unreadable && cg->nr_throttled > 0 &&
                         static_cast<double>(cg->throttled_ns) >= 0.1 * static_cast<double>(excess);
  bool shared = false;
  if (throttled) {
    for (const RankData& r : s.ranks) {
      if (r.id.rank != rank && r.proc && r.proc->cpu_cgroup &&
          r.proc->cpu_cgroup->limit_path == cg->limit_path && r.id.node == self->id.node) {
        shared = true;
      }
    }
  }
  if (throttled && !shared) {
    cpu.by = StarvedBy::kCgroupQuota;
    f->quota_cgroup = QuotaCgroup{cg->version,    cg->limit_path,   cg->nr_throttled,
                                  cg->nr_periods, cg->throttled_ns, cg->QuotaCpus()};
    sentence += "; its cgroup " + cg->limit_path + " throttled it " +
                std::to_string(cg->nr_throttled) + " times for " + FormatDuration(cg->throttled_ns);
    if (auto quota = cg->QuotaCpus()) {
      sentence += " (quota " + FormatDouble("%.0f", 100 * *quota) + " % of a CPU)";
    }
    sentence += ": a CPU quota starves it.";
  } else {
    cpu.by = StarvedBy::kCpuContention;
    // Its involuntary switches back it only when they exceed the others' (a competitor that
    // runs long slices preempts it less often than ranks that yield while polling).
    if (static_cast<double>(p.involuntary_switches) > others_involuntary) {
      sentence += ", with " + std::to_string(p.involuntary_switches) +
                  " involuntary context switches (other ranks: " +
                  FormatDouble("%.0f", others_involuntary) + ")";
    }
    sentence += ": something else runs on its CPU (another process, or ranks bound to one core).";
  }
  f->cpu_starvation = cpu;
  f->cause = CauseKind::kCpuStarved;
  return {std::move(sentence), *margin};
}

std::string OffCpuSentence(const OffCpuCause& c);

// Why the rank was slow as seen from outside the program, first match: starved of CPU
// (CpuStarvation), else off its CPU for a reason its main thread's samples show (off_cpu.h).
// Sets f's cause, evidence and focus and returns the sentence and its margin; empty when
// neither.
OutsideView OutsideCause(const Session& s, int rank, DurationNs excess, Finding* f) {
  const std::string r = std::to_string(rank);
  OutsideView starved = StarvedOfCpu(s, rank, excess, f);
  if (!starved.sentence.empty()) {
    f->focus = "what else runs on rank " + r + "'s CPUs, and the CPU quota of its cgroup";
    return starved;
  }
  const std::optional<OffCpuCause> off = FindOffCpuCause(s, rank);
  if (!off) return {};
  f->focus = off->kind == CauseKind::kBlocked
                 ? "what rank " + r + "'s main thread waits for in " + off->where
                 : "who " + std::string(off->kind == CauseKind::kFrozen ? "freezes" : "stops") +
                       " rank " + r + "'s processes";
  f->cause = off->kind;
  f->off_cpu = *off;
  return {OffCpuSentence(*off), OffCpuMargin(*off)};
}

// " Its main thread was frozen by a cgroup freezer (__refrigerator) in 58 % of 312 samples
// (other ranks: 0 %)."
std::string OffCpuSentence(const OffCpuCause& c) {
  std::string what;
  if (c.kind == CauseKind::kFrozen) {
    what = "frozen by a cgroup freezer (" + c.where + ")";
  } else if (c.kind == CauseKind::kStopped) {
    what = "stopped (SIGSTOP or SIGTSTP: a debugger, `scontrol suspend`, job control)";
  } else {
    what =
        "blocked in the kernel in " + c.where + (c.meaning.empty() ? "" : " (" + c.meaning + ")");
  }
  return " Its main thread was " + what + " in " + FormatDouble("%.0f", 100 * c.share) + " % of " +
         std::to_string(c.samples) +
         " samples every 20 ms (other ranks: " + FormatDouble("%.0f", 100 * c.others_share) +
         " %).";
}

std::string CallsLabel(const std::map<std::string, DurationNs, std::less<>>& caused_at) {
  std::vector<std::pair<DurationNs, std::string>> by_time;
  for (const auto& [call, ns] : caused_at) by_time.emplace_back(ns, call);
  std::sort(by_time.rbegin(), by_time.rend());
  std::string out;
  for (size_t i = 0; i < by_time.size() && i < 3; ++i) {
    out += (out.empty() ? "" : ", ") + by_time[i].second + " " + FormatDuration(by_time[i].first);
  }
  return out;
}

// "Job 15.3 s; with rank 2 like the others about 5.4 s: 2.8x." ("with ranks 6 and 2 ...")
std::string WhatIfSentence(const WhatIf& w) {
  std::string who = w.ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < w.ranks.size(); ++i) {
    if (i > 0) who += i + 1 == w.ranks.size() ? " and " : ", ";
    who += std::to_string(w.ranks[i]);
  }
  return " Job " + FormatDuration(w.job) + "; with " + who + " like the others about " +
         FormatDuration(w.with_typical) + ": " + FormatDouble("%.1f", w.speedup()) + "x.";
}

// The blame model's straggler finding for b, with its cause; *outside_margin gets the margin of
// the cause seen from outside the program (0 without one).
Finding MakeStraggler(const Session& s, const BlameModel& blame, const RankBlame& b,
                      double* outside_margin) {
  Finding f = FindingOnRank(s, FindingKind::kStraggler, b.rank);
  const BlameModel::Typical typical = blame.TypicalBesides(b.rank);
  const DurationNs excess = b.busy - typical.busy;
  std::string summary =
      RankLabel(s, b.rank) + " was busy (not waiting for another rank) " + FormatDuration(b.busy) +
      " where the typical rank was " + FormatDuration(typical.busy) + " (" +
      FormatDouble("%.1f", static_cast<double>(b.busy) / std::max<double>(typical.busy, 1)) +
      "x; outside MPI " + FormatDuration(b.own_work) + " vs " + FormatDuration(typical.own_work) +
      "); the others waited " + FormatDuration(b.caused_total) +
      " for it, passed-on waits included";
  if (!b.caused_at.empty()) summary += " (directly in " + CallsLabel(b.caused_at) + ")";
  summary += ".";
  std::string focus = "where rank " + std::to_string(b.rank) +
                      " spends its time between MPI calls, against another rank's";
  const std::optional<RangeExcess> range = ExcessRange(s, blame, b.rank, excess);
  if (range) {
    summary += " Most of the extra work is in NVTX range '" + range->name +
               "': " + FormatDuration(range->mine) +
               " (other ranks: " + FormatDuration(range->others) + ").";
    focus = "what rank " + std::to_string(b.rank) + " does inside NVTX range '" + range->name +
            "' (" + FormatDuration(range->mine) + " vs " + FormatDuration(range->others) +
            " on the other ranks)";
    f.cause_range = CauseRange{range->name, range->mine, range->others, false};
  }
  // Why, from outside the program: starved of CPU (whatever range it was in), else an NVTX
  // range, else what its processes did (I/O, CPU).
  const OutsideView outside = OutsideCause(s, b.rank, excess, &f);
  *outside_margin = outside.margin;
  if (!outside.sentence.empty()) {
    summary += outside.sentence;
    focus = f.focus;
  } else if (range) {
    f.cause = CauseKind::kNvtxRange;
  } else {
    f.cause = CauseKind::kUnexplained;  // unless its processes' figures say more
    summary += ProcessEvidence(s, b.rank, excess,
                               {"it is I/O-heavy", "it is CPU-bound on the host",
                                "it waits (sleep, network, a lock, child processes)"},
                               &f, &f.cause);
  }
  f.summary = summary;
  f.focus = std::move(focus);
  return f;
}

}  // namespace

BlameConfidence ConfidenceOf(const RankBlame& rank, const BlameModel& model,
                             const BlameOptions& options, double outside_margin) {
  BlameConfidence c;
  if (!rank.replayed || model.job <= 0) return c;
  c.gain = ThresholdMargin(static_cast<double>(rank.gain) / static_cast<double>(model.job),
                           options.min_gain_fraction);
  c.outside = std::clamp(outside_margin, 0.0, 1.0);
  if (rank.held_share > 0) {
    // Judged on being held alone (cgroup quota, freezer): the MPI figures do not separate it,
    // the held share (threshold a tenth of the wall) is the evidence.
    c.outside = std::max(c.outside, ThresholdMargin(rank.held_share, 0.1));
  } else {
    c.separation = SeparationMargin(rank, options);
  }
  // Two independent lines of evidence: either alone would name the rank, so both together
  // leave the product of their doubts.
  const double evidence = 1.0 - (1.0 - c.separation) * (1.0 - c.outside);
  c.value = std::clamp(std::min(c.gain, evidence), 0.0, 1.0);
  return c;
}

void ApplyBlame(const Session& aligned, const BlameModel& blame, const BlameOptions& options,
                std::vector<Finding>* findings, std::vector<std::string>* notes) {
  const std::set<int> flagged(blame.stragglers.begin(), blame.stragglers.end());
  const DurationNs span = blame.span();
  // Arrival-based straggler findings the blame model does not back are dropped, and so are the
  // late senders and receivers it does not back where it names other ranks: their waiting is
  // the named ranks' passed on, or the scheduler's noise on a shared node (a pipeline stage that
  // got less CPU for a few steps), which its own work, judged against the other ranks', does not
  // show. Without a named rank they stay: a receive posted late by program order is no
  // straggler, and only the point-to-point analysis sees it.
  //
  // Slower data loading is held to the same test: it is reported for a rank the blame model
  // names, or when it names nobody (a GPU job without MPI calls), and for a named rank only
  // where it is a material part (a quarter) of the rank's extra own work. A rank that sleeps
  // 20 ms a step in its compute, on 4 ranks sharing 2 cores, also had its 2 ms data ranges
  // 1 ms longer in most steps: true, but not why the job waited.
  auto minor_loader = [&](const Finding& f) {
    if (f.kind != FindingKind::kDataloaderSkew || f.ranks.size() != 1) return false;
    const RankBlame* b = blame.Find(f.ranks.front());
    if (b == nullptr || !b->replayed || flagged.count(b->rank) == 0) return false;
    const DurationNs extra = b->own_work - blame.TypicalBesides(b->rank).own_work;
    return extra > 0 && 4 * f.cost_ns < extra;
  };
  auto unbacked = [&](const Finding& f) {
    if (f.ranks.size() != 1 || flagged.count(f.ranks.front()) > 0) return false;
    if (f.kind == FindingKind::kStraggler) return true;
    return !flagged.empty() &&
           (f.kind == FindingKind::kLateSender || f.kind == FindingKind::kLateReceiver ||
            f.kind == FindingKind::kDataloaderSkew);
  };
  std::vector<Finding> kept;
  for (Finding& f : *findings) {
    const bool minor = minor_loader(f);
    if (!minor && !unbacked(f)) {
      kept.push_back(std::move(f));
      continue;
    }
    if (notes == nullptr) continue;
    const std::string label = RankLabel(aligned, f.ranks.front());
    if (minor) {
      const RankBlame* b = blame.Find(f.ranks.front());
      notes->push_back(label + " took longer than the other ranks in data loading (" +
                       FormatDuration(f.cost_ns) + " in all), a small part of its " +
                       FormatDuration(b->own_work - blame.TypicalBesides(b->rank).own_work) +
                       " of extra work outside MPI, so it is not reported on its own.");
    } else if (f.kind == FindingKind::kDataloaderSkew) {
      notes->push_back(label +
                       " spent longer in data loading than the other ranks, but its own work "
                       "is like the other ranks' and the stragglers named explain the waiting, "
                       "so it is not reported.");
    } else if (f.kind != FindingKind::kStraggler) {
      notes->push_back(label + " looked like a " +
                       (f.kind == FindingKind::kLateSender ? "late sender" : "late receiver") +
                       ", but its own work is like the other ranks' and the stragglers named "
                       "explain the waiting, so it is not reported.");
    } else {
      const RankBlame* b = blame.Find(f.ranks.front());
      std::string why = "its own work outside MPI is like the other ranks'";
      if (b != nullptr && b->replayed) {
        why = "with it like the others the job would gain only " +
              FormatDuration(span - b->what_if_span);
      }
      notes->push_back(label + " often arrived last at collectives, but " + why +
                       ", so it is not reported as a straggler.");
    }
  }
  *findings = std::move(kept);

  for (const RankBlame& b : blame.ranks) {
    if (!b.unexplained_of_two || notes == nullptr) continue;
    const RankBlame* other = nullptr;
    for (const RankBlame& o : blame.ranks) {
      if (o.rank != b.rank && o.events > 0) other = &o;
    }
    if (other == nullptr) continue;
    notes->push_back(
        RankLabel(aligned, b.rank) + " did more work outside MPI than rank " +
        std::to_string(other->rank) + " all through the run (" + FormatDuration(b.own_work) +
        " vs " + FormatDuration(other->own_work) + "; with it like the other the job would gain " +
        FormatDuration(b.gain) +
        "), but nothing seen from outside the program explains it (not starved of CPU, "
        "throttled, frozen or off its CPU more than the other). With two ranks more work and a "
        "slower core look alike, so it is not reported as a straggler; compare the ranks' own "
        "timers (e.g. a code's per-rank timing breakdown).");
  }

  for (int rank : blame.stragglers) {
    const RankBlame* b = blame.Find(rank);
    if (b == nullptr || !b->replayed) continue;
    // The analyses' notes that it is not reported (its arrivals were within the clocks'
    // uncertainty) would contradict the finding: its own work is measured on its own clock.
    if (notes != nullptr) {
      const std::string label = RankLabel(aligned, rank) + " ";
      std::erase_if(*notes, [&](const std::string& n) {
        return n.rfind(label, 0) == 0 && n.find("not reported as") != std::string::npos;
      });
    }
    // What the user timed: the session's wall (launch to last exit), less what the replay saves
    // over the MPI span.
    WhatIf w;
    w.job = blame.job;
    w.with_typical = std::max<DurationNs>(w.job - (span - b->what_if_span), 0);
    w.caused = b->caused_total;
    w.ranks = b->what_if_with;
    w.ranks.push_back(rank);
    const double gain = blame.job > 0 ? static_cast<double>(b->gain) / blame.job : 0;
    const Severity severity =
        gain > options.critical_gain_fraction ? Severity::kCritical : Severity::kWarning;
    auto host = std::find_if(findings->begin(), findings->end(),
                             [&](const Finding& f) { return NamesRankAlone(f, rank); });
    double outside_margin = 0;
    if (host == findings->end()) {
      findings->push_back(MakeStraggler(aligned, blame, *b, &outside_margin));
      host = std::prev(findings->end());
    } else {
      // A finding of another analysis still learns why the rank was slow from outside.
      const OutsideView outside =
          OutsideCause(aligned, rank, b->busy - blame.TypicalBesides(rank).busy, &*host);
      host->summary += outside.sentence;
      outside_margin = outside.margin;
    }
    const BlameConfidence confidence = ConfidenceOf(*b, blame, options, outside_margin);
    host->summary += WhatIfSentence(w);
    host->what_if = w;
    host->cost_ns = std::max<int64_t>(host->cost_ns, b->caused_total);
    host->confidence = confidence.value;
    host->blame_confidence = confidence;
    host->severity = std::max(host->severity, severity);
  }
}

}  // namespace rankscope
