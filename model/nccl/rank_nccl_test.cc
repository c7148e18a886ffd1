#include "model/nccl/rank_nccl.h"

#include <gtest/gtest.h>

#include <string>

#include "model/nccl/nccl_log_file.h"
#include "model/nccl/nccl_log_parser.h"

namespace rankscope {
namespace {

const std::string kFixtureDir = std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce";

RankNccl FromFixture(const std::string& file) {
  Result<NcclLog> log = ParseNcclLogFile(kFixtureDir + "/" + file);
  EXPECT_TRUE(log.ok()) << log.status().message();
  RankNccl n;
  if (log.ok()) AppendNcclLog(log.value(), file, &n);
  return n;
}

// The real 2xH200 logs: five 256 MiB all-reduces over P2P/CUMEM; NCCL prints the tuning line
// on rank 0 only, so rank 1's calls carry no algorithm.
TEST(RankNccl, ARealLogIsTypedAsTheParserReadIt) {
  const RankNccl r0 = FromFixture("nccl.vm.747.log");
  const RankNccl r1 = FromFixture("nccl.vm.748.log");
  EXPECT_EQ(r0.version, "2.28.9+cuda13.0");
  EXPECT_EQ(r0.log_file, "nccl.vm.747.log");
  ASSERT_EQ(r0.communicators.size(), 1u);
  EXPECT_EQ(r0.communicators[0].comm_id, "0x1e900aa5c8e42401");
  ASSERT_FALSE(r0.communicators[0].transports.empty());
  for (const NcclTransportInfo& t : r0.communicators[0].transports) {
    EXPECT_EQ(t.kind, NcclTransportKind::kP2pCumem);
    EXPECT_EQ(t.peer, 1);
    EXPECT_EQ(t.net_dev, -1);
  }
  ASSERT_EQ(r0.calls.size(), 5u);
  ASSERT_EQ(r1.calls.size(), 5u);
  for (size_t i = 0; i < r0.calls.size(); ++i) {
    const NcclCallInfo& c = r0.calls[i];
    EXPECT_EQ(c.seq, i);
    EXPECT_EQ(c.op, NcclOp::kAllReduce);
    EXPECT_EQ(OpName(c), "AllReduce");
    EXPECT_EQ(c.datatype, NcclDataType::kFloat32);
    EXPECT_EQ(c.bytes, static_cast<Bytes>(c.count) * 4);
    EXPECT_TRUE(Tuned(c));
    EXPECT_EQ(c.algo, NcclAlgo::kRing);
    EXPECT_FALSE(Tuned(r1.calls[i]));
    EXPECT_EQ(r1.calls[i].op, NcclOp::kAllReduce);
  }
}

// Network connections keep NCCL's net device (a PXN send through another rank's NIC included),
// so no reader parses the connection text again.
TEST(RankNccl, NetworkConnectionsCarryTheirNetDevice) {
  NcclLogParser p;
  p.Feed(
      "h:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x100 rank 0 nranks 16 cudaDev 0 "
      "nvmlDev 0 busId 18000 commId 0x3333 - Init START\n"
      "h:5:5 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/2(1)/GDRDMA/Shared\n"
      "h:5:5 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/Socket/1\n"
      "h:5:5 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
      "h:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x100 rank 0 nranks 16 cudaDev 0 "
      "nvmlDev 0 busId 18000 commId 0x3333 - Init COMPLETE\n");
  p.Finish();
  RankNccl n;
  AppendNcclLog(p.log(), "a.log", &n);
  ASSERT_EQ(n.communicators.size(), 1u);
  const std::vector<NcclTransportInfo>& t = n.communicators[0].transports;
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].kind, NcclTransportKind::kNetIb);
  EXPECT_EQ(t[0].net_dev, 2);
  EXPECT_TRUE(t[0].gdrdma);
  EXPECT_EQ(t[0].peer, 8);
  EXPECT_EQ(t[1].kind, NcclTransportKind::kNetSocket);
  EXPECT_EQ(t[1].net_dev, 1);
  EXPECT_EQ(t[2].kind, NcclTransportKind::kShm);
  EXPECT_EQ(t[2].net_dev, -1);
}

// Two log files of one rank, and a summary that arrives in parts, add up.
TEST(RankNccl, LogsAndPartsAppend) {
  RankNccl whole = FromFixture("nccl.vm.747.log");
  Result<NcclLog> second = ParseNcclLogFile(kFixtureDir + "/nccl.vm.748.log");
  ASSERT_TRUE(second.ok());
  AppendNcclLog(second.value(), "nccl.vm.748.log", &whole);
  EXPECT_EQ(whole.log_file, "nccl.vm.747.log,nccl.vm.748.log");
  EXPECT_EQ(whole.communicators.size(), 2u);
  EXPECT_EQ(whole.calls.size(), 10u);

  RankNccl first = FromFixture("nccl.vm.747.log");
  RankNccl later;
  later.skipped_lines = 3;
  later.problems = {"x.log:9: NCCL WARN late"};
  later.calls = first.calls;
  const int64_t skipped = first.skipped_lines;
  AppendNcclPart(later, &first);
  EXPECT_EQ(first.version, "2.28.9+cuda13.0");  // an empty part leaves the first part's fields
  EXPECT_EQ(first.log_file, "nccl.vm.747.log");
  EXPECT_EQ(first.skipped_lines, skipped + 3);
  EXPECT_EQ(first.calls.size(), 10u);
  EXPECT_EQ(first.problems.back(), "x.log:9: NCCL WARN late");
}

}  // namespace
}  // namespace rankscope
