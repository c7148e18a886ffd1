// report.txt: the one-screen terminal report printed at the end of `rankscope run`.
#pragma once

#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/session.h"

namespace rankscope {

// The report of an aligned session, for a terminal: a header (job, ranks, nodes, duration,
// COMPLETE/PARTIAL and why), the findings worst first with their key evidence and first next
// command (or what was checked when nothing was found), the GPU side (NCCL call shapes with the
// most data, nodes and GPUs in groups, GPUs with degraded links one by one), a compact clock
// table and the notices. At most 50 lines: the clock table is cut first, then GPU details, then
// notices, findings last; a final line points to report.html when anything was left out.
// ANSI colour only when `color` is true (the caller decides, e.g. from isatty). Control
// characters in strings from the session are replaced, so a program cannot drive the terminal.
std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            bool color);
// The same with the session's GPU figures and collective overview already computed
// (BuildGpuReport(session), SummarizeCollectives(MatchCollectives(session))).
std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            const GpuReport& gpu, const CollectiveOverview& collectives, bool color,
                            const RecordFacts* facts = nullptr);

}  // namespace rankscope
