#include "model/gpu/first_gpu_work.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace rankscope {
namespace {

GpuActivityRecord Work(GpuActivityKind kind, TimeNs start, uint32_t correlation,
                       std::string name = "") {
  GpuActivityRecord r;
  r.kind = kind;
  r.start = start;
  r.end = start + 5;
  r.correlation_id = correlation;
  r.name = name.empty() ? (kind == GpuActivityKind::kRuntime ? "cudaLaunchKernel" : "gemm") : name;
  return r;
}

RangeRecord Range(TimeNs start, TimeNs end) {
  RangeRecord r;
  r.name = "step";
  r.start = start;
  r.end = end;
  return r;
}

TEST(FirstGpuWork, TheFirstOfEachKindAtOrAfterEveryRangeBoundary) {
  const std::vector<RangeRecord> ranges = {Range(100, 200), Range(250, 400)};
  std::vector<GpuActivityRecord> gpu;
  for (TimeNs t : {50, 120, 130, 220, 260, 300}) {
    gpu.push_back(Work(GpuActivityKind::kRuntime, t, static_cast<uint32_t>(t)));
  }
  for (TimeNs t : {140, 230, 280}) {
    gpu.push_back(Work(GpuActivityKind::kKernel, t, static_cast<uint32_t>(t)));
  }
  gpu.push_back(Work(GpuActivityKind::kRuntime, 90, 1, "cudaMemcpyAsync"));  // not a launch
  gpu.push_back(Work(GpuActivityKind::kMemcpy, 110, 1));                     // not a kernel
  const std::vector<GpuWorkKey> want = {
      {GpuActivityKind::kRuntime, 50, 50},  {GpuActivityKind::kRuntime, 120, 120},
      {GpuActivityKind::kKernel, 140, 140}, {GpuActivityKind::kRuntime, 220, 220},
      {GpuActivityKind::kKernel, 230, 230}, {GpuActivityKind::kRuntime, 260, 260},
      {GpuActivityKind::kKernel, 280, 280}};
  EXPECT_EQ(FirstGpuWork(ranges, gpu), want);

  // Fed in any order and decided piece by piece: the same.
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(gpu.begin(), gpu.end(), rng);
    FirstGpuWorkFold fold;
    std::vector<GpuWorkKey> got;
    for (const RangeRecord& r : ranges) fold.AddRange(r);
    for (const GpuActivityRecord& g : gpu) fold.AddGpu(g);
    for (TimeNs until : {0, 125, 225, 1000}) {
      for (const GpuWorkKey& k : fold.TakeDecided(until)) got.push_back(k);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(fold.held(), 0u);
    EXPECT_EQ(fold.late_boundaries(), 0);
  }
}

TEST(FirstGpuWork, ABoundaryThatComesAfterItsCandidatesWereDecidedIsCountedLate) {
  FirstGpuWorkFold fold;
  fold.AddGpu(Work(GpuActivityKind::kRuntime, 10, 1));
  fold.AddGpu(Work(GpuActivityKind::kRuntime, 20, 2));
  fold.AddGpu(Work(GpuActivityKind::kRuntime, 30, 3));
  EXPECT_EQ(fold.TakeDecided(25).size(), 1u);  // only the first: no boundary yet
  fold.AddRange(Range(15, 28));                // its start came too late for the launch at 20
  EXPECT_EQ(fold.late_boundaries(), 1);
  // Its end still makes the launch at 30 the first after it.
  EXPECT_EQ(fold.TakeAll(), (std::vector<GpuWorkKey>{{GpuActivityKind::kRuntime, 30, 3}}));
  fold.AddGpu(Work(GpuActivityKind::kKernel, 5, 4));  // before what was decided
  EXPECT_EQ(fold.late_candidates(), 1);
}

}  // namespace
}  // namespace rankscope
