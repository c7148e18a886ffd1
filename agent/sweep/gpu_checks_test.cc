#include "agent/sweep/gpu_checks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "agent/sweep/checks.h"

namespace rankscope {
namespace {

std::map<std::string, SweepCheckResult> ByKey(const std::vector<SweepCheckResult>& results) {
  std::map<std::string, SweepCheckResult> out;
  for (const SweepCheckResult& r : results) out[r.key()] = r;
  return out;
}

TEST(GpuChecks, HealthWatchedThroughNvmlInAChild) {
  // The stand-in NVML (agent/fake_nvml.cc): GPU 0 healthy, GPU 1 sick.
  setenv("FAKE_NVML_XIDS", "1:79,1:79,1:48", 1);
  IsolatedCheck watch("gpu.health",
                      [](int stop_fd) { return WatchGpuHealth(stop_fd, FAKE_NVML_SO); });
  usleep(300 * 1000);
  auto results = ByKey(watch.Collect(10 * kNsPerSec));
  unsetenv("FAKE_NVML_XIDS");
  ASSERT_EQ(results.count("gpu.xid_events:gpu1"), 1u);
  const SweepCheckResult& xids = results["gpu.xid_events:gpu1"];
  EXPECT_EQ(xids.error, "");
  EXPECT_EQ(xids.value, 3);  // counted per XID over the watch
  EXPECT_EQ(xids.detail, "XID 48 x1, XID 79 x2");
  EXPECT_EQ(xids.model, "NVIDIA H200");
  EXPECT_EQ(results["gpu.xid_events:gpu0"].value, 0);
  EXPECT_EQ(results["gpu.xid_events:gpu0"].detail, "none while watched");

  EXPECT_EQ(results["gpu.ecc_uncorrected_volatile:gpu1"].value, 1);
  EXPECT_EQ(results["gpu.ecc_uncorrected_aggregate:gpu1"].value, 3);
  EXPECT_EQ(results["gpu.ecc_corrected_aggregate:gpu1"].value, 40);
  EXPECT_EQ(results["gpu.remapped_rows_uncorrectable:gpu1"].value, 1);
  EXPECT_EQ(results["gpu.row_remap_pending:gpu1"].value, 1);
  EXPECT_EQ(results.count("gpu.retired_pages:gpu1"), 0u);  // not supported: no figure
  EXPECT_EQ(results["gpu.clock_events:gpu1"].value, 1);
  EXPECT_NE(results["gpu.clock_events:gpu1"].detail.find("slowed by hw_slowdown"),
            std::string::npos);
  EXPECT_EQ(results["gpu.clock_events:gpu0"].value, 0);  // idle is no trouble
  EXPECT_EQ(results["gpu.temperature:gpu1"].value, 91);
  EXPECT_EQ(results["gpu.temperature:gpu1"].unit, "celsius");
  EXPECT_EQ(results["gpu.power:gpu1"].value, 650);
  EXPECT_EQ(results["gpu.pcie_gen_below_max:gpu1"].value, 2);
  EXPECT_EQ(results["gpu.pcie_lanes_below_max:gpu1"].value, 8);
  EXPECT_EQ(results["gpu.pcie_gen_below_max:gpu0"].value, 0);
  EXPECT_EQ(results["gpu.pcie_replays:gpu1"].value, 8);  // the rise while watched
  EXPECT_EQ(results["gpu.pcie_replays:gpu1"].detail,
            "link-level retransmissions while watched; 20 since driver load");
  EXPECT_EQ(results["gpu.nvlinks_down:gpu1"].value, 2);
  EXPECT_EQ(results["gpu.nvlink_errors:gpu1"].value, 4);
  EXPECT_NE(results["gpu.nvlink_errors:gpu1"].detail.find("9 CRC flit"), std::string::npos);
  EXPECT_EQ(results["gpu.nvlinks_down:gpu0"].value, 0);
}

TEST(GpuChecks, NoDriverMeansNoGpuFigures) {
  IsolatedCheck watch("gpu.health", [](int stop_fd) {
    return WatchGpuHealth(stop_fd, "libnvidia-ml-does-not-exist.so.1");
  });
  EXPECT_TRUE(watch.Collect(5 * kNsPerSec).empty());
  // The library installed but no driver loaded (nvmlInit: Driver Not Loaded): a CPU node too.
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  IsolatedCheck unloaded("gpu.health",
                         [](int stop_fd) { return WatchGpuHealth(stop_fd, FAKE_NVML_SO); });
  unsetenv("FAKE_NVML_FAIL_INIT");
  EXPECT_TRUE(unloaded.Collect(5 * kNsPerSec).empty());
}

TEST(GpuChecks, AnUnreachableGpuAndAnUnwatchedXidAreErrors) {
  NvmlGpuHealth lost;
  lost.index = 3;
  lost.name = "unreachable: GPU is lost";
  auto results = GpuHealthResults({lost}, "this NVML has no event sets");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].name, "gpu.xid_events");
  EXPECT_EQ(results[0].error, "XID events not watched: this NVML has no event sets");
  EXPECT_EQ(results[1].key(), "gpu.nvml:gpu3");
  EXPECT_EQ(results[1].error, "NVML: GPU unreachable: GPU is lost");
}

TEST(GpuChecks, WithoutACudaDriverTheGpuChecksMeasureNothing) {
  if (access("/dev/nvidia0", F_OK) == 0) GTEST_SKIP() << "a GPU is here: tests/gpu covers it";
  EXPECT_TRUE(MeasureGpuCopyBandwidth(kNsPerSec / 10).empty());
  EXPECT_TRUE(MeasureGpuFlops(kNsPerSec / 10).empty());
  EXPECT_TRUE(MeasureNcclAllReduce(kNsPerSec / 10, 1 << 20, "libnccl.so.2").empty());
}

TEST(GpuChecks, TheFmaKernelAssemblesForHopper) {
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (access(ptxas, X_OK) != 0) GTEST_SKIP() << "no ptxas here";
  const std::string ptx = FmaKernelPtx();
  char dir[] = "/tmp/rankscope-ptx-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string src = std::string(dir) + "/fma.ptx";
  std::ofstream(src) << ptx;
  const std::string cmd =
      std::string(ptxas) + " -arch=sm_90 " + src + " -o " + dir + "/fma.cubin 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), p) != nullptr) output += buf;
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << output << ptx;
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace rankscope
