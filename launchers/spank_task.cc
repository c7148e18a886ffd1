#include "launchers/spank_task.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "agent/agent.h"
#include "launchers/launch_plan.h"
#include "launchers/launch_probe.h"

namespace rankscope {
void RunAsSpankTaskIfAsked(int argc, char** argv, const std::string& self_exe) {
  const char* argv0 = std::getenv("RANKSCOPE_SPANK_ARGV0");
  if (argv0 == nullptr) return;
  AgentOptions options;
  // The program slurmstepd would have executed: a bare name found in PATH, as Slurm looks it up.
  const std::string found = InPath(argv0);
  options.program.emplace_back(found.empty() ? std::string(argv0) : found);
  // A program that cannot run fails as it would without rankscope: Slurm's message and the
  // errno as exit code (srun then reports "Exited with exit code 2" for a missing file).
  if (access(options.program[0].c_str(), X_OK) != 0) {
    const int error = errno;
    std::fprintf(stderr, "rankscope: error: execve(): %s: %s\n", options.program[0].c_str(),
                 std::strerror(error));
    std::exit(error);
  }
  for (int i = 1; i < argc; ++i) options.program.emplace_back(argv[i]);
  unsetenv("RANKSCOPE_SPANK_ARGV0");
  // The session is the one srun's plugin started: whatever RANKSCOPE_* the user's environment
  // carried from elsewhere (an old token, a dormant flag) must not override it.
  for (const char* name : {"COORDINATOR", "TOKEN", "SESSION", "DORMANT"}) {
    const std::string from = std::string("SLURM_RANKSCOPE_") + name;
    const std::string to = std::string("RANKSCOPE_") + name;
    if (const char* value = std::getenv(from.c_str()); value != nullptr) {
      setenv(to.c_str(), std::string(value).c_str(), 1);
      unsetenv(from.c_str());
    } else {
      unsetenv(to.c_str());
    }
  }
  FillAgentOptionsFromEnvironment(self_exe, &options);
  ExitLikeChild(RunAgent(options));
}

}  // namespace rankscope
