#include "coordinator/report/trace_json.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "coordinator/p2p_matcher.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/json_writer.h"
#include "core/format.h"
#include "core/records.h"

namespace rankscope {

namespace {

// Synthetic tracks (for slices that would overlap improperly) get tids far above any Linux
// tid (pid_max is at most 2^22), so they never collide with a real thread. GPU streams get
// their own range above those.
constexpr int64_t kSyntheticTidBase = 1'000'000'000;
constexpr int64_t kGpuTidBase = 1'500'000'000;

std::string P2PFunctionName(P2PKind kind) {
  switch (kind) {
    case P2PKind::kSend:
      return "MPI_Send";
    case P2PKind::kRecv:
      return "MPI_Recv";
    case P2PKind::kIsend:
      return "MPI_Isend";
    case P2PKind::kIrecv:
      return "MPI_Irecv";
    case P2PKind::kWait:
      return "MPI_Wait";
    case P2PKind::kSsend:
      return "MPI_Ssend";
    case P2PKind::kBsend:
      return "MPI_Bsend";
    case P2PKind::kIssend:
      return "MPI_Issend";
    case P2PKind::kIbsend:
      return "MPI_Ibsend";
    case P2PKind::kProbe:
      return "MPI_Probe";
  }
  return "MPI_p2p";
}

// "probe_axpy(int, float const*, float*)" for "_Z10probe_axpyiPKfPf"; names that do not
// demangle (C kernels, already readable names) stay as they are. Cached: a GPU job launches
// the same few hundred kernels millions of times.
class Demangler {
 public:
  const std::string& operator()(const std::string& mangled) {
    auto [it, inserted] = cache_.try_emplace(mangled);
    if (inserted) it->second = Demangle(mangled);
    return it->second;
  }

 private:
  std::unordered_map<std::string, std::string> cache_;
};

enum class SliceType : uint8_t { kRange, kCollective, kP2P, kGpu };

// One "X" slice before it is placed on a track: where it comes from (a record of the rank,
// by type and index) and the keys that order it. Sorting puts parents before their children:
// earlier start first, then longer first, then by kind_order, since an NVTX range that starts
// and ends with an MPI call is the user's label around it, and an MPI or NCCL call encloses the
// CUDA calls and kernels it makes.
struct Slice {
  TimeNs start = 0;
  TimeNs end = 0;      // >= start
  int kind_order = 0;  // 0 NVTX range, 1 MPI/NCCL call, 2 CUDA API call or GPU activity
  size_t input_order = 0;
  SliceType type = SliceType::kRange;
  size_t index = 0;  // into the rank's vector for `type`

  auto SortKey() const { return std::make_tuple(start, -(end - start), kind_order, input_order); }
};

// Places slices of one track on the fewest lanes such that slices on each lane nest properly.
// Lane 0 is the track itself. Returns the lane of each slice (same order as `slices`, which
// must already be sorted by SortKey).
std::vector<int> AssignLanes(const std::vector<Slice>& slices) {
  std::vector<std::vector<TimeNs>> open_ends;  // per lane: ends of the open slices, a stack
  std::vector<int> lanes(slices.size(), 0);
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    size_t lane = 0;
    for (; lane < open_ends.size(); ++lane) {
      std::vector<TimeNs>& stack = open_ends[lane];
      while (!stack.empty() && stack.back() <= s.start) stack.pop_back();
      if (stack.empty() || s.end <= stack.back()) break;  // nests inside the innermost open one
    }
    if (lane == open_ends.size()) open_ends.emplace_back();
    open_ends[lane].push_back(s.end);
    lanes[i] = static_cast<int>(lane);
  }
  return lanes;
}

// Where a slice ended up: its track and extent (for flow arrows that bind to it).
struct Placed {
  int64_t tid = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  bool valid = false;
};

// A host thread (gpu == false, id = OS tid) or a GPU stream (gpu == true, id = CUPTI stream id;
// 0 holds context-wide synchronizations).
struct TrackKey {
  bool gpu = false;
  uint32_t id = 0;
  bool operator<(const TrackKey& o) const { return std::tie(gpu, id) < std::tie(o.gpu, o.id); }
};

// Calls fn(start, end) for every record of the session that becomes a slice or an instant.
template <typename Fn>
void ForEachEvent(const Session& session, Fn fn) {
  for (const RankData& r : session.ranks) {
    for (const RangeRecord& x : r.ranges) fn(x.start, x.end);
    for (const CollectiveRecord& x : r.collectives) fn(x.enter, x.exit);
    for (const P2PRecord& x : r.p2p) fn(x.enter, x.exit);
    for (const GpuActivityRecord& x : r.gpu) fn(x.start, x.end);
    for (const MarkRecord& x : r.marks) fn(x.time, x.time);
  }
}

// What a TraceWindow keeps, as disjoint time intervals in order (kept steps' spans may overlap
// when the ranks run out of step): a record is written when it overlaps one of them.
class KeptSpans {
 public:
  // nullptr: everything is kept.
  explicit KeptSpans(const TraceWindow* window) {
    if (window == nullptr) return;
    all_ = false;
    spans_ = KeptIntervals(*window);
  }

