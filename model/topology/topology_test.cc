#include "model/topology/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "model/topology/topology_file.h"

namespace rankscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kRealDump =
    std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce/topo.xml";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The dump NCCL 2.28.9 wrote for a 2-rank torchrun all-reduce on a 2xH200 VM.
TEST(TopologyTest, RealTwoH200Dump) {
  Result<NodeTopology> parsed = ReadNcclTopologyFile(kRealDump);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const NodeTopology& topo = parsed.value();

  EXPECT_EQ(topo.xml_version, 1);
  ASSERT_EQ(topo.cpus.size(), 1u);
  EXPECT_EQ(topo.cpus[0].numa_id, std::nullopt);  // numaid="-1": the VM hides NUMA
  EXPECT_EQ(topo.cpus[0].arch, "x86_64");
  EXPECT_EQ(topo.cpus[0].vendor, "GenuineIntel");
  EXPECT_EQ(topo.cpus[0].family_id, 6);
  EXPECT_EQ(topo.cpus[0].model_id, 207);
  EXPECT_EQ(topo.cpus[0].affinity, "");

  ASSERT_EQ(topo.gpus.size(), 2u);
  for (int g = 0; g < 2; ++g) {
    const TopoGpu& gpu = topo.gpus[g];
    EXPECT_EQ(gpu.dev, g);
    EXPECT_EQ(gpu.rank, g);
    EXPECT_EQ(gpu.sm, 90);
    EXPECT_EQ(gpu.gdr, true);
    EXPECT_EQ(gpu.numa_id, std::nullopt);
    // link_speed was readable, link_width="0" was not: unknown, never 0 lanes.
    EXPECT_EQ(gpu.pcie_link.gen, 5);
    EXPECT_EQ(gpu.pcie_link.gt_per_s, 32.0);
    EXPECT_EQ(gpu.pcie_link.width_lanes, std::nullopt);
    EXPECT_EQ(gpu.pcie_path_to_cpu.gen, 5);
    EXPECT_EQ(gpu.pcie_path_to_cpu.width_lanes, std::nullopt);
    ASSERT_EQ(gpu.nvlinks.size(), 1u);
    EXPECT_EQ(gpu.nvlinks[0].target_class, PciClass::kNvSwitch);
    EXPECT_EQ(gpu.nvlinks[0].target_bus_id, "fffffff:ff:ff.0");
    EXPECT_EQ(gpu.nvlinks[0].count, 18);  // nvidia-smi topo -m says NV18
  }
  EXPECT_EQ(topo.gpus[0].bus_id, "0000:00:06.0");
  EXPECT_EQ(topo.gpus[0].nccl_bus_id, "60");  // the log's "busId 60"
  EXPECT_EQ(topo.gpus[1].bus_id, "0000:00:07.0");
  EXPECT_THAT(topo.nvswitch_bus_ids, ElementsAre("fffffff:ff:ff.0"));

  ASSERT_EQ(topo.pci_devices.size(), 2u);
  EXPECT_EQ(topo.pci_devices[0].device_class, PciClass::kGpu);
  EXPECT_EQ(topo.pci_devices[0].class_code, "0x030200");
  EXPECT_EQ(topo.pci_devices[0].parent, -1);
  EXPECT_EQ(topo.pci_devices[0].parent_bus_id, "");

  ASSERT_EQ(topo.nics.size(), 1u);
  const TopoNic& nic = topo.nics[0];
  EXPECT_EQ(nic.name, "eth0");
  EXPECT_EQ(nic.dev, 0);
  EXPECT_EQ(nic.speed_mbps, 10000);
  EXPECT_EQ(nic.port, 0);
  EXPECT_EQ(nic.guid, "0x0");
  EXPECT_EQ(nic.latency_us, 0.0);
  EXPECT_EQ(nic.max_connections, 65536);
  EXPECT_EQ(nic.gdr, false);
  EXPECT_EQ(nic.coll, std::nullopt);
  EXPECT_EQ(nic.pci, -1);  // virtio: NCCL attached it to the CPU
  EXPECT_EQ(nic.bus_id, "");

  EXPECT_TRUE(topo.all_gpus_nvlink_connected);
  ASSERT_EQ(topo.gpu_pairs.size(), 1u);
  EXPECT_EQ(topo.gpu_pairs[0].nvlink, NvLinkReach::kNvSwitch);
  EXPECT_EQ(topo.gpu_pairs[0].pcie, PciePath::kHostBridge);
  ASSERT_EQ(topo.gpu_nic_paths.size(), 2u);
  EXPECT_TRUE(topo.gpu_nic_paths[0].through_cpu());
  EXPECT_TRUE(topo.gpu_nic_paths[1].through_cpu());
  EXPECT_TRUE(topo.slow_pcie_links.empty());
  EXPECT_EQ(topo.ignored_elements, 0);
  EXPECT_EQ(topo.ignored_attributes, 0);
}

