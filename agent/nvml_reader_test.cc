#include "agent/nvml_reader.h"

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

TEST(NvmlHealthWatch, ReadsCountersGaugesAndXidEventsPerGpu) {
  setenv("FAKE_NVML_XIDS", "1:79,0:13,1:79", 1);
  Result<std::unique_ptr<NvmlHealthWatch>> watch = NvmlHealthWatch::Start(FAKE_NVML_SO);
  ASSERT_TRUE(watch.ok()) << watch.status().message();
  EXPECT_EQ(watch.value()->xid_watch_error(), "");
  for (int i = 0; i < 4; ++i) {
    watch.value()->Sample();
    watch.value()->WaitEvents(10);
  }
  std::vector<NvmlGpuHealth> gpus = watch.value()->Finish();
  unsetenv("FAKE_NVML_XIDS");
  ASSERT_EQ(gpus.size(), 2u);
  const NvmlGpuHealth& good = gpus[0];
  EXPECT_EQ(good.name, "NVIDIA H200");
  EXPECT_EQ(good.ecc_uncorrected_aggregate, 0);
  EXPECT_EQ(good.retired_pages_dbe, -1);  // Hopper remaps rows instead
  EXPECT_EQ(good.remapped_uncorrectable, 0);
  EXPECT_EQ(good.clock_event_reasons, 0x1u);
  EXPECT_EQ(good.nvlinks_up, 18);
  EXPECT_EQ(good.nvlink_errors[2], 0);
  EXPECT_EQ(good.nvlink_errors_during, 0);
  EXPECT_EQ(good.xids, (std::map<uint64_t, int>{{13, 1}}));
  const NvmlGpuHealth& sick = gpus[1];
  EXPECT_EQ(sick.ecc_corrected_volatile, 7);
  EXPECT_EQ(sick.ecc_uncorrected_volatile, 1);
  EXPECT_EQ(sick.ecc_corrected_aggregate, 40);
  EXPECT_EQ(sick.ecc_uncorrected_aggregate, 3);
  EXPECT_EQ(sick.remapped_correctable, 2);
  EXPECT_EQ(sick.remapped_uncorrectable, 1);
  EXPECT_EQ(sick.remap_pending, 1);
  EXPECT_EQ(sick.remap_failed, 0);
  EXPECT_EQ(sick.clock_event_reasons & kNvmlBadClockEventReasons, 0x8u);
  EXPECT_EQ(NvmlClockEventReasonNames(sick.clock_event_reasons), "sw_power_cap, hw_slowdown");
  EXPECT_EQ(sick.temperature_max_c, 91);
  EXPECT_DOUBLE_EQ(sick.power_max_w, 650);
  EXPECT_DOUBLE_EQ(sick.power_limit_w, 700);
  EXPECT_EQ(sick.pcie_gen_current, 3);
  EXPECT_EQ(sick.pcie_gen_max, 5);
  EXPECT_EQ(sick.pcie_replays, 20);  // since driver load
  EXPECT_EQ(sick.pcie_replays_during, 8);
  EXPECT_EQ(sick.nvlinks_up, 16);
  EXPECT_EQ(sick.nvlinks_total, 18);
  EXPECT_EQ(sick.nvlink_errors[2], 9);  // CRC flit errors since driver load
  EXPECT_EQ(sick.nvlink_errors[0], 0);
  EXPECT_EQ(sick.nvlink_errors_during, 4);
  EXPECT_EQ(sick.nvlink_data_crc_during, 0);
  // Counted per XID over the watch, not the last event's value.
  EXPECT_EQ(sick.xids, (std::map<uint64_t, int>{{79, 2}}));
}

TEST(NvmlHealthWatch, NoLibraryIsAClearError) {
  auto watch = NvmlHealthWatch::Start("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(watch.ok());
  EXPECT_NE(watch.status().message().find("cannot load"), std::string::npos);
}

TEST(NvmlHealthWatch, ClockEventReasonNames) {
  EXPECT_EQ(NvmlClockEventReasonNames(0), "none");
  EXPECT_EQ(NvmlClockEventReasonNames(0x40 | 0x80), "hw_thermal, hw_power_brake");
  EXPECT_EQ(NvmlClockEventReasonNames(0x1000), "other 0x1000");
}

}  // namespace
}  // namespace rankscope
