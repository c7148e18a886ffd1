#include "coordinator/analysis/diagnosis.h"

#include <algorithm>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/gpu_link_analysis.h"
#include "coordinator/collective_matcher.h"

namespace rankscope {
namespace {

// The straggler's cause range, when it names one that matches the data pattern.
bool CausedByDataRange(const Finding& straggler, const DataloaderOptions& options) {
  const nlohmann::json& cause = straggler.evidence.value("cause", nlohmann::json());
  if (!cause.is_object() || !cause.contains("range")) return false;
  return std::regex_search(cause["range"].get<std::string>(), options.data_pattern);
}

std::string WaitOps(const Finding& straggler) {
  const nlohmann::json& ops = straggler.evidence.value("ops", nlohmann::json::object());
  std::string out;
  for (const auto& [op, count] : ops.items()) {
    if (!out.empty()) out += "/";
    out += op;
  }
  return out.empty() ? "collectives" : out;
}

// Folds the straggler's wait evidence into the dataloader finding of the same rank.
void Merge(const Finding& straggler, Finding* dataloader) {
  const nlohmann::json& s = straggler.evidence;
  const int waiting = s.value("others_waiting", 0);
  dataloader->summary += " This makes the other " + std::to_string(waiting) +
                         (waiting == 1 ? " rank" : " ranks") + " wait " +
                         FormatDuration(straggler.cost_ns) + " at " + WaitOps(straggler) + ".";
  nlohmann::json wait = {{"others_wait_ns", s.value("others_wait_ns", int64_t{0})},
                         {"others_waiting", waiting},
                         {"others_wait_fraction", s.value("others_wait_fraction", 0.0)},
                         {"instances_last", s.value("instances_last", 0)},
                         {"instances_total", s.value("instances_total", 0)},
                         {"median_lateness_ns", s.value("median_lateness_ns", int64_t{0})},
                         {"ops", s.value("ops", nlohmann::json::object())},
                         {"cause", s.value("cause", nlohmann::json())}};
  dataloader->evidence["straggler"] = std::move(wait);
  dataloader->cost_ns = std::max(dataloader->cost_ns, straggler.cost_ns);
  dataloader->severity = std::max(dataloader->severity, straggler.severity);
  dataloader->confidence = std::max(dataloader->confidence, straggler.confidence);
  for (const NextStep& step : straggler.next_steps) {
    const bool known =
        std::any_of(dataloader->next_steps.begin(), dataloader->next_steps.end(),
                    [&](const NextStep& have) { return have.command == step.command; });
    if (!known) dataloader->next_steps.push_back(step);
  }
}

}  // namespace

std::vector<Finding> Diagnose(const Session& aligned, const AnalysisOptions& options,
                              std::vector<std::string>* notes) {
  return Diagnose(aligned, MatchCollectives(aligned), options, notes);
}

std::vector<Finding> Diagnose(const Session& aligned,
                              const std::vector<CollectiveInstance>& instances,
                              const AnalysisOptions& options, std::vector<std::string>* notes) {
  std::vector<Finding> stragglers = FindStragglers(aligned, instances, options.straggler, notes);
  std::vector<Finding> findings = FindDataloaderSkew(aligned, options.dataloader);

  for (Finding& straggler : stragglers) {
    Finding* same_rank = nullptr;
    if (CausedByDataRange(straggler, options.dataloader)) {
      for (Finding& f : findings) {
        if (f.kind == "dataloader_skew" && f.ranks == straggler.ranks) same_rank = &f;
      }
    }
    if (same_rank != nullptr) {
      Merge(straggler, same_rank);
    } else {
      findings.push_back(std::move(straggler));
    }
  }
  for (Finding& f : FindLateSenders(aligned, options.late_sender)) findings.push_back(std::move(f));
  for (Finding& f : FindDegradedGpuLinks(aligned)) findings.push_back(std::move(f));
  for (Finding& f : FindImbalancedRings(aligned, options.ring)) findings.push_back(std::move(f));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.cost_ns != b.cost_ns) return a.cost_ns > b.cost_ns;
    return a.severity > b.severity;
  });
  return findings;
}

}  // namespace rankscope
