#include "launchers/sweep_cmd.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include "coordinator/report/session_writer.h"
#include "coordinator/service.h"
#include "coordinator/sweep/sweep_history.h"
#include "coordinator/sweep/sweep_report.h"
#include "coordinator/sweep/verdicts.h"
#include "launchers/launch_plan.h"
#include "launchers/launch_probe.h"
#include "launchers/session_coordinator.h"
#include "launchers/subprocess.h"
#include "launchers/sweep_plan.h"
#include "model/sweep_levels.h"

namespace rankscope {
namespace {

std::string Stamp() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return stamp;
}

// What a node's launcher log says went wrong: its first line that reads like an error, other
// than srun's own summary ("task 0: Exited with exit code 2"), else its last line of words.
std::string WhyInLog(const std::string& path) {
  static const std::regex kError("error|cannot|could not|unable|no such|not found",
                                 std::regex::icase);
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r-=*") == std::string::npos) continue;  // rules, blanks
    if (std::regex_search(line, kError) &&
        line.find("Exited with exit code") == std::string::npos) {
      return line;
    }
    last = line;
  }
  return last;
}

struct Running {
  std::string node;  // or the pair, "a-b"
  pid_t pid = 0;
  int exit_code = -1;  // -1 while running
  bool timed_out = false;
  std::string log;
};

// How many earlier sweeps of the same level a node's figures are compared with.
constexpr int kHistorySweeps = 10;

// The nodes as SLURM knows them: sinfo's list (of the partition), or the requested host list.
Result<std::vector<SweepTarget>> PlanFromSlurm(const SweepOptions& options) {
  using R = Result<std::vector<SweepTarget>>;
  std::vector<std::string> sinfo = {"sinfo", "-h", "-N", "-o", "%N|%t|%E"};
  if (!options.partition.empty()) {
    sinfo.push_back("-p");
    sinfo.push_back(options.partition);
  }
  auto [sinfo_rc, sinfo_out] = CaptureOutput(sinfo);
  if (sinfo_rc == 127 || sinfo_rc < 0) {
    return R::Error("sinfo is not installed or did not run (without SLURM: --hostfile)");
  }
  if (sinfo_rc != 0) {
    return R::Error("sinfo failed (exit " + std::to_string(sinfo_rc) + "): is slurmctld up?");
  }
  std::vector<std::string> requested;
  if (!options.nodes.empty()) {
    auto [rc, out] = CaptureOutput({"scontrol", "show", "hostnames", options.nodes});
    std::istringstream names(out);
    for (std::string n; names >> n;) requested.push_back(n);
    if (rc != 0 || requested.empty()) {
      return R::Error("'" + options.nodes + "' is not a host list scontrol understands");
    }
  }
  std::vector<SweepTarget> plan = PlanSweepNodes(requested, ParseSinfoNodes(sinfo_out));
  if (plan.empty()) {
    return R::Error(std::string("no nodes to sweep") +
                    (options.partition.empty() ? "" : " in partition " + options.partition));
  }
  return plan;
}

// How a node's sweep-node is started: one exclusive SLURM job step, or without SLURM one MPI
// process on that host (the secret travels in the environment either way).
std::vector<std::string> NodeLauncher(const SweepOptions& options, const std::string& node,
                                      const std::string& minutes, MpiFlavor mpi) {
  if (options.hostfile.empty()) {
    return {"srun",
            "-w",
            node,
            "-N1",
            "-n1",
            "--exclusive",
            "-J",
            "rankscope-sweep",
            "--time=" + minutes};
  }
  if (mpi == MpiFlavor::kHydra) return {"mpiexec", "-hosts", node, "-n", "1"};
  return {"mpirun", "--host", node, "-np", "1", "-x", "RANKSCOPE_TOKEN"};
}

// The check a node's sweep-node announced last in its log ("" before the first).
std::string CurrentCheck(const std::string& log) {
  std::ifstream in(log);
  std::string line, current;
  const std::string marker = ": running ";
  while (std::getline(in, line)) {
    if (line.rfind("rankscope sweep-node: ", 0) != 0) continue;
    const size_t at = line.find(marker);
    if (at != std::string::npos) current = line.substr(at + marker.size());
  }
  return current;
}

// Set by SIGINT/SIGTERM/SIGHUP: stop the launchers (their exclusive jobs hold whole nodes) and
// write what there is.
volatile sig_atomic_t g_sweep_interrupted = 0;

