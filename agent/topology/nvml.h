// What NVML says about a node's GPUs, read through dlopen("libnvidia-ml.so.1") so rankscope
// builds and runs where there is no driver: PCIe link generation and width (current and
// maximum), NVLink links up, memory, names and bus ids. It complements the NCCL topology dump,
// which gives the tree but not whether a link trained down.
//
// A GPU that idles may train its PCIe link down to save power, so a current generation below the
// maximum means something only while the GPU works: the agent reads during the run and at its
// end, and MergeNvml keeps the best link each GPU showed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace rankscope {

struct NvmlGpu {
  uint32_t index = 0;  // NVML's index (all GPUs of the node, whatever CUDA_VISIBLE_DEVICES says)
  std::string name;    // "NVIDIA H200"
  std::string uuid;
  std::string bus_id;         // "00000000:18:00.0" as NVML prints it
  int pcie_gen_current = -1;  // -1: NVML could not say
  int pcie_gen_max = -1;      // the most this GPU and its slot support
  int pcie_width_current = -1;
  int pcie_width_max = -1;
  int nvlinks_up = 0;     // links in state enabled
  int nvlinks_total = 0;  // links NVML knows on this GPU (0: no NVLink)
  uint64_t memory_bytes = 0;
};

struct NvmlSnapshot {
  std::string driver_version;
  std::vector<NvmlGpu> gpus;
};

// Reads every GPU of the node through `library` (default: the driver's libnvidia-ml.so.1).
// Fails with a message naming the library and the step that failed; a value one GPU cannot give
// stays -1 / 0 rather than failing the whole read.
Result<NvmlSnapshot> ReadNvml(const std::string& library = "libnvidia-ml.so.1");

// `later` read again: GPUs matched by uuid keep the highest current PCIe generation and width
// and the most NVLinks up either read saw; GPUs only one read has are kept as they are.
NvmlSnapshot MergeNvml(NvmlSnapshot earlier, const NvmlSnapshot& later);

}  // namespace rankscope
