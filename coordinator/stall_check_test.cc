#include "coordinator/stall_check.h"

#include <gtest/gtest.h>

#include "core/comm_id.h"
#include "core/records.h"

namespace rankscope {
namespace {

constexpr TimeNs kS = kNsPerSec;

// `n` ranks heard from at `now`, each with one MPI exit behind it, main threads sampled 50 times
// a second, running.
std::vector<LiveTally> Ranks(int n, TimeNs now) {
  std::vector<LiveTally> tallies(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    LiveTally& t = tallies[static_cast<size_t>(r)];
    t.rank = r;
    t.through = 1;
    t.heard = now;
    t.proc_wall = now;
    t.cpu = now;
    t.main_thread.samples = static_cast<int32_t>(50 * (now / kS));
    t.main_thread.running = t.main_thread.samples;
  }
  return tallies;
}

LiveOpenCall Allreduce(uint64_t seq, int size, TimeNs since) {
  return LiveOpenCall{
      true, static_cast<uint32_t>(CollectiveOp::kAllreduce), 7, seq, size, -1, since, since};
}

LiveOpenCall RecvFrom(int peer, TimeNs since) {
  return LiveOpenCall{false, static_cast<uint32_t>(P2PKind::kRecv), 7, 0, 0, peer, since, since};
}

// Rank `r` over the last `d` seconds to `now`: its main thread stopped throughout, no CPU used.
void Stop(LiveTally* t, TimeNs d) {
  t->main_thread.stopped += static_cast<int32_t>(50 * (d / kS));
  t->main_thread.running -= static_cast<int32_t>(50 * (d / kS));
  t->cpu -= d;
}

// Seven ranks wait in all-reduce #41 for rank 3, stopped outside MPI: nothing until they have
// waited `after`, then one finding naming rank 3 and how its main thread spent the stall; the
// next check says nothing new.
TEST(StallCheck, RanksWaitingInACollectiveForAStoppedRankNameIt) {
  StallCheck check(StallCheckOptions{20 * kS, 5 * kS});
  EXPECT_TRUE(check.Check(10 * kS, Ranks(8, 10 * kS)).empty());  // every rank's last exit seen
  std::vector<LiveTally> t = Ranks(8, 25 * kS);
  for (LiveTally& x : t) {
    if (x.rank != 3) x.open = Allreduce(41, 8, 11 * kS);
  }
  Stop(&t[3], 15 * kS);
  EXPECT_TRUE(check.Check(25 * kS, t).empty());  // waited 14 s
  t = Ranks(8, 32 * kS);
  for (LiveTally& x : t) {
    if (x.rank != 3) x.open = Allreduce(41, 8, 11 * kS);
  }
  Stop(&t[3], 22 * kS);
  const std::vector<StallFinding> found = check.Check(32 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  const StallFinding& f = found.front();
  EXPECT_EQ(f.kind, StallKind::kHeldUp);
  EXPECT_EQ(f.holder, 3);
  EXPECT_EQ(f.waiting, (std::vector<int>{0, 1, 2, 4, 5, 6, 7}));
  EXPECT_EQ(f.began, 11 * kS);
  EXPECT_FALSE(f.state.inside);
  EXPECT_EQ(f.state.quiet, 22 * kS);
  EXPECT_NEAR(f.state.stopped, 1.0, 1e-9);
  EXPECT_NEAR(f.state.cpu_share, 0.0, 1e-9);
  const std::string line = StallFindingLine(f, 1 * kS);
  EXPECT_EQ(line,
            "ranks 0-2, 4-7 have waited 21 s inside MPI for rank 3 (rank 0 in allreduce #41 on a "
            "communicator of 8 ranks), which has been outside MPI for 22 s: its main thread was "
            "stopped (a signal such as SIGSTOP, or a debugger) 100% of the 22 s since its last "
            "MPI call. Began about 0:10, seen 21 s later.");
  EXPECT_TRUE(check.Check(33 * kS, t).empty());  // said once
}

// Waits chained through point-to-point calls lead to the rank at their end (a halo exchange:
// 0 receives from 1, 1 from 2, 2 from 3, which computes): one finding for rank 3, holding 0-2.
// A rank inside the same wait only briefly is no waiter, and one whose agent went silent is said.
TEST(StallCheck, ChainsOfWaitsEndAtTheRankHoldingThemUp) {
  StallCheck check(StallCheckOptions{20 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(5, 1 * kS));
  std::vector<LiveTally> t = Ranks(5, 40 * kS);
  t[0].open = RecvFrom(1, 2 * kS);
  t[1].open = RecvFrom(2, 3 * kS);
  t[2].open = RecvFrom(3, 4 * kS);
  t[4].open = RecvFrom(3, 35 * kS);  // 5 s: not waiting yet
  const std::vector<StallFinding> found = check.Check(40 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].holder, 3);
  EXPECT_EQ(found[0].waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(found[0].call_rank, 0);
  EXPECT_NEAR(found[0].state.running, 1.0, 1e-9);
  EXPECT_NE(StallFindingLine(found[0]).find("which has been outside MPI for 39 s: its main "
                                            "thread was running 100%"),
            std::string::npos)
      << StallFindingLine(found[0]);

  EXPECT_TRUE(check.Check(41 * kS, t).empty());  // the same stall: said once

  // Once it is over, a new one is said again: rank 3's agent silent for 10 s this time.
  std::vector<LiveTally> over = Ranks(5, 45 * kS);
  EXPECT_TRUE(check.Check(45 * kS, over).empty());
  t = Ranks(5, 70 * kS);
  t[0].open = RecvFrom(1, 46 * kS);
  t[1].open = RecvFrom(2, 46 * kS);
  t[2].open = RecvFrom(3, 46 * kS);
  t[3].heard = 60 * kS;
  const std::vector<StallFinding> later = check.Check(70 * kS, t);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_TRUE(later[0].state.silent);
  EXPECT_NE(StallFindingLine(later[0]).find("whose agent has sent nothing for 10 s"),
            std::string::npos);
}

// A link of the chain that entered its wait later than the threshold is followed all the same
// (LAMMPS: rank 2 waits for rank 0, which waits for rank 1, stopped; rank 0 entered its receive
// after rank 2 did): the holder is rank 1, not rank 0.
TEST(StallCheck, ALinkThatEnteredItsWaitLaterIsFollowed) {
  StallCheck check(StallCheckOptions{3 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(3, 1 * kS));
  std::vector<LiveTally> t = Ranks(3, 5 * kS);
  t[2].open = RecvFrom(0, 1 * kS);
  t[0].open = RecvFrom(1, 3 * kS);
  Stop(&t[1], 4 * kS);
  const std::vector<StallFinding> found = check.Check(5 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].holder, 1);
  EXPECT_EQ(found[0].waiting, std::vector<int>{2});
}

// A collective completes at different times on different ranks: rank 0 has left all-reduce #125
// and waits in #126, while the others are still inside #125, where rank 1 was stopped. Rank 0 is
// past #125, not absent from it (no cycle 0 -> 2 -> 0): every other rank waits for rank 1.
TEST(StallCheck, AMemberInALaterInstanceHasLeftTheEarlierOne) {
  StallCheck check(StallCheckOptions{3 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(4, 1 * kS));
  std::vector<LiveTally> t = Ranks(4, 6 * kS);
  for (LiveTally& x : t) x.open = Allreduce(125, 4, 1 * kS);
  t[0].open = Allreduce(126, 4, 1 * kS);
  Stop(&t[1], 5 * kS);
  const std::vector<StallFinding> found = check.Check(6 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, StallKind::kHeldUp);
  EXPECT_EQ(found[0].holder, 1);
  EXPECT_EQ(found[0].waiting, (std::vector<int>{0, 2, 3}));
}

// Every member inside the same instance for long: the collective itself does not complete,
// unless one of them is stopped (it holds the others, though inside with them).
TEST(StallCheck, EveryMemberInsideOneInstanceIsAStallOfTheCollective) {
  for (const bool one_stopped : {false, true}) {
    StallCheck check(StallCheckOptions{20 * kS, 5 * kS});
    check.Check(1 * kS, Ranks(4, 1 * kS));
    std::vector<LiveTally> t = Ranks(4, 30 * kS);
    for (LiveTally& x : t) x.open = Allreduce(9, 4, 2 * kS);
    if (one_stopped) Stop(&t[2], 29 * kS);
    const std::vector<StallFinding> found = check.Check(30 * kS, t);
    ASSERT_EQ(found.size(), 1u) << one_stopped;
    if (one_stopped) {
      EXPECT_EQ(found[0].kind, StallKind::kHeldUp);
      EXPECT_EQ(found[0].holder, 2);
      EXPECT_EQ(found[0].waiting, (std::vector<int>{0, 1, 3}));
      EXPECT_NE(StallFindingLine(found[0]).find("which is inside allreduce #9 on a communicator "
                                                "of 4 ranks itself: its main thread was stopped"),
                std::string::npos)
          << StallFindingLine(found[0]);
    } else {
      EXPECT_EQ(found[0].kind, StallKind::kTogether);
      EXPECT_EQ(found[0].waiting, (std::vector<int>{0, 1, 2, 3}));
      EXPECT_NE(StallFindingLine(found[0]).find("all 4 ranks of a communicator have been inside "
                                                "allreduce #9 on a communicator of 4 ranks for "
                                                "28 s: the collective itself does not complete"),
                std::string::npos)
          << StallFindingLine(found[0]);
    }
  }
}

// Two ranks each receiving from the other: a deadlock, said once.
TEST(StallCheck, WaitsThatCloseACycleAreADeadlock) {
  StallCheck check(StallCheckOptions{20 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(3, 1 * kS));
  std::vector<LiveTally> t = Ranks(3, 30 * kS);
  t[1].open = RecvFrom(2, 2 * kS);
  t[2].open = RecvFrom(1, 3 * kS);
  const std::vector<StallFinding> found = check.Check(30 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, StallKind::kDeadlock);
  EXPECT_EQ(found[0].waiting, (std::vector<int>{1, 2}));
  EXPECT_NE(StallFindingLine(found[0]).find("ranks 1 -> 2 -> 1 each wait for the next inside MPI"),
            std::string::npos)
      << StallFindingLine(found[0]);
  EXPECT_TRUE(check.Check(31 * kS, t).empty());

  // The same figures from a rank that has left an MPI call after it entered its receive (a rank
  // continued after a stop, its figures so far a second behind its records): its call is over,
  // no cycle; rank 1 waits for it. An exit before its entry changes nothing.
  StallCheck other(StallCheckOptions{20 * kS, 5 * kS});
  other.Check(1 * kS, Ranks(3, 1 * kS));
  t[2].through = 3 * kS - 1;
  ASSERT_EQ(other.Check(30 * kS, t).size(), 1u);
  EXPECT_EQ(other.Check(31 * kS, t).size(), 0u);  // the same episode
  other = StallCheck(StallCheckOptions{20 * kS, 5 * kS});
  other.Check(1 * kS, Ranks(3, 1 * kS));
  t[2].through = 3 * kS + 1;
  const std::vector<StallFinding> after = other.Check(30 * kS, t);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].kind, StallKind::kHeldUp);
  EXPECT_EQ(after[0].holder, 2);
  EXPECT_FALSE(after[0].state.inside);
}

// A job whose ranks take turns inside long calls but keep finishing them (each call shorter than
// `after`) is not stalled; nor is a rank alone inside a call on a communicator whose other
// members are unknown.
TEST(StallCheck, CallsShorterThanTheThresholdAreNoStall) {
  StallCheck check(StallCheckOptions{20 * kS, 5 * kS});
  for (TimeNs now = 1 * kS; now < 100 * kS; now += kS) {
    std::vector<LiveTally> t = Ranks(4, now);
    for (LiveTally& x : t) {
      x.through = now;
      x.open = Allreduce(static_cast<uint64_t>(now / (10 * kS)), 4, now - now % (10 * kS));
    }
    t[0].open = Allreduce(0, 2, 1 * kS);  // a pair's communicator, its partner unknown
    t[0].open->comm_id = 8;
    EXPECT_TRUE(check.Check(now, t).empty()) << now;
  }
}

// A rank polling for a message (MPI_Test or MPI_Iprobe again and again since `since`) waits as
// one inside a blocking receive does, and the line says it polls: rank 0 polls for rank 1,
// which is stopped outside MPI.
TEST(StallCheck, APollingLoopIsAWaitLikeABlockingCall) {
  StallCheck check(StallCheckOptions{3 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(2, 1 * kS));
  std::vector<LiveTally> t = Ranks(2, 6 * kS);
  t[0].open = RecvFrom(1, 2 * kS);
  t[0].open->op = static_cast<uint32_t>(P2PKind::kIrecv);
  t[0].open->polling = true;
  Stop(&t[1], 5 * kS);
  const std::vector<StallFinding> found = check.Check(6 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].holder, 1);
  EXPECT_EQ(found[0].waiting, std::vector<int>{0});
  EXPECT_EQ(StallFindingLine(found[0]),
            "rank 0 has waited 4 s inside MPI for rank 1 (rank 0 polling for a receive from rank "
            "1), which has been outside MPI for 5 s: its main thread was stopped (a signal such "
            "as SIGSTOP, or a debugger) 100% of the 5 s since its last MPI call. Began about 0:02, "
            "seen 4 s later.");
}

// Receives from any rank on the whole job's communicator (HPCC's RandomAccess: every rank polls
// MPI_Irecv(MPI_ANY_SOURCE)) wait for the ranks not inside MPI: rank 1, stopped. Where many ranks
// are outside MPI, a receive from any of them waits for no one in particular.
TEST(StallCheck, AReceiveFromAnyRankWaitsForTheFewOutsideMpi) {
  StallCheck check(StallCheckOptions{3 * kS, 5 * kS});
  check.Check(1 * kS, Ranks(4, 1 * kS));
  std::vector<LiveTally> t = Ranks(4, 6 * kS);
  for (int r : {0, 2, 3}) {
    t[size_t(r)].open = RecvFrom(-1, 2 * kS);
    t[size_t(r)].open->comm_id = WorldCommId(4);
    t[size_t(r)].open->polling = true;
  }
  Stop(&t[1], 5 * kS);
  const std::vector<StallFinding> found = check.Check(6 * kS, t);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].holder, 1);
  EXPECT_EQ(found[0].waiting, (std::vector<int>{0, 2, 3}));
  EXPECT_NE(StallFindingLine(found[0]).find("(rank 0 polling for a receive from any rank)"),
            std::string::npos)
      << StallFindingLine(found[0]);

  // On a communicator other than the whole job's: its members are unknown, nobody is named.
  StallCheck other(StallCheckOptions{3 * kS, 5 * kS});
  other.Check(1 * kS, Ranks(4, 1 * kS));
  for (int r : {0, 2, 3}) t[size_t(r)].open->comm_id = 99;
  EXPECT_TRUE(other.Check(6 * kS, t).empty());

  // A rank between two calls that made progress at this check is not waited for: rank 1 stopped
  // is named, rank 2 (its latest exit just moved, its next call not seen yet) is not.
  StallCheck moving(StallCheckOptions{3 * kS, 5 * kS});
  moving.Check(1 * kS, Ranks(4, 1 * kS));
  for (int r : {0, 3}) t[size_t(r)].open->comm_id = WorldCommId(4);
  t[2].open.reset();
  t[2].through = 6 * kS;
  const std::vector<StallFinding> held = moving.Check(6 * kS, t);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].holder, 1);
  EXPECT_EQ(held[0].waiting, (std::vector<int>{0, 3}));

