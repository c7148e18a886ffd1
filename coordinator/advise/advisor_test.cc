#include "coordinator/advise/advisor.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

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
  f.kind = FindingKind::kStraggler;
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
  // ncu's report read by `inspect ncu`: the file the step before writes.
  EXPECT_EQ(kernel.steps[1].tool, "rankscope");
  EXPECT_NE(kernel.steps[1].command.find("rankscope inspect ncu rank3_kernel.ncu-rep"),
            std::string::npos)
      << kernel.steps[1].command;
  EXPECT_NE(kernel.steps[0].command.find("-o rank3_kernel"), std::string::npos)
      << kernel.steps[0].command;
  const Answer link = Ask("link-slow", facts).front();
  EXPECT_NE(link.steps[0].command.find("-w n2"), std::string::npos) << link.steps[0].command;
}

// ncu -k regex: matches the kernel's function name: the real names CUPTI gave on 2xH200
// (tests/fixtures/h200x2-torchrun-launch) reduced to it, lambdas, anonymous namespaces and
// templates in the arguments included.
TEST(Advisor, KernelRegexOfRealKernelNamesIsTheirFunctionName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_"
       "elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIffPNS_"
       "17CUDAGeneratorImplEZZZNS4_13normal_kernelIS7_EEvRKNS_10TensorBaseEddT_ENKUlvE_"
       "clEvENKUlvE0_"
       "clEvEUlfE_EEvRNS_18TensorIteratorBaseET1_T2_EUlP24curandStatePhilox4_32_10E0_ZNS1_27"
       "distribution_nullary_kernelIff6float4S7_SM_SF_EEvSH_SJ_RKT3_T4_EUlifE_EEvlNS_"
       "15PhiloxCudaStateESI_SJ_",
       "distribution_elementwise_grid_stride_kernel"},
      {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
       "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
       "T1_",
       "vectorized_elementwise_kernel"},
      {"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_"
       "alignc4_execute_kernel__5x_cublas",
       "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_"
       "alignc4_execute_kernel__5x_cublas"},
      {"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
       "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}};
  for (const auto& [mangled, function] : cases) {
    Session s = StragglerSession();
    s.ranks[3].gpu.resize(1);
    s.ranks[3].gpu[0].name = mangled;
    Finding f;
    f.kind = FindingKind::kStraggler;
    f.ranks = {3};
    EXPECT_EQ(FactsOf(s, {f}).kernel, function) << mangled;
  }
}

