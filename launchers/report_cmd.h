// `rankscope report SESSION_DIR`: re-runs the analyses and writers on a saved session (its
// session.sqlite), e.g. with other thresholds, into the same folder or another one.
#pragma once

#include <string>
#include <vector>

#include "coordinator/analysis/diagnosis.h"

namespace rankscope {

struct ReportOptions {
  std::string session_dir;
  std::vector<std::string> spools;  // rebuild from these agents' spools instead
  std::string out_dir;              // empty: the session folder itself
  bool quiet = false;
  AnalysisOptions analysis;
  bool full_trace = false;  // trace.json with every event, however large
  // "RANK=FILE": Nsight Compute reports of those ranks from another run of the job (an .ncu-rep,
  // or its `--csv --page raw`), joined into the findings as `run --ncu-rank` would.
  std::vector<std::string> ncu;
};

// Returns the process exit code: 0 written, 1 the session could not be read or written.
int RunReport(const ReportOptions& options);

}  // namespace rankscope