// A dump of n GPUs, each behind its own PCI switch port.
std::string DumpOfGpus(int n) {
  std::string xml = "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\">\n";
  for (int g = 0; g < n; ++g) {
    char busid[32];
    std::snprintf(busid, sizeof(busid), "%04x:%02x:00.0", g / 256, g % 256);
    xml += std::string("<pci busid=\"") + busid +
           "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"><gpu dev=\"" +
           std::to_string(g) + "\" sm=\"90\" rank=\"" + std::to_string(g) + "\"/></pci>\n";
  }
  return xml + "</cpu>\n</system>\n";
}

// What is derived grows with GPUs x GPUs: 4,000 GPUs once took 2.2 GB. A dump beyond one node's
// size is refused before, saying why.
TEST(TopologyTest, ADumpOfMoreGpusThanANodeHasIsRefusedBeforeTheQuadraticPart) {
  Result<NodeTopology> fits = ParseNcclTopology(DumpOfGpus(72), "nvl72.xml");
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits.value().gpus.size(), 72u);
  Result<NodeTopology> huge = ParseNcclTopology(DumpOfGpus(4000), "huge.xml");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(),
              HasSubstr("huge.xml: 4000 GPUs and 0 NICs; an NCCL dump of one node has at most "
                        "1024 of each"));
}

TEST(TopologyTest, EveryTruncationIsAnErrorNeverACrash) {
  const std::string xml = ReadAll(kRealDump);
  ASSERT_GT(xml.size(), 800u);
  const size_t complete = xml.rfind("</system>") + std::string("</system>").size();
  // The 50-byte cut points, and in fact every byte before the closing tag ends.
  for (size_t cut = 0; cut < complete; ++cut) {
    Result<NodeTopology> parsed = ParseNcclTopology(std::string_view(xml).substr(0, cut), "t.xml");
    ASSERT_FALSE(parsed.ok()) << "cut at " << cut;
    EXPECT_THAT(parsed.status().message(), StartsWith("t.xml")) << "cut at " << cut;
  }
  EXPECT_TRUE(ParseNcclTopology(std::string_view(xml).substr(0, complete)).ok());
}

