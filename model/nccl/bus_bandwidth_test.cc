#include "model/nccl/bus_bandwidth.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(BusBandwidthTest, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllReduce, 1), 0.0);  // nothing crosses a link
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kAllReduce, 0), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(NcclOp::kUnknown, 8), 0.0);
}

TEST(BusBandwidthTest, SizesFollowNcclTests) {
  EXPECT_EQ(NcclTestsSizeBytes(NcclOp::kAllGather, 1024, 4), 4096);
  EXPECT_EQ(NcclTestsSizeBytes(NcclOp::kReduceScatter, 1024, 4), 4096);
  EXPECT_EQ(NcclTestsSizeBytes(NcclOp::kAllToAll, 1024, 4), 4096);
  EXPECT_EQ(NcclTestsSizeBytes(NcclOp::kAllReduce, 1024, 4), 1024);
  EXPECT_EQ(NcclTestsSizeBytes(NcclOp::kBroadcast, 1024, 4), 1024);
}

TEST(BusBandwidthTest, Bandwidths) {
  // The fixture's all-reduce: 256 MiB on 2 ranks; at 1 ms that is 268.4 GB/s either way.
  EXPECT_DOUBLE_EQ(AlgBandwidthGBps(268435456, kNsPerMs), 268.435456);
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(NcclOp::kAllReduce, 268435456, kNsPerMs, 2), 268.435456);
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(NcclOp::kAllReduce, 1'000'000'000, kNsPerSec, 8), 1.75);
  EXPECT_DOUBLE_EQ(AlgBandwidthGBps(1024, 0), 0.0);
  EXPECT_DOUBLE_EQ(AlgBandwidthGBps(1024, -5), 0.0);
}

TEST(NcclTypesTest, DataTypeSizesAndNames) {
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataTypeFromCode(7)), 4);  // "datatype 7" = ncclFloat32
  EXPECT_EQ(NcclDataTypeName(NcclDataTypeFromCode(7)), "ncclFloat32");
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kInt8), 1);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kFloat16), 2);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kBfloat16), 2);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kFloat64), 8);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kUint64), 8);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kFloat8e5m2), 1);
  EXPECT_EQ(NcclDataTypeFromCode(12), NcclDataType::kUnknown);
  EXPECT_EQ(NcclDataTypeFromCode(-1), NcclDataType::kUnknown);
  EXPECT_EQ(NcclDataTypeSizeBytes(NcclDataType::kUnknown), 0);
}

TEST(NcclTypesTest, NamesRoundTrip) {
  EXPECT_EQ(ParseNcclOp("AlltoAll"), NcclOp::kAllToAll);  // 2.28's spelling
  EXPECT_EQ(ParseNcclOp("AllToAll"), NcclOp::kAllToAll);
  EXPECT_EQ(ParseNcclOp("Bogus"), NcclOp::kUnknown);
  EXPECT_EQ(ParseNcclAlgo("1"), NcclAlgo::kRing);
  EXPECT_EQ(ParseNcclAlgo("NVLS_TREE"), NcclAlgo::kNvlsTree);
  EXPECT_EQ(ParseNcclAlgo("7"), NcclAlgo::kUnknown);
  EXPECT_EQ(ParseNcclProto("2"), NcclProto::kSimple);
  EXPECT_EQ(ParseNcclProto("LL128"), NcclProto::kLL128);
  EXPECT_EQ(ParseNcclProto("-1"), NcclProto::kUnknown);
  for (NcclOp op : {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
                    NcclOp::kBroadcast, NcclOp::kReduce, NcclOp::kAllToAll, NcclOp::kSend,
                    NcclOp::kRecv, NcclOp::kGather, NcclOp::kScatter}) {
    EXPECT_EQ(ParseNcclOp(NcclOpName(op)), op);
  }
  EXPECT_EQ(NcclRedOpFromCode(4), NcclRedOp::kAvg);
  EXPECT_EQ(NcclRedOpFromCode(12), NcclRedOp::kUserDefined);
}

}  // namespace
}  // namespace rankscope
