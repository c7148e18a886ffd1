#include "coordinator/analysis/p2p_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/analysis/diagnosis.h"
#include "core/comm_id.h"

namespace rankscope {
namespace {

// A pipeline of `ranks` stages, as pipeline-parallel training runs it: every step, stage r
// receives from r-1 (blocking in MPI_Recv until the message is there), computes inside NVTX range
// "compute", and sends to r+1 (eager: the send returns at once).
struct PipelineSim {
  int ranks = 4;
  int steps = 40;
  DurationNs compute = 10 * kNsPerMs;
  DurationNs jitter = 300 * kNsPerUs;
  std::map<int, DurationNs> slow;  // extra compute per step, by rank
  // Post with MPI_Isend and receive with MPI_Irecv + MPI_Wait (the Wait blocks).
  bool nonblocking = false;
  // Run on a communicator whose ranks are the world's in reverse order (known to the coordinator
  // through one collective each rank made on it), instead of MPI_COMM_WORLD.
  bool reversed_comm = false;
  bool tag_by_step = false;  // tag = step, as codes tagging messages by microbatch do
  // Messages too large to go eagerly: a send (or the Wait of an Isend) completes only once the
  // receiver has posted its receive.
  bool rendezvous = false;
  uint64_t seed = 3;
};

std::vector<Finding> LateSenders(const Session& s) {
  P2PMatchStats stats;
  return FindLateSenders(s, MatchMessages(s, &stats), stats, PointToPointOptions{});
}

std::vector<Finding> LateReceivers(const Session& s) {
  P2PMatchStats stats;
  return FindLateReceivers(s, MatchMessages(s, &stats), stats, PointToPointOptions{});
}

Session SimulatePipeline(const PipelineSim& sim) {
  std::mt19937_64 rng(sim.seed);
  auto jitter = [&] { return std::uniform_int_distribution<DurationNs>(0, sim.jitter)(rng); };
  Session s;
  s.session_id = "p2p";
  s.launcher = "mpirun";
  s.world_size = sim.ranks;
  s.command = {"mpirun", "-np", std::to_string(sim.ranks), "./pipe"};
  s.aligned = true;
  s.ranks.resize(static_cast<size_t>(sim.ranks));
  const uint64_t comm = sim.reversed_comm ? 0xabcdef : WorldCommId(sim.ranks);
  auto comm_rank = [&](int world) { return sim.reversed_comm ? sim.ranks - 1 - world : world; };
  for (int r = 0; r < sim.ranks; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    d.id.rank = r;
    d.id.world_size = sim.ranks;
    d.id.node = "n" + std::to_string(r);
    d.id.launcher = "mpirun";
    d.id.program_pid = 100 + r;
    d.id.program = {"./pipe"};
    d.clock_fitted = true;
    d.finished = true;
    if (sim.reversed_comm) {
      CollectiveRecord c;
      c.comm_id = comm;
      c.op = CollectiveOp::kBarrier;
      c.comm_size = sim.ranks;
      c.comm_rank = comm_rank(r);
      c.enter = 1;
      c.exit = 2;
      d.collectives.push_back(c);
    }
  }
  const TimeNs t0 = 100 * kNsPerSec;
  std::vector<TimeNs> ready(static_cast<size_t>(sim.ranks), t0);
  for (int k = 0; k < sim.steps; ++k) {
    TimeNs upstream_post = 0;
    for (int r = 0; r < sim.ranks; ++r) {
      RankData& d = s.ranks[static_cast<size_t>(r)];
      TimeNs t = ready[static_cast<size_t>(r)];
      if (r > 0) {
        const TimeNs done = std::max(t, upstream_post) + 20 * kNsPerUs;
        P2PRecord rcv;
        rcv.kind = sim.nonblocking ? P2PKind::kWait : P2PKind::kRecv;
        rcv.completed = sim.nonblocking ? P2PKind::kIrecv : P2PKind::kRecv;
        rcv.peer = comm_rank(r - 1);
        rcv.tag = sim.tag_by_step ? k : 7;
        rcv.comm_id = comm;
        rcv.enter = t;
        rcv.exit = done;
        if (sim.nonblocking) {
          P2PRecord post = rcv;  // the Irecv itself, posted at the step's start
          post.kind = P2PKind::kIrecv;
          post.completed = P2PKind::kIrecv;
          post.enter = post.exit = t - 5 * kNsPerUs;
          d.p2p.push_back(post);
        }
        d.p2p.push_back(rcv);
        t = done;
      }
      auto extra = sim.slow.find(r);
      const TimeNs end = t + sim.compute + jitter() + (extra == sim.slow.end() ? 0 : extra->second);
      d.ranges.push_back({"", "compute", t, end, 1, 0});
      t = end;
      if (r + 1 < sim.ranks) {
        P2PRecord snd;
        snd.kind = sim.nonblocking ? P2PKind::kIsend : P2PKind::kSend;
        snd.completed = snd.kind;
        snd.peer = comm_rank(r + 1);
        snd.tag = sim.tag_by_step ? k : 7;
        snd.comm_id = comm;
        snd.bytes = 1 << 20;
        snd.enter = t;
        snd.exit = t + 5 * kNsPerUs;
        d.p2p.push_back(snd);
        upstream_post = t;
        t = snd.exit;
        if (sim.rendezvous) {
          // The next stage posts its receive for this step when it is done with the last one.
          const TimeNs receive_posted =
              ready[static_cast<size_t>(r + 1)] - (sim.nonblocking ? 5 * kNsPerUs : 0);
          const TimeNs done = std::max(t, receive_posted) + 20 * kNsPerUs;
          if (sim.nonblocking) {
            P2PRecord wait = snd;  // the Wait that completes the Isend
            wait.kind = P2PKind::kWait;
            wait.enter = t;
            wait.exit = done;
            d.p2p.push_back(wait);
          } else {
            d.p2p.back().exit = done;
          }
          t = done;
        }
      }
      ready[static_cast<size_t>(r)] = t;
    }
  }
  return s;
}

TEST(LateSenderTest, TheSlowStageIsNamedNotTheStagesBehindIt) {
  PipelineSim sim;
  sim.slow[1] = 20 * kNsPerMs;
  const Session s = SimulatePipeline(sim);
  P2PMatchStats stats;
  const std::vector<P2PMessage> late = MatchMessages(s, &stats);
  EXPECT_EQ(stats.matched, 3 * sim.steps);
  EXPECT_EQ(stats.unmapped, 0);
  // Rank 3 waits for rank 2 as long as rank 2 waits for rank 1, but all of it is passed on.
  DurationNs from2_direct = 0, from2_wait = 0;
  for (const P2PMessage& m : late) {
    if (m.sender == 2) {
      from2_direct += m.direct;
      from2_wait += m.wait;
    }
  }
  EXPECT_GT(from2_wait, 10 * 20 * kNsPerMs);
  EXPECT_LT(from2_direct, from2_wait / 10);

  const std::vector<Finding> findings = testing::Planned(s, LateSenders(s));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(FindingKindName(f.kind), "late_sender");
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(f.wait_state->others, std::vector<int>{2});
  EXPECT_NEAR(static_cast<double>(f.wait_state->median_direct_wait), 20.0 * kNsPerMs,
              1.0 * kNsPerMs);
  EXPECT_GE(f.wait_state->late_messages, sim.steps - 2);
  EXPECT_EQ(f.wait_state->ranges[0].first, "compute");
  EXPECT_NE(f.summary.find("rank 1 (node n1) sent late: rank 2 waited in receives"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("NVTX range 'compute'"), std::string::npos) << f.summary;
  ASSERT_FALSE(f.next_steps.empty());
  EXPECT_EQ(f.next_steps[0].tool, "nsys");
  EXPECT_NE(f.next_steps[0].command.find("= 1 ]; then exec nsys"), std::string::npos);
}

TEST(LateSenderTest, NonBlockingCallsOnAnotherCommunicatorMatchThroughItsRanks) {
  PipelineSim sim;
  sim.slow[2] = 15 * kNsPerMs;
  sim.nonblocking = true;
  sim.reversed_comm = true;
  sim.tag_by_step = true;
  const Session s = SimulatePipeline(sim);
  P2PMatchStats stats;
  MatchMessages(s, &stats);
  EXPECT_EQ(stats.matched, 3 * sim.steps);
  const std::vector<Finding> findings = LateSenders(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].wait_state->others, std::vector<int>{3});
  EXPECT_NEAR(static_cast<double>(findings[0].wait_state->median_direct_wait), 15.0 * kNsPerMs,
              1.0 * kNsPerMs);
}

// The folded tallies (fed in chunks, out of order, as windows close) give what the messages
// give: the median of the direct delays is exact where it passes the threshold, also when it is
// the mean of a delay below the threshold and one above (even counts, delays straddling it).
TEST(LateSenderTest, FoldedTalliesGiveTheFindingsOfTheMessages) {
  int findings_seen = 0;
  for (DurationNs slow_us : {0, 700, 950, 1000, 1050, 1150, 1300, 3000}) {
    for (bool rendezvous : {false, true}) {
      PipelineSim sim;
      sim.slow[1] = slow_us * kNsPerUs;
      sim.slow[2] = slow_us * kNsPerUs / 2;
      sim.rendezvous = rendezvous;
      sim.jitter = 400 * kNsPerUs;
      sim.seed = static_cast<uint64_t>(slow_us) + (rendezvous ? 7 : 0);
      const Session s = SimulatePipeline(sim);
      P2PMatchStats stats;
      std::vector<P2PMessage> messages = MatchMessages(s, &stats);
      const PointToPointOptions options;
      std::vector<std::string> whole_notes, folded_notes;
      std::vector<Finding> whole = FindLateSenders(s, messages, stats, options, &whole_notes);
      for (Finding& f : FindLateReceivers(s, messages, stats, options, &whole_notes)) {
        whole.push_back(std::move(f));
      }
      const WaitRanges ranges =
          RangesWhileWaitedByWindow(s, SplitSession(s, PlanWindows(s, WindowOptions{})));
      std::shuffle(messages.begin(), messages.end(), std::mt19937_64(sim.seed));
      WaitTallyFold fold(options);
      for (size_t at = 0; at < messages.size(); at += 7) {
        fold.Add(std::vector<P2PMessage>(
            messages.begin() + static_cast<std::ptrdiff_t>(at),
            messages.begin() + static_cast<std::ptrdiff_t>(std::min(at + 7, messages.size()))));
      }
      const WaitTallies tallies = fold.Take();
      std::vector<Finding> folded =
          FindLateSenders(s, tallies, stats, options, ranges, &folded_notes);
      for (Finding& f : FindLateReceivers(s, tallies, stats, options, ranges, &folded_notes)) {
        folded.push_back(std::move(f));
      }
      const std::string label =
          "slow " + std::to_string(slow_us) + " us" + (rendezvous ? ", rendezvous" : "");
      ASSERT_EQ(whole.size(), folded.size()) << label;
      for (size_t i = 0; i < whole.size(); ++i) {
        EXPECT_EQ(whole[i].summary, folded[i].summary) << label;
        EXPECT_EQ(whole[i].cost_ns, folded[i].cost_ns) << label;
        EXPECT_DOUBLE_EQ(whole[i].confidence, folded[i].confidence) << label;
        ASSERT_TRUE(whole[i].wait_state && folded[i].wait_state) << label;
        EXPECT_EQ(whole[i].wait_state->median_direct_wait, folded[i].wait_state->median_direct_wait)
            << label;
        EXPECT_EQ(whole[i].wait_state->median_message_bytes,
                  folded[i].wait_state->median_message_bytes)
            << label;
        EXPECT_EQ(whole[i].wait_state->late_messages, folded[i].wait_state->late_messages) << label;
      }
      EXPECT_EQ(whole_notes, folded_notes) << label;
      findings_seen += static_cast<int>(whole.size());
    }
  }
  EXPECT_GT(findings_seen, 4);  // the comparison covers findings, not only their absence
}

TEST(LateSenderTest, BalancedPipelinesGiveNoFinding) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    PipelineSim sim;
    sim.seed = seed;
    sim.ranks = 2 + static_cast<int>(seed % 7);
    sim.jitter = (seed % 3 + 1) * kNsPerMs;  // up to 30% of the compute time
    const Session s = SimulatePipeline(sim);
    EXPECT_TRUE(LateSenders(s).empty()) << "seed " << seed;
    EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty()) << "seed " << seed;
  }
}

