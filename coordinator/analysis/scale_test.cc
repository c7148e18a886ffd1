// The analyses on large generated sessions (coordinator/testing/scale_sim.h): silent on clean
// runs, and each planted problem found on its rank, node and communicator, with the wait it
// spreads through the node and across the data-parallel groups not blamed on anyone else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/aligner.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/testing/scale_sim.h"
#include "core/format.h"

namespace rankscope {
namespace {

using testing::DataParallelComm;
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
    if (f.kind == "straggler") straggler = &f;
    if (f.kind == "dataloader_skew") loader = &f;
  }
  ASSERT_NE(straggler, nullptr) << findings[0].kind << ", " << findings[1].kind;
  ASSERT_NE(loader, nullptr) << findings[0].kind << ", " << findings[1].kind;

  EXPECT_EQ(straggler->ranks, std::vector<int>{37});
  EXPECT_EQ(straggler->nodes, std::vector<std::string>{"node4"});
  // The others waited for it first in its node's tensor-parallel group.
  ASSERT_FALSE(straggler->evidence["communicators"].empty());
  EXPECT_EQ(straggler->evidence["communicators"][0]["comm_id"], FormatHex(TensorParallelComm(4)));
  EXPECT_EQ(straggler->evidence["communicators"][0]["last_instances"], 200);
  // ... then in the data-parallel group of its local rank, where all of node4 comes late.
  ASSERT_EQ(straggler->evidence["communicators"].size(), 2u);
  EXPECT_EQ(straggler->evidence["communicators"][1]["comm_id"], FormatHex(DataParallelComm(5)));
  EXPECT_EQ(straggler->evidence["cause_kind"], "nvtx_range");
  EXPECT_NEAR(straggler->evidence["median_lateness_ns"].get<double>(), 6.0 * kNsPerMs,
              1.5 * kNsPerMs);

  EXPECT_EQ(loader->ranks, std::vector<int>{200});
  EXPECT_EQ(loader->nodes, std::vector<std::string>{"node25"});

  // Node 4's other ranks arrive late at their data-parallel all-reduces only because they waited
  // for rank 37: at most a note, never a finding.
  for (const Finding& f : findings) {
    for (int r : f.ranks) EXPECT_TRUE(r == 37 || r == 200) << f.summary;
  }
}

}  // namespace
}  // namespace rankscope
