// The node-side health checks of `rankscope sweep` (docs/sweep.md): each measures one thing on
// this node and returns its figures in base units. They run inside RunIsolated, so a check that
// hangs or crashes is killed and reported, never taking the sweep down with it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/time.h"
#include "model/sweep_result.h"

namespace rankscope {

// Memory bandwidth, STREAM triad (a = b + s*c, 24 bytes per element) over arrays far larger
// than any cache, one thread; the best pass within `budget`. "mem.bandwidth", bytes_per_second.
std::vector<SweepCheckResult> MeasureMemoryBandwidth(DurationNs budget);

// Double-precision multiply-add throughput of one core, independent chains (2 flops each); the best
// round within `budget`. "cpu.flops", flops (per second).
std::vector<SweepCheckResult> MeasureCpuFlops(DurationNs budget);

// Free space of the file system holding `path`: "fs.free_bytes" (bytes) and "fs.free_ratio"
// (of the blocks), subject = path. An error result when the path cannot be read.
std::vector<SweepCheckResult> MeasureFreeSpace(const std::string& path);

// CLOCK_REALTIME minus CLOCK_MONOTONIC here, now ("clock.realtime_minus_monotonic", seconds):
// with the coordinator's fit of this node's monotonic clock it gives the node's wall-clock
// offset to the coordinator (coordinator/sweep/verdicts.h).
std::vector<SweepCheckResult> MeasureClockAnchor();

// Runs `check` in a child process and returns its results. A child that outlives `limit` is
// killed and gives one result {name, error "timed out after N s"}; one that crashes or fails to
// hand its results over gives {name, error naming how it ended}. A check may return nothing
// (a GPU check on a node without GPUs).
std::vector<SweepCheckResult> RunIsolated(
    const std::string& name, DurationNs limit,
    const std::function<std::vector<SweepCheckResult>()>& check);

// A check running in a child process while others run: started by StartIsolated, which hands
// `check` the read end of a pipe; Collect closes the write end (the child's cue to finish) and
// waits up to `limit` for its results, as RunIsolated does.
class IsolatedCheck {
 public:
  IsolatedCheck(const std::string& name,
                const std::function<std::vector<SweepCheckResult>(int)>& check);
  ~IsolatedCheck();
  IsolatedCheck(const IsolatedCheck&) = delete;
  IsolatedCheck& operator=(const IsolatedCheck&) = delete;
  std::vector<SweepCheckResult> Collect(DurationNs limit);

 private:
  std::string name_;
  pid_t pid_ = -1;
  int results_fd_ = -1;
  int stop_fd_ = -1;
  std::string start_error_;
};

}  // namespace rankscope
