#include "agent/agent.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "agent/identity.h"
#include "agent/ipc_server.h"
#include "agent/nccl_collector.h"
#include "agent/nvml_sampler.h"
#include "agent/proc_sampler.h"
#include "agent/uplink.h"
#include "core/control_page.h"
#include "core/subprocess.h"
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
    // A CUDA injection the user chose (another tool) stays: only one can be loaded. So does the
    // one of the tool the rank runs under, which sets its own for the program.
    if (options.tool.active()) {
      *note = "the rank ran under " + options.tool.tool +
              ", which holds CUDA's injection: no GPU activity from CUPTI for it (its MPI calls "
              "are still captured)";
    } else if (auto it = current.find("CUDA_INJECTION64_PATH"); it == current.end()) {
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
  bool Create(const std::string& prefix, bool capturing) {
    std::string templ = prefix + "ctl.XXXXXX";
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
    page_ = new (map) ControlPage{kControlPageMagic, {}, {}, {}, {}, {}, {}};
    Set(capturing);
    return true;
  }
  void Set(bool capturing) {
    if (page_ != nullptr) page_->capturing.store(capturing ? 1 : 0, std::memory_order_release);
  }
  // The rank's process: only it records its exit() on the page (its children, which inherit the
  // library and the page, do not).
  void SetProgramPid(pid_t pid) {
    if (page_ != nullptr) page_->program_pid.store(pid, std::memory_order_release);
  }
  // exit()'s argument as the program's inject library recorded it; nullopt if it did not.
  std::optional<int> ExitCode() const {
    if (page_ == nullptr || page_->exited.load(std::memory_order_acquire) != 1) return std::nullopt;
    return page_->exit_code.load(std::memory_order_relaxed);
  }
  // Blocks until the program calls exit() (true) or MarkEnded is called (false).
  bool WaitForExitCall() {
    if (page_ == nullptr) return false;
    uint32_t v;
    while ((v = page_->exited.load(std::memory_order_acquire)) == 0)
      WaitWhile(&page_->exited, 0, -1);
    return v == 1;
  }
  // The program has ended: WaitForExitCall returns, if it was still waiting.
  void MarkEnded() {
    if (page_ == nullptr) return;
    uint32_t none = 0;
    page_->exited.compare_exchange_strong(none, 2);
    WakeAll(&page_->exited);
  }
  // Its last figures are read: the program's exit() goes on.
  void MarkSampled() {
    if (page_ == nullptr) return;
    page_->sampled.store(1, std::memory_order_release);
    WakeAll(&page_->sampled);
  }
  // The blocking MPI call or polling loop the program's main thread is inside at `now` (the
  // library writes it).
  std::optional<OpenCall> OpenCallAt(TimeNs now) const {
    if (page_ == nullptr) return std::nullopt;
    return ReadOpenCall(page_->open_call, static_cast<uint64_t>(now));
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

namespace {

// The most of ncu's CSV a final batch carries: one upload chunk is 4 MB (proto/upload_chunk.h)
// and one launch of `--set full` about 160 KB.
constexpr size_t kMaxToolCsvBytes = 3u << 20;

// What the tool the rank ran under left: its report's path and, for ncu, the report read back as
// the raw page's CSV (`ncu --import`, its stderr kept out of the job's output).
v1::ToolReport ReadToolReport(const ToolWrap& tool, const AgentIdentity& identity) {
  v1::ToolReport out;
  out.set_tool(tool.tool);
  out.set_path(tool.report);
  out.set_host(identity.node_name.empty() ? identity.host : identity.node_name);
  if (access(tool.report.c_str(), R_OK) != 0) {
    out.set_error(tool.tool + " wrote no report at " + tool.report +
                  (tool.tool == "ncu"
                       ? ": no kernel launch matched (the kernel regex, --ncu-skip), the program "
                         "ended first, or ncu failed (its messages are in the rank's output)"
                       : ": nsys failed (its messages are in the rank's output)"));
    return out;
  }
  if (tool.tool != "ncu") return out;
  const std::vector<std::string> import = {tool.binary, "--import", tool.report,
                                           "--csv",     "--page",   "raw"};
  auto [code, csv] = CaptureOutput(import, ToolStderr::kDiscard);
  if (code != 0) {
    out.set_error("`" + tool.binary + " --import " + tool.report +
                  " --csv --page raw` failed (exit " + std::to_string(code) +
                  "); run it there to see why");
  } else if (csv.size() > kMaxToolCsvBytes) {
    out.set_error("ncu's raw page of " + tool.report + " is " + std::to_string(csv.size() >> 20) +
                  " MB, more than a report carries: read it there with `rankscope inspect ncu " +
                  tool.report + "` (or profile fewer launches: --ncu-count)");
  } else {
    out.set_csv(std::move(csv));
  }
  return out;
}

// Everything the agent runs for one rank, in whichever process runs it: the program's parent
// (RunAgent) or the process beside it (RunProgramWithAgentBeside).
class RankCapture {
 public:
  explicit RankCapture(const AgentOptions& options)
      : options_(options),
        profiled_(!options.coordinator.empty()),
        environment_(CurrentEnvironment()),
        identity_(DetectIdentity(environment_, HostName())) {}

  // Sets up the capture (control page, uplink, IPC socket, NCCL directory, NVML) and returns
  // the program's environment. Nothing runs yet. `say` gets what the user should read (it
  // cannot run as well as it would).
  std::vector<std::string> Prepare(const std::function<void(const std::string&)>& say);
  // The program runs as `pid`: the uplink, the NCCL collector and the samplers start.
  void Start(pid_t pid);
  // The program has exited and is not reaped yet (its last figures are readable): the
  // samplers stop.
  void StopSampling();
  // Sends what is left with the exit status; nullopt: the program ended, how is not known.
  void Finish(const std::optional<ChildExit>& exit);

  ControlFile& control() { return control_; }

 private:
  bool EnvIs(const char* name, const char* value) const {
    auto it = environment_.find(name);
    return it != environment_.end() && it->second == value;
  }

  const AgentOptions& options_;
  const bool profiled_;
  const EnvMap environment_;  // read once; the program gets a copy
  const AgentIdentity identity_;
  ControlFile control_;  // before the uplink, whose control thread writes to it
  std::unique_ptr<Uplink> uplink_;
  std::unique_ptr<IpcServer> ipc_;
  std::unique_ptr<NcclCollector> nccl_;
  std::string nccl_dir_;
  std::unique_ptr<NvmlSampler> nvml_;
  std::unique_ptr<ProcSampler> proc_;
  std::optional<ProcessTreeStats> proc_stats_;
};

std::vector<std::string> RankCapture::Prepare(const std::function<void(const std::string&)>& say) {
  std::vector<std::string> extra_env;
  if (profiled_) {
    UplinkOptions up;
    up.address = options_.coordinator;
    up.token = options_.token;
    up.final_timeout = options_.final_timeout;
    // The inject library follows the coordinator's capture start/stop through the control page.
    const std::string prefix = AgentTempPrefix(options_.tmp_dir, options_.session_id);
    if (control_.Create(prefix, !options_.dormant)) {
      up.on_capture = [this](bool on) { control_.Set(on); };
    } else if (options_.dormant) {
      say("rankscope agent (rank " + std::to_string(identity_.rank) +
          "): cannot create the control page in " + options_.tmp_dir +
          "; the rank is captured from the start");
    }
    up.capturing = !options_.dormant || control_.path().empty();
    up.spool_path =
        prefix + "spool." + std::to_string(identity_.rank) + "." + std::to_string(getpid());
    uplink_ = std::make_unique<Uplink>(
        up, ToProto(RankIdentityOf(identity_, options_.session_id, options_.program),
                    options_.session_id));
    Uplink* sink = uplink_.get();
    ipc_ = std::make_unique<IpcServer>([sink](wire::Batch&& b) { sink->AddBatch(std::move(b)); },
                                       [sink](const std::string& e) { sink->AddNotice(e); });
    if (Status st = ipc_->Start(prefix); !st.ok()) {
      say("rankscope agent (rank " + std::to_string(identity_.rank) + "): " + st.message() +
          "; the program runs without capture.");
      uplink_->AddNotice(st.message());
      ipc_.reset();
    }
    // NCCL's own log and topology dump, in a private directory removed at the end.
    std::string templ = prefix + "nccl.XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) {
      nccl_dir_ = templ;
      NcclPlan plan = PlanNcclEnvironment(environment_, identity_, nccl_dir_, options_.session_id,
                                          options_.tmp_dir);
      if (!plan.note.empty()) uplink_->AddNotice(plan.note);
      extra_env = plan.set_env;
      nccl_ = std::make_unique<NcclCollector>(std::move(plan));
    }
    // NVML once per node, by local rank 0's agent.
    if (identity_.local_rank == 0 && !EnvIs("RANKSCOPE_NVML", "0")) {
      auto library = environment_.find("RANKSCOPE_NVML_LIBRARY");
      nvml_ = std::make_unique<NvmlSampler>(
          library != environment_.end() ? library->second : "libnvidia-ml.so.1", 2 * kNsPerSec,
          30 * kNsPerSec);
    }
  }
  if (!options_.tool.note.empty()) {
    say("rankscope agent: " + options_.tool.note);
    if (uplink_) uplink_->AddNotice(options_.tool.note);
  }
  if (!control_.path().empty()) extra_env.push_back("RANKSCOPE_CONTROL_FILE=" + control_.path());
  std::string env_note;
  std::vector<std::string> env = ChildEnvironment(
      options_, environment_, ipc_ ? ipc_->path() : std::string(), extra_env, &env_note);
  if (!env_note.empty() && uplink_) uplink_->AddNotice(env_note);  // the report shows it
  return env;
}

void RankCapture::Start(pid_t pid) {
  if (uplink_) {
    uplink_->SetProgramPid(pid);
    uplink_->Start();
  }
  if (nccl_) nccl_->Start(pid);
  if (nvml_) nvml_->Start();
  if (profiled_ && !EnvIs("RANKSCOPE_PROC", "0")) {
    proc_ = std::make_unique<ProcSampler>(pid, kNsPerSec);
    if (uplink_) {
      // The coordinator's live check reads the figures as they grow (coordinator/live_check.h).
      // With the MPI call it is inside, for the stall check (coordinator/stall_check.h).
      Uplink* uplink = uplink_.get();
      const ControlFile* control = &control_;
      proc_->OnSample([uplink, control](const ProcessTreeStats& so_far) {
        v1::ProcessStats progress = ToProto(so_far);
        const TimeNs now = MonotonicNow();
        if (const std::optional<OpenCall> open = control->OpenCallAt(now)) {
          *progress.mutable_open_call() = ToProto(*open, now);
        }
        uplink->SetProcessProgress(std::move(progress));
      });
    }
    proc_->Start();
  }
}

void RankCapture::StopSampling() {
  if (proc_) proc_stats_ = proc_->Finish();
  proc_.reset();
}

void RankCapture::Finish(const std::optional<ChildExit>& exit) {
  if (!uplink_) return;
  if (ipc_) ipc_->Stop();  // reads the program's last batches
  if (nccl_) {
    if (std::optional<v1::NcclSummary> summary = nccl_->Finish()) uplink_->SetNccl(*summary);
    if (std::optional<v1::TopologyDump> topo = nccl_->Topology()) {
      uplink_->SetTopology(*topo);
      if (topo->source().find("/rankscope-") != std::string::npos) unlink(topo->source().c_str());
    }
    RemoveTree(nccl_dir_);
  }
  if (nvml_) uplink_->SetNvml(nvml_->Finish());
  if (proc_stats_) uplink_->SetProcessStats(ToProto(*proc_stats_));
  if (options_.tool.active()) uplink_->SetToolReport(ReadToolReport(options_.tool, identity_));
  if (!exit) {
    uplink_->AddNotice(
        "the program ended without calling exit() (a signal, or _exit) and its parent reaped it "
        "before the agent beside it read its status");
    uplink_->FinishStatusUnseen();
    return;
  }
  if (exit->term_signal != 0) {
    uplink_->AddNotice("program killed by signal " + std::to_string(exit->term_signal) + " (" +
                       strsignal(exit->term_signal) + ")");
  }
  uplink_->Finish(exit->exit_code, exit->term_signal);
}

void SayOnStderr(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

void SayUnprofiled(const AgentOptions& options) {
  if (options.coordinator.empty()) {
    std::fprintf(stderr,
                 "rankscope agent: RANKSCOPE_COORDINATOR is not set; running the program "
                 "unprofiled.\n");
  }
}

// Where Open MPI would run `name` from when PATH has none of it: a bare name found in the working
// directory (bare `mpirun -np 2 prog` runs ./prog). "" elsewhere: execvpe's search is the rule.
std::string WorkingDirectoryFallback(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return "";
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) return "";
  return access(name.c_str(), X_OK) == 0 ? "./" + name : "";
}

// Runs the program as the launcher would (execvpe's PATH search, then `fallback` when that is not
// empty), or says why not and exits as a shell does: 127 when it was not found, 126 otherwise.
// The fallback is tried whatever execvpe's error: a PATH directory that cannot be searched makes
// execvpe fail with EACCES for a name found nowhere, where mpirun still runs ./NAME; when it is
// there but cannot run, its error is the one told. Async-signal-safe (write, no allocation), so
// a child forked from the threaded agent may call it.
[[noreturn]] void ExecOrExit(char* const* argv, char* const* env, const std::string& fallback) {
  execvpe(argv[0], argv, env);
  int error = errno;
  if (!fallback.empty()) {
    execve(fallback.c_str(), argv, env);
    if (errno != ENOENT) error = errno;
  }
  const char* why = strerrordesc_np(error);
  for (const char* part : {"rankscope agent: cannot run ", static_cast<const char*>(argv[0]), ": ",
                           why != nullptr ? why : "unknown error", "\n"}) {
    (void)!write(STDERR_FILENO, part, std::strlen(part));
  }
  _exit(error == ENOENT ? 127 : 126);
}

[[noreturn]] void ExecProgram(const std::vector<std::string>& program,
                              std::vector<std::string> env) {
  std::vector<std::string> argv = program;
  std::vector<char*> c_env = CStrings(env);
  std::vector<char*> c_argv = CStrings(argv);
  ExecOrExit(c_argv.data(), c_env.data(), WorkingDirectoryFallback(argv.front()));
}

// `options` with the tool its rank runs under planned (agent/tool_wrap.h); as they are when
// unprofiled or already planned.
AgentOptions WithTool(const AgentOptions& options) {
  AgentOptions out = options;
  if (out.coordinator.empty() || out.tool.active() || !out.tool.note.empty()) return out;
  const EnvMap env = CurrentEnvironment();
  const AgentIdentity id = DetectIdentity(env, HostName());
  out.tool = PlanToolWrap(
      env, id.rank, out.program, out.tmp_dir,
      [&env](const std::string& name) { return FindOnPath(name, env); },
      [](const std::string& dir) { return access(dir.c_str(), W_OK) == 0; });
  return out;
}

// What runs as the rank: the program, or the tool with the program after it.
std::vector<std::string> ProgramArgv(const AgentOptions& options) {
  return options.tool.active() ? options.tool.argv : options.program;
}

ChildExit FromWaitStatus(int status) {
  ChildExit out;
  if (WIFSIGNALED(status)) {
    out.term_signal = WTERMSIG(status);
    out.exit_code = 128 + out.term_signal;
  } else {
    out.exit_code = WEXITSTATUS(status);
  }
  return out;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// The wait status of process `pid` while it is a zombie (/proc/PID/stat field 52, "exit_code");
// nullopt once it is reaped or while it runs.
std::optional<int> ZombieStatus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  std::vector<std::string> after;  // after[0] is field 3 (state)
  while (fields >> field) after.push_back(field);
  if (after.size() < 50 || after[0] != "Z") return std::nullopt;
  return std::atoi(after[49].c_str());
}

// The program's environment as the agent sends it before the exec: "RSENV1\0", then each
// "NAME=value\0"; parsed back by ReadEnvironment (nullopt for anything else: the agent died or
// gave up before it had written it whole).
constexpr std::string_view kEnvMagic{"RSENV1\0", 7};
constexpr std::string_view kEnvEnd{"RSEND\0", 6};

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool SendEnvironment(int fd, const std::vector<std::string>& env) {
  std::string out(kEnvMagic);
  for (const std::string& e : env) out.append(e).push_back('\0');
  out.append(kEnvEnd);
  return WriteAll(fd, out);
}

std::optional<std::vector<std::string>> ReadEnvironment(int fd, DurationNs timeout) {
  std::string in;
  const TimeNs deadline = MonotonicNow() + timeout;
  char buf[65536];
  for (;;) {
    const TimeNs left = deadline - MonotonicNow();
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::max<TimeNs>(left / kNsPerMs, 1)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  if (in.size() < kEnvMagic.size() + kEnvEnd.size() || in.rfind(kEnvMagic, 0) != 0 ||
      in.compare(in.size() - kEnvEnd.size(), kEnvEnd.size(), kEnvEnd) != 0) {
    return std::nullopt;
  }
  std::vector<std::string> env;
  size_t at = kEnvMagic.size();
  const size_t end = in.size() - kEnvEnd.size();
  while (at < end) {
    const size_t nul = in.find('\0', at);
    env.push_back(in.substr(at, nul - at));
    at = nul + 1;
  }
  return env;
}

// The program's environment without the agent: ours minus the session secret.
std::vector<std::string> UnprofiledEnvironment() {
  std::vector<std::string> env;
  for (const auto& [key, value] : CurrentEnvironment()) {
    if (key != "RANKSCOPE_TOKEN") env.push_back(key + "=" + value);
  }
  return env;
}

// Closes every descriptor of this process but stdin/stdout/stderr and `keep`: the ones the agent
// inherited from the program's launcher (its pipes, its sockets) must not outlive the program.
void CloseInheritedDescriptors(std::initializer_list<int> keep) {
  std::vector<int> open;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir)) {
      const int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != dirfd(dir)) open.push_back(fd);
    }
    closedir(dir);
  }
  for (int fd : open) {
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) close(fd);
  }
}

