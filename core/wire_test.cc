#include "core/wire.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

namespace rankscope::wire {
namespace {

std::vector<std::byte> Copy(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

TEST(Wire, RoundTripsEveryRecordType) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  CollectiveRecord c{.comm_id = 0xabcdef,
                     .seq = 7,
                     .op = CollectiveOp::kAllreduce,
                     .nonblocking = true,
                     .root = -1,
                     .comm_size = 4,
                     .comm_rank = 2,
                     .bytes = 4096,
                     .enter = 100,
                     .exit = 250,
                     .tid = 42};
  ASSERT_TRUE(b.AppendCollective(c));
  P2PRecord p{.kind = P2PKind::kWait,
              .completed = P2PKind::kIrecv,
              .peer = 3,
              .tag = 9,
              .comm_id = 1,
              .bytes = 8,
              .enter = 5,
              .exit = 6,
              .tid = 43,
              .world_peer = 5,
              .spin_start = 4};
  ASSERT_TRUE(b.AppendP2P(p));
  MpiCallRecord m{.call = MpiCall::kFileWriteAtAll,
                  .comm_id = 0x1234,
                  .peer = 2,
                  .bytes = 1 << 20,
                  .enter = 40,
                  .exit = 70,
                  .tid = 46};
  ASSERT_TRUE(b.AppendMpiCall(m));
  ASSERT_TRUE(b.AppendRange("dom", "step 3", 10, 20, 44, 1));
  ASSERT_TRUE(b.AppendMark("", "epoch", 30, 45));
  ASSERT_TRUE(b.AppendNotice("hello"));
  auto bytes = Copy(b.Finish(1234, 5, 999));

  Result<Batch> decoded = DecodeBatch(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  const Batch& d = decoded.value();
  EXPECT_EQ(d.pid, 1234u);
  EXPECT_EQ(d.dropped, 5u);
  EXPECT_EQ(d.flush_time, 999);
  ASSERT_EQ(d.collectives.size(), 1u);
  EXPECT_EQ(d.collectives[0].comm_id, 0xabcdefu);
  EXPECT_EQ(d.collectives[0].seq, 7u);
  EXPECT_EQ(d.collectives[0].op, CollectiveOp::kAllreduce);
  EXPECT_TRUE(d.collectives[0].nonblocking);
  EXPECT_EQ(d.collectives[0].comm_rank, 2);
  EXPECT_EQ(d.collectives[0].exit, 250);
  ASSERT_EQ(d.p2p.size(), 1u);
  EXPECT_EQ(d.p2p[0].completed, P2PKind::kIrecv);
  EXPECT_EQ(d.p2p[0].peer, 3);
  EXPECT_EQ(d.p2p[0].world_peer, 5);
  EXPECT_EQ(d.p2p[0].spin_start, 4);
  ASSERT_EQ(d.mpi_calls.size(), 1u);
  EXPECT_EQ(d.mpi_calls[0].call, MpiCall::kFileWriteAtAll);
  EXPECT_EQ(d.mpi_calls[0].comm_id, 0x1234u);
  EXPECT_EQ(d.mpi_calls[0].peer, 2);
  EXPECT_EQ(d.mpi_calls[0].bytes, 1 << 20);
  EXPECT_EQ(d.mpi_calls[0].enter, 40);
  EXPECT_EQ(d.mpi_calls[0].exit, 70);
  EXPECT_EQ(d.mpi_calls[0].tid, 46u);
  EXPECT_EQ(d.record_count(), 6u);
  ASSERT_EQ(d.ranges.size(), 1u);
  EXPECT_EQ(d.ranges[0].domain, "dom");
  EXPECT_EQ(d.ranges[0].name, "step 3");
  EXPECT_EQ(d.ranges[0].depth, 1u);
  ASSERT_EQ(d.marks.size(), 1u);
  EXPECT_EQ(d.marks[0].name, "epoch");
  ASSERT_EQ(d.notices.size(), 1u);
  EXPECT_EQ(d.notices[0], "hello");
}

// Every value of the wire enums has a name of its own: a value appended without one would print
// as "unknown" (or an empty string) in every report.
TEST(Wire, EveryEnumValueHasAName) {
  std::set<std::string_view> ops;
  for (int op = 1; op <= kMaxCollectiveOp; ++op) {
    std::string_view name = CollectiveOpName(static_cast<CollectiveOp>(op));
    EXPECT_FALSE(name.empty()) << op;
    EXPECT_NE(name, "unknown") << op;
    ops.insert(name);
  }
  EXPECT_EQ(ops.size(), static_cast<size_t>(kMaxCollectiveOp));
  EXPECT_EQ(CollectiveOpName(CollectiveOp::kNeighborAlltoallw), "neighbor_alltoallw");
  EXPECT_EQ(WaitPatternOf(CollectiveOp::kScan), WaitPattern::kAllToAll);
  EXPECT_EQ(WaitPatternOf(CollectiveOp::kNeighborAllgather), WaitPattern::kAllToAll);
  std::set<std::string_view> kinds;
  for (int k = 1; k <= kMaxP2PKind; ++k) {
    std::string_view name = P2PKindName(static_cast<P2PKind>(k));
    EXPECT_NE(name, "unknown") << k;
    kinds.insert(name);
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kMaxP2PKind));
  std::set<std::string_view> calls;
  for (int c = 1; c <= kMaxMpiCall; ++c) {
    std::string_view name = MpiCallName(static_cast<MpiCall>(c));
    EXPECT_TRUE(name.starts_with("MPI_")) << c;
    EXPECT_NE(name, "MPI_unknown") << c;
    calls.insert(name);
  }
  EXPECT_EQ(calls.size(), static_cast<size_t>(kMaxMpiCall));
  EXPECT_EQ(MpiCallName(MpiCall::kStartall), "MPI_Startall");
}

TEST(Wire, RejectsUnknownMpiCall) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  ASSERT_TRUE(b.AppendMpiCall({.call = static_cast<MpiCall>(kMaxMpiCall + 1)}));
  auto d = DecodeBatch(b.Finish(1, 0, 0));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("unknown mpi call"), std::string::npos);
}

