#include "launchers/launch_probe.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rankscope {
std::optional<std::string> ProgramProblemHere(const LaunchPlan& plan, int slurm_nodes) {
  if (plan.launcher != "mpirun" || LaunchSpansHosts(plan, slurm_nodes)) return std::nullopt;
  if (plan.program_index >= plan.argv.size()) return std::nullopt;
  for (size_t i = 0; i < plan.program_index; ++i) {
    const std::string& a = plan.argv[i];
    for (const char* opt : {"-wdir", "--wdir", "-wd", "--wd", "-path", "--path", "-cwd", "--cwd",
                            "-preload-binary", "--preload-binary", "-s"}) {
      if (a == opt || a.rfind(std::string(opt) + "=", 0) == 0) return std::nullopt;
    }
  }
  const std::string& program = plan.argv[plan.program_index];
  std::string found = InPath(program);
  // Open MPI also runs a bare name found in the working directory.
  if (found.empty() && access(program.c_str(), F_OK) == 0) found = "./" + program;
  if (found.empty()) return program + ": not found in PATH or in this directory";
  struct stat st {};
  if (stat(found.c_str(), &st) != 0) return found + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return found + ": not a file";
  if (access(found.c_str(), X_OK) != 0) return found + ": " + std::strerror(errno);
  return std::nullopt;
}

namespace {

// `timeout 5 LAUNCHER --version`'s output (stdout and stderr), without a shell.
std::string VersionText(const std::string& launcher) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execlp("timeout", "timeout", "5", launcher.c_str(), "--version", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buffer[512];
  ssize_t n;
  while (text.size() < 16384 && (n = read(fds[0], buffer, sizeof(buffer))) > 0) {
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return text;
}

}  // namespace

std::string InPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env_path = std::getenv("PATH");
  const std::string dirs = env_path != nullptr ? env_path : "";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(at, end - at);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;  // "": this directory
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

std::string ScriptPython(const std::string& path) {
  std::ifstream in(path);
  std::string first, second;
  if (!in || !std::getline(in, first) || !first.starts_with("#!")) return "";
  std::getline(in, second);
  auto python = [](const std::string& word) {
    return Basename(word).starts_with("python") ? word : std::string();
  };
  std::istringstream words(first.substr(2));
  std::string word;
  while (words >> word) {
    if (Basename(word) == "env" || word.starts_with("-")) continue;
    if (std::string p = python(word); !p.empty()) return p;
    break;
  }
  // pip: "#!/bin/sh" then "'''exec' /very/long/venv/bin/python3 "$0" "$@"".
  if (const size_t at = second.find("exec' "); at != std::string::npos) {
    std::istringstream rest(second.substr(at + 6));
    if (rest >> word) return python(word);
  }
  return "";
}

LaunchContext DetectLaunchContext(const std::vector<std::string>& command) {
  LaunchContext context;
  if (command.empty()) return context;
  const std::string first = Basename(command.front());
  if (first == "mpirun" || first == "mpiexec") {
    // Hydra prints "HYDRA build details", Intel MPI "Intel(R) MPI Library"; Open MPI names
    // itself. A launcher that does not answer in 5 s is taken for Open MPI.
    const std::string text = VersionText(command.front());
    if (text.find("HYDRA") != std::string::npos || text.find("Intel(R) MPI") != std::string::npos) {
      context.mpi = MpiFlavor::kHydra;
    }
  }
  for (const std::string& word : command) {
    if (Basename(word) != "torchrun") continue;
    if (std::string python = ScriptPython(InPath(word)); !python.empty()) {
      context.torchrun_python = python;
    }
    break;
  }
  return context;
}

}  // namespace rankscope
