// A rank's launch latency (a kernel's start on the GPU less the end of the runtime call that
// launched it, joined by CUPTI correlation id) as an agent says it instead of every launch and
// kernel record (issue #16): per fixed window of the rank's clock, a histogram whose buckets are
// exact below 256 ns and 1 % wide above, each with its count and the sum of its values. Any
// quantile read from it is within 1 % of the one the records give (a bucket's values lie within
// 1 % of each other, and it stands for their mean). Small means the GPU waits for the CPU (a
// launch-bound loop), large means work queues. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// Whether `record` is a kernel launch call: a runtime function with "Launch" in its name
// (cudaLaunchKernel, cuLaunchKernelEx, a graph launch). The one rule for the launch latency, the
// dataloader's first launch of a step and what an agent keeps of the launches.
bool IsKernelLaunch(const GpuActivityRecord& record);

// The bucket of latency `v` (ns; negative where a kernel began before its launch call returned):
// v itself below 256 ns in magnitude, else 256 + floor(log(|v| / 256) / log(1.01)) with v's sign.
// Increasing in v.
int32_t LatencyBucket(DurationNs v);

struct LatencyBucketCount {
  int32_t bucket = 0;
  int64_t count = 0;
  DurationNs sum = 0;  // of the latencies counted in it

  bool operator==(const LatencyBucketCount&) const = default;
};

// The launch latencies of the kernels that began in one window [window_start, window_start +
// window) of the rank's clock (window_start a multiple of window; the coordinator moves it to its
// own clock, the latencies stay the rank's). Buckets in increasing order, none empty.
struct LaunchLatency {
  TimeNs window_start = 0;
  DurationNs window = 0;
  std::vector<LatencyBucketCount> buckets;

  bool operator==(const LaunchLatency&) const = default;
};

// Joins a rank's launch calls (kRuntime records with a correlation id and "Launch" in their name:
// cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch...) with their kernels, in whichever order
// they come, and counts each kernel's latency in the window of its start. A side whose other never
// comes (a launch that failed, a kernel whose launch was not captured) is forgotten once the
// latest time seen is `horizon` past it; when more than kMaxWaiting wait (a capture without
// runtime records), all but those at the latest time are forgotten. Not thread-safe; memory: the
// sides waiting for their other (at most kMaxWaiting) and the buckets of the windows still open.
class LaunchLatencyFold {
 public:
  static constexpr size_t kMaxWaiting = 1 << 18;

  // window > 0, horizon > 0.
  LaunchLatencyFold(DurationNs window, DurationNs horizon);

  // Records of other kinds, and those without a correlation id, are ignored.
  void Add(const GpuActivityRecord& record);

  // The rows of every window that ends at or before `until`, in window order, and forgotten. A
  // kernel joined later for a window already taken comes in a row of its own.
  std::vector<LaunchLatency> TakeClosed(TimeNs until) { return Take(until, /*all=*/false); }
  // Every window still open (the end of the run).
  std::vector<LaunchLatency> TakeAll() { return Take(0, /*all=*/true); }

  // Launches and kernels waiting for their other side.
  size_t waiting() const { return launch_end_.size() + kernel_start_.size(); }

 private:
  std::vector<LaunchLatency> Take(TimeNs until, bool all);
  void Count(TimeNs kernel_start, DurationNs latency);
  void Forget(DurationNs older_than);

  DurationNs window_;
  DurationNs horizon_;
  TimeNs latest_ = INT64_MIN;
  TimeNs next_forget_ = INT64_MIN;
  std::unordered_map<uint32_t, TimeNs> launch_end_;               // by correlation id
  std::unordered_map<uint32_t, TimeNs> kernel_start_;             // by correlation id
  std::map<TimeNs, std::map<int32_t, LatencyBucketCount>> open_;  // by window_start, bucket
};

// The latency figures the report gives: how many kernels were joined, the median and the 99th
// percentile, read from any rows (MedianNs and QuantileNs over the bucket means).
struct LatencyDistribution {
  int64_t samples = 0;
  DurationNs median = 0;
  DurationNs p99 = 0;
};
LatencyDistribution DistributionOf(const std::vector<LaunchLatency>& rows);

}  // namespace rankscope
