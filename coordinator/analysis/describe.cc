#include "coordinator/analysis/describe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/robust_stats.h"

namespace rankscope {

std::string NodeOf(const Session& session, int rank) {
  const RankData* data = session.FindRank(rank);
  if (data == nullptr) return "";
  return data->id.node.empty() ? data->id.host : data->id.node;
}

DurationNs ClockUncertainty(const Session& session, int rank, const std::set<int>& others) {
  std::vector<DurationNs> other_uncertainty;
  for (int o : others) {
    if (const RankData* d = session.FindRank(o)) {
      other_uncertainty.push_back(d->clock.uncertainty_ns);
    }
  }
  const RankData* self = session.FindRank(rank);
  return std::max(self != nullptr ? self->clock.uncertainty_ns : 0, MedianNs(other_uncertainty));
}

Finding FindingOnRank(const Session& session, FindingKind kind, int rank) {
  Finding f;
  f.kind = kind;
  f.ranks = {rank};
  const std::string node = NodeOf(session, rank);
  if (!node.empty()) f.nodes = {node};
  return f;
}

std::string RankLabel(const Session& session, int rank) {
  std::string label = "rank " + std::to_string(rank);
  const std::string node = NodeOf(session, rank);
  if (!node.empty()) label += " (node " + node + ")";
  return label;
}

// What the rank's processes did, against the other ranks' median, from the agents' /proc
// sampling: the loader reads more (I/O), computes more (CPU: decoding, augmentation), or neither
// (it waits: sleep, network, a lock, worker processes). Sets f->host_process and returns the
// sentence for the summary; empty without /proc figures for the rank and another rank.
std::string ProcessEvidence(const Session& session, int rank, DurationNs excess,
                            const ProcessWords& words, Finding* f, CauseKind* verdict_out) {
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc) return "";
  std::vector<double> rchar, read_bytes, cpu, blkio;
  for (const RankData& r : session.ranks) {
    if (r.id.rank == rank || !r.proc || r.proc->io_unreadable) continue;
    rchar.push_back(static_cast<double>(r.proc->rchar));
    read_bytes.push_back(static_cast<double>(r.proc->read_bytes));
    cpu.push_back(static_cast<double>(r.proc->cpu_user_ns + r.proc->cpu_system_ns));
    blkio.push_back(static_cast<double>(r.proc->blkio_delay_ns));
  }
  if (cpu.empty()) return "";
  const ProcessTreeStats& p = *self->proc;
  const double my_cpu = static_cast<double>(p.cpu_user_ns + p.cpu_system_ns);
  const double others_rchar = Median(rchar), others_read = Median(read_bytes);
  const double others_cpu = Median(cpu);
  constexpr double kMinBytes = 64.0 * (1 << 20);
  auto much_more = [&](double mine, double others) {
    return mine >= 2 * others && mine - others >= kMinBytes;
  };
  const bool io = !p.io_unreadable && much_more(static_cast<double>(p.rchar), others_rchar);
  const bool storage =
      !p.io_unreadable && much_more(static_cast<double>(p.read_bytes), others_read);
  // Ranks waiting in MPI burn CPU too (MPI polls), so the others' CPU is inflated: a third of the
  // excess time spent computing, and 30% more CPU than theirs, already says the loader computes.
  const bool busy =
      my_cpu >= 1.3 * others_cpu && my_cpu - others_cpu >= 0.3 * static_cast<double>(excess);
  // Blocked on block I/O (delay accounting): a loader that waits on a slow disk or network file
  // system reads no more than the others, but spends a good part of the excess in the kernel
  // waiting for the device.
  const double others_blkio = Median(blkio);
  const double my_blkio = static_cast<double>(p.blkio_delay_ns);
  const bool blocked = my_blkio >= 2 * others_blkio &&
                       my_blkio - others_blkio >= 0.3 * static_cast<double>(excess) &&
                       my_blkio >= 50.0 * kNsPerMs;
  const CauseKind verdict = io || storage || blocked ? CauseKind::kHostIo
                            : busy                   ? CauseKind::kHostCpu
                                                     : CauseKind::kHostWaiting;
  if (verdict_out != nullptr) *verdict_out = verdict;
  f->host_process = HostProcessFigures{verdict,      p.rchar,     others_rchar,   p.read_bytes,
                                       others_read,  my_cpu,      others_cpu,     p.blkio_delay_ns,
                                       others_blkio, p.processes, p.io_unreadable};
  auto gb = [](double bytes) { return FormatBytes(static_cast<int64_t>(bytes)); };
  const std::string cpu_text =
      FormatDuration(static_cast<DurationNs>(my_cpu)) +
      " of CPU (other ranks: " + FormatDuration(static_cast<DurationNs>(others_cpu)) + ")";
  if (verdict == CauseKind::kHostIo && !io && !storage) {
    return " Its processes spent " + FormatDuration(p.blkio_delay_ns) +
           " blocked on block I/O (other ranks: " +
           FormatDuration(static_cast<DurationNs>(others_blkio)) + "): " + words.io + ".";
  }
  if (verdict == CauseKind::kHostIo) {
    return " Its processes read " +
           (storage
                ? gb(static_cast<double>(p.read_bytes)) +
                      " from storage (other ranks: " + gb(others_read) + ")"
                : gb(static_cast<double>(p.rchar)) + " (other ranks: " + gb(others_rchar) + ")") +
           ": " + words.io + ".";
  }
  if (verdict == CauseKind::kHostCpu) {
    return " Its processes used " + cpu_text + ": " + words.cpu + ".";
  }
  return " Its processes read and computed no more than the other ranks' (" +
         gb(static_cast<double>(p.rchar)) + " read, " + cpu_text + "): " + words.waiting + ".";
}

}  // namespace rankscope
