// Test-side generator of large synthetic sessions, for checking the analyses (and timing them) at
// sizes no machine here can run: a 3-D-parallel-style training loop on `ranks` ranks, packed
// `ranks_per_node` to a node, where every step each rank runs
//   step { data; compute; all-reduce on its node's tensor-parallel communicator;
//          all-reduce on its data-parallel communicator (the same local rank on every node) }
// with each collective releasing its members after the last one arrives, so a delay on one rank
// spreads to its node (tensor-parallel wait) and from there to every node (data-parallel wait),
// as in real jobs. Problems are planted by rank; the clocks can be left raw (per-node offsets and
// clock samples, for AlignSession to undo) or already aligned.
#pragma once

#include <cstdint>
#include <map>

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
  DurationNs collective = 1 * kNsPerMs;    // inside each call after its release
  DurationNs host_gap = 50 * kNsPerUs;     // between a collective's exit and the next thing
  std::map<int, DurationNs> slow_compute;  // planted extra compute per step, by rank
  std::map<int, DurationNs> slow_data;     // planted extra data loading per step, by rank
  bool raw_clocks = false;  // true: node n's clock is n seconds ahead, with clock samples
  uint64_t seed = 1;
};

// The communicator ids the generator uses (the matcher keys instances by them).
uint64_t TensorParallelComm(int node);
uint64_t DataParallelComm(int local_rank);

// Nodes are named "node0", "node1", ...; rank r is on node r / ranks_per_node.
Session SimulateScale(const ScaleSim& sim);

}  // namespace rankscope::testing
