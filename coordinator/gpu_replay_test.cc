// Replays sessions recorded on 2xH200 (tests/fixtures/h200x2-torchrun-sessions) through the
// analyses: the GPU path's result, checked on every CI run without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "coordinator/analysis/diagnosis.h"
#include "coordinator/report/report_json.h"
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

TEST(GpuReplay, BusBandwidthFromKernelTimesIsThatOfNvLink) {
  Session s = Load("clean");
  nlohmann::json report = BuildReportJson(s, {});
  const auto& shape = report["nccl"]["communicators"][0]["shapes"][0];
  EXPECT_EQ(shape["op"], "AllReduce");
  EXPECT_EQ(shape["bytes"], 64 << 20);
  EXPECT_EQ(shape["timed_instances"], 40);
  // Two H200s over NVLink (NV18): far above PCIe gen5 x16 (~55 GB/s), below NVLink's 450 GB/s.
  const double busbw = shape["busbw_gbps"].get<double>();
  EXPECT_GT(busbw, 100.0);
  EXPECT_LT(busbw, 450.0);
  std::printf("recorded 2xH200 all-reduce 64 MiB: busbw %.1f GB/s\n", busbw);
}

TEST(GpuReplay, CleanRunHasNoFinding) {
  Session s = Load("clean");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
}

}  // namespace
}  // namespace rankscope
