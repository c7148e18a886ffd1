#include "coordinator/analysis/ring_analysis.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "coordinator/nccl_instances.h"
#include "coordinator/node_topologies.h"
#include "coordinator/p2p_matcher.h"
#include "core/format.h"
#include "core/robust_stats.h"
#include "model/gpu/compute_thinning.h"
#include "model/gpu/nccl_compute.h"
#include "model/nccl/bus_bandwidth.h"
#include "model/nccl/nccl_log.h"
#include "model/nccl/nccl_types.h"
#include "model/topology/pci_bus_id.h"
#include "model/topology/pcie_link.h"
#include "model/topology/topology.h"

namespace rankscope {
namespace {

// A connection over a network plugin ("NET/IB", "NET/Socket", another plugin's).
bool OverNetwork(NcclTransportKind kind) {
  return kind == NcclTransportKind::kNetIb || kind == NcclTransportKind::kNetSocket ||
         kind == NcclTransportKind::kNetOther;
}

// NCCL's names of `kinds` ("NET/IB", "SHM", ...), sorted by name.
std::vector<std::string> TransportNames(const std::set<NcclTransportKind>& kinds) {
  std::set<std::string> names;
  for (NcclTransportKind k : kinds) names.emplace(NcclTransportKindName(k));
  return {names.begin(), names.end()};
}

// One communicator as the ranks' logs and records describe it.
struct Comm {
  std::string id;  // as NCCL prints it
  int nranks = 0;
  std::map<int, int> world_of;                                 // comm rank -> world rank
  std::map<int, std::string> node_of;                          // world rank -> node
  std::set<NcclTransportKind> transports;                      // kinds used by any member
  std::map<std::pair<int, int>, NcclTransportKind> pair_kind;  // (world, world) -> kind
  std::vector<int> ring;                                       // channel 0's ring, comm ranks
  std::map<int, std::string> bus_of;                           // world rank -> NCCL busId ("60000")
  // Every connection a member logged, as (its world rank, the peer's, kind), and per node the
  // NICs (NCCL's net device index, -1 unreadable) its members' NET connections use.
  std::set<std::tuple<int, int, NcclTransportKind>> connections;
  std::map<std::string, std::set<int>> net_devices;
  bool connections_complete = true;  // every connection's peer is a known member
  // Per call shape (op, bytes): the sequence numbers of its calls.
  std::map<std::pair<NcclOp, Bytes>, std::set<uint64_t>> calls;
};

std::map<uint64_t, Comm> CollectCommunicators(const Session& s) {
  std::map<uint64_t, Comm> comms;
  for (const RankData& r : s.ranks) {
    if (!r.nccl) continue;
    for (const NcclCommInfo& c : r.nccl->communicators) {
      Comm& comm = comms[NcclCommKey(c.comm_id)];
      comm.id = c.comm_id;
      comm.nranks = std::max(comm.nranks, c.nranks);
      comm.world_of[c.rank] = r.id.rank;
      comm.node_of[r.id.rank] = r.id.node;
      comm.bus_of[r.id.rank] = c.bus_id;
      for (const NcclTransportInfo& t : c.transports) comm.transports.insert(t.kind);
      if (comm.ring.empty() && !c.ring_order.empty()) comm.ring = c.ring_order;  // comm ranks
    }
  }
  // Transports by world rank pair, once every member's comm rank is known.
  for (const RankData& r : s.ranks) {
    if (!r.nccl) continue;
    for (const NcclCommInfo& c : r.nccl->communicators) {
      Comm& comm = comms[NcclCommKey(c.comm_id)];
      for (const NcclTransportInfo& t : c.transports) {
        auto peer = comm.world_of.find(t.peer);
        if (peer != comm.world_of.end()) comm.pair_kind[{r.id.rank, peer->second}] = t.kind;
        if (t.peer < 0) continue;  // CollNet: no peer rank
        if (peer == comm.world_of.end()) {
          comm.connections_complete = false;
          continue;
        }
        comm.connections.insert({r.id.rank, peer->second, t.kind});
        if (OverNetwork(t.kind)) comm.net_devices[r.id.node].insert(t.net_dev);
      }
    }
  }
  // The calls each communicator made, by shape (every member logs the same calls).
  for (const RankData& r : s.ranks) {
    if (!r.nccl) continue;
    for (const NcclCallInfo& call : r.nccl->calls) {
      auto comm = comms.find(NcclCommKey(call.comm_id));
      if (comm != comms.end()) comm->second.calls[{call.op, call.bytes}].insert(call.seq);
    }
  }
  return comms;
}

// The hops of channel 0's ring that leave a node, as (world rank, world rank) in ring order.
std::vector<std::pair<int, int>> CrossNodeHops(const Comm& comm) {
  std::vector<std::pair<int, int>> hops;
  for (size_t i = 0; i < comm.ring.size(); ++i) {
    auto a = comm.world_of.find(comm.ring[i]);
    auto b = comm.world_of.find(comm.ring[(i + 1) % comm.ring.size()]);
    if (a != comm.world_of.end() && b != comm.world_of.end() &&
        comm.node_of.at(a->second) != comm.node_of.at(b->second)) {
      hops.emplace_back(a->second, b->second);
    }
  }
  return hops;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

struct Measured {
  uint64_t key;
  double busbw = 0;      // median GB/s
  DurationNs total = 0;  // summed instance time
  int instances = 0;
  // The instances no member's GPU ran other (non-NCCL) kernels beside: what the link gave NCCL
  // alone. The link ceiling is judged on these only; overlapped compute (FSDP prefetch, a
  // backward pass) takes SMs and memory bandwidth from NCCL's kernels on a healthy link.
  double alone_busbw = 0;  // median GB/s
  DurationNs alone_total = 0;
  int alone_instances = 0;
};

}  // namespace

std::map<int, ComputeBeside> ComputeBesideNccl(const Session& aligned) {
  std::map<int, ComputeBeside> out;
  for (const RankData& r : aligned.ranks) {
    ComputeBeside& c = out[r.id.rank];
    if (r.compute_kernels_summed) {
      c.spans = r.nccl_compute;
      c.known.emplace();
      if (!r.finished || r.nccl_compute_late > 0) continue;  // known nowhere
      // The agent clipped on its own clock: the margin, aligned, may be some ns shorter.
      constexpr DurationNs kDrift = kNsPerUs;
      for (const CollectiveRecord& k : r.collectives) {
        if (k.source != CollectiveRecord::Source::kNccl || k.exit < k.enter) continue;
        c.known->emplace_back(k.enter, k.exit + kNcclComputeMargin - kDrift);
      }
      *c.known = MergeIntervals(std::move(*c.known));
      continue;
    }
    for (const GpuActivityRecord& g : r.gpu) {
      if (g.kind != GpuActivityKind::kKernel || g.end <= g.start || IsNcclKernel(g)) continue;
      c.spans.emplace_back(g.start, g.end);
    }
    c.spans = MergeIntervals(std::move(c.spans));
  }
  return out;
}

bool RanBesideNccl(const ComputeBeside& c, TimeNs begin, TimeNs end, DurationNs more_than) {
  if (c.known && OverlapWith(*c.known, begin, end) < end - begin) return true;  // unknown
  return OverlapWith(c.spans, begin, end) > more_than;
}

namespace {

// ---- What the links allow ----

// Nominal NVLink bandwidth per link and direction by GPU architecture (compute capability x10),
// from NVIDIA's per-GPU totals (both directions over all links). NCCL's topology dump gives the
// link counts but no rate. H100/H200 links signal at 26.5625 GB/s; 25 is what they carry.
std::optional<double> NvLinkGBpsPerLink(std::optional<int> sm) {
  if (!sm) return std::nullopt;
  switch (*sm) {
    case 60:  // P100, NVLink 1: 4 links, 160 GB/s
      return 20.0;
    case 70:  // V100, NVLink 2: 6 links, 300 GB/s
    case 80:  // A100, NVLink 3: 12 links, 600 GB/s
    case 90:  // H100/H200, NVLink 4: 18 links, 900 GB/s
      return 25.0;
    case 86:  // A40 / RTX A6000 bridge: 4 links, 112.5 GB/s
      return 14.0625;
    case 100:  // B200/GB200, NVLink 5: 18 links, 1.8 TB/s
    case 103:  // B300
      return 50.0;
    default:
      return std::nullopt;
  }
}

// PCIe bandwidth per lane and direction after line encoding, by generation (gen6: FLIT mode).
std::optional<double> PcieLaneGBps(int gen) {
  static constexpr double kLane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  if (gen < 1 || gen > 6) return std::nullopt;
  return kLane[gen];
}

std::optional<int64_t> HexValue(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A node's hardware as its NCCL topology dump (parsed once) and NVML describe it.
struct NodeHardware {
  std::optional<NodeTopology> topology;
  const NvmlSnapshot* nvml = nullptr;  // into the session
};

std::map<std::string, NodeHardware> ReadNodeHardware(const Session& s) {
  std::map<std::string, NodeHardware> out;
  for (auto& [node, dump] : ParseNodeTopologies(s)) out[node].topology = std::move(dump.topology);
  for (const RankData& r : s.ranks) {
    NodeHardware& hw = out[r.id.node];
    if (hw.nvml == nullptr && r.nvml && !r.nvml->gpus.empty()) hw.nvml = &*r.nvml;
  }
  return out;
}

// One GPU of a node, found by the busId NCCL's log gave its rank.
struct NodeGpu {
  int topo_index = -1;  // into the topology's gpus
  const TopoGpu* topo = nullptr;
  const NvmlGpu* nvml = nullptr;
  int rank = -1;  // the world rank on it
};

NodeGpu FindGpu(const NodeHardware& hw, const std::string& nccl_bus_id, int rank) {
  NodeGpu g;
  g.rank = rank;
  const std::optional<int64_t> bus = HexValue(nccl_bus_id);
  if (!bus) return g;
  if (hw.topology) {
    for (size_t i = 0; i < hw.topology->gpus.size(); ++i) {
      if (HexValue(hw.topology->gpus[i].nccl_bus_id) == bus) {
        g.topo_index = static_cast<int>(i);
        g.topo = &hw.topology->gpus[i];
      }
    }
  }
  if (hw.nvml != nullptr) {
    for (const NvmlGpu& n : hw.nvml->gpus) {
      if (NcclBusIdValue(n.bus_id) == bus) g.nvml = &n;
    }
  }
  return g;
}

// The nominal one-direction bandwidth of the link under one connection, and what sets it.
struct Capacity {
  LinkMedium medium = LinkMedium::kUnknown;
  std::string link;  // "18 NVLinks x 25 GB/s to the NVSwitch", "PCIe gen5 x16", "mlx5_0 ..."
  double nominal_gbps = 0;
};

// A GPU's PCIe link (its own, or the narrowest hop up to its CPU), with NVML's maximum generation
// and width where the dump left them unknown (NCCL writes link_width="0" inside VMs).
std::optional<Capacity> PcieOf(const NodeGpu& g, bool up_to_cpu) {
  PcieLink link;
  if (g.topo != nullptr) link = up_to_cpu ? g.topo->pcie_path_to_cpu : g.topo->pcie_link;
  if (g.nvml != nullptr) {
    if (!link.gen && g.nvml->pcie_gen_max > 0) link.gen = g.nvml->pcie_gen_max;
    if (!link.width_lanes && g.nvml->pcie_width_max > 0) link.width_lanes = g.nvml->pcie_width_max;
  }
  if (!link.gen || !link.width_lanes) return std::nullopt;
  const std::optional<double> lane = PcieLaneGBps(*link.gen);
  if (!lane) return std::nullopt;
  return Capacity{LinkMedium::kPcie, "PCIe " + FormatPcieLink(link), *lane * *link.width_lanes};
}

// Two GPUs over PCIe: the slower of their links bounds the traffic between them.
std::optional<Capacity> PciePair(const NodeGpu& a, const NodeGpu& b, bool up_to_cpu) {
  std::optional<Capacity> pa = PcieOf(a, up_to_cpu), pb = PcieOf(b, up_to_cpu);
  if (!pa || !pb) return std::nullopt;
  if (pa->nominal_gbps == pb->nominal_gbps) return pa;
  const bool a_slower = pa->nominal_gbps < pb->nominal_gbps;
  Capacity slow = a_slower ? *pa : *pb;
  slow.link += " (rank " + std::to_string(a_slower ? a.rank : b.rank) + "'s GPU)";
  return slow;
}

int NvSwitchLinks(const TopoGpu& g) {
  int links = 0;
  for (const TopoNvLink& l : g.nvlinks) {
    if (l.target_class == PciClass::kNvSwitch) links += l.count;
  }
  return links;
}

std::optional<Capacity> NvLinks(int links, const TopoGpu& a, const TopoGpu& b,
                                const std::string& where) {
  const std::optional<double> ra = NvLinkGBpsPerLink(a.sm), rb = NvLinkGBpsPerLink(b.sm);
  if (links <= 0 || !ra || !rb) return std::nullopt;
  const double rate = std::min(*ra, *rb);
  return Capacity{
      LinkMedium::kNvlink,
      std::to_string(links) + " NVLinks x " + FormatDouble("%g", rate) + " GB/s " + where,
      links * rate};
}

// A P2P or SHM connection between two GPUs of one node.
std::optional<Capacity> IntraNodeCapacity(NcclTransportKind kind, const NodeHardware& hw,
                                          const NodeGpu& a, const NodeGpu& b) {
  if (kind == NcclTransportKind::kShm) return PciePair(a, b, /*up_to_cpu=*/true);  // host memory
  if (kind != NcclTransportKind::kP2pCumem && kind != NcclTransportKind::kP2pMnnvl &&
      kind != NcclTransportKind::kP2pIpc && kind != NcclTransportKind::kP2pDirect) {
    return std::nullopt;
  }
  if (a.topo != nullptr && b.topo != nullptr) {
    const int lo = std::min(a.topo_index, b.topo_index), hi = std::max(a.topo_index, b.topo_index);
    for (const GpuPair& p : hw.topology->gpu_pairs) {
      if (p.gpu_a != lo || p.gpu_b != hi) continue;
      switch (p.nvlink) {
        case NvLinkReach::kDirect:
          return NvLinks(p.direct_nvlinks, *a.topo, *b.topo, "between the pair");
        case NvLinkReach::kNvSwitch:
          return NvLinks(std::min(NvSwitchLinks(*a.topo), NvSwitchLinks(*b.topo)), *a.topo, *b.topo,
                         "to the NVSwitch");
        case NvLinkReach::kViaGpu:
          return std::nullopt;
        case NvLinkReach::kNone:
          return PciePair(a, b,
                          p.pcie != PciePath::kSameSwitch && p.pcie != PciePath::kAcrossSwitches);
      }
    }
    return std::nullopt;
  }
  // NVML alone: P2P crosses PCIe when neither GPU has an NVLink up.
  if (a.nvml != nullptr && b.nvml != nullptr && a.nvml->nvlinks_up == 0 &&
      b.nvml->nvlinks_up == 0) {
    return PciePair(a, b, /*up_to_cpu=*/true);
  }
  return std::nullopt;
}

// How many communicators' logs name each NIC of each node (node, NCCL net device): they may run
// at the same time (data-parallel groups of a DPxTP job), each getting its share of the NIC.
using NicUsers = std::map<std::pair<std::string, int>, int>;

NicUsers CountNicUsers(const std::map<uint64_t, Comm>& comms) {
  NicUsers users;
  for (const auto& [key, comm] : comms) {
    for (const auto& [node, devices] : comm.net_devices) {
      for (int dev : devices) ++users[{node, dev}];
    }
  }
  return users;
}

// The NICs `devices` of `node` together (NCCL spreads its channels over them), each NIC's speed
// divided among the communicators that use it.
std::optional<Capacity> NodeNetCapacity(const NodeHardware& hw, const std::set<int>& devices,
                                        const std::string& node, const NicUsers& users) {
  if (!hw.topology || devices.empty()) return std::nullopt;
  double mbps = 0;
  int most_users = 1;
  std::string names;
  for (int dev : devices) {
    auto nic = std::find_if(hw.topology->nics.begin(), hw.topology->nics.end(),
                            [&](const TopoNic& n) { return n.dev == dev; });
    if (nic == hw.topology->nics.end() || !nic->speed_mbps) return std::nullopt;
    auto shared = users.find({node, dev});
    const int n = shared == users.end() ? 1 : std::max(1, shared->second);
    most_users = std::max(most_users, n);
    mbps += static_cast<double>(*nic->speed_mbps) / n;
    names += (names.empty() ? "" : ", ") + nic->name;
  }
  std::string link = names + " on " + node + ", " + FormatDouble("%g", mbps / 1000.0) + " Gb/s";
  if (most_users > 1) {
    link += " (its share: " + std::to_string(most_users) + " communicators use these NICs)";
  }
  return Capacity{LinkMedium::kNetwork, std::move(link), mbps / 8000.0};
}

// One connection of a communicator on its link.
struct Hop {
  int from = -1;  // world ranks: the member that logged it, its peer
  int to = -1;
  int at = -1;  // the member on the side whose link is the limit (the weaker node's for NET)
  std::string from_node, to_node;
  NcclTransportKind transport = NcclTransportKind::kUnknown;
  Capacity capacity;
  double min_fraction = 0;  // of the nominal bandwidth, what healthy NCCL reaches over it
  double Floor() const { return capacity.nominal_gbps * min_fraction; }
};

double HealthyFraction(const Hop& h, const RingOptions& o) {
  if (h.capacity.medium == LinkMedium::kNvlink) return o.nvlink_ceiling_fraction;
  if (h.capacity.medium == LinkMedium::kNetwork) {
    return h.transport == NcclTransportKind::kNetSocket ? o.socket_ceiling_fraction
                                                        : o.net_ceiling_fraction;
  }
  return h.transport == NcclTransportKind::kShm ? o.shm_ceiling_fraction : o.pcie_ceiling_fraction;
}

// The hop that bounds the communicator's bus bandwidth: the lowest healthy floor over every
// connection its members logged. nullopt when a member's log is missing or any hop's link is
// unknown (that hop could be the slowest).
std::optional<Hop> LimitingHop(const Comm& comm, const std::map<std::string, NodeHardware>& nodes,
                               const NicUsers& nic_users, const RingOptions& options) {
  if (static_cast<int>(comm.world_of.size()) != comm.nranks || !comm.connections_complete ||
      comm.connections.empty()) {
    return std::nullopt;
  }
  static const NodeHardware kUnknown;
  auto hardware = [&](const std::string& node) -> const NodeHardware& {
    auto it = nodes.find(node);
    return it == nodes.end() ? kUnknown : it->second;
  };
  auto net_devices = [&](const std::string& node) {
    auto it = comm.net_devices.find(node);
    return it == comm.net_devices.end() ? std::set<int>() : it->second;
  };
  std::optional<Hop> worst;
  for (const auto& [from, to, kind] : comm.connections) {
    Hop h;
    h.from = from;
    h.to = to;
    h.at = from;
    h.from_node = comm.node_of.at(from);
    h.to_node = comm.node_of.at(to);
    h.transport = kind;
    const NodeHardware& hw_from = hardware(h.from_node);
    const NodeHardware& hw_to = hardware(h.to_node);
    const NodeGpu a = FindGpu(hw_from, comm.bus_of.at(from), from);
    const NodeGpu b = FindGpu(hw_to, comm.bus_of.at(to), to);
    std::optional<Capacity> capacity;
    if (OverNetwork(kind)) {
      std::optional<Capacity> ca =
          NodeNetCapacity(hw_from, net_devices(h.from_node), h.from_node, nic_users);
      std::optional<Capacity> cb =
          NodeNetCapacity(hw_to, net_devices(h.to_node), h.to_node, nic_users);
      if (ca && cb) {
        const bool from_weaker = ca->nominal_gbps <= cb->nominal_gbps;
        capacity = from_weaker ? ca : cb;
        h.at = from_weaker ? from : to;  // the weaker node's side
      }
    } else if (h.from_node == h.to_node) {
      capacity = IntraNodeCapacity(kind, hw_from, a, b);
    } else if (kind == NcclTransportKind::kP2pMnnvl && a.topo != nullptr && b.topo != nullptr) {
      capacity = NvLinks(std::min(NvSwitchLinks(*a.topo), NvSwitchLinks(*b.topo)), *a.topo, *b.topo,
                         "to the NVSwitch fabric");
    }
    if (!capacity) return std::nullopt;
    h.capacity = *capacity;
    h.min_fraction = HealthyFraction(h, options);
    if (!worst || h.Floor() < worst->Floor()) worst = std::move(h);
  }
  return worst;
}

// "ranks 0 -> 1 on n0 over P2P/CUMEM (NVLink: 18 NVLinks x 25 GB/s to the NVSwitch)".
std::string HopText(const Hop& h) {
  const std::string where =
      h.from_node == h.to_node
          ? std::to_string(h.from) + " -> " + std::to_string(h.to) + " on " + h.from_node
          : std::to_string(h.from) + " (" + h.from_node + ") -> " + std::to_string(h.to) + " (" +
                h.to_node + ")";
  return "ranks " + where + " over " + std::string(NcclTransportKindName(h.transport)) + " (" +
         std::string(LinkMediumName(h.capacity.medium)) + ": " + h.capacity.link + ")";
}

// One (communicator, shape) held against its limiting link.
struct CeilingVerdict {
  Hop hop;
  double fraction = 0;  // measured busbw / the link's nominal bandwidth
  bool below = false;   // under the link's healthy floor
};

// Collectives whose bus bandwidth is what crosses each ring (or tree) link; all-to-all and
// point-to-point traffic takes other paths.
bool RingShaped(NcclOp op) {
  return op == NcclOp::kAllReduce || op == NcclOp::kAllGather || op == NcclOp::kReduceScatter ||
         op == NcclOp::kBroadcast || op == NcclOp::kReduce;
}

// A call shape whose time its links, not latency, set: ring-shaped, with a chunk per rank of at
// least ceiling_min_chunk_bytes.
bool HeldAgainstLink(NcclOp op, Bytes bytes, int nranks, const RingOptions& options) {
  return RingShaped(op) && nranks >= 2 &&
         NcclTestsSizeBytes(op, bytes, nranks) / nranks >= options.ceiling_min_chunk_bytes;
}

void AddCeilingEvidence(const CeilingVerdict& v, Finding* f) {
  f->ceiling = CeilingReach{v.below, v.hop.capacity.nominal_gbps, v.fraction, v.hop.min_fraction};
  f->limiting_link = LimitingLink{v.hop.from,
                                  v.hop.to,
                                  v.hop.at,
                                  v.hop.from_node,
                                  v.hop.to_node,
                                  std::string(NcclTransportKindName(v.hop.transport)),
                                  v.hop.capacity.medium,
                                  v.hop.capacity.link,
                                  v.hop.capacity.nominal_gbps};
}

std::string Percent(double fraction) { return FormatDouble("%.0f", 100 * fraction) + "%"; }

// The communicator's world ranks (sorted) and nodes onto `f`.
void SetMembers(const Comm& comm, Finding* f) {
  std::set<std::string> nodes;
  for (const auto& [comm_rank, world] : comm.world_of) {
    f->ranks.push_back(world);
    nodes.insert(comm.node_of.at(world));
  }
  std::sort(f->ranks.begin(), f->ranks.end());
  f->nodes.assign(nodes.begin(), nodes.end());
}

// A shape of one communicator judged against its link.
struct Judged {
  NcclOp op = NcclOp::kUnknown;
  Bytes bytes = 0;
  Measured measured;
  CeilingVerdict verdict;
  // Time it would have saved at the link's healthy floor, on every member.
  DurationNs cost = 0;
  bool reported = false;  // in this shape's imbalanced_ring finding
};

// "Its slowest link, ..., allows 450 GB/s per direction; it reaches 10% of that, where a healthy
// NCCL reaches over 50%."
std::string CeilingSentence(const CeilingVerdict& v) {
  return "Its slowest link, " + HopText(v.hop) + ", allows " +
         FormatDouble("%.0f", v.hop.capacity.nominal_gbps) + " GB/s per direction; it reaches " +
         Percent(v.fraction) + " of that, where a healthy NCCL reaches over " +
         Percent(v.hop.min_fraction) + ".";
}

// One finding for a communicator whose shapes `below` (none slower than peers) reach less than
// their limiting link's healthy floor; the costliest shape leads.
Finding BelowCeilingFinding(const Comm& comm, const std::vector<const Judged*>& below) {
  const Judged& lead =
      **std::max_element(below.begin(), below.end(),
                         [](const Judged* a, const Judged* b) { return a->cost < b->cost; });
  const CeilingVerdict& v = lead.verdict;
  Finding f;
  f.kind = FindingKind::kBelowLinkCeiling;
  f.severity = Severity::kWarning;
  SetMembers(comm, &f);
  for (const Judged* j : below) f.cost_ns += j->cost;
  // The figures the verdict used: the instances that ran free of other kernels.
  f.confidence = std::min(0.9, 0.5 + 0.4 * (1.0 - lead.measured.alone_busbw / v.hop.Floor()));
  f.summary = "NCCL communicator " + comm.id + " (ranks " + RankList(f.ranks) + ") runs " +
              std::string(NcclOpName(lead.op)) + " of " + FormatBytes(lead.bytes) + " at " +
              FormatDouble("%.1f", lead.measured.alone_busbw) + " GB/s bus bandwidth, " +
              Percent(v.fraction) + " of the " + FormatDouble("%.0f", v.hop.capacity.nominal_gbps) +
              " GB/s per direction its slowest link allows: " + HopText(v.hop) +
              ". A healthy NCCL reaches over " + Percent(v.hop.min_fraction) + " of such a link.";
  if (below.size() > 1) {
    f.summary +=
        " " + std::to_string(below.size() - 1) + " more of its message sizes fall short too.";
  }
  BelowCeilingFigures figures{
      comm.nranks, lead.measured.alone_instances, TransportNames(comm.transports), {}};
  for (const Judged* j : below) {
    figures.shapes.push_back({j->op, j->bytes, j->measured.alone_busbw, j->verdict.fraction,
                              j->measured.alone_instances});
  }
  f.comm_measure = CommMeasure{comm.id, lead.op, lead.bytes, lead.measured.alone_busbw};
  f.below_ceiling = std::move(figures);
  AddCeilingEvidence(v, &f);
  return f;
}

// Peers: same op, message size and communicator size.
using ShapeKey = std::tuple<NcclOp, Bytes, int>;
using Groups = std::map<ShapeKey, std::vector<Measured>>;
// Per communicator and call shape (op, bytes): its calls held against its limiting hop.
using JudgedShapes = std::map<uint64_t, std::map<std::pair<NcclOp, Bytes>, Judged>>;

// One communicator's calls of one shape: bus bandwidth over its complete instances, and over
// those no member's GPU ran other kernels beside (read only when the shape is held against its
// link; `compute` is filled on first use).
Measured MeasureShape(const Session& aligned, uint64_t key, const Comm& comm,
                      const std::pair<NcclOp, Bytes>& shape, const std::set<uint64_t>& seqs,
                      const std::map<std::pair<uint64_t, uint64_t>, NcclInstanceSpan>& spans,
                      const RingOptions& options,
                      std::optional<std::map<int, ComputeBeside>>* compute) {
  const NcclOp op = shape.first;
  const bool against_link = HeldAgainstLink(op, shape.second, comm.nranks, options);
  if (against_link && !*compute) *compute = ComputeBesideNccl(aligned);
  std::vector<double> bw, alone_bw;
  Measured m{key};
  for (uint64_t seq : seqs) {
    auto found = spans.find({key, seq});
    if (found == spans.end()) continue;
    const NcclInstanceSpan& span = found->second;
    if (span.members != comm.nranks || span.last_exit <= span.last_enter) continue;
    const DurationNs d = span.last_exit - span.last_enter;
    bw.push_back(
        BusBandwidthGBps(op, NcclTestsSizeBytes(op, shape.second, comm.nranks), d, comm.nranks));
    m.total += d;
    ++m.instances;
    if (!against_link) continue;
    const bool alone = std::none_of(
        comm.world_of.begin(), comm.world_of.end(), [&](const std::pair<const int, int>& w) {
          auto mine = (*compute)->find(w.second);
          return mine != (*compute)->end() &&
                 RanBesideNccl(
                     mine->second, span.last_enter, span.last_exit,
                     static_cast<DurationNs>(options.ceiling_max_overlap * static_cast<double>(d)));
        });
    if (alone) {
      alone_bw.push_back(bw.back());
      m.alone_total += d;
      ++m.alone_instances;
    }
  }
  m.busbw = Median(bw);
  if (!alone_bw.empty()) m.alone_busbw = Median(alone_bw);
  return m;
}

Groups MeasureGroups(const Session& aligned, const std::map<uint64_t, Comm>& comms,
                     const RingOptions& options) {
  const auto spans = NcclInstanceSpans(aligned);
  std::optional<std::map<int, ComputeBeside>> compute;  // read only when some shape needs it
  Groups groups;
  for (const auto& [key, comm] : comms) {
    for (const auto& [shape, seqs] : comm.calls) {
      Measured m = MeasureShape(aligned, key, comm, shape, seqs, spans, options, &compute);
      if (m.instances < options.min_instances) continue;
      groups[{shape.first, shape.second, comm.nranks}].push_back(m);
    }
  }
  return groups;
}

// Against the links: each communicator's large ring-shaped calls held against its limiting hop.
JudgedShapes JudgeAgainstLinks(const Session& aligned, const std::map<uint64_t, Comm>& comms,
                               const Groups& groups, const RingOptions& options) {
  std::optional<std::map<std::string, NodeHardware>> hardware;  // read only when something counts
  NicUsers nic_users;
  std::map<uint64_t, std::optional<Hop>> limiting;
  JudgedShapes judged;
  for (const auto& [shape, members] : groups) {
    const auto& [shape_op, shape_bytes, shape_nranks] = shape;
    if (!HeldAgainstLink(shape_op, shape_bytes, shape_nranks, options)) continue;
    if (!hardware) {
      hardware = ReadNodeHardware(aligned);
      nic_users = CountNicUsers(comms);
    }
    for (const Measured& m : members) {
      if (m.alone_instances < options.min_instances) continue;  // too few free of other kernels
      auto [hop, fresh] = limiting.try_emplace(m.key);
      if (fresh) hop->second = LimitingHop(comms.at(m.key), *hardware, nic_users, options);
      if (!hop->second || hop->second->capacity.nominal_gbps <= 0) continue;
      Judged j;
      j.op = shape_op;
      j.bytes = shape_bytes;
      j.measured = m;
      j.verdict.hop = *hop->second;
      j.verdict.fraction = m.alone_busbw / hop->second->capacity.nominal_gbps;
      j.verdict.below = m.alone_busbw < hop->second->Floor();
      if (j.verdict.below) {
        j.cost =
            static_cast<DurationNs>(static_cast<double>(m.alone_total) *
                                    (1.0 - m.alone_busbw / hop->second->Floor()) * shape_nranks);
      }
      judged[m.key][{shape_op, shape_bytes}] = std::move(j);
    }
  }
  return judged;
}

// What sets a communicator apart from its peers: the links of transports no peer uses.
struct OddLinks {
  std::string text;  // "0<->1 over NET/IB, ..."
  std::vector<RankLink> links;
};

OddLinks FindOddLinks(const std::map<uint64_t, Comm>& comms, const Comm& comm, uint64_t key,
                      const std::vector<Measured>& members) {
  std::set<NcclTransportKind> peer_transports;
  for (const Measured& p : members) {
    if (p.key != key) {
      const auto& t = comms.at(p.key).transports;
      peer_transports.insert(t.begin(), t.end());
    }
  }
  OddLinks out;
  for (const auto& [pair, kind] : comm.pair_kind) {
    if (peer_transports.count(kind) || pair.first > pair.second) continue;
    const std::string name(NcclTransportKindName(kind));
    out.links.push_back({pair.first, pair.second, name});
    out.text += (out.text.empty() ? "" : ", ") + std::to_string(pair.first) + "<->" +
                std::to_string(pair.second) + " over " + name;
  }
  return out;
}

// The median of the peers' cross-node hops per ring loop (-1: no peer ring known).
double PeerMedianHops(const std::map<uint64_t, Comm>& comms, uint64_t key,
                      const std::vector<Measured>& members) {
  std::vector<double> peer_hops;
  for (const Measured& p : members) {
    const Comm& peer = comms.at(p.key);
    if (p.key != key && !peer.ring.empty()) {
      peer_hops.push_back(static_cast<double>(CrossNodeHops(peer).size()));
    }
  }
  return peer_hops.empty() ? -1 : Median(peer_hops);
}

// A communicator slower than its peers of the same shape, with what sets it apart: transports no
// peer uses, and a ring that leaves its nodes more often than theirs (it pays the network, or the
// CPU's PCIe root, more often per loop).
Finding ImbalancedRingFinding(const std::map<uint64_t, Comm>& comms, const Measured& m,
                              const ShapeKey& shape, const std::vector<Measured>& members,
                              size_t peers, double peer_median) {
  const Comm& comm = comms.at(m.key);
  const OddLinks odd = FindOddLinks(comms, comm, m.key, members);
  const std::vector<std::pair<int, int>> hops = CrossNodeHops(comm);
  const int cross_node_hops = static_cast<int>(hops.size());
  const double peer_median_hops = PeerMedianHops(comms, m.key, members);
  std::string hop_list;
  std::vector<RankLink> hop_links;
  for (const auto& [from, to] : hops) {
    hop_list += (hop_list.empty() ? "" : ", ") + std::to_string(from) + "->" + std::to_string(to) +
                " (" + comm.node_of.at(from) + "->" + comm.node_of.at(to) + ")";
    hop_links.push_back({from, to, ""});
  }
  Finding f;
  f.kind = FindingKind::kImbalancedRing;
  f.severity = Severity::kWarning;
  SetMembers(comm, &f);
  // Time it would have saved at its peers' bandwidth, on every member.
  const double slowdown = 1.0 - m.busbw / peer_median;
  f.cost_ns = static_cast<int64_t>(static_cast<double>(m.total) * slowdown * comm.nranks);
  f.confidence = std::min(0.95, 0.6 + 0.1 * static_cast<double>(peers));
  const auto& [op, bytes, nranks] = shape;
  f.summary = "NCCL communicator " + comm.id + " (ranks " + RankList(f.ranks) + ") runs " +
              std::string(NcclOpName(op)) + " of " + FormatBytes(bytes) + " at " +
              FormatDouble("%.1f", m.busbw) + " GB/s bus bandwidth; its " + std::to_string(peers) +
              " peer communicators reach " + FormatDouble("%.1f", peer_median) + " GB/s.";
  if (!odd.text.empty()) f.summary += " It connects " + odd.text + ", which no peer uses.";
  if (peer_median_hops >= 0 && cross_node_hops > peer_median_hops) {
    f.summary += " Its ring leaves a node " + std::to_string(cross_node_hops) +
                 " times per loop where its peers' rings do " +
                 FormatDouble("%g", peer_median_hops) + ": " + hop_list + ".";
  }
  f.comm_measure = CommMeasure{comm.id, op, bytes, m.busbw, static_cast<int>(peers), peer_median};
  f.ring = RingFigures{nranks,    m.instances,          TransportNames(comm.transports),
                       odd.links, std::move(hop_links), peer_median_hops};
  return f;
}

}  // namespace

std::vector<Finding> FindImbalancedRings(const Session& aligned, const RingOptions& options) {
  const std::map<uint64_t, Comm> comms = CollectCommunicators(aligned);
  const Groups groups = MeasureGroups(aligned, comms, options);
  JudgedShapes judged = JudgeAgainstLinks(aligned, comms, groups, options);

  std::vector<Finding> out;
  for (const auto& [shape, members] : groups) {
    if (static_cast<int>(members.size()) < options.min_peers + 1) continue;
    for (const Measured& m : members) {
      std::vector<double> peers;
      for (const Measured& p : members) {
        if (p.key != m.key) peers.push_back(p.busbw);
      }
      const double peer_median = Median(peers);
      const double spread = RobustSigma(peers) / peer_median;
      if (peer_median <= 0 || spread > options.max_peer_spread) continue;
      if (m.busbw >= options.slow_fraction * peer_median) continue;
      Finding f = ImbalancedRingFinding(comms, m, shape, members, peers.size(), peer_median);
      // The same shape against its link: one finding says both.
      const auto& [op, bytes, nranks] = shape;
      if (auto jc = judged.find(m.key); jc != judged.end()) {
        if (auto j = jc->second.find({op, bytes}); j != jc->second.end()) {
          AddCeilingEvidence(j->second.verdict, &f);
          if (j->second.verdict.below) f.summary += " " + CeilingSentence(j->second.verdict);
          j->second.reported = true;
        }
      }
      out.push_back(std::move(f));
    }
  }

  // Below their link with nothing to compare them with (or as slow as their peers).
  for (const auto& [key, shapes] : judged) {
    std::vector<const Judged*> below;
    for (const auto& [shape, j] : shapes) {
      if (j.verdict.below && !j.reported) below.push_back(&j);
    }
    if (!below.empty()) out.push_back(BelowCeilingFinding(comms.at(key), below));
  }
  return out;
}

}  // namespace rankscope
