#include "coordinator/report/trace_json.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/records.h"

namespace rankscope {

namespace {

using nlohmann::json;

// Synthetic tracks (for slices that would overlap improperly) get tids far above any Linux
// tid (pid_max is at most 2^22), so they never collide with a real thread.
constexpr int64_t kSyntheticTidBase = 1'000'000'000;

// Chrome's format counts in microseconds; we keep nanosecond resolution in the fraction.
double Micros(TimeNs t, TimeNs origin) { return static_cast<double>(t - origin) / 1e3; }
double Micros(DurationNs d) { return static_cast<double>(d) / 1e3; }

std::string Hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

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
  }
  return "MPI_p2p";
}

// One "X" slice before it is placed on a track. Sorting puts parents before their children:
// earlier start first, then longer first, then NVTX before MPI, since an NVTX range that starts
// and ends with an MPI call is the user's label around it.
struct Slice {
  TimeNs start = 0;
  TimeNs end = 0;      // >= start
  int kind_order = 0;  // 0 NVTX range, 1 MPI
  size_t input_order = 0;
  int collective_index = -1;  // index into the rank's collectives, for flow binding
  json event;                 // everything except pid/tid

  auto SortKey() const { return std::make_tuple(start, -(end - start), kind_order, input_order); }
};

// Places slices of one thread on the fewest tracks such that slices on each track nest
// properly. Lane 0 is the thread itself. Returns the lane of each slice (same order as
// `slices`, which must already be sorted by SortKey).
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

