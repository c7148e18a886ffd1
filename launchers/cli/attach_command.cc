// `rankscope attach` and its per-node part, `attach-node`.
#include <memory>

#include "launchers/attach_run.h"
#include "launchers/cli/commands.h"

namespace rankscope::cli {

std::vector<Command> AddAttach(CLI::App* app, const std::string& self_exe) {
  auto attach = std::make_shared<AttachOptions>();
  CLI::App* cmd = app->add_subcommand(
      "attach",
      "Capture a window of a running SLURM job (launched with rankscope run: full capture; "
      "without: sampled from outside)");
  cmd->add_option("job", attach->job_id, "SLURM job id")->required();
  cmd->add_option("--for", attach->for_s, "Seconds to capture (default 10)");
  cmd->add_option("-o,--out", attach->out_dir,
                  "Session folder for a job sampled from outside (rankscope-attach-JOBID)");
  cmd->add_option("--bind", attach->bind_address,
                  "Address for the nodes to reach (default: this host's)");
  cmd->add_flag("-q,--quiet", attach->quiet, "Do not print the report");
  CLI::App* node_cmd =
      app->add_subcommand("attach-node", "What attach runs on each node of the job (internal)");
  node_cmd->add_option("job", attach->job_id, "SLURM job id")->required();
  node_cmd->add_option("--for", attach->for_s, "Seconds to capture");
  return {{cmd, [attach, self_exe] { return RunAttach(*attach, self_exe); }},
          {node_cmd, [attach] { return RunAttachNode(*attach); }}};
}

}  // namespace rankscope::cli
