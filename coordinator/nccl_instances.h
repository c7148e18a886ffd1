// NCCL collectives as collective records: each rank's NCCL calls (from its debug log, in call
// order, numbered per communicator) joined with its NCCL kernels (from CUPTI, in GPU start
// order), so NCCL instances are matched across ranks by (communicator, sequence) and go through
// the same straggler analysis as MPI collectives. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "coordinator/session.h"

namespace rankscope {

struct NcclJoinStats {
  int ranks = 0;   // ranks with both an NCCL log and kernels
  int joined = 0;  // calls given a kernel
  int calls_without_kernel = 0;
  int kernels_without_call = 0;
  // Ranks whose GPU capture was windowed (marks "gpu capture on/off" in domain "rankscope"):
  // their kernels cover only part of the calls, which the log does not time, so the order join
  // cannot place them and those ranks are left out.
  int windowed_ranks = 0;
};

// The mark domain and names the inject library emits when the GPU capture window opens/closes.
inline constexpr char kCaptureMarkDomain[] = "rankscope";
inline constexpr char kGpuCaptureOnMark[] = "gpu capture on";
inline constexpr char kGpuCaptureOffMark[] = "gpu capture off";

// Appends a CollectiveRecord (source kNccl; enter/exit = kernel start/end) to each rank's
// collectives for every call it can join. The session should be aligned first, so kernel times
// compare across ranks. Point-to-point calls (Send/Recv) are not joined yet.
NcclJoinStats AddNcclCollectives(Session* session);

// One NCCL collective instance over the ranks whose call was joined with its kernel: the last
// arrival and the last completion. last_exit - last_enter is the transfer once everyone is in,
// which is what nccl-tests' timing measures (it syncs the ranks first).
struct NcclInstanceSpan {
  TimeNs last_enter = 0;
  TimeNs last_exit = 0;
  int members = 0;
};

// Per (communicator key, seq), from the session's NCCL collective records.
std::map<std::pair<uint64_t, uint64_t>, NcclInstanceSpan> NcclInstanceSpans(const Session& session);

// The 64-bit id every rank computes for an NCCL communicator from the id NCCL prints.
uint64_t NcclCommKey(const std::string& comm_id);

}  // namespace rankscope
