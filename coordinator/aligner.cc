#include "coordinator/aligner.h"

#include <utility>

namespace rankscope {

void ToCoordinator(const ClockModel& m, CollectiveRecord* c) {
  c->enter = m.ToCoordinator(c->enter);
  c->exit = m.ToCoordinator(c->exit);
  if (c->launched != 0) c->launched = m.ToCoordinator(c->launched);
}

void ToCoordinator(const ClockModel& m, P2PRecord* p) {
  p->enter = m.ToCoordinator(p->enter);
  p->exit = m.ToCoordinator(p->exit);
  if (p->spin_start != 0) p->spin_start = m.ToCoordinator(p->spin_start);
}

void ToCoordinator(const ClockModel& m, MpiCallRecord* c) {
  c->enter = m.ToCoordinator(c->enter);
  c->exit = m.ToCoordinator(c->exit);
}

void ToCoordinator(const ClockModel& m, RangeRecord* r) {
  r->start = m.ToCoordinator(r->start);
  r->end = m.ToCoordinator(r->end);
}

void ToCoordinator(const ClockModel& m, GpuActivityRecord* g) {
  g->start = m.ToCoordinator(g->start);
  g->end = m.ToCoordinator(g->end);
}

Session AlignSession(Session session) {
  if (session.aligned) return session;
  for (RankData& rank : session.ranks) {
    Result<ClockModel> fit = FitClockModel(rank.clock_samples);
    if (fit.ok()) {
      rank.clock = fit.value();
      rank.clock_fitted = true;
    } else {
      rank.clock = ClockModel::Identity();
      rank.clock_fitted = false;
      rank.clock_error = fit.status().message();
    }
    const ClockModel& m = rank.clock;
    for (CollectiveRecord& c : rank.collectives) ToCoordinator(m, &c);
    for (P2PRecord& p : rank.p2p) ToCoordinator(m, &p);
    for (RangeRecord& r : rank.ranges) ToCoordinator(m, &r);
    for (MarkRecord& k : rank.marks) k.time = m.ToCoordinator(k.time);
    if (rank.exit_time != 0) rank.exit_time = m.ToCoordinator(rank.exit_time);
    for (MpiCallRecord& c : rank.mpi_calls) ToCoordinator(m, &c);
    for (GpuActivityRecord& g : rank.gpu) ToCoordinator(m, &g);
    for (GpuStats& g : rank.gpu_stats) g.window_start = m.ToCoordinator(g.window_start);
    for (LaunchLatency& l : rank.launch_latency) l.window_start = m.ToCoordinator(l.window_start);
    for (KernelPiece& k : rank.kernel_pieces) {
      k.from = m.ToCoordinator(k.from);
      k.to = m.ToCoordinator(k.to);
    }
    for (auto& [from, to] : rank.nccl_compute) {
      from = m.ToCoordinator(from);
      to = m.ToCoordinator(to);
    }
    rank.nccl_compute = MergeIntervals(std::move(rank.nccl_compute));
    // In order of `from` for KernelTimeFromPieces (the agent sends them so; uploads may not be).
    std::stable_sort(rank.kernel_pieces.begin(), rank.kernel_pieces.end(),
                     [](const KernelPiece& a, const KernelPiece& b) { return a.from < b.from; });
  }
  session.aligned = true;
  return session;
}

}  // namespace rankscope
