#include "core/robust_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

namespace rankscope {
namespace {

// Values below a threshold kept as a count and their largest: the median where it reaches the
// threshold is Median's, to the bit; below it, none.
TEST(RobustStatsTest, MedianOfCountsIsMediansWhereItLiesAmongTheKeptValues) {
  std::mt19937_64 rng(11);
  int exact = 0, straddled = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    const int64_t threshold = std::uniform_int_distribution<int64_t>(0, 10)(rng);
    std::vector<double> all;
    std::map<int64_t, int64_t> kept;
    int64_t skipped = 0, largest = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t v = std::uniform_int_distribution<int64_t>(0, 12)(rng);
      all.push_back(static_cast<double>(v));
      if (v >= threshold) {
        ++kept[v];
      } else {
        largest = skipped == 0 ? v : std::max(largest, v);
        ++skipped;
      }
    }
    const std::optional<double> median = MedianOfCounts(kept, skipped, largest);
    const auto mid = static_cast<size_t>(n / 2);
    if (static_cast<int64_t>(mid) < skipped) {
      EXPECT_FALSE(median.has_value());
      EXPECT_LT(Median(all), static_cast<double>(threshold));
      continue;
    }
    ASSERT_TRUE(median.has_value());
    EXPECT_EQ(*median, Median(all)) << "trial " << trial;
    ++exact;
    if (n % 2 == 0 && static_cast<int64_t>(mid) == skipped && skipped > 0) ++straddled;
  }
  EXPECT_GT(exact, 1000);
  EXPECT_GT(straddled, 50);  // the mean of the largest value skipped and the smallest kept
  EXPECT_EQ(MedianOfCounts({}), 0.0);
  EXPECT_EQ(MedianOfCounts({{5, 2}, {9, 1}}), 5.0);
}

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

TEST(RobustStatsTest, LeaveOneOutIsTheCopyWithoutTheMember) {
  std::mt19937 rng(7);
  for (size_t n = 0; n <= 40; ++n) {
    for (int round = 0; round < 5; ++round) {
      // Few distinct values in some rounds: ties at the middle are where it could go wrong.
      std::uniform_int_distribution<int> pick(0, round % 2 == 0 ? 3 : 1000);
      std::vector<double> values;
      for (size_t i = 0; i < n; ++i) values.push_back((pick(rng) - 2) / 7.0);  // some negative
      const LeaveOneOut loo(values);
      for (size_t i = 0; i < n; ++i) {
        std::vector<double> others = values;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
        EXPECT_EQ(loo.Median(i), Median(others)) << "n=" << n << " i=" << i;
        EXPECT_EQ(loo.RobustSigma(i), RobustSigma(others)) << "n=" << n << " i=" << i;
      }
    }
  }
}

}  // namespace
}  // namespace rankscope