// Waits for every started launcher until `deadline` (or an interrupt), then stops the rest
// (SIGTERM to the group: srun cancels its step; SIGKILL 3 s later). On a terminal, a progress
// line.
void WaitAll(std::map<size_t, Running>* running, TimeNs deadline, const char* what, bool tty) {
  const TimeNs started = MonotonicNow();
  for (;;) {
    size_t done = 0;
    for (auto& [i, r] : *running) {
      if (r.exit_code == -1) {
        int status = 0;
        if (waitpid(r.pid, &status, WNOHANG) == r.pid) {
          r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
      }
      done += r.exit_code != -1;
    }
    if (tty) {
      // The first unfinished node and what it is doing, e.g. "n3: mem.bandwidth".
      std::string doing;
      for (const auto& [i, r] : *running) {
        if (r.exit_code != -1) continue;
        const std::string check = CurrentCheck(r.log);
        if (!check.empty()) doing = "; " + r.node + ": " + check;
        break;
      }
      std::fprintf(stderr, "\rrankscope sweep: %zu/%zu %s done, %.0f s%s\033[K", done,
                   running->size(), what, static_cast<double>(MonotonicNow() - started) / 1e9,
                   doing.c_str());
    }
    if (done == running->size()) break;
    if (MonotonicNow() > deadline || g_sweep_interrupted) {
      for (auto& [i, r] : *running) {
        if (r.exit_code != -1) continue;
        r.timed_out = true;
        kill(-r.pid, SIGTERM);
      }
      usleep(3'000'000);
      for (auto& [i, r] : *running) {
        if (r.exit_code != -1) continue;
        kill(-r.pid, SIGKILL);
        int status = 0;
        waitpid(r.pid, &status, 0);
        r.exit_code = 128 + SIGKILL;
      }
      break;
    }
    usleep(100'000);
  }
  if (tty) std::fprintf(stderr, "\n");
}

// Reads rankscope-pingpong's NCCL line, when there is one, from the rest of a pair's log.
void ParseNcclPair(std::istream* in, PairResult* out) {
  static const std::regex kBusbw(
      R"(rankscope-pingpong: nccl_busbw_Bps=([0-9.eE+-]+) gpus=([0-9]+))");
  static const std::string kError = "rankscope-pingpong: nccl_error=";
  std::string line;
  std::smatch m;
  while (std::getline(*in, line)) {
    if (std::regex_search(line, m, kBusbw)) {
      out->nccl_busbw = std::strtod(m[1].str().c_str(), nullptr);
      out->nccl_gpus = std::atoi(m[2].str().c_str());
      return;
    }
    if (const size_t at = line.find(kError); at != std::string::npos) {
      out->nccl_error = line.substr(at + kError.size());
      return;
    }
  }
}

// Reads rankscope-pingpong's line from a pair's log.
bool ParsePingPong(const std::string& log, PairResult* out) {
  static const std::regex kLine(
      R"(rankscope-pingpong: latency_s=([0-9.eE+-]+) bandwidth_Bps=([0-9.eE+-]+))");
  std::ifstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kLine)) {
      const std::string latency = m[1], bandwidth = m[2];
      char* end_latency = nullptr;
      char* end_bandwidth = nullptr;
      out->latency_s = std::strtod(latency.c_str(), &end_latency);
      out->bandwidth = std::strtod(bandwidth.c_str(), &end_bandwidth);
      if (*end_latency != '\0' || *end_bandwidth != '\0' || out->latency_s <= 0 ||
          out->bandwidth <= 0) {
        return false;
      }
      ParseNcclPair(&in, out);
      return true;
    }
  }
  return false;
}

// How a pair's rankscope-pingpong is started: a two-node SLURM step, or two MPI processes.
std::vector<std::string> PairLauncher(const SweepOptions& options, const std::string& a,
                                      const std::string& b, const std::string& minutes,
                                      MpiFlavor mpi) {
  const std::string hosts = a + "," + b;
  if (options.hostfile.empty()) {
    std::vector<std::string> argv = {"srun",
                                     "-w",
                                     hosts,
                                     "-N2",
                                     "-n2",
                                     "--ntasks-per-node=1",
                                     "--exclusive",
                                     "-J",
                                     "rankscope-sweep",
                                     "--time=" + minutes};
    if (!options.mpi.empty()) argv.push_back("--mpi=" + options.mpi);
    return argv;
  }
  if (mpi == MpiFlavor::kHydra) return {"mpiexec", "-hosts", hosts, "-n", "2", "-ppn", "1"};
  return {"mpirun", "--host", hosts, "-np", "2", "--map-by", "node"};
}

