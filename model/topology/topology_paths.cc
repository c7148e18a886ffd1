#include "model/topology/topology_paths.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace rankscope {
namespace {

// The switches above a PCI device, nearest first. Bounded by the device count so that a
// hand-built topology with a parent cycle cannot loop forever.
std::vector<int> SwitchesAbove(const NodeTopology& topology, int pci) {
  std::vector<int> chain;
  if (pci < 0) return chain;
  for (int p = topology.pci_devices[pci].parent;
       p >= 0 && chain.size() < topology.pci_devices.size(); p = topology.pci_devices[p].parent) {
    chain.push_back(p);
  }
  return chain;
}

struct Route {
  PciePath path = PciePath::kUnknown;
  std::string common_switch_bus_id;
};

// The PCIe route between two endpoints, each a PCI device (or -1 for something attached to the
// CPU itself, like a virtio NIC) under a CPU.
Route RouteBetween(const NodeTopology& topology, int pci_a, int cpu_a, int pci_b, int cpu_b) {
  Route route;
  if (cpu_a < 0 || cpu_b < 0) return route;
  if (cpu_a != cpu_b) {
    route.path = PciePath::kCrossCpu;
    return route;
  }
  std::vector<int> above_a = SwitchesAbove(topology, pci_a);
  std::vector<int> above_b = SwitchesAbove(topology, pci_b);
  for (size_t i = 0; i < above_a.size(); ++i) {
    auto j = std::find(above_b.begin(), above_b.end(), above_a[i]);
    if (j == above_b.end()) continue;
    // Switches crossed: those below the shared one on each side, plus the shared one.
    size_t switches = i + static_cast<size_t>(j - above_b.begin()) + 1;
    route.path = switches <= 1 ? PciePath::kSameSwitch : PciePath::kAcrossSwitches;
    route.common_switch_bus_id = topology.pci_devices[above_a[i]].bus_id;
    return route;
  }
  route.path = PciePath::kHostBridge;
  return route;
}

// The slowest and the narrowest known hop from a device up to its CPU (they may be different
// hops: the bottleneck is whichever is worse for the traffic, so both are kept).
PcieLink PathBottleneck(const NodeTopology& topology, int pci) {
  PcieLink worst;
  size_t hops = 0;
  for (int p = pci; p >= 0 && hops <= topology.pci_devices.size();
       p = topology.pci_devices[p].parent, ++hops) {
    const PcieLink& hop = topology.pci_devices[p].link;
    if (hop.gt_per_s && (!worst.gt_per_s || *hop.gt_per_s < *worst.gt_per_s)) {
      worst.gt_per_s = hop.gt_per_s;
      worst.gen = hop.gen;
      worst.speed_text = hop.speed_text;
    }
    if (hop.width_lanes && (!worst.width_lanes || *hop.width_lanes < *worst.width_lanes)) {
      worst.width_lanes = hop.width_lanes;
    }
  }
  return worst;
}

int FindRoot(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

void DeriveGpuPairs(NodeTopology* topology) {
  const std::vector<TopoGpu>& gpus = topology->gpus;
  const int n = static_cast<int>(gpus.size());
  std::map<std::string, int> gpu_by_bus_id;
  for (int g = 0; g < n; ++g) gpu_by_bus_id.emplace(gpus[g].bus_id, g);

  // direct[a][b]: NVLinks a declares towards b. Components join GPUs reachable over NVLink
  // at all, through other GPUs or the switch fabric.
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<bool> on_switch(n, false);
  std::vector<int> component(n);
  std::iota(component.begin(), component.end(), 0);
  int first_on_switch = -1;
  for (int a = 0; a < n; ++a) {
    for (const TopoNvLink& link : gpus[a].nvlinks) {
      if (link.count <= 0) continue;
      if (link.target_class == PciClass::kNvSwitch) {
        on_switch[a] = true;
        if (first_on_switch < 0) first_on_switch = a;
        component[FindRoot(component, a)] = FindRoot(component, first_on_switch);
        continue;
      }
      auto peer = gpu_by_bus_id.find(link.target_bus_id);
      if (peer == gpu_by_bus_id.end() || peer->second == a) continue;
      direct[a][peer->second] += link.count;
      component[FindRoot(component, a)] = FindRoot(component, peer->second);
    }
  }

  topology->gpu_pairs.clear();
  bool all_nvlink = n >= 2;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      GpuPair pair;
      pair.gpu_a = a;
      pair.gpu_b = b;
      // Each side lists its own links; they agree on real dumps, so take the larger.
      pair.direct_nvlinks = std::max(direct[a][b], direct[b][a]);
      if (pair.direct_nvlinks > 0) {
        pair.nvlink = NvLinkReach::kDirect;
      } else if (on_switch[a] && on_switch[b]) {
        pair.nvlink = NvLinkReach::kNvSwitch;
      } else if (FindRoot(component, a) == FindRoot(component, b)) {
        pair.nvlink = NvLinkReach::kViaGpu;
      }
      Route route = RouteBetween(*topology, gpus[a].pci, gpus[a].cpu, gpus[b].pci, gpus[b].cpu);
      pair.pcie = route.path;
      pair.common_switch_bus_id = std::move(route.common_switch_bus_id);
      if (pair.pcie_only()) all_nvlink = false;
      topology->gpu_pairs.push_back(std::move(pair));
    }
  }
  topology->all_gpus_nvlink_connected = all_nvlink;
}

