#include "agent/agent.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "agent/identity.h"
#include "agent/ipc_server.h"
#include "agent/nccl_collector.h"
#include "agent/nvml_sampler.h"
#include "agent/proc_sampler.h"
#include "agent/uplink.h"
#include "core/control_page.h"
#include "proto/convert.h"

namespace rankscope {
namespace {

// The program's pid for the signal handler (0 = no child yet).
volatile sig_atomic_t g_child_pid = 0;
// A sender whose signals reach the program without us (0 = none): slurmstepd, our parent in a
// Slurm step, signals every process of the step (proctrack), so forwarding would deliver each
// scancel/--signal/time-limit signal to the program twice.
volatile sig_atomic_t g_step_daemon_pid = 0;

void ForwardSignal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_USER && g_step_daemon_pid > 0 &&
      info->si_pid == g_step_daemon_pid) {
    return;
  }
  const int saved_errno = errno;  // the interrupted code may be about to read it
  if (g_child_pid > 0) kill(g_child_pid, sig);
  errno = saved_errno;
}

// Our parent's pid when it is slurmstepd, else 0.
pid_t StepDaemonParent() {
  const pid_t parent = getppid();
  std::ifstream comm("/proc/" + std::to_string(parent) + "/comm");
  std::string name;
  return std::getline(comm, name) && name.rfind("slurmstepd", 0) == 0 ? parent : 0;
}

constexpr int kForwardedSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                     SIGUSR1, SIGUSR2, SIGCONT, SIGWINCH};