// Every finding's next steps come from the planner: the steps its kind and cause call for, with
// the analysis' focus as what to look for, then the way to the rest of the chain.
TEST(Advisor, FindingsGetThePlannersStepsForTheirQuestion) {
  Session s = StragglerSession();
  Finding host;
  host.kind = FindingKind::kStraggler;
  host.ranks = {3};
  host.nodes = {"n2"};
  host.cause = CauseKind::kNvtxRange;
  host.focus = "what rank 3 does inside NVTX range 'fwd'";
  host.next_steps.push_back({"stale", "stale", "replaced"});
  Finding gpu = host;
  gpu.cause = CauseKind::kGpuKernels;
  gpu.kernels = std::vector<KernelExcess>{{"void gemm_kernel<float>(float*, int)", 0, 0}};
  Finding unknown;
  unknown.other_kind = "something_new";
  unknown.next_steps.push_back({"stale", "stale", "replaced"});
  std::vector<Finding> findings = {host, gpu, unknown};
  PlanNextSteps(s, "/runs/out dir", &findings);

  EXPECT_EQ(QuestionFor(findings[0]), "where-time-goes");
  ASSERT_EQ(findings[0].next_steps.size(), 3u);  // nsys, py-spy, then advise
  EXPECT_EQ(findings[0].next_steps[0].tool, "nsys");
  EXPECT_EQ(findings[0].next_steps[0].look_for, host.focus);
  EXPECT_NE(findings[0].next_steps[0].command.find("--trace=mpi,nvtx,osrt"), std::string::npos);
  EXPECT_NE(findings[0].next_steps[0].command.find("--output=rank3 "), std::string::npos)
      << findings[0].next_steps[0].command;
  EXPECT_EQ(findings[0].next_steps[1].tool, "py-spy");
  EXPECT_NE(findings[0].next_steps[1].command.find("\"$SLURM_PROCID\" = 3"), std::string::npos);
  EXPECT_EQ(findings[0].next_steps[2].command,
            "rankscope advise where-time-goes --session '/runs/out dir' --rank 3");

  EXPECT_EQ(QuestionFor(findings[1]), "gpu-slow");
  // nsys, nvidia-smi, the same launch under rankscope with ncu on rank 3, advise.
  ASSERT_EQ(findings[1].next_steps.size(), 4u);
  EXPECT_NE(findings[1].next_steps[0].command.find("--trace=cuda,nvtx"), std::string::npos);
  EXPECT_EQ(findings[1].next_steps[1].command,
            "srun --jobid=4711 --overlap -w n2 -N1 -n1 nvidia-smi -q -d "
            "PERFORMANCE,CLOCK,TEMPERATURE");
  EXPECT_EQ(findings[1].next_steps[2].tool, "rankscope");
  // The kernel the finding names, not the rank's heaviest; the session's own launch after --.
  EXPECT_EQ(findings[1].next_steps[2].command.rfind(
                "rankscope run --ncu-rank 3 --ncu-kernel gemm_kernel --ncu-skip 10 -o "
                "rankscope-ncu-rank3 -- srun",
                0),
            0u)
      << findings[1].next_steps[2].command;
  EXPECT_NE(findings[1].next_steps.back().command.find("advise gpu-slow"), std::string::npos);

  EXPECT_TRUE(findings[2].next_steps.empty());

  // Once ncu's verdict is in the finding (the run had --ncu-rank 3), the first step reads the
  // report it came from in full.
  gpu.kernel_verdicts.push_back({"gemm_kernel", "memory-bound", "...",
                                 "long_scoreboard 4.00 cycles per issued instruction", "...",
                                 "/runs/ncu/rank3_kernel.ncu-rep"});
  std::vector<Finding> measured = {gpu};
  PlanNextSteps(s, "/runs/out dir", &measured);
  ASSERT_FALSE(measured[0].next_steps.empty());
  EXPECT_EQ(measured[0].next_steps[0].command,
            "rankscope inspect ncu /runs/ncu/rank3_kernel.ncu-rep --html rank3_kernel.html");
  for (const NextStep& step : measured[0].next_steps) {
    EXPECT_EQ(step.command.find("--ncu-rank"), std::string::npos) << step.command;
  }
}

// A session that holds ncu's report of the rank (run --ncu-rank, report --ncu): the kernel
// question starts from its verdict, on that kernel, instead of running ncu again.
TEST(Advisor, TheKernelQuestionStartsFromTheNcuReportTheSessionHolds) {
  Session s = StragglerSession();
  std::ifstream in(std::string(RANKSCOPE_FIXTURES_DIR) + "/h200-ncu/heavy_stencil.raw.csv");
  std::stringstream csv;
  csv << in.rdbuf();
  s.ranks[3].tool_run = ToolRun{"ncu", "/runs/s1/rank3_kernel.ncu-rep", "n2", csv.str(), ""};
  Finding f;
  f.kind = FindingKind::kStraggler;
  f.ranks = {3};
  const AdviceFacts facts = FactsOf(s, {f});
  ASSERT_TRUE(facts.measured.has_value());
  EXPECT_EQ(facts.kernel, "heavy_stencil");
  const Answer kernel = Ask("kernel-bound", facts).front();
  EXPECT_EQ(kernel.steps[0].command,
            "rankscope inspect ncu /runs/s1/rank3_kernel.ncu-rep --html rank3_kernel.html");
  EXPECT_NE(kernel.steps[0].look_for.find("this session's ncu report says heavy_stencil: "
                                          "compute-bound"),
            std::string::npos)
      << kernel.steps[0].look_for;
  EXPECT_EQ(kernel.steps[1].tool, "ncu");  // to measure again, e.g. another launch

  s.ranks[3].tool_run.reset();
  EXPECT_FALSE(FactsOf(s, {f}).measured.has_value());
  EXPECT_EQ(Ask("kernel-bound", FactsOf(s, {f})).front().steps[0].tool, "ncu");
}

