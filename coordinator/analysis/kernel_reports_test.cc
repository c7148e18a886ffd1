#include "coordinator/analysis/kernel_reports.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace rankscope {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(RANKSCOPE_FIXTURES_DIR) + "/h200-ncu/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Four ranks; rank 1 ran under ncu, which profiled one launch of heavy_stencil (the real H200
// report of tests/fixtures/h200-ncu).
Session SessionWithNcuOnRank1(const std::string& csv) {
  Session s;
  for (int r = 0; r < 4; ++r) {
    RankData d;
    d.id.rank = r;
    s.ranks.push_back(std::move(d));
  }
  s.ranks[1].tool_run = ToolRun{"ncu", "/runs/s1/rank1_kernel.ncu-rep", "gpu1", csv, ""};
  return s;
}

Finding GpuStraggler(int rank, std::vector<KernelExcess> kernels) {
  Finding f;
  f.kind = FindingKind::kStraggler;
  f.ranks = {rank};
  f.cause = CauseKind::kGpuKernels;
  f.kernels = std::move(kernels);
  return f;
}

TEST(KernelReports, ReadsTheRanksNcuCsvIntoKernelAnalyses) {
  const std::vector<RankKernelReport> reports =
      SessionKernelReports(SessionWithNcuOnRank1(Fixture("heavy_stencil.raw.csv")));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rank, 1);
  EXPECT_EQ(reports[0].host, "gpu1");
  ASSERT_EQ(reports[0].kernels.size(), 1u);
  EXPECT_EQ(reports[0].kernels[0].file, "/runs/s1/rank1_kernel.ncu-rep");
  EXPECT_EQ(reports[0].kernels[0].bound, KernelBound::kCompute);
  EXPECT_TRUE(reports[0].error.empty()) << reports[0].error;
}

TEST(KernelReports, TheStragglersChainEndsWithTheVerdictOnTheKernelItNames) {
  const std::vector<RankKernelReport> reports =
      SessionKernelReports(SessionWithNcuOnRank1(Fixture("heavy_stencil.raw.csv")));
  std::vector<Finding> findings = {GpuStraggler(1, {{"heavy_stencil(float*, int, int)", 3, 0}}),
                                   GpuStraggler(2, {{"heavy_stencil(float*, int, int)", 3, 0}})};
  findings.push_back(GpuStraggler(1, {{"other_kernel(int)", 3, 0}}));
  JoinKernelReports(reports, &findings);

  ASSERT_EQ(findings[0].kernel_verdicts.size(), 1u);
  const KernelVerdict& v = findings[0].kernel_verdicts[0];
  EXPECT_EQ(v.kernel, "heavy_stencil");
  EXPECT_EQ(v.bound, "compute-bound");
  EXPECT_EQ(v.report, "/runs/s1/rank1_kernel.ncu-rep");
  EXPECT_FALSE(v.stall.empty());
  EXPECT_EQ(findings[0].under_tool, "ncu") << "rank 1 was slowed by ncu's replay";
  const std::string line = DescribeVerdict(v);
  EXPECT_EQ(line.rfind("heavy_stencil: compute-bound (", 0), 0u) << line;
  EXPECT_NE(line.find("cycles per issued instruction"), std::string::npos) << line;

  EXPECT_TRUE(findings[1].kernel_verdicts.empty()) << "rank 2 ran without ncu";
  EXPECT_TRUE(findings[1].under_tool.empty());
  EXPECT_TRUE(findings[2].kernel_verdicts.empty()) << "ncu measured another kernel";
}

TEST(KernelReports, AGpuFindingThatNamesNoKernelGetsTheReportsKernelsAndAHostOneNone) {
  // A report of another run (rankscope report --ncu): the rank was not slowed by ncu here.
  Session s = SessionWithNcuOnRank1(Fixture("heavy_stencil.raw.csv"));
  s.ranks[1].tool_run->same_run = false;
  const std::vector<RankKernelReport> reports = SessionKernelReports(s);
  std::vector<Finding> findings = {GpuStraggler(1, {})};
  Finding host = GpuStraggler(1, {});
  host.cause = CauseKind::kCpuStarved;
  findings.push_back(host);
  JoinKernelReports(reports, &findings);
  ASSERT_EQ(findings[0].kernel_verdicts.size(), 1u);
  EXPECT_TRUE(findings[1].kernel_verdicts.empty()) << "starved of CPU: no kernel to blame";
  EXPECT_TRUE(findings[1].under_tool.empty());
  EXPECT_EQ(findings[1].severity, Severity::kWarning);
}

TEST(KernelReports, AFindingOnlyOnRanksTheToolSlowedBecomesInformationWithTheVerdict) {
  // Under ncu in this run the rank's GPU work is ncu's to see (no CUPTI): whatever cause the
  // analyses named (ncu's wrapper waiting for its child looks like a blocked rank), the report's
  // kernels are what the run was for.
  const std::vector<RankKernelReport> reports =
      SessionKernelReports(SessionWithNcuOnRank1(Fixture("heavy_stencil.raw.csv")));
  Finding blocked = GpuStraggler(1, {});
  blocked.cause = CauseKind::kBlocked;
  blocked.severity = Severity::kCritical;
  blocked.summary = "rank 1 was busy 5.16 s.";
  Finding both = blocked;
  both.ranks = {1, 2};
  std::vector<Finding> findings = {blocked, both};
  JoinKernelReports(reports, &findings);
  ASSERT_EQ(findings[0].kernel_verdicts.size(), 1u);
  EXPECT_EQ(findings[0].kernel_verdicts[0].kernel, "heavy_stencil");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_EQ(findings[0].summary.rfind("rank 1 ran under ncu, whose start-up", 0), 0u)
      << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("As measured: rank 1 was busy 5.16 s."), std::string::npos);
  // Rank 2 ran without it: the finding stands, with the note.
  EXPECT_EQ(findings[1].severity, Severity::kCritical);
  EXPECT_EQ(findings[1].summary.rfind("rank 1 was busy 5.16 s. Note: ranks 1, 2 ran under ncu", 0),
            0u)
      << findings[1].summary;
}

TEST(KernelReports, ACsvThatIsNotARawPageIsAnErrorNamingTheReport) {
  const std::vector<RankKernelReport> reports = SessionKernelReports(
      SessionWithNcuOnRank1("\"Section Name\",\"Metric Name\"\n\"a\",\"b\"\n"));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].kernels.empty());
  EXPECT_NE(reports[0].error.find("/runs/s1/rank1_kernel.ncu-rep"), std::string::npos)
      << reports[0].error;
}

TEST(KernelReports, TheAgentsErrorIsKeptWhenNcuWroteNothing) {
  Session s = SessionWithNcuOnRank1("");
  s.ranks[1].tool_run->error = "ncu wrote no report at /runs/s1/rank1_kernel.ncu-rep";
  const std::vector<RankKernelReport> reports = SessionKernelReports(s);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].error, "ncu wrote no report at /runs/s1/rank1_kernel.ncu-rep");
}

}  // namespace
}  // namespace rankscope
