#include "agent/tool_wrap.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

std::string FoundInCuda(const std::string& name) {
  return name.find('/') == std::string::npos ? "/usr/local/cuda/bin/" + name : name;
}
std::string Missing(const std::string&) { return ""; }
bool Writable(const std::string& dir) { return dir == "/runs/s1"; }

const std::vector<std::string> kProgram = {"./mpi_gpu_steps", "--steps", "300"};

TEST(RankInList, SinglesListsRangesAndAll) {
  EXPECT_TRUE(RankInList("1", 1));
  EXPECT_FALSE(RankInList("1", 0));
  EXPECT_TRUE(RankInList("0,3", 3));
  EXPECT_FALSE(RankInList("0,3", 2));
  EXPECT_TRUE(RankInList("2-5", 4));
  EXPECT_FALSE(RankInList("2-5", 6));
  EXPECT_TRUE(RankInList("all", 17));
  EXPECT_FALSE(RankInList("", 0));
  EXPECT_FALSE(RankInList("x", 0));
  EXPECT_FALSE(RankInList("1,x", 1));  // malformed: none, never a guess
}

TEST(PlanToolWrap, TheChosenRankRunsUnderNcuWritingIntoTheSessionFolder) {
  const EnvMap env = {{kNcuRanksVar, "1"},
                      {kNcuKernelVar, "heavy_stencil"},
                      {kNcuCountVar, "2"},
                      {kNcuSkipVar, "10"},
                      {kToolDirVar, "/runs/s1"}};
  const ToolWrap wrap = PlanToolWrap(env, 1, kProgram, "/tmp", FoundInCuda, Writable);
  ASSERT_TRUE(wrap.active());
  EXPECT_EQ(wrap.tool, "ncu");
  EXPECT_EQ(wrap.report, "/runs/s1/rank1_kernel.ncu-rep");
  const std::vector<std::string> want = {"/usr/local/cuda/bin/ncu",
                                         "--set",
                                         "full",
                                         "-k",
                                         "regex:heavy_stencil",
                                         "--launch-skip",
                                         "10",
                                         "--launch-count",
                                         "2",
                                         "--target-processes",
                                         "all",
                                         "-f",
                                         "-o",
                                         "/runs/s1/rank1_kernel",
                                         "./mpi_gpu_steps",
                                         "--steps",
                                         "300"};
  EXPECT_EQ(wrap.argv, want);
  EXPECT_TRUE(wrap.note.empty());

  EXPECT_FALSE(PlanToolWrap(env, 0, kProgram, "/tmp", FoundInCuda, Writable).active())
      << "the other ranks run as they are";
}

TEST(PlanToolWrap, NoKernelRegexProfilesTheFirstLaunchesOfAnyKernel) {
  const ToolWrap wrap =
      PlanToolWrap({{kNcuRanksVar, "0"}}, 0, kProgram, "/tmp", FoundInCuda, Writable);
  ASSERT_TRUE(wrap.active());
  EXPECT_EQ(std::find(wrap.argv.begin(), wrap.argv.end(), "-k"), wrap.argv.end());
  EXPECT_EQ(wrap.report, "/tmp/rank0_kernel.ncu-rep");
}

TEST(PlanToolWrap, NsysRanksWriteTheirOwnReports) {
  const EnvMap env = {{kNsysRanksVar, "0,2"}, {kToolDirVar, "/runs/s1"}};
  const ToolWrap wrap = PlanToolWrap(env, 2, kProgram, "/tmp", FoundInCuda, Writable);
  ASSERT_TRUE(wrap.active());
  EXPECT_EQ(wrap.tool, "nsys");
  EXPECT_EQ(wrap.report, "/runs/s1/rank2.nsys-rep");
  EXPECT_EQ(wrap.argv[1], "profile");
  EXPECT_EQ(wrap.argv[4], "--output=/runs/s1/rank2");
  EXPECT_EQ(wrap.argv[5], "./mpi_gpu_steps");
  EXPECT_FALSE(PlanToolWrap(env, 1, kProgram, "/tmp", FoundInCuda, Writable).active());
}

TEST(PlanToolWrap, AMissingToolLeavesTheRankUnwrappedAndSaysSo) {
  const ToolWrap wrap = PlanToolWrap({{kNcuRanksVar, "1"}}, 1, kProgram, "/tmp", Missing, Writable);
  EXPECT_FALSE(wrap.active());
  EXPECT_NE(wrap.note.find("rank 1 was to run under ncu, which is not on PATH"), std::string::npos)
      << wrap.note;
}

TEST(PlanToolWrap, ASessionFolderNotOnThisNodeFallsBackToTheTemporaryDirectory) {
  const EnvMap env = {{kNcuRanksVar, "3"}, {kToolDirVar, "/elsewhere/s1"}};
  const ToolWrap wrap = PlanToolWrap(env, 3, kProgram, "/scratch/tmp", FoundInCuda, Writable);
  ASSERT_TRUE(wrap.active());
  EXPECT_EQ(wrap.report, "/scratch/tmp/rank3_kernel.ncu-rep");
  EXPECT_NE(wrap.note.find("/elsewhere/s1 is not on this node"), std::string::npos) << wrap.note;
}

TEST(PlanToolWrap, RankscopeNcuNamesTheExecutable) {
  const EnvMap env = {{kNcuRanksVar, "0"}, {"RANKSCOPE_NCU", "/opt/nsight-compute/ncu"}};
  const ToolWrap wrap = PlanToolWrap(env, 0, kProgram, "/tmp", FoundInCuda, Writable);
  EXPECT_EQ(wrap.binary, "/opt/nsight-compute/ncu");
  EXPECT_EQ(wrap.argv.front(), "/opt/nsight-compute/ncu");
}

}  // namespace
}  // namespace rankscope
