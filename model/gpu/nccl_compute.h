// A rank's compute-kernel spans where they meet its NCCL kernels (issue #16: what the ring
// analysis reads of the raw kernels, as an agent can send it). The ring analysis judges a link
// only on NCCL instances no member's GPU ran other kernels beside: per member, the time its
// merged non-NCCL kernels overlap [last enter, last exit] of the instance, the span from the
// latest member's kernel start to the latest end (coordinator/analysis/ring_analysis.cc). That
// span starts inside the member's own NCCL kernel (its start is the earliest or equal) and ends
// where the last member's kernel ends: on the 2xH200 recordings at most 95 us after the member's
// own end. So the merged compute spans clipped to [a NCCL kernel's start, its end + a margin]
// answer every such overlap exactly where the instance ends within the margin, and the reader can
// tell where it does not (it knows both ends). Pure.
#pragma once

#include <cstdint>
#include <map>

#include "core/intervals.h"
#include "core/time.h"

namespace rankscope {

// How long after a NCCL kernel's end the compute spans are kept: 10x the latest end of an
// instance after a member's own seen on the recordings.
inline constexpr DurationNs kNcclComputeMargin = kNsPerMs;

// Makes the spans from NCCL and compute kernels fed in any order. Not thread-safe; memory: the
// merged compute spans and NCCL windows not decided yet.
class NcclComputeFold {
 public:
  explicit NcclComputeFold(DurationNs margin = kNcclComputeMargin) : margin_(margin) {}

  void AddNcclKernel(TimeNs start, TimeNs end);
  // A kernel that is not NCCL's.
  void AddComputeKernel(TimeNs start, TimeNs end);

  // The merged compute time in [some NCCL kernel's start, its end + margin) before `until`, once
  // no kernel starting before it can still come; ordered, each call's after the last call's
  // (spans of two calls may touch: merge them when reading).
  Intervals TakeDecided(TimeNs until);
  Intervals TakeAll() { return TakeDecided(INT64_MAX); }

  // Kernels that came after the time they cover was decided, on a rank that has NCCL kernels:
  // the spans may miss compute time there.
  int64_t late() const { return late_; }
  size_t held() const { return wanted_.size() + compute_.size(); }

 private:
  DurationNs margin_;
  std::map<TimeNs, TimeNs> wanted_;   // NCCL windows, merged, from -> to, ending after decided_
  std::map<TimeNs, TimeNs> compute_;  // compute kernels, merged, ending after decided_
  TimeNs decided_ = INT64_MIN;
  bool any_nccl_ = false;
  int64_t late_ = 0;
};

}  // namespace rankscope
