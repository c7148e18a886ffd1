#include "launchers/attach_cmd.h"

#include <algorithm>

#include "core/proc_environ.h"

namespace rankscope {

std::vector<AgentEndpoint> FindJobAgents(const std::string& job_id, uid_t uid,
                                         const std::string& proc_root,
                                         const std::string& own_step) {
  std::vector<AgentEndpoint> out;
  for (const ProcessEnviron& p : ProcessEnvirons(uid, proc_root)) {
    auto get = [&p](const char* name) {
      auto it = p.env.find(name);
      return it == p.env.end() ? std::string() : it->second;
    };
    if (get("SLURM_JOB_ID") != job_id) continue;
    // The attach's own step carries its coordinator's address and secret too.
    if (!own_step.empty() && get("SLURM_STEP_ID") == own_step) continue;
    // Another attach's tasks carry its coordinator and secret too; they are not agents.
    if (get("RANKSCOPE_ATTACH_NODE") == "1") continue;
    AgentEndpoint a{get("RANKSCOPE_COORDINATOR"), get("RANKSCOPE_TOKEN")};
    // Ranks carry the coordinator but not the secret (agents strip it): only agents match.
    if (a.coordinator.empty() || a.token.empty()) continue;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

}  // namespace rankscope
