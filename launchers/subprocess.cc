#include "launchers/subprocess.h"

#include <fcntl.h>
#include <unistd.h>

namespace rankscope {

pid_t StartLogged(const std::vector<std::string>& argv, const std::string& log) {
  // Everything the child needs is made before fork: this process has gRPC threads.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string failed = "cannot run " + argv[0] + "\n";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    setpgid(0, 0);  // a group of its own: a timeout stops srun and whatever it started
    execvp(args[0], args.data());
    (void)!write(STDERR_FILENO, failed.data(), failed.size());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);  // also here, so a kill(-pid) right after fork reaches it
  return pid;
}

}  // namespace rankscope
