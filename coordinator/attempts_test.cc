#include "coordinator/attempts.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

RankData Rank(int rank, int restart, std::optional<int> exit_code) {
  RankData r;
  r.id.rank = rank;
  r.id.restart_count = restart;
  r.id.launcher = "torchrun";
  r.exit_code = exit_code;
  r.finished = true;
  return r;
}

TEST(Attempts, TheLastAttemptIsAnalysedTheEarlierOnesKept) {
  Session s;
  // Registration order interleaves attempts as the agents came.
  s.ranks = {Rank(0, 0, 1), Rank(1, 0, std::nullopt), Rank(0, 1, 0), Rank(1, 1, 0)};
  s.ranks[1].term_signal = 15;  // torchrun stopped the survivor
  EXPECT_EQ(SeparateAttempts(&s), 2);
  ASSERT_EQ(s.ranks.size(), 2u);
  for (const RankData& r : s.ranks) EXPECT_EQ(r.id.restart_count, 1);
  ASSERT_EQ(s.earlier_attempts.size(), 2u);
  EXPECT_EQ(s.earlier_attempts[0].id.rank, 0);
  EXPECT_EQ(s.earlier_attempts[1].id.rank, 1);
  EXPECT_EQ(DescribeAttempts(s),
            "torchrun restarted the workers 1 time; the findings and timeline cover the last "
            "attempt (restart 1); attempt 0 (2 ranks): rank 0 exited with code 1, rank 1 killed "
            "by signal 15 (report.json \"attempts\")");
  // Idempotent: a saved session loads with every attempt among its ranks, and is split again.
  EXPECT_EQ(SeparateAttempts(&s), 2);
  EXPECT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.earlier_attempts.size(), 2u);
}

TEST(Attempts, WithoutRestartsNothingMoves) {
  Session s;
  s.ranks = {Rank(0, 0, 0), Rank(1, 0, 0)};
  EXPECT_EQ(SeparateAttempts(&s), 1);
  EXPECT_EQ(s.ranks.size(), 2u);
  EXPECT_TRUE(s.earlier_attempts.empty());
  EXPECT_EQ(DescribeAttempts(s), "");
}

}  // namespace
}  // namespace rankscope