  bool Overlaps(TimeNs start, TimeNs end) const {
    if (all_) return true;
    // The first interval that does not end before the record starts.
    auto it = std::lower_bound(spans_.begin(), spans_.end(), start,
                               [](const auto& span, TimeNs t) { return span.second < t; });
    return it != spans_.end() && it->first <= std::max(start, end);
  }

 private:
  bool all_ = true;
  Intervals spans_;
};

class TraceBuilder {
 public:
  TraceBuilder(const Session& session, std::string* out, const std::optional<TraceWindow>& window)
      : session_(session),
        origin_(session.start),
        w_(out),
        window_(window),
        kept_(window ? &*window : nullptr) {}

  void SpillTo(const std::function<bool(std::string_view)>& sink, size_t piece) {
    w_.SpillTo(sink, piece);
  }

  // False when a sink given to SpillTo failed (then the rest was not sent).
  bool Build(const SessionMatches& matches) {
    w_.BeginObject().Key("traceEvents").BeginArray();
    std::map<int, const RankData*> ranks;  // a duplicated rank: its first copy wins
    for (const RankData& rank : session_.ranks) ranks.emplace(rank.id.rank, &rank);
    for (const auto& [id, rank] : ranks) EmitRank(*rank);
    EmitCollectiveFlows(ranks, matches.collectives);
    EmitMessageFlows(matches.messages);
    w_.EndArray();
    w_.Member("displayTimeUnit", "ns");
    w_.Key("metadata").BeginObject();
    w_.Member("rankscope_session", session_.session_id).Member("job_id", session_.job_id);
    w_.Member("start_ns", static_cast<int64_t>(session_.start)).Member("aligned", session_.aligned);
    if (window_) {
      w_.Key("window").BeginObject();
      w_.Member("start_ns", static_cast<int64_t>(window_->start));
      w_.Member("end_ns", static_cast<int64_t>(window_->end));
      w_.Member("events_total", static_cast<uint64_t>(window_->events_total));
      w_.Member("events_kept", static_cast<uint64_t>(window_->events_kept));
      if (!window_->steps.empty() || window_->steps_total > 0) {
        w_.Member("steps_total", static_cast<uint64_t>(window_->steps_total));
        w_.Key("steps_kept").BeginArray();
        for (const TraceStep& step : window_->steps) w_.Int(static_cast<int64_t>(step.index));
        w_.EndArray();
      }
      if (window_->worst_step) {
        w_.Member("step_with_most_waiting", static_cast<uint64_t>(*window_->worst_step));
      }
      w_.Member("description", DescribeTraceWindow(*window_));
      w_.Member("everything",
                "rankscope report --full-trace SESSION_DIR rewrites trace.json with every event "
                "(rankscope run --full-trace writes it so in the first place)");
      w_.EndObject();
    }
    w_.EndObject().EndObject();
    return w_.Spill();
  }

 private:
  // Per rank: where each collective and each GPU record was placed, for the flows.
  struct RankPlacement {
    std::vector<Placed> collectives;
    std::vector<Placed> gpu;
    std::vector<Placed> p2p;
  };

  JsonWriter& Ts(TimeNs t) { return w_.Key("ts").Micros(t - origin_); }

