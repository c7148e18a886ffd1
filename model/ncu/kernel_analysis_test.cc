#include "model/ncu/kernel_analysis.h"

#include "gtest/gtest.h"
#include "model/ncu/gpu_peaks.h"
#include "model/ncu/ncu_file.h"
#include "model/ncu/ncu_fixtures_for_tests.h"
#include "model/ncu/ncu_text.h"

namespace rankscope {
namespace {

const StallReason* Stall(const KernelAnalysis& k, const std::string& reason) {
  for (const StallReason& s : k.stalls) {
    if (s.reason == reason) return &s;
  }
  return nullptr;
}

// cuBLAS's bf16 GEMM (4096^3, 218.8 us): the tensor cores at 91 % of their peak, far right of
// the ridge; one block per SM by design (168 registers, 214 KB of shared memory).
TEST(AnalyzeKernel, TheGemmIsComputeBoundNearTheTensorRoof) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"torch_gemm_gelu.raw.csv"});
  ASSERT_EQ(k.size(), 2u);
  const KernelAnalysis& gemm = k[0];
  EXPECT_EQ(gemm.bound, KernelBound::kCompute) << gemm.why;
  ASSERT_TRUE(gemm.dominant);
  EXPECT_EQ(gemm.dominant->precision, "tensor");
  EXPECT_EQ(gemm.dominant->detail, "hgmma_src_bf16_dst_fp32_sparsity_off");
  // 2 x 4096^3 FLOP in 218.8 us = 628 TFLOP/s.
  EXPECT_NEAR(gemm.dominant->achieved_flops, 2.0 * 4096 * 4096 * 4096 / 218.784e-6, 0.01e15);
  EXPECT_NEAR(100 * gemm.dominant->achieved_flops / gemm.dominant->peak_flops, 90.7, 0.5);
  EXPECT_GT(gemm.intensity, 5 * gemm.ridge);  // 779 FLOP/byte against a ridge of 144
  EXPECT_GT(gemm.pct_of_roof, 85);
  EXPECT_EQ(gemm.occupancy.blocks_per_sm, 1);
  EXPECT_EQ(gemm.occupancy.limiters, (std::vector<std::string>{"registers", "shared memory"}));
  EXPECT_NEAR(gemm.occupancy.theoretical_pct, 18.75, 1e-6);
  EXPECT_EQ(gemm.stalls.front().reason, "barrier");
  EXPECT_NE(Stall(gemm, "gmma"), nullptr);
  EXPECT_TRUE(gemm.missing.empty());
}

// GELU over 4096x4096 bf16 (29.8 us): left of the FP32 ridge, so the DRAM roof bounds it; at a
// third of that roof, with the SM's issue slots busy on conversions and erf.
TEST(AnalyzeKernel, TheGeluIsMemoryBound) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"torch_gemm_gelu.raw.csv"});
  ASSERT_EQ(k.size(), 2u);
  const KernelAnalysis& gelu = k[1];
  EXPECT_EQ(gelu.bound, KernelBound::kMemory) << gelu.why;
  ASSERT_TRUE(gelu.dominant);
  EXPECT_EQ(gelu.dominant->precision, "fp32");
  EXPECT_LT(gelu.intensity, gelu.ridge);
  EXPECT_NEAR(gelu.intensity, 7.1, 0.2);
  EXPECT_NEAR(gelu.ridge, 10.5, 0.2);
  EXPECT_NEAR(gelu.pct_of_roof, 33, 2);
  EXPECT_NE(gelu.why.find("SM is busier than memory"), std::string::npos) << gelu.why;
  // The DRAM roof of an H200 at the run's memory clock: 1,504 bytes/cycle x 3.195 GHz.
  ASSERT_FALSE(gelu.memory.empty());
  EXPECT_EQ(gelu.memory[0].level, "dram");
  EXPECT_NEAR(gelu.memory[0].peak_bps, 4.805e12, 0.01e12);
  EXPECT_NEAR(gelu.memory[0].bytes, 33574656.0 + 13774592.0, 1);
}

