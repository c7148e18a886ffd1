#include "model/gpu/kernel_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

namespace rankscope {
namespace {

struct K {
  TimeNs start, end;
  std::string name;
};

// Kernel time per name in [begin, end), straight from the kernels.
std::map<std::string, DurationNs> Clipped(const std::vector<K>& kernels, TimeNs begin, TimeNs end) {
  std::map<std::string, DurationNs> out;
  for (const K& k : kernels) {
    const DurationNs in = std::min(k.end, end) - std::max(k.start, begin);
    if (in > 0) out[k.name] += in;
  }
  return out;
}

TEST(KernelPieceFold, PiecesBetweenBoundariesWithKernelsClippedAcrossThem) {
  KernelPieceFold fold;
  fold.AddKernel(0, 50, "before");  // before the first boundary: in no piece
  fold.AddBoundary(40);
  fold.AddKernel(60, 120, "gemm");  // across the boundary at 100
  fold.AddKernel(70, 80, "relu");
  fold.AddBoundary(100);
  fold.AddKernel(150, 160, "gemm");
  fold.AddBoundary(200);
  fold.AddKernel(250, 260, "after");  // after the last boundary: in no piece
  const std::vector<KernelPiece> want = {{40, 100, "before", 10},
                                         {40, 100, "gemm", 40},
                                         {40, 100, "relu", 10},
                                         {100, 200, "gemm", 30}};
  EXPECT_EQ(fold.TakeAll(), want);
  EXPECT_EQ(fold.late(), 0);
  std::map<std::string, DurationNs> by_name;
  EXPECT_EQ(KernelTimeFromPieces(want, 40, 200, &by_name), 90);
  EXPECT_EQ(by_name,
            (std::map<std::string, DurationNs>{{"before", 10}, {"gemm", 70}, {"relu", 10}}));
  by_name.clear();
  EXPECT_EQ(KernelTimeFromPieces(want, 100, 200, &by_name), 30);
}

// Boundaries and kernels in random order, decided at random times that never pass what is still
// to come: every gap between two boundaries equals the kernels clipped to it.
TEST(KernelPieceFold, EveryGapBetweenBoundariesEqualsTheKernelsClipped) {
  std::mt19937 rng(11);
  for (int round = 0; round < 30; ++round) {
    std::vector<K> kernels;
    std::vector<TimeNs> boundaries;
    std::uniform_int_distribution<TimeNs> at(0, 100'000), len(1, 3'000);
    std::uniform_int_distribution<int> name(0, 4);
    for (int i = 0; i < 300; ++i) {
      const TimeNs s = at(rng);
      kernels.push_back({s, s + len(rng), "k" + std::to_string(name(rng))});
    }
    for (int i = 0; i < 40; ++i) boundaries.push_back(at(rng));
    std::sort(boundaries.begin(), boundaries.end());
    boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
    // Each arrives at its time plus a random delay; decided up to the latest arrival less 10,000
    // once every item of that span is in (delays are below 10,000).
    struct Arrival {
      TimeNs when;
      int kind;  // 0 boundary, 1 kernel
      size_t index;
    };
    std::vector<Arrival> arrivals;
    std::uniform_int_distribution<TimeNs> delay(0, 9'999);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      arrivals.push_back({boundaries[i] + delay(rng), 0, i});
    }
    for (size_t i = 0; i < kernels.size(); ++i) {
      arrivals.push_back({kernels[i].start + delay(rng), 1, i});
    }
    std::sort(arrivals.begin(), arrivals.end(),
              [](const Arrival& a, const Arrival& b) { return a.when < b.when; });
    KernelPieceFold fold;
    std::vector<KernelPiece> pieces;
    for (const Arrival& a : arrivals) {
      if (a.kind == 0) {
        fold.AddBoundary(boundaries[a.index]);
      } else {
        fold.AddKernel(kernels[a.index].start, kernels[a.index].end, kernels[a.index].name);
      }
      for (KernelPiece& p : fold.TakeDecided(a.when - 10'000)) pieces.push_back(std::move(p));
    }
    for (KernelPiece& p : fold.TakeAll()) pieces.push_back(std::move(p));
    ASSERT_EQ(fold.late(), 0);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      for (size_t j = i + 1; j < boundaries.size(); ++j) {
        std::map<std::string, DurationNs> got;
        KernelTimeFromPieces(pieces, boundaries[i], boundaries[j], &got);
        ASSERT_EQ(got, Clipped(kernels, boundaries[i], boundaries[j]))
            << "round " << round << " gap " << i << "-" << j;
      }
    }
  }
}

TEST(KernelPieceFold, WhatComesAfterItsTimeWasDecidedIsCountedLateWhereItChangesAPiece) {
  KernelPieceFold fold;
  // No kernel time yet (an MPI code's long first barrier, a CPU-only rank): boundaries that come
  // late change nothing and are not late.
  fold.AddBoundary(10);
  EXPECT_TRUE(fold.TakeDecided(100).empty());
  fold.AddBoundary(50);
  fold.AddBoundary(5);
  EXPECT_EQ(fold.late(), 0);
  fold.AddKernel(1, 4, "before");  // late, but before the first boundary: in no piece anyway
  EXPECT_EQ(fold.late(), 0);
  fold.AddKernel(90, 120, "straddles");  // its part before 100 is lost
  EXPECT_EQ(fold.late(), 1);
  fold.AddKernel(130, 170, "gemm");
  EXPECT_TRUE(fold.TakeDecided(180).empty());  // the open piece from 50 holds them
  fold.AddBoundary(150);                       // inside kernel time already summed: late
  EXPECT_EQ(fold.late(), 2);
  fold.AddBoundary(200);
  EXPECT_EQ(fold.TakeAll(),
            (std::vector<KernelPiece>{{50, 200, "gemm", 40}, {50, 200, "straddles", 20}}));
}

}  // namespace
}  // namespace rankscope
