#include "coordinator/live_check.h"

#include <gtest/gtest.h>

#include <vector>

namespace rankscope {
namespace {

// How one rank spends each second of a simulated run.
struct Rate {
  double wait = 0.5;       // share inside MPI
  double cpu = 1.0;        // share of wall on a CPU
  double run_delay = 0.0;  // share of wall waiting for one
  double throttled = 0.0;  // share of wall its cgroup throttled it
  double covered = 1.0;    // how far its latest exit moves, in seconds a second
};

// Cumulative tallies of `rates.size()` ranks after `seconds` seconds of the rates given.
class Sim {
 public:
  explicit Sim(size_t ranks) : tallies_(ranks) {
    for (size_t r = 0; r < ranks; ++r) {
      tallies_[r].rank = static_cast<int>(r);
      tallies_[r].through = kNsPerSec;  // the first record came after a second
    }
  }
  // Advances every rank by a second at its rate.
  std::vector<LiveTally> Second(const std::vector<Rate>& rates) {
    for (size_t r = 0; r < tallies_.size(); ++r) {
      LiveTally& t = tallies_[r];
      const Rate& rate = rates[r];
      t.through += static_cast<DurationNs>(rate.covered * 1e9);
      t.in_mpi += static_cast<DurationNs>(rate.wait * rate.covered * 1e9);
      t.cpu += static_cast<DurationNs>(rate.cpu * 1e9);
      t.run_delay += static_cast<DurationNs>(rate.run_delay * 1e9);
      t.throttled += static_cast<DurationNs>(rate.throttled * 1e9);
      t.proc_wall += kNsPerSec;
    }
    return tallies_;
  }

 private:
  std::vector<LiveTally> tallies_;
};

// Runs `seconds` checks a second apart; returns every finding with the second it came at.
std::vector<std::pair<int, LiveFinding>> RunChecks(LiveCheck* check, Sim* sim, int seconds,
                                                   const std::vector<Rate>& rates,
                                                   int first_second = 0) {
  std::vector<std::pair<int, LiveFinding>> out;
  for (int s = first_second; s < first_second + seconds; ++s) {
    for (const LiveFinding& f : check->Check(s * kNsPerSec, sim->Second(rates))) {
      out.emplace_back(s, f);
    }
  }
  return out;
}

TEST(LiveCheck, ACleanRunWithJitterIsNeverNamed) {
  LiveCheck check;
  Sim sim(8);
  for (int s = 0; s < 60; ++s) {
    std::vector<Rate> rates(8);
    for (size_t r = 0; r < 8; ++r) {
      // Who waits least moves around: +-6 points of own work, never the same rank twice in a row.
      rates[r].wait = 0.45 + 0.06 * (static_cast<int>((r + static_cast<size_t>(s)) % 3) - 1);
      rates[r].run_delay = 0.05;
    }
    EXPECT_TRUE(check.Check(s * kNsPerSec, sim.Second(rates)).empty()) << "second " << s;
  }
}

TEST(LiveCheck, AThrottledRankIsNamedOnceWithItsCauseAndOnset) {
  LiveCheck check;  // windows of 2 checks, 3 in a row
  Sim sim(4);
  std::vector<Rate> clean(4);
  EXPECT_TRUE(RunChecks(&check, &sim, 10, clean).empty());
  std::vector<Rate> faulted = clean;
  for (size_t r = 0; r < 4; ++r) faulted[r].wait = 0.6;
  faulted[2] = Rate{.wait = 0.05, .cpu = 0.3, .run_delay = 0.0, .throttled = 0.7};
  auto found = RunChecks(&check, &sim, 20, faulted, 10);
  ASSERT_EQ(found.size(), 1u);
  const LiveFinding& f = found[0].second;
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.cause, LiveCause::kThrottled);
  EXPECT_NEAR(f.throttled_share, 0.7, 1e-6);
  EXPECT_NEAR(f.others_waiting, 0.6, 1e-6);
  // The fault began in the second before the check at 10 (that check is the first whose window
  // holds some of it, so the one before it, at 9, is the onset given).
  EXPECT_GE(f.began, 9 * kNsPerSec);
  EXPECT_LE(f.began, 10 * kNsPerSec);
  EXPECT_LE(found[0].first, 16);
  const std::string line = LiveFindingLine(f, 0);
  EXPECT_NE(line.find("rank 2 holds the others up"), std::string::npos) << line;
  EXPECT_NE(line.find("throttled it 70%"), std::string::npos) << line;
  EXPECT_NE(line.find("Began about 0:"), std::string::npos) << line;
}

TEST(LiveCheck, AThrottledRankIsNamedWhenThrottlingStretchesItsMpiTimeToo) {
  // LAMMPS, one rank of 4 under a 20% cgroup quota: every rank inside MPI about 80% of the time,
  // the throttled one too (it polls in MPI, and its quota runs out there as well).
  std::vector<Rate> rates(4);
  for (Rate& r : rates) r = Rate{.wait = 0.82, .cpu = 0.49, .run_delay = 0.51};
  rates[1] = Rate{.wait = 0.8, .cpu = 0.2, .run_delay = 0.8, .throttled = 0.73};
  LiveCheck check;
  Sim sim(4);
  auto found = RunChecks(&check, &sim, 10, rates);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].second.rank, 1);
  EXPECT_EQ(found[0].second.cause, LiveCause::kThrottled);
  EXPECT_EQ(LiveFindingLine(found[0].second, 0),
            "rank 1 holds the others up: its cgroup throttled it 73% of the last 2 s, while the "
            "others waited in MPI 82% of theirs (outside MPI it spent 20%, the others 18%). Began "
            "about 0:00, seen 4 s later.");
  // The whole job throttled alike tells nothing of which rank holds it up.
  for (Rate& r : rates) r = Rate{.wait = 0.82, .cpu = 0.2, .run_delay = 0.8, .throttled = 0.73};
  rates[1].wait = 0.8;
  LiveCheck alike;
  Sim again(4);
  EXPECT_TRUE(RunChecks(&alike, &again, 20, rates).empty());
}

