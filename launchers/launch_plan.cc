#include "launchers/launch_plan.h"

#include <cstdlib>
#include <iterator>
#include <map>
#include <sstream>
#include <string_view>

namespace rankscope {
namespace {

// Option name -> how many values follow it.
using OptionTable = std::map<std::string, int, std::less<>>;

// Options that take values (how many), per launcher family. Anything else starting with '-'
// is a flag. Short options with the value attached ("-N4") and "--opt=value" are one token.
const OptionTable& OpenMpiOptions() {
  static const OptionTable kOptions = {
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

const OptionTable& SrunOptions() {
  static const OptionTable kOptions = {
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

// MPICH's and Intel MPI's mpiexec (Hydra); single and double dashes are both accepted.
const OptionTable& HydraOptions() {
  static const OptionTable kOptions = [] {
    const std::pair<const char*, int> base[] = {
        {"n", 1},
        {"np", 1},
        {"f", 1},
        {"hostfile", 1},
        {"machinefile", 1},
        {"hosts", 1},
        {"host", 1},
        {"ppn", 1},
        {"genv", 2},
        {"genvlist", 1},
        {"env", 2},
        {"envlist", 1},
        {"wdir", 1},
        {"configfile", 1},
        {"bind-to", 1},
        {"map-by", 1},
        {"launcher", 1},
        {"launcher-exec", 1},
        {"bootstrap", 1},
        {"bootstrap-exec", 1},
        {"iface", 1},
        {"outfile-pattern", 1},
        {"errfile-pattern", 1},
        {"gpus-per-proc", 1},
        {"demux", 1},
        {"rmk", 1},
        {"binding", 1},
        {"nameserver", 1},
        {"gwdir", 1},
        {"gpath", 1},
        {"gtool", 1},
        {"bootstrap-exec-args", 1},
        {"umask", 1},
        {"gumask", 1},
        {"usize", 1},
        {"localhost", 1},
        {"ckpointlib", 1},
        {"ckpoint-prefix", 1},
        {"ckpoint-num", 1},
        {"genvexcl", 1},
        {"tmpdir", 1},
        {"errfile", 1},
        {"outfile", 1},
        {"perhost", 1},
        {"grr", 1},
        {"rr", 0},
        {"genvall", 0},
        {"genvnone", 0},
        {"envall", 0},
        {"envnone", 0},
        {"prepend-rank", 0},
        {"l", 0},
        {"verbose", 0},
        {"v", 0},
        {"info", 0},
        {"print-all-exitcodes", 0},
        {"disable-auto-cleanup", 0},
    };
    OptionTable out;
    for (const auto& [name, values] : base) {
      out.emplace(std::string("-") + name, values);
      out.emplace(std::string("--") + name, values);
    }
    return out;
  }();
  return kOptions;
}

// torchrun's (torch.distributed.run) options, with '-' and '_' spellings.
const OptionTable& TorchrunOptions() {
  static const OptionTable kOptions = [] {
    const std::pair<const char*, int> base[] = {
        {"nnodes", 1},
        {"nproc-per-node", 1},
        {"rdzv-backend", 1},
        {"rdzv-endpoint", 1},
        {"rdzv-id", 1},
        {"rdzv-conf", 1},
        {"standalone", 0},
        {"max-restarts", 1},
        {"monitor-interval", 1},
        {"start-method", 1},
        {"role", 1},
        {"module", 0},
        {"no-python", 0},
        {"run-path", 0},
        {"log-dir", 1},
        {"redirects", 1},
        {"tee", 1},
        {"local-ranks-filter", 1},
        {"node-rank", 1},
        {"master-addr", 1},
        {"master-port", 1},
        {"local-addr", 1},
        {"logs-specs", 1},
        {"numa-binding", 1},
        {"event-log-handler", 1},
        {"signals-to-handle", 1},
        {"virtual-local-rank", 0},
    };
    OptionTable out = {{"-m", 0}, {"-r", 1}, {"-t", 1}};
    for (const auto& [name, values] : base) {
      const std::string dashed = std::string("--") + name;
      std::string underscored = dashed;
      for (size_t i = 2; i < underscored.size(); ++i) {
        if (underscored[i] == '-') underscored[i] = '_';
      }
      out.emplace(dashed, values);
      out.emplace(underscored, values);
    }
    return out;
  }();
  return kOptions;
}

// How many values the option at argv[i] takes: `values`, except that a two-value option (Hydra's
// -genv NAME VALUE) also accepts one NAME=VALUE word.
int ValuesAt(const std::vector<std::string>& argv, size_t i, int values) {
  if (values == 2 && i + 1 < argv.size() && argv[i + 1].find('=') != std::string::npos) return 1;
  return values;
}

// Index of the first non-option token from argv[start] on, or argv.size() if none.
size_t FindProgram(const std::vector<std::string>& argv, const OptionTable& options, size_t start) {
  size_t i = start;
  while (i < argv.size()) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') return i;
    if (a.find('=') != std::string::npos) {
      ++i;
      continue;
    }
    auto it = options.find(a);
    if (it != options.end()) {
      i += 1 + static_cast<size_t>(ValuesAt(argv, i, it->second));
      continue;
    }
    ++i;  // a flag, or a short option with its value attached ("-N4")
  }
  return argv.size();
}

enum class Family { kNone, kOpenMpi, kHydra, kSrun, kTorchrun };

// The launcher family of command[0] and how many words name it (3 for `python -m
// torch.distributed.run`).
Family FamilyOf(const std::vector<std::string>& command, const LaunchContext& context,
                size_t* words) {
  *words = 1;
  if (command.empty()) return Family::kNone;
  const std::string name = Basename(command[0]);
  if (name == "mpiexec.hydra" || name == "mpiexec.mpich" || name == "mpirun.mpich") {
    return Family::kHydra;
  }
  if (name == "mpirun" || name == "mpiexec") {
    return context.mpi == MpiFlavor::kHydra ? Family::kHydra : Family::kOpenMpi;
  }
  if (name == "orterun" || name == "prterun" || name == "mpiexec.openmpi" ||
      name == "mpirun.openmpi") {
    return Family::kOpenMpi;
  }
  if (name == "srun") return Family::kSrun;
  if (name == "torchrun") return Family::kTorchrun;
  if (name.starts_with("python") && command.size() > 2 && command[1] == "-m" &&
      (command[2] == "torch.distributed.run" || command[2] == "torch.distributed.launch")) {
    *words = 3;
    return Family::kTorchrun;
  }
  return Family::kNone;
}

const OptionTable& OptionsOf(Family family) {
  switch (family) {
    case Family::kOpenMpi:
      return OpenMpiOptions();
    case Family::kHydra:
      return HydraOptions();
    case Family::kSrun:
      return SrunOptions();
    default:
      return TorchrunOptions();
  }
}

const char* FamilyName(Family family) {
  switch (family) {
    case Family::kOpenMpi:
    case Family::kHydra:
      return "mpirun";
    case Family::kSrun:
      return "srun";
    case Family::kTorchrun:
      return "torchrun";
    default:
      return "none";
  }
}

// The launcher's own words with what the ranks must inherit: Open MPI's -x per variable. Hydra
// passes the whole environment by default (and refuses a second -genvlist/-genvall/-genvnone),
// so only a list the user gave is extended; srun and torchrun pass everything on.
std::vector<std::string> LauncherHead(const std::vector<std::string>& command, size_t words,
                                      size_t end, Family family,
                                      const std::vector<std::string>& forward_env) {
  std::vector<std::string> head(command.begin(),
                                command.begin() + static_cast<std::ptrdiff_t>(words));
  if (family == Family::kOpenMpi) {
    for (const std::string& var : forward_env) {
      head.push_back("-x");
      head.push_back(var);
    }
  }
  head.insert(head.end(), command.begin() + static_cast<std::ptrdiff_t>(words),
              command.begin() + static_cast<std::ptrdiff_t>(end));
  if (family == Family::kHydra) {
    for (size_t i = words; i + 1 < head.size(); ++i) {
      const std::string& a = head[i];
      if (a == "-genvlist" || a == "--genvlist" || a == "-envlist" || a == "--envlist") {
        for (const std::string& var : forward_env) head[i + 1] += "," + var;
        ++i;
      }
    }
  }
  return head;
}

}  // namespace

Result<LaunchPlan> PlanLaunch(const std::vector<std::string>& command,
                              const std::vector<std::string>& agent,
                              const std::vector<std::string>& forward_env,
                              const LaunchContext& context) {
  if (command.empty()) return Result<LaunchPlan>::Error("nothing to run: give a command after --");
  size_t words = 1;
  const Family family = FamilyOf(command, context, &words);
  LaunchPlan plan;
  plan.launcher = FamilyName(family);

  // Explicit form: LAUNCHER ARGS -- PROGRAM ARGS.
  size_t separator = 0;
  for (size_t i = words; i < command.size(); ++i) {
    if (command[i] == "--") {
      separator = i;
      break;
    }
  }
  size_t program = 0;
  if (separator > 0) {
    program = separator + 1;
    if (family == Family::kNone) plan.launcher = command[0];
  } else if (family != Family::kNone) {
    program = FindProgram(command, OptionsOf(family), words);
  }
  if (program >= command.size()) {
    return Result<LaunchPlan>::Error("cannot tell where the program starts in '" + command[0] +
                                     " ...'; use the explicit form: rankscope run -- " +
                                     command[0] + " [launcher options] -- PROGRAM [ARGS]");
  }
  if (program == 0) {  // no launcher: the agent runs the program itself
    plan.argv = agent;
    plan.program_index = plan.argv.size();
    plan.argv.insert(plan.argv.end(), command.begin(), command.end());
    return plan;
  }
  const size_t launcher_end = separator > 0 ? separator : program;
  const std::vector<std::string> rest(command.begin() + static_cast<std::ptrdiff_t>(program),
                                      command.end());

  // srun / mpirun starting torchrun: the agent goes in front of torchrun's workers.
  size_t inner_words = 1;
  if (family != Family::kTorchrun && FamilyOf(rest, context, &inner_words) == Family::kTorchrun) {
    Result<LaunchPlan> inner = PlanLaunch(rest, agent, forward_env, context);
    if (!inner.ok()) return inner;
    plan.argv = LauncherHead(command, words, launcher_end, family, forward_env);
    plan.program_index = plan.argv.size() + inner->program_index;
    plan.argv.insert(plan.argv.end(), inner->argv.begin(), inner->argv.end());
    return plan;
  }

  if (family == Family::kTorchrun) {
    // Each worker must run the agent: --no-python, and the interpreter moves in front of the
    // script as torchrun itself would run it (`python -u script`, `python -u -m module`;
    // --run-path runs the script in the same way).
    std::vector<std::string> head(command.begin(),
                                  command.begin() + static_cast<std::ptrdiff_t>(words));
    bool module = false, no_python = false;
    const auto& options = TorchrunOptions();
    for (size_t i = words; i < launcher_end; ++i) {
      const std::string& a = command[i];
      if (a == "-m" || a == "--module") {
        module = true;
        continue;
      }
      if (a == "--run-path" || a == "--run_path") continue;
      if (a == "--no-python" || a == "--no_python") no_python = true;
      head.push_back(a);
      auto it = options.find(a);
      for (int v = 0; it != options.end() && v < it->second && i + 1 < launcher_end; ++v) {
        head.push_back(command[++i]);  // an option's value stays with it, whatever it looks like
      }
    }
    if (!no_python) head.push_back("--no-python");
    plan.argv = head;
    plan.argv.insert(plan.argv.end(), agent.begin(), agent.end());
    plan.program_index = plan.argv.size();
    if (!no_python) {
      plan.argv.push_back(words == 3 ? command[0] : context.torchrun_python);
      plan.argv.push_back("-u");  // unbuffered, as torchrun runs its workers
      if (module) plan.argv.push_back("-m");
    }
    plan.argv.insert(plan.argv.end(), rest.begin(), rest.end());
    return plan;
  }

  plan.argv = LauncherHead(command, words, launcher_end, family, forward_env);
  plan.argv.insert(plan.argv.end(), agent.begin(), agent.end());
  plan.program_index = plan.argv.size();
  plan.argv.insert(plan.argv.end(), rest.begin(), rest.end());
  return plan;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
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
