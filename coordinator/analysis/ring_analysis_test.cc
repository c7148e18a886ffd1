#include "coordinator/analysis/ring_analysis.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/nccl_instances.h"
#include "model/nccl/nccl_log.h"
#include "model/nccl/nccl_log_file.h"
#include "model/nccl/nccl_log_parser.h"

namespace rankscope {
namespace {

// A connection to `peer` as an agent sends it: the kind by NCCL's name ("SHM", "NET/IB"), the
// net device read from `via` ("NET/IB/1/GDRDMA": 1) as NCCL's log parser reads it.
NcclTransportInfo Link(int peer, const std::string& kind, const std::string& via = "") {
  NcclTransport parsed;
  const int net_dev = ClassifyNcclVia(via, &parsed) ? parsed.net_dev : -1;
  return {0, peer, ParseNcclTransportKindName(kind), via, false, net_dev};
}

// NCCL call `k` of communicator `comm_id`, an `op` of `bytes` (64 MiB: 16 Mi floats), on its
// `size` members (world ranks first..first+size-1, comm rank = their order): the log line and the
// collective record, entered together at `start`, lasting `d`.
void AddCall(Session* s, int first, int size, const std::string& comm_id, int k,
             const std::string& op, TimeNs start, DurationNs d, Bytes bytes = Bytes{64} << 20) {
  for (int local = 0; local < size; ++local) {
    RankData& r = s->ranks[static_cast<size_t>(first + local)];
    r.nccl->calls.push_back({comm_id, static_cast<uint64_t>(k), ParseNcclOp(op), "",
                             static_cast<uint64_t>(bytes / 4), NcclDataType::kFloat32, bytes, -1,
                             NcclAlgo::kRing, NcclProto::kSimple, 24});
    CollectiveRecord c;
    c.source = CollectiveRecord::Source::kNccl;
    c.comm_id = NcclCommKey(comm_id);
    c.seq = static_cast<uint64_t>(k);
    c.op = CollectiveOp::kAllreduce;
    c.comm_size = size;
    c.comm_rank = local;
    c.bytes = bytes;
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
      c.transports.push_back(Link(1 - local, is_slow ? "SHM" : "P2P/CUMEM"));
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
  const Session s = Rings(4, 2, 2.0);
  std::vector<Finding> f = testing::Planned(s, FindImbalancedRings(s, RingOptions{}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "imbalanced_ring");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n2"});
  EXPECT_NEAR(f[0].comm_measure->busbw_gbps, f[0].comm_measure->peer_median_busbw_gbps / 2, 10.0);
  EXPECT_NE(f[0].summary.find("4<->5 over SHM"), std::string::npos) << f[0].summary;
  // Half its time lost on each of its 2 ranks: 20 x ~258 us x 2 ranks.
  EXPECT_NEAR(static_cast<double>(f[0].cost_ns), 20 * 258'000.0 * 2, 20 * 258'000.0 * 0.2);
  ASSERT_GE(f[0].next_steps.size(), 2u);
  EXPECT_NE(f[0].next_steps[1].command.find("all_reduce_perf -b 67108864"), std::string::npos);
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
  EXPECT_EQ(FindingKindName(f[0].kind), "pcie_bound");
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
  EXPECT_EQ(FindingKindName(f[0].kind), "imbalanced_ring");
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
      c.transports.push_back(Link(local ^ 1, "P2P/CUMEM"));
      c.transports.push_back(Link((local + 2) % 4, "NET/IB"));
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
  EXPECT_EQ(f[0].ring->cross_node_hops.size(), 4u);
  EXPECT_EQ(f[0].ring->peer_median_cross_node_hops, 2.0);
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

// Every rank's NCCL topology dump: `pcie_only_node`'s GPUs talk over PCIe only, the other nodes'
// over an NVSwitch.
void AddTopologyDumps(Session* s, const std::string& pcie_only_node) {
  for (RankData& r : s->ranks) {
    r.topology_xml =
        ReadTestTopology(r.id.node == pcie_only_node ? "pcie_only_4gpu.xml" : "nvswitch_8gpu.xml");
  }
}

// Without NVML, the NCCL topology dump says which GPU pairs have no NVLink.
TEST(Rings, WithoutNvmlTheTopologyDumpShowsThePcieOnlyNode) {
  Session s = Rings(4, 2, 4.0);
  AddTopologyDumps(&s, "n2");
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "pcie_bound");
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
  AddTopologyDumps(&s, "an2");
  std::vector<Finding> f = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "pcie_bound");
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
  EXPECT_EQ(FindingKindName(f[0].kind), "imbalanced_ring");
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
  EXPECT_EQ(FindingKindName(f[0].kind), "pcie_bound");
  ASSERT_EQ(f[0].joined.size(), 1u);
  EXPECT_EQ(f[0].joined[0].kind, FindingKind::kImbalancedRing);
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

// ---- Against the links the communicator crosses ----

struct Member {
  std::string node;
  std::string bus_id;  // as NCCL's log prints it ("18000" is PCI 0000:18:00.0)
};

struct Connection {
  int from = -1;  // comm ranks; `from` logs it
  int to = -1;
  std::string kind;  // "P2P/CUMEM", "SHM", "NET/IB"
  std::string via;   // the text after "via "
};

// The time of one all-reduce of `bytes` on `n` ranks at `busbw_gbps` bus bandwidth (nccl-tests:
// busbw = 2(n-1)/n x bytes / time; bytes per GB/s are nanoseconds).
DurationNs AllReduceTime(Bytes bytes, int n, double busbw_gbps) {
  return static_cast<DurationNs>(2.0 * (n - 1) / n * static_cast<double>(bytes) / busbw_gbps);
}

// One communicator, 0xe00, on `members` (world rank = comm rank = index) connected by
// `connections`, running 10 all-reduces of `bytes` at `busbw_gbps` with no peer to compare with.
// The first rank on each node carries the node's topology dump from `topology`, if it has one.
Session Lone(const std::vector<Member>& members, const std::vector<Connection>& connections,
             const std::map<std::string, std::string>& topology, Bytes bytes, double busbw_gbps) {
  Session s;
  s.aligned = true;
  const int n = static_cast<int>(members.size());
  for (int i = 0; i < n; ++i) {
    const Member& m = members[static_cast<size_t>(i)];
    RankData r;
    r.id.rank = i;
    r.id.node = m.node;
    NcclCommInfo c{"0xe00", i, n, 1, 24, m.bus_id, i, {}, {}};
    for (const Connection& t : connections) {
      if (t.from == i) c.transports.push_back(Link(t.to, t.kind, t.via));
    }
    if (i == 0) {
      for (int k = 0; k < n; ++k) c.ring_order.push_back(k);
    }
    RankNccl nccl;
    nccl.communicators.push_back(c);
    r.nccl = nccl;
    const bool first_on_node = std::none_of(s.ranks.begin(), s.ranks.end(),
                                            [&](const RankData& o) { return o.id.node == m.node; });
    if (first_on_node && topology.count(m.node)) r.topology_xml = topology.at(m.node);
    s.ranks.push_back(r);
  }
  for (int k = 0; k < 10; ++k) {
    AddCall(&s, 0, n, "0xe00", k, "AllReduce", 1'000'000'000 + k * 10'000'000,
            AllReduceTime(bytes, n, busbw_gbps), bytes);
  }
  return s;
}

constexpr Bytes k256MiB = Bytes{256} << 20;

// GPUs 0 and 1 of an 8xH100 NVSwitch node (18 NVLinks each), talking over P2P.
Session NvlinkPair(double busbw_gbps, Bytes bytes = k256MiB) {
  return Lone({{"n0", "18000"}, {"n0", "1b000"}},
              {{0, 1, "P2P/CUMEM", "P2P/CUMEM"}, {1, 0, "P2P/CUMEM", "P2P/CUMEM"}},
              {{"n0", ReadTestTopology("nvswitch_8gpu.xml")}}, bytes, busbw_gbps);
}

TEST(RingCeiling, ALoneCommunicatorFarBelowItsNvlinkIsFoundWithTheLimitingLink) {
  std::vector<Finding> f = FindImbalancedRings(NvlinkPair(45.0), RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "below_link_ceiling");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n0"});
  const CeilingReach& e = *f[0].ceiling;
  EXPECT_EQ(e.below, true);
  EXPECT_DOUBLE_EQ(e.ceiling_gbps, 450.0);  // 18 x 25 GB/s
  EXPECT_NEAR(e.fraction, 0.10, 0.005);
  EXPECT_EQ(e.min_fraction, 0.5);
  ASSERT_TRUE(f[0].limiting_link);
  EXPECT_EQ(f[0].limiting_link->from_rank, 0);
  EXPECT_EQ(f[0].limiting_link->to_rank, 1);
  EXPECT_EQ(f[0].limiting_link->from_node, "n0");
  EXPECT_EQ(f[0].limiting_link->transport, "P2P/CUMEM");
  EXPECT_EQ(f[0].limiting_link->medium, LinkMedium::kNvlink);
  EXPECT_EQ(f[0].limiting_link->link, "18 NVLinks x 25 GB/s to the NVSwitch");
  EXPECT_EQ(f[0].comm_measure->bytes, k256MiB);
  EXPECT_NE(f[0].summary.find("runs AllReduce of 256.0 MiB at 45.0 GB/s bus bandwidth, 10% of "
                              "the 450 GB/s per direction its slowest link allows: ranks 0 -> 1 "
                              "on n0 over P2P/CUMEM (NVLink: 18 NVLinks x 25 GB/s to the "
                              "NVSwitch)"),
            std::string::npos)
      << f[0].summary;
  // 10 calls on 2 ranks at a fifth of the healthy floor (225 GB/s): 80% of their time lost.
  EXPECT_NEAR(static_cast<double>(f[0].cost_ns),
              10 * 2 * 0.8 * static_cast<double>(AllReduceTime(k256MiB, 2, 45.0)), 1e4);
  // The diagnosis keeps it as it is (it is not a ring slower than peers to fold elsewhere).
  std::vector<Finding> d = Diagnose(NvlinkPair(45.0), AnalysisOptions{});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(FindingKindName(d[0].kind), "below_link_ceiling");
}

TEST(RingCeiling, WhatHealthyNcclReachesOverNvlinkIsNotAFinding) {
  // 65% of line rate is NCCL's usual efficiency over NVLink.
  EXPECT_TRUE(FindImbalancedRings(NvlinkPair(0.65 * 450), RingOptions{}).empty());
  // The threshold is half of it: 55% passes, 45% does not.
  EXPECT_TRUE(FindImbalancedRings(NvlinkPair(0.55 * 450), RingOptions{}).empty());
  EXPECT_EQ(FindImbalancedRings(NvlinkPair(0.45 * 450), RingOptions{}).size(), 1u);
  RingOptions strict;
  strict.nvlink_ceiling_fraction = 0.7;
  EXPECT_EQ(FindImbalancedRings(NvlinkPair(0.65 * 450), strict).size(), 1u);
}

// Compute kernels beside NCCL's (FSDP prefetch, a backward pass) slow its kernels on a healthy
// link: such instances are not held against the link.
TEST(RingCeiling, InstancesOverlappedByComputeAreNotHeldAgainstTheLink) {
  Session s = NvlinkPair(45.0);
  ASSERT_EQ(FindImbalancedRings(s, RingOptions{}).size(), 1u);
  // A GEMM on rank 1's GPU across each call.
  for (const CollectiveRecord& c : s.ranks[0].collectives) {
    GpuActivityRecord k;
    k.kind = GpuActivityKind::kKernel;
    k.name = "sm90_xmma_gemm_bf16bf16_bf16f32";
    k.start = c.enter - 1000;
    k.end = c.exit + 1000;
    s.ranks[1].gpu.push_back(k);
  }
  EXPECT_TRUE(FindImbalancedRings(s, RingOptions{}).empty());
  // With half the calls overlapped, the finding gives the figures of the other half, which the
  // verdict used: their count and their bus bandwidth.
  for (size_t i = 0; i < s.ranks[1].gpu.size(); i += 2) {
    s.ranks[1].gpu[i].name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  }
  std::vector<Finding> half = FindImbalancedRings(s, RingOptions{});
  ASSERT_EQ(half.size(), 1u);
  EXPECT_EQ(half[0].below_ceiling->instances, 5);
  EXPECT_NEAR(half[0].comm_measure->busbw_gbps, 45.0, 0.5);
  // NCCL's own kernels do not count as overlap.
  for (GpuActivityRecord& k : s.ranks[1].gpu) k.name = "ncclDevKernel_AllGather_RING_LL";
  EXPECT_EQ(FindImbalancedRings(s, RingOptions{}).size(), 1u);
}

TEST(RingCeiling, SmallMessagesAreNotJudged) {
  // 16 MiB at a tenth of the link: latency-bound sizes say nothing about the link.
  EXPECT_TRUE(FindImbalancedRings(NvlinkPair(45.0, Bytes{16} << 20), RingOptions{}).empty());
  RingOptions small;
  small.ceiling_min_chunk_bytes = Bytes{8} << 20;
  EXPECT_EQ(FindImbalancedRings(NvlinkPair(45.0, Bytes{16} << 20), small).size(), 1u);
}

// A40-class PCIe node (pcie_only_4gpu.xml): GPUs 0 and 1 (gen4 x16) behind one switch, GPU 2
// (gen3 x8) and 3 (gen4 x16) behind another.
Session PciePair(const std::string& bus_a, const std::string& bus_b, const std::string& kind,
                 double busbw_gbps) {
  const std::string via = kind == "SHM" ? "SHM/direct/direct" : kind;
  return Lone({{"n0", bus_a}, {"n0", bus_b}}, {{0, 1, kind, via}, {1, 0, kind, via}},
              {{"n0", ReadTestTopology("pcie_only_4gpu.xml")}}, k256MiB, busbw_gbps);
}

TEST(RingCeiling, ShmAndPcieAreHeldAgainstTheGpusPcieLinks) {
  // SHM between two gen4 x16 GPUs: 31.5 GB/s per direction, healthy above a quarter.
  std::vector<Finding> f = FindImbalancedRings(PciePair("43000", "44000", "SHM", 3.0), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].limiting_link->medium, LinkMedium::kPcie);
  EXPECT_EQ(f[0].limiting_link->transport, "SHM");
  EXPECT_EQ(f[0].limiting_link->link, "PCIe gen4 x16");
  EXPECT_NEAR(f[0].ceiling->ceiling_gbps, 31.5, 0.01);
  EXPECT_TRUE(FindImbalancedRings(PciePair("43000", "44000", "SHM", 12.0), {}).empty());

  // P2P over PCIe between GPU 2 (gen3 x8) and GPU 3: the narrower link bounds it, 7.9 GB/s.
  f = FindImbalancedRings(PciePair("83000", "84000", "P2P/IPC", 2.0), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].limiting_link->link, "PCIe gen3 x8 (rank 0's GPU)");
  EXPECT_NEAR(f[0].ceiling->ceiling_gbps, 7.88, 0.01);
  EXPECT_TRUE(FindImbalancedRings(PciePair("83000", "84000", "P2P/IPC", 5.0), {}).empty());
}

std::string ReadFixture(const std::string& path) {
  std::ifstream in(std::string(RANKSCOPE_FIXTURES_DIR) + "/" + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// NVML of the 2xH200 machine as recorded: PCIe gen5 x16 and 18 NVLinks up per GPU.
NvmlSnapshot H200Nvml() {
  NvmlSnapshot n;
  for (uint32_t i = 0; i < 2; ++i) {
    NvmlGpu g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.bus_id = i == 0 ? "00000000:00:06.0" : "00000000:00:07.0";
    g.pcie_gen_current = g.pcie_gen_max = 5;
    g.pcie_width_current = g.pcie_width_max = 16;
    g.nvlinks_up = g.nvlinks_total = 18;
    n.gpus.push_back(g);
  }
  return n;
}

// The 2xH200 VM's dump leaves the PCIe width unknown (link_width="0"); NVML's gen5 x16 fills it.
// With P2P turned off (NCCL_P2P_DISABLE=1) its pair talks over SHM, bounded by 63 GB/s.
TEST(RingCeiling, AnH200PairOverShmFarBelowPcieGen5x16) {
  auto session = [](double busbw_gbps, bool nvml) {
    Session s = Lone({{"vm", "60"}, {"vm", "70"}},
                     {{0, 1, "SHM", "SHM/direct/direct"}, {1, 0, "SHM", "SHM/direct/direct"}},
                     {{"vm", ReadFixture("h200x2-torch-allreduce/topo.xml")}}, k256MiB, busbw_gbps);
    if (nvml) s.ranks[0].nvml = H200Nvml();
    return s;
  };
  std::vector<Finding> f = FindImbalancedRings(session(5.0, true), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].limiting_link->link, "PCIe gen5 x16");
  EXPECT_NEAR(f[0].ceiling->ceiling_gbps, 63.0, 0.01);
  EXPECT_TRUE(FindImbalancedRings(session(25.0, true), {}).empty());
  // Without NVML the width is unknown, so is the ceiling: no verdict rather than a guess.
  EXPECT_TRUE(FindImbalancedRings(session(5.0, false), {}).empty());
  // NVML saw GPU 1's link at x8: the node is PCIe-bound, and the slow communicator is that
  // finding's measurement, not a second finding.
  Session degraded = session(5.0, true);
  degraded.ranks[0].nvml->gpus[1].pcie_width_current = 8;
  const std::vector<Finding> all = Diagnose(degraded, AnalysisOptions{});
  ASSERT_EQ(all.size(), 1u) << all[1].summary;
  EXPECT_EQ(FindingKindName(all[0].kind), "pcie_bound");
  ASSERT_EQ(all[0].joined.size(), 1u);
  EXPECT_EQ(all[0].joined[0].kind, FindingKind::kBelowLinkCeiling);
  ASSERT_TRUE(all[0].joined[0].limiting_link);
  EXPECT_EQ(all[0].joined[0].limiting_link->medium, LinkMedium::kPcie);
  EXPECT_NE(all[0].summary.find("Measured: NCCL communicator 0xe00"), std::string::npos)
      << all[0].summary;
}

// One rank on each of two 8xH100 nodes, over InfiniBand: the NICs the NET lines name bound it.
Session NetPair(double busbw_gbps, const std::string& second_channel_via, bool both_dumps = true) {
  std::vector<Connection> c = {{0, 1, "NET/IB", "NET/IB/0/GDRDMA"},
                               {1, 0, "NET/IB", "NET/IB/0/GDRDMA"}};
  if (!second_channel_via.empty()) {
    c.push_back({0, 1, "NET/IB", second_channel_via});
    c.push_back({1, 0, "NET/IB", second_channel_via});
  }
  std::map<std::string, std::string> topology = {{"a", ReadTestTopology("nvswitch_8gpu.xml")}};
  if (both_dumps) topology["b"] = topology["a"];
  return Lone({{"a", "18000"}, {"b", "18000"}}, c, topology, k256MiB, busbw_gbps);
}

TEST(RingCeiling, ACrossNodeCommunicatorIsHeldAgainstItsNics) {
  // mlx5_0 at 400 Gb/s: 50 GB/s per direction.
  std::vector<Finding> f = FindImbalancedRings(NetPair(10.0, ""), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].nodes, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(f[0].limiting_link);
  const LimitingLink& link = *f[0].limiting_link;
  EXPECT_EQ(link.medium, LinkMedium::kNetwork);
  EXPECT_EQ(link.transport, "NET/IB");
  EXPECT_EQ(link.link, "mlx5_0 on a, 400 Gb/s");
  EXPECT_EQ(link.from_node, "a");
  EXPECT_EQ(link.to_node, "b");
  EXPECT_DOUBLE_EQ(f[0].ceiling->ceiling_gbps, 50.0);
  EXPECT_NE(f[0].summary.find("ranks 0 (a) -> 1 (b) over NET/IB (network: mlx5_0 on a, 400 Gb/s)"),
            std::string::npos)
      << f[0].summary;
  EXPECT_TRUE(FindImbalancedRings(NetPair(40.0, ""), {}).empty());
  // Channels spread over two NICs: together 100 GB/s, so 40 is short of half.
  f = FindImbalancedRings(NetPair(40.0, "NET/IB/1/GDRDMA"), {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].limiting_link->link, "mlx5_0, mlx5_1 on a, 800 Gb/s");
  // A node without a dump: its NICs, maybe the slowest hop, are unknown; no verdict.
  EXPECT_TRUE(FindImbalancedRings(NetPair(10.0, "", /*both_dumps=*/false), {}).empty());
}

// Two communicators naming the same NIC (data-parallel groups of a DPxTP job) each get half of
// it: 20 GB/s is 0.4 of mlx5_0's 50 GB/s alone, but 0.8 of its share.
TEST(RingCeiling, CommunicatorsSharingANicAreHeldAgainstTheirShare) {
  Session s = NetPair(20.0, "");
  ASSERT_EQ(FindImbalancedRings(s, {}).size(), 1u);
  for (RankData& r : s.ranks) {
    NcclCommInfo other = r.nccl->communicators.front();
    other.comm_id = "0xe01";
    r.nccl->communicators.push_back(other);
  }
  EXPECT_TRUE(FindImbalancedRings(s, {}).empty());
  // At 5 GB/s it is below even its share; the link says it is shared, and the evidence names the
  // weaker node's rank for the NIC checks.
  Session slow = NetPair(5.0, "");
  for (RankData& r : slow.ranks) {
    NcclCommInfo other = r.nccl->communicators.front();
    other.comm_id = "0xe01";
    r.nccl->communicators.push_back(other);
  }
  std::vector<Finding> f = FindImbalancedRings(slow, {});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].limiting_link->link,
            "mlx5_0 on a, 200 Gb/s (its share: 2 communicators use these NICs)");
  EXPECT_DOUBLE_EQ(f[0].ceiling->ceiling_gbps, 25.0);
  EXPECT_EQ(f[0].limiting_link->at_rank, 0);
}

// A communicator slower than its peers and below its link: one imbalanced_ring finding says both.
TEST(RingCeiling, APeerVerdictAndALinkVerdictOnOneShapeAreOneFinding) {
  Session s = Rings(4, 2, 20.0);  // the slow one over SHM at ~13 GB/s, the others ~260 over P2P
  const std::string h200 = ReadFixture("h200x2-torch-allreduce/topo.xml");
  for (RankData& r : s.ranks) {
    const bool local0 = r.id.rank % 2 == 0;
    r.nccl->communicators[0].bus_id = local0 ? "60" : "70";
    if (local0) {
      r.topology_xml = h200;
      r.nvml = H200Nvml();
    }
  }
  std::vector<Finding> f = FindImbalancedRings(s, RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "imbalanced_ring");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(f[0].ceiling->below, true);
  EXPECT_EQ(f[0].limiting_link->transport, "SHM");
  EXPECT_NE(f[0].summary.find("4<->5 over SHM"), std::string::npos) << f[0].summary;
  EXPECT_NEAR(f[0].ceiling->fraction, 13.0 / 63.0, 0.01);
  EXPECT_NE(f[0].summary.find("Its slowest link, ranks 4 -> 5 on n2 over SHM (PCIe: PCIe gen5 "
                              "x16), allows 63 GB/s per direction; it reaches "),
            std::string::npos)
      << f[0].summary;
}

// The real 2xH200 run: NCCL's own logs and topology dump (tests/fixtures/h200x2-torch-allreduce),
// the machine's NVML, and the bus bandwidth the all-reduce benchmark measured there
// (h200x2-nccl-allreduce-bench/bench.json: 271, 287 and 301 GB/s at 64, 128 and 256 MiB).
Session RealH200(double slowdown) {
  Session s;
  s.aligned = true;
  for (int rank = 0; rank < 2; ++rank) {
    Result<NcclLog> log =
        ParseNcclLogFile(std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce/nccl.vm." +
                         (rank == 0 ? "747" : "748") + ".log");
    EXPECT_TRUE(log.ok()) << log.status().message();
    if (!log.ok()) return s;
    RankData r;
    r.id.rank = rank;
    r.id.node = "vm";
    RankNccl nccl;
    for (const NcclCommunicator& c : log.value().communicators) {
      NcclCommInfo info{c.comm_id, c.rank,     c.nranks, c.nnodes, c.nchannels,
                        c.bus_id,  c.cuda_dev, {},       {}};
      for (const NcclTransport& t : c.transports) {
        info.transports.push_back({t.channel, t.peer_rank, t.kind, t.via, t.gdrdma, t.net_dev});
      }
      if (!c.rings.empty()) info.ring_order = c.rings.front().order;
      nccl.communicators.push_back(info);
    }
    r.nccl = nccl;
    if (rank == 0) {
      r.topology_xml = ReadFixture("h200x2-torch-allreduce/topo.xml");
      r.nvml = H200Nvml();
    }
    s.ranks.push_back(r);
  }
  if (s.ranks[0].nccl->communicators.size() != 1) return s;
  const std::string comm_id = s.ranks[0].nccl->communicators[0].comm_id;
  const nlohmann::json bench =
      nlohmann::json::parse(ReadFixture("h200x2-nccl-allreduce-bench/bench.json"));
  int k = 0;
  for (const nlohmann::json& size : bench["results"]) {
    const Bytes bytes = size["bytes"].get<Bytes>();
    if (bytes < (Bytes{64} << 20)) continue;
    const auto d = static_cast<DurationNs>(size["time_us"].get<double>() * 1000 * slowdown);
    for (int i = 0; i < 10; ++i, ++k) {
      AddCall(&s, 0, 2, comm_id, k, "AllReduce", 1'000'000'000 + k * 10'000'000, d, bytes);
    }
  }
  return s;
}

TEST(RingCeiling, TheReal2xH200RunIsSilent) {
  Session s = RealH200(1.0);
  ASSERT_EQ(s.ranks.size(), 2u);
  ASSERT_EQ(s.ranks[0].nccl->communicators.size(), 1u);
  ASSERT_EQ(s.ranks[0].nccl->communicators[0].bus_id, "60");
  EXPECT_TRUE(FindImbalancedRings(s, RingOptions{}).empty());
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
  // The same run three times slower (~100 GB/s, 22% of the NVLink) is found, on the real link.
  std::vector<Finding> f = FindImbalancedRings(RealH200(3.0), RingOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "below_link_ceiling");
  EXPECT_EQ(f[0].limiting_link->link, "18 NVLinks x 25 GB/s to the NVSwitch");
  EXPECT_EQ(f[0].limiting_link->transport, "P2P/CUMEM");
  EXPECT_EQ(f[0].below_ceiling->shapes.size(), 3u);  // 64, 128 and 256 MiB
  EXPECT_NE(f[0].summary.find("2 more of its message sizes fall short too"), std::string::npos)
      << f[0].summary;
}

}  // namespace
}  // namespace rankscope

namespace rankscope {
namespace {

// Spans an agent sent (its compute kernels only summed): an instance's overlap is read from them
// where they cover it, and an instance that reaches past them is taken as not run alone.
TEST(RanBesideNccl, SpansAnswerOnlyWhereTheyCover) {
  ComputeBeside summed;
  summed.spans = {{150, 170}};
  summed.known = Intervals{{100, 300}};
  EXPECT_FALSE(RanBesideNccl(summed, 120, 280, 20));  // 20 ns beside: not more than 20
  EXPECT_TRUE(RanBesideNccl(summed, 120, 280, 19));
  EXPECT_TRUE(RanBesideNccl(summed, 120, 301, 1000));  // past what the spans cover: unknown
  summed.known = Intervals{};                          // not exact (a late kernel): nothing known
  EXPECT_TRUE(RanBesideNccl(summed, 120, 130, 1000));
  ComputeBeside records;  // from the records: known everywhere
  records.spans = {{150, 170}};
  EXPECT_FALSE(RanBesideNccl(records, 0, 1000, 20));
}

}  // namespace
}  // namespace rankscope
