// The event model: what one rank's process reports. These plain structs are produced by the
// inject library (decoded by the agent from the wire format in wire.h), carried to the
// coordinator in protobuf (proto/rankscope/v1), and consumed by the analyses. Times are on the
// producing host's CLOCK_MONOTONIC until the coordinator aligns them.
#pragma once

#include <cstdint>
#include <iterator>
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
  kScan = 15,
  kExscan = 16,
  kAlltoallw = 17,
  kNeighborAllgather = 18,
  kNeighborAllgatherv = 19,
  kNeighborAlltoall = 20,
  kNeighborAlltoallv = 21,
  kNeighborAlltoallw = 22,
};
inline constexpr int kMaxCollectiveOp = 22;

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
  uint32_t tid = 0;  // OS thread id of the caller (for NCCL: the CUPTI stream id)
  // NCCL only: when the host call that launched its kernel returned (CUPTI's launch record with
  // the kernel's correlation id; mode all), 0 when unknown. enter - launched is the time the
  // kernel queued behind earlier work on its stream. Not on the wire.
  TimeNs launched = 0;
  // Where the record came from: the PMPI wrappers, or an NCCL call joined with its GPU kernel
  // by the coordinator (then enter/exit are the kernel's GPU start/end). Not on the wire.
  enum class Source : uint8_t { kMpi, kNccl };
  Source source = Source::kMpi;

  bool operator==(const CollectiveRecord&) const = default;
};

// Point-to-point operations. Values are part of the wire format: append only. MPI_Rsend and
// MPI_Irsend are reported as kSend / kIsend (a ready send waits like a standard one); the send
// modes whose waiting differs have kinds of their own.
enum class P2PKind : uint8_t {
  kSend = 1,
  kRecv = 2,
  kIsend = 3,
  kIrecv = 4,
  kWait = 5,    // completion of a non-blocking send/receive (any Wait*/Test* that completed it)
  kSsend = 6,   // MPI_Ssend: completes only once the receive has started (can always wait)
  kBsend = 7,   // MPI_Bsend: copies into the attached buffer and returns (never waits)
  kIssend = 8,  // MPI_Issend: its Wait can always wait for the receiver
  kIbsend = 9,  // MPI_Ibsend: its Wait never waits for the receiver
  // A receive-side wait for a message from `peer` (MPI_Probe, MPI_Mprobe, or a loop of
  // MPI_Iprobe/MPI_Improbe ending in success: exit = the successful call's exit, length = the
  // time spent inside those probe calls). peer, tag and bytes are the message's.
  kProbe = 10,
};
inline constexpr int kMaxP2PKind = 10;
std::string_view P2PKindName(P2PKind kind);

// True for the kinds that name a send (blocking or posted), false for receives, probes, waits.
constexpr bool IsSendKind(P2PKind kind) {
  return kind == P2PKind::kSend || kind == P2PKind::kIsend || kind == P2PKind::kSsend ||
         kind == P2PKind::kBsend || kind == P2PKind::kIssend || kind == P2PKind::kIbsend;
}

// Marks P2PRecord::world_peer as not known (records made before it existed, or a peer that is
// MPI_PROC_NULL / outside MPI_COMM_WORLD).
inline constexpr int32_t kUnknownWorldPeer = -1;

