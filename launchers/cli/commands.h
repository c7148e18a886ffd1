#pragma once

// The command line's subcommands, one file each (cli/*.cc): each registers its options on the
// app and returns what runs it once the command line is parsed. main.cc only dispatches.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace rankscope::cli {

struct Command {
  CLI::App* app = nullptr;   // chosen when *app is true after parsing
  std::function<int()> run;  // reads the options parsed into its state
};

Command AddRun(CLI::App* app, const std::string& self_exe);                  // run
Command AddCapture(CLI::App* app);                                           // capture
std::vector<Command> AddAttach(CLI::App* app, const std::string& self_exe);  // attach, attach-node
Command AddAgent(CLI::App* app, const std::string& self_exe);                // agent
Command AddCoordinator(CLI::App* app);                                       // coordinator
std::vector<Command> AddSweep(CLI::App* app, const std::string& self_exe);   // sweep, sweep-node
Command AddReport(CLI::App* app);                                            // report
Command AddAdvise(CLI::App* app);                                            // advise
std::vector<Command> AddInspect(CLI::App* app);  // inspect nccl-log, topo, ncu

}  // namespace rankscope::cli
