// NCCL collectives as collective records: each rank's NCCL calls (from its debug log, in call
// order, numbered per communicator) joined with its NCCL kernels (from CUPTI, in GPU start
// order), so NCCL instances are matched across ranks by (communicator, sequence) and go through
// the same straggler analysis as MPI collectives. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/session.h"

namespace rankscope {

struct NcclJoinStats {
  int ranks = 0;   // ranks with both an NCCL log and kernels
  int joined = 0;  // calls given a kernel
  int calls_without_kernel = 0;
  int kernels_without_call = 0;
};

// Appends a CollectiveRecord (source kNccl; enter/exit = kernel start/end) to each rank's
// collectives for every call it can join. The session should be aligned first, so kernel times
// compare across ranks. Point-to-point calls (Send/Recv) are not joined yet.
NcclJoinStats AddNcclCollectives(Session* session);

// The 64-bit id every rank computes for an NCCL communicator from the id NCCL prints.
uint64_t NcclCommKey(const std::string& comm_id);

}  // namespace rankscope
