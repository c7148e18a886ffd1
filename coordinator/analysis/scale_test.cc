// The analyses on large generated sessions (coordinator/testing/scale_sim.h): silent on clean
// runs, and each planted problem found on its rank, node and communicator, with the wait it
// spreads through the node and across the data-parallel groups not blamed on anyone else. MPI
// sessions for the stragglers and loaders; NCCL sessions (logs and kernels, joined as the pipeline
// joins them) for the slow ring and the PCIe-bound node.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/aligner.h"
#include "coordinator/analysis/blame.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/session_matches.h"
#include "coordinator/testing/scale_sim.h"
#include "core/format.h"

namespace rankscope {
namespace {

using testing::DataParallelComm;
using testing::NcclCommIdOf;
using testing::ScaleSim;
using testing::SimulateScale;
using testing::TensorParallelComm;

// 256 ranks on 32 nodes x 200 steps: 102,400 collective records, fast enough for the sanitizer
// build; bench_coordinator runs the same generator at 1,024 ranks x 2,000 collectives each.
ScaleSim Medium(uint64_t seed) {
  ScaleSim sim;
  sim.ranks = 256;
  sim.steps = 200;
  sim.seed = seed;
  return sim;
}

TEST(ScaleTest, CleanLargeSessionsGiveNoFinding) {
  for (uint64_t seed : {1, 2, 3}) {
    ScaleSim sim = Medium(seed);
    sim.jitter = static_cast<DurationNs>(seed) * kNsPerMs;  // up to 15% of the compute time
    std::vector<std::string> notes;
    const std::vector<Finding> findings = Diagnose(SimulateScale(sim), AnalysisOptions{}, &notes);
    EXPECT_TRUE(findings.empty()) << "seed " << seed << ": " << findings.front().summary;
  }
}

TEST(ScaleTest, PlantedProblemsAreFoundWhereTheyWerePlanted) {
  ScaleSim sim = Medium(7);
  sim.slow_compute[37] = 6 * kNsPerMs;  // node4, local rank 5
  sim.slow_data[200] = 8 * kNsPerMs;    // node25, local rank 0
  sim.raw_clocks = true;                // and the aligner has to undo 31 s of node offsets
  const Session aligned = AlignSession(SimulateScale(sim));
  std::vector<std::string> notes;
  const std::vector<Finding> findings = Diagnose(aligned, AnalysisOptions{}, &notes);
  ASSERT_EQ(findings.size(), 2u);
  const Finding* straggler = nullptr;
  const Finding* loader = nullptr;
  for (const Finding& f : findings) {
    if (f.kind == FindingKind::kStraggler) straggler = &f;
    if (f.kind == FindingKind::kDataloaderSkew) loader = &f;
  }
  ASSERT_NE(straggler, nullptr) << findings[0].KindName() << ", " << findings[1].KindName();
  ASSERT_NE(loader, nullptr) << findings[0].KindName() << ", " << findings[1].KindName();

  EXPECT_EQ(straggler->ranks, std::vector<int>{37});
  EXPECT_EQ(straggler->nodes, std::vector<std::string>{"node4"});
  // The others waited for it first in its node's tensor-parallel group.
  const std::vector<ArrivalFigures::Communicator>& comms =
      straggler->arrival_figures->communicators;
  ASSERT_FALSE(comms.empty());
  EXPECT_EQ(comms[0].comm_id, FormatHex(TensorParallelComm(4)));
  EXPECT_EQ(comms[0].last_instances, 200);
  // ... then in the data-parallel group of its local rank, where all of node4 comes late.
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[1].comm_id, FormatHex(DataParallelComm(5)));
  EXPECT_EQ(CauseKindName(straggler->cause), "nvtx_range");
  EXPECT_NEAR(static_cast<double>(straggler->arrivals->median_lateness), 6.0 * kNsPerMs,
              1.5 * kNsPerMs);

  EXPECT_EQ(loader->ranks, std::vector<int>{200});
  EXPECT_EQ(loader->nodes, std::vector<std::string>{"node25"});