TEST(LateReceiverTest, TheSlowLastStageIsNamedNotTheStagesBehindIt) {
  for (bool nonblocking : {false, true}) {
    PipelineSim sim;
    sim.slow[3] = 20 * kNsPerMs;
    sim.rendezvous = true;
    sim.nonblocking = nonblocking;
    const Session s = SimulatePipeline(sim);
    // Rank 2 waits in its sends for rank 3; ranks 1 and 0 wait for rank 2 and 1 as long, but
    // only because those were waiting themselves.
    DurationNs to3_direct = 0, to2_wait = 0, to2_direct = 0;
    for (const P2PMessage& m : MatchMessages(s)) {
      if (m.receiver == 3) to3_direct += m.send_direct;
      if (m.receiver == 2) {
        to2_wait += m.send_wait;
        to2_direct += m.send_direct;
      }
      EXPECT_LT(m.direct, kNsPerMs) << "nobody sent late, beyond jitter";
    }
    EXPECT_GT(to3_direct, 30 * 20 * kNsPerMs) << nonblocking;
    EXPECT_GT(to2_wait, 30 * 20 * kNsPerMs) << nonblocking;
    EXPECT_LT(to2_direct, to2_wait / 10) << nonblocking;

    EXPECT_TRUE(LateSenders(s).empty());
    const std::vector<Finding> findings = testing::Planned(s, LateReceivers(s));
    ASSERT_EQ(findings.size(), 1u) << nonblocking;
    const Finding& f = findings[0];
    EXPECT_EQ(FindingKindName(f.kind), "late_receiver");
    EXPECT_EQ(f.ranks, std::vector<int>{3});
    EXPECT_EQ(f.wait_state->others, std::vector<int>{2});
    EXPECT_NEAR(static_cast<double>(f.wait_state->median_direct_wait), 20.0 * kNsPerMs,
                1.0 * kNsPerMs);
    EXPECT_EQ(f.wait_state->median_message_bytes, 1 << 20);
    EXPECT_EQ(f.wait_state->ranges[0].first, "compute");
    EXPECT_NE(f.summary.find("rank 3 (node n3) received late: rank 2 waited in sends"),
              std::string::npos)
        << f.summary;
    EXPECT_NE(f.summary.find("A send of 1.0 MiB too large to go eagerly"), std::string::npos)
        << f.summary;
    ASSERT_FALSE(f.next_steps.empty());
    EXPECT_EQ(f.next_steps[0].tool, "nsys");
  }
}

