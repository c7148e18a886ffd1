// The typed evidence of findings: why a rank was slow (CauseKind) and the facts of a finding
// that other analyses, the planner and the report read. report/finding_evidence.cc writes each
// into report.json's evidence under the keys named beside it, and reads them back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "model/nccl/nccl_types.h"

namespace rankscope {

// Why a slow rank was slow, as the analyses found it (report.json: evidence.cause_kind).
enum class CauseKind : uint8_t {
  kNone,               // no cause named (not a straggler's finding)
  kUnexplained,        // its time before the late calls looks like the others'
  kGpuQueue,           // launched on time, its kernels waited on the GPU
  kGpuKernels,         // GPU kernel time before the calls grew
  kNvtxRange,          // an NVTX range before the calls grew
  kMpiP2p,             // point-to-point MPI before the calls grew
  kUntrackedHostTime,  // host time outside every range grew
  kCpuStarved,         // runnable but not running (a quota, other processes on its CPUs)
  kFrozen,             // a cgroup freezer held it
  kStopped,            // stopped by a signal or a tracer
  kBlocked,            // blocked in the kernel by its own call (a slow file, a pipe)
  kHostIo,             // its processes read (or waited on block I/O) far more than the others'
  kHostCpu,            // its processes used far more CPU
  kHostWaiting,        // its processes neither read nor computed more: they wait
};

// "unexplained", "gpu_queue", ..., "host_waiting"; "" for kNone.
inline std::string_view CauseKindName(CauseKind kind) {
  switch (kind) {
    case CauseKind::kUnexplained:
      return "unexplained";
    case CauseKind::kGpuQueue:
      return "gpu_queue";
    case CauseKind::kGpuKernels:
      return "gpu_kernels";
    case CauseKind::kNvtxRange:
      return "nvtx_range";
    case CauseKind::kMpiP2p:
      return "mpi_p2p";
    case CauseKind::kUntrackedHostTime:
      return "untracked_host_time";
    case CauseKind::kCpuStarved:
      return "cpu_starved";
    case CauseKind::kFrozen:
      return "frozen";
    case CauseKind::kStopped:
      return "stopped";
    case CauseKind::kBlocked:
      return "blocked";
    case CauseKind::kHostIo:
      return "host_io";
    case CauseKind::kHostCpu:
      return "host_cpu";
    case CauseKind::kHostWaiting:
      return "host_waiting";
    case CauseKind::kNone:
      break;
  }
  return "";
}

// The cause CauseKindName names `name`; kNone for any other name.
inline CauseKind ParseCauseKind(std::string_view name) {
  for (auto k = static_cast<int>(CauseKind::kUnexplained);
       k <= static_cast<int>(CauseKind::kHostWaiting); ++k) {
    if (CauseKindName(static_cast<CauseKind>(k)) == name) return static_cast<CauseKind>(k);
  }
  return CauseKind::kNone;
}

// The facts of a finding that other analyses and the planner act on, typed, so that what a report
// key is called cannot change a diagnosis. report.json writes each into the finding's evidence
// under the keys named beside it, and reads them back (coordinator/report/report_json.cc).

// What carries a communicator's traffic between two of its ranks.
enum class LinkMedium : uint8_t { kUnknown, kNvlink, kPcie, kNetwork };

// "NVLink", "PCIe", "network"; "" for kUnknown.
inline std::string_view LinkMediumName(LinkMedium medium) {
  switch (medium) {
    case LinkMedium::kNvlink:
      return "NVLink";
    case LinkMedium::kPcie:
      return "PCIe";
    case LinkMedium::kNetwork:
      return "network";
    case LinkMedium::kUnknown:
      break;
  }
  return "";
}

// The medium LinkMediumName names `name`; kUnknown for any other name.
inline LinkMedium ParseLinkMedium(std::string_view name) {
  for (LinkMedium m : {LinkMedium::kNvlink, LinkMedium::kPcie, LinkMedium::kNetwork}) {
    if (LinkMediumName(m) == name) return m;
  }
  return LinkMedium::kUnknown;
}

// The slowest link of a communicator's ring, which holds it below its ceiling
// (evidence.limiting_link).
struct LimitingLink {
  int from_rank = -1;
  int to_rank = -1;
  int at_rank = -1;  // the member on the limiting side (the weaker node's, for a NIC)
  std::string from_node;
  std::string to_node;
  std::string transport;  // NCCL's transport over it ("P2P/CUMEM", "NET/IB", ...)
  LinkMedium medium = LinkMedium::kUnknown;
  std::string link;  // what sets its capacity ("PCIe gen5 x16", "18 NVLinks x 25 GB/s ...")
  double nominal_gbps = 0;
  bool operator==(const LimitingLink&) const = default;
};

// A communicator's slow call shape as measured (imbalanced_ring, below_link_ceiling: evidence.
// comm_id, op, bytes, busbw_gbps; against communicators like it, peers and
// peer_median_busbw_gbps).
struct CommMeasure {
  std::string comm_id;
  NcclOp op = NcclOp::kUnknown;
  Bytes bytes = 0;
  double busbw_gbps = 0;
  int peers = -1;  // communicators like it elsewhere; -1: not held against peers
  double peer_median_busbw_gbps = 0;
  bool operator==(const CommMeasure&) const = default;
};

// How a rank arrived at the collectives where the others waited for it (arrival-based
// stragglers: evidence.instances_last, instances_total, median_lateness_ns, others_wait_ns,
// others_waiting, others_wait_fraction, ops).
struct LateArrivals {
  int instances_last = 0;   // instances where it was the last to arrive
  int instances_total = 0;  // instances it took part in
  DurationNs median_lateness = 0;
  DurationNs others_wait = 0;  // the others' waiting for it
  int others_waiting = 0;      // ranks that waited for it
  double others_wait_fraction = 0;
  std::map<std::string, int> ops;  // collective calls it was last at, by NCCL/MPI name
  bool operator==(const LateArrivals&) const = default;
};

// The NVTX range a slow rank's extra time went into (evidence.cause: range and its time on the
// rank against the others', per late call for arrival-based stragglers, else over the run).
struct CauseRange {
  std::string name;
  DurationNs mine = 0;
  DurationNs others = 0;
  bool per_instance = false;
  bool operator==(const CauseRange&) const = default;
};

// A GPU kernel that took longer on a slow rank than on the others before its late calls
// (evidence.kernels), per late call.
struct KernelExcess {
  std::string name;  // demangled
  DurationNs mine = 0;
  DurationNs others = 0;
  bool operator==(const KernelExcess&) const = default;
};

// Why a rank was off its CPU, from its main thread's samples (coordinator/analysis/off_cpu.h;
// evidence.off_cpu: kind, wchan, meaning, share, others_share, samples).
struct OffCpuCause {
  // kFrozen (cgroup freezer), kStopped (SIGSTOP/SIGTSTP, a debugger, `scontrol suspend`) or
  // kBlocked (in the kernel function `where`, what `meaning` says it is).
  CauseKind kind = CauseKind::kBlocked;
  std::string where;    // the wchan samples of the category added up under its most frequent name
  std::string meaning;  // "writing a pipe or FIFO faster than it is drained", ...
  double share = 0;     // of the rank's main-thread samples
  double others_share = 0;  // the median over the other ranks with samples
  int samples = 0;          // the rank's main-thread samples
  bool operator==(const OffCpuCause&) const = default;
};

// The cgroup whose CPU quota throttled a rank (evidence.cpu.cgroup: version, path, nr_throttled,
// nr_periods, throttled_ns, quota_cpus).
struct QuotaCgroup {
  int version = 0;   // 1: the v1 `cpu` hierarchy; 2: the unified hierarchy
  std::string path;  // the cgroup whose quota binds
  uint64_t nr_throttled = 0;
  uint64_t nr_periods = 0;
  DurationNs throttled_ns = 0;
  std::optional<double> quota_cpus;  // nullopt: unlimited
  bool operator==(const QuotaCgroup&) const = default;
};

// A node's GPU links that NVML saw below what they should be (pcie_bound, nvlink_down from
// coordinator/analysis/gpu_link_analysis.h: evidence.degraded_pcie_links, evidence.nvlinks_down,
// evidence.driver_version).
struct DegradedPcieLink {
  uint32_t gpu = 0;  // NVML's index
  std::string bus_id;
  int gen = 0;  // as trained while the job ran (the best seen)
  int gen_max = 0;
  int width = 0;
  int width_max = 0;
  bool operator==(const DegradedPcieLink&) const = default;
};
struct DownNvlinks {
  uint32_t gpu = 0;  // NVML's index
  std::string bus_id;
  int nvlinks_up = 0;
  int nvlinks_total = 0;
  bool operator==(const DownNvlinks&) const = default;
};
struct NvmlLinkState {
  std::string driver_version;
  std::vector<DegradedPcieLink> pcie;  // a pcie_bound finding's
  std::vector<DownNvlinks> nvlinks;    // an nvlink_down finding's
  bool operator==(const NvmlLinkState&) const = default;
};

// What the dataloader analysis took as each step's data loading (evidence.step_source).
enum class StepSource : uint8_t {
  kNone,
  kDataRanges,         // NVTX ranges matching the data pattern
  kStepRanges,         // the start of each step range to its first data-free work
  kFirstKernelLaunch,  // each step's start to its first kernel launch (no data ranges)
};

// "data_ranges", "step_ranges", "first_kernel_launch"; "" for kNone.
inline std::string_view StepSourceName(StepSource source) {
  switch (source) {
    case StepSource::kDataRanges:
      return "data_ranges";
    case StepSource::kStepRanges:
      return "step_ranges";
    case StepSource::kFirstKernelLaunch:
      return "first_kernel_launch";
    case StepSource::kNone:
      break;
  }
  return "";
}

// The source StepSourceName names `name`; kNone for any other name.
inline StepSource ParseStepSource(std::string_view name) {
  for (StepSource s :
       {StepSource::kDataRanges, StepSource::kStepRanges, StepSource::kFirstKernelLaunch}) {
    if (StepSourceName(s) == name) return s;
  }
  return StepSource::kNone;
}

// What set a rank apart when only sampled from outside (process_outlier).
enum class ProcessVerdict : uint8_t {
  kIoHeavy,              // it read far more than the others
  kIoHeavyStorage,       // ... much of it from storage
  kBlockedOnStorage,     // it was blocked on block I/O for a share of the window
  kIdleWhileOthersBusy,  // it used far less CPU than the others while they ran
};

// "io_heavy", "io_heavy_storage", "blocked_on_storage", "idle_while_others_busy".
inline std::string_view ProcessVerdictName(ProcessVerdict v) {
  switch (v) {
    case ProcessVerdict::kIoHeavy:
      return "io_heavy";
    case ProcessVerdict::kIoHeavyStorage:
      return "io_heavy_storage";
    case ProcessVerdict::kBlockedOnStorage:
      return "blocked_on_storage";
    case ProcessVerdict::kIdleWhileOthersBusy:
      return "idle_while_others_busy";
  }
  return "";
}

// A process_outlier's figures over the sampled window against the other ranks' medians
// (evidence: window_ns, rchar_bytes, read_bytes, blkio_delay_ns, cpu_ns, each with its
// others_median_..., ranks_compared, verdicts).
struct ProcessOutlierFigures {
  DurationNs window = 0;
  double rchar = 0, others_rchar = 0;            // bytes read through read()-like calls
  double read_bytes = 0, others_read_bytes = 0;  // bytes read from storage
  double blkio_delay = 0, others_blkio_delay = 0;
  double cpu = 0, others_cpu = 0;  // ns of CPU time
  size_t ranks_compared = 0;
  std::vector<ProcessVerdict> verdicts;
  bool operator==(const ProcessOutlierFigures&) const = default;
};

// What a slow rank's processes did against the other ranks' median, from the agents' /proc
// sampling (coordinator/analysis/describe.h ProcessEvidence; evidence.process). `verdict` is
// kHostIo, kHostCpu or kHostWaiting (report: "io", "cpu", "waiting").
struct HostProcessFigures {
  CauseKind verdict = CauseKind::kHostWaiting;
  uint64_t rchar = 0;
  double others_rchar = 0;
  uint64_t read_bytes = 0;
  double others_read_bytes = 0;
  double cpu = 0;  // ns
  double others_cpu = 0;
  DurationNs blkio_delay = 0;
  double others_blkio_delay = 0;
  int32_t processes = 0;
  bool io_unreadable = false;
  bool operator==(const HostProcessFigures&) const = default;
};

// A dataloader_skew finding's figures (evidence: steps, steps_skewed, frac_skewed,
// median_data_ns, others_median_data_ns, median_excess_ns, total_excess_ns, noise_ns,
// excess_threshold_ns, median_step_ns where steps are NVTX ranges, range_names).
struct DataloaderFigures {
  int steps = 0;
  int steps_skewed = 0;
  double frac_skewed = 0;
  DurationNs median_data = 0;  // per step on the rank
  DurationNs others_median_data = 0;
  DurationNs median_excess = 0;
  DurationNs total_excess = 0;
  DurationNs noise = 0;
  DurationNs threshold = 0;
  std::optional<DurationNs> median_step;
  std::vector<std::string> range_names;  // most time first
  bool operator==(const DataloaderFigures&) const = default;
};

// How sure the blame model is of a straggler, and from what (evidence.confidence: gain,
// separation, outside; value is Finding::confidence).
struct BlameConfidence {
  double gain = 0;        // the what-if's gain as a share of the job, against its threshold
  double separation = 0;  // how clearly the MPI figures set the rank apart, times persistence
  double outside = 0;     // how clearly the agents saw it slowed from outside the program
  double value = 0;       // min(gain, 1 - (1 - separation) x (1 - outside))
  bool operator==(const BlameConfidence&) const = default;
};

// What kept a CPU-starved rank off its CPUs (evidence.cpu.verdict and evidence.cpu_cause).
enum class StarvedBy : uint8_t {
  kCgroupQuota,    // its own cgroup's CPU quota throttled it
  kCpuContention,  // something else ran on its CPUs
};

// "cgroup_quota", "cpu_contention".
inline std::string_view StarvedByName(StarvedBy by) {
  return by == StarvedBy::kCgroupQuota ? "cgroup_quota" : "cpu_contention";
}

// A CPU-starved rank's scheduler figures against the other ranks' medians, from the agents'
// /proc sampling (evidence.cpu: run_delay_ns, wall_ns, run_delay_per_wall,
// others_run_delay_per_wall, cpu_per_wall, others_cpu_per_wall, involuntary_switches,
// others_involuntary_switches, verdict; the cgroup is QuotaCgroup).
struct CpuStarvation {
  DurationNs run_delay = 0;  // runnable but not running
  DurationNs wall = 0;       // over the sampled window
  double run_delay_per_wall = 0;
  double others_run_delay_per_wall = 0;
  double cpu_per_wall = 0;
  double others_cpu_per_wall = 0;
  uint64_t involuntary_switches = 0;
  double others_involuntary_switches = 0;
  StarvedBy by = StarvedBy::kCpuContention;
  bool operator==(const CpuStarvation&) const = default;
};

// Whether an arrival-based straggler was late all through the run or mainly in one half of it
// (evidence.persistence).
enum class Lateness : uint8_t { kThroughout, kFirstHalf, kSecondHalf };

// "throughout", "first_half", "second_half".
inline std::string_view LatenessName(Lateness l) {
  switch (l) {
    case Lateness::kFirstHalf:
      return "first_half";
    case Lateness::kSecondHalf:
      return "second_half";
    case Lateness::kThroughout:
      break;
  }
  return "throughout";
}

// The rest of an arrival-based straggler's figures beside LateArrivals (evidence:
// instances_late, frac_last, frac_late, frac_late_needed, chance_probability,
// frac_late_first_half, frac_late_second_half, persistence, p90_lateness_ns, lateness_ns,
// frac_late_by_decile, noise_ns, lateness_threshold_ns, clock_uncertainty_ns, wait_states,
// communicators).
struct ArrivalFigures {
  int instances_late = 0;
  double frac_last = 0;
  double frac_late = 0;
  double frac_late_needed = 0;
  double chance_probability = 1;  // of this many late instances for a clean rank
  double frac_late_first_half = 0;
  double frac_late_second_half = 0;
  Lateness persistence = Lateness::kThroughout;
  DurationNs p90_lateness = 0;
  std::vector<DurationNs> lateness_quantiles;  // p10, p25, p50, p75, p90, max; or none
  std::vector<double> frac_late_by_decile;     // ten, or none
  DurationNs noise = 0;
  DurationNs lateness_threshold = 0;
  DurationNs clock_uncertainty = 0;
  std::map<std::string, int> wait_states;  // late instances by wait-state pattern key
  struct Communicator {
    std::string comm_id;
    int late_instances = 0;
    int last_instances = 0;
    DurationNs others_wait = 0;
    bool operator==(const Communicator&) const = default;
  };
  std::vector<Communicator> communicators;  // where it is last first
  bool operator==(const ArrivalFigures&) const = default;
};

// What an arrival-based straggler did before the calls it was late at, per late call, against
// the others' median (evidence: cause_instances, ranges, gap/untracked/mpi/kernel_ns_per_instance
// each with its others_..., launch). Kernels are Finding::kernels, the cause range CauseRange.
struct BeforeLateCalls {
  int instances = 0;
  std::vector<CauseRange> ranges;  // per instance, most excess first, at most three
  DurationNs gap = 0, others_gap = 0;
  DurationNs untracked = 0, others_untracked = 0;
  DurationNs mpi = 0, others_mpi = 0;
  DurationNs kernels = 0, others_kernels = 0;
  // NCCL launch times, where known for most late instances.
  struct Launch {
    int instances = 0;
    DurationNs launch_lateness = 0;  // median: its launch minus the others' median launch
    DurationNs queue = 0;            // median: its kernel start minus its launch
    DurationNs others_queue = 0;
    bool operator==(const Launch&) const = default;
  };
  std::optional<Launch> launch;
  bool operator==(const BeforeLateCalls&) const = default;
};

// A late_sender or late_receiver finding's figures (evidence: late_messages, sends or receives,
// receivers or senders, median_direct_wait_ns, direct_wait_ns, propagated_wait_ns,
// cost_fraction, p2p_span_ns, clock_uncertainty_ns, matched_messages, unmapped_records,
// median_message_bytes, sender_ranges or receiver_ranges, sender_untracked_ns or
// receiver_untracked_ns). The kind of the finding says which key of each pair.
struct WaitStateFigures {
  int late_messages = 0;
  int matched = 0;          // its matched messages (sends or receives)
  std::vector<int> others;  // the ranks that waited
  DurationNs median_direct_wait = 0;
  DurationNs direct_wait = 0;
  DurationNs propagated_wait = 0;
  double cost_fraction = 0;
  DurationNs p2p_span = 0;
  DurationNs clock_uncertainty = 0;
  int matched_messages = 0;  // in the session
  int unmapped_records = 0;
  Bytes median_message_bytes = 0;                          // 0: not shown
  std::vector<std::pair<std::string, DurationNs>> ranges;  // where it was, most time first
  DurationNs untracked = 0;                                // ... outside every range
  bool operator==(const WaitStateFigures&) const = default;
};

// A link between two members of a communicator (transport: NCCL's, "" where not said).
struct RankLink {
  int from = 0;
  int to = 0;
  std::string transport;
  bool operator==(const RankLink&) const = default;
};

// An imbalanced_ring finding's figures beside CommMeasure (evidence: nranks, instances,
// transports, odd_links, ring_cross_node_hops, ring_cross_node_hop_list,
// peer_median_ring_cross_node_hops).
struct RingFigures {
  int nranks = 0;
  int instances = 0;
  std::vector<std::string> transports;
  std::vector<RankLink> odd_links;          // over transports no peer uses
  std::vector<RankLink> cross_node_hops;    // of its ring, per loop
  double peer_median_cross_node_hops = -1;  // -1: no peer ring known
  bool operator==(const RingFigures&) const = default;
};

// One call shape that reaches less than its link's healthy floor.
struct ShapeBelowCeiling {
  NcclOp op = NcclOp::kUnknown;
  Bytes bytes = 0;
  double busbw_gbps = 0;
  double fraction = 0;  // of the link's nominal bandwidth
  int instances = 0;
  bool operator==(const ShapeBelowCeiling&) const = default;
};

// A below_link_ceiling finding's figures beside CommMeasure (evidence: nranks, instances,
// transports, shapes_below_ceiling).
struct BelowCeilingFigures {
  int nranks = 0;
  int instances = 0;
  std::vector<std::string> transports;
  std::vector<ShapeBelowCeiling> shapes;
  bool operator==(const BelowCeilingFigures&) const = default;
};

// A communicator held against its limiting link (LimitingLink; evidence:
// below_transport_ceiling, ceiling_busbw_gbps, ceiling_fraction_reached, ceiling_min_fraction).
struct CeilingReach {
  bool below = false;
  double ceiling_gbps = 0;
  double fraction = 0;      // reached, of the ceiling
  double min_fraction = 0;  // a healthy NCCL's floor
  bool operator==(const CeilingReach&) const = default;
};

}  // namespace rankscope