  // Node 4's other ranks arrive late at their data-parallel all-reduces only because they waited
  // for rank 37: at most a note, never a finding.
  for (const Finding& f : findings) {
    for (int r : f.ranks) EXPECT_TRUE(r == 37 || r == 200) << f.summary;
  }
}

// 128 ranks on 16 nodes x 100 steps of NCCL all-reduces: 25,600 calls, each with its kernel and
// launch record; 16 tensor-parallel communicators of 8 ranks, 8 data-parallel ones of 16. Transfers
// vary by +-3%, and clocks are raw, so kernel times cross nodes only through the aligner.
ScaleSim NcclMedium(uint64_t seed) {
  ScaleSim sim;
  sim.ranks = 128;
  sim.steps = 100;
  sim.seed = seed;
  sim.nccl = true;
  sim.transfer_jitter = 0.03;
  sim.raw_clocks = true;
  return sim;
}

// What the pipeline does before the analyses: align, then join each rank's NCCL calls with their
// kernels into collective records (every call has its kernel here).
std::vector<Finding> DiagnoseNccl(Session raw) {
  Session aligned = AlignSession(std::move(raw));
  const NcclJoinStats joined = AddNcclCollectives(&aligned);
  EXPECT_EQ(joined.calls_without_kernel, 0);
  EXPECT_EQ(joined.kernels_without_call, 0);
  EXPECT_EQ(joined.joined, 2 * 128 * 100);
  std::vector<std::string> notes;
  return Diagnose(aligned, AnalysisOptions{}, &notes);
}

// For failure messages: every finding's kind and summary.
std::string Summaries(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) out += "\n" + std::string(f.KindName()) + ": " + f.summary;
  return out;
}

std::vector<std::string> AllNodes(int nodes) {
  std::set<std::string> names;  // in the order findings list them
  for (int n = 0; n < nodes; ++n) names.insert("node" + std::to_string(n));
  return {names.begin(), names.end()};
}

// The same job with a halo exchange on a ring over MPI_COMM_WORLD every step (stencil codes'
// pattern): 8 point-to-point records per rank and step. Clean: every message matched, the
// replay reproduces the run, nobody named. A rank computing 6 ms more a step delays its two
// neighbours' Waitall first; the blame model still names it alone.
TEST(ScaleTest, HaloExchangeSessionsAreReplayedAndTheirStragglerFound) {
  ScaleSim sim = Medium(11);
  sim.halo_bytes = 64 << 10;
  {
    const Session clean = SimulateScale(sim);
    EXPECT_EQ(clean.ranks[5].p2p.size(), 8u * 200);
    BlameModel blame;
    std::vector<std::string> notes;
    const std::vector<Finding> findings =
        Diagnose(clean, MatchSession(clean), AnalysisOptions{}, &notes, &blame);
    EXPECT_TRUE(findings.empty()) << Summaries(findings);
    ASSERT_EQ(blame.ranks.size(), 256u);
    EXPECT_EQ(blame.broken_dependencies, 0);
    EXPECT_NEAR(static_cast<double>(blame.replayed_span), static_cast<double>(blame.span()),
                0.01 * static_cast<double>(blame.span()));
    for (const RankBlame& r : blame.ranks) {
      ASSERT_EQ(r.p2p_calls, 8 * 200) << "rank " << r.rank;
      ASSERT_EQ(r.uninterpreted_calls, 0) << "rank " << r.rank;
    }
  }
  sim.slow_compute[37] = 6 * kNsPerMs;
  sim.raw_clocks = true;
  const Session aligned = AlignSession(SimulateScale(sim));
  BlameModel blame;
  std::vector<std::string> notes;
  const std::vector<Finding> findings =
      Diagnose(aligned, MatchSession(aligned), AnalysisOptions{}, &notes, &blame);
  // The straggler, and how its neighbours waited for its messages (late sender) and, 64 KiB
  // being too large to go eagerly, for its receives (late receiver): rank 37 alone in each.
  ASSERT_FALSE(findings.empty());
  for (const Finding& f : findings) {
    EXPECT_EQ(f.ranks, std::vector<int>{37}) << Summaries(findings);
  }
  const Finding& straggler = findings[0];
  EXPECT_EQ(FindingKindName(straggler.kind), "straggler") << Summaries(findings);
  ASSERT_TRUE(straggler.what_if.has_value());
  // 6 ms of ~25 ms a step: like the others the job is about a fifth shorter.
  EXPECT_NEAR(straggler.what_if->speedup(), 1.25, 0.08);
  // Its neighbours waited for it in their Waitall.
  EXPECT_GT(blame.waits.at({36, 37}), 200 * 4 * kNsPerMs);
  EXPECT_GT(blame.waits.at({38, 37}), 200 * 4 * kNsPerMs);
}