// What one sweep holds fixed: where it writes, how long a node may take, how nodes are started.
struct SweepContext {
  const SweepOptions& options;
  std::string self_exe;
  std::string out_dir;
  double limit_s = 0;
  std::string minutes;   // the SLURM step's --time
  std::string launcher;  // "srun" or "mpirun", for messages
  MpiFlavor mpi = MpiFlavor::kOpenMpi;
  bool tty = false;  // a progress line on stderr
};

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The thresholds: the defaults, or --config's.
Result<SweepThresholds> LoadThresholds(const SweepOptions& options) {
  if (options.config_file.empty()) return DefaultSweepThresholds();
  const std::optional<std::string> text = ReadWholeFile(options.config_file);
  if (!text) return Result<SweepThresholds>::Error("cannot read " + options.config_file);
  return ParseSweepThresholds(*text, options.config_file);
}

// The nodes to sweep: --hostfile's hosts, or SLURM's.
Result<std::vector<SweepTarget>> PlanSweep(const SweepOptions& options) {
  using R = Result<std::vector<SweepTarget>>;
  if (options.hostfile.empty()) return PlanFromSlurm(options);
  if (options.drain || !options.partition.empty() || !options.nodes.empty()) {
    return R::Error(
        "--hostfile is for clusters without SLURM: no --drain, --partition or --nodes with it");
  }
  const std::optional<std::string> text = ReadWholeFile(options.hostfile);
  if (!text) return R::Error("cannot read " + options.hostfile);
  std::vector<SweepTarget> plan;
  for (const std::string& host : ParseHostfile(*text)) {
    SweepTarget t;
    t.node = host;
    t.run = true;
    plan.push_back(std::move(t));
  }
  if (plan.empty()) return R::Error(options.hostfile + " lists no hosts");
  return plan;
}

// Starts one sweep-node per node to run, each logging to nodes/NODE.log.
std::map<size_t, Running> StartNodes(const SweepContext& ctx, const std::vector<SweepTarget>& plan,
                                     const std::string& address, const std::string& session_id) {
  std::map<size_t, Running> running;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].run) continue;
    std::vector<std::string> argv = NodeLauncher(ctx.options, plan[i].node, ctx.minutes, ctx.mpi);
    for (const std::string& word : std::vector<std::string>{
             ctx.self_exe, "sweep-node", "--coordinator", address, "--session", session_id,
             "--index", std::to_string(i), "--count", std::to_string(plan.size()), "--level",
             ctx.options.level, "--node", plan[i].node}) {
      argv.push_back(word);
    }
    for (const std::string& path : ctx.options.scratch) {
      argv.push_back("--scratch");
      argv.push_back(path);
    }
    Running r;
    r.node = plan[i].node;
    r.log = ctx.out_dir + "/nodes/" + plan[i].node + ".log";
    r.pid = StartLogged(argv, r.log);
    if (r.pid < 0) r.exit_code = -2;
    running[i] = r;
  }
  return running;
}

// Each started node's figures, with their clocks as the coordinator fitted them, or why there are
// none. input_of_plan maps a plan index to its input (SIZE_MAX: not run).
std::vector<SweepNodeInput> CollectNodeInputs(const SweepContext& ctx, const Session& session,
                                              const std::vector<SweepTarget>& plan,
                                              const std::map<size_t, Running>& running,
                                              std::vector<size_t>* input_of_plan) {
  const double anchor = static_cast<double>(RealtimeMinusMonotonic()) / 1e9;
  std::vector<SweepNodeInput> inputs;
  input_of_plan->assign(plan.size(), SIZE_MAX);
  for (const auto& [i, r] : running) {
    SweepNodeInput in;
    in.node = plan[i].node;
    const RankData* rank = session.FindRank(static_cast<int>(i));
    if (rank != nullptr && rank->finished && !rank->sweep.empty()) {
      in.answered = true;
      in.results = rank->sweep;
      for (SweepCheckResult& c :
           ClockChecks(rank->sweep, FitClockModel(rank->clock_samples), anchor)) {
        in.results.push_back(std::move(c));
      }
    } else if (r.timed_out) {
      in.problem = "no result within " + std::to_string(static_cast<int>(ctx.limit_s)) +
                   " s (node busy, or a check stuck); srun stopped";
    } else {
      const std::string last = WhyInLog(r.log);
      in.problem =
          ctx.launcher + " exit " + std::to_string(r.exit_code) + (last.empty() ? "" : ": " + last);
    }
    (*input_of_plan)[i] = inputs.size();
    inputs.push_back(std::move(in));
  }
  return inputs;
}

