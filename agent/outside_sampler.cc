#include "agent/outside_sampler.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "agent/nccl_collector.h"
#include "agent/nvml_sampler.h"
#include "agent/proc_sampler.h"
#include "agent/uplink.h"
#include "core/format.h"
#include "proto/convert.h"

namespace rankscope {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Get(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

struct Candidate {
  JobRank rank;
  pid_t ppid = 0;
  std::string step;
};

// What was out of reach, and how to see it next time.
std::string OutsideNotice(const JobRank& r, bool nccl_log) {
  std::string text =
      "sampled from outside by rankscope attach (the job was not launched with rankscope run): "
      "CPU, I/O and block-I/O delay of the rank's processes over the window, the time their "
      "threads waited for a CPU, their context switches and their cgroup's CPU throttling";
  text += nccl_log ? ", and the NCCL log it writes" : "";
  text +=
      "; not seen: MPI and NCCL call timings, NVTX ranges, CUDA kernels (so no wait states or "
      "stragglers)";
  if (!nccl_log && Get(r.env, "NCCL_DEBUG_FILE").empty()) {
    text += ", NCCL communicators (the job does not log NCCL to a file)";
  }
  text +=
      ". To see them, launch it as `rankscope run --dormant -- srun ...` and attach again: "
      "dormant ranks record nothing until attached";
  return text;
}

}  // namespace

std::vector<JobRank> FindJobRanks(const std::string& job_id, const std::string& own_step,
                                  const std::string& node, uid_t uid,
                                  const std::string& proc_root) {
  std::vector<Candidate> found;
  for (ProcessEnviron& p : ProcessEnvirons(uid, proc_root)) {
    EnvMap& env = p.env;
    const std::string step = Get(env, "SLURM_STEP_ID");
    if (Get(env, "SLURM_JOB_ID") != job_id || step.empty() || step == own_step) continue;
    if (Get(env, "RANKSCOPE_ATTACH_NODE") == "1") continue;  // another attach's task
    const std::string their_node = Get(env, "SLURMD_NODENAME");
    if (!their_node.empty() && !node.empty() && their_node != node) continue;
    // Kernel threads and zombies have no environment; a rank needs rank variables.
    AgentIdentity id = DetectIdentity(env, node);
    if (id.launcher == "none") continue;
    Candidate c;
    c.rank.pid = p.pid;
    c.rank.id = std::move(id);
    c.rank.env = std::move(env);
    c.rank.command = SplitNul(ReadAll(p.dir + "/cmdline"));
    c.step = step;
    // The parent: field 4 of /proc/PID/stat, after the parenthesised command.
    const std::string stat_text = ReadAll(p.dir + "/stat");
    const size_t close = stat_text.rfind(')');
    if (close != std::string::npos) {
      std::istringstream fields(stat_text.substr(close + 1));
      std::string state;
      fields >> state >> c.ppid;
    }
    found.push_back(std::move(c));
  }
  // Steps where a launcher started workers with their own rank variables: the workers.
  std::set<std::string> launched_steps;
  for (const Candidate& c : found) {
    if (c.rank.id.launcher != "slurm") launched_steps.insert(c.step);
  }
  std::map<pid_t, const Candidate*> by_pid;
  for (const Candidate& c : found) by_pid[c.rank.pid] = &c;
  auto key = [](const Candidate& c) {
    return std::make_tuple(c.step, c.rank.id.launcher, c.rank.id.rank);
  };
  std::vector<JobRank> out;
  for (const Candidate& c : found) {
    if (c.rank.id.launcher == "slurm" && launched_steps.count(c.step) > 0) continue;
    auto parent = by_pid.find(c.ppid);
    if (parent != by_pid.end() && key(*parent->second) == key(c)) continue;  // a child of a rank
    out.push_back(c.rank);
  }
  std::sort(out.begin(), out.end(),
            [](const JobRank& a, const JobRank& b) { return a.id.rank < b.id.rank; });
  return out;
}

int SampleRanksFromOutside(const std::vector<JobRank>& ranks,
                           const OutsideSamplingOptions& options) {
  struct Sampling {
    std::unique_ptr<Uplink> uplink;
    std::unique_ptr<ProcSampler> proc;
    std::unique_ptr<NcclCollector> nccl;
  };
  std::vector<Sampling> all;
  std::unique_ptr<NvmlSampler> nvml;
  if (!options.nvml_library.empty() && !ranks.empty()) {
    nvml = std::make_unique<NvmlSampler>(options.nvml_library, 0, options.window);
    nvml->Start();
  }
  for (const JobRank& r : ranks) {
    AgentIdentity id = r.id;
    if (!options.node.empty()) id.node_name = options.node;
    // "attach" marks ranks seen from outside (Session::SampledFromOutsideOnly).
    id.launcher = kOutsideLauncher;
    v1::Identity identity =
        ToProto(RankIdentityOf(id, options.session_id, r.command), options.session_id);
    UplinkOptions up;
    up.address = options.coordinator;
    up.token = options.token;
    Sampling s;
    s.uplink = std::make_unique<Uplink>(up, identity);
    s.uplink->SetProgramPid(r.pid);
    s.uplink->Start();
    s.proc = std::make_unique<ProcSampler>(r.pid, kNsPerSec);
    s.proc->CountFromNow();
    s.proc->Start();
    if (!Get(r.env, "NCCL_DEBUG_FILE").empty()) {
      // A relative NCCL_DEBUG_FILE is relative to the rank's working directory, not ours.
      EnvMap env = r.env;
      std::string& file = env["NCCL_DEBUG_FILE"];
      if (file.front() != '/') {
        char cwd[4096] = {};
        const std::string link = "/proc/" + std::to_string(r.pid) + "/cwd";
        if (readlink(link.c_str(), cwd, sizeof(cwd) - 1) > 0) file = std::string(cwd) + "/" + file;
      }
      NcclPlan plan = PlanNcclEnvironment(env, id, "/nonexistent", options.session_id, "/tmp");
      plan.topology_file.clear();  // only what the job itself writes
      s.nccl = std::make_unique<NcclCollector>(std::move(plan));
      s.nccl->Start(r.pid);
    }
    all.push_back(std::move(s));
  }
  // The window, or less: the ranks may all exit (the job ends) or SLURM may stop this step.
  const TimeNs start = MonotonicNow();
  std::string cut_short;
  while (MonotonicNow() - start < options.window) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (options.stop != nullptr && *options.stop != 0) {
      cut_short = "the window was cut short after " + FormatDuration(MonotonicNow() - start) +
                  " (the attach step was stopped, e.g. because the job ended)";
      break;
    }
    if (std::none_of(ranks.begin(), ranks.end(),
                     [](const JobRank& r) { return kill(r.pid, 0) == 0 || errno == EPERM; })) {
      cut_short = "the window was cut short after " + FormatDuration(MonotonicNow() - start) +
                  ": the rank's processes exited (the job ended)";
      break;
    }
  }
  int delivered = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    Sampling& s = all[i];
    bool nccl_log = false;
    if (s.nccl) {
      if (std::optional<v1::NcclSummary> summary = s.nccl->Finish()) {
        s.uplink->SetNccl(std::move(*summary));
        nccl_log = true;
      }
    }
    s.uplink->SetProcessStats(ToProto(s.proc->Finish()));
    if (i == 0 && nvml) s.uplink->SetNvml(nvml->Finish());
    s.uplink->AddNotice(OutsideNotice(ranks[i], nccl_log));
    if (!cut_short.empty()) s.uplink->AddNotice(cut_short);
    s.uplink->FinishWithoutStatus();
    if (s.uplink->registered()) ++delivered;
  }
  return delivered;
}

}  // namespace rankscope