  bool InWindow(TimeNs start, TimeNs end) const { return kept_.Overlaps(start, end); }

  void Metadata(const char* name, int pid, int64_t tid, const char* arg, const std::string& text) {
    w_.BeginObject().Member("ph", "M").Member("name", name).Member("pid", pid);
    if (tid >= 0) w_.Member("tid", tid);
    w_.Key("args").BeginObject().Member(arg, text).EndObject().EndObject();
  }
  void Metadata(const char* name, int pid, int64_t tid, const char* arg, int64_t value) {
    w_.BeginObject().Member("ph", "M").Member("name", name).Member("pid", pid);
    if (tid >= 0) w_.Member("tid", tid);
    w_.Key("args").BeginObject().Member(arg, value).EndObject().EndObject();
  }

  void EmitRank(const RankData& rank) {
    const int pid = rank.id.rank;
    std::string process = "rank " + std::to_string(rank.id.rank);
    if (!rank.id.node.empty()) process += " (" + rank.id.node + ")";
    Metadata("process_name", pid, -1, "name", process);
    Metadata("process_sort_index", pid, -1, "sort_index", rank.id.rank);

    // Which device each stream belongs to, for the GPU track names and for NCCL collectives
    // (whose tid is their kernel's stream).
    std::map<uint32_t, uint32_t> stream_device;
    for (const GpuActivityRecord& g : rank.gpu) {
      if (g.kind != GpuActivityKind::kRuntime && g.device != kNoDevice) {
        stream_device.emplace(g.stream, g.device);
      }
    }

    std::map<TrackKey, std::vector<Slice>> tracks;
    size_t order = 0;
    auto add = [&](TrackKey key, SliceType type, size_t index, TimeNs start, TimeNs end,
                   int kind_order) {
      if (!InWindow(start, end)) return;
      tracks[key].push_back({start, std::max(start, end), kind_order, order++, type, index});
    };
    for (size_t i = 0; i < rank.ranges.size(); ++i) {
      const RangeRecord& r = rank.ranges[i];
      add({false, r.tid}, SliceType::kRange, i, r.start, r.end, 0);
    }
    for (size_t i = 0; i < rank.collectives.size(); ++i) {
      const CollectiveRecord& c = rank.collectives[i];
      const bool on_gpu = c.source == CollectiveRecord::Source::kNccl;
      add({on_gpu, c.tid}, SliceType::kCollective, i, c.enter, c.exit, 1);
    }
    for (size_t i = 0; i < rank.p2p.size(); ++i) {
      const P2PRecord& p = rank.p2p[i];
      add({false, p.tid}, SliceType::kP2P, i, p.enter, p.exit, 1);
    }
    for (size_t i = 0; i < rank.gpu.size(); ++i) {
      const GpuActivityRecord& g = rank.gpu[i];
      const bool host = g.kind == GpuActivityKind::kRuntime;
      add({!host, host ? g.tid : g.stream}, SliceType::kGpu, i, g.start, g.end, 2);
    }
    for (const MarkRecord& m : rank.marks) {
      if (InWindow(m.time, m.time)) tracks[{false, m.tid}];  // marks alone get a track
    }

    RankPlacement& placement = placements_[rank.id.rank];
    placement.collectives.assign(rank.collectives.size(), Placed{});
    placement.gpu.assign(rank.gpu.size(), Placed{});
    placement.p2p.assign(rank.p2p.size(), Placed{});
    int host_index = 0;
    int gpu_index = 0;
    for (auto& [key, slices] : tracks) {
      std::sort(slices.begin(), slices.end(),
                [](const Slice& a, const Slice& b) { return a.SortKey() < b.SortKey(); });
      std::vector<int> lanes = AssignLanes(slices);
      const int lane_count = slices.empty() ? 1 : *std::max_element(lanes.begin(), lanes.end()) + 1;
      std::vector<int64_t> lane_tid(static_cast<size_t>(lane_count));
      std::string name;
      int sort_base = 0;
      if (key.gpu) {
        auto dev = stream_device.find(key.id);
        name = dev == stream_device.end() ? "GPU" : "GPU " + std::to_string(dev->second);
        name += key.id == 0 ? " (context)" : " stream " + std::to_string(key.id);
        sort_base = (1000 + gpu_index++) * 1000;  // GPU tracks below every host thread
      } else {
        name = "thread " + std::to_string(key.id);
        sort_base = host_index++ * 1000;
      }
      for (int lane = 0; lane < lane_count; ++lane) {
        const int64_t base = key.gpu ? kGpuTidBase + key.id : static_cast<int64_t>(key.id);
        lane_tid[lane] = lane == 0 ? base : next_synthetic_++;
        Metadata("thread_name", pid, lane_tid[lane], "name",
                 lane == 0 ? name : name + " (overlap " + std::to_string(lane) + ")");
        // Keep a track's overlap lanes right below it.
        Metadata("thread_sort_index", pid, lane_tid[lane], "sort_index", sort_base + lane);
      }
      for (size_t i = 0; i < slices.size(); ++i) {
        const Slice& s = slices[i];
        const int64_t track = lane_tid[static_cast<size_t>(lanes[i])];
        const Placed placed{track, s.start, s.end, true};
        if (s.type == SliceType::kCollective) placement.collectives[s.index] = placed;
        if (s.type == SliceType::kGpu) placement.gpu[s.index] = placed;
        if (s.type == SliceType::kP2P) placement.p2p[s.index] = placed;
        EmitSlice(rank, s, pid, track);
      }
    }

    for (const MarkRecord& m : rank.marks) {
      if (!InWindow(m.time, m.time)) continue;
      w_.BeginObject().Member("ph", "i").Member("s", "t").Member("cat", "nvtx");
      w_.Member("name", m.name);
      Ts(m.time).Member("pid", pid).Member("tid", static_cast<int64_t>(m.tid));
      w_.Key("args").BeginObject().Member("domain", m.domain).EndObject().EndObject();
    }
    EmitLaunchFlows(rank, placement);
  }

