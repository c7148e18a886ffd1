// Who a rank is: what its agent learnt from the launcher's environment and registers with, and
// what the coordinator keeps of it. Both sides read it (the agent fills it, proto/convert.h puts
// it on the wire, the session holds it).
#pragma once

#include <string>
#include <vector>

namespace rankscope {

struct RankIdentity {
  int rank = -1;
  int local_rank = -1;
  int world_size = 0;
  std::string node;  // SLURMD_NODENAME or host name
  std::string host;
  std::string launcher;
  std::string job_id;
  int agent_pid = 0;
  int program_pid = 0;
  int restart_count = 0;
  std::vector<std::string> program;
};

}  // namespace rankscope
