#include "coordinator/report/trace_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using nlohmann::json;

struct Trace {
  json doc;
  std::vector<json> events;
  std::vector<json> Where(const std::string& ph) const {
    std::vector<json> out;
    for (const json& e : events) {
      if (e["ph"] == ph) out.push_back(e);
    }
    return out;
  }
};

Trace Build(const Session& s) {
  Trace t;
  // Through text and back, as a viewer would read it.
  t.doc = json::parse(BuildChromeTrace(s, MatchSession(s)));
  for (const json& e : t.doc["traceEvents"]) t.events.push_back(e);
  return t;
}

// Perfetto's conversion: microsecond doubles to integer nanoseconds.
int64_t Ns(const json& micros) { return std::llround(micros.get<double>() * 1000.0); }

TEST(ChromeTrace, TopLevel) {
  Trace t = Build(report_test::MakeSession());
  EXPECT_EQ(t.doc["displayTimeUnit"], "ns");
  EXPECT_TRUE(t.doc["traceEvents"].is_array());
}

TEST(ChromeTrace, OneNamedSortedProcessPerRank) {
  Trace t = Build(report_test::MakeSession());
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  for (const json& e : t.Where("M")) {
    if (e["name"] == "process_name") {
      EXPECT_TRUE(names.emplace(e["pid"].get<int>(), e["args"]["name"]).second) << e;
    }
    if (e["name"] == "process_sort_index") {
      sort_index[e["pid"].get<int>()] = e["args"]["sort_index"].get<int>();
    }
  }
  EXPECT_EQ(names, (std::map<int, std::string>{
                       {0, "rank 0 (node-a)"}, {1, "rank 1 (node-a)"}, {2, "rank 2 (node-b)"}}));
  EXPECT_EQ(sort_index, (std::map<int, int>{{0, 0}, {1, 1}, {2, 2}}));
}

TEST(ChromeTrace, SlicesCarryWhatTheyShow) {
  Trace t = Build(report_test::MakeSession());
  int allreduce = 0, nvtx = 0, p2p = 0;
  for (const json& e : t.Where("X")) {
    ASSERT_TRUE(e["ts"].is_number());
    ASSERT_TRUE(e["dur"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0) << e;
    EXPECT_GE(e["ts"].get<double>(), 0.0) << e;  // relative to session.start
    if (e["name"] == "MPI_Allreduce") {
      ++allreduce;
      EXPECT_EQ(e["cat"], "mpi");
      EXPECT_EQ(e["args"]["comm_id"], "0xf00dcafe12345678");
      EXPECT_TRUE(e["args"].contains("seq"));
      EXPECT_EQ(e["args"]["bytes"], 4 << 20);
      EXPECT_EQ(e["args"]["root"], -1);
    }
    if (e["cat"] == "nvtx") {
      ++nvtx;
      EXPECT_TRUE(e["args"].contains("domain"));
    }
    if (e["name"] == "MPI_Send" || e["name"] == "MPI_Irecv" || e["name"] == "MPI_Wait") ++p2p;
  }
  EXPECT_EQ(allreduce, 4 + 4 + 3);
  EXPECT_EQ(nvtx, 8 + 8 + 6 + 2);
  EXPECT_EQ(p2p, 3);

  // The first allreduce of rank 2 starts at 5 ms + 2 ms late and lasts 0.2 ms.
  bool found = false;
  for (const json& e : t.Where("X")) {
    if (e["pid"] == 2 && e["name"] == "MPI_Allreduce" && e["args"]["seq"] == 0) {
      EXPECT_EQ(Ns(e["ts"]), 7'000'000);
      EXPECT_EQ(Ns(e["dur"]), 200'000);
      found = true;
    }
  }
  EXPECT_TRUE(found);

  std::vector<json> marks = t.Where("i");
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0]["s"], "t");
  EXPECT_EQ(marks[0]["name"], "epoch 0");
  EXPECT_EQ(Ns(marks[0]["ts"]), 1'000'000);
}