TEST(TopologyTest, TruncationErrorSaysWhereAndWhy) {
  const std::string xml = ReadAll(kRealDump);
  Result<NodeTopology> parsed = ParseNcclTopology(std::string_view(xml).substr(0, 450), "t.xml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), StartsWith("t.xml:"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("malformed XML"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("truncated"));
}

TEST(TopologyTest, MalformedXmlNamesLineAndColumn) {
  const char* xml = "<system version=\"1\">\n  <cpu numaid=\"0\">\n  </cpx>\n</system>\n";
  Result<NodeTopology> parsed = ParseNcclTopology(xml, "bad.xml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), StartsWith("bad.xml:3:"));
}

TEST(TopologyTest, GarbageIsAnError) {
  for (std::string garbage :
       {std::string(""), std::string("hello world"), std::string("{\"system\": 1}"),
        std::string("\x00\xff\xfe<<<>>>", 9), std::string("<system"), std::string("</system>"),
        std::string("<?xml version=\"1.0\"?>"), std::string("<!-- only a comment -->")}) {
    Result<NodeTopology> parsed = ParseNcclTopology(garbage, "g.xml");
    EXPECT_FALSE(parsed.ok()) << garbage;
    EXPECT_THAT(parsed.status().message(), StartsWith("g.xml")) << garbage;
  }
  std::mt19937 random(42);
  for (int i = 0; i < 200; ++i) {
    std::string bytes(random() % 400, '\0');
    for (char& c : bytes) c = static_cast<char>(random() % 256);
    if (i % 2 == 0) bytes = "<system version=\"1\">" + bytes;
    EXPECT_FALSE(ParseNcclTopology(bytes).ok());
  }
}

TEST(TopologyTest, WellFormedButNotADump) {
  Result<NodeTopology> graphs = ParseNcclTopology("<graphs version=\"1\"/>", "g.xml");
  ASSERT_FALSE(graphs.ok());
  EXPECT_THAT(graphs.status().message(), HasSubstr("<graphs>"));

  Result<NodeTopology> no_busid = ParseNcclTopology(
      "<system version=\"1\">\n<cpu numaid=\"0\">\n  <pci class=\"0x030200\"><gpu dev=\"0\"/></pci>"
      "\n</cpu>\n</system>",
      "p.xml");
  ASSERT_FALSE(no_busid.ok());
  EXPECT_THAT(no_busid.status().message(), StartsWith("p.xml:3:3: <pci> has no busid"));

  Result<NodeTopology> bad_busid = ParseNcclTopology(
      "<system version=\"1\"><cpu><pci busid=\"pci-60\"/></cpu></system>", "p.xml");
  ASSERT_FALSE(bad_busid.ok());
  EXPECT_THAT(bad_busid.status().message(), HasSubstr("busid \"pci-60\""));
}

TEST(TopologyTest, AbsurdlyDeepPciTreeIsAnErrorNotAStackOverflow) {
  std::string xml = "<system version=\"1\"><cpu numaid=\"0\">";
  for (int i = 0; i < 100000; ++i) xml += "<pci busid=\"0000:01:00.0\">";
  for (int i = 0; i < 100000; ++i) xml += "</pci>";
  xml += "</cpu></system>";
  Result<NodeTopology> parsed = ParseNcclTopology(xml, "deep.xml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("nested more than 64 deep"));
}

TEST(TopologyTest, UnknownElementsAndAttributesAreSkippedAndCounted) {
  Result<NodeTopology> parsed = ParseNcclTopology(R"(<system version="1" flavour="x">
  <cpu numaid="0" shiny="1">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" rank="0" sm="80" gdr="0" future_attr="3">
        <nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>
        <future/>
      </gpu>
    </pci>
    <gizmo><pci busid="0000:09:00.0"/></gizmo>
    <nic><net name="ib0" dev="0"/><gin name="gin0" dev="0"/></nic>
  </cpu>
</system>)");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const NodeTopology& topo = parsed.value();
  EXPECT_EQ(topo.ignored_elements, 3);  // <future>, <gizmo> (and what it holds), <gin>
  EXPECT_EQ(topo.ignored_attributes, 3);
  EXPECT_THAT(topo.ignored_names, ElementsAre("attribute cpu.shiny", "attribute gpu.future_attr",
                                              "attribute system.flavour", "element <future>",
                                              "element <gin>", "element <gizmo>"));
  ASSERT_EQ(topo.gpus.size(), 1u);
  EXPECT_EQ(topo.gpus[0].nvlinks.size(), 1u);
  EXPECT_EQ(topo.pci_devices.size(), 1u);  // the <pci> inside <gizmo> was skipped with it
  ASSERT_EQ(topo.nics.size(), 1u);
  EXPECT_EQ(topo.nics[0].speed_mbps, std::nullopt);
}

TEST(TopologyTest, MissingAttributesAreUnknown) {
  Result<NodeTopology> parsed = ParseNcclTopology(
      "<system><cpu><pci busid=\"00000000:0A:00.0\"><gpu/></pci>"
      "<nic><net name=\"eth1\" speed=\"-1\"/></nic></cpu></system>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const NodeTopology& topo = parsed.value();
  EXPECT_EQ(topo.xml_version, std::nullopt);
  ASSERT_EQ(topo.gpus.size(), 1u);
  EXPECT_EQ(topo.gpus[0].bus_id, "0000:0a:00.0");
  EXPECT_EQ(topo.gpus[0].dev, -1);
  EXPECT_EQ(topo.gpus[0].rank, std::nullopt);
  EXPECT_EQ(topo.gpus[0].sm, std::nullopt);
  EXPECT_EQ(topo.gpus[0].gdr, std::nullopt);
  EXPECT_EQ(topo.gpus[0].pcie_link.gen, std::nullopt);
  EXPECT_EQ(topo.gpus[0].pcie_link.width_lanes, std::nullopt);
  EXPECT_EQ(topo.pci_devices[0].device_class, PciClass::kGpu);  // from its <gpu>, not a class
  ASSERT_EQ(topo.nics.size(), 1u);
  EXPECT_EQ(topo.nics[0].speed_mbps, std::nullopt);  // -1 means "no idea"
  EXPECT_EQ(topo.nics[0].dev, std::nullopt);
  EXPECT_FALSE(topo.all_gpus_nvlink_connected);  // one GPU: no pair
}

TEST(TopologyFileTest, ErrorsNameTheFile) {
  Result<NodeTopology> missing = ReadNcclTopologyFile("/nonexistent/topo.xml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/topo.xml"));
  EXPECT_THAT(missing.status().message(), HasSubstr("No such file"));

  const std::string path = ::testing::TempDir() + "/topology_test_cut.xml";
  { std::ofstream out(path, std::ios::binary); }
  Result<NodeTopology> empty = ReadNcclTopologyFile(path);
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), StartsWith(path + ": empty file"));

  {
    std::ofstream out(path, std::ios::binary);
    out << ReadAll(kRealDump).substr(0, 500);
  }
  Result<NodeTopology> cut = ReadNcclTopologyFile(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), StartsWith(path + ":"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rankscope
