// `rankscope agent`: the per-rank agent that `run` inserts before each rank's program.
#include <memory>

#include "agent/agent.h"
#include "launchers/cli/commands.h"

namespace rankscope::cli {

Command AddAgent(CLI::App* app, const std::string& self_exe) {
  struct State {
    AgentOptions agent;
    double final_timeout_s = 5;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app->add_subcommand("agent", "Per-rank agent: rankscope agent -- PROG");
  cmd->add_option("--coordinator", s->agent.coordinator,
                  "Coordinator host:port (default $RANKSCOPE_COORDINATOR)");
  cmd->add_option("--session", s->agent.session_id, "Session id (default $RANKSCOPE_SESSION)");
  cmd->add_option("--inject-lib", s->agent.inject_library, "Path of librankscope_inject.so");
  cmd->add_option("--final-timeout", s->final_timeout_s,
                  "Seconds to try delivering the last records after the program exits");
  cmd->add_option("program", s->agent.program, "Program and arguments (after --)")->required();
  return {cmd, [s, self_exe]() -> int {
            FillAgentOptionsFromEnvironment(self_exe, &s->agent);
            s->agent.final_timeout = static_cast<DurationNs>(s->final_timeout_s * 1e9);
            if (CanRunBeside()) RunProgramWithAgentBeside(s->agent);
            ExitLikeChild(RunAgent(s->agent));  // the program's exit, passed through
          }};
}

}  // namespace rankscope::cli
