#include "coordinator/report/report_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_html.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t CountLines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A GPU job of `nodes` nodes x 8 ranks (MakeCleanSession's ranks, node "n<k>"): NVML and a
// topology dump from each node's first rank, 8 H200 each at PCIe gen 5 x16 with 18/18 NVLinks
// except six GPUs on n1..n6 (see below); rank 0 logged three NCCL communicators with 9 call
// shapes between them, the most data moved by 400 x AllReduce 32 MiB on the 8-rank one.
Session MakeGpuJob(int nodes) {
  Session s = report_test::MakeCleanSession();
  const std::string topology_xml = report_test::MakeSession().ranks[0].topology_xml;
  RankData templ = s.ranks[0];
  s.ranks.clear();
  s.world_size = nodes * 8;
  for (int rank = 0; rank < nodes * 8; ++rank) {
    RankData r = templ;
    r.id.rank = rank;
    r.id.local_rank = rank % 8;
    r.id.world_size = s.world_size;
    r.id.node = "n" + std::to_string(rank / 8);
    if (rank % 8 == 0) {
      r.topology_source = "/tmp/topo.xml";
      r.topology_xml = topology_xml;
      NvmlSnapshot nvml;
      nvml.driver_version = "580.159.04";
      for (uint32_t g = 0; g < 8; ++g) {
        nvml.gpus.push_back({g, "NVIDIA H200", "GPU-" + std::to_string(rank + g),
                             "00000000:1" + std::to_string(g) + ":00.0", 5, 5, 16, 16, 18, 18,
                             1ull << 37});
      }
      r.nvml = nvml;
    }
    s.ranks.push_back(std::move(r));
  }
  // GPUs whose links run below their best: PCIe trained down, NVLinks down.
  auto gpu = [&](int node, int index) -> NvmlGpu& {
    return s.ranks[static_cast<size_t>(node * 8)].nvml->gpus[static_cast<size_t>(index)];
  };
  if (nodes > 6) {
    gpu(1, 3).pcie_gen_current = 3;  // gen 3 x8: 1/8 of its bandwidth
    gpu(1, 3).pcie_width_current = 8;
    gpu(2, 6).nvlinks_up = 0;  // the worst: every NVLink down
    gpu(3, 0).nvlinks_up = 12;
    gpu(4, 7).pcie_gen_current = 4;
    gpu(5, 1).nvlinks_up = 17;
    gpu(6, 2).pcie_width_current = 8;
  }
  RankNccl nccl;
  nccl.version = "2.28.9+cuda13.0";
  auto comm = [&](const std::string& id, int nranks, int nnodes, NcclTransportKind transport) {
    NcclCommInfo c{id, 0, nranks, nnodes, 32, "18", 0, {}, {}};
    c.transports.push_back({0, 1, transport, "", false, -1});
    nccl.communicators.push_back(c);
  };
  comm("0x1000", nodes * 8, nodes, NcclTransportKind::kNetIb);
  comm("0x2000", 8, 1, NcclTransportKind::kP2pCumem);
  comm("0x3000", nodes, nodes, NcclTransportKind::kNetIb);
  std::map<std::string, uint64_t> seq;
  auto calls = [&](const std::string& id, NcclOp op, Bytes bytes, int n) {
    for (int k = 0; k < n; ++k) {
      nccl.calls.push_back({id, seq[id]++, op, "", static_cast<uint64_t>(bytes / 4),
                            NcclDataType::kFloat32, bytes, -1, NcclAlgo::kRing, NcclProto::kSimple,
                            32});
    }
  };
  calls("0x1000", NcclOp::kAllReduce, 4, 200);
  calls("0x1000", NcclOp::kAllReduce, 1 << 20, 10);
  calls("0x1000", NcclOp::kBroadcast, 64 << 20, 1);
  calls("0x1000", NcclOp::kAllGather, 1024, 50);
  calls("0x2000", NcclOp::kAllReduce, 32 << 20, 400);
  calls("0x2000", NcclOp::kReduceScatter, 16 << 20, 100);
  calls("0x2000", NcclOp::kAllGather, 16 << 20, 90);
  calls("0x3000", NcclOp::kAllReduce, 256 << 20, 20);
  calls("0x3000", NcclOp::kAllReduce, 128 << 20, 2);
  s.ranks[0].nccl = nccl;
  return s;
}

