#include "coordinator/ingest.h"

#include <gtest/gtest.h>

#include "proto/upload_chunk.h"

namespace rankscope {
namespace {

// One batch as an agent sends it: known and unknown records, a Latin-1 notice, the exit.
TEST(Ingest, ABatchBecomesTheRanksDataAndWhatItCannotReadIsCounted) {
  v1::UploadBatch batch;
  v1::Collective* c = batch.add_collectives();
  c->set_op(static_cast<uint32_t>(CollectiveOp::kAllreduce));
  c->set_seq(7);
  c->set_enter(100);
  c->set_exit(250);
  batch.add_collectives()->set_op(9999);  // an operation a later agent knows
  batch.add_notices()->set_text("caf\xe9");
  batch.mutable_exit()->set_exit_code(139);
  batch.mutable_exit()->set_term_signal(11);
  batch.mutable_exit()->set_time(5'000);
  batch.set_dropped_records(3);
  batch.set_final(true);

  RankData rank;
  AddBatchToRank(batch, &rank);
  ASSERT_EQ(rank.collectives.size(), 1u);
  EXPECT_EQ(rank.collectives[0].seq, 7u);
  EXPECT_EQ(rank.collectives[0].exit, 250);
  ASSERT_EQ(rank.notices.size(), 2u);
  EXPECT_EQ(rank.notices[0], "caf\xef\xbf\xbd");  // U+FFFD for the byte that is not UTF-8
  EXPECT_NE(rank.notices[1].find("1 records with an operation"), std::string::npos);
  EXPECT_EQ(rank.exit_code, 139);
  EXPECT_EQ(rank.term_signal, 11);
  EXPECT_EQ(rank.exit_time, 5'000);
  EXPECT_EQ(rank.dropped_records, 3u);
  EXPECT_TRUE(rank.finished);

  // A second batch appends; an unseen exit keeps no code.
  v1::UploadBatch later;
  later.add_collectives()->CopyFrom(batch.collectives(0));
  later.mutable_exit()->set_status_unseen(true);
  RankData other;
  AddBatchToRank(later, &other);
  AddBatchToRank(later, &other);
  EXPECT_EQ(other.collectives.size(), 2u);
  EXPECT_TRUE(other.exit_unseen);
  EXPECT_FALSE(other.exit_code.has_value());
  EXPECT_FALSE(other.finished);
}

// The live check's tally: the agent's running time inside MPI (a batch that reaches no later
// than the tally leaves it), and the latest /proc figures (the final ones over those so far).
TEST(Ingest, ABatchGivesTheLiveTallyItsRunningFigures) {
  v1::UploadBatch first;
  first.set_in_mpi_ns(250);
  first.set_in_mpi_through(450);
  first.mutable_proc_so_far()->set_sampled_wall_ns(1'000);
  first.mutable_proc_so_far()->set_sched_cpu_ns(600);
  first.mutable_proc_so_far()->set_run_delay_ns(200);
  first.mutable_proc_so_far()->mutable_cpu_cgroup()->set_throttled_ns(50);
  LiveTally tally;
  AddBatchToTally(first, 10'000, &tally);
  EXPECT_EQ(tally.in_mpi, 250);
  EXPECT_EQ(tally.through, 450);
  EXPECT_EQ(tally.cpu, 600);
  EXPECT_EQ(tally.run_delay, 200);
  EXPECT_EQ(tally.throttled, 50);
  EXPECT_EQ(tally.proc_wall, 1'000);

  v1::UploadBatch stale;  // e.g. a clock-samples batch formed before any record came
  AddBatchToTally(stale, 11'000, &tally);
  EXPECT_EQ(tally.in_mpi, 250);
  EXPECT_EQ(tally.through, 450);

  v1::UploadBatch second;
  second.set_in_mpi_ns(300);
  second.set_in_mpi_through(500);
  second.mutable_proc_so_far()->set_sampled_wall_ns(2'000);
  second.mutable_proc()->set_sampled_wall_ns(2'500);  // the final figures win
  second.mutable_proc()->set_sched_unreadable(true);
  second.mutable_proc()->set_cpu_user_ns(700);
  second.mutable_proc()->set_cpu_system_ns(100);
  AddBatchToTally(second, 12'000, &tally);
  EXPECT_EQ(tally.in_mpi, 300);
  EXPECT_EQ(tally.through, 500);
  EXPECT_EQ(tally.cpu, 800);  // no schedstat: user + system
  EXPECT_EQ(tally.proc_wall, 2'500);
  EXPECT_EQ(tally.throttled, 0);
}

// The stall check's part of the tally: when the rank was last heard from, the MPI call its
// figures so far say it is inside (since when, on the coordinator's clock: received less the
// time inside), and its main thread's states. Figures so far without a call, and the final
// figures, clear it; a batch without figures keeps it.
TEST(Ingest, FiguresSoFarGiveTheTallyTheCallTheRankIsInside) {
  v1::UploadBatch inside;
  inside.mutable_proc_so_far()->set_sampled_wall_ns(2'000);
  v1::OpenMpiCall* call = inside.mutable_proc_so_far()->mutable_open_call();
  call->set_inside_ns(4'000);
  call->set_collective(true);
  call->set_op(1);
  call->set_comm_id(0xabc);
  call->set_seq(41);
  call->set_comm_size(8);
  call->set_peer(-1);
  call->set_enter_ns(777);  // the rank's clock
  v1::MainThreadStates* main = inside.mutable_proc_so_far()->mutable_main_thread();
  main->set_samples(50);
  main->set_stopped(45);
  (*main->mutable_blocked_in())["futex_wait_queue"] = 5;
  LiveTally tally;
  AddBatchToTally(inside, 10'000, &tally);
  EXPECT_EQ(tally.heard, 10'000);
  ASSERT_TRUE(tally.open);
  EXPECT_EQ(*tally.open, (LiveOpenCall{true, 1, 0xabc, 41, 8, -1, 6'000, 777}));
  EXPECT_EQ(tally.main_thread.stopped, 45);
  EXPECT_EQ(tally.main_thread.blocked_in.at("futex_wait_queue"), 5);

  v1::UploadBatch records_only;
  records_only.set_in_mpi_through(900);
  AddBatchToTally(records_only, 11'000, &tally);
  EXPECT_EQ(tally.heard, 11'000);
  EXPECT_TRUE(tally.open);

  v1::UploadBatch outside;
  outside.mutable_proc_so_far()->set_sampled_wall_ns(3'000);
  AddBatchToTally(outside, 12'000, &tally);
  EXPECT_FALSE(tally.open);

  AddBatchToTally(inside, 13'000, &tally);
  EXPECT_TRUE(tally.open);
  v1::UploadBatch last;
  last.mutable_proc()->set_sampled_wall_ns(3'500);
  AddBatchToTally(last, 14'000, &tally);
  EXPECT_FALSE(tally.open);
}

// A long run's NCCL summary, cut into upload chunks by the agent, is whole again at the end.
TEST(Ingest, AnNcclSummaryInPartsIsJoined) {
  v1::UploadBatch queue;
  v1::NcclSummary* nccl = queue.mutable_nccl();
  nccl->set_nccl_version("2.28.9");
  nccl->set_skipped_lines(4);
  nccl->add_communicators()->set_comm_id("0xabc");
  for (int i = 0; i < 5000; ++i) {
    v1::NcclCall* call = nccl->add_calls();
    call->set_comm_id("0xabc");
    call->set_seq(static_cast<uint64_t>(i));
    call->set_op(v1::NCCL_OP_ALL_REDUCE);
  }
  RankData rank;
  int parts = 0;
  for (bool emptied = false; !emptied; ++parts) {
    v1::UploadBatch chunk;
    emptied = TakeChunk(&queue, &chunk, 16 << 10).emptied;
    AddBatchToRank(chunk, &rank);
  }
  EXPECT_GT(parts, 3);
  ASSERT_TRUE(rank.nccl.has_value());
  EXPECT_EQ(rank.nccl->version, "2.28.9");
  EXPECT_EQ(rank.nccl->skipped_lines, 4);
  EXPECT_EQ(rank.nccl->communicators.size(), 1u);
  ASSERT_EQ(rank.nccl->calls.size(), 5000u);
  for (size_t i = 0; i < rank.nccl->calls.size(); ++i) ASSERT_EQ(rank.nccl->calls[i].seq, i);
}

// Two ranks' spools: batches in sequence order, each once (a resend spooled twice), the session
// partial and saying why; another session's spool is refused.
TEST(Ingest, ASessionIsRebuiltFromItsAgentsSpools) {
  std::vector<SpoolContents> spools(2);
  for (int r = 0; r < 2; ++r) {
    spools[r].identity.set_session_id("s");
    spools[r].identity.set_rank(r);
    spools[r].identity.set_world_size(2);
    for (uint64_t seq : {1, 0, 1}) {
      v1::UploadBatch& b = spools[r].batches.emplace_back();
      b.set_batch_seq(seq);
      b.add_collectives()->set_seq(seq);
      if (seq == 1) b.set_final(true);
    }
  }
  spools[1].problem = "a frame cut short at byte 90";
  const Result<Session> s = SessionFromSpools(spools, {"a", "b"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->session_id, "s");
  EXPECT_EQ(s->world_size, 2);
  ASSERT_EQ(s->ranks.size(), 2u);
  ASSERT_EQ(s->ranks[0].collectives.size(), 2u);
  EXPECT_EQ(s->ranks[0].collectives[0].seq, 0u);
  EXPECT_TRUE(s->ranks[0].finished);
  EXPECT_FALSE(s->ranks[1].finished);  // its spool was cut: it may lack the end
  EXPECT_TRUE(s->partial);
  EXPECT_NE(s->partial_reasons.front().find("rebuilt from 2 agent spool(s)"), std::string::npos);

  spools[1].identity.set_session_id("other");
  const Result<Session> mixed = SessionFromSpools(spools, {"a", "b"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("b belongs to session 'other'"), std::string::npos);
}

}  // namespace
}  // namespace rankscope
