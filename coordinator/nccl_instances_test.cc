#include "coordinator/nccl_instances.h"

#include <gtest/gtest.h>

#include "coordinator/collective_matcher.h"

namespace rankscope {
namespace {

constexpr char kComm[] = "0x1e900aa5c8e42401";
constexpr char kAllReduceKernel[] =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLP24ncclDevKernelArgsStorageILm4096EE";

GpuActivityRecord Kernel(const std::string& name, TimeNs start, TimeNs end) {
  GpuActivityRecord k;
  k.kind = GpuActivityKind::kKernel;
  k.name = name;
  k.start = start;
  k.end = end;
  k.stream = 7;
  return k;
}

RankData NcclRank(int rank, TimeNs delay) {
  RankData r;
  r.id.rank = rank;
  RankNccl n;
  n.communicators.push_back({kComm, rank, 2, 1, 24, "60", rank, {}, {}});
  for (uint64_t seq = 0; seq < 3; ++seq) {
    n.calls.push_back({kComm, seq, "AllReduce", 1024, "ncclFloat32", 4096, -1, "", "", 24});
    const TimeNs t = 1'000'000 * static_cast<TimeNs>(seq + 1);
    r.gpu.push_back(Kernel("_Z9gemm_kernelv", t - 500'000, t - 100'000 + delay));  // compute
    r.gpu.push_back(Kernel(kAllReduceKernel, t + delay, t + 200'000 + delay));
  }
  r.nccl = n;
  return r;
}

TEST(NcclInstances, JoinsCallsWithKernelsAndMatchesAcrossRanks) {
  Session s;
  s.ranks = {NcclRank(0, 0), NcclRank(1, 50'000)};
  NcclJoinStats stats = AddNcclCollectives(&s);
  EXPECT_EQ(stats.ranks, 2);
  EXPECT_EQ(stats.joined, 6);
  EXPECT_EQ(stats.calls_without_kernel, 0);
  EXPECT_EQ(stats.kernels_without_call, 0);
  ASSERT_EQ(s.ranks[1].collectives.size(), 3u);
  const CollectiveRecord& c = s.ranks[1].collectives[2];
  EXPECT_EQ(c.source, CollectiveRecord::Source::kNccl);
  EXPECT_EQ(c.op, CollectiveOp::kAllreduce);
  EXPECT_EQ(c.seq, 2u);
  EXPECT_EQ(c.comm_size, 2);
  EXPECT_EQ(c.comm_rank, 1);
  EXPECT_EQ(c.enter, 3'000'000 + 50'000);  // the kernel's GPU start
  EXPECT_EQ(c.comm_id, NcclCommKey(kComm));

  auto instances = MatchCollectives(s);
  ASSERT_EQ(instances.size(), 3u);
  for (const auto& inst : instances) EXPECT_TRUE(inst.complete);
}

TEST(NcclInstances, KernelsWithoutCallsAndCallsWithoutKernelsAreCounted) {
  Session s;
  RankData r = NcclRank(0, 0);
  r.gpu.erase(r.gpu.begin() + 1);  // the first all-reduce kernel was never captured
  r.gpu.push_back(Kernel("ncclDevKernel_AllGather_RING_LL", 9'000'000, 9'100'000));
  s.ranks = {r};
  NcclJoinStats stats = AddNcclCollectives(&s);
  EXPECT_EQ(stats.joined, 2);  // calls 0 and 1 take kernels 1 and 2 in order
  EXPECT_EQ(stats.calls_without_kernel, 1);
  EXPECT_EQ(stats.kernels_without_call, 1);  // the all-gather
}

TEST(NcclInstances, RanksWithoutLogsOrKernelsAreLeftAlone) {
  Session s;
  RankData no_log;
  no_log.gpu.push_back(Kernel(kAllReduceKernel, 1, 2));
  RankData no_kernels = NcclRank(1, 0);
  no_kernels.gpu.clear();
  s.ranks = {no_log, no_kernels};
  EXPECT_EQ(AddNcclCollectives(&s).ranks, 0);
  EXPECT_TRUE(s.ranks[0].collectives.empty());
  EXPECT_TRUE(s.ranks[1].collectives.empty());
}

TEST(NcclInstances, WindowedRanksAreNotJoinedByOrder) {
  Session s;
  RankData windowed = NcclRank(0, 0);
  windowed.gpu.erase(windowed.gpu.begin(), windowed.gpu.begin() + 2);  // call 0 outside the window
  windowed.marks.push_back({kCaptureMarkDomain, kGpuCaptureOnMark, 1'500'000, 1});
  windowed.marks.push_back({kCaptureMarkDomain, kGpuCaptureOffMark, 3'500'000, 1});
  s.ranks = {windowed, NcclRank(1, 0)};
  NcclJoinStats stats = AddNcclCollectives(&s);
  EXPECT_EQ(stats.windowed_ranks, 1);
  EXPECT_EQ(stats.ranks, 1);
  EXPECT_TRUE(s.ranks[0].collectives.empty());  // not call 0 joined with call 1's kernel
  EXPECT_EQ(s.ranks[1].collectives.size(), 3u);
}

}  // namespace
}  // namespace rankscope
