#include "model/gpu/compute_thinning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/gpu/test_records.h"

namespace rankscope {
namespace {

constexpr auto Record = TestGpuRecord;
constexpr auto kKernel = GpuActivityKind::kKernel;
constexpr auto kRuntime = GpuActivityKind::kRuntime;

TEST(ComputeRecordThinning, WithoutABudgetEveryRecordGoesOut) {
  ComputeRecordThinning thin;
  for (uint32_t i = 0; i < 1000; ++i) {
    EXPECT_TRUE(thin.Add(Record(kKernel, i, i, "gemm")));
  }
  EXPECT_FALSE(thin.thinning());
  EXPECT_TRUE(thin.TakeAll().empty());
}

// After the budget: the first launch and kernel after each range boundary, and NCCL's launch.
TEST(ComputeRecordThinning, KeepsWhatTheStepReadingAndTheNcclJoinRead) {
  ComputeRecordThinning thin(/*budget=*/2);
  EXPECT_TRUE(thin.Add(Record(kRuntime, 1, 10, "cudaLaunchKernel")));
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 20, "gemm")));
  EXPECT_TRUE(thin.thinning());
  RangeRecord step;
  step.start = 100;
  step.end = 200;
  thin.AddRange(step);
  std::vector<TimeNs> sent_now;
  for (TimeNs t : {110, 120, 130}) {
    EXPECT_FALSE(thin.Add(Record(kRuntime, static_cast<uint32_t>(t), t, "cudaLaunchKernel")));
    EXPECT_FALSE(thin.Add(Record(kKernel, static_cast<uint32_t>(t), t + 5, "relu")));
  }
  EXPECT_FALSE(thin.Add(Record(kRuntime, 7, 150, "cuLaunchKernelEx")));  // NCCL's: kept
  EXPECT_TRUE(thin.Add(Record(kKernel, 7, 160, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")));
  EXPECT_TRUE(thin.Add(Record(GpuActivityKind::kMemcpy, 8, 170, "")));  // always whole
  std::vector<std::pair<GpuActivityKind, TimeNs>> got;
  for (const GpuActivityRecord& g : thin.TakeDecided(180)) got.emplace_back(g.kind, g.start);
  EXPECT_EQ(got, (std::vector<std::pair<GpuActivityKind, TimeNs>>{
                     {kRuntime, 110}, {kKernel, 115}, {kRuntime, 150}}));
  EXPECT_EQ(thin.summed_only(), 2u);  // the kernels; the launches wait for a NCCL kernel
  // A launch that comes after its time was decided goes out as it is.
  EXPECT_TRUE(thin.Add(Record(kRuntime, 9, 175, "cudaLaunchKernel")));
  // After the range's end, the first of each kind again.
  EXPECT_FALSE(thin.Add(Record(kRuntime, 10, 210, "cudaLaunchKernel")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 11, 220, "cudaLaunchKernel")));
  const std::vector<GpuActivityRecord> rest = thin.TakeAll();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].start, 210);
  EXPECT_EQ(thin.held(), 0u);
  EXPECT_EQ(thin.summed_only(), 5u);  // the two launches that waited in vain, and 220
}

// A NCCL kernel that runs long after its launch (queued behind compute, or waiting for a late
// peer): its launch, decided before the kernel came, waits for it and goes out with it; a launch
// whose kernel never comes is summed at the end.
TEST(ComputeRecordThinning, ALaunchDecidedBeforeItsNcclKernelWaitsForIt) {
  ComputeRecordThinning thin(/*budget=*/1, /*nccl_launch_horizon=*/1000);
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 10, "gemm")));                 // the budget
  EXPECT_FALSE(thin.Add(Record(kRuntime, 2, 100, "cudaLaunchKernel")));  // first launch: kept
  EXPECT_FALSE(thin.Add(Record(kRuntime, 3, 110, "cuLaunchKernelEx")));  // NCCL's, kernel later
  EXPECT_FALSE(thin.Add(Record(kRuntime, 4, 120, "cudaLaunchKernel")));  // never a kernel
  std::vector<TimeNs> got;
  for (const GpuActivityRecord& g : thin.TakeDecided(500)) got.push_back(g.start);
  EXPECT_EQ(got, (std::vector<TimeNs>{100}));
  EXPECT_EQ(thin.held(), 2u);
  EXPECT_TRUE(thin.Add(Record(kKernel, 3, 900, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")));
  got.clear();
  for (const GpuActivityRecord& g : thin.TakeDecided(600)) got.push_back(g.start);
  EXPECT_EQ(got, (std::vector<TimeNs>{110}));
  EXPECT_TRUE(thin.TakeAll().empty());
  EXPECT_EQ(thin.summed_only(), 1u);
  EXPECT_EQ(thin.held(), 0u);
}

// Past the horizon a launch stops waiting.
TEST(ComputeRecordThinning, ALaunchWaitsNoLongerThanTheHorizon) {
  ComputeRecordThinning thin(/*budget=*/1, /*nccl_launch_horizon=*/1000);
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 10, "gemm")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 2, 100, "cudaLaunchKernel")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 3, 110, "cuLaunchKernelEx")));
  EXPECT_EQ(thin.TakeDecided(500).size(), 1u);
  EXPECT_TRUE(thin.TakeDecided(1200).empty());  // 110 < 1200 - 1000: forgotten, summed
  EXPECT_EQ(thin.summed_only(), 1u);
  EXPECT_TRUE(thin.Add(Record(kKernel, 3, 1300, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")));
  EXPECT_TRUE(thin.TakeAll().empty());
}

// The flight recorder: the last `tail` summed records go out at the end.
TEST(ComputeRecordThinning, TheLastSummedRecordsGoOutAtTheEnd) {
  ComputeRecordThinning thin(/*budget=*/1, /*nccl_launch_horizon=*/1000, /*tail=*/3);
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 10, "gemm")));
  for (uint32_t i = 2; i < 12; ++i) {
    EXPECT_FALSE(thin.Add(Record(kKernel, i, 10 * i, "gemm")));
  }
  EXPECT_TRUE(thin.TakeDecided(100).empty());  // kernels 20..100: none first after a boundary
  std::vector<TimeNs> got;
  for (const GpuActivityRecord& g : thin.TakeAll()) got.push_back(g.start);
  EXPECT_EQ(got, (std::vector<TimeNs>{90, 100, 110}));
  EXPECT_EQ(thin.summed_only(), 7u);
  EXPECT_EQ(thin.held(), 0u);
}

