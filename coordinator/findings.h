// Findings: what the analyses conclude. Each says what is wrong, where (ranks, nodes), how sure
// (confidence 0..1), the numbers behind it (evidence), and what to run next (from the planner).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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

struct Finding {
  // straggler | late_sender | late_receiver | dataloader_skew | imbalanced_ring |
  // below_link_ceiling | pcie_bound | nvlink_down | process_outlier
  std::string kind;
  Severity severity = Severity::kWarning;
  std::vector<int> ranks;
  std::vector<std::string> nodes;
  std::string summary;                                 // one or two sentences a person reads first
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
};

}  // namespace rankscope
