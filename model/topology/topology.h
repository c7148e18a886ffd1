// One node's hardware as NCCL saw it: the topology dump NCCL writes when NCCL_TOPO_DUMP_FILE is
// set (CPUs/NUMA nodes, the PCI tree under each, GPUs with their NVLinks, NICs), parsed into
// plain values, plus the facts the PCIe-bound analysis needs (which GPU pairs only share PCIe
// and through what, which GPU<->NIC paths cross the CPU, which links run below their peers).
// Pure: parses from a string; topology_file.h reads a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/topology/pcie_link.h"

namespace rankscope {

// What a PCI device is, from the children NCCL gave it (<gpu>, <nic>) or else its class code.
enum class PciClass { kUnknown, kGpu, kNic, kNvSwitch, kBridge, kCpu, kOther };

// How far apart two PCI endpoints are, in NCCL's (and nvidia-smi topo's) terms, nearest first.
enum class PciePath {
  kUnknown,
  kSameSwitch,      // PIX: through one PCIe switch
  kAcrossSwitches,  // PXB: through several PCIe switches, not the CPU
  kHostBridge,      // PHB: through the CPU's host bridge (root complex)
  kCrossCpu,        // SYS: across the interconnect between CPUs / NUMA nodes
};

// How two GPUs reach each other over NVLink, if at all.
enum class NvLinkReach {
  kNone,      // PCIe only
  kDirect,    // an NVLink between the two GPUs
  kNvSwitch,  // both have NVLinks into the NVSwitch fabric
  kViaGpu,    // only through another GPU's NVLinks (NCCL's NVB)
};

std::string_view PciClassName(PciClass c);        // "GPU", "NIC", "NVSwitch", "bridge", ...
std::string_view PciePathName(PciePath p);        // "PIX", "PXB", "PHB", "SYS", "unknown"
std::string_view NvLinkReachName(NvLinkReach r);  // "none", "NVLink", "NVSwitch", "NVLink via GPU"

// A <cpu> element: one NUMA node's root complex.
struct TopoCpu {
  std::optional<int> numa_id;  // nullopt when NCCL wrote -1 (no NUMA information, e.g. a VM)
  std::string arch;            // "x86_64", "arm64", "ppc64"
  std::string vendor;          // "GenuineIntel", "AuthenticAMD"
  std::optional<int> family_id;
  std::optional<int> model_id;
  std::string affinity;   // CPU mask as sysfs cpumap prints it; empty when NCCL could not read it
  std::string host_hash;  // NCCL's hash of the host, as written ("0x522c...")
};

// A <pci> element. Each bridge element NCCL writes stands for one PCIe switch (it collapses the
// switch's upstream and downstream ports into one node).
struct TopoPciDevice {
  std::string bus_id;       // canonical "0000:60:00.0" (NormalizePciBusId)
  std::string nccl_bus_id;  // NCCL's short form, as in its logs ("busId 60000")
  PciClass device_class = PciClass::kUnknown;
  std::string class_code;     // as written: "0x030200"
  std::string vendor_id;      // "0x10de"
  std::string device_id;      // "0x2335"
  PcieLink link;              // the link to its parent (switch or CPU)
  std::string parent_bus_id;  // the enclosing switch; empty when it hangs off the CPU directly
  int parent = -1;            // index into NodeTopology::pci_devices; -1 for the CPU
  int cpu = -1;               // index into NodeTopology::cpus
  std::optional<int> numa_id;
};

// A <nvlink> element of a GPU: `count` links to one target.
struct TopoNvLink {
  PciClass target_class = PciClass::kUnknown;  // kGpu, kNvSwitch or kCpu
  std::string target_bus_id;                   // canonical when it parses; NCCL's text otherwise
  std::string tclass;                          // target class code as written: "0x068000"
  int count = 0;
};

struct TopoGpu {
  int dev = -1;             // CUDA device index as NCCL saw it
  std::optional<int> rank;  // NCCL rank of this GPU in the dumping communicator, if in it
  std::optional<int> sm;    // compute capability x10 (90 = sm_90)
  std::optional<bool> gdr;  // GPUDirect RDMA supported
  std::string bus_id;       // canonical
  std::string nccl_bus_id;  // NCCL's short form
  int pci = -1;             // index into NodeTopology::pci_devices
  int cpu = -1;             // index into NodeTopology::cpus
  std::optional<int> numa_id;
  std::vector<TopoNvLink> nvlinks;
  int c2c_links = 0;  // NVLink-C2C links to the CPU (Grace Hopper), from <c2c count>
  // Derived: the GPU's own link, and the slowest/narrowest hop on its way up to the CPU (over
  // the known hops; a hop NCCL could not read does not lower it).
  PcieLink pcie_link;
  PcieLink pcie_path_to_cpu;
};

// A <net> element (one network device NCCL can use), with the <nic>/<pci> that holds it.
struct TopoNic {
  std::string name;  // "mlx5_0", "eth0"
  std::optional<int> dev;
  std::optional<int64_t> speed_mbps;  // nullopt when the plugin gave none or -1
  std::optional<int> port;
  std::string guid;  // as written: "0x0"
  std::optional<double> latency_us;
  std::optional<int> max_connections;
  std::optional<bool> gdr;   // GPUDirect RDMA
  std::optional<bool> coll;  // in-network collectives (SHARP / CollNet)
  // The NIC's PCI device. Empty / -1 for a NIC NCCL attached straight to a CPU because it is
  // not a PCI device (virtio, a virtual NIC): every path to it goes through that CPU.
  std::string bus_id;
  std::string parent_bus_id;
  int pci = -1;
  int cpu = -1;
  std::optional<int> numa_id;
};

// Every unordered pair of GPUs (a < b, indices into NodeTopology::gpus).
struct GpuPair {
  int gpu_a = -1;
  int gpu_b = -1;
  NvLinkReach nvlink = NvLinkReach::kNone;
  int direct_nvlinks = 0;  // links between the two, for kDirect
  PciePath pcie = PciePath::kUnknown;
  std::string common_switch_bus_id;  // the nearest shared PCIe switch for PIX/PXB, else empty
  bool pcie_only() const { return nvlink == NvLinkReach::kNone; }
};

// The PCIe route between a GPU and a NIC (indices into gpus / nics).
struct GpuNicPath {
  int gpu = -1;
  int nic = -1;
  PciePath pcie = PciePath::kUnknown;
  std::string common_switch_bus_id;
  bool through_cpu() const { return pcie == PciePath::kHostBridge || pcie == PciePath::kCrossCpu; }
};

// A PCI device whose link is slower or narrower than the best link of another device of the
// same class on the node: a GPU riser at gen3 x8 among gen4 x16 GPUs.
struct SlowPcieLink {
  int pci = -1;  // index into pci_devices
  std::string bus_id;
  PciClass device_class = PciClass::kUnknown;
  PcieLink link;
  std::optional<int> peers_max_gen;          // best generation among its class
  std::optional<int> peers_max_width_lanes;  // widest among its class
  bool gen_below = false;
  bool width_below = false;
};

struct NodeTopology {
  std::optional<int> xml_version;  // <system version>; NCCL 2.x writes 1
  std::vector<TopoCpu> cpus;
  std::vector<TopoPciDevice> pci_devices;  // document order: parents before children
  std::vector<TopoGpu> gpus;
  std::vector<TopoNic> nics;
  // Distinct NVSwitches seen as PCI devices or as NVLink targets (canonical bus ids).
  std::vector<std::string> nvswitch_bus_ids;

