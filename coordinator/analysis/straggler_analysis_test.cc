#include "coordinator/analysis/straggler_analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/collective_matcher.h"

namespace rankscope {
namespace {

using testing::Planned;
using testing::Simulate;
using testing::TrainingSim;

std::vector<Finding> Stragglers(const Session& s, std::vector<std::string>* notes = nullptr) {
  return FindStragglers(s, MatchCollectives(s), StragglerOptions{}, notes);
}

TEST(StragglerAnalysisTest, SlowComputeOnOneRank) {
  TrainingSim sim;
  sim.slow_compute[2] = 30 * kNsPerMs;
  const Session s = Simulate(sim);
  const std::vector<Finding> findings = Planned(s, Stragglers(s));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(FindingKindName(f.kind), "straggler");
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(f.arrivals->instances_last, 50);
  EXPECT_EQ(f.arrivals->instances_total, 50);
  EXPECT_EQ(f.cause_range->name, "compute");
  EXPECT_EQ(f.arrival_figures->persistence, Lateness::kThroughout);
  EXPECT_EQ(f.arrivals->ops.at("allreduce"), 50);
  EXPECT_EQ(f.arrival_figures->wait_states, (std::map<std::string, int>{{"wait_at_nxn", 50}}));
  const double planted = 30.0 * kNsPerMs * 50 * 3;
  EXPECT_NEAR(static_cast<double>(f.arrivals->others_wait), planted, 0.05 * planted);
  EXPECT_EQ(f.cost_ns, f.arrivals->others_wait);
  EXPECT_NEAR(static_cast<double>(f.arrivals->median_lateness), 30.0 * kNsPerMs, 1.0 * kNsPerMs);
  // The distribution: ordered quantiles around the planted 30 ms (jitter is 0.5 ms).
  const std::vector<DurationNs>& q = f.arrival_figures->lateness_quantiles;  // p10 ... max
  ASSERT_EQ(q.size(), 6u);
  EXPECT_LE(q[0], q[2]);
  EXPECT_LE(q[2], q[4]);
  EXPECT_LE(q[4], q[5]);
  EXPECT_NEAR(static_cast<double>(q[0]), 30.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(q[5]), 30.0 * kNsPerMs, 1.5 * kNsPerMs);
  // Late in every tenth of the run.
  EXPECT_EQ(f.arrival_figures->frac_late_by_decile, std::vector<double>(10, 1.0));
  const int64_t late = f.cause_range->mine;
  const int64_t others = f.cause_range->others;
  EXPECT_NEAR(late - others, 30 * kNsPerMs, 1 * kNsPerMs);
  EXPECT_EQ(f.severity, Severity::kCritical);  // the others wait ~half their time
  EXPECT_GT(f.confidence, 0.9);
  EXPECT_NE(f.summary.find("rank 2 (node n2) arrived last at 50/50 allreduce calls"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("waiting (Wait at NxN)."), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("NVTX range 'compute'"), std::string::npos) << f.summary;
  ASSERT_FALSE(f.next_steps.empty());
  EXPECT_EQ(f.next_steps[0].tool, "nsys");
  EXPECT_NE(f.next_steps[0].command.find("= 2 ]; then exec nsys profile"), std::string::npos);
  EXPECT_NE(f.next_steps[0].command.find("_ ./train --steps 50"), std::string::npos);
}

// With the agents' /proc figures, a host-side straggler is told apart: rank 2 burned 1.5 s more
// CPU than the others over its 50 slow steps (CPU-bound); with the same CPU it would be waiting.
TEST(StragglerAnalysisTest, ProcFiguresSayWhetherTheLateRankComputesOrWaits) {
  TrainingSim sim;
  sim.slow_compute[2] = 30 * kNsPerMs;
  Session s = Simulate(sim);
  for (RankData& r : s.ranks) {
    ProcessTreeStats p;
    p.cpu_user_ns = (r.id.rank == 2 ? 2'600 : 1'100) * kNsPerMs;
    p.rchar = 10 << 20;
    p.samples = 3;
    r.proc = p;
  }
  std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  ASSERT_TRUE(findings[0].host_process);
  EXPECT_EQ(findings[0].host_process->verdict, CauseKind::kHostCpu);
  EXPECT_NE(findings[0].summary.find("it is CPU-bound on the host"), std::string::npos)
      << findings[0].summary;
  s.ranks[2].proc->cpu_user_ns = 1'100 * kNsPerMs;
  findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  ASSERT_TRUE(findings[0].host_process);
  EXPECT_EQ(findings[0].host_process->verdict, CauseKind::kHostWaiting);
}

TEST(StragglerAnalysisTest, UntrackedHostTimeIsNamedWhenNoRangeCoversIt) {
  TrainingSim sim;
  sim.ranks = 3;
  sim.step_ranges = false;  // an enclosing step range would own the untracked time
  sim.slow_compute[1] = 20 * kNsPerMs;
  Session s = Simulate(sim);
  // Rank 1's extra 20 ms per step falls outside its "compute" range.
  for (RangeRecord& r : s.ranks[1].ranges) {
    if (r.name == "compute") r.end -= 20 * kNsPerMs;
  }
  const std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(CauseKindName(findings[0].cause), "untracked_host_time");
  EXPECT_NEAR(static_cast<double>(findings[0].before_late_calls->untracked), 20.0 * kNsPerMs,
              1.0 * kNsPerMs);
  EXPECT_NE(findings[0].summary.find("outside any NVTX range"), std::string::npos);
}

// Gives every collective a launch time (as CUPTI's launch records do for NCCL kernels): all ranks
// launch each instance at the same moment, `before` ahead of its first kernel start, or, with
// `launch_tracks_enter`, each rank launches `before` ahead of its own kernel start.
void SetLaunches(Session* s, DurationNs before, bool launch_tracks_enter) {
  std::map<std::pair<uint64_t, uint64_t>, TimeNs> first;
  for (const RankData& r : s->ranks) {
    for (const CollectiveRecord& c : r.collectives) {
      auto [it, inserted] = first.emplace(std::make_pair(c.comm_id, c.seq), c.enter);
      if (!inserted) it->second = std::min(it->second, c.enter);
    }
  }
  for (RankData& r : s->ranks) {
    for (CollectiveRecord& c : r.collectives) {
      c.launched = (launch_tracks_enter ? c.enter : first.at({c.comm_id, c.seq})) - before;
    }
  }
}

// A GPU kernel per "compute" range, spanning it, as if the range synchronized on its GPU work.
void AddComputeKernels(Session* s) {
  for (RankData& r : s->ranks) {
    for (const RangeRecord& range : r.ranges) {
      if (range.name != "compute") continue;
      GpuActivityRecord k;
      k.kind = GpuActivityKind::kKernel;
      k.device = 0;
      k.stream = 7;
      k.start = range.start;
      k.end = range.end;
      k.name = "_Z10sgemm_tileILi128EEvPf";
      r.gpu.push_back(k);
    }
  }
}

// A GPU-side straggler: its collective was launched on time, but its kernel started 30 ms late
// (queued behind slower GPU work). The host ranges before the call cannot explain that; the
// finding says the GPU queue did, and points at the GPU (nsys with CUDA trace, clocks).
TEST(StragglerAnalysisTest, LaunchedOnTimeButStartedLateIsTheGpuQueue) {
  TrainingSim sim;
  sim.slow_compute[2] = 30 * kNsPerMs;
  Session s = Simulate(sim);
  SetLaunches(&s, 2 * kNsPerMs, /*launch_tracks_enter=*/false);
  AddComputeKernels(&s);
  const std::vector<Finding> findings = Planned(s, Stragglers(s));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(CauseKindName(f.cause), "gpu_queue");
  const std::optional<BeforeLateCalls::Launch>& launch = f.before_late_calls->launch;
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->instances, 50);
  EXPECT_LT(std::abs(static_cast<double>(launch->launch_lateness)), 1.0 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(launch->queue), 32.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(launch->others_queue), 2.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("launched those collectives on time"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("behind earlier work"), std::string::npos) << f.summary;
  // Which kernels: the one that ran 30 ms longer per step than on the other ranks.
  ASSERT_FALSE(f.kernels->empty());
  EXPECT_EQ(f.kernels->at(0).name, "void sgemm_tile<128>(float*)");
  const double late_ns = static_cast<double>(f.kernels->at(0).mine);
  const double others_ns = static_cast<double>(f.kernels->at(0).others);
  EXPECT_NEAR(late_ns - others_ns, 30.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("kernel 'void sgemm_tile<128>(float*)'"), std::string::npos)
      << f.summary;
  // The planner's steps for a GPU-side straggler: its kernels in nsys, its GPU's clocks, the
  // same launch under rankscope with ncu on the kernel that grew (its report read into the
  // findings), then the rest of the "gpu-slow" chain.
  EXPECT_NE(f.focus.find("the kernels rank 2 runs before each"), std::string::npos) << f.focus;
  ASSERT_EQ(f.next_steps.size(), 4u);
  EXPECT_NE(f.next_steps[0].command.find("--trace=cuda,nvtx"), std::string::npos);
  EXPECT_EQ(f.next_steps[0].look_for, f.focus);
  EXPECT_EQ(f.next_steps[1].tool, "nvidia-smi");
  EXPECT_NE(f.next_steps[1].command.find("ssh n2 "), std::string::npos) << f.next_steps[1].command;
  EXPECT_EQ(f.next_steps[2].tool, "rankscope");
  EXPECT_NE(f.next_steps[2].command.find("--ncu-rank 2 --ncu-kernel sgemm_tile"), std::string::npos)
      << f.next_steps[2].command;
  EXPECT_EQ(f.next_steps[3].command, "rankscope advise gpu-slow --session out --rank 2");
}

// No launch times (CUPTI modes kernels/gpu), but GPU kernel time before the call grew by the
// lateness: the GPU's doing, named by kernel.
TEST(StragglerAnalysisTest, LongerKernelsBeforeTheCallAreNamedWithoutLaunchTimes) {
  TrainingSim sim;
  sim.slow_compute[1] = 25 * kNsPerMs;
  Session s = Simulate(sim);
  AddComputeKernels(&s);
  const std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(CauseKindName(f.cause), "gpu_kernels");
  EXPECT_FALSE(f.before_late_calls->launch);
  EXPECT_NEAR(static_cast<double>(f.before_late_calls->kernels) -
                  static_cast<double>(f.before_late_calls->others_kernels),
              25.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("Its GPU ran longer before those calls"), std::string::npos)
      << f.summary;
}

// The same lateness with the launch just as late: host side, and the range analysis stands.
TEST(StragglerAnalysisTest, LateLaunchKeepsTheHostCause) {
  TrainingSim sim;
  sim.slow_compute[2] = 30 * kNsPerMs;
  Session s = Simulate(sim);
  SetLaunches(&s, 100 * kNsPerUs, /*launch_tracks_enter=*/true);
  const std::vector<Finding> findings = Planned(s, Stragglers(s));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(CauseKindName(f.cause), "nvtx_range");
  EXPECT_EQ(f.cause_range->name, "compute");
  ASSERT_TRUE(f.before_late_calls->launch);
  EXPECT_NEAR(static_cast<double>(f.before_late_calls->launch->launch_lateness), 30.0 * kNsPerMs,
              1.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("late on the host"), std::string::npos) << f.summary;
  EXPECT_NE(f.next_steps[0].command.find("--trace=mpi,nvtx,osrt"), std::string::npos);
}

// A rank that leaves every collective 2 ms after the others (release order on shared cores) and
// so arrives 2 ms late at the next, with the same time between calls as everyone: late, but not
// by its own doing. A note, not a finding (seen on 2 cores with 4 spinning ranks).
TEST(StragglerAnalysisTest, LatenessInheritedFromALateReleaseIsOnlyNoted) {
  TrainingSim sim;
  sim.jitter = 50 * kNsPerUs;
  Session s = Simulate(sim);
  RankData& r3 = s.ranks[3];
  for (CollectiveRecord& c : r3.collectives) {
    c.enter += 2 * kNsPerMs;
    c.exit += 2 * kNsPerMs;
  }
  for (RangeRecord& r : r3.ranges) {
    r.start += 2 * kNsPerMs;
    r.end += 2 * kNsPerMs;
  }
  std::vector<std::string> notes;
  EXPECT_TRUE(Stragglers(s, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 3 (node n3) arrived late"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("left each previous collective late"), std::string::npos) << notes[0];
}

TEST(StragglerAnalysisTest, PersistenceSaysWhenItStarted) {
  TrainingSim sim;
  sim.steps = 60;
  sim.slow_from_step = 20;
  sim.slow_compute[1] = 30 * kNsPerMs;
  const std::vector<Finding> findings = Stragglers(Simulate(sim));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].arrival_figures->persistence, Lateness::kSecondHalf);
  // 40 planted, plus the early steps where it happened to be last by chance.
  EXPECT_GE(findings[0].arrival_figures->instances_late, 40);
  EXPECT_NE(findings[0].summary.find("second half of the run"), std::string::npos);
  // By tenths of the run (6 steps each): late in every step from step 20 (the 4th tenth on).
  const std::vector<double> deciles = findings[0].arrival_figures->frac_late_by_decile;
  ASSERT_EQ(deciles.size(), 10u);
  for (size_t d = 4; d < 10; ++d) EXPECT_EQ(deciles[d], 1.0) << d;
  EXPECT_LT(deciles[0], 1.0);
}

TEST(StragglerAnalysisTest, TimeInPointToPointCallsIsNamed) {
  TrainingSim sim;
  sim.ranks = 3;
  sim.step_ranges = false;
  sim.slow_compute[1] = 20 * kNsPerMs;
  Session s = Simulate(sim);
  // Rank 1's extra 20 ms per step is an MPI_Recv after its "compute" range.
  for (RangeRecord& r : s.ranks[1].ranges) {
    if (r.name != "compute") continue;
    r.end -= 20 * kNsPerMs;
    P2PRecord recv;
    recv.kind = P2PKind::kRecv;
    recv.peer = 0;
    recv.enter = r.end;
    recv.exit = r.end + 20 * kNsPerMs;
    s.ranks[1].p2p.push_back(recv);
  }
  const std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(CauseKindName(findings[0].cause), "mpi_p2p");
  EXPECT_NEAR(static_cast<double>(findings[0].before_late_calls->mpi), 20.0 * kNsPerMs,
              0.1 * kNsPerMs);
  EXPECT_NE(findings[0].summary.find("MPI point-to-point"), std::string::npos);
}

TEST(StragglerAnalysisTest, TwoStragglersAreBothReported) {
  TrainingSim sim;
  sim.ranks = 8;
  sim.slow_compute[1] = 20 * kNsPerMs;
  sim.slow_compute[6] = 20 * kNsPerMs;
  sim.jitter = 2 * kNsPerMs;
  const std::vector<Finding> findings = Stragglers(Simulate(sim));
  // Each is last in about half the instances; both are flagged.
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[1].ranks, std::vector<int>{6});
}

TEST(StragglerAnalysisTest, LatenessWithinClockUncertaintyIsOnlyNoted) {
  TrainingSim sim;
  sim.jitter = 100 * kNsPerUs;
  sim.slow_compute[2] = 2 * kNsPerMs;
  sim.clock_uncertainty = 1 * kNsPerMs;  // 3x = 3 ms > 2 ms lateness
  std::vector<std::string> notes;
  EXPECT_TRUE(Stragglers(Simulate(sim), &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 2 (node n2)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("clock alignment"), std::string::npos) << notes[0];

  sim.clock_uncertainty = 100 * kNsPerUs;  // with a tight clock the same delay is a straggler
  EXPECT_EQ(Stragglers(Simulate(sim)).size(), 1u);
}

TEST(StragglerAnalysisTest, LateBroadcastRootMakesOthersWait) {
  TrainingSim sim;
  sim.op = CollectiveOp::kBcast;
  sim.root = 0;
  sim.slow_compute[0] = 20 * kNsPerMs;
  const Session s = Simulate(sim);
  const std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{0});
  EXPECT_EQ(f.arrivals->ops.at("bcast"), 50);
  EXPECT_EQ(f.arrival_figures->wait_states, (std::map<std::string, int>{{"late_broadcast", 50}}));
  EXPECT_NE(f.summary.find("rank 0 (node n0) held up 50/50 bcast calls as their root"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("(Late Broadcast: they entered first and waited for the root)"),
            std::string::npos)
      << f.summary;
}

TEST(StragglerAnalysisTest, LateNonRootAtBroadcastMakesNobodyWait) {
  TrainingSim sim;
  sim.op = CollectiveOp::kBcast;
  sim.root = 0;
  sim.slow_compute[3] = 20 * kNsPerMs;
  const Session s = Simulate(sim);
  const std::vector<CollectiveInstance> instances = MatchCollectives(s);
  EXPECT_TRUE(FindStragglers(s, instances, StragglerOptions{}).empty());
  for (const RankArrivalStats& r : DescribeArrivals(instances)) {
    EXPECT_EQ(r.instances, 50);
    if (r.rank == 3) {
      EXPECT_EQ(r.instances_last, 0);
      EXPECT_EQ(r.wait_caused_ns, 0);
    }
  }
}

TEST(StragglerAnalysisTest, EarlyReduceRootWaitsForTheLastSender) {
  TrainingSim sim;
  sim.op = CollectiveOp::kReduce;
  sim.root = 0;
  sim.slow_compute[2] = 20 * kNsPerMs;
  const Session s = Simulate(sim);
  const std::vector<CollectiveInstance> instances = MatchCollectives(s);
  for (const RankArrivalStats& r : DescribeArrivals(instances)) {
    if (r.rank == 0) {
      EXPECT_NEAR(r.wait_suffered_ns, 50.0 * 20 * kNsPerMs, 50.0 * kNsPerMs);
    } else if (r.rank == 1) {
      EXPECT_EQ(r.wait_suffered_ns, 0);  // senders do not wait
    } else if (r.rank == 2) {
      EXPECT_EQ(r.instances_last, 50);
    }
  }
  std::vector<std::string> notes;
  const std::vector<Finding> findings = FindStragglers(s, instances, StragglerOptions{}, &notes);
  ASSERT_EQ(findings.size(), 1u) << ::testing::PrintToString(notes);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.arrival_figures->wait_states, (std::map<std::string, int>{{"early_reduce", 50}}));
  EXPECT_EQ(f.arrivals->others_waiting, 1);  // only the root waits
  EXPECT_NEAR(static_cast<double>(f.arrivals->others_wait), 50.0 * 20 * kNsPerMs, 50.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("rank 2 (node n2) was the last sender into 50/50 reduce calls"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("(Early Reduce: the root entered first and waited for the last "
                           "sender)"),
            std::string::npos)
      << f.summary;
}

// Without a planted delay, rooted operations give no finding: at a reduce the senders run ahead
// of the root by more every call (they never wait), which is neither lateness nor noise.
TEST(StragglerAnalysisTest, CleanRootedOperationsGiveNoFinding) {
  for (CollectiveOp op : {CollectiveOp::kReduce, CollectiveOp::kGather, CollectiveOp::kBcast}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      TrainingSim sim;
      sim.op = op;
      sim.root = static_cast<int>(seed % 4);
      sim.seed = seed;
      sim.jitter = (seed % 3 + 1) * kNsPerMs;
      EXPECT_TRUE(Stragglers(Simulate(sim)).empty()) << CollectiveOpName(op) << " seed " << seed;
    }
  }
}

// A late root at broadcasts that are sometimes all-reduces: the summary leads with the pattern it
// held the others up in most, and names the other.
TEST(StragglerAnalysisTest, MixedPatternsLeadWithTheDominantOne) {
  TrainingSim sim;
  sim.op = CollectiveOp::kBcast;
  sim.root = 0;
  sim.slow_compute[0] = 20 * kNsPerMs;
  Session s = Simulate(sim);
  for (RankData& r : s.ranks) {
    for (CollectiveRecord& c : r.collectives) {
      if (c.seq < 10) c.op = CollectiveOp::kAllreduce;  // the root came last: others waited
    }
  }
  const std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.arrival_figures->wait_states,
            (std::map<std::string, int>{{"late_broadcast", 40}, {"wait_at_nxn", 10}}));
  EXPECT_NE(f.summary.find("rank 0 (node n0) held up 40/40 bcast calls as their root (and 10 "
                           "Wait at NxN calls: allreduce), median"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("(Late Broadcast: "), std::string::npos) << f.summary;
}

TEST(StragglerAnalysisTest, IncompleteInstancesAreIgnored) {
  TrainingSim sim;
  sim.slow_compute[2] = 30 * kNsPerMs;
  Session s = Simulate(sim);
  // Rank 3 lost every fifth collective record: those 10 instances are incomplete.
  std::vector<CollectiveRecord>& c = s.ranks[3].collectives;
  std::erase_if(c, [](const CollectiveRecord& r) { return r.seq % 5 == 0; });
  std::vector<Finding> findings = Stragglers(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].arrivals->instances_total, 40);

  // A rank that reported no collectives at all leaves nothing complete.
  s.ranks[1].collectives.clear();
  EXPECT_TRUE(Stragglers(s).empty());
}

TEST(StragglerAnalysisTest, EmptyInputs) {
  EXPECT_TRUE(Stragglers(Session{}).empty());
  EXPECT_TRUE(DescribeArrivals({}).empty());
  Session no_records;
  no_records.ranks.resize(3);
  EXPECT_TRUE(Stragglers(no_records).empty());
}

}  // namespace
}  // namespace rankscope
