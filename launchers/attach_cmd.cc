#include "launchers/attach_cmd.h"

#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "launchers/capture_cmd.h"

namespace rankscope {
namespace {

// Runs argv, returns (exit status, stdout). Status -1 when it cannot run.
std::pair<int, std::string> Capture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {-1, ""};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  close(pipefd[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return {-1, out};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

std::string UserName(uid_t uid) {
  passwd* pw = getpwuid(uid);
  return pw != nullptr ? pw->pw_name : std::to_string(uid);
}

std::string NodeName() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && n[0] != '\0') return n;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

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
                                         const std::string& proc_root) {
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
    AgentEndpoint a{EnvironValue(block, "RANKSCOPE_COORDINATOR"),
                    EnvironValue(block, "RANKSCOPE_TOKEN")};
    // Ranks carry the coordinator but not the secret (agents strip it): only agents match.
    if (a.coordinator.empty() || a.token.empty()) continue;
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  closedir(dir);
  return out;
}

int RunAttachNode(const AttachOptions& options) {
  const std::string node = NodeName();
  const std::vector<AgentEndpoint> agents = FindJobAgents(options.job_id, getuid());
  if (agents.empty()) {
    std::printf(
        "node %s: no rankscope agent of job %s: it was not launched with `rankscope "
        "run`; relaunch it as `rankscope run --dormant -- srun ...` to attach to it\n",
        node.c_str(), options.job_id.c_str());
    return 3;
  }
  int failed = 0;
  for (const AgentEndpoint& a : agents) {
    Result<int> n = TriggerCapture(a.coordinator, a.token, TriggerKind::kStart);
    if (!n.ok()) {
      std::printf("node %s: %s\n", node.c_str(), n.status().message().c_str());
      ++failed;
      continue;
    }
    std::printf("node %s: capture started (%d agents of coordinator %s)\n", node.c_str(), n.value(),
                a.coordinator.c_str());
  }
  std::fflush(stdout);
  if (failed == static_cast<int>(agents.size())) return 1;
  std::this_thread::sleep_for(std::chrono::duration<double>(options.for_s));
  for (const AgentEndpoint& a : agents) {
    if (Result<int> n = TriggerCapture(a.coordinator, a.token, TriggerKind::kStop); n.ok()) {
      std::printf("node %s: capture stopped after %.1f s\n", node.c_str(), options.for_s);
    }
  }
  return 0;
}

int RunAttach(const AttachOptions& options, const std::string& self_exe) {
  const std::string& job = options.job_id;
  if (job.empty() || !std::all_of(job.begin(), job.end(), ::isdigit)) {
    std::fprintf(stderr, "rankscope attach: '%s' is not a SLURM job id\n", job.c_str());
    return 2;
  }
  auto [rc, out] = Capture({"squeue", "-h", "-j", job, "-o", "%T %u %D"});
  if (rc == 127 || rc < 0) {
    std::fprintf(stderr, "rankscope attach: squeue is not installed or did not run\n");
    return 2;
  }
  std::istringstream fields(out);
  std::string state, user;
  int nodes = 0;
  if (rc != 0 || !(fields >> state >> user >> nodes)) {
    std::fprintf(stderr, "rankscope attach: job %s does not exist (squeue knows no such job)\n",
                 job.c_str());
    return 2;
  }
  if (user != UserName(getuid())) {
    std::fprintf(stderr, "rankscope attach: job %s belongs to %s; attach only to your own jobs\n",
                 job.c_str(), user.c_str());
    return 2;
  }
  if (state != "RUNNING") {
    std::fprintf(stderr, "rankscope attach: job %s is %s, not running\n", job.c_str(),
                 state.c_str());
    return 2;
  }
  char for_text[32];
  std::snprintf(for_text, sizeof(for_text), "%g", options.for_s);
  const std::vector<std::string> argv = {"srun",
                                         "--jobid=" + job,
                                         "--overlap",
                                         "-N",
                                         std::to_string(nodes),
                                         "--ntasks-per-node=1",
                                         "-n",
                                         std::to_string(nodes),
                                         "--kill-on-bad-exit=0",
                                         self_exe,
                                         "attach-node",
                                         job,
                                         "--for",
                                         for_text};
  std::fprintf(stderr, "rankscope attach: job %s, %d node(s), a %s s window\n", job.c_str(), nodes,
               for_text);
  auto [src, srun_out] = Capture(argv);
  std::fputs(srun_out.c_str(), stdout);
  const bool any_captured = srun_out.find("capture started") != std::string::npos;
  if (!any_captured) {
    std::fprintf(stderr, "rankscope attach: nothing to capture in job %s (srun exit %d)\n",
                 job.c_str(), src);
    return 3;
  }
  std::fprintf(stderr,
               "rankscope attach: done; the report comes from the job's `rankscope run` when "
               "it ends\n");
  return 0;
}

}  // namespace rankscope