  void BeginSlice(const char* cat, std::string_view name, const Slice& s, int pid, int64_t tid) {
    w_.BeginObject().Member("ph", "X").Member("cat", cat).Member("name", name);
    Ts(s.start).Key("dur").Micros(s.end - s.start);
    w_.Member("pid", pid).Member("tid", tid).Key("args").BeginObject();
  }

  void EmitSlice(const RankData& rank, const Slice& s, int pid, int64_t tid) {
    switch (s.type) {
      case SliceType::kRange: {
        const RangeRecord& r = rank.ranges[s.index];
        BeginSlice("nvtx", r.name, s, pid, tid);
        w_.Member("domain", r.domain).Member("depth", r.depth);
        break;
      }
      case SliceType::kCollective: {
        const CollectiveRecord& c = rank.collectives[s.index];
        // NCCL records are GPU kernels on their stream: named as NCCL names them.
        const bool nccl = c.source == CollectiveRecord::Source::kNccl;
        BeginSlice(nccl ? "nccl" : "mpi",
                   nccl ? NcclFunctionName(c.op) : MpiFunctionName(c.op, c.nonblocking), s, pid,
                   tid);
        w_.Member("comm_id", FormatHex(c.comm_id)).Member("seq", c.seq).Member("bytes", c.bytes);
        w_.Member("root", c.root).Member("comm_size", c.comm_size);
        w_.Member("comm_rank", c.comm_rank);
        break;
      }
      case SliceType::kP2P: {
        const P2PRecord& p = rank.p2p[s.index];
        BeginSlice("mpi", P2PFunctionName(p.kind), s, pid, tid);
        w_.Member("peer", p.peer).Member("tag", p.tag).Member("bytes", p.bytes);
        w_.Member("comm_id", FormatHex(p.comm_id));
        if (p.kind == P2PKind::kWait) w_.Member("completed", P2PKindName(p.completed));
        break;
      }
      case SliceType::kGpu:
        EmitGpuSlice(rank.gpu[s.index], s, pid, tid);
        break;
    }
    w_.EndObject().EndObject();  // args, event
  }