TEST(Wire, BuilderRefusesRecordsThatDoNotFit) {
  std::array<std::byte, kHeaderSize + 70> buf;
  BatchBuilder b(buf.data(), buf.size());
  EXPECT_TRUE(b.AppendCollective({}));
  EXPECT_FALSE(b.AppendCollective({}));
  EXPECT_EQ(b.record_count(), 1u);
  EXPECT_TRUE(DecodeBatch(b.Finish(1, 0, 0)).ok());
}

TEST(Wire, EmptyViewsWithNullDataAreFine) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  ASSERT_TRUE(b.AppendRange(std::string_view(), std::string_view(), 1, 2, 3, 0));
  ASSERT_TRUE(b.AppendNotice(std::string_view()));
  auto d = DecodeBatch(b.Finish(1, 0, 0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ranges[0].name, "");
}

TEST(Wire, TruncatesLongNames) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  std::string long_name(1000, 'x');
  ASSERT_TRUE(b.AppendRange(long_name, long_name, 1, 2, 3, 0));
  auto d = DecodeBatch(b.Finish(1, 0, 0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ranges[0].name.size(), kMaxNameBytes);
}

TEST(Wire, RejectsEveryTruncationOfAValidBatch) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  b.AppendCollective({});
  b.AppendRange("d", "n", 1, 2, 3, 0);
  auto bytes = Copy(b.Finish(1, 0, 0));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = DecodeBatch(std::span(bytes).first(n));
    EXPECT_FALSE(d.ok()) << "prefix of " << n << " bytes decoded";
  }
}

TEST(Wire, RejectsGarbageWithAMessage) {
  std::vector<std::byte> garbage(100, std::byte{0x5a});
  auto d = DecodeBatch(garbage);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("bad magic"), std::string::npos);
}

GpuActivityRecord KernelRecord() {
  GpuActivityRecord g;
  g.kind = GpuActivityKind::kKernel;
  g.device = 1;
  g.context = 2;
  g.stream = 13;
  g.correlation_id = 77;
  g.start = 1'000'000'123;
  g.end = 1'000'004'567;
  g.grid[0] = 256;
  g.grid[1] = 2;
  g.grid[2] = 1;
  g.block[0] = 128;
  g.block[1] = 1;
  g.block[2] = 1;
  g.name = "_Z10probe_axpyifPKfPf";
  return g;
}