void DeriveGpuNicPaths(NodeTopology* topology) {
  topology->gpu_nic_paths.clear();
  for (int g = 0; g < static_cast<int>(topology->gpus.size()); ++g) {
    const TopoGpu& gpu = topology->gpus[g];
    for (int i = 0; i < static_cast<int>(topology->nics.size()); ++i) {
      const TopoNic& nic = topology->nics[i];
      Route route = RouteBetween(*topology, gpu.pci, gpu.cpu, nic.pci, nic.cpu);
      GpuNicPath path;
      path.gpu = g;
      path.nic = i;
      path.pcie = route.path;
      path.common_switch_bus_id = std::move(route.common_switch_bus_id);
      topology->gpu_nic_paths.push_back(std::move(path));
    }
  }
}

void DeriveSlowLinks(NodeTopology* topology) {
  topology->slow_pcie_links.clear();
  struct Best {
    int devices = 0;
    std::optional<int> gen;
    std::optional<int> width;
  };
  std::map<PciClass, Best> best_by_class;
  for (const TopoPciDevice& device : topology->pci_devices) {
    Best& best = best_by_class[device.device_class];
    ++best.devices;
    if (device.link.gen && (!best.gen || *device.link.gen > *best.gen)) best.gen = device.link.gen;
    if (device.link.width_lanes && (!best.width || *device.link.width_lanes > *best.width)) {
      best.width = device.link.width_lanes;
    }
  }
  for (int i = 0; i < static_cast<int>(topology->pci_devices.size()); ++i) {
    const TopoPciDevice& device = topology->pci_devices[i];
    const Best& best = best_by_class[device.device_class];
    if (best.devices < 2) continue;  // nothing to compare with
    SlowPcieLink slow;
    slow.gen_below = device.link.gen && best.gen && *device.link.gen < *best.gen;
    slow.width_below =
        device.link.width_lanes && best.width && *device.link.width_lanes < *best.width;
    if (!slow.gen_below && !slow.width_below) continue;
    slow.pci = i;
    slow.bus_id = device.bus_id;
    slow.device_class = device.device_class;
    slow.link = device.link;
    slow.peers_max_gen = best.gen;
    slow.peers_max_width_lanes = best.width;
    topology->slow_pcie_links.push_back(std::move(slow));
  }
}

}  // namespace

void DeriveTopologyFacts(NodeTopology* topology) {
  for (TopoGpu& gpu : topology->gpus) {
    gpu.pcie_link = gpu.pci >= 0 ? topology->pci_devices[gpu.pci].link : PcieLink();
    gpu.pcie_path_to_cpu = PathBottleneck(*topology, gpu.pci);
  }
  DeriveGpuPairs(topology);
  DeriveGpuNicPaths(topology);
  DeriveSlowLinks(topology);
}

const GpuNicPath* NearestNicPath(const NodeTopology& topology, int gpu) {
  const GpuNicPath* nearest = nullptr;
  for (const GpuNicPath& path : topology.gpu_nic_paths) {
    if (path.gpu != gpu) continue;
    // kUnknown sorts first in the enum but is the least useful answer.
    auto rank = [](PciePath p) { return p == PciePath::kUnknown ? 99 : static_cast<int>(p); };
    if (!nearest || rank(path.pcie) < rank(nearest->pcie)) nearest = &path;
  }
  return nearest;
}

}  // namespace rankscope
