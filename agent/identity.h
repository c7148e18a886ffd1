// Who a rank is, read from the environment its launcher gave it. Pure: takes the environment
// as a map so it is tested with plain values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/rank_identity.h"

namespace rankscope {

using EnvMap = std::map<std::string, std::string>;

struct AgentIdentity {
  std::string launcher = "none";  // "slurm", "torchrun", "mpirun", "pmi", "none"
  std::string job_id;             // empty if the launcher has none
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int restart_count = 0;
  std::string node_name;  // SLURMD_NODENAME where present, else the host name
  std::string host;
};

// Reads the rank variables of torchrun, Open MPI, PMI (MPICH/Hydra, Intel MPI) and SLURM, in
// that order of precedence: an mpirun inside a SLURM allocation still sets SLURM_* for the
// batch step, so the MPI launcher's own variables win. `host` is the machine's host name.
AgentIdentity DetectIdentity(const EnvMap& env, const std::string& host);

// The current process environment as a map.
EnvMap CurrentEnvironment();

// Whom an agent (this process) registers as, for the rank `id` describes, running `program`: the
// job id is the session's when the launcher has none (proto/convert.h puts it on the wire).
RankIdentity RankIdentityOf(const AgentIdentity& id, const std::string& session_id,
                            const std::vector<std::string>& program);

}  // namespace rankscope
