#include "agent/inject/fast_clock.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace rankscope::inject {
namespace {

#if defined(__x86_64__)

// The kernel keeps CLOCK_MONOTONIC with the TSC: it has checked the counter is invariant and in
// step across CPUs, and it runs at a constant rate whatever the CPU's frequency.
bool KernelClocksourceIsTsc() {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool read = std::fgets(name, sizeof(name), f) != nullptr;
  std::fclose(f);
  return read && std::strcmp(name, "tsc\n") == 0;
}

// -1 not decided yet, 0 MonotonicNow, 1 the TSC.
std::atomic<int> g_mode{-1};

bool UseTsc() {
  int mode = g_mode.load(std::memory_order_relaxed);
  if (mode < 0) {
    mode = KernelClocksourceIsTsc() ? 1 : 0;
    g_mode.store(mode, std::memory_order_relaxed);
  }
  return mode == 1;
}

// Anchors are this many counter ticks apart at most (2-4 ms at 2-4 GHz).
constexpr uint64_t kAnchorTicks = uint64_t{1} << 23;
// The rate is measured over at least this long, and over the last second or so after that.
constexpr DurationNs kMinBaseline = 20 * kNsPerMs;
constexpr DurationNs kMaxBaseline = kNsPerSec;

struct ThreadClock {
  uint64_t base_tsc = 0;  // where the rate is measured from
  TimeNs base_ns = 0;
  uint64_t anchor_tsc = 0;  // the latest anchor
  TimeNs anchor_ns = 0;
  double ns_per_tick = 0;  // 0 until measured over kMinBaseline
  TimeNs last = 0;         // the latest reading handed out
};
thread_local ThreadClock t_clock;

// An anchor's clock reading lies between two counter readings at most this far apart (2-4 us):
// a thread preempted in between would anchor milliseconds off.
constexpr uint64_t kAnchorSpreadTicks = uint64_t{1} << 13;

// The tightest of three tries is kept: an interrupt inside one try (a few microseconds on a
// loaded machine) would put the anchor, and the rate measured from it, that far off.
TimeNs Anchor(ThreadClock& c) {
  TimeNs now = 0;
  uint64_t before = 0, after = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const uint64_t b = __rdtsc();
    const TimeNs n = MonotonicNow();
    const uint64_t a = __rdtsc();
    if (a < b) continue;
    if (after == 0 || a - b < after - before) {
      before = b;
      now = n;
      after = a;
    }
  }
  if (after == 0) return MonotonicNow();                // the counter went back every time
  if (after - before > kAnchorSpreadTicks) return now;  // no anchor this time
  const uint64_t tsc = before + (after - before) / 2;
  if (c.base_ns == 0 || tsc <= c.base_tsc) {
    c.base_tsc = tsc;
    c.base_ns = now;
  } else if (now - c.base_ns >= kMinBaseline) {
    c.ns_per_tick = static_cast<double>(now - c.base_ns) / static_cast<double>(tsc - c.base_tsc);
    if (now - c.base_ns >= kMaxBaseline) {
      c.base_tsc = tsc;
      c.base_ns = now;
    }
  }
  c.anchor_tsc = tsc;
  c.anchor_ns = now;
  return now;
}

#endif

}  // namespace

bool FastNowUsesTsc() {
#if defined(__x86_64__)
  return UseTsc();
#else
  return false;
#endif
}

TimeNs FastNow() {
#if defined(__x86_64__)
  if (!UseTsc()) return MonotonicNow();
  ThreadClock& c = t_clock;
  const uint64_t tsc = __rdtsc();
  const uint64_t since = tsc - c.anchor_tsc;
  TimeNs now;
  if (c.ns_per_tick > 0 && tsc >= c.anchor_tsc && since < kAnchorTicks) {
    now = c.anchor_ns + static_cast<TimeNs>(static_cast<double>(since) * c.ns_per_tick);
  } else {
    now = Anchor(c);
  }
  // An anchor can land a few nanoseconds before the last interpolated reading.
  if (now < c.last) now = c.last;
  c.last = now;
  return now;
#else
  return MonotonicNow();
#endif
}

}  // namespace rankscope::inject
