// Test helper: builds aligned sessions of a synthetic data-parallel training loop, so the
// analyses can be checked against delays planted by hand. Each rank runs `steps` iterations of
//   step { data; compute; collective }
// on one thread; every collective releases its waiters as MPI would (after the last arrival for
// N-to-N ops, after the root for one-to-all, the root after the last sender for all-to-one).
#pragma once

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "coordinator/advise/advisor.h"
#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/records.h"
#include "core/time.h"

namespace rankscope::testing {

struct TrainingSim {
  int ranks = 4;
  int steps = 50;
  DurationNs data = 2 * kNsPerMs;
  DurationNs compute = 20 * kNsPerMs;
  DurationNs jitter = 500 * kNsPerUs;    // uniform [0, jitter) added to data and to compute
  DurationNs collective = 1 * kNsPerMs;  // time inside the call after its release
  DurationNs host_gap = 50 * kNsPerUs;   // between a collective's exit and the next step
  CollectiveOp op = CollectiveOp::kAllreduce;
  int root = -1;
  bool step_ranges = true;
  std::string data_name = "data";
  std::string compute_name = "compute";
  DurationNs clock_uncertainty = 100 * kNsPerUs;
  std::map<int, DurationNs> slow_data;     // planted extra data time per step, by rank
  std::map<int, DurationNs> slow_compute;  // planted extra compute time per step, by rank
  int slow_from_step = 0;                  // the planted delays start at this step
  std::map<int, DurationNs> clock_offset;  // residual alignment error added to a rank's times
  uint64_t seed = 1;
};

inline Session Simulate(const TrainingSim& sim) {
  std::mt19937_64 rng(sim.seed);
  auto jitter = [&] {
    if (sim.jitter <= 0) return DurationNs{0};
    return std::uniform_int_distribution<DurationNs>(0, sim.jitter - 1)(rng);
  };
  auto at = [](const std::map<int, DurationNs>& m, int r) {
    auto it = m.find(r);
    return it == m.end() ? DurationNs{0} : it->second;
  };

  Session s;
  s.session_id = "test";
  s.job_id = "42";
  s.launcher = "mpirun";
  s.world_size = sim.ranks;
  s.command = {"mpirun",  "-np",     std::to_string(sim.ranks),
               "./train", "--steps", std::to_string(sim.steps)};
  s.aligned = true;
  s.ranks.resize(static_cast<size_t>(sim.ranks));
  for (int r = 0; r < sim.ranks; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    d.id.rank = r;
    d.id.local_rank = 0;
    d.id.world_size = sim.ranks;
    d.id.node = "n" + std::to_string(r);
    d.id.host = d.id.node;
    d.id.launcher = "mpirun";
    d.id.job_id = "42";
    d.id.program_pid = 1000 + r;
    d.id.program = {"./train", "--steps", std::to_string(sim.steps)};
    d.clock_fitted = true;
    d.clock.uncertainty_ns = sim.clock_uncertainty;
    d.finished = true;
  }

  const TimeNs t0 = 1'000 * kNsPerSec;
  std::vector<TimeNs> start(static_cast<size_t>(sim.ranks), t0);  // true time
  const WaitPattern pattern = WaitPatternOf(sim.op);
  for (int k = 0; k < sim.steps; ++k) {
    std::vector<TimeNs> enter(static_cast<size_t>(sim.ranks));
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const TimeNs off = at(sim.clock_offset, r);
      const bool slow = k >= sim.slow_from_step;
      const DurationNs data = sim.data + jitter() + (slow ? at(sim.slow_data, r) : 0);
      const DurationNs compute = sim.compute + jitter() + (slow ? at(sim.slow_compute, r) : 0);
      RankData& d = s.ranks[ur];
      d.ranges.push_back({"", sim.data_name, start[ur] + off, start[ur] + data + off, 7, 1});
      d.ranges.push_back(
          {"", sim.compute_name, start[ur] + data + off, start[ur] + data + compute + off, 7, 1});
      enter[ur] = start[ur] + data + compute;
    }
    const TimeNs last = *std::max_element(enter.begin(), enter.end());
    const TimeNs root_enter = sim.root >= 0 ? enter[static_cast<size_t>(sim.root)] : last;
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      TimeNs release = enter[ur];
      if (pattern == WaitPattern::kAllToAll) release = last;
      if (pattern == WaitPattern::kRootToAll) release = std::max(enter[ur], root_enter);
      if (pattern == WaitPattern::kAllToRoot && r == sim.root) release = last;
      const TimeNs exit = release + sim.collective;
      const TimeNs off = at(sim.clock_offset, r);
      RankData& d = s.ranks[ur];
      CollectiveRecord c;
      c.comm_id = 0xc0;
      c.seq = static_cast<uint64_t>(k);
      c.op = sim.op;
      c.root = sim.root;
      c.comm_size = sim.ranks;
      c.comm_rank = r;
      c.bytes = 1 << 20;
      c.enter = enter[ur] + off;
      c.exit = exit + off;
      c.tid = 7;
      d.collectives.push_back(c);
      if (sim.step_ranges) {
        d.ranges.push_back({"", "step", start[ur] + off, exit + off, 7, 0});
      }
      start[ur] = exit + sim.host_gap;
    }
  }
  s.start = t0;
  s.end = *std::max_element(start.begin(), start.end());
  return s;
}

// The findings with the planner's next steps (coordinator/advise), as the pipeline gives them.
inline std::vector<Finding> Planned(const Session& s, std::vector<Finding> findings) {
  PlanNextSteps(s, "out", &findings);
  return findings;
}

}  // namespace rankscope::testing
