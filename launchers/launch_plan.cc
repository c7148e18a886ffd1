#include "launchers/launch_plan.h"

#include <map>
#include <string_view>

namespace rankscope {
namespace {

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Options that take values (how many), per launcher family. Anything else starting with '-'
// is a flag. Short options with the value attached ("-N4") and "--opt=value" are one token.
const std::map<std::string_view, int>& OpenMpiOptions() {
  static const std::map<std::string_view, int> kOptions = {
      {"-np", 1},
      {"--np", 1},
      {"-n", 1},
      {"--n", 1},
      {"-c", 1},
      {"-N", 1},
      {"-npernode", 1},
      {"--npernode", 1},
      {"-npersocket", 1},
      {"--npersocket", 1},
      {"-H", 1},
      {"-host", 1},
      {"--host", 1},
      {"-hostfile", 1},
      {"--hostfile", 1},
      {"-machinefile", 1},
      {"--machinefile", 1},
      {"-default-hostfile", 1},
      {"--default-hostfile", 1},
      {"-x", 1},
      {"-mca", 2},
      {"--mca", 2},
      {"-gmca", 2},
      {"--gmca", 2},
      {"-am", 1},
      {"--am", 1},
      {"-tune", 1},
      {"--tune", 1},
      {"-wdir", 1},
      {"--wdir", 1},
      {"-wd", 1},
      {"--wd", 1},
      {"-path", 1},
      {"--path", 1},
      {"-prefix", 1},
      {"--prefix", 1},
      {"-map-by", 1},
      {"--map-by", 1},
      {"-rank-by", 1},
      {"--rank-by", 1},
      {"-bind-to", 1},
      {"--bind-to", 1},
      {"-cpu-list", 1},
      {"--cpu-list", 1},
      {"-cpu-set", 1},
      {"--cpu-set", 1},
      {"-cpus-per-proc", 1},
      {"--cpus-per-proc", 1},
      {"-cpus-per-rank", 1},
      {"--cpus-per-rank", 1},
      {"-output-filename", 1},
      {"--output-filename", 1},
      {"-stdin", 1},
      {"--stdin", 1},
      {"-report-uri", 1},
      {"--report-uri", 1},
      {"-timeout", 1},
      {"--timeout", 1},
      {"-app", 1},
      {"--app", 1},
      {"-rf", 1},
      {"--rankfile", 1},
      {"-launch-agent", 1},
      {"--launch-agent", 1},
      {"-output", 1},
      {"--output", 1},
      {"-s", 0},
      {"--preload-files", 1},
      {"-preload-files", 1},
      {"--personality", 1},
      {"-max-vm-size", 1},
      {"--max-vm-size", 1},
  };
  return kOptions;
}

const std::map<std::string_view, int>& SrunOptions() {
  static const std::map<std::string_view, int> kOptions = {
      {"-N", 1},
      {"--nodes", 1},
      {"-n", 1},
      {"--ntasks", 1},
      {"-p", 1},
      {"--partition", 1},
      {"-w", 1},
      {"--nodelist", 1},
      {"-x", 1},
      {"--exclude", 1},
      {"-c", 1},
      {"--cpus-per-task", 1},
      {"--mpi", 1},
      {"-t", 1},
      {"--time", 1},
      {"-J", 1},
      {"--job-name", 1},
      {"--jobid", 1},
      {"-o", 1},
      {"--output", 1},
      {"-e", 1},
      {"--error", 1},
      {"-i", 1},
      {"--input", 1},
      {"-G", 1},
      {"--gpus", 1},
      {"--gres", 1},
      {"-A", 1},
      {"--account", 1},
      {"--ntasks-per-node", 1},
      {"--export", 1},
      {"-D", 1},
      {"--chdir", 1},
      {"-m", 1},
      {"--distribution", 1},
      {"--cpu-bind", 1},
      {"--mem", 1},
      {"--mem-per-cpu", 1},
      {"-C", 1},
      {"--constraint", 1},
      {"-q", 1},
      {"--qos", 1},
      {"--reservation", 1},
      {"--gpus-per-node", 1},
      {"--gpus-per-task", 1},
      {"-d", 1},
      {"--dependency", 1},
      {"-r", 1},
      {"--relative", 1},
      {"--het-group", 1},
      {"-K", 0},
      {"--kill-on-bad-exit", 0},
      {"-W", 1},
      {"--wait", 1},
      {"--signal", 1},
      {"-B", 1},
      {"--comment", 1},
      {"--network", 1},
      {"--label", 0},
      {"-l", 0},
  };
  return kOptions;
}

// Index of the first non-option token after argv[0], or argv.size() if none.
size_t FindProgram(const std::vector<std::string>& argv,
                   const std::map<std::string_view, int>& options) {
  size_t i = 1;
  while (i < argv.size()) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') return i;
    if (a.find('=') != std::string::npos) {
      ++i;
      continue;
    }
    auto it = options.find(a);
    if (it != options.end()) {
      i += 1 + static_cast<size_t>(it->second);
      continue;
    }
    ++i;  // a flag, or a short option with its value attached ("-N4")
  }
  return argv.size();
}

bool IsOpenMpiLauncher(const std::string& name) {
  return name == "mpirun" || name == "mpiexec" || name == "orterun" || name == "mpiexec.openmpi" ||
         name == "mpirun.openmpi";
}

}  // namespace

