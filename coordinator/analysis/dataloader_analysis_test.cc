#include "coordinator/analysis/dataloader_analysis.h"

#include <gtest/gtest.h>

#include "coordinator/analysis/analysis_test_util.h"

namespace rankscope {
namespace {

using testing::Simulate;
using testing::TrainingSim;

TEST(DataloaderAnalysisTest, SlowDataOnOneRank) {
  TrainingSim sim;
  sim.slow_data[1] = 24 * kNsPerMs;
  const std::vector<Finding> findings = FindDataloaderSkew(Simulate(sim), DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, "dataloader_skew");
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(f.evidence["steps"], 50);
  EXPECT_EQ(f.evidence["steps_skewed"], 50);
  EXPECT_EQ(f.evidence["step_source"], "step_ranges");
  EXPECT_NEAR(f.evidence["median_excess_ns"].get<double>(), 24.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NEAR(f.evidence["total_excess_ns"].get<double>(), 50 * 24.0 * kNsPerMs, 50.0 * kNsPerMs);
  EXPECT_EQ(f.evidence["range_names"], nlohmann::json::array({"data"}));
  EXPECT_NE(f.summary.find("rank 1 (node n1) spends 26."), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("in 'data' vs 2."), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("(in 50/50 steps)"), std::string::npos) << f.summary;
  EXPECT_GT(f.confidence, 0.9);
  bool has_pidstat = false;
  for (const NextStep& step : f.next_steps) {
    if (step.tool == "pidstat") {
      has_pidstat = true;
      EXPECT_EQ(step.command,
                "mpirun -np 4 bash -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 1 ]; then "
                "exec pidstat -d 1 -e \"$@\"; else exec \"$@\"; fi' _ ./train --steps 50");
    }
  }
  EXPECT_TRUE(has_pidstat);
}

TEST(DataloaderAnalysisTest, DataRangesWithoutStepRanges) {
  TrainingSim sim;
  sim.step_ranges = false;
  sim.data_name = "load_batch";
  sim.slow_data[3] = 10 * kNsPerMs;
  const std::vector<Finding> findings = FindDataloaderSkew(Simulate(sim), DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
  EXPECT_EQ(findings[0].evidence["step_source"], "data_ranges");
}

TEST(DataloaderAnalysisTest, LoaderBetweenStepRangesCountsTowardTheNextStep) {
  TrainingSim sim;
  sim.slow_data[2] = 15 * kNsPerMs;
  Session s = Simulate(sim);
  // Move every step range to start after its data range: loading now runs between steps.
  for (RankData& r : s.ranks) {
    std::vector<RangeRecord> data;
    for (const RangeRecord& range : r.ranges) {
      if (range.name == "data") data.push_back(range);
    }
    size_t k = 0;
    for (RangeRecord& range : r.ranges) {
      if (range.name == "step") range.start = data[k++].end;
    }
  }
  const std::vector<Finding> findings = FindDataloaderSkew(s, DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_GE(findings[0].evidence["steps_skewed"].get<int>(), 49);  // step 0 has no window before
}

TEST(DataloaderAnalysisTest, CleanAndEmptySessionsGiveNothing) {
  TrainingSim sim;
  sim.jitter = 3 * kNsPerMs;
  EXPECT_TRUE(FindDataloaderSkew(Simulate(sim), DataloaderOptions{}).empty());
  EXPECT_TRUE(FindDataloaderSkew(Session{}, DataloaderOptions{}).empty());
  sim.ranks = 1;
  EXPECT_TRUE(FindDataloaderSkew(Simulate(sim), DataloaderOptions{}).empty());
}

}  // namespace
}  // namespace rankscope
