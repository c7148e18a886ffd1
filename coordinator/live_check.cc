#include "coordinator/live_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/robust_stats.h"

namespace rankscope {
namespace {

// One rank's figures over the window.
struct WindowShares {
  int rank = -1;
  double own = 0;   // share of its wall outside MPI
  double wait = 0;  // share inside MPI
  bool has_proc = false;
  double throttled = 0;   // of the sampler's wall
  double run_delay = 0;   // of CPU + run delay
  double delay_wall = 0;  // run delay, of the sampler's wall
  double off_cpu = 0;     // of the sampler's wall: neither on a CPU nor waiting for one
};

const LiveTally* FindRank(const std::vector<LiveTally>& sorted, int rank) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), rank,
                             [](const LiveTally& t, int r) { return t.rank < r; });
  return it != sorted.end() && it->rank == rank ? &*it : nullptr;
}

// Its shares between two checks `window` apart; none when its calls cover too little of the
// window, or its figures went back (a restarted rank's first tally against its last attempt's).
std::optional<WindowShares> SharesBetween(const LiveTally& before, const LiveTally& now,
                                          DurationNs window, double min_covered) {
  if (before.through <= 0 || now.through <= before.through) return std::nullopt;
  if (now.in_mpi < before.in_mpi || now.proc_wall < before.proc_wall) return std::nullopt;
  if (static_cast<double>(now.through - before.through) <
      min_covered * static_cast<double>(window)) {
    return std::nullopt;
  }
  const double wall = static_cast<double>(now.through - before.through);
  const double in_mpi = std::clamp(static_cast<double>(now.in_mpi - before.in_mpi), 0.0, wall);
  WindowShares s;
  s.rank = now.rank;
  s.wait = in_mpi / wall;
  s.own = 1.0 - s.wait;
  const double proc_wall = static_cast<double>(now.proc_wall - before.proc_wall);
  if (before.proc_wall > 0 && proc_wall > 0) {
    const double cpu = std::max(0.0, static_cast<double>(now.cpu - before.cpu));
    const double delay = std::max(0.0, static_cast<double>(now.run_delay - before.run_delay));
    const double throttled = std::max(0.0, static_cast<double>(now.throttled - before.throttled));
    s.has_proc = true;
    s.throttled = std::min(1.0, throttled / proc_wall);
    s.run_delay = cpu + delay > 0 ? delay / (cpu + delay) : 0;
    s.delay_wall = std::min(1.0, delay / proc_wall);
    s.off_cpu = std::clamp((proc_wall - cpu - delay) / proc_wall, 0.0, 1.0);
  }
  return s;
}

// Each rank's others' median (and robust sigma) of one field.
template <typename F>
LeaveOneOut OthersOf(const std::vector<WindowShares>& all, F field, bool with_sigma = false) {
  std::vector<double> v;
  v.reserve(all.size());
  for (const WindowShares& s : all) v.push_back(field(s));
  return LeaveOneOut(v, with_sigma);
}

}  // namespace

LiveCheck::LiveCheck(LiveCheckOptions options) : options_(options) {
  options_.window_checks = std::max<size_t>(options_.window_checks, 1);
  options_.persist = std::max(options_.persist, 1);
  options_.persist_busy = std::max(options_.persist_busy, options_.persist);
}