// A 20,000-step dependent FMA chain per thread: the FP32 pipe at 80 % of its peak, issue slots
// 98 % busy, almost no DRAM traffic (8 MB in 1 ms).
TEST(AnalyzeKernel, TheFmaChainIsComputeBoundWithAlmostNoDramTraffic) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"heavy_stencil.raw.csv"});
  ASSERT_EQ(k.size(), 1u);
  const KernelAnalysis& fma = k[0];
  EXPECT_EQ(fma.bound, KernelBound::kCompute) << fma.why;
  ASSERT_TRUE(fma.dominant);
  EXPECT_EQ(fma.dominant->precision, "fp32");
  EXPECT_NEAR(100 * fma.dominant->achieved_flops / fma.dominant->peak_flops, 80, 1);
  EXPECT_GT(fma.intensity, 1000);
  ASSERT_FALSE(fma.memory.empty());
  EXPECT_LT(fma.memory[0].pct_of_peak, 1);
  EXPECT_GT(fma.sm_throughput_pct, 90);
  // The chain's warps wait on their own previous FMA or the busy pipe.
  ASSERT_FALSE(fma.stalls.empty());
  const std::string top = fma.stalls.front().reason;
  EXPECT_TRUE(top == "wait" || top == "math_pipe_throttle" || top == "not_selected") << top;
  EXPECT_FALSE(fma.stalls.front().fix.empty());
}

// x = x*0.999 + 0.001 over 1 Mi floats in 5 us: neither roof near, the SMs wait.
TEST(AnalyzeKernel, TheTinyElementwiseKernelIsLatencyBound) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"light_kernel.raw.csv"});
  ASSERT_EQ(k.size(), 2u);
  for (const KernelAnalysis& light : k) {
    EXPECT_EQ(light.bound, KernelBound::kLatency) << light.why;
    EXPECT_LT(light.sm_throughput_pct, kNearRoofPct);
    EXPECT_LT(light.memory_throughput_pct, kNearRoofPct);
    EXPECT_NEAR(light.duration_s, 5.2e-6, 0.1e-6);
    ASSERT_FALSE(light.stalls.empty());
    EXPECT_EQ(light.stalls.front().reason, "long_scoreboard");
    EXPECT_NE(light.stalls.front().fix.find("coalesce"), std::string::npos);
  }
}

// The stall table is ncu's own figures: cycles per issued instruction per reason, "selected"
// (the issuing cycle) left out, the shares adding up to at most 1.
TEST(AnalyzeKernel, StallsAreNcusFiguresMostFirst) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"torch_gemm_gelu.raw.csv"});
  ASSERT_EQ(k.size(), 2u);
  const StallReason* long_sb = Stall(k[0], "long_scoreboard");
  ASSERT_NE(long_sb, nullptr);
  EXPECT_NEAR(long_sb->cycles_per_issue, 3.662642, 1e-6);
  EXPECT_EQ(long_sb->metric,
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio");
  EXPECT_EQ(Stall(k[0], "selected"), nullptr);
  double share = 0;
  for (size_t i = 0; i < k[1].stalls.size(); ++i) {
    share += k[1].stalls[i].share;
    if (i > 0) {
      EXPECT_GE(k[1].stalls[i - 1].cycles_per_issue, k[1].stalls[i].cycles_per_issue);
    }
  }
  EXPECT_LE(share, 1.0 + 1e-9);
  EXPECT_EQ(k[1].stalls.front().reason, "not_selected");
}

TEST(DescribeKernels, TextAndJsonCarryTheVerdict) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"torch_gemm_gelu.raw.csv"});
  const std::string text = DescribeKernels(k);
  EXPECT_NE(text.find("compute-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("memory-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("fix: "), std::string::npos) << text;  // the GELU's
  // The GEMM's one block per SM is limited; the GELU's full occupancy is not.
  EXPECT_NE(text.find("limited by registers and shared memory"), std::string::npos) << text;
  EXPECT_NE(text.find("as many warps as an SM holds"), std::string::npos) << text;
  // The GEMM at 91 % of its roof: its stalls are shown as how it waits there, without fixes.
  const std::string gemm_text = DescribeKernels({k[0]});
  EXPECT_NE(gemm_text.find("at its roof"), std::string::npos) << gemm_text;
  EXPECT_EQ(gemm_text.find("fix: "), std::string::npos) << gemm_text;
  const nlohmann::ordered_json json = KernelAnalysesToJson(k);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["bound"], "compute-bound");
  EXPECT_EQ(json[0]["roofline"]["precision"], "tensor");
  EXPECT_EQ(json[0]["at_roof"], true);
  EXPECT_EQ(json[1]["at_roof"], false);
  EXPECT_EQ(json[1]["bound"], "memory-bound");
  EXPECT_TRUE(json[1]["compute"][0]["detail"].is_null());
}

