#include "launchers/report_cmd.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "coordinator/pipeline.h"
#include "coordinator/report/session_store.h"

namespace rankscope {

int RunReport(const ReportOptions& options) {
  const std::string db = options.session_dir + "/session.sqlite";
  Result<Session> session = LoadSession(db);
  if (!session.ok()) {
    std::fprintf(stderr, "rankscope report: %s\n", session.status().message().c_str());
    return 1;
  }
  const std::string out_dir = options.out_dir.empty() ? options.session_dir : options.out_dir;
  Result<PipelineOutput> out =
      ReanalyzeAndWrite(std::move(session).value(), out_dir, options.analysis,
                        OutputOptions{options.full_trace ? 0 : kDefaultMaxTraceEvents});
  if (!out.ok()) {
    std::fprintf(stderr, "rankscope report: could not write %s: %s\n", out_dir.c_str(),
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
