// rankscope: the command-line entry point. Subcommands:
//   run          wrap a launch (mpirun/srun/torchrun/plain program) and write a session report
//   capture      start (or stop) capturing a running session, e.g. one run with --dormant
//   attach       capture a window of a running SLURM job (attach-node: its per-node part)
//   agent        the per-rank agent (inserted by `run`; rarely typed by hand)
//   coordinator  a stand-alone coordinator (also what `srun --rankscope` starts)
//   sweep        a health sweep of the cluster's nodes (sweep-node: its per-node part)
//   report       re-run the analyses and writers on a saved session folder
//   advise       which tool answers a question, with the exact command (fleet -> SASS)
//   inspect      offline views of NCCL logs and topology dumps
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent.h"
#include "agent/sweep/sweep_node.h"
#include "launchers/advise_cmd.h"
#include "launchers/attach_run.h"
#include "launchers/capture_cmd.h"
#include "launchers/inspect.h"
#include "launchers/report_cmd.h"
#include "launchers/run.h"
#include "launchers/spank_task.h"
#include "launchers/sweep_cmd.h"

namespace {

std::string SelfExe() {
  char buf[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("rankscope");
}

}  // namespace

int main(int argc, char** argv) {
  // A task of `srun --rankscope`: argv is the program's own, not rankscope's command line.
  rankscope::RunAsSpankTaskIfAsked(argc, argv, SelfExe());
  CLI::App app{"rankscope: which rank made your distributed job slow, and why"};
  app.require_subcommand(1);

  rankscope::RunOptions run;
  double drain_s = 15;
  CLI::App* run_cmd = app.add_subcommand("run", "Profile a launch: rankscope run -- mpirun ...");
  run_cmd->footer(
      "Signals: Ctrl-C on the terminal reaches the launcher itself (the whole foreground job "
      "gets it); SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to rankscope alone are "
      "passed to the launcher. Either way the job ends as it would without rankscope, and a "
      "PARTIAL report of what was recorded is written; one that comes before the launch "
      "launches nothing and ends rankscope by that signal. If rankscope itself is killed "
      "(SIGKILL), the job runs on: each agent keeps its rank's records in a spool it names "
      "(rankscope report --spools rebuilds the session), and the job's exit code is lost to "
      "the caller.");
  run_cmd->add_option("-o,--output", run.out_dir, "Session folder (default rankscope-<job>)");
  run_cmd->add_option("--bind", run.bind_address,
                      "Address the coordinator listens on (default: 127.0.0.1, or this host's "
                      "address when ranks may run elsewhere: srun, mpirun with hosts)");
  run_cmd->add_option("--port", run.port,
                      "Coordinator port (default: any free port; a free one too when this one "
                      "is taken: the agents are told where)");
  run_cmd->add_option("--drain-timeout", drain_s,
                      "Seconds to wait for agents' last records after the job ends");
  run_cmd->add_flag("-q,--quiet", run.quiet, "Do not print the report");
  run_cmd->add_flag("--full-trace", run.full_trace,
                    "trace.json with every event (default: at most 1 M, whole steps sampled, else "
                    "the run's middle)");
  std::string cupti_mode, capture_range, capture_steps, capture_every, step_range;
  run_cmd
      ->add_option("--gpu-activity", cupti_mode,
                   "CUPTI activity: kernels | gpu (+ copies, memsets, syncs) | all (+ the launch "
                   "calls, runtime and driver: launch latency; the default) | api (+ every CUDA "
                   "runtime call)")
      ->check(CLI::IsMember({"kernels", "gpu", "all", "api"}));
  run_cmd->add_option("--capture-range", capture_range,
                      "Capture GPU activity only while an NVTX range of this name is open");
  run_cmd->add_option("--capture-steps", capture_steps,
                      "Capture GPU activity for steps FIRST[:COUNT] (a step = one NVTX range "
                      "named by --step-range)");
  run_cmd->add_option("--capture-every", capture_every,
                      "Of the captured steps, capture only every Nth (sampling)");
  run_cmd->add_option("--step-range", step_range, "NVTX range that marks a step (default step)");
  run_cmd->add_flag("--dormant", run.dormant,
                    "Ranks record nothing until `rankscope capture` starts a capture");
  run_cmd->add_option("command", run.command, "Launch command (after --)")->required();

  rankscope::CaptureOptions capture;
  CLI::App* capture_cmd = app.add_subcommand(
      "capture", "Start (or stop) capturing a running session, e.g. one run with --dormant");
  capture_cmd->add_option("session", capture.session,
                          "Session id (default: your only running session)");
  capture_cmd->add_option("--for", capture.for_s, "Stop again after this many seconds");
  capture_cmd->add_flag("--stop", capture.stop, "Stop capturing");
  capture_cmd->add_option("--agents", capture.agents,
                          "Wait until this many agents (ranks) have registered, then start");
  capture_cmd->add_option("--wait", capture.wait_s, "Give up waiting for --agents after S seconds")
      ->capture_default_str();

  rankscope::AttachOptions attach;
  CLI::App* attach_cmd = app.add_subcommand(
      "attach",
      "Capture a window of a running SLURM job (launched with rankscope run: full capture; "
      "without: sampled from outside)");
  attach_cmd->add_option("job", attach.job_id, "SLURM job id")->required();
  attach_cmd->add_option("--for", attach.for_s, "Seconds to capture (default 10)");
  attach_cmd->add_option("-o,--out", attach.out_dir,
                         "Session folder for a job sampled from outside (rankscope-attach-JOBID)");
  attach_cmd->add_option("--bind", attach.bind_address,
                         "Address for the nodes to reach (default: this host's)");
  attach_cmd->add_flag("-q,--quiet", attach.quiet, "Do not print the report");
  CLI::App* attach_node_cmd =
      app.add_subcommand("attach-node", "What attach runs on each node of the job (internal)");
  attach_node_cmd->add_option("job", attach.job_id, "SLURM job id")->required();
  attach_node_cmd->add_option("--for", attach.for_s, "Seconds to capture");

  rankscope::AgentOptions agent;
  double final_timeout_s = 5;
  CLI::App* agent_cmd = app.add_subcommand("agent", "Per-rank agent: rankscope agent -- PROG");
  agent_cmd->add_option("--coordinator", agent.coordinator,
                        "Coordinator host:port (default $RANKSCOPE_COORDINATOR)");
  agent_cmd->add_option("--session", agent.session_id, "Session id (default $RANKSCOPE_SESSION)");
  agent_cmd->add_option("--inject-lib", agent.inject_library, "Path of librankscope_inject.so");
  agent_cmd->add_option("--final-timeout", final_timeout_s,
                        "Seconds to try delivering the last records after the program exits");
  agent_cmd->add_option("program", agent.program, "Program and arguments (after --)")->required();

  rankscope::CoordinatorOptions coord;
  double timeout_s = 0;
  CLI::App* coord_cmd = app.add_subcommand("coordinator", "Stand-alone coordinator");
  coord_cmd->add_option("--bind", coord.bind_address, "Listen address");
  coord_cmd->add_option("--port", coord.port, "Listen port (0 = any)");
  coord_cmd->add_option("--session", coord.session_id, "Session id agents must present");
  coord_cmd
      ->add_option("--token-file", coord.token_file,
                   "Session secret file (created 0600 if missing)")
      ->required();
  coord_cmd->add_option("-o,--output", coord.out_dir, "Session folder");
  coord_cmd->add_option("--ranks", coord.ranks, "Finish when this many agents are done");
  coord_cmd->add_option("--timeout", timeout_s, "Finish after this many seconds");
  coord_cmd->add_option("--watch-pid", coord.watch_pid,
                        "Finish (report marked partial) when this process is gone");
  coord_cmd->add_option("--launcher", coord.launcher, "Launcher name for the report");
  coord_cmd->add_flag("--endpoint", coord.endpoint, "Write the endpoint file `capture` reads");
  coord_cmd->add_flag("-q,--quiet", coord.quiet, "Do not print the report");
  coord_cmd->add_option("command", coord.command, "The job's command line (after --)");

  rankscope::SweepOptions sweep;
  CLI::App* sweep_cmd = app.add_subcommand(
      "sweep", "Health sweep of the cluster's nodes through SLURM (docs/sweep.md)");
  sweep_cmd->add_option("--partition,-p", sweep.partition, "Only this partition's nodes");
  sweep_cmd->add_option("--nodes,-w", sweep.nodes, "SLURM host list, e.g. n[1-4] (default: all)");
  sweep_cmd->add_option("--hostfile", sweep.hostfile,
                        "No SLURM: sweep these hosts, each through `mpirun --host H -np 1`");
  sweep_cmd->add_option("--level", sweep.level, "quick (default), standard or deep");
  sweep_cmd->add_option("--config", sweep.config_file,
                        "Thresholds file (default: the built-in config/sweep.json)");
  sweep_cmd->add_flag("--drain", sweep.drain,
                      "Drain the nodes that fail (scontrol; never one drained by someone else)");
  sweep_cmd->add_option("-o,--output", sweep.out_dir, "Folder (default rankscope-sweep-<time>)");
  sweep_cmd->add_option("--prom-file", sweep.prom_file,
                        "Also write the metrics here (node_exporter textfile collector)");
  sweep_cmd->add_option("--baseline,--history", sweep.baseline,
                        "History to compare with and add to (default "
                        "~/.local/share/rankscope/sweeps.sqlite)");
  sweep_cmd->add_flag("--no-history", sweep.no_history, "Neither compare with nor record history");
  sweep_cmd->add_option("--bind", sweep.bind_address, "Address for the nodes to reach");
  sweep_cmd->add_option("--mpi", sweep.mpi,
                        "srun --mpi= type for the MPI ping-pong pairs (default: the cluster's)");
  sweep_cmd->add_option("--node-limit", sweep.node_limit_s,
                        "Seconds per node, queueing included (default by level: 120/300/900)");
  sweep_cmd->add_option("--scratch", sweep.scratch,
                        "File systems to check for free space (default: $TMPDIR, /dev/shm)");
  sweep_cmd->add_flag("-q,--quiet", sweep.quiet, "Do not print the report");

  rankscope::SweepNodeOptions sweep_node;
  CLI::App* sweep_node_cmd =
      app.add_subcommand("sweep-node", "What sweep runs on each node (internal)");
  sweep_node_cmd->add_option("--coordinator", sweep_node.coordinator, "host:port")->required();
  sweep_node_cmd->add_option("--session", sweep_node.session_id, "Session id");
  sweep_node_cmd->add_option("--index", sweep_node.index, "This node's place in the sweep");
  sweep_node_cmd->add_option("--count", sweep_node.count, "Nodes in the sweep");
  sweep_node_cmd->add_option("--node", sweep_node.node, "Node name");
  sweep_node_cmd->add_option("--level", sweep_node.level, "quick, standard or deep");
  sweep_node_cmd->add_option("--scratch", sweep_node.scratch, "File systems to check");

  std::vector<std::string> nccl_logs;
  std::string topo_file;
  bool inspect_json = false;
  rankscope::ReportOptions report;
  double min_lateness_ms = 1.0;
  double min_data_excess_ms = 1.0;
  std::string step_pattern, data_pattern;
  CLI::App* report_cmd =
      app.add_subcommand("report", "Offline: re-run the analyses and writers on a session folder");
  CLI::Option* session_opt =
      report_cmd->add_option("session", report.session_dir, "Session folder (has session.sqlite)");
  CLI::Option* spools_opt = report_cmd->add_option(
      "--spools", report.spools,
      "Rebuild a session its coordinator never wrote (rankscope run killed) from the agents' "
      "spools: TMPDIR/rankscope-SESSION-spool.* of every node");
  session_opt->excludes(spools_opt);
  report_cmd->add_option("-o,--output", report.out_dir,
                         "Write here (default: the session folder; with --spools, "
                         "rankscope-SESSION)");
  report_cmd->add_flag("-q,--quiet", report.quiet, "Do not print the report");
  report_cmd->add_flag("--full-trace", report.full_trace,
                       "trace.json with every event (default: at most 1 M, whole steps sampled, "
                       "else the run's middle)");
  report_cmd->add_option("--min-gain-fraction", report.analysis.blame.min_gain_fraction,
                         "Straggler: least share of the job its what-if must save (default 0.05)");
  report_cmd->add_option("--min-excess-fraction", report.analysis.blame.min_excess_fraction,
                         "Straggler: least excess of its work over the typical rank's "
                         "(default 0.10)");
  report_cmd->add_option("--min-lateness-ms", min_lateness_ms,
                         "Arrival analysis (describes stragglers): least median lateness "
                         "(default 1)");
  report_cmd->add_option("--min-frac-last", report.analysis.straggler.min_frac_last,
                         "Arrival analysis: least fraction of instances held up (default 0.5)");
  report_cmd->add_option("--min-cost-fraction", report.analysis.straggler.min_cost_fraction,
                         "Arrival analysis: least fraction of the others' time lost "
                         "(default 0.01)");
  report_cmd->add_option("--step-pattern", step_pattern,
                         "Dataloader: regex of step ranges (default ^step)");
  report_cmd->add_option("--data-pattern", data_pattern,
                         "Dataloader: regex of data ranges (default data|load|batch|input)");
  report_cmd->add_option("--min-data-excess-ms", min_data_excess_ms,
                         "Dataloader: least excess data time per step (default 1)");

  rankscope::AdviseOptions advise;
  CLI::App* advise_cmd = app.add_subcommand(
      "advise", "Which tool answers my question, with the exact command (fleet -> SASS)");
  advise_cmd->add_option("question", advise.question, "Your question in words, or an answer's id");
  advise_cmd->add_option("--session", advise.session_dir,
                         "Fill the commands in with this session's rank, node and kernel");
  advise_cmd->add_option("--rank", advise.rank,
                         "With --session: fill the commands in for this rank (default: the rank "
                         "of the worst finding)");
  advise_cmd->add_flag("--json", advise.json, "JSON instead of text");

  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Offline: NCCL logs and topology dumps");
  inspect_cmd->require_subcommand(1);
  CLI::App* nccl_cmd = inspect_cmd->add_subcommand("nccl-log", "NCCL_DEBUG=INFO log file(s)");
  nccl_cmd->add_option("files", nccl_logs, "Log files (one per rank)")->required();
  nccl_cmd->add_flag("--json", inspect_json, "Machine-readable output");
  CLI::App* topo_cmd = inspect_cmd->add_subcommand("topo", "NCCL_TOPO_DUMP_FILE XML");
  topo_cmd->add_option("file", topo_file, "Topology dump")->required();
  topo_cmd->add_flag("--json", inspect_json, "Machine-readable output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // `rankscope run -o x mpirun -np 4 ./app`: the launch command's options read as ours.
    const bool has_dashes = std::any_of(argv + 1, argv + argc,
                                        [](const char* a) { return std::string_view(a) == "--"; });
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !has_dashes &&
        (*run_cmd || *coord_cmd)) {
      std::fprintf(stderr,
                   "Put -- before the launch command, so its options are not read as "
                   "rankscope's: rankscope run [options] -- mpirun -np 4 ./app\n");
    }
    return rc;
  }

