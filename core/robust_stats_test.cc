#include "core/robust_stats.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(RobustStatsTest, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
  EXPECT_EQ(MedianNs({10, 30, 20, 40}), 25);
}

TEST(RobustStatsTest, QuantileInterpolates) {
  EXPECT_DOUBLE_EQ(Quantile({0, 10}, 0.9), 9);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3}, 0.0), 1);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 3}, 1.0), 5);
  EXPECT_EQ(QuantileNs({}, 0.5), 0);
}

TEST(RobustStatsTest, RobustSigmaIgnoresOutliers) {
  // MAD of {1,2,3,4,1000} around median 3 is median{2,1,0,1,997} = 1.
  EXPECT_DOUBLE_EQ(RobustSigma({1, 2, 3, 4, 1000}), 1.4826);
  EXPECT_DOUBLE_EQ(RobustSigma({7}), 0);
}

TEST(RobustStatsTest, MedianWithoutLeavesOneOut) {
  const std::vector<double> sorted = {1, 2, 3, 10};
  EXPECT_DOUBLE_EQ(MedianWithout(sorted, 3), 2);  // {1,2,3}
  EXPECT_DOUBLE_EQ(MedianWithout(sorted, 0), 3);  // {2,3,10}
  EXPECT_DOUBLE_EQ(MedianWithout({4, 8}, 0), 8);
  EXPECT_DOUBLE_EQ(MedianWithout({1, 2, 3}, 1), 2);  // {1,3}
}

}  // namespace
}  // namespace rankscope
