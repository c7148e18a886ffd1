// From a raw session to a written session folder: completeness, clock alignment, collective
// matching, analyses, writers. Shared by `rankscope run`, `rankscope coordinator` and offline
// re-analysis.
#pragma once

#include <string>

#include "coordinator/session.h"
#include "core/status.h"

namespace rankscope {

struct PipelineOutput {
  std::string report_text;        // plain text, as written to report.txt
  std::string report_text_color;  // the same with ANSI colours, for a terminal
  int findings = 0;
};

// Writes out_dir/{report.txt, report.json, report.html, trace.json, session.sqlite}.
Result<PipelineOutput> AnalyzeAndWrite(Session raw, const std::string& out_dir);

}  // namespace rankscope
