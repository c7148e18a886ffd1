// Reads NVML (agent/nvml_reader.h) for the report, on local rank 0's agent of each node: a
// while after the program starts (its GPUs are busy then, so their PCIe links are trained up)
// and then every `period`, merged. Runs on its own thread so a slow driver (nvmlInit can take
// hundreds of ms) never delays the rank; only a job shorter than the first delay pays for one
// read at its end.
//
//   RANKSCOPE_NVML=0              do not read NVML
//   RANKSCOPE_NVML_LIBRARY=PATH   the library to dlopen (default libnvidia-ml.so.1)
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/nvml_reader.h"
#include "core/time.h"
#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

class NvmlSampler {
 public:
  NvmlSampler(std::string library, DurationNs first_read_after, DurationNs period);
  ~NvmlSampler();  // joins the thread
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  // Starts the reading thread.
  void Start();
  // Stops the thread and returns the node's report: every successful read merged, or the last
  // error when none worked. Reads once now if no read happened yet. Call once.
  v1::NvmlReport Finish();

 private:
  void Loop();
  void Record(Result<NvmlSnapshot> read);  // requires mu_

  const std::string library_;
  const DurationNs first_read_after_;
  const DurationNs period_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool finishing_ = false;              // guarded by mu_
  bool read_once_ = false;              // guarded by mu_
  std::optional<NvmlSnapshot> merged_;  // guarded by mu_
  std::string error_;                   // guarded by mu_: the last failed read's message
  std::thread thread_;
};

}  // namespace rankscope
