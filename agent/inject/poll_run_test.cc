#include "agent/inject/poll_run.h"

#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

TEST(PollRun, ACallWithoutPollsBeforeItStartsAtItsOwnEnter) {
  PollRun run;
  EXPECT_EQ(run.Completed(1000, 0), 1000);
}

TEST(PollRun, TightPollsRunFromTheFirstOne) {
  PollRun run;
  run.Failed(1000, 1800, 0);
  run.Failed(2000, 2900, 0);
  run.Failed(3100, 4000, 0);
  EXPECT_EQ(run.Completed(4200, 0), 1000);
  // The completion ended the run: the next call starts its own.
  EXPECT_EQ(run.Completed(4500, 0), 4500);
}

TEST(PollRun, AGapOfWorkStartsANewRun) {
  PollRun run;
  run.Failed(1000, 1800, 0);
  run.Failed(1800 + kSpinGap + 1, 8000, 0);
  run.Failed(8200, 9000, 0);
  EXPECT_EQ(run.Completed(9100, 0), 1800 + kSpinGap + 1);
  // Work between the last poll and the completing call: the completing call starts at its enter.
  run.Failed(10'000, 11'000, 0);
  EXPECT_EQ(run.Completed(11'000 + kSpinGap + 1, 0), 11'000 + kSpinGap + 1);
}

// Polls of several requests in turn (HPCC's RandomAccess) are one run: nothing here tells them
// apart, only a recorded call (an Isend, a Wait) between them ends it.
TEST(PollRun, ARecordedCallBetweenPollsStartsANewRun) {
  PollRun run;
  run.Failed(1000, 1800, 0);
  run.Failed(2000, 2800, 0);
  run.Failed(3000, 3800, 3500);  // an Isend exited at 3500, after the poll that ended at 2800
  EXPECT_EQ(run.Completed(4000, 3500), 3000);
  run.Failed(5000, 5800, 3500);
  EXPECT_EQ(run.Completed(6000, 5900), 6000);  // a call recorded at 5900, after the last poll
}

}  // namespace
}  // namespace rankscope::inject