  void EmitGpuSlice(const GpuActivityRecord& g, const Slice& s, int pid, int64_t tid) {
    switch (g.kind) {
      case GpuActivityKind::kKernel:
        BeginSlice("cuda_kernel", demangle_(g.name), s, pid, tid);
        w_.Key("grid").BeginArray().Int(g.grid[0]).Int(g.grid[1]).Int(g.grid[2]).EndArray();
        w_.Key("block").BeginArray().Int(g.block[0]).Int(g.block[1]).Int(g.block[2]).EndArray();
        w_.Member("mangled", g.name);
        break;
      case GpuActivityKind::kMemcpy:
        BeginSlice("cuda_memcpy", "Memcpy " + std::string(MemcpyKindName(g.copy_kind)), s, pid,
                   tid);
        w_.Member("bytes", g.bytes);
        break;
      case GpuActivityKind::kMemset:
        BeginSlice("cuda_memset", "Memset", s, pid, tid);
        w_.Member("bytes", g.bytes);
        break;
      case GpuActivityKind::kSync:
        BeginSlice("cuda_sync", SyncKindName(g.sync_kind), s, pid, tid);
        break;
      case GpuActivityKind::kRuntime:
        BeginSlice("cuda_api", g.name, s, pid, tid);
        break;
    }
    if (g.device != kNoDevice) w_.Member("device", g.device);
    if (g.kind != GpuActivityKind::kRuntime) w_.Member("stream", g.stream);
    w_.Member("correlation_id", g.correlation_id);
  }

  // One flow event at the middle of a placed slice (strictly inside it, so it binds there).
  void FlowStep(const char* phase, const char* cat, std::string_view name, uint64_t id, int pid,
                const Placed& p, TimeNs at) {
    w_.BeginObject().Member("ph", phase).Member("cat", cat).Member("name", name);
    w_.Member("id", id).Member("pid", pid).Member("tid", p.tid);
    Ts(at);
    if (phase[0] == 'f') w_.Member("bp", "e");
    w_.EndObject();
  }

  // An arrow from each CUDA API call to the kernel, copy or memset it launched (by CUPTI's
  // correlation id), as Nsight Systems draws them.
  void EmitLaunchFlows(const RankData& rank, const RankPlacement& placement) {
    std::unordered_map<uint32_t, size_t> call_of;  // correlation id -> runtime record index
    for (size_t i = 0; i < rank.gpu.size(); ++i) {
      const GpuActivityRecord& g = rank.gpu[i];
      if (g.kind == GpuActivityKind::kRuntime && g.correlation_id != 0) {
        call_of.emplace(g.correlation_id, i);
      }
    }
    if (call_of.empty()) return;
    for (size_t i = 0; i < rank.gpu.size(); ++i) {
      const GpuActivityRecord& g = rank.gpu[i];
      if (g.kind == GpuActivityKind::kRuntime || g.kind == GpuActivityKind::kSync) continue;
      auto call = call_of.find(g.correlation_id);
      if (call == call_of.end()) continue;
      const Placed& from = placement.gpu[call->second];
      const Placed& to = placement.gpu[i];
      if (!from.valid || !to.valid) continue;
      ++flow_id_;
      FlowStep("s", "cuda_launch", "launch", flow_id_, rank.id.rank, from,
               from.start + (from.end - from.start) / 2);
      FlowStep("f", "cuda_launch", "launch", flow_id_, rank.id.rank, to,
               to.start + (to.end - to.start) / 2);
    }
  }

