// Nsight Compute's raw-page CSV parser and the kernel analysis behind `inspect ncu` (model/ncu):
// CSV cut short, misquoted, with odd units or numbers, or another CSV altogether.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "model/ncu/kernel_analysis.h"
#include "model/ncu/ncu_report.h"
#include "model/ncu/ncu_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto report = rankscope::ParseNcuRawCsv(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  if (report.ok()) {
    std::vector<rankscope::KernelAnalysis> kernels;
    for (const rankscope::NcuLaunch& launch : report.value().launches) {
      kernels.push_back(rankscope::AnalyzeKernel(launch));
    }
    (void)rankscope::DescribeKernels(kernels);
    rankscope::fuzz::CheckJsonRoundTrip(rankscope::KernelAnalysesToJson(kernels),
                                        "KernelAnalysesToJson");
  }
  return 0;
}
