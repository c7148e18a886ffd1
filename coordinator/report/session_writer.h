// The session folder: everything a finished session leaves on disk for people and tools.
//   report.txt  report.json  report.html  trace.json  session.sqlite
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/analysis/blame.h"
#include "coordinator/findings.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/session.h"
#include "coordinator/session_matches.h"
#include "core/status.h"

namespace rankscope {

// Creates `dir` (and its parents) if needed and writes the five files of an aligned session,
// `matches` being MatchSession(session). Each file is written under a temporary name and
// renamed into place, so a reader sees either no file or a complete one under each final name
// (not fsynced: a power cut right after may lose them); files of an earlier run are replaced.
// When `report_text_out` is not null, it receives report.txt's content (no colour), and
// `report_text_color_out` the same with colour, to print on a terminal, whatever could be written.
// Every file is tried; the error names each one that failed (a full disk), and report.json
// (job.files_not_written) and report.txt, written last, list them. `trace_window`
// (ChooseTraceWindow) limits trace.json to a window of the run. `blame` (from Diagnose), when
// given, adds the time inside and outside MPI per rank and the who-waited-for-whom figures to the
// reports.
Status WriteSessionFolder(const std::string& dir, const Session& session,
                          const SessionMatches& matches, const std::vector<Finding>& findings,
                          std::string* report_text_out,
                          std::string* report_text_color_out = nullptr,
                          const std::optional<TraceWindow>& trace_window = std::nullopt,
                          const BlameModel* blame = nullptr, const RecordFacts* facts = nullptr,
                          const SaveOptions& save = {});

// Publishes `content` as `path` atomically: a temporary file beside it, then a rename, so a reader
// (a person, node_exporter) never sees a half-written file. No fsync: these files are written
// once, after the job, while the user waits, and what a power cut in that moment could cost is
// a report, never the job's own results. The error names the file and the step that failed.
Status WriteFileAtomically(const std::string& path, std::string_view content);

// The same for content made in pieces: `produce` hands each piece to the function it is given
// (which returns false once a write failed) and returns whether it made everything.
Status WriteFileAtomically(
    const std::string& path,
    const std::function<bool(const std::function<bool(std::string_view)>&)>& produce);

}  // namespace rankscope