TEST(LateReceiverTest, ASlowMiddleStageIsBothLateSenderAndLateReceiver) {
  PipelineSim sim;
  sim.slow[1] = 20 * kNsPerMs;
  sim.rendezvous = true;
  const Session s = SimulatePipeline(sim);
  const std::vector<Finding> findings = Diagnose(s, AnalysisOptions{});
  std::vector<std::pair<std::string, std::vector<int>>> kinds;
  for (const Finding& f : findings) kinds.emplace_back(FindingKindName(f.kind), f.ranks);
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::pair<std::string, std::vector<int>>>{{"late_receiver", {1}},
                                                                          {"late_sender", {1}}}));
}

// A middle stage a little slow itself, ahead of a slower stage: that one sets the pace, and most
// of what the middle one passes on is relayed, so the wait-state finding is the slowest stage's
// alone (either way round). Whether its own extra work is worth a finding is the blame model's
// call (a straggler, with the what-if of fixing both).
TEST(LateReceiverTest, ASlightlySlowStageAheadOfTheSlowestIsNotTheLateOne) {
  for (bool rendezvous : {true, false}) {
    PipelineSim sim;
    sim.rendezvous = rendezvous;
    const int slowest = rendezvous ? 3 : 1;
    sim.slow[slowest] = 20 * kNsPerMs;
    sim.slow[2] = 6 * kNsPerMs;
    const Session s = SimulatePipeline(sim);
    DurationNs own = 0, passed_on = 0;
    for (const P2PMessage& m : MatchMessages(s)) {
      if ((rendezvous ? m.receiver : m.sender) != 2) continue;
      own += rendezvous ? m.send_direct : m.direct;
      passed_on += rendezvous ? m.send_wait : m.wait;
    }
    // Its own delay is measured from where the pair last met: the 6 of the ~20 ms a step that
    // it makes rank 1 (or 3) wait, not the end of its previous step's work as well.
    EXPECT_NEAR(static_cast<double>(own) / static_cast<double>(passed_on), 0.3, 0.05) << rendezvous;
    const std::vector<Finding> late = rendezvous ? LateReceivers(s) : LateSenders(s);
    ASSERT_EQ(late.size(), 1u) << rendezvous;
    EXPECT_EQ(late[0].ranks, std::vector<int>{slowest}) << rendezvous;
    EXPECT_TRUE((rendezvous ? LateSenders(s) : LateReceivers(s)).empty()) << rendezvous;
  }
}

