// Where the agent goes in a launch command. Pure: argv in, argv out.
//
//   rankscope run -- mpirun -np 4 ./prog a b       (rankscope finds where ./prog starts)
//   rankscope run -- mpirun -np 4 -- ./prog a b    (explicit: the program follows the `--`)
//   rankscope run -- ./prog a b                    (one process, no launcher)
// becomes `mpirun -x RANKSCOPE_... -np 4 <agent...> -- ./prog a b`.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace rankscope {

struct LaunchPlan {
  std::string launcher;           // "mpirun", "srun", "none"
  std::vector<std::string> argv;  // what to exec
  size_t program_index = 0;       // where the user's program starts in argv
};

// `agent` is the agent command inserted before the program (e.g. {"/x/rankscope", "agent",
// "--"}); `forward_env` names variables the launcher must pass to remote ranks.
// Fails, showing the explicit form, when it cannot tell where the program starts.
Result<LaunchPlan> PlanLaunch(const std::vector<std::string>& command,
                              const std::vector<std::string>& agent,
                              const std::vector<std::string>& forward_env);

// Whether the ranks of this launch may run on other hosts, so the coordinator must listen on an
// address they can reach: srun; mpirun/mpiexec given hosts (-H/--host, a hostfile/machinefile,
// --map-by ppr..., or run inside a SLURM allocation of more than one node, `slurm_nodes`).
bool LaunchSpansHosts(const LaunchPlan& plan, int slurm_nodes);

}  // namespace rankscope
