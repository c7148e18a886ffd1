#include "coordinator/analysis/off_cpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/analysis/diagnosis.h"

namespace rankscope {
namespace {

// Main-thread samples: `running` of `samples` on a CPU, the rest as given.
MainThreadStates States(int samples, int stopped, std::map<std::string, int32_t> blocked) {
  MainThreadStates m;
  m.samples = samples;
  m.stopped = stopped;
  m.blocked_in = std::move(blocked);
  m.running = samples - stopped - m.blocked();
  return m;
}

// Four ranks whose main threads mostly run (MPI ranks poll), one of them as given.
Session WithMainThreads(int rank, const MainThreadStates& theirs) {
  Session s = testing::Simulate(testing::TrainingSim{});
  for (RankData& r : s.ranks) {
    r.proc = ProcessTreeStats{};
    r.proc->main_thread = r.id.rank == rank ? theirs : States(300, 0, {{"futex_wait_queue", 6}});
  }
  return s;
}

TEST(OffCpuTest, NamesKernelFunctionFamiliesAcrossKernelVersions) {
  EXPECT_EQ(DescribeWchan("anon_pipe_write"),
            "writing a pipe or FIFO faster than its reader drains it");
  EXPECT_EQ(DescribeWchan("pipe_write"), DescribeWchan("anon_pipe_write"));
  EXPECT_EQ(DescribeWchan("folio_wait_bit_common"), "waiting for block I/O (storage)");
  EXPECT_EQ(DescribeWchan("rpc_wait_bit_killable"), "waiting for an NFS server");
  EXPECT_EQ(DescribeWchan("hrtimer_nanosleep"), "sleeping (nanosleep)");
  EXPECT_EQ(DescribeWchan("some_driver_wait"), "");
}

TEST(OffCpuTest, AFrozenRankIsNamedFrozen) {
  const Session s = WithMainThreads(2, States(300, 0, {{"__refrigerator", 170}}));
  const std::optional<OffCpuCause> c = FindOffCpuCause(s, 2);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(CauseKindName(c->kind), "frozen");
  EXPECT_EQ(c->where, "__refrigerator");
  EXPECT_NEAR(c->share, 170.0 / 300, 1e-9);
  EXPECT_EQ(c->others_share, 0);
  EXPECT_FALSE(FindOffCpuCause(s, 1).has_value()) << "the others ran";
}

TEST(OffCpuTest, AStoppedRankAndAPipeWriterAreToldApart) {
  const std::optional<OffCpuCause> stopped =
      FindOffCpuCause(WithMainThreads(0, States(300, 90, {{"anon_pipe_write", 20}})), 0);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(CauseKindName(stopped->kind), "stopped");
  // Blocked writing a FIFO more than anything else; a lock the others wait on too does not count.
  const std::optional<OffCpuCause> pipe = FindOffCpuCause(
      WithMainThreads(3, States(300, 0, {{"anon_pipe_write", 120}, {"futex_wait_queue", 40}})), 3);
  ASSERT_TRUE(pipe.has_value());
  EXPECT_EQ(CauseKindName(pipe->kind), "blocked");
  EXPECT_EQ(pipe->where, "anon_pipe_write");
  EXPECT_EQ(pipe->meaning, "writing a pipe or FIFO faster than its reader drains it");
}

TEST(OffCpuTest, ShareLikeTheOthersOrTooFewSamplesIsNoCause) {
  // 10 % blocked: below the 15 % floor.
  EXPECT_FALSE(FindOffCpuCause(WithMainThreads(1, States(300, 0, {{"io_schedule", 30}})), 1));
  // 0.4 s of samples: too few.
  EXPECT_FALSE(FindOffCpuCause(WithMainThreads(1, States(20, 0, {{"io_schedule", 15}})), 1));
  // Every rank sleeps as much: the program's own pattern.
  Session s = testing::Simulate(testing::TrainingSim{});
  for (RankData& r : s.ranks) {
    r.proc = ProcessTreeStats{};
    r.proc->main_thread = States(300, 0, {{"hrtimer_nanosleep", 150 + r.id.rank}});
  }
  EXPECT_FALSE(FindOffCpuCause(s, 3).has_value());
}

// The straggler finding says why: a rank that computed 20 ms more a step while its main thread
// was frozen half the time is frozen, not merely "in NVTX range compute".
TEST(OffCpuTest, TheStragglerFindingCarriesTheCause) {
  testing::TrainingSim sim;
  sim.slow_compute = {{2, 20 * kNsPerMs}};
  Session s = testing::Simulate(sim);
  for (RankData& r : s.ranks) {
    r.proc = ProcessTreeStats{};
    r.proc->main_thread = r.id.rank == 2 ? States(120, 0, {{"__refrigerator", 55}})
                                         : States(120, 0, {{"futex_wait_queue", 2}});
  }
  std::vector<std::string> notes;
  const std::vector<Finding> findings = Diagnose(s, AnalysisOptions{}, &notes);
  ASSERT_FALSE(findings.empty());
  const Finding& f = findings.front();
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(CauseKindName(f.cause), "frozen") << f.summary;
  EXPECT_NE(f.summary.find("frozen by a cgroup freezer (__refrigerator) in 46 % of 120 samples"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.focus.find("freezes rank 2"), std::string::npos) << f.focus;
}

}  // namespace
}  // namespace rankscope
