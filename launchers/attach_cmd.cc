#include "launchers/attach_cmd.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rankscope {

std::string EnvironValue(const std::string& block, const std::string& name) {
  const std::string prefix = name + "=";
  size_t at = 0;
  while (at < block.size()) {
    size_t end = block.find('\0', at);
    if (end == std::string::npos) end = block.size();
    if (block.compare(at, prefix.size(), prefix) == 0) {
      return block.substr(at + prefix.size(), end - at - prefix.size());
    }
    at = end + 1;
  }
  return "";
}

std::vector<AgentEndpoint> FindJobAgents(const std::string& job_id, uid_t uid,
                                         const std::string& proc_root,
                                         const std::string& own_step) {
  std::vector<AgentEndpoint> out;
  DIR* dir = opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const std::string base = proc_root + "/" + name;
    struct stat st {};
    if (stat(base.c_str(), &st) != 0 || st.st_uid != uid) continue;
    std::ifstream in(base + "/environ", std::ios::binary);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const std::string block = text.str();
    if (EnvironValue(block, "SLURM_JOB_ID") != job_id) continue;
    // The attach's own step carries its coordinator's address and secret too.
    if (!own_step.empty() && EnvironValue(block, "SLURM_STEP_ID") == own_step) continue;
    // Another attach's tasks carry its coordinator and secret too; they are not agents.
    if (EnvironValue(block, "RANKSCOPE_ATTACH_NODE") == "1") continue;
    AgentEndpoint a{EnvironValue(block, "RANKSCOPE_COORDINATOR"),
                    EnvironValue(block, "RANKSCOPE_TOKEN")};
    // Ranks carry the coordinator but not the secret (agents strip it): only agents match.
    if (a.coordinator.empty() || a.token.empty()) continue;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  closedir(dir);
  return out;
}

}  // namespace rankscope
