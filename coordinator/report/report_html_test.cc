#include "coordinator/report/report_html.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/test_session.h"
#include "core/format.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The <section id="ID"> ... </section> of a page.
std::string Section(const std::string& html, const std::string& id) {
  const size_t at = html.find("<section id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</section>", at) - at);
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportHtml, EscapesEverythingFromTheSession) {
  Session s = report_test::MakeHostileSession();
  std::string html =
      Lower(BuildReportHtml(s, MatchCollectives(s), report_test::MakeHostileFindings()));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

// The blame model's section: a rank x rank matrix of who waited for whom (rows wait, columns
// are waited for) and a bar per rank; nothing without a model.
TEST(ReportHtml, WhoWaitedForWhomMatrixFromTheBlameModel) {
  const Session s = report_test::MakeSession();
  const auto instances = MatchCollectives(s);
  BlameModel blame;
  blame.first = 0;
  blame.last = 10 * kNsPerSec;
  for (int r = 0; r < 3; ++r) {
    RankBlame b;
    b.rank = r;
    b.busy = (r == 2 ? 9 : 3) * kNsPerSec;
    b.waited = (r == 2 ? 0 : 6) * kNsPerSec;
    b.caused = r == 2 ? 12 * kNsPerSec : 0;
    b.replayed = r == 2;
    b.what_if_span = 4 * kNsPerSec;
    blame.ranks.push_back(b);
  }
  blame.stragglers = {2};
  blame.waits[{0, 2}] = 6 * kNsPerSec;
  blame.waits[{1, 2}] = 6 * kNsPerSec;
  const std::string html =
      BuildReportHtml(s, instances, report_test::MakeFindings(), BuildGpuReport(s), &blame);
  EXPECT_THAT(html, ::testing::HasSubstr("<section id=\"blame\"><h2>Who waited for whom"));
  EXPECT_THAT(html, ::testing::HasSubstr("rank 0 waited 6.00 s for rank 2"));
  EXPECT_THAT(html, ::testing::HasSubstr("rank 1 waited 0 ns for rank 0"));
  EXPECT_THAT(html, ::testing::HasSubstr("span 10.00 s &rarr; about 4.00 s like the others"));
  const std::string without =
      BuildReportHtml(s, instances, report_test::MakeFindings(), BuildGpuReport(s));
  EXPECT_EQ(without.find("id=\"blame\""), std::string::npos);
}

TEST(ReportHtml, SelfContained) {
  Session s = report_test::MakeSession();
  std::string html = Lower(BuildReportHtml(s, MatchCollectives(s), report_test::MakeFindings()));
  EXPECT_THAT(html, HasSubstr("<!doctype html>"));
  EXPECT_THAT(html, HasSubstr("content-security-policy"));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("url(http")));
  EXPECT_THAT(html, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(html, HasSubstr("</html>"));
}

TEST(ReportHtml, FindingsRanksHeatmapAndSummary) {
  Session s = report_test::MakeSession();
  std::vector<CollectiveInstance> instances = MatchCollectives(s);
  std::string html = BuildReportHtml(s, instances, report_test::MakeFindings());
  EXPECT_THAT(html, HasSubstr("PARTIAL"));
  EXPECT_THAT(html, HasSubstr("Rank 2 on node-b arrives last"));
  EXPECT_THAT(html, HasSubstr("nsys profile -t nvtx,mpi -o rank2 ./train --steps 4"));
  EXPECT_LT(html.find("card critical"), html.find("card info"));
  EXPECT_THAT(html, HasSubstr("id=\"ranks\""));
  EXPECT_THAT(html, HasSubstr("killed by SIGKILL (exit code 137)"));
  EXPECT_THAT(html, HasSubstr("-1.23 ms"));
  EXPECT_THAT(html, HasSubstr("id=\"activity\""));
  // The heatmap: the ranks have NVTX step ranges, so one cell per rank and step; ranks 0 and 1
  // wait 2 ms for rank 2 in each step's allreduce, rank 2 died in its step 3.
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_EQ(Count(Section(html, "heatmap"), "<rect x="), s.ranks.size() * 4 + 1);  // + legend
  EXPECT_THAT(html, HasSubstr("one column per step"));
  EXPECT_THAT(html, HasSubstr("rank 0, step 1: waited 2.00 ms"));
  EXPECT_THAT(html, HasSubstr("rank 2, step 1: waited 0 ns"));
  EXPECT_THAT(html, HasSubstr("rank 2, step 3: did not run this step"));
}

