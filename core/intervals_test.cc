#include "core/intervals.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(CoverageFold, CountsEachInstantOnceInAnyOrder) {
  CoverageFold fold(1'000);
  fold.Add(100, 200);
  fold.Add(300, 400);
  fold.Add(150, 350);  // late, overlapping both: only 200-300 is new
  EXPECT_EQ(fold.covered(), 300);
  fold.Add(120, 180);  // wholly covered already
  fold.Add(400, 450);  // touching the last
  EXPECT_EQ(fold.covered(), 350);
  fold.Add(50, 60);  // earlier than all, within the horizon
  EXPECT_EQ(fold.covered(), 360);
  EXPECT_EQ(fold.latest_end(), 450);
}

TEST(CoverageFold, WhatComesLaterThanTheHorizonCountsFromIt) {
  CoverageFold fold(100);
  fold.Add(1'000, 1'050);
  fold.Add(800, 1'000);  // the horizon is at 950: only 950-1000 is counted
  EXPECT_EQ(fold.covered(), 100);
  // Many spans: the old ones are let go, the count stays exact.
  DurationNs expected = fold.covered();
  for (TimeNs t = 2'000; t < 200'000; t += 20) {
    fold.Add(t, t + 10);
    fold.Add(t + 5, t + 12);  // 2 more
    expected += 12;
  }
  EXPECT_EQ(fold.covered(), expected);
}

TEST(MergeIntervals, SortsAndMergesOverlappingAndTouchingSpans) {
  const Intervals merged = MergeIntervals({{5, 7}, {1, 3}, {3, 4}, {6, 9}});
  EXPECT_EQ(merged, (Intervals{{1, 4}, {5, 9}}));
  EXPECT_EQ(OverlapWith(merged, 2, 6), 3);
}

}  // namespace
}  // namespace rankscope
