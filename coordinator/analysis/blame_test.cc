#include "coordinator/analysis/blame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "coordinator/analysis/analysis_test_util.h"
#include "core/comm_id.h"

namespace rankscope {
namespace {

BlameModel Blame(const Session& s, const BlameOptions& options = BlameOptions{}) {
  return BuildBlameModel(s, MatchSession(s), options);
}

double Seconds(DurationNs ns) { return static_cast<double>(ns) / kNsPerSec; }

// A halo exchange as stencil codes (LAMMPS, HPCC's PTRANS) run it: every step each rank
// computes, then exchanges with its left and right neighbours on a ring (MPI_Irecv x2,
// MPI_Isend x2, MPI_Waitall), and every `allreduce_every` steps all ranks reduce. Messages are
// eager: a receive completes once its send is posted. Only the first message after a slow
// rank's compute carries its delay; the rest of each exchange is quick.
struct HaloSim {
  int ranks = 4;
  int steps = 60;
  DurationNs compute = 5 * kNsPerMs;
  DurationNs jitter = 200 * kNsPerUs;
  DurationNs latency = 50 * kNsPerUs;
  int allreduce_every = 10;
  std::map<int, double> slow_factor;  // compute time x factor, by rank
  // Time a rank spends inside its Waitall after its messages are in, by rank (held inside MPI:
  // frozen, throttled).
  std::map<int, DurationNs> held_in_wait;
  int held_from_step = 0;  // ... from this step on
  // The latency of the messages a rank sends or receives x factor, by rank: a rank short of CPU
  // progresses its messages only while it runs.
  std::map<int, double> progress_factor;
  uint64_t seed = 5;
};

Session SimulateHalo(const HaloSim& sim) {
  std::mt19937_64 rng(sim.seed);
  auto jitter = [&] { return std::uniform_int_distribution<DurationNs>(0, sim.jitter)(rng); };
  Session s;
  s.session_id = "halo";
  s.launcher = "mpirun";
  s.world_size = sim.ranks;
  s.aligned = true;
  s.ranks.resize(static_cast<size_t>(sim.ranks));
  const uint64_t world = WorldCommId(sim.ranks);
  const auto n = static_cast<size_t>(sim.ranks);
  for (int r = 0; r < sim.ranks; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    d.id.rank = r;
    d.id.world_size = sim.ranks;
    d.id.node = "n" + std::to_string(r);
    d.id.launcher = "mpirun";
    d.clock_fitted = true;
    d.finished = true;
  }
  std::vector<TimeNs> now(n, 1000 * kNsPerSec);
  uint64_t seq = 0;
  for (int k = 0; k < sim.steps; ++k) {
    std::vector<TimeNs> post(n);
    for (size_t r = 0; r < n; ++r) {
      auto f = sim.slow_factor.find(static_cast<int>(r));
      const double factor = f == sim.slow_factor.end() ? 1.0 : f->second;
      now[r] += static_cast<DurationNs>(std::llround(static_cast<double>(sim.compute) * factor)) +
                jitter();
      post[r] = now[r];
    }
    for (size_t r = 0; r < n; ++r) {
      RankData& d = s.ranks[r];
      const int left = static_cast<int>((r + n - 1) % n);
      const int right = static_cast<int>((r + 1) % n);
      const TimeNs t = post[r];
      // Irecv left, Irecv right, Isend left, Isend right: 2 us each.
      P2PRecord rl{P2PKind::kIrecv, P2PKind::kIrecv, left, k, world, 4096, t, t + 2000, 1};
      P2PRecord rr{P2PKind::kIrecv, P2PKind::kIrecv, right, k, world, 4096, t + 2000, t + 4000, 1};
      P2PRecord sl{P2PKind::kIsend, P2PKind::kIsend, left, k, world, 4096, t + 4000, t + 6000, 1};
      P2PRecord sr{P2PKind::kIsend, P2PKind::kIsend, right, k, world, 4096, t + 6000, t + 8000, 1};
      const TimeNs wait_enter = t + 8000;
      // The Waitall ends when both neighbours' sends (posted at their post + 4/6 us) are in.
      auto latency = [&](int a, int b) {
        double factor = 1.0;
        for (int x : {a, b}) {
          auto p = sim.progress_factor.find(x);
          if (p != sim.progress_factor.end()) factor = std::max(factor, p->second);
        }
        return static_cast<DurationNs>(std::llround(static_cast<double>(sim.latency) * factor));
      };
      const TimeNs from_left = post[static_cast<size_t>(left)] + 6000 + latency(left, r);
      const TimeNs from_right = post[static_cast<size_t>(right)] + 4000 + latency(right, r);
      const auto held = sim.held_in_wait.find(static_cast<int>(r));
      const TimeNs wait_exit =
          std::max({wait_enter + 1000, from_left, from_right}) +
          (held == sim.held_in_wait.end() || k < sim.held_from_step ? 0 : held->second);
      d.p2p.push_back(rl);
      d.p2p.push_back(rr);
      d.p2p.push_back(sl);
      d.p2p.push_back(sr);
      for (const auto& [completed, peer] :
           {std::pair{P2PKind::kIrecv, left}, std::pair{P2PKind::kIrecv, right},
            std::pair{P2PKind::kIsend, left}, std::pair{P2PKind::kIsend, right}}) {
        d.p2p.push_back(
            {P2PKind::kWait, completed, peer, k, world, 4096, wait_enter, wait_exit, 1});
      }
      now[r] = wait_exit;
    }
    if (sim.allreduce_every > 0 && (k + 1) % sim.allreduce_every == 0) {
      const TimeNs last = *std::max_element(now.begin(), now.end());
      for (size_t r = 0; r < n; ++r) {
        CollectiveRecord c;
        c.comm_id = world;
        c.seq = seq;
        c.op = CollectiveOp::kAllreduce;
        c.comm_size = sim.ranks;
        c.comm_rank = static_cast<int>(r);
        c.bytes = 8;
        c.enter = now[r];
        c.exit = last + 100 * kNsPerUs;
        c.tid = 1;
        s.ranks[r].collectives.push_back(c);
        now[r] = c.exit;
      }
      ++seq;
    }
  }
  s.start = 1000 * kNsPerSec;
  s.end = *std::max_element(now.begin(), now.end());
  return s;
}

TEST(BlameTest, ReplayOfACleanRunReproducesItAndNamesNobody) {
  const Session s = testing::Simulate(testing::TrainingSim{});
  const BlameModel m = Blame(s);
  ASSERT_EQ(m.ranks.size(), 4u);
  EXPECT_TRUE(m.stragglers.empty());
  EXPECT_EQ(m.broken_dependencies, 0);
  EXPECT_NEAR(Seconds(m.replayed_span), Seconds(m.span()), 0.01 * Seconds(m.span()));
  for (const RankBlame& r : m.ranks) {
    EXPECT_EQ(r.events, 50);
    EXPECT_EQ(r.uninterpreted_calls, 0);
    // 50 steps of ~22 ms data + compute: own work is most of the run.
    EXPECT_GT(r.own_work, 50 * 22 * kNsPerMs);
    EXPECT_LT(r.in_mpi, 50 * 3 * kNsPerMs);
  }
}

TEST(BlameTest, ASlowRankIsTheStragglerAndTheWhatIfIsTheCleanRun) {
  testing::TrainingSim sim;
  const Session clean = testing::Simulate(sim);
  sim.slow_compute = {{2, 20 * kNsPerMs}};
  const Session slow = testing::Simulate(sim);
  const BlameModel m = Blame(slow);
  ASSERT_EQ(m.stragglers, std::vector<int>{2});
  const RankBlame& r2 = *m.Find(2);
  ASSERT_TRUE(r2.replayed);
  const double clean_span = Seconds(Blame(clean).span());
  // The job had 20 ms more per step (50 steps): 1 s; like the others it is the clean run.
  EXPECT_GT(Seconds(m.span()), clean_span + 0.9);
  EXPECT_NEAR(Seconds(r2.what_if_span), clean_span, 0.03 * clean_span);
  EXPECT_NEAR(Seconds(m.what_if_all_span), clean_span, 0.03 * clean_span);
  // The 3 others waited ~20 ms a step for it: 3 s, directly and in the replay.
  EXPECT_NEAR(Seconds(r2.caused), 3.0, 0.15);
  EXPECT_NEAR(Seconds(r2.caused_total), 3.0, 0.15);
  EXPECT_GT(r2.caused_at.at("allreduce"), 2 * kNsPerSec);
  EXPECT_NEAR(Seconds(m.waits.at({0, 2})), 1.0, 0.05);
  EXPECT_EQ(m.waits.count({2, 0}) == 0 || m.waits.at({2, 0}) < 50 * kNsPerMs, true);
}

TEST(BlameTest, TwoSlowRanksAreBothFoundAndTheWhatIfNeedsBoth) {
  testing::TrainingSim sim;
  sim.ranks = 8;
  const Session clean = testing::Simulate(sim);
  sim.slow_compute = {{1, 15 * kNsPerMs}, {6, 25 * kNsPerMs}};
  const BlameModel m = Blame(testing::Simulate(sim));
  EXPECT_EQ(m.stragglers, (std::vector<int>{6, 1}));
  const double clean_span = Seconds(Blame(clean).span());
  // Rank 6 alone like the others still leaves rank 1's 15 ms a step.
  EXPECT_NEAR(Seconds(m.Find(6)->what_if_span), clean_span + 0.75, 0.05 * clean_span);
  EXPECT_NEAR(Seconds(m.what_if_all_span), clean_span, 0.03 * clean_span);
  // Each one's own gain: rank 6's 10 ms a step beyond rank 1's, then rank 1's 15 ms, with
  // rank 6 already typical (its what-if is both's).
  EXPECT_NEAR(Seconds(m.Find(6)->gain), 0.5, 0.05);
  EXPECT_NEAR(Seconds(m.Find(1)->gain), 0.75, 0.05);
}

// Every rank sampled from outside over the session's wall at half a CPU, in a cgroup with a
// CPU quota that throttled `throttled_rank` for `share` of that wall (the others not at all).
void AddCgroupFigures(Session* s, int throttled_rank, double share) {
  for (RankData& r : s->ranks) {
    r.proc = ProcessTreeStats{};
    r.proc->sampled_wall_ns = s->end - s->start;
    r.proc->cpu_user_ns = r.proc->sampled_wall_ns / 2;
    r.proc->cpu_cgroup = CpuCgroupStats{};
    if (r.id.rank == throttled_rank) {
      r.proc->cpu_cgroup->throttled_ns = static_cast<DurationNs>(
          std::llround(share * static_cast<double>(r.proc->sampled_wall_ns)));
    }
  }
}

// The agents' /proc figures of a rank: `cpu` and `delay` (run delay) as shares of `wall`.
void SetCpuFigures(RankData* r, DurationNs wall, double cpu, double delay) {
  r->proc = ProcessTreeStats{};
  r->proc->sampled_wall_ns = wall;
  r->proc->cpu_user_ns = static_cast<DurationNs>(cpu * static_cast<double>(wall));
  r->proc->run_delay_ns = static_cast<DurationNs>(delay * static_cast<double>(wall));
}

// Rank 1 throttled by its cgroup's quota (the agents saw it), rank 3 2.5 ms a step slower in its
// own work (about 8 % of the job). Beside rank 1 on its node, rank 3 may have lost the CPU to
// it, which the replay cannot undo: it must save 10 % to count. On a node of its own it is a
// straggler of its own.
TEST(BlameTest, ASlowerRankBesideOneStarvedOfCpuMustSaveTwiceAsMuch) {
  testing::TrainingSim sim;
  sim.slow_compute = {{1, 20 * kNsPerMs}, {3, 2500 * kNsPerUs}};
  for (const bool same_node : {true, false}) {
    Session s = testing::Simulate(sim);
    AddCgroupFigures(&s, 1, 1.0 / 3);
    if (same_node) s.ranks[3].id.node = s.ranks[1].id.node;
    const BlameModel m = Blame(s);
    ASSERT_FALSE(m.stragglers.empty());
    EXPECT_EQ(m.stragglers.front(), 1);
    ASSERT_TRUE(m.Find(3)->replayed);
    const double gain = static_cast<double>(m.Find(3)->gain) / static_cast<double>(m.job);
    EXPECT_GT(gain, 0.05);
    EXPECT_LT(gain, 0.10);
    EXPECT_EQ(m.stragglers.size(), same_node ? 1u : 2u) << "same node: " << same_node;
  }
}

// 4 ranks and 2 competitors on 2 cores (HPCC, the competitors pinned to rank 1's core): every
// rank waited for a CPU 66 % of its wall, rank 1 78 % (short of 1.15x + 5 %), running 0.67x the
// others' CPU. The share of its runnable time it got a CPU, 0.66x theirs, names it; a rank that
// ran 0.87x their CPU, or waited less than 5 % of its wall more than they did, is not.
TEST(BlameTest, StarvedOfCpuWhereEveryRankWaitsForCpusMostOfItsTime) {
  testing::TrainingSim sim;
  Session s = testing::Simulate(sim);
  auto set = [&](int rank, double cpu, double delay) {
    SetCpuFigures(&s.ranks[static_cast<size_t>(rank)], s.end - s.start, cpu, delay);
  };
  for (int r = 0; r < 4; ++r) set(r, 0.30, 0.66);
  set(1, 0.20, 0.78);
  EXPECT_TRUE(StarvedOfCpu(s, 1));
  set(1, 0.26, 0.72);
  EXPECT_FALSE(StarvedOfCpu(s, 1));
  set(1, 0.19, 0.70);
  EXPECT_FALSE(StarvedOfCpu(s, 1));
  set(1, 0.12, 0.87);  // the same planted on another run: past both tests
  EXPECT_TRUE(StarvedOfCpu(s, 1));
}

// 8 ranks on the 2-core VM under srun: the ranks of two nodes got a CPU for 0.13-0.16 of their
// runnable time, those of the other two for 0.29-0.47 (rank 5 sleeps). Rank 2 at 0.11 (CI's
// figures), waiting for a CPU 77 % of its wall, within their spread, is not starved; at 0.03 it
// is. With one rank per core (the others run 95 % of their runnable time) 0.63 stands far out.
TEST(BlameTest, StarvedOfCpuAmongManyRanksMustStandOutOfTheirSpread) {
  testing::TrainingSim sim;
  sim.ranks = 8;
  Session s = testing::Simulate(sim);
  const DurationNs wall = s.end - s.start;
  // (CPU, run delay) shares of the wall per rank.
  const std::vector<std::pair<double, double>> shared = {
      {0.136, 0.771}, {0.144, 0.778}, {0.096, 0.765}, {0.143, 0.73},
      {0.294, 0.593}, {0.09, 0.274},  {0.327, 0.547}, {0.377, 0.494}};
  for (int r = 0; r < 8; ++r) {
    SetCpuFigures(&s.ranks[static_cast<size_t>(r)], wall, shared[static_cast<size_t>(r)].first,
                  shared[static_cast<size_t>(r)].second);
  }
  EXPECT_FALSE(StarvedOfCpu(s, 2));
  SetCpuFigures(&s.ranks[2], wall, 0.025, 0.85);
  EXPECT_TRUE(StarvedOfCpu(s, 2));
  for (int r = 0; r < 8; ++r) SetCpuFigures(&s.ranks[static_cast<size_t>(r)], wall, 0.9, 0.05);
  SetCpuFigures(&s.ranks[2], wall, 0.6, 0.35);
  EXPECT_TRUE(StarvedOfCpu(s, 2));
}

// 8 ranks on 4 nodes of the 2-core VM under srun (CI, 2026-12-07): the 4 ranks of n1 ran 0.11-0.14
// CPU-s a second, the job's median 0.22. Rank 1 ran no less than its node-mates: the node's share,
// not the rank's; at 0.03 it ran far less than them too. Where every node holds as many ranks, a
// node whose ranks all ran less is held to the whole job.
TEST(BlameTest, RanFarLessComparesARankOfACrowdedNodeWithItsNodeMates) {
  testing::TrainingSim sim;
  sim.ranks = 8;
  Session s = testing::Simulate(sim);
  const DurationNs wall = s.end - s.start;
  const std::vector<std::string> nodes = {"n1", "n1", "n1", "n1", "n2", "n2", "n3", "n4"};
  const std::vector<double> cpu = {0.11, 0.118, 0.135, 0.118, 0.248, 0.245, 0.448, 0.222};
  for (size_t r = 0; r < 8; ++r) {
    s.ranks[r].id.node = nodes[r];
    SetCpuFigures(&s.ranks[r], wall, cpu[r], 0.7);
  }
  EXPECT_FALSE(RanFarLess(s, 1));
  SetCpuFigures(&s.ranks[1], wall, 0.03, 0.7);
  EXPECT_TRUE(RanFarLess(s, 1));
  // Two ranks a node, n1's both at 0.11 against the others' 0.3.
  for (size_t r = 0; r < 8; ++r) {
    s.ranks[r].id.node = "n" + std::to_string(r / 2);
    SetCpuFigures(&s.ranks[r], wall, r < 2 ? 0.11 : 0.3, 0.5);
  }
  EXPECT_TRUE(RanFarLess(s, 1));
}

// The mirror case (CI, 4 ranks on 2 cores): rank 1 copies through a loader 20 ms a step at
// 1.75x the others' CPU; rank 3 waited for a CPU 67 % of its wall (the others 43 %), ran 19 %
// of it (the others 40 %) and was 2.5 ms a step slower. Beside rank 1 it may have waited for
// rank 1: it must save 10 % to count. On a node of its own it is a straggler of its own.
TEST(BlameTest, ARankWaitingForItsCpusBesideACpuHeavyStragglerMustSaveTwiceAsMuch) {
  testing::TrainingSim sim;
  sim.slow_compute = {{1, 20 * kNsPerMs}, {3, 2500 * kNsPerUs}};
  for (const bool same_node : {true, false}) {
    Session s = testing::Simulate(sim);
    for (RankData& r : s.ranks) {
      SetCpuFigures(&r, s.end - s.start,
                    r.id.rank == 1   ? 0.70
                    : r.id.rank == 3 ? 0.19
                                     : 0.40,
                    r.id.rank == 3 ? 0.67 : 0.43);
      r.id.node = same_node ? "n0" : "n" + std::to_string(r.id.rank);
    }
    ASSERT_TRUE(StarvedOfCpu(s, 3));
    ASSERT_FALSE(StarvedOfCpu(s, 1));
    const BlameModel m = Blame(s);
    ASSERT_FALSE(m.stragglers.empty());
    EXPECT_EQ(m.stragglers.front(), 1);
    ASSERT_TRUE(m.Find(3)->replayed);
    EXPECT_TRUE(m.Find(3)->judged_on_busy);
    const double gain = static_cast<double>(m.Find(3)->gain) / static_cast<double>(m.job);
    EXPECT_GT(gain, 0.05);
    EXPECT_LT(gain, 0.10);
    EXPECT_EQ(m.stragglers.size(), same_node ? 1u : 2u) << "same node: " << same_node;
  }
}

// Rank 2 sleeps 20 ms a step (the agents saw its CPU at a tenth of the others'), in a code whose
// calls take 200 ms each after their release: its busy time, transfers included, is 8 % above
// the others' (short of the 10 % asked), its own work 1.9x theirs. The evidence from outside
// must not make it harder to name than a rank without any (CI, 4 ranks on 2 cores: the sleeping
// last stage of a rendezvous pipeline went unnamed once).
TEST(BlameTest, ARankThatRanFarLessIsStillNamedByItsOwnWork) {
  testing::TrainingSim sim;
  sim.slow_compute = {{2, 20 * kNsPerMs}};
  sim.collective = 200 * kNsPerMs;
  Session s = testing::Simulate(sim);
  AddCgroupFigures(&s, -1, 0.0);
  s.ranks[2].proc->cpu_user_ns = s.ranks[2].proc->sampled_wall_ns / 10;
  ASSERT_TRUE(RanFarLess(s, 2));
  const BlameModel m = Blame(s);
  ASSERT_EQ(m.stragglers, std::vector<int>{2});
  EXPECT_FALSE(m.Find(2)->judged_on_busy);
  EXPECT_NEAR(Seconds(m.Find(2)->gain), 1.0, 0.1);  // 50 steps x 20 ms
}

// A quota that holds a rank inside its all-reduces: it arrives on time, every member's transfer
// is long (20 ms of a 42 ms step), its own work is like the others'. Only its cgroup's
// throttling (half its wall) names it; like the others, its calls' transfers would halve.
TEST(BlameTest, ARankThrottledInsideItsCollectivesIsNamedByItsCgroup) {
  testing::TrainingSim sim;
  sim.collective = 20 * kNsPerMs;
  for (const bool throttled : {false, true}) {
    Session s = testing::Simulate(sim);
    AddCgroupFigures(&s, 1, throttled ? 0.5 : 0.0);
    const BlameModel m = Blame(s);
    if (!throttled) {
      EXPECT_TRUE(m.stragglers.empty());
      continue;
    }
    ASSERT_EQ(m.stragglers, std::vector<int>{1});
    const RankBlame& r1 = *m.Find(1);
    EXPECT_DOUBLE_EQ(r1.held_share, 0.5);
    // 50 steps x 10 ms of transfer saved: about 0.5 s.
    EXPECT_NEAR(Seconds(r1.gain), 0.5, 0.05);
  }
}

// A quota that throttled a rank while its own work, not its busy time, set it apart, and only in
// part of the run (CI, mpi_train at np 4 with 20 % of a CPU on rank 3: own work 0.48x above the
// others' in 43 % of the run, a gain of 8.7 %). Seen from outside, it counts at the gain any
// rank must save; without the quota, standing apart that weakly it must save twice as much.
TEST(BlameTest, ARankThrottledWhileItsOwnWorkStoodApartInPartOfTheRunIsNamed) {
  testing::TrainingSim sim;
  sim.compute = 5 * kNsPerMs;
  sim.collective = 20 * kNsPerMs;
  sim.slow_compute = {{1, 4500 * kNsPerUs}};
  sim.slow_from_step = 30;
  for (const bool throttled : {false, true}) {
    Session s = testing::Simulate(sim);
    AddCgroupFigures(&s, 1, throttled ? 0.5 : 0.0);
    const BlameModel m = Blame(s);
    const RankBlame& r1 = *m.Find(1);
    ASSERT_TRUE(r1.replayed) << "throttled: " << throttled;
    EXPECT_FALSE(r1.judged_on_busy);
    EXPECT_LT(SeparationMargin(r1, BlameOptions{}), 0.5);
    const double gain = static_cast<double>(r1.gain) / static_cast<double>(m.job);
    EXPECT_GT(gain, 0.05);
    EXPECT_LT(gain, 0.10);
    EXPECT_EQ(m.stragglers, throttled ? std::vector<int>{1} : std::vector<int>{})
        << "throttled: " << throttled;
  }
}

// Every rank's main thread sampled 100 times, all running but `rank`'s, blocked in `where` in
// `blocked` of them (on top of AddCgroupFigures, nobody throttled).
void AddMainThreadSamples(Session* s, int rank, const std::string& where, int blocked) {
  AddCgroupFigures(s, -1, 0.0);
  for (RankData& r : s->ranks) {
    r.proc->main_thread.samples = 100;
    r.proc->main_thread.running = 100;
    if (r.id.rank == rank && blocked > 0) {
      r.proc->main_thread.running = 100 - blocked;
      r.proc->main_thread.blocked_in[where] = blocked;
    }
  }
}

// The same with a cgroup freezer instead of the quota: rank 1's main thread sampled frozen in
// 40 % of its samples (the others never) names it, and its calls' transfers shrink by that.
TEST(BlameTest, ARankFrozenInsideItsCollectivesIsNamedByItsSamples) {
  testing::TrainingSim sim;
  sim.collective = 20 * kNsPerMs;
  for (const int frozen : {0, 40}) {
    Session s = testing::Simulate(sim);
    AddMainThreadSamples(&s, 1, "__refrigerator", frozen);
    EXPECT_EQ(HeldShare(s, 1).has_value(), frozen > 0);
    const BlameModel m = Blame(s);
    if (frozen == 0) {
      EXPECT_TRUE(m.stragglers.empty());
      continue;
    }
    ASSERT_EQ(m.stragglers, std::vector<int>{1});
    EXPECT_NEAR(m.Find(1)->held_share, 0.4, 1e-9);
    // 50 steps x 8 ms of transfer saved: about 0.4 s.
    EXPECT_NEAR(Seconds(m.Find(1)->gain), 0.4, 0.05);
  }
}

// A rank blocked in its own call (writing a slow FIFO) 20 ms a step, in a code whose calls take
// 10 ms after their release: it ran far less than the others, but it was not slow inside MPI.
// Judged on its own work, its transfers keep their length in the what-if, which is the run
// without its 20 ms (before, they shrank with its busy time: the what-if 0.68x the clean run).
TEST(BlameTest, ARankBlockedInItsOwnCallKeepsItsTransfersInTheWhatIf) {
  testing::TrainingSim sim;
  sim.collective = 10 * kNsPerMs;
  const Session clean = testing::Simulate(sim);
  sim.slow_compute = {{2, 20 * kNsPerMs}};
  Session s = testing::Simulate(sim);
  AddMainThreadSamples(&s, 2, "pipe_write", 45);
  s.ranks[2].proc->cpu_user_ns = s.ranks[2].proc->sampled_wall_ns / 10;
  ASSERT_TRUE(RanFarLess(s, 2));
  const BlameModel m = Blame(s);
  ASSERT_EQ(m.stragglers, std::vector<int>{2});
  EXPECT_FALSE(m.Find(2)->judged_on_busy);
  EXPECT_NEAR(Seconds(m.Find(2)->what_if_span), Seconds(Blame(clean).span()),
              0.03 * Seconds(Blame(clean).span()));
}

// A rank held inside its calls while its partner waits for its messages (a ping-pong: the
// partner's waits for its latency become the held rank's transfers; HPCC's b_eff and PTRANS at
// np 2), frozen 40 % of its samples, 8 ms held in each of its Waitalls in the second half of the
// run. Its own work is like the other's, its busy time apart: its transfers, not its whole busy
// time, go to the other's (scaled by the busy ratio, 1.4x the clean run was left).
TEST(BlameTest, ARankSlowOnlyInsideItsCallsHasItsTransfersMadeTypical) {
  HaloSim sim;
  sim.ranks = 2;
  sim.allreduce_every = 0;
  const Session clean = SimulateHalo(sim);
  sim.held_in_wait = {{1, 8 * kNsPerMs}};
  sim.held_from_step = 30;
  Session s = SimulateHalo(sim);
  AddMainThreadSamples(&s, 1, "__refrigerator", 40);
  ASSERT_TRUE(HeldShare(s, 1).has_value());
  const BlameModel m = Blame(s);
  ASSERT_EQ(m.stragglers, std::vector<int>{1});
  EXPECT_TRUE(m.Find(1)->judged_on_busy);
  EXPECT_NEAR(Seconds(m.Find(1)->what_if_span), Seconds(Blame(clean).span()),
              0.05 * Seconds(Blame(clean).span()));
}

// Rank 1 shares its core with busy competitors (no quota, no freezer): it runs a third of the
// time it is runnable, so its compute takes 3x, and its messages, which progress only while it
// runs, take 3x to arrive, on both sides. Its own work is too small a share of the busy times to
// read (1 ms of 7 a step, HPCC's case), and the other rank's busy time, spent waiting for those
// messages, is inflated as much as its own: their ratio understates the slowdown. Its share of
// the CPU against the other's says it, and its transfers shrink by that share in the what-if
// (HPCC at np 2, competitors on one rank's core, three matrices: 1.04-1.37x the bare run
// without it, 1.01-1.25x with it).
TEST(BlameTest, ARankSharingItsCoreHasItsTransfersShrunkByItsShareOfTheCpu) {
  HaloSim sim;
  sim.ranks = 2;
  sim.allreduce_every = 0;
  sim.compute = 1 * kNsPerMs;
  sim.jitter = 50 * kNsPerUs;
  sim.latency = 2 * kNsPerMs;
  const Session clean = SimulateHalo(sim);
  sim.slow_factor = {{1, 3.0}};
  sim.progress_factor = {{1, 3.0}};
  Session s = SimulateHalo(sim);
  SetCpuFigures(&s.ranks[0], s.end - s.start, 0.95, 0.01);
  SetCpuFigures(&s.ranks[1], s.end - s.start, 0.30, 0.65);
  ASSERT_TRUE(StarvedOfCpu(s, 1));
  ASSERT_FALSE(HeldShare(s, 1).has_value());
  const BlameModel m = Blame(s);
  ASSERT_EQ(m.stragglers, std::vector<int>{1});
  EXPECT_TRUE(m.Find(1)->judged_on_busy);
  EXPECT_NEAR(Seconds(m.Find(1)->what_if_span), Seconds(Blame(clean).span()),
              0.10 * Seconds(Blame(clean).span()));
}

// Busy time by part of the run (seconds) of real two-rank runs on this project's 2 cores (one
// rank per core). HPCC's phases (HPL, PTRANS, RandomAccess, FFT, b_eff) load a starved rank
// differently: with 2 competitors on rank 0's core its excess is 0.9 s in some parts and 0.03 s
// in others (not steady in time: 2.8 robust sigmas), its ratio 2.2-17x in every part. Rank 1
// frozen 40 ms of every 100: 1.3-3.5x. A clean LAMMPS run's rank 0 did 1.1-2x rank 1's own work
// in every part as well, and a clean mpi_train run's rank 0 1.1-1.2x rank 1's busy time (rank 0
// shares its core with mpirun and the coordinator): proportion alone is no evidence, which is why
// the blame model reads it only beside evidence from outside. CI (HPCC at np 2, competitors on
// rank 1's core, 1.8x the other's busy time): the parts' ratios were 1.0 (a part where both did
// 0.16 ms), 36x and 35x (single-rank phases) and 2.7-5x; read as a plain mean of log ratios the
// 36x parts made the spread, 3.4 sigmas here and below the 3 asked on CI. Clipped at the median
// ratio, with the empty part left out: 15.
TEST(BlameTest, ProportionalSteadinessReadsRealTwoRankRuns) {
  const std::vector<double> ci_competitor = {0.000164, 1.40,  0,     1.76,  0,
                                             0,        0.145, 0.603, 0.606, 0.584};
  const std::vector<double> ci_competitor_other = {0.000159, 0.0383, 0,     0.0503, 0,
                                                   0,        0.029,  0.159, 0.218,  0.211};
  EXPECT_GT(ProportionalSteadiness(ci_competitor, ci_competitor_other, 0.0035), 10.0);
  const std::vector<double> competitor = {0.959, 0,     0.031, 0.953, 0,
                                          0.041, 0.351, 0.363, 0.367, 0.354};
  const std::vector<double> competitor_other = {0.056, 0,     0.006, 0.049, 0,
                                                0.009, 0.087, 0.145, 0.127, 0.158};
  EXPECT_GT(ProportionalSteadiness(competitor, competitor_other, 0.003), 4.0);
  const std::vector<double> frozen = {0.234, 0, 0.226, 0, 0, 0.088, 0.158, 0.122, 0.170, 0.125};
  const std::vector<double> frozen_other = {0.067, 0,     0.073, 0,     0,
                                            0.054, 0.094, 0.086, 0.131, 0.086};
  EXPECT_GT(ProportionalSteadiness(frozen, frozen_other, 0.003), 3.0);
  // The clean 2-rank HPCC run's parts, either way round: no steady proportion.
  const std::vector<double> clean = {0.061, 0, 0.044, 0, 0, 0.026, 0.079, 0.092, 0.092, 0.088};
  const std::vector<double> clean_other = {0.047, 0,     0.082, 0,     0,
                                           0.035, 0.085, 0.092, 0.091, 0.081};
  EXPECT_LT(ProportionalSteadiness(clean, clean_other, 0.003), 1.5);
  EXPECT_LT(ProportionalSteadiness(clean_other, clean, 0.003), 1.5);
  // Mostly the same, one part far below: not steady, however far above the others are.
  EXPECT_LT(ProportionalSteadiness({0.5, 0.5, 0.5, 0.5, 0.05, 5, 5},
                                   {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, 0.003),
            3.0);
  // Clean LAMMPS (own work) and mpi_train (busy time): rank 0 steadily above rank 1.
  const std::vector<double> lammps = {0.127, 0.134, 0.259, 0.020, 0.242,
                                      0.020, 0.238, 0.122, 0.148, 0.024};
  const std::vector<double> lammps_other = {0.078, 0.093, 0.176, 0.010, 0.184,
                                            0.010, 0.168, 0.076, 0.122, 0.021};
  EXPECT_GT(ProportionalSteadiness(lammps, lammps_other, 0.005), 3.0);
  const std::vector<double> train = {0.102, 0.101, 0.097, 0.112, 0.099,
                                     0.101, 0.086, 0.114, 0.099, 0.081};
  const std::vector<double> train_other = {0.092, 0.080, 0.090, 0.102, 0.087,
                                           0.088, 0.071, 0.101, 0.088, 0.072};
  EXPECT_GT(ProportionalSteadiness(train, train_other, 0.005), 3.0);
  EXPECT_EQ(ProportionalSteadiness({0, 0}, {0, 0}, 0.001), 0);
}

// Four ranks all-reduce after 20 ms of compute a step; rank 2 loses 60 ms in every 4th step (a
// CPU quota's throttled periods land on some steps, not all). Like the others, it is the clean
// run: its own work replaced event by event by the others' median, not scaled as a whole (which
// would leave 34 ms spikes at its slow steps and shorten its other steps for nothing).
Session SpikySteps(DurationNs spike) {
  std::mt19937_64 rng(11);
  Session s;
  s.aligned = true;
  s.world_size = 4;
  s.ranks.resize(4);
  const uint64_t world = WorldCommId(4);
  std::vector<TimeNs> now(4, kNsPerSec);
  for (int k = 0; k < 80; ++k) {
    std::vector<TimeNs> enter(4);
    for (size_t r = 0; r < 4; ++r) {
      enter[r] = now[r] + 20 * kNsPerMs + (r == 2 && k % 4 == 1 ? spike : 0) +
                 std::uniform_int_distribution<DurationNs>(0, 300 * kNsPerUs)(rng);
    }
    const TimeNs exit = *std::max_element(enter.begin(), enter.end()) + 200 * kNsPerUs;
    for (size_t r = 0; r < 4; ++r) {
      CollectiveRecord c;
      c.comm_id = world;
      c.seq = static_cast<uint64_t>(k);
      c.op = CollectiveOp::kAllreduce;
      c.comm_size = 4;
      c.comm_rank = static_cast<int>(r);
      c.bytes = 8;
      c.enter = enter[r];
      c.exit = exit;
      c.tid = 1;
      s.ranks[r].collectives.push_back(c);
      now[r] = exit;
    }
  }
  s.start = kNsPerSec;
  s.end = *std::max_element(now.begin(), now.end());
  for (int r = 0; r < 4; ++r) {
    s.ranks[static_cast<size_t>(r)].id.rank = r;
    s.ranks[static_cast<size_t>(r)].id.world_size = 4;
  }
  return s;
}

TEST(BlameTest, TheWhatIfReplacesAStragglersOwnWorkEventByEvent) {
  const double clean_span = Seconds(Blame(SpikySteps(0)).span());
  const BlameModel m = Blame(SpikySteps(60 * kNsPerMs));
  ASSERT_EQ(m.stragglers, std::vector<int>{2});
  EXPECT_GT(Seconds(m.span()), clean_span + 1.1);  // 20 steps x 60 ms
  EXPECT_NEAR(Seconds(m.Find(2)->what_if_span), clean_span, 0.02 * clean_span);
}

// Of two ranks, one does 10 ms more own work a step. With nothing seen from outside to explain
// it, a slower core and more work look alike: not named, but marked for a note. Its main
// thread sampled asleep (a planted sleep, a lock) explains it: named.
TEST(BlameTest, OfTwoRanksOneSlowerWithoutACauseFromOutsideIsNotNamed) {
  testing::TrainingSim sim;
  sim.ranks = 2;
  sim.slow_compute = {{1, 10 * kNsPerMs}};
  for (const bool asleep : {false, true}) {
    Session s = testing::Simulate(sim);
    AddMainThreadSamples(&s, 1, "hrtimer_nanosleep", asleep ? 30 : 0);
    const BlameModel m = Blame(s);
    EXPECT_EQ(m.stragglers, asleep ? std::vector<int>{1} : std::vector<int>{}) << asleep;
    EXPECT_EQ(m.Find(1)->unexplained_of_two, !asleep);
    EXPECT_FALSE(m.Find(0)->unexplained_of_two);
  }
}

// Every rank's MPI_Init recorded: it enters `launch` (100 ms) after the session's start, rank
// `late` (if any) 400 ms later, and all leave 50 ms after the last arrival, 50 ms before the first
// collective. The chains start at the session's start with MPI_Init as an N-to-N event.
Session WithMpiInit(testing::TrainingSim sim, int late, DurationNs launch = 100 * kNsPerMs) {
  Session s = testing::Simulate(sim);
  TimeNs first = std::numeric_limits<TimeNs>::max();
  for (const RankData& r : s.ranks) first = std::min(first, r.collectives.front().enter);
  s.start = first - launch - (late >= 0 ? 500 : 100) * kNsPerMs;
  for (RankData& r : s.ranks) {
    MpiCallRecord init;
    init.call = MpiCall::kInit;
    init.enter = s.start + launch + (r.id.rank == late ? 400 : 0) * kNsPerMs;
    init.exit = first - 50 * kNsPerMs;
    init.tid = 1;
    r.mpi_calls.push_back(init);
  }
  return s;
}

// The replay reproduces the start-up and the others' wait in MPI_Init is put on the late rank,
// but start-up is not judged (launch order and a busy node's exec times vary run to run): the
// late rank's own work is the others', and it is no straggler.
TEST(BlameTest, MpiInitStartsTheReplayAtTheSessionsStartButIsNotJudged) {
  const Session s = WithMpiInit(testing::TrainingSim{}, 2);
  const BlameModel m = Blame(s);
  EXPECT_EQ(m.first, s.start);
  EXPECT_NEAR(Seconds(m.replayed_span), Seconds(m.span()), 0.01 * Seconds(m.span()));
  const RankBlame& r2 = *m.Find(2);
  EXPECT_EQ(r2.uninterpreted_calls, 0);
  EXPECT_NEAR(Seconds(r2.own_work), Seconds(m.Find(0)->own_work),
              0.05 * Seconds(m.Find(0)->own_work));
  EXPECT_GT(m.waits.at({0, 2}), 350 * kNsPerMs);
  EXPECT_TRUE(m.stragglers.empty());
}

// A straggler that also started late: its what-if gives it the typical start-up too, so the job
// had it run like the others is the clean job, start-up included.
TEST(BlameTest, AStragglersWhatIfGivesItTheTypicalStartUp) {
  testing::TrainingSim sim;
  const Session clean = WithMpiInit(sim, -1);
  sim.slow_compute = {{2, 10 * kNsPerMs}};
  const Session slow = WithMpiInit(sim, 2);
  const BlameModel m = Blame(slow);
  ASSERT_EQ(m.stragglers, std::vector<int>{2});
  const RankBlame& r2 = *m.Find(2);
  const double clean_span = Seconds(Blame(clean).span());
  EXPECT_NEAR(Seconds(r2.what_if_span), clean_span, 0.05 * clean_span);
}

// A launcher that took 2.3 s before any rank reached MPI_Init (PMIx retrying a dead munged's
// socket) and ranks whose chains differ (one calls MPI_File_write once), so the straggler's own
// work is replayed scaled, start-up included: its start-up replayed shorter saves nothing, since
// MPI_Init waits for the others' as long, and its gain is what its judged own work saves, as
// behind a short launch. (The gain once took the scaled start-up's 0.7 s off a 0.5 s gain.)
TEST(BlameTest, ALongLaunchTakesNothingFromAStragglersGain) {
  testing::TrainingSim sim;
  sim.slow_compute = {{2, 10 * kNsPerMs}};
  auto with_launch = [&](DurationNs launch) {
    Session s = WithMpiInit(sim, -1, launch);
    RankData& r1 = s.ranks[1];
    MpiCallRecord write;
    write.call = MpiCall::kFileWrite;
    write.enter = r1.collectives[10].exit + 10 * kNsPerUs;
    write.exit = write.enter + 10 * kNsPerUs;
    write.tid = 1;
    r1.mpi_calls.push_back(write);
    return Blame(s);
  };
  const BlameModel short_launch = with_launch(100 * kNsPerMs);
  const BlameModel long_launch = with_launch(2300 * kNsPerMs);
  ASSERT_EQ(short_launch.stragglers, std::vector<int>{2});
  EXPECT_EQ(long_launch.stragglers, std::vector<int>{2});
  const double gain = Seconds(short_launch.Find(2)->gain);
  EXPECT_GT(gain, 0.4);  // 50 steps x 10 ms
  EXPECT_NEAR(Seconds(long_launch.Find(2)->gain), gain, 0.05 * gain);
  EXPECT_NEAR(Seconds(long_launch.span() - long_launch.Find(2)->what_if_span), gain, 0.05 * gain);
}

// A halo exchange of 8 ranks (rank 5 3x slower) read window by window (a window about every
// 10 ms: a cut every other allreduce, messages and Waitalls on both sides of each) gives the
// model of the whole run.
TEST(BlameTest, AHaloExchangeReadWindowByWindowGivesTheWholeRunsModel) {
  HaloSim sim;
  sim.ranks = 8;
  sim.slow_factor = {{5, 3.0}};
  const Session s = SimulateHalo(sim);
  const WindowPlan plan = PlanWindows(s, {.target = 10 * kNsPerMs, .max_window = 40 * kNsPerMs});
  ASSERT_GE(plan.size(), 4u);
  const SessionMatches matches = MatchSession(s);
  const BlameModel whole = BuildBlameModel(s, matches);
  const WindowSplit split = SplitSession(s, plan);
  const BlameModel windowed = BuildBlameModel(s, matches, BlameOptions{}, &split);
  ASSERT_EQ(whole.stragglers, std::vector<int>{5});
  EXPECT_EQ(windowed.stragglers, whole.stragglers);
  EXPECT_EQ(windowed.waits, whole.waits);
  EXPECT_EQ(windowed.replayed_span, whole.replayed_span);
  ASSERT_EQ(windowed.ranks.size(), whole.ranks.size());
  for (size_t i = 0; i < whole.ranks.size(); ++i) {
    EXPECT_EQ(windowed.ranks[i].events, whole.ranks[i].events);
    EXPECT_EQ(windowed.ranks[i].busy, whole.ranks[i].busy);
    EXPECT_EQ(windowed.ranks[i].caused, whole.ranks[i].caused);
    EXPECT_EQ(windowed.ranks[i].gain, whole.ranks[i].gain);
    EXPECT_EQ(windowed.ranks[i].uninterpreted_calls, whole.ranks[i].uninterpreted_calls);
  }
}

TEST(BlameTest, HaloExchangeStragglerIsFoundThoughMostMessagesAreOnTime) {
  HaloSim sim;
  const Session clean = SimulateHalo(sim);
  const BlameModel clean_model = Blame(clean);
  EXPECT_TRUE(clean_model.stragglers.empty());
  EXPECT_EQ(clean_model.broken_dependencies, 0);
  EXPECT_NEAR(Seconds(clean_model.replayed_span), Seconds(clean_model.span()),
              0.01 * Seconds(clean_model.span()));
  for (const RankBlame& r : clean_model.ranks) EXPECT_EQ(r.uninterpreted_calls, 0) << r.rank;

  sim.slow_factor = {{1, 3.0}};
  const BlameModel m = Blame(SimulateHalo(sim));
  ASSERT_EQ(m.stragglers, std::vector<int>{1});
  const RankBlame& r1 = *m.Find(1);
  const double clean_span = Seconds(clean_model.span());
  EXPECT_GT(Seconds(m.span()), 2.5 * clean_span);
  EXPECT_NEAR(Seconds(r1.what_if_span), clean_span, 0.05 * clean_span);
  // Its neighbours wait for it in their Waitall every step, and the far rank through them and
  // at the allreduces: a chain.
  EXPECT_GT(r1.caused_at.at("wait"), 0);
  EXPECT_GT(m.waits.at({0, 1}), 0);
  EXPECT_GT(m.waits.at({2, 1}), 0);
  EXPECT_GE(r1.caused_total, r1.caused);
}

TEST(BlameTest, APipelineChainIsBlamedOnItsSourceNotTheStagesBehindIt) {
  // Stage r receives from r-1, computes, sends to r+1 (eager). Stage 1 computes 3x longer;
  // stage 2 waits for it, stage 3 waits for stage 2 only because stage 2 waited.
  Session s;
  s.aligned = true;
  s.world_size = 4;
  s.ranks.resize(4);
  const uint64_t world = WorldCommId(4);
  for (int r = 0; r < 4; ++r) {
    s.ranks[static_cast<size_t>(r)].id.rank = r;
    s.ranks[static_cast<size_t>(r)].id.world_size = 4;
  }
  std::vector<TimeNs> now(4, kNsPerSec);
  for (int k = 0; k < 40; ++k) {
    TimeNs arrival = 0;
    for (int r = 0; r < 4; ++r) {
      RankData& d = s.ranks[static_cast<size_t>(r)];
      TimeNs t = now[static_cast<size_t>(r)];
      if (r > 0) {
        const TimeNs done = std::max(t + 1000, arrival + 20 * kNsPerUs);
        d.p2p.push_back({P2PKind::kRecv, P2PKind::kRecv, r - 1, 0, world, 64, t, done, 1});
        t = done;
      }
      t += (r == 1 ? 30 : 10) * kNsPerMs;
      if (r < 3) {
        d.p2p.push_back({P2PKind::kSend, P2PKind::kSend, r + 1, 0, world, 64, t, t + 5000, 1});
        arrival = t;
        t += 5000;
      }
      now[static_cast<size_t>(r)] = t;
    }
  }
  const BlameModel m = Blame(s);
  EXPECT_EQ(m.broken_dependencies, 0);
  ASSERT_FALSE(m.stragglers.empty());
  EXPECT_EQ(m.stragglers.front(), 1);
  EXPECT_EQ(std::count(m.stragglers.begin(), m.stragglers.end(), 2), 0);
  EXPECT_EQ(std::count(m.stragglers.begin(), m.stragglers.end(), 3), 0);
  // Stage 3 waits for stage 2 directly, but with stage 1 like the others it would not.
  EXPECT_GT(m.waits.at({3, 2}), 0);
  const RankBlame& r1 = *m.Find(1);
  EXPECT_GT(r1.caused_total, r1.caused);
}

// An aligned session of two ranks on MPI_COMM_WORLD, without records.
Session TwoRanks() {
  Session s;
  s.aligned = true;
  s.world_size = 2;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    s.ranks[static_cast<size_t>(r)].id.rank = r;
    s.ranks[static_cast<size_t>(r)].id.world_size = 2;
  }
  return s;
}

TEST(BlameTest, AnInconsistentRecordingStillReplaysAndSaysSo) {
  // Each rank's receive is recorded before its own send to the other, and both receives block
  // until the other's send: a rendezvous on both sides cannot have happened this way, but clock
  // error or a misread record can make it look so. The replay must end.
  Session s = TwoRanks();
  const uint64_t world = WorldCommId(2);
  for (int r = 0; r < 2; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    const int peer = 1 - r;
    for (int k = 0; k < 5; ++k) {
      const TimeNs t = kNsPerSec + k * 10 * kNsPerMs;
      d.p2p.push_back(
          {P2PKind::kRecv, P2PKind::kRecv, peer, 0, world, 1 << 20, t, t + 3 * kNsPerMs, 1});
      d.p2p.push_back({P2PKind::kSend, P2PKind::kSend, peer, 0, world, 1 << 20, t + 4 * kNsPerMs,
                       t + 6 * kNsPerMs, 1});
    }
  }
  const BlameModel m = Blame(s);
  EXPECT_EQ(m.ranks.size(), 2u);
  EXPECT_GT(m.replayed_span, 0);
}

// HPCC's RandomAccess: each rank posts a receive, polls it with MPI_Test, posts a send to the
// other in the middle of its polling, and polls on. The completing record of the receive reaches
// back over the send (its enter is pulled back by all its polls), so read by enter each rank's
// receive comes before its own send, which the other's receive needs: a cycle. Where the agent
// recorded where the polling that ended in the completion began (after the send), the chains
// are the calls' true order and the replay reproduces the run.
Session PolledInTurn(bool with_spin_start) {
  Session s = TwoRanks();
  const uint64_t world = WorldCommId(2);
  for (int r = 0; r < 2; ++r) {
    RankData& d = s.ranks[static_cast<size_t>(r)];
    const int peer = 1 - r;
    for (int k = 0; k < 5; ++k) {
      const TimeNs t = kNsPerSec + k * 10 * kNsPerMs;
      d.p2p.push_back(
          {P2PKind::kIrecv, P2PKind::kIrecv, peer, k, world, 8, t, t + 10 * kNsPerUs, 1, peer});
      d.p2p.push_back({P2PKind::kIsend, P2PKind::kIsend, peer, k, world, 8,
                       t + (1000 + 100 * r) * kNsPerUs, t + (1010 + 100 * r) * kNsPerUs, 1, peer});
      // Polled from 20 us until 3 ms, the send between: 2.9 ms of polls.
      P2PRecord wait{P2PKind::kWait,     P2PKind::kIrecv,  peer, k,   world, 8,
                     t + 100 * kNsPerUs, t + 3 * kNsPerMs, 1,    peer};
      if (with_spin_start) wait.spin_start = t + (1020 + 100 * r) * kNsPerUs;
      d.p2p.push_back(wait);
    }
  }
  return s;
}

TEST(BlameTest, APolledCompletionEntersWhereItsPollingBegan) {
  const BlameModel compacted = Blame(PolledInTurn(false));
  EXPECT_GT(compacted.broken_dependencies, 0);
  const BlameModel polled = Blame(PolledInTurn(true));
  EXPECT_EQ(polled.broken_dependencies, 0);
  EXPECT_EQ(polled.replayed_span, polled.span());
}

TEST(BlameTest, ASessionWithoutMpiEventsGivesAnEmptyModel) {
  Session s;
  s.ranks.resize(2);
  s.ranks[0].id.rank = 0;
  s.ranks[1].id.rank = 1;
  const BlameModel m = Blame(s);
  EXPECT_TRUE(m.ranks.empty());
  EXPECT_TRUE(m.stragglers.empty());
}

// The typical rank a rank is held against leaves that rank out: with two ranks it is the other
// one (HPCC at np 2 with a starved rank busy 10.4 s and the other 2.5 s: the median of both, 6.4
// s, was stated as the typical rank's), and ranks too short to judge do not count.
TEST(BlameTest, TheTypicalRankARankIsHeldAgainstLeavesItOut) {
  BlameModel m;
  auto add = [&](int rank, DurationNs busy, DurationNs own, bool judged) {
    RankBlame b;
    b.rank = rank;
    b.busy = busy;
    b.own_work = own;
    if (judged) m.judged.push_back(m.ranks.size());
    m.ranks.push_back(b);
  };
  add(0, 2500 * kNsPerMs, 1200 * kNsPerMs, true);
  add(1, 10400 * kNsPerMs, 5700 * kNsPerMs, true);
  add(2, 9000 * kNsPerMs, 9000 * kNsPerMs, false);  // too few events to be judged
  m.typical_busy = 6450 * kNsPerMs;
  m.typical_own_work = 3450 * kNsPerMs;
  EXPECT_EQ(m.TypicalBesides(1).busy, 2500 * kNsPerMs);
  EXPECT_EQ(m.TypicalBesides(1).own_work, 1200 * kNsPerMs);
  EXPECT_EQ(m.TypicalBesides(0).busy, 10400 * kNsPerMs);
}

}  // namespace
}  // namespace rankscope
