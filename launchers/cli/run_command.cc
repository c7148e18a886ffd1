// `rankscope run`: wrap a launch and write a session report.
#include <cctype>
#include <memory>

#include "launchers/cli/commands.h"
#include "launchers/run.h"

namespace rankscope::cli {

Command AddRun(CLI::App* app, const std::string& self_exe) {
  struct State {
    RunOptions run;
    double drain_s = 15;
    double stall_after_s = 20;
    std::string cupti_mode, capture_range, capture_steps, capture_every, step_range;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app->add_subcommand("run", "Profile a launch: rankscope run -- mpirun ...");
  cmd->footer(
      "Signals: Ctrl-C on the terminal reaches the launcher itself (the whole foreground job "
      "gets it); SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to rankscope alone are "
      "passed to the launcher. Either way the job ends as it would without rankscope, and a "
      "PARTIAL report of what was recorded is written; one that comes before the launch "
      "launches nothing and ends rankscope by that signal. If rankscope itself is killed "
      "(SIGKILL), the job runs on: each agent keeps its rank's records in a spool it names "
      "(rankscope report --spools rebuilds the session), and the job's exit code is lost to "
      "the caller.");
  cmd->add_option("-o,--output", s->run.out_dir, "Session folder (default rankscope-<job>)");
  cmd->add_option("--bind", s->run.bind_address,
                  "Address the coordinator listens on (default: 127.0.0.1, or this host's "
                  "address when ranks may run elsewhere: srun, mpirun with hosts)");
  cmd->add_option("--port", s->run.port,
                  "Coordinator port (default: any free port; a free one too when this one "
                  "is taken: the agents are told where)");
  cmd->add_option("--drain-timeout", s->drain_s,
                  "Seconds to wait for agents' last records after the job ends");
  cmd->add_option("--stall-after", s->stall_after_s,
                  "Seconds a rank may wait inside one blocking MPI call before the live check "
                  "reports the job stalled: the rank it waits for and what that rank is doing "
                  "(stopped, blocked in the kernel, computing, silent), or a collective that does "
                  "not complete, or a deadlock (default 20; 0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("-q,--quiet", s->run.quiet, "Do not print the report (nor the status line)");
  cmd->add_flag("--live", s->run.live,
                "Print the status line (ranks, steps, records/s, what is captured) every 10 s "
                "and a line for each rank the live check finds holding the others up, when "
                "stderr is not a terminal (on one both are shown anyway; the status line is "
                "redrawn each second)");
  cmd->add_flag("--full-trace", s->run.full_trace,
                "trace.json with every event (default: at most 100,000, whole steps sampled, else "
                "the run's middle)");
  cmd->add_option("--raw-gpu-records", s->run.raw_gpu_records,
                  "Records of compute kernels and their launch calls sent whole, all ranks "
                  "together (default 400000); after its share a rank sends them summed (per-kernel "
                  "statistics, kernel time between collectives, compute beside NCCL kernels) and "
                  "whole only the first launch and kernel after each NVTX range boundary. 0, or "
                  "--full-trace: every record");
  cmd->add_option("--gpu-activity", s->cupti_mode,
                  "CUPTI activity: kernels | gpu (+ copies, memsets, syncs) | all (+ the launch "
                  "calls, runtime and driver: launch latency; the default) | api (+ every CUDA "
                  "runtime call)")
      ->check(CLI::IsMember({"kernels", "gpu", "all", "api"}));
  cmd->add_option("--capture-range", s->capture_range,
                  "Capture GPU activity only while an NVTX range of this name is open");
  cmd->add_option("--capture-steps", s->capture_steps,
                  "Capture GPU activity for steps FIRST[:COUNT] (a step = one NVTX range "
                  "named by --step-range)");
  cmd->add_option("--capture-every", s->capture_every,
                  "Of the captured steps, capture only every Nth (sampling)");
  cmd->add_option("--step-range", s->step_range, "NVTX range that marks a step (default step)");
  cmd->add_flag("--dormant", s->run.dormant,
                "Ranks record nothing until `rankscope capture` starts a capture");
  const auto rank_list = [](const std::string& list) -> std::string {
    if (list == "all") return "";
    for (char c : list) {
      if (!std::isdigit(static_cast<unsigned char>(c)) && c != ',' && c != '-') {
        return "a rank list is like 1 or 0,3 or 2-5 (or all), not " + list;
      }
    }
    return "";
  };
  ToolOptions& tools = s->run.tools;
  cmd->add_option("--ncu-rank", tools.ncu_ranks,
                  "Run Nsight Compute on these ranks only (1, or 0,3): their report goes into the "
                  "session folder (rankR_kernel.ncu-rep) and the findings end with the kernel's "
                  "roofline verdict, warp stalls and fixes. ncu's replay makes the rank slow while "
                  "it profiles: take stragglers from a run without it")
      ->check(rank_list);
  cmd->add_option("--ncu-kernel", tools.ncu_kernel,
                  "Regex on the kernel's function name for --ncu-rank (default: any kernel)");
  cmd->add_option("--ncu-set", tools.ncu_set, "ncu's section set for --ncu-rank (default full)");
  cmd->add_option("--ncu-count", tools.ncu_count,
                  "Kernel launches ncu profiles on each --ncu-rank (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ncu-skip", tools.ncu_skip,
                  "Matching launches ncu lets pass first, e.g. past warm-up (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--nsys-ranks", tools.nsys_ranks,
                  "Run Nsight Systems (cuda, nvtx, osrt) on these ranks only: rankR.nsys-rep in "
                  "the session folder")
      ->check(rank_list);
  cmd->add_option("command", s->run.command, "Launch command (after --)")->required();
  return {cmd, [s, self_exe] {
            s->run.self_exe = self_exe;
            s->run.drain_timeout = static_cast<DurationNs>(s->drain_s * 1e9);
            s->run.stall_after = static_cast<DurationNs>(s->stall_after_s * 1e9);
            s->run.inject_env = {{"RANKSCOPE_CUPTI_MODE", s->cupti_mode},
                                 {"RANKSCOPE_CAPTURE_RANGE", s->capture_range},
                                 {"RANKSCOPE_CAPTURE_STEPS", s->capture_steps},
                                 {"RANKSCOPE_CAPTURE_EVERY", s->capture_every},
                                 {"RANKSCOPE_STEP_RANGE", s->step_range}};
            return RunJob(s->run);
          }};
}

}  // namespace rankscope::cli