void InstallForwarders() {
  g_step_daemon_pid = StepDaemonParent();
  struct sigaction sa {};
  sa.sa_sigaction = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  for (int sig : kForwardedSignals) sigaction(sig, &sa, nullptr);
}

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// The program's environment: ours, minus the session secret, plus the inject settings and
// `extra` ("NAME=value", e.g. the NCCL debug settings). *note says what the user's own settings
// cost the capture, if anything.
std::vector<std::string> ChildEnvironment(const AgentOptions& options, const EnvMap& current,
                                          const std::string& ipc,
                                          const std::vector<std::string>& extra,
                                          std::string* note) {
  std::vector<std::string> env;
  for (const auto& [key, value] : current) {
    if (key == "RANKSCOPE_TOKEN") continue;
    if (!options.inject_library.empty() &&
        (key == "LD_PRELOAD" || key == "NVTX_INJECTION64_PATH" || key == "RANKSCOPE_IPC_SOCKET" ||
         key == "RANKSCOPE_CONTROL_FILE")) {
      continue;
    }
    env.push_back(key + "=" + value);
  }
  if (!options.inject_library.empty() && !ipc.empty()) {
    std::string preload = options.inject_library;
    if (auto it = current.find("LD_PRELOAD"); it != current.end() && !it->second.empty()) {
      preload += ":" + it->second;
    }
    env.push_back("LD_PRELOAD=" + preload);
    env.push_back("NVTX_INJECTION64_PATH=" + options.inject_library);
    // The CUDA driver loads it at CUDA init and calls InitializeInjection (CUPTI activity).
    // A CUDA injection the user chose (another tool) stays: only one can be loaded.
    if (auto it = current.find("CUDA_INJECTION64_PATH"); it == current.end()) {
      env.push_back("CUDA_INJECTION64_PATH=" + options.inject_library);
    } else if (it->second != options.inject_library) {
      *note = "CUDA_INJECTION64_PATH is already set (" + it->second +
              ": another CUDA tool, e.g. Nsight Systems); it is kept, so no GPU activity from "
              "CUPTI: NCCL logs, NVTX and MPI are still captured";
    }
    env.push_back("RANKSCOPE_IPC_SOCKET=" + ipc);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Removes the files of a flat private directory, then the directory.
void RemoveTree(const std::string& dir) {
  glob_t files{};
  if (glob((dir + "/*").c_str(), 0, nullptr, &files) == 0) {
    for (size_t i = 0; i < files.gl_pathc; ++i) unlink(files.gl_pathv[i]);
  }
  globfree(&files);
  rmdir(dir.c_str());
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The control page (core/control_page.h): created in `dir`, mapped shared, unlinked at the end.
class ControlFile {
 public:
  ~ControlFile() {
    if (page_ != nullptr) munmap(page_, kControlPageSize);
    if (!path_.empty()) unlink(path_.c_str());
  }
  // False (and no file left) when `dir` cannot hold the page. Its blocks are allocated, not
  // only its size set: on a full file system a page mapped over a hole raises SIGBUS at the
  // first write (the agent's) or read (the program's).
  bool Create(const std::string& dir, bool capturing) {
    std::string templ = dir + "/rankscope-ctl.XXXXXX";
    const int fd = mkstemp(templ.data());
    if (fd < 0) return false;
    void* map = MAP_FAILED;
    if (posix_fallocate(fd, 0, kControlPageSize) == 0) {
      map = mmap(nullptr, kControlPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED) {
      unlink(templ.c_str());
      return false;
    }
    path_ = templ;
    page_ = new (map) ControlPage{kControlPageMagic, {}};
    Set(capturing);
    return true;
  }
  void Set(bool capturing) {
    if (page_ != nullptr) page_->capturing.store(capturing ? 1 : 0, std::memory_order_release);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ControlPage* page_ = nullptr;
};

}  // namespace

void FillAgentOptionsFromEnvironment(const std::string& self_exe, AgentOptions* options) {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (options->coordinator.empty()) options->coordinator = get("RANKSCOPE_COORDINATOR");
  if (options->token.empty()) options->token = get("RANKSCOPE_TOKEN");
  if (options->session_id.empty()) options->session_id = get("RANKSCOPE_SESSION");
  if (options->inject_library.empty()) options->inject_library = get("RANKSCOPE_INJECT_LIB");
  if (options->inject_library.empty()) {
    std::string dir = self_exe.substr(0, self_exe.rfind('/'));
    std::string candidate = dir + "/../lib/librankscope_inject.so";
    if (access(candidate.c_str(), R_OK) == 0) options->inject_library = candidate;
  }
  if (std::string tmp = get("TMPDIR"); !tmp.empty()) options->tmp_dir = tmp;
  if (get("RANKSCOPE_DORMANT") == "1") options->dormant = true;
}

ChildExit RunAgent(const AgentOptions& options) {
  const bool profiled = !options.coordinator.empty();
  if (!profiled) {
    std::fprintf(stderr,
                 "rankscope agent: RANKSCOPE_COORDINATOR is not set; running the program "
                 "unprofiled.\n");
  }
  const EnvMap environment = CurrentEnvironment();  // read once; the program gets a copy
  auto env_is = [&environment](const char* name, const char* value) {
    auto it = environment.find(name);
    return it != environment.end() && it->second == value;
  };
  AgentIdentity identity = DetectIdentity(environment, HostName());

  ControlFile control;  // before the uplink, whose control thread writes to it
  std::unique_ptr<Uplink> uplink;
  std::unique_ptr<IpcServer> ipc;
  if (profiled) {
    UplinkOptions up;
    up.address = options.coordinator;
    up.token = options.token;
    up.final_timeout = options.final_timeout;
    // The inject library follows the coordinator's capture start/stop through the control page.
    if (control.Create(options.tmp_dir, !options.dormant)) {
      up.on_capture = [&control](bool on) { control.Set(on); };
    } else if (options.dormant) {
      std::fprintf(stderr,
                   "rankscope agent (rank %d): cannot create the control page in %s; "
                   "the rank is captured from the start\n",
                   identity.rank, options.tmp_dir.c_str());
    }
    up.capturing = !options.dormant || control.path().empty();
    uplink = std::make_unique<Uplink>(up, ToProto(identity, options.session_id, options.program));
    Uplink* sink = uplink.get();
    ipc = std::make_unique<IpcServer>([sink](wire::Batch&& b) { sink->AddBatch(std::move(b)); },
                                      [sink](const std::string& e) { sink->AddNotice(e); });
    if (Status s = ipc->Start(options.tmp_dir); !s.ok()) {
      std::fprintf(stderr, "rankscope agent (rank %d): %s; the program runs without capture.\n",
                   identity.rank, s.message().c_str());
      uplink->AddNotice(s.message());
      ipc.reset();
    }
  }

  // NCCL's own log and topology dump, in a private directory removed at the end.
  std::unique_ptr<NcclCollector> nccl;
  std::string nccl_dir;
  std::vector<std::string> nccl_env;
  if (profiled) {
    std::string templ = options.tmp_dir + "/rankscope-nccl.XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) {
      nccl_dir = templ;
      NcclPlan plan =
          PlanNcclEnvironment(environment, identity, nccl_dir, options.session_id, options.tmp_dir);
      if (!plan.note.empty()) uplink->AddNotice(plan.note);
      nccl_env = plan.set_env;
      nccl = std::make_unique<NcclCollector>(std::move(plan));
    }
  }
  // NVML once per node, by local rank 0's agent.
  std::unique_ptr<NvmlSampler> nvml;
  if (profiled && identity.local_rank == 0 && !env_is("RANKSCOPE_NVML", "0")) {
    auto library = environment.find("RANKSCOPE_NVML_LIBRARY");
    nvml = std::make_unique<NvmlSampler>(
        library != environment.end() ? library->second : "libnvidia-ml.so.1", 2 * kNsPerSec,
        30 * kNsPerSec);
  }
  std::string env_note;
  std::vector<std::string> extra_env = nccl_env;
  if (!control.path().empty()) extra_env.push_back("RANKSCOPE_CONTROL_FILE=" + control.path());
  std::vector<std::string> env = ChildEnvironment(
      options, environment, ipc ? ipc->path() : std::string(), extra_env, &env_note);
  if (!env_note.empty() && uplink) uplink->AddNotice(env_note);  // the report shows it
  std::vector<std::string> argv = options.program;
  std::vector<char*> c_env = CStrings(env);
  std::vector<char*> c_argv = CStrings(argv);

  // Block forwarded signals until the child's pid is known, so none is lost in between.
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : kForwardedSignals) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old);
  pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execvpe(c_argv[0], c_argv.data(), c_env.data());
    std::fprintf(stderr, "rankscope agent: cannot run %s: %s\n", c_argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  ChildExit result;
  std::unique_ptr<ProcSampler> proc;
  std::optional<ProcessTreeStats> proc_stats;
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    std::fprintf(stderr, "rankscope agent: fork failed: %s\n", std::strerror(errno));
    result.exit_code = 126;
  } else {
    g_child_pid = pid;
    InstallForwarders();
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (uplink) {
      uplink->SetProgramPid(pid);
      uplink->Start();
    }
    if (nccl) nccl->Start(pid);
    if (nvml) nvml->Start();
    if (profiled && !env_is("RANKSCOPE_PROC", "0")) {
      proc = std::make_unique<ProcSampler>(pid, kNsPerSec);
      proc->Start();
    }
    int status = 0;
    // Wait for the exit without reaping: the program's final counters stay readable, and its pid
    // cannot be reused while the forwarder may still signal it.
    siginfo_t info{};
    while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    if (proc) proc_stats = proc->Finish();
    g_child_pid = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      result.term_signal = WTERMSIG(status);
      result.exit_code = 128 + result.term_signal;
    } else {
      result.exit_code = WEXITSTATUS(status);
    }
  }

  if (uplink) {
    if (ipc) ipc->Stop();  // reads the program's last batches
    if (nccl) {
      if (std::optional<v1::NcclSummary> summary = nccl->Finish()) uplink->SetNccl(*summary);
      if (std::optional<v1::TopologyDump> topo = nccl->Topology()) {
        uplink->SetTopology(*topo);
        if (topo->source().find("/rankscope-") != std::string::npos) unlink(topo->source().c_str());
      }
      RemoveTree(nccl_dir);
    }
    if (nvml) uplink->SetNvml(nvml->Finish());
    if (proc_stats) uplink->SetProcessStats(ToProto(*proc_stats));
    if (result.term_signal != 0) {
      uplink->AddNotice("program killed by signal " + std::to_string(result.term_signal) + " (" +
                        strsignal(result.term_signal) + ")");
    }
    uplink->Finish(result.exit_code, result.term_signal);
  }
  return result;
}

void ExitLikeChild(const ChildExit& exit) {
  std::fflush(nullptr);
  if (exit.term_signal != 0) {
    signal(exit.term_signal, SIG_DFL);
    // No core file from the agent: the program already left one if it was meant to.
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, exit.term_signal);
    sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    raise(exit.term_signal);
  }
  std::_Exit(exit.exit_code);
}

}  // namespace rankscope
