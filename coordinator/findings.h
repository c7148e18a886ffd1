// Findings: what the analyses conclude. Each says what is wrong, where (ranks, nodes), how sure
// (confidence 0..1), the numbers behind it (evidence), and what to run next (from the planner).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/evidence.h"
#include "core/time.h"

namespace rankscope {

// One concrete next command: the tool, the exact command line, and what to look for in it.
struct NextStep {
  std::string tool;
  std::string command;
  std::string look_for;
};

enum class Severity { kInfo, kWarning, kCritical };
inline const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

// What the blame model (analysis/blame.h) says the job would have taken had the finding's ranks
// run like the typical rank, by replaying the run's dependencies.
struct WhatIf {
  DurationNs job = 0;           // the job's measured wall time (the session's, launch to exit)
  DurationNs with_typical = 0;  // the same less what the replay saves with the ranks typical
  DurationNs caused = 0;        // the others' waiting the ranks caused, chains included
  std::vector<int> ranks;       // the ranks made typical (the finding's, and stragglers before)
  double speedup() const {
    return with_typical > 0 ? static_cast<double>(job) / static_cast<double>(with_typical) : 0.0;
  }
};

// What a finding is about; report.json names it as FindingKindName says. kOther is a kind this
// build does not name (a report.json from a later rankscope, read back by `advise`): its name is
// kept in Finding::other_kind.
enum class FindingKind : uint8_t {
  kOther,
  kStraggler,
  kLateSender,
  kLateReceiver,
  kDataloaderSkew,
  kImbalancedRing,
  kBelowLinkCeiling,
  kPcieBound,
  kNvlinkDown,
  kProcessOutlier,
};

// "straggler", "late_sender", ...; "other" for kOther.
inline std::string_view FindingKindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::kStraggler:
      return "straggler";
    case FindingKind::kLateSender:
      return "late_sender";
    case FindingKind::kLateReceiver:
      return "late_receiver";
    case FindingKind::kDataloaderSkew:
      return "dataloader_skew";
    case FindingKind::kImbalancedRing:
      return "imbalanced_ring";
    case FindingKind::kBelowLinkCeiling:
      return "below_link_ceiling";
    case FindingKind::kPcieBound:
      return "pcie_bound";
    case FindingKind::kNvlinkDown:
      return "nvlink_down";
    case FindingKind::kProcessOutlier:
      return "process_outlier";
    case FindingKind::kOther:
      break;
  }
  return "other";
}

// The kind FindingKindName names `name`; kOther for any other name.
inline FindingKind ParseFindingKind(std::string_view name) {
  for (auto k = static_cast<int>(FindingKind::kStraggler);
       k <= static_cast<int>(FindingKind::kProcessOutlier); ++k) {
    if (FindingKindName(static_cast<FindingKind>(k)) == name) return static_cast<FindingKind>(k);
  }
  return FindingKind::kOther;
}

// A kernel the finding names, as Nsight Compute measured it on the finding's rank (`rankscope
// run --ncu-rank R`, model/ncu): the end of a straggler's chain (report.json:
// evidence.kernel_verdicts).
struct KernelVerdict {
  std::string kernel;  // its function's name
  std::string bound;   // "compute-bound", "memory-bound", "latency-bound"
  std::string why;     // the figures behind it
  std::string stall;   // its top warp stall: "long_scoreboard 3.10 cycles per issued instruction"
  std::string fix;     // what to change for that stall; "" for a kernel at its roof
  std::string report;  // the .ncu-rep it was read from
};

struct Finding {
  FindingKind kind = FindingKind::kOther;
  std::string other_kind;  // kOther's name, as the report that held it said
  Severity severity = Severity::kWarning;
  std::vector<int> ranks;
  std::vector<std::string> nodes;
  CauseKind cause = CauseKind::kNone;  // why, where an analysis named it (report: cause_kind)
  std::string summary;                 // one or two sentences a person reads first
  nlohmann::json evidence = nlohmann::json::object();  // numbers, in named units (_ns, _ms, ...)
  double confidence = 0.0;
  // What the next tool's output should show about this finding, in the analysis' words ("what
  // rank 2 does inside NVTX range 'data' ..."); the planner puts it into the steps it chooses.
  std::string focus;
  // Filled in by the planner (coordinator/advise/advisor.h, PlanNextSteps), never by an analysis.
  std::vector<NextStep> next_steps;
  // How much job time this costs (ns summed over the ranks that waited); orders findings.
  int64_t cost_ns = 0;
  // Stragglers (and findings a straggler joined): the blame model's what-if.
  std::optional<WhatIf> what_if;
  // Typed facts (above); report.json writes each into the evidence.
  std::optional<LimitingLink> limiting_link;
  std::optional<CommMeasure> comm_measure;
  std::optional<LateArrivals> arrivals;
  std::optional<CauseRange> cause_range;
  // The kernels before its late calls, most excess first; an arrival-based straggler's always
  // (possibly empty), so the evidence shows that none stood out.
  std::optional<std::vector<KernelExcess>> kernels;
  StepSource step_source = StepSource::kNone;
  std::optional<OffCpuCause> off_cpu;
  std::optional<QuotaCgroup> quota_cgroup;
  std::optional<NvmlLinkState> nvml_links;
  // A finding kind's whole evidence, where the kind's is typed (report.json: evidence).
  std::optional<ProcessOutlierFigures> process_outlier;
  std::optional<DataloaderFigures> dataloader;
  std::optional<HostProcessFigures> host_process;  // evidence.process
  std::optional<ArrivalFigures> arrival_figures;
  std::optional<BeforeLateCalls> before_late_calls;
  std::optional<CpuStarvation> cpu_starvation;      // evidence.cpu
  std::optional<BlameConfidence> blame_confidence;  // evidence.confidence
  std::optional<WaitStateFigures> wait_state;
  std::optional<RingFigures> ring;
  std::optional<BelowCeilingFigures> below_ceiling;
  std::optional<CeilingReach> ceiling;
  std::string
      weak_links;  // pcie_bound from a measured ring: the node's weak links (evidence.links)
  // Findings folded into this one as its measured cost: a slow communicator into its node's
  // pcie_bound (evidence.measured), a shortfall below a link's ceiling into that link's finding
  // (evidence.below_link_ceiling), a straggler's late arrivals into its loader's skew
  // (evidence.straggler: its arrivals and cause range only).
  std::vector<Finding> joined;
  // The kernels it names as ncu measured them, and the tool a rank of it ran under whose replay
  // made it slow while it profiled ("ncu"; evidence.under_tool): findings/kernel_reports.h.
  std::vector<KernelVerdict> kernel_verdicts;
  std::string under_tool;

  // The kind's name as report.json writes it.
  std::string_view KindName() const {
    return kind == FindingKind::kOther ? std::string_view(other_kind) : FindingKindName(kind);
  }
};

}  // namespace rankscope
