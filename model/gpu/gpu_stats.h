// What an agent says about a rank's GPU activity instead of every CUPTI record (issue #16): per
// fixed window of the rank's clock and per kind of work (a kernel name on a stream, a runtime
// function, a copy direction, a sync type), how many, how long in total, the shortest, the median,
// the longest, and the bytes moved. One window of a launch-bound PyTorch loop holds about 50,000
// kernels of a handful of names, so a window costs a few rows instead of 100,000 records.
// `GpuStatsFold` makes the rows from records fed in any order (CUPTI hands over each stream's
// records as its buffers fill), holding only the windows still open. Pure.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// What the rows of a window are kept apart by.
struct GpuStatsKey {
  GpuActivityKind kind = GpuActivityKind::kKernel;
  uint32_t device = kNoDevice;
  uint32_t stream = 0;   // 0 for runtime calls and context-wide syncs, as CUPTI says
  uint8_t sub_kind = 0;  // kMemcpy: copy_kind; kSync: sync_kind; 0 otherwise
  std::string name;      // kKernel: the (mangled) kernel name; kRuntime: the function; else ""

  auto operator<=>(const GpuStatsKey&) const = default;
  bool operator==(const GpuStatsKey&) const = default;
};

// One kind of work in one window. A window is [window_start, window_start + window) on the rank's
// clock, window_start a multiple of window; a record belongs to the window its start is in. (The
// coordinator moves window_start to its own clock with the records; durations stay the rank's.)
struct GpuStats {
  TimeNs window_start = 0;
  DurationNs window = 0;
  GpuStatsKey key;
  int64_t count = 0;
  DurationNs total = 0;  // the records' durations summed (concurrent streams each count)
  DurationNs min = 0;
  DurationNs p50 = 0;  // MedianNs of the durations (core/robust_stats.h)
  DurationNs max = 0;
  Bytes bytes = 0;  // kMemcpy, kMemset: summed

  bool operator==(const GpuStats&) const = default;
};

// Makes GpuStats from a rank's GPU records. Not thread-safe; memory: the durations of the windows
// still open (those a record may still arrive for).
class GpuStatsFold {
 public:
  // window > 0.
  explicit GpuStatsFold(DurationNs window);

  // Counts `record` in the window its start is in. A record whose window was already taken opens
  // it again: its rows are taken once more, as rows of their own (MergeGpuStats adds them up).
  void Add(const GpuActivityRecord& record);

  // The rows of every window that ends at or before `until`, ordered by window and key, and
  // forgotten. Call with the time no later record can begin before (e.g. the latest start seen
  // less a window, for records that arrive a window late at most).
  std::vector<GpuStats> TakeClosed(TimeNs until) { return Take(until, /*all=*/false); }
  // The rows of every window still open (at the end of the run).
  std::vector<GpuStats> TakeAll() { return Take(0, /*all=*/true); }

  // Records counted and not yet taken.
  size_t held() const { return held_; }
  DurationNs window() const { return window_; }

 private:
  std::vector<GpuStats> Take(TimeNs until, bool all);

  struct Open {
    std::vector<DurationNs> durations;
    Bytes bytes = 0;
  };
  DurationNs window_;
  std::map<TimeNs, std::map<GpuStatsKey, Open>> open_;  // by window_start
  size_t held_ = 0;
};

// Rows of one rank added up per key over windows (the whole run, or any span): counts, totals,
// bytes summed, min and max of them; p50 is the median of the rows' medians weighted by their
// counts (exact when one row), so it approximates the run's median.
std::map<GpuStatsKey, GpuStats> MergeGpuStats(const std::vector<GpuStats>& rows);

// A rank's kernels per name over the run: how many, and their GPU time summed.
struct KernelTotal {
  int64_t count = 0;
  DurationNs total = 0;
};
// From the agent's rows (`stats`) when they hold any kernel and are complete (the agent's final
// batch came: rows trail the records by up to three windows, the rest coming at its end; they
// also count records the agent's buffer dropped), else from the records themselves.
std::map<std::string, KernelTotal> KernelTotals(const std::vector<GpuActivityRecord>& records,
                                                const std::vector<GpuStats>& stats,
                                                bool stats_complete);

}  // namespace rankscope