  // One flow chain per complete instance whose members' slices were all written, in arrival
  // order. Every step sits at the same offset into its member's slice (half the shortest member's
  // duration), so each step is strictly inside the slice it binds to and the steps stay in
  // arrival order.
  void EmitCollectiveFlows(const std::map<int, const RankData*>& ranks,
                           const std::vector<CollectiveInstance>& instances) {
    // (rank, comm, seq) -> index of that rank's collective record.
    std::map<std::tuple<int, uint64_t, uint64_t>, size_t> index_of;
    for (const auto& [id, rank] : ranks) {
      for (size_t i = 0; i < rank->collectives.size(); ++i) {
        const CollectiveRecord& c = rank->collectives[i];
        index_of.emplace(std::make_tuple(id, c.comm_id, c.seq), i);
      }
    }
    for (const CollectiveInstance& inst : instances) {
      if (!inst.complete || inst.members.size() < 2) continue;
      std::vector<const Placed*> chain;
      std::vector<int> pids;
      bool nccl = false;
      for (const CollectiveParticipant& m : inst.members) {
        auto it = index_of.find(std::make_tuple(m.rank, inst.comm_id, inst.seq));
        if (it == index_of.end()) {
          // A rank of the session without the member's record holds only some of its records
          // (a session read window by window): the member was not written, as below.
          if (ranks.count(m.rank) > 0) {
            chain.clear();
            break;
          }
          continue;  // instances from another session: nothing to bind
        }
        const Placed& p = placements_[m.rank].collectives[it->second];
        if (!p.valid) {  // a member outside the kept window: an arrow would end at the wrong rank
          chain.clear();
          break;
        }
        nccl = ranks.at(m.rank)->collectives[it->second].source == CollectiveRecord::Source::kNccl;
        chain.push_back(&p);
        pids.push_back(m.rank);
      }
      if (chain.size() < 2) continue;
      std::vector<size_t> order(chain.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return chain[a]->start < chain[b]->start; });
      DurationNs shortest = chain.front()->end - chain.front()->start;
      for (const Placed* p : chain) shortest = std::min(shortest, p->end - p->start);
      const DurationNs offset = shortest / 2;

      ++flow_id_;
      const std::string name = nccl ? NcclFunctionName(inst.op) : MpiFunctionName(inst.op, false);
      for (size_t k = 0; k < order.size(); ++k) {
        const Placed& p = *chain[order[k]];
        const char* phase = k == 0 ? "s" : (k + 1 == order.size() ? "f" : "t");
        FlowStep(phase, "mpi_flow", name, flow_id_, pids[order[k]], p, p.start + offset);
      }
    }
  }

  // An arrow from each point-to-point send to the receive (or the Wait of the Irecv) that got it,
  // matched as the late-sender analysis matches them (MPI order per pair, communicator and tag).
  void EmitMessageFlows(const std::vector<P2PMessage>& messages) {
    for (const P2PMessage& m : messages) {
      auto from = placements_.find(m.sender);
      auto to = placements_.find(m.receiver);
      if (from == placements_.end() || to == placements_.end() ||
          m.send_record >= from->second.p2p.size() || m.receive_record >= to->second.p2p.size()) {
        continue;
      }
      const Placed& send = from->second.p2p[m.send_record];
      const Placed& receive = to->second.p2p[m.receive_record];
      if (!send.valid || !receive.valid) continue;
      ++flow_id_;
      FlowStep("s", "mpi_message", "message", flow_id_, m.sender, send,
               send.start + (send.end - send.start) / 2);
      // At the end of the receive: the message arrived then, after the wait.
      FlowStep("f", "mpi_message", "message", flow_id_, m.receiver, receive,
               receive.end - (receive.end - receive.start) / 4);
    }
  }

  const Session& session_;
  const TimeNs origin_;
  JsonWriter w_;
  const std::optional<TraceWindow>& window_;
  const KeptSpans kept_;
  Demangler demangle_;
  std::map<int, RankPlacement> placements_;
  int64_t next_synthetic_ = kSyntheticTidBase;
  uint64_t flow_id_ = 0;
};

}  // namespace

std::string NcclFunctionName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllreduce:
      return "ncclAllReduce";
    case CollectiveOp::kAllgather:
      return "ncclAllGather";
    case CollectiveOp::kReduceScatter:
      return "ncclReduceScatter";
    case CollectiveOp::kBcast:
      return "ncclBroadcast";
    case CollectiveOp::kReduce:
      return "ncclReduce";
    case CollectiveOp::kAlltoall:
      return "ncclAllToAll";
    case CollectiveOp::kGather:
      return "ncclGather";
    case CollectiveOp::kScatter:
      return "ncclScatter";
    default:
      return "nccl" + std::string(CollectiveOpName(op));
  }
}

std::string MpiFunctionName(CollectiveOp op, bool nonblocking) {
  std::string name(CollectiveOpName(op));
  // CollectiveOpName is lower-case snake_case; MPI capitalises only the first letter and spells
  // "bcast" and the like exactly as we do.
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  if (nonblocking) {
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    name = "I" + name;
  }
  return "MPI_" + name;
}

std::string BuildChromeTrace(const Session& session, const SessionMatches& matches,
                             const std::optional<TraceWindow>& window) {
  std::string out;
  TraceBuilder(session, &out, window).Build(matches);
  return out;
}

