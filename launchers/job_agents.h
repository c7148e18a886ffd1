// The rankscope agents of a running SLURM job on this node, found by their environment
// (/proc/PID/environ), never by process name: how `rankscope attach-node` (attach_run.h) reaches
// the coordinators those agents report to.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rankscope {

struct AgentEndpoint {
  std::string coordinator;  // host:port
  std::string token;
  bool operator==(const AgentEndpoint&) const = default;
};

// The distinct coordinators of job `job_id`'s rankscope agents among the processes under
// `proc_root` owned by `uid` (their /proc/PID/environ), leaving out job step `own_step` (the
// attach's, whose environment carries the attach's coordinator).
std::vector<AgentEndpoint> FindJobAgents(const std::string& job_id, uid_t uid,
                                         const std::string& proc_root = "/proc",
                                         const std::string& own_step = "");

}  // namespace rankscope
