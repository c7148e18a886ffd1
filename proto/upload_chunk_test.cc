#include "proto/upload_chunk.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rankscope {
namespace {

// A queue as an agent holds it at the end of a long NCCL job: many records, an NCCL summary of
// every call, /proc figures and the exit status.
v1::UploadBatch LongJobQueue(int collectives, int nccl_calls) {
  v1::UploadBatch q;
  for (int i = 0; i < collectives; ++i) {
    v1::Collective* c = q.add_collectives();
    c->set_seq(static_cast<uint64_t>(i));
    c->set_enter(1000 * i);
    c->set_exit(1000 * i + 500);
  }
  q.add_notices()->set_text("a notice");
  v1::NcclSummary* nccl = q.mutable_nccl();
  nccl->set_nccl_version("2.28.9");
  nccl->set_log_file("/tmp/nccl.0.log");
  v1::NcclCommunicator* comm = nccl->add_communicators();
  comm->set_comm_id("0x1e900aa5c8e42401");
  comm->add_ring_order(0);
  comm->add_ring_order(1);
  for (int i = 0; i < nccl_calls; ++i) {
    v1::NcclCall* call = nccl->add_calls();
    call->set_comm_id("0x1e900aa5c8e42401");
    call->set_seq(static_cast<uint64_t>(i));
    call->set_op(v1::NCCL_OP_ALL_REDUCE);
    call->set_bytes(1 << 20);
  }
  q.mutable_proc()->set_cpu_user_ns(123);
  q.mutable_exit()->set_exit_code(3);
  return q;
}

std::vector<v1::UploadBatch> Drain(v1::UploadBatch queue, size_t budget, size_t* dropped) {
  std::vector<v1::UploadBatch> chunks;
  *dropped = 0;
  for (int guard = 0; guard < 10000; ++guard) {
    v1::UploadBatch chunk;
    const ChunkTaken taken = TakeChunk(&queue, &chunk, budget);
    *dropped += taken.dropped;
    chunks.push_back(std::move(chunk));
    if (taken.emptied) return chunks;
  }
  ADD_FAILURE() << "the queue was not drained";
  return chunks;
}

TEST(UploadChunk, ALongJobGoesInBoundedChunksInOrderWithTheExitLast) {
  const v1::UploadBatch queue = LongJobQueue(50'000, 80'000);
  ASSERT_GT(queue.ByteSizeLong(), 3u << 20);
  constexpr size_t kBudget = 512 << 10;
  size_t dropped = 0;
  const std::vector<v1::UploadBatch> chunks = Drain(queue, kBudget, &dropped);
  EXPECT_EQ(dropped, 0u);
  ASSERT_GT(chunks.size(), 8u);
  std::vector<uint64_t> seqs, call_seqs;
  int exits = 0, notices = 0, procs = 0, versions = 0, communicators = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const v1::UploadBatch& c = chunks[i];
    EXPECT_LE(c.ByteSizeLong(), kBudget) << "chunk " << i;
    EXPECT_GT(c.ByteSizeLong(), 0u) << "chunk " << i;
    for (const v1::Collective& col : c.collectives()) seqs.push_back(col.seq());
    for (const v1::NcclCall& call : c.nccl().calls()) call_seqs.push_back(call.seq());
    exits += c.has_exit();
    notices += c.notices_size();
    procs += c.has_proc();
    versions += !c.nccl().nccl_version().empty();
    communicators += c.nccl().communicators_size();
    if (c.has_exit()) {
      EXPECT_EQ(i + 1, chunks.size()) << "the exit status goes last";
    }
  }
  EXPECT_EQ(exits, 1);
  EXPECT_EQ(chunks.back().exit().exit_code(), 3);
  EXPECT_EQ(notices, 1);
  EXPECT_EQ(procs, 1);
  EXPECT_EQ(versions, 1);  // the summary's own fields travel once, with its first part
  EXPECT_EQ(communicators, 1);
  ASSERT_EQ(seqs.size(), 50'000u);
  ASSERT_EQ(call_seqs.size(), 80'000u);
  for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i);
  for (size_t i = 0; i < call_seqs.size(); ++i) ASSERT_EQ(call_seqs[i], i);
}

TEST(UploadChunk, ASmallQueueIsOneChunkEqualToIt) {
  v1::UploadBatch queue = LongJobQueue(10, 10);
  const v1::UploadBatch copy = queue;
  v1::UploadBatch chunk;
  const ChunkTaken taken = TakeChunk(&queue, &chunk);
  EXPECT_TRUE(taken.emptied);
  EXPECT_EQ(taken.dropped, 0u);
  EXPECT_EQ(chunk.SerializeAsString().size(), copy.SerializeAsString().size());
  EXPECT_EQ(chunk.collectives_size(), 10);
  EXPECT_EQ(chunk.nccl().calls_size(), 10);
  EXPECT_TRUE(chunk.has_exit());
}

TEST(UploadChunk, AnEmptyQueueGivesAnEmptyChunk) {
  v1::UploadBatch queue, chunk;
  queue.set_batch_seq(7);  // the caller's scalars stay where they are
  chunk.add_collectives();
  const ChunkTaken taken = TakeChunk(&queue, &chunk);
  EXPECT_TRUE(taken.emptied);
  EXPECT_EQ(chunk.ByteSizeLong(), 0u);
  EXPECT_EQ(queue.batch_seq(), 7u);
}

// A value no chunk can carry (a topology dump larger than the budget, which the coordinator takes
// whole) is dropped and counted; the rest still goes.
TEST(UploadChunk, AValueLargerThanAnyChunkIsDroppedAndCounted) {
  v1::UploadBatch queue = LongJobQueue(100, 0);
  queue.mutable_topology()->set_source("/tmp/topo.xml");
  queue.mutable_topology()->set_xml(std::string(300 << 10, 'x'));
  size_t dropped = 0;
  const std::vector<v1::UploadBatch> chunks = Drain(queue, 64 << 10, &dropped);
  EXPECT_EQ(dropped, 1u);
  int collectives = 0;
  for (const v1::UploadBatch& c : chunks) {
    EXPECT_FALSE(c.has_topology());
    collectives += c.collectives_size();
  }
  EXPECT_EQ(collectives, 100);
  EXPECT_TRUE(chunks.back().has_exit());
  EXPECT_TRUE(chunks.back().has_proc());
}

// Every record kind counts, a sweep check does not (it is a result, sent once).
TEST(RecordCount, CountsEveryRecordKindButSweepResults) {
  v1::UploadBatch b;
  b.add_collectives();
  for (int k = 0; k < 2; ++k) b.add_p2p();
  for (int k = 0; k < 3; ++k) b.add_ranges();
  for (int k = 0; k < 4; ++k) b.add_marks();
  for (int k = 0; k < 5; ++k) b.add_clock_samples();
  for (int k = 0; k < 6; ++k) b.add_notices();
  for (int k = 0; k < 7; ++k) b.add_gpu();
  for (int k = 0; k < 8; ++k) b.add_mpi_calls();
  for (int k = 0; k < 9; ++k) b.add_sweep();
  b.mutable_nvml()->set_driver_version("550");
  EXPECT_EQ(RecordCount(b), 36u);
  EXPECT_EQ(RecordCount(v1::UploadBatch{}), 0u);
}

}  // namespace
}  // namespace rankscope
