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

// Streamed to a sink in pieces (as trace.json is written), the same text; a sink that fails
// gets nothing more.
TEST(ChromeTrace, StreamedInPiecesIsTheSameText) {
  const Session s = report_test::MakeSession();
  const SessionMatches m = MatchSession(s);
  const std::string whole = BuildChromeTrace(s, m);
  std::string joined;
  int pieces = 0;
  ASSERT_TRUE(StreamChromeTrace(s, m, std::nullopt, [&](std::string_view piece) {
    joined += piece;
    ++pieces;
    return true;
  }));
  EXPECT_EQ(joined, whole);
  EXPECT_GE(pieces, 1);
  int calls = 0;
  EXPECT_FALSE(StreamChromeTrace(s, m, std::nullopt, [&](std::string_view) {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1);
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

// A session that holds only some of its records (read window by window: those the trace
// keeps): an instance whose member's record is not held gets no chain, as when the record is
// held but outside the kept window, rather than a chain between the members left.
TEST(ChromeTrace, AnInstanceWithAMemberNotHeldGetsNoFlowChain) {
  Session s = report_test::MakeSession();
  const SessionMatches matches = MatchSession(s);
  auto chains = [&](const Session& session) {
    std::set<uint64_t> ids;
    const json doc = json::parse(BuildChromeTrace(session, matches));
    for (const json& e : doc["traceEvents"]) {
      if (e["cat"] == "mpi_flow") ids.insert(e["id"].get<uint64_t>());
    }
    return ids.size();
  };
  ASSERT_EQ(chains(s), 3u);
  // Rank 1 without its first collective record (allreduce 0).
  RankData* rank1 = nullptr;
  for (RankData& r : s.ranks) {
    if (r.id.rank == 1) rank1 = &r;
  }
  ASSERT_NE(rank1, nullptr);
  ASSERT_FALSE(rank1->collectives.empty());
  rank1->collectives.erase(rank1->collectives.begin());
  EXPECT_EQ(chains(s), 2u);
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

TEST(ChromeTrace, LargeSessionsWithoutStepsAreCutToAWindowOfTheRunsMiddle) {
  Session s = report_test::MakeCleanSession();  // no NVTX ranges: no steps
  const SessionMatches matches = MatchSession(s);
  const size_t total = CountTraceEvents(s);
  ASSERT_GE(total, 200u);
  EXPECT_FALSE(ChooseTraceWindow(s, matches, 0).has_value());      // no limit
  EXPECT_FALSE(ChooseTraceWindow(s, matches, total).has_value());  // fits
  std::optional<TraceWindow> w = ChooseTraceWindow(s, matches, total / 4);
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->steps.empty());
  EXPECT_EQ(w->steps_total, 0u);
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

  json doc = json::parse(BuildChromeTrace(s, matches, w));
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
  const json& meta = doc["metadata"]["window"];
  EXPECT_EQ(meta["events_total"], total);
  EXPECT_EQ(meta["events_kept"], w->events_kept);
  EXPECT_FALSE(meta.contains("steps_kept"));
  EXPECT_EQ(meta["description"], DescribeTraceWindow(*w));
  EXPECT_NE(meta["description"].get<std::string>().find("from the middle of the run"),
            std::string::npos);
  EXPECT_NE(meta["everything"].get<std::string>().find("--full-trace"), std::string::npos);
}

// The flow chains of a trace, by id.
std::map<uint64_t, std::vector<json>> CollectiveFlows(const json& doc) {
  std::map<uint64_t, std::vector<json>> chains;
  for (const json& e : doc["traceEvents"]) {
    if ((e["ph"] == "s" || e["ph"] == "t" || e["ph"] == "f") && e["cat"] == "mpi_flow") {
      chains[e["id"].get<uint64_t>()].push_back(e);
    }
  }
  return chains;
}

// A window that ends while an all-reduce is being entered (ranks 0 and 1 are in, 2 and 3 not
// yet): its arrow would end on rank 1 as if it had arrived last, so it has none.
TEST(ChromeTrace, ACollectiveGetsItsArrowOnlyWhenEveryMemberIsKept) {
  Session s = report_test::MakeCleanSession();  // allreduce k: rank r enters at k ms + r*10 us
  const SessionMatches matches = MatchSession(s);
  TraceWindow w;
  w.start = s.ranks[0].collectives[10].enter;
  w.end = s.ranks[1].collectives[20].enter;  // instance 20: ranks 0 and 1 only
  json doc = json::parse(BuildChromeTrace(s, matches, w));
  std::set<int> pids_of_seq20;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["args"].value("seq", -1) == 20)
      pids_of_seq20.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(pids_of_seq20, (std::set<int>{0, 1}));
  std::map<uint64_t, std::vector<json>> chains = CollectiveFlows(doc);
  EXPECT_EQ(chains.size(), 10u);  // instances 10..19
  for (const auto& [id, chain] : chains) EXPECT_EQ(chain.size(), 4u) << "flow " << id;
}

// A training loop with NVTX step ranges: 4 ranks, `steps` steps 1 ms apart after a "setup"
// range. On every rank step k is "step" { "compute"; allreduce seq k } with a mark at its start,
// the ranks up to 30 us apart; in step `late_step` rank 3 computes 200 us longer, so the others
// wait for it there and nowhere else. kPerStep events per step, kOutsideSteps outside them.
constexpr size_t kPerStep = 4 * 4;
constexpr size_t kOutsideSteps = 4;
Session MakeStepSession(int steps, int late_step) {
  Session s = report_test::MakeCleanSession();
  for (RankData& r : s.ranks) {
    const int rank = r.id.rank;
    r.collectives.clear();
    r.ranges.push_back({"", "setup", s.start + 100 * kNsPerUs, s.start + 900 * kNsPerUs, 1, 0});
    for (int k = 0; k < steps; ++k) {
      const TimeNs base = s.start + (k + 1) * kNsPerMs;
      const TimeNs step_start = base + rank * 10 * kNsPerUs;
      const DurationNs late = k == late_step ? 200 * kNsPerUs : 0;
      const TimeNs compute_end = base + 500 * kNsPerUs + (rank == 3 ? late : 0);
      CollectiveRecord c;
      c.comm_id = 7;
      c.seq = static_cast<uint64_t>(k);
      c.op = CollectiveOp::kAllreduce;
      c.comm_size = 4;
      c.comm_rank = rank;
      c.enter = compute_end;
      c.exit = base + 600 * kNsPerUs + late;
      c.tid = 1;
      r.collectives.push_back(c);
      r.ranges.push_back({"", "step", step_start, c.exit + 50 * kNsPerUs, 1, 0});
      r.ranges.push_back({"", "compute", step_start + 10 * kNsPerUs, compute_end, 1, 1});
      r.marks.push_back({"", "iteration", step_start, 1});
    }
  }
  s.end = s.start + (steps + 2) * kNsPerMs;
  return s;
}

// Step k's span in MakeStepSession: rank 0's start to the latest end.
std::pair<TimeNs, TimeNs> StepSpan(const Session& s, size_t k) {
  std::pair<TimeNs, TimeNs> span{s.ranks[0].ranges[1 + 2 * k].start, 0};
  for (const RankData& r : s.ranks) span.second = std::max(span.second, r.ranges[1 + 2 * k].end);
  return span;
}

// The step indices whose span holds each written slice or instant; a record outside every step
// is counted under -1.
std::map<int, size_t> EventsByStep(const Session& s, const json& doc, int steps) {
  std::map<int, size_t> by_step;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X" && e["ph"] != "i") continue;
    const TimeNs start = Ns(e["ts"]) + s.start;
    const TimeNs end = start + (e.contains("dur") ? Ns(e["dur"]) : 0);
    int step = -1;
    for (int k = 0; k < steps; ++k) {
      auto [from, to] = StepSpan(s, static_cast<size_t>(k));
      if (from <= start && end <= to) step = k;
    }
    ++by_step[step];
  }
  return by_step;
}

TEST(ChromeTrace, StepSessionOverBudgetKeepsWholeStepsFirstLastWorstAndEvenlySpaced) {
  constexpr int kSteps = 40;
  constexpr size_t kLate = 12;
  Session s = MakeStepSession(kSteps, kLate);
  const SessionMatches matches = MatchSession(s);
  const size_t total = CountTraceEvents(s);
  ASSERT_EQ(total, kSteps * kPerStep + kOutsideSteps);
  const size_t budget = 10 * kPerStep + kPerStep / 2;  // ten whole steps and a half

  std::optional<TraceWindow> w = ChooseTraceWindow(s, matches, budget);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->steps_total, static_cast<size_t>(kSteps));
  EXPECT_EQ(w->worst_step, kLate);
  std::vector<size_t> kept;
  for (const TraceStep& step : w->steps) kept.push_back(step.index);
  ASSERT_GE(kept.size(), 9u);   // as many as fit: evenly spaced ones and the worst
  ASSERT_LE(kept.size(), 10u);  // within the budget
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), static_cast<size_t>(kSteps - 1));
  EXPECT_TRUE(std::count(kept.begin(), kept.end(), kLate));
  // Without the worst step, the gaps between kept steps differ by at most one.
  std::vector<size_t> even = kept;
  std::erase(even, kLate);
  size_t min_gap = kSteps, max_gap = 0;
  for (size_t i = 1; i < even.size(); ++i) {
    min_gap = std::min(min_gap, even[i] - even[i - 1]);
    max_gap = std::max(max_gap, even[i] - even[i - 1]);
  }
  EXPECT_LE(max_gap - min_gap, 1u) << ::testing::PrintToString(kept);
  EXPECT_EQ(w->events_kept, kept.size() * kPerStep);
  EXPECT_LE(w->events_kept, budget);
  for (const TraceStep& step : w->steps) {
    EXPECT_EQ(std::make_pair(step.start, step.end), StepSpan(s, step.index)) << step.index;
  }

  // Every rank's records of a kept step are written, none of any other step, nothing outside.
  json doc = json::parse(BuildChromeTrace(s, matches, w));
  std::map<int, size_t> expected;
  for (size_t k : kept) expected[static_cast<int>(k)] = kPerStep;
  EXPECT_EQ(EventsByStep(s, doc, kSteps), expected);
  // One arrow per kept step's all-reduce, across all four ranks.
  std::map<uint64_t, std::vector<json>> chains = CollectiveFlows(doc);
  EXPECT_EQ(chains.size(), kept.size());
  for (const auto& [id, chain] : chains) EXPECT_EQ(chain.size(), 4u) << "flow " << id;
}

