#include "agent/inject/fast_clock.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace rankscope::inject {
namespace {

// Over 60 ms of readings (past the 20 ms the rate takes to measure, across many anchors), every
// FastNow reading lies between the CLOCK_MONOTONIC readings taken around it, within a
// microsecond, and never goes backwards.
void ExpectFollowsMonotonic() {
  const TimeNs until = MonotonicNow() + 60 * kNsPerMs;
  TimeNs last = 0;
  DurationNs worst = 0;
  int readings = 0;
  for (TimeNs before = MonotonicNow(); before < until; before = MonotonicNow()) {
    const TimeNs fast = FastNow();
    const TimeNs after = MonotonicNow();
    worst = std::max({worst, before - fast, fast - after});
    ASSERT_GE(fast, last);
    last = fast;
    ++readings;
  }
  EXPECT_LT(worst, kNsPerUs) << readings << " readings";
}

TEST(FastClockTest, FollowsMonotonicAndNeverGoesBack) {
  RecordProperty("tsc", FastNowUsesTsc() ? "yes" : "no (MonotonicNow)");
  ExpectFollowsMonotonic();
}

TEST(FastClockTest, EachThreadFollowsMonotonic) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back(ExpectFollowsMonotonic);
  for (std::thread& t : threads) t.join();
}

}  // namespace
}  // namespace rankscope::inject
