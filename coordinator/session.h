// The session model: everything the coordinator knows about one profiled job, per rank.
// Filled by the gRPC service (coordinator/service) as agents report, aligned onto the
// coordinator's clock by AlignSession (aligner.h), then read by the analyses and writers.
// Plain data; no locking here (the service guards its own copy).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/live_check.h"
#include "coordinator/stall_check.h"
#include "core/clock_model.h"
#include "core/intervals.h"
#include "core/proc_stats.h"
#include "core/records.h"
#include "core/time.h"
#include "model/gpu/gpu_stats.h"
#include "model/gpu/kernel_pieces.h"
#include "model/gpu/launch_latency.h"
#include "model/nccl/rank_nccl.h"
#include "model/rank_identity.h"
#include "model/sweep_result.h"
#include "model/topology/nvml.h"

namespace rankscope {

// The largest world size a session takes (a job of 2^20 ranks). A rank's identity beyond it (its
// world size or its rank) is refused at Register, and is corruption in a saved session:
// a world size of 2^31 from a job's environment once made the coordinator allocate 8 GB.
inline constexpr int kMaxWorldSize = 1 << 20;

// The report of a tool a rank ran under (`rankscope run --ncu-rank R`, `--nsys-ranks`; its
// agent ran the program under it: agent/tool_wrap.h).
struct ToolRun {
  std::string tool;  // "ncu" or "nsys"
  std::string path;  // the report file, on `host`
  std::string host;
  std::string csv;    // ncu: the report's raw page (`ncu --import PATH --csv --page raw`)
  std::string error;  // why there is no report, or no csv
  // The rank ran under the tool in this run; false for a report of another run joined afterwards
  // (`rankscope report DIR --ncu RANK=FILE`), which did not slow this one.
  bool same_run = true;
};

struct RankData {
  RankIdentity id;
  std::vector<ClockSample> clock_samples;
  ClockModel clock;  // valid when clock_fitted
  bool clock_fitted = false;
  std::string clock_error;  // why the fit failed, if it did

  // Records, in the rank's local clock until the session is aligned, then in coordinator time.
  std::vector<CollectiveRecord> collectives;
  std::vector<P2PRecord> p2p;
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  std::vector<GpuActivityRecord> gpu;  // CUPTI activity (kernels, copies, syncs, runtime calls)
  // The GPU activity summed by the agent per window and kind of work (model/gpu/gpu_stats.h),
  // window starts on the coordinator's clock once aligned. Empty from an agent that sends none.
  std::vector<GpuStats> gpu_stats;
  // Its launch latencies per window (model/gpu/launch_latency.h), aligned like gpu_stats.
  std::vector<LaunchLatency> launch_latency;
  // Its compute-kernel time per name between collective boundaries (model/gpu/kernel_pieces.h),
  // from/to aligned like the records (in order of from once aligned), and how many boundaries or
  // kernels its agent saw too late for them (then they are not exact, and the records are read
  // instead).
  std::vector<KernelPiece> kernel_pieces;
  uint64_t kernel_pieces_late = 0;
  // Its merged compute-kernel time within its NCCL kernels and kNcclComputeMargin after each
  // (model/gpu/nccl_compute.h), aligned and merged, how many kernels its agent saw too late for
  // them, and whether the agent sent its compute kernels only summed (no records): then the ring
  // analysis reads the spans instead of the records.
  Intervals nccl_compute;
  uint64_t nccl_compute_late = 0;
  bool compute_kernels_summed = false;
  // MPI calls the analyses do not interpret (MPI-IO, one-sided synchronisation, persistent
  // starts): time inside MPI that is neither a collective nor point-to-point.
  std::vector<MpiCallRecord> mpi_calls;

