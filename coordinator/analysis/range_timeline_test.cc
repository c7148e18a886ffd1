#include "coordinator/analysis/range_timeline.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

RangeRecord Range(std::string name, TimeNs start, TimeNs end, uint32_t tid = 1) {
  RangeRecord r;
  r.name = std::move(name);
  r.start = start;
  r.end = end;
  r.tid = tid;
  return r;
}

TEST(RangeTimelineTest, InnermostRangeOwnsEachInstant) {
  // step [0,100) { data [10,30) { read [15,20) } compute [40,90) }
  const std::vector<RangeRecord> ranges = {Range("step", 0, 100), Range("data", 10, 30),
                                           Range("read", 15, 20), Range("compute", 40, 90)};
  const RangeTimeline timeline(&ranges);
  const WindowTime w = timeline.TimeIn(0, 100, std::nullopt);
  EXPECT_EQ(w.window, 100);
  EXPECT_EQ(w.by_range.at("step"), 10 + 10 + 10);  // [0,10) [30,40) [90,100)
  EXPECT_EQ(w.by_range.at("data"), 15);
  EXPECT_EQ(w.by_range.at("read"), 5);
  EXPECT_EQ(w.by_range.at("compute"), 50);
  EXPECT_EQ(w.covered, 100);
  EXPECT_EQ(w.untracked(), 0);
}

TEST(RangeTimelineTest, ClipsToTheWindowAndFindsEnclosingRanges) {
  // The window starts inside "epoch" and "compute", both opened before it.
  const std::vector<RangeRecord> ranges = {Range("epoch", 0, 1000), Range("data", 10, 30),
                                           Range("compute", 40, 90), Range("data", 120, 130)};
  const RangeTimeline timeline(&ranges);
  const WindowTime w = timeline.TimeIn(50, 125, 1);
  EXPECT_EQ(w.by_range.at("compute"), 40);
  EXPECT_EQ(w.by_range.at("epoch"), 30);
  EXPECT_EQ(w.by_range.at("data"), 5);
  EXPECT_EQ(w.by_range.count("other"), 0u);

  const std::vector<size_t> overlapping = timeline.Overlapping(50, 125, std::nullopt);
  ASSERT_EQ(overlapping.size(), 3u);
  EXPECT_EQ(ranges[overlapping[0]].name, "epoch");
  EXPECT_EQ(ranges[overlapping[1]].name, "compute");
  EXPECT_EQ(ranges[overlapping[2]].start, 120);
}

TEST(RangeTimelineTest, UntrackedTimeAndThreadSelection) {
  const std::vector<RangeRecord> ranges = {Range("a", 0, 10, 1), Range("b", 20, 30, 2)};
  const RangeTimeline timeline(&ranges);
  EXPECT_TRUE(timeline.HasThread(2));
  EXPECT_FALSE(timeline.HasThread(3));
  const WindowTime one = timeline.TimeIn(0, 40, 1);
  EXPECT_EQ(one.covered, 10);
  EXPECT_EQ(one.untracked(), 30);
  const WindowTime all = timeline.TimeIn(0, 40, std::nullopt);
  EXPECT_EQ(all.covered, 20);
  EXPECT_EQ(all.by_range.at("b"), 10);
  EXPECT_EQ(timeline.TimeIn(40, 40, std::nullopt).window, 0);
}

}  // namespace
}  // namespace rankscope
