// Test-side generator of large synthetic sessions, for checking the analyses (and timing them) at
// sizes no machine here can run: a 3-D-parallel-style training loop on `ranks` ranks, packed
// `ranks_per_node` to a node, where every step each rank runs
//   step { data; compute; all-reduce on its node's tensor-parallel communicator;
//          all-reduce on its data-parallel communicator (the same local rank on every node) }
// with each collective releasing its members after the last one arrives, so a delay on one rank
// spreads to its node (tensor-parallel wait) and from there to every node (data-parallel wait),
// as in real jobs. Problems are planted by rank, node or communicator; the clocks can be left raw
// (per-node offsets and clock samples, for AlignSession to undo) or already aligned.
//
// The collectives are MPI collective records by default. With `nccl` they are what the agents
// upload for an NCCL job instead: each rank's NCCL log (its two communicators, with members,
// channel 0's ring and transports, and every call with its byte count) and its CUPTI activity
// (each call's kernel and the launch that queued it), with no collective records: as in the
// pipeline, AddNcclCollectives (after AlignSession) joins calls and kernels into them, and the
// ring analysis reads the bus bandwidth off those kernels.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "coordinator/session.h"
#include "core/time.h"

namespace rankscope::testing {

struct ScaleSim {
  int ranks = 64;
  int ranks_per_node = 8;
  int steps = 100;  // two collectives per step and rank
  DurationNs data = 2 * kNsPerMs;
  DurationNs compute = 20 * kNsPerMs;
  DurationNs jitter = 500 * kNsPerUs;      // uniform [0, jitter) added to data and to compute
  DurationNs collective = 1 * kNsPerMs;    // inside each call after its release (the transfer)
  DurationNs host_gap = 50 * kNsPerUs;     // between a collective's exit and the next thing
  std::map<int, DurationNs> slow_compute;  // planted extra compute per step, by rank
  std::map<int, DurationNs> slow_data;     // planted extra data loading per step, by rank
  bool raw_clocks = false;  // true: node n's clock is n seconds ahead, with clock samples
  uint64_t seed = 1;

  // NCCL logs and kernels instead of MPI collective records (see the file comment). The
  // tensor-parallel all-reduces move kNcclTensorParallelBytes, the data-parallel ones (a DDP
  // gradient bucket) kNcclDataParallelBytes: at the default `collective`, 350 GB/s and 40 GB/s
  // of bus bandwidth, what H200s reach over NVSwitch and over 400 Gb/s InfiniBand.
  bool nccl = false;
  // Each instance's transfer lasts `collective` times a factor drawn uniformly from
  // [1 - transfer_jitter, 1 + transfer_jitter), the same for all its members. 0: exactly.
  double transfer_jitter = 0;
  // A planted imbalanced ring: the data-parallel communicator of this local rank moves its data at
  // slow_ring_bandwidth times its peers' bandwidth (its transfers last collective /
  // slow_ring_bandwidth), so its members also start every next step that much later. -1: none.
  int slow_ring_local_rank = -1;
  double slow_ring_bandwidth = 0.5;
  // A planted PCIe-bound node: its tensor-parallel all-reduces move data at pcie_bound_bandwidth
  // times the other nodes' bandwidth (0.15: a ring over PCIe gen5 against NVSwitch's) and, with
  // `topology`, its NCCL topology dump shows its GPUs without NVLink (on PCIe switches only), so
  // its members also leave every tensor-parallel all-reduce that much later. -1: none.
  int pcie_bound_node = -1;
  double pcie_bound_bandwidth = 0.15;
  // With nccl: local rank 0 of every node carries the node's NCCL topology dump: GPUs in pairs
  // behind PCIe switches, each switch with a NIC, every GPU on the NVSwitch fabric (but on the
  // PCIe-bound node).
  bool topology = false;
  // A halo exchange, as stencil codes (LAMMPS, HPCC) run one (MPI sessions only): every step,
  // between compute and the tensor-parallel all-reduce, each rank swaps `halo_bytes` with its
  // left and right neighbours on a ring over MPI_COMM_WORLD: MPI_Irecv from each, MPI_Isend to
  // each (2 us per call), then one MPI_Waitall completing the four (four kWait records, as the
  // agents record it). A message arrives `halo_latency` after its send was posted, so a rank
  // that computed longer delays its neighbours' Waitall and, through it, their all-reduces.
  // 0: no halo exchange.
  Bytes halo_bytes = 0;
  DurationNs halo_latency = 20 * kNsPerUs;
};

inline constexpr Bytes kNcclTensorParallelBytes = Bytes{192} << 20;
inline constexpr Bytes kNcclDataParallelBytes = Bytes{20} << 20;

// The communicator ids the generator uses (the matcher keys instances by them).
uint64_t TensorParallelComm(int node);
uint64_t DataParallelComm(int local_rank);

// With nccl: the id NCCL prints for one of those communicators (its collective records are keyed
// by NcclCommKey of it, as every NCCL communicator's are).
std::string NcclCommIdOf(uint64_t comm);

// The tags of the halo exchange's messages: to the right neighbour, to the left one.
inline constexpr int kHaloTagRightward = 1;
inline constexpr int kHaloTagLeftward = 2;

// Nodes are named "node0", "node1", ...; rank r is on node r / ranks_per_node.
Session SimulateScale(const ScaleSim& sim);

}  // namespace rankscope::testing
