// Time types shared by every layer. All host timestamps in rankscope come from one clock,
// CLOCK_MONOTONIC, read on the host that produced them; the coordinator's clock model maps
// them onto the coordinator's own CLOCK_MONOTONIC (the session's single time axis).
#pragma once

#include <cstdint>
#include <ctime>

namespace rankscope {

// A point on some host's CLOCK_MONOTONIC, in nanoseconds. Which host's clock is a matter of
// context: records from an agent are in its local clock until the aligner converts them.
using TimeNs = int64_t;
// A difference of two TimeNs.
using DurationNs = int64_t;
// A byte count.
using Bytes = int64_t;

inline constexpr DurationNs kNsPerUs = 1'000;
inline constexpr DurationNs kNsPerMs = 1'000'000;
inline constexpr DurationNs kNsPerSec = 1'000'000'000;

// Reads CLOCK_MONOTONIC. Cheap (vDSO) and async-signal-safe.
inline TimeNs MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

// CLOCK_REALTIME minus CLOCK_MONOTONIC on this host, now: what turns a monotonic reading into
// wall-clock time here (it moves with NTP steps and slews).
inline DurationNs RealtimeMinusMonotonic() {
  timespec real, mono;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return static_cast<DurationNs>(real.tv_sec - mono.tv_sec) * kNsPerSec +
         (real.tv_nsec - mono.tv_nsec);
}

inline double NsToMs(DurationNs d) { return static_cast<double>(d) / 1e6; }

// The start of the fixed window of length `window` (> 0) that `t` falls in: a multiple of
// `window`, also for times before 0 (the first whole window for times below it: no overflow).
inline TimeNs WindowStartOf(TimeNs t, DurationNs window) {
  t = t < INT64_MIN + window ? INT64_MIN + window : t;
  TimeNs q = t / window;
  if (t % window != 0 && t < 0) --q;
  return q * window;
}
inline double NsToUs(DurationNs d) { return static_cast<double>(d) / 1e3; }

}  // namespace rankscope