TEST(ChromeTrace, MetadataOfSampledStepsListsThemAndHowToGetEverything) {
  Session s = MakeStepSession(40, 12);
  const SessionMatches matches = MatchSession(s);
  std::optional<TraceWindow> w = ChooseTraceWindow(s, matches, 10 * kPerStep);
  ASSERT_TRUE(w.has_value());
  json doc = json::parse(BuildChromeTrace(s, matches, w));
  const json& meta = doc["metadata"]["window"];
  std::vector<size_t> kept;
  for (const TraceStep& step : w->steps) kept.push_back(step.index);
  EXPECT_EQ(meta["steps_kept"].get<std::vector<size_t>>(), kept);
  EXPECT_EQ(meta["steps_total"], 40);
  EXPECT_EQ(meta["step_with_most_waiting"], 12);
  EXPECT_EQ(meta["events_kept"], w->events_kept);
  EXPECT_EQ(meta["events_total"], 40 * kPerStep + kOutsideSteps);
  EXPECT_NE(meta["everything"].get<std::string>().find("--full-trace"), std::string::npos);
  const std::string description = meta["description"];
  EXPECT_EQ(description, DescribeTraceWindow(*w));
  EXPECT_EQ(description.rfind("trace.json holds " + std::to_string(kept.size()) +
                                  " of the run's 40 steps, whole and on every rank (steps 0, ",
                              0),
            0u)
      << description;
  EXPECT_NE(description.find(", 39, evenly spaced; step 12 had the most waiting)"),
            std::string::npos)
      << description;
  EXPECT_NE(description.find("--full-trace writes them all"), std::string::npos);
}