// One round of pairs, run at once: each pair's ping-pong result, or why there is none.
std::vector<PairResult> RunPairRound(const SweepContext& ctx,
                                     const std::vector<std::pair<size_t, size_t>>& round,
                                     const std::vector<SweepNodeInput>& inputs,
                                     const std::vector<size_t>& answered,
                                     const std::vector<std::string>& pingpong_args) {
  std::map<size_t, Running> jobs;
  std::vector<PairResult> round_pairs;
  for (size_t p = 0; p < round.size(); ++p) {
    PairResult pr;
    pr.a = inputs[answered[round[p].first]].node;
    pr.b = inputs[answered[round[p].second]].node;
    std::vector<std::string> argv = PairLauncher(ctx.options, pr.a, pr.b, ctx.minutes, ctx.mpi);
    argv.insert(argv.end(), pingpong_args.begin(), pingpong_args.end());
    Running r;
    r.node = pr.a + "-" + pr.b;
    r.log = ctx.out_dir + "/nodes/pair-" + pr.a + "-" + pr.b + ".log";
    r.pid = StartLogged(argv, r.log);
    if (r.pid < 0) r.exit_code = -2;
    jobs[p] = r;
    round_pairs.push_back(pr);
  }
  WaitAll(&jobs, MonotonicNow() + static_cast<DurationNs>(ctx.limit_s * 1e9), "pairs", ctx.tty);
  for (auto& [p, r] : jobs) {
    PairResult& pr = round_pairs[p];
    if (ParsePingPong(r.log, &pr)) continue;
    const std::string why = WhyInLog(r.log);
    pr.error = r.timed_out
                   ? "no result within " + std::to_string(static_cast<int>(ctx.limit_s)) + " s"
                   : ctx.launcher + " exit " + std::to_string(r.exit_code) +
                         (why.empty() ? "" : ": " + why);
  }
  return round_pairs;
}

// The fabric: MPI ping-pong (and NCCL across the pair's GPUs, when they have some) between ring
// neighbours among the nodes that answered; each node's pair checks join its results.
void RunPairs(const SweepContext& ctx, const SweepLevel& level, std::vector<SweepNodeInput>* inputs,
              std::vector<std::string>* notes) {
  std::vector<size_t> answered;
  for (size_t k = 0; k < inputs->size(); ++k) {
    if ((*inputs)[k].answered) answered.push_back(k);
  }
  if (g_sweep_interrupted || answered.size() < 2) return;
  const std::string pingpong =
      ctx.self_exe.substr(0, ctx.self_exe.rfind('/') + 1) + "rankscope-pingpong";
  if (access(pingpong.c_str(), X_OK) != 0) {
    notes->push_back("MPI ping-pong not run: " + pingpong + " is missing");
    return;
  }
  const std::vector<std::string> args = {pingpong, "--batches", std::to_string(level.pair_batches),
                                         "--nccl-bytes", std::to_string(level.nccl_bytes)};
  std::vector<PairResult> pairs;
  for (const auto& round : PairRounds(answered.size())) {
    if (g_sweep_interrupted) break;
    for (PairResult& pr : RunPairRound(ctx, round, *inputs, answered, args)) {
      pairs.push_back(std::move(pr));
    }
  }
  if (std::all_of(pairs.begin(), pairs.end(),
                  [](const PairResult& p) { return !p.error.empty(); })) {
    notes->push_back("every MPI pair failed: if the nodes are fine, the MPI launch is not (" +
                     std::string(ctx.options.hostfile.empty() ? "srun's MPI plugin: --mpi TYPE"
                                                              : "mpirun on these hosts") +
                     "; nodes/pair-*.log)");
  }
  for (size_t k : answered) {
    for (SweepCheckResult& c : PairChecksFor((*inputs)[k].node, pairs)) {
      (*inputs)[k].results.push_back(std::move(c));
    }
  }
}

