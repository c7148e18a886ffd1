#include "coordinator/advise/next_steps.h"

#include <algorithm>
#include <utility>

namespace rankscope {
namespace {

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

enum class Launcher { kNone, kMpirun, kSrun, kTorchrun };

Launcher LauncherFromWord(std::string_view word) {
  const std::string_view base = Basename(word);
  if (base == "mpirun" || base == "mpiexec" || base == "orterun" || base == "prterun") {
    return Launcher::kMpirun;
  }
  // attach: ranks sampled from outside, in a SLURM job.
  if (base == "srun" || base == "slurm" || base == "attach") return Launcher::kSrun;
  if (base == "torchrun" || base == "torch.distributed.run") return Launcher::kTorchrun;
  return Launcher::kNone;
}

// The variable holding the world rank in the program's environment under that launcher.
std::string RankVariable(Launcher launcher) {
  switch (launcher) {
    case Launcher::kMpirun:
      return "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}";
    case Launcher::kSrun:
      return "$SLURM_PROCID";
    case Launcher::kTorchrun:
      return "$RANK";
    case Launcher::kNone:
      break;
  }
  return "";
}

std::vector<std::string> ProgramOf(const Session& session, int rank) {
  const RankData* data = session.FindRank(rank);
  if (data != nullptr && !data->id.program.empty()) return data->id.program;
  for (const RankData& other : session.ranks) {
    if (!other.id.program.empty()) return other.id.program;
  }
  return {};
}

// The launcher part of the user's command: the words before the program. The program's first
// word may have been resolved to a full path and a Python script may run under an interpreter the
// command does not name, so a tail of the command matches a tail of the program when the words
// agree, the first compared by basename.
std::vector<std::string> LauncherPrefix(const std::vector<std::string>& command,
                                        const std::vector<std::string>& program) {
  for (size_t i = 1; i < command.size(); ++i) {
    const size_t tail = command.size() - i;
    if (tail > program.size()) continue;
    const size_t j = program.size() - tail;
    if (Basename(command[i]) != Basename(program[j])) continue;
    if (!std::equal(command.begin() + static_cast<std::ptrdiff_t>(i) + 1, command.end(),
                    program.begin() + static_cast<std::ptrdiff_t>(j) + 1)) {
      continue;
    }
    std::vector<std::string> prefix(command.begin(),
                                    command.begin() + static_cast<std::ptrdiff_t>(i));
    // `rankscope run LAUNCHER... -- PROGRAM...` separates the two with a `--` of its own.
    if (!prefix.empty() && prefix.back() == "--") prefix.pop_back();
    return prefix;
  }
  return {};
}

std::vector<std::string> DefaultPrefix(Launcher launcher, int world_size) {
  const std::string n = std::to_string(std::max(world_size, 1));
  switch (launcher) {
    case Launcher::kMpirun:
      return {"mpirun", "-np", n};
    case Launcher::kSrun:
      return {"srun", "-n", n};
    case Launcher::kTorchrun:
      return {"torchrun", "--nproc-per-node", n};
    case Launcher::kNone:
      break;
  }
  return {};
}

}  // namespace

std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  const bool safe = std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/' || c == ':' || c == '=' || c == ',' || c == '+' ||
           c == '@' || c == '%';
  });
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(w);
  }
  return out;
}

namespace {

// The job's launcher words (its own, else a default one for the launcher the session names) and
// which launcher they are; empty words when the program ran without one.
std::pair<std::vector<std::string>, Launcher> JobLauncher(const Session& session,
                                                          const std::vector<std::string>& program) {
  std::vector<std::string> prefix = LauncherPrefix(session.command, program);
  const Launcher launcher =
      prefix.empty() ? LauncherFromWord(session.launcher) : LauncherFromWord(prefix.front());
  if (prefix.empty()) prefix = DefaultPrefix(launcher, session.world_size);
  if (launcher == Launcher::kNone) prefix.clear();
  // torchrun treats its first argument as a Python script unless told otherwise.
  if (launcher == Launcher::kTorchrun &&
      std::find_if(prefix.begin(), prefix.end(), [](const std::string& w) {
        return w == "--no-python" || w == "--no_python";
      }) == prefix.end()) {
    prefix.push_back("--no-python");
  }
  return {prefix, launcher};
}

}  // namespace

