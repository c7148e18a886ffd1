#include "model/gpu/launch_latency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/robust_stats.h"

namespace rankscope {
namespace {

GpuActivityRecord Launch(uint32_t correlation, TimeNs start, TimeNs end) {
  GpuActivityRecord r;
  r.kind = GpuActivityKind::kRuntime;
  r.correlation_id = correlation;
  r.start = start;
  r.end = end;
  r.name = "cudaLaunchKernel";
  return r;
}

GpuActivityRecord Kernel(uint32_t correlation, TimeNs start) {
  GpuActivityRecord r;
  r.kind = GpuActivityKind::kKernel;
  r.device = 0;
  r.stream = 7;
  r.correlation_id = correlation;
  r.start = start;
  r.end = start + 100;
  r.name = "gemm";
  return r;
}

TEST(LatencyBucket, ExactBelow256AndOnePercentWideAbove) {
  EXPECT_EQ(LatencyBucket(0), 0);
  EXPECT_EQ(LatencyBucket(255), 255);
  EXPECT_EQ(LatencyBucket(-17), -17);
  EXPECT_EQ(LatencyBucket(256), 256);
  EXPECT_EQ(LatencyBucket(-256), -256);
  // Increasing, and a bucket's values within 1 % of each other.
  int32_t previous = LatencyBucket(-10'000'000'000);
  DurationNs first_of_bucket = -10'000'000'000;
  for (DurationNs v = -10'000'000'000; v < 10'000'000'000; v += 1 + std::abs(v) / 997) {
    const int32_t b = LatencyBucket(v);
    ASSERT_GE(b, previous) << v;
    if (b != previous) {
      previous = b;
      first_of_bucket = v;
    }
    if (v > 0) {
      ASSERT_LE(static_cast<double>(v), 1.0101 * static_cast<double>(first_of_bucket));
    }
  }
}

TEST(LaunchLatencyFold, JoinsEitherOrderAndCountsInTheKernelsWindow) {
  LaunchLatencyFold fold(1000, 10'000);
  fold.Add(Launch(1, 100, 120));
  fold.Add(Kernel(1, 150));  // 30 ns, window 0
  fold.Add(Kernel(2, 990));  // its launch comes later
  fold.Add(Launch(2, 900, 980));
  fold.Add(Launch(3, 1000, 1010));
  fold.Add(Kernel(3, 1005));  // began before its launch returned: -5 ns, window 1000
  GpuActivityRecord copy = Kernel(4, 500);
  copy.kind = GpuActivityKind::kMemcpy;
  fold.Add(copy);            // not a kernel
  fold.Add(Kernel(0, 600));  // no correlation id
  EXPECT_EQ(fold.waiting(), 0u);

  std::vector<LaunchLatency> first = fold.TakeClosed(1000);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].window_start, 0);
  EXPECT_EQ(first[0].window, 1000);
  ASSERT_EQ(first[0].buckets.size(), 2u);
  EXPECT_EQ(first[0].buckets[0], (LatencyBucketCount{10, 1, 10}));
  EXPECT_EQ(first[0].buckets[1], (LatencyBucketCount{30, 1, 30}));
  std::vector<LaunchLatency> rest = fold.TakeAll();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].window_start, 1000);
  EXPECT_EQ(rest[0].buckets, (std::vector<LatencyBucketCount>{{-5, 1, -5}}));
  EXPECT_TRUE(fold.TakeAll().empty());
}

TEST(LaunchLatencyFold, SidesWithoutTheirOtherAreForgottenPastTheHorizon) {
  LaunchLatencyFold fold(1000, 5000);
  fold.Add(Launch(1, 0, 10));  // cudaMemcpyAsync-like: launches nothing
  fold.Add(Kernel(2, 20));     // its launch was not captured
  EXPECT_EQ(fold.waiting(), 2u);
  for (uint32_t i = 3; i < 100; ++i) {
    fold.Add(Launch(i, 1000 * i, 1000 * i + 5));
    fold.Add(Kernel(i, 1000 * i + 50));
  }
  EXPECT_EQ(fold.waiting(), 0u);
  // A kernel whose launch comes late but inside the horizon is still joined.
  fold.Add(Kernel(500, 99'000));
  fold.Add(Launch(500, 98'000, 98'500));
  EXPECT_EQ(DistributionOf(fold.TakeAll()).samples, 98);
}

TEST(LaunchLatencyFold, QuantilesWithinOnePercentOfTheRecords) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> latency(std::log(20'000.0), 1.2);
  LaunchLatencyFold fold(1'000'000, 10'000'000);
  std::vector<DurationNs> exact;
  std::vector<LaunchLatency> rows;
  TimeNs t = 0;
  for (uint32_t i = 1; i <= 20'000; ++i) {
    t += 5000;
    auto d = static_cast<DurationNs>(latency(rng)) - 3000;  // some negative
    exact.push_back(d);
    fold.Add(Launch(i, t - 1000, t));
    fold.Add(Kernel(i, t + d));
    for (LaunchLatency& row : fold.TakeClosed(t - 20'000'000)) rows.push_back(std::move(row));
  }
  for (LaunchLatency& row : fold.TakeAll()) rows.push_back(std::move(row));
  EXPECT_GT(rows.size(), 50u);  // many windows, merged
  const LatencyDistribution d = DistributionOf(rows);
  EXPECT_EQ(d.samples, 20'000);
  const DurationNs median = MedianNs(exact), p99 = QuantileNs(exact, 0.99);
  EXPECT_NEAR(d.median, median, 0.01 * std::abs(median) + 1);
  EXPECT_NEAR(d.p99, p99, 0.01 * std::abs(p99) + 1);
  EXPECT_EQ(DistributionOf({}).samples, 0);
}

}  // namespace
}  // namespace rankscope
