// Reads NVML through dlopen("libnvidia-ml.so.1") (the data model: model/topology/nvml.h), so
// rankscope builds and runs where there is no driver. The agent's side: it reads the machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/topology/nvml.h"

namespace rankscope {

// Reads every GPU of the node through `library` (default: the driver's libnvidia-ml.so.1).
// Fails with a message naming the library and the step that failed; a value one GPU cannot give
// stays -1 / 0 rather than failing the whole read.
Result<NvmlSnapshot> ReadNvml(const std::string& library = "libnvidia-ml.so.1");

// Watches a node's GPUs for a while: Start registers for XID events on every GPU, Sample reads
// the gauges (call it every few hundred ms while the GPUs work), WaitEvents collects XIDs, and
// Finish reads the counters and returns one record per GPU. For `rankscope sweep-node`, which
// runs it in a child process of its own. Where the library is installed but no driver is
// loaded (a CPU node), Start succeeds and the watch has no GPUs.
class NvmlHealthWatch {
 public:
  static Result<std::unique_ptr<NvmlHealthWatch>> Start(
      const std::string& library = "libnvidia-ml.so.1");
  ~NvmlHealthWatch();
  NvmlHealthWatch(const NvmlHealthWatch&) = delete;
  NvmlHealthWatch& operator=(const NvmlHealthWatch&) = delete;

  void Sample();
  void WaitEvents(int timeout_ms);
  std::vector<NvmlGpuHealth> Finish();
  // Why XID events are not watched ("" when they are): the GPUs are then still read.
  const std::string& xid_watch_error() const { return xid_watch_error_; }

 private:
  NvmlHealthWatch() = default;
  struct State;
  std::unique_ptr<State> state_;
  std::string xid_watch_error_;
};

}  // namespace rankscope