  // Derived facts (DeriveTopologyFacts, run by ParseNcclTopology).
  std::vector<GpuPair> gpu_pairs;
  // True when there are at least two GPUs and every pair reaches the other over NVLink (direct,
  // NVSwitch, or via a GPU); a single-GPU node has no pair and reports false.
  bool all_gpus_nvlink_connected = false;
  std::vector<GpuNicPath> gpu_nic_paths;
  std::vector<SlowPcieLink> slow_pcie_links;

  // What the parser skipped: elements and attributes NCCL's schema (as of 2.28) does not have,
  // or elements that are out of place (a <gpu> outside any <pci>).
  int ignored_elements = 0;
  int ignored_attributes = 0;
  std::vector<std::string> ignored_names;  // distinct, sorted: "element <foo>", "attribute gpu.bar"
};

// The most GPUs, and the most NICs, one node's dump may hold (an NVL72 rack's dump has 72 GPUs);
// more is an error, found before anything quadratic in them is derived.
inline constexpr size_t kMaxTopologyGpus = 1024;

// Parses an NCCL topology dump (the file NCCL_TOPO_DUMP_FILE names). `source_name` only labels
// error messages ("topo.xml:3:17: ..."). Malformed or truncated XML, a missing <system> root,
// or a <pci> element without a readable busid is an error naming line:column. Attributes NCCL
// could not fill (empty link_speed, link_width 0, numaid -1) are unknown, not errors; unknown
// elements and attributes are skipped and counted. Derived facts are filled in.
Result<NodeTopology> ParseNcclTopology(std::string_view xml,
                                       std::string_view source_name = "NCCL topology");

}  // namespace rankscope
