#include "coordinator/analysis/ring_analysis.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "coordinator/analysis/diagnosis.h"
#include "coordinator/nccl_instances.h"

namespace rankscope {
namespace {

// NCCL call `k` of communicator `comm_id`, a 64 MiB `op` (16 Mi floats), on its `size`
// members (world ranks first..first+size-1, comm rank = their order): the log line and the
// collective record, entered together at `start`, lasting `d`.
void AddCall(Session* s, int first, int size, const std::string& comm_id, int k,
             const std::string& op, TimeNs start, DurationNs d) {
  for (int local = 0; local < size; ++local) {
    RankData& r = s->ranks[static_cast<size_t>(first + local)];
    r.nccl->calls.push_back({comm_id, static_cast<uint64_t>(k), op, 16 << 20, "ncclFloat32",
                             64 << 20, -1, "RING", "SIMPLE", 24});
    CollectiveRecord c;
    c.source = CollectiveRecord::Source::kNccl;
    c.comm_id = NcclCommKey(comm_id);
    c.seq = static_cast<uint64_t>(k);
    c.op = CollectiveOp::kAllreduce;
    c.comm_size = size;
    c.comm_rank = local;
    c.bytes = 64 << 20;
    c.enter = start;
    c.exit = start + d;
    r.collectives.push_back(c);
  }
}

// `groups` data-parallel communicators of 2 ranks each, one node per communicator, each running
// `steps` all-reduces of 64 MiB. The communicator `slow` (if >= 0) takes `factor` times longer and
// connects its ranks over SHM where the others use P2P/CUMEM. Kernel times jitter by +-2%.
Session Rings(int groups, int slow, double factor, int steps = 20, uint64_t seed = 1,
              const std::string& op = "AllReduce") {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  Session s;
  s.aligned = true;
  for (int g = 0; g < groups; ++g) {
    const std::string comm_id = "0xc0" + std::to_string(g);
    const bool is_slow = g == slow;
    for (int local = 0; local < 2; ++local) {
      RankData r;
      r.id.rank = 2 * g + local;
      r.id.node = "n" + std::to_string(g);
      RankNccl n;
      NcclCommInfo c{comm_id, local, 2, 1, 24, "", local, {}, {}};
      c.transports.push_back({0, 1 - local, is_slow ? "SHM" : "P2P/CUMEM", "", false});
      if (local == 0) c.ring_order = {0, 1};
      n.communicators.push_back(c);
      r.nccl = n;
      s.ranks.push_back(r);
    }
    for (int k = 0; k < steps; ++k) {
      // 64 MiB at ~260 GB/s is ~258 us; both ranks start together.
      const TimeNs start = 1'000'000'000 + k * 10'000'000;
      const DurationNs d =
          static_cast<DurationNs>(258'000 * (is_slow ? factor : 1.0) * jitter(rng));
      AddCall(&s, 2 * g, 2, comm_id, k, op, start, d);
    }
  }
  return s;
}

TEST(Rings, TheSlowCommunicatorIsNamedWithItsOddTransport) {
  std::vector<Finding> f = FindImbalancedRings(Rings(4, 2, 2.0), RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "imbalanced_ring");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n2"});
  EXPECT_NEAR(f[0].evidence["busbw_gbps"].get<double>(),
              f[0].evidence["peer_median_busbw_gbps"].get<double>() / 2, 10.0);
  EXPECT_NE(f[0].summary.find("4<->5 over SHM"), std::string::npos) << f[0].summary;
  // Half its time lost on each of its 2 ranks: 20 x ~258 us x 2 ranks.
  EXPECT_NEAR(static_cast<double>(f[0].cost_ns), 20 * 258'000.0 * 2, 20 * 258'000.0 * 0.2);
  ASSERT_GE(f[0].next_steps.size(), 2u);
  EXPECT_NE(f[0].next_steps[1].command.find("all_reduce_perf -b 67108864"), std::string::npos);
}

TEST(Rings, NextStepsMeasureTheOpTheJobCallsWithItsOwnCommand) {
  Session s = Rings(4, 1, 2.0, 20, 1, "AllGather");
  s.command = {"mpirun", "-np", "8", "./train"};
  std::vector<Finding> f = FindImbalancedRings(s, RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  ASSERT_GE(f[0].next_steps.size(), 3u);
  EXPECT_NE(f[0].next_steps[1].command.find("all_gather_perf -b 67108864"), std::string::npos)
      << f[0].next_steps[1].command;
  EXPECT_EQ(f[0].next_steps[2].command,
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH mpirun -np 8 ./train");
}

// NVML on local rank 0 of each node: 2 H200s with 18 NVLinks up and full PCIe, except what the
// test changes.
void AddNvml(Session* s, const std::function<void(const std::string& node, NvmlGpu*)>& edit) {
  for (RankData& r : s->ranks) {
    if (r.id.rank % 2 != 0) continue;
    NvmlSnapshot n;
    for (uint32_t i = 0; i < 2; ++i) {
      NvmlGpu g;
      g.index = i;
      g.name = "NVIDIA H200";
      g.pcie_gen_current = g.pcie_gen_max = 5;
      g.pcie_width_current = g.pcie_width_max = 16;
      g.nvlinks_up = g.nvlinks_total = 18;
      edit(r.id.node, &g);
      n.gpus.push_back(g);
    }
    r.nvml = n;
  }
}

// The slow intra-node communicator sits on the node whose GPUs have no NVLink: that node is
// PCIe-bound, by topology and by measurement, in one finding.
TEST(Rings, ASlowCommunicatorOnANodeWithoutNvlinkIsAPcieBoundNode) {
  Session s = Rings(4, 2, 4.0);
  AddNvml(&s, [](const std::string& node, NvmlGpu* g) {
    if (node == "n2") g->nvlinks_up = g->nvlinks_total = 0;
  });
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "pcie_bound");
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n2"});
  EXPECT_NE(f[0].summary.find("Node n2 is PCIe-bound: its GPUs have no NVLink up"),
            std::string::npos)
      << f[0].summary;
  EXPECT_NE(f[0].summary.find("GB/s bus bandwidth, where 3 like it on other nodes reach"),
            std::string::npos)
      << f[0].summary;
  EXPECT_GT(f[0].cost_ns, 0);

  // With NVLink up there, the slowness is the ring's own (SHM): an imbalanced ring.
  Session nvlink = Rings(4, 2, 4.0);
  AddNvml(&nvlink, [](const std::string&, NvmlGpu*) {});
  f = Diagnose(nvlink, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "imbalanced_ring");
}

std::string ReadTestTopology(const std::string& name) {
  std::ifstream in(std::string(TOPOLOGY_TESTDATA_DIR) + "/" + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `groups` communicators of 4 ranks on two nodes each (comm ranks 0, 1 on x<g>, 2, 3 on y<g>),
// all over the same transports; channel 0's ring is 0 1 2 3 (2 hops leave a node), except
// group `slow`'s, 0 2 1 3 (every hop leaves a node), which runs `factor` times slower.
Session CrossNodeRings(int groups, int slow, double factor) {
  Session s;
  s.aligned = true;
  for (int g = 0; g < groups; ++g) {
    const std::string comm_id = "0xd0" + std::to_string(g);
    for (int local = 0; local < 4; ++local) {
      RankData r;
      r.id.rank = 4 * g + local;
      r.id.node = (local < 2 ? "x" : "y") + std::to_string(g);
      RankNccl n;
      NcclCommInfo c{comm_id, local, 4, 1, 24, "", local, {}, {}};
      c.transports.push_back({0, local ^ 1, "P2P/CUMEM", "", false});
      c.transports.push_back({0, (local + 2) % 4, "NET/IB", "", false});
      if (local == 0)
        c.ring_order = g == slow ? std::vector<int>{0, 2, 1, 3} : std::vector<int>{0, 1, 2, 3};
      n.communicators.push_back(c);
      r.nccl = n;
      s.ranks.push_back(r);
    }
    for (int k = 0; k < 20; ++k) {
      const TimeNs start = 1'000'000'000 + k * 10'000'000;
      const DurationNs d = static_cast<DurationNs>(400'000 * (g == slow ? factor : 1.0) *
                                                   (1.0 + 0.01 * ((k + g) % 3)));
      AddCall(&s, 4 * g, 4, comm_id, k, "AllReduce", start, d);
    }
  }
  return s;
}

TEST(Rings, ARingThatLeavesItsNodesMoreOftenThanItsPeersSaysWhere) {
  std::vector<Finding> f = FindImbalancedRings(CrossNodeRings(4, 1, 2.0), RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(f[0].evidence["ring_cross_node_hops"], 4);
  EXPECT_EQ(f[0].evidence["peer_median_ring_cross_node_hops"], 2.0);
  EXPECT_NE(f[0].summary.find("Its ring leaves a node 4 times per loop where its peers' rings do "
                              "2: 4->6 (x1->y1), 6->5 (y1->x1), 5->7 (x1->y1), 7->4 (y1->x1)."),
            std::string::npos)
      << f[0].summary;
  // The same ring order everywhere: the slow one is slow, but not for its ring.
  Session same = CrossNodeRings(4, 1, 2.0);
  same.ranks[4].nccl->communicators[0].ring_order = {0, 1, 2, 3};
  f = FindImbalancedRings(same, RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary.find("Its ring leaves"), std::string::npos) << f[0].summary;
}

// Without NVML, the NCCL topology dump says which GPU pairs have no NVLink.
TEST(Rings, WithoutNvmlTheTopologyDumpShowsThePcieOnlyNode) {
  Session s = Rings(4, 2, 4.0);
  for (RankData& r : s.ranks) {
    r.topology_xml =
        ReadTestTopology(r.id.node == "n2" ? "pcie_only_4gpu.xml" : "nvswitch_8gpu.xml");
  }
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "pcie_bound");
  EXPECT_NE(f[0].summary.find("Node n2 is PCIe-bound: GPU pairs over PCIe only (NCCL topology): "
                              "0-1 PIX"),
            std::string::npos)
      << f[0].summary;
}

// A slow communicator across nodes, one of whose nodes reaches its NIC through the CPU where the
// other nodes' GPUs sit behind a PCIe switch with theirs: that node is named.
TEST(Rings, ACrossNodeRingOnANodeWhoseGpusReachTheNicThroughTheCpu) {
  auto spread = [](Session* s) {  // each communicator's two ranks on two nodes
    for (RankData& r : s->ranks) r.id.node = (r.id.rank % 2 == 0 ? "a" : "b") + r.id.node;
  };
  Session s = Rings(4, 2, 4.0);
  spread(&s);
  for (RankData& r : s.ranks) {
    r.topology_xml =
        ReadTestTopology(r.id.node == "an2" ? "pcie_only_4gpu.xml" : "nvswitch_8gpu.xml");
  }
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "pcie_bound");
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"an2"});
  EXPECT_NE(f[0].summary.find("Node an2 is PCIe-bound: an2: GPUs reach their nearest NIC through "
                              "the CPU: GPU 2 to mlx5_0 PHB, GPU 3 to mlx5_0 PHB"),
            std::string::npos)
      << f[0].summary;
  EXPECT_NE(f[0].summary.find("like it elsewhere reach"), std::string::npos) << f[0].summary;

  // Every node behind the CPU (a cloud VM's virtio NIC): nothing tells the slow one apart.
  Session vms = Rings(4, 2, 4.0);
  spread(&vms);
  std::ifstream in(std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce/topo.xml");
  const std::string h200(std::istreambuf_iterator<char>(in), {});
  ASSERT_FALSE(h200.empty());
  for (RankData& r : vms.ranks) r.topology_xml = h200;
  f = Diagnose(vms, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "imbalanced_ring");
}

// NVML already found n2's PCIe links trained down: the measurement joins that finding.
TEST(Rings, TheMeasurementJoinsTheNodesDegradedLinkFinding) {
  Session s = Rings(4, 2, 4.0);
  AddNvml(&s, [](const std::string& node, NvmlGpu* g) {
    if (node == "n2") {
      g->nvlinks_up = g->nvlinks_total = 0;
      g->pcie_width_current = 8;
    }
  });
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "pcie_bound");
  EXPECT_TRUE(f[0].evidence.contains("measured")) << f[0].evidence.dump();
  EXPECT_NE(f[0].summary.find("Measured: its communicator 0xc02 runs AllReduce"), std::string::npos)
      << f[0].summary;
}

TEST(Rings, BalancedCommunicatorsGiveNothing) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    EXPECT_TRUE(FindImbalancedRings(Rings(8, -1, 1.0, 20, seed), RingOptions{}).empty())
        << "seed " << seed;
  }
  // 10% slower is within what a ring may vary by: not reported.
  EXPECT_TRUE(FindImbalancedRings(Rings(4, 1, 1.1), RingOptions{}).empty());
}

TEST(Rings, TooFewPeersOrInstancesGiveNoVerdict) {
  EXPECT_TRUE(FindImbalancedRings(Rings(2, 1, 3.0), RingOptions{}).empty());     // one peer
  EXPECT_TRUE(FindImbalancedRings(Rings(4, 1, 3.0, 3), RingOptions{}).empty());  // 3 instances
}

}  // namespace
}  // namespace rankscope
