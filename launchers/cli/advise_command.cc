// `rankscope advise`: which tool answers a question, with the exact command.
#include <memory>

#include "launchers/advise_cmd.h"
#include "launchers/cli/commands.h"

namespace rankscope::cli {

Command AddAdvise(CLI::App* app) {
  auto advise = std::make_shared<AdviseOptions>();
  CLI::App* cmd = app->add_subcommand(
      "advise", "Which tool answers my question, with the exact command (fleet -> SASS)");
  cmd->add_option("question", advise->question, "Your question in words, or an answer's id");
  cmd->add_option("--session", advise->session_dir,
                  "Fill the commands in with this session's rank, node and kernel");
  cmd->add_option("--rank", advise->rank,
                  "With --session: fill the commands in for this rank (default: the rank of the "
                  "worst finding)");
  cmd->add_flag("--json", advise->json, "JSON instead of text");
  return {cmd, [advise] { return RunAdvise(*advise); }};
}

}  // namespace rankscope::cli
