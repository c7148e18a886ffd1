// `rankscope report`: re-run the analyses and writers on a saved session folder.
#include <cstdio>
#include <memory>
#include <regex>

#include "launchers/cli/commands.h"
#include "launchers/report_cmd.h"

namespace rankscope::cli {

Command AddReport(CLI::App* app) {
  struct State {
    ReportOptions report;
    double min_lateness_ms = 1.0;
    double min_data_excess_ms = 1.0;
    std::string step_pattern, data_pattern;
    double by_window_ms = 0;  // 0: the whole run at once
  };
  auto s = std::make_shared<State>();
  ReportOptions& r = s->report;
  CLI::App* cmd =
      app->add_subcommand("report", "Offline: re-run the analyses and writers on a session folder");
  CLI::Option* session_opt =
      cmd->add_option("session", r.session_dir, "Session folder (has session.sqlite)");
  CLI::Option* spools_opt = cmd->add_option(
      "--spools", r.spools,
      "Rebuild a session its coordinator never wrote (rankscope run killed) from the agents' "
      "spools: TMPDIR/rankscope-SESSION-spool.* of every node");
  session_opt->excludes(spools_opt);
  cmd->add_option("-o,--output", r.out_dir,
                  "Write here (default: the session folder; with --spools, rankscope-SESSION)");
  cmd->add_flag("-q,--quiet", r.quiet, "Do not print the report");
  cmd->add_flag("--full-trace", r.full_trace,
                "trace.json with every event (default: at most 100,000, whole steps sampled, "
                "else the run's middle)");
  CLI::Option* ncu_opt = cmd->add_option(
      "--ncu", r.ncu,
      "RANK=FILE: an Nsight Compute report of that rank from another run of the job (.ncu-rep, "
      "needs ncu; or its `ncu --import R --csv --page raw` output): the findings on the rank end "
      "with the verdict on the kernels it names, report.html shows the roofline and stalls");
  CLI::Option* window_opt =
      cmd->add_option("--by-window-ms", s->by_window_ms,
                      "Read the session from its session.sqlite window by window, windows of about "
                      "this many ms, without loading its records (only those trace.json and "
                      "report.html draw), as a coordinator bounded by the window would; the report "
                      "is the same");
  window_opt->excludes(ncu_opt);
  cmd->add_option("--min-gain-fraction", r.analysis.blame.min_gain_fraction,
                  "Straggler: least share of the job its what-if must save (default 0.05)");
  cmd->add_option("--min-excess-fraction", r.analysis.blame.min_excess_fraction,
                  "Straggler: least excess of its work over the typical rank's (default 0.10)");
  cmd->add_option("--min-lateness-ms", s->min_lateness_ms,
                  "Arrival analysis (describes stragglers): least median lateness (default 1)");
  cmd->add_option("--min-frac-last", r.analysis.straggler.min_frac_last,
                  "Arrival analysis: least fraction of instances held up (default 0.5)");
  cmd->add_option("--min-cost-fraction", r.analysis.straggler.min_cost_fraction,
                  "Arrival analysis: least fraction of the others' time lost (default 0.01)");
  cmd->add_option("--step-pattern", s->step_pattern,
                  "Dataloader: regex of step ranges (default ^step)");
  cmd->add_option("--data-pattern", s->data_pattern,
                  "Dataloader: regex of data ranges (default data|load|batch|input)");
  cmd->add_option("--min-data-excess-ms", s->min_data_excess_ms,
                  "Dataloader: least excess data time per step (default 1)");
  return {cmd, [s] {
            AnalysisOptions& a = s->report.analysis;
            a.straggler.min_lateness = static_cast<DurationNs>(s->min_lateness_ms * 1e6);
            a.dataloader.min_excess = static_cast<DurationNs>(s->min_data_excess_ms * 1e6);
            if (s->by_window_ms > 0) {
              const auto target = static_cast<DurationNs>(s->by_window_ms * 1e6);
              a.by_window = WindowOptions{.target = target, .max_window = 4 * target};
            }
            try {
              if (!s->step_pattern.empty()) {
                a.dataloader.step_pattern = std::regex(s->step_pattern, std::regex::icase);
              }
              if (!s->data_pattern.empty()) {
                a.dataloader.data_pattern = std::regex(s->data_pattern, std::regex::icase);
              }
            } catch (const std::regex_error& e) {
              std::fprintf(stderr, "rankscope report: bad regular expression: %s\n", e.what());
              return 2;
            }
            return RunReport(s->report);
          }};
}

}  // namespace rankscope::cli
