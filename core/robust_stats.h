// Order statistics used to tell a real effect from noise (clock fits, analyses, report figures):
// medians, quantiles and the MAD-based robust standard deviation, which a few outliers (the very
// stragglers we look for) cannot inflate the way they inflate a mean or a standard deviation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/time.h"

namespace rankscope {

// The median of values (mean of the two middle ones for an even count); 0 when empty.
// Takes a copy because it reorders.
double Median(std::vector<double> values);
DurationNs MedianNs(std::vector<DurationNs> values);

// Median over values kept as a value-to-count map, with Median's arithmetic, where the `skipped`
// smallest values are not kept, only the largest of them (`largest_skipped`): a fold that needs
// the median exactly only when it reaches a threshold keeps the values below it as a count.
// nullopt when the median needs a value not kept (it lies below the kept ones); 0 when empty.
std::optional<double> MedianOfCounts(const std::map<int64_t, int64_t>& counts, int64_t skipped = 0,
                                     int64_t largest_skipped = 0);

// The q-quantile (0 <= q <= 1) with linear interpolation between order statistics; 0 when empty.
double Quantile(std::vector<double> values, double q);
DurationNs QuantileNs(std::vector<DurationNs> values, double q);

// 1.4826 * median(|x - median(x)|): estimates the standard deviation of the normal part of the
// data. 0 for fewer than two values.
double RobustSigma(std::vector<double> values);

// The median of sorted_values with the element at index skip left out (the "others" of one
// member). sorted_values must be sorted and hold at least two elements.
double MedianWithout(const std::vector<double>& sorted_values, size_t skip);

// Every member's "others": the median and robust sigma of all the values but one, exactly as
// Median and RobustSigma of a copy without it would give, for all members in O(n log n) (a copy
// per member is O(n^2): 16,384 ranks a second for the live check). The others' median takes at
// most three values (the member below, at or above the middle), so their deviations are sorted
// once per value and the member's own deviation left out of them.
// The values must be finite.
class LeaveOneOut {
 public:
  // `with_sigma` false: Median only (RobustSigma returns 0), without the deviations' sorts.
  explicit LeaveOneOut(const std::vector<double>& values, bool with_sigma = true);
  // Of all the values but values[i]; 0 when there are no others (RobustSigma: fewer than two).
  double Median(size_t i) const;
  double RobustSigma(size_t i) const;

 private:
  struct Center {
    double value = 0;
    std::vector<double> deviations;  // |v - value| of every value, sorted
  };
  std::vector<double> sorted_;
  std::vector<size_t> position_;  // of values[i] in sorted_
  std::vector<Center> centers_;   // at most three
};

// How far past a threshold a value is, for confidences: 1 - 0.5 x threshold / value, clamped to
// 0..1 (0.5 at the threshold, 0.75 at twice it, towards 1 far past it; 0 at half of it and
// below). 1 for a threshold <= 0.
double ThresholdMargin(double value, double threshold);

}  // namespace rankscope
