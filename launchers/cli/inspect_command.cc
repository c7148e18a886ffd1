// `rankscope inspect nccl-log`, `inspect topo` and `inspect ncu`: offline views of NCCL logs,
// topology dumps and Nsight Compute reports.
#include <memory>

#include "launchers/cli/commands.h"
#include "launchers/inspect.h"

namespace rankscope::cli {

std::vector<Command> AddInspect(CLI::App* app) {
  struct State {
    std::vector<std::string> nccl_logs;
    std::string topo_file;
    std::vector<std::string> ncu_files;
    std::string ncu_html;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd =
      app->add_subcommand("inspect", "Offline: NCCL logs, topology dumps, Nsight Compute reports");
  cmd->require_subcommand(1);
  CLI::App* nccl_cmd = cmd->add_subcommand("nccl-log", "NCCL_DEBUG=INFO log file(s)");
  nccl_cmd->add_option("files", s->nccl_logs, "Log files (one per rank)")->required();
  nccl_cmd->add_flag("--json", s->json, "Machine-readable output");
  CLI::App* topo_cmd = cmd->add_subcommand("topo", "NCCL_TOPO_DUMP_FILE XML");
  topo_cmd->add_option("file", s->topo_file, "Topology dump")->required();
  topo_cmd->add_flag("--json", s->json, "Machine-readable output");
  CLI::App* ncu_cmd = cmd->add_subcommand(
      "ncu", "Nsight Compute: roofline, verdict, occupancy, warp stalls and fixes per kernel");
  ncu_cmd
      ->add_option("files", s->ncu_files,
                   "`ncu --import R.ncu-rep --csv --page raw` output, or .ncu-rep (needs ncu)")
      ->required();
  ncu_cmd->add_flag("--json", s->json, "Machine-readable output");
  ncu_cmd->add_option("--html", s->ncu_html,
                      "Also write a self-contained page: roofline chart, stall bars");
  return {{nccl_cmd, [s] { return InspectNcclLogs(s->nccl_logs, s->json); }},
          {topo_cmd, [s] { return InspectTopology(s->topo_file, s->json); }},
          {ncu_cmd, [s] { return InspectNcu(s->ncu_files, s->json, s->ncu_html); }}};
}

}  // namespace rankscope::cli
