#include "agent/proc_sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace rankscope {
namespace {

TEST(ProcSampler, ParsesAStatLineWhoseCommandHasSpacesAndParentheses) {
  // A real /proc/PID/stat line (Linux 6.1), with the command name changed to "a (b) c".
  const char* line =
      "4242 (a (b) c) S 4200 4242 4200 34816 4242 4194304 1205 0 0 0 371 52 0 0 20 0 3 0 "
      "98765 12345678 2345 18446744073709551615 1 1 0 0 0 0 0 16781312 17002 0 0 0 17 1 0 0 "
      "7 0 0 0 0 0 0 0 0 0 0\n";
  std::optional<ProcStat> st = ParseProcStat(line);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->ppid, 4200);
  EXPECT_EQ(st->utime_ticks, 371u);
  EXPECT_EQ(st->stime_ticks, 52u);
  EXPECT_EQ(st->start_ticks, 98765u);
  EXPECT_EQ(st->blkio_ticks, 7u);
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("12 (cut) S 1 2").has_value());
  EXPECT_FALSE(ParseProcStat("x (y) S 1").has_value());
}

TEST(ProcSampler, ParsesProcIo) {
  std::optional<ProcIo> io = ParseProcIo(
      "rchar: 16777416\nwchar: 120\nsyscr: 260\nsyscw: 2\nread_bytes: 4096\n"
      "write_bytes: 0\ncancelled_write_bytes: 0\n");
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->rchar, 16777416u);
  EXPECT_EQ(io->wchar, 120u);
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->write_bytes, 0u);
  EXPECT_FALSE(ParseProcIo("garbage\n").has_value());
}

TEST(ProcSampler, DescendantsFollowEveryGeneration) {
  const std::vector<std::pair<pid_t, pid_t>> parents = {{10, 1},  {11, 10}, {12, 11},
                                                        {13, 10}, {20, 1},  {21, 20}};
  std::vector<pid_t> d = Descendants(10, parents);
  std::sort(d.begin(), d.end());
  EXPECT_EQ(d, (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(Descendants(99, parents), std::vector<pid_t>{99});
}

// A real process tree: the child burns CPU, its own child (a "DataLoader worker") reads 16 MiB
// and exits before the end. Both count, the worker with its last sampled counters.
TEST(ProcSampler, SumsTheProgramAndTheWorkersItStarted) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t worker = fork();
    if (worker == 0) {
      int fd = open("/dev/zero", O_RDONLY);
      std::vector<char> buffer(1 << 20);
      for (int i = 0; i < 16; ++i) {
        if (read(fd, buffer.data(), buffer.size()) <= 0) _exit(1);
      }
      usleep(200 * 1000);  // stay visible for a few samples
      _exit(0);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
    waitpid(worker, nullptr, 0);
    _exit(0);
  }
  ProcSampler sampler(child, 20 * kNsPerMs);
  sampler.Start();
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  EXPECT_GE(s.processes, 2);
  EXPECT_GE(s.samples, 3);
  EXPECT_FALSE(s.io_unreadable);
  EXPECT_GE(s.rchar, uint64_t{16} << 20);
  EXPECT_GE(s.cpu_user_ns + s.cpu_system_ns, 150 * kNsPerMs);
  EXPECT_LT(s.cpu_user_ns + s.cpu_system_ns, 2 * kNsPerSec);
}

// rankscope attach samples a program that ran long before: only what it does from then on
// counts.
TEST(ProcSampler, CountFromNowLeavesOutWhatCameBefore) {
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  auto read_mib = [](int mib) {
    int fd = open("/dev/zero", O_RDONLY);
    std::vector<char> buffer(1 << 20);
    for (int i = 0; i < mib; ++i) {
      if (read(fd, buffer.data(), buffer.size()) <= 0) _exit(1);
    }
    close(fd);
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    read_mib(64);  // before the attach
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    read_mib(8);  // inside the window
    usleep(50 * 1000);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ProcSampler sampler(child, 20 * kNsPerMs);
  sampler.CountFromNow();
  sampler.Start();
  ASSERT_EQ(write(go[1], &c, 1), 1);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  EXPECT_GE(s.rchar, uint64_t{8} << 20);
  EXPECT_LT(s.rchar, uint64_t{16} << 20);
}

}  // namespace
}  // namespace rankscope
