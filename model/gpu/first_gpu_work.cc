#include "model/gpu/first_gpu_work.h"

#include <algorithm>
#include <string>

#include "model/gpu/launch_latency.h"

namespace rankscope {

bool IsFirstWorkCandidate(const GpuActivityRecord& record) {
  return record.kind == GpuActivityKind::kKernel || IsKernelLaunch(record);
}

void FirstGpuWorkFold::AddBoundary(TimeNs t) {
  // A boundary at or before a decided candidate may have made it the first after something.
  for (const Kind* kind : {&launches_, &kernels_}) {
    if (kind->any_decided && t <= kind->last_start) {
      ++late_boundaries_;
      break;
    }
  }
  boundaries_.insert(t);  // still needed by the next candidate of a kind; pruned otherwise
}

void FirstGpuWorkFold::AddRange(const RangeRecord& range) {
  AddBoundary(range.start);
  AddBoundary(range.end);
}

void FirstGpuWorkFold::AddGpu(const GpuActivityRecord& record) {
  if (!IsFirstWorkCandidate(record)) return;
  Kind& kind = record.kind == GpuActivityKind::kKernel ? kernels_ : launches_;
  // A candidate at or before what was decided came later than the caller's `until` promised: it
  // cannot be placed among those decided any more.
  if (record.start <= decided_until_) {
    ++late_candidates_;
    return;
  }
  kind.held.emplace(record.start, record.correlation_id);
}

std::vector<GpuWorkKey> FirstGpuWorkFold::TakeDecided(TimeNs until) {
  std::vector<GpuWorkKey> kept;
  for (auto [kind, type] : {std::pair{&launches_, GpuActivityKind::kRuntime},
                            std::pair{&kernels_, GpuActivityKind::kKernel}}) {
    auto it = kind->held.begin();
    for (; it != kind->held.end() && it->first <= until; ++it) {
      const TimeNs start = it->first;
      // The first at or after a boundary b: the one before it started before b.
      const bool first_after = !kind->any_decided || (kind->last_start < start &&
                                                      boundaries_.upper_bound(kind->last_start) !=
                                                          boundaries_.upper_bound(start));
      if (first_after) kept.push_back({type, start, it->second});
      kind->any_decided = true;
      kind->last_start = start;
    }
    kind->held.erase(kind->held.begin(), it);
  }
  decided_until_ = std::max(decided_until_, until);
  // A boundary matters to a later candidate only after the latest decided one of its kind (a kind
  // with none decided keeps its first whatever the boundaries).
  TimeNs needed_after = decided_until_;
  for (const Kind* kind : {&launches_, &kernels_}) {
    if (kind->any_decided) needed_after = std::min(needed_after, kind->last_start);
  }
  boundaries_.erase(boundaries_.begin(), boundaries_.upper_bound(needed_after));
  std::sort(kept.begin(), kept.end(), [](const GpuWorkKey& a, const GpuWorkKey& b) {
    return a.start != b.start ? a.start < b.start : a < b;
  });
  return kept;
}

size_t FirstGpuWorkFold::held() const { return launches_.held.size() + kernels_.held.size(); }

std::vector<GpuWorkKey> FirstGpuWork(const std::vector<RangeRecord>& ranges,
                                     const std::vector<GpuActivityRecord>& gpu) {
  FirstGpuWorkFold fold;
  for (const RangeRecord& r : ranges) fold.AddRange(r);
  for (const GpuActivityRecord& g : gpu) fold.AddGpu(g);
  return fold.TakeAll();
}

}  // namespace rankscope
