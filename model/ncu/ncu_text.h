// Text and JSON forms of kernel analyses (`rankscope inspect ncu FILE [--json]`). JSON field
// names are the public contract; figures the file did not have are null, never a made-up 0.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/ncu/kernel_analysis.h"

namespace rankscope {

// One block per kernel launch: verdict and why, roofline figures, occupancy, top stalls with
// their fixes.
std::string DescribeKernels(const std::vector<KernelAnalysis>& kernels);

nlohmann::ordered_json KernelAnalysesToJson(const std::vector<KernelAnalysis>& kernels);

// 4.8e12, "B/s" -> "4.8 TB/s": three significant digits and an SI prefix, for FLOP/s and bytes.
std::string SiFigure(double v, const char* unit);

}  // namespace rankscope
