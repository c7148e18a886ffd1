// Where the agent goes in a launch command. Pure: argv in, argv out (what this machine says
// about a launch, PlanLaunch's LaunchContext among it, is launch_probe.h's).
//
//   rankscope run -- mpirun -np 4 ./prog a b       (rankscope finds where ./prog starts)
//   rankscope run -- mpirun -np 4 -- ./prog a b    (explicit: the program follows the `--`)
//   rankscope run -- ./prog a b                    (one process, no launcher)
// becomes `mpirun -x RANKSCOPE_... -np 4 <agent...> -- ./prog a b`.
//
// Launchers: srun; mpirun / mpiexec of Open MPI (variables forwarded with -x) and of MPICH /
// Intel MPI's Hydra (mpiexec.hydra, mpiexec.mpich, or a plain mpirun/mpiexec whose --version
// says HYDRA: -genvlist); torchrun and `python -m torch.distributed.run`, where the agent must
// be what each worker runs: --no-python is added and the script becomes `PYTHON script ...`
// (`PYTHON -m module ...` for -m/--module), PYTHON being torchrun's own interpreter. A torchrun
// started by srun or mpirun is planned inside: `srun -N2 torchrun ... train.py` wraps the
// workers, not torchrun. Options are recognised with separate values ("-n 4"), attached
// ("-N4", "--nodes=4") and, for Hydra, two values ("-genv NAME VALUE").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace rankscope {

struct LaunchPlan {
  std::string launcher;           // "mpirun", "srun", "torchrun", "none", or the explicit one
  std::vector<std::string> argv;  // what to exec
  size_t program_index = 0;       // where the user's program starts in argv
};

enum class MpiFlavor { kOpenMpi, kHydra };

// What PlanLaunch cannot see in the argv alone (DetectLaunchContext, launch_probe.h, finds it
// on this machine).
struct LaunchContext {
  MpiFlavor mpi = MpiFlavor::kOpenMpi;      // for a plain mpirun / mpiexec
  std::string torchrun_python = "python3";  // the interpreter torchrun runs workers with
};

// `agent` is the agent command inserted before the program (e.g. {"/x/rankscope", "agent",
// "--"}); `forward_env` names variables the launcher must pass to remote ranks.
// Fails, showing the explicit form, when it cannot tell where the program starts.
Result<LaunchPlan> PlanLaunch(const std::vector<std::string>& command,
                              const std::vector<std::string>& agent,
                              const std::vector<std::string>& forward_env,
                              const LaunchContext& context = {});

// Whether the ranks of this launch may run on other hosts, so the coordinator must listen on an
// address they can reach: srun; mpirun/mpiexec given hosts (-H/--host, a hostfile/machinefile,
// --map-by ppr..., or run inside a SLURM allocation of more than one node, `slurm_nodes`).
bool LaunchSpansHosts(const LaunchPlan& plan, int slurm_nodes);

// The last component of a command word's path ("/usr/bin/mpirun" -> "mpirun").
std::string Basename(const std::string& path);

}  // namespace rankscope
