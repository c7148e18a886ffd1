// What NVML says about a node's GPUs (read by agent/nvml_reader.h, through dlopen so rankscope
// builds and runs where there is no driver): PCIe link generation and width (current and
// maximum), NVLink links up, memory, names and bus ids. It complements the NCCL topology dump,
// which gives the tree but not whether a link trained down.
//
// A GPU that idles may train its PCIe link down to save power, so a current generation below the
// maximum means something only while the GPU works: the agent reads during the run and at its
// end, and MergeNvml keeps the best link each GPU showed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// `later` read again: GPUs matched by uuid keep the highest current PCIe generation and width
// and the most NVLinks up either read saw; GPUs only one read has are kept as they are.
NvmlSnapshot MergeNvml(NvmlSnapshot earlier, const NvmlSnapshot& later);

// What a health sweep (`rankscope sweep`, docs/sweep.md) wants to know of one GPU. Every
// counter is -1 when NVML cannot say (an older driver, a part without the feature: H100/H200
// remap rows instead of retiring pages).
struct NvmlGpuHealth {
  uint32_t index = 0;
  std::string name, uuid, bus_id;
  // ECC errors: corrected (single-bit) and uncorrected (double-bit), since the driver loaded
  // (volatile) and over the GPU's life (aggregate).
  int64_t ecc_corrected_volatile = -1, ecc_uncorrected_volatile = -1;
  int64_t ecc_corrected_aggregate = -1, ecc_uncorrected_aggregate = -1;
  // Page retirement (before Ampere): pages retired for single- and double-bit errors, and
  // whether a retirement waits for the next driver load (1) or not (0).
  int64_t retired_pages_sbe = -1, retired_pages_dbe = -1;
  int retired_pending = -1;
  // Row remapping (Ampere on): rows remapped for correctable / uncorrectable errors, a remap
  // waiting for a GPU reset, and a remap that failed (the GPU needs replacing).
  int64_t remapped_correctable = -1, remapped_uncorrectable = -1;
  int remap_pending = -1, remap_failed = -1;
  // Sampled during the watch: every clock-event ("throttle") reason seen (NVML's bit mask),
  // the hottest temperature, the highest power draw and the enforced limit.
  uint64_t clock_event_reasons = 0;
  bool clock_event_reasons_known = false;
  int temperature_max_c = -1;
  double power_max_w = -1, power_limit_w = -1;
  // PCIe: the best link seen while sampling (idle GPUs train down), the maximum, and the replay
  // counter (link-level retransmissions: a bad riser or slot) since driver load and its rise
  // during the watch.
  int pcie_gen_current = -1, pcie_gen_max = -1, pcie_width_current = -1, pcie_width_max = -1;
  int64_t pcie_replays = -1, pcie_replays_during = -1;
  // NVLink: links up of those the GPU has; the links' error counters summed over links, by kind
  // (replays, recoveries, CRC flit errors, CRC data errors: kNvlinkErrorKinds) since driver
  // load; the rise during the watch of the first three (retransmissions and link retraining:
  // trouble) and of the fourth, apart: on H200 it counts what NVLink 4's lane ECC corrected
  // (thousands per sweep on a healthy pair while nvidia-smi shows 0 CRC errors, matching the sum
  // of `nvidia-smi nvlink -ec`'s lane correction counts). -1 when no link gives a counter.
  int nvlinks_up = 0, nvlinks_total = 0;
  int64_t nvlink_errors[4] = {-1, -1, -1, -1};
  int64_t nvlink_errors_during = -1, nvlink_data_crc_during = -1;
  // XID events seen while watching, counted per XID (not a last value).
  std::map<uint64_t, int> xids;
};

// The kinds of NvmlGpuHealth::nvlink_errors, in order (nvmlNvLinkErrorCounter_t 0..3).
constexpr const char* kNvlinkErrorKinds[4] = {"replay", "recovery", "CRC flit", "CRC data"};

// Clock-event reasons that mean the GPU was slowed by something wrong (hardware slowdown,
// thermal or power-brake events), as opposed to idling, application clocks or the power cap.
constexpr uint64_t kNvmlBadClockEventReasons = 0x8 | 0x20 | 0x40 | 0x80;
// "hw_slowdown, sw_thermal" for a mask.
std::string NvmlClockEventReasonNames(uint64_t mask);

}  // namespace rankscope