// One verdict per planned node, in the plan's order: judged where it ran, else why it did not.
std::vector<NodeVerdict> VerdictsInPlanOrder(const std::vector<SweepTarget>& plan,
                                             const std::vector<SweepNodeInput>& inputs,
                                             const std::vector<size_t>& input_of_plan,
                                             const SweepThresholds& thresholds) {
  const std::vector<NodeVerdict> judged = JudgeSweep(inputs, thresholds);
  std::vector<NodeVerdict> verdicts;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (input_of_plan[i] != SIZE_MAX) {
      verdicts.push_back(judged[input_of_plan[i]]);
      continue;
    }
    NodeVerdict v;
    v.node = plan[i].node;
    v.status = plan[i].fail ? SweepStatus::kFail : SweepStatus::kWarn;
    v.problem = plan[i].why_not;
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

// Each node against its own past; returns the history this sweep joins (null: none, with a note).
std::unique_ptr<SweepHistory> CompareWithHistory(const SweepOptions& options,
                                                 const SweepThresholds& thresholds,
                                                 std::vector<NodeVerdict>* verdicts,
                                                 SweepRunInfo* run) {
  if (options.no_history) return nullptr;
  const std::string path = options.baseline.empty() ? DefaultSweepHistoryPath() : options.baseline;
  Result<std::unique_ptr<SweepHistory>> opened = SweepHistory::Open(path);
  Result<SweepPast> past = opened.ok() ? opened.value()->Past(options.level, kHistorySweeps)
                                       : Result<SweepPast>::Error(opened.status().message());
  if (!past.ok()) {
    run->notes.push_back("history " + past.status().message() +
                         "; this sweep is neither compared with the past nor recorded");
    return nullptr;
  }
  ApplyTrends(past.value(), thresholds, verdicts);
  return std::move(opened).value();
}

// --drain: nodes whose checks failed and that nobody else has drained meanwhile. A node that did
// not answer is not drained: a missing or broken rankscope there is as likely as a fault.
void DrainFailed(const std::vector<SweepTarget>& plan, const std::vector<NodeVerdict>& verdicts,
                 SweepRunInfo* run) {
  for (size_t i = 0; i < plan.size(); ++i) {
    const NodeVerdict& v = verdicts[i];
    if (v.status != SweepStatus::kFail || !plan[i].run) continue;
    const std::optional<std::string> reason = DrainReason(v);
    if (!reason) {
      run->notes.push_back(v.node + " not drained: what failed there did not run (see nodes/" +
                           v.node + "*.log)");
      continue;
    }
    auto [rc, now] = CaptureOutput({"sinfo", "-h", "-N", "-n", v.node, "-o", "%N|%t|%E"});
    const std::vector<SinfoNode> state = ParseSinfoNodes(now);
    const std::vector<SweepTarget> again = PlanSweepNodes({v.node}, state);
    if (rc != 0 || again.empty() || again[0].drained) {
      run->notes.push_back(v.node + " not drained: its state changed during the sweep");
      continue;
    }
    auto [drain_rc, drain_out] = CaptureOutput(DrainCommand(v.node, *reason));
    run->notes.push_back(drain_rc == 0 ? "drained " + v.node + ": rankscope: " + *reason
                                       : "could not drain " + v.node + " (scontrol exit " +
                                             std::to_string(drain_rc) + ")");
  }
}

// report.txt .json .html, junit.xml and the Prometheus file (also at --prom-file); prints the
// text unless quiet. False when some could not be written.
bool WriteSweepOutputs(const SweepOptions& options, const std::string& out_dir,
                       const SweepRunInfo& run, const std::vector<NodeVerdict>& verdicts) {
  const std::string text = SweepReportText(run, verdicts);
  const std::string prom = SweepPrometheus(run, verdicts);
  bool written = true;
  for (const auto& [path, content] : std::vector<std::pair<std::string, std::string>>{
           {out_dir + "/report.txt", text},
           {out_dir + "/report.json", SweepReportJson(run, verdicts)},
           {out_dir + "/report.html", SweepReportHtml(run, verdicts)},
           {out_dir + "/junit.xml", SweepJUnit(run, verdicts)},
           {out_dir + "/rankscope_sweep.prom", prom},
           {options.prom_file, prom}}) {
    if (path.empty()) continue;  // no --prom-file
    if (Status s = WriteFileAtomically(path, content); !s.ok()) {
      std::fprintf(stderr, "rankscope sweep: %s\n", s.message().c_str());
      written = false;
    }
  }
  if (!options.quiet) std::fputs(text.c_str(), stdout);
  if (!written) {
    std::fprintf(stderr, "rankscope sweep: could not write every output into %s/\n",
                 out_dir.c_str());
  } else if (!options.quiet) {
    std::printf(
        "rankscope sweep: written to %s/ (report.txt .json .html, junit.xml, "
        "rankscope_sweep.prom, nodes/*.log)\n",
        out_dir.c_str());
  }
  return written;
}

void StopOnSignals() {
  struct sigaction on_stop {};
  on_stop.sa_handler = [](int) { g_sweep_interrupted = 1; };
  sigemptyset(&on_stop.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &on_stop, nullptr);
}

int SweepError(const std::string& message, int code) {
  std::fprintf(stderr, "rankscope sweep: %s\n", message.c_str());
  return code;
}

}  // namespace

