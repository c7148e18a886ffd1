#include "agent/identity.h"

#include <unistd.h>

#include <charconv>
#include <optional>

extern char** environ;

namespace rankscope {
namespace {

std::optional<int> GetInt(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  int value = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string GetString(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// Fills rank fields from the first variable set in each list.
bool FillFrom(const EnvMap& env, const char* rank, const char* local_rank, const char* size,
              AgentIdentity& id) {
  std::optional<int> r = GetInt(env, rank);
  if (!r) return false;
  id.rank = *r;
  id.local_rank = GetInt(env, local_rank).value_or(0);
  id.world_size = GetInt(env, size).value_or(1);
  return true;
}

// srun started this task itself (one SLURM task per rank), rather than a launcher that srun
// started (Hydra's proxies, whose SLURM_PROCID counts proxies): SLURM's task numbering is then the
// ranks'. srun --mpi=pmix sets PMIX_RANK but no PMI_SIZE; --mpi=pmi2 sets PMI_RANK/PMI_SIZE equal
// to SLURM's.
bool StartedBySrun(const EnvMap& env) {
  if (!env.count("SLURM_STEP_ID") || !env.count("SLURM_PROCID")) return false;
  if (!env.count("PMI_RANK")) return true;
  return GetInt(env, "PMI_RANK") == GetInt(env, "SLURM_PROCID") &&
         GetInt(env, "PMI_SIZE") == GetInt(env, "SLURM_NTASKS");
}

}  // namespace

AgentIdentity DetectIdentity(const EnvMap& env, const std::string& host) {
  AgentIdentity id;
  id.host = host;
  if (env.count("TORCHELASTIC_RUN_ID") && FillFrom(env, "RANK", "LOCAL_RANK", "WORLD_SIZE", id)) {
    id.launcher = "torchrun";
    id.job_id = GetString(env, "TORCHELASTIC_RUN_ID");
    id.restart_count = GetInt(env, "TORCHELASTIC_RESTART_COUNT").value_or(0);
  } else if (FillFrom(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                      "OMPI_COMM_WORLD_SIZE", id)) {
    id.launcher = "mpirun";
  } else if (StartedBySrun(env) &&
             FillFrom(env, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", id)) {
    id.launcher = "slurm";
  } else if (FillFrom(env, "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", id) ||
             FillFrom(env, "PMIX_RANK", "MPI_LOCALRANKID", "PMI_SIZE", id)) {
    id.launcher = "pmi";
  }
  // SLURM names the job and node even when another launcher started the ranks inside it.
  if (id.job_id.empty()) id.job_id = GetString(env, "SLURM_JOB_ID");
  id.node_name = GetString(env, "SLURMD_NODENAME");
  if (id.node_name.empty()) id.node_name = host;
  return id;
}

EnvMap CurrentEnvironment() {
  EnvMap env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

RankIdentity RankIdentityOf(const AgentIdentity& id, const std::string& session_id,
                            const std::vector<std::string>& program) {
  RankIdentity out;
  out.job_id = id.job_id.empty() ? session_id : id.job_id;
  out.launcher = id.launcher;
  out.rank = id.rank;
  out.local_rank = id.local_rank;
  out.world_size = id.world_size;
  out.node = id.node_name;
  out.host = id.host;
  out.agent_pid = static_cast<int>(getpid());
  out.restart_count = id.restart_count;
  out.program = program;
  return out;
}

}  // namespace rankscope
