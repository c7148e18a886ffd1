// `rankscope agent [opts] -- PROGRAM ARGS...`: the agent of one rank. Runs the program with the
// inject library loaded, collects its records over local IPC and streams them to the
// coordinator; the program's exit status is the launcher's to see, unchanged. Beside the
// program where it can (RunProgramWithAgentBeside), else as its parent (RunAgent: forwarding
// signals and exiting like it).
#pragma once

#include <string>
#include <vector>

#include "agent/tool_wrap.h"
#include "core/time.h"

namespace rankscope {

struct AgentOptions {
  std::vector<std::string> program;  // argv of the rank's program; must not be empty
  // Coordinator address/token/session; empty address = run the program unprofiled.
  std::string coordinator;
  std::string token;
  std::string session_id;
  std::string inject_library;  // path of librankscope_inject.so; empty = do not inject
  std::string tmp_dir = "/tmp";
  DurationNs final_timeout = 5 * kNsPerSec;
  // Dormant (RANKSCOPE_DORMANT=1): the inject library records nothing until the coordinator
  // starts a capture (core/control_page.h).
  bool dormant = false;
  // The tool this rank runs under (`rankscope run --ncu-rank` / `--nsys-ranks`), planned from the
  // environment by RunAgent / RunProgramWithAgentBeside; inactive for the other ranks.
  ToolWrap tool;
};

// Reads RANKSCOPE_COORDINATOR / RANKSCOPE_TOKEN / RANKSCOPE_SESSION / RANKSCOPE_INJECT_LIB /
// TMPDIR into `options` where the fields are still empty. `self_exe` locates the default
// inject library (<dir of self>/../lib/librankscope_inject.so).
void FillAgentOptionsFromEnvironment(const std::string& self_exe, AgentOptions* options);

// Runs the program to completion. Returns the exit code to exit with: the program's own, or
// 128+N if it was killed by signal N (the caller should then re-raise N; see ExitLikeChild).
struct ChildExit {
  int exit_code = 0;
  int term_signal = 0;  // 0 if the program exited normally
};
ChildExit RunAgent(const AgentOptions& options);

// Where an agent of `session_id` puts its files (its control page, its IPC socket's directory,
// NCCL's logs): names starting "TMP_DIR/rankscope-SESSION-", the session id's characters other
// than [A-Za-z0-9._-] replaced by '_'.
std::string AgentTempPrefix(const std::string& tmp_dir, const std::string& session_id);

// Removes what agents of `session_id` left in `tmp_dir` (an agent killed before it cleaned up):
// this user's files and flat directories named AgentTempPrefix(...)*. Returns how many. Nothing
// for an empty session id.
int RemoveAgentLeftovers(const std::string& tmp_dir, const std::string& session_id);

// Whether RunProgramWithAgentBeside can run here: pidfd_open works (Linux 5.3) and this is no
// Slurm task (slurmstepd ends what is left of a step when its tasks exit, which would cut the
// agent beside the task off before its last records are sent).
bool CanRunBeside();

// The program runs as this process (exec'd in place: the same pid, so the launcher counts it as
// the rank, its signals and its exit code are its own) and the agent beside it, in a process
// forked before the exec and reparented away from the program, watches it by pidfd. Killing the
// agent leaves the program running; its records stop there and the report marks the rank
// partial. Returns only into the program (or exits like RunAgent where it cannot start).
[[noreturn]] void RunProgramWithAgentBeside(const AgentOptions& options);

// Ends this process the way the child ended: exit(code), or by the same signal.
[[noreturn]] void ExitLikeChild(const ChildExit& exit);

}  // namespace rankscope
