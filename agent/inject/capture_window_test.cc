#include "agent/inject/capture_window.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace rankscope::inject {
namespace {

using Change = CaptureWindow::Change;

std::map<std::string, std::string> g_env;
const char* Lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
CaptureWindowConfig FromEnv(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return CaptureWindowFromEnv(Lookup);
}

// Which of `steps` step ranges were captured, as a string of 0/1.
std::string Steps(CaptureWindow& w, int steps) {
  std::string captured;
  for (int i = 0; i < steps; ++i) {
    w.Opened("step");
    w.Opened("forward");  // other ranges change nothing
    captured += w.on() ? '1' : '0';
    w.Closed("forward");
    w.Closed("step");
  }
  return captured;
}

TEST(CaptureWindow, WholeRunByDefault) {
  CaptureWindowConfig c = FromEnv({});
  EXPECT_EQ(c.kind, CaptureWindowConfig::Kind::kWholeRun);
  EXPECT_TRUE(c.problems.empty());
  CaptureWindow w(c);
  EXPECT_TRUE(w.on());
  EXPECT_EQ(Steps(w, 3), "111");
  EXPECT_EQ(c.Describe(), "whole run");
}

TEST(CaptureWindow, WhileARangeIsOpenCountingNestingAndThreads) {
  CaptureWindow w(FromEnv({{"RANKSCOPE_CAPTURE_RANGE", "profile"}}));
  EXPECT_FALSE(w.on());
  EXPECT_EQ(w.Closed("profile"), Change::kNone);  // a close we never saw opened
  EXPECT_EQ(w.Opened("profile"), Change::kOn);
  EXPECT_EQ(w.Opened("profile"), Change::kNone);  // nested, or another thread's
  EXPECT_EQ(w.Closed("profile"), Change::kNone);
  EXPECT_TRUE(w.on());
  EXPECT_EQ(w.Closed("profile"), Change::kOff);
  EXPECT_FALSE(w.on());
  EXPECT_EQ(w.Opened("profile"), Change::kOn);  // a second window
  EXPECT_EQ(w.config().Describe(), "while NVTX range 'profile' is open");
}

TEST(CaptureWindow, StepsFromFirstForCount) {
  CaptureWindow w(FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "2:3"}}));
  EXPECT_EQ(Steps(w, 8), "00111000");
  EXPECT_EQ(w.config().Describe(), "steps 2..4 (NVTX range 'step')");
}

TEST(CaptureWindow, StepsToTheEndAndSampled) {
  EXPECT_EQ(Steps(*std::make_unique<CaptureWindow>(FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "5"}})), 8),
            "00000111");
  CaptureWindowConfig sampled =
      FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "1"}, {"RANKSCOPE_CAPTURE_EVERY", "3"}});
  CaptureWindow w(sampled);
  EXPECT_EQ(Steps(w, 10), "0100100100");
  EXPECT_EQ(sampled.Describe(), "steps 1..end, every 3th (NVTX range 'step')");
  // EVERY alone samples from step 0.
  CaptureWindow every(FromEnv({{"RANKSCOPE_CAPTURE_EVERY", "4"}}));
  EXPECT_EQ(Steps(every, 9), "100010001");
}

TEST(CaptureWindow, StaysOnBetweenConsecutiveCapturedSteps) {
  CaptureWindow w(FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "1:2"}, {"RANKSCOPE_STEP_RANGE", "iter"}}));
  EXPECT_EQ(w.Opened("iter"), Change::kNone);  // step 0
  EXPECT_EQ(w.Closed("iter"), Change::kNone);
  EXPECT_EQ(w.Opened("iter"), Change::kOn);    // step 1
  EXPECT_EQ(w.Closed("iter"), Change::kNone);  // step 2 follows: the gap is captured too
  EXPECT_TRUE(w.on());
  EXPECT_EQ(w.Opened("iter"), Change::kNone);  // step 2
  EXPECT_EQ(w.Closed("iter"), Change::kOff);
  EXPECT_EQ(w.Opened("iter"), Change::kNone);  // step 3
}

TEST(CaptureWindow, BadValuesAreNamedAndIgnored) {
  CaptureWindowConfig c = FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "ten"}});
  EXPECT_EQ(c.kind, CaptureWindowConfig::Kind::kWholeRun);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find("RANKSCOPE_CAPTURE_STEPS=ten"), std::string::npos);
  EXPECT_EQ(FromEnv({{"RANKSCOPE_CAPTURE_STEPS", "3:0"}}).kind,
            CaptureWindowConfig::Kind::kWholeRun);
  CaptureWindowConfig every = FromEnv({{"RANKSCOPE_CAPTURE_EVERY", "0"}});
  EXPECT_EQ(every.kind, CaptureWindowConfig::Kind::kSteps);
  EXPECT_EQ(every.every, 1u);
  EXPECT_EQ(every.problems.size(), 1u);
  CaptureWindowConfig both =
      FromEnv({{"RANKSCOPE_CAPTURE_RANGE", "r"}, {"RANKSCOPE_CAPTURE_STEPS", "1"}});
  EXPECT_EQ(both.kind, CaptureWindowConfig::Kind::kRange);
  EXPECT_EQ(both.problems.size(), 1u);
}

}  // namespace
}  // namespace rankscope::inject