TEST(ChromeTrace, SlicesNestProperlyOnEveryTrack) {
  Trace t = Build(report_test::MakeSession());
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> tracks;
  for (const json& e : t.Where("X")) {
    int64_t start = Ns(e["ts"]);
    tracks[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(
        {start, start + Ns(e["dur"])});
  }
  for (const auto& [track, slices] : tracks) {
    for (size_t i = 0; i < slices.size(); ++i) {
      for (size_t j = i + 1; j < slices.size(); ++j) {
        auto [a0, a1] = slices[i];
        auto [b0, b1] = slices[j];
        bool disjoint = a1 <= b0 || b1 <= a0;
        bool nested = (a0 <= b0 && b1 <= a1) || (b0 <= a0 && a1 <= b1);
        EXPECT_TRUE(disjoint || nested)
            << "pid " << track.first << " tid " << track.second << ": [" << a0 << "," << a1
            << ") and [" << b0 << "," << b1 << ") overlap partially";
      }
    }
  }
  // Rank 0's "io" range overlaps its first allreduce partially: it had to move.
  bool io_moved = false;
  for (const json& e : t.Where("X")) {
    if (e["pid"] == 0 && e["name"] == "io") io_moved = e["tid"] != 100;
  }
  EXPECT_TRUE(io_moved);
  bool overlap_track_named = false;
  for (const json& e : t.Where("M")) {
    if (e["name"] == "thread_name" && e["args"]["name"] == "thread 100 (overlap 1)") {
      overlap_track_named = true;
    }
  }
  EXPECT_TRUE(overlap_track_named);
}

TEST(ChromeTrace, OneFlowChainPerCompleteInstance) {
  Session s = report_test::MakeSession();
  Trace t = Build(s);
  std::map<uint64_t, std::vector<json>> chains;
  for (const json& e : t.events) {
    if ((e["ph"] == "s" || e["ph"] == "t" || e["ph"] == "f") && e["cat"] == "mpi_flow") {
      chains[e["id"].get<uint64_t>()].push_back(e);
    }
  }
  ASSERT_EQ(chains.size(), 3u);  // allreduce 0..2; allreduce 3 and the bcast are incomplete
  for (const auto& [id, chain] : chains) {
    ASSERT_EQ(chain.size(), 3u) << "flow " << id;
    EXPECT_EQ(chain[0]["ph"], "s");
    EXPECT_EQ(chain[1]["ph"], "t");
    EXPECT_EQ(chain[2]["ph"], "f");
    EXPECT_EQ(chain[2]["bp"], "e");
    EXPECT_EQ(chain[2]["pid"], 2);  // the straggler arrives last
    std::set<int> pids;
    for (const json& e : chain) pids.insert(e["pid"].get<int>());
    EXPECT_EQ(pids.size(), 3u);
    EXPECT_LE(chain[0]["ts"].get<double>(), chain[1]["ts"].get<double>());
    EXPECT_LE(chain[1]["ts"].get<double>(), chain[2]["ts"].get<double>());
    // Each step lies inside that rank's MPI slice on the same track.
    for (const json& step : chain) {
      bool enclosed = false;
      for (const json& x : t.Where("X")) {
        if (x["pid"] == step["pid"] && x["tid"] == step["tid"] && x["cat"] == "mpi" &&
            Ns(x["ts"]) < Ns(step["ts"]) && Ns(step["ts"]) < Ns(x["ts"]) + Ns(x["dur"])) {
          enclosed = true;
        }
      }
      EXPECT_TRUE(enclosed) << step;
    }
  }
}

TEST(ChromeTrace, GpuActivityOnStreamTracksWithLaunchArrows) {
  Trace t = Build(report_test::MakeGpuSession());
  std::map<int64_t, std::string> track_names;
  for (const json& e : t.Where("M")) {
    if (e["name"] == "thread_name") track_names[e["tid"].get<int64_t>()] = e["args"]["name"];
  }
  std::map<std::string, json> by_name;
  for (const json& e : t.Where("X")) by_name[e["name"]] = e;

  ASSERT_TRUE(by_name.count("probe_axpy(int, float const*, float*)")) << t.doc.dump();
  const json& kernel = by_name["probe_axpy(int, float const*, float*)"];
  EXPECT_EQ(kernel["cat"], "cuda_kernel");
  EXPECT_EQ(track_names[kernel["tid"].get<int64_t>()], "GPU 0 stream 13");
  EXPECT_EQ(kernel["args"]["grid"], json::array({128, 0, 0}));
  EXPECT_EQ(kernel["args"]["mangled"], "_Z10probe_axpyiPKfPf");
  EXPECT_EQ(Ns(kernel["ts"]), 1'010'000);
  EXPECT_EQ(Ns(kernel["dur"]), 40'000);

  const json& launch = by_name["cudaLaunchKernel"];
  EXPECT_EQ(launch["cat"], "cuda_api");
  EXPECT_EQ(launch["tid"], 100);  // on the host thread that called it
  EXPECT_EQ(by_name["Memcpy HtoD"]["args"]["bytes"], 4096);
  EXPECT_EQ(by_name["Memcpy HtoD"]["tid"], kernel["tid"]);

  // The NCCL call sits on its kernel's stream, above the kernel.
  const json& nccl = by_name["ncclAllReduce"];
  EXPECT_EQ(nccl["cat"], "nccl");
  EXPECT_EQ(track_names[nccl["tid"].get<int64_t>()], "GPU 0 stream 14");
  EXPECT_EQ(
      by_name["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>*)"]["tid"],
      nccl["tid"]);

  // GPU tracks sort below the host thread.
  std::map<int64_t, int> sort_index;
  for (const json& e : t.Where("M")) {
    if (e["name"] == "thread_sort_index") sort_index[e["tid"]] = e["args"]["sort_index"];
  }
  EXPECT_LT(sort_index[100], sort_index[kernel["tid"].get<int64_t>()]);

  // One arrow per launch: from the API call to the kernel, and to the copy.
  std::map<uint64_t, std::vector<json>> flows;
  for (const json& e : t.events) {
    if ((e["ph"] == "s" || e["ph"] == "f") && e["cat"] == "cuda_launch") {
      flows[e["id"].get<uint64_t>()].push_back(e);
    }
  }
  ASSERT_EQ(flows.size(), 2u);
  for (const auto& [id, steps] : flows) {
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0]["tid"], 100);
    EXPECT_EQ(steps[1]["tid"], kernel["tid"]);
    EXPECT_EQ(steps[1]["bp"], "e");
  }
}