// MakeGpuJob's report text, with a bus bandwidth for every call shape (the session has no
// CUPTI kernels to time them).
std::string GpuJobText(const Session& s, const std::vector<Finding>& findings) {
  GpuReport gpu = BuildGpuReport(s);
  double busbw = 100;
  for (auto& c : gpu.nccl["communicators"]) {
    for (auto& shape : c["shapes"]) shape["busbw_gbps"] = busbw += 10.5;
  }
  return BuildReportText(s, findings, gpu, SummarizeCollectives(MatchCollectives(s)),
                         /*color=*/false);
}

Finding MakeFinding(const std::string& kind, Severity severity, std::vector<int> ranks,
                    std::vector<std::string> nodes, double confidence, DurationNs cost) {
  Finding f;
  f.kind = ParseFindingKind(kind);
  if (f.kind == FindingKind::kOther) f.other_kind = kind;
  f.severity = severity;
  f.ranks = std::move(ranks);
  f.nodes = std::move(nodes);
  f.summary = "What " + kind + " is about, in one sentence.";
  f.evidence = {{"value_ns", 1'500'000}, {"instances", 40}};
  f.confidence = confidence;
  f.cost_ns = cost;
  f.next_steps = {{"rankscope", "rankscope sweep --check " + kind, "look closer"}};
  return f;
}

