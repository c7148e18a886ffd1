#include "coordinator/advise/advisor.h"

#include <gtest/gtest.h>

#include <set>

namespace rankscope {
namespace {

TEST(Advisor, CatalogueGoesFromTheFleetToTheSassWithCommands) {
  std::vector<Answer> all = Catalogue(AdviceFacts{});
  ASSERT_GE(all.size(), 10u);
  std::set<std::string> levels;
  std::set<std::string> ids;
  for (const Answer& a : all) {
    levels.insert(a.level);
    EXPECT_TRUE(ids.insert(a.id).second) << "duplicate id " << a.id;
    ASSERT_FALSE(a.steps.empty()) << a.id;
    for (const AdviceStep& s : a.steps) {
      EXPECT_FALSE(s.tool.empty()) << a.id;
      EXPECT_FALSE(s.command.empty()) << a.id;
      EXPECT_FALSE(s.look_for.empty()) << a.id;
    }
  }
  EXPECT_EQ(levels, (std::set<std::string>{"fleet", "system", "node", "rank", "kernel", "sass"}));
}

TEST(Advisor, QuestionsInPlainWordsFindTheirAnswer) {
  const AdviceFacts none;
  EXPECT_EQ(Ask("is the cluster healthy?", none).front().id, "cluster-health");
  EXPECT_EQ(Ask("which rank is the straggler", none).front().id, "slow-rank");
  EXPECT_EQ(Ask("is my kernel memory or compute bound", none).front().id, "kernel-bound");
  EXPECT_EQ(Ask("why does the compiler spill registers", none).front().id, "sass");
  EXPECT_EQ(Ask("PCIe link width", none).front().id, "link-slow");
  EXPECT_EQ(Ask("dataloader", none).front().id, "dataloader");
  EXPECT_EQ(Ask("kernel-source", none).size(), 1u);  // an id alone
  EXPECT_TRUE(Ask("what is the weather", none).empty());
}

Session StragglerSession() {
  Session s;
  s.launcher = "slurm";
  s.job_id = "4711";
  s.command = {"srun", "-n", "4", "python3", "train.py"};
  for (int r = 0; r < 4; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.node = r < 2 ? "n1" : "n2";
    d.id.job_id = "4711";
    d.id.program = {"python3", "train.py"};
    d.id.program_pid = 100 + r;
    s.ranks.push_back(d);
  }
  GpuActivityRecord k;
  k.kind = GpuActivityKind::kKernel;
  k.name = "_ZN2at6native13reduce_kernelILi512ELi1EEEvv";  // at::native::reduce_kernel<512, 1>()
  k.start = 0;
  k.end = 5'000;
  s.ranks[3].gpu.push_back(k);
  GpuActivityRecord small = k;
  small.name = "_Z9small_onev";
  small.end = 10;
  s.ranks[3].gpu.push_back(small);
  return s;
}

TEST(Advisor, ASessionFillsInTheRankNodeKernelAndLauncher) {
  Session s = StragglerSession();
  Finding f;
  f.kind = "straggler";
  f.ranks = {3};
  AdviceFacts facts = FactsOf(s, {f});
  EXPECT_EQ(facts.rank, 3);
  EXPECT_EQ(facts.node, "n2");
  EXPECT_EQ(facts.kernel, "reduce_kernel");
  EXPECT_EQ(facts.why, "rank 3 (straggler)");

  const Answer where = Ask("where-time-goes", facts).front();
  // nsys in front of rank 3's program only, under the job's own srun.
  EXPECT_NE(where.steps[0].command.find("srun -n 4 bash -c"), std::string::npos)
      << where.steps[0].command;
  EXPECT_NE(where.steps[0].command.find("\"$SLURM_PROCID\" = 3"), std::string::npos);
  EXPECT_NE(where.steps[0].command.find("nsys profile"), std::string::npos);
  // py-spy for a Python program, on rank 3 only.
  EXPECT_NE(where.steps[2].command.find("py-spy record"), std::string::npos)
      << where.steps[2].command;
  EXPECT_NE(where.steps[2].command.find("\"$SLURM_PROCID\" = 3"), std::string::npos);

  const Answer kernel = Ask("kernel-bound", facts).front();
  EXPECT_NE(kernel.steps[0].command.find("regex:reduce_kernel"), std::string::npos)
      << kernel.steps[0].command;
  const Answer link = Ask("link-slow", facts).front();
  EXPECT_NE(link.steps[0].command.find("-w n2"), std::string::npos) << link.steps[0].command;
}

// Findings' next steps end with the planner's: tools the finding did not name yet, then the way
// to the rest of the chain for this session.
TEST(Advisor, FindingsGetThePlannersStepsForTheirQuestion) {
  Session s = StragglerSession();
  Finding host;
  host.kind = "straggler";
  host.ranks = {3};
  host.evidence["cause_kind"] = "nvtx_range";
  host.next_steps.push_back({"nsys", "nsys profile ...", "its own"});
  Finding gpu = host;
  gpu.evidence["cause_kind"] = "gpu_queue";
  Finding unknown;
  unknown.kind = "something_new";
  std::vector<Finding> findings = {host, gpu, unknown};
  AddPlannerSteps(s, "/runs/out dir", &findings);

  EXPECT_EQ(QuestionFor(findings[0]), "where-time-goes");
  ASSERT_EQ(findings[0].next_steps.size(), 3u);  // its nsys, py-spy, then advise
  EXPECT_EQ(findings[0].next_steps[0].command, "nsys profile ...");
  EXPECT_EQ(findings[0].next_steps[1].tool, "py-spy / perf");
  EXPECT_NE(findings[0].next_steps[1].command.find("\"$SLURM_PROCID\" = 3"), std::string::npos);
  EXPECT_EQ(findings[0].next_steps[2].command,
            "rankscope advise where-time-goes --session '/runs/out dir'");

  EXPECT_EQ(QuestionFor(findings[1]), "kernel-bound");
  ASSERT_GE(findings[1].next_steps.size(), 3u);
  EXPECT_EQ(findings[1].next_steps[1].tool, "ncu");
  EXPECT_NE(findings[1].next_steps[1].command.find("regex:reduce_kernel"), std::string::npos)
      << findings[1].next_steps[1].command;
  EXPECT_NE(findings[1].next_steps.back().command.find("advise kernel-bound"), std::string::npos);

  EXPECT_TRUE(findings[2].next_steps.empty());
}

}  // namespace
}  // namespace rankscope