json Metadata(const char* name, int pid, int64_t tid, json args) {
  json event = {{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) event["tid"] = tid;
  return event;
}

Slice CollectiveSlice(const CollectiveRecord& c, TimeNs origin) {
  Slice s;
  s.start = c.enter;
  s.end = std::max(c.enter, c.exit);
  s.kind_order = 1;
  json args = {{"comm_id", Hex(c.comm_id)}, {"seq", c.seq},
               {"bytes", c.bytes},          {"root", c.root},
               {"comm_size", c.comm_size},  {"comm_rank", c.comm_rank}};
  const bool nccl = c.source == CollectiveRecord::Source::kNccl;
  // NCCL records are GPU kernels (their tid is the CUDA stream): named as NCCL names them.
  s.event = {{"ph", "X"},
             {"cat", nccl ? "nccl" : "mpi"},
             {"name", nccl ? NcclFunctionName(c.op) : MpiFunctionName(c.op, c.nonblocking)},
             {"ts", Micros(s.start, origin)},
             {"dur", Micros(s.end - s.start)},
             {"args", std::move(args)}};
  return s;
}

Slice P2PSlice(const P2PRecord& p, TimeNs origin) {
  Slice s;
  s.start = p.enter;
  s.end = std::max(p.enter, p.exit);
  s.kind_order = 1;
  json args = {{"peer", p.peer}, {"tag", p.tag}, {"bytes", p.bytes}, {"comm_id", Hex(p.comm_id)}};
  if (p.kind == P2PKind::kWait) args["completed"] = std::string(P2PKindName(p.completed));
  s.event = {{"ph", "X"},
             {"cat", "mpi"},
             {"name", P2PFunctionName(p.kind)},
             {"ts", Micros(s.start, origin)},
             {"dur", Micros(s.end - s.start)},
             {"args", std::move(args)}};
  return s;
}

Slice RangeSlice(const RangeRecord& r, TimeNs origin) {
  Slice s;
  s.start = r.start;
  s.end = std::max(r.start, r.end);
  s.kind_order = 0;
  s.event = {{"ph", "X"},
             {"cat", "nvtx"},
             {"name", r.name},
             {"ts", Micros(s.start, origin)},
             {"dur", Micros(s.end - s.start)},
             {"args", {{"domain", r.domain}, {"depth", r.depth}}}};
  return s;
}

// Where each collective record of one rank ended up: its track and its slice.
struct PlacedCollective {
  int64_t tid = 0;
  TimeNs start = 0;
  TimeNs end = 0;
};

// Emits one rank's process: metadata, slices on nesting-safe tracks, marks. Fills `placed`
// (indexed like rank.collectives) for the flow events.
void EmitRank(const RankData& rank, TimeNs origin, json& events,
              std::vector<PlacedCollective>& placed) {
  const int pid = rank.id.rank;
  std::string process = "rank " + std::to_string(rank.id.rank);
  if (!rank.id.node.empty()) process += " (" + rank.id.node + ")";
  events.push_back(Metadata("process_name", pid, -1, {{"name", process}}));
  events.push_back(Metadata("process_sort_index", pid, -1, {{"sort_index", rank.id.rank}}));

  std::map<uint32_t, std::vector<Slice>> by_thread;
  size_t order = 0;
  for (size_t i = 0; i < rank.ranges.size(); ++i) {
    Slice s = RangeSlice(rank.ranges[i], origin);
    s.input_order = order++;
    by_thread[rank.ranges[i].tid].push_back(std::move(s));
  }
  for (size_t i = 0; i < rank.collectives.size(); ++i) {
    Slice s = CollectiveSlice(rank.collectives[i], origin);
    s.input_order = order++;
    s.collective_index = static_cast<int>(i);
    by_thread[rank.collectives[i].tid].push_back(std::move(s));
  }
  for (const P2PRecord& p : rank.p2p) {
    Slice s = P2PSlice(p, origin);
    s.input_order = order++;
    by_thread[p.tid].push_back(std::move(s));
  }
  for (const MarkRecord& m : rank.marks) by_thread[m.tid];  // marks alone still get a track

  placed.assign(rank.collectives.size(), PlacedCollective{});
  int64_t next_synthetic = kSyntheticTidBase;
  int thread_index = 0;
  for (auto& [tid, slices] : by_thread) {
    std::sort(slices.begin(), slices.end(),
              [](const Slice& a, const Slice& b) { return a.SortKey() < b.SortKey(); });
    std::vector<int> lanes = AssignLanes(slices);
    int lane_count = slices.empty() ? 1 : *std::max_element(lanes.begin(), lanes.end()) + 1;
    std::vector<int64_t> lane_tid(static_cast<size_t>(lane_count));
    std::string thread = "thread " + std::to_string(tid);
    for (int lane = 0; lane < lane_count; ++lane) {
      lane_tid[lane] = lane == 0 ? static_cast<int64_t>(tid) : next_synthetic++;
      std::string name = lane == 0 ? thread : thread + " (overlap " + std::to_string(lane) + ")";
      events.push_back(Metadata("thread_name", pid, lane_tid[lane], {{"name", name}}));
      // Keep a thread's overlap tracks right below it.
      events.push_back(Metadata("thread_sort_index", pid, lane_tid[lane],
                                {{"sort_index", thread_index * 1000 + lane}}));
    }
    ++thread_index;
    for (size_t i = 0; i < slices.size(); ++i) {
      Slice& s = slices[i];
      int64_t track = lane_tid[static_cast<size_t>(lanes[i])];
      if (s.collective_index >= 0) {
        placed[static_cast<size_t>(s.collective_index)] = {track, s.start, s.end};
      }
      s.event["pid"] = pid;
      s.event["tid"] = track;
      events.push_back(std::move(s.event));
    }
  }

  for (const MarkRecord& m : rank.marks) {
    events.push_back({{"ph", "i"},
                      {"s", "t"},
                      {"cat", "nvtx"},
                      {"name", m.name},
                      {"ts", Micros(m.time, origin)},
                      {"pid", pid},
                      {"tid", m.tid},
                      {"args", {{"domain", m.domain}}}});
  }
}

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

json BuildChromeTrace(const Session& session, const std::vector<CollectiveInstance>& instances) {
  const TimeNs origin = session.start;
  json events = json::array();

  // placed[rank][collective index], and a lookup from (rank, comm, seq) to that index.
  std::map<int, std::vector<PlacedCollective>> placed;
  std::map<std::tuple<int, uint64_t, uint64_t>, size_t> index_of;
  for (const RankData& rank : session.ranks) {
    std::vector<PlacedCollective>& rank_placed = placed[rank.id.rank];
    if (!rank_placed.empty()) continue;  // a duplicated rank: its first copy wins
    EmitRank(rank, origin, events, rank_placed);
    for (size_t i = 0; i < rank.collectives.size(); ++i) {
      const CollectiveRecord& c = rank.collectives[i];
      index_of.emplace(std::make_tuple(rank.id.rank, c.comm_id, c.seq), i);
    }
  }

  // One flow chain per complete instance, in arrival order. Every step sits at the same offset
  // into its member's slice (half the shortest member's duration), so each step is strictly
  // inside the slice it binds to and the steps stay in arrival order.
  uint64_t flow_id = 0;
  for (const CollectiveInstance& inst : instances) {
    if (!inst.complete || inst.members.size() < 2) continue;
    ++flow_id;
    std::vector<const PlacedCollective*> chain;
    std::vector<int> pids;
    for (const CollectiveParticipant& m : inst.members) {
      auto it = index_of.find(std::make_tuple(m.rank, inst.comm_id, inst.seq));
      if (it == index_of.end()) continue;  // instances from another session: nothing to bind
      chain.push_back(&placed[m.rank][it->second]);
      pids.push_back(m.rank);
    }
    if (chain.size() < 2) continue;
    std::vector<size_t> order(chain.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return chain[a]->start < chain[b]->start; });
    DurationNs shortest = chain.front()->end - chain.front()->start;
    for (const PlacedCollective* p : chain) shortest = std::min(shortest, p->end - p->start);
    const DurationNs offset = shortest / 2;

    std::string name = MpiFunctionName(inst.op, false);
    for (size_t k = 0; k < order.size(); ++k) {
      const PlacedCollective& p = *chain[order[k]];
      const char* phase = k == 0 ? "s" : (k + 1 == order.size() ? "f" : "t");
      json event = {{"ph", phase},
                    {"cat", "mpi_flow"},
                    {"name", name},
                    {"id", flow_id},
                    {"pid", pids[order[k]]},
                    {"tid", p.tid},
                    {"ts", Micros(p.start + offset, origin)}};
      if (k + 1 == order.size()) event["bp"] = "e";
      events.push_back(std::move(event));
    }
  }

  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"metadata",
           {{"rankscope_session", session.session_id},
            {"job_id", session.job_id},
            {"start_ns", session.start},
            {"aligned", session.aligned}}}};
}

}  // namespace rankscope
