#include "agent/tool_wrap.h"

#include <unistd.h>

#include <charconv>
#include <sstream>

namespace rankscope {
namespace {

std::string Get(const EnvMap& env, const char* name, const std::string& fallback = "") {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

bool ParseInt(const std::string& text, int* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && *out >= 0;
}

// The tool's executable: the variable that names it (RANKSCOPE_NCU for ncu), else `find`'s.
std::string ToolBinary(const EnvMap& env, const std::string& tool,
                       const std::function<std::string(const std::string&)>& find) {
  std::string var = "RANKSCOPE_";
  for (char c : tool) var.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  const std::string named = Get(env, var.c_str());
  return find(named.empty() ? tool : named);
}

}  // namespace

bool RankInList(const std::string& list, int rank) {
  if (list == "all") return true;
  std::stringstream parts(list);
  std::string part;
  bool in = false;  // the whole list is read: a malformed one names no rank
  while (std::getline(parts, part, ',')) {
    const size_t dash = part.find('-');
    int first = 0;
    int last = 0;
    if (dash == std::string::npos) {
      if (!ParseInt(part, &first)) return false;
      last = first;
    } else if (!ParseInt(part.substr(0, dash), &first) || !ParseInt(part.substr(dash + 1), &last)) {
      return false;
    }
    in |= rank >= first && rank <= last;
  }
  return in;
}

ToolWrap PlanToolWrap(const EnvMap& env, int rank, const std::vector<std::string>& program,
                      const std::string& tmp_dir,
                      const std::function<std::string(const std::string&)>& find,
                      const std::function<bool(const std::string&)>& writable) {
  ToolWrap wrap;
  const bool ncu = RankInList(Get(env, kNcuRanksVar), rank);
  const bool nsys = !ncu && RankInList(Get(env, kNsysRanksVar), rank);
  if (!ncu && !nsys) return wrap;
  const std::string tool = ncu ? "ncu" : "nsys";
  const std::string binary = ToolBinary(env, tool, find);
  const std::string who = "rank " + std::to_string(rank);
  if (binary.empty()) {
    wrap.note = who + " was to run under " + tool + ", which is not on PATH on this node (" + tool +
                " is part of the CUDA toolkit; RANKSCOPE_" + (ncu ? "NCU" : "NSYS") +
                " may name it): it ran without it";
    return wrap;
  }
  std::string dir = Get(env, kToolDirVar);
  if (dir.empty() || !writable(dir)) {
    if (!dir.empty()) {
      wrap.note = "the session folder " + dir + " is not on this node (or not writable): " + tool +
                  "'s report of " + who + " is written to " + tmp_dir;
    }
    dir = tmp_dir;
  }
  const std::string base = dir + "/rank" + std::to_string(rank) + (ncu ? "_kernel" : "");
  wrap.tool = tool;
  wrap.binary = binary;
  if (ncu) {
    wrap.report = base + ".ncu-rep";
    wrap.argv = {binary, "--set", Get(env, kNcuSetVar, "full")};
    if (const std::string kernel = Get(env, kNcuKernelVar); !kernel.empty()) {
      wrap.argv.insert(wrap.argv.end(), {"-k", "regex:" + kernel});
    }
    wrap.argv.insert(wrap.argv.end(),
                     {"--launch-skip", Get(env, kNcuSkipVar, "0"), "--launch-count",
                      Get(env, kNcuCountVar, "1"), "--target-processes", "all", "-f", "-o", base});
  } else {
    wrap.report = base + ".nsys-rep";
    wrap.argv = {binary, "profile", "--trace=cuda,nvtx,osrt", "--force-overwrite=true",
                 "--output=" + base};
  }
  wrap.argv.insert(wrap.argv.end(), program.begin(), program.end());
  return wrap;
}

std::string FindOnPath(const std::string& name, const EnvMap& env) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::stringstream dirs(Get(env, "PATH", "/usr/bin:/bin"));
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace rankscope