// The agent beside the program (pid `program`), in the process forked before its exec. Never
// returns: its work done, it exits.
[[noreturn]] void AgentBeside(const AgentOptions& options, pid_t program, int env_fd, int exec_fd) {
  setsid();  // out of the program's session and process group: the job's signals are not ours
  for (int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    signal(sig, SIG_IGN);
  }
  // stdin and stdout are the program's; stderr stays, for the messages only the user reads
  // (the coordinator refused us, the final report was lost), until the agent is done.
  if (const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC); null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    close(null_fd);
  }
  const int pidfd = PidfdOpen(program);  // the program waits for our environment: it is alive
  CloseInheritedDescriptors({env_fd, exec_fd, pidfd});
  if (pidfd < 0) _exit(0);  // the program runs unprofiled (no environment from us)
  {
    RankCapture capture(options);
    const std::vector<std::string> env = capture.Prepare(SayOnStderr);
    // Before the exec (it may exit at once). Only beside the program: its library then waits at
    // exit() for the agent to read its last figures, which a parent reads from the zombie.
    capture.control().SetProgramPid(program);
    const bool sent = SendEnvironment(env_fd, env);
    close(env_fd);
    if (sent) {
      // The exec closes the program's end of this pipe (or its death does).
      char c;
      while (read(exec_fd, &c, 1) < 0 && errno == EINTR) {
      }
      capture.Start(program);
      // When the program calls exit(), its library waits (100 ms at most) until its last
      // figures are read: after the exit its parent may reap it before this process looks.
      std::thread last_figures([&capture] {
        if (capture.control().WaitForExitCall()) {
          capture.StopSampling();
          capture.control().MarkSampled();
        }
      });
      pollfd p{pidfd, POLLIN, 0};
      while (poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
      const std::optional<int> zombie = ZombieStatus(program);  // first: it may be reaped soon
      capture.control().MarkEnded();
      last_figures.join();
      std::optional<ChildExit> exit;
      if (zombie) {
        exit = FromWaitStatus(*zombie);
      } else if (std::optional<int> code = capture.control().ExitCode()) {
        exit = ChildExit{*code, 0};
      }
      capture.StopSampling();  // unless done at its exit()
      capture.Finish(exit);
    }
  }
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace

std::string AgentTempPrefix(const std::string& tmp_dir, const std::string& session_id) {
  std::string session;
  for (char c : session_id) {
    session.push_back(
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_');
  }
  return tmp_dir + "/rankscope-" + (session.empty() ? "" : session + "-");
}

int RemoveAgentLeftovers(const std::string& tmp_dir, const std::string& session_id) {
  if (session_id.empty()) return 0;
  glob_t found{};
  int removed = 0;
  if (glob((AgentTempPrefix(tmp_dir, session_id) + "*").c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      const std::string path = found.gl_pathv[i];
      struct stat st {};
      if (lstat(path.c_str(), &st) != 0 || st.st_uid != geteuid()) continue;
      if (S_ISDIR(st.st_mode)) {
        RemoveTree(path);
      } else {
        unlink(path.c_str());
      }
      ++removed;
    }
  }
  globfree(&found);
  return removed;
}

bool CanRunBeside() {
  if (StepDaemonParent() != 0) return false;  // slurmstepd ends a step's leftovers at its end
  const int fd = PidfdOpen(getpid());
  if (fd < 0) return false;  // Linux before 5.3
  close(fd);
  return true;
}

[[noreturn]] void RunProgramWithAgentBeside(const AgentOptions& given) {
  SayUnprofiled(given);
  if (given.coordinator.empty()) ExecProgram(given.program, UnprofiledEnvironment());
  const AgentOptions options = WithTool(given);
  const pid_t program = getpid();
  int env_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  if (pipe2(env_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    ExitLikeChild(RunAgent(options));
  }
  // A middle process forks the agent and exits at once: the agent is no child of the program
  // (whose wait() must not see it) and is reparented away from it.
  const pid_t middle = fork();
  if (middle == 0) {
    const pid_t agent = fork();
    if (agent == 0) {
      close(env_pipe[0]);
      close(exec_pipe[1]);
      AgentBeside(options, program, env_pipe[1], exec_pipe[0]);
    }
    _exit(agent < 0 ? 1 : 0);
  }
  close(env_pipe[1]);
  close(exec_pipe[0]);
  if (middle < 0) {
    close(env_pipe[0]);
    close(exec_pipe[1]);
    ExitLikeChild(RunAgent(options));
  }
  while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
  }
  // The agent's environment for the program; without it (the agent failed), the program runs
  // unprofiled. exec_pipe[1] closes at the exec, which tells the agent the program runs.
  std::optional<std::vector<std::string>> env = ReadEnvironment(env_pipe[0], 20 * kNsPerSec);
  close(env_pipe[0]);
  if (!env) {
    std::fprintf(stderr,
                 "rankscope agent: the agent did not start; running the program "
                 "unprofiled.\n");
  }
  if (!env) ExecProgram(options.program, UnprofiledEnvironment());
  ExecProgram(ProgramArgv(options), std::move(*env));
}

ChildExit RunAgent(const AgentOptions& given) {
  SayUnprofiled(given);
  const AgentOptions options = WithTool(given);
  RankCapture capture(options);
  std::vector<std::string> env = capture.Prepare(SayOnStderr);
  std::vector<std::string> argv = ProgramArgv(options);
  std::vector<char*> c_env = CStrings(env);
  std::vector<char*> c_argv = CStrings(argv);
  const std::string fallback = WorkingDirectoryFallback(argv.front());

  // Block forwarded signals until the child's pid is known, so none is lost in between.
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : kForwardedSignals) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old);
  pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ExecOrExit(c_argv.data(), c_env.data(), fallback);
  }
  ChildExit result;
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    std::fprintf(stderr, "rankscope agent: fork failed: %s\n", std::strerror(errno));
    result.exit_code = 126;
  } else {
    g_child_pid = pid;
    InstallForwarders();
    sigprocmask(SIG_SETMASK, &old, nullptr);
    capture.Start(pid);
    // Wait for the exit without reaping: the program's final counters stay readable, and its pid
    // cannot be reused while the forwarder may still signal it.
    siginfo_t info{};
    while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    capture.StopSampling();
    g_child_pid = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result = FromWaitStatus(status);
  }
  capture.Finish(result);
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
