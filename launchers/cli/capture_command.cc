// `rankscope capture`: start (or stop) capturing a running session.
#include <memory>

#include "launchers/capture_cmd.h"
#include "launchers/cli/commands.h"

namespace rankscope::cli {

Command AddCapture(CLI::App* app) {
  auto capture = std::make_shared<CaptureOptions>();
  CLI::App* cmd = app->add_subcommand(
      "capture", "Start (or stop) capturing a running session, e.g. one run with --dormant");
  cmd->add_option("session", capture->session, "Session id (default: your only running session)");
  cmd->add_option("--for", capture->for_s, "Stop again after this many seconds");
  cmd->add_flag("--stop", capture->stop, "Stop capturing");
  cmd->add_option("--agents", capture->agents,
                  "Wait until this many agents (ranks) have registered, then start");
  cmd->add_option("--wait", capture->wait_s, "Give up waiting for --agents after S seconds")
      ->capture_default_str();
  return {cmd, [capture] { return RunCapture(*capture); }};
}

}  // namespace rankscope::cli
