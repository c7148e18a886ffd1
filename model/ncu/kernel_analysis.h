// What a kernel's Nsight Compute counters say, as a performance engineer reads them: where it
// sits on its GPU's roofline, which roof bounds it and how near it is, how full the SMs were and
// what capped that, why its warps stalled and what to change. Pure: an NcuLaunch in, figures and
// prose-ready facts out (text and JSON are made in ncu_text / ncu_json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/ncu/ncu_report.h"

namespace rankscope {

// A compute roof: FP64, FP32, FP16 (the FMA pipes, sass instruction counts) or the tensor cores.
struct ComputeRoof {
  std::string precision;      // "fp64", "fp32", "fp16", "tensor"
  std::string detail;         // tensor: the op path that did the most work, e.g. "hgmma bf16->fp32"
  double achieved_flops = 0;  // FLOP/s
  double peak_flops = 0;      // FLOP/s at the clocks of the run (0: unknown)
  std::string peak_source;    // "ncu" (the file's peak_sustained), or "datasheet H100 SXM" ...
};

// A memory level's traffic against its peak.
struct MemoryRoof {
  std::string level;        // "dram", "l2", "l1"
  double bytes = 0;         // moved by the launch (0 when only the rate is in the file)
  double achieved_bps = 0;  // bytes/s
  double peak_bps = 0;      // bytes/s (0: not in the file)
  double pct_of_peak = 0;   // ncu's own figure where it has one, else achieved/peak
  std::string peak_source;  // as ComputeRoof's
};

enum class KernelBound { kCompute, kMemory, kLatency, kUnknown };
const char* KernelBoundName(KernelBound b);  // "compute-bound", "memory-bound", ...

// One warp-stall reason: cycles a warp spent stalled for it per issued instruction (ncu's
// smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio), and what to change.
struct StallReason {
  std::string reason;  // ncu's name: "long_scoreboard", "math_pipe_throttle", ...
  std::string metric;  // the ncu metric the figure is read from
  double cycles_per_issue = 0;
  double share = 0;     // of all stall cycles (the "selected" cycle excluded)
  std::string meaning;  // what the warp waited for
  std::string fix;      // what to change, naming the figure that supports it
};

struct OccupancyFacts {
  double theoretical_pct = 0;         // sm__maximum_warps_per_active_cycle_pct
  double achieved_pct = 0;            // sm__warps_active.avg.pct_of_peak_sustained_active
  int blocks_per_sm = 0;              // the least of the launch__occupancy_limit_* figures
  std::vector<std::string> limiters;  // which of them set it: "registers", "shared memory", ...
  int registers_per_thread = 0;
  double shared_bytes_per_block = 0;
  int block_size = 0;
  double waves_per_sm = 0;
};

// At or above this share of its compute roof a kernel is at its roof: its stalls show how it
// waits there, not what to fix.
inline constexpr double kAtRoofPct = 80.0;

struct KernelAnalysis {
  std::string file;  // the report it came from (set by the caller; ids repeat across files)
  int id = -1;
  std::string kernel;
  std::string device;
  double duration_s = 0;             // gpu__time_duration.sum
  std::vector<ComputeRoof> compute;  // every precision with a peak in the file
  std::vector<MemoryRoof> memory;    // dram, l2, l1 where the file has them
  // The roofline (DRAM): the precision that did the most work against its own peak, the
  // arithmetic intensity in FLOP per DRAM byte, the ridge point of that roof, and the share of
  // the attainable performance at that intensity (min(peak, intensity x bandwidth)).
  std::optional<ComputeRoof> dominant;
  double intensity = 0;    // FLOP/byte (0 when no DRAM traffic or no FLOPs)
  double ridge = 0;        // FLOP/byte
  double pct_of_roof = 0;  // 0..100
  // ncu's Speed Of Light: SM throughput (busiest pipe or issue) and memory throughput (busiest
  // of DRAM, L2, L1), percent of peak over the elapsed time.
  double sm_throughput_pct = 0;
  double memory_throughput_pct = 0;
  double issue_active_pct = 0;
  KernelBound bound = KernelBound::kUnknown;
  std::string why;  // one sentence with the figures behind `bound`
  OccupancyFacts occupancy;
  std::vector<StallReason> stalls;   // most cycles first; reasons under 1 % of them left out
  std::vector<std::string> missing;  // metrics the verdict wanted and the file lacked

  // The DRAM level of `memory`, or nullptr when the file had no DRAM figures.
  const MemoryRoof* Dram() const;
  // Compute-bound at kAtRoofPct or more of its roof: its stalls are how it waits there.
  bool AtRoof() const;
};

// Below this share of peak on both SM and memory throughput a kernel is latency-bound: neither
// roof is near, so the SMs wait (ncu's Speed Of Light rule uses the same 60 %).
inline constexpr double kNearRoofPct = 60.0;

KernelAnalysis AnalyzeKernel(const NcuLaunch& launch);

}  // namespace rankscope
