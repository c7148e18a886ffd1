// Running the cluster's own tools (squeue, sinfo, scontrol, srun) from the launchers.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rankscope {

// Runs argv (PATH lookup), waits, and returns (exit code, stdout): 128+N when killed by signal
// N, 127 when it could not be executed, -1 when it could not be started at all. stderr is the
// caller's.
std::pair<int, std::string> CaptureOutput(const std::vector<std::string>& argv);

}  // namespace rankscope