std::vector<LiveFinding> LiveCheck::Check(TimeNs now, std::vector<LiveTally> tallies) {
  std::erase_if(tallies, [](const LiveTally& t) { return t.rank < 0; });
  std::sort(tallies.begin(), tallies.end(),
            [](const LiveTally& a, const LiveTally& b) { return a.rank < b.rank; });
  history_.push_back(Snapshot{now, std::move(tallies)});
  while (history_.size() > options_.window_checks + 1) history_.pop_front();
  if (history_.size() < options_.window_checks + 1) return {};
  const Snapshot& base = history_.front();
  const Snapshot& cur = history_.back();

  std::vector<WindowShares> shares;
  for (const LiveTally& t : cur.tallies) {
    const LiveTally* before = FindRank(base.tallies, t.rank);
    if (before == nullptr) continue;
    if (std::optional<WindowShares> s =
            SharesBetween(*before, t, cur.at - base.at, options_.min_covered)) {
      shares.push_back(*s);
    }
  }

  // The others of each rank, for all ranks at once: O(ranks log ranks) a check.
  const LeaveOneOut others_own = OthersOf(
      shares, [](const WindowShares& s) { return s.own; }, /*with_sigma=*/true);
  const LeaveOneOut others_wait = OthersOf(shares, [](const WindowShares& s) { return s.wait; });
  const LeaveOneOut others_delay =
      OthersOf(shares, [](const WindowShares& s) { return s.run_delay; });
  const LeaveOneOut others_throttled =
      OthersOf(shares, [](const WindowShares& s) { return s.throttled; });
  const LeaveOneOut others_off = OthersOf(shares, [](const WindowShares& s) { return s.off_cpu; });

  std::vector<LiveFinding> reported;
  std::set<int> standing;
  for (size_t i = 0; shares.size() >= 2 && i < shares.size(); ++i) {
    const WindowShares& r = shares[i];
    LiveFinding f;
    f.rank = r.rank;
    f.own_share = r.own;
    f.others_own_share = others_own.Median(i);
    f.others_waiting = others_wait.Median(i);
    if (f.others_waiting < options_.min_others_waiting) continue;
    // The cause, from what the agents saw outside the program: named only where it sets the
    // rank apart (a whole job throttled alike tells nothing of which rank holds it up).
    if (r.has_proc) {
      f.throttled_share = r.throttled;
      f.run_delay_share = r.run_delay;
      f.off_cpu_share = r.off_cpu;
      f.others_run_delay_share = others_delay.Median(i);
      const double throttled_median = others_throttled.Median(i);
      const double off_median = others_off.Median(i);
      const bool starved = r.run_delay >= options_.min_run_delay &&
                           r.run_delay >= options_.starved_factor * f.others_run_delay_share &&
                           r.run_delay >= f.others_run_delay_share + options_.starved_margin;
      const bool off_cpu =
          r.off_cpu >= options_.min_off_cpu && r.off_cpu >= off_median + options_.off_cpu_margin;
      // Throttled time is run delay too; of starved and off CPU, the one that took more time.
      if (r.throttled >= options_.min_throttled && r.throttled >= 2 * throttled_median) {
        f.cause = LiveCause::kThrottled;
      } else if (starved && (!off_cpu || r.delay_wall >= r.off_cpu)) {
        f.cause = LiveCause::kCpuStarved;
      } else if (off_cpu) {
        f.cause = LiveCause::kOffCpu;
      }
    }
    // Stands out by its work: clearly more of its time outside MPI than the others.
    bool works_more = r.own >= f.others_own_share * (1 + options_.min_excess);
    if (works_more && shares.size() >= 4) {
      const double sigma = std::max(others_own.RobustSigma(i), options_.sigma_floor);
      works_more = r.own - f.others_own_share >= options_.min_sigmas * sigma;
    }
    // Or by its cause alone, where the others wait most of their time: a rank throttled or
    // starved while it polls in MPI has that time stretched too, so its work share need not
    // stand out (LAMMPS with one rank under a cgroup quota: every rank inside MPI ~80% of the
    // time, the throttled one too). It must not work clearly less than the others.
    const bool caused = f.cause != LiveCause::kBusy &&
                        f.others_waiting >= options_.min_others_waiting_for_cause &&
                        r.own >= f.others_own_share * (1 - options_.min_excess);
    if (!works_more && !caused) continue;
    // Of two or three ranks none is typical: a cause seen from outside must name it. More work
    // is claimed only of a rank that had its CPU when it wanted it: where ranks share cores its
    // extra time outside MPI may be the scheduler's turn-taking (4 ranks on 2 cores, clean:
    // every rank waits ~50% of its runnable time, and two of them stood out 10 checks running).
    if (f.cause == LiveCause::kBusy &&
        (shares.size() < 4 || (r.has_proc && r.run_delay >= options_.busy_max_run_delay))) {
      continue;
    }
    standing.insert(r.rank);
    const size_t at = static_cast<size_t>(r.rank);
    if (at >= streak_.size()) {
      streak_.resize(at + 1, 0);
      cause_streak_.resize(at + 1, 0);
      streak_began_.resize(at + 1, 0);
    }
    int& streak = streak_[at];
    int& caused_streak = cause_streak_[at];
    // Began after the check before this one, which did not see it (before the first check that
    // judged anything: the window's start).
    if (streak == 0) {
      streak_began_[static_cast<size_t>(r.rank)] =
          judged_before_ ? history_[history_.size() - 2].at : base.at;
    }
    ++streak;
    // A cause must hold for `persist` checks of its own: a one-check burst of throttling after
    // a stretch of more work is no throttled rank.
    caused_streak = f.cause == LiveCause::kBusy ? 0 : caused_streak + 1;
    if ((caused_streak >= options_.persist || streak >= options_.persist_busy) &&
        reported_.insert(r.rank).second) {
      f.began = streak_began_[static_cast<size_t>(r.rank)];
      f.found = now;
      f.window = now - base.at;
      reported.push_back(f);
    }
  }
  for (size_t r = 0; r < streak_.size(); ++r) {
    if (!standing.count(static_cast<int>(r))) streak_[r] = cause_streak_[r] = 0;
  }
  if (shares.size() >= 2) judged_before_ = true;
  return reported;
}