  // A rank whose program has ended (its final figures came, then silence) is no one's sender.
  StallCheck after_end(StallCheckOptions{3 * kS, 5 * kS});
  after_end.Check(1 * kS, Ranks(4, 1 * kS));
  std::vector<LiveTally> ended = Ranks(4, 20 * kS);
  for (int r : {0, 2}) {
    ended[size_t(r)].open = RecvFrom(-1, 2 * kS);
    ended[size_t(r)].open->comm_id = WorldCommId(4);
  }
  ended[3].ended = true;
  ended[3].heard = 2 * kS;
  Stop(&ended[1], 19 * kS);
  const std::vector<StallFinding> not_ended = after_end.Check(20 * kS, ended);
  ASSERT_EQ(not_ended.size(), 1u);
  EXPECT_EQ(not_ended[0].holder, 1);

  // With 20 ranks outside MPI beside the 3 waiting, none is named.
  StallCheck many(StallCheckOptions{3 * kS, 5 * kS});
  many.Check(1 * kS, Ranks(23, 1 * kS));
  std::vector<LiveTally> crowd = Ranks(23, 6 * kS);
  for (int r : {0, 2, 3}) {
    crowd[size_t(r)].open = RecvFrom(-1, 2 * kS);
    crowd[size_t(r)].open->comm_id = WorldCommId(23);
  }
  EXPECT_TRUE(many.Check(6 * kS, crowd).empty());
  // ... but a stopped one among them is.
  StallCheck many_stopped(StallCheckOptions{3 * kS, 5 * kS});
  many_stopped.Check(1 * kS, Ranks(23, 1 * kS));
  Stop(&crowd[9], 5 * kS);
  const std::vector<StallFinding> stopped = many_stopped.Check(6 * kS, crowd);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].holder, 9);
}

}  // namespace
}  // namespace rankscope
