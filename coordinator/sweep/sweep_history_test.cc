#include "coordinator/sweep/sweep_history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rankscope {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("rs-sweep-" + std::to_string(getpid())) / name)
      .string();
}

std::vector<NodeVerdict> Figures(double bandwidth) {
  return JudgeSweep({{"n1",
                      true,
                      "",
                      {{"mem.bandwidth", "", bandwidth, "bytes_per_second", "", ""},
                       {"cpu.flops", "", 0, "flops", "timed out", ""}}}},
                    DefaultSweepThresholds());
}

TEST(SweepHistory, RecordsAndReturnsTheLastSweepsOfALevel) {
  const std::string path = TempPath("a/history.sqlite");  // the folder is created
  {
    auto history = SweepHistory::Open(path);
    ASSERT_TRUE(history.ok()) << history.status().message();
    for (int i = 0; i < 4; ++i) {
      SweepRunInfo run{"s" + std::to_string(i), "quick", 1000.0 + i, 1, {}};
      ASSERT_TRUE(history.value()->Record(run, Figures(10e9 + i)).ok());
    }
    SweepRunInfo deep{"d", "deep", 2000, 1, {}};
    ASSERT_TRUE(history.value()->Record(deep, Figures(1e9)).ok());
  }
  auto history = SweepHistory::Open(path);  // reopened: the figures stayed
  ASSERT_TRUE(history.ok());
  auto past = history.value()->Past("quick", 3);
  ASSERT_TRUE(past.ok()) << past.status().message();
  const std::vector<double>& values = past.value()[{"n1", "mem.bandwidth"}];
  EXPECT_EQ(values, (std::vector<double>{10e9 + 1, 10e9 + 2, 10e9 + 3}));  // oldest first
  EXPECT_EQ(past.value().count({"n1", "cpu.flops"}), 0u);  // an error is not a figure
  // n2 was in only the first sweep: its last figures are still its own.
  ASSERT_TRUE(history.value()->Record({"s9", "quick", 3000, 1, {}}, {}).ok());
  std::vector<NodeVerdict> n2 = Figures(3e9);
  n2[0].node = "n2";
  ASSERT_TRUE(history.value()->Record({"s0b", "quick", 999, 1, {}}, n2).ok());
  past = history.value()->Past("quick", 3);
  ASSERT_TRUE(past.ok());
  const SweepPast::key_type n1_key("n1", "mem.bandwidth"), n2_key("n2", "mem.bandwidth");
  EXPECT_EQ(past.value()[n2_key], std::vector<double>{3e9});
  EXPECT_EQ(past.value()[n1_key].size(), 3u);
  std::filesystem::remove_all(TempPath(""));
}

TEST(SweepHistory, ACorruptOrForeignFileIsAnErrorNamingIt) {
  std::filesystem::create_directories(TempPath(""));
  const std::string garbage = TempPath("garbage.sqlite");
  std::ofstream(garbage) << "this is not a database, but long enough to have a header.......";
  auto opened = SweepHistory::Open(garbage);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message(), garbage + ": file is not a database");
  std::filesystem::remove_all(TempPath(""));
}

TEST(SweepVerdicts, AFallFromTheNodesOwnPastIsATrend) {
  std::vector<NodeVerdict> now = Figures(7e9);  // passes: no peers to compare with
  ASSERT_EQ(now[0].checks[0].status, SweepStatus::kPass);
  SweepPast past;
  past[{"n1", "mem.bandwidth"}] = {10e9, 10.2e9, 9.8e9};
  ApplyTrends(past, DefaultSweepThresholds(), &now);
  EXPECT_EQ(now[0].checks[0].status, SweepStatus::kWarn);  // 70% < 85%
  EXPECT_TRUE(now[0].checks[0].trend);
  EXPECT_EQ(now[0].checks[0].reason,
            "trend: 7.00 GB/s is 70% of this node's median 10.00 GB/s over its last 3 sweeps");
  // One past sweep is not a trend.
  std::vector<NodeVerdict> again = Figures(7e9);
  ApplyTrends({{{"n1", "mem.bandwidth"}, {10e9}}}, DefaultSweepThresholds(), &again);
  EXPECT_EQ(again[0].checks[0].status, SweepStatus::kPass);
  EXPECT_FALSE(again[0].checks[0].past_median.has_value());
}

}  // namespace
}  // namespace rankscope
