// Samples /proc for the process tree of the rank's program (the program and its descendants:
// DataLoader workers, shell children) on its own thread, every `period`, and sums each process's
// last-seen counters at the end. Counters of a process that exits between two samples keep their
// last sampled values; the program itself gets a final read as a zombie, before it is reaped.
//
// Which files cover what (checked on Linux 6.18): /proc/PID/stat's utime/stime and /proc/PID/io
// sum every thread of the process, the exited ones included; /proc/PID/schedstat, the
// *_ctxt_switches lines of /proc/PID/status and stat's delayacct_blkio_ticks are the main
// thread's only. So the scheduler figures are read per thread, from /proc/PID/task/TID/, and a
// thread keeps its last sampled figures after it exits (the threads of the program that are gone
// by its final read count up to their last sample).
//
// Between those samples, every kStatePeriod, the program's main thread's state and, when it is
// blocked, its kernel function (wchan): ProcessTreeStats::main_thread. Two small reads per
// sample (about 20 us of the agent's CPU every 20 ms).
//
// The program's cgroup CPU controller (agent/cpu_cgroup.h; the program's, not its children's)
// is located at every sample: the program may be moved into a cgroup after it starts, and then
// the counters count from the sample that first saw it there (the second sample comes 50 ms
// after the first, so a wrapper that joins a cgroup and execs is seen in it). The counters are
// read when the cgroup is first seen, at every sample after (kept in case the cgroup is removed
// before the end) and at the end.
//
//   RANKSCOPE_PROC=0   do not sample /proc
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "agent/cpu_cgroup.h"
#include "core/proc_stats.h"
#include "core/time.h"

namespace rankscope {

// The fields of /proc/PID/stat we use. nullopt when the text is not a stat line.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';  // 'R', 'S', 'Z' (exited, not yet reaped), ...
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t start_ticks = 0;  // start time after boot: with the pid, names one process
  uint64_t blkio_ticks = 0;  // delayacct_blkio_ticks
};
std::optional<ProcStat> ParseProcStat(std::string_view text);

// /proc/PID/io. nullopt when no field could be read.
struct ProcIo {
  uint64_t rchar = 0, wchar = 0, read_bytes = 0, write_bytes = 0;
};
std::optional<ProcIo> ParseProcIo(std::string_view text);

// /proc/PID/task/TID/schedstat: "on-CPU ns, run-queue wait ns, timeslices". nullopt otherwise.
struct SchedStat {
  DurationNs cpu_ns = 0;
  DurationNs run_delay_ns = 0;
};
std::optional<SchedStat> ParseSchedstat(std::string_view text);

// The voluntary_ctxt_switches and nonvoluntary_ctxt_switches lines of /proc/PID/task/TID/status.
// nullopt when either is missing.
struct ContextSwitches {
  uint64_t voluntary = 0;
  uint64_t involuntary = 0;
};
std::optional<ContextSwitches> ParseContextSwitches(std::string_view status_text);

// The kernel function /proc/PID/wchan names, kept when it reads as a symbol ([A-Za-z0-9_.]+);
// "?" otherwise ("0" when the thread runs, empty or odd bytes when hidden).
std::string WchanName(std::string_view text);

// The pids of `root` and all its descendants, from (pid, ppid) pairs. Pure.
std::vector<pid_t> Descendants(pid_t root, const std::vector<std::pair<pid_t, pid_t>>& parents);

class ProcSampler {
 public:
  static constexpr DurationNs kStatePeriod = 20 * kNsPerMs;

  // `proc_root` is "/proc" except in tests.
  ProcSampler(pid_t root, DurationNs period, std::string proc_root = "/proc");
  ~ProcSampler();  // joins the thread
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;

  // Called on the sampler's thread after each full sample (every `period`) with the sums so
  // far, as Finish would return them then (the cgroup's counters as last sampled), outside the
  // sampler's lock. Set before Start.
  void OnSample(std::function<void(const ProcessTreeStats&)> callback);
  void Start();
  // For a process tree that was running before (rankscope attach): samples once now, and Finish
  // then counts only what the processes seen now did from here on (processes that start later
  // count whole). Call before Start.
  void CountFromNow();
  // Stops the thread, samples once more and returns the sums. Call once, while the program is
  // still unreaped (a zombie keeps its final counters readable).
  ProcessTreeStats Finish();

 private:
  // One thread's scheduler figures: the last reading, CountFromNow's (subtracted at the end),
  // and what earlier threads of the same id counted (a tid reused within the process).
  struct ThreadLast {
    SchedStat sched, base_sched, retired_sched;
    ContextSwitches switches, base_switches, retired_switches;
  };
  struct Last {
    ProcStat stat;
    std::optional<ProcIo> io;
    ProcStat base_stat;  // CountFromNow's reading, subtracted at the end
    ProcIo base_io;
    std::map<pid_t, ThreadLast> threads;
  };
  // The program's cpu cgroup: where its quota binds, and the counters there when first seen.
  struct CgroupWatch {
    CpuCgroupStats stats;                 // version, paths, quota
    std::string counters_dir;             // the directory of limit_path
    std::optional<CpuThrottling> first;   // when the program was first seen in it
    std::optional<CpuThrottling> latest;  // at the last sample that could read it
  };
  void Loop();
  void SampleOnce();  // requires mu_
  // The sums of every process's last sample; the cgroup's counters read now or as last sampled.
  ProcessTreeStats SumsLocked(bool read_cgroup_now) const;  // requires mu_
  void SampleThreads(pid_t pid, Last* last);                // requires mu_
  void SampleMainThread();                                  // requires mu_
  // A zombie is no longer in its v1 cgroup (/proc/PID/cgroup says "/"): `exited` keeps the one
  // it was seen in.
  void WatchCgroup(bool exited);                        // requires mu_
  std::optional<CpuThrottling> ReadThrottling() const;  // requires mu_

  const pid_t root_;
  const DurationNs period_;
  const std::string proc_root_;
  const int64_t ns_per_tick_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool finishing_ = false;                                  // guarded by mu_
  std::map<std::pair<pid_t, uint64_t>, Last> last_;         // by (pid, start): guarded by mu_
  int samples_ = 0;                                         // guarded by mu_
  bool io_unreadable_ = false;                              // guarded by mu_
  bool sched_unreadable_ = false;                           // guarded by mu_
  TimeNs first_sample_ = 0, last_sample_ = 0;               // guarded by mu_: the root seen
  std::optional<std::vector<CgroupMount>> mounts_;          // guarded by mu_: read once
  std::optional<CgroupWatch> cgroup_;                       // guarded by mu_
  MainThreadStates main_thread_;                            // guarded by mu_
  std::function<void(const ProcessTreeStats&)> on_sample_;  // set before Start
  std::thread thread_;
};

}  // namespace rankscope
