// `rankscope attach JOBID`: captures a window of a running SLURM job launched with
// `rankscope run [--dormant] -- srun ...`. It checks the job (exists, yours, running), then runs
// one `rankscope attach-node` task per node inside the allocation (`srun --jobid=J --overlap`).
// Each finds the job's rankscope agents on its node by their environment (SLURM_JOB_ID, and the
// RANKSCOPE_COORDINATOR / RANKSCOPE_TOKEN the run handed them), never by process name, and
// triggers a capture on their coordinator for the window; the run writes the report when the job
// ends, as usual. A job launched without rankscope is named as such, with how to relaunch it.
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
// `proc_root` owned by `uid` (their /proc/PID/environ).
std::vector<AgentEndpoint> FindJobAgents(const std::string& job_id, uid_t uid,
                                         const std::string& proc_root = "/proc");

// The value of NAME in a NUL-separated environment block ("" when absent). Pure.
std::string EnvironValue(const std::string& block, const std::string& name);

struct AttachOptions {
  std::string job_id;
  double for_s = 10;
};

// On the login side: checks the job and runs attach-node on each of its nodes.
int RunAttach(const AttachOptions& options, const std::string& self_exe);

// On one node, as a task of the job (srun --overlap): finds the agents and triggers the window.
// 0: captured; 3: no rankscope agent of the job on this node.
int RunAttachNode(const AttachOptions& options);

}  // namespace rankscope