int RunSweep(const SweepOptions& options, const std::string& self_exe) {
  const SweepLevel* level = FindSweepLevel(options.level);
  if (level == nullptr) {
    return SweepError("unknown level '" + options.level + "' (quick, standard, deep)", 2);
  }
  Result<SweepThresholds> thresholds = LoadThresholds(options);
  if (!thresholds.ok()) return SweepError(thresholds.status().message(), 2);
  Result<std::vector<SweepTarget>> planned = PlanSweep(options);
  if (!planned.ok()) return SweepError(planned.status().message(), 2);
  const std::vector<SweepTarget>& plan = planned.value();

  // A coordinator of its own; the nodes get its address on the command line and the secret
  // through srun's environment.
  const std::string stamp = Stamp();
  const std::string session_id = "sweep-" + stamp + "-" + std::to_string(getpid());
  Result<std::unique_ptr<CoordinatorServer>> coordinator =
      StartSessionCoordinator(session_id, options.bind_address);
  if (!coordinator.ok()) return SweepError(coordinator.status().message(), 1);
  CoordinatorServer& server = *coordinator.value();

  const std::string out_dir =
      options.out_dir.empty() ? "rankscope-sweep-" + stamp : options.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(out_dir + "/nodes", ec);
  if (ec) return SweepError("cannot create " + out_dir + ": " + ec.message(), 1);
  const double limit_s = options.node_limit_s > 0 ? options.node_limit_s : level->node_limit_s;
  const SweepContext ctx{
      .options = options,
      .self_exe = self_exe,
      .out_dir = out_dir,
      .limit_s = limit_s,
      .minutes = std::to_string(static_cast<int>(std::ceil(limit_s / 60)) + 1),
      .launcher = options.hostfile.empty() ? "srun" : "mpirun",
      .mpi = options.hostfile.empty() ? MpiFlavor::kOpenMpi : DetectLaunchContext({"mpirun"}).mpi,
      .tty = isatty(STDERR_FILENO) == 1 && !options.quiet};

  const TimeNs started = MonotonicNow();
  const double started_unix = static_cast<double>(std::time(nullptr));
  std::map<size_t, Running> running = StartNodes(ctx, plan, server.address(), session_id);
  StopOnSignals();
  WaitAll(&running, started + static_cast<DurationNs>(ctx.limit_s * 1e9), "nodes", ctx.tty);

  std::vector<std::string> notes;
  std::vector<size_t> input_of_plan;
  std::vector<SweepNodeInput> inputs =
      CollectNodeInputs(ctx, server.service().Snapshot(), plan, running, &input_of_plan);
  RunPairs(ctx, *level, &inputs, &notes);
  if (g_sweep_interrupted) {
    notes.push_back(
        "interrupted: the launchers still running were stopped (their nodes did not "
        "answer); nothing was drained");
  }
  std::vector<NodeVerdict> verdicts =
      VerdictsInPlanOrder(plan, inputs, input_of_plan, thresholds.value());
  server.Shutdown();

  SweepRunInfo run;
  run.id = session_id;
  run.level = options.level;
  run.started_unix_s = started_unix;
  run.duration_s = static_cast<double>(MonotonicNow() - started) / 1e9;
  run.notes = notes;
  std::unique_ptr<SweepHistory> history =
      CompareWithHistory(options, thresholds.value(), &verdicts, &run);
  if (options.drain && !g_sweep_interrupted) DrainFailed(plan, verdicts, &run);
  if (history != nullptr) {
    if (Status s = history->Record(run, verdicts); !s.ok()) {
      run.notes.push_back("history: this sweep was not recorded: " + s.message());
    }
  }
  const bool written = WriteSweepOutputs(options, ctx.out_dir, run, verdicts);
  const int code = SweepExitCode(verdicts);
  return written ? code : std::max(code, 2);
}

}  // namespace rankscope
