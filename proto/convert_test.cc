#include "proto/convert.h"

#include <gtest/gtest.h>

#include <string>

namespace rankscope {
namespace {

// Every kind of value each enum has, both ends of each range, an untuned call, an operation
// NCCL names that this build does not know, net device 0 (proto3's default) and none.
RankNccl Sample() {
  RankNccl n;
  n.version = "2.28.9+cuda13.0";
  n.log_file = "/tmp/nccl.1.log";
  n.skipped_lines = 42;
  n.problems = {"/tmp/nccl.1.log:7: NCCL WARN x"};
  NcclCommInfo c{"0x1e900aa5c8e42401", 1, 16, 2, 24, "60", 1, {}, {0, 3, 2, 1}};
  c.transports.push_back({0, 0, NcclTransportKind::kP2pCumem, "P2P/CUMEM", false, -1});
  c.transports.push_back({1, 9, NcclTransportKind::kNetIb, "NET/IB/0/GDRDMA", true, 0});
  c.transports.push_back({2, 9, NcclTransportKind::kNetSocket, "NET/Socket/3", false, 3});
  c.transports.push_back({3, -1, NcclTransportKind::kCollNet, "COLLNET/SHARP/0", false, 0});
  c.transports.push_back({4, 2, NcclTransportKind::kUnknown, "SOMETHING/new", false, -1});
  n.communicators.push_back(c);
  n.calls.push_back({"0x1e900aa5c8e42401", 0, NcclOp::kAllReduce, "", 1024, NcclDataType::kInt8,
                     1024, -1, NcclAlgo::kTree, NcclProto::kLL, 8});
  n.calls.push_back({"0x1e900aa5c8e42401", 1, NcclOp::kSendRecv, "", 16, NcclDataType::kFloat8e5m2,
                     16, 3, NcclAlgo::kPat, NcclProto::kSimple, 2});
  n.calls.push_back({"0x1e900aa5c8e42401", 2, NcclOp::kUnknown, "AllToAllV", 7,
                     NcclDataType::kUnknown, 0, 0, NcclAlgo::kUnknown, NcclProto::kUnknown, -1});
  return n;
}

TEST(ConvertNccl, ASummaryRoundTrips) {
  const RankNccl n = Sample();
  const v1::NcclSummary wire = ToProto(n);
  EXPECT_EQ(wire.calls(0).op(), v1::NCCL_OP_ALL_REDUCE);
  EXPECT_EQ(wire.calls(0).datatype(), v1::NCCL_DATA_TYPE_INT8);
  EXPECT_EQ(wire.calls(1).datatype(), v1::NCCL_DATA_TYPE_FLOAT8E5M2);
  EXPECT_EQ(wire.calls(1).algo(), v1::NCCL_ALGO_PAT);
  EXPECT_EQ(wire.calls(2).algo(), v1::NCCL_ALGO_UNSPECIFIED);
  EXPECT_EQ(wire.calls(2).op_name(), "AllToAllV");
  EXPECT_TRUE(wire.calls(0).op_name().empty());  // a known op carries no text
  EXPECT_EQ(wire.communicators(0).transports(1).kind(), v1::NCCL_TRANSPORT_NET_IB);
  EXPECT_TRUE(wire.communicators(0).transports(1).has_net_dev());
  EXPECT_FALSE(wire.communicators(0).transports(0).has_net_dev());
  // Through bytes, as it travels.
  v1::NcclSummary back;
  ASSERT_TRUE(back.ParseFromString(wire.SerializeAsString()));
  EXPECT_TRUE(FromProto(back) == n);  // every field
}

// A later agent's values this build does not know read as unknown; the rest of the call stays.
TEST(ConvertNccl, ValuesFromALaterAgentReadAsUnknown) {
  v1::NcclSummary wire = ToProto(Sample());
  v1::NcclCall* call = wire.mutable_calls(0);
  call->set_op(static_cast<v1::NcclOp>(77));
  call->set_op_name("AllReduceV2");
  call->set_datatype(static_cast<v1::NcclDataType>(40));
  call->set_algo(static_cast<v1::NcclAlgo>(12));
  call->set_proto(static_cast<v1::NcclProto>(9));
  wire.mutable_communicators(0)->mutable_transports(0)->set_kind(
      static_cast<v1::NcclTransportKind>(31));
  v1::NcclSummary back;
  ASSERT_TRUE(back.ParseFromString(wire.SerializeAsString()));
  const RankNccl n = FromProto(back);
  EXPECT_EQ(n.calls[0].op, NcclOp::kUnknown);
  EXPECT_EQ(OpName(n.calls[0]), "AllReduceV2");
  EXPECT_EQ(n.calls[0].datatype, NcclDataType::kUnknown);
  EXPECT_EQ(n.calls[0].algo, NcclAlgo::kUnknown);
  EXPECT_EQ(n.calls[0].proto, NcclProto::kUnknown);
  EXPECT_EQ(n.calls[0].bytes, 1024);
  EXPECT_EQ(n.communicators[0].transports[0].kind, NcclTransportKind::kUnknown);
  EXPECT_EQ(n.communicators[0].transports[0].via, "P2P/CUMEM");
}

}  // namespace
}  // namespace rankscope
