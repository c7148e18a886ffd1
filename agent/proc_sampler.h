// Samples /proc for the process tree of the rank's program (the program and its descendants:
// DataLoader workers, shell children) on its own thread, every `period`, and sums each process's
// last-seen counters at the end. Counters of a process that exits between two samples keep their
// last sampled values; the program itself gets a final read as a zombie, before it is reaped.
//
//   RANKSCOPE_PROC=0   do not sample /proc
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/proc_stats.h"
#include "core/time.h"

namespace rankscope {

// The fields of /proc/PID/stat we use. nullopt when the text is not a stat line.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
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

// The pids of `root` and all its descendants, from (pid, ppid) pairs. Pure.
std::vector<pid_t> Descendants(pid_t root, const std::vector<std::pair<pid_t, pid_t>>& parents);

class ProcSampler {
 public:
  // `proc_root` is "/proc" except in tests.
  ProcSampler(pid_t root, DurationNs period, std::string proc_root = "/proc");
  ~ProcSampler();  // joins the thread
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;

  void Start();
  // For a process tree that was running before (rankscope attach): samples once now, and Finish
  // then counts only what the processes seen now did from here on (processes that start later
  // count whole). Call before Start.
  void CountFromNow();
  // Stops the thread, samples once more and returns the sums. Call once, while the program is
  // still unreaped (a zombie keeps its final counters readable).
  ProcessTreeStats Finish();

 private:
  struct Last {
    ProcStat stat;
    std::optional<ProcIo> io;
    ProcStat base_stat;  // CountFromNow's reading, subtracted at the end
    ProcIo base_io;
  };
  void Loop();
  void SampleOnce();  // requires mu_

  const pid_t root_;
  const DurationNs period_;
  const std::string proc_root_;
  const int64_t ns_per_tick_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool finishing_ = false;                           // guarded by mu_
  std::map<std::pair<pid_t, uint64_t>, Last> last_;  // by (pid, start): guarded by mu_
  int samples_ = 0;                                  // guarded by mu_
  bool io_unreadable_ = false;                       // guarded by mu_
  std::thread thread_;
};

}  // namespace rankscope
