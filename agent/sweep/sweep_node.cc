#include "agent/sweep/sweep_node.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "agent/identity.h"
#include "agent/sweep/checks.h"
#include "agent/sweep/gpu_checks.h"
#include "agent/uplink.h"
#include "model/sweep_levels.h"
#include "proto/convert.h"

namespace rankscope {
namespace {

// A check may take a few times its budget on a loaded node; past that it is stuck.
DurationNs LimitFor(DurationNs budget) { return 4 * budget + 20 * kNsPerSec; }

}  // namespace

int RunSweepNode(const SweepNodeOptions& options) {
  const SweepLevel* level = FindSweepLevel(options.level);
  if (level == nullptr) {
    std::fprintf(stderr, "rankscope sweep-node: unknown level '%s' (quick, standard, deep)\n",
                 options.level.c_str());
    return 2;
  }
  const SweepLevel& budget = *level;

  const EnvMap env = CurrentEnvironment();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  AgentIdentity id = DetectIdentity(env, host);
  id.launcher = kSweepLauncher;
  id.rank = options.index;
  id.local_rank = 0;
  id.world_size = options.count;
  if (!options.node.empty()) id.node_name = options.node;

  // The checks run in children forked from this process, so they run before the uplink starts
  // its gRPC threads (a fork of a multithreaded process may inherit a held lock).
  std::vector<std::string> scratch;
  std::vector<std::string> wanted = options.scratch;
  if (wanted.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    wanted = {tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp", "/dev/shm"};
  }
  for (const std::string& path : wanted) {  // once each: a repeated series breaks the metrics
    if (std::find(scratch.begin(), scratch.end(), path) == scratch.end()) scratch.push_back(path);
  }
  std::vector<SweepCheckResult> results;
  // Each check announced on stdout (the sweep's progress line reads it from the node's log).
  auto run = [&results, &id](const std::string& name, DurationNs limit, auto check) {
    std::printf("rankscope sweep-node: %s: running %s\n", id.node_name.c_str(), name.c_str());
    std::fflush(stdout);
    for (SweepCheckResult& r : RunIsolated(name, limit, check)) results.push_back(std::move(r));
  };
  run("clock.realtime_minus_monotonic", 5 * kNsPerSec, [] { return MeasureClockAnchor(); });
  for (const std::string& path : scratch) {
    run("fs.free_bytes", 20 * kNsPerSec, [path] { return MeasureFreeSpace(path); });
  }
  run("mem.bandwidth", LimitFor(budget.memory),
      [&budget] { return MeasureMemoryBandwidth(budget.memory); });
  run("cpu.flops", LimitFor(budget.flops), [&budget] { return MeasureCpuFlops(budget.flops); });
  // GPUs (nothing on a node without a driver or GPUs): NVML watches health in a child of its own
  // while the performance checks load the GPUs, so XIDs and clock-event reasons under load count.
  const char* nvml_env = std::getenv("RANKSCOPE_NVML_LIBRARY");
  const std::string nvml = nvml_env != nullptr ? nvml_env : "libnvidia-ml.so.1";
  const char* nccl_env = std::getenv("RANKSCOPE_NCCL_LIBRARY");
  const std::string nccl = nccl_env != nullptr ? nccl_env : "libnccl.so.2";
  {
    IsolatedCheck health("gpu.health",
                         [&nvml](int stop_fd) { return WatchGpuHealth(stop_fd, nvml); });
    run("gpu.copy_bandwidth", LimitFor(budget.gpu),
        [&budget] { return MeasureGpuCopyBandwidth(budget.gpu); });
    run("gpu.fp32_flops", LimitFor(budget.gpu), [&budget] { return MeasureGpuFlops(budget.gpu); });
    run("gpu.nccl_allreduce_busbw", LimitFor(budget.gpu),
        [&budget, &nccl] { return MeasureNcclAllReduce(budget.gpu, budget.nccl_bytes, nccl); });
    for (SweepCheckResult& r : health.Collect(20 * kNsPerSec)) results.push_back(std::move(r));
  }
  UplinkOptions up;
  up.address = options.coordinator;
  up.token = options.token;
  Uplink uplink(up, ToProto(RankIdentityOf(id, options.session_id, {"rankscope", "sweep-node"}),
                            options.session_id));
  uplink.SetProgramPid(getpid());
  uplink.Start();

  for (const SweepCheckResult& r : results) uplink.AddSweepCheck(ToProto(r));
  uplink.Finish(0, 0);
  if (!uplink.registered()) {
    std::fprintf(stderr, "rankscope sweep-node: node %s: the coordinator %s did not answer\n",
                 id.node_name.c_str(), options.coordinator.c_str());
    return 1;
  }
  return 0;
}

}  // namespace rankscope