// A rank off its CPU: who froze or stopped it, or what it blocked on, on its node or in the next
// run, before the timeline.
TEST(Advisor, OffCpuCausesGetStepsForWhatHeldTheRank) {
  Session s = StragglerSession();
  Finding frozen;
  frozen.kind = FindingKind::kStraggler;
  frozen.ranks = {3};
  frozen.nodes = {"n2"};
  frozen.cause = CauseKind::kFrozen;
  Finding blocked = frozen;
  blocked.cause = CauseKind::kBlocked;
  blocked.off_cpu = OffCpuCause{CauseKind::kBlocked, "anon_pipe_write", "", 0.5, 0.0, 100};
  Finding stopped = frozen;
  stopped.cause = CauseKind::kStopped;
  std::vector<Finding> findings = {frozen, blocked, stopped};
  PlanNextSteps(s, "/runs/out", &findings);

  ASSERT_GE(findings[0].next_steps.size(), 3u);
  EXPECT_NE(findings[0].next_steps[0].command.find("-w n2"), std::string::npos)
      << findings[0].next_steps[0].command;
  EXPECT_NE(findings[0].next_steps[0].command.find("freezer.state"), std::string::npos);
  EXPECT_EQ(findings[0].next_steps[2].tool, "nsys");

  EXPECT_EQ(findings[1].next_steps[0].tool, "strace");
  EXPECT_NE(findings[1].next_steps[0].command.find("\"$SLURM_PROCID\" = 3"), std::string::npos)
      << findings[1].next_steps[0].command;
  EXPECT_NE(findings[1].next_steps[0].look_for.find("anon_pipe_write"), std::string::npos);

  EXPECT_EQ(findings[2].next_steps[0].tool, "ps");
  EXPECT_NE(findings[2].next_steps[0].look_for.find("state T"), std::string::npos);
}

Finding RingFinding(const std::string& op) {
  Finding f;
  f.kind = FindingKind::kImbalancedRing;
  f.ranks = {4, 5, 6, 7};
  f.nodes = {"n3", "n4"};
  f.comm_measure = CommMeasure{"0xabc", ParseNcclOp(op), 67108864, 40.0, 3, 180.0};
  f.evidence = {{"nranks", 4}};
  return f;
}

Session MpirunSession(int ranks) {
  Session s;
  s.launcher = "mpirun";
  s.command = {"mpirun", "-np", std::to_string(ranks), "./train"};
  s.world_size = ranks;
  for (int r = 0; r < ranks; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.node = "n" + std::to_string(r / 2 + 1);
    d.id.program = {"./train"};
    s.ranks.push_back(d);
  }
  return s;
}

TEST(Advisor, RingStepsMeasureTheOpTheJobCallsOnItsNodesWithItsOwnCommand) {
  const Session s = MpirunSession(8);
  std::vector<Finding> findings = {RingFinding("AllGather"), RingFinding("AllReduce")};
  PlanNextSteps(s, "out", &findings);
  ASSERT_EQ(findings[0].next_steps.size(), 4u);
  EXPECT_EQ(findings[0].next_steps[0].command, "ssh n3 'nvidia-smi topo -m'");
  // nccl-tests' size is the whole buffer: 4 ranks' 64 MiB parts.
  EXPECT_EQ(findings[0].next_steps[1].command,
            "mpirun -np 4 -H n3:2,n4:2 all_gather_perf -b 268435456 -e 268435456 -g 1");
  EXPECT_NE(findings[0].next_steps[1].look_for.find("180 GB/s"), std::string::npos);
  // mpirun forwards the variables to other nodes' ranks only with -x.
  EXPECT_EQ(findings[0].next_steps[2].command,
            "mpirun -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,GRAPH -np 8 ./train");
  EXPECT_EQ(findings[0].next_steps[3].command, "rankscope advise nccl-slow --session out --rank 4");
  EXPECT_NE(findings[1].next_steps[1].command.find("all_reduce_perf -b 67108864"),
            std::string::npos);
}