TEST(LiveCheck, TwoRanksNeedACauseSeenFromOutside) {
  std::vector<Rate> busy(2);
  busy[0] = Rate{.wait = 0.05};
  busy[1] = Rate{.wait = 0.6};
  {
    LiveCheck check;
    Sim sim(2);
    EXPECT_TRUE(RunChecks(&check, &sim, 20, busy).empty())
        << "more work alone names no rank of two";
  }
  std::vector<Rate> starved = busy;
  starved[0].cpu = 0.4;
  starved[0].run_delay = 0.6;
  starved[1].run_delay = 0.1;
  LiveCheck check;
  Sim sim(2);
  auto found = RunChecks(&check, &sim, 20, starved);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].second.rank, 0);
  EXPECT_EQ(found[0].second.cause, LiveCause::kCpuStarved);
  EXPECT_NE(LiveFindingLine(found[0].second, 0).find("waited for a CPU 60%"), std::string::npos);
}

TEST(LiveCheck, ASleepingRankIsOffCpu) {
  std::vector<Rate> rates(4);
  for (Rate& r : rates) r.wait = 0.5;
  rates[3] = Rate{.wait = 0.02, .cpu = 0.2};  // working 98% of the time, on a CPU 20% of it
  LiveCheck check;
  Sim sim(4);
  auto found = RunChecks(&check, &sim, 10, rates);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].second.rank, 3);
  EXPECT_EQ(found[0].second.cause, LiveCause::kOffCpu);
}

TEST(LiveCheck, MoreWorkWithoutAnOutsideCauseMustLastLonger) {
  std::vector<Rate> rates(4);
  for (Rate& r : rates) r.wait = 0.5;
  rates[1] = Rate{.wait = 0.02};  // on its CPU all the time, like the others
  LiveCheck check;
  Sim sim(4);
  auto found = RunChecks(&check, &sim, 30, rates);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].second.rank, 1);
  EXPECT_EQ(found[0].second.cause, LiveCause::kBusy);
  // Judged from the third check on (two-check windows), named at the tenth judged in a row.
  EXPECT_EQ(found[0].first, 2 + 9);
}

TEST(LiveCheck, RanksTakingTurnsOnSharedCoresAreNotNamed) {
  // 4 ranks on 2 cores, as on a laptop or CI: every rank runnable all the time (polling in MPI
  // or computing), half of it waiting for a core; each pair sharing a core holds the others up
  // in turn (seen on mpi_train --oversubscribe -np 4, clean: turns of about 4 s, and at times
  // longer than 10 checks).
  auto turns = [](LiveCheck* check, int turn_s) {
    Sim sim(4);
    size_t found = 0;
    for (int s = 0; s < 60; ++s) {
      const bool first_pair = (s / turn_s) % 2 == 0;
      std::vector<Rate> rates(4);
      for (size_t r = 0; r < 4; ++r) {
        const bool ahead = (r == 1 || r == 2) == first_pair;
        rates[r] = Rate{.wait = ahead ? 0.1 : 0.45, .cpu = 0.49, .run_delay = 0.51};
      }
      found += check->Check(s * kNsPerSec, sim.Second(rates)).size();
    }
    return found;
  };
  for (int turn_s : {4, 15}) {
    LiveCheck check;
    EXPECT_EQ(turns(&check, turn_s), 0u) << "turns of " << turn_s << " s";
  }
  // Each turn does stand out: without the two rules, they would be named.
  LiveCheck hasty(LiveCheckOptions{.persist_busy = 3, .busy_max_run_delay = 1.0});
  EXPECT_GT(turns(&hasty, 4), 0u);
  LiveCheck contended(LiveCheckOptions{.busy_max_run_delay = 1.0});
  EXPECT_GT(turns(&contended, 15), 0u);
}