// One point-to-point call. peer is a rank in comm (MPI_ANY_SOURCE resolved from the status
// where known, else -1); world_peer is the same process as a rank of MPI_COMM_WORLD, translated
// by the inject library when the communicator was first seen, so the coordinator can place
// peers on communicators that carry no collectives. For kWait records, enter/exit are the
// Wait/Test call that completed it (enter pulled back by the time earlier Test/Wait calls spent
// on the same request) and `completed` says which request kind finished.
//
// spin_start (kWait and kProbe records) is where the thread's last unbroken run of polling
// began: the enter of the first of the calls that completed nothing (MPI_Test*, MPI_Iprobe)
// and came straight before the completing call, each within a few microseconds of the one
// before and with no other recorded MPI call between; the completing call's own enter when
// none did. Unlike `enter` it never reaches back over the thread's other calls, so a rank's
// calls in the order of their spin_start (enter for the other kinds) do not overlap. 0: not
// recorded (older agents, the other kinds).
struct P2PRecord {
  P2PKind kind = P2PKind::kSend;
  P2PKind completed = P2PKind::kSend;  // for kWait: kIsend, kIrecv, kIssend or kIbsend
  int32_t peer = -1;
  int32_t tag = 0;
  uint64_t comm_id = 0;
  Bytes bytes = 0;
  TimeNs enter = 0;
  TimeNs exit = 0;
  uint32_t tid = 0;
  int32_t world_peer = kUnknownWorldPeer;
  TimeNs spin_start = 0;

  bool operator==(const P2PRecord&) const = default;
};

// Where a rank's chain of calls places a point-to-point record: its spin_start where recorded,
// else its enter.
inline TimeNs ChainEnter(const P2PRecord& r) { return r.spin_start != 0 ? r.spin_start : r.enter; }

// MPI calls the analyses do not interpret (MPI-IO, one-sided synchronisation, persistent
// request starts, ...), recorded so the coordinator can tell per rank how much time was spent
// inside MPI and in how many calls it could not read. Values are part of the wire format:
// append only, never renumber.
enum class MpiCall : uint16_t {
  kUnknown = 0,
  kFileRead = 1,
  kFileReadAt = 2,
  kFileReadAll = 3,
  kFileReadAtAll = 4,
  kFileWrite = 5,
  kFileWriteAt = 6,
  kFileWriteAll = 7,
  kFileWriteAtAll = 8,
  kWinFence = 9,
  kWinLock = 10,
  kWinUnlock = 11,
  kWinLockAll = 12,
  kWinUnlockAll = 13,
  kWinFlush = 14,
  kWinFlushAll = 15,
  kWinFlushLocal = 16,
  kWinFlushLocalAll = 17,
  kWinStart = 18,
  kWinComplete = 19,
  kWinPost = 20,
  kWinWait = 21,
  kStart = 22,
  kStartall = 23,
  // MPI_Init or MPI_Init_thread: every rank's first MPI call, which returns once all have
  // arrived (the launcher's fence). The blame model starts each chain at the session's start
  // with it, so a rank's start-up (exec, libraries, work before MPI_Init) is its own work.
  kInit = 24,
};
inline constexpr int kMaxMpiCall = 24;

// The MPI function's name ("MPI_File_read_at_all", "MPI_Win_fence", ...); "MPI_unknown" if out
// of range.
std::string_view MpiCallName(MpiCall call);

// One call of an MPI function in MpiCall. comm_id is the communicator's id (comm_registry) when
// the call names one cheaply, else 0; peer is the target rank (in the window's group) for
// one-sided calls that have one, else -1; bytes is count x type size for MPI-IO, else 0.
struct MpiCallRecord {
  MpiCall call = MpiCall::kUnknown;
  uint64_t comm_id = 0;
  int32_t peer = -1;
  Bytes bytes = 0;
  TimeNs enter = 0;
  TimeNs exit = 0;
  uint32_t tid = 0;

  bool operator==(const MpiCallRecord&) const = default;
};

// A closed NVTX range (push/pop or start/end) on one thread.
struct RangeRecord {
  std::string domain;  // empty for the default domain
  std::string name;
  TimeNs start = 0;
  TimeNs end = 0;
  uint32_t tid = 0;
  uint32_t depth = 0;  // nesting depth for push/pop ranges (0 = outermost); start/end ranges 0

  bool operator==(const RangeRecord&) const = default;
};

// An NVTX mark (instant event).
struct MarkRecord {
  std::string domain;
  std::string name;
  TimeNs time = 0;
  uint32_t tid = 0;
};

