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
#include <regex>
#include <sstream>

#include "coordinator/report/session_writer.h"
#include "coordinator/service.h"
#include "coordinator/sweep/sweep_history.h"
#include "coordinator/sweep/sweep_report.h"
#include "coordinator/sweep/verdicts.h"
#include "launchers/launch_plan.h"
#include "launchers/launch_probe.h"
#include "launchers/run.h"
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

}  // namespace

int RunSweep(const SweepOptions& options, const std::string& self_exe) {
  const SweepLevel* level = FindSweepLevel(options.level);
  if (level == nullptr) {
    std::fprintf(stderr, "rankscope sweep: unknown level '%s' (quick, standard, deep)\n",
                 options.level.c_str());
    return 2;
  }
  SweepThresholds thresholds = DefaultSweepThresholds();
  if (!options.config_file.empty()) {
    std::ifstream in(options.config_file);
    if (!in) {
      std::fprintf(stderr, "rankscope sweep: cannot read %s\n", options.config_file.c_str());
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    Result<SweepThresholds> parsed = ParseSweepThresholds(text.str(), options.config_file);
    if (!parsed.ok()) {
      std::fprintf(stderr, "rankscope sweep: %s\n", parsed.status().message().c_str());
      return 2;
    }
    thresholds = parsed.value();
  }

  std::vector<SweepTarget> plan;
  if (!options.hostfile.empty()) {
    if (options.drain || !options.partition.empty() || !options.nodes.empty()) {
      std::fprintf(stderr,
                   "rankscope sweep: --hostfile is for clusters without SLURM: no --drain, "
                   "--partition or --nodes with it\n");
      return 2;
    }
    std::ifstream in(options.hostfile);
    if (!in) {
      std::fprintf(stderr, "rankscope sweep: cannot read %s\n", options.hostfile.c_str());
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& host : ParseHostfile(text.str())) {
      SweepTarget t;
      t.node = host;
      t.run = true;
      plan.push_back(std::move(t));
    }
    if (plan.empty()) {
      std::fprintf(stderr, "rankscope sweep: %s lists no hosts\n", options.hostfile.c_str());
      return 2;
    }
  } else {
    Result<std::vector<SweepTarget>> slurm = PlanFromSlurm(options);
    if (!slurm.ok()) {
      std::fprintf(stderr, "rankscope sweep: %s\n", slurm.status().message().c_str());
      return 2;
    }
    plan = std::move(slurm).value();
  }

  // A coordinator of its own; the nodes get its address on the command line and the secret
  // through srun's environment.
  Result<std::string> token = NewSessionToken();
  if (!token.ok()) {
    std::fprintf(stderr, "rankscope sweep: %s\n", token.status().message().c_str());
    return 1;
  }
  const std::string stamp = Stamp();
  CoordinatorConfig config;
  config.session_id = "sweep-" + stamp + "-" + std::to_string(getpid());
  config.token = token.value();
  config.bind_address =
      options.bind_address.empty() ? ReachableHostAddress() : options.bind_address;
  CoordinatorServer server(config);
  if (Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "rankscope sweep: %s\n", s.message().c_str());
    return 1;
  }
  setenv("RANKSCOPE_TOKEN", config.token.c_str(), 1);
  const std::string out_dir =
      options.out_dir.empty() ? "rankscope-sweep-" + stamp : options.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(out_dir + "/nodes", ec);
  if (ec) {
    std::fprintf(stderr, "rankscope sweep: cannot create %s: %s\n", out_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }

  const double limit_s = options.node_limit_s > 0 ? options.node_limit_s : level->node_limit_s;
  const std::string minutes = std::to_string(static_cast<int>(std::ceil(limit_s / 60)) + 1);
  const TimeNs started = MonotonicNow();
  const double started_unix = static_cast<double>(std::time(nullptr));
  const MpiFlavor mpi =
      options.hostfile.empty() ? MpiFlavor::kOpenMpi : DetectLaunchContext({"mpirun"}).mpi;
  std::map<size_t, Running> running;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].run) continue;
    std::vector<std::string> argv = NodeLauncher(options, plan[i].node, minutes, mpi);
    for (const std::string& word : std::vector<std::string>{
             self_exe, "sweep-node", "--coordinator", server.address(), "--session",
             config.session_id, "--index", std::to_string(i), "--count",
             std::to_string(plan.size()), "--level", options.level, "--node", plan[i].node}) {
      argv.push_back(word);
    }
    for (const std::string& path : options.scratch) {
      argv.push_back("--scratch");
      argv.push_back(path);
    }
    Running r;
    r.node = plan[i].node;
    r.log = out_dir + "/nodes/" + plan[i].node + ".log";
    r.pid = StartLogged(argv, r.log);
    if (r.pid < 0) r.exit_code = -2;
    running[i] = r;
  }

  struct sigaction on_stop {};
  on_stop.sa_handler = [](int) { g_sweep_interrupted = 1; };
  sigemptyset(&on_stop.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &on_stop, nullptr);

  // Wait for every node, with a progress line on a terminal.
  const bool tty = isatty(STDERR_FILENO) == 1 && !options.quiet;
  WaitAll(&running, started + static_cast<DurationNs>(limit_s * 1e9), "nodes", tty);

  // The nodes' figures, with their clocks as the coordinator fitted them.
  CoordinatorService& service = server.service();
  const Session session = service.Snapshot();
  const double anchor = static_cast<double>(RealtimeMinusMonotonic()) / 1e9;
  const std::string launcher = options.hostfile.empty() ? "srun" : "mpirun";
  std::vector<std::string> notes;
  std::vector<SweepNodeInput> inputs;
  std::vector<size_t> input_of_plan(plan.size(), SIZE_MAX);
  for (auto& [i, r] : running) {
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
      in.problem = "no result within " + std::to_string(static_cast<int>(limit_s)) +
                   " s (node busy, or a check stuck); srun stopped";
    } else {
      const std::string last = WhyInLog(r.log);
      in.problem =
          launcher + " exit " + std::to_string(r.exit_code) + (last.empty() ? "" : ": " + last);
    }
    input_of_plan[i] = inputs.size();
    inputs.push_back(std::move(in));
  }
  // The fabric: MPI ping-pong between ring neighbours among the nodes that answered.
  std::vector<size_t> answered;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].answered) answered.push_back(k);
  }
  std::vector<PairResult> pairs;
  if (g_sweep_interrupted) answered.clear();
  const std::string pingpong = self_exe.substr(0, self_exe.rfind('/') + 1) + "rankscope-pingpong";
  if (answered.size() >= 2 && access(pingpong.c_str(), X_OK) != 0) {
    notes.push_back("MPI ping-pong not run: " + pingpong + " is missing");
  } else if (answered.size() >= 2) {
    const std::string batches = std::to_string(level->pair_batches);
    // NCCL across the pair's GPUs, when they have some: per all-reduce, as sweep-node's.
    const std::string nccl_bytes = std::to_string(level->nccl_bytes);
    for (const auto& round : PairRounds(answered.size())) {
      if (g_sweep_interrupted) break;
      std::map<size_t, Running> jobs;
      std::vector<PairResult> round_pairs;
      for (size_t p = 0; p < round.size(); ++p) {
        PairResult pr;
        pr.a = inputs[answered[round[p].first]].node;
        pr.b = inputs[answered[round[p].second]].node;
        std::vector<std::string> argv = PairLauncher(options, pr.a, pr.b, minutes, mpi);
        argv.insert(argv.end(), {pingpong, "--batches", batches, "--nccl-bytes", nccl_bytes});
        Running r;
        r.node = pr.a + "-" + pr.b;
        r.log = out_dir + "/nodes/pair-" + pr.a + "-" + pr.b + ".log";
        r.pid = StartLogged(argv, r.log);
        if (r.pid < 0) r.exit_code = -2;
        jobs[p] = r;
        round_pairs.push_back(pr);
      }
      WaitAll(&jobs, MonotonicNow() + static_cast<DurationNs>(limit_s * 1e9), "pairs", tty);
      for (auto& [p, r] : jobs) {
        PairResult& pr = round_pairs[p];
        if (!ParsePingPong(r.log, &pr)) {
          const std::string why = WhyInLog(r.log);
          pr.error = r.timed_out
                         ? "no result within " + std::to_string(static_cast<int>(limit_s)) + " s"
                         : launcher + " exit " + std::to_string(r.exit_code) +
                               (why.empty() ? "" : ": " + why);
        }
        pairs.push_back(pr);
      }
    }
    if (std::all_of(pairs.begin(), pairs.end(),
                    [](const PairResult& p) { return !p.error.empty(); })) {
      notes.push_back("every MPI pair failed: if the nodes are fine, the MPI launch is not (" +
                      std::string(options.hostfile.empty() ? "srun's MPI plugin: --mpi TYPE"
                                                           : "mpirun on these hosts") +
                      "; nodes/pair-*.log)");
    }
    for (size_t k : answered) {
      for (SweepCheckResult& c : PairChecksFor(inputs[k].node, pairs)) {
        inputs[k].results.push_back(std::move(c));
      }
    }
  }
  if (g_sweep_interrupted) {
    notes.push_back(
        "interrupted: the launchers still running were stopped (their nodes did not "
        "answer); nothing was drained");
  }
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
  server.Shutdown();

  SweepRunInfo run;
  run.id = config.session_id;
  run.level = options.level;
  run.started_unix_s = started_unix;
  run.duration_s = static_cast<double>(MonotonicNow() - started) / 1e9;
  run.notes = notes;

  // Each node against its own past; then this sweep joins the history.
  std::unique_ptr<SweepHistory> history;
  if (!options.no_history) {
    const std::string path =
        options.baseline.empty() ? DefaultSweepHistoryPath() : options.baseline;
    Result<std::unique_ptr<SweepHistory>> opened = SweepHistory::Open(path);
    Result<SweepPast> past = opened.ok() ? opened.value()->Past(options.level, kHistorySweeps)
                                         : Result<SweepPast>::Error(opened.status().message());
    if (past.ok()) {
      ApplyTrends(past.value(), thresholds, &verdicts);
      history = std::move(opened).value();
    } else {
      run.notes.push_back("history " + past.status().message() +
                          "; this sweep is neither compared with the past nor recorded");
    }
  }

  // --drain: nodes whose checks failed and that nobody else has drained meanwhile. A node that
  // did not answer is not drained: a missing or broken rankscope there is as likely as a fault.
  if (options.drain && !g_sweep_interrupted) {
    for (size_t i = 0; i < plan.size(); ++i) {
      const NodeVerdict& v = verdicts[i];
      if (v.status != SweepStatus::kFail || !plan[i].run) continue;
      const std::optional<std::string> reason = DrainReason(v);
      if (!reason) {
        run.notes.push_back(v.node + " not drained: what failed there did not run (see nodes/" +
                            v.node + "*.log)");
        continue;
      }
      auto [rc, now] = CaptureOutput({"sinfo", "-h", "-N", "-n", v.node, "-o", "%N|%t|%E"});
      const std::vector<SinfoNode> state = ParseSinfoNodes(now);
      const std::vector<SweepTarget> again = PlanSweepNodes({v.node}, state);
      if (rc != 0 || again.empty() || again[0].drained) {
        run.notes.push_back(v.node + " not drained: its state changed during the sweep");
        continue;
      }
      auto [drain_rc, drain_out] = CaptureOutput(DrainCommand(v.node, *reason));
      run.notes.push_back(drain_rc == 0 ? "drained " + v.node + ": rankscope: " + *reason
                                        : "could not drain " + v.node + " (scontrol exit " +
                                              std::to_string(drain_rc) + ")");
    }
  }

  if (history != nullptr) {
    if (Status s = history->Record(run, verdicts); !s.ok()) {
      run.notes.push_back("history: this sweep was not recorded: " + s.message());
    }
  }
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
  const int code = SweepExitCode(verdicts);
  return written ? code : std::max(code, 2);
}

}  // namespace rankscope
