// Running another tool and reading what it prints (squeue, sinfo, scontrol, srun from the
// launchers; `ncu --import` from the agent). Pipes only, no files: both callers fork from
// processes with threads, so nothing is allocated between fork and exec. Not part of
// rankscope_core, which the inject library links: a library of its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rankscope {

// What the tool's stderr becomes: the caller's, or read and dropped (a tool the agent runs beside
// a rank must not write into the job's output).
enum class ToolStderr { kInherit, kDiscard };

// Runs argv (PATH lookup), waits, and returns (exit code, stdout): 128+N when killed by signal
// N, 127 when it could not be executed, -1 when it could not be started at all.
std::pair<int, std::string> CaptureOutput(const std::vector<std::string>& argv,
                                          ToolStderr err = ToolStderr::kInherit);

}  // namespace rankscope
