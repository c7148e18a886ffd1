#include "coordinator/nccl_instances.h"

#include <algorithm>
#include <vector>

#include "agent/nccl/kernel_name.h"
#include "agent/nccl/nccl_types.h"

namespace rankscope {
namespace {

CollectiveOp ToCollectiveOp(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce:
      return CollectiveOp::kAllreduce;
    case NcclOp::kAllGather:
      return CollectiveOp::kAllgather;
    case NcclOp::kReduceScatter:
      return CollectiveOp::kReduceScatter;
    case NcclOp::kBroadcast:
      return CollectiveOp::kBcast;
    case NcclOp::kReduce:
      return CollectiveOp::kReduce;
    case NcclOp::kAllToAll:
      return CollectiveOp::kAlltoall;
    case NcclOp::kGather:
      return CollectiveOp::kGather;
    case NcclOp::kScatter:
      return CollectiveOp::kScatter;
    default:
      return CollectiveOp::kUnknown;
  }
}

struct Kernel {
  const GpuActivityRecord* record;
  NcclKernel decoded;
};

}  // namespace

uint64_t NcclCommKey(const std::string& comm_id) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: the same on every rank, for the same text
  for (unsigned char c : comm_id) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

NcclJoinStats AddNcclCollectives(Session* session) {
  NcclJoinStats stats;
  for (RankData& rank : session->ranks) {
    if (!rank.nccl) continue;
    const bool windowed =
        std::any_of(rank.marks.begin(), rank.marks.end(), [](const MarkRecord& m) {
          return m.domain == kCaptureMarkDomain && m.name == kGpuCaptureOffMark;
        });
    if (windowed) {
      ++stats.windowed_ranks;
      continue;
    }
    std::vector<Kernel> kernels;
    for (const GpuActivityRecord& g : rank.gpu) {
      if (g.kind != GpuActivityKind::kKernel) continue;
      std::optional<NcclKernel> k = DecodeNcclKernel(g.name);
      if (!k || k->op == NcclOp::kUnknown || IsPointToPoint(k->op)) continue;
      kernels.push_back({&g, std::move(*k)});
    }
    if (kernels.empty()) continue;
    ++stats.ranks;
    std::stable_sort(kernels.begin(), kernels.end(), [](const Kernel& a, const Kernel& b) {
      return a.record->start < b.record->start;
    });

    // Calls and kernels come in the same order on a rank (one stream per communicator, NCCL
    // launches in call order); a kernel whose op or type does not fit the next call is one we
    // cannot place (another communicator's, or a call the log missed) and is skipped.
    size_t next_kernel = 0;
    for (const NcclCallInfo& call : rank.nccl->calls) {
      const NcclOp op = ParseNcclOp(call.op);
      if (op == NcclOp::kUnknown || IsPointToPoint(op)) continue;
      size_t k = next_kernel;
      while (k < kernels.size() && kernels[k].decoded.op != op) ++k;
      if (k == kernels.size()) {
        ++stats.calls_without_kernel;
        continue;
      }
      stats.kernels_without_call += static_cast<int>(k - next_kernel);
      next_kernel = k + 1;
      const NcclCommInfo* comm = nullptr;
      for (const NcclCommInfo& c : rank.nccl->communicators) {
        if (c.comm_id == call.comm_id) comm = &c;
      }
      CollectiveRecord r;
      r.comm_id = NcclCommKey(call.comm_id);
      r.seq = call.seq;
      r.op = ToCollectiveOp(op);
      r.root = call.root;
      r.comm_size = comm != nullptr ? comm->nranks : 0;
      r.comm_rank = comm != nullptr ? comm->rank : -1;
      r.bytes = call.bytes;
      r.enter = kernels[k].record->start;
      r.exit = kernels[k].record->end;
      r.tid = kernels[k].record->stream;
      r.source = CollectiveRecord::Source::kNccl;
      rank.collectives.push_back(r);
      ++stats.joined;
    }
    stats.kernels_without_call += static_cast<int>(kernels.size() - next_kernel);
  }
  return stats;
}

}  // namespace rankscope
