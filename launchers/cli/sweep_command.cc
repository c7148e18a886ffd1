// `rankscope sweep` and its per-node part, `sweep-node`.
#include <cstdlib>
#include <memory>

#include "agent/sweep/sweep_node.h"
#include "launchers/cli/commands.h"
#include "launchers/sweep_cmd.h"

namespace rankscope::cli {
namespace {

Command AddSweepNode(CLI::App* app) {
  auto node = std::make_shared<SweepNodeOptions>();
  CLI::App* cmd = app->add_subcommand("sweep-node", "What sweep runs on each node (internal)");
  cmd->add_option("--coordinator", node->coordinator, "host:port")->required();
  cmd->add_option("--session", node->session_id, "Session id");
  cmd->add_option("--index", node->index, "This node's place in the sweep");
  cmd->add_option("--count", node->count, "Nodes in the sweep");
  cmd->add_option("--node", node->node, "Node name");
  cmd->add_option("--level", node->level, "quick, standard or deep");
  cmd->add_option("--scratch", node->scratch, "File systems to check");
  return {cmd, [node] {
            const char* token = std::getenv("RANKSCOPE_TOKEN");  // never on the command line
            node->token = token != nullptr ? token : "";
            return RunSweepNode(*node);
          }};
}

}  // namespace

std::vector<Command> AddSweep(CLI::App* app, const std::string& self_exe) {
  auto sweep = std::make_shared<SweepOptions>();
  CLI::App* cmd = app->add_subcommand(
      "sweep", "Health sweep of the cluster's nodes through SLURM (docs/sweep.md)");
  cmd->add_option("--partition,-p", sweep->partition, "Only this partition's nodes");
  cmd->add_option("--nodes,-w", sweep->nodes, "SLURM host list, e.g. n[1-4] (default: all)");
  cmd->add_option("--hostfile", sweep->hostfile,
                  "No SLURM: sweep these hosts, each through `mpirun --host H -np 1`");
  cmd->add_option("--level", sweep->level, "quick (default), standard or deep");
  cmd->add_option("--config", sweep->config_file,
                  "Thresholds file (default: the built-in config/sweep.json)");
  cmd->add_flag("--drain", sweep->drain,
                "Drain the nodes that fail (scontrol; never one drained by someone else)");
  cmd->add_option("-o,--output", sweep->out_dir, "Folder (default rankscope-sweep-<time>)");
  cmd->add_option("--prom-file", sweep->prom_file,
                  "Also write the metrics here (node_exporter textfile collector)");
  cmd->add_option("--baseline,--history", sweep->baseline,
                  "History to compare with and add to (default "
                  "~/.local/share/rankscope/sweeps.sqlite)");
  cmd->add_flag("--no-history", sweep->no_history, "Neither compare with nor record history");
  cmd->add_option("--bind", sweep->bind_address, "Address for the nodes to reach");
  cmd->add_option("--mpi", sweep->mpi,
                  "srun --mpi= type for the MPI ping-pong pairs (default: the cluster's)");
  cmd->add_option("--node-limit", sweep->node_limit_s,
                  "Seconds per node, queueing included (default by level: 120/300/900)");
  cmd->add_option("--scratch", sweep->scratch,
                  "File systems to check for free space (default: $TMPDIR, /dev/shm)");
  cmd->add_flag("-q,--quiet", sweep->quiet, "Do not print the report");
  return {{cmd, [sweep, self_exe] { return RunSweep(*sweep, self_exe); }}, AddSweepNode(app)};
}

}  // namespace rankscope::cli
