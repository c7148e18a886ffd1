#include "model/topology/topology_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "model/topology/topology_file.h"

namespace rankscope {
namespace {

using ::testing::ElementsAre;

NodeTopology Load(const std::string& name) {
  Result<NodeTopology> parsed =
      ReadNcclTopologyFile(std::string(TOPOLOGY_TESTDATA_DIR) + "/" + name);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed).value() : NodeTopology();
}

NodeTopology Parse(std::string_view xml) {
  Result<NodeTopology> parsed = ParseNcclTopology(xml);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed).value() : NodeTopology();
}

const GpuPair& Pair(const NodeTopology& topo, int a, int b) {
  for (const GpuPair& pair : topo.gpu_pairs) {
    if (pair.gpu_a == a && pair.gpu_b == b) return pair;
  }
  ADD_FAILURE() << "no pair " << a << "-" << b;
  static const GpuPair kNone;
  return kNone;
}

const GpuNicPath& NicPath(const NodeTopology& topo, int gpu, int nic) {
  for (const GpuNicPath& path : topo.gpu_nic_paths) {
    if (path.gpu == gpu && path.nic == nic) return path;
  }
  ADD_FAILURE() << "no path GPU" << gpu << "-NIC" << nic;
  static const GpuNicPath kNone;
  return kNone;
}

// 4 PCIe GPUs under two switches of one CPU, the NIC beside GPUs 0 and 1, GPU2 at gen3 x8.
TEST(TopologyPathsTest, PcieOnlyNode) {
  NodeTopology topo = Load("pcie_only_4gpu.xml");
  ASSERT_EQ(topo.gpus.size(), 4u);
  ASSERT_EQ(topo.nics.size(), 1u);
  EXPECT_TRUE(topo.nvswitch_bus_ids.empty());
  EXPECT_FALSE(topo.all_gpus_nvlink_connected);
  ASSERT_EQ(topo.gpu_pairs.size(), 6u);
  for (const GpuPair& pair : topo.gpu_pairs) EXPECT_TRUE(pair.pcie_only());

  EXPECT_EQ(Pair(topo, 0, 1).pcie, PciePath::kSameSwitch);
  EXPECT_EQ(Pair(topo, 0, 1).common_switch_bus_id, "0000:40:01.1");
  EXPECT_EQ(Pair(topo, 2, 3).pcie, PciePath::kSameSwitch);
  EXPECT_EQ(Pair(topo, 2, 3).common_switch_bus_id, "0000:80:01.1");
  for (auto [a, b] : {std::pair{0, 2}, std::pair{0, 3}, std::pair{1, 2}, std::pair{1, 3}}) {
    EXPECT_EQ(Pair(topo, a, b).pcie, PciePath::kHostBridge) << a << "-" << b;
    EXPECT_EQ(Pair(topo, a, b).common_switch_bus_id, "");
  }

  EXPECT_EQ(topo.nics[0].bus_id, "0000:45:00.0");
  EXPECT_EQ(topo.nics[0].parent_bus_id, "0000:40:01.1");
  EXPECT_EQ(topo.nics[0].speed_mbps, 200000);
  EXPECT_EQ(NicPath(topo, 0, 0).pcie, PciePath::kSameSwitch);
  EXPECT_FALSE(NicPath(topo, 1, 0).through_cpu());
  EXPECT_TRUE(NicPath(topo, 2, 0).through_cpu());
  EXPECT_TRUE(NicPath(topo, 3, 0).through_cpu());
  ASSERT_NE(NearestNicPath(topo, 2), nullptr);
  EXPECT_EQ(NearestNicPath(topo, 2)->pcie, PciePath::kHostBridge);

  EXPECT_EQ(FormatPcieLink(topo.gpus[2].pcie_link), "gen3 x8");
  EXPECT_EQ(FormatPcieLink(topo.gpus[2].pcie_path_to_cpu), "gen3 x8");
  EXPECT_EQ(FormatPcieLink(topo.gpus[3].pcie_path_to_cpu), "gen4 x16");
  ASSERT_EQ(topo.slow_pcie_links.size(), 1u);
  const SlowPcieLink& slow = topo.slow_pcie_links[0];
  EXPECT_EQ(slow.bus_id, "0000:83:00.0");
  EXPECT_EQ(slow.device_class, PciClass::kGpu);
  EXPECT_TRUE(slow.gen_below);
  EXPECT_TRUE(slow.width_below);
  EXPECT_EQ(slow.peers_max_gen, 4);
  EXPECT_EQ(slow.peers_max_width_lanes, 16);
}

