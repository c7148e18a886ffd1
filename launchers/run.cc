#include "launchers/run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "coordinator/advise/next_steps.h"
#include "coordinator/pipeline.h"
#include "coordinator/service.h"
#include "launchers/capture_cmd.h"
#include "launchers/launch_plan.h"
#include "launchers/launch_probe.h"
#include "launchers/live_status.h"
#include "launchers/session_coordinator.h"

namespace rankscope {
namespace {

volatile sig_atomic_t g_launcher_pid = 0;
volatile sig_atomic_t g_stop_requested = 0;
// The first stop signal that came before the launcher was started (0: none). The launch is then
// not made, and rankscope ends as that signal ends a launcher killed during its start-up.
volatile sig_atomic_t g_signal_before_launch = 0;

void ForwardToLauncher(int sig, siginfo_t* info, void*) {
  g_stop_requested = 1;
  if (g_launcher_pid == 0 && g_signal_before_launch == 0) g_signal_before_launch = sig;
  // Ctrl-C on a terminal (si_code SI_KERNEL) already reached the launcher, which is in the same
  // process group; a signal some process sent to rankscope alone (kill, scancel --signal, a
  // batch system: SI_USER, SI_QUEUE, SI_TKILL) is passed on, SIGINT included, so the job winds
  // down as a bare one would and the report is written.
  const bool from_terminal = sig == SIGINT && info != nullptr && info->si_code > 0;
  if (!from_terminal && g_launcher_pid > 0) kill(g_launcher_pid, sig);
}

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

// From the first step of `rankscope run` on, a stop signal is caught: before the launch it is
// remembered (EndIfStoppedBeforeLaunch), after it passed on to the launcher.
void CatchStopSignals() {
  struct sigaction sa {};
  sa.sa_sigaction = ForwardToLauncher;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
}

// The stop signals as a set.
sigset_t StopSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

// Starts the coordinator's server with the stop signals blocked, so that its threads (and the
// threads they start) inherit the block and only this thread ever runs ForwardToLauncher: the
// launch below then needs no ordering between threads to pass each signal on exactly once.
Status StartCoordinator(CoordinatorServer* server) {
  const sigset_t stops = StopSignalSet();
  sigset_t old_mask;
  sigprocmask(SIG_BLOCK, &stops, &old_mask);
  Status started = server->Start();
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return started;
}

// A stop signal came while rankscope was still setting up (before the launcher ran): nothing was
// started, so there is nothing to profile or report; end as that signal ends a process, as a bare
// launcher killed in its start-up would. Removes `out_dir` when it was made empty for us.
void EndIfStoppedBeforeLaunch(const std::string& out_dir) {
  const int sig = g_signal_before_launch;
  if (sig == 0) return;
  std::fprintf(stderr, "rankscope: stopped by signal %d (%s) before the launch; nothing was run\n",
               sig, strsignal(sig));
  if (!out_dir.empty()) rmdir(out_dir.c_str());  // only if still empty
  signal(sig, SIG_DFL);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(sig);
  _exit(128 + sig);  // a signal whose default action is not to end the process
}

std::string NewSessionId() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("rs-") + stamp + "-" + std::to_string(getpid());
}

// Replaces this process with `command` as the user gave it: its output, signals and exit code
// are a bare launch's. Returns only when it cannot be run (127 or 126, as a shell would).
int RunUnprofiled(const std::vector<std::string>& command) {
  // The default actions first: a signal from here on ends this process, or the command after the
  // exec, as it would a bare launch; one caught before ends it now.
  for (int sig : kStopSignals) signal(sig, SIG_DFL);
  EndIfStoppedBeforeLaunch("");
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "rankscope: cannot run %s: %s\n", argv[0], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace

// Before the launch: the session folder (or, for the default one, the folder it goes into) can
// be made and written, so a read-only or missing -o fails now, not after the job has run with
// its analysis lost. Little free space is a warning: the job runs, and the writer says what it
// could not write.
Status CheckOutputFolder(const std::string& out_dir) {
  const std::string dir = out_dir.empty() ? "." : out_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::Error("cannot create the session folder " + dir + ": " + ec.message());
  }
  std::string probe = dir + "/.rankscope-probe.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    return Status::Error("cannot write into the session folder " + dir + ": " +
                         std::strerror(errno));
  }
  const bool wrote = write(fd, "x", 1) == 1;
  const int write_errno = errno;
  close(fd);
  unlink(probe.c_str());
  if (!wrote) {
    return Status::Error("cannot write into the session folder " + dir + ": " +
                         std::strerror(write_errno));
  }
  struct statvfs fs {};
  constexpr double kLowBytes = 64.0 * 1024 * 1024;
  if (statvfs(dir.c_str(), &fs) == 0) {
    const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    if (free_bytes < kLowBytes) {
      std::fprintf(stderr,
                   "rankscope: only %.1f MiB free in %s; the session folder (about 100 bytes "
                   "per record) may not fit\n",
                   free_bytes / (1024 * 1024), dir.c_str());
    }
  }
  return Status::Ok();
}