TEST(Wire, RoundTripsGpuActivity) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  GpuActivityRecord kernel = KernelRecord();
  GpuActivityRecord copy;
  copy.kind = GpuActivityKind::kMemcpy;
  copy.device = 0;
  copy.stream = 7;
  copy.correlation_id = 78;
  copy.start = 5;
  copy.end = 9;
  copy.bytes = int64_t{3} << 33;  // more than 32 bits
  copy.copy_kind = 1;
  GpuActivityRecord sync;
  sync.kind = GpuActivityKind::kSync;
  sync.sync_kind = 3;
  GpuActivityRecord call;
  call.kind = GpuActivityKind::kRuntime;
  call.tid = 4242;
  call.correlation_id = 77;
  call.name = "cudaLaunchKernel";
  ASSERT_TRUE(b.AppendGpuActivity(kernel));
  ASSERT_TRUE(b.AppendGpuActivity(copy));
  ASSERT_TRUE(b.AppendGpuActivity(sync));
  ASSERT_TRUE(b.AppendNotice("between"));
  ASSERT_TRUE(b.AppendGpuActivity(call));
  auto d = DecodeBatch(b.Finish(1, 0, 0));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->gpu.size(), 4u);
  ASSERT_EQ(d->notices.size(), 1u);
  const GpuActivityRecord& k = d->gpu[0];
  EXPECT_EQ(k.kind, GpuActivityKind::kKernel);
  EXPECT_EQ(k.device, 1u);
  EXPECT_EQ(k.context, 2u);
  EXPECT_EQ(k.stream, 13u);
  EXPECT_EQ(k.correlation_id, 77u);
  EXPECT_EQ(k.start, 1'000'000'123);
  EXPECT_EQ(k.end, 1'000'004'567);
  EXPECT_EQ(k.grid[0], 256);
  EXPECT_EQ(k.grid[1], 2);
  EXPECT_EQ(k.block[0], 128);
  EXPECT_EQ(k.block[2], 1);
  EXPECT_EQ(k.name, "_Z10probe_axpyifPKfPf");
  EXPECT_EQ(d->gpu[1].kind, GpuActivityKind::kMemcpy);
  EXPECT_EQ(d->gpu[1].bytes, int64_t{3} << 33);
  EXPECT_EQ(d->gpu[1].copy_kind, 1);
  EXPECT_EQ(d->gpu[1].device, 0u);
  EXPECT_EQ(d->gpu[1].name, "");
  EXPECT_EQ(d->gpu[2].kind, GpuActivityKind::kSync);
  EXPECT_EQ(d->gpu[2].sync_kind, 3);
  EXPECT_EQ(d->gpu[2].device, kNoDevice);
  EXPECT_EQ(d->gpu[3].kind, GpuActivityKind::kRuntime);
  EXPECT_EQ(d->gpu[3].tid, 4242u);
  EXPECT_EQ(d->gpu[3].name, "cudaLaunchKernel");
  EXPECT_EQ(GpuActivityKindName(d->gpu[3].kind), "runtime");
}

TEST(Wire, KeepsLongKernelNamesUpTo1024Bytes) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  GpuActivityRecord kernel = KernelRecord();
  kernel.name = std::string(900, 'k');
  ASSERT_TRUE(b.AppendGpuActivity(kernel));
  kernel.name = std::string(5000, 'x');
  ASSERT_TRUE(b.AppendGpuActivity(kernel));
  auto d = DecodeBatch(b.Finish(1, 0, 0));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->gpu[0].name.size(), 900u);
  EXPECT_EQ(d->gpu[1].name, std::string(kMaxGpuNameBytes, 'x'));
}

TEST(Wire, RejectsBadGpuActivityRecords) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  ASSERT_TRUE(b.AppendGpuActivity(KernelRecord()));
  auto bytes = Copy(b.Finish(1, 0, 0));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeBatch(std::span(bytes).first(n)).ok()) << "prefix of " << n << " bytes";
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto corrupt = bytes;
    corrupt[i] ^= std::byte{0xff};
    (void)DecodeBatch(corrupt);  // an error or a valid batch, never out of bounds (ASan)
  }
  auto bad_kind = bytes;
  bad_kind[kHeaderSize + kRecordHeaderSize] = std::byte{9};
  auto d = DecodeBatch(bad_kind);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("unknown gpu activity kind"), std::string::npos);
  auto bad_name_len = bytes;
  bad_name_len[bytes.size() - KernelRecord().name.size() - 2] = std::byte{0};
  d = DecodeBatch(bad_name_len);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("name length"), std::string::npos);
}

TEST(Wire, RejectsCorruptedLengthsAndTypes) {
  std::array<std::byte, kMaxBatchBytes> buf;
  BatchBuilder b(buf.data(), buf.size());
  b.AppendRange("d", "name", 1, 2, 3, 0);
  auto bytes = Copy(b.Finish(1, 0, 0));
  // Every single-byte corruption of the record must decode to an error or to a valid batch,
  // never crash or read out of bounds (ASan build checks the latter).
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto corrupt = bytes;
    corrupt[i] ^= std::byte{0xff};
    (void)DecodeBatch(corrupt);
  }
  auto bad_type = bytes;
  bad_type[kHeaderSize] = std::byte{99};
  auto d = DecodeBatch(bad_type);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("unknown record type 99"), std::string::npos);
}

}  // namespace
}  // namespace rankscope::wire
