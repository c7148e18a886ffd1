#include "coordinator/analysis/process_analysis.h"

#include <algorithm>
#include <string>

#include "coordinator/analysis/describe.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

struct Figures {
  int rank = -1;
  double rchar = 0, read_bytes = 0, blkio = 0, cpu = 0;
};

double MedianOfOthers(const std::vector<Figures>& all, size_t me, double Figures::*field) {
  std::vector<double> v;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i != me) v.push_back(all[i].*field);
  }
  return Median(std::move(v));
}

std::string Rate(double bytes, double seconds) {
  return FormatBytes(static_cast<Bytes>(bytes / std::max(seconds, 1e-9))) + "/s";
}

}  // namespace

std::vector<Finding> FindProcessOutliers(const Session& session,
                                         const ProcessOutlierOptions& options) {
  std::vector<Figures> all;
  for (const RankData& r : session.ranks) {
    if (!r.proc) continue;
    const ProcessTreeStats& p = *r.proc;
    all.push_back({r.id.rank, static_cast<double>(p.rchar), static_cast<double>(p.read_bytes),
                   static_cast<double>(p.blkio_delay_ns),
                   static_cast<double>(p.cpu_user_ns + p.cpu_system_ns)});
  }
  // The sampling window itself, not the attach's whole life (squeue, srun start-up, waiting).
  const DurationNs window = session.SampledWindow();
  if (static_cast<int>(all.size()) < options.min_ranks || window <= 0) return {};
  const double seconds = static_cast<double>(window) / kNsPerSec;

  std::vector<Finding> findings;
  for (size_t i = 0; i < all.size(); ++i) {
    const Figures& me = all[i];
    const double others_rchar = MedianOfOthers(all, i, &Figures::rchar);
    const double others_read = MedianOfOthers(all, i, &Figures::read_bytes);
    const double others_blkio = MedianOfOthers(all, i, &Figures::blkio);
    const double others_cpu = MedianOfOthers(all, i, &Figures::cpu);
    std::vector<std::string> what;
    std::string look_for;
    ProcessOutlierFigures figures{window,   me.rchar,     others_rchar, me.read_bytes, others_read,
                                  me.blkio, others_blkio, me.cpu,       others_cpu,    all.size(),
                                  {}};
    if (me.rchar >= options.factor * others_rchar &&
        me.rchar >= static_cast<double>(options.min_read_bytes)) {
      const bool storage = me.read_bytes >= options.factor * others_read &&
                           me.read_bytes >= static_cast<double>(options.min_read_bytes);
      what.push_back("it read " + FormatBytes(static_cast<Bytes>(me.rchar)) + " (" +
                     Rate(me.rchar, seconds) + (storage ? ", much of it from storage" : "") +
                     ") against a median of " + FormatBytes(static_cast<Bytes>(others_rchar)) +
                     " on the other ranks");
      figures.verdicts.push_back(storage ? ProcessVerdict::kIoHeavyStorage
                                         : ProcessVerdict::kIoHeavy);
      look_for = "which code reads (data loading, checkpoints) on this rank alone";
    }
    if (me.blkio >= options.min_blkio_share * static_cast<double>(window) &&
        me.blkio >= options.factor * others_blkio) {
      what.push_back("it was blocked on storage for " +
                     FormatDuration(static_cast<DurationNs>(me.blkio)) + " of the " +
                     FormatDuration(window) + " window");
      figures.verdicts.push_back(ProcessVerdict::kBlockedOnStorage);
      if (look_for.empty()) look_for = "the files this rank reads and the storage behind them";
    }
    if (others_cpu >= options.busy_share * static_cast<double>(window) &&
        me.cpu <= options.idle_share * others_cpu) {
      what.push_back("it used " + FormatDuration(static_cast<DurationNs>(me.cpu)) +
                     " of CPU against a median of " +
                     FormatDuration(static_cast<DurationNs>(others_cpu)) +
                     " on the other ranks: it sleeps or waits (I/O, a lock, a sleep) while they "
                     "run, and ranks polling in MPI or NCCL for a late peer burn CPU");
      figures.verdicts.push_back(ProcessVerdict::kIdleWhileOthersBusy);
      if (look_for.empty()) look_for = "where this rank sleeps or blocks while the others compute";
    }
    if (what.empty()) continue;
    Finding f = FindingOnRank(session, FindingKind::kProcessOutlier, me.rank);
    f.severity = Severity::kWarning;
    // Seen from outside only: the numbers are sure, what they cost the job is not known.
    f.confidence = 0.6;
    f.process_outlier = std::move(figures);
    std::string summary = RankLabel(session, me.rank) + " stands apart from the other " +
                          std::to_string(all.size() - 1) + " ranks in the " +
                          FormatDuration(window) + " sampled from outside: ";
    for (size_t k = 0; k < what.size(); ++k) summary += (k > 0 ? "; " : "") + what[k];
    summary +=
        ". Without call timings (the job was not launched with rankscope run) whether the others "
        "wait for it is not measured.";
    f.summary = std::move(summary);
    f.focus = look_for;
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace rankscope
