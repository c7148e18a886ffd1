// A self-contained page of kernel analyses (`rankscope inspect ncu --html FILE`): the roofline
// chart (log-log, each GPU's compute roofs and DRAM roof, ridge points marked, each kernel a
// labelled dot) and each kernel's warp-stall bars, as inline SVG; no script, no network.
#pragma once

#include <string>
#include <vector>

#include "model/ncu/kernel_analysis.h"

namespace rankscope {

// The chart alone (an <svg> element), for pages that hold it with other things (report.html).
// Empty when no kernel has both FLOPs and DRAM traffic to place.
std::string RooflineSvg(const std::vector<KernelAnalysis>& kernels);

// One kernel's stall reasons as horizontal bars (cycles per issued instruction); empty without
// stalls.
std::string StallBarsSvg(const KernelAnalysis& kernel);

// The whole page: the chart, then per kernel its verdict, figures and stall bars.
std::string KernelsHtml(const std::vector<KernelAnalysis>& kernels, const std::string& title);

// "void at::vectorized_elementwise_kernel<8, ...>(int, T2, T3)" -> "vectorized_elementwise_kernel":
// the function's own name, for labels.
std::string ShortKernelName(const std::string& demangled);

}  // namespace rankscope
