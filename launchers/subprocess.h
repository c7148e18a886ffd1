// Running the cluster's own tools (squeue, sinfo, scontrol, srun) from the launchers.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace rankscope {

// Runs argv (PATH lookup), waits, and returns (exit code, stdout): 128+N when killed by signal
// N, 127 when it could not be executed, -1 when it could not be started at all. stderr is the
// caller's.
std::pair<int, std::string> CaptureOutput(const std::vector<std::string>& argv);

// Starts argv (PATH lookup) without waiting: stdout and stderr to `log` (created or truncated),
// stdin from /dev/null, in a process group of its own so that kill(-pid, ...) also reaches what
// it starts (srun's step, mpirun's daemons). Returns the pid, or -1 when fork failed.
pid_t StartLogged(const std::vector<std::string>& argv, const std::string& log);

}  // namespace rankscope
