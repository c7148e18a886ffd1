// `rankscope attach` on a job launched without rankscope: one node's share of sampling the job's
// ranks from outside for a window. The ranks are found by their environment (SLURM_JOB_ID, a
// job step, rank variables), never by process name; each is registered with the attach's
// coordinator as an agent of its own (real gRPC, the session secret) and sends what can be seen
// from outside: CPU, I/O and block-I/O delay of its process tree from /proc over the window, the
// NCCL log it already writes (NCCL_DEBUG_FILE), and the node's GPUs through NVML. What cannot be
// seen this way (MPI and NCCL call timings, NVTX ranges, CUDA kernels) is said in a notice per
// rank, with how to launch the job next time to see it.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <string>
#include <vector>

#include "agent/identity.h"
#include "agent/proc_environ.h"
#include "core/time.h"

namespace rankscope {

// The launcher name outside-sampled ranks register with: their reports know them by it.
inline constexpr char kOutsideLauncher[] = "attach";

struct JobRank {
  pid_t pid = 0;
  AgentIdentity id;  // from its environment (DetectIdentity)
  EnvMap env;
  std::vector<std::string> command;  // /proc/PID/cmdline
};

// The rank processes of SLURM job `job_id` on node `node` among the processes of `uid` under
// `proc_root`: tasks of a job step (SLURM_STEP_ID set, not `own_step`, the attach's own step)
// with rank variables, on this node (SLURMD_NODENAME, where set). Of a launcher and the workers
// it starts in one step (torchrun, mpirun under srun), the workers; of a rank and its children
// with the same rank (DataLoader workers, a shell's child), the rank's topmost process. Sorted
// by rank.
std::vector<JobRank> FindJobRanks(const std::string& job_id, const std::string& own_step,
                                  const std::string& node, uid_t uid,
                                  const std::string& proc_root = "/proc");

struct OutsideSamplingOptions {
  std::string coordinator;  // host:port of the attach's coordinator
  std::string token;
  std::string session_id;
  std::string node;
  DurationNs window = 10 * kNsPerSec;
  std::string nvml_library = "libnvidia-ml.so.1";  // empty: no NVML
  // Set (from a signal handler: SLURM ends the step when the job ends) to end the window early.
  const volatile sig_atomic_t* stop = nullptr;
};

// Samples `ranks` for the window and sends each as an agent; returns how many reached the
// coordinator. The window ends early when every rank has exited or *stop is set; the ranks'
// notices say so.
int SampleRanksFromOutside(const std::vector<JobRank>& ranks,
                           const OutsideSamplingOptions& options);

}  // namespace rankscope