TEST(LateReceiverTest, BalancedRendezvousPipelinesGiveNoFinding) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    PipelineSim sim;
    sim.seed = seed;
    sim.ranks = 2 + static_cast<int>(seed % 7);
    sim.jitter = (seed % 3 + 1) * kNsPerMs;
    sim.rendezvous = true;
    sim.nonblocking = seed % 2 == 0;
    const Session s = SimulatePipeline(sim);
    EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty()) << "seed " << seed;
  }
}

// A late sender's waits compare its clock with its receiver's: well above the clocks'
// uncertainty they are a finding, within it only a note.
TEST(LateSenderTest, WaitsWellAboveClockUncertaintyAreStillAFinding) {
  PipelineSim sim;
  sim.slow[1] = 20 * kNsPerMs;
  Session s = SimulatePipeline(sim);
  for (RankData& r : s.ranks) r.clock.uncertainty_ns = 1 * kNsPerMs;  // 3x = 3 ms << 20 ms
  std::vector<std::string> notes;
  P2PMatchStats stats;
  const std::vector<Finding> findings =
      FindLateSenders(s, MatchMessages(s, &stats), stats, PointToPointOptions{}, &notes);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].wait_state->clock_uncertainty, 1 * kNsPerMs);
  EXPECT_TRUE(notes.empty()) << notes[0];
}