// Point-to-point messages: an arrow from each send to the receive that got it, inside both slices
// (the receive's end, where the message arrived).
TEST(ChromeTrace, MessageArrowsFromSendToReceive) {
  Session s = report_test::MakeCleanSession();
  const uint64_t world = 0;  // a communicator the matcher maps through the collectives below
  for (RankData& r : s.ranks) {
    for (CollectiveRecord& c : r.collectives) c.comm_id = world;
  }
  P2PRecord send;
  send.kind = P2PKind::kSend;
  send.peer = 1;
  send.tag = 5;
  send.comm_id = world;
  send.enter = s.ranks[0].collectives[10].exit + 10'000;
  send.exit = send.enter + 5'000;
  send.tid = 1;
  s.ranks[0].p2p.push_back(send);
  P2PRecord recv = send;
  recv.kind = P2PKind::kRecv;
  recv.peer = 0;
  recv.enter = send.enter - 40'000;  // waited 40 us for the send
  recv.exit = send.enter + 20'000;
  s.ranks[1].p2p.push_back(recv);

  Trace t = Build(s);
  std::vector<json> steps;
  for (const json& e : t.events) {
    if (e["cat"] == "mpi_message") steps.push_back(e);
  }
  ASSERT_EQ(steps.size(), 2u) << t.doc.dump();
  EXPECT_EQ(steps[0]["ph"], "s");
  EXPECT_EQ(steps[0]["pid"], 0);
  EXPECT_EQ(steps[1]["ph"], "f");
  EXPECT_EQ(steps[1]["pid"], 1);
  EXPECT_EQ(steps[0]["id"], steps[1]["id"]);
  std::map<int, json> slices;  // by pid: the MPI_Send and MPI_Recv slices
  for (const json& e : t.Where("X")) {
    if (e["name"] == "MPI_Send" || e["name"] == "MPI_Recv") slices[e["pid"].get<int>()] = e;
  }
  ASSERT_EQ(slices.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const json& slice = slices[steps[k]["pid"].get<int>()];
    EXPECT_GT(Ns(steps[k]["ts"]), Ns(slice["ts"]));
    EXPECT_LT(Ns(steps[k]["ts"]), Ns(slice["ts"]) + Ns(slice["dur"]));
    EXPECT_EQ(steps[k]["tid"], slice["tid"]);
  }
}

TEST(ChromeTrace, LargeSessionsAreCutToAWindowOfTheRunsMiddle) {
  Session s = report_test::MakeCleanSession();
  const size_t total = CountTraceEvents(s);
  ASSERT_GE(total, 200u);
  EXPECT_FALSE(ChooseTraceWindow(s, 0).has_value());      // no limit
  EXPECT_FALSE(ChooseTraceWindow(s, total).has_value());  // fits
  std::optional<TraceWindow> w = ChooseTraceWindow(s, total / 4);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->events_total, total);
  EXPECT_GE(w->events_kept, total / 4);
  EXPECT_LT(w->events_kept, total / 2);  // slices overlapping the edges come too, not many more
  // The middle: neither the first nor the last quarter of the events' span.
  TimeNs first = s.ranks[0].collectives.front().enter;
  TimeNs last = first;
  for (const RankData& r : s.ranks) {
    for (const CollectiveRecord& c : r.collectives) {
      first = std::min(first, c.enter);
      last = std::max(last, c.exit);
    }
  }
  EXPECT_GT(w->start, first + (last - first) / 4);
  EXPECT_LT(w->end, last - (last - first) / 4);

  json doc = json::parse(BuildChromeTrace(s, MatchSession(s), w));
  size_t events = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X" && e["ph"] != "i") continue;
    ++events;
    const int64_t start = Ns(e["ts"]) + s.start;
    const int64_t end = start + (e.contains("dur") ? Ns(e["dur"]) : 0);
    EXPECT_LE(start, w->end);
    EXPECT_GE(end, w->start);
  }
  EXPECT_EQ(events, w->events_kept);
  EXPECT_EQ(doc["metadata"]["window"]["events_total"], total);
  EXPECT_EQ(doc["metadata"]["window"]["events_kept"], w->events_kept);
}

TEST(ChromeTrace, MpiFunctionNames) {
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kAllreduce, false), "MPI_Allreduce");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kReduceScatterBlock, false), "MPI_Reduce_scatter_block");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kAllreduce, true), "MPI_Iallreduce");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kBcast, true), "MPI_Ibcast");
}

}  // namespace
}  // namespace rankscope
