// The shell side of the planner's commands (coordinator/advise/advisor.h), from what the session
// knows about the job: the user's launch command, each rank's program argv, pid and node. Every
// command is a single line for a POSIX shell with its words quoted, so it can be pasted as is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

// Quotes one word for a POSIX shell: returned unchanged when it holds only characters no shell
// treats specially, otherwise wrapped in single quotes (an embedded ' becomes '\'').
std::string ShellQuote(std::string_view word);

// The words quoted and joined by single spaces.
std::string ShellJoin(const std::vector<std::string>& words);

// A command that relaunches the job the way the user launched it, but with tool_argv put in front
// of rank `rank`'s program only (the other ranks run unchanged). For mpirun, srun and torchrun the
// program is wrapped in `bash -c 'if [ "$<rank variable>" = N ]; then exec TOOL "$@"; else exec
// "$@"; fi' _ PROGRAM...`; without a launcher the tool simply precedes the program.
std::string RelaunchWithToolOnRank(const Session& session, int rank,
                                   const std::vector<std::string>& tool_argv);

// The job relaunched the way the user launched it with tool_argv in front of every rank's program.
std::string RelaunchWithToolOnEveryRank(const Session& session,
                                        const std::vector<std::string>& tool_argv);

// "mpirun", "srun", "torchrun", or "" when the job ran without a launcher rankscope knows.
std::string JobLauncherName(const Session& session);

// The user's own command with environment assignments ("NCCL_DEBUG=INFO") for every rank: in
// front of it, or as mpirun's `-x` options (mpirun does not forward the environment to other
// nodes otherwise).
std::string RelaunchWithEnvironment(const Session& session,
                                    const std::vector<std::string>& assignments);

// An output file name that differs per rank when a tool runs on every rank: nsys' %q{VARIABLE}
// of the launcher's rank variable ("rank%q{SLURM_PROCID}"), or "rankN" without a launcher.
std::string RankOutputName(const Session& session, int rank);

// A command that runs argv on the node of rank `rank`: `srun --jobid=J --overlap -w NODE ...`
// inside a SLURM job, `ssh NODE '...'` otherwise, argv alone when the node is unknown.
std::string OnRankNode(const Session& session, int rank, const std::vector<std::string>& argv);

// The rank's program is a Python interpreter (py-spy then sees its Python stacks).
bool IsPythonProgram(const Session& session, int rank);

}  // namespace rankscope
