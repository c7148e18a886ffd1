// NCCL in one rank as the coordinator reads it: what of the rank's parsed debug logs (NcclLog)
// the analyses and reports use, typed (NCCL's operations, data types, algorithms, protocols and
// transports as the enums of nccl_types.h / nccl_log.h), so nothing downstream parses text the
// agent's parser already read. The agent makes it (AppendNcclLog), proto/convert.h carries it,
// the coordinator's session holds it and the session store keeps it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "model/nccl/nccl_log.h"
#include "model/nccl/nccl_types.h"

namespace rankscope {

// One connection the rank's log printed.
struct NcclTransportInfo {
  int channel = -1;
  int peer = -1;  // the other rank of the connection
  NcclTransportKind kind = NcclTransportKind::kUnknown;
  std::string via;  // as NCCL printed it, e.g. "NET/IB/0/GDRDMA"
  bool gdrdma = false;
  int net_dev = -1;  // NCCL's net device of a NET or CollNet connection ("NET/IB/0": 0)

  bool operator==(const NcclTransportInfo&) const = default;
};

struct NcclCommInfo {
  std::string comm_id;  // as NCCL prints it
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;
  int channels = -1;
  std::string bus_id;
  int cuda_dev = -1;
  std::vector<NcclTransportInfo> transports;
  std::vector<int> ring_order;  // channel 0, where this rank's log printed it

  bool operator==(const NcclCommInfo&) const = default;
};

struct NcclCallInfo {
  std::string comm_id;
  uint64_t seq = 0;  // per communicator, in call order
  NcclOp op = NcclOp::kUnknown;
  std::string op_name;  // as the log printed it, when op is kUnknown
  uint64_t count = 0;
  NcclDataType datatype = NcclDataType::kUnknown;
  Bytes bytes = 0;
  int root = -1;
  NcclAlgo algo = NcclAlgo::kUnknown;  // kUnknown when this rank's log had no tuning line
  NcclProto proto = NcclProto::kUnknown;
  int channels = -1;

  bool operator==(const NcclCallInfo&) const = default;
};

struct RankNccl {
  std::string version;
  std::string log_file;
  int64_t skipped_lines = 0;
  std::vector<std::string> problems;  // malformed lines, NCCL WARN lines (first few)
  std::vector<NcclCommInfo> communicators;
  std::vector<NcclCallInfo> calls;

  bool operator==(const RankNccl&) const = default;
};

// The call's operation as NCCL spells it ("AllReduce"), or as its log printed it when unknown.
std::string_view OpName(const NcclCallInfo& call);
// Whether the call's log had a tuning line (an algorithm and a protocol).
inline bool Tuned(const NcclCallInfo& call) { return call.algo != NcclAlgo::kUnknown; }
// The call's algorithm and protocol as NCCL names them ("RING", "SIMPLE"); "" when untuned.
inline std::string_view AlgoName(const NcclCallInfo& call) {
  return Tuned(call) ? NcclAlgoName(call.algo) : std::string_view();
}
inline std::string_view ProtoName(const NcclCallInfo& call) {
  return Tuned(call) ? NcclProtoName(call.proto) : std::string_view();
}

// Appends one parsed log file (`file` names it in log_file and in problems) to `out`.
void AppendNcclLog(const NcclLog& log, const std::string& file, RankNccl* out);
// Appends the next part of a summary sent in parts (proto/upload_chunk.h): the first part
// carries the version and file names, every part more problems, communicators and calls.
void AppendNcclPart(RankNccl part, RankNccl* out);

}  // namespace rankscope
