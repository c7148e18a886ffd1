// The outputs of `rankscope sweep` from its verdicts: report.txt and report.html (a node x
// check grid), report.json, node_exporter textfile metrics (.prom) and JUnit XML. Pure: strings
// out; the sweep command writes them (the .prom atomically).
#pragma once

#include <string>
#include <vector>

#include "coordinator/sweep/verdicts.h"

namespace rankscope {

struct SweepRunInfo {
  std::string id;             // the sweep's session id
  std::string level;          // quick | standard | deep
  double started_unix_s = 0;  // wall clock, for the metrics' timestamp
  double duration_s = 0;
  std::vector<std::string> notes;  // e.g. nodes that were not swept and why
};

std::string SweepReportText(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);
std::string SweepReportJson(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);
// A self-contained page (no scripts): the node x check grid coloured by status, each cell's
// reason and detail on hover, then the problems.
std::string SweepReportHtml(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);
// Prometheus text format: rankscope_sweep_* gauges in base units, one series per node (and
// subject), plus each check's and node's status (0 pass, 1 warn, 2 fail).
std::string SweepPrometheus(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);
// One testsuite per node, one testcase per check: fail = <failure>, a node that did not answer
// = <error>, warn = a passing case whose system-out says the warning.
std::string SweepJUnit(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);

// The Prometheus metric name of a check: rankscope_sweep_<name with _ for .>[_<unit>].
std::string SweepMetricName(const std::string& check, const std::string& unit);

}  // namespace rankscope