namespace {

// While the job runs, on its own thread: the live straggler check (coordinator/live_check.h)
// every second, the stall check (coordinator/stall_check.h) with it, and the status line
// (LiveStatusLine). On a terminal the status line is redrawn
// in place each second and cleared when the job ends, so the report starts on a clean line, and a
// finding is printed above it; elsewhere with `print` (--live) a status line every 10 s and each
// finding as a line. Without `print` the findings are only kept for the report. Each finding asks
// the agents of its rank and two neighbours for their flight recorder's raw records around it.
// Stopped by the destructor.
class LiveWatch {
 public:
  // `launched`: when the launcher was started (the findings' times are since then).
  LiveWatch(CoordinatorService& service, bool terminal, bool print, bool dormant, TimeNs launched,
            DurationNs stall_after)
      : service_(service), terminal_(terminal), print_(print), dormant_(dormant), start_(launched) {
    if (stall_after > 0) stall_.emplace(StallCheckOptions{.after = stall_after});
    // A developer's trace of what the live checks read each second (tests print it on a miss).
    if (const char* path = std::getenv("RANKSCOPE_LIVE_LOG"); path != nullptr && *path != 0) {
      log_ = std::fopen(path, "we");
    }
    // With the stop signals blocked, as the coordinator's threads (StartCoordinator).
    const sigset_t stops = StopSignalSet();
    sigset_t old_mask;
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    thread_ = std::thread([this] { Loop(); });
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  }
  ~LiveWatch() { Finish(); }
  LiveWatch(const LiveWatch&) = delete;
  LiveWatch& operator=(const LiveWatch&) = delete;

  // Stops the thread, clears the status line and moves what the live checks reported (times
  // since the job's launch) into `session`. Once; later calls add nothing.
  void Finish(Session* session = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (log_ != nullptr) std::fclose(log_);
    log_ = nullptr;
    if (terminal_ && drawn_) std::fputs("\r\033[K", stderr);
    if (session != nullptr) {
      session->live_findings = std::move(found_);
      session->live_stalls = std::move(stalls_);
    }
  }