TEST(LateSenderTest, WaitsWithinClockUncertaintyAreOnlyNoted) {
  PipelineSim sim;
  sim.slow[1] = 20 * kNsPerMs;
  Session s = SimulatePipeline(sim);
  // Only the late sender's clock is poorly aligned: the larger side counts.
  s.ranks[1].clock.uncertainty_ns = 25 * kNsPerMs;
  std::vector<std::string> notes;
  P2PMatchStats stats;
  const std::vector<P2PMessage> messages = MatchMessages(s, &stats);
  EXPECT_TRUE(FindLateSenders(s, messages, stats, PointToPointOptions{}, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 1 (node n1) sent late: rank 2 waited in receives"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("median 20."), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("clock alignment between rank 1 and rank 2 is only good to 25.00 ms"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("not reported as a late sender"), std::string::npos) << notes[0];

  // The blame model still finds it: its own work (on its own clock) is 20 ms a step longer.
  // Diagnose reports it as a straggler and drops the note that would contradict it.
  notes.clear();
  const std::vector<Finding> findings = Diagnose(s, AnalysisOptions{}, &notes);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(FindingKindName(findings[0].kind), "straggler");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_TRUE(notes.empty()) << notes[0];
}

// The same for a late receiver: the senders' waits in rendezvous sends are within the clocks'
// uncertainty.
TEST(LateReceiverTest, WaitsWithinClockUncertaintyAreOnlyNoted) {
  PipelineSim sim;
  sim.slow[3] = 20 * kNsPerMs;
  sim.rendezvous = true;
  Session s = SimulatePipeline(sim);
  for (RankData& r : s.ranks) r.clock.uncertainty_ns = 10 * kNsPerMs;  // 3x = 30 ms > 20 ms
  std::vector<std::string> notes;
  P2PMatchStats stats;
  const std::vector<P2PMessage> messages = MatchMessages(s, &stats);
  EXPECT_TRUE(FindLateReceivers(s, messages, stats, PointToPointOptions{}, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 3 (node n3) received late"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("not reported as a late receiver"), std::string::npos) << notes[0];
}

TEST(LateSenderTest, UnplaceablePeersAreCountedNotMatched) {
  PipelineSim sim;
  sim.slow[1] = 20 * kNsPerMs;
  Session s = SimulatePipeline(sim);
  for (RankData& r : s.ranks) {
    for (P2PRecord& p : r.p2p) p.comm_id = 0x1234;  // a communicator nothing maps
  }
  P2PMatchStats stats;
  EXPECT_TRUE(MatchMessages(s, &stats).empty());
  EXPECT_EQ(stats.matched, 0);
  EXPECT_EQ(stats.unmapped, stats.sends + stats.receives);
  EXPECT_TRUE(LateSenders(s).empty());
  EXPECT_TRUE(LateReceivers(s).empty());
}

}  // namespace
}  // namespace rankscope