  std::optional<RankNccl> nccl;  // when the rank used NCCL and its log was readable
  std::string topology_source;   // the NCCL topology dump this rank's agent read, if any
  std::string topology_xml;
  // NVML on this rank's node (local rank 0 reads it): the GPUs, or why NVML could not be read.
  std::optional<NvmlSnapshot> nvml;
  std::string nvml_error;
  // What the rank's processes (program + the processes it started) did, from the agent's /proc
  // sampling; absent when the agent did not sample.
  std::optional<ProcessTreeStats> proc;
  // `rankscope sweep`: this node's health-check figures (one "rank" per node).
  std::vector<SweepCheckResult> sweep;
  std::optional<ToolRun> tool_run;  // when it ran under ncu or nsys

  std::vector<std::string> notices;  // from the agent / inject library, shown in the report
  uint64_t dropped_records = 0;
  std::optional<int> exit_code;  // as the launcher sees it (128+signal when killed)
  int term_signal = 0;
  bool finished = false;  // the agent's final batch arrived
  // It ended, but its exit status was not seen (exit_code empty): the agent beside it found it
  // reaped already, and it had not called exit() (a signal, or _exit).
  bool exit_unseen = false;
  // When its agent saw it end (the rank's clock, coordinator time once aligned); 0 unknown.
  TimeNs exit_time = 0;
};

// Whether a rank's GPU figures come from its agent's rows (gpu_stats, launch_latency) rather than
// its records: its final batch came (the rows are whole), or its compute kernels were only summed
// (the records hold only some of them).
inline bool ReadGpuRows(const RankData& r) { return r.finished || r.compute_kernels_summed; }

struct Session {
  std::string session_id;
  std::string job_id;
  std::string launcher;              // "mpirun", "slurm", "none", ...
  std::vector<std::string> command;  // what the user asked rankscope to run
  int world_size = 0;
  TimeNs start = 0;  // coordinator clock
  TimeNs end = 0;
  std::optional<int> launcher_exit_code;

  // A partial session lacks data: a rank that never registered or never sent its final batch,
  // a crashed rank, a launcher that failed. The reasons are written into the report.
  bool partial = false;
  std::vector<std::string> partial_reasons;

  // What the analyses could not decide and want a person to know (e.g. a rank whose lateness
  // is within its clock uncertainty). Filled by the pipeline, shown in every report.
  std::vector<std::string> analysis_notes;

  // What the live check reported while the job ran (coordinator/live_check.h; times since the
  // launch): shown beside the findings, which weigh the whole run.
  std::vector<LiveFinding> live_findings;
  // What the stall check reported while the job ran (coordinator/stall_check.h; times since the
  // launch): ranks that waited inside MPI far longer than a step, and for whom.
  std::vector<StallFinding> live_stalls;

  std::vector<RankData> ranks;  // sorted by rank
  // Ranks of torchrun attempts before the last (coordinator/attempts.h): kept, not analysed.
  std::vector<RankData> earlier_attempts;
  bool aligned = false;  // records are in coordinator time

  // The rank's data, or nullptr.
  const RankData* FindRank(int rank) const {
    for (const RankData& r : ranks) {
      if (r.id.rank == rank) return &r;
    }
    return nullptr;
  }

  // How long the ranks were sampled from outside: the median over ranks of the span between each
  // agent's first and last clock sample (it syncs when it starts sampling and when it sends
  // the figures), or the session's span when no rank has two samples.
  DurationNs SampledWindow() const {
    std::vector<DurationNs> spans;
    for (const RankData& r : ranks) {
      if (r.clock_samples.size() >= 2) {
        spans.push_back(r.clock_samples.back().t4 - r.clock_samples.front().t1);
      }
    }
    if (spans.empty()) return end - start;
    std::nth_element(spans.begin(), spans.begin() + spans.size() / 2, spans.end());
    return spans[spans.size() / 2];
  }

  // Ranks seen from outside only (rankscope attach on a job launched without rankscope): every
  // rank registered by an outside sampler (launcher "attach", agent/outside_sampler.h).
  bool SampledFromOutsideOnly() const {
    return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankData& r) {
      return r.id.launcher == "attach";
    });
  }
};

}  // namespace rankscope