Result<LaunchPlan> PlanLaunch(const std::vector<std::string>& command,
                              const std::vector<std::string>& agent,
                              const std::vector<std::string>& forward_env) {
  if (command.empty()) return Result<LaunchPlan>::Error("nothing to run: give a command after --");
  const std::string name = Basename(command[0]);
  LaunchPlan plan;
  bool mpi = IsOpenMpiLauncher(name);
  bool srun = name == "srun";
  plan.launcher = mpi ? "mpirun" : srun ? "srun" : "none";

  // Explicit form: LAUNCHER ARGS -- PROGRAM ARGS.
  size_t separator = 0;
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "--") {
      separator = i;
      break;
    }
  }
  size_t program = 0;
  if (separator > 0) {
    program = separator + 1;
    if (plan.launcher == "none") plan.launcher = name;
  } else if (mpi || srun) {
    program = FindProgram(command, mpi ? OpenMpiOptions() : SrunOptions());
  } else {
    program = 0;  // the command is the program itself
  }
  if (program >= command.size()) {
    return Result<LaunchPlan>::Error("cannot tell where the program starts in '" + command[0] +
                                     " ...'; use the explicit form: rankscope run -- " +
                                     command[0] + " [launcher options] -- PROGRAM [ARGS]");
  }

  if (program > 0) {
    plan.argv.push_back(command[0]);
    if (mpi) {
      for (const std::string& var : forward_env) {
        plan.argv.push_back("-x");
        plan.argv.push_back(var);
      }
    }
    size_t launcher_end = separator > 0 ? separator : program;
    plan.argv.insert(plan.argv.end(), command.begin() + 1,
                     command.begin() + static_cast<std::ptrdiff_t>(launcher_end));
  }
  plan.argv.insert(plan.argv.end(), agent.begin(), agent.end());
  plan.program_index = plan.argv.size();
  plan.argv.insert(plan.argv.end(), command.begin() + static_cast<std::ptrdiff_t>(program),
                   command.end());
  return plan;
}

bool LaunchSpansHosts(const LaunchPlan& plan, int slurm_nodes) {
  if (plan.launcher == "srun") return true;
  if (plan.launcher != "mpirun") return false;
  if (slurm_nodes > 1) return true;  // Open MPI and Hydra use the allocation's nodes
  for (size_t i = 0; i < plan.program_index && i < plan.argv.size(); ++i) {
    const std::string& a = plan.argv[i];
    for (const char* opt : {"-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile",
                            "--machinefile", "-f", "-hosts", "--hosts"}) {
      if (a == opt || a.rfind(std::string(opt) + "=", 0) == 0) return true;
    }
  }
  return false;
}

}  // namespace rankscope
