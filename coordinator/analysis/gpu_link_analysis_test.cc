#include "coordinator/analysis/gpu_link_analysis.h"

#include <gtest/gtest.h>

#include "coordinator/analysis/analysis_test_util.h"

namespace rankscope {
namespace {

NvmlGpu Gpu(uint32_t index, int gen, int width, int nvlinks_up) {
  return {index,
          "NVIDIA H200",
          "GPU-" + std::to_string(index),
          "00000000:0" + std::to_string(index) + ":00.0",
          gen,
          5,
          width,
          16,
          nvlinks_up,
          18,
          1ull << 37};
}

// Two nodes, two ranks each; local rank 0 of each read NVML.
Session TwoNodes(std::vector<NvmlGpu> a, std::vector<NvmlGpu> b) {
  Session s;
  for (int r = 0; r < 4; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.local_rank = r % 2;
    d.id.node = r < 2 ? "n1" : "n2";
    s.ranks.push_back(d);
  }
  s.ranks[0].nvml = NvmlSnapshot{"580.159", std::move(a)};
  s.ranks[2].nvml = NvmlSnapshot{"580.159", std::move(b)};
  return s;
}

TEST(GpuLinks, HealthyNodesGiveNothing) {
  EXPECT_TRUE(FindDegradedGpuLinks(TwoNodes({Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)},
                                            {Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)}))
                  .empty());
}

TEST(GpuLinks, NarrowLinkIsAPcieBoundNodeWithItsRanks) {
  const Session s =
      TwoNodes({Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)}, {Gpu(0, 5, 16, 18), Gpu(1, 5, 8, 18)});
  auto f = testing::Planned(s, FindDegradedGpuLinks(s));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "pcie_bound");
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(f[0].confidence, 0.9);
  EXPECT_NE(f[0].summary.find("GPU 1 (00000000:01:00.0) at gen 5 x8 of gen 5 x16"),
            std::string::npos)
      << f[0].summary;
  ASSERT_TRUE(f[0].nvml_links);
  ASSERT_EQ(f[0].nvml_links->pcie.size(), 1u);
  EXPECT_EQ(f[0].nvml_links->pcie[0].width, 8);
  ASSERT_FALSE(f[0].next_steps.empty());
  EXPECT_NE(f[0].next_steps[0].command.find("nvidia-smi -q -d PCIE"), std::string::npos);
}

TEST(GpuLinks, LowGenerationCountsOnlyWhenAPeerOnTheNodeReachedItsMaximum) {
  // Every GPU of n1 at gen 1: idle power saving when read, not a finding.
  EXPECT_TRUE(FindDegradedGpuLinks(TwoNodes({Gpu(0, 1, 16, 18), Gpu(1, 1, 16, 18)},
                                            {Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)}))
                  .empty());
  // One GPU of n1 at gen 3 while its neighbour ran at gen 5: reported, with less confidence.
  auto f = FindDegradedGpuLinks(
      TwoNodes({Gpu(0, 5, 16, 18), Gpu(1, 3, 16, 18)}, {Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n1"});
  EXPECT_DOUBLE_EQ(f[0].confidence, 0.6);
}

TEST(GpuLinks, NvlinksDownAreTheirOwnFinding) {
  auto f = FindDegradedGpuLinks(
      TwoNodes({Gpu(0, 5, 16, 16), Gpu(1, 5, 16, 18)}, {Gpu(0, 5, 16, 18), Gpu(1, 5, 16, 18)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(FindingKindName(f[0].kind), "nvlink_down");
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"n1"});
  EXPECT_NE(f[0].summary.find("has 16 of 18 NVLinks up"), std::string::npos) << f[0].summary;
}

}  // namespace
}  // namespace rankscope
