#include "core/robust_stats.h"

#include <algorithm>
#include <cmath>

namespace rankscope {

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2.0;
}

DurationNs MedianNs(std::vector<DurationNs> values) {
  std::vector<double> d(values.begin(), values.end());
  return static_cast<DurationNs>(std::llround(Median(std::move(d))));
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

DurationNs QuantileNs(std::vector<DurationNs> values, double q) {
  std::vector<double> d(values.begin(), values.end());
  return static_cast<DurationNs>(std::llround(Quantile(std::move(d), q)));
}

double RobustSigma(std::vector<double> values) {
  if (values.size() < 2) return 0.0;
  const double center = Median(values);
  for (double& v : values) v = std::fabs(v - center);
  // 1.4826 makes the MAD an unbiased estimate of sigma for normally distributed data.
  return 1.4826 * Median(std::move(values));
}

double MedianWithout(const std::vector<double>& sorted_values, size_t skip) {
  const size_t m = sorted_values.size() - 1;  // elements left
  auto at = [&](size_t i) { return sorted_values[i < skip ? i : i + 1]; };
  if (m % 2 == 1) return at(m / 2);
  return at(m / 2 - 1) + (at(m / 2) - at(m / 2 - 1)) / 2.0;
}

double ThresholdMargin(double value, double threshold) {
  if (threshold <= 0) return 1.0;
  return std::clamp(1.0 - 0.5 * threshold / std::max(value, 1e-12), 0.0, 1.0);
}

}  // namespace rankscope
