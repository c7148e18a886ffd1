#include "model/gpu/nccl_compute.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace rankscope {
namespace {

TEST(NcclComputeFold, ComputeClippedToNcclKernelsAndTheMarginAfter) {
  NcclComputeFold fold(/*margin=*/10);
  fold.AddComputeKernel(0, 30);     // before any NCCL kernel: only its part from 20 counts
  fold.AddNcclKernel(20, 50);       // wanted: [20, 60)
  fold.AddComputeKernel(25, 40);    // overlaps the first: merged into [20, 40)
  fold.AddComputeKernel(55, 70);    // in the margin: [55, 60)
  fold.AddComputeKernel(100, 120);  // near no NCCL kernel
  fold.AddNcclKernel(200, 210);
  fold.AddComputeKernel(205, 215);  // [205, 215) fully inside [200, 220)
  EXPECT_EQ(fold.TakeAll(), (Intervals{{20, 40}, {55, 60}, {205, 215}}));
  EXPECT_EQ(fold.late(), 0);
  EXPECT_EQ(fold.held(), 0u);
}

TEST(NcclComputeFold, ASpanCutByADecisionContinuesInTheNextCall) {
  NcclComputeFold fold(0);
  fold.AddNcclKernel(0, 100);
  fold.AddComputeKernel(10, 90);
  EXPECT_EQ(fold.TakeDecided(50), (Intervals{{10, 50}}));
  EXPECT_EQ(fold.TakeDecided(200), (Intervals{{50, 90}}));
  EXPECT_EQ(MergeIntervals({{10, 50}, {50, 90}}), (Intervals{{10, 90}}));
}

TEST(NcclComputeFold, KernelsBeforeADecidedTimeAreLateOnlyWhereNcclRuns) {
  NcclComputeFold cpu_side(0);
  cpu_side.AddComputeKernel(0, 10);
  cpu_side.TakeDecided(100);
  cpu_side.AddComputeKernel(50, 60);  // no NCCL kernel on this rank: nothing could miss it
  EXPECT_EQ(cpu_side.late(), 0);

  NcclComputeFold fold(0);
  fold.AddNcclKernel(0, 10);
  EXPECT_TRUE(fold.TakeDecided(100).empty());
  fold.AddComputeKernel(5, 8);  // its window was decided without it
  EXPECT_EQ(fold.late(), 1);
  fold.AddNcclKernel(90, 150);  // started before the decided time: the part before is lost
  EXPECT_EQ(fold.late(), 2);
  fold.AddComputeKernel(120, 130);
  EXPECT_EQ(fold.TakeAll(), (Intervals{{120, 130}}));
}

// Kernels in random order, decided at random times that never pass what is still to come: the
// spans, merged, are the compute kernels' union cut to the NCCL windows', as the ring analysis
// would compute them from the records.
TEST(NcclComputeFold, SpansAreTheComputeUnionWithinTheNcclWindows) {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const DurationNs margin = round % 3 == 0 ? 0 : 500;
    struct K {
      TimeNs start, end;
      bool nccl;
    };
    std::vector<K> kernels;
    std::uniform_int_distribution<TimeNs> at(0, 100'000), len(1, 4'000);
    std::bernoulli_distribution nccl(0.2);
    for (int i = 0; i < 300; ++i) {
      const TimeNs s = at(rng);
      kernels.push_back({s, s + len(rng), nccl(rng)});
    }
    Intervals compute, wanted;
    for (const K& k : kernels) {
      (k.nccl ? wanted : compute).emplace_back(k.start, k.end + (k.nccl ? margin : 0));
    }
    compute = MergeIntervals(compute);
    wanted = MergeIntervals(wanted);
    Intervals want;
    for (const auto& [a, b] : wanted) {
      for (const auto& [c, d] : compute) {
        if (std::max(a, c) < std::min(b, d)) want.emplace_back(std::max(a, c), std::min(b, d));
      }
    }
    want = MergeIntervals(want);

    // Fed in start order with a random jitter, each decision behind the earliest start to come.
    std::sort(kernels.begin(), kernels.end(),
              [](const K& a, const K& b) { return a.start < b.start; });
    NcclComputeFold fold(margin);
    Intervals got;
    std::uniform_int_distribution<int> step(1, 20);
    for (size_t i = 0; i < kernels.size();) {
      const size_t n = std::min(kernels.size() - i, static_cast<size_t>(step(rng)));
      std::vector<K> batch(kernels.begin() + static_cast<long>(i),
                           kernels.begin() + static_cast<long>(i + n));
      std::shuffle(batch.begin(), batch.end(), rng);
      for (const K& k : batch) {
        if (k.nccl) {
          fold.AddNcclKernel(k.start, k.end);
        } else {
          fold.AddComputeKernel(k.start, k.end);
        }
      }
      i += n;
      if (i < kernels.size()) {
        const Intervals part = fold.TakeDecided(kernels[i].start);
        if (!got.empty() && !part.empty()) {
          EXPECT_GE(part.front().first, got.back().second);
        }
        got.insert(got.end(), part.begin(), part.end());
      }
    }
    const Intervals rest = fold.TakeAll();
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(fold.late(), 0);
    EXPECT_EQ(MergeIntervals(got), want);
  }
}

}  // namespace
}  // namespace rankscope
