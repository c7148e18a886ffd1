#include "coordinator/collective_matcher.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

RankData Rank(int rank, std::vector<CollectiveRecord> colls) {
  RankData r;
  r.id.rank = rank;
  r.collectives = std::move(colls);
  return r;
}

CollectiveRecord Coll(uint64_t comm, uint64_t seq, int size, int comm_rank, TimeNs enter,
                      CollectiveOp op = CollectiveOp::kAllreduce, int root = -1) {
  return {.comm_id = comm,
          .seq = seq,
          .op = op,
          .root = root,
          .comm_size = size,
          .comm_rank = comm_rank,
          .bytes = 8,
          .enter = enter,
          .exit = enter + 10};
}

TEST(CollectiveMatcher, GroupsByCommAndSequence) {
  Session s;
  s.ranks.push_back(Rank(0, {Coll(1, 0, 2, 0, 100), Coll(1, 1, 2, 0, 200), Coll(9, 0, 1, 0, 50)}));
  s.ranks.push_back(Rank(1, {Coll(1, 1, 2, 1, 210), Coll(1, 0, 2, 1, 105)}));
  auto inst = MatchCollectives(s);
  ASSERT_EQ(inst.size(), 3u);
  EXPECT_EQ(inst[0].comm_id, 9u);  // ordered by earliest enter
  EXPECT_TRUE(inst[0].complete);
  EXPECT_EQ(inst[1].comm_id, 1u);
  EXPECT_EQ(inst[1].seq, 0u);
  ASSERT_EQ(inst[1].members.size(), 2u);
  EXPECT_EQ(inst[1].members[1].rank, 1);
  EXPECT_EQ(inst[1].members[1].enter, 105);
  EXPECT_TRUE(inst[1].complete);
  EXPECT_EQ(inst[2].seq, 1u);
}

TEST(CollectiveMatcher, MissingMemberIsIncomplete) {
  Session s;
  s.ranks.push_back(Rank(0, {Coll(1, 0, 3, 0, 100)}));
  s.ranks.push_back(Rank(1, {Coll(1, 0, 3, 1, 100)}));
  auto inst = MatchCollectives(s);
  ASSERT_EQ(inst.size(), 1u);
  EXPECT_FALSE(inst[0].complete);
}

TEST(CollectiveMatcher, DisagreeingMembersAreFlagged) {
  Session s;
  s.ranks.push_back(Rank(0, {Coll(1, 0, 2, 0, 100, CollectiveOp::kBcast, 0)}));
  s.ranks.push_back(Rank(1, {Coll(1, 0, 2, 1, 100, CollectiveOp::kBcast, 1)}));
  auto inst = MatchCollectives(s);
  ASSERT_EQ(inst.size(), 1u);
  EXPECT_TRUE(inst[0].mismatched);
  EXPECT_FALSE(inst[0].complete);
}

}  // namespace
}  // namespace rankscope
