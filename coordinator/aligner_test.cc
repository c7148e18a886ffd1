#include "coordinator/aligner.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(Aligner, MovesRecordsOntoTheCoordinatorClock) {
  Session s;
  RankData r;
  r.id.rank = 0;
  // Agent clock is 1 s ahead of the coordinator: coord = local - 1e9.
  for (int i = 0; i < 10; ++i) {
    TimeNs t1 = 5'000'000'000 + i * 1'000'000;
    r.clock_samples.push_back({t1, t1 - kNsPerSec + 500, t1 - kNsPerSec + 600, t1 + 1'100});
  }
  r.collectives.push_back({.enter = 6'000'000'000, .exit = 6'000'000'100});
  r.ranges.push_back({"", "step", 6'000'000'000, 6'000'000'500, 1, 0});
  r.marks.push_back({"", "m", 6'000'000'000, 1});
  r.p2p.push_back({.enter = 6'000'000'000, .exit = 6'000'000'001});
  r.mpi_calls.push_back({.enter = 6'000'000'000, .exit = 6'000'000'300});
  s.ranks.push_back(r);
  Session a = AlignSession(s);
  ASSERT_TRUE(a.aligned);
  const RankData& ar = a.ranks[0];
  EXPECT_TRUE(ar.clock_fitted);
  EXPECT_NEAR(static_cast<double>(ar.clock.offset_ns), -1e9, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.collectives[0].enter), 5e9, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.ranges[0].end), 5e9 + 500, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.marks[0].time), 5e9, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.p2p[0].exit), 5e9, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.mpi_calls[0].enter), 5e9, 1'000);
  EXPECT_NEAR(static_cast<double>(ar.mpi_calls[0].exit), 5e9 + 300, 1'000);
  // Idempotent.
  Session again = AlignSession(a);
  EXPECT_EQ(again.ranks[0].collectives[0].enter, ar.collectives[0].enter);
}

TEST(Aligner, RankWithoutSamplesKeepsItsClockAndSaysWhy) {
  Session s;
  RankData r;
  r.collectives.push_back({.enter = 7, .exit = 8});
  s.ranks.push_back(r);
  Session a = AlignSession(s);
  EXPECT_FALSE(a.ranks[0].clock_fitted);
  EXPECT_FALSE(a.ranks[0].clock_error.empty());
  EXPECT_EQ(a.ranks[0].collectives[0].enter, 7);
}

}  // namespace
}  // namespace rankscope
