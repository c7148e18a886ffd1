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

std::optional<double> MedianOfCounts(const std::map<int64_t, int64_t>& counts, int64_t skipped,
                                     int64_t largest_skipped) {
  int64_t n = skipped;
  for (const auto& [value, k] : counts) n += k;
  if (n == 0) return 0.0;
  // The value at `index` of the sorted values; nullopt among the skipped ones.
  auto at = [&](int64_t index) -> std::optional<double> {
    if (index < skipped) return std::nullopt;
    int64_t end = skipped;
    for (const auto& [value, k] : counts) {
      end += k;
      if (index < end) return static_cast<double>(value);
    }
    return std::nullopt;
  };
  const std::optional<double> upper = at(n / 2);
  if (!upper) return std::nullopt;
  if (n % 2 == 1) return *upper;
  const double lower =
      n / 2 - 1 < skipped ? static_cast<double>(largest_skipped) : at(n / 2 - 1).value();
  return lower + (*upper - lower) / 2.0;
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

LeaveOneOut::LeaveOneOut(const std::vector<double>& values, bool with_sigma)
    : position_(values.size()) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  sorted_.reserve(values.size());
  for (size_t p = 0; p < order.size(); ++p) {
    sorted_.push_back(values[order[p]]);
    position_[order[p]] = p;
  }
  if (!with_sigma || sorted_.size() < 3) return;  // (under 3: no member has two others)
  for (size_t p = 0; p < sorted_.size(); ++p) {
    const double center = MedianWithout(sorted_, p);
    if (std::any_of(centers_.begin(), centers_.end(),
                    [&](const Center& c) { return c.value == center; })) {
      continue;
    }
    Center c;
    c.value = center;
    c.deviations.reserve(sorted_.size());
    for (double v : sorted_) c.deviations.push_back(std::fabs(v - center));
    std::sort(c.deviations.begin(), c.deviations.end());
    centers_.push_back(std::move(c));
  }
}

double LeaveOneOut::Median(size_t i) const {
  if (sorted_.size() < 2) return 0.0;
  return MedianWithout(sorted_, position_[i]);
}

double LeaveOneOut::RobustSigma(size_t i) const {
  if (sorted_.size() < 3) return 0.0;
  const double center = MedianWithout(sorted_, position_[i]);
  for (const Center& c : centers_) {
    if (c.value != center) continue;
    const double own = std::fabs(sorted_[position_[i]] - center);
    const auto at = std::lower_bound(c.deviations.begin(), c.deviations.end(), own);
    return 1.4826 * MedianWithout(c.deviations, static_cast<size_t>(at - c.deviations.begin()));
  }
  return 0.0;  // not reached: every member's center is among centers_
}

double ThresholdMargin(double value, double threshold) {
  if (threshold <= 0) return 1.0;
  return std::clamp(1.0 - 0.5 * threshold / std::max(value, 1e-12), 0.0, 1.0);
}

}  // namespace rankscope
