#include "launchers/report_cmd.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/ingest.h"
#include "coordinator/pipeline.h"
#include "coordinator/report/session_store.h"
#include "launchers/inspect.h"

namespace rankscope {

namespace {

// The session its coordinator never wrote, from the agents' spools; every unreadable spool named.
Result<Session> FromSpools(const std::vector<std::string>& files) {
  std::vector<SpoolContents> spools;
  std::vector<std::string> sources;
  for (const std::string& f : files) {
    Result<SpoolContents> spool = ReadSpool(f);
    if (!spool.ok()) {
      std::fprintf(stderr, "rankscope report: %s; left out\n", spool.status().message().c_str());
      continue;
    }
    spools.push_back(std::move(spool).value());
    sources.push_back(f);
  }
  if (spools.empty()) return Result<Session>::Error("no readable spool among the files given");
  return SessionFromSpools(spools, sources);
}

// Joins each "RANK=FILE" of `ncu` into its rank's data (ToolRun of another run); an error names
// the argument or the file.
Status JoinNcuFiles(const std::vector<std::string>& ncu, Session* session) {
  for (const std::string& arg : ncu) {
    const size_t eq = arg.find('=');
    int rank = -1;
    if (eq != std::string::npos) {
      const char* end = arg.data() + eq;
      auto [ptr, ec] = std::from_chars(arg.data(), end, rank);
      if (ec != std::errc() || ptr != end) rank = -1;
    }
    if (rank < 0)
      return Status::Error("--ncu " + arg + ": give RANK=FILE, e.g. 1=rank1_kernel.ncu-rep");
    const std::string path = arg.substr(eq + 1);
    auto it = std::find_if(session->ranks.begin(), session->ranks.end(),
                           [rank](const RankData& r) { return r.id.rank == rank; });
    if (it == session->ranks.end()) {
      return Status::Error("--ncu " + arg + ": the session has no rank " + std::to_string(rank));
    }
    Result<std::string> csv = NcuRawCsvText(path);
    if (!csv.ok()) return csv.status();
    it->tool_run = ToolRun{"ncu", path, "", std::move(csv).value(), "", /*same_run=*/false};
  }
  return Status::Ok();
}

}  // namespace

int RunReport(const ReportOptions& options) {
  const bool rebuild = !options.spools.empty();
  if (!rebuild && options.session_dir.empty()) {
    std::fprintf(stderr, "rankscope report: give a session folder, or --spools FILES\n");
    return 2;
  }
  const std::string stored_path = rebuild ? "" : options.session_dir + "/session.sqlite";
  // Read window by window (--by-window-ms): nothing but the session's outline is loaded here.
  const bool by_window = !rebuild && options.analysis.by_window.has_value();
  Result<Session> session = rebuild     ? FromSpools(options.spools)
                            : by_window ? LoadSession(stored_path, {.mpi_records = false})
                                        : LoadSession(stored_path);
  if (!session.ok()) {
    std::fprintf(stderr, "rankscope report: %s\n", session.status().message().c_str());
    return 1;
  }
  if (Status joined = JoinNcuFiles(options.ncu, &session.value()); !joined.ok()) {
    std::fprintf(stderr, "rankscope report: %s\n", joined.message().c_str());
    return 1;
  }
  std::string out_dir = options.out_dir.empty() ? options.session_dir : options.out_dir;
  if (out_dir.empty()) out_dir = "rankscope-" + session->session_id;
  const OutputOptions output{options.full_trace ? 0 : kDefaultMaxTraceEvents};
  Result<PipelineOutput> out =
      rebuild ? AnalyzeAndWrite(std::move(session).value(), out_dir, options.analysis, output)
      : by_window
          ? ReanalyzeStored(stored_path, out_dir, options.analysis, output)
          : ReanalyzeAndWrite(std::move(session).value(), out_dir, options.analysis, output);
  if (!out.ok()) {
    // Reading the session window by window can fail after it was opened (a corrupt row): the
    // message names the file either way.
    std::fprintf(stderr, "rankscope report: no report written to %s: %s\n", out_dir.c_str(),
                 out.status().message().c_str());
    return 1;
  }
  if (!out->write_error.empty()) {
    if (!options.quiet) std::fputs(out->report_text.c_str(), stdout);
    std::fprintf(stderr, "rankscope report: %s is incomplete: %s\n", out_dir.c_str(),
                 out->write_error.c_str());
    return 1;
  }
  if (!options.quiet) {
    const bool color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    std::fputs(color ? out->report_text_color.c_str() : out->report_text.c_str(), stdout);
    std::fprintf(stderr, "rankscope report: %d finding(s); session written to %s/\n", out->findings,
                 out_dir.c_str());
  }
  return 0;
}

}  // namespace rankscope
