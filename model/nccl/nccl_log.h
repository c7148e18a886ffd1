// What a NCCL_DEBUG=INFO log says about one or more processes: the communicators they built
// (identity, rings, trees, transports per peer) and every collective call with the algorithm
// and protocol NCCL chose for it. Plain data, no JSON: NcclLogParser fills it, the agent and
// `rankscope inspect nccl-log` read it. Fields NCCL did not print keep their defaults (-1,
// empty, kUnknown), so "not in the log" is never confused with a real zero.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "model/nccl/nccl_types.h"

namespace rankscope {

// Who printed a line: NCCL's prefix "host:pid:tid [cudaDev] NCCL INFO ...".
// cuda_dev is the device current on that thread when it logged (proxy threads print 0).
struct NcclLineSource {
  std::string host;
  int32_t pid = -1;
  int32_t tid = -1;
  int32_t cuda_dev = -1;
};

// One ring of one channel, from this rank's point of view.
struct NcclRing {
  int32_t channel = -1;
  int32_t prev = -1;  // "Ring %02d : prev -> me -> next", printed by every rank
  int32_t next = -1;
  // Full rank order "Channel %02d/%02d : r0 r1 ...". NCCL prints it on rank 0 only, and cuts
  // it short on large communicators (20 ranks in 2.18, 128 characters and "..." in 2.28).
  std::vector<int32_t> order;
  bool order_truncated = false;
};

// One tree of one channel: "Tree %d : up -> me -> d0/d1/d2" or the "Trees [c] d0/d1/d2->me->up"
// summary. -1 means no such neighbour.
struct NcclTree {
  int32_t channel = -1;
  int32_t up = -1;
  std::array<int32_t, 3> down = {-1, -1, -1};
};

enum class NcclTransportKind : uint8_t {
  kUnknown,
  kP2pCumem,     // "via P2P/CUMEM": cuMem-mapped peer memory (2.18+ default)
  kP2pMnnvl,     // "via P2P/MNNVL": cuMem over multi-node NVLink (2.20+)
  kP2pIpc,       // "via P2P/IPC": legacy CUDA IPC
  kP2pDirect,    // "via P2P/direct pointer": both GPUs in one process
  kP2pIndirect,  // "via P2P/indirect/r[dev]": through an intermediate GPU
  kShm,          // "via SHM/...": host shared memory
  kNetIb,        // "via NET/IB..." (also IB plugins such as "IBext")
  kNetSocket,    // "via NET/Socket"
  kNetOther,     // any other network plugin; see net_name
  kCollNet,      // "CollNet %02d/%d : r [send] via COLLNET/..."
};

// "P2P/CUMEM", "NET/IB", ... ; "unknown".
std::string_view NcclTransportKindName(NcclTransportKind kind);
// The inverse of NcclTransportKindName: kUnknown for a name it does not give.
NcclTransportKind ParseNcclTransportKindName(std::string_view name);

enum class NcclTransportDirection : uint8_t { kUnspecified, kSend, kReceive };

// One connection line, e.g. "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM". Data flows from
// from_rank to to_rank. P2P and SHM lines are printed by the sender only; NET lines by both
// ends, marked [send] or [receive].
struct NcclTransport {
  int32_t channel = -1;
  int32_t conn_index = -1;  // the "/%d" after the channel; SHM lines have none
  int32_t from_rank = -1;
  int32_t to_rank = -1;
  int32_t peer_rank = -1;  // the end that is not this communicator's rank
  // The bracketed device of each end as printed: nvmlDev from 2.19 on, busId (hex) in 2.18.
  std::string from_device;
  std::string to_device;
  NcclTransportDirection direction = NcclTransportDirection::kUnspecified;
  NcclTransportKind kind = NcclTransportKind::kUnknown;
  std::string via;       // everything after "via ", e.g. "NET/IB/0/GDRDMA", "SHM/direct/direct"
  std::string net_name;  // "IB", "Socket", plugin name; NET and CollNet only
  int32_t net_dev = -1;
  int32_t proxy_rank = -1;         // NET send through another rank's NIC (PXN): "NET/IB/0(3)"
  int32_t intermediate_rank = -1;  // P2P/indirect only
  bool gdrdma = false;             // "/GDRDMA": the NIC reads/writes GPU memory directly
  bool p2p_read = false;           // "/read"
  bool copy_engine = false;        // "/CE"
};

// One communicator on one rank, from "Init START/COMPLETE" and the lines that follow it.
struct NcclCommunicator {
  std::string comm;     // the ncclComm_t pointer as printed ("0x14bd9510"); unique per process
  std::string comm_id;  // hash of the unique id exactly as printed, e.g. "0x1e900aa5c8e42401"
  uint64_t comm_id_value = 0;
  // The same on every rank of the communicator, so it names the communicator across ranks.
  // Empty when the log never printed it: ncclCommSplit children in NCCL 2.23+ print
  // parent/color/key instead (match those across ranks by parent comm_id, color, split_count).
  bool has_comm_id = false;
  std::string init_function;  // "ncclCommInitRankConfig", "ncclCommSplit"; 2.21+ only
  std::string parent_comm;    // ncclCommSplit only
  int32_t split_color = -1;
  int32_t split_key = -1;
  int32_t split_count = -1;
  int32_t rank = -1;
  int32_t nranks = -1;
  int32_t cuda_dev = -1;
  int32_t nvml_dev = -1;  // not printed by 2.18.1
  std::string bus_id;     // busId as printed (hex, no "0x"): "60" is PCI 0000:00:06.0
  int32_t nnodes = -1;    // "nNodes", 2.20+
  int32_t local_ranks = -1;
  int32_t local_rank = -1;
  // Channels NCCL built for collectives ("%d coll channels"); the rings/trees below have one
  // entry per channel. Falls back to the ring count when that line is missing.
  int32_t nchannels = -1;
  std::vector<NcclRing> rings;            // by channel, ascending
  std::vector<NcclTree> trees;            // by channel, ascending
  std::vector<NcclTransport> transports;  // in log order; connections are set up lazily
  bool init_complete = false;
  bool destroyed = false;  // "Destroy COMPLETE" or "Abort COMPLETE"
  NcclLineSource source;   // the thread that initialised it
  int64_t init_line = 0;   // 1-based line of its first Init line
};

// One NCCL API call ("AllReduce: opCount 0 sendbuff ... count 67108864 datatype 7 ...") and the
// tuning line that NCCL printed for it.
struct NcclCollective {
  std::string comm;     // pointer as printed
  std::string comm_id;  // resolved through the communicator; empty if unknown
  uint64_t comm_id_value = 0;
  int32_t comm_index = -1;  // into NcclLog::communicators
  // Our own counter, per communicator in call order from 0: NCCL 2.28 prints opCount 0 on every
  // call, so nccl_op_count cannot name an instance. Collectives and point-to-point calls are
  // counted separately (Send/Recv are not issued symmetrically on every rank), so
  // (comm_id, seq) of a collective names the same instance on every rank.
  uint64_t seq = 0;
  uint64_t nccl_op_count = 0;  // as printed (hex)
  NcclOp op = NcclOp::kUnknown;
  std::string op_name;  // as printed
  uint64_t count = 0;   // elements, as passed to the API
  int32_t datatype_code = -1;
  NcclDataType datatype = NcclDataType::kUnknown;
  // count * element size: the buffer this rank passes. For AllReduce/Broadcast/Reduce/Send/
  // Recv that is the message size; for AllGather it is the per-rank send buffer (receive is
  // nranks times larger); for ReduceScatter the per-rank receive buffer (send is nranks times
  // larger); for AllToAll/Gather/Scatter the per-peer block. 0 if the datatype is unknown.
  // nccl-tests' "size" is NcclTestsSizeBytes() in bus_bandwidth.h.
  Bytes bytes = 0;
  int32_t root = -1;  // root rank; for Send/Recv the peer rank
  int32_t redop_code = -1;
  NcclRedOp redop = NcclRedOp::kUnknown;
  int32_t nranks = -1;  // "[nranks=%d]"
  std::string stream;   // pointer as printed; "(nil)" for the default stream
  // From the tuning line ("AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE
  // channel{Lo..Hi}={0..23}"). NCCL prints it on rank 0 of the communicator only (2.20+), so
  // other ranks' calls keep kUnknown here: take algo/proto from rank 0's log. This, not the
  // kernel name, is the protocol that ran (kernel_name.h says why).
  bool tuned = false;
  NcclAlgo algo = NcclAlgo::kUnknown;
  NcclProto proto = NcclProto::kUnknown;
  int32_t channel_lo = -1;  // 2.24+
  int32_t channel_hi = -1;
  int32_t nchannels = -1;  // channel_hi - channel_lo + 1
  NcclLineSource source;
  int64_t line = 0;  // 1-based
};

// A problem found while parsing, with the 1-based line it is on.
struct NcclLogProblem {
  int64_t line = 0;
  std::string message;
};

struct NcclLog {
  std::string nccl_version;                     // "2.28.9+cuda13.0"; the first one seen
  std::vector<NcclCommunicator> communicators;  // in order of first appearance
  std::vector<NcclCollective> collectives;      // in log order
  int64_t lines = 0;                            // lines seen, blank ones included
  int64_t skipped_lines = 0;           // non-blank lines not understood (most NCCL INFO lines are)
  int64_t unmatched_tuning_lines = 0;  // tuning lines with no call waiting for them
  // Lines that look like one of the formats above but carry malformed values, e.g. a call line
  // whose count is not a number. Never fatal: the line is skipped and counted here.
  std::vector<NcclLogProblem> errors;  // the first kMaxProblems
  int64_t error_count = 0;
  std::vector<NcclLogProblem> warnings;  // NCCL WARN lines, the first kMaxProblems
  int64_t warning_count = 0;
  // The input did not end with a newline, so its last line was cut short (a log still being
  // written, a crashed process). That line is counted in skipped_lines, never parsed.
  bool truncated_last_line = false;

  static constexpr size_t kMaxProblems = 16;
};

}  // namespace rankscope
