// What one health check of `rankscope sweep` measured on one node: the record that travels from
// `rankscope sweep-node` (agent/sweep/) to the sweep's coordinator (proto SweepCheck) and into
// the verdicts (coordinator/sweep/).
#pragma once

#include <string>

namespace rankscope {

struct SweepCheckResult {
  std::string name;     // "mem.bandwidth", "fs.free_ratio", ...
  std::string subject;  // what it measured when a check measures several things ("/dev/shm")
  double value = 0;     // meaningful only when error is empty
  // A base unit: "bytes_per_second", "bytes", "ratio", "flops", "seconds", "celsius", "watts";
  // "total" for a counter that only grows (ECC errors over the GPU's life: a Prometheus counter);
  // "" for a count of events while the sweep watched.
  std::string unit;
  std::string error;   // why there is no value: the check failed, crashed or timed out
  std::string detail;  // for a person: e.g. "12.0 GiB of 400 GiB free"
  // The GPU model a GPU check measured ("NVIDIA H200"): it picks the model's thresholds and the
  // peers the figure is compared with. Empty for node checks.
  std::string model = {};

  // name and subject: what identifies the figure across nodes and nights.
  std::string key() const { return subject.empty() ? name : name + ":" + subject; }
};

}  // namespace rankscope
