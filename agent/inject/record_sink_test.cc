// The record sink's connections, end to end: burst_sink_program (built with the sink) plays a
// CUDA program, this test plays an agent that falls behind.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "agent/inject/test_collector.h"
#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

// A CUPTI-like burst waits for room on a full socket while the program's thread sends its
// ranges: they go out on the program's own connection, nothing is dropped. (On one shared
// socket the ranges found it full and were lost: the launch-bound PyTorch loop's drops.)
TEST(RecordSink, ProgramRecordsGoOutWhileABurstWaitsForRoom) {
  constexpr long kRanges = 3000;
  constexpr long kGpuRecords = 100'000;
  TestCollector collector;
  ASSERT_TRUE(collector.Start());
  collector.Pause(true);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string program = RANKSCOPE_BURST_SINK_PROGRAM;
  const std::string env = "RANKSCOPE_IPC_SOCKET=" + collector.path();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    const std::string ranges = std::to_string(kRanges), gpu = std::to_string(kGpuRecords);
    char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(ranges.c_str()),
                    const_cast<char*>(gpu.c_str()), nullptr};
    char* envp[] = {const_cast<char*>(env.c_str()), nullptr};
    execve(program.c_str(), argv, envp);
    _exit(127);
  }
  close(out[1]);
  std::string output;
  char buf[256];
  ssize_t n;
  // The agent reads nothing until the program's ranges went out (or the program ended).
  while (output.find("ranges sent") == std::string::npos &&
         (n = read(out[0], buf, sizeof(buf))) > 0) {
    output.append(buf, static_cast<size_t>(n));
  }
  collector.Pause(false);
  while ((n = read(out[0], buf, sizeof(buf))) > 0) output.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  collector.Drain(std::chrono::milliseconds(5000));
  EXPECT_TRUE(collector.errors().empty());

  long ranges = 0, gpu = 0, dropped = 0;
  std::string notices;
  for (const wire::Batch& b : collector.batches()) {
    ranges += static_cast<long>(b.ranges.size());
    gpu += static_cast<long>(b.gpu.size());
    dropped += b.dropped;
    for (const std::string& text : b.notices) notices += text + "\n";
  }
  EXPECT_EQ(ranges, kRanges);
  EXPECT_EQ(gpu, kGpuRecords);
  EXPECT_EQ(dropped, 0) << notices;
}

}  // namespace
}  // namespace rankscope::inject
