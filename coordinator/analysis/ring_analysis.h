// Imbalanced rings: an NCCL communicator whose collectives move data markedly slower than its
// peers' — communicators of the same size running the same operation on the same message size
// (the data-parallel groups of a job, or its tensor-parallel groups). Bus bandwidth comes from
// the GPU kernel times of the instances every member ran (last arrival to last completion, as
// nccl-tests times it). The finding names the communicator's ranks and nodes, its bandwidth and
// its peers', the cost in time, and what in NCCL's log sets it apart: a transport its peers do
// not use (SHM or a network where they have P2P/NVLink) or more cross-node hops in its ring.
#pragma once

#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

struct RingOptions {
  double slow_fraction = 0.75;  // slower than this fraction of the peers' median busbw
  int min_instances = 5;        // per communicator and shape, timed on every member
  int min_peers = 2;            // other communicators of the same shape to compare with
  // The peers must agree: their spread (1.4826 MAD / median) below this, else no verdict.
  double max_peer_spread = 0.15;
};

std::vector<Finding> FindImbalancedRings(const Session& aligned, const RingOptions& options);

}  // namespace rankscope