// The step with the most waiting is kept first, then the first step, then the last; when not even
// one step fits whole, the window of the run's middle is kept after all.
TEST(ChromeTrace, StepsThatDoNotAllFitKeepTheMostWaitingFirstElseAWindow) {
  Session s = MakeStepSession(40, 12);
  const SessionMatches matches = MatchSession(s);
  std::optional<TraceWindow> w = ChooseTraceWindow(s, matches, 2 * kPerStep + kPerStep / 2);
  ASSERT_TRUE(w.has_value());
  std::vector<size_t> kept;
  for (const TraceStep& step : w->steps) kept.push_back(step.index);
  EXPECT_EQ(kept, (std::vector<size_t>{0, 12}));

  w = ChooseTraceWindow(s, matches, kPerStep - 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->steps.empty());
  EXPECT_EQ(w->steps_total, 40u);
  EXPECT_GE(w->events_kept, kPerStep - 1);
  EXPECT_NE(DescribeTraceWindow(*w).find("its 40 steps are too large to keep whole"),
            std::string::npos)
      << DescribeTraceWindow(*w);
}

// A first step that absorbed a long start-up does not fit: the others are sampled without it.
TEST(ChromeTrace, AFirstStepTooLargeToKeepLeavesRoomForTheOthers) {
  Session s = MakeStepSession(40, 12);
  const TimeNs in_step0 = s.ranks[0].ranges[1].start;
  for (int i = 0; i < 100; ++i) s.ranks[0].marks.push_back({"", "init", in_step0 + i, 1});
  const SessionMatches matches = MatchSession(s);
  const size_t budget = 8 * kPerStep;
  std::optional<TraceWindow> w = ChooseTraceWindow(s, matches, budget);
  ASSERT_TRUE(w.has_value());
  std::vector<size_t> kept;
  for (const TraceStep& step : w->steps) kept.push_back(step.index);
  ASSERT_GE(kept.size(), 7u) << ::testing::PrintToString(kept);
  EXPECT_GT(kept.front(), 0u);
  EXPECT_EQ(kept.back(), 39u);
  EXPECT_TRUE(std::count(kept.begin(), kept.end(), 12u));
  EXPECT_EQ(w->events_kept, kept.size() * kPerStep);
  EXPECT_LE(w->events_kept, budget);
}