TEST(ReportHtml, WithoutStepRangesTheHeatmapHasAColumnPerInstance) {
  Session s = report_test::MakeSession();
  for (RankData& r : s.ranks) {
    for (RangeRecord& range : r.ranges) {
      if (range.name == "step") range.name = "iteration body";
    }
  }
  std::vector<CollectiveInstance> instances = MatchCollectives(s);
  std::string html = BuildReportHtml(s, instances, report_test::MakeFindings());
  EXPECT_EQ(Count(Section(html, "heatmap"), "<rect x="),
            s.ranks.size() * instances.size() + 1);  // + legend
  EXPECT_THAT(html, HasSubstr("one column per collective instance"));
  EXPECT_THAT(html, HasSubstr("rank 0, allreduce seq 0: waited 2.00 ms"));
  EXPECT_THAT(html, HasSubstr("rank 2, allreduce seq 3: not a member"));
}

TEST(ReportHtml, WithoutStepRangesTheInstanceWithTheMostWaitingIsDrawnAcrossItsRanks) {
  Session s = report_test::MakeSession();
  for (RankData& r : s.ranks) {
    for (RangeRecord& range : r.ranges) {
      if (range.name == "step") range.name = "iteration body";
    }
  }
  std::string html = BuildReportHtml(s, MatchCollectives(s), report_test::MakeFindings());
  const std::string section = Section(html, "worst");
  ASSERT_FALSE(section.empty());
  // Ranks 0 and 1 waited 2 ms each for rank 2 in each allreduce (the first is start-up).
  EXPECT_THAT(section, HasSubstr("allreduce seq 1: the ranks waited 4.00 ms in total"));
  EXPECT_THAT(section, HasSubstr("rank 0 waiting 2.00 ms"));
  EXPECT_THAT(section, HasSubstr("rank 1 waiting 2.00 ms"));
  EXPECT_THAT(section, Not(HasSubstr("rank 2 waiting")));
  EXPECT_THAT(section, HasSubstr(">rank 2 node-b</text>"));
  EXPECT_THAT(section, HasSubstr("<title>forward: "));  // rank 2's NVTX range before the call
}

TEST(ReportHtml, GpuSectionHasNcclShapesAndNvmlLinks) {
  Session s = report_test::MakeSession();
  std::string html = BuildReportHtml(s, MatchCollectives(s), report_test::MakeFindings());
  EXPECT_THAT(html, HasSubstr("id=\"gpu\""));
  EXPECT_THAT(html, HasSubstr("NCCL 2.28.9+cuda13.0"));
  EXPECT_THAT(html, HasSubstr("communicator 0x1e900aa5c8e42401: 2 ranks, P2P/CUMEM &times;2"));
  EXPECT_THAT(html, HasSubstr("<td>AllReduce</td><td class=\"num\">256.0 MiB</td>"));
  // NVML: GPU 1 of node-a ran its link at gen 4 of gen 5.
  EXPECT_THAT(html, HasSubstr("class=\"bad\">gen 4 x16 (max gen 5 x16)"));
  EXPECT_THAT(html, HasSubstr(">gen 5 x16 (max gen 5 x16)</td><td>18/18</td>"));
  // A CPU-only session has no such section.
  Session cpu = report_test::MakeCleanSession();
  EXPECT_THAT(BuildReportHtml(cpu, MatchCollectives(cpu), {}), Not(HasSubstr("id=\"gpu\"")));
}

