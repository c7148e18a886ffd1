// `rankscope sweep-node`: one node's share of `rankscope sweep`. Registers with the sweep's
// coordinator as an agent (real gRPC, the session secret; clock samples like any agent, so the
// coordinator fits this node's clock), runs the checks of the level one by one, each isolated
// with a time limit (checks.h), and sends the figures in its final batch.
#pragma once

#include <string>
#include <vector>

namespace rankscope {

// The launcher name sweep nodes register with.
inline constexpr char kSweepLauncher[] = "sweep";

struct SweepNodeOptions {
  std::string coordinator;  // host:port
  std::string token;        // the session secret (from RANKSCOPE_TOKEN, never argv)
  std::string session_id;
  int index = 0;                // this node's place in the sweep's node list (its "rank")
  int count = 1;                // nodes in the sweep
  std::string node;             // empty: SLURMD_NODENAME, else the host name
  std::string level = "quick";  // quick | standard | deep: how long each check measures
  // File systems whose free space is checked; empty: $TMPDIR (else /tmp) and /dev/shm.
  std::vector<std::string> scratch;
};

// 0 when the results reached the coordinator; 1 (said on stderr) when they did not; 2 for a bad
// level.
int RunSweepNode(const SweepNodeOptions& options);

}  // namespace rankscope
