#include "model/topology/topology_text.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "model/topology/pcie_link.h"
#include "model/topology/topology_paths.h"

namespace rankscope {
namespace {

using Row = std::vector<std::string>;

// Left-aligned columns two spaces apart, each row indented by two.
std::string FormatTable(const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

template <typename T>
std::string OrUnknown(const std::optional<T>& value) {
  return value ? std::to_string(*value) : "?";
}

std::string YesNo(const std::optional<bool>& value) {
  if (!value) return "?";
  return *value ? "yes" : "no";
}

std::string Plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string GpuName(const NodeTopology& topology, int gpu) {
  return "GPU" + std::to_string(topology.gpus[gpu].dev);
}

// "18 to NVSwitch", "18 to 4 NVSwitches", "4 to GPU1, 2 to GPU3".
std::string NvLinkSummary(const NodeTopology& topology, const TopoGpu& gpu) {
  int switch_links = 0;
  std::vector<std::string> switches;
  std::string text;
  for (const TopoNvLink& link : gpu.nvlinks) {
    if (link.target_class == PciClass::kNvSwitch) {
      switch_links += link.count;
      if (std::find(switches.begin(), switches.end(), link.target_bus_id) == switches.end()) {
        switches.push_back(link.target_bus_id);
      }
      continue;
    }
    if (!text.empty()) text += ", ";
    text += std::to_string(link.count) + " to ";
    auto peer = std::find_if(topology.gpus.begin(), topology.gpus.end(),
                             [&](const TopoGpu& g) { return g.bus_id == link.target_bus_id; });
    if (link.target_class == PciClass::kGpu && peer != topology.gpus.end()) {
      text += "GPU" + std::to_string(peer->dev);
    } else {
      text += std::string(PciClassName(link.target_class)) + " " + link.target_bus_id;
    }
  }
  if (!switches.empty()) {
    std::string to_switches =
        std::to_string(switch_links) + " to " +
        (switches.size() == 1 ? std::string("NVSwitch")
                              : std::to_string(switches.size()) + " NVSwitches");
    text = text.empty() ? to_switches : to_switches + ", " + text;
  }
  return text.empty() ? "-" : text;
}

std::string Speed(const std::optional<int64_t>& mbps) {
  if (!mbps) return "?";
  char buffer[32];
  if (*mbps >= 1000) {
    std::snprintf(buffer, sizeof(buffer), "%g Gb/s", static_cast<double>(*mbps) / 1000.0);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lld Mb/s", static_cast<long long>(*mbps));
  }
  return buffer;
}

std::string DescribeRoute(PciePath path, const std::string& common_switch) {
  switch (path) {
    case PciePath::kSameSwitch:
      return "PIX, one PCIe switch " + common_switch;
    case PciePath::kAcrossSwitches:
      return "PXB, across PCIe switches below " + common_switch;
    case PciePath::kHostBridge:
      return "PHB, through the CPU";
    case PciePath::kCrossCpu:
      return "SYS, across CPUs";
    case PciePath::kUnknown:
      break;
  }
  return "unknown route";
}

bool AnyUnknownLink(const NodeTopology& topology) {
  return std::any_of(topology.pci_devices.begin(), topology.pci_devices.end(),
                     [](const TopoPciDevice& d) { return !d.link.gen || !d.link.width_lanes; });
}

void AppendCpus(const NodeTopology& topology, std::string* out) {
  std::vector<Row> rows = {{"numa", "arch", "vendor", "family", "model", "affinity"}};
  for (const TopoCpu& cpu : topology.cpus) {
    rows.push_back({OrUnknown(cpu.numa_id), cpu.arch.empty() ? "?" : cpu.arch,
                    cpu.vendor.empty() ? "?" : cpu.vendor, OrUnknown(cpu.family_id),
                    OrUnknown(cpu.model_id), cpu.affinity.empty() ? "?" : cpu.affinity});
  }
  *out += "CPUs\n" + FormatTable(rows);
}

void AppendGpus(const NodeTopology& topology, std::string* out) {
  if (topology.gpus.empty()) {
    *out += "GPUs: none in the dump\n";
    return;
  }
  std::vector<Row> rows = {{"gpu", "rank", "bus id", "sm", "numa", "PCIe link", "path to CPU",
                            "gdr", "nearest NIC", "NVLink"}};
  for (int g = 0; g < static_cast<int>(topology.gpus.size()); ++g) {
    const TopoGpu& gpu = topology.gpus[g];
    const GpuNicPath* nic = NearestNicPath(topology, g);
    rows.push_back(
        {std::to_string(gpu.dev), OrUnknown(gpu.rank), gpu.bus_id, OrUnknown(gpu.sm),
         OrUnknown(gpu.numa_id), FormatPcieLink(gpu.pcie_link),
         FormatPcieLink(gpu.pcie_path_to_cpu), YesNo(gpu.gdr),
         nic ? topology.nics[nic->nic].name + " " + std::string(PciePathName(nic->pcie)) : "-",
         NvLinkSummary(topology, gpu)});
  }
  *out += "GPUs\n" + FormatTable(rows);
}

void AppendNics(const NodeTopology& topology, std::string* out) {
  if (topology.nics.empty()) {
    *out += "NICs: none in the dump\n";
    return;
  }
  std::vector<Row> rows = {{"nic", "dev", "speed", "port", "bus id", "PCIe link", "gdr", "coll"}};
  for (const TopoNic& nic : topology.nics) {
    bool on_pci = nic.pci >= 0;
    rows.push_back({nic.name, OrUnknown(nic.dev), Speed(nic.speed_mbps), OrUnknown(nic.port),
                    on_pci ? nic.bus_id : "(not PCI, on the CPU)",
                    on_pci ? FormatPcieLink(topology.pci_devices[nic.pci].link) : "-",
                    YesNo(nic.gdr), YesNo(nic.coll)});
  }
  *out += "NICs\n" + FormatTable(rows);
}

// NVLink pairs in one line; the pairs that share only PCIe one per line, since those are what
// a PCIe-bound finding is about.
void AppendGpuPairs(const NodeTopology& topology, std::string* out) {
  if (topology.gpu_pairs.empty()) return;
  std::map<NvLinkReach, int> by_reach;
  for (const GpuPair& pair : topology.gpu_pairs) ++by_reach[pair.nvlink];
  const int total = static_cast<int>(topology.gpu_pairs.size());
  const int pcie_only = by_reach[NvLinkReach::kNone];
  std::string kinds;
  for (NvLinkReach reach : {NvLinkReach::kDirect, NvLinkReach::kNvSwitch, NvLinkReach::kViaGpu}) {
    if (by_reach[reach] == 0) continue;
    if (!kinds.empty()) kinds += ", ";
    kinds += std::to_string(by_reach[reach]) + " " + std::string(NvLinkReachName(reach));
  }
  if (pcie_only == 0) {
    *out += "GPU pairs: all " + std::to_string(total) + " connected by NVLink (" + kinds + ")\n";
    return;
  }
  *out += "GPU pairs: " + std::to_string(pcie_only) + " of " + std::to_string(total) +
          " share only PCIe" + (kinds.empty() ? "" : " (NVLink: " + kinds + ")") + "\n";
  std::vector<Row> rows;
  for (const GpuPair& pair : topology.gpu_pairs) {
    if (!pair.pcie_only()) continue;
    rows.push_back({GpuName(topology, pair.gpu_a) + "-" + GpuName(topology, pair.gpu_b),
                    DescribeRoute(pair.pcie, pair.common_switch_bus_id)});
  }
  *out += FormatTable(rows);
}

// NCCL sends a GPU's network traffic through its closest NIC; when even that one is across
// the CPU, every inter-node byte of that GPU crosses the host bridge.
void AppendGpuNicPaths(const NodeTopology& topology, std::string* out) {
  if (topology.gpus.empty() || topology.nics.empty()) return;
  std::vector<Row> rows;
  for (int g = 0; g < static_cast<int>(topology.gpus.size()); ++g) {
    const GpuNicPath* nic = NearestNicPath(topology, g);
    if (nic == nullptr || !nic->through_cpu()) continue;
    rows.push_back({GpuName(topology, g) + "-" + topology.nics[nic->nic].name,
                    DescribeRoute(nic->pcie, nic->common_switch_bus_id)});
  }
  std::string count =
      rows.empty() ? "none"
                   : std::to_string(rows.size()) + " of " + std::to_string(topology.gpus.size());
  *out += "GPUs whose nearest NIC is through the CPU: " + count + "\n" + FormatTable(rows);
}

void AppendSlowLinks(const NodeTopology& topology, std::string* out) {
  if (topology.slow_pcie_links.empty()) {
    *out += "PCIe links below their peers: none\n";
    return;
  }
  *out += "PCIe links below their peers: " + std::to_string(topology.slow_pcie_links.size()) + "\n";
  std::vector<Row> rows;
  for (const SlowPcieLink& slow : topology.slow_pcie_links) {
    PcieLink best;
    best.gen = slow.peers_max_gen;
    best.width_lanes = slow.peers_max_width_lanes;
    std::string class_name(PciClassName(slow.device_class));
    rows.push_back({slow.bus_id, class_name, FormatPcieLink(slow.link),
                    "other " + class_name + "s reach " + FormatPcieLink(best)});
  }
  *out += FormatTable(rows);
}

}  // namespace

std::string DescribeTopology(const NodeTopology& topology) {
  std::string out = "Node topology (NCCL dump): " + Plural(topology.gpus.size(), "GPU", "GPUs") +
                    ", " + Plural(topology.nics.size(), "NIC", "NICs") + ", " +
                    Plural(topology.nvswitch_bus_ids.size(), "NVSwitch", "NVSwitches") + ", " +
                    Plural(topology.cpus.size(), "CPU", "CPUs") + "\n";
  AppendGpus(topology, &out);
  AppendNics(topology, &out);
  AppendCpus(topology, &out);
  AppendGpuPairs(topology, &out);
  AppendGpuNicPaths(topology, &out);
  AppendSlowLinks(topology, &out);
  if (AnyUnknownLink(topology)) {
    out +=
        "Note: ? = not in the dump; NCCL could not read the link's max speed/width from sysfs "
        "(usual in VMs); `nvidia-smi -q -d PCI` on the node shows the live values.\n";
  }
  if (topology.ignored_elements + topology.ignored_attributes > 0) {
    out += "Ignored while parsing: " + Plural(topology.ignored_elements, "element", "elements") +
           ", " + Plural(topology.ignored_attributes, "attribute", "attributes") + "\n";
  }
  return out;
}

}  // namespace rankscope
