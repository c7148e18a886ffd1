// Which of a rank's launch calls and kernels the dataloader analysis reads (issue #16: what an
// agent must still send raw once it stops sending every GPU record). A step's "time before its
// first GPU work" is the time from where the step's time begins (a step range's start, or the
// previous step's end) to the first kernel launch call, and to the first kernel, starting at or
// after it (coordinator/analysis/dataloader_analysis.cc, BeforeFirst). Every such beginning is a
// boundary of an NVTX range, so the launch calls and kernels that are the first of their kind at or
// after some range's start or end, with the first of each kind in the run, give every step the same
// figure as all of them do, whatever the step pattern. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// One launch call ("Launch" in a runtime function's name: cudaLaunchKernel, cuLaunchKernelEx, a
// graph launch) or kernel, by what tells it apart among a rank's records.
struct GpuWorkKey {
  GpuActivityKind kind = GpuActivityKind::kKernel;
  TimeNs start = 0;
  uint32_t correlation_id = 0;

  auto operator<=>(const GpuWorkKey&) const = default;
};

// Whether `record` is a launch call or kernel the step reading looks at (the rest never are).
bool IsFirstWorkCandidate(const GpuActivityRecord& record);

// Finds them from ranges and GPU records fed in any order, holding the candidates of each kind not
// decided yet and the boundaries a later candidate may still need. A candidate is decided when the
// caller says no earlier candidate and no boundary at or before it can still come (TakeDecided's
// `until`: for an agent, its GPU records' completeness less how long after a range's start the
// range may close and still count; a boundary that comes after that is counted as late). Not
// thread-safe.
class FirstGpuWorkFold {
 public:
  void AddRange(const RangeRecord& range);
  void AddGpu(const GpuActivityRecord& record);  // candidates only; the rest are ignored

  // The candidates starting at or before `until` that are the first of their kind at or after a
  // boundary, or the first of their kind, in start order; the others starting then are forgotten.
  std::vector<GpuWorkKey> TakeDecided(TimeNs until);
  std::vector<GpuWorkKey> TakeAll() { return TakeDecided(INT64_MAX); }

  // Boundaries that came after the candidates around them were decided (their range closed later
  // than `until` allowed): a step beginning there may read a later first launch than it had.
  int64_t late_boundaries() const { return late_boundaries_; }
  // Candidates that came at or before an `until` already passed (forgotten).
  int64_t late_candidates() const { return late_candidates_; }
  size_t held() const;  // candidates not decided yet

 private:
  struct Kind {
    std::multimap<TimeNs, uint32_t> held;  // start -> correlation id
    bool any_decided = false;
    TimeNs last_start = INT64_MIN;  // of the latest decided
  };
  void AddBoundary(TimeNs t);

  Kind launches_, kernels_;
  std::set<TimeNs> boundaries_;
  TimeNs decided_until_ = INT64_MIN;
  int64_t late_boundaries_ = 0;
  int64_t late_candidates_ = 0;
};

// The whole run at once: the keys FirstGpuWorkFold gives with every record and range in hand.
std::vector<GpuWorkKey> FirstGpuWork(const std::vector<RangeRecord>& ranges,
                                     const std::vector<GpuActivityRecord>& gpu);

}  // namespace rankscope
