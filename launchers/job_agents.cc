#include "launchers/job_agents.h"

#include <algorithm>

#include "agent/proc_environ.h"

namespace rankscope {

std::vector<AgentEndpoint> FindJobAgents(const std::string& job_id, uid_t uid,
                                         const std::string& proc_root,
                                         const std::string& own_step) {
  std::vector<AgentEndpoint> out;
  for (const ProcessEnviron& p : ProcessEnvirons(uid, proc_root)) {
    auto get = [&p](const std::string& name) {
      auto it = p.env.find(name);
      return it == p.env.end() ? std::string() : it->second;
    };
    // An agent started by the SPANK plugin was executed with the session as SLURM_RANKSCOPE_*
    // (launchers/spank_task.h), which is what its /proc environ still shows.
    auto session_var = [&get](const std::string& name) {
      std::string v = get("RANKSCOPE_" + name);
      return v.empty() ? get("SLURM_RANKSCOPE_" + name) : v;
    };
    if (get("SLURM_JOB_ID") != job_id) continue;
    // The attach's own step carries its coordinator's address and secret too.
    if (!own_step.empty() && get("SLURM_STEP_ID") == own_step) continue;
    // Another attach's tasks carry its coordinator and secret too; they are not agents.
    if (get("RANKSCOPE_ATTACH_NODE") == "1") continue;
    AgentEndpoint a{session_var("COORDINATOR"), session_var("TOKEN")};
    // Ranks carry the coordinator but not the secret (agents strip it): only agents match.
    if (a.coordinator.empty() || a.token.empty()) continue;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

}  // namespace rankscope
