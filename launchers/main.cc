// rankscope: the command-line entry point. Subcommands:
//   run          wrap a launch (mpirun/srun/torchrun/plain program) and write a session report
//   capture      start (or stop) capturing a running session, e.g. one run with --dormant
//   attach       capture a window of a running SLURM job (attach-node: its per-node part)
//   agent        the per-rank agent (inserted by `run`; rarely typed by hand)
//   coordinator  a stand-alone coordinator (also what `srun --rankscope` starts)
//   sweep        a health sweep of the cluster's nodes (sweep-node: its per-node part)
//   report       re-run the analyses and writers on a saved session folder
//   advise       which tool answers a question, with the exact command (fleet -> SASS)
//   inspect      offline views of NCCL logs, topology dumps and Nsight Compute reports
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "launchers/cli/commands.h"
#include "launchers/spank_task.h"

namespace {

std::string SelfExe() {
  char buf[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("rankscope");
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = rankscope::cli;
  const std::string self_exe = SelfExe();
  // A task of `srun --rankscope`: argv is the program's own, not rankscope's command line.
  rankscope::RunAsSpankTaskIfAsked(argc, argv, self_exe);
  CLI::App app{"rankscope: which rank made your distributed job slow, and why"};
  app.require_subcommand(1);

  const cli::Command run = cli::AddRun(&app, self_exe);
  std::vector<cli::Command> commands = {run, cli::AddCapture(&app)};
  for (cli::Command& c : cli::AddAttach(&app, self_exe)) commands.push_back(std::move(c));
  commands.push_back(cli::AddAgent(&app, self_exe));
  const cli::Command coordinator = cli::AddCoordinator(&app);
  commands.push_back(coordinator);
  for (cli::Command& c : cli::AddSweep(&app, self_exe)) commands.push_back(std::move(c));
  commands.push_back(cli::AddReport(&app));
  commands.push_back(cli::AddAdvise(&app));
  for (cli::Command& c : cli::AddInspect(&app)) commands.push_back(std::move(c));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // `rankscope run -o x mpirun -np 4 ./app`: the launch command's options read as ours.
    const bool has_dashes = std::any_of(argv + 1, argv + argc,
                                        [](const char* a) { return std::string_view(a) == "--"; });
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !has_dashes &&
        (*run.app || *coordinator.app)) {
      std::fprintf(stderr,
                   "Put -- before the launch command, so its options are not read as "
                   "rankscope's: rankscope run [options] -- mpirun -np 4 ./app\n");
    }
    return rc;
  }
  for (const cli::Command& c : commands) {
    if (*c.app) return c.run();
  }
  return 2;
}
