// Datasheet peaks of the GPUs rankscope's users run on, for Nsight Compute reports that lack
// ncu's own `*.peak_sustained` metrics (a report made with a few sections only). ncu's peaks
// follow the clocks of the run (ncu locks them to base by default); these are NVIDIA's figures
// at boost clock, so a share of them reads lower than ncu's own.
#pragma once

#include <optional>
#include <string_view>

namespace rankscope {

struct GpuPeaks {
  const char* model;  // what the table matched, e.g. "H100 SXM"
  double fp64_flops;  // FP64 on the FMA pipes (not the FP64 tensor cores)
  double fp32_flops;
  double tensor_16bit_flops;  // BF16/FP16 tensor cores, dense
  double dram_bps;            // HBM bandwidth
};

// The peaks of the GPU ncu names `device` ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA
// A100-SXM4-40GB", ...), or nullopt for one not in the table.
std::optional<GpuPeaks> DatasheetPeaks(std::string_view device);

}  // namespace rankscope
