#include "model/gpu/compute_thinning.h"

#include <set>
#include <string>

#include "model/gpu/launch_latency.h"
#include "model/nccl/kernel_name.h"

namespace rankscope {

bool IsNcclKernel(const GpuActivityRecord& r) {
  return r.kind == GpuActivityKind::kKernel && r.name.find("nccl") != std::string::npos &&
         DecodeNcclKernel(r.name);
}

bool ComputeRecordThinning::Add(const GpuActivityRecord& r) {
  first_work_.AddGpu(r);
  if (IsNcclKernel(r)) {
    nccl_correlations_[r.correlation_id] = r.start;
    // Its launch was decided before it came: it goes out now, with the next decision.
    if (auto launch = waiting_launches_.find(r.correlation_id); launch != waiting_launches_.end()) {
      released_.push_back(std::move(launch->second));
      waiting_launches_.erase(launch);
    }
    return true;
  }
  if (r.kind != GpuActivityKind::kKernel && !IsKernelLaunch(r)) return true;  // copies, syncs...
  if (!thinning_) {
    ++raw_sent_;
    thinning_ = budget_ > 0 && raw_sent_ >= budget_;
    return true;
  }
  // Decided without it (it came late): sent as it is, so the step reading still sees it.
  if (r.start <= decided_) return true;
  held_.emplace(r.start, r);
  return false;
}

std::vector<GpuActivityRecord> ComputeRecordThinning::TakeDecided(TimeNs until) {
  std::vector<GpuActivityRecord> out = std::move(released_);
  released_.clear();
  if (until <= decided_) return out;
  const std::vector<GpuWorkKey> kept = first_work_.TakeDecided(until);
  decided_ = until;
  const std::set<GpuWorkKey> keep(kept.begin(), kept.end());
  const auto end = held_.upper_bound(until);
  for (auto it = held_.begin(); it != end; ++it) {
    GpuActivityRecord& r = it->second;
    const bool kernel = r.kind == GpuActivityKind::kKernel;
    const GpuWorkKey key{kernel ? GpuActivityKind::kKernel : GpuActivityKind::kRuntime, r.start,
                         r.correlation_id};
    if (keep.count(key) > 0 || (!kernel && nccl_correlations_.count(r.correlation_id) > 0)) {
      out.push_back(std::move(r));
    } else if (capture_after_ > 0 && r.start > capture_from_) {
      // After a capture: whole, launches too (not left to wait for a NCCL kernel: they would be
      // summed after the capture's budget went to the kernels).
      --capture_after_;
      ++captured_;
      out.push_back(std::move(r));
    } else if (!kernel && until != INT64_MAX) {
      // Perhaps a NCCL kernel's launch whose kernel has not run yet.
      waiting_order_.emplace(r.start, r.correlation_id);
      waiting_launches_.insert_or_assign(r.correlation_id, std::move(r));
    } else {
      Summed(std::move(r));
    }
  }
  held_.erase(held_.begin(), end);
  // A NCCL kernel's launch comes before it: its id, and a launch waiting for its kernel, are
  // needed only within the horizon (and the most recent kMaxWaitingLaunches of the launches).
  const TimeNs forget =
      until > INT64_MIN + nccl_launch_horizon_ ? until - nccl_launch_horizon_ : INT64_MIN;
  std::erase_if(nccl_correlations_, [&](const auto& c) { return c.second < forget; });
  while (!waiting_order_.empty() && (until == INT64_MAX || waiting_order_.begin()->first < forget ||
                                     waiting_order_.size() > kMaxWaitingLaunches)) {
    const auto [start, id] = *waiting_order_.begin();
    waiting_order_.erase(waiting_order_.begin());
    auto w = waiting_launches_.find(id);
    if (w != waiting_launches_.end() && w->second.start == start) {
      Summed(std::move(w->second));
      waiting_launches_.erase(w);
    }
  }
  if (until == INT64_MAX) {  // the end: the flight recorder's records go out too
    for (auto& [start, r] : tail_) out.push_back(std::move(r));
    tail_.clear();
  }
  return out;
}

size_t ComputeRecordThinning::CaptureAround() {
  if (!thinning_ || tail_budget_ == 0) return 0;
  size_t before = 0;
  if (!tail_.empty()) {
    // The launches of the tail's span still waiting for a NCCL kernel go with it: summed later,
    // they would be older than the tail by then and never kept.
    for (auto o = waiting_order_.lower_bound(tail_.begin()->first); o != waiting_order_.end();
         o = waiting_order_.erase(o)) {
      auto w = waiting_launches_.find(o->second);
      if (w == waiting_launches_.end() || w->second.start != o->first) continue;  // gone already
      released_.push_back(std::move(w->second));
      waiting_launches_.erase(w);
      ++before;
    }
  }
  before += tail_.size();
  for (auto& [start, r] : tail_) released_.push_back(std::move(r));
  tail_.clear();
  captured_ += before;
  capture_after_ = tail_budget_;
  capture_from_ = decided_;
  return before;
}

void ComputeRecordThinning::Summed(GpuActivityRecord&& record) {
  if (tail_budget_ == 0) {
    ++summed_only_;
    return;
  }
  tail_.emplace(record.start, std::move(record));
  if (tail_.size() > tail_budget_) {
    tail_.erase(tail_.begin());
    ++summed_only_;
  }
}

}  // namespace rankscope
