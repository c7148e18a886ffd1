// From a raw session to a written session folder: completeness, clock alignment, collective
// matching, analyses, writers. Shared by `rankscope run`, `rankscope coordinator` and offline
// re-analysis.
#pragma once

#include <string>

#include "coordinator/analysis/diagnosis.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/session.h"
#include "core/status.h"

namespace rankscope {

struct PipelineOutput {
  std::string report_text;        // plain text, as written to report.txt
  std::string report_text_color;  // the same with ANSI colours, for a terminal
  int findings = 0;
  // Set when some files of the folder could not be written (report_text says which); the
  // analysis above is whole.
  std::string write_error;
};

struct OutputOptions {
  // trace.json holds at most this many events (a sample of whole steps, or without step ranges a
  // window of the run's middle; said in a note); 0 = everything.
  size_t max_trace_events = kDefaultMaxTraceEvents;
};

// Writes out_dir/{report.txt, report.json, report.html, trace.json, session.sqlite}.
Result<PipelineOutput> AnalyzeAndWrite(Session raw, const std::string& out_dir,
                                       const AnalysisOptions& options = AnalysisOptions{},
                                       const OutputOptions& output = OutputOptions{});

// The same for a session whose MPI records and ranges the coordinator kept in `spill` as they
// arrived (RecordSpill, closed; `raw` holds the rest): read window by window from the file, as
// ReanalyzeStored reads one, and copied from it into the new session.sqlite, so that they are
// never all in memory. Loaded back whole first (LoadSpilledRecords) where the analyses still
// read every record: GPU activity or NCCL, earlier torchrun attempts, ranks that kept records in
// memory, two ranks of one rank number and restart.
Result<PipelineOutput> AnalyzeAndWrite(Session raw, const RecordSpill& spill,
                                       const std::string& out_dir,
                                       const AnalysisOptions& options = AnalysisOptions{},
                                       const OutputOptions& output = OutputOptions{});

// The same for a session loaded from a session folder (LoadSession): already aligned and with its
// NCCL collectives joined, so only matching, the analyses (with `options`) and the writers run
// again. out_dir may be the folder it came from (every file is replaced atomically).
Result<PipelineOutput> ReanalyzeAndWrite(Session stored, const std::string& out_dir,
                                         const AnalysisOptions& options,
                                         const OutputOptions& output = OutputOptions{});

// The same for the session.sqlite at `path`, read window by window without holding its records
// (docs/design.md, "Cost bounded by the window"): the analyses that fold read each window from
// the file (StoredWindows, with options.by_window's windows, else the default ones), the writers
// its facts and the records they draw, and the new session.sqlite copies the records from it.
// A file of an older schema version is loaded whole (ReanalyzeAndWrite). out_dir may be the
// folder it is in.
Result<PipelineOutput> ReanalyzeStored(const std::string& path, const std::string& out_dir,
                                       const AnalysisOptions& options,
                                       const OutputOptions& output = OutputOptions{});

}  // namespace rankscope
