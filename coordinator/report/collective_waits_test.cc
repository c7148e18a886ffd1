#include "coordinator/report/collective_waits.h"

#include <gtest/gtest.h>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

CollectiveInstance Instance(CollectiveOp op, int root,
                            std::vector<std::pair<TimeNs, TimeNs>> times) {
  CollectiveInstance inst;
  inst.op = op;
  inst.root_comm_rank = root;
  inst.comm_size = static_cast<int>(times.size());
  inst.complete = true;
  for (size_t i = 0; i < times.size(); ++i) {
    inst.members.push_back(
        {static_cast<int>(i), static_cast<int>(i), times[i].first, times[i].second, 0});
  }
  return inst;
}

TEST(MemberWaits, AllToAllWaitsForTheLastArrival) {
  auto inst = Instance(CollectiveOp::kAllreduce, -1, {{0, 100}, {30, 100}, {90, 100}});
  EXPECT_EQ(MemberWaits(inst), (std::vector<DurationNs>{90, 60, 0}));
}

TEST(MemberWaits, BroadcastWaitsForTheRootOnly) {
  auto inst = Instance(CollectiveOp::kBcast, 1, {{0, 100}, {50, 100}, {70, 100}});
  EXPECT_EQ(MemberWaits(inst), (std::vector<DurationNs>{50, 0, 0}));
}

TEST(MemberWaits, ReduceMakesTheRootWaitForTheLastSender) {
  auto inst = Instance(CollectiveOp::kReduce, 0, {{0, 100}, {50, 60}, {70, 80}});
  EXPECT_EQ(MemberWaits(inst), (std::vector<DurationNs>{70, 0, 0}));
}

TEST(MemberWaits, NeverLongerThanTheCallItself) {
  // Rank 0 left before rank 1 arrived: only clock error can do that.
  auto inst = Instance(CollectiveOp::kAllreduce, -1, {{0, 10}, {50, 60}});
  EXPECT_EQ(MemberWaits(inst), (std::vector<DurationNs>{10, 0}));
}

TEST(SummarizeCollectives, CountsAndPerRankStatistics) {
  Session s = report_test::MakeSession();
  CollectiveOverview o = SummarizeCollectives(MatchCollectives(s));
  EXPECT_EQ(o.instances, 5);
  EXPECT_EQ(o.complete, 3);  // rank 2 missed allreduce 3 and the bcast
  EXPECT_EQ(o.by_op.at("allreduce"), 4);
  EXPECT_EQ(o.by_op.at("bcast"), 1);
  ASSERT_EQ(o.ranks.size(), 3u);
  EXPECT_EQ(o.ranks[2].rank, 2);
  EXPECT_EQ(o.ranks[2].times_last, 3);
  EXPECT_EQ(o.ranks[2].median_lateness, 2 * kNsPerMs);
  EXPECT_EQ(o.ranks[0].wait, 3 * 2 * kNsPerMs);
  EXPECT_EQ(o.ranks[2].wait, 0);
  EXPECT_EQ(o.max_median_lateness_rank, 2);
}

}  // namespace
}  // namespace rankscope