// The flight recorder holds the latest records by start: a launch summed late (it waited for a
// NCCL kernel that never came) does not push out the kernels after it.
TEST(ComputeRecordThinning, TheFlightRecorderKeepsTheLatestByStart) {
  ComputeRecordThinning thin(/*budget=*/2, /*nccl_launch_horizon=*/1000, /*tail=*/2);
  EXPECT_TRUE(thin.Add(Record(kRuntime, 1, 5, "cudaLaunchKernel")));
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 10, "gemm")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 2, 100, "cudaLaunchKernel")));
  for (uint32_t i = 3; i <= 5; ++i) EXPECT_FALSE(thin.Add(Record(kKernel, i, 100 * i, "gemm")));
  EXPECT_TRUE(thin.TakeDecided(600).empty());  // the launch waits; 300 summed, 400, 500 kept
  std::vector<TimeNs> got;
  for (const GpuActivityRecord& g : thin.TakeAll()) got.push_back(g.start);
  EXPECT_EQ(got, (std::vector<TimeNs>{400, 500}));
  EXPECT_EQ(thin.summed_only(), 2u);  // 300 and the launch
}

// A capture asked for mid-run (a live finding): the tail and the launches of its span still
// waiting for a NCCL kernel go out with the next decision, then the next `tail` records decided
// after it, launches included; later ones are summed again, into a fresh tail.
TEST(ComputeRecordThinning, ACaptureSendsTheTailAndTheRecordsAfterIt) {
  ComputeRecordThinning thin(/*budget=*/2, /*nccl_launch_horizon=*/1000, /*tail=*/2);
  EXPECT_EQ(thin.CaptureAround(), 0u);  // not thinning yet: every record went out
  EXPECT_TRUE(thin.Add(Record(kRuntime, 1, 5, "cudaLaunchKernel")));
  EXPECT_TRUE(thin.Add(Record(kKernel, 1, 10, "gemm")));
  for (uint32_t i = 2; i <= 6; ++i) EXPECT_FALSE(thin.Add(Record(kKernel, i, 10 * i, "gemm")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 30, 25, "cudaLaunchKernel")));  // before the tail
  EXPECT_FALSE(thin.Add(Record(kRuntime, 31, 55, "cudaLaunchKernel")));  // in its span
  EXPECT_TRUE(thin.TakeDecided(60).empty());  // 20..60 summed; the tail holds 50, 60
  EXPECT_EQ(thin.CaptureAround(), 3u);        // 50, 55, 60
  for (uint32_t i = 7; i <= 12; ++i) EXPECT_FALSE(thin.Add(Record(kKernel, i, 10 * i, "gemm")));
  EXPECT_FALSE(thin.Add(Record(kRuntime, 32, 75, "cudaLaunchKernel")));
  std::vector<TimeNs> got;
  for (const GpuActivityRecord& g : thin.TakeDecided(120)) got.push_back(g.start);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<TimeNs>{50, 55, 60, 70, 75}));  // 3 before, 2 after
  EXPECT_EQ(thin.captured(), 5u);
  got.clear();
  for (const GpuActivityRecord& g : thin.TakeAll()) got.push_back(g.start);
  EXPECT_EQ(got, (std::vector<TimeNs>{110, 120}));  // the end's tail; the launch at 25 forgotten
  EXPECT_EQ(thin.summed_only(), 7u);                // 20, 30, 40, 80, 90, 100 and the launch
}

}  // namespace
}  // namespace rankscope