TEST(ChromeTrace, UnderBudgetOrWithoutOneNothingIsDropped) {
  Session s = MakeStepSession(40, 12);
  const SessionMatches matches = MatchSession(s);
  const size_t total = CountTraceEvents(s);
  EXPECT_FALSE(ChooseTraceWindow(s, matches, total).has_value());  // fits
  EXPECT_FALSE(ChooseTraceWindow(s, matches, 0).has_value());      // 0: no budget
  EXPECT_FALSE(ChooseTraceWindow(s, matches, kDefaultMaxTraceEvents).has_value());
  json doc = json::parse(BuildChromeTrace(s, matches));
  std::map<int, size_t> expected{{-1, kOutsideSteps}};
  for (int k = 0; k < 40; ++k) expected[k] = kPerStep;
  EXPECT_EQ(EventsByStep(s, doc, 40), expected);
  EXPECT_FALSE(doc["metadata"].contains("window"));
  EXPECT_EQ(CollectiveFlows(doc).size(), 40u);
}

// kDefaultMaxTraceEvents assumes a couple of hundred bytes per event of MPI and NVTX records
// (flow arrows and track names included): a million of them stays a few hundred MB.
TEST(ChromeTrace, BytesPerEventKeepTheDefaultBudgetOpenable) {
  Session s = MakeStepSession(200, 12);
  const double bytes = static_cast<double>(BuildChromeTrace(s, MatchSession(s)).size());
  const double per_event = bytes / static_cast<double>(CountTraceEvents(s));
  EXPECT_GT(per_event, 100.0);
  EXPECT_LT(per_event, 250.0);
  EXPECT_LT(per_event * static_cast<double>(kDefaultMaxTraceEvents), 250e6);
}

TEST(ChromeTrace, MpiFunctionNames) {
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kAllreduce, false), "MPI_Allreduce");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kReduceScatterBlock, false), "MPI_Reduce_scatter_block");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kAllreduce, true), "MPI_Iallreduce");
  EXPECT_EQ(MpiFunctionName(CollectiveOp::kBcast, true), "MPI_Ibcast");
}

}  // namespace
}  // namespace rankscope
