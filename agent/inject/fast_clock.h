// The inject library's clock for its hot paths (NVTX push/pop, the MPI wrappers): CLOCK_MONOTONIC
// in nanoseconds, as MonotonicNow, at a third of its cost where the CPU's time-stamp counter can
// stand in for it. On a VM clock_gettime costs about 28 ns (RDTSC 11 ns), two readings per NVTX
// range or MPI call: half of an NVTX push+pop's cost (bench_nvtx).
//
// Each thread anchors the counter to CLOCK_MONOTONIC every few milliseconds and interpolates
// between anchors with the rate measured over the last second, so the readings follow the
// kernel's clock, NTP slewing included, to within nanoseconds. Used only where the kernel itself
// keeps time with the TSC (clocksource "tsc", which it picks only for an invariant, synchronised
// counter) on x86-64; elsewhere, and until a thread has measured the rate (its first 20 ms),
// FastNow is MonotonicNow. Never goes backwards on a thread. Not async-signal-safe.
#pragma once

#include "core/time.h"

namespace rankscope::inject {

TimeNs FastNow();

// Whether FastNow reads the TSC on this machine (else it is MonotonicNow).
bool FastNowUsesTsc();

}  // namespace rankscope::inject
