#include "core/subprocess.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(CaptureOutput, ReturnsStdoutAndTheExitCode) {
  const auto [code, out] = CaptureOutput({"sh", "-c", "echo out; exit 3"});
  EXPECT_EQ(code, 3);
  EXPECT_EQ(out, "out\n");
}

TEST(CaptureOutput, DiscardedStderrStaysOutOfStdoutAndCannotBlockTheTool) {
  // 256 KB on stderr: more than a pipe holds, so a tool whose stderr nobody read would hang.
  const auto [code, out] = CaptureOutput(
      {"sh", "-c", "head -c 262144 /dev/zero >&2; echo csv; head -c 262144 /dev/zero >&2"},
      ToolStderr::kDiscard);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "csv\n");
}

TEST(CaptureOutput, AToolThatIsNotThereIs127) {
  EXPECT_EQ(CaptureOutput({"/nonexistent/ncu", "--import", "x"}, ToolStderr::kDiscard).first, 127);
  EXPECT_EQ(CaptureOutput({}).first, -1);
}

TEST(CaptureOutput, ASignalIs128PlusItsNumber) {
  EXPECT_EQ(CaptureOutput({"sh", "-c", "kill -TERM $$"}).first, 128 + 15);
}

}  // namespace
}  // namespace rankscope
