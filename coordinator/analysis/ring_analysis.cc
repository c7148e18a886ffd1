#include "coordinator/analysis/ring_analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "agent/nccl/bus_bandwidth.h"
#include "agent/nccl/nccl_types.h"
#include "coordinator/analysis/next_steps.h"
#include "coordinator/nccl_instances.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

// The nccl-tests binary that measures `op` the way the job calls it.
std::string NcclTestsBinary(NcclOp op) {
  switch (op) {
    case NcclOp::kAllGather:
      return "all_gather_perf";
    case NcclOp::kReduceScatter:
      return "reduce_scatter_perf";
    case NcclOp::kBroadcast:
      return "broadcast_perf";
    case NcclOp::kReduce:
      return "reduce_perf";
    case NcclOp::kAllToAll:
      return "alltoall_perf";
    case NcclOp::kGather:
      return "gather_perf";
    case NcclOp::kScatter:
      return "scatter_perf";
    case NcclOp::kSend:
    case NcclOp::kRecv:
    case NcclOp::kSendRecv:
      return "sendrecv_perf";
    default:
      return "all_reduce_perf";
  }
}

// One communicator as the ranks' logs and records describe it.
struct Comm {
  std::string id;  // as NCCL prints it
  int nranks = 0;
  std::map<int, int> world_of;                           // comm rank -> world rank
  std::map<int, std::string> node_of;                    // world rank -> node
  std::set<std::string> transports;                      // kinds used by any member
  std::map<std::pair<int, int>, std::string> pair_kind;  // (world, world) -> kind
  std::vector<int> ring;                                 // channel 0's ring, comm ranks
  // Per call shape (op, bytes): the sequence numbers of its calls.
  std::map<std::pair<std::string, Bytes>, std::set<uint64_t>> calls;
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
};

}  // namespace

