#include "model/topology/topology_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "model/topology/topology_file.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Describe(const std::string& path) {
  Result<NodeTopology> parsed = ReadNcclTopologyFile(path);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? DescribeTopology(parsed.value()) : "";
}

TEST(TopologyTextTest, RealTwoH200Dump) {
  std::string text =
      Describe(std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce/topo.xml");
  EXPECT_THAT(text, HasSubstr("2 GPUs, 1 NIC, 1 NVSwitch, 1 CPU\n"));
  EXPECT_THAT(text, HasSubstr("0000:00:06.0"));
  EXPECT_THAT(text, HasSubstr("gen5 x?"));
  EXPECT_THAT(text, HasSubstr("yes  eth0 PHB"));  // nearest NIC
  EXPECT_THAT(text, HasSubstr("18 to NVSwitch\n"));
  EXPECT_THAT(text, HasSubstr("GPU pairs: all 1 connected by NVLink (1 NVSwitch)\n"));
  EXPECT_THAT(text, HasSubstr("(not PCI, on the CPU)"));
  EXPECT_THAT(text, HasSubstr("GPUs whose nearest NIC is through the CPU: 2 of 2\n"));
  EXPECT_THAT(text, HasSubstr("Note: ? = not in the dump"));
  EXPECT_THAT(text, Not(HasSubstr("x0")));  // unknown width is not zero lanes
  EXPECT_EQ(text.back(), '\n');
}

TEST(TopologyTextTest, PcieOnlyNodeCallsOutPairsPathsAndSlowLinks) {
  std::string text = Describe(std::string(TOPOLOGY_TESTDATA_DIR) + "/pcie_only_4gpu.xml");
  EXPECT_THAT(text, HasSubstr("GPU pairs: 6 of 6 share only PCIe"));
  EXPECT_THAT(text, HasSubstr("GPU0-GPU1  PIX, one PCIe switch 0000:40:01.1\n"));
  EXPECT_THAT(text, HasSubstr("GPU0-GPU2  PHB, through the CPU\n"));
  EXPECT_THAT(text,
              HasSubstr("GPUs whose nearest NIC is through the CPU: 2 of 4\n  GPU2-mlx5_0  PHB"));
  EXPECT_THAT(text, HasSubstr("0000:83:00.0  GPU  gen3 x8  other GPUs reach gen4 x16"));
  EXPECT_THAT(text, HasSubstr("200 Gb/s"));
  EXPECT_THAT(text, Not(HasSubstr("Note: ?")));
}

TEST(TopologyTextTest, EmptyTopology) {
  std::string text = DescribeTopology(NodeTopology());
  EXPECT_THAT(text, HasSubstr("0 GPUs, 0 NICs, 0 NVSwitches, 0 CPUs"));
  EXPECT_THAT(text, HasSubstr("GPUs: none in the dump"));
}

}  // namespace
}  // namespace rankscope
