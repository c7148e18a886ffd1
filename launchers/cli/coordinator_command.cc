// `rankscope coordinator`: a stand-alone coordinator (also what `srun --rankscope` starts).
#include <memory>

#include "launchers/cli/commands.h"
#include "launchers/run.h"

namespace rankscope::cli {

Command AddCoordinator(CLI::App* app) {
  struct State {
    CoordinatorOptions coord;
    double timeout_s = 0;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app->add_subcommand("coordinator", "Stand-alone coordinator");
  cmd->add_option("--bind", s->coord.bind_address, "Listen address");
  cmd->add_option("--port", s->coord.port, "Listen port (0 = any)");
  cmd->add_option("--session", s->coord.session_id, "Session id agents must present");
  cmd->add_option("--token-file", s->coord.token_file,
                  "Session secret file (created 0600 if missing)")
      ->required();
  cmd->add_option("-o,--output", s->coord.out_dir, "Session folder");
  cmd->add_option("--ranks", s->coord.ranks, "Finish when this many agents are done");
  cmd->add_option("--timeout", s->timeout_s, "Finish after this many seconds");
  cmd->add_option("--watch-pid", s->coord.watch_pid,
                  "Finish (report marked partial) when this process is gone");
  cmd->add_option("--launcher", s->coord.launcher, "Launcher name for the report");
  cmd->add_flag("--endpoint", s->coord.endpoint, "Write the endpoint file `capture` reads");
  cmd->add_flag("-q,--quiet", s->coord.quiet, "Do not print the report");
  cmd->add_option("command", s->coord.command, "The job's command line (after --)");
  return {cmd, [s] {
            s->coord.timeout = static_cast<DurationNs>(s->timeout_s * 1e9);
            return RunCoordinator(s->coord);
          }};
}

}  // namespace rankscope::cli
