#include "coordinator/completeness.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

RankData Finished(int rank, int exit_code = 0, int signal = 0) {
  RankData r;
  r.id.rank = rank;
  r.id.node = "n" + std::to_string(rank);
  r.finished = true;
  r.exit_code = exit_code;
  r.term_signal = signal;
  return r;
}

TEST(Completeness, AllRanksFinishedIsComplete) {
  Session s;
  s.world_size = 2;
  s.launcher_exit_code = 0;
  s.ranks = {Finished(0), Finished(1)};
  AssessCompleteness(&s);
  EXPECT_FALSE(s.partial);
  EXPECT_TRUE(s.partial_reasons.empty());
}

// mpirun kills the others once one rank fails: all read as failed, the order names the first.
// Rank 1's clock runs 200 ms ahead of the coordinator's (its samples say so), so by its own
// clock it ended "first"; in coordinator time rank 2 did.
TEST(Completeness, TheRankThatEndedFirstIsNamed) {
  Session s;
  s.world_size = 3;
  s.launcher_exit_code = 139;
  s.ranks = {Finished(0, 143, 15), Finished(1, 143, 15), Finished(2, 139, 11)};
  s.ranks[0].exit_time = 1'350 * kNsPerMs;
  s.ranks[1].exit_time = 1'160 * kNsPerMs;  // local; 960 ms in coordinator time
  s.ranks[2].exit_time = 1'100 * kNsPerMs;
  for (int k = 0; k < 8; ++k) {
    const TimeNs t = (1'000 + 10 * k) * kNsPerMs;  // the agent's clock: the coordinator's + 200 ms
    s.ranks[1].clock_samples.push_back({t, t - 200 * kNsPerMs + 5, t - 200 * kNsPerMs + 6, t + 11});
  }
  AssessCompleteness(&s);
  std::string all;
  for (const auto& r : s.partial_reasons) all += r + "|";
  EXPECT_NE(all.find("rank 1 (n1) ended first (signal 15"), std::string::npos) << all;
  // Without the clock samples the local times are taken as they are: rank 2 first.
  s.ranks[1].clock_samples.clear();
  s.partial_reasons.clear();
  AssessCompleteness(&s);
  all.clear();
  for (const auto& r : s.partial_reasons) all += r + "|";
  EXPECT_NE(all.find("rank 2 (n2) ended first (signal 11 (Segmentation fault)), 60.00 ms before "
                     "the next (rank 1)"),
            std::string::npos)
      << all;
  // One rank that ended badly needs no order.
  Session one;
  one.world_size = 2;
  one.ranks = {Finished(0), Finished(1, 3)};
  one.ranks[1].exit_time = 5;
  AssessCompleteness(&one);
  for (const auto& r : one.partial_reasons) EXPECT_EQ(r.find("ended first"), std::string::npos);
}

TEST(Completeness, NamesMissingCrashedAndUnfinishedRanks) {
  Session s;
  s.world_size = 6;
  s.launcher_exit_code = 134;
  RankData unfinished = Finished(1);
  unfinished.finished = false;
  s.ranks = {Finished(0), unfinished, Finished(2, 134, 6)};
  AssessCompleteness(&s);
  AssessCompleteness(&s);  // idempotent
  ASSERT_TRUE(s.partial);
  std::string all;
  for (const auto& r : s.partial_reasons) all += r + "|";
  EXPECT_NE(all.find("rank 2 (n2) was killed by signal 6"), std::string::npos) << all;
  EXPECT_NE(all.find("no data from rank(s) 3-5"), std::string::npos) << all;
  EXPECT_NE(all.find("rank(s) 1 never sent"), std::string::npos) << all;
  EXPECT_NE(all.find("launcher exited with code 134"), std::string::npos) << all;
  EXPECT_EQ(s.partial_reasons.size(), 4u);
}

// The agent beside a rank could not see how it ended (reaped before it looked, no exit()): with
// the launcher failing it may be the rank that failed, so it is named; with the launcher at 0
// every rank exited 0.
TEST(Completeness, ARankWhoseEndWasNotSeenIsNamedOnlyWhenTheLauncherFailed) {
  for (const int launcher : {0, 137}) {
    Session s;
    s.world_size = 2;
    s.launcher_exit_code = launcher;
    RankData unseen = Finished(1);
    unseen.exit_code.reset();
    unseen.exit_unseen = true;
    s.ranks = {Finished(0), unseen};
    AssessCompleteness(&s);
    EXPECT_EQ(s.partial, launcher != 0);
    const bool named =
        !s.partial_reasons.empty() && s.partial_reasons.front() ==
                                          "rank 1 (n1) ended without calling exit() (a signal, or "
                                          "_exit); its status was not seen";
    EXPECT_EQ(named, launcher != 0) << launcher;
  }
  // Both ranks unseen (a shell script under mpirun, reaped before the agents looked): with the
  // launcher at 0 neither "ended first", and the session stays complete.
  for (const int launcher : {0, 137}) {
    Session s;
    s.world_size = 2;
    s.launcher_exit_code = launcher;
    s.ranks = {Finished(0), Finished(1)};
    for (RankData& r : s.ranks) {
      r.exit_code.reset();
      r.exit_unseen = true;
      r.exit_time = (r.id.rank + 1) * kNsPerMs;
    }
    AssessCompleteness(&s);
    EXPECT_EQ(s.partial, launcher != 0) << launcher;
    std::string all;
    for (const auto& r : s.partial_reasons) all += r + "|";
    EXPECT_EQ(all.find("ended first") != std::string::npos, launcher != 0) << all;
  }
}

// The missing ranks are found from the ranks present, whatever the world size says.
TEST(Completeness, MissingRanksOfAHugeWorldCostNothing) {
  Session s;
  s.world_size = 2147483647;
  s.ranks = {Finished(0), Finished(5)};
  const MissingRanks missing = FindMissingRanks(s);
  EXPECT_EQ(missing.count, 2147483647 - 2);
  EXPECT_EQ(missing.ranges, "1-4, 6-2147483646");
  s.world_size = 100;
  s.ranks.clear();
  for (int r = 0; r < 100; r += 2) s.ranks.push_back(Finished(r));
  const MissingRanks odd = FindMissingRanks(s);
  EXPECT_EQ(odd.count, 50);
  EXPECT_EQ(odd.ranges,
            "1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31 and 34 more ranges");
}

}  // namespace
}  // namespace rankscope