TEST(LiveCheck, ABurstOfACauseAfterMoreWorkNeedsChecksOfItsOwn) {
  std::vector<Rate> busy(4);
  for (Rate& r : busy) r.wait = 0.5;
  busy[1] = Rate{.wait = 0.02};
  std::vector<Rate> burst = busy;
  burst[1] = Rate{.wait = 0.02, .cpu = 0.2, .throttled = 0.8};
  LiveCheck check;
  Sim sim(4);
  EXPECT_TRUE(RunChecks(&check, &sim, 8, busy).empty());  // standing out from the third check
  EXPECT_TRUE(RunChecks(&check, &sim, 1, burst, 8).empty());
  auto found = RunChecks(&check, &sim, 10, busy, 9);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].second.cause, LiveCause::kBusy);  // at its tenth check in a row
  EXPECT_EQ(found[0].first, 11);
}

TEST(LiveCheck, ARankWhoseCallsCoverTooLittleOfTheWindowIsNotJudged) {
  // Rank 2 is throttled but its latest exit moves 0.2 s a second (inside long calls, or steps
  // longer than the window): its shares would be over too short a stretch.
  std::vector<Rate> rates(4);
  for (Rate& r : rates) r.wait = 0.6;
  rates[2] = Rate{.wait = 0.05, .cpu = 0.3, .throttled = 0.7, .covered = 0.2};
  LiveCheck check;
  Sim sim(4);
  EXPECT_TRUE(RunChecks(&check, &sim, 20, rates).empty());
  // A tally with no rank number is left out, not a crash.
  LiveCheck other;
  std::vector<LiveTally> odd(1);
  odd[0].rank = -5;
  for (int s = 0; s < 5; ++s) EXPECT_TRUE(other.Check(s * kNsPerSec, odd).empty());
}

TEST(LiveCheck, AShortBlipIsNotReported) {
  std::vector<Rate> clean(4);
  std::vector<Rate> blip = clean;
  for (Rate& r : blip) r.wait = 0.6;
  blip[1] = Rate{.wait = 0.0, .cpu = 0.2, .throttled = 0.8};
  LiveCheck check;
  Sim sim(4);
  EXPECT_TRUE(RunChecks(&check, &sim, 10, clean).empty());
  EXPECT_TRUE(RunChecks(&check, &sim, 1, blip, 10).empty());
  EXPECT_TRUE(RunChecks(&check, &sim, 20, clean, 11).empty());
}

TEST(LiveCheck, OthersThatHardlyWaitCostNothing) {
  // A rank works more, but the others wait only 5% of their time: not material.
  std::vector<Rate> rates(4);
  for (Rate& r : rates) r.wait = 0.05;
  rates[0] = Rate{.wait = 0.0, .cpu = 0.2, .throttled = 0.8};
  LiveCheck check;
  Sim sim(4);
  EXPECT_TRUE(RunChecks(&check, &sim, 20, rates).empty());
}

TEST(LiveCheck, ARankWithoutRecordsInTheWindowIsSkipped) {
  LiveCheck check;
  std::vector<LiveTally> t(4);
  for (int r = 0; r < 4; ++r) t[static_cast<size_t>(r)].rank = r;  // nothing yet: through 0
  for (int s = 0; s < 10; ++s) EXPECT_TRUE(check.Check(s * kNsPerSec, t).empty());
}

// A finding asks for raw records of the rank and its nearest neighbours by rank number.
TEST(LiveCheck, CaptureRanksAreTheRankAndItsNearestNeighbours) {
  EXPECT_EQ(CaptureRanks(5, {0, 1, 2, 3, 4, 5, 6, 7}), (std::vector<int>{5, 4, 6}));
  EXPECT_EQ(CaptureRanks(0, {3, 2, 1, 0}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(CaptureRanks(3, {0, 1, 2, 3}), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(CaptureRanks(1, {0, 1}), (std::vector<int>{1, 0}));
  EXPECT_EQ(CaptureRanks(1, {1}), (std::vector<int>{1}));
  EXPECT_EQ(CaptureRanks(4, {0, 9, 4, 9}, 3), (std::vector<int>{4, 0, 9}));  // duplicates once
}

}  // namespace
}  // namespace rankscope
