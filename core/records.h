// The event model: what one rank's process reports. These plain structs are produced by the
// inject library (decoded by the agent from the wire format in wire.h), carried to the
// coordinator in protobuf (proto/rankscope/v1), and consumed by the analyses. Times are on the
// producing host's CLOCK_MONOTONIC until the coordinator aligns them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/time.h"

namespace rankscope {

// MPI collective operations wrapped by the inject library. Values are part of the wire format:
// append only, never renumber.
enum class CollectiveOp : uint8_t {
  kUnknown = 0,
  kAllreduce = 1,
  kReduce = 2,
  kBcast = 3,
  kBarrier = 4,
  kAllgather = 5,
  kAllgatherv = 6,
  kAlltoall = 7,
  kAlltoallv = 8,
  kReduceScatter = 9,
  kReduceScatterBlock = 10,
  kGather = 11,
  kGatherv = 12,
  kScatter = 13,
  kScatterv = 14,
};
inline constexpr int kMaxCollectiveOp = 14;

// Stable lower-case name ("allreduce", "reduce_scatter_block", ...); "unknown" if out of range.
std::string_view CollectiveOpName(CollectiveOp op);

// How waiting works for an operation, in Scalasca's terms: NxN ops wait for the last arrival;
// rooted "one to all" ops (bcast, scatter) make the others wait for the root (Late Broadcast);
// "all to one" ops (reduce, gather) make the root wait for the last sender (Early Reduce).
enum class WaitPattern : uint8_t { kAllToAll, kRootToAll, kAllToRoot };
WaitPattern WaitPatternOf(CollectiveOp op);

// One collective call on one rank. comm_id is computed identically by every member of the
// communicator; seq counts this rank's collective calls on that communicator from 0, so
// (comm_id, seq) names one collective instance across ranks.
struct CollectiveRecord {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  CollectiveOp op = CollectiveOp::kUnknown;
  bool nonblocking = false;  // I-variant: enter = post time, exit = completion seen by Wait/Test
  int32_t root = -1;         // rank of the root in comm, -1 for unrooted ops
  int32_t comm_size = 0;
  int32_t comm_rank = 0;  // this process's rank in comm
  Bytes bytes = 0;        // payload this rank contributes (send side; recv side for gathers)
  TimeNs enter = 0;
  TimeNs exit = 0;
  uint32_t tid = 0;  // OS thread id of the caller
};

// Point-to-point operations. Values are part of the wire format.
enum class P2PKind : uint8_t {
  kSend = 1,
  kRecv = 2,
  kIsend = 3,
  kIrecv = 4,
  kWait = 5,  // completion of an Isend/Irecv (any Wait*/Test* that completed it)
};
std::string_view P2PKindName(P2PKind kind);

// One point-to-point call. peer is a rank in comm (MPI_ANY_SOURCE resolved from the status
// where known, else -1). For kWait records, enter/exit are the Wait/Test call that completed it
// and kind_completed says which request kind finished.
struct P2PRecord {
  P2PKind kind = P2PKind::kSend;
  P2PKind completed = P2PKind::kSend;  // for kWait: kIsend or kIrecv
  int32_t peer = -1;
  int32_t tag = 0;
  uint64_t comm_id = 0;
  Bytes bytes = 0;
  TimeNs enter = 0;
  TimeNs exit = 0;
  uint32_t tid = 0;
};

// A closed NVTX range (push/pop or start/end) on one thread.
struct RangeRecord {
  std::string domain;  // empty for the default domain
  std::string name;
  TimeNs start = 0;
  TimeNs end = 0;
  uint32_t tid = 0;
  uint32_t depth = 0;  // nesting depth for push/pop ranges (0 = outermost); start/end ranges 0
};

// An NVTX mark (instant event).
struct MarkRecord {
  std::string domain;
  std::string name;
  TimeNs time = 0;
  uint32_t tid = 0;
};

}  // namespace rankscope