TEST(ReportHtml, BinsLongRunsIntoBoundedColumns) {
  Session s = report_test::MakeCleanSession();
  for (RankData& r : s.ranks) {
    std::vector<CollectiveRecord> more;
    for (int k = 0; k < 2000; ++k) {
      CollectiveRecord c = r.collectives[static_cast<size_t>(k % 50)];
      c.seq = static_cast<uint64_t>(k);
      c.enter += (k / 50) * 50 * kNsPerMs;
      c.exit += (k / 50) * 50 * kNsPerMs;
      more.push_back(c);
    }
    r.collectives = more;
  }
  std::string html = BuildReportHtml(s, MatchCollectives(s), {});
  EXPECT_LE(Count(Section(html, "heatmap"), "<rect x="), 4u * 400u + 1u);
  EXPECT_THAT(html, HasSubstr("per column"));
  EXPECT_THAT(html, HasSubstr("No problems found"));
}

// `ranks` ranks, 8 to a node, each with 5 NVTX "step" ranges of 9 ms every 10 ms and in each
// step a "forward" range then an allreduce at 5 ms that everyone leaves at 8.5 ms. Everyone
// arrives within a few microseconds, except `slow_rank`, 3 ms late in step `slow_step`.
Session MakeStepSession(int ranks, int slow_rank, int slow_step) {
  constexpr TimeNs kStart = 1000 * kNsPerSec;
  Session s;
  s.session_id = "s-steps";
  s.world_size = ranks;
  s.start = kStart;
  s.end = kStart + 60 * kNsPerMs;
  s.aligned = true;
  for (int rank = 0; rank < ranks; ++rank) {
    RankData r;
    r.id.rank = rank;
    r.id.world_size = ranks;
    r.id.local_rank = rank % 8;
    r.id.node = "node-" + std::to_string(rank / 8);
    r.finished = true;
    r.clock_fitted = true;
    for (int k = 0; k < 5; ++k) {
      const TimeNs base = kStart + k * 10 * kNsPerMs;
      r.ranges.push_back({"", "step", base, base + 9 * kNsPerMs, 1, 0});
      r.ranges.push_back({"", "forward", base, base + 4 * kNsPerMs, 1, 1});
      CollectiveRecord c;
      c.comm_id = 9;
      c.seq = static_cast<uint64_t>(k);
      c.op = CollectiveOp::kAllreduce;
      c.comm_size = ranks;
      c.comm_rank = rank;
      c.enter = base + 5 * kNsPerMs + (rank % 7) * kNsPerUs +
                (rank == slow_rank && k == slow_step ? 3 * kNsPerMs : 0);
      c.exit = base + 8 * kNsPerMs + 500 * kNsPerUs;
      c.tid = 1;
      r.collectives.push_back(c);
    }
    s.ranks.push_back(std::move(r));
  }
  return s;
}

TEST(ReportHtml, TheStepWithTheMostWaitingIsDrawnAcrossAllRanks) {
  Session s = MakeStepSession(8, 5, 3);
  const std::string section = Section(BuildReportHtml(s, MatchCollectives(s), {}), "worst");
  ASSERT_FALSE(section.empty());
  EXPECT_THAT(section, HasSubstr("The step with the most waiting: step 3 (30.00 ms to 39.00 ms "
                                 "into the session)"));
  EXPECT_THAT(section, HasSubstr("step 3 of 5"));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_THAT(section, HasSubstr(">rank " + std::to_string(rank) + " node-0</text>"));
  }
  EXPECT_EQ(Count(section, "<text x=\"0\""), 8u);  // a row per rank
  EXPECT_THAT(section, HasSubstr("rank 0 waiting 3.00 ms"));
  EXPECT_THAT(section, Not(HasSubstr("rank 5 waiting")));
  EXPECT_THAT(section, HasSubstr("<title>forward: 4.00 ms</title>"));
  EXPECT_THAT(section, Not(HasSubstr("left out")));
}