std::string RelaunchWithToolOnRank(const Session& session, int rank,
                                   const std::vector<std::string>& tool_argv) {
  const std::vector<std::string> program = ProgramOf(session, rank);
  auto [words, launcher] = JobLauncher(session, program);
  if (words.empty()) {
    words = tool_argv;
    words.insert(words.end(), program.begin(), program.end());
    return ShellJoin(words);
  }
  const std::string script = "if [ \"" + RankVariable(launcher) + "\" = " + std::to_string(rank) +
                             " ]; then exec " + ShellJoin(tool_argv) +
                             " \"$@\"; else exec \"$@\"; fi";
  words.insert(words.end(), {"bash", "-c", script, "_"});
  words.insert(words.end(), program.begin(), program.end());
  return ShellJoin(words);
}

std::string RelaunchWithToolOnEveryRank(const Session& session,
                                        const std::vector<std::string>& tool_argv) {
  const std::vector<std::string> program = ProgramOf(session, 0);
  std::vector<std::string> words = JobLauncher(session, program).first;
  words.insert(words.end(), tool_argv.begin(), tool_argv.end());
  words.insert(words.end(), program.begin(), program.end());
  return ShellJoin(words);
}

std::string JobLauncherName(const Session& session) {
  switch (JobLauncher(session, ProgramOf(session, 0)).second) {
    case Launcher::kMpirun:
      return "mpirun";
    case Launcher::kSrun:
      return "srun";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kNone:
      break;
  }
  return "";
}

std::string RelaunchWithEnvironment(const Session& session,
                                    const std::vector<std::string>& assignments) {
  std::vector<std::string> command = session.command;
  if (command.empty()) command = {"./app"};
  // mpirun starts remote ranks without the caller's environment unless -x names it.
  if (LauncherFromWord(command.front()) == Launcher::kMpirun) {
    std::vector<std::string> words = {command.front()};
    for (const std::string& a : assignments) words.insert(words.end(), {"-x", a});
    words.insert(words.end(), command.begin() + 1, command.end());
    return ShellJoin(words);
  }
  std::vector<std::string> words = assignments;
  words.insert(words.end(), command.begin(), command.end());
  return ShellJoin(words);
}

std::string RankOutputName(const Session& session, int rank) {
  switch (JobLauncher(session, ProgramOf(session, rank)).second) {
    case Launcher::kMpirun:
      return "rank%q{OMPI_COMM_WORLD_RANK}";
    case Launcher::kSrun:
      return "rank%q{SLURM_PROCID}";
    case Launcher::kTorchrun:
      return "rank%q{RANK}";
    case Launcher::kNone:
      break;
  }
  return "rank" + std::to_string(rank);
}

std::string OnRankNode(const Session& session, int rank, const std::vector<std::string>& argv) {
  const RankData* data = session.FindRank(rank);
  const std::string node =
      data == nullptr ? "" : (data->id.node.empty() ? data->id.host : data->id.node);
  if (node.empty()) return ShellJoin(argv);
  const std::string job_id = !session.job_id.empty() ? session.job_id
                             : data != nullptr       ? data->id.job_id
                                                     : "";
  if (LauncherFromWord(session.launcher) == Launcher::kSrun && !job_id.empty()) {
    std::vector<std::string> words = {"srun", "--jobid=" + job_id, "--overlap", "-w", node, "-N1",
                                      "-n1"};
    words.insert(words.end(), argv.begin(), argv.end());
    return ShellJoin(words);
  }
  // ssh hands its arguments to the remote shell as one string: quote the command once more.
  return "ssh " + ShellQuote(node) + " " + ShellQuote(ShellJoin(argv));
}

bool IsPythonProgram(const Session& session, int rank) {
  const std::vector<std::string> program = ProgramOf(session, rank);
  return !program.empty() && Basename(program.front()).starts_with("python");
}

}  // namespace rankscope