// Under SLURM, nccl-tests runs with srun on the communicator's nodes, as many ranks on each as
// it had; NCCL_DEBUG in front of srun reaches every rank.
TEST(Advisor, RingStepsUnderSlurm) {
  Session s = MpirunSession(8);
  s.launcher = "slurm";
  s.command = {"srun", "-n", "8", "./train"};
  std::vector<Finding> findings = {RingFinding("ReduceScatter")};
  PlanNextSteps(s, "out", &findings);
  EXPECT_EQ(findings[0].next_steps[1].command,
            "srun -N 2 -n 4 --ntasks-per-node=2 -w n3,n4 reduce_scatter_perf -b 268435456 -e "
            "268435456 -g 1");
  EXPECT_EQ(findings[0].next_steps[2].command,
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH srun -n 8 ./train");
}

TEST(Advisor, LinkFindingsGetLinkTools) {
  const Session s = MpirunSession(4);
  Finding nvml;
  nvml.kind = FindingKind::kPcieBound;
  nvml.ranks = {2, 3};
  nvml.nodes = {"n2"};
  nvml.nvml_links = NvmlLinkState{"580.1", {{0, "0000:18:00.0", 4, 5, 8, 16}}, {}};
  Finding measured;  // a slow ring joined into a pcie_bound node
  measured.kind = FindingKind::kPcieBound;
  measured.nodes = {"n2"};
  measured.ranks = {2, 3};
  measured.joined.push_back(RingFinding("AllReduce"));
  Finding down;
  down.kind = FindingKind::kNvlinkDown;
  down.ranks = {2, 3};
  down.nodes = {"n2"};
  std::vector<Finding> findings = {nvml, measured, down};
  PlanNextSteps(s, "out", &findings);
  std::vector<std::string> tools;
  for (const NextStep& step : findings[0].next_steps) tools.push_back(step.tool);
  EXPECT_EQ(tools, (std::vector<std::string>{"nvidia-smi", "lspci", "nvbandwidth", "rankscope"}));
  EXPECT_EQ(findings[0].next_steps[0].command, "ssh n2 'nvidia-smi -q -d PCIE'");
  ASSERT_EQ(findings[1].next_steps.size(), 4u);
  EXPECT_EQ(findings[1].next_steps[0].command, "ssh n2 'nvidia-smi topo -m'");
  EXPECT_EQ(findings[1].next_steps[2].command,
            "mpirun -np 2 -H n2:2 all_reduce_perf -b 67108864 -e 67108864 -g 1");
  EXPECT_EQ(findings[1].next_steps.back().command,
            "rankscope advise link-slow --session out --rank 2");
  ASSERT_EQ(findings[2].next_steps.size(), 4u);
  EXPECT_EQ(findings[2].next_steps[0].command, "ssh n2 'nvidia-smi nvlink --status'");
  EXPECT_EQ(findings[2].next_steps[2].command, "ssh n2 'dcgmi diag -r 2'");
}

// A ring far below its slowest link: that link's node and state first, then NCCL alone.
TEST(Advisor, BelowLinkCeilingLooksAtTheLimitingLink) {
  const Session s = MpirunSession(8);
  Finding nvlink = RingFinding("AllReduce");
  nvlink.kind = FindingKind::kBelowLinkCeiling;
  LimitingLink link;
  link.from_rank = 2;
  link.to_rank = 3;
  link.medium = LinkMedium::kNvlink;
  nvlink.limiting_link = link;
  Finding net = nvlink;
  // The weaker NIC is on the peer's side: the NIC check goes there.
  link = {};
  link.from_rank = 4;
  link.to_rank = 6;
  link.at_rank = 6;
  link.medium = LinkMedium::kNetwork;
  net.limiting_link = link;
  std::vector<Finding> findings = {nvlink, net};
  PlanNextSteps(s, "out", &findings);
  EXPECT_EQ(QuestionFor(findings[0]), "link-slow");
  ASSERT_EQ(findings[0].next_steps.size(), 5u);
  EXPECT_EQ(findings[0].next_steps[0].command, "ssh n2 'nvidia-smi topo -m'");
  EXPECT_EQ(findings[0].next_steps[1].command, "ssh n2 'nvidia-smi nvlink --status'");
  EXPECT_NE(findings[0].next_steps[2].command.find("all_reduce_perf -b 67108864"),
            std::string::npos);
  EXPECT_EQ(findings[0].next_steps[4].command, "rankscope advise link-slow --session out --rank 4");
  EXPECT_EQ(QuestionFor(findings[1]), "nccl-slow");
  EXPECT_EQ(findings[1].next_steps[1].command, "ssh n4 ibstat");
}

// A job that still runs (attached from outside): its rank's stacks by pid, on its node; a job
// that is over: the profiler wraps the rank in the next run.
TEST(Advisor, StacksByPidWhileTheJobRunsElseInTheNextRun) {
  Session attached = StragglerSession();
  attached.launcher = "attach";
  for (RankData& r : attached.ranks) r.id.launcher = "attach";
  ASSERT_TRUE(attached.SampledFromOutsideOnly());
  Finding outlier;
  outlier.kind = FindingKind::kProcessOutlier;
  outlier.ranks = {2};
  outlier.focus = "which code reads on this rank alone";
  Finding loader;
  loader.kind = FindingKind::kDataloaderSkew;
  loader.ranks = {2};
  loader.focus = "NVTX range 'data'";
  std::vector<Finding> findings = {outlier, loader};
  PlanNextSteps(attached, "out", &findings);
  ASSERT_GE(findings[0].next_steps.size(), 2u);
  EXPECT_EQ(findings[0].next_steps[0].command,
            "srun --jobid=4711 --overlap -w n2 -N1 -n1 py-spy dump --native --pid 102");
  EXPECT_EQ(findings[0].next_steps[0].look_for, outlier.focus);
  EXPECT_EQ(findings[0].next_steps[1].command,
            "rankscope run --dormant -- srun SRUN_OPTIONS python3 train.py");
  EXPECT_EQ(findings[1].next_steps[0].command, findings[0].next_steps[0].command);
  EXPECT_NE(findings[1].next_steps[0].look_for.find("inside NVTX range 'data'"), std::string::npos);

  const Session over = MpirunSession(4);
  findings = {loader};
  PlanNextSteps(over, "out", &findings);
  std::vector<std::string> tools;
  for (const NextStep& step : findings[0].next_steps) tools.push_back(step.tool);
  EXPECT_EQ(tools, (std::vector<std::string>{"perf", "pidstat", "iostat", "nsys", "rankscope"}));
  EXPECT_EQ(findings[0].next_steps[0].command,
            "mpirun -np 4 bash -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 2 ]; then exec "
            "perf record -g --output rank2.perf.data -- \"$@\"; else exec \"$@\"; fi' _ ./train");
  EXPECT_EQ(findings[0].next_steps[1].command,
            "mpirun -np 4 bash -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 2 ]; then exec "
            "pidstat -d 1 -e \"$@\"; else exec \"$@\"; fi' _ ./train");
}

TEST(Advisor, EveryRankProfiledWithOneReportEach) {
  const Session s = MpirunSession(4);
  const Answer slow = Ask("slow-rank", FactsOf(s, {})).front();
  EXPECT_EQ(slow.steps.back().command,
            "mpirun -np 4 nsys profile --trace=cuda,nvtx,osrt,mpi --force-overwrite=true "
            "'--output=rank%q{OMPI_COMM_WORLD_RANK}' ./train");
}

}  // namespace
}  // namespace rankscope
