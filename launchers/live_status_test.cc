#include "launchers/live_status.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(LiveStatusLine, SaysRanksStepsRateAndWhatIsSummed) {
  LiveProgress before{.ranks = 4, .records = 100'000};
  LiveProgress now{.ranks = 4,
                   .finished = 1,
                   .summed = 3,
                   .records = 152'100,
                   .steps = 12'345,
                   .dropped = 1'200};
  EXPECT_EQ(LiveStatusLine(now, before, kNsPerSec, 12 * kNsPerSec + 5, true),
            "rankscope: 4 ranks (1 done), step 12,345, 52.1 k records/s, 3 ranks send GPU "
            "kernels summed, 1,200 records dropped, 12 s");
}

TEST(LiveStatusLine, AJobWithoutStepsOrCaptureSaysSo) {
  LiveProgress now{.ranks = 1, .records = 10};
  EXPECT_EQ(LiveStatusLine(now, now, 2 * kNsPerSec, 3 * kNsPerSec, true),
            "rankscope: 1 rank, 0 records/s, 3 s");
  EXPECT_EQ(LiveStatusLine(now, now, 2 * kNsPerSec, 3 * kNsPerSec, false),
            "rankscope: 1 rank, dormant (rankscope capture starts it), 3 s");
}

}  // namespace
}  // namespace rankscope
