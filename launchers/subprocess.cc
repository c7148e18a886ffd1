#include "launchers/subprocess.h"

#include <sys/wait.h>
#include <unistd.h>

namespace rankscope {

std::pair<int, std::string> CaptureOutput(const std::vector<std::string>& argv) {
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

}  // namespace rankscope
