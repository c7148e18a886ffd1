#include "coordinator/nccl_instances.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/nccl/kernel_name.h"
#include "model/nccl/nccl_types.h"

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

std::map<std::pair<uint64_t, uint64_t>, NcclInstanceSpan> NcclInstanceSpans(
    const Session& session) {
  std::map<std::pair<uint64_t, uint64_t>, NcclInstanceSpan> spans;
  for (const RankData& r : session.ranks) {
    for (const CollectiveRecord& c : r.collectives) {
      if (c.source != CollectiveRecord::Source::kNccl) continue;
      NcclInstanceSpan& s = spans[{c.comm_id, c.seq}];
      s.last_enter = s.members == 0 ? c.enter : std::max(s.last_enter, c.enter);
      s.last_exit = s.members == 0 ? c.exit : std::max(s.last_exit, c.exit);
      ++s.members;
    }
  }
  return spans;
}

uint64_t NcclCommKey(const std::string& comm_id) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: the same on every rank, for the same text
  for (unsigned char c : comm_id) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace {

// One call joined with one kernel (indices into the rank's calls and its NCCL kernels).
struct Pair {
  size_t call;
  size_t kernel;
};

// Joins calls (log order) with kernels (GPU start order) in order: a kernel whose op does not fit
// the next call is one we cannot place (another communicator's, or a call the log missed) and is
// skipped. Adds the unplaced calls and kernels to *stats.
std::vector<Pair> JoinInOrder(const std::vector<const NcclCallInfo*>& all_calls,
                              const std::vector<size_t>& calls,
                              const std::vector<Kernel>& all_kernels,
                              const std::vector<size_t>& kernels, NcclJoinStats* stats) {
  std::vector<Pair> pairs;
  size_t next = 0;
  for (size_t c : calls) {
    const NcclOp op = all_calls[c]->op;
    size_t k = next;
    while (k < kernels.size() && all_kernels[kernels[k]].decoded.op != op) ++k;
    if (k == kernels.size()) {
      ++stats->calls_without_kernel;
      continue;
    }
    stats->kernels_without_call += static_cast<int>(k - next);
    pairs.push_back({c, kernels[k]});
    next = k + 1;
  }
  stats->kernels_without_call += static_cast<int>(kernels.size() - next);
  return pairs;
}

std::vector<size_t> Indices(size_t n) {
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

// Which stream each communicator's kernels run on. NCCL runs a call's kernel on the stream the
// call was given; one stream may serve several communicators (their calls then reach it in log
// order), and kernels of different streams may run in another order than the calls were made,
// which is why the final join is per stream. Each communicator gets the stream whose kernels
// its calls fit best on their own (most joined, fewest left over on either side); a tie goes to
// the stream most of its calls joined in a first, global join.
std::map<std::string, uint32_t> StreamOfCommunicators(const std::vector<const NcclCallInfo*>& calls,
                                                      const std::vector<Kernel>& kernels,
                                                      const std::vector<Pair>& first_pass) {
  std::map<std::string, std::vector<size_t>> calls_of;
  for (size_t c = 0; c < calls.size(); ++c) calls_of[calls[c]->comm_id].push_back(c);
  std::map<uint32_t, std::vector<size_t>> kernels_on;
  for (size_t k = 0; k < kernels.size(); ++k) kernels_on[kernels[k].record->stream].push_back(k);
  std::map<std::string, std::map<uint32_t, int>> votes;
  for (const Pair& p : first_pass) {
    ++votes[calls[p.call]->comm_id][kernels[p.kernel].record->stream];
  }
  std::map<std::string, uint32_t> out;
  for (const auto& [comm, mine] : calls_of) {
    int best_score = 0;
    int best_votes = -1;
    bool found = false;
    uint32_t best = 0;
    for (const auto& [stream, on_stream] : kernels_on) {
      NcclJoinStats unplaced;
      const int joined =
          static_cast<int>(JoinInOrder(calls, mine, kernels, on_stream, &unplaced).size());
      if (joined == 0) continue;
      const int score = joined - unplaced.calls_without_kernel - unplaced.kernels_without_call;
      const int vote = votes[comm][stream];
      if (!found || score > best_score || (score == best_score && vote > best_votes)) {
        found = true;
        best_score = score;
        best_votes = vote;
        best = stream;
      }
    }
    if (found) out[comm] = best;
  }
  return out;
}

}  // namespace

NcclJoinStats AddNcclCollectives(Session* session) {
  NcclJoinStats stats;
  for (RankData& rank : session->ranks) {
    if (!rank.nccl) continue;
    const bool windowed =
        std::any_of(rank.marks.begin(), rank.marks.end(), [](const MarkRecord& m) {
          return m.domain == kCaptureMarkDomain &&
                 (m.name == kGpuCaptureOffMark || m.name == kGpuCaptureOnMark);
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
    // Launch order is call order: NCCL launches a call's kernel inside the call (or at the
    // group's end, in call order), and CUPTI numbers API calls (correlation ids) in the order
    // they are made, across threads and streams. Without ids (an old CUPTI), GPU start order,
    // which is call order only per stream: then the join goes per stream.
    const bool launch_order = std::all_of(kernels.begin(), kernels.end(), [](const Kernel& k) {
      return k.record->correlation_id != 0;
    });
    std::stable_sort(kernels.begin(), kernels.end(), [&](const Kernel& a, const Kernel& b) {
      return launch_order ? a.record->correlation_id < b.record->correlation_id
                          : a.record->start < b.record->start;
    });
    std::vector<const NcclCallInfo*> calls;
    for (const NcclCallInfo& call : rank.nccl->calls) {
      if (call.op != NcclOp::kUnknown && !IsPointToPoint(call.op)) calls.push_back(&call);
    }

    NcclJoinStats global;
    std::vector<Pair> pairs =
        JoinInOrder(calls, Indices(calls.size()), kernels, Indices(kernels.size()), &global);
    const std::map<std::string, uint32_t> stream_of =
        launch_order ? std::map<std::string, uint32_t>()
                     : StreamOfCommunicators(calls, kernels, pairs);
    std::set<uint32_t> streams;
    for (const auto& [comm, stream] : stream_of) streams.insert(stream);
    if (!launch_order && streams.size() > 1) {
      // Several streams: join each stream's kernels with the calls of its communicators.
      std::map<uint32_t, std::pair<std::vector<size_t>, std::vector<size_t>>> per_stream;
      NcclJoinStats by_stream;
      for (size_t c = 0; c < calls.size(); ++c) {
        auto it = stream_of.find(calls[c]->comm_id);
        if (it == stream_of.end()) {
          ++by_stream.calls_without_kernel;  // a communicator none of whose calls placed
        } else {
          per_stream[it->second].first.push_back(c);
        }
      }
      for (size_t k = 0; k < kernels.size(); ++k) {
        if (streams.count(kernels[k].record->stream)) {
          per_stream[kernels[k].record->stream].second.push_back(k);
        } else {
          ++by_stream.kernels_without_call;
        }
      }
      pairs.clear();
      for (const auto& [stream, work] : per_stream) {
        for (const Pair& p : JoinInOrder(calls, work.first, kernels, work.second, &by_stream)) {
          pairs.push_back(p);
        }
      }
      global = by_stream;
    }
    stats.calls_without_kernel += global.calls_without_kernel;
    stats.kernels_without_call += global.kernels_without_call;

    std::sort(pairs.begin(), pairs.end(),
              [](const Pair& a, const Pair& b) { return a.call < b.call; });
    // The launch call of each kernel (NCCL launches through cuLaunchKernelEx), by correlation id.
    std::unordered_map<uint32_t, TimeNs> launch_end;
    for (const GpuActivityRecord& g : rank.gpu) {
      if (g.kind == GpuActivityKind::kRuntime && g.correlation_id != 0) {
        launch_end.emplace(g.correlation_id, g.end);
      }
    }
    for (const Pair& p : pairs) {
      const NcclCallInfo& call = *calls[p.call];
      const GpuActivityRecord& kernel = *kernels[p.kernel].record;
      const NcclCommInfo* comm = nullptr;
      for (const NcclCommInfo& c : rank.nccl->communicators) {
        if (c.comm_id == call.comm_id) comm = &c;
      }
      CollectiveRecord r;
      r.comm_id = NcclCommKey(call.comm_id);
      r.seq = call.seq;
      r.op = ToCollectiveOp(call.op);
      r.root = call.root;
      r.comm_size = comm != nullptr ? comm->nranks : 0;
      r.comm_rank = comm != nullptr ? comm->rank : -1;
      r.bytes = call.bytes;
      r.enter = kernel.start;
      r.exit = kernel.end;
      r.tid = kernel.stream;
      if (auto it = launch_end.find(kernel.correlation_id);
          kernel.correlation_id != 0 && it != launch_end.end()) {
        r.launched = it->second;
      }
      r.source = CollectiveRecord::Source::kNccl;
      rank.collectives.push_back(r);
      ++stats.joined;
    }
  }
  return stats;
}

}  // namespace rankscope
