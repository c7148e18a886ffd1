#include "agent/nccl_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rankscope {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& entry) {
  return std::find(v.begin(), v.end(), entry) != v.end();
}

TEST(NcclPlan, SetsDebugFileAndOneTopologyDumpPerNode) {
  AgentIdentity id;
  id.rank = 0;
  id.node_name = "n1";
  NcclPlan plan = PlanNcclEnvironment({}, id, "/d", "s1", "/tmp");
  EXPECT_TRUE(Has(plan.set_env, "NCCL_DEBUG=INFO"));
  EXPECT_TRUE(Has(plan.set_env, "NCCL_DEBUG_SUBSYS=INIT,COLL,GRAPH,TUNING,ENV"));
  EXPECT_TRUE(Has(plan.set_env, "NCCL_DEBUG_FILE=/d/nccl.%p.log"));
  // NCCL 2.28 hangs when only some ranks set NCCL_TOPO_DUMP_FILE: every rank sets it, and
  // names its node's local rank 0 as the one that dumps.
  EXPECT_TRUE(Has(plan.set_env, "NCCL_TOPO_DUMP_FILE=/tmp/rankscope-s1-n1.topo.xml"));
  EXPECT_TRUE(Has(plan.set_env, "NCCL_TOPO_DUMP_FILE_RANK=0"));
  EXPECT_EQ(plan.topology_file, "/tmp/rankscope-s1-n1.topo.xml");
  EXPECT_EQ(plan.log_glob, "/d/nccl.*.log");
  // Rank 5 is local rank 1 on node n3 (ranks 4..7): rank 4 dumps, rank 4's agent reads.
  id.rank = 5;
  id.local_rank = 1;
  id.node_name = "n3/x";
  plan = PlanNcclEnvironment({}, id, "/d", "s1", "/tmp");
  EXPECT_TRUE(Has(plan.set_env, "NCCL_TOPO_DUMP_FILE=/tmp/rankscope-s1-n3_x.topo.xml"));
  EXPECT_TRUE(Has(plan.set_env, "NCCL_TOPO_DUMP_FILE_RANK=4"));
  EXPECT_TRUE(plan.topology_file.empty());
  id.rank = 4;
  id.local_rank = 0;
  plan = PlanNcclEnvironment({}, id, "/d", "s1", "/tmp");
  EXPECT_EQ(plan.topology_file, "/tmp/rankscope-s1-n3_x.topo.xml");
}

TEST(NcclPlan, UsersTopologyDumpSettingsAreKeptAndTheirDumpRankReads) {
  AgentIdentity id;
  id.rank = 2;
  id.local_rank = 2;
  NcclPlan plan = PlanNcclEnvironment(
      {{"NCCL_TOPO_DUMP_FILE", "/t/topo.xml"}, {"NCCL_TOPO_DUMP_FILE_RANK", "2"}}, id, "/d", "s",
      "/t");
  for (const std::string& e : plan.set_env) EXPECT_EQ(e.find("NCCL_TOPO_DUMP"), std::string::npos);
  EXPECT_EQ(plan.topology_file, "/t/topo.xml");
}

TEST(NcclPlan, LeavesTheUsersSettingsAndReadsTheirFiles) {
  AgentIdentity id;
  NcclPlan plan = PlanNcclEnvironment(
      {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", "/logs/nccl.%h.%p"}}, id, "/d", "s", "/t");
  EXPECT_FALSE(Has(plan.set_env, "NCCL_DEBUG=INFO"));
  EXPECT_EQ(plan.log_glob, "/logs/nccl.*.*");
  EXPECT_EQ(plan.user_pattern, "/logs/nccl.%h.%p");  // narrowed to the program's pid at Start
  EXPECT_TRUE(plan.note.empty());
  plan = PlanNcclEnvironment({{"NCCL_DEBUG", "WARN"}}, id, "/d", "s", "/t");
  EXPECT_TRUE(plan.log_glob.empty());
  EXPECT_NE(plan.note.find("set NCCL_DEBUG_FILE"), std::string::npos);
}

TEST(NcclCollector, TailsAGrowingLogAndSummarisesIt) {
  char dir[] = "/tmp/rankscope-nccl-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  NcclPlan plan = PlanNcclEnvironment(
      {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", std::string(dir) + "/nccl.%p.log"}},
      AgentIdentity{}, dir, "s", dir);
  NcclCollector collector(plan);
  collector.Start(747);
  std::ifstream fixture(std::string(RANKSCOPE_FIXTURES_DIR) +
                        "/h200x2-torch-allreduce/nccl.vm.747.log");
  std::stringstream all;
  all << fixture.rdbuf();
  const std::string text = all.str();
  const std::string log = std::string(dir) + "/nccl.747.log";
  {
    // Another rank's log in the same directory, as with a user's shared NCCL_DEBUG_FILE.
    std::ofstream other(std::string(dir) + "/nccl.999.log");
    other << text;
  }
  {
    std::ofstream out(log);
    out << text.substr(0, text.size() / 2);  // NCCL is still writing
  }
  usleep(700'000);
  {
    std::ofstream out(log, std::ios::app);
    out << text.substr(text.size() / 2);
  }
  std::optional<v1::NcclSummary> summary = collector.Finish();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->nccl_version(), "2.28.9+cuda13.0");
  ASSERT_EQ(summary->communicators_size(), 1);
  EXPECT_EQ(summary->communicators(0).comm_id(), "0x1e900aa5c8e42401");
  EXPECT_EQ(summary->communicators(0).channels(), 24);
  EXPECT_EQ(summary->communicators(0).transports(0).kind(), v1::NCCL_TRANSPORT_P2P_CUMEM);
  ASSERT_EQ(summary->calls_size(), 5);
  EXPECT_EQ(summary->calls(4).seq(), 4u);
  EXPECT_EQ(summary->calls(0).bytes(), 268435456);
  EXPECT_EQ(summary->calls(0).op(), v1::NCCL_OP_ALL_REDUCE);
  EXPECT_EQ(summary->calls(0).algo(), v1::NCCL_ALGO_RING);
  EXPECT_FALSE(collector.Topology().has_value());  // NCCL wrote none here
  unlink(log.c_str());
  unlink((std::string(dir) + "/nccl.999.log").c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace rankscope