// A DGX-H100-like node: 8 GPUs with NVLinks into 4 NVSwitches, two sockets, each with two
// PCIe trees (top switch, two leaf switches), a NIC beside every other GPU.
TEST(TopologyPathsTest, NvSwitchNode) {
  NodeTopology topo = Load("nvswitch_8gpu.xml");
  ASSERT_EQ(topo.gpus.size(), 8u);
  ASSERT_EQ(topo.nics.size(), 4u);
  ASSERT_EQ(topo.cpus.size(), 2u);
  EXPECT_EQ(topo.cpus[1].numa_id, 1);
  EXPECT_EQ(topo.gpus[5].numa_id, 1);
  EXPECT_THAT(topo.nvswitch_bus_ids,
              ElementsAre("0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"));
  EXPECT_TRUE(topo.all_gpus_nvlink_connected);
  ASSERT_EQ(topo.gpu_pairs.size(), 28u);
  for (const GpuPair& pair : topo.gpu_pairs) EXPECT_EQ(pair.nvlink, NvLinkReach::kNvSwitch);

  // The PCIe routes still matter for GPU<->NIC traffic and for P2P when NVLink is off.
  EXPECT_EQ(Pair(topo, 0, 1).pcie, PciePath::kAcrossSwitches);
  EXPECT_EQ(Pair(topo, 0, 1).common_switch_bus_id, "0000:15:01.0");
  EXPECT_EQ(Pair(topo, 0, 2).pcie, PciePath::kHostBridge);
  EXPECT_EQ(Pair(topo, 0, 4).pcie, PciePath::kCrossCpu);

  EXPECT_EQ(NicPath(topo, 0, 0).pcie, PciePath::kSameSwitch);
  EXPECT_EQ(NicPath(topo, 0, 0).common_switch_bus_id, "0000:17:00.0");
  EXPECT_EQ(NicPath(topo, 1, 0).pcie, PciePath::kAcrossSwitches);
  EXPECT_EQ(NicPath(topo, 0, 1).pcie, PciePath::kHostBridge);
  EXPECT_EQ(NicPath(topo, 0, 2).pcie, PciePath::kCrossCpu);
  EXPECT_EQ(NicPath(topo, 7, 3).pcie, PciePath::kAcrossSwitches);

  // Every GPU has a NIC on its own side of the CPU.
  for (int g = 0; g < 8; ++g) {
    const GpuNicPath* nearest = NearestNicPath(topo, g);
    ASSERT_NE(nearest, nullptr);
    EXPECT_EQ(nearest->nic, g / 2) << "GPU" << g;
    EXPECT_FALSE(nearest->through_cpu()) << "GPU" << g;
  }

  EXPECT_EQ(FormatPcieLink(topo.gpus[0].pcie_path_to_cpu), "gen5 x16");
  EXPECT_TRUE(topo.slow_pcie_links.empty());
}

