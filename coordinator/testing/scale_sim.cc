#include "coordinator/testing/scale_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/comm_id.h"
#include "core/format.h"
#include "model/topology/pci_bus_id.h"

namespace rankscope::testing {

uint64_t TensorParallelComm(int node) { return 0x7000'0000'0000'0000ULL | node; }
uint64_t DataParallelComm(int local_rank) { return 0xd000'0000'0000'0000ULL | local_rank; }

std::string NcclCommIdOf(uint64_t comm) { return FormatHex(comm); }

namespace {

// The kernel NCCL 2.28 runs a float all-reduce in, as CUPTI names it (the 2xH200 fixtures'), and
// the driver call that launches it.
constexpr char kAllReduceKernel[] =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
constexpr char kLaunchFunction[] = "cuLaunchKernelEx";
constexpr DurationNs kLaunchDuration = 3 * kNsPerUs;  // how long the launch call takes
constexpr DurationNs kLaunchToKernel = 5 * kNsPerUs;  // host call -> kernel start on the GPU
// Each process group has its own stream, as PyTorch gives it.
constexpr uint32_t kTensorParallelStream = 13;
constexpr uint32_t kDataParallelStream = 14;
constexpr int kTensorParallelChannels = 24;
constexpr int kDataParallelChannels = 16;

DurationNs At(const std::map<int, DurationNs>& m, int rank) {
  auto it = m.find(rank);
  return it == m.end() ? 0 : it->second;
}

CollectiveRecord Allreduce(uint64_t comm, int step, int comm_size, int comm_rank, TimeNs enter,
                           TimeNs exit) {
  CollectiveRecord c;
  c.comm_id = comm;
  c.seq = static_cast<uint64_t>(step);
  c.op = CollectiveOp::kAllreduce;
  c.comm_size = comm_size;
  c.comm_rank = comm_rank;
  c.bytes = 1 << 20;
  c.enter = enter;
  c.exit = exit;
  c.tid = 7;
  return c;
}

// Rank r's halo exchange of one step (ScaleSim::halo_bytes): it posts at post[r], its Waitall
// ends once both neighbours' sends are in. Returns the Waitall's exit (coordinator time); the
// records get `offset` added (the rank's clock).
TimeNs AddHaloExchange(const ScaleSim& sim, const std::vector<TimeNs>& post, int r, TimeNs offset,
                       RankData* d) {
  constexpr DurationNs kCall = 2 * kNsPerUs;
  const int n = sim.ranks;
  const int left = (r + n - 1) % n;
  const int right = (r + 1) % n;
  const uint64_t world = WorldCommId(n);
  const TimeNs t = post[static_cast<size_t>(r)];
  auto record = [&](P2PKind kind, P2PKind completed, int peer, int tag, TimeNs enter, TimeNs exit) {
    P2PRecord p;
    p.kind = kind;
    p.completed = completed;
    p.peer = peer;
    p.world_peer = peer;
    p.tag = tag;
    p.comm_id = world;
    p.bytes = sim.halo_bytes;
    p.enter = enter + offset;
    p.exit = exit + offset;
    p.tid = 7;
    d->p2p.push_back(p);
  };
  // What arrives from the left was sent rightward (its third call), from the right leftward.
  record(P2PKind::kIrecv, P2PKind::kIrecv, left, kHaloTagRightward, t, t + kCall);
  record(P2PKind::kIrecv, P2PKind::kIrecv, right, kHaloTagLeftward, t + kCall, t + 2 * kCall);
  record(P2PKind::kIsend, P2PKind::kIsend, left, kHaloTagLeftward, t + 2 * kCall, t + 3 * kCall);
  record(P2PKind::kIsend, P2PKind::kIsend, right, kHaloTagRightward, t + 3 * kCall, t + 4 * kCall);
  const TimeNs wait_enter = t + 4 * kCall;
  const TimeNs from_left = post[static_cast<size_t>(left)] + 4 * kCall + sim.halo_latency;
  const TimeNs from_right = post[static_cast<size_t>(right)] + 3 * kCall + sim.halo_latency;
  const TimeNs wait_exit = std::max({wait_enter + kNsPerUs, from_left, from_right});
  record(P2PKind::kWait, P2PKind::kIrecv, left, kHaloTagRightward, wait_enter, wait_exit);
  record(P2PKind::kWait, P2PKind::kIrecv, right, kHaloTagLeftward, wait_enter, wait_exit);
  record(P2PKind::kWait, P2PKind::kIsend, left, kHaloTagLeftward, wait_enter, wait_exit);
  record(P2PKind::kWait, P2PKind::kIsend, right, kHaloTagRightward, wait_enter, wait_exit);
  return wait_exit;
}

// The PCI bus numbers of a node's devices: pair p of GPUs (2p, 2p+1) sits behind the PCIe switch
// on bus 0x10 + 4p, beside that switch's NIC.
int SwitchBus(int pair) { return 0x10 + 4 * pair; }
int GpuBus(int gpu) { return SwitchBus(gpu / 2) + 1 + gpu % 2; }
int NicBus(int pair) { return SwitchBus(pair) + 3; }

std::string BusId(int bus) {
  char out[32];
  std::snprintf(out, sizeof(out), "0000:%02x:00.0", bus);
  return out;
}

// An HGX H200 GPU's 18 NVLinks: how many go to each of the board's 4 NVSwitches.
constexpr std::pair<const char*, int> kNvSwitchLinks[] = {
    {"0000:05:00.0", 5}, {"0000:06:00.0", 4}, {"0000:07:00.0", 4}, {"0000:08:00.0", 5}};

// A node's NCCL topology dump (NCCL_TOPO_DUMP_FILE) with `gpus` H200s: in pairs behind PCIe gen5
// switches, each switch with a 400 Gb/s NIC, and, with `nvswitch`, 18 NVLinks from every GPU
// into the NVSwitch fabric (as the 8-GPU fixture in model/topology/testdata has them).
std::string NodeTopologyXml(int node, int gpus, bool nvswitch) {
  auto pci = [](int bus, const char* cls, const char* vendor, const char* device) {
    return "<pci busid=\"" + BusId(bus) + "\" class=\"" + cls + "\" vendor=\"" + vendor +
           "\" device=\"" + device + "\" subsystem_vendor=\"" + vendor +
           "\" subsystem_device=\"0x0001\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n";
  };
  std::string xml = "<system version=\"1\">\n  <cpu host_hash=\"" +
                    FormatHex(0x9e37'79b9'0000'0000ULL | static_cast<uint64_t>(node)) +
                    "\" numaid=\"0\" affinity=\"ffffffff\" arch=\"x86_64\" "
                    "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n";
  for (int pair = 0; 2 * pair < gpus; ++pair) {
    xml += "    " + pci(SwitchBus(pair), "0x060400", "0x1000", "0xc030");
    for (int g = 2 * pair; g < std::min(gpus, 2 * pair + 2); ++g) {
      xml += "      " + pci(GpuBus(g), "0x030200", "0x10de", "0x2335");
      xml += "        <gpu dev=\"" + std::to_string(g) + "\" sm=\"90\" rank=\"" +
             std::to_string(g) + "\" gdr=\"1\">\n";
      if (nvswitch) {
        for (const auto& [nvswitch_bus, links] : kNvSwitchLinks) {
          xml += "          <nvlink target=\"" + std::string(nvswitch_bus) + "\" count=\"" +
                 std::to_string(links) + "\" tclass=\"0x068000\"/>\n";
        }
      }
      xml += "        </gpu>\n      </pci>\n";
    }
    xml += "      " + pci(NicBus(pair), "0x020700", "0x15b3", "0x1021");
    xml += "        <nic>\n          <net name=\"mlx5_" + std::to_string(pair) + "\" dev=\"" +
           std::to_string(pair) +
           "\" speed=\"400000\" port=\"1\" latency=\"0.000000\" guid=\"0x0\" maxconn=\"131072\" "
           "gdr=\"1\" coll=\"0\"/>\n        </nic>\n      </pci>\n";
    xml += "    </pci>\n";
  }
  xml += "  </cpu>\n</system>\n";
  return xml;
}

// One rank's view of a communicator whose members form channel 0's ring in comm-rank order, as
// its NCCL log describes it: its init line, its "Channel 00/0 : a[..] -> b[..] via ..." line to
// the next member, and (comm rank 0's log) the ring.
NcclCommInfo CommInfo(const std::string& comm_id, int comm_rank, int size, int nnodes, int channels,
                      int local_rank, NcclTransportKind transport, const char* via, int net_dev,
                      bool gdrdma) {
  NcclCommInfo c;
  c.comm_id = comm_id;
  c.rank = comm_rank;
  c.nranks = size;
  c.nnodes = nnodes;
  c.channels = channels;
  c.bus_id = NcclShortBusId(BusId(GpuBus(local_rank)));  // as NCCL's init line prints it
  c.cuda_dev = local_rank;
  if (size > 1) {
    c.transports.push_back({0, (comm_rank + 1) % size, transport, via, gdrdma, net_dev});
  }
  if (comm_rank == 0) {
    for (int i = 0; i < size; ++i) c.ring_order.push_back(i);
  }
  return c;
}

// An NCCL all-reduce of `bytes` on `comm_id` as one rank's agent records it: the call in its NCCL
// log, the launch call and the kernel in its CUPTI activity. The host enters the call at
// `enter`; the kernel runs from kLaunchToKernel after it until kLaunchToKernel after `exit`.
void AddNcclAllreduce(const std::string& comm_id, int step, Bytes bytes, int channels,
                      uint32_t stream, TimeNs enter, TimeNs exit, uint32_t* correlation,
                      RankData* d) {
  NcclCallInfo call;
  call.comm_id = comm_id;
  call.seq = static_cast<uint64_t>(step);
  call.op = NcclOp::kAllReduce;
  call.count = static_cast<uint64_t>(bytes / 4);
  call.datatype = NcclDataType::kFloat32;
  call.bytes = bytes;
  call.root = 0;
  call.algo = NcclAlgo::kRing;
  call.proto = NcclProto::kSimple;
  call.channels = channels;
  d->nccl->calls.push_back(std::move(call));
  const uint32_t id = ++*correlation;
  GpuActivityRecord launch;
  launch.kind = GpuActivityKind::kRuntime;
  launch.correlation_id = id;
  launch.start = enter;
  launch.end = enter + kLaunchDuration;
  launch.tid = 7;
  launch.name = kLaunchFunction;
  d->gpu.push_back(std::move(launch));
  GpuActivityRecord kernel;
  kernel.kind = GpuActivityKind::kKernel;
  kernel.device = static_cast<uint32_t>(d->id.local_rank);
  kernel.context = 1;
  kernel.stream = stream;
  kernel.correlation_id = id;
  kernel.start = enter + kLaunchToKernel;
  kernel.end = exit + kLaunchToKernel;
  kernel.grid[0] = channels;
  kernel.grid[1] = kernel.grid[2] = 1;
  kernel.block[0] = 512;
  kernel.block[1] = kernel.block[2] = 1;
  kernel.name = kAllReduceKernel;
  d->gpu.push_back(std::move(kernel));
}

}  // namespace

Session SimulateScale(const ScaleSim& sim) {
  std::mt19937_64 rng(sim.seed);
  auto jitter = [&] {
    if (sim.jitter <= 0) return DurationNs{0};
    return std::uniform_int_distribution<DurationNs>(0, sim.jitter - 1)(rng);
  };
  // One instance's transfer, at `bandwidth` times the normal bandwidth.
  auto transfer = [&](double bandwidth) {
    double factor = 1.0 / bandwidth;
    if (sim.transfer_jitter > 0) {
      factor *= std::uniform_real_distribution<double>(1 - sim.transfer_jitter,
                                                       1 + sim.transfer_jitter)(rng);
    }
    return static_cast<DurationNs>(std::llround(static_cast<double>(sim.collective) * factor));
  };
  const int per_node = std::max(1, sim.ranks_per_node);
  const int nodes = (sim.ranks + per_node - 1) / per_node;
  auto node_of = [&](int r) { return r / per_node; };
  auto local_of = [&](int r) { return r % per_node; };
  auto tp_size = [&](int node) { return std::min(per_node, sim.ranks - node * per_node); };
  auto dp_size = [&](int local) { return nodes - (local >= tp_size(nodes - 1) ? 1 : 0); };
  // Each rank's clock: node n runs n seconds ahead of the coordinator when raw.
  auto offset = [&](int r) { return sim.raw_clocks ? node_of(r) * kNsPerSec : TimeNs{0}; };

  Session s;
  s.session_id = "scale";
  s.job_id = "4242";
  s.launcher = "srun";
  s.world_size = sim.ranks;
  s.command = {"srun", "-N", std::to_string(nodes), "python", "train.py"};
  s.aligned = !sim.raw_clocks;
  s.ranks.resize(static_cast<size_t>(sim.ranks));
  std::vector<std::string> tp_ids, dp_ids;  // with nccl, as NCCL prints them
  if (sim.nccl) {
    for (int n = 0; n < nodes; ++n) tp_ids.push_back(NcclCommIdOf(TensorParallelComm(n)));
    for (int l = 0; l < per_node; ++l) dp_ids.push_back(NcclCommIdOf(DataParallelComm(l)));
  }
  const TimeNs t0 = 1'000 * kNsPerSec;
  for (int r = 0; r < sim.ranks; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    d.id.rank = r;
    d.id.local_rank = local_of(r);
    d.id.world_size = sim.ranks;
    d.id.node = "node" + std::to_string(node_of(r));
    d.id.host = d.id.node;
    d.id.launcher = "srun";
    d.id.job_id = s.job_id;
    d.id.program_pid = 10'000 + r;
    d.id.program = {"python", "train.py"};
    d.finished = true;
    d.exit_code = 0;
    d.ranges.reserve(3 * static_cast<size_t>(sim.steps));
    if (sim.nccl) {
      const int node = node_of(r);
      const int local = local_of(r);
      RankNccl n;
      n.version = "2.28.3";
      n.log_file = "/tmp/nccl." + std::to_string(d.id.program_pid) + ".log";
      n.communicators.push_back(CommInfo(tp_ids[static_cast<size_t>(node)], local, tp_size(node), 1,
                                         kTensorParallelChannels, local,
                                         NcclTransportKind::kP2pCumem, "P2P/CUMEM", -1, false));
      n.communicators.push_back(CommInfo(dp_ids[static_cast<size_t>(local)], node, dp_size(local),
                                         dp_size(local), kDataParallelChannels, local,
                                         NcclTransportKind::kNetIb, "NET/IB/0/GDRDMA", 0, true));
      n.calls.reserve(2 * static_cast<size_t>(sim.steps));
      d.nccl = std::move(n);
      d.gpu.reserve(4 * static_cast<size_t>(sim.steps));
      if (sim.topology && local == 0) {
        d.topology_source = "/tmp/nccl-topo." + d.id.node + ".xml";
        d.topology_xml = NodeTopologyXml(node, tp_size(node), node != sim.pcie_bound_node);
      }
    } else {
      d.collectives.reserve(2 * static_cast<size_t>(sim.steps));
      if (sim.halo_bytes > 0) d.p2p.reserve(8 * static_cast<size_t>(sim.steps));
    }
    if (sim.raw_clocks) {
      // Symmetric 45 us round trips: the offset is recoverable to a few us.
      for (int i = 0; i < 32; ++i) {
        const TimeNs t1 = t0 - 2 * kNsPerSec + i * kNsPerMs + offset(r);
        d.clock_samples.push_back(
            {t1, t1 - offset(r) + 20'000, t1 - offset(r) + 25'000, t1 + 45'000});
      }
    } else {
      d.clock_fitted = true;
      d.clock.uncertainty_ns = 100 * kNsPerUs;
    }
  }

  std::vector<TimeNs> start(static_cast<size_t>(sim.ranks), t0);  // coordinator time
  std::vector<TimeNs> tp_enter(start.size()), tp_exit(start.size()), dp_enter(start.size());
  std::vector<TimeNs> last(static_cast<size_t>(std::max(nodes, per_node)));
  std::vector<DurationNs> tp_transfer(static_cast<size_t>(nodes));
  std::vector<DurationNs> dp_transfer(static_cast<size_t>(per_node));
  std::vector<uint32_t> correlation(sim.nccl ? start.size() : 0);  // per rank, as CUPTI counts
  for (int k = 0; k < sim.steps; ++k) {
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const TimeNs data_end = start[ur] + sim.data + jitter() + At(sim.slow_data, r);
      tp_enter[ur] = data_end + sim.compute + jitter() + At(sim.slow_compute, r);
      RankData& d = s.ranks[ur];
      d.ranges.push_back({"", "data", start[ur] + offset(r), data_end + offset(r), 7, 1});
      d.ranges.push_back({"", "compute", data_end + offset(r), tp_enter[ur] + offset(r), 7, 1});
    }
    if (sim.halo_bytes > 0 && !sim.nccl) {
      const std::vector<TimeNs> post = tp_enter;  // each rank posts when its compute ends
      for (int r = 0; r < sim.ranks; ++r) {
        const auto ur = static_cast<size_t>(r);
        tp_enter[ur] = AddHaloExchange(sim, post, r, offset(r), &s.ranks[ur]) + sim.host_gap;
      }
    }
    for (int n = 0; n < nodes; ++n) {
      tp_transfer[static_cast<size_t>(n)] =
          transfer(n == sim.pcie_bound_node ? sim.pcie_bound_bandwidth : 1.0);
    }
    for (int l = 0; l < per_node; ++l) {
      dp_transfer[static_cast<size_t>(l)] =
          transfer(l == sim.slow_ring_local_rank ? sim.slow_ring_bandwidth : 1.0);
    }
    // Tensor-parallel all-reduce: each node's ranks leave after the node's last arrival.
    std::fill(last.begin(), last.end(), 0);
    for (int r = 0; r < sim.ranks; ++r) {
      last[static_cast<size_t>(node_of(r))] =
          std::max(last[static_cast<size_t>(node_of(r))], tp_enter[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const auto node = static_cast<size_t>(node_of(r));
      tp_exit[ur] = last[node] + tp_transfer[node];
      dp_enter[ur] = tp_exit[ur] + sim.host_gap;
    }
    // Data-parallel all-reduce: the same local rank of every node.
    std::fill(last.begin(), last.end(), 0);
    for (int r = 0; r < sim.ranks; ++r) {
      last[static_cast<size_t>(local_of(r))] =
          std::max(last[static_cast<size_t>(local_of(r))], dp_enter[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < sim.ranks; ++r) {
      const auto ur = static_cast<size_t>(r);
      const auto local = static_cast<size_t>(local_of(r));
      const TimeNs dp_exit = last[local] + dp_transfer[local];
      const TimeNs off = offset(r);
      RankData& d = s.ranks[ur];
      if (sim.nccl) {
        AddNcclAllreduce(tp_ids[static_cast<size_t>(node_of(r))], k, kNcclTensorParallelBytes,
                         kTensorParallelChannels, kTensorParallelStream, tp_enter[ur] + off,
                         tp_exit[ur] + off, &correlation[ur], &d);
        AddNcclAllreduce(dp_ids[local], k, kNcclDataParallelBytes, kDataParallelChannels,
                         kDataParallelStream, dp_enter[ur] + off, dp_exit + off, &correlation[ur],
                         &d);
      } else {
        d.collectives.push_back(Allreduce(TensorParallelComm(node_of(r)), k, tp_size(node_of(r)),
                                          local_of(r), tp_enter[ur] + off, tp_exit[ur] + off));
        d.collectives.push_back(Allreduce(DataParallelComm(local_of(r)), k, dp_size(local_of(r)),
                                          node_of(r), dp_enter[ur] + off, dp_exit + off));
      }
      d.ranges.push_back({"", "step", start[ur] + off, dp_exit + off, 7, 0});
      start[ur] = dp_exit + sim.host_gap;
    }
  }
  s.start = t0;
  s.end = *std::max_element(start.begin(), start.end());
  return s;
}

}  // namespace rankscope::testing
