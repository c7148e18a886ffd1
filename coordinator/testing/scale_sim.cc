#include "coordinator/testing/scale_sim.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace rankscope::testing {

uint64_t TensorParallelComm(int node) { return 0x7000'0000'0000'0000ULL | node; }
uint64_t DataParallelComm(int local_rank) { return 0xd000'0000'0000'0000ULL | local_rank; }

namespace {

DurationNs At(const std::map<int, DurationNs>& m, int rank) {
  auto it = m.find(rank);
  return it == m.end() ? 0 : it->second;
}

CollectiveRecord Allreduce(uint64_t comm, int step, int comm_size, int comm_rank, TimeNs enter,
                           TimeNs exit) {
  CollectiveRecord c;
  c.comm_id = comm;
  c.seq = static_cast<uint64_t>(step);
  c.op = CollectiveOp::kAllreduce;
  c.comm_size = comm_size;
  c.comm_rank = comm_rank;
  c.bytes = 1 << 20;
  c.enter = enter;
  c.exit = exit;
  c.tid = 7;
  return c;
}

}  // namespace

Session SimulateScale(const ScaleSim& sim) {
  std::mt19937_64 rng(sim.seed);
  auto jitter = [&] {
    if (sim.jitter <= 0) return DurationNs{0};
    return std::uniform_int_distribution<DurationNs>(0, sim.jitter - 1)(rng);
  };
  const int per_node = std::max(1, sim.ranks_per_node);
  const int nodes = (sim.ranks + per_node - 1) / per_node;
  auto node_of = [&](int r) { return r / per_node; };
  auto local_of = [&](int r) { return r % per_node; };
  auto tp_size = [&](int node) { return std::min(per_node, sim.ranks - node * per_node); };
  auto dp_size = [&](int local) { return nodes - (local >= tp_size(nodes - 1) ? 1 : 0); };
  // Each rank's clock: node n runs n seconds ahead of the coordinator when raw.
  auto offset = [&](int r) { return sim.raw_clocks ? node_of(r) * kNsPerSec : TimeNs{0}; };

  Session s;
  s.session_id = "scale";
  s.job_id = "4242";
  s.launcher = "srun";
  s.world_size = sim.ranks;
  s.command = {"srun", "-N", std::to_string(nodes), "python", "train.py"};
  s.aligned = !sim.raw_clocks;
  s.ranks.resize(static_cast<size_t>(sim.ranks));
  const TimeNs t0 = 1'000 * kNsPerSec;
  for (int r = 0; r < sim.ranks; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    d.id.rank = r;
    d.id.local_rank = local_of(r);
    d.id.world_size = sim.ranks;
    d.id.node = "node" + std::to_string(node_of(r));
    d.id.host = d.id.node;
    d.id.launcher = "srun";
    d.id.job_id = s.job_id;
    d.id.program_pid = 10'000 + r;
    d.id.program = {"python", "train.py"};
    d.finished = true;
    d.exit_code = 0;
    d.collectives.reserve(2 * static_cast<size_t>(sim.steps));
    d.ranges.reserve(3 * static_cast<size_t>(sim.steps));
    if (sim.raw_clocks) {
      // Symmetric 45 us round trips: the offset is recoverable to a few us.
      for (int i = 0; i < 32; ++i) {
        const TimeNs t1 = t0 - 2 * kNsPerSec + i * kNsPerMs + offset(r);
        d.clock_samples.push_back(
            {t1, t1 - offset(r) + 20'000, t1 - offset(r) + 25'000, t1 + 45'000});
      }
    } else {
      d.clock_fitted = true;
      d.clock.uncertainty_ns = 100 * kNsPerUs;
    }
  }

  std::vector<TimeNs> start(static_cast<size_t>(sim.ranks), t0);  // coordinator time
  std::vector<TimeNs> tp_enter(start.size()), tp_exit(start.size()), dp_enter(start.size());
  std::vector<TimeNs> last(static_cast<size_t>(std::max(nodes, per_node)));
  for (int k = 0; k < sim.steps; ++k) {
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const TimeNs data_end = start[ur] + sim.data + jitter() + At(sim.slow_data, r);
      tp_enter[ur] = data_end + sim.compute + jitter() + At(sim.slow_compute, r);
      RankData& d = s.ranks[ur];
      d.ranges.push_back({"", "data", start[ur] + offset(r), data_end + offset(r), 7, 1});
      d.ranges.push_back({"", "compute", data_end + offset(r), tp_enter[ur] + offset(r), 7, 1});
    }
    // Tensor-parallel all-reduce: each node's ranks leave after the node's last arrival.
    std::fill(last.begin(), last.end(), 0);
    for (int r = 0; r < sim.ranks; ++r) {
      last[static_cast<size_t>(node_of(r))] =
          std::max(last[static_cast<size_t>(node_of(r))], tp_enter[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      tp_exit[ur] = last[static_cast<size_t>(node_of(r))] + sim.collective;
      dp_enter[ur] = tp_exit[ur] + sim.host_gap;
    }
    // Data-parallel all-reduce: the same local rank of every node.
    std::fill(last.begin(), last.end(), 0);
    for (int r = 0; r < sim.ranks; ++r) {
      last[static_cast<size_t>(local_of(r))] =
          std::max(last[static_cast<size_t>(local_of(r))], dp_enter[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const TimeNs dp_exit = last[static_cast<size_t>(local_of(r))] + sim.collective;
      const TimeNs off = offset(r);
      RankData& d = s.ranks[ur];
      d.collectives.push_back(Allreduce(TensorParallelComm(node_of(r)), k, tp_size(node_of(r)),
                                        local_of(r), tp_enter[ur] + off, tp_exit[ur] + off));
      d.collectives.push_back(Allreduce(DataParallelComm(local_of(r)), k, dp_size(local_of(r)),
                                        node_of(r), dp_enter[ur] + off, dp_exit + off));
      d.ranges.push_back({"", "step", start[ur] + off, dp_exit + off, 7, 0});
      start[ur] = dp_exit + sim.host_gap;
    }
  }
  s.start = t0;
  s.end = *std::max_element(start.begin(), start.end());
  return s;
}

}  // namespace rankscope::testing