// GPU activity kinds captured through CUPTI. Values are part of the wire format.
enum class GpuActivityKind : uint8_t {
  kKernel = 1,   // a kernel execution (CUPTI CONCURRENT_KERNEL)
  kMemcpy = 2,   // a memory copy (CUPTI MEMCPY)
  kMemset = 3,   // a memset (CUPTI MEMSET)
  kSync = 4,     // a host wait on the GPU: stream/context/event synchronize (CUPTI SYNCHRONIZATION)
  kRuntime = 5,  // a CUDA runtime API call on a host thread (CUPTI RUNTIME)
};
inline constexpr int kMaxGpuActivityKind = 5;

// Stable lower-case name ("kernel", "memcpy", "memset", "sync", "runtime"); "unknown" otherwise.
constexpr std::string_view GpuActivityKindName(GpuActivityKind kind) {
  switch (kind) {
    case GpuActivityKind::kKernel:
      return "kernel";
    case GpuActivityKind::kMemcpy:
      return "memcpy";
    case GpuActivityKind::kMemset:
      return "memset";
    case GpuActivityKind::kSync:
      return "sync";
    case GpuActivityKind::kRuntime:
      return "runtime";
  }
  return "unknown";
}

// CUPTI's CUpti_ActivityMemcpyKind as Nsight Systems names it ("HtoD", "DtoH", "DtoD", "PtoP",
// ...); "copy" for a value CUPTI may add later.
constexpr std::string_view MemcpyKindName(uint8_t copy_kind) {
  constexpr std::string_view kNames[] = {"copy", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                         "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : kNames[0];
}

// CUPTI's CUpti_ActivitySynchronizationType as the host call that waited.
constexpr std::string_view SyncKindName(uint8_t sync_kind) {
  switch (sync_kind) {
    case 1:
      return "cudaEventSynchronize";
    case 2:
      return "cudaStreamWaitEvent";
    case 3:
      return "cudaStreamSynchronize";
    case 4:
      return "cudaDeviceSynchronize";
  }
  return "synchronize";
}

// Marks `device` as not known: CUPTI ties synchronization and runtime records to no device.
inline constexpr uint32_t kNoDevice = UINT32_MAX;

// One GPU activity on one rank, as CUPTI reports it. start/end are on the host's
// CLOCK_MONOTONIC (the inject library points CUPTI's timestamp callback at it), so kernels line
// up with NVTX ranges and MPI calls from the same process. correlation_id joins a kernel, copy or
// memset with the runtime call that launched it (launch latency = kernel start - call end).
struct GpuActivityRecord {
  GpuActivityKind kind = GpuActivityKind::kKernel;
  uint32_t device = kNoDevice;  // CUDA device ordinal
  uint32_t context = 0;         // CUPTI context id (0 for kRuntime)
  uint32_t stream = 0;          // CUPTI stream id (0 for kRuntime and context-wide syncs)
  uint32_t correlation_id = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  Bytes bytes = 0;        // kMemcpy, kMemset
  uint8_t copy_kind = 0;  // kMemcpy: CUPTI's CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD...)
  uint8_t sync_kind = 0;  // kSync: CUPTI's CUpti_ActivitySynchronizationType (3 stream, 4 ctx)
  // kRuntime: the calling thread's OS id (gettid), as NVTX and MPI records name threads, when
  // CUPTI supports cuptiSetThreadIdType; else CUPTI's default id (pthread_self() cut to 32 bits).
  // 0 for the other kinds.
  uint32_t tid = 0;
  int32_t grid[3] = {0, 0, 0};   // kKernel
  int32_t block[3] = {0, 0, 0};  // kKernel
  // kKernel: the kernel's name as CUPTI gives it (mangled, e.g. "_Z10probe_axpyifPKfPf");
  // kRuntime: the runtime function without CUPTI's version suffix ("cudaLaunchKernel").
  // Empty for the other kinds.
  std::string name;

  bool operator==(const GpuActivityRecord&) const = default;
};

}  // namespace rankscope
