#include "model/nccl/rank_nccl.h"

#include <iterator>
#include <utility>

namespace rankscope {

std::string_view OpName(const NcclCallInfo& call) {
  return call.op == NcclOp::kUnknown ? std::string_view(call.op_name) : NcclOpName(call.op);
}

void AppendNcclLog(const NcclLog& log, const std::string& file, RankNccl* out) {
  if (out->version.empty()) out->version = log.nccl_version;
  if (!out->log_file.empty()) out->log_file += ",";
  out->log_file += file;
  out->skipped_lines += log.skipped_lines;
  for (const NcclCommunicator& c : log.communicators) {
    NcclCommInfo info;
    info.comm_id = c.comm_id.empty() ? c.comm : c.comm_id;
    info.rank = c.rank;
    info.nranks = c.nranks;
    info.nnodes = c.nnodes;
    info.channels = c.nchannels;
    info.bus_id = c.bus_id;
    info.cuda_dev = c.cuda_dev;
    for (const NcclTransport& t : c.transports) {
      info.transports.push_back({t.channel, t.peer_rank, t.kind, t.via, t.gdrdma, t.net_dev});
    }
    if (!c.rings.empty()) info.ring_order = c.rings.front().order;
    out->communicators.push_back(std::move(info));
  }
  for (const NcclCollective& c : log.collectives) {
    NcclCallInfo call;
    call.comm_id = c.comm_id.empty() ? c.comm : c.comm_id;
    call.seq = c.seq;
    call.op = c.op;
    if (c.op == NcclOp::kUnknown) call.op_name = c.op_name;
    call.count = c.count;
    call.datatype = c.datatype;
    call.bytes = c.bytes;
    call.root = c.root;
    if (c.tuned) {
      call.algo = c.algo;
      call.proto = c.proto;
    }
    call.channels = c.nchannels;
    out->calls.push_back(std::move(call));
  }
  for (const NcclLogProblem& e : log.errors) {
    out->problems.push_back(file + ":" + std::to_string(e.line) + ": " + e.message);
  }
  for (const NcclLogProblem& w : log.warnings) {
    out->problems.push_back(file + ":" + std::to_string(w.line) + ": NCCL WARN " + w.message);
  }
}

void AppendNcclPart(RankNccl part, RankNccl* out) {
  if (!part.version.empty()) out->version = std::move(part.version);
  if (!part.log_file.empty()) out->log_file = std::move(part.log_file);
  out->skipped_lines += part.skipped_lines;
  std::move(part.problems.begin(), part.problems.end(), std::back_inserter(out->problems));
  std::move(part.communicators.begin(), part.communicators.end(),
            std::back_inserter(out->communicators));
  std::move(part.calls.begin(), part.calls.end(), std::back_inserter(out->calls));
}

}  // namespace rankscope
