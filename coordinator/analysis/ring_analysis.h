// Imbalanced rings: an NCCL communicator whose collectives move data markedly slower than its
// peers' — communicators of the same size running the same operation on the same message size
// (the data-parallel groups of a job, or its tensor-parallel groups) — or than the links it
// crosses allow. Bus bandwidth comes from the GPU kernel times of the instances every member ran
// (last arrival to last completion, as nccl-tests times it).
//
// Against its peers (kind "imbalanced_ring"): the finding names the communicator's ranks and
// nodes, its bandwidth and its peers', the cost in time, and what in NCCL's log sets it apart: a
// transport its peers do not use (SHM or a network where they have P2P/NVLink) or more
// cross-node hops in its ring.
//
// Against its links (kind "below_link_ceiling", or folded into the peer finding of the same
// shape): every connection NCCL's log shows for the communicator (ring and tree channels) is
// put on the hardware under it — NVLink (links between the pair, or to the NVSwitch, x the
// architecture's per-link rate), PCIe (generation x width of the two GPUs' links, for P2P over
// PCIe and for SHM through the CPU), or the network (the NICs the log's NET lines name, at the
// speed the topology dump gives, shared among the communicators whose logs name the same NIC) —
// from each node's NCCL topology dump, with NVML filling what the
// dump leaves unknown. The slowest hop bounds the bus bandwidth (for a ring, busbw is what crosses
// each link in one direction). Calls with chunks of at least ceiling_min_chunk_bytes that reach
// less than the
// transport's healthy fraction of that ceiling are a finding; when any hop's ceiling is unknown,
// no verdict.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/intervals.h"
#include "core/time.h"

namespace rankscope {

struct RingOptions {
  double slow_fraction = 0.75;  // slower than this fraction of the peers' median busbw
  int min_instances = 5;        // per communicator and shape, timed on every member
  int min_peers = 2;            // other communicators of the same shape to compare with
  // The peers must agree: their spread (1.4826 MAD / median) below this, else no verdict.
  double max_peer_spread = 0.15;

  // Against the link ceiling: only calls whose chunk per rank (nccl-tests' size / ranks) is this
  // large are judged; below it latency and launch overhead, not the link, set the time. A ring of
  // n ranks moves the message in n chunks: 2xH200 reached 0.50 of NVLink at 16 MiB (8 MiB
  // chunks) and 0.60 at 64 MiB (32 MiB chunks), so larger rings need larger messages.
  Bytes ceiling_min_chunk_bytes = Bytes{32} << 20;
  // Only instances during which no member's GPU ran other (non-NCCL) kernels for more than this
  // fraction of the transfer are held against the link (at least min_instances of them).
  double ceiling_max_overlap = 0.1;
  // Below `fraction x nominal bandwidth` of the limiting link is a finding. Each fraction is
  // what a healthy NCCL reaches of that kind of link's nominal (line) rate, with a margin:
  // NVLink: line rate is 25 GB/s per link and direction (H100/H200: 18 links, 450 GB/s); NCCL's
  // protocol overhead (~20%, NVIDIA) leaves ~370 GB/s at best, and ring all-reduce on 2xH200
  // measured 271, 287 and 301 GB/s busbw at 64, 128 and 256 MiB (tests/fixtures/
  // h200x2-nccl-allreduce-bench): 0.60-0.67 of line rate, the ~65% efficiency of a healthy NCCL.
  // Half keeps those silent with a margin of 10 points and still flags a ring at a third.
  double nvlink_ceiling_fraction = 0.5;
  // P2P over PCIe: NCCL models a gen3 x16 link at 12 of its 15.75 GB/s (0.76); P2P through a
  // CPU's root complex reaches less on some CPUs.
  double pcie_ceiling_fraction = 0.4;
  // SHM: the GPUs' kernels write and read host memory across both PCIe links; healthy NCCL gets
  // 6-9 GB/s over gen3 x16 (0.38-0.57, NVIDIA's figures), and 2xH200 with P2P off measured 27-28
  // GB/s over gen5 x16 (0.44; tests/fixtures/h200x2-nccl-allreduce-shm), so only a quarter flags.
  double shm_ceiling_fraction = 0.25;
  // NET over InfiniBand/RoCE (or another plugin): NCCL reaches 0.8-0.95 of the NICs' line rate.
  double net_ceiling_fraction = 0.5;
  // NET/Socket: TCP through the hosts' stacks, which on NICs of 100 Gb/s and up often gives
  // NCCL a third of line rate without tuning (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD).
  double socket_ceiling_fraction = 0.25;
};

// What a rank's GPU ran beside its NCCL kernels: its compute kernels (not NCCL's) merged, from
// the records, or where its agent sent them only summed (RankData::compute_kernels_summed), the
// spans it sent, which are known only within its NCCL kernels and kNcclComputeMargin after each
// (model/gpu/nccl_compute.h), and nowhere when they are not exact.
struct ComputeBeside {
  Intervals spans;
  std::optional<Intervals> known;  // none: known everywhere
};
// Per world rank.
std::map<int, ComputeBeside> ComputeBesideNccl(const Session& aligned);
// Whether the rank's GPU ran other kernels for more than `more_than` of [begin, end), an NCCL
// instance's span; true too where that is not known (the instance is then not judged alone).
bool RanBesideNccl(const ComputeBeside& compute, TimeNs begin, TimeNs end, DurationNs more_than);

// One "imbalanced_ring" finding per communicator and shape slower than its peers (with the link
// ceiling's evidence when that shape was judged against it), and one "below_link_ceiling" finding
// per communicator whose shapes not already reported that way fall below their link ceiling.
std::vector<Finding> FindImbalancedRings(const Session& aligned, const RingOptions& options);

}  // namespace rankscope
