#include "model/topology/topology.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <pugixml.hpp>
#include <set>
#include <string>
#include <utility>

#include "model/topology/pci_bus_id.h"
#include "model/topology/topology_paths.h"

namespace rankscope {

std::string_view PciClassName(PciClass c) {
  switch (c) {
    case PciClass::kGpu:
      return "GPU";
    case PciClass::kNic:
      return "NIC";
    case PciClass::kNvSwitch:
      return "NVSwitch";
    case PciClass::kBridge:
      return "bridge";
    case PciClass::kCpu:
      return "CPU";
    case PciClass::kOther:
      return "other";
    case PciClass::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view PciePathName(PciePath p) {
  switch (p) {
    case PciePath::kSameSwitch:
      return "PIX";
    case PciePath::kAcrossSwitches:
      return "PXB";
    case PciePath::kHostBridge:
      return "PHB";
    case PciePath::kCrossCpu:
      return "SYS";
    case PciePath::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view NvLinkReachName(NvLinkReach r) {
  switch (r) {
    case NvLinkReach::kDirect:
      return "NVLink";
    case NvLinkReach::kNvSwitch:
      return "NVSwitch";
    case NvLinkReach::kViaGpu:
      return "NVLink via GPU";
    case NvLinkReach::kNone:
      break;
  }
  return "none";
}

namespace {

// PCI class codes NCCL tells apart (it matches them as prefixes, so "0x03" covers both VGA
// 0x030000 and 3D controller 0x030200 GPUs). 0x068000 is how NCCL marks an NVSwitch, including
// one it cannot see from inside a VM; 0x068001 an NVLink-attached CPU (POWER9).
PciClass ClassFromCode(std::string_view code) {
  std::string lower(code);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.empty()) return PciClass::kUnknown;
  if (lower.starts_with("0x068000")) return PciClass::kNvSwitch;
  if (lower.starts_with("0x068001")) return PciClass::kCpu;
  if (lower.starts_with("0x0604")) return PciClass::kBridge;
  if (lower.starts_with("0x03")) return PciClass::kGpu;
  if (lower.starts_with("0x02")) return PciClass::kNic;
  return PciClass::kOther;
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
    base = 16;
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseDouble(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// "source:line:column: " for a byte offset (pugixml reports parse errors as offsets).
std::string Location(std::string_view xml, std::string_view source_name, ptrdiff_t offset) {
  size_t end = std::min(static_cast<size_t>(std::max<ptrdiff_t>(offset, 0)), xml.size());
  size_t line = 1 + static_cast<size_t>(std::count(xml.begin(), xml.begin() + end, '\n'));
  size_t line_start = end == 0 ? std::string_view::npos : xml.rfind('\n', end - 1);
  size_t column = line_start == std::string_view::npos ? end + 1 : end - line_start;
  return std::string(source_name) + ":" + std::to_string(line) + ":" + std::to_string(column) +
         ": ";
}

// Walks a parsed dump into a NodeTopology. One instance per parse; the first error stops it.
class TopologyReader {
 public:
  TopologyReader(std::string_view xml, std::string_view source_name)
      : xml_(xml), source_name_(source_name) {}

  Result<NodeTopology> Read(const pugi::xml_document& document) {
    pugi::xml_node system = document.document_element();
    if (!system) {
      return Status::Error(std::string(source_name_) +
                           ": no XML element at all; an NCCL topology dump starts with <system "
                           "version=\"1\">. Is this the file NCCL_TOPO_DUMP_FILE named?");
    }
    if (std::string_view(system.name()) != "system") {
      return Status::Error(Where(system) + "the root element is <" + system.name() +
                           ">, expected <system>; this is not an NCCL topology dump");
    }
    CheckAttributes(system, {"version", "name"});
    if (auto version = ParseInt(system.attribute("version").value())) {
      topology_.xml_version = static_cast<int>(*version);
    }
    for (pugi::xml_node child : system.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) == "cpu") {
        ReadCpu(child);
      } else {
        Ignore(child);
      }
      if (!error_.ok()) return error_;
    }
    topology_.ignored_names.assign(ignored_names_.begin(), ignored_names_.end());
    // What is derived grows with GPUs x (GPUs + NICs): checked before (4,000 GPUs took 2.2 GB).
    if (topology_.gpus.size() > kMaxTopologyGpus || topology_.nics.size() > kMaxTopologyGpus) {
      return Status::Error(
          std::string(source_name_) + ": " + std::to_string(topology_.gpus.size()) + " GPUs and " +
          std::to_string(topology_.nics.size()) + " NICs; an NCCL dump of one node has at most " +
          std::to_string(kMaxTopologyGpus) + " of each (not read further)");
    }
    DeriveTopologyFacts(&topology_);
    return std::move(topology_);
  }

 private:
  // "source:line:column: " for an element.
  std::string Where(pugi::xml_node node) const {
    // pugixml points at the element's name; editors expect the '<' before it.
    ptrdiff_t offset = node.offset_debug();
    if (offset > 0 && static_cast<size_t>(offset) <= xml_.size() && xml_[offset - 1] == '<') {
      --offset;
    }
    return Location(xml_, source_name_, offset);
  }

  void Ignore(pugi::xml_node element) {
    ++topology_.ignored_elements;
    ignored_names_.insert("element <" + std::string(element.name()) + ">");
  }

  // Counts attributes outside `known`: NCCL adds some over versions, and a hand-edited file
  // may carry notes; neither should stop the parse.
  void CheckAttributes(pugi::xml_node element, std::initializer_list<std::string_view> known) {
    for (pugi::xml_attribute attribute : element.attributes()) {
      if (std::find(known.begin(), known.end(), attribute.name()) != known.end()) continue;
      ++topology_.ignored_attributes;
      ignored_names_.insert("attribute " + std::string(element.name()) + "." + attribute.name());
    }
  }

  static std::optional<int> AttrInt(pugi::xml_node element, const char* name) {
    std::optional<int64_t> value = ParseInt(element.attribute(name).value());
    if (!value) return std::nullopt;
    return static_cast<int>(*value);
  }
  static std::optional<bool> AttrBool(pugi::xml_node element, const char* name) {
    std::optional<int64_t> value = ParseInt(element.attribute(name).value());
    if (!value) return std::nullopt;
    return *value != 0;
  }

  void ReadCpu(pugi::xml_node element) {
    CheckAttributes(element, {"host_hash", "numaid", "affinity", "affinity_offset", "arch",
                              "vendor", "familyid", "modelid"});
    TopoCpu cpu;
    std::optional<int> numa = AttrInt(element, "numaid");
    if (numa && *numa >= 0) cpu.numa_id = numa;
    cpu.arch = element.attribute("arch").value();
    cpu.vendor = element.attribute("vendor").value();
    cpu.family_id = AttrInt(element, "familyid");
    cpu.model_id = AttrInt(element, "modelid");
    cpu.affinity = element.attribute("affinity").value();
    cpu.host_hash = element.attribute("host_hash").value();
    const int cpu_index = static_cast<int>(topology_.cpus.size());
    topology_.cpus.push_back(std::move(cpu));

    for (pugi::xml_node child : element.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if (name == "pci") {
        ReadPci(child, -1, cpu_index, 1);
      } else if (name == "nic") {
        ReadNic(child, -1, cpu_index);  // not a PCI device: NCCL hangs it off the CPU
      } else {
        Ignore(child);
      }
      if (!error_.ok()) return;
    }
  }

  // `depth` counts <pci> levels from the CPU. Real trees are a handful deep; the limit keeps a
  // hostile or corrupt file from exhausting the stack through this recursion.
  void ReadPci(pugi::xml_node element, int parent, int cpu_index, int depth) {
    if (depth > kMaxPciDepth) {
      error_ = Status::Error(Where(element) + "<pci> elements nested more than " +
                             std::to_string(kMaxPciDepth) +
                             " deep; no real PCI tree is, so the file is corrupt");
      return;
    }
    CheckAttributes(element, {"busid", "class", "vendor", "device", "subsystem_vendor",
                              "subsystem_device", "link_speed", "link_width", "keep"});
    std::string_view raw_bus_id = element.attribute("busid").value();
    std::optional<std::string> bus_id = NormalizePciBusId(raw_bus_id);
    if (!bus_id) {
      // Without a bus id nothing can refer to this device (NVLink targets, NCCL's logs), and
      // NCCL itself refuses such a file.
      error_ = Status::Error(Where(element) + "<pci> has " +
                             (raw_bus_id.empty() ? std::string("no busid")
                                                 : "busid \"" + std::string(raw_bus_id) + "\"") +
                             "; expected DOMAIN:BUS:DEVICE.FUNCTION like 0000:60:00.0");
      return;
    }
    TopoPciDevice device;
    device.bus_id = *bus_id;
    device.nccl_bus_id = NcclShortBusId(*bus_id);
    device.class_code = element.attribute("class").value();
    device.vendor_id = element.attribute("vendor").value();
    device.device_id = element.attribute("device").value();
    device.link = ParsePcieLink(element.attribute("link_speed").value(),
                                element.attribute("link_width").value());
    // What hangs below decides, as it does for NCCL: the class code of a GPU behind some
    // virtualisation layers says "other".
    if (element.child("gpu")) {
      device.device_class = PciClass::kGpu;
    } else if (element.child("nic")) {
      device.device_class = PciClass::kNic;
    } else {
      device.device_class = ClassFromCode(device.class_code);
    }
    device.parent = parent;
    if (parent >= 0) device.parent_bus_id = topology_.pci_devices[parent].bus_id;
    device.cpu = cpu_index;
    device.numa_id = topology_.cpus[cpu_index].numa_id;
    if (device.device_class == PciClass::kNvSwitch) AddNvSwitch(device.bus_id);
    const int index = static_cast<int>(topology_.pci_devices.size());
    topology_.pci_devices.push_back(std::move(device));

    for (pugi::xml_node child : element.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if (name == "pci") {
        ReadPci(child, index, cpu_index, depth + 1);
      } else if (name == "gpu") {
        ReadGpu(child, index);
      } else if (name == "nic") {
        ReadNic(child, index, cpu_index);
      } else if (name == "pcilink") {
        // Broadcom switch peer links; they do not change which GPUs share what.
        CheckAttributes(child, {"target"});
      } else {
        Ignore(child);
      }
      if (!error_.ok()) return;
    }
  }

  void ReadGpu(pugi::xml_node element, int pci) {
    CheckAttributes(element, {"dev", "sm", "rank", "gdr", "mlopart"});
    const TopoPciDevice& device = topology_.pci_devices[pci];
    TopoGpu gpu;
    gpu.dev = AttrInt(element, "dev").value_or(-1);
    gpu.rank = AttrInt(element, "rank");
    gpu.sm = AttrInt(element, "sm");
    gpu.gdr = AttrBool(element, "gdr");
    gpu.bus_id = device.bus_id;
    gpu.nccl_bus_id = device.nccl_bus_id;
    gpu.pci = pci;
    gpu.cpu = device.cpu;
    gpu.numa_id = device.numa_id;
    for (pugi::xml_node child : element.children()) {
      if (child.type() != pugi::node_element) continue;
      std::string_view name = child.name();
      if (name == "nvlink") {
        CheckAttributes(child, {"target", "count", "tclass"});
        TopoNvLink link;
        std::string_view target = child.attribute("target").value();
        link.target_bus_id = NormalizePciBusId(target).value_or(std::string(target));
        link.tclass = child.attribute("tclass").value();
        link.target_class = ClassFromCode(link.tclass);
        link.count = AttrInt(child, "count").value_or(0);
        if (link.target_class == PciClass::kNvSwitch) AddNvSwitch(link.target_bus_id);
        gpu.nvlinks.push_back(std::move(link));
      } else if (name == "c2c") {
        CheckAttributes(child, {"count", "bw"});
        gpu.c2c_links += AttrInt(child, "count").value_or(0);
      } else {
        Ignore(child);
      }
    }
    topology_.gpus.push_back(std::move(gpu));
  }

  // A <nic> holds one <net> per port or virtual device NCCL can use; each becomes a TopoNic.
  void ReadNic(pugi::xml_node element, int pci, int cpu_index) {
    CheckAttributes(element, {});
    for (pugi::xml_node child : element.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) != "net") {
        Ignore(child);
        continue;
      }
      CheckAttributes(child, {"name", "dev", "speed", "port", "latency", "guid", "maxconn", "gdr",
                              "coll", "keep", "rail", "plane", "net"});
      TopoNic nic;
      nic.name = child.attribute("name").value();
      nic.dev = AttrInt(child, "dev");
      std::optional<int64_t> speed = ParseInt(child.attribute("speed").value());
      if (speed && *speed > 0) nic.speed_mbps = speed;  // some NICs report -1
      nic.port = AttrInt(child, "port");
      nic.guid = child.attribute("guid").value();
      nic.latency_us = ParseDouble(child.attribute("latency").value());
      nic.max_connections = AttrInt(child, "maxconn");
      nic.gdr = AttrBool(child, "gdr");
      nic.coll = AttrBool(child, "coll");
      nic.pci = pci;
      nic.cpu = cpu_index;
      nic.numa_id = topology_.cpus[cpu_index].numa_id;
      if (pci >= 0) {
        nic.bus_id = topology_.pci_devices[pci].bus_id;
        nic.parent_bus_id = topology_.pci_devices[pci].parent_bus_id;
      }
      topology_.nics.push_back(std::move(nic));
    }
  }

  void AddNvSwitch(const std::string& bus_id) {
    std::vector<std::string>& switches = topology_.nvswitch_bus_ids;
    if (std::find(switches.begin(), switches.end(), bus_id) == switches.end()) {
      switches.push_back(bus_id);
    }
  }

  static constexpr int kMaxPciDepth = 64;

  std::string_view xml_;
  std::string_view source_name_;
  NodeTopology topology_;
  std::set<std::string> ignored_names_;
  Status error_;
};

}  // namespace

Result<NodeTopology> ParseNcclTopology(std::string_view xml, std::string_view source_name) {
  pugi::xml_document document;
  pugi::xml_parse_result parsed =
      document.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    std::string message =
        Location(xml, source_name, parsed.offset) + "malformed XML: " + parsed.description();
    // A dump cut short is the usual case (the job died while NCCL was writing it, or a copy
    // stopped early); NCCL always ends the file with the root's closing tag.
    std::string_view tail = xml.substr(0, xml.find_last_not_of(" \t\r\n") + 1);
    if (!tail.ends_with("</system>")) {
      message += " (the file does not end with </system>: was it truncated?)";
    }
    return Status::Error(std::move(message));
  }
  TopologyReader reader(xml, source_name);
  return reader.Read(document);
}

}  // namespace rankscope