 private:
  void Loop() {
    const int status_every = terminal_ ? 1 : 10;  // ticks of a second
    LiveProgress before = service_.Progress();
    int ticks = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      ++ticks;
      const TimeNs now = MonotonicNow();
      std::vector<LiveTally> tallies = service_.LiveTallies();
      if (log_ != nullptr) LogTallies(now, tallies);
      if (stall_) {
        for (StallFinding f : stall_->Check(now, tallies)) Report(std::move(f));
      }
      std::vector<int> known;
      for (const LiveTally& t : tallies) known.push_back(t.rank);
      for (LiveFinding f : check_.Check(now, std::move(tallies))) {
        // The raw records of the moment on the rank and its neighbours, where its agent holds
        // them back (GPU kernels summed after the raw budget).
        service_.CaptureAround(CaptureRanks(f.rank, known));
        f.began -= start_;
        f.found -= start_;
        if (print_) {
          std::fprintf(stderr, "%srankscope: live: %s\n", terminal_ ? "\r\033[K" : "",
                       LiveFindingLine(f).c_str());
          std::fflush(stderr);
          drawn_ = false;
        }
        found_.push_back(f);
      }
      if (!print_ || ticks % status_every != 0) continue;
      const LiveProgress progress = service_.Progress();
      const bool capturing = dormant_ ? progress.capture == 1 : progress.capture != -1;
      const std::string line =
          LiveStatusLine(progress, before, status_every * kNsPerSec, now - start_, capturing);
      if (terminal_) {
        std::fprintf(stderr, "\r%s\033[K", line.c_str());
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      std::fflush(stderr);
      drawn_ = true;
      before = progress;
    }
  }

  // One line per rank: seconds since the launch; the tally's figures, times as ages in ms.
  void LogTallies(TimeNs now, const std::vector<LiveTally>& tallies) {
    const auto ms = [now](TimeNs t) { return t > 0 ? (now - t) / kNsPerMs : -1; };
    for (const LiveTally& t : tallies) {
      std::fprintf(log_,
                   "%.3f rank=%d through=%lld in_mpi_ms=%lld heard_ago_ms=%lld cpu_ms=%lld "
                   "wall_ms=%lld samples=%d running=%d stopped=%d blocked=%d",
                   static_cast<double>(now - start_) / 1e9, t.rank,
                   static_cast<long long>(t.through), static_cast<long long>(t.in_mpi / kNsPerMs),
                   static_cast<long long>(ms(t.heard)), static_cast<long long>(t.cpu / kNsPerMs),
                   static_cast<long long>(t.proc_wall / kNsPerMs), t.main_thread.samples,
                   t.main_thread.running, t.main_thread.stopped, t.main_thread.blocked());
      if (t.open) {
        std::fprintf(
            log_, " open=%s%s/%u comm=%llx seq=%llu size=%d peer=%d since_ago_ms=%lld enter=%lld",
            t.open->collective ? "coll" : "p2p", t.open->polling ? "-polled" : "", t.open->op,
            static_cast<unsigned long long>(t.open->comm_id),
            static_cast<unsigned long long>(t.open->seq), t.open->comm_size, t.open->peer,
            static_cast<long long>(ms(t.open->since)), static_cast<long long>(t.open->enter));
      }
      std::fputc('\n', log_);
    }
    std::fflush(log_);
  }

  // A stall: printed (with the command that shows the holder's stacks) and kept, its times made
  // since the launch.
  void Report(StallFinding f) {
    for (std::optional<LiveOpenCall>* call : {&f.call, &f.state.inside}) {
      if (*call) (*call)->since -= start_;
    }
    f.began -= start_;
    f.found -= start_;
    if (f.kind == StallKind::kHeldUp && !f.state.silent) f.next = StackCommand(f.holder);
    if (print_) {
      std::fprintf(stderr, "%srankscope: live: stalled: %s\n", terminal_ ? "\r\033[K" : "",
                   StallFindingLine(f).c_str());
      std::fflush(stderr);
      drawn_ = false;
    }
    stalls_.push_back(std::move(f));
  }

