#include "coordinator/analysis/dataloader_analysis.h"

#include <gtest/gtest.h>

#include <string>

#include "coordinator/analysis/analysis_test_util.h"
#include "coordinator/analysis/diagnosis.h"

namespace rankscope {
namespace {

using testing::Planned;
using testing::Simulate;
using testing::TrainingSim;

// A PyTorch-style loop without data ranges: step ranges and CUPTI launch records only. The rank
// whose first kernel launch comes 20 ms into each step is the slow loader.
Session WithLaunchRecords(TrainingSim sim) {
  sim.data_name = "host prep";  // not a data range name
  Session s = Simulate(sim);
  for (RankData& r : s.ranks) {
    for (const RangeRecord& range : r.ranges) {
      if (range.name != "compute") continue;
      GpuActivityRecord copy;  // the batch's copy comes before the first launch: not counted
      copy.kind = GpuActivityKind::kRuntime;
      copy.name = "cudaMemcpyAsync";
      copy.start = range.start - 5 * kNsPerUs;
      copy.end = range.start;
      r.gpu.push_back(copy);
      GpuActivityRecord launch;
      launch.kind = GpuActivityKind::kRuntime;
      launch.name = "cudaLaunchKernel";
      launch.start = range.start + 10 * kNsPerUs;
      launch.end = launch.start + 3 * kNsPerUs;
      r.gpu.push_back(launch);
      GpuActivityRecord kernel;
      kernel.kind = GpuActivityKind::kKernel;
      kernel.name = "_Z4stepPf";
      kernel.start = launch.end + 2 * kNsPerMs;  // queued: the kernel's start is not the host's
      kernel.end = kernel.start + kNsPerMs;
      r.gpu.push_back(kernel);
    }
  }
  return s;
}

TEST(DataloaderAnalysisTest, WithoutDataRangesTheFirstKernelLaunchMarksTheLoader) {
  TrainingSim sim;
  sim.slow_data[1] = 20 * kNsPerMs;
  const std::vector<Finding> findings =
      FindDataloaderSkew(WithLaunchRecords(sim), DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step_source, StepSource::kFirstKernelLaunch);
  ASSERT_TRUE(f.dataloader);
  EXPECT_NEAR(static_cast<double>(f.dataloader->median_excess), 20.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NE(f.summary.find("per step in the part of each step before its first GPU kernel launch"),
            std::string::npos)
      << f.summary;
  // Clean, the same loop has nothing to say.
  EXPECT_TRUE(FindDataloaderSkew(WithLaunchRecords(TrainingSim{}), DataloaderOptions{}).empty());
}

// No NVTX range at all before the first launch: the straggler's late time is untracked host
// time, and it is the slow loader's: one finding that says both.
TEST(DataloaderAnalysisTest, WithoutDataRangesTheStragglerJoinsItsLoader) {
  TrainingSim sim;
  sim.slow_data[1] = 20 * kNsPerMs;
  Session s = WithLaunchRecords(sim);
  for (RankData& r : s.ranks) {
    std::erase_if(r.ranges, [](const RangeRecord& range) { return range.name == "host prep"; });
  }
  const std::vector<Finding> findings = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(findings.size(), 1u) << findings[0].summary << " / " << findings.back().summary;
  EXPECT_EQ(FindingKindName(findings[0].kind), "dataloader_skew");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_NE(findings[0].summary.find("This makes the other 3 ranks wait"), std::string::npos)
      << findings[0].summary;
  ASSERT_EQ(findings[0].joined.size(), 1u);
  EXPECT_EQ(findings[0].joined[0].kind, FindingKind::kStraggler);
}

TEST(DataloaderAnalysisTest, SlowDataOnOneRank) {
  TrainingSim sim;
  sim.slow_data[1] = 24 * kNsPerMs;
  const Session s = Simulate(sim);
  const std::vector<Finding> findings = Planned(s, FindDataloaderSkew(s, DataloaderOptions{}));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(FindingKindName(f.kind), "dataloader_skew");
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.nodes, std::vector<std::string>{"n1"});
  ASSERT_TRUE(f.dataloader);
  EXPECT_EQ(f.dataloader->steps, 50);
  EXPECT_EQ(f.dataloader->steps_skewed, 50);
  EXPECT_EQ(f.step_source, StepSource::kStepRanges);
  EXPECT_NEAR(static_cast<double>(f.dataloader->median_excess), 24.0 * kNsPerMs, 1.0 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(f.dataloader->total_excess), 50 * 24.0 * kNsPerMs,
              50.0 * kNsPerMs);
  EXPECT_EQ(f.dataloader->range_names, std::vector<std::string>{"data"});
  EXPECT_NE(f.summary.find("rank 1 (node n1) spends 26."), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("in 'data' vs 2."), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("(in 50/50 steps)"), std::string::npos) << f.summary;
  EXPECT_GT(f.confidence, 0.9);
  bool has_pidstat = false;
  for (const NextStep& step : f.next_steps) {
    if (step.tool == "pidstat") {
      has_pidstat = true;
      EXPECT_EQ(step.command,
                "mpirun -np 4 bash -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 1 ]; then "
                "exec pidstat -d 1 -e \"$@\"; else exec \"$@\"; fi' _ ./train --steps 50");
    }
  }
  EXPECT_TRUE(has_pidstat);
}

TEST(DataloaderAnalysisTest, DataRangesWithoutStepRanges) {
  TrainingSim sim;
  sim.step_ranges = false;
  sim.data_name = "load_batch";
  sim.slow_data[3] = 10 * kNsPerMs;
  const std::vector<Finding> findings = FindDataloaderSkew(Simulate(sim), DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
  EXPECT_EQ(findings[0].step_source, StepSource::kDataRanges);
}

TEST(DataloaderAnalysisTest, LoaderBetweenStepRangesCountsTowardTheNextStep) {
  TrainingSim sim;
  sim.slow_data[2] = 15 * kNsPerMs;
  Session s = Simulate(sim);
  // Move every step range to start after its data range: loading now runs between steps.
  for (RankData& r : s.ranks) {
    std::vector<RangeRecord> data;
    for (const RangeRecord& range : r.ranges) {
      if (range.name == "data") data.push_back(range);
    }
    size_t k = 0;
    for (RangeRecord& range : r.ranges) {
      if (range.name == "step") range.start = data[k++].end;
    }
  }
  const std::vector<Finding> findings = FindDataloaderSkew(s, DataloaderOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  ASSERT_TRUE(findings[0].dataloader);
  EXPECT_GE(findings[0].dataloader->steps_skewed, 49);  // step 0 has no window before
}

// The agents' /proc figures say how the slow loader spends its time: reading, computing, or
// neither (waiting). 4 ranks, rank 1's data range 24 ms longer over 50 steps (1.2 s in all).
std::string LoaderVerdict(uint64_t rchar1, uint64_t read1, int64_t cpu1_ms, Finding* out,
                          DurationNs blkio1 = 0) {
  TrainingSim sim;
  sim.slow_data[1] = 24 * kNsPerMs;
  Session s = Simulate(sim);
  for (RankData& r : s.ranks) {
    ProcessTreeStats p;
    p.rchar = 10 << 20;
    p.read_bytes = 1 << 20;
    p.cpu_user_ns = 1000 * kNsPerMs;
    if (r.id.rank == 1) {
      p.rchar = rchar1;
      p.read_bytes = read1;
      p.cpu_user_ns = cpu1_ms * kNsPerMs;
      p.blkio_delay_ns = blkio1;
    }
    r.proc = p;
  }
  const std::vector<Finding> findings = FindDataloaderSkew(s, DataloaderOptions{});
  if (findings.size() != 1) return "findings: " + std::to_string(findings.size());
  *out = findings[0];
  if (!out->host_process) return "no process figures";
  switch (out->host_process->verdict) {
    case CauseKind::kHostIo:
      return "io";
    case CauseKind::kHostCpu:
      return "cpu";
    default:
      return "waiting";
  }
}

TEST(DataloaderAnalysisTest, ProcessFiguresSayWhetherTheLoaderReadsComputesOrWaits) {
  Finding f;
  EXPECT_EQ(LoaderVerdict(uint64_t{4} << 30, uint64_t{3} << 30, 1000, &f), "io");
  EXPECT_NE(f.summary.find("read 3.0 GiB from storage (other ranks: 1.0 MiB)"), std::string::npos)
      << f.summary;
  EXPECT_EQ(LoaderVerdict(uint64_t{4} << 30, 1 << 20, 1000, &f), "io");  // page cache
  EXPECT_NE(f.summary.find("read 4.0 GiB (other ranks: 10.0 MiB)"), std::string::npos) << f.summary;
  EXPECT_EQ(LoaderVerdict(10 << 20, 1 << 20, 2100, &f), "cpu");
  EXPECT_NE(f.summary.find("CPU-bound"), std::string::npos) << f.summary;
  EXPECT_EQ(LoaderVerdict(10 << 20, 1 << 20, 1100, &f), "waiting");
  EXPECT_NE(f.summary.find("the loader waits"), std::string::npos) << f.summary;
  EXPECT_EQ(f.host_process->others_cpu, 1000.0 * kNsPerMs);
  // Reads no more than the others, but waits on the device (a slow disk or network file
  // system): 900 ms of the 1.2 s excess blocked on block I/O.
  EXPECT_EQ(LoaderVerdict(10 << 20, 1 << 20, 1000, &f, 900 * kNsPerMs), "io");
  EXPECT_NE(f.summary.find("spent 900.00 ms blocked on block I/O (other ranks: 0 ns)"),
            std::string::npos)
      << f.summary;
  // A little block I/O delay is no verdict.
  EXPECT_EQ(LoaderVerdict(10 << 20, 1 << 20, 1100, &f, 20 * kNsPerMs), "waiting");
}

// Read window by window (a window every 50 ms, so most steps have a cut inside them), each
// reading gives what the whole run gives: step and data ranges, data ranges alone, step ranges
// with kernel launches, and loading between step ranges.
TEST(DataloaderAnalysisTest, WindowByWindowEveryReadingGivesTheWholeRunsSteps) {
  TrainingSim sim;
  sim.slow_data[1] = 20 * kNsPerMs;
  TrainingSim no_steps = sim;
  no_steps.step_ranges = false;
  no_steps.data_name = "load_batch";
  Session between = Simulate(sim);
  for (RankData& r : between.ranks) {
    std::vector<TimeNs> data_ends;
    for (const RangeRecord& range : r.ranges) {
      if (range.name == "data") data_ends.push_back(range.end);
    }
    size_t k = 0;
    for (RangeRecord& range : r.ranges) {
      if (range.name == "step") range.start = data_ends[k++];
    }
  }
  const std::pair<const char*, Session> cases[] = {{"step and data ranges", Simulate(sim)},
                                                   {"data ranges alone", Simulate(no_steps)},
                                                   {"kernel launches", WithLaunchRecords(sim)},
                                                   {"loading between steps", between}};
  for (const auto& [name, s] : cases) {
    SCOPED_TRACE(name);
    const WindowPlan plan = PlanWindows(s, {.target = 50 * kNsPerMs, .max_window = 100 * kNsPerMs});
    ASSERT_GE(plan.size(), 10u);
    const std::vector<StepSeries> whole = StepSeriesOf(s, DataloaderOptions{});
    ASSERT_EQ(whole.size(), 4u);
    EXPECT_EQ(StepSeriesByWindow(s, SplitSession(s, plan), DataloaderOptions{}), whole);
  }
}

TEST(DataloaderAnalysisTest, CleanAndEmptySessionsGiveNothing) {
  TrainingSim sim;
  sim.jitter = 3 * kNsPerMs;
  EXPECT_TRUE(FindDataloaderSkew(Simulate(sim), DataloaderOptions{}).empty());
  EXPECT_TRUE(FindDataloaderSkew(Session{}, DataloaderOptions{}).empty());
  sim.ranks = 1;
  EXPECT_TRUE(FindDataloaderSkew(Simulate(sim), DataloaderOptions{}).empty());
}

}  // namespace
}  // namespace rankscope
