// `rankscope agent [opts] -- PROGRAM ARGS...`: the parent of one rank. Spawns the program
// with the inject library loaded, forwards signals to it, collects its records over local IPC,
// streams them to the coordinator, and returns the program's exit status unchanged.
#pragma once

#include <string>
#include <vector>

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

// Ends this process the way the child ended: exit(code), or by the same signal.
[[noreturn]] void ExitLikeChild(const ChildExit& exit);

}  // namespace rankscope
