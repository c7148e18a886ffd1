// What a rank's processes did on their node, from /proc: the rank's program and every process it
// started (DataLoader workers, subprocesses), summed. Read by the agent (agent/proc_sampler.h),
// used by the coordinator as evidence in dataloader findings (I/O-bound, CPU-bound or neither)
// and, through the scheduler and cgroup figures, for why a rank is slow from outside the
// program: runnable but waiting for a CPU (a competing process on its core), or throttled by a
// cgroup CPU quota.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/time.h"

namespace rankscope {

// The cgroup CPU controller the rank's program ran under (its bandwidth control: CFS quota).
struct CpuCgroupStats {
  int version = 0;   // 1: the v1 `cpu` hierarchy; 2: the unified hierarchy
  std::string path;  // the program's cgroup as /proc/PID/cgroup names it ("/slurm/job_12/step_0")
  // The cgroup whose quota binds: the program's own or the ancestor with the smallest quota
  // (a parent's quota caps its children). The counters below are that cgroup's. Several ranks
  // may share it (one job cgroup per node): then their counters are the same counts.
  std::string limit_path;
  int64_t quota_us = -1;  // CPU time allowed per period; -1: unlimited
  int64_t period_us = 0;
  // Increase over the sampled window, read once at start and once at the end.
  uint64_t nr_periods = 0;    // enforcement periods in which the cgroup had runnable tasks
  uint64_t nr_throttled = 0;  // periods in which it used up its quota and was stopped
  DurationNs throttled_ns = 0;
  bool counters_unreadable = false;  // cpu.stat could not be read: the counters are 0

  // The quota as CPUs (0.3 = 30 % of one CPU); nullopt when unlimited.
  std::optional<double> QuotaCpus() const {
    if (quota_us < 0 || period_us <= 0) return std::nullopt;
    return static_cast<double>(quota_us) / static_cast<double>(period_us);
  }
};

// Where the program's main thread (the one that calls MPI) was, read from
// /proc/PID/task/PID/stat and wchan every 20 ms: on a CPU or runnable, stopped, or blocked in
// the kernel, and then in which kernel function. What a rank that computes longer than the others
// without using more CPU was doing: frozen by a cgroup freezer ("__refrigerator", v1;
// "do_freezer_trap", v2), stopped (SIGSTOP, a debugger, `scontrol suspend`), writing a pipe or
// FIFO nobody drains ("pipe_write"), waiting for storage ("io_schedule", "folio_wait_bit_common"),
// sleeping ("do_nanosleep"), on a lock ("futex_wait_queue"), ...
struct MainThreadStates {
  int32_t samples = 0;
  int32_t running = 0;  // 'R': on a CPU or waiting for one
  int32_t stopped = 0;  // 'T' or 't'
  // Blocked ('S', 'D', ...): samples by kernel function; "?" when wchan could not be read.
  std::map<std::string, int32_t> blocked_in;

  int32_t blocked() const {
    int32_t n = 0;
    for (const auto& [where, count] : blocked_in) n += count;
    return n;
  }
};

struct ProcessTreeStats {
  uint64_t rchar = 0;  // bytes read through read()-like calls (page cache, pipes, sockets)
  uint64_t wchar = 0;
  uint64_t read_bytes = 0;  // bytes the processes made the block layer fetch (storage reads)
  uint64_t write_bytes = 0;
  int64_t cpu_user_ns = 0;  // CPU time, user and kernel, of the processes themselves
  int64_t cpu_system_ns = 0;
  int64_t blkio_delay_ns = 0;  // time blocked on block I/O (0 where delay accounting is off)
  int32_t processes = 0;       // distinct processes seen in the tree
  int32_t samples = 0;         // times /proc was read
  bool io_unreadable = false;  // /proc/PID/io could not be read (permissions): I/O fields are 0

  // Scheduler figures, summed over every thread of every process (each thread's last reading:
  // a thread that starts and ends between two samples is not seen).
  DurationNs sched_cpu_ns = 0;        // time on a CPU, as the scheduler counts it (schedstat)
  DurationNs run_delay_ns = 0;        // runnable but waiting on a run queue for a CPU
  uint64_t voluntary_switches = 0;    // the thread gave up the CPU (blocked, slept)
  uint64_t involuntary_switches = 0;  // the scheduler took it away (time slice over, preempted)
  int32_t threads = 0;                // distinct threads seen
  bool sched_unreadable = false;      // no schedstat (kernel without CONFIG_SCHED_INFO): 0s
  // The wall time the sampling covered, first sample to last: CPU / wall and run delay / wall.
  DurationNs sampled_wall_ns = 0;
  std::optional<CpuCgroupStats> cpu_cgroup;  // absent: no cgroup CPU controller found
  MainThreadStates main_thread;              // samples == 0: not sampled
};

}  // namespace rankscope
