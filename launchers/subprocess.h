// Starting the cluster's own tools (srun) from the launchers without waiting for them; running one
// and reading its output is core/subprocess.h.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/subprocess.h"

namespace rankscope {

// Starts argv (PATH lookup) without waiting: stdout and stderr to `log` (created or truncated),
// stdin from /dev/null, in a process group of its own so that kill(-pid, ...) also reaches what
// it starts (srun's step, mpirun's daemons). Returns the pid, or -1 when fork failed.
pid_t StartLogged(const std::vector<std::string>& argv, const std::string& log);

}  // namespace rankscope
