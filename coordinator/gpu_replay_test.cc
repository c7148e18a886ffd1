// Replays sessions recorded on 2xH200 (tests/fixtures/h200x2-torchrun-sessions) through the
// analyses: the GPU path's result, checked on every CI run without a GPU.
#include <gtest/gtest.h>

#include "coordinator/analysis/diagnosis.h"
#include "coordinator/report/session_store.h"

namespace rankscope {
namespace {

Session Load(const std::string& name) {
  Result<Session> s = LoadSession(std::string(RANKSCOPE_FIXTURES_DIR) +
                                  "/h200x2-torchrun-sessions/" + name + ".sqlite");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : Session{};
}

TEST(GpuReplay, InjectedSleepOnRankOneIsAStragglerWithTheRightLateness) {
  Session s = Load("sleep-rank1-20ms");
  ASSERT_EQ(s.ranks.size(), 2u);
  ASSERT_TRUE(s.ranks[1].nccl.has_value());
  std::vector<Finding> findings = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "straggler");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  // 20 ms of host sleep before compute: rank 1's NCCL kernels start ~20 ms after rank 0's.
  const double lateness_ms = findings[0].evidence["median_lateness_ns"].get<double>() / 1e6;
  EXPECT_NEAR(lateness_ms, 20.0, 2.0);
}

TEST(GpuReplay, CleanRunHasNoFinding) {
  Session s = Load("clean");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
}

}  // namespace
}  // namespace rankscope
