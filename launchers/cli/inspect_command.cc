// `rankscope inspect nccl-log` and `inspect topo`: offline views of NCCL logs and topology dumps.
#include <memory>

#include "launchers/cli/commands.h"
#include "launchers/inspect.h"

namespace rankscope::cli {

std::vector<Command> AddInspect(CLI::App* app) {
  struct State {
    std::vector<std::string> nccl_logs;
    std::string topo_file;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app->add_subcommand("inspect", "Offline: NCCL logs and topology dumps");
  cmd->require_subcommand(1);
  CLI::App* nccl_cmd = cmd->add_subcommand("nccl-log", "NCCL_DEBUG=INFO log file(s)");
  nccl_cmd->add_option("files", s->nccl_logs, "Log files (one per rank)")->required();
  nccl_cmd->add_flag("--json", s->json, "Machine-readable output");
  CLI::App* topo_cmd = cmd->add_subcommand("topo", "NCCL_TOPO_DUMP_FILE XML");
  topo_cmd->add_option("file", s->topo_file, "Topology dump")->required();
  topo_cmd->add_flag("--json", s->json, "Machine-readable output");
  return {{nccl_cmd, [s] { return InspectNcclLogs(s->nccl_logs, s->json); }},
          {topo_cmd, [s] { return InspectTopology(s->topo_file, s->json); }}};
}

}  // namespace rankscope::cli
