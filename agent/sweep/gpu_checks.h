// The GPU checks of `rankscope sweep` (docs/sweep.md). Health comes from NVML, watched in a child
// process for the whole GPU part of the sweep (so XID events and clock-event reasons are seen
// while the GPUs work); performance from the CUDA driver API and NCCL, each loaded with dlopen in
// a child process of its own (checks.h RunIsolated). On a node without a driver or GPUs every
// function here returns nothing, so CPU nodes run the same sweep.
//
// Results are per GPU: subject "gpuN" (N in PCI bus order, as nvidia-smi numbers them) and model
// the GPU's name ("NVIDIA H200"), which selects per-model thresholds and the peers a figure is
// compared with.
#pragma once

#include <string>
#include <vector>

#include "agent/nvml_reader.h"
#include "core/time.h"
#include "model/sweep_result.h"

namespace rankscope {

// The health figures of the watched GPUs (pure): ECC counts, retired pages or remapped rows,
// clock-event reasons that mean trouble, hottest temperature and power, PCIe generation and
// lanes below the maximum, PCIe replays, NVLinks down and their error counters, and XID events
// counted per XID. `xid_watch_error` (why XIDs could not be watched) becomes an error result.
std::vector<SweepCheckResult> GpuHealthResults(const std::vector<NvmlGpuHealth>& gpus,
                                               const std::string& xid_watch_error);

// Watches the GPUs through NVML `library` until `stop_fd` reads end-of-file (the sweep closes it
// after the GPU performance checks), sampling every 200 ms, then returns GpuHealthResults.
// Nothing when NVML cannot be loaded (no driver); an error result when it loads but fails.
std::vector<SweepCheckResult> WatchGpuHealth(int stop_fd, const std::string& library);

// Per GPU: "gpu.h2d_bandwidth" and "gpu.d2h_bandwidth" (pinned host memory) and
// "gpu.d2d_bandwidth" (a copy within the GPU, read plus write bytes), the best round within
// `budget` for each GPU.
std::vector<SweepCheckResult> MeasureGpuCopyBandwidth(DurationNs budget);

// Per GPU: "gpu.fp32_flops", FP32 fused multiply-add throughput of a kernel that keeps every SM
// busy (loaded as PTX, so the driver compiles it for whatever GPU it finds).
std::vector<SweepCheckResult> MeasureGpuFlops(DurationNs budget);

// "gpu.nccl_allreduce_busbw", subject "node": NCCL all-reduce bus bandwidth across all the
// node's GPUs in one process (nccl-tests' bus bandwidth, 2(n-1)/n of the algorithm bandwidth),
// `bytes` per call. Nothing with fewer than two GPUs or when `nccl_library` cannot be loaded.
std::vector<SweepCheckResult> MeasureNcclAllReduce(DurationNs budget, size_t bytes,
                                                   const std::string& nccl_library);

// The PTX of MeasureGpuFlops' kernel (exposed for a test that assembles it with ptxas).
std::string FmaKernelPtx();

}  // namespace rankscope
