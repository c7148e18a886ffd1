// For the tests of model/ncu: the real H200 Nsight Compute fixtures (tests/fixtures/h200-ncu)
// read and analysed, launch by launch in file order.
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/ncu/kernel_analysis.h"
#include "model/ncu/ncu_file.h"

namespace rankscope {

inline const std::string kNcuFixtures = std::string(RANKSCOPE_FIXTURES_DIR) + "/h200-ncu/";

inline std::vector<KernelAnalysis> AnalyzeFixtures(const std::vector<std::string>& files) {
  std::vector<KernelAnalysis> out;
  for (const std::string& file : files) {
    Result<NcuReport> r = ParseNcuRawCsvFile(kNcuFixtures + file);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) continue;
    for (const NcuLaunch& l : r->launches) out.push_back(AnalyzeKernel(l));
  }
  return out;
}

}  // namespace rankscope
