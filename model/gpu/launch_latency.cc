#include "model/gpu/launch_latency.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace rankscope {
namespace {

constexpr DurationNs kExactBelow = 256;

}  // namespace

bool IsKernelLaunch(const GpuActivityRecord& record) {
  return record.kind == GpuActivityKind::kRuntime &&
         record.name.find("Launch") != std::string::npos;
}

int32_t LatencyBucket(DurationNs v) {
  const double magnitude = std::fabs(static_cast<double>(v));
  if (magnitude < static_cast<double>(kExactBelow)) return static_cast<int32_t>(v);
  const double steps = std::floor(std::log(magnitude / kExactBelow) / std::log1p(0.01));
  const auto bucket = static_cast<int32_t>(kExactBelow + steps);
  return v < 0 ? -bucket : bucket;
}

LaunchLatencyFold::LaunchLatencyFold(DurationNs window, DurationNs horizon)
    : window_(std::max<DurationNs>(window, 1)), horizon_(std::max<DurationNs>(horizon, 1)) {}

void LaunchLatencyFold::Add(const GpuActivityRecord& record) {
  if (record.correlation_id == 0) return;
  if (IsKernelLaunch(record)) {
    latest_ = std::max(latest_, record.end);
    if (auto k = kernel_start_.find(record.correlation_id); k != kernel_start_.end()) {
      Count(k->second, k->second - record.end);
      kernel_start_.erase(k);
    } else {
      launch_end_.emplace(record.correlation_id, record.end);  // the first one, as the report
    }
  } else if (record.kind == GpuActivityKind::kKernel) {
    latest_ = std::max(latest_, record.start);
    if (auto l = launch_end_.find(record.correlation_id); l != launch_end_.end()) {
      Count(record.start, record.start - l->second);
      launch_end_.erase(l);
    } else {
      kernel_start_.emplace(record.correlation_id, record.start);
    }
  } else {
    return;
  }
  if (latest_ >= next_forget_) {
    Forget(horizon_);
    next_forget_ = latest_ > INT64_MAX - horizon_ ? INT64_MAX : latest_ + horizon_;
  }
  if (waiting() > kMaxWaiting) Forget(0);  // at most once per kMaxWaiting records
}

void LaunchLatencyFold::Count(TimeNs kernel_start, DurationNs latency) {
  const int32_t bucket = LatencyBucket(latency);
  LatencyBucketCount& b = open_[WindowStartOf(kernel_start, window_)][bucket];
  b.bucket = bucket;
  ++b.count;
  b.sum += latency;
}

// Forgets the sides more than `older_than` before the latest time seen. Runs once per horizon of
// time seen (or when too many wait), so each waiting side is looked at a bounded number of times.
void LaunchLatencyFold::Forget(DurationNs older_than) {
  if (latest_ < INT64_MIN + older_than) return;
  const TimeNs before = latest_ - older_than;
  std::erase_if(launch_end_, [&](const auto& e) { return e.second < before; });
  std::erase_if(kernel_start_, [&](const auto& e) { return e.second < before; });
}

std::vector<LaunchLatency> LaunchLatencyFold::Take(TimeNs until, bool all) {
  std::vector<LaunchLatency> rows;
  if (!all && until < INT64_MIN + window_) return rows;  // no window ends that early
  auto it = open_.begin();
  for (; it != open_.end() && (all || it->first <= until - window_); ++it) {
    LaunchLatency row;
    row.window_start = it->first;
    row.window = window_;
    for (const auto& [bucket, b] : it->second) row.buckets.push_back(b);
    rows.push_back(std::move(row));
  }
  open_.erase(open_.begin(), it);
  return rows;
}

LatencyDistribution DistributionOf(const std::vector<LaunchLatency>& rows) {
  std::map<int32_t, LatencyBucketCount> merged;
  for (const LaunchLatency& row : rows) {
    for (const LatencyBucketCount& b : row.buckets) {
      LatencyBucketCount& m = merged[b.bucket];
      m.bucket = b.bucket;
      m.count += b.count;
      m.sum += b.sum;
    }
  }
  LatencyDistribution out;
  for (const auto& [bucket, b] : merged) out.samples += b.count;
  if (out.samples == 0) return out;
  // The value at sorted position `index`: the mean of the bucket it falls in.
  auto at = [&](int64_t index) {
    for (const auto& [bucket, b] : merged) {
      if (index < b.count) return static_cast<double>(b.sum) / static_cast<double>(b.count);
      index -= b.count;
    }
    return 0.0;  // not reached: index < samples
  };
  // As core/robust_stats' Quantile: interpolated between the two order statistics around q.
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(out.samples - 1);
    const auto lo = static_cast<int64_t>(std::floor(pos));
    const int64_t hi = std::min(lo + 1, out.samples - 1);
    const double low = at(lo);
    return static_cast<DurationNs>(std::llround(low + (at(hi) - low) * (pos - std::floor(pos))));
  };
  out.median = quantile(0.5);
  out.p99 = quantile(0.99);
  return out;
}

}  // namespace rankscope
