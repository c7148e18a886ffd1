#include "core/clock_model.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rankscope {
namespace {

// Simulates exchanges with an agent whose clock reads `true_offset` behind the coordinator
// (coord = local + true_offset) and drifts by `drift_ppm`, with random one-way delays.
std::vector<ClockSample> Simulate(DurationNs true_offset, double drift_ppm, int n,
                                  DurationNs spacing, unsigned seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> queueing(1.0 / 200'000.0);  // mean 200 us
  std::vector<ClockSample> out;
  TimeNs local = 1'000 * kNsPerSec;
  for (int i = 0; i < n; ++i) {
    auto to_coord = [&](TimeNs l) {
      return l + true_offset + static_cast<DurationNs>(drift_ppm * 1e-6 * (l - 1'000 * kNsPerSec));
    };
    DurationNs up = 20'000 + static_cast<DurationNs>(queueing(rng));
    DurationNs down = 20'000 + static_cast<DurationNs>(queueing(rng));
    ClockSample s;
    s.t1 = local;
    s.t2 = to_coord(local + up);
    s.t3 = s.t2 + 5'000;
    s.t4 = local + up + 5'000 + down;
    out.push_back(s);
    local += spacing;
  }
  return out;
}

TEST(ClockSample, OffsetAndDelayOfASymmetricExchange) {
  ClockSample s{.t1 = 100, .t2 = 1'150, .t3 = 1'160, .t4 = 220};
  EXPECT_EQ(s.Delay(), 110);
  EXPECT_EQ(s.Offset(), 995);
}

TEST(ClockModel, RecoversALargeOffsetFromNoisySamples) {
  auto samples = Simulate(-3600 * kNsPerSec, 0.0, 64, 1 * kNsPerMs, 1);
  auto model = FitClockModel(samples);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_NEAR(static_cast<double>(model->ToCoordinator(1'000 * kNsPerSec)),
              static_cast<double>(1'000 * kNsPerSec - 3600 * kNsPerSec), 30'000.0);
  // Honest: at most half the kept samples' median round trip (here 40 us + two exponential
  // queueings of 200 us mean, the lowest quarter kept) plus their spread; the error itself is
  // well under it.
  EXPECT_GT(model->uncertainty_ns, 30'000);
  EXPECT_LT(model->uncertainty_ns, 160'000);
  EXPECT_EQ(model->drift_ppm, 0.0);  // span too short to estimate drift
}

TEST(ClockModel, EstimatesDriftOverALongSpan) {
  auto samples = Simulate(5 * kNsPerMs, 40.0, 120, 500 * kNsPerMs, 2);  // 60 s
  auto model = FitClockModel(samples);
  ASSERT_TRUE(model.ok());
  EXPECT_NEAR(model->drift_ppm, 40.0, 2.0);
  TimeNs late = 1'000 * kNsPerSec + 50 * kNsPerSec;
  TimeNs truth = late + 5 * kNsPerMs + static_cast<DurationNs>(40e-6 * 50e9);
  EXPECT_NEAR(static_cast<double>(model->ToCoordinator(late)), static_cast<double>(truth), 50'000);
}

TEST(ClockModel, IgnoresOutliersWithHugeDelay) {
  auto samples = Simulate(0, 0.0, 40, 1 * kNsPerMs, 3);
  // A few samples whose reply sat in a queue for 50 ms on one direction only.
  for (int i = 0; i < 5; ++i) samples[i].t4 += 50 * kNsPerMs;
  auto model = FitClockModel(samples);
  ASSERT_TRUE(model.ok());
  EXPECT_LT(std::abs(model->offset_ns), 30'000);
}

TEST(ClockModel, FailsWithoutUsableSamples) {
  EXPECT_FALSE(FitClockModel({}).ok());
  std::vector<ClockSample> bad = {{.t1 = 10, .t2 = 0, .t3 = 0, .t4 = 5}};
  auto model = FitClockModel(bad);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("1 with negative delay"), std::string::npos);
}

}  // namespace
}  // namespace rankscope
