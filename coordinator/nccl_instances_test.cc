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
    n.calls.push_back({kComm, seq, NcclOp::kAllReduce, "", 1024, NcclDataType::kFloat32, 4096, -1,
                       NcclAlgo::kUnknown, NcclProto::kUnknown, 24});
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

// Two communicators on two streams, kernels in GPU start order out of call order; with
// `correlation` the kernels carry CUPTI correlation ids in launch (= call) order.
Session TwoStreamSession(bool correlation) {
  // Data-parallel and tensor-parallel communicators, both all-reducing, calls interleaved in
  // the log (two TP calls per DP call), each on its own stream; the TP stream runs behind, so in
  // GPU start order the kernels do not follow the calls.
  constexpr char kDp[] = "0xdddd";
  constexpr char kTp[] = "0xeeee";
  RankData r;
  r.id.rank = 0;
  RankNccl n;
  n.communicators.push_back({kDp, 0, 2, 1, 24, "60", 0, {}, {}});
  n.communicators.push_back({kTp, 0, 2, 1, 24, "60", 0, {}, {}});
  for (uint64_t seq = 0; seq < 6; ++seq) {
    n.calls.push_back({kDp, seq, NcclOp::kAllReduce, "", 1024, NcclDataType::kFloat32, 4096, -1,
                       NcclAlgo::kUnknown, NcclProto::kUnknown, 24});
    for (uint64_t k = 0; k < 2; ++k) {
      n.calls.push_back({kTp, 2 * seq + k, NcclOp::kAllReduce, "", 2048, NcclDataType::kFloat32,
                         8192, -1, NcclAlgo::kUnknown, NcclProto::kUnknown, 24});
    }
  }
  r.nccl = n;
  for (int seq = 0; seq < 6; ++seq) {
    GpuActivityRecord dp =
        Kernel(kAllReduceKernel, 1'000'000 * (seq + 1), 1'000'000 * (seq + 1) + 100);
    dp.stream = 7;
    dp.correlation_id = correlation ? static_cast<uint32_t>(100 + 3 * seq) : 0;
    r.gpu.push_back(dp);
  }
  for (int seq = 0; seq < 12; ++seq) {
    // TP kernels start well after DP's (their stream is busy with other work).
    GpuActivityRecord tp =
        Kernel(kAllReduceKernel, 500'000 * (seq + 3) + 250'000, 500'000 * (seq + 3) + 250'100);
    tp.stream = 9;
    tp.correlation_id = correlation ? static_cast<uint32_t>(100 + 3 * (seq / 2) + 1 + seq % 2) : 0;
    r.gpu.push_back(tp);
  }
  Session s;
  s.ranks = {r};
  return s;
}

// Every call joined with its own communicator's kernel, on that communicator's stream.
void ExpectTwoStreamJoin(bool correlation) {
  Session s = TwoStreamSession(correlation);
  NcclJoinStats stats = AddNcclCollectives(&s);
  EXPECT_EQ(stats.joined, 18);
  EXPECT_EQ(stats.calls_without_kernel, 0);
  EXPECT_EQ(stats.kernels_without_call, 0);
  for (const CollectiveRecord& c : s.ranks[0].collectives) {
    const bool dp = c.comm_id == NcclCommKey("0xdddd");
    EXPECT_EQ(c.tid, dp ? 7u : 9u) << "seq " << c.seq;
    const TimeNs expected = dp ? 1'000'000 * static_cast<TimeNs>(c.seq + 1)
                               : 500'000 * static_cast<TimeNs>(c.seq + 3) + 250'000;
    EXPECT_EQ(c.enter, expected) << (dp ? "dp" : "tp") << " seq " << c.seq;
  }
}

TEST(NcclInstances, LaunchOrderJoinsCommunicatorsOnStreamsThatRunOutOfCallOrder) {
  ExpectTwoStreamJoin(/*correlation=*/true);
}

TEST(NcclInstances, WithoutCorrelationIdsEachCommunicatorJoinsOnTheStreamItFits) {
  ExpectTwoStreamJoin(/*correlation=*/false);
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
