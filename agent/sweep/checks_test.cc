#include "agent/sweep/checks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

namespace rankscope {
namespace {

TEST(SweepChecks, RunIsolatedReturnsTheChildsResults) {
  auto results = RunIsolated("t", kNsPerSec, [] {
    return std::vector<SweepCheckResult>{{"t", "a", 1.5, "ratio", "", "x"},
                                         {"t", "b", 2.5, "ratio", "", ""}};
  });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].subject, "b");
  EXPECT_DOUBLE_EQ(results[1].value, 2.5);
  EXPECT_EQ(results[0].detail, "x");
}

TEST(SweepChecks, AHangingCheckIsKilledAtItsLimit) {
  const TimeNs start = MonotonicNow();
  auto results = RunIsolated("hang", 300 * kNsPerMs, [] {
    for (;;) pause();
    return std::vector<SweepCheckResult>{};
  });
  EXPECT_LT(MonotonicNow() - start, 3 * kNsPerSec);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].name, "hang");
  EXPECT_EQ(results[0].error, "timed out after 0 s (killed)");
}

TEST(SweepChecks, ACrashOrAnExitIsAnErrorButNothingToMeasureIsNot) {
  auto crashed =
      RunIsolated("crash", kNsPerSec, []() -> std::vector<SweepCheckResult> { std::abort(); });
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(crashed[0].error, "crashed: Aborted");
  auto exited = RunIsolated("exit", kNsPerSec, []() -> std::vector<SweepCheckResult> { _exit(3); });
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].error, "ended without results (exit code 3)");
  // A GPU check on a CPU node measures nothing, and that is no failure.
  auto empty = RunIsolated("empty", kNsPerSec, [] { return std::vector<SweepCheckResult>{}; });
  EXPECT_TRUE(empty.empty());
}

TEST(SweepChecks, AnIsolatedCheckRunsUntilCollected) {
  // The child watches until its stop pipe closes, as the GPU health watch does.
  IsolatedCheck watch("watch", [](int stop_fd) {
    int turns = 0;
    char c;
    while (read(stop_fd, &c, 1) > 0) ++turns;
    return std::vector<SweepCheckResult>{{"watch", "", static_cast<double>(turns), "", "", ""}};
  });
  usleep(50 * 1000);
  auto results = watch.Collect(kNsPerSec);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error, "");
  EXPECT_EQ(results[0].value, 0);

  IsolatedCheck deaf("deaf", [](int) -> std::vector<SweepCheckResult> {
    for (;;) pause();
  });
  auto killed = deaf.Collect(200 * kNsPerMs);
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ(killed[0].error, "timed out after 0 s (killed)");
}

TEST(SweepChecks, FreeSpaceOfAPathAndOfNoPath) {
  auto root = MeasureFreeSpace("/");
  ASSERT_EQ(root.size(), 2u);
  EXPECT_EQ(root[0].name, "fs.free_bytes");
  EXPECT_GT(root[0].value, 0);
  EXPECT_EQ(root[1].name, "fs.free_ratio");
  EXPECT_GT(root[1].value, 0);
  EXPECT_LE(root[1].value, 1);
  auto missing = MeasureFreeSpace("/nonexistent/scratch");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].subject, "/nonexistent/scratch");
  EXPECT_EQ(missing[0].error, "cannot read: No such file or directory");
}

TEST(SweepChecks, ComputeAndMemoryGiveAFigure) {
  auto flops = MeasureCpuFlops(50 * kNsPerMs);
  ASSERT_EQ(flops.size(), 1u);
  EXPECT_GT(flops[0].value, 1e8);  // any core of this century does more than 0.1 GFLOP/s
  auto memory = MeasureMemoryBandwidth(50 * kNsPerMs);
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_GT(memory[0].value, 1e8);
  EXPECT_EQ(memory[0].unit, "bytes_per_second");
}

}  // namespace
}  // namespace rankscope
