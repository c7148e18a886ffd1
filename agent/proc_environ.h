// Other processes' environments, from /proc/PID/environ: how rankscope attach finds a job's
// agents and ranks (never by process name).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace rankscope {

// The words of a NUL-separated block (/proc/PID/environ, /proc/PID/cmdline).
std::vector<std::string> SplitNul(const std::string& block);

// A NUL-separated environment block as a map; entries without '=' or a name are left out.
std::map<std::string, std::string> ParseEnviron(const std::string& block);

struct ProcessEnviron {
  pid_t pid = 0;
  std::string dir;  // <proc_root>/<pid>
  std::map<std::string, std::string> env;
};

// The processes under `proc_root` owned by `uid` whose environment can be read.
std::vector<ProcessEnviron> ProcessEnvirons(uid_t uid, const std::string& proc_root = "/proc");

}  // namespace rankscope
