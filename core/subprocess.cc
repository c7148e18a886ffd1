#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace rankscope {

std::pair<int, std::string> CaptureOutput(const std::vector<std::string>& argv, ToolStderr err) {
  if (argv.empty()) return {-1, ""};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const bool discard = err == ToolStderr::kDiscard;
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return {-1, ""};
  if (discard && pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return {-1, ""};
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copy
    if (discard) dup2(err_pipe[1], STDERR_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  if (discard) close(err_pipe[1]);
  // Both pipes drained together: a tool that fills one while we wait on the other would block.
  std::string out;
  char buffer[4096];
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {discard ? err_pipe[0] : -1, POLLIN, 0}};
  for (int open = discard ? 2 : 1; open > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        if (i == 0) out.append(buffer, static_cast<size_t>(n));
        continue;
      }
      close(fds[i].fd);
      fds[i].fd = -1;
      --open;
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return {-1, out};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

}  // namespace rankscope