TEST(ReportHtml, TheWorstStepShowsAtMost64RanksAndSaysHowManyAreLeftOut) {
  Session s = MakeStepSession(70, 69, 2);
  const std::string section = Section(BuildReportHtml(s, MatchCollectives(s), {}), "worst");
  EXPECT_THAT(section, HasSubstr("The step with the most waiting: step 2 (20.00 ms to 29.00 ms"));
  EXPECT_EQ(Count(section, "<text x=\"0\""), 64u);
  EXPECT_THAT(section, HasSubstr("6 other ranks are left out"));
  EXPECT_THAT(section, HasSubstr(">rank 69 node-8</text>"));  // the late one is kept
}

// A file of the source tree, found from this file's path (the report test has no fixture
// directory definition).
std::string ReadSourceFile(const std::string& relative) {
  const std::filesystem::path root = std::filesystem::path(__FILE__).parent_path() / "../..";
  std::ifstream in(root / relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReportHtml, NodeTopologyTablesFromTheNcclDumps) {
  const std::string h200 = ReadSourceFile("tests/fixtures/h200x2-torch-allreduce/topo.xml");
  const std::string pcie = ReadSourceFile("model/topology/testdata/pcie_only_4gpu.xml");
  ASSERT_FALSE(h200.empty());
  ASSERT_FALSE(pcie.empty());
  Session s = report_test::MakeCleanSession();
  s.ranks[0].id.node = s.ranks[1].id.node = "h200-a";
  s.ranks[2].id.node = "h200-b";
  s.ranks[3].id.node = "<b>pcie</b>";
  for (size_t r = 0; r < 3; ++r) s.ranks[r].topology_xml = h200;
  s.ranks[3].topology_xml = pcie;
  s.ranks[3].topology_source = "topo.xml";
  const std::string gpu = Section(BuildReportHtml(s, MatchCollectives(s), {}), "gpu");
  ASSERT_THAT(gpu, HasSubstr("Node topology"));
  // The two H200 nodes look the same: shown once, the pair on the NVSwitch fabric.
  EXPECT_THAT(gpu, HasSubstr("nodes h200-a, h200-b: same topology"));
  EXPECT_EQ(Count(gpu, "NV18 NVSwitch"), 2u);
  EXPECT_THAT(gpu, HasSubstr("<td>eth0</td><td class=\"num\">10 Gb/s</td>"));
  // The PCIe-only node: its name escaped, PIX within a switch, PHB across, GPUs 2 and 3 reach
  // mlx5_0 only through the CPU, GPU 2's link runs below its peers.
  EXPECT_THAT(gpu, HasSubstr("node &lt;b&gt;pcie&lt;/b&gt;</h4>"));
  EXPECT_THAT(gpu, Not(HasSubstr("<b>pcie</b>")));
  EXPECT_THAT(gpu, HasSubstr("<td title=\"PCIe only\">PIX</td>"));
  EXPECT_THAT(gpu, HasSubstr("<td class=\"warn\" title=\"PCIe only\">PHB</td>"));
  EXPECT_THAT(gpu, HasSubstr("<td>mlx5_0</td><td class=\"warn\">PHB (through the CPU)</td>"));
  EXPECT_EQ(Count(gpu, "<td>mlx5_0</td><td>PIX</td>"), 2u);  // GPUs 0 and 1
  EXPECT_EQ(Count(gpu, "<td>mlx5_0</td><td class=\"warn\">PHB (through the CPU)"),
            2u);  // GPUs 2 and 3
  EXPECT_THAT(gpu, HasSubstr("<td>mlx5_0</td><td class=\"num\">200 Gb/s</td>"));
  EXPECT_THAT(gpu, HasSubstr("GPU 0000:83:00.0: gen3 x8, its peers gen4 x16"));
}

TEST(ReportHtml, ATopologyDumpThatDoesNotParseSaysWhy) {
  Session s = report_test::MakeCleanSession();
  s.ranks[0].topology_xml = "<system version=\"1\"><cpu>";
  s.ranks[0].topology_source = "bad<topo>.xml";
  const std::string gpu = Section(BuildReportHtml(s, MatchCollectives(s), {}), "gpu");
  EXPECT_THAT(gpu, HasSubstr("the topology dump does not parse: bad&lt;topo&gt;.xml"));
}

TEST(HtmlEscape, ReplacesMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

}  // namespace
}  // namespace rankscope
