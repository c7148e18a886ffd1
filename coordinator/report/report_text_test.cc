#include "coordinator/report/report_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
}

TEST(ReportText, SaysWhatWasCheckedWhenNothingWasFound) {
  std::string text = BuildReportText(report_test::MakeCleanSession(), {}, /*color=*/false);
  EXPECT_THAT(text, HasSubstr("COMPLETE"));
  EXPECT_THAT(text, HasSubstr("4 ranks on 2 nodes"));
  EXPECT_THAT(text, HasSubstr("No problems found: 50 allreduce instances across 4 ranks; max "
                              "median lateness 30.0 us (rank 3)."));
  EXPECT_THAT(text, Not(HasSubstr("Notices")));
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

}  // namespace
}  // namespace rankscope