  if (*nccl_cmd) return rankscope::InspectNcclLogs(nccl_logs, inspect_json);
  if (*topo_cmd) return rankscope::InspectTopology(topo_file, inspect_json);

  if (*advise_cmd) return rankscope::RunAdvise(advise);
  if (*capture_cmd) return rankscope::RunCapture(capture);
  if (*attach_cmd) return rankscope::RunAttach(attach, SelfExe());
  if (*attach_node_cmd) return rankscope::RunAttachNode(attach);
  if (*sweep_cmd) return rankscope::RunSweep(sweep, SelfExe());
  if (*sweep_node_cmd) {
    const char* token = std::getenv("RANKSCOPE_TOKEN");  // never on the command line
    sweep_node.token = token != nullptr ? token : "";
    return rankscope::RunSweepNode(sweep_node);
  }
  if (*report_cmd) {
    report.analysis.straggler.min_lateness =
        static_cast<rankscope::DurationNs>(min_lateness_ms * 1e6);
    report.analysis.dataloader.min_excess =
        static_cast<rankscope::DurationNs>(min_data_excess_ms * 1e6);
    try {
      if (!step_pattern.empty()) {
        report.analysis.dataloader.step_pattern = std::regex(step_pattern, std::regex::icase);
      }
      if (!data_pattern.empty()) {
        report.analysis.dataloader.data_pattern = std::regex(data_pattern, std::regex::icase);
      }
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "rankscope report: bad regular expression: %s\n", e.what());
      return 2;
    }
    return rankscope::RunReport(report);
  }
  if (*run_cmd) {
    run.self_exe = SelfExe();
    run.drain_timeout = static_cast<rankscope::DurationNs>(drain_s * 1e9);
    run.inject_env = {{"RANKSCOPE_CUPTI_MODE", cupti_mode},
                      {"RANKSCOPE_CAPTURE_RANGE", capture_range},
                      {"RANKSCOPE_CAPTURE_STEPS", capture_steps},
                      {"RANKSCOPE_CAPTURE_EVERY", capture_every},
                      {"RANKSCOPE_STEP_RANGE", step_range}};
    return rankscope::RunJob(run);
  }
  if (*agent_cmd) {
    rankscope::FillAgentOptionsFromEnvironment(SelfExe(), &agent);
    agent.final_timeout = static_cast<rankscope::DurationNs>(final_timeout_s * 1e9);
    if (rankscope::CanRunBeside()) rankscope::RunProgramWithAgentBeside(agent);
    rankscope::ExitLikeChild(rankscope::RunAgent(agent));
  }
  if (*coord_cmd) {
    coord.timeout = static_cast<rankscope::DurationNs>(timeout_s * 1e9);
    return rankscope::RunCoordinator(coord);
  }
  return 2;
}
