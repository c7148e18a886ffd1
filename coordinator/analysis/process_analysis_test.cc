#include "coordinator/analysis/process_analysis.h"

#include <gtest/gtest.h>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/analysis/diagnosis.h"

namespace rankscope {
namespace {

// Four ranks on two nodes sampled from outside for 2 s: each ~90% busy (polling in MPI) and
// reading ~11 MiB (sockets), unless a test changes one.
Session Outside() {
  Session s;
  s.session_id = "attach-88-1";
  s.job_id = "88";
  s.launcher = "attach";
  s.world_size = 4;
  s.start = 1'000 * kNsPerSec;
  s.end = s.start + 2 * kNsPerSec;
  s.aligned = true;
  for (int r = 0; r < 4; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.node = r < 3 ? "n1" : "n2";
    d.id.launcher = "attach";
    d.id.job_id = "88";
    d.id.program_pid = 4000 + r;
    d.id.program = {"python3", "train.py"};
    d.finished = true;
    ProcessTreeStats p;
    p.rchar = (11 << 20) + r * 1000;
    p.cpu_user_ns = 600 * kNsPerMs + r * kNsPerMs;
    p.cpu_system_ns = 1200 * kNsPerMs;
    p.samples = 3;
    p.processes = 1;
    d.proc = p;
    s.ranks.push_back(d);
  }
  return s;
}

TEST(ProcessOutliers, PeersAlikeGiveNothing) {
  const Session s = Outside();
  EXPECT_TRUE(s.SampledFromOutsideOnly());
  EXPECT_TRUE(FindProcessOutliers(s, ProcessOutlierOptions{}).empty());
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
}

TEST(ProcessOutliers, AReadingRankIsIoHeavy) {
  Session s = Outside();
  s.ranks[2].proc->rchar = uint64_t{4} << 30;  // the loader reading 4 GiB
  const std::vector<Finding> findings = testing::Planned(s, Diagnose(s, AnalysisOptions{}));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(FindingKindName(f.kind), "process_outlier");
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n1"});
  ASSERT_TRUE(f.process_outlier);
  EXPECT_EQ(f.process_outlier->verdicts, std::vector<ProcessVerdict>{ProcessVerdict::kIoHeavy});
  EXPECT_NE(f.summary.find("it read 4.0 GiB (2.0 GiB/s) against a median of 11.0 MiB"),
            std::string::npos)
      << f.summary;
  ASSERT_GE(f.next_steps.size(), 2u);
  EXPECT_EQ(f.next_steps[0].tool, "py-spy");
  EXPECT_EQ(f.next_steps[0].command,
            "srun --jobid=88 --overlap -w n1 -N1 -n1 py-spy dump --native --pid 4002");
  EXPECT_NE(f.next_steps[1].command.find("rankscope run --dormant -- srun"), std::string::npos);
}

TEST(ProcessOutliers, ASleepingRankAmongBusyOnesAndAStorageBoundOne) {
  Session s = Outside();
  s.ranks[1].proc->cpu_user_ns = 50 * kNsPerMs;  // sleeps while the others poll
  s.ranks[1].proc->cpu_system_ns = 30 * kNsPerMs;
  s.ranks[3].proc->blkio_delay_ns = 900 * kNsPerMs;  // waits on the disk
  const std::vector<Finding> findings = FindProcessOutliers(s, ProcessOutlierOptions{});
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  ASSERT_TRUE(findings[0].process_outlier);
  EXPECT_EQ(findings[0].process_outlier->verdicts,
            std::vector<ProcessVerdict>{ProcessVerdict::kIdleWhileOthersBusy});
  EXPECT_EQ(findings[1].ranks, std::vector<int>{3});
  ASSERT_TRUE(findings[1].process_outlier);
  EXPECT_EQ(findings[1].process_outlier->verdicts,
            std::vector<ProcessVerdict>{ProcessVerdict::kBlockedOnStorage});
}

TEST(ProcessOutliers, OnlyForSessionsSeenFromOutside) {
  // The same figures from agents of a rankscope run (a dormant run never captured, a program
  // without MPI): not an outside sample, no process_outlier.
  Session s = Outside();
  s.ranks[2].proc->rchar = uint64_t{4} << 30;
  for (RankData& r : s.ranks) r.id.launcher = "srun";
  EXPECT_FALSE(s.SampledFromOutsideOnly());
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
  // Too few ranks to compare.
  Session two = Outside();
  two.ranks.resize(2);
  EXPECT_TRUE(FindProcessOutliers(two, ProcessOutlierOptions{}).empty());
}

}  // namespace
}  // namespace rankscope