std::vector<Finding> FindImbalancedRings(const Session& aligned, const RingOptions& options) {
  std::map<uint64_t, Comm> comms = CollectCommunicators(aligned);
  const auto spans = NcclInstanceSpans(aligned);
  // Peers: same op, message size and communicator size.
  std::map<std::tuple<std::string, Bytes, int>, std::vector<Measured>> groups;
  for (const auto& [key, comm] : comms) {
    for (const auto& [shape, seqs] : comm.calls) {
      const NcclOp op = ParseNcclOp(shape.first);
      std::vector<double> bw;
      Measured m{key};
      for (uint64_t seq : seqs) {
        auto found = spans.find({key, seq});
        if (found == spans.end()) continue;
        const NcclInstanceSpan& span = found->second;
        if (span.members != comm.nranks || span.last_exit <= span.last_enter) continue;
        const DurationNs d = span.last_exit - span.last_enter;
        bw.push_back(BusBandwidthGBps(op, NcclTestsSizeBytes(op, shape.second, comm.nranks), d,
                                      comm.nranks));
        m.total += d;
        ++m.instances;
      }
      if (m.instances < options.min_instances) continue;
      m.busbw = Median(bw);
      groups[{shape.first, shape.second, comm.nranks}].push_back(m);
    }
  }

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

      const Comm& comm = comms.at(m.key);
      // What sets it apart: transports no peer uses, and cross-node hops in its ring.
      std::set<std::string> peer_transports;
      for (const Measured& p : members) {
        if (p.key != m.key) {
          const auto& t = comms.at(p.key).transports;
          peer_transports.insert(t.begin(), t.end());
        }
      }
      std::string odd_pairs;
      nlohmann::json odd = nlohmann::json::array();
      for (const auto& [pair, kind] : comm.pair_kind) {
        if (peer_transports.count(kind) || pair.first > pair.second) continue;
        odd.push_back({{"from", pair.first}, {"to", pair.second}, {"transport", kind}});
        odd_pairs += (odd_pairs.empty() ? "" : ", ") + std::to_string(pair.first) + "<->" +
                     std::to_string(pair.second) + " over " + kind;
      }
      // Its ring against its peers': a ring that leaves its nodes more often than theirs pays
      // the network (or the CPU's PCIe root) more often per loop.
      const std::vector<std::pair<int, int>> hops = CrossNodeHops(comm);
      const int cross_node_hops = static_cast<int>(hops.size());
      std::vector<double> peer_hops;
      for (const Measured& p : members) {
        const Comm& peer = comms.at(p.key);
        if (p.key != m.key && !peer.ring.empty()) {
          peer_hops.push_back(static_cast<double>(CrossNodeHops(peer).size()));
        }
      }
      const double peer_median_hops = peer_hops.empty() ? -1 : Median(peer_hops);
      std::string hop_list;
      nlohmann::json hop_json = nlohmann::json::array();
      for (const auto& [from, to] : hops) {
        hop_list += (hop_list.empty() ? "" : ", ") + std::to_string(from) + "->" +
                    std::to_string(to) + " (" + comm.node_of.at(from) + "->" + comm.node_of.at(to) +
                    ")";
        hop_json.push_back({{"from", from}, {"to", to}});
      }
      Finding f;
      f.kind = "imbalanced_ring";
      f.severity = Severity::kWarning;
      std::set<std::string> nodes;
      for (const auto& [comm_rank, world] : comm.world_of) {
        f.ranks.push_back(world);
        nodes.insert(comm.node_of.at(world));
      }
      std::sort(f.ranks.begin(), f.ranks.end());
      f.nodes.assign(nodes.begin(), nodes.end());
      // Time it would have saved at its peers' bandwidth, on every member.
      const double slowdown = 1.0 - m.busbw / peer_median;
      f.cost_ns = static_cast<int64_t>(static_cast<double>(m.total) * slowdown * comm.nranks);
      f.confidence = std::min(0.95, 0.6 + 0.1 * static_cast<double>(peers.size()));
      const auto& [op, bytes, nranks] = shape;
      f.summary = "NCCL communicator " + comm.id + " (ranks " + RankList(f.ranks) + ") runs " + op +
                  " of " + FormatBytes(bytes) + " at " + FormatDouble("%.1f", m.busbw) +
                  " GB/s bus bandwidth; its " + std::to_string(peers.size()) +
                  " peer communicators reach " + FormatDouble("%.1f", peer_median) + " GB/s.";
      if (!odd_pairs.empty()) {
        f.summary += " It connects " + odd_pairs + ", which no peer uses.";
      }
      if (peer_median_hops >= 0 && cross_node_hops > peer_median_hops) {
        f.summary += " Its ring leaves a node " + std::to_string(cross_node_hops) +
                     " times per loop where its peers' rings do " +
                     FormatDouble("%g", peer_median_hops) + ": " + hop_list + ".";
      }
      f.evidence = {
          {"comm_id", comm.id},
          {"op", op},
          {"bytes", bytes},
          {"nranks", nranks},
          {"busbw_gbps", m.busbw},
          {"peer_median_busbw_gbps", peer_median},
          {"peers", static_cast<int>(peers.size())},
          {"instances", m.instances},
          {"transports", std::vector<std::string>(comm.transports.begin(), comm.transports.end())},
          {"odd_links", odd},
          {"ring_cross_node_hops", cross_node_hops},
          {"ring_cross_node_hop_list", hop_json},
          {"peer_median_ring_cross_node_hops", peer_median_hops}};
      const int first = f.ranks.front();
      f.next_steps.push_back(
          {"nvidia-smi", OnRankNode(aligned, first, {"nvidia-smi", "topo", "-m"}),
           "the link between these ranks' GPUs: NV# (NVLink) vs PHB/SYS (PCIe through the CPU)"});
      f.next_steps.push_back({"nccl-tests",
                              "mpirun -np " + std::to_string(nranks) + " -H " +
                                  [&] {
                                    std::string hosts;
                                    for (const std::string& n : f.nodes)
                                      hosts += (hosts.empty() ? "" : ",") + n;
                                    return hosts;
                                  }() +
                                  " " + NcclTestsBinary(ParseNcclOp(op)) + " -b " +
                                  std::to_string(bytes) + " -e " + std::to_string(bytes) + " -g 1",
                              "busbw on these ranks' nodes alone against the peers' " +
                                  FormatDouble("%.0f", peer_median) + " GB/s"});
      f.next_steps.push_back({"NCCL_DEBUG",
                              "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH " +
                                  (aligned.command.empty() ? "<the job's launch command>"
                                                           : ShellJoin(aligned.command)),
                              "the Channel/Ring lines and 'via' transports of this communicator"});
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace rankscope
