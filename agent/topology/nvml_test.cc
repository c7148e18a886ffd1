#include "agent/topology/nvml.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace rankscope {
namespace {

TEST(Nvml, ReadsEveryGpuThroughDlopen) {
  Result<NvmlSnapshot> s = ReadNvml(FAKE_NVML_SO);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->driver_version, "580.159");
  ASSERT_EQ(s->gpus.size(), 2u);
  const NvmlGpu& good = s->gpus[0];
  EXPECT_EQ(good.name, "NVIDIA H200");
  EXPECT_EQ(good.uuid, "GPU-aaaa");
  EXPECT_EQ(good.bus_id, "00000000:18:00.0");
  EXPECT_EQ(good.pcie_gen_current, 5);
  EXPECT_EQ(good.pcie_width_max, 16);
  EXPECT_EQ(good.nvlinks_total, 18);
  EXPECT_EQ(good.nvlinks_up, 18);
  EXPECT_EQ(good.memory_bytes, 150ull << 30);
  const NvmlGpu& slow = s->gpus[1];
  EXPECT_EQ(slow.index, 1u);
  EXPECT_EQ(slow.pcie_gen_current, 3);
  EXPECT_EQ(slow.pcie_gen_max, 5);
  EXPECT_EQ(slow.pcie_width_current, 8);
  EXPECT_EQ(slow.nvlinks_up, 16);
}

TEST(Nvml, NoLibraryIsAClearError) {
  Result<NvmlSnapshot> s = ReadNvml("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot load libnvidia-ml-does-not-exist.so.1"),
            std::string::npos)
      << s.status().message();
}

TEST(Nvml, InitFailureAndLostGpuAreReported) {
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  Result<NvmlSnapshot> failed = ReadNvml(FAKE_NVML_SO);
  unsetenv("FAKE_NVML_FAIL_INIT");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("Driver Not Loaded"), std::string::npos);

  setenv("FAKE_NVML_LOST_GPU", "1", 1);
  Result<NvmlSnapshot> lost = ReadNvml(FAKE_NVML_SO);
  unsetenv("FAKE_NVML_LOST_GPU");
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(lost->gpus.size(), 2u);
  EXPECT_EQ(lost->gpus[1].name, "unreachable: GPU is lost");
  EXPECT_EQ(lost->gpus[1].pcie_gen_current, -1);
}

TEST(Nvml, MergeKeepsTheBestLinkEachGpuShowed) {
  NvmlSnapshot idle;
  idle.gpus.push_back({0, "H200", "GPU-a", "18", 1, 5, 16, 16, 18, 18, 1});
  NvmlSnapshot busy;
  busy.driver_version = "580";
  busy.gpus.push_back({0, "H200", "GPU-a", "18", 5, 5, 16, 16, 17, 18, 1});
  busy.gpus.push_back({1, "H200", "GPU-b", "2a", 5, 5, 16, 16, 18, 18, 1});
  NvmlSnapshot m = MergeNvml(idle, busy);
  EXPECT_EQ(m.driver_version, "580");
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].pcie_gen_current, 5);  // idle GPUs train down; busy shows the real link
  EXPECT_EQ(m.gpus[0].nvlinks_up, 18);
  EXPECT_EQ(m.gpus[1].uuid, "GPU-b");
}

}  // namespace
}  // namespace rankscope
