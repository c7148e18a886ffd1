// `rankscope attach` and `attach-node` (launchers/attach_run.h): the parts that start a
// coordinator, sample from outside and write the session folder.
#include "launchers/attach_run.h"

#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "agent/outside_sampler.h"
#include "coordinator/service.h"
#include "core/subprocess.h"
#include "launchers/capture_cmd.h"
#include "launchers/job_agents.h"
#include "launchers/session_coordinator.h"
#include "proto/protocol.h"

namespace rankscope {
namespace {

volatile sig_atomic_t g_attach_stop = 0;

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

// Samples the job's ranks on this node from outside, for a job without rankscope agents.
int SampleFromOutside(const AttachOptions& options, const std::string& node) {
  const char* coordinator = std::getenv("RANKSCOPE_COORDINATOR");
  const char* token = std::getenv("RANKSCOPE_TOKEN");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (coordinator == nullptr || token == nullptr) {
    std::printf(
        "node %s: no rankscope agent of job %s: it was not launched with `rankscope run`; "
        "relaunch it as `rankscope run --dormant -- srun ...` to attach to it\n",
        node.c_str(), options.job_id.c_str());
    return 3;
  }
  const std::vector<JobRank> ranks =
      FindJobRanks(options.job_id, step != nullptr ? step : "", node, getuid());
  if (ranks.empty()) {
    std::printf("node %s: no process of job %s with rank variables on this node\n", node.c_str(),
                options.job_id.c_str());
    return 3;
  }
  std::string list;
  for (const JobRank& r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r.id.rank);
  std::printf(
      "node %s: job %s was not launched with rankscope run; sampling rank(s) %s from outside "
      "for %g s\n",
      node.c_str(), options.job_id.c_str(), list.c_str(), options.for_s);
  std::fflush(stdout);
  OutsideSamplingOptions sampling;
  sampling.coordinator = coordinator;
  sampling.token = token;
  const char* session = std::getenv("RANKSCOPE_SESSION");
  sampling.session_id = session != nullptr ? session : "";
  sampling.node = node;
  sampling.window = static_cast<DurationNs>(options.for_s * kNsPerSec);
  if (const char* nvml = std::getenv("RANKSCOPE_NVML");
      nvml != nullptr && std::string(nvml) == "0") {
    sampling.nvml_library.clear();
  } else if (const char* library = std::getenv("RANKSCOPE_NVML_LIBRARY"); library != nullptr) {
    sampling.nvml_library = library;
  }
  sampling.stop = &g_attach_stop;  // StopOnSignals: the job ended, or the attach was stopped
  const int sent = SampleRanksFromOutside(ranks, sampling);
  std::printf("node %s: sampled %d rank(s) from outside\n", node.c_str(), sent);
  return sent > 0 ? 0 : 1;
}
// SLURM stops this step with SIGTERM when the job ends (srun passes on a Ctrl-C too): the window
// ends there, and what was started is still stopped and sent.
void StopOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_attach_stop = 1; };
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int RunAttachNode(const AttachOptions& options) {
  StopOnSignals();
  const std::string node = NodeName();
  const char* step = std::getenv("SLURM_STEP_ID");
  const std::vector<AgentEndpoint> agents =
      FindJobAgents(options.job_id, getuid(), "/proc", step != nullptr ? step : "");
  if (agents.empty()) return SampleFromOutside(options, node);
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
  // The window, in slices, so a stop request ends it early: the capture is always stopped.
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.for_s);
  while (std::chrono::steady_clock::now() < end && g_attach_stop == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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
  auto [squeue_rc, out] = CaptureOutput({"squeue", "-h", "-j", job, "-o", "%T %u %D"});
  if (squeue_rc == 127 || squeue_rc < 0) {
    std::fprintf(stderr, "rankscope attach: squeue is not installed or did not run\n");
    return 2;
  }
  std::istringstream fields(out);
  std::string state, user;
  int nodes = 0;
  if (squeue_rc != 0 || !(fields >> state >> user >> nodes)) {
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
  // A coordinator of its own, for ranks sampled from outside (agents of a rankscope run report
  // to theirs). Its address and secret reach attach-node through srun's environment.
  const std::string session_id = "attach-" + job + "-" + std::to_string(getpid());
  Result<std::unique_ptr<CoordinatorServer>> started =
      StartSessionCoordinator(session_id, options.bind_address);
  if (!started.ok()) {
    std::fprintf(stderr, "rankscope attach: %s\n", started.status().message().c_str());
    return 1;
  }
  CoordinatorServer& server = *started.value();
  setenv("RANKSCOPE_COORDINATOR", server.address().c_str(), 1);
  setenv("RANKSCOPE_SESSION", session_id.c_str(), 1);
  setenv("RANKSCOPE_ATTACH_NODE", "1", 1);  // not an agent, for a second attach to the same job

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
  auto [src, srun_out] = CaptureOutput(argv);
  std::fputs(srun_out.c_str(), stdout);
  std::fflush(stdout);
  const bool captured = srun_out.find("capture started") != std::string::npos;
  CoordinatorService& service = server.service();
  const int sampled = service.RankCount();
  int result = 0;
  if (sampled > 0) {
    // attach-node returns after its agents' final batches were acknowledged.
    service.WaitForFinal(sampled, 5 * kNsPerSec);
    Session extra;
    extra.command = {"rankscope", "attach", job, "--for", for_text};
    extra.launcher = "attach";
    extra.launcher_exit_code = src;
    const std::string out_dir =
        options.out_dir.empty() ? "rankscope-attach-" + job : options.out_dir;
    result = WriteSessionReport(service, std::move(extra), out_dir, options.quiet);
  } else if (!captured) {
    std::fprintf(stderr, "rankscope attach: nothing to capture in job %s (srun exit %d)\n",
                 job.c_str(), src);
    result = 3;
  }
  if (captured) {
    std::fprintf(stderr,
                 "rankscope attach: capture done; the report comes from the job's own coordinator "
                 "(`rankscope run` or `srun --rankscope`) when it ends\n");
  }
  server.Shutdown();
  return result;
}

}  // namespace rankscope
