// Which of a rank's GPU records an agent sends whole once it stops sending every compute kernel
// (issue #16). Until `budget` records of compute kernels (not NCCL's) and kernel launch calls have
// gone out, every record does. After that, those two kinds go out only where an analysis reads
// them whole: the first launch and the first kernel at or after every NVTX range boundary (the
// dataloader's step reading, first_gpu_work.h) and NCCL kernels' launch calls (the NCCL join's
// launch time: a launch whose kernel has not come when it is decided waits for it up to
// `nccl_launch_horizon`, at most kMaxWaitingLaunches of them); the rest are in the agent's sums
// (gpu_stats.h, launch_latency.h, kernel_pieces.h, nccl_compute.h), which the coordinator then
// reads instead. NCCL kernels, copies, memsets, syncs and other runtime calls always go whole.
// A flight recorder keeps the last `tail` of the summed records and sends them at the end of the
// run, so the trace shows the run's last steps whole as well as its first; a capture asked for
// while the run goes on (a live finding) sends them then, and the next `tail` summed records
// whole after them, so the moment is whole on both sides. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/records.h"
#include "core/time.h"
#include "model/gpu/first_gpu_work.h"

namespace rankscope {

class ComputeRecordThinning {
 public:
  // Launch calls decided but waiting for their kernel (a NCCL kernel that has not run yet): about
  // 3 MB of records; the oldest beyond it are summed.
  static constexpr size_t kMaxWaitingLaunches = 16'384;

  // `budget` whole before thinning (0: no limit), `tail` kept to the end after it.
  // `nccl_launch_horizon`: how long a NCCL kernel's launch may come before it.
  explicit ComputeRecordThinning(uint64_t budget = 0,
                                 DurationNs nccl_launch_horizon = 10 * kNsPerSec, uint64_t tail = 0)
      : budget_(budget), tail_budget_(tail), nccl_launch_horizon_(nccl_launch_horizon) {}

  void SetBudget(uint64_t budget, uint64_t tail) {
    budget_ = budget;
    tail_budget_ = tail;
  }
  void AddRange(const RangeRecord& range) { first_work_.AddRange(range); }
  // True: the record goes out now. False: it is held until TakeDecided says.
  bool Add(const GpuActivityRecord& record);
  // The held records starting at or before `until` that go out; the others are in the tail or
  // forgotten (summed_only). Call with `until` behind the latest GPU start and range end by as
  // long as records and ranges may come late. TakeAll adds the tail.
  std::vector<GpuActivityRecord> TakeDecided(TimeNs until);
  std::vector<GpuActivityRecord> TakeAll() { return TakeDecided(INT64_MAX); }

  // A capture around now: the flight recorder's records, and the launches of their span still
  // waiting for a NCCL kernel, go out with the next TakeDecided, and up to `tail` of the records
  // decided after them (starting after what was decided so far) go out whole. Returns how many
  // records go out at once (0: nothing is summed yet, or there is no flight recorder).
  size_t CaptureAround();

  bool thinning() const { return thinning_; }
  uint64_t raw_sent() const { return raw_sent_; }
  uint64_t tail_budget() const { return tail_budget_; }
  uint64_t summed_only() const { return summed_only_; }
  // Records sent whole because a capture asked for them (the tail's and those after it).
  uint64_t captured() const { return captured_; }
  // Range boundaries that came after the records around them were decided.
  int64_t late_boundaries() const { return first_work_.late_boundaries(); }
  size_t held() const {
    return held_.size() + first_work_.held() + waiting_launches_.size() + tail_.size();
  }

 private:
  // A summed record: into the tail, the oldest there by start forgotten once it is full.
  void Summed(GpuActivityRecord&& record);

  uint64_t budget_;
  uint64_t tail_budget_;
  DurationNs nccl_launch_horizon_;
  // The latest `tail_budget_` summed records by start: a launch summed when its wait for a NCCL
  // kernel ends (up to nccl_launch_horizon later) is older than the kernels summed before it.
  std::multimap<TimeNs, GpuActivityRecord> tail_;
  uint64_t raw_sent_ = 0;
  uint64_t summed_only_ = 0;
  uint64_t captured_ = 0;
  uint64_t capture_after_ = 0;  // records still to go out whole for a capture,
  TimeNs capture_from_ = 0;     // those that start after this
  bool thinning_ = false;
  FirstGpuWorkFold first_work_;  // fed from the start: it knows the boundaries when thinning begins
  TimeNs decided_ = INT64_MIN;
  std::multimap<TimeNs, GpuActivityRecord> held_;  // by start
  std::map<uint32_t, TimeNs> nccl_correlations_;   // recent NCCL kernels' ids -> start
  // Launches decided but not kept, waiting for a NCCL kernel of their id, by id; their starts in
  // order, to forget the oldest; and those released by a kernel or a capture, for the next
  // TakeDecided.
  std::map<uint32_t, GpuActivityRecord> waiting_launches_;
  std::multimap<TimeNs, uint32_t> waiting_order_;
  std::vector<GpuActivityRecord> released_;
};

// Whether a record is a NCCL kernel (its name decodes as one).
bool IsNcclKernel(const GpuActivityRecord& record);

}  // namespace rankscope