  // gdb (py-spy for a Python program) on the rank's program, on its node; "" when its pid is
  // unknown.
  std::string StackCommand(int rank) const {
    Session ids = service_.Identities();
    int program_pid = 0;  // its latest registration's (a torchrun restart registers it again)
    char here[256] = {};
    gethostname(here, sizeof here - 1);
    for (RankData& r : ids.ranks) {
      if (r.id.rank != rank) continue;
      program_pid = r.id.program_pid;
      // A rank on this host needs no ssh to itself (srun's step on its node is kept).
      if (r.id.host == here && ids.launcher != "slurm" && ids.launcher != "srun") {
        r.id.node.clear();
        r.id.host.clear();
      }
    }
    if (program_pid <= 0) return "";
    const std::string pid = std::to_string(program_pid);
    return OnRankNode(
        ids, rank,
        IsPythonProgram(ids, rank)
            ? std::vector<std::string>{"py-spy", "dump", "--pid", pid}
            : std::vector<std::string>{"gdb", "-p", pid, "-batch", "-ex", "thread apply all bt"});
  }

  CoordinatorService& service_;
  const bool terminal_;
  const bool print_;
  const bool dormant_;
  const TimeNs start_;
  LiveCheck check_;                   // used by the thread only
  std::optional<StallCheck> stall_;   // the same; none with --stall-after 0
  std::vector<LiveFinding> found_;    // written by the thread, read after it joined
  std::vector<StallFinding> stalls_;  // the same
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;         // guarded by mu_
  bool drawn_ = false;        // written by the thread, read after it joined
  std::FILE* log_ = nullptr;  // RANKSCOPE_LIVE_LOG; the thread's until it joined
  std::thread thread_;
};

// Sets the injection library's variables (--gpu-activity, --capture-*, --dormant) for the ranks;
// returns every variable the launcher must pass to remote ranks.
std::vector<std::string> ExportRankEnvironment(const RunOptions& options) {
  std::vector<std::string> forwarded = {"RANKSCOPE_COORDINATOR", "RANKSCOPE_TOKEN",
                                        "RANKSCOPE_SESSION"};
  std::vector<std::pair<std::string, std::string>> inject_env = options.inject_env;
  if (options.dormant) inject_env.emplace_back("RANKSCOPE_DORMANT", "1");
  const ToolOptions& t = options.tools;
  if (t.any()) {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::absolute(options.out_dir, ec);
    inject_env.insert(inject_env.end(),
                      {{kNcuRanksVar, t.ncu_ranks},
                       {kNcuKernelVar, t.ncu_kernel},
                       {kNcuSetVar, t.ncu_set},
                       {kNcuCountVar, std::to_string(t.ncu_count)},
                       {kNcuSkipVar, std::to_string(t.ncu_skip)},
                       {kNsysRanksVar, t.nsys_ranks},
                       {kToolDirVar, ec ? options.out_dir : dir.lexically_normal().string()}});
  }
  for (const auto& [name, value] : inject_env) {
    if (value.empty()) continue;
    setenv(name.c_str(), value.c_str(), 1);
    forwarded.push_back(name);
  }
  return forwarded;
}

// The session's coordinator, listening: on the port asked for, else on any free one (the agents
// learn the address from their environment). Null when it cannot listen at all.
std::unique_ptr<CoordinatorServer> ListenForAgents(CoordinatorConfig* config) {
  auto started = std::make_unique<CoordinatorServer>(*config);
  Status listening = StartCoordinator(started.get());
  if (!listening.ok() && config->port != 0) {
    std::fprintf(stderr, "rankscope: %s; listening on a free port instead\n",
                 listening.message().c_str());
    config->port = 0;
    started = std::make_unique<CoordinatorServer>(*config);
    listening = StartCoordinator(started.get());
  }
  if (listening.ok()) return started;
  std::fprintf(stderr, "rankscope: %s; running the job unprofiled. No session is written.\n",
               listening.message().c_str());
  return nullptr;
}

// Where `rankscope capture` finds a dormant session (its ranks wait for it): the endpoint file
// written, or "" (not dormant, or it could not be written).
std::string AnnounceDormant(const CoordinatorConfig& config, const std::string& address) {
  Result<std::string> written = WriteEndpoint(config.session_id, address, config.token);
  if (!written.ok()) {
    std::fprintf(stderr, "rankscope: %s; `rankscope capture` cannot reach this session\n",
                 written.status().message().c_str());
    return "";
  }
  std::fprintf(stderr,
               "rankscope: dormant: ranks record nothing until `rankscope capture %s "
               "[--for SECONDS]`\n",
               config.session_id.c_str());
  return written.value();
}

// Forks and execs the launch. Stop signals (which only this thread takes: StartCoordinator) wait
// until the launcher's pid is known; the child takes the default actions before it lets them in,
// so one sent meanwhile ends the launcher at its start, and the parent passes on what comes
// after. One that came before the launch ends rankscope here (EndIfStoppedBeforeLaunch). -1 when
// fork failed (said on stderr).
pid_t Launch(const std::vector<std::string>& launch_argv, const std::string& endpoint,
             const std::string& out_dir, CoordinatorServer* server) {
  std::vector<char*> argv;
  for (const std::string& a : launch_argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const sigset_t stops = StopSignalSet();
  sigset_t old_mask;
  sigprocmask(SIG_BLOCK, &stops, &old_mask);
  if (g_signal_before_launch != 0) {
    if (!endpoint.empty()) unlink(endpoint.c_str());
    server->Shutdown();
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    EndIfStoppedBeforeLaunch(out_dir);
  }
  pid_t pid = fork();
  if (pid == 0) {
    for (int sig : kStopSignals) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "rankscope: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    std::fprintf(stderr, "rankscope: fork: %s\n", std::strerror(errno));
    return -1;
  }
  g_launcher_pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return pid;
}

// The launcher's exit code (128+N when killed by signal N), without reaping it: where the
// launched command is the rank itself (no launcher), the agent beside it reads its status from
// its zombie (agent/agent.h).
int AwaitExitUnreaped(pid_t pid) {
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  const bool signalled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  return signalled ? 128 + info.si_status : info.si_status;
}

// Agents send their final batch right after their rank exits; wait for it, but not long when the
// launcher failed (ranks killed with SIGKILL never send one). When none has registered by now,
// the launcher most likely ended before its ranks ran (killed during its start-up): an agent
// still starting registers within a second, so that is all waited for.
void DrainAgents(CoordinatorService& service, int exit_code, DurationNs drain_timeout) {
  const DurationNs drain = exit_code == 0 ? drain_timeout : drain_timeout / 3;
  if (service.WaitForAnyAgent(std::min<DurationNs>(drain, kNsPerSec))) {
    service.WaitForFinal(std::max(1, service.WorldSize()), drain);
  }
}

}  // namespace

int RunJob(const RunOptions& given) {
  CatchStopSignals();
  const std::string session_id = NewSessionId();
  RunOptions options = given;
  // The tools write into the session folder while the job runs: it is named before the launch.
  if (options.tools.any() && options.out_dir.empty()) options.out_dir = "rankscope-" + session_id;
  const std::vector<std::string> agent = {options.self_exe, "agent", "--"};
  const LaunchContext context = DetectLaunchContext(options.command);
  const char* slurm_nodes = std::getenv("SLURM_JOB_NUM_NODES");
  const int nodes = slurm_nodes != nullptr ? std::atoi(slurm_nodes) : 0;
  if (Result<LaunchPlan> plan = PlanLaunch(options.command, agent, {}, context); plan.ok()) {
    if (const std::optional<std::string> problem = ProgramProblemHere(plan.value(), nodes)) {
      // Nothing would run to profile; the launcher says why in its own words, with its own exit
      // code, as a bare launch would (mpirun: 132, where the agent could only say 127).
      std::fprintf(stderr,
                   "rankscope: the program cannot run here (%s); running the launch as given, "
                   "unprofiled, so that %s says why. No session is written.\n",
                   problem->c_str(), options.command[0].c_str());
      return RunUnprofiled(options.command);
    }
  }
  if (Status s = CheckOutputFolder(options.out_dir); !s.ok()) {
    std::fprintf(stderr, "rankscope: %s; the job was not started\n", s.message().c_str());
    return 1;
  }
  Result<std::string> token = NewSessionToken();
  if (!token.ok()) {
    std::fprintf(stderr, "rankscope: %s\n", token.status().message().c_str());
    return 1;
  }
  Result<LaunchPlan> plan =
      PlanLaunch(options.command, agent, ExportRankEnvironment(options), context);
  if (!plan.ok()) {
    std::fprintf(stderr, "rankscope: %s\n", plan.status().message().c_str());
    return 2;
  }
  CoordinatorConfig config;
  config.session_id = session_id;
  config.token = token.value();
  config.bind_address = options.bind_address;
  if (config.bind_address.empty()) {
    const bool remote = LaunchSpansHosts(plan.value(), nodes);
    config.bind_address = remote ? ReachableHostAddress() : "127.0.0.1";
  }
  config.port = options.port;
  config.raw_compute_records = options.full_trace ? 0 : options.raw_gpu_records;
  std::unique_ptr<CoordinatorServer> started = ListenForAgents(&config);
  if (started == nullptr) {
    // No session can be kept; the job still runs, as it would without rankscope.
    if (!options.out_dir.empty()) rmdir(options.out_dir.c_str());  // only if still empty
    return RunUnprofiled(options.command);
  }
  CoordinatorServer& server = *started;
  setenv("RANKSCOPE_COORDINATOR", server.address().c_str(), 1);
  setenv("RANKSCOPE_TOKEN", config.token.c_str(), 1);
  setenv("RANKSCOPE_SESSION", config.session_id.c_str(), 1);
  const std::string endpoint = options.dormant ? AnnounceDormant(config, server.address()) : "";

  KeepRecordsOnDisk(server.service(), options.out_dir, config.session_id);
  const TimeNs launched = MonotonicNow();
  const pid_t pid = Launch(plan->argv, endpoint, options.out_dir, &server);
  if (pid < 0) return 1;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  std::optional<LiveWatch> live;
  live.emplace(server.service(), terminal, !options.quiet && (terminal || options.live),
               options.dormant, launched, options.stall_after);
  const int exit_code = AwaitExitUnreaped(pid);
  Session extra;
  live->Finish(&extra);  // the status line cleared first
  CoordinatorService& service = server.service();
  DrainAgents(service, exit_code, options.drain_timeout);
  g_launcher_pid = 0;  // no signal is forwarded to a pid that may be reused once reaped
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }

