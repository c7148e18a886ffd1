// report.html: the report of one session as a single self-contained page (inline CSS and SVG,
// no scripts, no network), for a browser or a CI artifact viewer.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/blame.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/findings.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/record_facts.h"
#include "coordinator/session.h"

namespace rankscope {

// The page for an aligned session and its matched collectives (from MatchCollectives on the
// same session): job header, finding cards worst first, a rank x step (or x collective
// instance) heatmap of wait time, the worst step's timeline across the ranks (the worst instance
// without NVTX step ranges), NCCL/NVML figures with each node's topology from its NCCL dump, the
// ranks with their clocks, a per-rank activity summary and the notices.
// Every string from the session or the findings is HTML-escaped, and a Content-Security-Policy
// forbids scripts and network access, so a hostile NVTX name cannot run code in the viewer.
std::string BuildReportHtml(const Session& session,
                            const std::vector<CollectiveInstance>& instances,
                            const std::vector<Finding>& findings);
// The same with the session's GPU figures already computed (BuildGpuReport(session)), and the
// blame model (Diagnose) when there is one: then a "Who waited for whom" section, the rank x
// rank wait matrix and each rank's busy / waiting / caused bars with the stragglers' what-if.
std::string BuildReportHtml(const Session& session,
                            const std::vector<CollectiveInstance>& instances,
                            const std::vector<Finding>& findings, const GpuReport& gpu,
                            const BlameModel* blame = nullptr, const RecordFacts* facts = nullptr);

// The span of the run report.html's timeline draws (the worst step's, else the worst
// instance's), whose records the page reads; nullopt when it draws none.
std::optional<std::pair<TimeNs, TimeNs>> TimelineSpan(
    const Session& session, const RecordFacts& facts,
    const std::vector<CollectiveInstance>& instances);

}  // namespace rankscope
