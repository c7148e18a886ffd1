// `rankscope run [opts] -- COMMAND...`: starts an embedded coordinator, runs the launch command
// with an agent in front of every rank, waits for the job, writes the session folder and
// prints the report. Returns the launcher's exit code unchanged.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "proto/protocol.h"

namespace rankscope {

// Nsight Compute / Nsight Systems on chosen ranks (`--ncu-rank`, `--nsys-ranks`): each rank's
// agent runs its program under the tool (agent/tool_wrap.h), the report goes into the session
// folder, and ncu's is read into the findings.
struct ToolOptions {
  std::string ncu_ranks;   // "1", "0,3", "2-5"; empty: none
  std::string ncu_kernel;  // a regex on the kernel's function name; empty: any
  std::string ncu_set = "full";
  int ncu_count = 1;  // launches profiled
  int ncu_skip = 0;   // matching launches skipped first (warm-up)
  std::string nsys_ranks;
  bool any() const { return !ncu_ranks.empty() || !nsys_ranks.empty(); }
};

struct RunOptions {
  std::vector<std::string> command;
  std::string out_dir;  // empty = rankscope-<job id>
  // Empty: 127.0.0.1 when every rank runs on this host, else this host's address that the
  // others can reach (LaunchSpansHosts).
  std::string bind_address;
  int port = 0;
  std::string self_exe;                       // absolute path of this rankscope binary
  DurationNs drain_timeout = 15 * kNsPerSec;  // wait for agents' final batches after the job
  bool quiet = false;                         // no report on stderr
  bool full_trace = false;                    // trace.json with every event, however large
  // CoordinatorConfig::raw_compute_records (0, or full_trace: no limit).
  uint64_t raw_gpu_records = kDefaultRawComputeRecords;
  // Passed to every rank's inject library as RANKSCOPE_<NAME>=value (agent/inject/
  // capture_window.h, cupti_config.h); empty values are not set.
  std::vector<std::pair<std::string, std::string>> inject_env;
  // Ranks record nothing until `rankscope capture` starts a capture (launchers/capture_cmd.h).
  bool dormant = false;
  // The status line while the job runs: on a terminal it is redrawn each second; with `live`
  // it is printed as a line every 10 s where stderr is not one. None when quiet.
  bool live = false;
  // A rank inside one blocking MPI call this long is reported stalled, with the rank it waits
  // for (coordinator/stall_check.h); 0: no stall check.
  DurationNs stall_after = 20 * kNsPerSec;
  ToolOptions tools;
};

int RunJob(const RunOptions& options);

struct CoordinatorOptions {
  std::string bind_address = "127.0.0.1";  // "auto": ReachableHostAddress()
  int port = 0;
  std::string session_id;
  std::string token_file;  // read the token from here, or write a new one here (0600)
  std::string out_dir;
  int ranks = 0;           // write the report when this many agents have finished
  DurationNs timeout = 0;  // 0 = no limit
  int watch_pid = 0;       // > 0: write the report when this process is gone (the srun)
  std::string launcher;    // for the report when the agents do not say (e.g. "srun --rankscope")
  std::vector<std::string> command;  // the job's command line, for the report
  bool endpoint = false;  // write the endpoint file, for `rankscope capture` (dormant ranks)
  bool quiet = false;     // do not print the report
};

// `rankscope coordinator`: a stand-alone coordinator; prints "listening on HOST:PORT" on stdout
// (the SPANK plugin reads it), the report on stderr.
int RunCoordinator(const CoordinatorOptions& options);

}  // namespace rankscope