TEST(ReportText, HeaderFindingsClocksAndNotices) {
  std::string text =
      BuildReportText(report_test::MakeSession(), report_test::MakeFindings(), /*color=*/false);
  EXPECT_THAT(text, HasSubstr("job 4711 (mpirun)"));
  EXPECT_THAT(text, HasSubstr("3 ranks on 2 nodes"));
  EXPECT_THAT(text, HasSubstr("50.00 ms"));
  EXPECT_THAT(text, HasSubstr("PARTIAL"));
  EXPECT_THAT(text, HasSubstr("rank 2 was killed by SIGKILL before sending its final batch"));
  // Worst first: the critical straggler before the info finding given ahead of it.
  size_t critical = text.find("CRITICAL straggler");
  size_t info = text.find("INFO     dataloader_skew");
  ASSERT_NE(critical, std::string::npos) << text;
  ASSERT_NE(info, std::string::npos) << text;
  EXPECT_LT(critical, info);
  EXPECT_THAT(text, HasSubstr("Rank 2 on node-b arrives last at 3 of 3 allreduce calls"));
  EXPECT_THAT(text, HasSubstr("median_late_ns=2.00 ms"));
  EXPECT_THAT(text, HasSubstr("next: nsys profile -t nvtx,mpi -o rank2 ./train --steps 4"));
  EXPECT_THAT(text, HasSubstr("-1.23 ms"));  // rank 2's clock offset
  EXPECT_THAT(text, HasSubstr("±12.0 us"));
  EXPECT_THAT(text, HasSubstr("rank 2 (node-b): killed by SIGKILL (exit code 137)"));
  EXPECT_THAT(text, HasSubstr("17 records dropped"));
  EXPECT_THAT(text, HasSubstr("NCCL_DEBUG_FILE not set"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b[")));
  EXPECT_THAT(text, Not(HasSubstr("No problems found")));
  EXPECT_THAT(text, HasSubstr("cost 12.00 ms"));
  // What the live check printed, after the findings.
  EXPECT_THAT(text, HasSubstr("Seen live"));
  EXPECT_THAT(text, HasSubstr("  - rank 2 holds the others up: its cgroup throttled it 60% of "
                              "the last 2 s, while the others waited in MPI 55% of theirs "
                              "(outside MPI it spent 90%, the others 40%). Began about 0:03, "
                              "seen 4 s later.\n"));
  EXPECT_LT(critical, text.find("Seen live"));
  // A finding whose cost to the job was not measured says so rather than "0 ns".
  std::vector<Finding> findings = report_test::MakeFindings();
  findings[0].cost_ns = 0;
  const std::string unmeasured = BuildReportText(report_test::MakeSession(), findings, false);
  EXPECT_THAT(unmeasured, HasSubstr("cost not measured"));
  EXPECT_THAT(unmeasured, Not(HasSubstr("cost 0 ns")));
}

TEST(ReportText, ColourOnlyWhenAsked) {
  Session s = report_test::MakeSession();
  std::string colored = BuildReportText(s, report_test::MakeFindings(), /*color=*/true);
  EXPECT_THAT(colored, HasSubstr("\x1b[1;31mCRITICAL\x1b[0m"));
  EXPECT_THAT(colored, HasSubstr("\x1b[1;31mPARTIAL\x1b[0m"));
  // NCCL heads the GPU section; no "GPU topology" title above it, with colour or without.
  EXPECT_THAT(colored, HasSubstr("\x1b[1mNCCL\x1b[0m"));
  EXPECT_THAT(colored, Not(HasSubstr("GPU topology")));
}

TEST(ReportText, SaysWhatWasCheckedWhenNothingWasFound) {
  std::string text = BuildReportText(report_test::MakeCleanSession(), {}, /*color=*/false);
  EXPECT_THAT(text, HasSubstr("COMPLETE"));
  EXPECT_THAT(text, HasSubstr("4 ranks on 2 nodes"));
  EXPECT_THAT(text, HasSubstr("No problems found: 50 allreduce instances across 4 ranks; max "
                              "median lateness 30.0 us (rank 3)."));
  EXPECT_THAT(text, Not(HasSubstr("Notices")));
}

// A session that lost a rank is no clean bill even when the data kept shows nothing: the report
// said "No problems found" in green beside a killed rank.
TEST(ReportText, NothingFoundInAPartialSessionIsNoCleanBill) {
  Session s = report_test::MakeCleanSession();
  s.partial = true;
  s.partial_reasons = {"rank 2 (n2) was killed by signal 9 (Killed)"};
  const std::string text = BuildReportText(s, {}, /*color=*/false);
  EXPECT_THAT(text, HasSubstr("No problems found in the data kept, but the session is PARTIAL"));
  EXPECT_THAT(text, Not(HasSubstr("No problems found:")));
  const std::string colored = BuildReportText(s, {}, /*color=*/true);
  EXPECT_THAT(colored, HasSubstr("\x1b[1;33mNo problems found in the data kept"));
  const std::string html = BuildReportHtml(s, MatchCollectives(s), {});
  EXPECT_THAT(html, HasSubstr("<div class=\"partial\"><b>No problems found in the data kept</b>, "
                              "but the session is partial (rank 2 (n2) was killed by signal 9 "
                              "(Killed)): "));
  EXPECT_THAT(html, Not(HasSubstr("<div class=\"ok\">")));
}

TEST(ReportText, ProgramStringsCannotDriveTheTerminal) {
  Session s = report_test::MakeSession();
  s.ranks[0].notices.push_back("evil \x1b]0;pwned\x07 \x1b[2J notice");
  s.ranks[0].id.node = "node\x1b[31m-a";
  std::string text = BuildReportText(s, {}, /*color=*/false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_THAT(text, HasSubstr("evil ?]0;pwned? ?[2J notice"));
}

TEST(ReportText, FitsOnOneScreenWithManyRanks) {
  Session s = report_test::MakeCleanSession();
  RankData templ = s.ranks[0];
  s.ranks.clear();
  s.world_size = 512;
  for (int rank = 0; rank < 500; ++rank) {  // 12 never registered
    RankData r = templ;
    r.id.rank = rank;
    r.id.node = "n" + std::to_string(rank / 8);
    r.clock.uncertainty_ns = rank == 321 ? 900'000 : 5'000;
    r.notices = {"a notice", "a notice of rank " + std::to_string(rank)};
    s.ranks.push_back(r);
  }
  std::string text = BuildReportText(s, {}, /*color=*/false);
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_LE(lines, 40u) << text;
  EXPECT_THAT(text, HasSubstr("ranks 500-511 never registered"));
  EXPECT_THAT(text, HasSubstr("  321   "));  // the least certain clock is among those shown
  EXPECT_THAT(text, HasSubstr("more ranks"));
  EXPECT_THAT(text, HasSubstr("more notices"));
  // The same notice from every rank is one line naming them.
  EXPECT_THAT(text, HasSubstr("ranks 0-499 (63 nodes): a notice\n"));
}

TEST(ReportText, SmallSessionPrintsEverything) {
  std::string text =
      BuildReportText(report_test::MakeSession(), report_test::MakeFindings(), /*color=*/false);
  EXPECT_THAT(text, HasSubstr("NCCL 2.28.9+cuda13.0\n"
                              "  comm 0x1e900aa5c8e42401  2 ranks on 1 node(s), 24 channels, "
                              "P2P/CUMEM\n"
                              "    3 x AllReduce 256.0 MiB ncclFloat32  RING/SIMPLE\n"));
  EXPECT_THAT(text, HasSubstr("  node node-a: 2 GPU(s), all pairs on NVLink, 0 NIC(s)\n"));
  // The healthy GPU in its group, the one whose PCIe link trained down on its own.
  EXPECT_THAT(text, HasSubstr("  1 x NVIDIA H200 on node node-a: PCIe gen 5 x16, NVLink 18/18 up"));
  EXPECT_THAT(text, HasSubstr("  node node-a GPU 1 NVIDIA H200 00000000:00:07.0: PCIe gen 4 x16 "
                              "(max gen 5 x16), NVLink 18/18 up\n"));
  EXPECT_THAT(text,
              HasSubstr("  NVML on node node-b: NVML: cannot load libnvidia-ml.so.1\n\nClocks"));
  for (const char* rank : {"\n  0     node-a", "\n  1     node-a", "\n  2     node-b"}) {
    EXPECT_THAT(text, HasSubstr(rank));
  }
  EXPECT_THAT(text, HasSubstr("NCCL_DEBUG_FILE not set"));
  EXPECT_THAT(text, Not(HasSubstr("...")));
  EXPECT_THAT(text, Not(HasSubstr("report.html")));
  EXPECT_THAT(text, Not(HasSubstr("Shortened")));
  // Without NCCL logs the GPU section is titled for the machines, above everything in it.
  Session no_nccl = report_test::MakeSession();
  for (RankData& r : no_nccl.ranks) r.nccl.reset();
  for (bool color : {false, true}) {
    const std::string report = BuildReportText(no_nccl, {}, color);
    EXPECT_THAT(report, HasSubstr(color ? "\n\n\x1b[1mGPU topology\x1b[0m\n\x1b[2m  kernels 1 on"
                                        : "\n\nGPU topology\n  kernels 1 on"));
    EXPECT_EQ(CountOf(report, "GPU topology"), 1u);
  }
}

TEST(ReportText, GpuSectionIsCappedAndGrouped) {
  const std::string text = GpuJobText(MakeGpuJob(8), {});
  EXPECT_LE(CountLines(text), 50u) << text;
  // Four call shapes, the ones that moved the most data, under their communicators.
  EXPECT_EQ(CountOf(text, " ncclFloat32  RING/SIMPLE"), 4u) << text;
  EXPECT_THAT(text, HasSubstr("  comm 0x2000  8 ranks on 1 node(s), 32 channels, P2P/CUMEM\n"
                              "    400 x AllReduce 32.0 MiB ncclFloat32  RING/SIMPLE  busbw"));
  EXPECT_THAT(text, HasSubstr("  comm 0x3000  8 ranks on 8 node(s), 32 channels, NET/IB\n"
                              "    20 x AllReduce 256.0 MiB ncclFloat32"));
  EXPECT_THAT(text, Not(HasSubstr("200 x AllReduce 4 B")));
  EXPECT_THAT(text, HasSubstr("  ... 5 more call shapes, 1 more communicator in report.html / "
                              "report.json\n"));
  // Nodes and GPUs that look the same are one line each; abnormal GPUs one by one, worst first.
  EXPECT_THAT(text,
              HasSubstr("  8 nodes (n0, n1, ...): 2 GPU(s), all pairs on NVLink, 0 NIC(s)\n"));
  EXPECT_THAT(text, HasSubstr("  58 x NVIDIA H200 on 8 nodes (n0, n1, ...): PCIe gen 5 x16, "
                              "NVLink 18/18 up\n"));
  const size_t all_down = text.find(
      "  node n2 GPU 6 NVIDIA H200 00000000:16:00.0: PCIe gen 5 "
      "x16, NVLink 0/18 up\n");
  const size_t gen3 = text.find(
      "  node n1 GPU 3 NVIDIA H200 00000000:13:00.0: PCIe gen 3 x8 "
      "(max gen 5 x16), NVLink 18/18 up\n");
  ASSERT_NE(all_down, std::string::npos) << text;
  ASSERT_NE(gen3, std::string::npos) << text;
  EXPECT_LT(all_down, gen3);
  EXPECT_EQ(CountOf(text, "  node n"), 4u) << text;
  EXPECT_THAT(text, HasSubstr("  ... 2 more GPUs with degraded links in report.html / "
                              "report.json\n"));
  EXPECT_THAT(text, HasSubstr("more in report.html"));
}

TEST(ReportText, WorstCaseFitsOnOneScreenFindingsFirst) {
  Session s = MakeGpuJob(63);
  s.partial = true;
  s.partial_reasons = {"ranks 500-503 never registered"};
  s.world_size = 504;
  s.ranks.resize(500);
  for (RankData& r : s.ranks) {
    r.clock.uncertainty_ns = r.id.rank == 321 ? 900'000 : 5'000;
    r.notices = {"a notice", "a notice of rank " + std::to_string(r.id.rank)};
  }
  s.ranks[77].dropped_records = 1234;
  std::vector<Finding> findings = report_test::MakeFindings();
  findings.push_back(MakeFinding("nccl_slow_link", Severity::kWarning,
                                 {40, 41, 42, 43, 44, 45, 46, 47, 48}, {"n5"}, 0.8, 3 * kNsPerMs));
  findings.push_back(MakeFinding("pcie_degraded", Severity::kWarning, {}, {"n1"}, 1.0, 0));
  findings.push_back(MakeFinding("nvlink_down", Severity::kCritical, {}, {"n2"}, 1.0, 0));
  findings.push_back(MakeFinding("clock_uncertain", Severity::kInfo, {321}, {"n40"}, 0.5, 0));
  const std::string text = GpuJobText(s, findings);
  EXPECT_LE(CountLines(text), 50u) << text;
  // Every finding, whole: findings are the last thing cut.
  for (const char* first_line :
       {"  CRITICAL straggler  rank 2 on node-b  confidence 0.90  cost 12.00 ms\n",
        "  CRITICAL nvlink_down  on n2  confidence 1.00  cost not measured\n",
        "  WARNING  nccl_slow_link  ranks 40,41,42,43,44,45,46,47,... on n5  confidence 0.80  "
        "cost 3.00 ms\n",
        "  WARNING  pcie_degraded  on n1  confidence 1.00  cost not measured\n",
        "  INFO     dataloader_skew  rank 0 on node-a  confidence 0.40  cost 400.0 us\n",
        "  INFO     clock_uncertain  rank 321 on n40  confidence 0.50  cost not measured\n"}) {
    EXPECT_THAT(text, HasSubstr(first_line));
  }
  EXPECT_EQ(CountOf(text, "    next: "), 6u) << text;
  EXPECT_EQ(CountOf(text, "    evidence: "), 6u) << text;
  EXPECT_THAT(text, Not(HasSubstr("more findings")));
  // Less than the section caps, but some of each: the biggest call shape, the worst GPU, the
  // group lines, the severe notices.
  EXPECT_THAT(text, HasSubstr("400 x AllReduce 32.0 MiB"));
  EXPECT_THAT(text, HasSubstr("node n2 GPU 6 NVIDIA H200"));
  EXPECT_THAT(text, HasSubstr("x NVIDIA H200 on 63 nodes"));
  EXPECT_THAT(text, HasSubstr("ranks 500-503 never registered"));
  EXPECT_THAT(text, HasSubstr("1234 records dropped"));
  EXPECT_THAT(text, HasSubstr("more call shapes"));
  EXPECT_THAT(text, HasSubstr("more GPUs with degraded links"));
  EXPECT_THAT(text, HasSubstr("more notices"));
  EXPECT_THAT(text, HasSubstr("\nShortened to one screen: more in report.html"));
  EXPECT_EQ(text.substr(text.rfind('\n', text.size() - 2) + 1),
            "Shortened to one screen: more in report.html, every figure in report.json\n");
}

}  // namespace
}  // namespace rankscope
