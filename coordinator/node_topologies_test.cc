#include "coordinator/node_topologies.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace rankscope {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(TOPOLOGY_TESTDATA_DIR) + "/" + name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

RankData Rank(int rank, const std::string& node, std::string xml, std::string source) {
  RankData r;
  r.id.rank = rank;
  r.id.node = node;
  r.topology_xml = std::move(xml);
  r.topology_source = std::move(source);
  return r;
}

// One dump per node for every reader: the first of its ranks' that parses; the first error only
// when none does; nodes without a dump absent.
TEST(NodeTopologies, FirstParsingDumpPerNodeElseTheFirstError) {
  const std::string good = ReadTestdata("pcie_only_4gpu.xml");
  ASSERT_FALSE(good.empty());
  Session s;
  s.ranks.push_back(Rank(0, "a", "<system version=\"1\"><cpu>", "a0.xml"));  // truncated
  s.ranks.push_back(Rank(1, "a", good, "a1.xml"));
  s.ranks.push_back(Rank(2, "a", good, "a2.xml"));
  s.ranks.push_back(Rank(3, "b", "<system", "b3.xml"));
  s.ranks.push_back(Rank(4, "b", "not xml", "b4.xml"));
  s.ranks.push_back(Rank(5, "c", "", ""));
  const std::map<std::string, NodeTopologyDump> dumps = ParseNodeTopologies(s);
  ASSERT_EQ(dumps.size(), 2u);
  const NodeTopologyDump& a = dumps.at("a");
  EXPECT_EQ(a.rank, 1);
  EXPECT_EQ(a.source, "a1.xml");
  ASSERT_TRUE(a.topology.has_value());
  EXPECT_EQ(a.topology->gpus.size(), 4u);
  EXPECT_TRUE(a.error.empty());
  const NodeTopologyDump& b = dumps.at("b");
  EXPECT_EQ(b.rank, 3);
  EXPECT_FALSE(b.topology.has_value());
  EXPECT_NE(b.error.find("b3.xml"), std::string::npos) << b.error;
}

}  // namespace
}  // namespace rankscope