std::string LivePercent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

// 65 s -> "1:05".
std::string LiveClock(DurationNs d) {
  const int64_t s = std::max<int64_t>(d, 0) / kNsPerSec;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                static_cast<long long>(s % 60));
  return buf;
}

std::string LiveSeconds(DurationNs d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", static_cast<double>(d) / 1e9);
  return buf;
}

std::vector<int> CaptureRanks(int rank, std::vector<int> known, size_t peers) {
  std::erase(known, rank);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  const auto nearer = [rank](int a, int b) {
    const int64_t da = std::abs(int64_t{a} - rank);
    const int64_t db = std::abs(int64_t{b} - rank);
    return da != db ? da < db : a < b;
  };
  const size_t n = std::min(peers, known.size());
  std::partial_sort(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(n), known.end(),
                    nearer);
  known.resize(n);
  known.insert(known.begin(), rank);
  return known;
}

const char* LiveCauseName(LiveCause cause) {
  switch (cause) {
    case LiveCause::kThrottled:
      return "cgroup_throttled";
    case LiveCause::kCpuStarved:
      return "cpu_starved";
    case LiveCause::kOffCpu:
      return "off_cpu";
    case LiveCause::kBusy:
      return "busy";
  }
  return "busy";
}

std::optional<LiveCause> LiveCauseFromName(std::string_view name) {
  for (LiveCause c :
       {LiveCause::kThrottled, LiveCause::kCpuStarved, LiveCause::kOffCpu, LiveCause::kBusy}) {
    if (name == LiveCauseName(c)) return c;
  }
  return std::nullopt;
}

std::string LiveFindingLine(const LiveFinding& f, TimeNs start) {
  const std::string window = "the last " + LiveSeconds(f.window);
  std::string line = "rank " + std::to_string(f.rank) + " holds the others up: ";
  switch (f.cause) {
    case LiveCause::kThrottled:
      line += "its cgroup throttled it " + LivePercent(f.throttled_share) + " of " + window;
      break;
    case LiveCause::kCpuStarved:
      line += "it waited for a CPU " + LivePercent(f.run_delay_share) +
              " of its runnable time in " + window + " (the others " +
              LivePercent(f.others_run_delay_share) + ")";
      break;
    case LiveCause::kOffCpu:
      line += "it was off its CPU (sleeping, blocked or frozen) " + LivePercent(f.off_cpu_share) +
              " of " + window;
      break;
    case LiveCause::kBusy:
      line += "it worked outside MPI " + LivePercent(f.own_share) + " of " + window +
              " (the others " + LivePercent(f.others_own_share) +
              "), on its CPU: more work than the others, or a " + "slower core";
      break;
  }
  line += ", while the others waited in MPI " + LivePercent(f.others_waiting) + " of theirs";
  if (f.cause != LiveCause::kBusy) {
    line += " (outside MPI it spent " + LivePercent(f.own_share) + ", the others " +
            LivePercent(f.others_own_share) + ")";
  }
  line += ". Began about " + LiveClock(f.began - start) + ", seen " +
          LiveSeconds(f.found - f.began) + " later.";
  return line;
}

}  // namespace rankscope
