#include "launchers/sweep_plan.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

const char kSinfo[] =
    "n1|idle|none\n"
    "n2|drain|admin: bad DIMM\n"
    "n3|down*|Not responding\n"
    "n4|mix|none\n"
    "n1|idle|none\n";  // n1 again, from a second partition

TEST(SweepPlan, ParsesSinfoOncePerNode) {
  auto nodes = ParseSinfoNodes(kSinfo);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[1].reason, "admin: bad DIMM");
  EXPECT_EQ(nodes[2].state, "down*");
}

TEST(SweepPlan, EveryNodeByDefaultAndWhySomeAreNotRun) {
  auto plan = PlanSweepNodes({}, ParseSinfoNodes(kSinfo));
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_TRUE(plan[0].run);
  EXPECT_FALSE(plan[1].run);
  EXPECT_FALSE(plan[1].fail);
  EXPECT_TRUE(plan[1].drained);
  EXPECT_EQ(plan[1].why_not, "not swept: already drained (sinfo: drain: admin: bad DIMM)");
  EXPECT_TRUE(plan[2].fail);
  EXPECT_EQ(plan[2].why_not, "node is down or not responding (sinfo: down*: Not responding)");
  EXPECT_TRUE(plan[3].run);
}

TEST(SweepPlan, RequestedNodesKeepTheirOrderAndUnknownOnesFail) {
  auto plan = PlanSweepNodes({"n4", "gpu17", "n1"}, ParseSinfoNodes(kSinfo));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].node, "n4");
  EXPECT_TRUE(plan[1].fail);
  EXPECT_FALSE(plan[1].drained);
  EXPECT_EQ(plan[1].why_not, "unknown to SLURM (sinfo does not list it)");
  EXPECT_TRUE(plan[2].run);
}

TEST(SweepPlan, HostfilesOfBothMpiFamilies) {
  EXPECT_EQ(ParseHostfile("# rack 1\nnodeA slots=8\nnodeB:4\n\n  nodeA slots=8 # again\nnodeC"),
            (std::vector<std::string>{"nodeA", "nodeB", "nodeC"}));
  EXPECT_TRUE(ParseHostfile("# nothing\n\n").empty());
}

TEST(SweepPlan, PairRoundsCoverTheRingWithoutSharingANode) {
  using Rounds = std::vector<std::vector<std::pair<size_t, size_t>>>;
  EXPECT_TRUE(PairRounds(1).empty());
  EXPECT_EQ(PairRounds(2), (Rounds{{{0, 1}}}));
  EXPECT_EQ(PairRounds(3), (Rounds{{{0, 1}}, {{1, 2}}, {{2, 0}}}));
  EXPECT_EQ(PairRounds(4), (Rounds{{{0, 1}, {2, 3}}, {{1, 2}, {3, 0}}}));
  EXPECT_EQ(PairRounds(5), (Rounds{{{0, 1}, {2, 3}}, {{1, 2}, {3, 4}}, {{4, 0}}}));
}

TEST(SweepPlan, DrainReasonSaysRankscope) {
  auto argv = DrainCommand("n3", "fs.free_bytes:/scratch: 1.0 MiB < 100.0 MiB");
  ASSERT_EQ(argv.size(), 5u);
  EXPECT_EQ(argv[2], "NodeName=n3");
  EXPECT_EQ(argv[4], "Reason=rankscope: fs.free_bytes:/scratch: 1.0 MiB < 100.0 MiB");
  EXPECT_LE(DrainCommand("n3", std::string(500, 'x'))[4].size(), 127u);
}

}  // namespace
}  // namespace rankscope
