#include "coordinator/report/report_html.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

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

TEST(ReportHtml, TheInstanceWithTheMostWaitingIsDrawnAcrossItsRanks) {
  Session s = report_test::MakeSession();
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

TEST(HtmlEscape, ReplacesMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

}  // namespace
}  // namespace rankscope
