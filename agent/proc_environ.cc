#include "agent/proc_environ.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace rankscope {

std::vector<std::string> SplitNul(const std::string& block) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < block.size()) {
    size_t end = block.find('\0', at);
    if (end == std::string::npos) end = block.size();
    out.push_back(block.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::map<std::string, std::string> ParseEnviron(const std::string& block) {
  std::map<std::string, std::string> env;
  for (const std::string& entry : SplitNul(block)) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::vector<ProcessEnviron> ProcessEnvirons(uid_t uid, const std::string& proc_root) {
  std::vector<ProcessEnviron> out;
  DIR* dir = opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    ProcessEnviron p;
    p.dir = proc_root + "/" + name;
    struct stat st {};
    if (stat(p.dir.c_str(), &st) != 0 || st.st_uid != uid) continue;
    std::ifstream in(p.dir + "/environ", std::ios::binary);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    p.pid = static_cast<pid_t>(std::stol(name));
    p.env = ParseEnviron(text.str());
    out.push_back(std::move(p));
  }
  closedir(dir);
  return out;
}

}  // namespace rankscope
