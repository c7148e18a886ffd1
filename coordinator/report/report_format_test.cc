#include "coordinator/report/report_format.h"

#include <gtest/gtest.h>

#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

TEST(FormatClockOffset, KeepsMicrosecondsForLargeOffsets) {
  EXPECT_EQ(FormatClockOffset(-1'016'999'987'000), "-1016.999987 s");
  EXPECT_EQ(FormatClockOffset(15'700), "+15.7 us");
}

TEST(FormatDuration, PicksAReadableUnit) {
  EXPECT_EQ(FormatDuration(0), "0 ns");
  EXPECT_EQ(FormatDuration(850), "850 ns");
  EXPECT_EQ(FormatDuration(12'345), "12.3 us");
  EXPECT_EQ(FormatDuration(1'234'567), "1.23 ms");
  EXPECT_EQ(FormatDuration(4'560'000'000), "4.56 s");
  EXPECT_EQ(FormatDuration(187 * kNsPerSec), "3m 07s");
  EXPECT_EQ(FormatDuration(-40), "-40 ns");
  EXPECT_EQ(FormatSignedDuration(1'234'567), "+1.23 ms");
  EXPECT_EQ(FormatSignedDuration(0), "0 ns");
}

TEST(ReadableEvidence, FlattensAndNamesUnits) {
  nlohmann::json evidence = {{"others_wait_ns", 2.4e7},
                             {"cause", {{"range", "data"}, {"share", 0.8125}}},
                             {"ranks", {1, 2, 3}}};
  EXPECT_EQ(ReadableEvidence(evidence, 0), (Entries{{"cause.range", "data"},
                                                    {"cause.share", "0.8125"},
                                                    {"others_wait_ns", "24.00 ms"},
                                                    {"ranks", "1, 2, 3"}}));
  EXPECT_EQ(ReadableEvidence(evidence, 1).size(), 1u);
  EXPECT_TRUE(ReadableEvidence(nlohmann::json(), 0).empty());
}

TEST(FindingsWorstFirst, SeverityThenCost) {
  std::vector<Finding> findings = report_test::MakeFindings();
  findings.push_back(findings[1]);
  findings.back().cost_ns *= 2;
  std::vector<const Finding*> ordered = FindingsWorstFirst(findings);
  EXPECT_EQ(ordered[0], &findings[2]);
  EXPECT_EQ(ordered[1], &findings[1]);
  EXPECT_EQ(ordered[2], &findings[0]);
}

TEST(CollectNotices, CrashesMissingRanksAndLostData) {
  Session s = report_test::MakeSession();
  s.world_size = 6;
  std::vector<RankNotice> notices = CollectNotices(s);
  ASSERT_GE(notices.size(), 5u);
  EXPECT_EQ(notices[0].text, "ranks 3-5 never registered: no data from them");
  EXPECT_TRUE(notices[0].severe);
  EXPECT_EQ(notices[1].rank, 1);  // ended, the agent beside it too late to see how
  EXPECT_EQ(notices[1].text, "ended without exit() (status not seen)");
  EXPECT_EQ(notices[2].rank, 2);
  EXPECT_EQ(notices[2].text, "killed by SIGKILL (exit code 137)");
  EXPECT_EQ(DescribeExit(s.ranks[0]), "");
  s.ranks[0].exit_code = 3;
  EXPECT_EQ(DescribeExit(s.ranks[0]), "exited with code 3");
}

}  // namespace
}  // namespace rankscope
