// An index over one rank's NVTX ranges that answers "what was this rank doing between t0 and
// t1": which ranges overlap a window and how much time each range name got there, counting
// every instant only for the innermost range open on that thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// Where the time of one window went on one rank.
struct WindowTime {
  DurationNs window = 0;
  // Innermost (self) time per range name, clipped to the window. With all threads selected the
  // sum may exceed the window (threads run concurrently).
  std::map<std::string, DurationNs> by_range;
  DurationNs covered = 0;  // time covered by at least one selected range
  DurationNs untracked() const { return window - covered; }
};

class RangeTimeline {
 public:
  // *ranges must outlive the timeline and stay unchanged while it is in use.
  explicit RangeTimeline(const std::vector<RangeRecord>* ranges);

  RangeTimeline(const RangeTimeline&) = delete;
  RangeTimeline& operator=(const RangeTimeline&) = delete;
  RangeTimeline(RangeTimeline&&) = default;
  RangeTimeline& operator=(RangeTimeline&&) = default;

  // Whether any range was recorded on thread tid.
  bool HasThread(uint32_t tid) const;

  // Indices (into *ranges) of the ranges that overlap [begin, end) on thread tid, or on every
  // thread when tid is nullopt, ordered by start. Ranges are assumed to nest per thread as
  // NVTX push/pop ranges do; a start/end range that straddles begin without enclosing the range
  // opened last before begin may be missed.
  std::vector<size_t> Overlapping(TimeNs begin, TimeNs end, std::optional<uint32_t> tid) const;

  // Time per range name in [begin, end) on thread tid (every thread when nullopt), each instant
  // of a thread going to the innermost range open on it. Empty when end <= begin.
  WindowTime TimeIn(TimeNs begin, TimeNs end, std::optional<uint32_t> tid) const;

  const RangeRecord& range(size_t index) const { return (*ranges_)[index]; }

 private:
  struct Thread {
    uint32_t tid = 0;
    std::vector<size_t> by_start;  // indices into *ranges_, sorted by (start, -end)
    std::vector<int> parent;       // per position in by_start: enclosing position, or -1
    std::vector<int> depth;        // per position in by_start: nesting depth, 0 outermost
  };

  void OverlappingOnThread(const Thread& thread, TimeNs begin, TimeNs end,
                           std::vector<size_t>* positions) const;
  void AddThreadTime(const Thread& thread, TimeNs begin, TimeNs end, WindowTime* out,
                     std::vector<std::pair<TimeNs, TimeNs>>* covered) const;

  const std::vector<RangeRecord>* ranges_;
  std::vector<Thread> threads_;  // sorted by tid
};

}  // namespace rankscope