TEST(TopologyPathsTest, DirectNvLinksAndHopsThroughAGpu) {
  // 0<->1 and 1<->2 bridged, 3 alone; GPU0 lists its links in NVML's upper case.
  NodeTopology topo = Parse(R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:01:00.0" class="0x030000"><gpu dev="0" rank="0" sm="86">
      <nvlink target="0000:02:00.0" count="4" tclass="0x030000"/></gpu></pci>
    <pci busid="0000:02:00.0" class="0x030000"><gpu dev="1" rank="1" sm="86">
      <nvlink target="0000:01:00.0" count="4" tclass="0x030000"/>
      <nvlink target="0000:03:00.0" count="2" tclass="0x030000"/></gpu></pci>
    <pci busid="0000:03:00.0" class="0x030000"><gpu dev="2" rank="2" sm="86">
      <nvlink target="0000:02:00.0" count="2" tclass="0x030000"/></gpu></pci>
    <pci busid="0000:04:00.0" class="0x030000"><gpu dev="3" rank="3" sm="86"/></pci>
  </cpu></system>)");
  EXPECT_EQ(Pair(topo, 0, 1).nvlink, NvLinkReach::kDirect);
  EXPECT_EQ(Pair(topo, 0, 1).direct_nvlinks, 4);
  EXPECT_EQ(Pair(topo, 1, 2).direct_nvlinks, 2);
  EXPECT_EQ(Pair(topo, 0, 2).nvlink, NvLinkReach::kViaGpu);
  EXPECT_TRUE(Pair(topo, 0, 3).pcie_only());
  EXPECT_EQ(Pair(topo, 0, 3).pcie, PciePath::kHostBridge);
  EXPECT_FALSE(topo.all_gpus_nvlink_connected);
  EXPECT_TRUE(topo.nvswitch_bus_ids.empty());
  EXPECT_EQ(NearestNicPath(topo, 0), nullptr);  // no NIC on this node
}

TEST(TopologyPathsTest, PathToCpuTakesTheWorstHop) {
  // A gen4 x8 GPU behind a gen3 x16 switch uplink: gen3 and x8, from different hops.
  NodeTopology topo = Parse(R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:10:00.0" class="0x060400" link_speed="8.0 GT/s PCIe" link_width="16">
      <pci busid="0000:11:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="8">
        <gpu dev="0" rank="0" sm="80"/></pci>
    </pci>
    <pci busid="0000:20:00.0" class="0x060400" link_speed="" link_width="0">
      <pci busid="0000:21:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="1" rank="1" sm="80"/></pci>
    </pci>
  </cpu></system>)");
  ASSERT_EQ(topo.gpus.size(), 2u);
  EXPECT_EQ(FormatPcieLink(topo.gpus[0].pcie_link), "gen4 x8");
  EXPECT_EQ(FormatPcieLink(topo.gpus[0].pcie_path_to_cpu), "gen3 x8");
  EXPECT_EQ(topo.gpus[0].pcie_path_to_cpu.speed_text, "8.0 GT/s PCIe");
  // An unreadable hop does not drag the path down to "unknown".
  EXPECT_EQ(FormatPcieLink(topo.gpus[1].pcie_path_to_cpu), "gen4 x16");
  // Width x8 vs x16 among GPUs; the switches differ only where one is unknown.
  ASSERT_EQ(topo.slow_pcie_links.size(), 1u);
  EXPECT_EQ(topo.slow_pcie_links[0].bus_id, "0000:11:00.0");
  EXPECT_FALSE(topo.slow_pcie_links[0].gen_below);
  EXPECT_TRUE(topo.slow_pcie_links[0].width_below);
}

TEST(TopologyPathsTest, HandBuiltParentCycleTerminates) {
  NodeTopology topo;
  topo.cpus.emplace_back();
  topo.pci_devices.resize(2);
  topo.pci_devices[0].parent = 1;
  topo.pci_devices[1].parent = 0;
  topo.pci_devices[0].cpu = topo.pci_devices[1].cpu = 0;
  for (int g = 0; g < 2; ++g) {
    TopoGpu gpu;
    gpu.pci = g;
    gpu.cpu = 0;
    topo.gpus.push_back(gpu);
  }
  DeriveTopologyFacts(&topo);
  EXPECT_EQ(topo.gpu_pairs.size(), 1u);
}

}  // namespace
}  // namespace rankscope
