// The task side of the SPANK plugin (launchers/spank/rankscope_spank.c): in a task of a
// `srun --rankscope` step, slurmstepd executes rankscope in place of the program, with the
// program's own argv[0] in RANKSCOPE_SPANK_ARGV0 and the session in SLURM_RANKSCOPE_*.
#pragma once

#include <string>

namespace rankscope {

// When RANKSCOPE_SPANK_ARGV0 is set, runs ARGV0 argv[1..] under the agent, with the session
// taken from SLURM_RANKSCOPE_* (removed from the program's environment, as that variable is),
// and ends the process the way the program ended. Returns when it is not set.
void RunAsSpankTaskIfAsked(int argc, char** argv, const std::string& self_exe);

}  // namespace rankscope