// A report without ncu's peak_sustained metrics (made with a few sections): the roofs come from
// the GPU's data sheet, said so; the verdict stands.
TEST(AnalyzeKernel, WithoutNcusPeaksTheDatasheetsAreUsedAndNamed) {
  Result<NcuReport> r = ParseNcuRawCsvFile(kNcuFixtures + "torch_gemm_gelu.raw.csv");
  ASSERT_TRUE(r.ok());
  for (NcuLaunch& launch : r->launches) {
    std::erase_if(launch.numbers, [](const auto& metric) {
      const std::string& name = metric.first;
      return name.ends_with(".peak_sustained") ||
             name.ends_with(".peak_sustained_elapsed.per_second");
    });
  }
  const KernelAnalysis gemm = AnalyzeKernel(r->launches[0]);
  ASSERT_TRUE(gemm.dominant);
  EXPECT_EQ(gemm.dominant->precision, "tensor");
  EXPECT_DOUBLE_EQ(gemm.dominant->peak_flops, 989e12);  // H200 bf16 dense at boost clock
  EXPECT_EQ(gemm.dominant->peak_source, "datasheet H200");
  EXPECT_EQ(gemm.bound, KernelBound::kCompute) << gemm.why;
  // 628 of 989 TFLOP/s: lower than ncu's 91 %, which is at the clocks ncu ran it.
  EXPECT_NEAR(gemm.pct_of_roof, 63.5, 1);
  const KernelAnalysis gelu = AnalyzeKernel(r->launches[1]);
  ASSERT_FALSE(gelu.memory.empty());
  EXPECT_DOUBLE_EQ(gelu.memory[0].peak_bps, 4.8e12);
  EXPECT_EQ(gelu.memory[0].peak_source, "datasheet H200");
  EXPECT_EQ(gelu.bound, KernelBound::kMemory) << gelu.why;
  const std::string text = DescribeKernels({gelu});
  EXPECT_NE(text.find("(datasheet H200)"), std::string::npos) << text;
  // A GPU not in the table: no roof, and the verdict says what is missing rather than guess.
  NcuLaunch other = r->launches[1];
  other.device = "NVIDIA GeForce RTX 4090";
  const KernelAnalysis unknown = AnalyzeKernel(other);
  EXPECT_FALSE(unknown.dominant);
  EXPECT_EQ(unknown.intensity, 0);
  EXPECT_NE(unknown.why.find("no compute or DRAM peak for this GPU"), std::string::npos)
      << unknown.why;
}

TEST(DatasheetPeaks, TheNamesNcuGives) {
  EXPECT_STREQ(DatasheetPeaks("NVIDIA H200")->model, "H200");
  EXPECT_STREQ(DatasheetPeaks("NVIDIA H100 80GB HBM3")->model, "H100 SXM");
  EXPECT_STREQ(DatasheetPeaks("NVIDIA H100 PCIe")->model, "H100 PCIe");
  EXPECT_STREQ(DatasheetPeaks("NVIDIA H100 NVL")->model, "H100 NVL");
  EXPECT_DOUBLE_EQ(DatasheetPeaks("NVIDIA A100-SXM4-80GB")->dram_bps, 2.039e12);
  EXPECT_DOUBLE_EQ(DatasheetPeaks("NVIDIA A100-SXM4-40GB")->dram_bps, 1.555e12);
  EXPECT_DOUBLE_EQ(DatasheetPeaks("NVIDIA A100 80GB PCIe")->dram_bps, 1.935e12);
  EXPECT_DOUBLE_EQ(DatasheetPeaks("NVIDIA B200")->tensor_16bit_flops, 2250e12);
  EXPECT_FALSE(DatasheetPeaks("NVIDIA GeForce RTX 4090"));
}

// A launch without the metrics the verdict needs says so instead of guessing.
TEST(AnalyzeKernel, MissingMetricsAreNamedNotInvented) {
  NcuLaunch bare;
  bare.id = 3;
  bare.kernel = "k";
  const KernelAnalysis k = AnalyzeKernel(bare);
  EXPECT_EQ(k.bound, KernelBound::kUnknown);
  EXPECT_FALSE(k.missing.empty());
  EXPECT_FALSE(k.dominant);
}

}  // namespace
}  // namespace rankscope