TEST(ScaleTest, CleanNcclSessionsGiveNoFinding) {
  for (uint64_t seed : {1, 2, 3}) {
    ScaleSim sim = NcclMedium(seed);
    sim.jitter = static_cast<DurationNs>(seed) * kNsPerMs;
    sim.topology = seed != 2;  // dumps (every node on NVSwitch) but on seed 2
    const std::vector<Finding> findings = DiagnoseNccl(SimulateScale(sim));
    EXPECT_TRUE(findings.empty()) << "seed " << seed << Summaries(findings);
  }
}

// Local rank 3's data-parallel ring runs at half its 7 peers' bandwidth: one finding, naming that
// communicator, its 16 ranks (one per node) and so all nodes. Its members start each next step a
// millisecond late, having left the slow all-reduce late: a note at most, never a straggler.
TEST(ScaleTest, APlantedSlowRingIsNamedWithItsRanksAndNodesAlone) {
  for (uint64_t seed : {4, 5}) {
    ScaleSim sim = NcclMedium(seed);
    sim.slow_ring_local_rank = 3;
    sim.slow_ring_bandwidth = 0.5;
    sim.topology = true;
    const std::vector<Finding> findings = DiagnoseNccl(SimulateScale(sim));
    ASSERT_EQ(findings.size(), 1u) << "seed " << seed << ": " << Summaries(findings);
    const Finding& f = findings[0];
    EXPECT_EQ(FindingKindName(f.kind), "imbalanced_ring");
    EXPECT_EQ(f.comm_measure->comm_id, NcclCommIdOf(DataParallelComm(3)));
    std::vector<int> ranks;
    for (int node = 0; node < 16; ++node) ranks.push_back(8 * node + 3);
    EXPECT_EQ(f.ranks, ranks);
    EXPECT_EQ(f.nodes, AllNodes(16));
    EXPECT_EQ(f.ring->nranks, 16);
    EXPECT_EQ(f.comm_measure->peers, 7);
    EXPECT_EQ(f.ring->instances, 100);
    EXPECT_EQ(f.comm_measure->bytes, testing::kNcclDataParallelBytes);
    EXPECT_NEAR(f.comm_measure->busbw_gbps / f.comm_measure->peer_median_busbw_gbps, 0.5, 0.03);
    EXPECT_NE(f.summary.find("NCCL communicator " + NcclCommIdOf(DataParallelComm(3))),
              std::string::npos)
        << f.summary;
  }
}

// node5's GPUs have no NVLink (its topology dump) and its tensor-parallel all-reduces run at 0.15
// of the other nodes' bandwidth: the slow communicator and the dump make one pcie_bound finding on
// node5. Its ranks come late to every data-parallel all-reduce, having left the slow one late:
// a note at most. Without the dumps the same measurement is an imbalanced ring of node5's ranks.
TEST(ScaleTest, APlantedPcieOnlyNodeIsFoundPcieBound) {
  ScaleSim sim = NcclMedium(6);
  sim.pcie_bound_node = 5;
  sim.topology = true;
  std::vector<Finding> findings = DiagnoseNccl(SimulateScale(sim));
  ASSERT_EQ(findings.size(), 1u) << Summaries(findings);
  EXPECT_EQ(FindingKindName(findings[0].kind), "pcie_bound");
  EXPECT_EQ(findings[0].nodes, std::vector<std::string>{"node5"});
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{40, 41, 42, 43, 44, 45, 46, 47}));
  EXPECT_NE(findings[0].summary.find(
                "Node node5 is PCIe-bound: GPU pairs over PCIe only (NCCL topology): 0-1 PIX"),
            std::string::npos)
      << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("its communicator " + NcclCommIdOf(TensorParallelComm(5))),
            std::string::npos)
      << findings[0].summary;

  sim.topology = false;
  findings = DiagnoseNccl(SimulateScale(sim));
  ASSERT_EQ(findings.size(), 1u) << Summaries(findings);
  EXPECT_EQ(FindingKindName(findings[0].kind), "imbalanced_ring");
  EXPECT_EQ(findings[0].comm_measure->comm_id, NcclCommIdOf(TensorParallelComm(5)));
  EXPECT_EQ(findings[0].nodes, std::vector<std::string>{"node5"});
}

}  // namespace
}  // namespace rankscope