bool StreamChromeTrace(const Session& session, const SessionMatches& matches,
                       const std::optional<TraceWindow>& window,
                       const std::function<bool(std::string_view)>& sink) {
  constexpr size_t kPiece = 1 << 20;
  std::string out;
  out.reserve(2 * kPiece);
  TraceBuilder builder(session, &out, window);
  builder.SpillTo(sink, kPiece);
  return builder.Build(matches);
}

std::vector<std::pair<TimeNs, TimeNs>> KeptIntervals(const TraceWindow& window) {
  if (window.steps.empty()) return {{window.start, window.end}};
  Intervals steps;
  for (const TraceStep& step : window.steps) steps.emplace_back(step.start, step.end);
  return MergeIntervals(std::move(steps));
}

size_t CountTraceEvents(const Session& session) {
  size_t n = 0;
  ForEachEvent(session, [&](TimeNs, TimeNs) { ++n; });
  return n;
}

EachTraceEvent EventsOf(const Session& session) {
  return [&session](const TraceEventFn& fn) { ForEachEvent(session, fn); };
}

namespace {

// How many events overlap each step's span. An event in two overlapping spans counts for both,
// so a sum over steps never undercounts what they keep together.
std::vector<size_t> EventsPerStep(const EachTraceEvent& each, const std::vector<TraceStep>& steps) {
  // The steps' starts never decrease (each rank's k-th step starts before its k+1-th), but a step
  // may end before the one before it; the running maximum of the ends finds the first candidate.
  std::vector<TimeNs> starts, latest_end;
  for (const TraceStep& step : steps) {
    starts.push_back(step.start);
    latest_end.push_back(latest_end.empty() ? step.end : std::max(latest_end.back(), step.end));
  }
  std::vector<size_t> events(steps.size(), 0);
  each([&](TimeNs start, TimeNs end) {
    const auto first = std::lower_bound(latest_end.begin(), latest_end.end(), start);
    const auto past = std::upper_bound(starts.begin(), starts.end(), std::max(start, end));
    for (auto k = static_cast<size_t>(first - latest_end.begin());
         k < static_cast<size_t>(past - starts.begin()); ++k) {
      if (steps[k].end >= start) ++events[k];
    }
  });
  return events;
}

// Which steps fit in max_events, given each step's events (at least two steps): the step with the
// most waiting, the first and the last, in that order of preference, each when it fits (a first
// step that absorbed start-up may not); then as many steps evenly spaced from the first to the
// last as fit with them. In step order; empty when not one of the three fits.
std::vector<size_t> SampleSteps(const std::vector<size_t>& events, std::optional<size_t> worst,
                                size_t max_events) {
  const size_t n = events.size();
  std::vector<size_t> wanted;
  if (worst) wanted.push_back(*worst);
  for (size_t k : {size_t{0}, n - 1}) {
    if (std::find(wanted.begin(), wanted.end(), k) == wanted.end()) wanted.push_back(k);
  }
  std::vector<size_t> kept, too_big;
  size_t used = 0;
  for (size_t k : wanted) {
    if (used + events[k] <= max_events) {
      kept.push_back(k);
      used += events[k];
    } else {
      too_big.push_back(k);
    }
  }
  if (kept.empty()) return kept;
  // The kept ones and m steps evenly spaced from the first to the last (distinct while m <= n),
  // but for those that did not fit above.
  auto sample = [&](size_t m) {
    std::vector<size_t> out = kept;
    for (size_t i = 0; i < m; ++i) {
      const size_t k = (i * (n - 1) + (m - 1) / 2) / (m - 1);
      if (std::find(too_big.begin(), too_big.end(), k) == too_big.end()) out.push_back(k);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  auto fits = [&](const std::vector<size_t>& steps) {
    size_t sum = 0;
    for (size_t k : steps) sum += events[k];
    return sum <= max_events;
  };
  // sample(2) is `kept`, which fits; the most steps that still fit (a binary search: the events
  // of m evenly spaced steps grow with m, as evenly as the steps' own events).
  size_t lo = 2, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (fits(sample(mid))) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return sample(lo);
}

// The window of the run's middle that holds max_events of the session's `total` events (by start
// time): a steady state, past start-up and before shutdown.
void MiddleWindow(const EachTraceEvent& each, size_t total, size_t max_events, TraceWindow* w) {
  std::vector<TimeNs> starts;
  starts.reserve(total);
  each([&](TimeNs start, TimeNs) { starts.push_back(start); });
  if (starts.size() != total) return;  // the source failed part way (its caller says so)
  const size_t first = (total - max_events) / 2;
  const size_t last = first + max_events - 1;
  std::nth_element(starts.begin(), starts.begin() + static_cast<ptrdiff_t>(first), starts.end());
  w->start = starts[first];
  std::nth_element(starts.begin() + static_cast<ptrdiff_t>(first),
                   starts.begin() + static_cast<ptrdiff_t>(last), starts.end());
  w->end = starts[last];
}

}  // namespace

std::optional<TraceWindow> ChooseTraceWindow(const Session& session, const SessionMatches& matches,
                                             size_t max_events) {
  return ChooseTraceWindow(session, matches, max_events, GatherRecordFacts(session),
                           EventsOf(session));
}

std::optional<TraceWindow> ChooseTraceWindow(const Session& session, const SessionMatches& matches,
                                             size_t max_events, const RecordFacts& facts,
                                             const EachTraceEvent& each) {
  size_t total = 0;
  for (const RankRecordFacts& r : facts.ranks) {
    total += r.ranges + r.collectives + r.p2p + r.gpu + r.marks;
  }
  if (max_events == 0 || total <= max_events) return std::nullopt;
  TraceWindow w;
  w.events_total = total;
  const SessionSteps found = FindSessionSteps(session, facts);
  std::vector<TraceStep> steps;
  for (size_t k = 0; k < found.spans.size(); ++k) {
    steps.push_back({k, found.spans[k].first, found.spans[k].second});
  }
  w.steps_total = steps.size();
  if (!steps.empty()) {
    const std::optional<size_t> worst = MostWaitingStep(WaitPerStep(found, matches.collectives));
    for (size_t k : SampleSteps(EventsPerStep(each, steps), worst, max_events)) {
      const TraceStep& step = steps[k];
      if (w.steps.empty()) w.start = step.start;
      w.end = w.steps.empty() ? step.end : std::max(w.end, step.end);
      w.steps.push_back(step);
      if (k == worst) w.worst_step = k;
    }
  }
  if (w.steps.empty()) MiddleWindow(each, total, max_events, &w);
  const KeptSpans kept(&w);
  each([&](TimeNs start, TimeNs end) {
    if (kept.Overlaps(start, end)) ++w.events_kept;
  });
  return w;
}

std::string DescribeTraceWindow(const TraceWindow& w) {
  const std::string events =
      std::to_string(w.events_kept) + " of " + std::to_string(w.events_total) + " events";
  const std::string why = "so that it opens quickly and costs the same however long the run";
  const std::string everything = "--full-trace writes them all";
  if (w.steps.empty()) {
    std::string out = "trace.json holds " + FormatDuration(w.end - w.start) +
                      " from the middle of the run (" + events + ", " + why;
    if (w.steps_total > 0) {
      out += "; its " + std::to_string(w.steps_total) + " steps are too large to keep whole";
    }
    return out + "); " + everything;
  }
  // The first few and the last of the kept steps: the whole list is in the trace's metadata.
  constexpr size_t kListed = 8;
  std::string list;
  for (size_t i = 0; i < w.steps.size(); ++i) {
    if (w.steps.size() > kListed && i == kListed - 2) {
      list += ", ...";
      i = w.steps.size() - 1;
    }
    list += (i == 0 ? "" : ", ") + std::to_string(w.steps[i].index);
  }
  std::string out = "trace.json holds " + std::to_string(w.steps.size()) + " of the run's " +
                    std::to_string(w.steps_total) + " steps, whole and on every rank (steps " +
                    list;
  if (w.steps.size() > 3) out += ", evenly spaced";
  if (w.worst_step) {
    out += "; step " + std::to_string(*w.worst_step) + " had the most waiting";
  }
  return out + "): " + events + ", " + why + "; " + everything;
}

}  // namespace rankscope