  extra.command = options.command;
  extra.launcher = plan->launcher;
  extra.launcher_exit_code = exit_code;
  std::string out_dir = options.out_dir;
  if (out_dir.empty()) {
    const std::string job = service.JobId();
    out_dir = "rankscope-" + (job.empty() ? config.session_id : job);
  }
  if (!endpoint.empty()) unlink(endpoint.c_str());
  WriteSessionReport(service, std::move(extra), out_dir, options.quiet, options.full_trace);
  // What agents on this node could not remove themselves (killed before they cleaned up).
  const char* tmp = std::getenv("TMPDIR");
  RemoveAgentLeftovers(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp", config.session_id);
  server.Shutdown();
  return exit_code;
}

int RunCoordinator(const CoordinatorOptions& options) {
  CoordinatorConfig config;
  config.session_id = options.session_id.empty() ? NewSessionId() : options.session_id;
  config.bind_address =
      options.bind_address == "auto" ? ReachableHostAddress() : options.bind_address;
  config.port = options.port;
  if (options.token_file.empty()) {
    std::fprintf(stderr,
                 "rankscope coordinator: --token-file is required (the session secret "
                 "is read from it, or written to it if it does not exist)\n");
    return 2;
  }
  std::ifstream in(options.token_file);
  if (in) {
    // The secret is all that keeps others' RPCs out: it must be private and not guessable.
    struct stat st {};
    if (stat(options.token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      std::fprintf(stderr,
                   "rankscope coordinator: %s can be read by other users (mode %04o); "
                   "chmod 600 it, or name a file that does not exist to have one made\n",
                   options.token_file.c_str(), static_cast<unsigned>(st.st_mode & 07777));
      return 2;
    }
    std::getline(in, config.token);
    while (!config.token.empty() && std::isspace(static_cast<unsigned char>(config.token.back()))) {
      config.token.pop_back();
    }
    constexpr size_t kMinTokenChars = 16;
    if (!config.token.empty() && config.token.size() < kMinTokenChars) {
      std::fprintf(stderr,
                   "rankscope coordinator: the secret in %s is %zu characters; at least %zu are "
                   "needed (one made for you is 48 hex digits)\n",
                   options.token_file.c_str(), config.token.size(), kMinTokenChars);
      return 2;
    }
  } else {
    Result<std::string> token = NewSessionToken();
    if (!token.ok()) {
      std::fprintf(stderr, "rankscope coordinator: %s\n", token.status().message().c_str());
      return 1;
    }
    config.token = token.value();
    int fd = open(options.token_file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, config.token.data(), config.token.size()) !=
                      static_cast<ssize_t>(config.token.size())) {
      std::fprintf(stderr, "rankscope coordinator: cannot write %s: %s\n",
                   options.token_file.c_str(), std::strerror(errno));
      return 1;
    }
    close(fd);
  }
  if (config.token.empty()) {
    std::fprintf(stderr, "rankscope coordinator: %s is empty\n", options.token_file.c_str());
    return 2;
  }
  CoordinatorServer server(config);
  if (!options.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out_dir, ec);  // else said at the end
  }
  KeepRecordsOnDisk(server.service(), options.out_dir, config.session_id);
  if (Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "rankscope coordinator: %s\n", s.message().c_str());
    return 1;
  }
  std::string endpoint;
  if (options.endpoint) {
    Result<std::string> written = WriteEndpoint(config.session_id, server.address(), config.token);
    if (!written.ok()) {
      std::fprintf(stderr, "rankscope coordinator: %s; `rankscope capture` cannot reach it\n",
                   written.status().message().c_str());
    } else {
      endpoint = written.value();
    }
  }
  std::printf("rankscope coordinator: session %s listening on %s\n", config.session_id.c_str(),
              server.address().c_str());
  std::fflush(stdout);

  struct sigaction sa {};
  sa.sa_sigaction = ForwardToLauncher;  // only sets g_stop_requested: no launcher here
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
  const TimeNs deadline = options.timeout > 0 ? MonotonicNow() + options.timeout : 0;
  CoordinatorService& service = server.service();
  bool watched_gone = false;
  while (!g_stop_requested && (deadline == 0 || MonotonicNow() < deadline)) {
    if (options.ranks > 0 && service.WaitForFinal(options.ranks, 200 * kNsPerMs)) break;
    if (options.ranks <= 0) usleep(200'000);
    if (options.watch_pid > 0 && kill(options.watch_pid, 0) != 0 && errno == ESRCH) {
      watched_gone = true;
      break;
    }
  }
  Session extra;
  if (watched_gone) {
    extra.partial_reasons.push_back("the launcher (pid " + std::to_string(options.watch_pid) +
                                    ") exited before every rank had reported");
  }
  extra.launcher = options.launcher;
  extra.command = options.command;
  std::string out_dir =
      options.out_dir.empty() ? "rankscope-" + config.session_id : options.out_dir;
  if (!endpoint.empty()) unlink(endpoint.c_str());
  int rc = WriteSessionReport(service, std::move(extra), out_dir, options.quiet);
  server.Shutdown();
  return rc;
}

}  // namespace rankscope
