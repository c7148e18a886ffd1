// `rankscope attach JOBID`: a window of a running SLURM job. It checks the job (exists, yours,
// running), starts a coordinator of its own (address and secret passed in the environment), and
// runs one `rankscope attach-node` task per node inside the allocation (`srun --jobid=J
// --overlap`). Each finds the job's processes on its node by their environment, never by process
// name:
//  - ranks launched with `rankscope run [--dormant] -- srun ...`: their agents (SLURM_JOB_ID and
//    the RANKSCOPE_COORDINATOR / RANKSCOPE_TOKEN the run handed them) get a capture window from
//    their own coordinator; the run writes that report when the job ends, as usual;
//  - ranks launched without rankscope: sampled from outside (agent/outside_sampler.h) and sent to
//    the attach's coordinator, which writes a session folder of its own (rankscope-attach-JOBID)
//    saying what it could and could not see. The job is never stopped or slowed beyond reading
//    /proc once a second.
#pragma once

#include <string>

namespace rankscope {

struct AttachOptions {
  std::string job_id;
  double for_s = 10;
  std::string out_dir;       // sampled from outside: the session folder (rankscope-attach-JOB)
  std::string bind_address;  // of the attach's coordinator; empty: this host's reachable one
  bool quiet = false;
};

// On the login side: checks the job, runs attach-node on each of its nodes, and writes the
// session folder of what was sampled from outside.
int RunAttach(const AttachOptions& options, const std::string& self_exe);

// On one node, as a task of the job (srun --overlap): triggers the window of the job's agents,
// or samples its ranks from outside. 0: done; 3: nothing of the job on this node.
int RunAttachNode(const AttachOptions& options);

}  // namespace rankscope
